#!/usr/bin/python3
"""Reference values for the users' spread (analysis/users.go, spreadOf).

Writes users.json: seeded arms of requests, each naming its user (rows of
[user, completed, good, output tokens]), and for
each count gate the reference figures computed here from the requests
themselves, independently of the Go code's integer group sums:

  groups   groups of users (SipHash-2-4 of the name, key 0, mod 64) holding a request
  ratio    V_users / V_requests
  extra    max(0, V_users - q * V_requests), q = chi2.ppf(0.95, G-1)/(G-1)

with, per arm, r = sum(num)/sum(den), the influence of request i
(num_i - r*den_i)/sum(den) (over r on a log scale), d_g the canary's
influence summed over group g less the baseline's, V_users =
G/(G-1) * sum_g (d_g - mean d)^2 over the G groups holding a request, and
V_requests the sum over both arms' requests of the squared influence.

Run from the repository root: python3 analysis/testdata/make_users.py
(Debian's python3-numpy and python3-scipy).
"""
import json

import numpy as np
from scipy import stats

GROUPS = 64


MASK = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & MASK


def siphash24(data, k0=0, k1=0):
    """SipHash-2-4 (Aumasson & Bernstein), ClickHouse's sipHash64 key of
    zeros by default."""
    v0 = k0 ^ 0x736F6D6570736575
    v1 = k1 ^ 0x646F72616E646F6D
    v2 = k0 ^ 0x6C7967656E657261
    v3 = k1 ^ 0x7465646279746573

    def rounds(n):
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & MASK
            v1 = _rotl(v1, 13) ^ v0
            v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & MASK
            v3 = _rotl(v3, 16) ^ v2
            v0 = (v0 + v3) & MASK
            v3 = _rotl(v3, 21) ^ v0
            v2 = (v2 + v1) & MASK
            v1 = _rotl(v1, 17) ^ v2
            v2 = _rotl(v2, 32)

    n = len(data)
    full = n - n % 8
    for i in range(0, full, 8):
        m = int.from_bytes(data[i:i + 8], "little")
        v3 ^= m
        rounds(2)
        v0 ^= m
    m = int.from_bytes(data[full:] + bytes(7 - n % 8), "little") | ((n & 0xFF) << 56)
    v3 ^= m
    rounds(2)
    v0 ^= m
    v2 ^= 0xFF
    rounds(4)
    return v0 ^ v1 ^ v2 ^ v3


# the reference test vector: key 00..0f, message 00..0e
assert siphash24(bytes(range(15)), int.from_bytes(bytes(range(8)), "little"),
                 int.from_bytes(bytes(range(8, 16)), "little")) == 0xA129CA6149BE45E5


def user_group(name):
    """The group a user's name falls in: sipHash64(name) mod 64."""
    return siphash24(name.encode()) % GROUPS


def arm(rng, prefix, scale, n, good_p):
    """n requests from len(scale) users named prefix+"u"+k, user k's
    output lengths scaled by scale[k]; a tenth of the requests fail
    (status error, no output); good with probability good_p among
    completions."""
    out = []
    for _ in range(n):
        u = int(rng.integers(len(scale)))
        if rng.random() < 0.1:
            out.append({"user": f"{prefix}u{u}", "status": "error", "good": False, "output_tokens": -1})
            continue
        tokens = max(2, int(round(float(rng.integers(60, 360)) * scale[u])))
        out.append({"user": f"{prefix}u{u}", "status": "ok", "good": bool(rng.random() < good_p), "output_tokens": tokens})
    return out


def gate(reqs, k):
    """(num, den) per request of gate k: 0 attainment over offered, 5
    output tokens over completions that give their length."""
    nums, dens = [], []
    for r in reqs:
        if k == 0:
            nums.append(1.0 if r["good"] else 0.0)
            dens.append(1.0)
        else:
            ok = r["status"] == "ok" and r["output_tokens"] >= 0
            nums.append(float(r["output_tokens"]) if ok else 0.0)
            dens.append(1.0 if ok else 0.0)
    return np.array(nums), np.array(dens)


