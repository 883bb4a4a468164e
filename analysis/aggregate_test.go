package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// aggArmData builds a metrics-based arm: per 15 s slice, completions and
// failures, with TTFT and TPOT histograms from lognormal draws. Edges put
// 1 s and 0.08 s on bucket boundaries when onEdge, else between them.
func aggArmData(arm sources.Arm, seed uint64, slices int, tpotMed float64, onEdge bool) *sources.Dataset {
	ttftEdges := []float64{0.1, 0.25, 0.5, 1, 2, 5, math.Inf(1)}
	tpotEdges := []float64{0.01, 0.025, 0.05, 0.08, 0.1, 0.2, math.Inf(1)}
	if !onEdge {
		ttftEdges = []float64{0.1, 0.25, 0.5, 0.75, 1.5, 5, math.Inf(1)}
		tpotEdges = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.2, math.Inf(1)}
	}
	return aggArmWith(arm, seed, slices, 1, tpotMed, ttftEdges, tpotEdges)
}

// aggArmWith is aggArmData with TTFTs ttftScale times the usual (log-normal,
// median 0.3 s, σ 0.5: p99 0.96 s) on the given bucket edges.
func aggArmWith(arm sources.Arm, seed uint64, slices int, ttftScale, tpotMed float64, ttftEdges, tpotEdges []float64) *sources.Dataset {
	rng := rand.New(rand.NewPCG(seed, 3))
	hist := func(edges []float64, draw func() float64, n int) sources.Histogram {
		h := sources.Histogram{Edges: edges, Counts: make([]float64, len(edges))}
		for k := 0; k < n; k++ {
			v := draw()
			for i, e := range edges {
				if v <= e {
					h.Counts[i]++
				}
			}
		}
		return h
	}
	agg := &sources.Aggregate{Profile: "test", Step: 15}
	for i := 0; i < slices; i++ {
		n := 150 + rng.IntN(20)
		b := sources.AggBucket{Start: 1.7e9 + float64(i)*15, End: 1.7e9 + float64(i+1)*15,
			Completed: float64(n), Failed: 1, Canceled: 0, Rejected: math.NaN(), Good: math.NaN(), Retried: math.NaN(), ShortOutputs: math.NaN(),
			OutputTokens: float64(n) * (180 + 10*rng.Float64()),
			Replicas:     2, PrefixHits: math.NaN(), PrefixQueries: math.NaN(), CostPerHour: math.NaN(), GPUUtil: 0.8,
			Running: math.NaN(), Waiting: math.NaN(), KVUsage: math.NaN(), GPUPowerW: math.NaN(), GPUMemBytes: math.NaN()}
		b.TTFT = hist(ttftEdges, func() float64 { return ttftScale * 0.3 * math.Exp(0.5*rng.NormFloat64()) }, n)
		b.TPOT = hist(tpotEdges, func() float64 { return tpotMed * math.Exp(0.2*rng.NormFloat64()) }, n)
		agg.Buckets = append(agg.Buckets, b)
	}
	return &sources.Dataset{Arm: arm, Agg: agg, Clock: sources.ClockEpoch, Location: "server"}
}

