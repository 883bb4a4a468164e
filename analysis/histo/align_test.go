package histo

import (
	"math"
	"slices"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestAlign: histograms laid on one grid add index by index to what Merge
// gives, and each row is the histogram's exact cumulative count at every
// grid edge: for classic histograms the common edges, for sparse ones the
// union (a sparse histogram's count at an edge it lacks is its count at
// its highest edge below).
func TestAlign(t *testing.T) {
	inf := math.Inf(1)
	classic := []sources.Histogram{
		{Edges: []float64{0.1, 0.5, 1, inf}, Counts: []float64{1, 4, 6, 7}},
		{Edges: []float64{0.1, 0.5, 1, inf}, Counts: []float64{0, 2, 2, 3}},
		{},
	}
	sparse := []sources.Histogram{
		{Edges: []float64{1, 2, inf}, Counts: []float64{0, 3, 3}, Sparse: true},
		{Edges: []float64{4, 8, inf}, Counts: []float64{0, 5, 5}, Sparse: true},
		{},
	}
	for _, tc := range []struct {
		name  string
		in    []sources.Histogram
		edges []float64
		rows  [][]float64
	}{
		{"classic", classic, []float64{0.1, 0.5, 1, inf}, [][]float64{{1, 4, 6, 7}, {0, 2, 2, 3}, {0, 0, 0, 0}}},
		{"classic, an edge only one has", []sources.Histogram{classic[0], {Edges: []float64{0.1, 1, inf}, Counts: []float64{1, 1, 2}}},
			[]float64{0.1, 1, inf}, [][]float64{{1, 6, 7}, {1, 1, 2}}},
		{"sparse", sparse, []float64{1, 2, 4, 8, inf}, [][]float64{{0, 3, 3, 3, 3}, {0, 0, 0, 5, 5}, {0, 0, 0, 0, 0}}},
		{"nothing", []sources.Histogram{{}, {}}, nil, [][]float64{{}, {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edges, rows := Align(tc.in)
			if !slices.Equal(edges, tc.edges) || len(rows) != len(tc.rows) {
				t.Fatalf("edges %v rows %v, want %v %v", edges, rows, tc.edges, tc.rows)
			}
			sum := make([]float64, len(edges))
			for i := range rows {
				if !slices.Equal(rows[i], tc.rows[i]) {
					t.Errorf("row %d %v, want %v", i, rows[i], tc.rows[i])
				}
				for k, v := range rows[i] {
					sum[k] += v
				}
			}
			if m, _ := Merge(tc.in...); len(edges) > 0 && (!slices.Equal(m.Edges, edges) || !slices.Equal(m.Counts, sum)) {
				t.Errorf("rows add to %v on %v; Merge gives %v on %v", sum, edges, m.Counts, m.Edges)
			}
		})
	}
}
