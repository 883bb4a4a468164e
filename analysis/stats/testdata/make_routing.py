#!/usr/bin/python3
"""Reference values for RoutingEvenness.

One arm's replicas, offered requests per bucket. The buckets counted are
those from the latest first bucket with a request of any replica to the
earliest last one, and with any request; shares p = each replica's total
over them / the total. ratio = sum over the buckets of
scipy.stats.chisquare(counts, n * p).statistic, divided by
(k - 1) * (T - 1); p_even = scipy.stats.chi2.cdf(sum, (k - 1) * (T - 1)).
Cases: requests routed at random (a multinomial per
bucket), round-robin (a cyclic pointer kept across buckets), join the
shortest queue (each request to the replica with the fewest requests in
the last 8 s, ties at random), sticky clumps (each bucket's requests in
runs of 5 to one replica), and a replica that joins late beside random
routing; plus one case too short to count.
Run: /usr/bin/python3 make_routing.py > routing.json"""
import json
import numpy as np
from scipy import stats

rng = np.random.default_rng(11)


def ratio(counts):
    counts = np.asarray(counts, dtype=float)
    k = counts.shape[0]
    nz = counts > 0
    firsts = [np.flatnonzero(nz[r])[0] for r in range(k)]
    lasts = [np.flatnonzero(nz[r])[-1] for r in range(k)]
    lo, hi = max(firsts), min(lasts)
    cols = [t for t in range(lo, hi + 1) if counts[:, t].sum() > 0]
    sub = counts[:, cols]
    p = sub.sum(axis=1) / sub.sum()
    chi = 0.0
    for t in range(sub.shape[1]):
        n = sub[:, t].sum()
        chi += stats.chisquare(sub[:, t], n * p).statistic
    df = (k - 1) * (len(cols) - 1)
    return chi / df, len(cols), stats.chi2.cdf(chi, df)


def arrivals(nb, rate):
    return rng.poisson(rate, nb)


def random_routing(k, nb, rate, w=None):
    w = np.ones(k) / k if w is None else np.asarray(w) / np.sum(w)
    return np.stack([rng.multinomial(n, w) for n in arrivals(nb, rate)], axis=1)


def round_robin(k, nb, rate):
    out = np.zeros((k, nb))
    ptr = 0
    for t, n in enumerate(arrivals(nb, rate)):
        for _ in range(n):
            out[ptr, t] += 1
            ptr = (ptr + 1) % k
    return out


def shortest_queue(k, nb, rate, secs=10.0, hold=8.0):
    out = np.zeros((k, nb))
    recent = [[] for _ in range(k)]
    for t, n in enumerate(arrivals(nb, rate)):
        for a in np.sort(rng.uniform(0, secs, n)) + t * secs:
            load = [sum(1 for d in rs if d > a) for rs in recent]
            best = [r for r in range(k) if load[r] == min(load)]
            r = best[rng.integers(len(best))]
            recent[r] = [d for d in recent[r] if d > a] + [a + hold]
            out[r, t] += 1
    return out


def sticky(k, nb, rate):
    out = np.zeros((k, nb))
    for t, n in enumerate(arrivals(nb, rate)):
        left = n
        while left > 0:
            m = min(left, 5)
            out[rng.integers(k), t] += m
            left -= m
    return out


def late_joiner(k, nb, rate, join):
    c = random_routing(k, nb, rate)
    c[k - 1, :join] = 0
    return c


cases = []
for name, c in [
    ("random-4", random_routing(4, 180, 15)),
    ("random-2-unequal", random_routing(2, 120, 8, [0.3, 0.7])),
    ("round-robin-4", round_robin(4, 180, 15)),
    ("shortest-queue-4", shortest_queue(4, 90, 12)),
    ("sticky-3", sticky(3, 100, 20)),
    ("late-joiner-4", late_joiner(4, 150, 15, 40)),
]:
    r, n, p = ratio(c)
    cases.append({"name": name, "offered": c.tolist(), "ratio": r, "p_even": p, "buckets": n})
short = random_routing(3, 29, 10)
print(json.dumps({"cases": cases, "short": {"offered": short.tolist(), "buckets": 29}}, indent=1))
