package analysis

import (
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// TestCutTail holds the cut-off rules to synthetic arms, each read as the
// request path reads it (sorted values) and as an exact aggregate does
// (log-linear bins): the same decision either way. An arm whose log-normal
// TTFT is cut at 1 s is cut; identical arms, an arm whose spread is a
// third, one 30% faster, one cut at 1 s but 10% slower below the cut too,
// and a cut that leaves fewer than CutoffAbove values missing are not;
// nor is an arm beside one whose slowest 1.5% regressed, or, where values
// pile up below a soft wall, beside one 3% or 20% slower. An arm whose
// TTFT has a sharp upper edge beside one half of whose requests slowed is
// read as cut: the shape a canary's cut log shares with a canary's
// regression on part of its traffic, which is why a baseline is read as
// cut only when the arms' offered-load ratio agrees too
// (TestHeldByCutBaseline). The end-to-end rule agrees on every pair but a soft wall
// beside the same wall with 40 values just past it, which it does not
// read as cut: nothing runs on past the wall.
// logNormalDraws returns n log-normal values (median, sigma of the log),
// sorted, without those above cut (0: none left out).
func logNormalDraws(seed uint64, n int, median, sigma, cut float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 3))
	var v []float64
	for range n {
		x := median * math.Exp(sigma*rng.NormFloat64())
		if cut > 0 && x > cut {
			continue
		}
		v = append(v, x)
	}
	slices.Sort(v)
	return v
}

func TestCutTail(t *testing.T) {
	draw := logNormalDraws
	hist := func(v []float64) histCounts {
		var h loglin.Hist
		for _, x := range v {
			h.Add(x, 1)
		}
		return histCounts(h.Cumulative())
	}
	const n = 36000
	base := draw(1, n, 0.4, 0.4, 0) // about 1.1% above 1 s
	// a soft wall: 3% of the values pile up in [1.35, 1.5] s (answers at
	// their length cap, end to end), the rest log-normal below it
	walled := func(seed uint64, scale float64) []float64 {
		rng := rand.New(rand.NewPCG(seed, 5))
		v := draw(seed, n, 0.4, 0.4, 0)
		for i := range v {
			if rng.Float64() < 0.03 || v[i] > 1.35 {
				v[i] = 1.5 * (0.9 + 0.1*rng.Float64())
			}
			v[i] *= scale
		}
		slices.Sort(v)
		return v
	}
	tailRegressed := func(seed uint64) []float64 {
		v := draw(seed, n, 0.4, 0.4, 0)
		for i := 0; i < len(v); i += 67 { // 1.5% of them ×3
			v[i] *= 3
		}
		slices.Sort(v)
		return v
	}
	// TTFT spread evenly over [0.1, 0.5) s, or with every other request
	// at 2.5 s instead
	edged := func(half bool) []float64 {
		v := make([]float64, 3000)
		for i := range v {
			v[i] = 0.1 + float64(i%400)/1000
			if half && i%2 == 1 {
				v[i] = 2.5
			}
		}
		slices.Sort(v)
		return v
	}
	// a soft wall beside the same wall with 40 values just past it (an
	// arm's own slowdown, a lost replica): a cut's shape up to the wall,
	// but nothing runs on past it
	justPast := func() []float64 {
		v := walled(2, 1)
		for i := range 40 {
			v = append(v, 1.5*(1.001+0.001*float64(i)))
		}
		slices.Sort(v)
		return v
	}
	for _, tc := range []struct {
		name string
		x, y []float64 // x: the arm checked for a cut against y
		cut  bool
		e2e  bool // cut by cutTailE2E's rule
	}{
		{"cut at 1 s", draw(2, n, 0.4, 0.4, 1), base, true, true},
		// slower below the cut too: not the baseline's service, not read
		// as a cut (its attainment answers for it)
		{"cut at 1 s, 10% slower", draw(2, n, 0.44, 0.4, 1), base, false, false},
		{"identical", draw(2, n, 0.4, 0.4, 0), base, false, false},
		{"a third of the spread", draw(2, n, 0.4, 0.4/3, 0), base, false, false},
		{"30% faster", draw(2, n, 0.28, 0.4, 0), base, false, false},
		{"a cut few values pass", draw(2, n, 0.4, 0.4, 1.6), base, false, false},
		{"beside an arm whose slowest 1.5% are ×3", base, tailRegressed(2), false, false},
		{"walled, beside an arm 20% slower", walled(1, 1), walled(2, 1.2), false, false},
		{"walled, beside an arm 3% slower", walled(1, 1), walled(2, 1.03), false, false},
		// why a baseline is never checked: TTFT with a sharp upper edge
		// beside an arm half of whose requests slowed (a canary that
		// regressed on part of its traffic) has a cut's shape exactly
		{"sharp-edged, beside an arm half of whose requests slowed", edged(false), edged(true), true, true},
		{"walled, beside the same wall with 40 values just past it", walled(1, 1), justPast(), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut, ok := cutTail(sortedCounts(tc.x), sortedCounts(tc.y))
			if ok != tc.cut {
				t.Errorf("values: cut %v, want %v (%+v)", ok, tc.cut, cut)
			}
			hc, hok := cutTail(hist(tc.x), hist(tc.y))
			if hok != ok {
				t.Errorf("bins: cut %v, values %v (%+v against %+v)", hok, ok, hc, cut)
			}
			if ok && (hc.at < cut.at || hc.at > cut.at*math.Pow(2, 1.0/256)*1.0000001) {
				t.Errorf("bins put the cut at %v, values at %v: not the upper edge of its bin", hc.at, cut.at)
			}
			ec, eok := cutTailE2E(sortedCounts(tc.x), sortedCounts(tc.y))
			if eok != tc.e2e {
				t.Errorf("values, end to end: cut %v, want %v (%+v)", eok, tc.e2e, ec)
			}
			if _, hok := cutTailE2E(hist(tc.x), hist(tc.y)); hok != eok {
				t.Errorf("bins, end to end: cut %v, values %v", hok, eok)
			}
		})
	}
}