func TestJudgeAggregate(t *testing.T) {
	p := chat(t)
	for _, tc := range []struct {
		name        string
		cTPOT       float64
		onEdge      bool
		want        Verdict
		gate        string
		gateVerdict Verdict
	}{
		{"same service, thresholds on edges", 0.04, true, Pass, "slo_attainment", Pass},
		{"TPOT 60% slower fails tpot_p99", 0.064, true, Fail, "tpot_p99", Fail},
		{"thresholds between edges never pass attainment", 0.04, false, Inconclusive, "slo_attainment", Inconclusive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := aggArmData(sources.Baseline, 1, 240, 0.04, tc.onEdge)
			c := aggArmData(sources.Canary, 2, 240, tc.cTPOT, tc.onEdge)
			r, err := Judge(b, c, Config{Policy: p, Resamples: 300})
			if err != nil {
				t.Fatal(err)
			}
			var m Metric
			for _, x := range r.Metrics {
				if x.Name == tc.gate {
					m = x
				}
			}
			if m.Verdict != tc.gateVerdict {
				t.Errorf("%s: %s, want %s (%s)", tc.gate, m.Verdict, tc.gateVerdict, m.Reason)
			}
			if tc.want == Pass && r.Verdict == Fail || tc.want == Fail && r.Verdict != Fail {
				t.Errorf("verdict %s, want %s: %q", r.Verdict, tc.want, r.Reasons)
			}
			if !tc.onEdge && !strings.Contains(strings.Join(r.Warnings, "\n"), "not a bucket edge") {
				t.Errorf("no warning about thresholds between edges: %q", r.Warnings)
			}
		})
	}
}

func TestJudgeAggregateErrors(t *testing.T) {
	p := chat(t)
	b := aggArmData(sources.Baseline, 1, 20, 0.04, true)
	perReq := synth{n: 100, rate: 5, ttftMed: 0.3, tpotMed: 0.04, seed: 1}.dataset(sources.Canary)
	if _, err := Judge(b, perReq, Config{Policy: p}); err == nil || !strings.Contains(err.Error(), "same kind of input") {
		t.Errorf("mixed inputs: %v", err)
	}
	empty := &sources.Dataset{Arm: sources.Canary, Agg: &sources.Aggregate{Step: 15}}
	if _, err := Judge(b, empty, Config{Policy: p}); err == nil || !strings.Contains(err.Error(), "canary: no metrics") {
		t.Errorf("empty arm: %v", err)
	}
}

// TestBoundsDecideInTheirDirection: with SLO thresholds between bucket
// edges a canary whose TPOT is far slower fails attainment at the
// canary-favourable end of the bounds (baseline at its lower bound, canary
// at its upper), and the report shows both ends; an unchanged canary
// cannot pass at the unfavourable end and is inconclusive.
func TestBoundsDecideInTheirDirection(t *testing.T) {
	p := chat(t)
	b := aggArmData(sources.Baseline, 1, 120, 0.04, false)
	for _, tc := range []struct {
		name  string
		cTPOT float64
		want  Verdict
		in    string
	}{
		{"slower canary fails at its favourable end", 0.09, Fail, "fails even at the canary-favourable end"},
		{"unchanged canary is undecided", 0.04, Inconclusive, "undecided within the histogram bounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := aggArmData(sources.Canary, 2, 120, tc.cTPOT, false)
			r, err := Judge(b, c, Config{Policy: p, Resamples: 300})
			if err != nil {
				t.Fatal(err)
			}
			m := r.Metrics[0]
			if m.Name != "slo_attainment" || m.Verdict != tc.want || !strings.Contains(m.Reason, tc.in) {
				t.Fatalf("%s: %s, want %s with %q: %s", m.Name, m.Verdict, tc.want, tc.in, m.Reason)
			}
			if m.Bounds == nil {
				t.Fatal("no bounds in the report")
			}
			u, f := m.Bounds.Unfavourable, m.Bounds.Favourable
			if !(f.Baseline < u.Baseline && f.Canary > u.Canary && f.Delta > u.Delta) {
				t.Errorf("ends in the wrong direction: unfavourable %+v, favourable %+v", u, f)
			}
			if m.Interval[0] > u.Interval[0] || m.Interval[1] < f.Interval[1] {
				t.Errorf("interval %v is not the hull of %v and %v", m.Interval, u.Interval, f.Interval)
			}
			if tc.want == Fail && (m.Baseline != f.Baseline || m.Canary != f.Canary) {
				t.Errorf("a fail shows the favourable end's figures: %v/%v vs %+v", m.Baseline, m.Canary, f)
			}
		})
	}
}

