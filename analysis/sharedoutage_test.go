package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// TestSharedOutageBothPaths: a minute in which both arms stall at once (a
// shared incident, every latency ×5) is left out of both arms on the
// request path and on the aggregate alike — the same stretch, the same
// attainment — and reported as the shared_outage step, so that the tail
// gates, which it otherwise kept inconclusive in every fleet run, are
// judged on the rest; normalize.shared_dip: keep judges it as recorded.
// What it must not hide: the same stall with the canary collapsing harder
// in it (×10), or a canary that lost more of its requests there, keeps
// the stretch in; a canary 10% slower all run beside the shared stall
// still fails; identical arms without an incident leave nothing out, nor
// do identical arms that both slow down at the peaks of their shared
// traffic wave (aa-peak: a slowdown under load is the gates' to judge).
func TestSharedOutageBothPaths(t *testing.T) {
	stall := fleetCaseNamed(t, "shared-stall")
	worse := fleetCaseNamed(t, "shared-stall-canary-worse")
	regress := fleetCaseNamed(t, "shared-stall-regress-10")
	paths := [2]string{"request path", "aggregate"}
	for _, seed := range []uint64{3, 7} {
		judgeBoth := func(t *testing.T, bf, cf fleet, keep bool) [2]*Report {
			t.Helper()
			return judgeFleetBoth(t, bf, cf, seed, func(p *policies.Policy) {
				if keep {
					p.Normalize.SharedDip = "keep"
				}
			})
		}
		rs := judgeBoth(t, stall.b(seed), stall.c(seed), false)
		kept := judgeBoth(t, stall.b(seed), stall.c(seed), true)
		for k, r := range rs {
			st := step(r, sharedName)
			if !st.Applied || !strings.Contains(st.Detail, "left out") || !strings.Contains(st.Detail, "fared no worse") {
				t.Fatalf("seed %d %s: no shared_outage step: %+v", seed, paths[k], r.Normalization.Steps)
			}
			if s := step(r, "baseline_outage"); s.Name != "" {
				t.Errorf("seed %d %s: the shared stall was called the baseline's own: %s", seed, paths[k], s.Detail)
			}
			if r.Verdict == Fail {
				t.Errorf("seed %d %s: a shared stall failed the canary: %v", seed, paths[k], r.Reasons)
			}
			for _, g := range []string{"slo_attainment", "ttft_p99", "tpot_p99"} {
				if m := metric(t, r, g); !strings.Contains(strings.Join(m.Adjusted, "; "), "shared outage") {
					t.Errorf("seed %d %s: %s does not say what was left out: %q", seed, paths[k], g, m.Adjusted)
				}
			}
			if s := step(kept[k], sharedName); s.Name != "" {
				t.Errorf("seed %d %s: shared_dip: keep still left out: %s", seed, paths[k], s.Detail)
			}
			// the tails, set by the stall when it is kept, are read
			// on the rest: the p99 TTFT interval narrows severalfold
			m, mk := metric(t, r, "ttft_p99"), metric(t, kept[k], "ttft_p99")
			w, wk := float64(m.Interval[1]-m.Interval[0]), float64(mk.Interval[1]-mk.Interval[0])
			if !(2*w < wk) {
				t.Errorf("seed %d %s: p99 TTFT interval %.4f wide with the stall left out, %.4f with it kept", seed, paths[k], w, wk)
			}
			if mk.Verdict != Inconclusive || m.Verdict != Pass {
				t.Errorf("seed %d %s: ttft_p99 %s with the stall left out (want pass), %s with it kept (want inconclusive)", seed, paths[k], m.Verdict, mk.Verdict)
			}
			t.Logf("seed %d %s: %s (kept: %s); ttft_p99 %+.1f%% [%+.1f%%, %+.1f%%] (kept: [%+.1f%%, %+.1f%%]); %s", seed, paths[k], r.Verdict, kept[k].Verdict,
				100*float64(m.Delta), 100*float64(m.Interval[0]), 100*float64(m.Interval[1]), 100*float64(mk.Interval[0]), 100*float64(mk.Interval[1]), st.Detail)
		}
		if a, b := step(rs[0], sharedName).Detail, step(rs[1], sharedName).Detail; !strings.EqualFold(strings.SplitN(a, " of both arms", 2)[0], strings.SplitN(b, " of both arms", 2)[0]) {
			t.Errorf("seed %d: the paths left out different stretches:\n%s\n%s", seed, a, b)
		}
		if d := math.Abs(float64(metric(t, rs[0], "slo_attainment").Delta - metric(t, rs[1], "slo_attainment").Delta)); d > 1e-9 {
			t.Errorf("seed %d: attainment differs between the paths by %g", seed, d)
		}
		for k, r := range judgeBoth(t, worse.b(seed), worse.c(seed), false) {
			if s := step(r, sharedName); s.Name != "" {
				t.Errorf("seed %d %s: the canary collapsed harder in the shared stall, which was left out: %s", seed, paths[k], s.Detail)
			}
			if r.Verdict == Pass {
				t.Errorf("seed %d %s: the canary collapsed harder in the shared stall and passed", seed, paths[k])
			}
			if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "kept in every gate") || !strings.Contains(w, "collapsed harder there: its p90 TTFT") {
				t.Errorf("seed %d %s: no warning says why the shared stall was kept:\n%s", seed, paths[k], w)
			}
		}
		for k, r := range judgeBoth(t, regress.b(seed), regress.c(seed), false) {
			if r.Verdict != Fail {
				t.Errorf("seed %d %s: a canary 10%% slower beside a shared stall: %s %v", seed, paths[k], r.Verdict, r.Reasons)
			}
		}
		// the shared stall with a third of the canary's requests failing
		// in it: its share served lower there keeps the stretch in (the
		// errors, fewer than the attainment margin of the run, need not
		// fail it: left in, the stall keeps the error_rate gate wide)
		errs := stall.c(seed)
		errs.burstErr = 0.3
		for k, r := range judgeBoth(t, stall.b(seed), errs, false) {
			if s := step(r, sharedName); s.Name != "" {
				t.Errorf("seed %d %s: the canary failed a third of its requests in the shared stall, which was left out: %s", seed, paths[k], s.Detail)
			}
			if r.Verdict == Pass {
				t.Errorf("seed %d %s: the canary failed a third of its requests in the shared stall and passed", seed, paths[k])
			}
			if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "the canary served fewer of its requests there") {
				t.Errorf("seed %d %s: no warning says why the shared stall was kept:\n%s", seed, paths[k], w)
			}
		}
		peak := fleetCaseNamed(t, "aa-peak")
		for _, ps := range []uint64{3, 4} {
			for k, r := range judgeFleetBoth(t, peak.b(ps), peak.c(ps), ps, func(*policies.Policy) {}) {
				if s := step(r, sharedName); s.Name != "" {
					t.Errorf("seed %d %s: a slowdown at the shared load's peak was left out: %s", ps, paths[k], s.Detail)
				}
				if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "a slowdown at a peak of the arms' shared load") {
					t.Errorf("seed %d %s: no warning says why the peak was kept:\n%s", ps, paths[k], w)
				}
			}
		}
		aa := fleetCaseNamed(t, "aa")
		for k, r := range judgeBoth(t, aa.b(seed), aa.c(seed), false) {
			if s := step(r, sharedName); s.Name != "" {
				t.Errorf("seed %d %s: identical arms without an incident left out %s", seed, paths[k], s.Detail)
			}
		}
	}
}

