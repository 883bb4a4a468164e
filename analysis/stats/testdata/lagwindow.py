#!/usr/bin/python3
"""Constants and reference values for the lag-window paired variance
(stats.pairedLagWindow).

The estimator: the paired per-bucket residual differences d_t are summed
over q contiguous batches into D_k (ΣD_k = 0); the long-run variance of the
total is V = max(ΣD_k² + 2·ΣD_k·D_{k+1}, ΣD_k²/4): twice the lag-1
covariance of adjacent batch sums repairs the correlation batch means miss
across batch ends; the floor keeps the estimate from collapsing when the
lag-1 sample correlation is very negative (it is taken as no lower than
−0.375).

Part 1: for iid normal batch sums, W = V/(q·σ²) is approximated by a
scaled chi-square (mean m_q, ν_q = 2m²/var degrees of freedom), so the
critical value at confidence c is t_{ν_q}(1/2 + c/2)/√m_q. Printed: m_q,
ν_q (2,000,000 draws each) and the exact quantiles of |ΣZ|/√V beside the
approximation, at c = 0.8, 0.9, 0.95, 0.99.

Part 2: coverage of 0 (nominal 90%) and width (mean half-width over 1.645
SD of the estimate) under the arms of paired_alternatives.py: two arms
share a traffic wave, each carries its own AR(1) slowdown, 180 buckets of
~200 requests at attainment ~93%; 4,000 replicates per row.

Run: /usr/bin/python3 lagwindow.py > lagwindow.txt"""
import numpy as np
import scipy
from scipy import stats

from pairedarms import arms, batch_sums

DRAWS, CHUNK = 2_000_000, 200_000
CONFS = [0.8, 0.9, 0.95, 0.99]


def V(D):
    Dc = D - D.mean(1, keepdims=True)
    g0 = (Dc ** 2).sum(1)
    return np.maximum(g0 + 2 * (Dc[:, 1:] * Dc[:, :-1]).sum(1), g0 / 4)


print(f"scipy {scipy.__version__}, numpy {np.__version__}")
print("part 1: q, m_q, nu_q, then per confidence: exact | approximation")
consts = {}
for q in range(15, 19):
    rng = np.random.default_rng(100 + q)
    W, T = [], []
    for _ in range(DRAWS // CHUNK):
        D = rng.normal(size=(CHUNK, q))
        v = V(D)
        W.append(v / q)
        T.append(np.abs(D.sum(1)) / np.sqrt(v))
    W, T = np.concatenate(W), np.concatenate(T)
    m = W.mean()
    nu = 2 * m * m / W.var()
    consts[q] = (m, nu)
    cells = []
    for c in CONFS:
        cells.append(f"{c}: {np.quantile(T, c):.4f} | {stats.t.ppf(0.5 + c / 2, nu) / np.sqrt(m):.4f}")
    print(f"q {q} m {m:.5f} nu {nu:.4f}  " + "  ".join(cells))

print("part 2: coverage (nominal 90%) and width; nbm6 = 6 batches with t5, lw18 = the lag window on 18 batches")
rng = np.random.default_rng(1)
m18, nu18 = consts[18]
cv = {"nbm6": stats.t.ppf(0.95, 5), "lw18": stats.t.ppf(0.95, nu18) / np.sqrt(m18)}
est = {"nbm6": lambda d: 6 / 5 * (batch_sums(d, 6) ** 2).sum(1), "lw18": lambda d: V(batch_sums(d, 18))}
for amp, phi in [(0.0, 0.8), (0.01, 0.5), (0.01, 0.8), (0.006, 0.9), (0.01, 0.9)]:
    pt, d = arms(rng, amp, phi)
    row = []
    for name in ["nbm6", "lw18"]:
        h = cv[name] * np.sqrt(est[name](d))
        row.append(f"{name} coverage {100 * np.mean(np.abs(pt) <= h):5.1f}% width {np.mean(h) / (1.645 * pt.std()):.3f}")
    print(f"amp {amp:.3f} phi {phi:.1f}: " + " | ".join(row))
