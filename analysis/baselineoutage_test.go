package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
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
			return judgeFleetBoth(t, bf, cf, seed, func(p *policies.Policy) {
				if keep {
					p.Normalize.BaselineDip = "keep"
				}
			})
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

// TestBaselineOutageLeftOutSummary: what a baseline outage leaves out is
// shown, not hidden. Each arm's summary counts the stretch's requests
// under left_out (the baseline's failures of the outage among them), and
// its rates, replica-seconds and cost are over the analysed seconds less
// the stretch — on both paths alike, and adding up to the run judged
// with the stretch kept (normalize.baseline_dip: keep).
func TestBaselineOutageLeftOutSummary(t *testing.T) {
	burst := fleetCaseNamed(t, "baseline-burst")
	const seed = 3
	p := *chat(t)
	p.Cost = &policies.CostRates{AcceleratorPerHour: 2.5, HostPerHour: 0.5, IdleReservePerHour: 1}
	keep := p
	keep.Normalize.BaselineDip = "keep"
	b, c := fleetArms(burst.b(seed), burst.c(seed), seed)
	cfg := Config{Policy: &p, Resamples: 200, Seed: seed + 1}
	r, ra := judgedBothWays(t, b, c, cfg)
	cfg.Policy = &keep
	k, ka := judgedBothWays(t, b, c, cfg)
	rel := func(x, y Num) float64 { return math.Abs(float64(x-y)) / math.Max(math.Abs(float64(y)), 1e-12) }
	for i, pair := range [][2]*Report{{r, k}, {ra, ka}} {
		path := [2]string{"request path", "aggregate"}[i]
		for arm, sums := range map[string][2]ArmSummary{"baseline": {pair[0].Arms.Baseline, pair[1].Arms.Baseline}, "canary": {pair[0].Arms.Canary, pair[1].Arms.Canary}} {
			s, kept := sums[0], sums[1]
			lo := s.LeftOut
			if lo == nil || kept.LeftOut != nil {
				t.Fatalf("%s %s: left_out %+v, with the stretch kept %+v", path, arm, lo, kept.LeftOut)
			}
			if a, l, w := s.Accounting, lo.Accounting, kept.Accounting; a.Offered+l.Offered != w.Offered || a.Failed+l.Failed != w.Failed ||
				a.Good+l.Good != w.Good || a.Completed+l.Completed != w.Completed || a.Admitted+l.Admitted != w.Admitted {
				t.Errorf("%s %s: analysed %+v and left out %+v do not add up to the run %+v", path, arm, a, l, w)
			}
			if d := float64(kept.WindowSeconds - s.WindowSeconds - lo.Seconds); math.Abs(d) > 1e-6 || !(lo.Seconds >= 60) {
				t.Errorf("%s %s: window %v s, left out %v s, with the stretch kept %v s", path, arm, s.WindowSeconds, lo.Seconds, kept.WindowSeconds)
			}
			if e := rel(s.GoodputRPS, Num(float64(s.Accounting.Good)/float64(s.WindowSeconds))); e > 1e-9 {
				t.Errorf("%s %s: goodput %v req/s is not good / analysed seconds", path, arm, s.GoodputRPS)
			}
			// replica time and cost shrink with the seconds left out
			frac := float64(s.WindowSeconds / kept.WindowSeconds)
			if e := rel(s.ReplicaSeconds, kept.ReplicaSeconds*Num(frac)); e > 0.01 {
				t.Errorf("%s %s: replica-seconds %v, with the stretch kept %v (×%.4f)", path, arm, s.ReplicaSeconds, kept.ReplicaSeconds, frac)
			}
			if s.Cost == nil || kept.Cost == nil || rel(s.Cost.TotalUSD, kept.Cost.TotalUSD*Num(frac)) > 0.01 {
				t.Errorf("%s %s: cost %+v, with the stretch kept %+v (×%.4f)", path, arm, s.Cost, kept.Cost, frac)
			}
			left := 0
			for _, pt := range map[string][]Point{"baseline": pair[0].Series.Baseline, "canary": pair[0].Series.Canary}[arm] {
				if pt.LeftOut {
					left++
				}
			}
			if want := int(math.Round(float64(lo.Seconds / pair[0].Series.BucketSeconds))); left != want {
				t.Errorf("%s %s: %d series points marked left out, want %d", path, arm, left, want)
			}
		}
		if l := pair[0].Arms.Baseline.LeftOut.Accounting; !(l.Failed*4 > l.Offered) {
			t.Errorf("%s: the baseline's outage failures are not in its left_out: %+v", path, l)
		}
		if l := pair[0].Arms.Canary.LeftOut.Accounting; l.Failed*20 > l.Offered {
			t.Errorf("%s: the canary's left_out shows failures it did not have: %+v", path, l)
		}
	}
	// the paths agree
	for arm, s := range map[string][2]ArmSummary{"baseline": {r.Arms.Baseline, ra.Arms.Baseline}, "canary": {r.Arms.Canary, ra.Arms.Canary}} {
		x, y := s[0], s[1]
		if x.LeftOut.Accounting != y.LeftOut.Accounting || rel(x.LeftOut.Seconds, y.LeftOut.Seconds) > 1e-9 ||
			rel(x.WindowSeconds, y.WindowSeconds) > 1e-9 || rel(x.ReplicaSeconds, y.ReplicaSeconds) > 1e-6 || rel(x.Cost.TotalUSD, y.Cost.TotalUSD) > 1e-6 {
			t.Errorf("%s: the paths differ:\nrequest path %+v %+v window %v replica-s %v cost %v\naggregate    %+v %+v window %v replica-s %v cost %v", arm,
				x.LeftOut, x.Accounting, x.WindowSeconds, x.ReplicaSeconds, x.Cost.TotalUSD, y.LeftOut, y.Accounting, y.WindowSeconds, y.ReplicaSeconds, y.Cost.TotalUSD)
		}
	}
}

