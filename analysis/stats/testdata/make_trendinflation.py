#!/usr/bin/python3
"""Reference values for TrendInflation (trendinflation.go), computed the
long way with numpy matrices: the series detrended by numpy's
least-squares line, its lag-1 and lag-2 autocorrelations, the ARMA(1, 1)
moment fit, φ raised by 2·√((1 − φ²)/n) and capped at 0.98, the bucket
correlation matrix G (1 on the diagonal, a·φ^|i−j| off it), the segment
means' covariance Σ = A G A' (A averages each segment's buckets), the
residual projection M = I − X(X'X)⁻¹X' of the line through the segments'
midpoints, and κ = max(1, c'Σc/c'c · (k − 2)/tr(MΣ)).

The series: white noise, AR(1) at φ 0.5, 0.8, 0.9 and 0.95, white noise
plus an AR(1) part, a series with a trend, segments of unequal length
and a skipped segment.

Run: /usr/bin/python3 make_trendinflation.py > trendinflation.json"""
import json
import numpy as np
import scipy
from scipy import signal


def kappa(d, segs):
    d = np.asarray(d, dtype=float)
    n, k = len(d), len(segs)
    t = np.arange(n, dtype=float)
    X1 = np.column_stack([np.ones(n), t])
    beta, *_ = np.linalg.lstsq(X1, d, rcond=None)
    r = d - X1 @ beta
    g0, g1, g2 = r @ r, r[1:] @ r[:-1], r[2:] @ r[:-2]
    r1, r2 = g1 / g0, g2 / g0
    if not r1 >= 0.05:
        return 1.0, r1, r2, 0.0, 0.0
    phi = min(r2 / r1, 0.98)
    if not phi > 0:
        return 1.0, r1, r2, phi, 0.0
    a = min(r1 / phi, 1.0)
    phi = min(phi + 2 * np.sqrt((1 - phi**2) / n), 0.98)
    lag = np.abs(np.subtract.outer(t, t))
    G = np.where(lag == 0, 1.0, a * phi**lag)
    A = np.zeros((k, n))
    for i, (lo, hi) in enumerate(segs):
        A[i, lo:hi] = 1.0 / (hi - lo)
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
