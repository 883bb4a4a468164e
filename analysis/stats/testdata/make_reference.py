#!/usr/bin/python3
"""Reference values for goodput's analysis/stats, computed independently of the Go code.

Run with Debian's python3 (python3-scipy, python3-numpy):

    /usr/bin/python3 analysis/stats/testdata/make_reference.py

It writes reference.json next to this file. The Go tests read that file and agree to
1e-9 relative unless a case names a looser "tol" with its reason. Sources of truth:

* scipy.stats: mannwhitneyu (asymptotic and, without ties, exact), fisher_exact,
  ttest_ind(equal_var=False), binomtest(...).proportion_ci('wilson'), chisquare, norm.
* Exact Mann-Whitney with ties: scipy's method="exact" ignores ties (it uses the no-ties
  distribution), so the exact conditional (permutation) distribution given the observed
  mid-ranks is computed here by brute-force enumeration of every assignment of ranks to
  the first sample.
* Hodges-Lehmann: all pairwise differences materialised with numpy; the interval rank k
  from the exact no-ties null distribution (integer counts, exact rational arithmetic) when
  n1 + n2 <= 100, else the continuity-corrected normal rule.
* Newcombe: the hybrid score formula applied to scipy's Wilson limits.
* Holm / Benjamini-Hochberg: direct definitions (statsmodels is not installed).
* Type-1 quantiles: numpy.quantile(method="inverted_cdf").
* Student t quantiles: scipy's t.ppf refined by Newton steps on t.sf (see t_quantile).
"""
import itertools
import json
import math
import os
from fractions import Fraction

import numpy as np
import scipy
from scipy import stats

CASES = []


def add(name, kind, inputs, want, tol=None, note=None):
    c = {"name": name, "kind": kind, "in": inputs, "want": want}
    if tol is not None:
        c["tol"] = tol
    if note is not None:
        c["note"] = note
    CASES.append(c)


def f(v):
    """JSON-safe float: inf/nan as strings."""
    v = float(v)
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return v


# ---------------------------------------------------------------- Mann-Whitney

def u_of_x(x, y):
    u = 0.0
    for a in x:
        for b in y:
            u += 1.0 if a > b else (0.5 if a == b else 0.0)
    return u


def midranks(pooled):
    order = sorted(pooled)
    ranks = {}
    i = 0
    while i < len(order):
        j = i
        while j < len(order) and order[j] == order[i]:
            j += 1
        ranks[order[i]] = (i + 1 + j) / 2.0
        i = j
    return [ranks[v] for v in pooled]


def brute_exact(x, y):
    """Exact conditional P(U <= u) and P(U >= u) by enumerating all C(N, n1) splits."""
    pooled = list(x) + list(y)
    r = midranks(pooled)
    n1 = len(x)
    obs = sum(r[:n1])
    le = ge = tot = 0
    for comb in itertools.combinations(range(len(pooled)), n1):
        s = sum(r[i] for i in comb)
        tot += 1
        # rank sums are multiples of 1/2: compare exactly on the doubled scale
        if 2 * s <= 2 * obs + 1e-9:
            le += 1
        if 2 * s >= 2 * obs - 1e-9:
            ge += 1
    return le / tot, ge / tot