// TestAggregateClassRows: with a class label on the metrics the report's
// classes[] holds each arm's own per-class figures: offered and share from
// the counters, attainment between its bounds, p99s with their bucket's
// edges; the canary's rows are its own, not reweighted to the baseline mix.
func TestAggregateClassRows(t *testing.T) {
	p := chat(t)
	labelled := func(arm sources.Arm, seed uint64, chatTPOT, longTPOT float64, longSlices int) *sources.Dataset {
		a := aggArmData(arm, seed, 120, chatTPOT, true)
		l := aggArmData(arm, seed+10, 120, longTPOT, true)
		var bks []sources.AggBucket
		for i := range a.Agg.Buckets {
			x := a.Agg.Buckets[i]
			x.Class = "chat"
			bks = append(bks, x)
			if i < longSlices {
				y := l.Agg.Buckets[i]
				y.Class = "long"
				bks = append(bks, y)
			}
		}
		a.Agg.Buckets = bks
		return a
	}
	b := labelled(sources.Baseline, 1, 0.04, 0.04, 120)
	c := labelled(sources.Canary, 2, 0.04, 0.07, 60)
	r, err := Judge(b, c, Config{Policy: p, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	// chat declares policy classes, so rows are the default class (the SLO
	// metrics are judged with) split by label, as on the request path
	if len(r.Classes) != 2 || r.Classes[0].Label != "chat" || r.Classes[1].Label != "long" || r.Classes[0].Class != "default" {
		t.Fatalf("classes: %+v", r.Classes)
	}
	offered := func(ds *sources.Dataset, class string) (n, total float64) {
		for _, bk := range ds.Agg.Buckets {
			o := bk.Completed + bk.Failed + bk.Canceled
			total += o
			if bk.Class == class {
				n += o
			}
		}
		return n, total
	}
	for _, row := range r.Classes {
		for _, x := range []struct {
			ds *sources.Dataset
			a  ClassArm
		}{{b, row.Baseline}, {c, row.Canary}} {
			n, total := offered(x.ds, row.Label)
			if x.a.Offered != int64(n) || math.Abs(float64(x.a.Share)-n/total) > 1e-12 {
				t.Errorf("%s %s: offered %d share %v, want %v %v", x.ds.Arm, row.Class, x.a.Offered, x.a.Share, n, n/total)
			}
			ab := x.a.SLOAttainmentBounds
			if ab == nil || !(ab[0] <= ab[1]) || x.a.SLOAttainment != ab[0] || !(ab[0] > 0.5) || !(ab[1] <= 1) {
				t.Errorf("%s %s: attainment %v bounds %v", x.ds.Arm, row.Class, x.a.SLOAttainment, ab)
			}
			for _, q := range []struct {
				v  Num
				b  *[2]Num
				es []float64
			}{{x.a.TTFTP99, x.a.TTFTP99Bounds, []float64{0, 0.1, 0.25, 0.5, 1, 2, 5}}, {x.a.TPOTP99, x.a.TPOTP99Bounds, []float64{0, 0.01, 0.025, 0.05, 0.08, 0.1, 0.2}}} {
				if q.b == nil || !(q.b[0] <= q.v && q.v <= q.b[1]) {
					t.Errorf("%s %s: p99 %v outside its bucket %v", x.ds.Arm, row.Class, q.v, q.b)
					continue
				}
				k := slices.Index(q.es, float64(q.b[0]))
				if k < 0 || k+1 >= len(q.es) || q.es[k+1] != float64(q.b[1]) {
					t.Errorf("%s %s: p99 bounds %v are not adjacent edges", x.ds.Arm, row.Class, *q.b)
				}
			}
		}
	}
	// the canary's long class (TPOT median 70 ms against 40 ms) shows its own
	// slower tail and its own share (60 of 120 slices), not the reweighted one
	long := r.Classes[1]
	if !(long.Canary.TPOTP99 > long.Baseline.TPOTP99) || !(long.Canary.Share < long.Baseline.Share) {
		t.Errorf("long: TPOT p99 %v / %v, share %v / %v", long.Baseline.TPOTP99, long.Canary.TPOTP99, long.Baseline.Share, long.Canary.Share)
	}
	// without a class label there are no rows
	r, err = Judge(aggArmData(sources.Baseline, 1, 120, 0.04, true), aggArmData(sources.Canary, 2, 120, 0.04, true), Config{Policy: p, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Classes) != 0 {
		t.Errorf("unlabelled metrics gave class rows: %+v", r.Classes)
	}
}

// TestExceedanceForms: a tail gate whose p99 its buckets cannot place is
// judged as a share of requests above a bucket edge.
//   - At the upper edge: with the TPOT p99 inside a bucket (10, 25] ms that
//     places the ratio only within [−60%, +150%], and more than half the
//     baseline above the lower edge, the share above the upper edge may
//     rise by the margin the gate gives the 1% tail (0.1 pp): an A/A
//     passes, a canary whose TPOT is 38% slower fails.
//   - At the lower edge: with the TTFT p99 (0.96 s) inside vLLM's (0.75, 1]
//     s bucket the share above 0.75 s (3.4%) may rise to the baseline's
//     share above 0.75/1.1 s (5.0%, +50%, in the population): what a
//     canary 10% slower in every request would have. A pass is judged at
//     +43% (a power law between 0.5 and 0.75 s), a fail at +97% (linear
//     there). A canary 5% slower (share +23%, which a 10% margin on the
//     share itself failed) passes, one 25% slower (share +150%) fails.
//
// The reason names the edge, where the allowed share was read and what the
// bucket costs.
func TestExceedanceForms(t *testing.T) {
	p := chat(t)
	ttft := []float64{0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, math.Inf(1)}
	tpot := []float64{0.01, 0.025, 0.05, 0.08, 0.1, 0.2, math.Inf(1)}
	upper := func(m Metric) bool {
		return m.Scale == "absolute" && float64(m.Margin) == 0.001 && m.Unit == "fraction"
	}
	// the allowed excess: 5.03% over 3.36% in the population, 4.80% as
	// the power law reads it (cautious)
	lower := func(m Metric) bool {
		return m.Scale == "relative" && float64(m.Margin) > 0.35 && float64(m.Margin) < 0.50 && m.Bounds != nil
	}
	upperWhy := []string{"cannot be resolved by the buckets", "above the 0.025 s bucket edge", "at most 0.1 pp", "below the buckets' resolution"}
	lowerWhy := []string{"above the 0.75 s bucket edge", "the baseline's share above 0.6818 s", "slower in every request",
		"interpolated between the edges 0.5 and 0.75 s as a power-law tail", "interpolated linearly between the edges 0.5 and 0.75 s"}
	for _, tc := range []struct {
		name        string
		gate        string
		ttft, tpot  float64 // the canary's TTFT scale and TPOT median (the baseline's: 1, tpotB)
		tpotB       float64
		want        Verdict
		why         []string
		marginRight func(Metric) bool
	}{
		{"upper edge: A/A passes", "tpot_p99", 1, 0.013, 0.013, Pass, append(upperWhy, "[-60.0%, +150.0%]"), upper},
		{"upper edge: 38% slower fails", "tpot_p99", 1, 0.018, 0.013, Fail, upperWhy, upper},
		{"lower edge: A/A passes", "ttft_p99", 1, 0.04, 0.04, Pass, lowerWhy, lower},
		{"lower edge: 5% slower passes", "ttft_p99", 1.05, 0.04, 0.04, Pass, lowerWhy, lower},
		{"lower edge: 25% slower fails", "ttft_p99", 1.25, 0.04, 0.04, Fail, lowerWhy, lower},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := aggArmWith(sources.Baseline, 1, 240, 1, tc.tpotB, ttft, tpot)
			c := aggArmWith(sources.Canary, 2, 240, tc.ttft, tc.tpot, ttft, tpot)
			if tc.gate == "tpot_p99" {
				b, c = aggArmData(sources.Baseline, 1, 240, tc.tpotB, true), aggArmData(sources.Canary, 2, 240, tc.tpot, true)
			}
			r, err := Judge(b, c, Config{Policy: p, Resamples: 300})
			if err != nil {
				t.Fatal(err)
			}
			m := metric(t, r, tc.gate)
			if m.Verdict != tc.want {
				t.Fatalf("%s %s, want %s: %s", tc.gate, m.Verdict, tc.want, m.Reason)
			}
			for _, want := range tc.why {
				if !strings.Contains(m.Reason, want) {
					t.Errorf("reason lacks %q: %s", want, m.Reason)
				}
			}
			if !tc.marginRight(m) {
				t.Errorf("exceedance gate scale %s margin %v unit %s bounds %v", m.Scale, m.Margin, m.Unit, m.Bounds)
			}
		})
	}
}

// TestScaledShare: the allowed share at y = edge/(1 + m) is exact on an
// edge (a zero margin's too); between edges it is read log-log (cautious) or linearly (lenient),
// below the first edge as the share above it (cautious) or linearly from
// all requests at 0 (lenient); its slice numerators sum to the share times
// the total.
func TestScaledShare(t *testing.T) {
	edges := []float64{0.5, 0.75, 1, math.Inf(1)}
	// two slices: counts at or below each edge (cumulative)
	h := []sources.Histogram{
		{Edges: edges, Counts: []float64{60, 90, 97, 100}},
		{Edges: edges, Counts: []float64{50, 80, 95, 100}},
	}
	th := newTailHists(h, h)
	for _, tc := range []struct {
		name     string
		k        int
		m        float64
		lenient  bool
		share, w float64
	}{
		// above 0.75: 30 of 200; y = 0.75 exactly
		{"on an edge", 2, 1.0/0.75 - 1, false, 30.0 / 200, 1},
		{"on an edge, lenient", 2, 1.0/0.75 - 1, true, 30.0 / 200, 1},
		// a zero margin: the share above the edge itself, 3 + 5 of 200
		{"a zero margin", 2, 0, false, 8.0 / 200, 1},
		{"a zero margin, lenient", 2, 0, true, 8.0 / 200, 1},
		// y = 0.625 between 0.5 (share 90/200) and 0.75 (30/200):
		// w = ln(0.75/0.625)/ln(0.75/0.5) = 0.449660
		{"between edges", 1, 0.2, false, math.Exp(0.449660*math.Log(90.0/200) + 0.550340*math.Log(30.0/200)), 0.449660},
		// linearly: w = 0.5, (90 + 30)/2 of 200
		{"between edges, lenient", 1, 0.2, true, 60.0 / 200, 0.5},
		// y = 0.25 below the first edge: the share above 0.5
		{"below the first edge", 0, 1, false, 90.0 / 200, 0},
		// linearly from all at 0: w = 0.5, (200 + 90)/2 of 200
		{"below the first edge, lenient", 0, 1, true, 145.0 / 200, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, at, ok := th.scaledShare(th.b, tc.k, tc.m, tc.lenient)
			if !ok {
				t.Fatal("not ok")
			}
			var num, den float64
			for i := range r.Num {
				num += r.Num[i]
				den += r.Den[i]
			}
			if den != 200 || math.Abs(num/den-tc.share) > 1e-6 || math.Abs(at.w-tc.w) > 1e-6 {
				t.Errorf("share %v over %v (w %v), want %v (w %v)", num/den, den, at.w, tc.share, tc.w)
			}
		})
	}
	if _, _, ok := th.scaledShare(th.b, 1, -0.1, false); ok {
		t.Error("a negative margin gave an allowed share")
	}
}
