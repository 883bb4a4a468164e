#!/usr/bin/python3
"""Reference values for PairedDiffOfRatios and PairedLogRatioOfRatios:
two arms on one bucket grid sharing a wave. Runs of at least 60 buckets:
the lag-window variance of the per-bucket residual differences summed over
q = min(18, b // 4) contiguous batches, max(ΣD² + 2ΣD_k·D_k+1, ΣD²/4), with
the critical value t_ν(½ + c/2)/√m from the constants (m_q, ν_q) that
lagwindow.py prints into lagwindow.txt. Shorter runs: the plain batch-means
variance on 6 contiguous batches and the t interval with 5 degrees of
freedom. Computed with numpy and scipy.stats.t.
Run: /usr/bin/python3 make_paired.py > paired.json"""
import json
import re
import numpy as np
import scipy
from scipy import stats

LW = {}
for line in open("lagwindow.txt"):
    m = re.match(r"q (\d+) m ([0-9.]+) nu ([0-9.]+)", line)
    if m:
        LW[int(m[1])] = (float(m[2]), float(m[3]))

rng = np.random.default_rng(11)
cases = []
for case in range(9):
    b = int(rng.integers(24, 200)) if case < 6 else [180, 150, 63][case - 6]
    wave = 0.05 * np.sin(np.arange(b) / 7.0)
    den_x = rng.poisson(200, b).astype(float)
    den_y = rng.poisson(200, b).astype(float)
    num_x = np.array([rng.binomial(int(n), min(0.99, 0.9 + w)) for n, w in zip(den_x, wave)], float)
    num_y = np.array([rng.binomial(int(n), min(0.99, 0.9 + w)) for n, w in zip(den_y, wave)], float)
    conf = 0.9 if case < 7 else 0.975
    rx, ry = num_x.sum() / den_x.sum(), num_y.sum() / den_y.sum()
    lag = b // 4 >= 15
    q = min(18, b // 4) if lag else min(6, b // 4)
    edges = [g * b // q for g in range(q + 1)]
    out = {}
    for log in (False, True):
        sx, sy = den_x.sum(), den_y.sum()
        if log:
            sx, sy = sx * rx, sy * ry
        d = (num_x - rx * den_x) / sx - (num_y - ry * den_y) / sy
        D = np.array([d[edges[g]:edges[g + 1]].sum() for g in range(q)])
        if lag:
            g0, g1 = (D ** 2).sum(), (D[1:] * D[:-1]).sum()
            m, nu = LW[q]
            half = stats.t.ppf(0.5 + conf / 2, nu) / np.sqrt(m) * np.sqrt(max(g0 + 2 * g1, g0 / 4))
        else:
            half = stats.t.ppf(0.5 + conf / 2, q - 1) * np.sqrt(q / (q - 1) * (D ** 2).sum())
        point = np.log(rx / ry) if log else rx - ry
        out["log" if log else "diff"] = [point, point - half, point + half]
    cases.append({"num_x": num_x.tolist(), "den_x": den_x.tolist(), "num_y": num_y.tolist(), "den_y": den_y.tolist(),
                  "conf": conf, "want": out})
print(json.dumps({"generator": "make_paired.py", "scipy": scipy.__version__, "cases": cases}))
