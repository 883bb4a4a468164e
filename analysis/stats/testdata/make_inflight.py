#!/usr/bin/python3
"""Reference values for InFlightEvenness.

One arm's replicas, requests in flight (running + waiting, as an engine's
gauges give them) sampled at each step; NaN where a replica has no sample.
The steps counted are those where at least two replicas have a sample and
those replicas have any request in flight; at each, with n in flight over
the k_t replicas sampled, scipy.stats.chisquare(x, [n / k_t] * k_t).statistic.
ratio = their sum over df = sum of (k_t - 1); p_even = scipy.stats.chi2.cdf(sum, df).
Cases, each a queue simulated request by request (Poisson arrivals,
exponential service, each replica serving up to 4 at once at a rate that
slows as its batch fills) and sampled every 15 s: requests sent to a
replica at random, round-robin, to the replica with the fewest in flight
(ties at random), the same with the replicas sampled at staggered
instants, to the fewer in flight of two replicas picked at random (the
least-request balancing of Envoy and Istio) over eight, random routing
over replicas of unequal speeds, and a replica that stops reporting
half-way (NaN); plus one case too short to count.
Run: /usr/bin/python3 make_inflight.py > inflight.json"""
import heapq
import json
import math
import numpy as np
from scipy import stats

rng = np.random.default_rng(23)


def ratio(x):
    x = np.asarray(x, dtype=float)
    chi, t, df = 0.0, 0, 0
    for j in range(x.shape[1]):
        col = x[:, j]
        col = col[~np.isnan(col)]
        k = len(col)
        if k < 2 or col.sum() <= 0:
            continue
        n = col.sum()
        chi += stats.chisquare(col, [n / k] * k).statistic
        t += 1
        df += k - 1
    return chi / df, t, df, stats.chi2.cdf(chi, df)


def simulate(k, router, rate, steps, every=15.0, speeds=None, stagger=False):
    """Requests in flight per replica at each sample instant."""
    speeds = np.ones(k) if speeds is None else np.asarray(speeds)
    horizon = steps * every
    inflight = [0] * k
    events = []  # (time, kind, replica)
    t = rng.exponential(1 / rate)
    heapq.heappush(events, (t, 0, -1))
    offs = rng.uniform(0, every, k) if stagger else np.zeros(k)
    for r in range(k):
        for s in range(steps):
            heapq.heappush(events, ((s + 1) * every - offs[r], 2, r))
    out = np.zeros((k, steps))
    ptr = 0
    while events:
        t, kind, r = heapq.heappop(events)
        if t > horizon:
            break
        if kind == 0:  # arrival
            if router == "random":
                r = int(rng.integers(k))
            elif router == "round-robin":
                r, ptr = ptr, (ptr + 1) % k
            elif router == "two-choices":
                a, b = rng.choice(k, 2, replace=False)
                r = int(a if inflight[a] < inflight[b] else b if inflight[b] < inflight[a] else (a if rng.random() < 0.5 else b))
            else:
                m = min(inflight)
                best = [i for i in range(k) if inflight[i] == m]
                r = best[int(rng.integers(len(best)))]
            inflight[r] += 1
            # service: 8 s of work at full speed, slower as the batch fills
            work = rng.exponential(8.0) * (1 + 0.15 * min(inflight[r], 4)) / speeds[r]
            heapq.heappush(events, (t + work, 1, r))
            heapq.heappush(events, (t + rng.exponential(1 / rate), 0, -1))
        elif kind == 1:
            inflight[r] -= 1
        else:
            s = int(round((t + offs[r]) / every)) - 1
            out[r, s] = inflight[r]
    return out


cases = []
for name, x in [
    ("random-4", simulate(4, "random", 1.2, 120)),
    ("round-robin-4", simulate(4, "round-robin", 1.2, 120)),
    ("fewest-in-flight-4", simulate(4, "fewest", 1.2, 120)),
    ("fewest-in-flight-4-staggered", simulate(4, "fewest", 1.2, 120, stagger=True)),
    ("random-3-unequal-speeds", simulate(3, "random", 0.9, 120, speeds=[0.8, 1.0, 1.25])),
    ("two-choices-8", simulate(8, "two-choices", 2.4, 120)),
]:
    r, n, df, p = ratio(x)
    cases.append({"name": name, "in_flight": [[None if math.isnan(v) else v for v in row] for row in x.tolist()], "ratio": r, "p_even": p, "steps": n, "df": df})
gone = simulate(4, "random", 1.2, 120)
gone[2, 60:] = np.nan
r, n, df, p = ratio(gone)
cases.append({"name": "random-4-one-stops", "in_flight": [[None if math.isnan(v) else v for v in row] for row in gone.tolist()], "ratio": r, "p_even": p, "steps": n, "df": df})
short = simulate(3, "random", 1.0, 29)
print(json.dumps({"cases": cases, "short": {"in_flight": short.tolist(), "steps": 29}}, indent=1))
