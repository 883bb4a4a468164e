package analysis

import (
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestNoneGood: when no request in either arm meets the SLO, 0% against
// 0% is no evidence about the canary (one ten times slower is at 0% too),
// so attainment is inconclusive, saying why, on both paths; it passed.
// Latencies written in milliseconds into the seconds fields get the units
// hint; a one-token endpoint (a classifier) got that hint too, and now
// gets the output-token floor and the policy key that lowers it.
func TestNoneGood(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(r *sources.Request)
		want []string
	}{
		{"milliseconds in the seconds fields", func(r *sources.Request) { r.TTFT, r.TPOT, r.E2E = r.TTFT*1000, r.TPOT*1000, r.E2E*1000 },
			[]string{"check the SLO against the latencies shown"}},
		{"one output token each", func(r *sources.Request) { r.OutputTokens = 1 },
			[]string{"100% of the completions have fewer output tokens than their class's slo.min_output_tokens (by default 2)", "set slo.min_output_tokens: 0 in the policy"}},
	} {
		const seed = 13
		bd, cd := fleetArms(aaFleet(seed), aaFleet(seed), seed)
		for _, ds := range []*sources.Dataset{bd, cd} {
			for i := range ds.Requests {
				tc.edit(&ds.Requests[i])
			}
		}
		exact, agg := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 300})
		for _, r := range []*Report{exact, agg} {
			m := metric(t, r, "slo_attainment")
			ok := m.Verdict == Inconclusive && strings.Contains(m.Reason, "no request met the SLO in either arm")
			for _, w := range tc.want {
				ok = ok && strings.Contains(m.Reason, w)
			}
			if !ok {
				t.Errorf("%s: slo_attainment %s: %s", tc.name, m.Verdict, m.Reason)
			}
			if r.Verdict == Pass {
				t.Errorf("%s: passed with no good request in either arm: %q", tc.name, r.Reasons)
			}
		}
	}
}
