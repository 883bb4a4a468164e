#!/usr/bin/python3
"""The trend check's level with and without TrendInflation
(make_trendinflation.py's kappa): how often a worsening slope is named
(one-sided p < 0.05/8, the trend check's level in chat) in identical arms
whose noise lasts across segment boundaries, and how often a leak is
named, on 180 buckets (30 minutes of 10 s) cut into 8 segments.

The paired difference of each replicate is one of:
  ar1 φ      each arm its own AR(1) per bucket (unit variance), φ 0 to 0.95;
  white+ar1  each arm's AR(1) at φ 0.9 at a quarter of the variance, plus
             white noise (a count share's binomial noise over a slowdown);
  episodes   each arm slowed (level 2) in episodes of mean length
             1/(1 − p) buckets starting at a quarter of that rate, plus
             white noise of standard deviation 0.5 (not an AR(1): a
             two-state switch);
  leak       the AR(1) difference at φ 0 or 0.8 plus a line rising by
             `rise` standard deviations of a bucket over the run;
  late leak  the same with a rise that grows as the cube of the time;
  step       the same with a rise that comes as a logistic step at 70%
             of the run (slope 20 per run).
Printed per row: the named rate of the least-squares line through the
segment means (Student t, 6 degrees of freedom) as the judge fitted it
before, and with its variance multiplied by κ, with Monte Carlo standard
errors; κ is computed only where the uninflated line is named (κ ≥ 1
cannot name another).

Run: /usr/bin/python3 trend_inflation.py > trend_inflation.txt"""
import numpy as np
import scipy
from scipy import signal, stats

from make_trendinflation import kappa

B, SEG, BURN, N = 180, 8, 300, 40_000
LEVEL = 0.05 / 8
SEGS = [(i * B // SEG, (i + 1) * B // SEG) for i in range(SEG)]
A = np.zeros((SEG, B))
for i, (lo, hi) in enumerate(SEGS):
    A[i, lo:hi] = 1.0 / (hi - lo)
X = np.array([(lo + hi) / 2 for lo, hi in SEGS])
XC = X - X.mean()
SXX = XC @ XC


def ar1(phi, rng, shape):
    e = rng.standard_normal(shape[:-1] + (shape[-1] + BURN,))
    return signal.lfilter([1.0], [1.0, -phi], e, axis=-1)[..., BURN:] * np.sqrt(1 - phi**2)


def episodes(p_stay, rng, shape):
    p_on = (1 - p_stay) / 4
    s = np.zeros(shape[:-1])
    out = np.zeros(shape)
    u = rng.random(shape[:-1] + (shape[-1] + BURN,))
    for t in range(shape[-1] + BURN):
        s = np.where(s > 0, u[..., t] < p_stay, u[..., t] < p_on).astype(float)
        if t >= BURN:
            out[..., t - BURN] = 2 * s
    return out


def series(kind, par, rng, n):
    if kind == "ar1":
        y = ar1(par, rng, (2, n, B))
        return y[0] - y[1]
    if kind == "white+ar1":
        y = ar1(par, rng, (2, n, B))
        return 0.5 * (y[0] - y[1]) + rng.standard_normal((n, B))
    if kind == "late leak":
        phi, rise = par
        y = ar1(phi, rng, (2, n, B))
        return y[0] - y[1] + rise * (np.arange(B) / (B - 1)) ** 3
    if kind == "step":
        phi, rise = par
        y = ar1(phi, rng, (2, n, B))
        return y[0] - y[1] + rise / (1 + np.exp(-(np.arange(B) / (B - 1) - 0.7) * 20))
    if kind == "episodes":
        y = episodes(par, rng, (2, n, B))
        return y[0] - y[1] + 0.5 * rng.standard_normal((n, B))
    phi, rise = par
    y = ar1(phi, rng, (2, n, B))
    return y[0] - y[1] + rise * np.arange(B) / (B - 1)


def row(kind, par, rng):
    old = new = 0
    for _ in range(N // 10_000):
        d = series(kind, par, rng, 10_000)
        seg = d @ A.T
        b = seg @ XC / SXX
        res = seg - seg.mean(axis=1, keepdims=True) - np.outer(b, XC)
        se = np.sqrt((res**2).sum(axis=1) / (SEG - 2) / SXX)
        named = stats.t.sf(b / se, SEG - 2) < LEVEL
        old += int(named.sum())
        for i in np.flatnonzero(named):
            k = kappa(d[i], SEGS)[0]
            new += int(stats.t.sf(b[i] / se[i] / np.sqrt(k), SEG - 2) < LEVEL)
    po, pn = old / N, new / N
    mc = lambda p: np.sqrt(p * (1 - p) / N)
    return f"{kind:9s} {str(par):12s} before {100 * po:6.3f}% ± {100 * mc(po):.3f}   with κ {100 * pn:6.3f}% ± {100 * mc(pn):.3f}"


def main():
    print(f"scipy {scipy.__version__}, numpy {np.__version__}")
    print(f"{B} buckets, {SEG} segments, one-sided level {100 * LEVEL:.3f}%, {N} replicates per row")
    rng = np.random.default_rng(20261207)
    for kind, par in [("ar1", 0.0), ("ar1", 0.5), ("ar1", 0.8), ("ar1", 0.9), ("ar1", 0.95),
                      ("white+ar1", 0.9), ("episodes", 0.9), ("episodes", 0.95),
                      ("leak", (0.0, 1.0)), ("leak", (0.0, 1.5)), ("leak", (0.8, 1.5)), ("leak", (0.8, 2.5)),
                      ("late leak", (0.0, 3.0)), ("late leak", (0.8, 5.0)), ("step", (0.0, 2.0)), ("step", (0.8, 3.0))]:
        print(row(kind, par, rng), flush=True)


if __name__ == "__main__":
    main()
