package capacity

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// countBounds bounds how many of n values are ≤ x from a percentile list of
// those values. With numpy's linear interpolation the percentile at p lies
// between the order statistics s[⌊h⌋] and s[⌈h⌉], h = (n−1)p (0-based), so
//
//	v_p ≤ x  ⇒  at least ⌊h⌋+1 values are ≤ x
//	v_p > x  ⇒  at most ⌈h⌉ values are ≤ x.
//
// For an unknown interpolation the looser nearest-rank reading is used:
// v_p ≤ x ⇒ at least ⌈np⌉−1, v_p > x ⇒ at most ⌊np⌋+1. A list without
// entries gives [0, n].
func countBounds(sk sources.Sketch, n int64, x float64) (lo, hi int64) {
	lo, hi = 0, n
	if n <= 0 {
		return 0, 0
	}
	nf := float64(n)
	for i, p := range sk.Probs {
		v := sk.Values[i]
		var l, h int64
		if sk.Interpolation == "linear" {
			pos := (nf - 1) * p
			l, h = int64(math.Floor(pos+1e-9))+1, int64(math.Ceil(pos-1e-9))
		} else {
			l, h = int64(math.Ceil(nf*p-1e-9))-1, int64(math.Floor(nf*p+1e-9))+1
		}
		if v <= x {
			lo = max(lo, min(l, n))
		} else {
			hi = min(hi, max(h, 0))
		}
	}
	if lo > hi { // inconsistent list (not sorted): fall back to no information
		return 0, n
	}
	return lo, hi
}

// hasTail reports whether a sketch resolves the region around the target:
// it has a percentile at or above p (e.g. 0.99 for a 99% target).
func hasTail(sk sources.Sketch, p float64) bool {
	for _, q := range sk.Probs {
		if q >= p-1e-12 {
			return true
		}
	}
	return false
}

// attainment computes a point's good-request count, exactly from its
// requests or as bounds from its percentile lists (joint criteria by
// Fréchet bounds: good ≥ Σ lo_k − (K−1)·completed, good ≤ min hi_k).
func attainment(pt *sources.RatePoint, pol *policies.Policy, target float64) (goodLo, goodHi, offered, completed int64, exact bool, notes []string) {
	if pt.Requests != nil {
		good := analysis.GoodFunc(pol)
		var g, c int64
		for i := range pt.Requests {
			r := &pt.Requests[i]
			if r.Status == sources.StatusOK {
				c++
			}
			if good(r) {
				g++
			}
		}
		return g, g, int64(len(pt.Requests)), c, true, nil
	}
	offered, completed = pt.Offered, pt.Completed
	slo := pol.SLO
	type crit struct {
		name  string
		limit policies.Duration
	}
	crits := []crit{{"ttft", slo.TTFT}, {"tpot", slo.TPOT}, {"e2e", slo.E2E}}
	var los, his []int64
	var missing, noTail []string
	for _, c := range crits {
		if c.limit == 0 {
			continue
		}
		sk, ok := pt.Sketches[c.name]
		if !ok || len(sk.Probs) == 0 {
			missing = append(missing, strings.ToUpper(c.name))
			los, his = append(los, 0), append(his, completed)
			continue
		}
		if !hasTail(sk, target) {
			noTail = append(noTail, strings.ToUpper(c.name))
		}
		lo, hi := countBounds(sk, completed, c.limit.Seconds())
		los, his = append(los, lo), append(his, hi)
	}
	// the output-token floor of a good completion (policies' min_output_tokens,
	// default 2): from output-length percentiles when the file has them
	if floor := slo.OutputFloor(); floor > 0 {
		if sk, ok := pt.Sketches["output_tokens"]; ok && len(sk.Probs) > 0 {
			// below the floor ⇔ ≤ floor − 0.5 (token counts are whole)
			blo, bhi := countBounds(sk, completed, float64(floor)-0.5)
			los, his = append(los, completed-bhi), append(his, completed-blo)
		} else {
			notes = append(notes, fmt.Sprintf("no output-length percentiles: completions shorter than %d output tokens (not good under the policy) cannot be excluded", floor))
		}
	}
	if slo.MaxITL != 0 {
		missing = append(missing, "largest inter-token gap")
		los, his = append(los, 0), append(his, completed)
	}
	if slo.Quality == "required" {
		missing = append(missing, "quality")
		los, his = append(los, 0), append(his, completed)
	}
	goodLo, goodHi = completed, completed
	if len(los) > 0 {
		var sum int64
		goodHi = completed
		for i := range los {
			sum += los[i]
			goodHi = min(goodHi, his[i])
		}
		goodLo = max(0, sum-int64(len(los)-1)*completed)
	}
	if len(missing) > 0 {
		notes = append(notes, fmt.Sprintf("no percentiles of %s in the file: the SLO on it cannot be checked, so attainment is only bounded by [0, completed]", strings.Join(missing, ", ")))
	}
	if len(noTail) > 0 {
		notes = append(notes, fmt.Sprintf("summary without tail percentiles of %s (none at or above p%s): attainment near the %s target cannot be bounded from it; rerun the benchmark writing per-request data (e.g. --output-details) or p99/p99.9", strings.Join(noTail, ", "), trimPct(target), pct(target)))
	}
	return goodLo, goodHi, offered, completed, false, notes
}

// trimPct renders a fraction as a percentage number without trailing
// zeros: 0.99 → "99", 0.999 → "99.9".
func trimPct(p float64) string {
	s := fmt.Sprintf("%.3f", 100*p)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

// pct renders a fraction as a percentage: 0.99 → "99%".
func pct(p float64) string { return trimPct(p) + "%" }
