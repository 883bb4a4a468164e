#!/usr/bin/python3
"""Reference values for BetweenReplicas and WithExtraVariance.

BetweenReplicas: per arm, replicas' offered and good requests per bucket;
tau^2 from both arms' replicas pooled;
q = min(batches, buckets // 4) contiguous batches. With R and N the arm's
attainment and offered requests, e[r, g] = sum over batch g of
(good - R * offered) / N; D[r, g] = e[r, g] - o[r, g] / o[:, g].sum() *
e[:, g].sum(); S_r = D[r].sum(). tau^2 = max(0, sum over the
arms' replicas of (S_r^2 - sum_g D[r, g]^2) * q / (q - 1)) / sum of
w_r^2 (1 - 2 w_r + sum_j w_j^2), both sums over every replica of an arm
with two or more, w_r = replica's share of its arm's offered requests;
df = sum over those arms of (replicas - 1); Var = tau^2 * (sum w_b^2 +
sum w_c^2). Written with numpy arrays, not the Go code's loops.

Capacity: per arm, the replicas with offered requests (k of them); in each
of the q batches where all k served, rel[r, g] = k * o[r, g] / o[:, g].sum();
s2 = var over r of rel[r].mean() (ddof 1) - mean over r of var over g of
rel[r] (ddof 1) / G (G such batches; arms with k < 2 or G < 2 count
nothing); Speed2 = max(0, sum over arms of (k - 1) s2 / sum (k - 1)).
Slope = -sum_arms sum_t w (x - xbar)(y - ybar) / sum_arms sum_t w (x - xbar)^2
with y the slice's attainment, w its offered requests, x the log of its
offered requests averaged over the 7 slices around it (fewer at the edges;
numpy convolve), slices without requests left out, means weighted within
the arm. Var = Slope^2 * Speed2 * (sum w_b^2 + sum w_c^2).

BetweenReplicaLevels: per arm, replicas' log latency level and count per
bucket; q = min(batches, buckets // 4) contiguous batches; y[r, g] the
count-weighted mean level of batch g (NaN where no bucket has a count
and a level); replicas present in two or more batches kept (R of them);
M_g = nanmean of y[:, g] over the kept; D = y - M; S_r = nanmean of D[r];
MSE = nansum((D - S)^2) / ((R - 1) / R * sum(G_r - 1)); an arm adds
sum((S - S.mean())^2) - (R - 1) * MSE * mean(1 / G_r) and R - 1 (arms
with R < 2 nothing); tau^2 = max(0, sum / sum), Var = tau^2 * (sum w_b^2
+ sum w_c^2), w a replica's share of its arm's counted requests. numpy's
masked nan functions, not the Go code's loops.

LevelCapacityOfBaseline (level_cases' capacity_baseline_only): speed^2
and df from the baseline's shares of its counts as Capacity reads them;
slope of each arm's count-weighted mean level per bucket on the log of its
count averaged over 7 buckets (numpy convolve), pooled within arms; Var =
slope^2 * speed^2 * (sum w_b^2 + sum w_c^2).

baseline_only (BetweenReplicasOfBaseline, BetweenReplicaLevelsOfBaseline):
tau^2 and df from the baseline's terms alone, Var = tau^2 * (sum w_b^2 +
sum w_c^2) still over both arms' shares.

WithExtraVariance: an interval point +- t_df0 * sqrt(v0) widened by an
independent variance v on df degrees of freedom: t_nu * sqrt(v0 + v) with
nu = (v0 + v)^2 / (v0^2 / df0 + v^2 / df) (scipy.stats.t).
Run: /usr/bin/python3 make_replicas.py > replicas.json"""
import json
import numpy as np
import scipy
from scipy import stats

rng = np.random.default_rng(5)


def arm(k, nb, tau, speed_noise, share_spread=0.0, wave=0.0):
    offsets = rng.normal(0, tau, k)
    shock = rng.normal(0, speed_noise, nb)
    speed = np.exp(rng.normal(0, share_spread, k))
    load = 1 + wave * np.sin(np.arange(nb) / 9.0)
    off = rng.poisson(40 * speed[:, None] * load[None, :] / speed.mean()).astype(float)
    p = np.clip(0.95 + offsets[:, None] + shock[None, :] - 0.2 * (load[None, :] - 1), 0.01, 0.999)
    good = rng.binomial(off.astype(int), p).astype(float)
    return off, good


