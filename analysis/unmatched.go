package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
)

// UnmatchedShare is the share of an arm's requests, in strata the other
// arm has no requests in, from which the unmatched_strata guardrail is
// reported (strata under StrayStratumShare are folded into a shared one
// first, strayStrataFolds).
const UnmatchedShare = 0.01

// oneArmStrata returns, from the arms' request counts per mix stratum
// (baseline, canary), the stray folds and the strata each arm keeps at
// its own share (strayStrataFolds), the other strata only the baseline
// (onlyB) or only the canary (onlyC) has requests in, in key order, and
// the share of that arm's requests they hold. A stratum is counted with
// what is folded into it: a label one arm gives no prompt lengths for
// has the other arm's bands of it.
func oneArmStrata(b, c map[string]float64, fold map[string]string, own map[string]bool) (onlyB, onlyC []string, shareB, shareC float64) {
	tb, tc, keys := strataTotals(b, c)
	fb, fc := foldBands(b, fold), foldBands(c, fold)
	for _, k := range keys {
		if _, folded := fold[k]; folded || own[k] {
			continue
		}
		switch {
		case fb[k] > 0 && !(fc[k] > 0):
			onlyB = append(onlyB, k)
			shareB += fb[k] / tb
		case fc[k] > 0 && !(fb[k] > 0):
			onlyC = append(onlyC, k)
			shareC += fc[k] / tc
		}
	}
	return labelsWhole(onlyB, keys, fold, own), labelsWhole(onlyC, keys, fold, own), shareB, shareC
}

// labelsWhole names, among the one-arm strata only, a label all of whose
// prompt bands (normalize.LabelBand) are in only by the label alone
// ("code × default" for its five bands), in the order of its first band;
// keys lists every stratum, fold and own those left out of the count.
func labelsWhole(only, keys []string, fold map[string]string, own map[string]bool) []string {
	in := map[string]bool{}
	for _, k := range only {
		in[k] = true
	}
	whole := map[string]bool{}
	for _, k := range keys {
		g := normalize.WithoutLabelBand(k)
		if g == k {
			continue
		}
		if _, folded := fold[k]; folded || own[k] {
			continue
		}
		if _, seen := whole[g]; !seen {
			whole[g] = true
		}
		whole[g] = whole[g] && in[k]
	}
	var out []string
	named := map[string]bool{}
	for _, k := range only {
		if g := normalize.WithoutLabelBand(k); g != k && whole[g] {
			if !named[g] {
				out = append(out, g)
				named[g] = true
			}
			continue
		}
		out = append(out, k)
	}
	return out
}

// unmatchedEval decides the unmatched_strata guardrail (the same on the
// request path and the aggregate) from oneArmStrata's result: when one arm has at least
// UnmatchedShare of its requests in strata (class labels, or token-length
// bands, by policy class) the other arm never served, the arms' traffic
// differs in kind, not only in mix: no reweighting compares those requests
// with anything, so the run is inconclusive, naming the strata. The gates
// then compare the arms as counted (a canary-only class is not given
// weight 0), so harm in that traffic still shows and can fail them.
// Absent below the share.
func unmatchedEval(onlyB, onlyC []string, shareB, shareC float64) (gateEval, bool) {
	if shareB < UnmatchedShare && shareC < UnmatchedShare {
		return gateEval{}, false
	}
	var parts []string
	for _, s := range []struct {
		arm, other string
		keys       []string
		share      float64
	}{{"canary", "baseline", onlyC, shareC}, {"baseline", "canary", onlyB, shareB}} {
		if s.share < UnmatchedShare {
			continue
		}
		q := make([]string, len(s.keys))
		for i, k := range s.keys {
			q[i] = fmt.Sprintf("%q", k)
		}
		part := fmt.Sprintf("%.1f%% of the %s's requests are in %s, which the %s never served", 100*s.share, s.arm, strings.Join(q, ", "), s.other)
		if !slices.ContainsFunc(s.keys, func(k string) bool { return !bandStratum(k) }) {
			// prompt bands of records without a class label
			part += fmt.Sprintf(" (records without a class label: if the %s's log leaves the label off some requests, label both arms' records alike)", s.arm)
		}
		parts = append(parts, part)
	}
	m := Metric{Name: "unmatched_strata", Guardrail: true, Direction: "lower_is_better", Scale: "absolute", Unit: "fraction",
		Baseline: Num(shareB), Canary: Num(shareC), Delta: Num(shareC - shareB),
		Interval: [2]Num{Num(math.NaN()), Num(math.NaN())}, Margin: Num(UnmatchedShare), PFail: Num(math.NaN()),
		Method: "strata-present-in-one-arm", Adjusted: []string{}, Verdict: Inconclusive,
		Reason: strings.Join(parts, "; ") + ": the arms' traffic differs in kind, not only in mix, and no reweighting compares those requests with the other arm's, so this cannot pass; the gates compare the arms as counted. Judge arms that served the same classes, or set normalize.weights with weight 0 for the class to leave it out deliberately"}
	return gateEval{m: m}, true
}