def mw_case(name, x, y, note=None):
    x = [float(v) for v in x]
    y = [float(v) for v in y]
    N = len(x) + len(y)
    xa, ya = np.asarray(x), np.asarray(y)
    u = float(stats.mannwhitneyu(xa, ya, alternative="two-sided", method="asymptotic").statistic)
    ties = len(set(x + y)) < N
    if N <= 100:
        if N <= 18:
            pl, pg = brute_exact(x, y)
            src = "brute-force exact conditional"
        elif not ties:
            pl = float(stats.mannwhitneyu(xa, ya, alternative="less", method="exact").pvalue)
            pg = float(stats.mannwhitneyu(xa, ya, alternative="greater", method="exact").pvalue)
            src = "scipy exact (no ties)"
        else:
            raise ValueError("tie case too large for brute force: " + name)
        p = min(1.0, 2 * min(pl, pg))
        if len(set(x + y)) == 1:
            p = 1.0
        exact = True
        if not ties:
            ps = float(stats.mannwhitneyu(xa, ya, alternative="two-sided", method="exact").pvalue)
            assert abs(ps - p) <= 1e-12 * max(ps, 1e-300), (name, ps, p)
    else:
        if len(set(x + y)) == 1:
            pl = pg = p = 1.0
        else:
            pl = float(stats.mannwhitneyu(xa, ya, alternative="less", method="asymptotic").pvalue)
            pg = float(stats.mannwhitneyu(xa, ya, alternative="greater", method="asymptotic").pvalue)
            p = float(stats.mannwhitneyu(xa, ya, alternative="two-sided", method="asymptotic").pvalue)
        exact = False
        src = "scipy asymptotic (tie-corrected, continuity-corrected)"
    assert abs(u - u_of_x(x, y)) < 1e-9 or N > 2000
    want = {"u": u, "p": p, "p_less": pl, "p_greater": pg, "exact": exact}
    if exact and ties and len(set(x + y)) > 1:
        # informational, not checked: what scipy's method="exact" says (no-ties distribution)
        want["scipy_exact_ignoring_ties_p"] = float(
            stats.mannwhitneyu(xa, ya, alternative="two-sided", method="exact").pvalue)
    add(name, "mannwhitney", {"x": x, "y": y}, want, note=(note + "; " if note else "") + src)


rng = np.random.default_rng(20261129)

mw_case("mw_ties_small", [1, 2, 2, 3, 3, 3], [2, 3, 4, 4, 5], note="ties across arms")
mw_case("mw_ties_asymmetric", [0.2, 0.2, 0.2, 0.5, 0.9], [0.2, 0.2, 0.7, 0.7], note="asymmetric conditional distribution")
mw_case("mw_zero_variance_separated", [1, 1, 1, 1], [2, 2, 2], note="each arm constant, arms differ")
mw_case("mw_identical", [0.1, 0.4, 0.4, 0.7, 1.2], [0.1, 0.4, 0.4, 0.7, 1.2], note="identical samples")
mw_case("mw_all_equal", [3, 3, 3, 3], [3, 3, 3], note="every value tied: p = 1")
for n in range(3, 9):
    x = np.round(rng.lognormal(0, 0.5, n), 6)
    y = np.round(rng.lognormal(0.3, 0.5, n), 6)
    mw_case(f"mw_n{n}_continuous", x, y)
for n in (4, 6, 8):
    x = np.round(rng.lognormal(0, 0.4, n), 1)
    y = np.round(rng.lognormal(0.2, 0.4, n + 1), 1)
    mw_case(f"mw_n{n}_quantised_ties", x, y, note="values rounded to 0.1 s")
mw_case("mw_n1_vs_5", [2.5], [1.0, 2.0, 3.0, 4.0, 5.0])
mw_case("mw_n15_vs_20_exact", np.round(rng.normal(10, 2, 15), 6), np.round(rng.normal(11, 2, 20), 6))
mw_case("mw_n60_vs_70_ties", np.round(rng.gamma(2, 0.1, 60), 2), np.round(rng.gamma(2, 0.11, 70), 2),
        note="normal approximation (N > 100)")
x = np.round(rng.lognormal(-1, 0.5, 5000), 3)
y = np.round(rng.lognormal(-1, 0.5, 5000), 3)
mw_case("mw_n5000_aa", x, y, note="A/A, millisecond-quantised latencies")
x = np.round(rng.lognormal(-0.99, 0.5, 5000), 3)
y = np.round(rng.lognormal(-1, 0.5, 5000), 3)
mw_case("mw_n5000_shift", x, y, note="1% scale shift")
mw_case("mw_n200_constant_vs_spread", [0.5] * 100, list(np.round(np.linspace(0, 1, 101), 4)),
        note="one arm has zero variance")

