package analysis

import (
	"math"
	"strings"
	"testing"
)

// TestBaselineOutageBothPaths: the baseline fails half its requests for two
// minutes (the fleet model's baseline-burst), the canary is the baseline's
// twin. Both judges leave the same stretch out of both arms (the
// baseline_outage step, the count gates' Adjusted notes), neither fails,
// and the attainment interval is narrower than with the stretch kept
// (normalize.baseline_dip: keep, no step). The same outage beside a 10%
// TTFT and TPOT regression of the canary fails on both judges, as does a
// canary outage beside an earlier baseline outage, and the A/A run of
// the same seed leaves nothing out.
func TestBaselineOutageBothPaths(t *testing.T) {
	burst := fleetCaseNamed(t, "baseline-burst")
	regress := fleetCaseNamed(t, "regress-10")
	for _, seed := range []uint64{3, 11} {
		judgeBoth := func(t *testing.T, bf, cf fleet, keep bool) [2]*Report {
			t.Helper()
			p := chat(t)
			if keep {
				q := *p
				q.Normalize.BaselineDip = "keep"
				p = &q
			}
			b, c := fleetArms(bf, cf, seed)
			r, ra := judgedBothWays(t, b, c, Config{Policy: p, Resamples: 400, Seed: seed + 1})
			return [2]*Report{r, ra}
		}
		rs := judgeBoth(t, burst.b(seed), burst.c(seed), false)
		kept := judgeBoth(t, burst.b(seed), burst.c(seed), true)
		for k, r := range rs {
			path := [2]string{"request path", "aggregate"}[k]
			st := step(r, "baseline_outage")
			if !st.Applied || !strings.Contains(st.Detail, "left out") {
				t.Fatalf("seed %d %s: no baseline_outage step: %+v", seed, path, r.Normalization.Steps)
			}
			if r.Verdict == Fail {
				t.Errorf("seed %d %s: the baseline's outage failed the canary: %v", seed, path, r.Reasons)
			}
			for _, g := range []string{"slo_attainment", "error_rate", "ttft_p99"} {
				if m := metric(t, r, g); !strings.Contains(strings.Join(m.Adjusted, "; "), "baseline outage") {
					t.Errorf("seed %d %s: %s does not say what was left out: %q", seed, path, g, m.Adjusted)
				}
			}
			m := metric(t, r, "slo_attainment")
			mk := metric(t, kept[k], "slo_attainment")
			if s := step(kept[k], "baseline_outage"); s.Name != "" {
				t.Errorf("seed %d %s: baseline_dip: keep still left out: %s", seed, path, s.Detail)
			}
			w, wk := float64(m.Interval[1]-m.Interval[0]), float64(mk.Interval[1]-mk.Interval[0])
			if !(w < wk) {
				t.Errorf("seed %d %s: attainment interval %.4f wide with the outage left out, %.4f with it kept", seed, path, w, wk)
			}
			t.Logf("seed %d %s: %s; attainment %+.2f pp [%+.2f, %+.2f] (kept: %+.2f pp [%+.2f, %+.2f], %s); %s", seed, path, r.Verdict,
				100*float64(m.Delta), 100*float64(m.Interval[0]), 100*float64(m.Interval[1]),
				100*float64(mk.Delta), 100*float64(mk.Interval[0]), 100*float64(mk.Interval[1]), kept[k].Verdict, st.Detail)
		}
		if a, b := step(rs[0], "baseline_outage").Detail, step(rs[1], "baseline_outage").Detail; !strings.EqualFold(strings.SplitN(a, " of both arms", 2)[0], strings.SplitN(b, " of both arms", 2)[0]) {
			t.Errorf("seed %d: the paths left out different stretches:\n%s\n%s", seed, a, b)
		}
		if d := math.Abs(float64(metric(t, rs[0], "slo_attainment").Delta - metric(t, rs[1], "slo_attainment").Delta)); d > 1e-9 {
			t.Errorf("seed %d: attainment differs between the paths by %g", seed, d)
		}
		// the same outage beside a regression of the canary
		worse := regress.c(seed)
		for k, r := range judgeBoth(t, burst.b(seed), worse, false) {
			if r.Verdict != Fail || step(r, "baseline_outage").Name == "" {
				t.Errorf("seed %d %s: regressed canary beside the baseline's outage: %s, step %q", seed, []string{"request path", "aggregate"}[k], r.Verdict, step(r, "baseline_outage").Detail)
			}
		}
		// an outage in each arm at different times: the baseline's is
		// left out, the canary's fails attainment_dip
		both := fleetCaseNamed(t, "both-bursts")
		for k, r := range judgeBoth(t, both.b(seed), both.c(seed), false) {
			if r.Verdict != Fail || step(r, "baseline_outage").Name == "" || metric(t, r, dipName).Verdict != Fail {
				t.Errorf("seed %d %s: an outage in each arm: %s, step %q", seed, []string{"request path", "aggregate"}[k], r.Verdict, step(r, "baseline_outage").Detail)
			}
		}
		for k, r := range judgeBoth(t, burst.c(seed), burst.c(seed), false) {
			if s := step(r, "baseline_outage"); s.Name != "" {
				t.Errorf("seed %d %s: A/A run left out %s", seed, []string{"request path", "aggregate"}[k], s.Detail)
			}
		}
	}
}
