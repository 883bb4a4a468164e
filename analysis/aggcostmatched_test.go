package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestAggregateMatchedCostAgreesWithRequests: the cost gate under
// normalize.load: matched, judged from the requests and from the exact
// aggregate a request scan builds of them, with the same cost records: the
// same verdicts (the request path's TestCostGate cases), the comparison
// made at matched load on both, its figures equal but for the request
// path's partial last bucket (the aggregate's last slice is whole), which
// moves them by well under 0.5%.
func TestAggregateMatchedCostAgreesWithRequests(t *testing.T) {
	p := costPolicy(t)
	const t0 = 1.7e9
	base := synth{n: 36000, rate: 30, ttftMed: 0.3, tpotMed: 0.04, replicas: 2, seed: 21}
	same := base
	same.seed = 22
	more := same
	more.rate = 33
	more.n = 39600
	for _, tc := range []struct {
		name   string
		c      synth
		cAccel float64
		want   Verdict
	}{
		{"8% higher accelerator cost fails a 3% cost gate", same, 2.0 * 1.08, Fail},
		{"equal cost passes", same, 2.0, Pass},
		{"10% more traffic at 5% more cost fails at matched load", more, 2.0 * 1.05, Fail},
		{"10% more traffic at equal cost passes at matched load", more, 2.0, Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd, cd := base.dataset(sources.Baseline), tc.c.dataset(sources.Canary)
			onGrid(bd, cd)
			recs := append(perMinute(sources.Baseline, t0, 21, 2, 2.0), perMinute(sources.Canary, t0, 21, 2, tc.cAccel)...)
			cfg := Config{Policy: p, Cost: recs, Resamples: 300}
			rr, ra := judgedBothWays(t, bd, cd, cfg)
			m, a := metric(t, rr, "cost_per_good_request"), metric(t, ra, "cost_per_good_request")
			t.Logf("requests %s %+.4f [%+.4f, %+.4f] %s; aggregate %s %+.4f [%+.4f, %+.4f] %s", m.Verdict, float64(m.Delta), float64(m.Interval[0]), float64(m.Interval[1]), m.Method,
				a.Verdict, float64(a.Delta), float64(a.Interval[0]), float64(a.Interval[1]), a.Method)
			if m.Verdict != tc.want || a.Verdict != tc.want {
				t.Errorf("cost gate: requests %s (%s), aggregate %s (%s); want %s", m.Verdict, m.Reason, a.Verdict, a.Reason, tc.want)
			}
			if !strings.HasSuffix(a.Method, "-matched-load") || a.Naive == nil || !strings.Contains(strings.Join(a.Adjusted, "; "), "matched offered load") {
				t.Errorf("aggregate cost gate not compared at matched load: %s, %v", a.Method, a.Adjusted)
			}
			for _, d := range [][2]Num{{m.Delta, a.Delta}, {m.Interval[0], a.Interval[0]}, {m.Interval[1], a.Interval[1]}, {m.Canary, a.Canary}, {m.Baseline, a.Baseline}} {
				if math.Abs(float64(d[0])/float64(d[1])-1) > 0.005 && math.Abs(float64(d[0])-float64(d[1])) > 5e-4 {
					t.Errorf("requests %v, aggregate %v: apart by more than 0.5%%", d[0], d[1])
				}
			}
		})
	}
}
