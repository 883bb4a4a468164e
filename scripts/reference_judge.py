#!/usr/bin/python3
"""Reference comparator: the pandas + scipy script a team would write to
compare a canary with its baseline from native request logs (JSONL, one
request per line, see DESIGN.md section 3).

It computes, per arm, what goodput's judge reports under the built-in chat
policy -- offered and good requests, SLO attainment (good / offered) and
goodput (good requests per second of the arrival window) -- and the
Mann-Whitney U diagnostic (two-sided, asymptotic with tie and continuity
correction) of TTFT, TPOT and E2E of completed requests, canary against
baseline. A request is good when status is "ok", TTFT <= 1 s (<= 4 s for
prompts of 8192 tokens or more) and TPOT <= 80 ms (TPOT not required for
answers of at most one token). `goodput bench` times it against the judge;
it is not used by any test of the Go code.

Usage: reference_judge.py BASELINE.jsonl CANARY.jsonl [--chunksize N]
Prints one JSON object on stdout. Needs Debian's python3-pandas and
python3-scipy.
"""

import argparse
import json
import math
import sys

import numpy as np
import pandas as pd
from scipy import stats

COLUMNS = ["ts", "status", "ttft_s", "tpot_s", "e2e_s", "prompt_tokens", "output_tokens"]
TTFT_SLO_S = 1.0
TTFT_SLO_LONG_S = 4.0
LONG_PROMPT_TOKENS = 8192
TPOT_SLO_S = 0.080


def read_arm(path, chunksize):
    """Read the columns the comparison needs, chunk by chunk."""
    parts = []
    for chunk in pd.read_json(path, lines=True, chunksize=chunksize, dtype=False, convert_dates=False):
        for c in COLUMNS:
            if c not in chunk.columns:
                chunk[c] = np.nan
        parts.append(chunk[COLUMNS])
    if not parts:
        raise SystemExit(f"{path}: no records")
    df = pd.concat(parts, ignore_index=True)
    for c in ("ts", "ttft_s", "tpot_s", "e2e_s", "prompt_tokens", "output_tokens"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def summarize(df):
    ok = df["status"] == "ok"
    long_prompt = df["prompt_tokens"] >= LONG_PROMPT_TOKENS
    ttft_limit = np.where(long_prompt, TTFT_SLO_LONG_S, TTFT_SLO_S)
    single = (df["output_tokens"] >= 0) & (df["output_tokens"] <= 1)
    tpot_ok = (df["tpot_s"] <= TPOT_SLO_S) | single
    good = ok & (df["ttft_s"] <= ttft_limit) & tpot_ok
    window = float(df["ts"].max() - df["ts"].min())
    n_good = int(good.sum())
    return {
        "offered": int(len(df)),
        "completed": int(ok.sum()),
        "good": n_good,
        "slo_attainment": n_good / len(df),
        "window_s": window,
        "goodput_rps": n_good / window if window > 0 else None,
    }, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("baseline")
    ap.add_argument("canary")
    ap.add_argument("--chunksize", type=int, default=1_000_000)
    a = ap.parse_args()
    b = read_arm(a.baseline, a.chunksize)
    c = read_arm(a.canary, a.chunksize)
    sb, okb = summarize(b)
    sc, okc = summarize(c)
    diags = []
    for col, name in (("ttft_s", "ttft"), ("tpot_s", "tpot"), ("e2e_s", "e2e")):
        x = c.loc[okc, col].dropna().to_numpy()
        y = b.loc[okb, col].dropna().to_numpy()
        if len(x) == 0 or len(y) == 0:
            continue
        r = stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic")
        diags.append({"metric": name, "u": float(r.statistic), "p_value": float(r.pvalue),
                      "n_canary": int(len(x)), "n_baseline": int(len(y))})
    out = {"baseline": sb, "canary": sc, "diagnostics": diags}
    json.dump(out, sys.stdout, allow_nan=False, default=lambda v: None if isinstance(v, float) and math.isnan(v) else v)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