# ---------------------------------------------------------------- Hodges-Lehmann

def null_counts(n1, n2):
    """Exact counts f(u) of the no-ties Mann-Whitney null by the integer recurrence."""
    memo = {}

    def f(m, n):
        if (m, n) in memo:
            return memo[(m, n)]
        if m == 0 or n == 0:
            r = [1]
        else:
            a = f(m - 1, n)  # largest is an x: contributes n
            b = f(m, n - 1)
            r = [0] * (m * n + 1)
            for u, c in enumerate(a):
                r[u + n] += c
            for u, c in enumerate(b):
                r[u] += c
        memo[(m, n)] = r
        return r

    return f(n1, n2)


def hl_case(name, x, y, conf, note=None):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n1, n2 = len(x), len(y)
    d = np.sort(np.subtract.outer(x, y).ravel())
    est = float(np.median(d))
    alpha2 = Fraction(1 - conf).limit_denominator(10**12) / 2
    if n1 + n2 <= 100:
        counts = null_counts(n1, n2)
        tot = sum(counts)
        run = 0
        c = -1
        for u, cnt in enumerate(counts):
            run += cnt
            if Fraction(run, tot) <= alpha2:
                c = u
            else:
                break
        k = c + 1
        rule = "exact no-ties null"
    else:
        z = stats.norm.ppf(0.5 + conf / 2)
        k = math.floor(n1 * n2 / 2 + 0.5 - z * math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12))
        rule = "normal rule"
    if k < 1:
        lo, hi = -math.inf, math.inf
    else:
        lo, hi = float(d[k - 1]), float(d[n1 * n2 - k])
    add(name, "hodgeslehmann", {"x": [float(v) for v in x], "y": [float(v) for v in y], "conf": conf},
        {"est": est, "lo": f(lo), "hi": f(hi), "k": k}, note=(note + "; " if note else "") + rule)


hl_case("hl_3x3_too_small", [1.0, 2.0, 3.0], [1.5, 2.5, 3.5], 0.95, note="k < 1: unbounded")
hl_case("hl_5x6", np.round(rng.normal(1, 1, 5), 6), np.round(rng.normal(0, 1, 6), 6), 0.95)
hl_case("hl_8x8_ties", np.round(rng.gamma(2, 0.1, 8), 1), np.round(rng.gamma(2, 0.1, 8), 1), 0.90)
hl_case("hl_20x25", np.round(rng.normal(0.2, 1, 20), 6), np.round(rng.normal(0, 1, 25), 6), 0.95)
hl_case("hl_50x50", np.round(rng.lognormal(0, 1, 50), 6), np.round(rng.lognormal(0, 1, 50), 6), 0.98,
        note="Kayenta's 98%")
hl_case("hl_60x70_ties", np.round(rng.gamma(2, 0.1, 60), 2), np.round(rng.gamma(2, 0.1, 70), 2), 0.95)
hl_case("hl_identical", [0.1, 0.2, 0.2, 0.4, 0.8, 1.6], [0.1, 0.2, 0.2, 0.4, 0.8, 1.6], 0.90)
hl_case("hl_n3000", np.round(rng.lognormal(-1, 0.5, 3000), 4), np.round(rng.lognormal(-1.02, 0.5, 3000), 4),
        0.95, note="9M pairwise differences")

# ---------------------------------------------------------------- proportions

def wilson(k, n, conf):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
    return float(ci.low), float(ci.high)


for k, n, conf in [(81, 263, 0.95), (0, 10, 0.95), (10, 10, 0.95), (0, 1, 0.90), (1, 1, 0.90),
                   (950, 1000, 0.90), (999, 1000, 0.95), (5, 7, 0.99), (1, 200000, 0.90)]:
    lo, hi = wilson(k, n, conf)
    add(f"wilson_{k}_of_{n}_{int(conf * 100)}", "wilson", {"k": k, "n": n, "conf": conf}, {"lo": lo, "hi": hi})


