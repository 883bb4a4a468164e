package histo

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

var inf = math.Inf(1)

// h1: 100 observations; 10 ≤ 0.05, 40 ≤ 0.1, 70 ≤ 0.25, 90 ≤ 0.5, 98 ≤ 1.
var h1 = sources.Histogram{
	Edges:  []float64{0.05, 0.1, 0.25, 0.5, 1, inf},
	Counts: []float64{10, 40, 70, 90, 98, 100},
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-12
}

func TestFraction(t *testing.T) {
	tests := []struct {
		name         string
		h            sources.Histogram
		t            float64
		lo, hi       float64
		exact        bool
		below, above float64
	}{
		{"edge 1 s is exact", h1, 1.0, 0.98, 0.98, true, 1, 1},
		{"edge parsed from a decimal string", h1, 0.1 + 1e-17, 0.4, 0.4, true, 0.1, 0.1},
		{"0.08 between 0.05 and 0.1", h1, 0.08, 0.1, 0.4, false, 0.05, 0.1},
		{"below the first edge", h1, 0.01, 0, 0.1, false, 0, 0.05},
		{"inside the +Inf bucket", h1, 5, 0.98, 1, false, 1, inf},
		{"empty histogram", sources.Histogram{Edges: []float64{1, inf}, Counts: []float64{0, 0}}, 1, math.NaN(), math.NaN(), false, math.NaN(), math.NaN()},
		{"no histogram", sources.Histogram{}, 1, math.NaN(), math.NaN(), false, math.NaN(), math.NaN()},
		{"non-monotone counts are repaired", sources.Histogram{Edges: []float64{0.1, 0.2, inf}, Counts: []float64{5, 4.9, 10}}, 0.2, 0.5, 0.5, true, 0.2, 0.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Fraction(tt.h, tt.t)
			if !near(a.Lo, tt.lo) || !near(a.Hi, tt.hi) || a.Exact != tt.exact || !near(a.Below, tt.below) || !near(a.Above, tt.above) {
				t.Errorf("Fraction(%g) = %+v, want [%g, %g] exact=%v edges (%g, %g)", tt.t, a, tt.lo, tt.hi, tt.exact, tt.below, tt.above)
			}
		})
	}
}