// TestSharedOutageConditions sets a one-minute stall of both arms on a
// synthetic grid (30 minutes of 10 s steps, 200 requests per step and arm)
// against each condition of findSharedOutage: left out when the canary
// fared no worse; kept, with a warning saying why, when the canary's p90
// there is twice the baseline's (or its histogram bin lies wholly above,
// or, both in one bin too coarse to tell them apart — Prometheus' classic
// buckets — its share above the bin's upper edge is larger at one-sided
// level α), when the arms completed requests there without a latency to
// compare, when a histogram cannot be read, or when the stretch carried
// half again the run's typical load; nothing at all under
// normalize.shared_dip: keep.
func TestSharedOutageConditions(t *testing.T) {
	const n, secs = 180, 10.0
	grid := func(load float64) dipGrid {
		var g dipGrid
		for _, arm := range []*[]dipCell{&g.b, &g.c} {
			for i := range n {
				off := 200.0
				good := 194 + float64((i*37+len(*arm))%7) - 3
				if i >= 90 && i < 96 {
					off *= load
					good = 0
				}
				*arm = append(*arm, dipCell{start: secs * float64(i), offered: off, goodLo: good, goodHi: good, served: off - 1})
			}
		}
		g.secs, g.start, g.warmupCap = secs, 0, 300
		return g
	}
	exact := func(b, c float64, ok bool) fakeTails {
		return fakeTails{t: t, q: [2][2]float64{{b, b}, {c, c}}, ok: ok}
	}
	// both p90s in the one bin (0.1, 0.25] s, with counts above 0.25 s
	coarse := func(kb, kc float64) fakeTails {
		return fakeTails{t: t, q: [2][2]float64{{0.1, 0.25}, {0.1, 0.25}}, ok: true, k: [2]float64{kb, kc}, n: 1000}
	}
	for _, tc := range []struct {
		name    string
		load    float64
		q       fakeTails
		keep    bool
		leftOut bool
		kept    string
		fromTo  [2]float64
	}{
		{"canary no worse", 1, exact(3.0, 3.1, true), false, true, "", [2]float64{900, 960}},
		{"canary twice as slow", 1, exact(3.0, 6.0, true), false, false, "the canary collapsed harder there: its p90 TTFT 6 s against the baseline's 3 s (+100.0%, beyond 10%)", [2]float64{}},
		{"no latencies", 1, exact(0, 0, false), false, false, "give no TTFT for them to compare", [2]float64{}},
		{"unreadable histograms", 1, exact(math.NaN(), math.NaN(), true), false, false, "cannot be read to compare", [2]float64{}},
		{"one coarse bin, shares above alike", 1, coarse(40, 45), false, true, "", [2]float64{900, 960}},
		{"one coarse bin, the canary's share above larger", 1, coarse(40, 120), false, false,
			"the arms' p90 TTFT there are known only within their histogram bins, the canary's in [100 ms, 250 ms], the baseline's in [100 ms, 250 ms]; the canary collapsed harder there: its share of requests above 250 ms, 12.00% against the baseline's 4.00%", [2]float64{}},
		{"fine bins straddling the margin", 1, fakeTails{t: t, q: [2][2]float64{{3.0, 3.008}, {3.3, 3.309}}, ok: true, k: [2]float64{40, 40}, n: 1000}, false, false,
			"too wide to show the canary's within 10% of the baseline's", [2]float64{}},
		{"the canary's bin wholly above", 1, fakeTails{t: t, q: [2][2]float64{{0.1, 0.25}, {0.5, 0.75}}, ok: true}, false, false,
			"the canary collapsed harder there: its p90 TTFT 500 ms against the baseline's 250 ms (+100.0%, beyond 10%)", [2]float64{}},
		{"a peak of the shared load", 1.5, exact(3.0, 3.0, true), false, false, "carried 50% more requests than the run's typical stretch", [2]float64{}},
		{"shared_dip: keep", 1, exact(3.0, 3.0, true), true, false, "", [2]float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := *chat(t)
			if tc.keep {
				p.Normalize.SharedDip = "keep"
			}
			g := grid(tc.load)
			g.tails = tc.q
			o, kept, ok := findSharedOutage(&p, g, sources.ClockEpoch)
			if ok != tc.leftOut {
				t.Fatalf("left out %v, want %v (kept: %q)", ok, tc.leftOut, kept)
			}
			if ok && (o.from != tc.fromTo[0] || o.to != tc.fromTo[1] || !o.shared) {
				t.Errorf("left out [%g, %g) shared %v, want %v", o.from, o.to, o.shared, tc.fromTo)
			}
			if !strings.Contains(kept, tc.kept) || (tc.kept == "") != (kept == "") {
				t.Errorf("warning %q, want one with %q", kept, tc.kept)
			}
		})
	}
}

// fakeTails is stretchTails with the quantile bounds q[arm] (0 the
// baseline) and, above any edge, k[arm] of n values, for every latency
// and stretch: reads outside the stall [900, 960) s fail the test.
type fakeTails struct {
	t  *testing.T
	q  [2][2]float64
	ok bool
	k  [2]float64
	n  float64
}

func (f fakeTails) arm(canary bool, from, to float64) int {
	if !(from >= 900 && to <= 960) {
		f.t.Errorf("tail read over [%g, %g), want inside the stall", from, to)
	}
	if canary {
		return 1
	}
	return 0
}

func (f fakeTails) quantile(canary bool, _ string, _, from, to float64) (float64, float64, bool) {
	a := f.arm(canary, from, to)
	return f.q[a][0], f.q[a][1], f.ok
}

func (f fakeTails) above(canary bool, _ string, _, from, to float64) (float64, float64, bool, bool) {
	a := f.arm(canary, from, to)
	return f.k[a], f.n, true, f.n > 0
}