def spread(b, c, k, log_scale):
    infl = {}
    vreq = 0.0
    for name, reqs in (("b", b), ("c", c)):
        num, den = gate(reqs, k)
        r = num.sum() / den.sum()
        psi = (num - r * den) / den.sum()
        if log_scale:
            psi = psi / r
        vreq += float((psi ** 2).sum())
        infl[name] = (psi, [user_group(x["user"]) for x in reqs], den)
    d = np.zeros(GROUPS)
    held = np.zeros(GROUPS, dtype=bool)
    for sign, name in ((1.0, "c"), (-1.0, "b")):
        psi, groups, den = infl[name]
        for p, g, dd in zip(psi, groups, den):
            d[g] += sign * p
            if dd > 0:
                held[g] = True
    g = int(held.sum())
    dd = d[held]
    vusers = g / (g - 1) * float(((dd - dd.mean()) ** 2).sum())
    q = stats.chi2.ppf(0.95, g - 1) / (g - 1)
    return {"groups": g, "ratio": vusers / vreq, "extra": max(0.0, vusers - q * vreq)}


def load_case(rng):
    """Two arms of 30 one-minute blocks whose attainment falls with the
    log of prompt tokens offered a second (slope -0.3), each arm its own
    level; the slope of attainment on log load with each arm's weighted
    means removed (weights: offered requests), by weighted least squares
    through numpy's lstsq, and its HC0 (White) standard error."""
    arms = []
    for level in (0.9, 0.93):
        blocks = []
        for _ in range(30):
            offered = float(rng.integers(900, 1300))
            prompt = offered * 3000 * float(np.exp(0.1 * rng.standard_normal()))
            p = level - 0.3 * (np.log(prompt / 60) - np.log(1100 * 3000 / 60)) + 0.01 * rng.standard_normal()
            good = float(rng.binomial(int(offered), min(max(p, 0), 1)))
            blocks.append([offered, good, prompt, 60.0])
        arms.append(blocks)
    xs, ys, ws = [], [], []
    for blocks in arms:
        b = np.array(blocks)
        x = np.log(b[:, 2] / b[:, 3])
        y = b[:, 1] / b[:, 0]
        w = b[:, 0]
        xs.append(x - np.average(x, weights=w))
        ys.append(y - np.average(y, weights=w))
        ws.append(w)
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    sw = np.sqrt(w)
    beta, *_ = np.linalg.lstsq((sw * x)[:, None], sw * y, rcond=None)
    slope = float(beta[0])
    e = y - slope * x
    sxx = float(np.sum(w * x * x))
    se = float(np.sqrt(np.sum((w * x * e) ** 2)) / sxx)
    return {"arms": arms, "slope": slope, "se": se}


def main():
    rng = np.random.default_rng(20261207)
    cases = []
    for name, shared, users, sigma in (
        ("sticky users, output lengths sigma 0.5", False, 100, 0.5),
        ("shared users, output lengths sigma 0.5", True, 100, 0.5),
        ("sticky users, no effect", False, 150, 0.0),
    ):
        # sticky: each arm's own users, each drawn apart; shared: one
        # population, alike in both arms
        sb = np.exp(sigma * rng.standard_normal(users))
        sc = sb if shared else np.exp(sigma * rng.standard_normal(users))
        pb, pc = ("", "") if shared else ("b-", "c-")
        b = arm(rng, pb, sb, 1000, 0.9)
        c = arm(rng, pc, sc, 1000, 0.9)
        want = {
            "slo_attainment": spread(b, c, 0, False),
            "output_tokens_mean": spread(b, c, 5, True),
        }
        groups = sorted({user_group(x["user"]) for x in b + c})
        row = lambda x: [x["user"], int(x["status"] == "ok"), int(x["good"]), x["output_tokens"]]
        cases.append({"name": name, "want": want, "groups_held": len(groups),
                      "user_groups": {x["user"]: user_group(x["user"]) for x in (b + c)[:20]},
                      "baseline": [row(x) for x in b], "canary": [row(x) for x in c]})
    load = load_case(np.random.default_rng(7))
    with open("analysis/testdata/users.json", "w") as f:
        json.dump({"cases": cases, "load": load}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
