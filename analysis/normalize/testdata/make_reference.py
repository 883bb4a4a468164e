#!/usr/bin/python3
"""Reference values for package normalize, computed independently with numpy
and scipy (Debian python3-numpy, python3-scipy):

    /usr/bin/python3 make_reference.py > reference.json

Every closed-form estimator of the package is recomputed here from its
definition (not from the Go code): the standardised difference of ratios and
its log version with batch-means delta variances, CUPED, MSER-5 and the CUSUM
statistic, the reference weights, and the traffic-split chi-square test.
"""
import json
import math

import numpy as np
from scipy import stats

rng = np.random.default_rng(20261129)


def batch_var(u):
    """Batch-means variance of the sum of u (Σu = 0): q = min(8, b//4)
    contiguous batches g*b//q .. (g+1)*b//q, q/(q-1)·ΣU_g²; df = q-1."""
    b = len(u)
    q = min(8, b // 4)
    U = np.array([u[g * b // q:(g + 1) * b // q].sum() for g in range(q)])
    return q / (q - 1) * float((U ** 2).sum()), q - 1


def standardized(num, den, w):
    """num, den: arrays [stratum, bucket]. Returns θ, Var(θ̂), df."""
    N, D = num.sum(axis=1), den.sum(axis=1)
    R = N / D
    theta = float((w * R).sum())
    u = ((w / D)[:, None] * (num - R[:, None] * den)).sum(axis=0)
    v, df = batch_var(u)
    return theta, v, df


def interval(point, vx, dfx, vy, dfy, conf):
    v = vx + vy
    nu = v * v / (vx * vx / dfx + vy * vy / dfy)
    crit = stats.t.ppf(0.5 + conf / 2, nu)
    z = stats.norm.ppf(0.5 + conf / 2)
    se = math.sqrt(v) * crit / z
    return {"point": point, "se": se, "lo": point - z * se, "hi": point + z * se, "nu": nu}


def arm(S, b, p, lam):
    den = rng.poisson(lam[:, None], size=(S, b)).astype(float)
    num = rng.binomial(den.astype(int), p[:, None]).astype(float)
    return num, den


cases = []
for name, bx, by, conf in [("small", 12, 16, 0.90), ("long", 40, 37, 0.95)]:
    S = 3
    nx, dx = arm(S, bx, np.array([0.97, 0.9, 0.75]), np.array([20.0, 8.0, 5.0]))
    ny, dy = arm(S, by, np.array([0.96, 0.92, 0.8]), np.array([25.0, 5.0, 3.0]))
    modes = {
        "baseline": dy.sum(axis=1) / dy.sum(),
        "canary": dx.sum(axis=1) / dx.sum(),
        "pooled": (dx.sum(axis=1) + dy.sum(axis=1)) / (dx.sum() + dy.sum()),
        "weights": np.array([2.0, 1.0, 1.0]) / 4,
    }
    w = modes["baseline"]
    tx, vx, dfx = standardized(nx, dx, w)
    ty, vy, dfy = standardized(ny, dy, w)
    lin = interval(tx - ty, vx, dfx, vy, dfy, conf)
    log = interval(math.log(tx / ty), vx / tx ** 2, dfx, vy / ty ** 2, dfy, conf)
    # naive: one stratum with weight 1
    ax, avx, adfx = standardized(nx.sum(axis=0, keepdims=True), dx.sum(axis=0, keepdims=True), np.array([1.0]))
    ay, avy, adfy = standardized(ny.sum(axis=0, keepdims=True), dy.sum(axis=0, keepdims=True), np.array([1.0]))
    naive = interval(ax - ay, avx, adfx, avy, adfy, conf)
    cases.append({
        "name": name, "conf": conf, "names": ["short", "medium", "long"],
        "canary": {"num": nx.tolist(), "den": dx.tolist()},
        "baseline": {"num": ny.tolist(), "den": dy.tolist()},
        "weights": {k: v.tolist() for k, v in modes.items()},
        "explicit": {"short": 2.0, "medium": 1.0, "long": 1.0},
        "theta_canary": tx, "theta_baseline": ty,
        "diff": lin, "log": log, "naive": naive,
    })

# CUPED: outcome = bucket attainment, covariate = bucket cache hit rate
def cuped_case(bx, by, conf):
    hx = rng.uniform(0.1, 0.7, bx)
    hy = rng.uniform(0.2, 0.8, by)
    yx = 0.90 + 0.08 * hx + rng.normal(0, 0.01, bx) - 0.005
    yy = 0.90 + 0.08 * hy + rng.normal(0, 0.01, by)
    sxy = ((hx - hx.mean()) * (yx - yx.mean())).sum() + ((hy - hy.mean()) * (yy - yy.mean())).sum()
    sxx = ((hx - hx.mean()) ** 2).sum() + ((hy - hy.mean()) ** 2).sum()
    syy = ((yx - yx.mean()) ** 2).sum() + ((yy - yy.mean()) ** 2).sum()
    theta = sxy / sxx
    xbar = np.concatenate([hx, hy]).mean()
    ax = yx - theta * (hx - xbar)
    ay = yy - theta * (hy - xbar)

    def mean_est(a, b):
        va, dfa = batch_var(a - a.mean())
        vb, dfb = batch_var(b - b.mean())
        return interval(a.mean() - b.mean(), va / len(a) ** 2, dfa, vb / len(b) ** 2, dfb, conf)

    return {
        "conf": conf,
        "canary": {"outcome": yx.tolist(), "covariate": hx.tolist()},
        "baseline": {"outcome": yy.tolist(), "covariate": hy.tolist()},
        "theta": theta, "covariate_mean": xbar, "correlation": sxy / math.sqrt(sxx * syy),
        "adj_mean_canary": ax.mean(), "adj_mean_baseline": ay.mean(),
        "var_canary": yx.var(ddof=1), "adj_var_canary": ax.var(ddof=1),
        "var_baseline": yy.var(ddof=1), "adj_var_baseline": ay.var(ddof=1),
        "unadjusted": mean_est(yx, yy), "adjusted": mean_est(ax, ay),
    }

cuped = [cuped_case(24, 30, 0.90), cuped_case(50, 41, 0.95)]

# MSER-5 and CUSUM on a series with a transient
def mser_cusum(series, batch=5, frac=0.5):
    nb = len(series) // batch
    z = np.array([np.nanmean(series[i * batch:(i + 1) * batch]) for i in range(nb)])
    n = len(z)
    dmax = int(math.floor(frac * n))
    se2 = [((z[d:] - z[d:].mean()) ** 2).sum() / (n - d) ** 2 for d in range(dmax + 1)]
    d = int(np.argmin(se2))
    S = np.cumsum(z - z.mean())[:-1]
    k = int(np.argmax(np.abs(S))) + 1
    r = np.concatenate([z[:k] - z[:k].mean(), z[k:] - z[k:].mean()])
    ss = (r ** 2).sum()
    cross = sum(r[i] * r[i + 1] for i in range(n - 1) if i + 1 != k)
    rho = cross / ss
    rho += (1 + 3 * rho) / n
    rho = min(max(rho, 0.0), 0.9)
    lrv = ss / (n - 2) * (1 + rho) / (1 - rho)
    stat = abs(S[k - 1]) / math.sqrt(lrv * n)
    return {"series": [None if np.isnan(v) else v for v in series.tolist()],
            "mser_d": d, "mser_se2": se2[d], "mser_se2_0": se2[0], "cusum_k": k, "cusum_stat": stat}

s1 = 0.3 + 0.02 * rng.standard_normal(100)
s1[:17] += 0.25
s2 = 0.3 + 0.02 * rng.standard_normal(60)
s2[7] = np.nan
s2[31] = np.nan
warm = [mser_cusum(s1), mser_cusum(s2)]

srm = []
for c, b, share in [(4500, 5500, 0.5), (1000, 1040, 0.5), (900, 8100, 0.1), (950, 8050, 0.1)]:
    n = c + b
    chi2, p = stats.chisquare([c, b], [n * share, n * (1 - share)])
    srm.append({"canary": c, "baseline": b, "share": share, "chi2": float(chi2), "p": float(p)})

json.dump({"standardize": cases, "cuped": cuped, "warmup": warm, "srm": srm}, __import__("sys").stdout)
