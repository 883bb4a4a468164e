package histo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestQuantileSortedIsQuantile: on histograms with strictly increasing
// edges ending with +Inf, QuantileSorted and (for non-decreasing counts)
// QuantileMonotone give Quantile's value bit for bit, at every rank kind
// (first bucket, interior, +Inf bucket, empty histogram, out-of-range q).
func TestQuantileSortedIsQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	qs := []float64{math.NaN(), -0.1, 0, 1e-9, 0.01, 0.5, 0.9, 0.99, 0.999, 1, 1.5}
	checked := 0
	for trial := range 400 {
		n := 2 + rng.IntN(40)
		edges := make([]float64, n)
		x := -0.5 + rng.Float64()
		if trial%3 == 0 {
			x = 0
		}
		for i := range n - 1 {
			edges[i] = x
			x += 1e-3 + rng.Float64()
		}
		edges[n-1] = math.Inf(1)
		counts := make([]float64, n)
		c := 0.0
		for i := range counts {
			switch {
			case trial%5 == 0:
				// fractional weights, not always monotone
				c = math.Max(0, c+rng.Float64()*3-0.5)
			case trial%7 == 0:
				// nothing observed
			default:
				c += float64(rng.IntN(4))
			}
			counts[i] = c
		}
		if trial%11 == 0 {
			counts[n-1] = counts[n-2] + 5 // mass in the +Inf bucket
		}
		h := sources.Histogram{Edges: edges, Counts: counts}
		if !Increasing(edges) {
			t.Fatalf("trial %d: edges %v not increasing", trial, edges)
		}
		monotone := slices.IsSorted(counts)
		for _, q := range qs {
			want := Quantile(q, h)
			got := QuantileSorted(q, edges, slices.Clone(counts))
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("trial %d q=%v: QuantileSorted %v, Quantile %v (counts %v)", trial, q, got, want, counts)
			}
			if monotone {
				got := QuantileMonotone(q, edges, func(i int) float64 { return counts[i] })
				if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("trial %d q=%v: QuantileMonotone %v, Quantile %v", trial, q, got, want)
				}
			}
			checked++
		}
	}
	if checked < 4000 {
		t.Fatalf("only %d cases checked", checked)
	}
}

func TestIncreasing(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		edges []float64
		want  bool
	}{
		{[]float64{0, 1, inf}, true},
		{[]float64{1, inf}, true},
		{[]float64{inf}, false},
		{nil, false},
		{[]float64{0, 1, 2}, false},
		{[]float64{0, 1, 1, inf}, false},
		{[]float64{1, 0, inf}, false},
		{[]float64{0, math.NaN(), inf}, false},
	} {
		if got := Increasing(tc.edges); got != tc.want {
			t.Errorf("Increasing(%v) = %v, want %v", tc.edges, got, tc.want)
		}
	}
}