// TestBaselineOutageServedScanFromStart: the baseline fails half its
// requests at 2:00–4:00 of 30 minutes, inside the warm-up cap where the
// good-share scan does not look. Both judges find it on the shares of
// requests served, leave it out of both arms and say so ("served");
// beside a canary whose errors are up 1.2 pp the run fails on
// error_rate (with the outage kept it was inconclusive: the baseline's
// burst outweighed the canary's errors), and the A/A run of the same seed
// leaves nothing out.
func TestBaselineOutageServedScanFromStart(t *testing.T) {
	early := fleetCaseNamed(t, "baseline-burst-early")
	errs := fleetCaseNamed(t, "baseline-burst-early-errors-up-1pp")
	for _, seed := range []uint64{5, 23} {
		judge := func(bf, cf fleet) [2]*Report {
			b, c := fleetArms(bf, cf, seed)
			r, ra := judgedBothWays(t, b, c, Config{Policy: chat(t), Resamples: 200, Seed: seed + 1})
			return [2]*Report{r, ra}
		}
		paths := [2]string{"request path", "aggregate"}
		for k, r := range judge(early.b(seed), early.c(seed)) {
			st := step(r, "baseline_outage")
			if !st.Applied || !strings.Contains(st.Detail, "served") || !strings.Contains(st.Detail, "from 2:") || strings.Contains(st.Detail, "NaN") {
				t.Fatalf("seed %d %s: baseline_outage step: %+v", seed, paths[k], st)
			}
			if r.Verdict == Fail {
				t.Errorf("seed %d %s: the baseline's outage failed the canary: %v", seed, paths[k], r.Reasons)
			}
		}
		for k, r := range judge(errs.b(seed), errs.c(seed)) {
			if r.Verdict != Fail || metric(t, r, "error_rate").Verdict != Fail || step(r, "baseline_outage").Name == "" {
				t.Errorf("seed %d %s: canary errors up 1.2 pp beside the baseline's early outage: %s, error_rate %s, step %q",
					seed, paths[k], r.Verdict, metric(t, r, "error_rate").Verdict, step(r, "baseline_outage").Detail)
			}
		}
		for k, r := range judge(early.c(seed), early.c(seed)) {
			if s := step(r, "baseline_outage"); s.Name != "" {
				t.Errorf("seed %d %s: A/A run left out %s", seed, paths[k], s.Detail)
			}
		}
	}
}

// judgeFleetBoth judges a fleet-model run (arms bf and cf, seed) with the
// chat policy as edit changes it, on the request path and on the
// aggregate: [request path, aggregate].
func judgeFleetBoth(t *testing.T, bf, cf fleet, seed uint64, edit func(*policies.Policy)) [2]*Report {
	t.Helper()
	p := *chat(t)
	edit(&p)
	b, c := fleetArms(bf, cf, seed)
	r, ra := judgedBothWays(t, b, c, Config{Policy: &p, Resamples: 400, Seed: seed + 1})
	return [2]*Report{r, ra}
}