def terms(off, good, batches):
    k, nb = off.shape
    q = min(batches, nb // 4)
    N = off.sum()
    R = good.sum() / N
    edges = [g * nb // q for g in range(q + 1)]
    E = np.stack([((good - R * off)[:, edges[g]:edges[g + 1]]).sum(axis=1) / N for g in range(q)], axis=1)
    O = np.stack([off[:, edges[g]:edges[g + 1]].sum(axis=1) for g in range(q)], axis=1)
    D = E - O / O.sum(axis=0) * E.sum(axis=0)
    S = D.sum(axis=1)
    w = off.sum(axis=1) / N
    num = ((S ** 2 - (D ** 2).sum(axis=1)) * q / (q - 1)).sum()
    den = (w ** 2 * (1 - 2 * w + (w ** 2).sum())).sum()
    return num, den, (w ** 2).sum(), k - 1


def capacity_terms(off, good, batches):
    k_all, nb = off.shape
    live = off.sum(axis=1) > 0
    off_l = off[live]
    w = off_l.sum(axis=1) / off_l.sum()
    k = off_l.shape[0]
    q = min(batches, nb // 4)
    n, s2 = min(k, 1), 0.0
    if k >= 2 and q >= 2:
        edges = [g * nb // q for g in range(q + 1)]
        O = np.stack([off_l[:, edges[g]:edges[g + 1]].sum(axis=1) for g in range(q)], axis=1)
        full = (O > 0).all(axis=0)
        rel = k * O[:, full] / O[:, full].sum(axis=0)
        G = rel.shape[1]
        if G >= 2:
            n = k
            s2 = rel.mean(axis=1).var(ddof=1) - (rel.var(axis=1, ddof=1) / G).mean()
    tot_o, tot_g = off.sum(axis=0), good.sum(axis=0)
    m = np.convolve(tot_o, np.ones(7), mode="same") / np.convolve(np.ones(nb), np.ones(7), mode="same")
    keep = tot_o > 0
    x, y, wt = np.log(m[keep]), tot_g[keep] / tot_o[keep], tot_o[keep]
    xb, yb = np.average(x, weights=wt), np.average(y, weights=wt)
    return n, s2, (w ** 2).sum(), (wt * (x - xb) * (y - yb)).sum(), (wt * (x - xb) ** 2).sum()


def capacity(ob, gb, oc, gc, batches, arms=2):
    """arms=1: speed^2 and df from the baseline's shares alone (CapacityOfBaseline)."""
    num = df = sw = sxy = sxx = 0.0
    for ai, (o, g) in enumerate(((ob, gb), (oc, gc))):
        n, s2, w2, xy, xx = capacity_terms(o, g, batches)
        sw += w2
        if n >= 2 and ai < arms:
            num += (n - 1) * s2
            df += n - 1
        sxy += xy
        sxx += xx
    speed2 = max(0.0, num / df)
    slope = -sxy / sxx
    return {"speed2": speed2, "slope": slope, "var": slope ** 2 * speed2 * sw, "df": df}


def baseline_only(num, den, df, swb, swc):
    """tau^2 and df from the baseline's terms alone; Var over both arms' shares."""
    if df == 0:
        return None
    tau2 = max(0.0, num / den)
    return {"tau2": tau2, "var": tau2 * (swb + swc), "df": df}


cases = []
for case in range(6):
    kb, kc = [(4, 4), (2, 3), (9, 1), (6, 6), (3, 2), (12, 12)][case]
    nb = int(rng.integers(40, 200))
    tau = [0.0, 0.01, 0.02, 0.005, 0.03, 0.01][case]
    batches = 18
    ob, gb = arm(kb, nb, tau, 0.01)
    oc, gc = arm(kc, nb, tau, 0.01)
    nb_, db_, swb, dfb = terms(ob, gb, batches)
    nc_, dc_, swc, dfc = terms(oc, gc, batches)
    if kc == 1:
        nc_, dc_, dfc = 0.0, 0.0, 0
    tau2 = max(0.0, (nb_ + nc_) / (db_ + dc_))
    cases.append({"batches": batches,
                  "baseline": {"offered": ob.tolist(), "good": gb.tolist()},
                  "canary": {"offered": oc.tolist(), "good": gc.tolist()},
                  "tau2": tau2, "var": tau2 * (swb + swc), "df": dfb + dfc,
                  "baseline_only": baseline_only(nb_, db_, dfb, swb, swc),
                  "capacity": capacity(ob, gb, oc, gc, batches)})

# arms whose replicas take traffic in proportion to their own speeds under
# a load wave (Capacity's case), one with a replica that stops halfway
capacity_cases = []
for case in range(4):
    kb, kc = [(4, 4), (3, 5), (8, 8), (4, 4)][case]
    nb = int(rng.integers(60, 200))
    spread = [0.05, 0.1, 0.0, 0.07][case]
    ob, gb = arm(kb, nb, 0.005, 0.01, spread, 0.1)
    oc, gc = arm(kc, nb, 0.005, 0.01, spread, 0.1)
    if case == 3:
        ob[0, nb // 2:] = 0
        gb[0, nb // 2:] = 0
    capacity_cases.append({"batches": 18,
                           "baseline": {"offered": ob.tolist(), "good": gb.tolist()},
                           "canary": {"offered": oc.tolist(), "good": gc.tolist()},
                           "capacity": capacity(ob, gb, oc, gc, 18),
                           "capacity_baseline_only": capacity(ob, gb, oc, gc, 18, arms=1)})

widen = []
for case in range(5):
    point = float(rng.normal(0, 0.01))
    v0 = float(rng.uniform(1e-6, 1e-5))
    df0 = [4.8029, 5.0, 5.7350, 12.0, 0][case]
    conf = [0.9, 0.95, 0.9, 0.975, 0.9][case]
    crit0 = stats.norm.ppf(0.5 + conf / 2) if df0 == 0 else stats.t.ppf(0.5 + conf / 2, df0)
    half0 = crit0 * np.sqrt(v0)
    v = float(rng.uniform(1e-7, 2e-5))
    df = float(rng.integers(1, 20))
    nu = (v0 + v) ** 2 / ((v0 ** 2 / df0 if df0 else 0) + v ** 2 / df)
    half = stats.t.ppf(0.5 + conf / 2, nu) * np.sqrt(v0 + v)
    widen.append({"point": point, "lo": point - half0, "hi": point + half0, "df0": df0, "conf": conf,
                  "v": v, "df": df, "want": [point - half, point + half], "nu": nu})


def level_arm(k, nb, tau, noise, late=False, stop=False):
    u = rng.normal(0, tau, k)
    shared = rng.normal(0, 0.05, nb)
    count = rng.poisson(30, (k, nb)).astype(float)
    level = np.log(0.4) + u[:, None] + shared[None, :] + rng.normal(0, noise, (k, nb))
    level[count == 0] = np.nan
    if late:
        count[-1, : nb - nb // 20] = 0
        level[-1, : nb - nb // 20] = np.nan
    if stop:
        count[0, nb // 2:] = 0
        level[0, nb // 2:] = np.nan
    # a bucket with requests but no typical value (none completed)
    level[1, 3] = np.nan
    return level, count


def level_terms(level, count, batches):
    k, nb = level.shape
    has = (count > 0) & ~np.isnan(level)
    total = np.where(has, count, 0).sum()
    w = np.where(has, count, 0).sum(axis=1) / total
    q = min(batches, nb // 4)
    edges = [g * nb // q for g in range(q + 1)]
    y = np.full((k, q), np.nan)
    for g in range(q):
        c = np.where(has[:, edges[g]:edges[g + 1]], count[:, edges[g]:edges[g + 1]], 0)
        l = np.where(has[:, edges[g]:edges[g + 1]], level[:, edges[g]:edges[g + 1]], 0)
        s = c.sum(axis=1)
        y[s > 0, g] = (c * l).sum(axis=1)[s > 0] / s[s > 0]
    G = (~np.isnan(y)).sum(axis=1)
    y = y[G >= 2]
    G = G[G >= 2]
    R = len(G)
    if R < 2:
        return 0.0, 0.0, float((w ** 2).sum())
    D = y - np.nanmean(y, axis=0)[None, :]
    S = np.nanmean(D, axis=1)
    mse = np.nansum((D - S[:, None]) ** 2) / ((R - 1) / R * (G - 1).sum())
    num = ((S - S.mean()) ** 2).sum() - (R - 1) * mse * (1 / G).mean()
    return float(num), float(R - 1), float((w ** 2).sum())



def level_capacity(lb, cb, lc, cc, batches):
    """LevelCapacityOfBaseline: speed^2 and df from the baseline's shares of
    its counts (capacity_terms), the slope of each arm's count-weighted mean
    level per bucket on the log of its smoothed count, pooled within arms."""
    num = df = sw = sxy = sxx = 0.0
    for ai, (lev, cnt) in enumerate(((lb, cb), (lc, cc))):
        n, s2, w2, _, _ = capacity_terms(cnt, np.zeros_like(cnt), batches)
        sw += w2
        if n >= 2 and ai == 0:
            num += (n - 1) * s2
            df += n - 1
        k, nb = cnt.shape
        has = (cnt > 0) & ~np.isnan(lev)
        w = np.where(has, cnt, 0).sum(axis=0)
        y = np.where(has, cnt * np.nan_to_num(lev), 0).sum(axis=0)
        load = cnt.sum(axis=0)
        keep = (w > 0) & (load > 0)
        m = np.convolve(load, np.ones(7), mode="same") / np.convolve(np.ones(nb), np.ones(7), mode="same")
        x, yy, wt = np.log(m[keep]), y[keep] / w[keep], w[keep]
        xb, yb = np.average(x, weights=wt), np.average(yy, weights=wt)
        sxy += (wt * (x - xb) * (yy - yb)).sum()
        sxx += (wt * (x - xb) ** 2).sum()
    if df == 0:
        return None
    speed2 = max(0.0, num / df)
    slope = sxy / sxx
    return {"speed2": speed2, "slope": slope, "var": slope ** 2 * speed2 * sw, "df": df}


level_cases = []
for case in range(6):
    kb, kc = [(4, 4), (3, 5), (8, 8), (4, 1), (6, 6), (2, 2)][case]
    nb = int(rng.integers(60, 200))
    tau = [0.03, 0.06, 0.0, 0.12, 0.05, 0.02][case]
    noise = [0.1, 0.2, 0.1, 0.15, 0.3, 0.1][case]
    lb, cb = level_arm(kb, nb, tau, noise, late=case == 4, stop=case == 1)
    lc, cc = level_arm(kc, nb, tau, noise) if kc > 1 else level_arm(2, nb, tau, noise)
    if kc == 1:
        lc, cc = lc[:1], cc[:1]
    nb_, db_, swb = level_terms(lb, cb, 18)
    nc_, dc_, swc = level_terms(lc, cc, 18)
    tau2 = max(0.0, (nb_ + nc_) / (db_ + dc_))

    def enc(a):
        return [[None if np.isnan(v) else float(v) for v in row] for row in a]
    level_cases.append({"batches": 18,
                        "baseline": {"level": enc(lb), "count": cb.tolist()},
                        "canary": {"level": enc(lc), "count": cc.tolist()},
                        "tau2": tau2, "var": tau2 * (swb + swc), "df": db_ + dc_,
                        "baseline_only": baseline_only(nb_, db_, db_, swb, swc),
                        "capacity_baseline_only": level_capacity(lb, cb, lc, cc, 18)})

print(json.dumps({"generator": "make_replicas.py", "scipy": scipy.__version__, "cases": cases, "capacity_cases": capacity_cases, "widen": widen, "level_cases": level_cases}))