def newcombe(k1, n1, k2, n2, conf):
    l1, u1 = wilson(k1, n1, conf)
    l2, u2 = wilson(k2, n2, conf)
    p1, p2 = k1 / n1, k2 / n2
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


for k1, n1, k2, n2, conf in [(56, 70, 48, 80, 0.95), (0, 10, 0, 20, 0.95), (10, 10, 20, 20, 0.95),
                             (950, 1000, 940, 1000, 0.90), (5, 5, 0, 5, 0.95), (9990, 10000, 9995, 10000, 0.90)]:
    lo, hi = newcombe(k1, n1, k2, n2, conf)
    add(f"newcombe_{k1}_{n1}_{k2}_{n2}", "newcombe", {"k1": k1, "n1": n1, "k2": k2, "n2": n2, "conf": conf},
        {"lo": lo, "hi": hi})

for t in [[[8, 2], [1, 5]], [[0, 10000], [3, 9997]], [[3, 1], [1, 3]], [[0, 5], [5, 0]], [[10, 10], [10, 10]],
          [[1, 9], [11, 3]], [[0, 0], [3, 4]], [[120, 880], [90, 910]], [[2, 0], [0, 3]], [[7, 12], [0, 15]],
          [[500, 500], [450, 550]]]:
    two = stats.fisher_exact(t, "two-sided")
    less = stats.fisher_exact(t, "less")
    greater = stats.fisher_exact(t, "greater")
    add("fisher_" + "_".join(str(v) for r in t for v in r), "fisher",
        {"a": t[0][0], "b": t[0][1], "c": t[1][0], "d": t[1][1]},
        {"p_two": float(two.pvalue), "p_less": float(less.pvalue), "p_greater": float(greater.pvalue),
         "odds_ratio": f(two.statistic)})

# ---------------------------------------------------------------- Welch


def t_quantile(p, df):
    """scipy's t.ppf (cdflib stdtrit) is only ~1e-9 accurate: its own t.sf at the result is
    off by ~1e-9 relative. Refine with Newton steps on t.sf (accurate to ~1e-15)."""
    q = stats.t.ppf(p, df)
    for _ in range(3):
        q += (stats.t.sf(q, df) - (1 - p)) / stats.t.pdf(q, df)
    return q


def welch_case(name, x, y, conf, note=None):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    r = stats.ttest_ind(x, y, equal_var=False)
    v1, v2 = np.var(x, ddof=1) / len(x), np.var(y, ddof=1) / len(y)
    df = (v1 + v2) ** 2 / (v1 ** 2 / (len(x) - 1) + v2 ** 2 / (len(y) - 1))
    diff = float(np.mean(x) - np.mean(y))
    q = t_quantile(0.5 + conf / 2, df)
    se = math.sqrt(v1 + v2)
    add(name, "welch", {"x": [float(v) for v in x], "y": [float(v) for v in y], "conf": conf},
        {"t": float(r.statistic), "p": float(r.pvalue), "df": float(df), "diff": diff,
         "lo": diff - q * se, "hi": diff + q * se}, note=note)


welch_case("welch_small", [0.081, 0.079, 0.085, 0.090, 0.077], [0.070, 0.072, 0.069, 0.075, 0.071, 0.073], 0.95)
welch_case("welch_unequal", np.round(rng.normal(10, 1, 12), 6), np.round(rng.normal(10.5, 4, 40), 6), 0.90)
welch_case("welch_n2", [1.0, 2.0], [3.0, 5.0], 0.95)
welch_case("welch_large", np.round(rng.normal(0.08, 0.01, 5000), 6), np.round(rng.normal(0.0801, 0.012, 4000), 6), 0.90)
welch_case("welch_one_constant", [0.1, 0.1, 0.1, 0.1], [0.09, 0.11, 0.12, 0.10, 0.13], 0.95,
           note="zero variance in one arm")
welch_case("welch_far", [100.0, 101, 102, 99, 100.5], [0.0, 1, 2, -1, 0.5], 0.95, note="tiny p-value")

