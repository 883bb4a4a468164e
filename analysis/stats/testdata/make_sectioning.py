#!/usr/bin/python3
"""Reference values for SectionedQuantileLogRatio: per-bucket lognormal
samples with an AR(1) slowdown per bucket, each arm's buckets cut into
k = min(6, buckets // 4) contiguous sections, numpy's inverted-CDF quantile
of each section and of the whole arm, and the t interval (k - 1 degrees of
freedom, scipy.stats.t) around the full-sample log ratio.
Run: /usr/bin/python3 make_sectioning.py > sectioning.json"""
import json
import numpy as np
import scipy
from scipy import stats

rng = np.random.default_rng(31)
cases = []
for case in range(6):
    arms = []
    for arm in range(2):
        b = int(rng.integers(16, 40))
        slow = np.zeros(b)
        for t in range(1, b):
            slow[t] = 0.8 * slow[t - 1] + 0.05 * rng.normal()
        arms.append([np.round(0.05 * np.exp(slow[t] + 0.2 * rng.normal(size=int(rng.integers(5, 25)))), 6).tolist() for t in range(b)])
    x, y = arms
    q = [0.99, 0.9, 0.5][case % 3]
    conf = 0.9
    k = min(6, len(x) // 4, len(y) // 4)
    def quant(buckets, lo, hi):
        v = np.concatenate([np.array(s) for s in buckets[lo:hi]])
        return np.quantile(v, q, method="inverted_cdf")
    point = np.log(quant(x, 0, len(x)) / quant(y, 0, len(y)))
    d = np.array([np.log(quant(x, g * len(x) // k, (g + 1) * len(x) // k) / quant(y, g * len(y) // k, (g + 1) * len(y) // k)) for g in range(k)])
    half = stats.t.ppf(0.5 + conf / 2, k - 1) * d.std(ddof=1) / np.sqrt(k)
    cases.append({"x": x, "y": y, "q": q, "conf": conf, "want": [point, point - half, point + half]})
print(json.dumps({"generator": "make_sectioning.py", "numpy": np.__version__, "scipy": scipy.__version__, "cases": cases}))
