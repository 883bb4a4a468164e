package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// TestAnswersRunningOn: a canary whose answers run on (a stop condition
// missed, so a tenth of its completions go on to a 1024-token cap) passed
// the chat policy: output_tokens_mean was a guardrail against answers cut
// short only, TTFT and TPOT per token were unchanged, and "+29.0% [+27.6%,
// +30.5%]" output tokens was a PASS row. chat now gates it two-sided: a change either
// way beyond 5% fails, on both paths, with a reason that says the answers
// are longer; answers a little longer at random stay a pass; and a policy
// that leaves direction out keeps the one-sided gate.
func TestAnswersRunningOn(t *testing.T) {
	judged := func(t *testing.T, p *policies.Policy, runOn, stretch float64) map[string]*Report {
		bd, cd := fleetArms(aaFleet(17), aaFleet(17), 17)
		rng := rand.New(rand.NewPCG(5, 7))
		for i := range cd.Requests {
			r := &cd.Requests[i]
			if r.Status != sources.StatusOK || r.OutputTokens < 2 {
				continue
			}
			n := float64(r.OutputTokens) * stretch
			if rng.Float64() < runOn {
				n = math.Max(n, 1024)
			}
			extra := math.Round(n) - float64(r.OutputTokens)
			r.OutputTokens += int64(extra)
			if sources.Known(r.E2E) && sources.Known(r.TPOT) {
				r.E2E += extra * r.TPOT
			}
		}
		exact, agg := judgedBothWays(t, bd, cd, Config{Policy: p, Resamples: 300})
		return map[string]*Report{"request path": exact, "aggregate": agg}
	}
	t.Run("a tenth run on to the cap", func(t *testing.T) {
		for path, r := range judged(t, chat(t), 0.1, 1) {
			m := metric(t, r, "output_tokens_mean")
			if m.Verdict != Fail || m.Direction != policies.TwoSided || !(m.Delta > 0.2) || !strings.Contains(m.Reason, "the canary's answers are longer by more than the 5% margin") {
				t.Errorf("%s: output_tokens_mean %s (%s, %+.3f): %s", path, m.Verdict, m.Direction, float64(m.Delta), m.Reason)
			}
			if !(float64(m.PFail) < 1e-6) {
				t.Errorf("%s: p_fail %g, want the one-sided p on the side the estimate lies", path, float64(m.PFail))
			}
			if r.Verdict != Fail {
				t.Errorf("%s: verdict %s, want fail: %q", path, r.Verdict, r.Reasons)
			}
			t.Logf("%s: output_tokens_mean %+.1f%% [%+.1f%%, %+.1f%%] %s", path, 100*float64(m.Delta), 100*float64(m.Interval[0]), 100*float64(m.Interval[1]), m.Verdict)
		}
	})
	t.Run("2% longer", func(t *testing.T) {
		for path, r := range judged(t, chat(t), 0, 1.02) {
			if m := metric(t, r, "output_tokens_mean"); m.Verdict != Pass || !strings.Contains(m.Reason, "the change stays within the ±5% margin") {
				t.Errorf("%s: output_tokens_mean %s: %s", path, m.Verdict, m.Reason)
			}
		}
	})
	t.Run("one-sided when direction is left out", func(t *testing.T) {
		p := chat(t)
		for i := range p.Gates {
			p.Gates[i].Direction = ""
		}
		for path, r := range judged(t, p, 0.1, 1) {
			if m := metric(t, r, "output_tokens_mean"); m.Verdict != Pass || m.Direction != "higher_is_better" {
				t.Errorf("%s: output_tokens_mean %s (%s): %s", path, m.Verdict, m.Direction, m.Reason)
			}
		}
	})
}

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
