package analysis

import (
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestNoneGoodNotPassed: latencies written in milliseconds into the
// seconds fields leave no request within the SLO in either arm. 0% against
// 0% is no evidence about the canary (one ten times slower is at 0% too),
// so attainment is inconclusive, saying why, on both paths; it passed.
func TestNoneGoodNotPassed(t *testing.T) {
	const seed = 13
	bd, cd := fleetArms(aaFleet(seed), aaFleet(seed), seed)
	for _, ds := range []*sources.Dataset{bd, cd} {
		for i := range ds.Requests {
			r := &ds.Requests[i]
			r.TTFT, r.TPOT, r.E2E = r.TTFT*1000, r.TPOT*1000, r.E2E*1000
		}
	}
	exact, agg := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 300})
	for _, r := range []*Report{exact, agg} {
		m := metric(t, r, "slo_attainment")
		if m.Verdict != Inconclusive || !strings.Contains(m.Reason, "no request met the SLO in either arm") ||
			!strings.Contains(m.Reason, "check the SLO against the latencies shown") {
			t.Errorf("slo_attainment %s: %s", m.Verdict, m.Reason)
		}
		if r.Verdict == Pass {
			t.Errorf("passed with no good request in either arm: %q", r.Reasons)
		}
	}
}

// TestNoneGoodOneTokenOutputs: an endpoint that answers with one token
// (a classifier) leaves no completion good under the default
// slo.min_output_tokens of 2. The reason sent the reader to the latency
// units; it now names the output-token floor and the policy key that
// lowers it, on both paths.
func TestNoneGoodOneTokenOutputs(t *testing.T) {
	const seed = 13
	bd, cd := fleetArms(aaFleet(seed), aaFleet(seed), seed)
	for _, ds := range []*sources.Dataset{bd, cd} {
		for i := range ds.Requests {
			ds.Requests[i].OutputTokens = 1
		}
	}
	exact, agg := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 300})
	for _, r := range []*Report{exact, agg} {
		m := metric(t, r, "slo_attainment")
		if m.Verdict != Inconclusive || !strings.Contains(m.Reason, "100% of the completions have fewer output tokens than their class's slo.min_output_tokens (by default 2)") ||
			!strings.Contains(m.Reason, "set slo.min_output_tokens: 0 in the policy") {
			t.Errorf("slo_attainment %s: %s", m.Verdict, m.Reason)
		}
	}
}