func TestFrechet(t *testing.T) {
	tests := []struct{ a, b, lo, hi float64 }{
		{0.97, 0.95, 0.92, 0.95}, // statistics.md §3.14 frechet_joint_slo
		{1, 0.9, 0.9, 0.9},       // a certain marginal makes the joint exact
		{0.5, 0.4, 0, 0.4},
		{0, 1, 0, 0},
		{1.2, 0.5, math.NaN(), math.NaN()},
		{math.NaN(), 0.5, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		lo, hi := Frechet(tt.a, tt.b)
		if !near(lo, tt.lo) || !near(hi, tt.hi) {
			t.Errorf("Frechet(%g, %g) = [%g, %g], want [%g, %g]", tt.a, tt.b, lo, hi, tt.lo, tt.hi)
		}
	}
	lo, hi := FrechetInterval(0.98, 0.98, 0.9, 0.95)
	if !near(lo, 0.88) || !near(hi, 0.95) {
		t.Errorf("FrechetInterval = [%g, %g], want [0.88, 0.95]", lo, hi)
	}
}

func TestQuantile(t *testing.T) {
	// integration.md §1.6: every request at 0.08 s in buckets 0.01 … 10
	flat := sources.Histogram{
		Edges:  []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, inf},
		Counts: []float64{0, 0, 0, 60, 60, 60, 60, 60, 60, 60, 60},
	}
	tests := []struct {
		name string
		q    float64
		h    sources.Histogram
		want float64
	}{
		{"median: rank 50 in (0.1, 0.25], 10 of 30", 0.5, h1, 0.1 + 0.15*10.0/30},
		{"p05 in the first bucket, which starts at 0", 0.05, h1, 0.025},
		{"p90 exactly at an edge", 0.9, h1, 0.5},
		{"p99 in the +Inf bucket returns the last finite edge", 0.99, h1, 1},
		{"p0", 0, h1, 0},
		{"p100 in the +Inf bucket", 1, h1, 1},
		{"p99 of 0.08 s in (0.05, 0.1]", 0.99, flat, 0.0995},
		{"q < 0", -0.1, h1, math.Inf(-1)},
		{"q > 1", 1.1, h1, inf},
		{"q NaN", math.NaN(), h1, math.NaN()},
		{"no +Inf edge", 0.5, sources.Histogram{Edges: []float64{1, 2}, Counts: []float64{1, 2}}, math.NaN()},
		{"no observations", 0.5, sources.Histogram{Edges: []float64{1, inf}, Counts: []float64{0, 0}}, math.NaN()},
		{"one bucket", 0.5, sources.Histogram{Edges: []float64{inf}, Counts: []float64{3}}, math.NaN()},
		{"negative first edge", 0.1, sources.Histogram{Edges: []float64{-1, 0, inf}, Counts: []float64{5, 10, 10}}, -1},
		{"unsorted edges are sorted", 0.5, sources.Histogram{Edges: []float64{inf, 1, 2}, Counts: []float64{4, 2, 4}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quantile(tt.q, tt.h); !near(got, tt.want) && math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Quantile(%g) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	a := sources.Histogram{Edges: []float64{0.1, 0.5, 1, inf}, Counts: []float64{1, 2, 3, 4}}
	b := sources.Histogram{Edges: []float64{0.1, 1, inf}, Counts: []float64{10, 20, 30}}
	m, dropped := Merge(a, b)
	if !dropped || len(m.Edges) != 3 || m.Counts[0] != 11 || m.Counts[1] != 23 || m.Counts[2] != 34 {
		t.Errorf("Merge = %+v dropped=%v", m, dropped)
	}
	m, dropped = Merge(a, a)
	if dropped || m.Total() != 8 {
		t.Errorf("Merge same = %+v dropped=%v", m, dropped)
	}
}

func TestGoodBounds(t *testing.T) {
	nan := math.NaN()
	tpot := sources.Histogram{Edges: []float64{0.05, 0.075, 0.1, inf}, Counts: []float64{50, 90, 95, 100}}
	agg := &sources.Aggregate{Buckets: []sources.AggBucket{
		{Start: 0, End: 10, Completed: 100, Good: nan, TTFT: h1, TPOT: tpot},
		{Start: 10, End: 20, Completed: 50, Good: 42, TTFT: h1, TPOT: tpot},
		{Start: 20, End: 30, Completed: 0, Good: nan},
		{Start: 30, End: 40, Completed: 10, Good: nan, TPOT: tpot},
		{Start: 40, End: 50, Completed: nan, Good: nan},
	}}
	tests := []struct {
		name      string
		slo       SLO
		lo, hi    []float64
		tLo, tHi  float64
		exact     bool
		notesWith []string
	}{
		{"TTFT and TPOT: Fréchet of [0.98] and [0.90, 0.95]", SLO{TTFT: 1, TPOT: 0.08},
			[]float64{88, 42, 0, 0, nan}, []float64{95, 42, 0, 9.5, nan}, 130, 137 + 9.5, false,
			[]string{"TPOT threshold 0.08 s is not a bucket edge (between 0.075 and 0.1)", "Fréchet", "TTFT histogram missing"}},
		{"TTFT only, on an edge", SLO{TTFT: 1, TPOT: nan},
			[]float64{98, 42, 0, 0, nan}, []float64{98, 42, 0, 10, nan}, 140, 150, false,
			[]string{"TTFT histogram missing"}},
		{"TPOT only, on an edge", SLO{TTFT: nan, TPOT: 0.1},
			[]float64{95, 42, 0, 9.5, nan}, []float64{95, 42, 0, 9.5, nan}, 146.5, 146.5, true, nil},
		{"no latency criteria: good = completed", SLO{TTFT: nan, TPOT: nan},
			[]float64{100, 42, 0, 10, nan}, []float64{100, 42, 0, 10, nan}, 152, 152, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := GoodBounds(agg, tt.slo)
			for i, bb := range b.Buckets {
				if !near(bb.Lo, tt.lo[i]) || !near(bb.Hi, tt.hi[i]) {
					t.Errorf("bucket %d: [%g, %g], want [%g, %g]", i, bb.Lo, bb.Hi, tt.lo[i], tt.hi[i])
				}
			}
			// the unknown bucket is left out of the totals, counted and noted
			if !near(b.Lo, tt.tLo) || !near(b.Hi, tt.tHi) || b.Exact != tt.exact || b.Unknown != 1 || b.Completed != 160 {
				t.Errorf("totals = [%g, %g] exact=%v unknown=%d completed=%g, want [%g, %g] exact=%v unknown=1 completed=160",
					b.Lo, b.Hi, b.Exact, b.Unknown, b.Completed, tt.tLo, tt.tHi, tt.exact)
			}
			known := GoodBounds(&sources.Aggregate{Buckets: agg.Buckets[:4]}, tt.slo)
			if !near(known.Lo, tt.tLo) || !near(known.Hi, tt.tHi) || known.Unknown != 0 {
				t.Errorf("known-only totals = [%g, %g] unknown=%d", known.Lo, known.Hi, known.Unknown)
			}
			all := strings.Join(append(b.Notes, ""), "\n")
			if !strings.Contains(all, "1 of 5 buckets have no request counts") {
				t.Errorf("unknown bucket not noted: %q", b.Notes)
			}
			for _, w := range tt.notesWith {
				if !strings.Contains(all, w) {
					t.Errorf("notes %q lack %q", b.Notes, w)
				}
			}
		})
	}
}

func TestEdgeNotes(t *testing.T) {
	agg := &sources.Aggregate{Buckets: []sources.AggBucket{{TTFT: h1, TPOT: h1}, {TTFT: h1, TPOT: h1}}}
	n := EdgeNotes(agg, SLO{TTFT: 1, TPOT: 0.08})
	if len(n) != 1 || !strings.Contains(n[0], "TPOT threshold 0.08 s") {
		t.Errorf("EdgeNotes = %q", n)
	}
}

func TestQuantileBounds(t *testing.T) {
	h := sources.Histogram{Edges: []float64{0.01, 0.025, 0.05, math.Inf(1)}, Counts: []float64{10, 90, 99, 100}}
	for _, tc := range []struct {
		q, lo, hi float64
	}{
		{0.05, 0, 0.01},     // rank 5 in the first bucket
		{0.5, 0.01, 0.025},  // rank 50
		{0.9, 0.01, 0.025},  // rank 90: exactly the edge count
		{0.95, 0.025, 0.05}, // rank 95
		{0.995, 0.05, math.Inf(1)},
	} {
		lo, hi := QuantileBounds(tc.q, h)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("q=%v: [%v, %v], want [%v, %v]", tc.q, lo, hi, tc.lo, tc.hi)
		}
		if v := Quantile(tc.q, h); !(v >= lo && v <= hi) {
			t.Errorf("q=%v: Quantile %v outside its bounds [%v, %v]", tc.q, v, lo, hi)
		}
	}
	if lo, hi := QuantileBounds(0.5, sources.Histogram{}); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Error("empty histogram should give NaN bounds")
	}
}

