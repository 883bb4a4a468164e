package histo

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// A Stack's quantile of any multiset of log-linear histograms equals the
// quantile of their merge.
func TestStackMatchesMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var hs []sources.Histogram
	for s := 0; s < 40; s++ {
		var h loglin.Hist
		n := rng.IntN(200)
		if s%7 == 3 {
			n = 0 // an empty slice
		}
		for i := 0; i < n; i++ {
			v := 0.05 * math.Exp(0.6*rng.NormFloat64()) * (1 + float64(s%5))
			if rng.IntN(50) == 0 {
				v = 0
			}
			h.Add(v, 1)
		}
		hs = append(hs, h.Cumulative())
	}
	st := NewStack(hs)
	if st == nil {
		t.Fatal("no stack for log-linear histograms")
	}
	for trial := 0; trial < 300; trial++ {
		idx := make([]int, 1+rng.IntN(60))
		for k := range idx {
			idx[k] = rng.IntN(len(hs))
		}
		var parts []sources.Histogram
		for _, i := range idx {
			parts = append(parts, hs[i])
		}
		m, _ := Merge(parts...)
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 1} {
			want, got := Quantile(q, m), st.Quantile(q, idx)
			if !(want == got || math.IsNaN(want) && math.IsNaN(got)) {
				t.Fatalf("trial %d q %g: stack %v, merge %v", trial, q, got, want)
			}
		}
	}
	if NewStack([]sources.Histogram{{Edges: []float64{1, math.Inf(1)}, Counts: []float64{1, 2}}}) != nil {
		t.Error("a classic histogram got a stack")
	}
}
