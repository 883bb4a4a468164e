#!/usr/bin/python3
"""Reference values for TrendInflation (trendinflation.go), computed the
long way with numpy matrices: each segment's buckets centred by the
projection P = I − 11'/m, the lag-0, 1, 2 sums of products within segments
and their expectations for white noise and for a unit AR(1) (traces of
P P' and P Φ P' at offsets 0, 1, 2), the ARMA(1, 1) fit on the grid φ =
0.005, 0.010, …, 0.950 (a from the lag-1 ratio held within [0, 1], the φ
whose lag-1 and lag-2 ratios are nearest), φ raised by √((1 − φ²)/n) and
capped at 0.95, the bucket correlation matrix G (1 on the diagonal, a·φ^|i−j| off it), the segment
means' covariance Σ = A G A' (A averages each segment's buckets), the
residual projection M = I − X(X'X)⁻¹X' of the line through the segments'
midpoints, and κ = max(1, c'Σc/c'c · (k − 2)/tr(MΣ)).

The series: white noise, AR(1) at φ 0.5, 0.8, 0.9 and 0.95, white noise
plus an AR(1) part, a series with a trend, segments of unequal length
and a skipped segment.

Run: /usr/bin/python3 make_trendinflation.py > trendinflation.json"""
import functools
import json
import numpy as np
import scipy
from scipy import signal


@functools.lru_cache(maxsize=None)
def centred(m, i):
    """Traces of P Φ P' at offsets 0, 1, 2 for a segment of m buckets and
    a unit AR(1) of φ = i·0.005."""
    phi = i * 0.005
    P = np.eye(m) - np.ones((m, m)) / m
    lag = np.abs(np.subtract.outer(np.arange(m), np.arange(m)))
    C = P @ phi**lag @ P.T
    return np.array([np.trace(C, offset=j) for j in range(3)])


def kappa(d, segs):
    """κ and the fit (r1, r2, φ, a) the long way: explicit centring
    projections per segment, traces at offsets for the lag sums and their
    expectations, Σ = A G A' and the line's residual projection M."""
    d = np.asarray(d, dtype=float)
    k = len(segs)
    n = sum(hi - lo for lo, hi in segs)
    projs = [np.eye(hi - lo) - np.ones((hi - lo, hi - lo)) / (hi - lo) for lo, hi in segs]
    g = np.zeros(3)
    for (lo, hi), P in zip(segs, projs):
        r = P @ d[lo:hi]
        C = np.outer(r, r)
        g += [np.trace(C, offset=j) for j in range(3)]
    r1, r2 = g[1] / g[0], g[2] / g[0]
    ew = sum(np.array([np.trace(P @ P.T, offset=j) for j in range(3)]) for P in projs)
    if not r1 - ew[1] / ew[0] >= 0.05:
        return 1.0, r1, r2, 0.0, 0.0
    best = (np.inf, 0.0, 0.0)
    for i in range(1, 191):
        phi = i * 0.005
        ea = sum(centred(hi - lo, i) for lo, hi in segs)
        den = r1 * (ea[0] - ew[0]) - (ea[1] - ew[1])
        if den == 0:
            continue
        a = min(max((ew[1] - r1 * ew[0]) / den, 0.0), 1.0)
        e = ew + a * (ea - ew)
        err = abs(e[1] / e[0] - r1) + abs(e[2] / e[0] - r2)
        if err < best[0]:
            best = (err, phi, a)
    _, phi, a = best
    if not (phi > 0 and a > 0):
        return 1.0, r1, r2, phi, a
    phi = min(phi + np.sqrt((1 - phi**2) / n), 0.95)
    t0 = segs[0][0]
    span = segs[-1][1] - t0
    lag = np.abs(np.subtract.outer(np.arange(span), np.arange(span)))
    G = np.where(lag == 0, 1.0, a * phi**lag)
    A = np.zeros((k, span))
    for i, (lo, hi) in enumerate(segs):
        A[i, lo - t0:hi - t0] = 1.0 / (hi - lo)
    S = A @ G @ A.T
    x = np.array([(lo + hi) / 2 for lo, hi in segs], dtype=float)
    X = np.column_stack([np.ones(k), x])
    M = np.eye(k) - X @ np.linalg.inv(X.T @ X) @ X.T
    c = x - x.mean()
    return max(1.0, (c @ S @ c) / (c @ c) * (k - 2) / np.trace(M @ S)), r1, r2, phi, a


def main():
    rng = np.random.default_rng(1207)
    cases = []

    def ar1(phi, n):
        e = rng.standard_normal(n + 300)
        return signal.lfilter([1.0], [1.0, -phi], e)[300:]

    def even(n, k):
        return [(i * n // k, (i + 1) * n // k) for i in range(k)]

    series = [
        ("white", rng.standard_normal(180), even(180, 8)),
        ("ar1 0.5", ar1(0.5, 180), even(180, 8)),
        ("ar1 0.8", ar1(0.8, 180), even(180, 8)),
        ("ar1 0.9", ar1(0.9, 180), even(180, 8)),
        ("ar1 0.95", ar1(0.95, 180), even(180, 8)),
        ("white plus ar1 0.9", ar1(0.9, 180) * 0.5 + rng.standard_normal(180), even(180, 8)),
        ("ar1 0.8 with a trend", ar1(0.8, 180) + 0.05 * np.arange(180), even(180, 8)),
        ("ar1 0.8, 61 positions, 5 segments", ar1(0.8, 61), even(61, 5)),
        ("ar1 0.9, one segment skipped", ar1(0.9, 180), [s for i, s in enumerate(even(180, 8)) if i != 3]),
        ("ar1 0.85, 360 positions", ar1(0.85, 360), even(360, 8)),
    ]
    for name, d, segs in series:
        k, r1, r2, phi, a = kappa(d, segs)
        cases.append({"name": name, "d": [float(v) for v in d], "segs": [list(s) for s in segs],
                      "r1": float(r1), "r2": float(r2), "kappa": float(k)})
    print(json.dumps({"generator": "make_trendinflation.py", "scipy": scipy.__version__, "numpy": np.__version__,
                      "cases": cases}, indent=1))


if __name__ == "__main__":
    main()
