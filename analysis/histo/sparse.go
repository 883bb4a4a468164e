package histo

import (
	"slices"

	"github.com/goodput-dev/goodput/sources"
)

// allSparse reports whether every non-empty histogram is Sparse (and at
// least one is non-empty).
func allSparse(hs []sources.Histogram) bool {
	nonEmpty := false
	for _, h := range hs {
		if len(h.Edges) == 0 {
			continue
		}
		if !h.Sparse {
			return false
		}
		nonEmpty = true
	}
	return nonEmpty
}

// mergeSparse adds Sparse histograms over the union of their edges. The
// count of a histogram at an edge it does not list is its count at the
// nearest listed edge below (0 below its first edge), which is exact
// unless the edge lies strictly inside one of its occupied intervals
// (between two listed edges whose counts differ: a coarser grid's bin).
// Such an edge is dropped (dropped true), so histograms on nested grids
// (native-histogram schemas) merge to the coarser grid where they
// overlap. The result is Sparse. Cost O(edges × inputs).
func mergeSparse(hs []sources.Histogram) (out sources.Histogram, dropped bool) {
	var union []float64
	for _, h := range hs {
		union = append(union, h.Edges...)
	}
	slices.Sort(union)
	union = slices.Compact(union)
	counts := make([]float64, len(union))
	keep := make([]bool, len(union))
	for i := range keep {
		keep[i] = true
	}
	for _, h := range hs {
		if len(h.Edges) == 0 {
			continue
		}
		k := 0 // h.Edges[k] is the first listed edge > x
		for i, x := range union {
			for k < len(h.Edges) && h.Edges[k] <= x {
				k++
			}
			below := 0.0
			if k > 0 {
				below = h.Counts[k-1]
			}
			if k > 0 && h.Edges[k-1] == x {
				counts[i] += below
				continue
			}
			if k < len(h.Edges) && h.Counts[k] > below {
				keep[i] = false // inside an occupied interval of h
				continue
			}
			counts[i] += below
		}
	}
	out.Sparse = true
	for i, x := range union {
		if !keep[i] {
			dropped = true
			continue
		}
		out.Edges = append(out.Edges, x)
		out.Counts = append(out.Counts, counts[i])
	}
	return out, dropped
}
