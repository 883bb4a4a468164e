package histo

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestQuantileSortedIsQuantile: on histograms with strictly increasing
// edges ending with +Inf, Quantile, QuantileSorted and (for non-decreasing
// counts) QuantileMonotone give the value Quantile gave when it sorted and
// coalesced every histogram (quantileRef) bit for bit, at every rank kind
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
		if trial%13 == 0 {
			counts[rng.IntN(n)] = math.NaN()
		}
		if trial%17 == 0 {
			counts[0] = math.Copysign(0, -1)
		}
		h := sources.Histogram{Edges: edges, Counts: counts}
		if !Increasing(edges) {
			t.Fatalf("trial %d: edges %v not increasing", trial, edges)
		}
		monotone := slices.IsSorted(counts)
		for _, q := range qs {
			want := quantileRef(q, h)
			if got := Quantile(q, h); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("trial %d q=%v: Quantile %v, the sorting Quantile %v (counts %v)", trial, q, got, want, counts)
			}
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

// quantileRef is Quantile as first written, sorting and coalescing every
// histogram: the reference its shortcuts must match.
func quantileRef(q float64, h sources.Histogram) float64 {
	if math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(1)
	}
	n := len(h.Edges)
	if n == 0 || len(h.Counts) != n {
		return math.NaN()
	}
	type bkt struct{ ub, c float64 }
	bs := make([]bkt, n)
	for i := range h.Edges {
		bs[i] = bkt{h.Edges[i], h.Counts[i]}
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].ub < bs[j].ub })
	if !math.IsInf(bs[n-1].ub, 1) {
		return math.NaN()
	}
	co := bs[:0:0]
	for _, b := range bs {
		if len(co) > 0 && co[len(co)-1].ub == b.ub {
			co[len(co)-1].c += b.c
			continue
		}
		co = append(co, b)
	}
	bs = co
	for i := 1; i < len(bs); i++ {
		if bs[i].c < bs[i-1].c {
			bs[i].c = bs[i-1].c
		}
	}
	if len(bs) < 2 {
		return math.NaN()
	}
	obs := bs[len(bs)-1].c
	if obs == 0 {
		return math.NaN()
	}
	rank := q * obs
	b := sort.Search(len(bs)-1, func(i int) bool { return bs[i].c >= rank })
	if b == len(bs)-1 {
		return bs[len(bs)-2].ub
	}
	if b == 0 && bs[0].ub <= 0 {
		return bs[0].ub
	}
	start, end, count := 0.0, bs[b].ub, bs[b].c
	if b > 0 {
		start = bs[b-1].ub
		count -= bs[b-1].c
		rank -= bs[b-1].c
	}
	return start + (end-start)*(rank/count)
}

// TestSumLongSequences: long sums of sparse histograms on one grid — the
// exact aggregate's shape — give the reference merge's edges and counts
// bit for bit, with now and then a histogram on a coarser grid (an edge
// dropped), with fractional, negative-zero, decreasing or huge counts, a
// first count above zero (a zero bin), or a classic histogram.
func TestSumLongSequences(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	inf := math.Inf(1)
	onGrid := func(step int, scale float64) sources.Histogram {
		h := sources.Histogram{Sparse: true}
		c := 0.0
		if rng.IntN(4) == 0 {
			// a zero bin: the edge 0 holds a count
			c = float64(1 + rng.IntN(3))
			h.Edges = append(h.Edges, 0)
			h.Counts = append(h.Counts, c*scale)
		}
		lo := 1 + rng.IntN(150)
		hi := lo + rng.IntN(60)
		last := -1
		for k := lo; k <= hi; k += step * (1 + rng.IntN(3)) {
			if k-step != last {
				h.Edges = append(h.Edges, float64(k-step)/8)
				h.Counts = append(h.Counts, c*scale)
			}
			c += float64(rng.IntN(4))
			h.Edges = append(h.Edges, float64(k)/8)
			h.Counts = append(h.Counts, c*scale)
			last = k
		}
		h.Edges = append(h.Edges, inf)
		h.Counts = append(h.Counts, c*scale)
		return h
	}
	bits := func(a, b sources.Histogram) bool {
		if a.Sparse != b.Sparse || len(a.Edges) != len(b.Edges) || len(a.Counts) != len(b.Counts) {
			return false
		}
		for i := range a.Edges {
			if math.Float64bits(a.Edges[i]) != math.Float64bits(b.Edges[i]) || math.Float64bits(a.Counts[i]) != math.Float64bits(b.Counts[i]) {
				return false
			}
		}
		return true
	}
	var s Sum
	kinds := map[string]int{}
	for trial := range 2000 {
		s.Reset()
		var ref sources.Histogram
		for k := range 1 + rng.IntN(80) {
			var h sources.Histogram
			kind := "whole"
			switch r := rng.IntN(400); {
			case r == 0:
				kind, h = "coarse", onGrid(4, 1)
			case r == 1:
				kind, h = "fractional", onGrid(1, 0.37)
			case r == 2:
				kind, h = "negative zero", onGrid(1, 1)
				h.Counts[0] = math.Copysign(0, -1)
			case r == 3:
				kind, h = "decreasing", onGrid(1, 1)
				if n := len(h.Counts); n > 2 {
					h.Counts[n-2] = h.Counts[n-1] + 1
				}
			case r == 4:
				kind, h = "huge", onGrid(1, 1<<50)
			case r == 5:
				kind, h = "classic", sources.Histogram{Edges: []float64{0.5, 1, inf}, Counts: []float64{1, 2, 3}}
			case r < 20:
				kind = "empty"
			default:
				h = onGrid(1, 1)
			}
			if trial%50 == 0 {
				h = onGrid(2, 1) // every histogram of the sum on the coarser grid
			}
			kinds[kind]++
			s.Add(h)
			switch {
			case len(h.Edges) == 0:
			case len(ref.Edges) == 0:
				ref = sources.Histogram{Edges: slices.Clone(h.Edges), Counts: slices.Clone(h.Counts), Sparse: h.Sparse}
			case ref.Sparse && h.Sparse:
				ref, _ = mergeRef(ref, h)
			default:
				ref, _ = Merge(ref, h)
			}
			if got := s.Histogram(); !bits(got, ref) {
				t.Fatalf("trial %d, addition %d (%s): Sum %+v, repeated merge %+v", trial, k, kind, got, ref)
			}
		}
	}
	for _, k := range []string{"coarse", "fractional", "negative zero", "decreasing", "huge", "classic"} {
		if kinds[k] == 0 {
			t.Errorf("no %s histogram was added", k)
		}
	}
}