# ---------------------------------------------------------------- SRM, normal tail, multiplicity

for obs, share in [([5000, 5100], [1, 1]), ([1000, 1200, 980], [1, 1, 1]), ([9000, 1000], [0.9, 0.1]),
                   ([50200, 49800], [0.5, 0.5]), ([4700, 5300], [1, 1])]:
    s = np.asarray(share, dtype=float)
    o = np.asarray(obs, dtype=float)
    r = stats.chisquare(o, s / s.sum() * o.sum())
    add("srm_" + "_".join(str(v) for v in obs), "srm", {"observed": obs, "share": share},
        {"chi2": float(r.statistic), "p": float(r.pvalue)})

for point, se, thr in [(0.01, 0.004, 0.0), (0.0, 0.01, 0.0), (-0.02, 0.005, 0.01), (0.5, 0.05, 0.0)]:
    add(f"failp_{point}_{se}_{thr}", "failp", {"point": point, "se": se, "threshold": thr},
        {"p": float(stats.norm.sf((point - thr) / se))})


def holm(p):
    k = len(p)
    idx = sorted(range(k), key=lambda i: p[i])
    out = [0.0] * k
    run = 0.0
    for rank, i in enumerate(idx):
        run = max(run, min(1.0, (k - rank) * p[i]))
        out[i] = run
    return out


def bh(p):
    k = len(p)
    idx = sorted(range(k), key=lambda i: p[i])
    out = [0.0] * k
    run = 1.0
    for rank in range(k - 1, -1, -1):
        i = idx[rank]
        run = min(run, min(1.0, k * p[i] / (rank + 1)))
        out[i] = run
    return out


for p in [[0.01, 0.04, 0.03, 0.005], [0.5, 0.001, 0.02, 0.2, 0.04, 0.9], [0.02]]:
    add("multiplicity_" + str(len(p)), "multiplicity", {"p": p}, {"holm": holm(p), "bh": bh(p)})

# ---------------------------------------------------------------- type-1 quantile log ratio (point)

for q in (0.5, 0.95, 0.99):
    bx = [list(np.round(rng.lognormal(-1, 0.5, int(rng.integers(0, 30))), 4)) for _ in range(20)]
    by = [list(np.round(rng.lognormal(-1.05, 0.5, int(rng.integers(0, 30))), 4)) for _ in range(20)]
    fx = np.concatenate([np.asarray(b, dtype=float) for b in bx])
    fy = np.concatenate([np.asarray(b, dtype=float) for b in by])
    qx = float(np.quantile(fx, q, method="inverted_cdf"))
    qy = float(np.quantile(fy, q, method="inverted_cdf"))
    add(f"quantile_log_ratio_q{q}", "quantile_point",
        {"x": [[float(v) for v in b] for b in bx], "y": [[float(v) for v in b] for b in by], "q": q},
        {"point": math.log(qx / qy), "n_x": int(fx.size), "n_y": int(fy.size)})

# ---------------------------------------------------------------- Poisson rate, exact lower bound

for k, exposure, alpha in [(1, 1, 0.05), (2, 1, 0.05), (5, 2, 0.05), (100, 10, 0.05), (2000, 100, 0.05), (3, 7.5, 0.001), (0, 4, 0.05)]:
    lower = 0.0 if k == 0 else float(scipy.stats.gamma.ppf(alpha, k) / exposure)
    add(f"poisson_rate_lower_k{k}_e{exposure}_a{alpha}", "poisson_rate_lower", {"k": k, "exposure": exposure, "alpha": alpha},
        {"lower": lower}, note="Garwood: gamma.ppf(alpha, k)/exposure")

out = {
    "generator": "analysis/stats/testdata/make_reference.py",
    "scipy": scipy.__version__,
    "numpy": np.__version__,
    "cases": CASES,
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.json")
with open(path, "w") as fh:
    json.dump(out, fh, indent=None, separators=(",", ":"))
    fh.write("\n")
print(f"wrote {len(CASES)} cases to {path}")
