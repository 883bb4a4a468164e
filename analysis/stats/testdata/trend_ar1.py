#!/usr/bin/python3
"""How often the trend check names a worsening trend in identical arms
whose own slowdowns last minutes (analysis/trend.go: a least-squares line
through the paired difference on 8 contiguous segments of the bucket grid,
Student t with 6 degrees of freedom, a row when the slope's one-sided
p < α/m; α = 0.05, m = 8 gates in chat).

Each arm carries its own AR(1) level per 10 s bucket (coefficient φ,
unit innovations), 180 buckets (30 minutes) after a burn-in of 200; the
paired difference is averaged per segment and the line fitted as the
judge fits it. Printed per φ: the correlation of adjacent segment means
(exact, for AR(1) with segments of 22 buckets), the slope's variance under
it over the variance OLS assumes (exact, for 8 equally spaced segments),
and the share of 200,000 replicates whose slope is named (one-sided
p < 0.05/8 = 0.00625), with its Monte Carlo standard error.

φ = 0.8 is the fleet model's default per-arm slowdown, 0.9 its noisiest
variant's.

Part 2, a repair tried and not adopted: the slope's variance inflated by
the AR(1) factor of the segments' own residuals' lag-1 correlation
(plus a bias correction of 0, 0.15 or 0.25, floored at 0): eight
residuals of a fitted line estimate it too poorly to restore the level
(named rate at φ = 0, 0.8, 0.9; 100,000 replicates per cell).

Run: /usr/bin/python3 trend_ar1.py > trend_ar1.txt"""
import numpy as np
import scipy
from scipy import signal, stats

B, SEG, BURN, N = 180, 8, 200, 200_000
LEVEL = 0.05 / 8


def seg_rho(phi, L):
    if phi == 0:
        return 0.0
    cov = phi * (1 - phi**L) ** 2 / (1 - phi) ** 2
    var = L * (1 + phi) / (1 - phi) - 2 * phi * (1 - phi**L) / (1 - phi) ** 2
    return cov / var


def inflation(r):
    x = np.arange(SEG, dtype=float)
    c = x - x.mean()
    S = r ** np.abs(np.subtract.outer(np.arange(SEG), np.arange(SEG)))
    return c @ S @ c / (c @ c)


def fits(phi, rng, n):
    """Yields, per 10,000 replicates of identical arms, the fitted slopes
    b, the residuals and the segment positions' centred values and their
    sum of squares."""
    x = np.arange(SEG, dtype=float)
    xc = x - x.mean()
    sxx = xc @ xc
    edges = [i * B // SEG for i in range(SEG + 1)]
    for chunk in range(n // 10_000):
        e = rng.standard_normal((2, 10_000, B + BURN))
        y = signal.lfilter([1.0], [1.0, -phi], e, axis=-1)
        d = (y[0] - y[1])[:, BURN:]
        seg = np.stack([d[:, edges[i]:edges[i + 1]].mean(axis=1) for i in range(SEG)], axis=1)
        b = seg @ xc / sxx
        res = seg - seg.mean(axis=1, keepdims=True) - np.outer(b, xc)
        yield b, res, sxx


def named_rate(phi, rng):
    hits = 0
    for b, res, sxx in fits(phi, rng, N):
        se = np.sqrt((res**2).sum(axis=1) / (SEG - 2) / sxx)
        hits += int((stats.t.sf(b / se, SEG - 2) < LEVEL).sum())
    p = hits / N
    return p, np.sqrt(p * (1 - p) / N)


def named_rate_ar1(phi, corr, rng, n):
    grid = np.linspace(0, 0.9, 91)
    factor = np.array([inflation(r) for r in grid])
    hits = 0
    for b, res, sxx in fits(phi, rng, n):
        r1 = (res[:, 1:] * res[:, :-1]).sum(axis=1) / (res**2).sum(axis=1)
        v = (res**2).sum(axis=1) / (SEG - 2) / sxx * np.interp(np.clip(r1 + corr, 0, 0.9), grid, factor)
        hits += int((stats.t.sf(b / np.sqrt(v), SEG - 2) < LEVEL).sum())
    return hits / n


def main():
    print(f"scipy {scipy.__version__}, numpy {np.__version__}")
    print(f"{SEG} segments of {B // SEG}-{-(-B // SEG)} buckets, one-sided level {LEVEL:.5f}, {N} replicates per row")
    rng = np.random.default_rng(20261207)
    for phi in (0.0, 0.5, 0.8, 0.9):
        r = seg_rho(phi, B // SEG)
        p, se = named_rate(phi, rng)
        print(f"phi {phi:.1f}  segment rho {r:.3f}  slope variance x{inflation(r):.3f}  named {100 * p:.3f}% +- {100 * se:.3f}  ({p / LEVEL:.2f}x nominal)")
    print("part 2: residual lag-1 inflation, bias correction, then named % at phi 0, 0.8, 0.9")
    for corr in (0.0, 0.15, 0.25):
        rates = [100 * named_rate_ar1(phi, corr, rng, 100_000) for phi in (0.0, 0.8, 0.9)]
        print(f"correction {corr:.2f}  " + "  ".join(f"{r:.3f}%" for r in rates))


main()
