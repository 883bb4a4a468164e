package histo

import (
	"math"
	"slices"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

func TestMergeSparse(t *testing.T) {
	inf := math.Inf(1)
	a := sources.Histogram{Edges: []float64{1, 2, inf}, Counts: []float64{0, 3, 3}, Sparse: true}       // 3 in (1,2]
	b := sources.Histogram{Edges: []float64{4, 8, inf}, Counts: []float64{0, 5, 5}, Sparse: true}       // 5 in (4,8]
	c := sources.Histogram{Edges: []float64{0, 2, 4, inf}, Counts: []float64{1, 1, 2, 2}, Sparse: true} // one ≤ 0, one in (2,4]
	for _, tc := range []struct {
		name    string
		in      []sources.Histogram
		edges   []float64
		counts  []float64
		dropped bool
	}{
		{"disjoint", []sources.Histogram{a, b}, []float64{1, 2, 4, 8, inf}, []float64{0, 3, 3, 8, 8}, false},
		{"zero bin", []sources.Histogram{a, c}, []float64{0, 1, 2, 4, inf}, []float64{1, 1, 4, 5, 5}, false},
		// a coarser bin (0,8] holding 2 hides 1, 2 and 4
		{"nested grids", []sources.Histogram{a, b, {Edges: []float64{0, 8, inf}, Counts: []float64{0, 2, 2}, Sparse: true}},
			[]float64{0, 8, inf}, []float64{0, 10, 10}, true},
		{"empty inputs", []sources.Histogram{{}, a, {}}, a.Edges, a.Counts, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, dropped := Merge(tc.in...)
			if !slices.Equal(got.Edges, tc.edges) || !slices.Equal(got.Counts, tc.counts) || dropped != tc.dropped || !got.Sparse {
				t.Fatalf("got %v %v dropped %v sparse %v, want %v %v dropped %v", got.Edges, got.Counts, dropped, got.Sparse, tc.edges, tc.counts, tc.dropped)
			}
		})
	}
	// a classic histogram among them: the intersection, as before
	classic := sources.Histogram{Edges: []float64{2, inf}, Counts: []float64{1, 4}}
	if got, dropped := Merge(a, classic); !slices.Equal(got.Edges, []float64{2, inf}) || !dropped || got.Sparse {
		t.Fatalf("mixed: %v dropped %v", got, dropped)
	}
}
