#!/usr/bin/python3
"""Reference values for FitTrend: the least-squares line through a short
series, its slope and standard error and one-sided p-value of "slope > 0"
from scipy.stats.linregress (two-sided p halved on the side of the slope),
and the fitted value at the window end with its standard error from the
(X'X)^-1 s^2 covariance of numpy's least-squares fit; the t quantile from
scipy.stats.t.
Run: /usr/bin/python3 make_trend.py > trend.json"""
import json
import numpy as np
import scipy
from scipy import stats

rng = np.random.default_rng(23)
cases = []
for case in range(8):
    n = int(rng.integers(3, 12))
    x = np.sort(rng.uniform(0, 30, n)) if case % 2 else (np.arange(n) + 0.5) * 30.0 / n
    slope = [0.0, 0.004, -0.002, 0.01][case % 4]
    y = 0.02 + slope * x + rng.normal(0, 0.03, n)
    x0 = float(x.max() + rng.uniform(0, 3))
    lr = stats.linregress(x, y)
    p_inc = lr.pvalue / 2 if lr.slope > 0 else 1 - lr.pvalue / 2
    X = np.column_stack([np.ones(n), x])
    beta, res, _, _ = np.linalg.lstsq(X, y, rcond=None)
    s2 = float(((y - X @ beta) ** 2).sum()) / (n - 2)
    cov = s2 * np.linalg.inv(X.T @ X)
    v = np.array([1.0, x0])
    at = float(v @ beta)
    at_se = float(np.sqrt(v @ cov @ v))
    cases.append({"x": x.tolist(), "y": y.tolist(), "x0": x0,
                  "slope": lr.slope, "slope_se": lr.stderr, "p_increase": p_inc, "at": at, "at_se": at_se,
                  "t95": stats.t.ppf(0.95, n - 2)})
print(json.dumps({"generator": "make_trend.py", "scipy": scipy.__version__, "cases": cases}, indent=1))
