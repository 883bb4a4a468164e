package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// TestAggregateTokenGoodputAgreesWithRequests: token goodput (output
// tokens of good requests per second) judged from the requests and from
// the exact aggregate a request scan builds of them, with and without
// normalize.load: matched: the same gate verdicts and figures, and the same
// arm figures (token goodput, cost per million good tokens). Tokens are
// counted, so at matched load (per offered request) the figures are equal;
// per second they differ by the arms' windows, which the aggregate counts
// in whole slices and the request path from the first to the last arrival
// (under 1% over 20 minutes).
func TestAggregateTokenGoodputAgreesWithRequests(t *testing.T) {
	policy := func(load string) *policies.Policy {
		p, err := policies.Parse("tokens.yaml", []byte(`name: tokens
slo: {ttft: 1s, tpot: 80ms}
normalize: {load: `+load+`}
cost: {accelerator_per_hour: 2, host_per_hour: 0.5}
gates:
  - {metric: slo_attainment, margin: 1pp}
  - {metric: token_goodput, margin: 3%}
`))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := synth{n: 36000, rate: 30, ttftMed: 0.3, tpotMed: 0.04, replicas: 2, seed: 31}
	same := base
	same.seed = 32
	more := same
	more.rate, more.n = 33, 39600 // 10% more traffic to the same fleet
	slow := same
	slow.tpotMed = 0.07 // many more requests miss the TPOT SLO
	for _, tc := range []struct {
		name string
		load string
		c    synth
		want Verdict
	}{
		{"A/A, raw", "none", same, Pass},
		{"A/A, matched load", "matched", same, Pass},
		{"10% more traffic is not credited at matched load", "matched", more, Pass},
		{"10% more traffic looks better raw", "none", more, Pass},
		{"slower decode loses good tokens", "matched", slow, Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := policy(tc.load)
			bd, cd := base.dataset(sources.Baseline), tc.c.dataset(sources.Canary)
			onGrid(bd, cd)
			cfg := Config{Policy: p, Resamples: 300}
			rr, ra := judgedBothWays(t, bd, cd, cfg)
			m, a := metric(t, rr, "token_goodput"), metric(t, ra, "token_goodput")
			t.Logf("requests %s %+.4f [%+.4f, %+.4f] %s; aggregate %s %+.4f [%+.4f, %+.4f] %s", m.Verdict, float64(m.Delta), float64(m.Interval[0]), float64(m.Interval[1]), m.Method,
				a.Verdict, float64(a.Delta), float64(a.Interval[0]), float64(a.Interval[1]), a.Method)
			if m.Verdict != tc.want || a.Verdict != tc.want {
				t.Errorf("token_goodput: requests %s (%s), aggregate %s (%s); want %s", m.Verdict, m.Reason, a.Verdict, a.Reason, tc.want)
			}
			if matched := strings.Contains(strings.Join(a.Adjusted, "; "), "matched offered load"); matched != (tc.load == "matched") {
				t.Errorf("aggregate adjustments %v under load: %s", a.Adjusted, tc.load)
			}
			near := func(what string, x, y float64, rel float64) {
				if math.Abs(x-y) > rel*math.Max(math.Abs(x), 1e-3) {
					t.Errorf("%s: requests %v, aggregate %v", what, x, y)
				}
			}
			tol := 1e-9
			if tc.load != "matched" {
				tol = 0.01
			}
			for _, d := range [][2]Num{{m.Delta, a.Delta}, {m.Interval[0], a.Interval[0]}, {m.Interval[1], a.Interval[1]}} {
				if math.Abs(float64(d[0])-float64(d[1])) > tol {
					t.Errorf("delta or interval end: requests %v, aggregate %v: apart by more than %g", d[0], d[1], tol)
				}
			}
			near("baseline", float64(m.Baseline), float64(a.Baseline), 0.01)
			near("canary", float64(m.Canary), float64(a.Canary), 0.01)
			for _, arm := range []struct {
				name string
				r, a ArmSummary
			}{{"baseline", rr.Arms.Baseline, ra.Arms.Baseline}, {"canary", rr.Arms.Canary, ra.Arms.Canary}} {
				near(arm.name+" token goodput", float64(arm.r.TokenGoodputTPS), float64(arm.a.TokenGoodputTPS), 0.01)
				if arm.r.Cost == nil || arm.a.Cost == nil {
					t.Fatalf("%s: no cost summary", arm.name)
				}
				near(arm.name+" cost per million good tokens", float64(arm.r.Cost.PerMillionGoodTokens), float64(arm.a.Cost.PerMillionGoodTokens), 0.01)
			}
		})
	}
}

// TestMetricsTokenGoodputUnknown: metrics cannot tell the good requests'
// output tokens: a token_goodput gate is inconclusive, with the reason,
// and the arm figure is unknown (NaN), never 0.
func TestMetricsTokenGoodputUnknown(t *testing.T) {
	p, err := policies.Parse("tokens.yaml", []byte(`name: tokens
slo: {ttft: 1s, tpot: 80ms}
gates:
  - {metric: token_goodput, margin: 3%}
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Judge(aggArmData(sources.Baseline, 1, 240, 0.04, true), aggArmData(sources.Canary, 2, 240, 0.04, true), Config{Policy: p, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	m := metric(t, r, "token_goodput")
	if m.Verdict != Inconclusive || !strings.Contains(m.Reason, "does not report output tokens of good requests") || r.Verdict == Pass {
		t.Errorf("token_goodput on metrics: %s (%s); verdict %s", m.Verdict, m.Reason, r.Verdict)
	}
	if v := float64(r.Arms.Canary.TokenGoodputTPS); !math.IsNaN(v) {
		t.Errorf("canary token goodput %v from metrics, want unknown", v)
	}
}