// TestNativeShapedHistogram: a native histogram decodes with an edge at
// both ends of every non-empty bucket, so empty buckets leave gaps whose
// ends hold equal counts. A threshold in such a gap gives an exact
// fraction (no edge note), and a quantile is placed within its own bucket,
// not from the previous non-empty bucket's edge.
func TestNativeShapedHistogram(t *testing.T) {
	// (0.4, 0.5]: 30, (0.5, 0.6]: 30, nothing in (0.6, 0.8], (0.8, 0.9]: 10
	h := sources.Histogram{Edges: []float64{0.4, 0.5, 0.6, 0.8, 0.9, inf}, Counts: []float64{0, 30, 60, 60, 70, 70}}
	a := Fraction(h, 0.7)
	if a.Lo != 60.0/70 || a.Hi != a.Lo {
		t.Errorf("Fraction in an empty gap = %+v, want exactly 6/7", a)
	}
	if lo, hi := QuantileBounds(0.95, h); lo != 0.8 || hi != 0.9 {
		t.Errorf("QuantileBounds(0.95) = (%g, %g], want (0.8, 0.9]", lo, hi)
	}
	if q := Quantile(0.95, h); !near(q, 0.865) {
		t.Errorf("Quantile(0.95) = %g, want 0.865", q)
	}
	all := sources.Histogram{Edges: []float64{0.05, inf}, Counts: []float64{70, 70}}
	agg := &sources.Aggregate{Buckets: []sources.AggBucket{{Completed: 70, Good: math.NaN(), TTFT: h, TPOT: all}}}
	b := GoodBounds(agg, SLO{TTFT: 0.7, TPOT: 0.08})
	if b.Lo != 60 || b.Hi != 60 || !b.Exact || len(b.Notes) != 0 {
		t.Errorf("GoodBounds = [%g, %g] exact %v notes %q; want exactly 60, no notes", b.Lo, b.Hi, b.Exact, b.Notes)
	}
	// a certain marginal leaves the other exact, bit for bit
	if lo, hi := Frechet(0.1+0.2, 1); lo != 0.1+0.2 || hi != lo {
		t.Errorf("Frechet(0.3, 1) = [%v, %v]", lo, hi)
	}
}
