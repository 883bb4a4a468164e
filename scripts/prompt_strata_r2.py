#!/usr/bin/python3
"""How much of a request's good/not-good outcome prompt-length bands would
explain beyond the judge's strata (class label x policy class), measured on
native request logs (JSONL). The judge's standardized attainment removes the
variance between its strata; sub-strata by prompt length would remove the
share of the remaining variance that their means explain (R^2 beyond the
strata), narrowing the attainment interval's binomial part by a factor
sqrt(1 - R^2 beyond) / 1 at most. Good is as in reference_judge.py (chat
policy: TTFT <= 1 s, <= 4 s for prompts of 8192 tokens or more; TPOT <=
80 ms unless at most one output token; status ok; at least 2 output tokens).

Usage: prompt_strata_r2.py FILE.jsonl [FILE.jsonl ...]
Prints, per file: the R^2 of the judge's strata, and of the strata crossed
with prompt bands of an octave, half an octave and a quarter of an octave
(log2 of prompt tokens), each as a share of the within-label variance.
Needs Debian's python3-pandas and python3-numpy.
"""
import sys

import numpy as np
import pandas as pd


def good(d):
    ttft_slo = np.where(d.prompt_tokens >= 8192, 4.0, 1.0)
    ok = d.status == "ok"
    short = d.output_tokens <= 1
    return (ok & (d.output_tokens >= 2) & (d.ttft_s <= ttft_slo) & ((d.tpot_s <= 0.08) | short)).astype(float)


def r2(d, keys):
    # share of the within-label sum of squares explained by the cell means
    total = sum(((g.good - g.good.mean()) ** 2).sum() for _, g in d.groupby("class"))
    resid = ((d.good - d.groupby(keys).good.transform("mean")) ** 2).sum()
    return 1 - resid / total


def main(paths):
    for p in paths:
        d = pd.read_json(p, lines=True)
        d["good"] = good(d)
        d["policy"] = d.prompt_tokens >= 8192
        lp = np.log2(d.prompt_tokens.clip(lower=1))
        base = r2(d, ["class", "policy"])
        out = [f"{p}: {len(d)} requests; R^2 within labels: strata {base:.4f}"]
        for name, step in (("octave", 1), ("half octave", 2), ("quarter octave", 4)):
            d["band"] = np.floor(step * lp)
            v = r2(d, ["class", "policy", "band"])
            out.append(f"+ {name} bands {v:.4f} (beyond the strata {(v - base) / (1 - base):.4f}, interval x{np.sqrt((1 - v) / (1 - base)):.3f})")
        print("; ".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
