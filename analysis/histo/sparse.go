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
	for _, h := range hs {
		if len(h.Edges) == 0 {
			continue
		}
		if len(out.Edges) == 0 {
			out = sources.Histogram{Edges: slices.Clone(h.Edges), Counts: slices.Clone(h.Counts), Sparse: true}
			continue
		}
		var d bool
		out, d = merge2(out, h)
		dropped = dropped || d
	}
	return out, dropped
}

// merge2 merges two sparse histograms in one pass over their sorted edges.
func merge2(a, b sources.Histogram) (out sources.Histogram, dropped bool) {
	out = sources.Histogram{Edges: make([]float64, 0, len(a.Edges)+len(b.Edges)), Counts: make([]float64, 0, len(a.Edges)+len(b.Edges)), Sparse: true}
	// at returns h's count at x, given that h.Edges[k] is its first edge
	// ≥ x, and whether it is known (x not inside an occupied interval)
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