// TestSumIsRepeatedMerge: Sum gives, addition after addition, the edges,
// counts and kind that folding Merge over the same histograms gives, for
// log-linear sparse histograms (whole and fractional counts), sparse ones
// on coarser nested grids (edges dropped), classic ones, mixtures of the
// two kinds and empty ones.
func TestSumIsRepeatedMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	inf := math.Inf(1)
	sparse := func(step, weight float64) sources.Histogram {
		h := sources.Histogram{Sparse: true}
		c := 0.0
		for e := step * float64(1+rng.IntN(5)); e < 40; e += step * float64(1+rng.IntN(3)) {
			h.Edges = append(h.Edges, e)
			h.Counts = append(h.Counts, c)
			c += weight * float64(rng.IntN(4))
			h.Edges = append(h.Edges, e+step)
			h.Counts = append(h.Counts, c)
			e += step
		}
		h.Edges = append(h.Edges, inf)
		h.Counts = append(h.Counts, c)
		return h
	}
	classic := func() sources.Histogram {
		a := float64(rng.IntN(5))
		edges := []float64{0.1, 0.5, 1, inf}
		if rng.IntN(3) == 0 {
			edges = []float64{0.1, 1, inf}
		}
		counts := make([]float64, len(edges))
		for i := range counts {
			a += float64(rng.IntN(3))
			counts[i] = a
		}
		return sources.Histogram{Edges: edges, Counts: counts}
	}
	same := func(a, b sources.Histogram) bool {
		if a.Sparse != b.Sparse || len(a.Edges) != len(b.Edges) || len(a.Counts) != len(b.Counts) {
			return false
		}
		for i := range a.Edges {
			if math.Float64bits(a.Edges[i]) != math.Float64bits(b.Edges[i]) {
				return false
			}
		}
		for i := range a.Counts {
			if math.Float64bits(a.Counts[i]) != math.Float64bits(b.Counts[i]) {
				return false
			}
		}
		return true
	}
	drops := 0
	var s Sum
	for trial := range 300 {
		s.Reset()
		var ref sources.Histogram
		for k := range 1 + rng.IntN(12) {
			var h sources.Histogram
			switch r := rng.IntN(10); {
			case r == 0:
				// empty
			case r == 1 && trial%4 == 0:
				h = classic()
			case r == 2:
				h = sparse(2, 1) // a coarser grid: edges of the finer one fall inside its bins
			case trial%3 == 0:
				h = sparse(1, 1.0371)
			default:
				h = sparse(1, 1)
			}
			s.Add(h)
			ref0 := ref
			switch {
			case len(h.Edges) == 0:
			case len(ref.Edges) == 0:
				ref = sources.Histogram{Edges: slices.Clone(h.Edges), Counts: slices.Clone(h.Counts), Sparse: h.Sparse}
			case ref.Sparse && h.Sparse:
				var d bool
				ref, d = mergeRef(ref, h)
				if d {
					drops++
				}
				if m, d2 := merge2(ref0, h); !same(m, ref) || d2 != d {
					t.Fatalf("trial %d, addition %d: merge2 %+v (dropped %v), want %+v (dropped %v)", trial, k, m, d2, ref, d)
				}
			default:
				ref, _ = Merge(ref, h)
			}
			if got := s.Histogram(); !same(got, ref) {
				t.Fatalf("trial %d, addition %d: Sum %+v, Merge %+v", trial, k, got, ref)
			}
		}
	}
	if drops == 0 {
		t.Fatal("no merge dropped an edge: the nested-grid case is not exercised")
	}
}

// mergeRef is the pairwise merge of two sparse histograms as it was
// first written (one edge at a time), the reference merge2 must match.
func mergeRef(a, b sources.Histogram) (out sources.Histogram, dropped bool) {
	out = sources.Histogram{Sparse: true}
	at := func(h sources.Histogram, k int, x float64) (float64, bool) {
		if k < len(h.Edges) && h.Edges[k] == x {
			return h.Counts[k], true
		}
		below := 0.0
		if k > 0 {
			below = h.Counts[k-1]
		}
		if k < len(h.Edges) && h.Counts[k] > below {
			return 0, false
		}
		return below, true
	}
	i, j := 0, 0
	for i < len(a.Edges) || j < len(b.Edges) {
		var x float64
		switch {
		case j >= len(b.Edges) || (i < len(a.Edges) && a.Edges[i] <= b.Edges[j]):
			x = a.Edges[i]
		default:
			x = b.Edges[j]
		}
		ca, oka := at(a, i, x)
		cb, okb := at(b, j, x)
		if i < len(a.Edges) && a.Edges[i] == x {
			i++
		}
		if j < len(b.Edges) && b.Edges[j] == x {
			j++
		}
		if !oka || !okb {
			dropped = true
			continue
		}
		out.Edges = append(out.Edges, x)
		out.Counts = append(out.Counts, ca+cb)
	}
	return out, dropped
}
