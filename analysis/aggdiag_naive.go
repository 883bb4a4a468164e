package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/policies"
)

// naive gives each policy gate the aggregate's normalizations changed its
// comparison as measured (Metric.Naive), as the request path does: the
// gate evaluated again on the canary as counted (no class-mix
// reweighting) and, for goodput at matched offered load, on goodput
// itself. The gate's Adjusted notes name the reweighting in the request
// path's words, so renderers label the comparison alike ("standardized",
// "mix-weighted", "at baseline load"). Efficiency gates, which no
// normalization changes, get none.
func (j *aggJudgement) naive(gates []policies.Gate, evals []gateEval, conf float64) {
	mixed := j.mix.factor != nil
	var which []int
	for i, g := range gates {
		matched := j.p.Normalize.Load == "matched" && (g.Metric == "goodput" || g.Metric == "goodput_per_replica")
		if (mixed || matched) && !isEfficiencyMetric(g.Metric) {
			which = append(which, i)
		}
	}
	p := *j.p
	p.Normalize.Load = "none"
	// each gate as measured: the canary as counted, no load matching;
	// its warnings are the standardized evaluation's, already given
	naive, _ := sideBySide(j, len(which), func(nj *aggJudgement, k int) gateEval {
		nj.p, nj.c = &p, j.cRaw
		return nj.evalGate(which[k], gates[which[k]], conf)
	})
	for k, i := range which {
		g, ne := gates[i], naive[k]
		if math.IsNaN(float64(ne.m.Delta)) {
			continue
		}
		m := &evals[i].m
		m.Naive = &NaiveComparison{Baseline: ne.m.Baseline, Canary: ne.m.Canary, Delta: ne.m.Delta, Interval: ne.m.Interval}
		if !mixed {
			continue
		}
		info, _ := policies.Metric(g.Metric)
		if info.Latency != "" {
			m.Adjusted = append(m.Adjusted, "quantiles of the baseline mix (strata: class label or token-length band × policy class): the canary's histograms reweighted per stratum to the baseline's shares, none dropped")
		} else {
			strata := "class label or token-length band × policy class"
			if j.mix.band != nil {
				strata += " × prefix-cache band"
			}
			m.Adjusted = append(m.Adjusted, "standardized to the baseline mix (strata: "+strata+"): the canary's counts reweighted per stratum to the baseline's shares")
		}
	}
}

// naiveInMixStep lists, in the mix normalization step's detail, each
// standardized gate's comparison as measured and as standardized, as the
// request path's mix step does ("slo_attainment naive +0.12 pp [−0.05,
// +0.29] → standardized …"; pp for absolute gates, % for relative ones).
func naiveInMixStep(r *Report) {
	var parts []string
	for _, m := range r.Metrics {
		if standardizedGate(m) {
			parts = append(parts, naiveText(m))
		}
	}
	if len(parts) == 0 {
		return
	}
	for i := range r.Normalization.Steps {
		if st := &r.Normalization.Steps[i]; st.Name == "mix" && st.Applied {
			st.Detail += "; " + strings.Join(parts, "; ")
		}
	}
}

// standardizedGate reports whether m was standardized to a mix and
// carries its naive comparison and an estimate (a gate undecided for lack
// of data has none).
func standardizedGate(m Metric) bool {
	return m.Naive != nil && slicesHasPrefix(m.Adjusted, "standardized to the") && !math.IsNaN(float64(m.Delta))
}

// naiveText renders a standardized gate's comparison as reported, naive
// then standardized ("slo_attainment naive +0.12 pp [−0.05, +0.29] →
// standardized …"; pp for absolute gates, % for relative ones).
func naiveText(m Metric) string {
	f := func(d Num, iv [2]Num) string {
		if m.Scale == "relative" {
			return fmt.Sprintf("%+.2f%% [%+.2f, %+.2f]", 100*float64(d), 100*float64(iv[0]), 100*float64(iv[1]))
		}
		return fmt.Sprintf("%+.2f pp [%+.2f, %+.2f]", 100*float64(d), 100*float64(iv[0]), 100*float64(iv[1]))
	}
	return m.Name + " naive " + f(m.Naive.Delta, m.Naive.Interval) + " → standardized " + f(m.Delta, m.Interval)
}

// gateMixText is the request path's mix-step text for note n: the
// gate's reported figures when n's metric is a standardized gate of the
// report, so that the step and the gate table quote one interval (a
// floor, such as Newcombe's when both arms are at 100%, widens the
// gate's); the standardization's own otherwise.
func gateMixText(gates []Metric, n mixNote) string {
	for _, m := range gates {
		if m.Name == n.metric && standardizedGate(m) {
			return naiveText(m)
		}
	}
	return n.text
}

func slicesHasPrefix(xs []string, prefix string) bool {
	for _, x := range xs {
		if strings.HasPrefix(x, prefix) {
			return true
		}
	}
	return false
}
