#!/usr/bin/python3
"""Reference values for StratifiedQuantile: the q-quantile of the mixture
sum_s w_s F_s of per-stratum empirical CDFs, computed by evaluating the
mixture CDF at every sample value (numpy searchsorted) and taking the
smallest value where it reaches q. Run: /usr/bin/python3 make_stratquantile.py
> stratquantile.json"""
import json
import numpy as np
import scipy

rng = np.random.default_rng(20261201)
cases = []
for case in range(12):
    k = int(rng.integers(2, 5))
    w = rng.dirichlet(np.ones(k))
    if case % 4 == 0:
        w[-1] = 0.0  # a stratum with no reference weight
        w /= w.sum()
    strata = []
    for s in range(k):
        n = int(rng.integers(5, 400))
        v = np.round(rng.lognormal(mean=-1 + 0.4 * s, sigma=0.5, size=n), 6 if case % 3 else 2)
        strata.append(v)
    allv = np.unique(np.concatenate(strata))
    F = np.zeros_like(allv)
    for s, v in enumerate(strata):
        sv = np.sort(v)
        F += w[s] * np.searchsorted(sv, allv, side="right") / len(sv)
    want = {}
    for q in (0.1, 0.5, 0.9, 0.99):
        idx = np.nonzero(F >= q * (1 - 1e-12))[0][0]
        want[str(q)] = float(allv[idx])
    cases.append({"weights": w.tolist(), "strata": [s.tolist() for s in strata], "want": want})
print(json.dumps({"generator": "make_stratquantile.py", "scipy": scipy.__version__, "cases": cases}))
