package analysis

import (
	"math"

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
	for i, g := range gates {
		matched := j.p.Normalize.Load == "matched" && (g.Metric == "goodput" || g.Metric == "goodput_per_replica")
		if !mixed && !matched || isEfficiencyMetric(g.Metric) {
			continue
		}
		p := *j.p
		p.Normalize.Load = "none"
		nj := *j
		nj.p, nj.c, nj.warns = &p, j.cRaw, nil
		ne := nj.evalGate(i, g, conf)
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
			m.Adjusted = append(m.Adjusted, "standardized to the baseline mix (strata: class label or token-length band × policy class): the canary's counts reweighted per stratum to the baseline's shares")
		}
	}
}
