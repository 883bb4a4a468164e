#!/usr/bin/python3
"""Reference values for analysis/capacity, computed independently with
numpy and scipy (Debian python3-scipy 1.10). Run from the repository root:

    /usr/bin/python3 analysis/capacity/testdata/reference.py > analysis/capacity/testdata/reference.json

1. percentile sketches: seeded samples, numpy's linear percentiles at the
   probabilities inference-perf writes, and the exact count of values <= x;
   the Go bounds must contain the exact count.
2. isotonic fits: weighted least squares under "non-increasing", solved as a
   bounded linear least-squares problem (scipy.optimize.lsq_linear: f_i =
   a - sum_{k<=i} d_k with d_k >= 0), not by pool-adjacent-violators.
3. the real inference-perf sweeps under the chat policy (TTFT <= 1 s, TPOT
   <= 80 ms, at least 2 output tokens): attainment bounds, Wilson limits at 95%
   (scipy.stats.norm quantile), the monotone envelope and each arm's capacity
   interval and the ratio interval.
"""
import glob
import json
import math
import os
import re

import numpy as np
from scipy import optimize, stats

PROBS = [0.0, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0]


def sketches():
    rng = np.random.default_rng(20261201)
    out = []
    for n in (7, 60, 200, 1884, 5531):
        for sigma in (0.3, 1.2):
            x = rng.lognormal(mean=-1.5, sigma=sigma, size=n)
            vals = [float(np.percentile(x, 100 * p)) for p in PROBS]
            qs = sorted(set([float(v) for v in np.quantile(x, [0.5, 0.9, 0.98, 0.99, 0.995, 0.999])] + [0.2, 1.0]))
            cases = [{"x": q, "count": int(np.sum(x <= q))} for q in qs]
            out.append({"n": n, "probs": PROBS, "values": vals, "cases": cases})
    return out


def isotonic(y, w):
    n = len(y)
    # f = A @ [a, d_1..d_{n-1}], f_i = a - sum_{k<i} d_k
    A = np.zeros((n, n))
    A[:, 0] = 1
    for i in range(n):
        A[i, 1:i + 1] = -1
    sw = np.sqrt(np.asarray(w, float))
    lb = np.r_[-np.inf, np.zeros(n - 1)]
    res = optimize.lsq_linear(A * sw[:, None], np.asarray(y, float) * sw, bounds=(lb, np.full(n, np.inf)), tol=1e-14, lsmr_tol="auto", max_iter=10000)
    return [float(v) for v in A @ res.x]


def fits():
    rng = np.random.default_rng(7)
    out = []
    for n in (1, 2, 5, 9, 14):
        y = list(np.clip(1 - np.sort(rng.uniform(0, 1, n)) + rng.normal(0, 0.15, n), 0, 1))
        w = list(rng.integers(10, 5000, n).astype(float))
        out.append({"y": [float(v) for v in y], "w": w, "fit": isotonic(y, w)})
    return out


def wilson(k, n, conf):
    z = stats.norm.ppf(1 - (1 - conf) / 2)
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    lo, hi = max(0.0, c - h), min(1.0, c + h)
    if k == 0:
        lo = 0.0
    if k == n:
        hi = 1.0
    return lo, hi


def count_bounds(probs, vals, n, x):
    lo, hi = 0, n
    for p, v in zip(probs, vals):
        pos = (n - 1) * p
        if v <= x:
            lo = max(lo, min(int(math.floor(pos + 1e-9)) + 1, n))
        else:
            hi = min(hi, max(int(math.ceil(pos - 1e-9)), 0))
    return lo, hi


def arm(d, ttft=1.0, tpot=0.08, target=0.99, conf=0.95, tol=0.05):
    pts = []
    for f in sorted(glob.glob(os.path.join(d, "stage_*_lifecycle_metrics.json"))):
        j = json.load(open(f))
        ls = j["load_summary"]
        req, ach = ls["requested_rate"], ls["achieved_rate"]
        rate = ach if ach < req * (1 - tol) else req
        n = j["successes"]["count"] + j["failures"]["count"]
        c = j["successes"]["count"]
        bounds = []
        for key, lim in (("time_to_first_token", ttft), ("time_per_output_token", tpot)):
            q = j["successes"]["latency"][key]
            probs, vals = [], []
            for k, v in q.items():
                if k == "mean":
                    continue
                p = {"min": 0.0, "max": 1.0, "median": 0.5}.get(k)
                if p is None:
                    p = float(k[1:]) / 100
                probs.append(p)
                vals.append(v)
            bounds.append(count_bounds(probs, vals, c, lim))
        # chat's output-token floor (min_output_tokens 2): good needs >= 2
        # tokens, i.e. not <= 1.5, bounded from the output_len percentiles
        ol = j["successes"]["output_len"]
        probs = [{"min": 0.0, "max": 1.0, "median": 0.5}.get(k, None) for k in ol if k != "mean"]
        probs = [p if p is not None else float(k[1:]) / 100 for p, k in zip(probs, [k for k in ol if k != "mean"])]
        vals = [v for k, v in ol.items() if k != "mean"]
        blo, bhi = count_bounds(probs, vals, c, 1.5)
        bounds.append((c - bhi, c - blo))
        glo = max(0, sum(b[0] for b in bounds) - (len(bounds) - 1) * c)
        ghi = min(b[1] for b in bounds)
        wl, wh = wilson(glo, n, conf)[0], wilson(ghi, n, conf)[1]
        pts.append({"stage": int(re.search(r"stage_(\d+)_", f).group(1)), "rate": rate, "n": n, "good_lo": glo, "good_hi": ghi, "lo": wl, "hi": wh})
    pts.sort(key=lambda p: p["rate"])
    up, lo = [], [0.0] * len(pts)
    u = math.inf
    for p in pts:
        u = min(u, p["hi"])
        up.append(u)
    l = -math.inf
    for i in range(len(pts) - 1, -1, -1):
        l = max(l, pts[i]["lo"])
        lo[i] = l
    cap_lo = max([p["rate"] for p, L in zip(pts, lo) if L >= target], default=0.0)
    cap_hi = min([p["rate"] for p, U in zip(pts, up) if U < target], default=math.inf)
    return {"points": pts, "lower": lo, "upper": up, "capacity": [cap_lo, cap_hi]}


def realdata():
    root = "testdata/realdata/inference-perf"
    b, c = arm(os.path.join(root, "vllm")), arm(os.path.join(root, "vllm+quantization"))
    return {"baseline": b, "canary": c,
            "ratio": [c["capacity"][0] / b["capacity"][1], c["capacity"][1] / b["capacity"][0]]}


print(json.dumps({"generator": "analysis/capacity/testdata/reference.py", "numpy": np.__version__,
                  "scipy": __import__("scipy").__version__,
                  "sketches": sketches(), "fits": fits(), "realdata": realdata()}, indent=1))
