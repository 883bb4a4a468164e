package analysis

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// TestTailRowsQuantileIsSumThenQuantile: a resample's quantile read by
// tailRows.quantile is bit for bit histo.Quantile of the resample's summed
// histogram, for exact aggregates' whole counts (read edge by edge), for
// reweighted (fractional) counts (summed into the scratch buffer) and for
// classic histograms, over block-bootstrap index sets with repeats and
// wrap-around.
func TestTailRowsQuantileIsSumThenQuantile(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	slicesOf := func(n int, weight float64) []sources.Histogram {
		out := make([]sources.Histogram, n)
		for k := range out {
			var h loglin.Hist
			for range 50 + rng.IntN(200) {
				h.Add(0.3*math.Exp(0.5*rng.NormFloat64()), 1)
			}
			c := h.Cumulative()
			for i := range c.Counts {
				c.Counts[i] *= weight
			}
			out[k] = c
		}
		if n > 3 {
			out[2] = sources.Histogram{} // a slice without completions
		}
		return out
	}
	inf := math.Inf(1)
	classic := func(n int) []sources.Histogram {
		out := make([]sources.Histogram, n)
		for k := range out {
			a := float64(rng.IntN(5))
			out[k] = sources.Histogram{Edges: []float64{0.1, 0.5, 1, inf}, Counts: []float64{a, a + 3, a + 7.5, a + 8}}
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		hb, hc     []sources.Histogram
		whole      [2]bool
		increasing bool
	}{
		{"whole counts", slicesOf(40, 1), slicesOf(37, 1), [2]bool{true, true}, true},
		{"canary reweighted", slicesOf(40, 1), slicesOf(40, 1.0371), [2]bool{true, false}, true},
		{"classic", classic(20), classic(25), [2]bool{false, false}, true},
		{"unsorted edges", []sources.Histogram{{Edges: []float64{1, 0.5, inf}, Counts: []float64{2, 1, 3}}},
			[]sources.Histogram{{Edges: []float64{1, 0.5, inf}, Counts: []float64{1, 1, 3}}}, [2]bool{true, true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := newTailHists(tc.hb, tc.hc)
			if th.b.whole != tc.whole[0] || th.c.whole != tc.whole[1] || th.increasing != tc.increasing {
				t.Fatalf("whole %v/%v increasing %v, want %v %v", th.b.whole, th.c.whole, th.increasing, tc.whole, tc.increasing)
			}
			var sb, sc tailScratch
			for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
				for r := range 200 {
					for a, rows := range []tailRows{th.b, th.c} {
						n := rows.n
						idx := make([]int, n)
						l := 1 + r%max(1, n/3)
						for pos := 0; pos < n; {
							s := rng.IntN(n)
							for k := 0; k < l && pos < n; k++ {
								idx[pos] = (s + k) % n
								pos++
							}
						}
						want := histo.Quantile(q, th.hist(rows.sum(idx)))
						sct := &sb
						if a == 1 {
							sct = &sc
						}
						got := rows.quantile(q, &th, idx, sct)
						if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
							t.Fatalf("arm %d q=%v resample %d: %v, want %v", a, q, r, got, want)
						}
					}
				}
			}
		})
	}
}