// TestCutTailsHoldVerdicts: on both judging paths, a canary whose log
// lost every request whose first token took over 1 s (the fleet model's
// canary-drops-slow, which passed about half its runs), or every answer
// that took over 38 s end to end (canary-drops-long-e2e, 70%), is not
// passed and the reason says where its TTFT or end-to-end latency stops;
// an identical canary beside a baseline whose log lost its requests
// whose first token took over 1 s (baseline-drops-slow, failed in every
// run) is not failed and the reason says where the baseline's TTFT stops;
// identical arms carry no such reason.
func TestCutTailsHoldVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		arm    string // the arm named cut, "" for none
		notRun Verdict
		where  string // the reason's cut, a pattern
	}{
		{"canary-drops-slow", "canary", Pass, `TTFT stops at (0\.99\d*|1) s`},
		{"canary-drops-long-e2e", "canary", Pass, `end-to-end latency stops at (37\.9\d*|38(\.0\d*)?) s`},
		{"baseline-drops-slow", "baseline", Fail, `TTFT stops at (0\.99\d*|1(\.00\d*)?) s`},
		{"aa", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := fleetCaseNamed(t, tc.name)
			for seed := uint64(0); seed < 3; seed++ {
				b, c := fleetArms(fc.b(seed), fc.c(seed), seed)
				exact, agg := judgedBothWays(t, b, c, Config{Policy: chat(t), Resamples: 400, Seed: seed + 1})
				for k, r := range []*Report{exact, agg} {
					path := [2]string{"request path", "aggregate"}[k]
					text := strings.Join(r.Reasons, "\n")
					named := strings.Contains(text, "stops at")
					if named != (tc.arm != "") {
						t.Errorf("#%d %s: a cut named %v, want %v: %s", seed, path, named, tc.arm != "", text)
						continue
					}
					if tc.arm == "" {
						continue
					}
					if r.Verdict == tc.notRun {
						t.Errorf("#%d %s: %s with the %s's log cut: %s", seed, path, r.Verdict, tc.arm, text)
					}
					if !regexp.MustCompile(`the ` + tc.arm + `'s ` + tc.where).MatchString(text) {
						t.Errorf("#%d %s: the reason does not put the %s's cut where it is (%s): %s", seed, path, tc.arm, tc.where, text)
					}
				}
			}
		})
	}
}

