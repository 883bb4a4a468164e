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
		if m.Verdict != Inconclusive || !strings.Contains(m.Reason, "no request met the SLO in either arm") {
			t.Errorf("slo_attainment %s: %s", m.Verdict, m.Reason)
		}
		if r.Verdict == Pass {
			t.Errorf("passed with no good request in either arm: %q", r.Reasons)
		}
	}
}
