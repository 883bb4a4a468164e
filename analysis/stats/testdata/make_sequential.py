#!/usr/bin/python3
"""Reference values for analysis/stats/sequential.go, computed with scipy.

Independent of the Go code's method: the Go side integrates the score
process's sub-density look by look with Simpson's rule; here each
O'Brien-Fleming-type (Lan-DeMets) critical value is solved with brentq on
the multivariate normal CDF of (Z_1..Z_k), corr(Z_i, Z_j) = sqrt(t_i/t_j),
evaluated by scipy's Genz algorithm:

    P(Z_1<c_1..Z_{k-1}<c_{k-1}) - P(Z_1<c_1..Z_k<c_k) = a(t_k) - a(t_{k-1})

Run: /usr/bin/python3 analysis/stats/testdata/make_sequential.py > analysis/stats/testdata/sequential.json
(scipy 1.10.1.)
"""
import json
import numpy as np
from scipy import optimize, stats


def spend(alpha, t):
    return 2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / np.sqrt(t))


def below(cs, ts):
    k = len(cs)
    if k == 1:
        return stats.norm.cdf(cs[0])
    cov = np.array([[np.sqrt(min(ti, tj) / max(ti, tj)) for tj in ts] for ti in ts])
    return stats.multivariate_normal.cdf(np.array(cs), mean=np.zeros(k), cov=cov, abseps=1e-8, releps=1e-6, maxpts=50000 * k)


def bounds(alpha, ts):
    cs = []
    prev_below = 1.0
    for k, t in enumerate(ts):
        target = spend(alpha, t) - (spend(alpha, ts[k - 1]) if k else 0.0)
        if k == 0:
            cs.append(float(stats.norm.isf(target)))
            prev_below = stats.norm.cdf(cs[0])
            continue
        f = lambda c: prev_below - below(cs + [c], ts[: k + 1]) - target
        c = optimize.brentq(f, 0.0, 12.0, xtol=1e-7)
        cs.append(float(c))
        prev_below = below(cs, ts[: k + 1])
    return cs


cases = []
for name, alpha, ts in [
    ("K5-equal-a025", 0.025, [0.2, 0.4, 0.6, 0.8, 1.0]),
    ("K5-equal-a05", 0.05, [0.2, 0.4, 0.6, 0.8, 1.0]),
    ("K4-unequal-a05", 0.05, [0.1, 0.35, 0.7, 1.0]),
    ("K8-equal-a05", 0.05, [i / 8 for i in range(1, 9)]),
    ("K3-partial-a10", 0.10, [0.3, 0.6, 0.9]),
]:
    cases.append({
        "name": name,
        "alpha": alpha,
        "fractions": ts,
        "spent": [float(spend(alpha, t)) for t in ts],
        "bounds": bounds(alpha, ts),
    })
print(json.dumps({"generator": "make_sequential.py, scipy " + __import__("scipy").__version__, "cases": cases}, indent=1))
