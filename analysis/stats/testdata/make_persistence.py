#!/usr/bin/python3
"""Reference values for PersistenceWidening (persistence.go), computed the
long way with dense numpy matrices over the buckets: the unit AR(1)
covariance G = φ^|i−j| of b buckets, the centring projection
P = I − 11'/b, the batch-summing matrix B (q contiguous batches, batch g
covering [g·b/q, (g+1)·b/q)), the centred batch sums' covariance
Σ_D = B P G P' B', the quadratic form A (I, plus ones on the first off-
diagonals for the lag window), E[V] = tr(AΣ_D), Var(V) = 2·tr((AΣ_D)²),
r = E[V]/(1'G1), ν = 2E[V]²/Var(V), and the factor
f = max(1, t_ν(φ)(½ + c/2)/t_ν(0)(½ + c/2)·√(r(0)/r(φ))) with scipy's
Student t quantiles (ν(φ) held at 1 or more).

The layouts: the lag window on min(18, b/4) batches from b = 60 up, six
plain batch means below.

For independent arms (PersistenceWideningOf on "delta-batchmeans"): each
arm's min(8, b/4) plain batches, the two arms' degrees of freedom added.
StretchDF's degrees of freedom come from the same moments with q
disjoint stretches of m buckets and no lag term.

Run: /usr/bin/python3 make_persistence.py > persistence.json"""
import json
import numpy as np
from scipy import stats


def moments(b, phi, q=None, lag=None):
    if q is None:
        if b // 4 >= 15:
            q, lag = min(18, b // 4), True
        else:
            q, lag = min(6, b), False
    idx = np.arange(b)
    G = phi ** np.abs(np.subtract.outer(idx, idx)) if phi > 0 else np.eye(b)
    P = np.eye(b) - np.ones((b, b)) / b
    B = np.zeros((q, b))
    for g in range(q):
        B[g, g * b // q:(g + 1) * b // q] = 1
    SD = B @ P @ G @ P.T @ B.T
    A = np.eye(q)
    if lag:
        A += np.eye(q, k=1) + np.eye(q, k=-1)
    AS = A @ SD
    ev = np.trace(AS)
    var = 2 * np.trace(AS @ AS)
    return ev / G.sum(), 2 * ev * ev / var


def factor(b, phi, conf):
    r0, nu0 = moments(b, 0.0)
    r, nu = moments(b, phi)
    p = 0.5 + conf / 2
    f = stats.t.ppf(p, max(nu, 1)) / stats.t.ppf(p, nu0) * np.sqrt(r0 / r)
    return max(1.0, f)


cases = []
for b in (20, 40, 59, 60, 61, 180, 181, 360, 720):
    for phi in (0.5, 0.8, 0.9, 0.95, 0.98):
        for conf in (0.9, 0.95):
            r, nu = moments(b, phi)
            cases.append({"b": b, "phi": phi, "conf": conf, "r": r, "nu": nu,
                          "factor": factor(b, phi, conf)})
# PersistenceWideningOf for independent arms' batch means: each arm on
# min(8, b/4) plain batches, the degrees of freedom of the two arms added
unpaired = []
for b in (20, 40, 60, 180, 360):
    for phi in (0.8, 0.95, 0.98):
        q = min(8, b // 4)
        r0, nu0 = moments(b, 0.0, q, False)
        r, nu = moments(b, phi, q, False)
        p = 0.5 + 0.9 / 2
        f = stats.t.ppf(p, max(2 * nu, 1)) / stats.t.ppf(p, 2 * nu0) * np.sqrt(r0 / r)
        unpaired.append({"b": b, "phi": phi, "conf": 0.9, "factor": max(1.0, f)})

# StretchDF: the spread of q disjoint stretches of m buckets about their
# mean, its Satterthwaite degrees of freedom (at most q − 1, at least 1)
stretches = []
for q, m in ((60, 3), (30, 6), (15, 12), (6, 30), (5, 2)):
    for phi in (0.5, 0.8, 0.95, 0.98):
        _, nu = moments(q * m, phi, q, False)
        stretches.append({"q": q, "m": m, "phi": phi, "nu": min(q - 1, max(1.0, nu))})
print(json.dumps({"cases": cases, "stretches": stretches, "unpaired": unpaired}, indent=1))