// TestCutBaselineUnread: the fleet model's baseline-drops-slow with no
// replica names in either log has no offered_load_ratio to tell the cut
// from a regression: the run is not held, and its reason says the
// baseline's TTFT stops where it does and why that was not read, on both
// paths.
func TestCutBaselineUnread(t *testing.T) {
	fc := fleetCaseNamed(t, "baseline-drops-slow")
	fails := 0
	for seed := uint64(0); seed < 2; seed++ {
		b, c := fleetArms(fc.b(seed), fc.c(seed), seed)
		for _, ds := range []*sources.Dataset{b, c} {
			for i := range ds.Requests {
				ds.Requests[i].Replica = ""
			}
		}
		exact, agg := judgedBothWays(t, b, c, Config{Policy: chat(t), Resamples: 400, Seed: seed + 1})
		for k, r := range []*Report{exact, agg} {
			path := [2]string{"request path", "aggregate"}[k]
			text := strings.Join(r.Reasons, "\n")
			if _, ok := metricNamed(r, "offered_load_ratio"); ok {
				t.Fatalf("#%d %s: offered_load_ratio without replica names", seed, path)
			}
			if r.Verdict == Fail && !regexp.MustCompile(`the baseline's TTFT stops at (0\.99\d*|1(\.00\d*)?) s .*the records name no replica`).MatchString(text) {
				t.Errorf("#%d %s: a fail without the unread cut's reason: %s", seed, path, text)
			}
			if r.Verdict == Pass {
				t.Errorf("#%d %s: pass: %s", seed, path, text)
			}
			fails += map[bool]int{true: 1}[r.Verdict == Fail]
		}
	}
	// the identical canary fails beside the cut baseline (10 of 10 on
	// the fleet model): the reason is checked, or the test checks nothing
	if fails == 0 {
		t.Error("no run failed: the unread cut's reason was never checked")
	}
}

// TestHeldByCutTails: a cut canary holds a pass, never a fail — not even
// one held by output_tokens_mean alone with the canary shorter (answers
// capped shorter look like a log that lost the longest ones) — and an
// inconclusive run stays so; the reason is added either way.
func TestHeldByCutTails(t *testing.T) {
	shorter := Metric{Name: "output_tokens_mean", Verdict: Fail, Delta: -0.08}
	longer := Metric{Name: "output_tokens_mean", Verdict: Fail, Delta: 0.08}
	attain := Metric{Name: "slo_attainment", Verdict: Fail, Delta: -0.02}
	trend := Metric{Name: "output_tokens_mean_trend", Verdict: Fail, Delta: 0.01}
	for _, tc := range []struct {
		name    string
		verdict Verdict
		metrics []Metric
		want    Verdict
	}{
		{"pass", Pass, nil, Inconclusive},
		{"fail on attainment", Fail, []Metric{attain}, Fail},
		{"fail on shorter answers", Fail, []Metric{shorter}, Fail},
		{"fail on shorter answers and their trend", Fail, []Metric{shorter, trend}, Fail},
		{"fail on longer answers", Fail, []Metric{longer}, Fail},
		{"inconclusive", Inconclusive, nil, Inconclusive},
	} {
		r := &Report{Verdict: tc.verdict, Metrics: tc.metrics, Reasons: []string{"gates"}}
		holdForCut(r, tailCut{latency: "TTFT", at: 38, above: 700, expected: 690, band: 300, bandOther: 280})
		if r.Verdict != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, r.Verdict, tc.want)
		}
		text := strings.Join(r.Reasons, "\n")
		if !strings.Contains(text, "TTFT stops at 38 s") || len(r.Reasons) != 2 {
			t.Errorf("%s: reasons %q", tc.name, r.Reasons)
		}
		if held := r.Verdict != tc.verdict; held != strings.HasPrefix(r.Reasons[0], "the gates give") {
			t.Errorf("%s: held %v, but the first reason is %q", tc.name, held, r.Reasons[0])
		}
	}
}

// TestCutTailNotARegression: a canary whose slowest 1.5% regressed ×3
// (the fleet model's tail-regress, replicate 7) has 163 end-to-end
// latencies above the baseline's largest, whose values run up to a soft
// wall (answers capped in length) and are not few just below it (34,
// against the canary's 63): read as a cut baseline, a first rule held
// that fail. The regression fails on both paths, no cut named.
func TestCutTailNotARegression(t *testing.T) {
	fc := fleetCaseNamed(t, "tail-regress")
	seed := uint64(1000*len(fc.name) + 7)
	b, c := fleetArms(fc.b(seed), fc.c(seed), seed)
	exact, agg := judgedBothWays(t, b, c, Config{Policy: chat(t), Resamples: 400, Seed: seed + 1})
	for k, r := range []*Report{exact, agg} {
		path := [2]string{"request path", "aggregate"}[k]
		if text := strings.Join(r.Reasons, "\n"); r.Verdict != Fail || strings.Contains(text, "stops at") {
			t.Errorf("%s: %s: %s", path, r.Verdict, text)
		}
	}
}

