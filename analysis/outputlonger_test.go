package analysis

import (
	"math"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
)

// TestDecideTwoSided checks decide's rule for a two-sided gate on a
// relative higher-is-better metric with a 5% margin: the interval of the
// ratio must lie within [0.95, 1.05] to pass and beyond either end to
// fail; the fail p-value, the margin it is tested against and the harm
// point are those of the side the estimate lies on.
func TestDecideTwoSided(t *testing.T) {
	info, _ := policies.Metric("output_tokens_mean")
	g := policies.Gate{Metric: "output_tokens_mean", Margin: policies.Margin{Value: 0.05, Kind: policies.MarginPercent, Text: "5%"}, Direction: policies.TwoSided}
	for _, tc := range []struct {
		name         string
		lo, pt, hi   float64 // ratios canary / baseline
		want         stats.Decision
		wantHarm     float64 // harm point: −log ratio below 1, +log ratio above
		wantMarginAt float64
	}{
		{"within", 0.97, 1.0, 1.03, stats.Pass, 0, -math.Log(0.95)},
		{"shorter", 0.80, 0.85, 0.90, stats.Fail, -math.Log(0.85), -math.Log(0.95)},
		{"longer", 1.20, 1.30, 1.40, stats.Fail, math.Log(1.30), math.Log(1.05)},
		{"straddles the upper end", 1.00, 1.04, 1.08, stats.Inconclusive, math.Log(1.04), math.Log(1.05)},
		{"straddles the lower end", 0.92, 0.96, 1.00, stats.Inconclusive, -math.Log(0.96), -math.Log(0.95)},
		{"wide, above 1", 0.90, 1.01, 1.12, stats.Inconclusive, math.Log(1.01), math.Log(1.05)},
		{"wide, below 1", 0.88, 0.99, 1.10, stats.Inconclusive, -math.Log(0.99), -math.Log(0.95)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			est := stats.Estimate{Point: math.Log(tc.pt), SE: 0.02, CI: stats.Interval{Lo: math.Log(tc.lo), Hi: math.Log(tc.hi)}}
			e := decide(gateEval{m: Metric{Name: g.Metric, Scale: info.Scale, Direction: policies.TwoSided, Margin: 0.05}}, g, info, est)
			if e.decision != tc.want || math.Abs(e.harmPoint-tc.wantHarm) > 1e-12 || math.Abs(e.passAt-tc.wantMarginAt) > 1e-12 || e.failAt != e.passAt {
				t.Errorf("decision %s harm %.5f at %.5f/%.5f; want %s harm %.5f at %.5f", e.decision, e.harmPoint, e.passAt, e.failAt, tc.want, tc.wantHarm, tc.wantMarginAt)
			}
			// both sides could fail: the one-sided p on the estimate's side, doubled
			if p, one := e.failP(), stats.FailPValue(tc.wantHarm, 0.02, tc.wantMarginAt); math.Abs(p-math.Min(1, 2*one)) > 1e-15 {
				t.Errorf("fail p %g, want twice the one-sided %g", p, one)
			}
		})
	}
	// the one-sided gate on the same "longer" interval passes
	g.Direction = ""
	est := stats.Estimate{Point: math.Log(1.3), SE: 0.02, CI: stats.Interval{Lo: math.Log(1.2), Hi: math.Log(1.4)}}
	if e := decide(gateEval{}, g, info, est); e.decision != stats.Pass {
		t.Errorf("one-sided gate on answers 30%% longer: %s, want pass", e.decision)
	}
}
