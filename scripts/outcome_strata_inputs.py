#!/usr/bin/python3
"""Write, from one simulated A/A pair of native request logs, the pairs that
showed strata made by outcomes (docs/EVIDENCE.md, "Strata the outcome
made"). Every pair keeps the baseline as it was but for the edit named;
failures are logged as gateways log them: no latencies, no output length.

  unl    class labels removed; 3% of the canary's completions (0.2% of the
         baseline's) become errors that keep their prompt length
  errnp  the same, the errors logged without a prompt length either
  rejnp  the same as rejections without a prompt length
  lerr   labels kept; the errors logged without their class
  lcan   labels kept; client cancels logged without their class (cancels
         keep their prompt length and carry no latencies)
  lret   labels kept; 5% of the canary's requests (0.2% of the baseline's)
         are retries (attempt 2) logged without their class, as served
  short  class labels removed; the canary's answers 10% shorter

Usage: outcome_strata_inputs.py DIR OUT
  DIR holds baseline.jsonl and canary.jsonl (goodput simulate --scenario
  aa-quiet-30m --seed 3 --out DIR); OUT receives NAME-baseline.jsonl and
  NAME-canary.jsonl for each pair. Deterministic (seeded).
"""
import json
import os
import random
import sys


def edit(rec, arm, rng, name):
    if name not in ("lerr", "lcan", "lret"):
        rec.pop("class", None)
    if name == "lret":
        if rng.random() < (0.05 if arm == "canary" else 0.002):
            rec["attempt"] = 2
            rec.pop("class", None)
        return rec
    if name == "short":
        if arm == "canary" and "output_tokens" in rec:
            rec["output_tokens"] = max(2, round(rec["output_tokens"] * 0.9))
        return rec
    share = 0.03 if arm == "canary" else 0.002
    if rec["status"] != "ok" or rng.random() >= share:
        return rec
    status = {"rejnp": "rejected", "lcan": "canceled"}.get(name, "error")
    out = {"ts": rec["ts"], "status": status, "replica": rec["replica"], "attempt": 1}
    if name in ("unl", "lerr", "lcan"):
        out["prompt_tokens"] = rec["prompt_tokens"]
    return out


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    for name in ("unl", "errnp", "rejnp", "lerr", "lcan", "lret", "short"):
        rng = random.Random(3)
        for arm in ("baseline", "canary"):
            with open(os.path.join(src, arm + ".jsonl")) as f, \
                    open(os.path.join(dst, "%s-%s.jsonl" % (name, arm)), "w") as out:
                for line in f:
                    out.write(json.dumps(edit(json.loads(line), arm, rng, name)) + "\n")


if __name__ == "__main__":
    main()