// TestHeldByCutBaseline: a fail that attainment and the latency gates
// give beside a baseline whose TTFT stops at 1 s while the canary's runs
// on, alike below, is held when the canary's share past the cut (f, 1.1%
// here) agrees with the offered-load ratio (f/(1 − f) within its
// interval), offered_load_ratio's own fail included; it stands when the
// ratio rules that out (a canary that regressed on part of its requests
// is not offered more), when another gate fails too — errors,
// attainment_dip, a trend (the reason added) —, a pass is left alone, and
// a run without offered_load_ratio keeps its fail with the shape said. A canary half of whose requests
// slowed past a baseline's sharp edge reads as the cut's shape but would
// need the ratio at +100%: its fail stands.
func TestHeldByCutBaseline(t *testing.T) {
	const n = 36000
	cut := sortedCounts(logNormalDraws(2, n, 0.4, 0.4, 1))
	full := sortedCounts(logNormalDraws(1, n, 0.4, 0.4, 0))
	f := full.above(cut.top()) / full.total()
	load := func(lo, hi float64) Metric {
		return Metric{Name: "offered_load_ratio", Scale: "relative", Verdict: Pass, Delta: Num((lo + hi) / 2), Interval: [2]Num{Num(lo), Num(hi)}}
	}
	attain := Metric{Name: "slo_attainment", Verdict: Fail}
	tail := Metric{Name: "ttft_p99:chat", Verdict: Fail}
	errs := Metric{Name: "error_rate", Verdict: Fail}
	edge := sortedCounts(make([]float64, 0, 3000))
	half := sortedCounts(make([]float64, 0, 3000))
	for i := range 3000 {
		v := 0.1 + float64(i%400)/1000
		edge = append(edge, v)
		if i%2 == 1 {
			v = 2.5
		}
		half = append(half, v)
	}
	slices.Sort(edge)
	slices.Sort(half)
	for _, tc := range []struct {
		name      string
		verdict   Verdict
		metrics   []Metric
		b, c      sortedCounts
		want      Verdict
		reasonHas bool
	}{
		{"attainment and a class tail fail, the ratio agrees", Fail, []Metric{attain, tail, load(-0.005, f+0.01)}, cut, full, Inconclusive, true},
		{"the ratio rules the cut out", Fail, []Metric{attain, load(-0.02, f/2)}, cut, full, Fail, false},
		{"errors fail too", Fail, []Metric{attain, errs, load(-0.005, f+0.01)}, cut, full, Fail, true},
		{"attainment_dip fails too", Fail, []Metric{attain, {Name: "attainment_dip", Verdict: Fail}, load(-0.005, f+0.01)}, cut, full, Fail, true},
		{"a trend fails too", Fail, []Metric{tail, {Name: "ttft_p99_trend", Verdict: Fail}, load(-0.005, f+0.01)}, cut, full, Fail, true},
		{"the canary offered more beyond the tolerance, as the cut explains", Fail, []Metric{attain, {Name: "offered_load_ratio", Scale: "relative", Verdict: Fail, Delta: Num(f), Interval: [2]Num{Num(f / 2), Num(2 * f)}}}, cut, full, Inconclusive, true},
		{"a pass", Pass, []Metric{load(-0.005, f+0.01)}, cut, full, Pass, false},
		{"no offered_load_ratio: the fail stands, the shape said", Fail, []Metric{attain}, cut, full, Fail, true},
		{"identical arms", Fail, []Metric{attain, load(-0.005, f+0.01)}, full, sortedCounts(logNormalDraws(2, n, 0.4, 0.4, 0)), Fail, false},
		{"identical arms, no offered_load_ratio", Fail, []Metric{attain}, full, sortedCounts(logNormalDraws(2, n, 0.4, 0.4, 0)), Fail, false},
		{"half the canary slowed past a sharp edge", Fail, []Metric{tail, load(-0.02, 0.02)}, edge, half, Fail, false},
	} {
		r := &Report{Verdict: tc.verdict, Metrics: tc.metrics, Reasons: []string{"gates"}}
		heldByCutBaseline(r, tc.c, tc.b, sortedCounts(nil), sortedCounts(nil))
		text := strings.Join(r.Reasons, "\n")
		if r.Verdict != tc.want || strings.Contains(text, "the baseline's TTFT stops at") != tc.reasonHas {
			t.Errorf("%s: %s, want %s; reasons %q", tc.name, r.Verdict, tc.want, r.Reasons)
		}
		if held := r.Verdict != tc.verdict; held && !strings.HasPrefix(r.Reasons[0], "the gates give FAIL, but the baseline's TTFT stops at") {
			t.Errorf("%s: held, but the first reason is %q", tc.name, r.Reasons[0])
		}
		if unread := strings.Contains(text, "the records name no replica"); unread != (tc.reasonHas && len(tc.metrics) == 1) {
			t.Errorf("%s: the unread cut said %v; reasons %q", tc.name, unread, r.Reasons)
		}
	}
	if _, ok := cutTail(edge, half); !ok {
		t.Error("the sharp edge beside the half-slowed canary no longer has a cut's shape: the last row tests nothing")
	}
}
