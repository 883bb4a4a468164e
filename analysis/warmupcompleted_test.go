package analysis

import (
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
)

// TestWarmupCompletedEval: the loose cold-start guardrail fails a canary
// that completed fewer of its requests over the cut start by more than
// ColdStartMargin with confidence, is inconclusive when it did so at the
// estimate only (it used to pass such a start "within the margin"), and
// passes one within the margin at the estimate.
func TestWarmupCompletedEval(t *testing.T) {
	ratio := func(completed ...float64) stats.Ratio {
		var r stats.Ratio
		for i := range 20 {
			r.Num = append(r.Num, completed[i%len(completed)])
			r.Den = append(r.Den, 50)
		}
		return r
	}
	base := ratio(50)
	for _, tc := range []struct {
		name   string
		canary stats.Ratio
		want   Verdict
		reason string
	}{
		{"2 pp fewer", ratio(49), Pass, "within the loose 5 pp cold-start margin"},
		{"30 pp fewer", ratio(35), Fail, "beyond the loose 5 pp cold-start margin"},
		{"8 pp fewer, unevenly", ratio(50, 50, 50, 50, 30), Inconclusive, "at the estimate, but not with confidence"},
	} {
		e := warmupCompletedEval(base, tc.canary, 200, 0.9, "buckets")
		if e.m.Verdict != tc.want || !strings.Contains(e.m.Reason, tc.reason) {
			t.Errorf("%s: %s, %s [%g, %g]: %s", tc.name, e.m.Verdict, fmtDelta(e.m, float64(e.m.Delta)), e.m.Interval[0], e.m.Interval[1], e.m.Reason)
		}
	}
}

// TestWarmupCompletedBothPaths: a slow start whose clients give up on a
// first token later than 1 s (fleet case cold-start-timeouts) costs the
// canary 15–32 pp of its requests over the cut start; both paths fail it
// where the loss is sure and hold it inconclusive (seed 2: −15.4 pp
// [−26.7, −4.1]) where it is not, and a slow start that loses nothing
// (cold-start) passes the guardrail.
func TestWarmupCompletedBothPaths(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 100, Seed: 1}
	for _, tc := range []struct {
		seed     uint64
		timeouts bool
		want     Verdict
	}{
		{1, true, Fail},
		{2, true, Inconclusive},
		{3, true, Fail},
		{2, false, Pass},
	} {
		b, c := aaFleet(tc.seed), aaFleet(tc.seed)
		if tc.timeouts {
			b.clientTimeout, c.clientTimeout = 1, 1
		}
		c.coldSecs, c.coldX = 240, 2.5
		bd, cd := fleetArms(b, c, tc.seed)
		exact, agg := judgedBothWays(t, bd, cd, cfg)
		for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
			m, ok := metricNamed(r, "warmup_completed")
			if !ok || m.Verdict != tc.want {
				t.Errorf("seed %d, timeouts %v, %s: warmup_completed present %v, %s: %s", tc.seed, tc.timeouts, path, ok, m.Verdict, m.Reason)
			}
			if tc.want == Inconclusive && r.Verdict == Pass {
				t.Errorf("seed %d, %s: the run passes with warmup_completed inconclusive", tc.seed, path)
			}
		}
	}
}

// TestDeclaredWarmupChecked: a declared warm-up (window.warmup: 5m) cut
// the fleet model's early error burst (half the canary's requests failing
// for two minutes) out of every gate, and chat PASSED the canary on both
// paths; what a declared cut removes is now checked by warmup_completed as
// an automatic cut's is: −17 pp at the estimate, inconclusive, never a
// pass. Identical arms pass it.
func TestDeclaredWarmupChecked(t *testing.T) {
	p := chat(t)
	p.Window.Warmup = "5m"
	for _, c := range []struct {
		name string
		ok   bool
	}{{"error-burst-early", false}, {"aa", true}} {
		exact, agg := fleetBothWays(t, c.name, 1000*uint64(len(c.name))+1, Config{Policy: p, Resamples: 100, Seed: 1})
		for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
			m := metric(t, r, "warmup_completed")
			if c.ok != (m.Verdict == Pass) || !c.ok && r.Verdict == Pass || !strings.Contains(m.Reason, "over the first 300s, which the warm-up cut removed") {
				t.Errorf("%s, %s: warmup_completed %s, verdict %s: %s", c.name, path, m.Verdict, r.Verdict, m.Reason)
			}
		}
	}
}
