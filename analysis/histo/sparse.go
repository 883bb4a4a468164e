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
	// the running sum and the next, in two buffers taking turns
	var buf sources.Histogram
	for _, h := range hs {
		if len(h.Edges) == 0 {
			continue
		}
		if len(out.Edges) == 0 {
			out = sources.Histogram{Edges: slices.Clone(h.Edges), Counts: slices.Clone(h.Counts), Sparse: true}
			continue
		}
		var d bool
		buf.Edges, buf.Counts, d = merge2Into(buf.Edges[:0], buf.Counts[:0], out, h)
		buf.Sparse = true
		out, buf = buf, out
		dropped = dropped || d
	}
	return out, dropped
}

// merge2 merges two sparse histograms in one pass over their sorted edges.
func merge2(a, b sources.Histogram) (out sources.Histogram, dropped bool) {
	n := len(a.Edges) + len(b.Edges)
	out = sources.Histogram{Edges: make([]float64, 0, n), Counts: make([]float64, 0, n), Sparse: true}
	out.Edges, out.Counts, dropped = merge2Into(out.Edges, out.Counts, a, b)
	return out, dropped
}

// merge2Into is merge2 appending the result's edges and counts to edges
// and counts (which must not share memory with a or b). One pass over
// both lists: each histogram's count at the other's edges is its count at
// the last of its own edges passed (0 before the first), unknown when its
// next edge's count is higher (the edge lies inside one of its bins that
// holds values: the edge is dropped). The edges of one below the other's
// next edge share that count and that verdict, and are taken in a loop
// of their own.
func merge2Into(edges, counts []float64, a, b sources.Histogram) ([]float64, []float64, bool) {
	dropped := false
	ae, ac, be, bc := a.Edges, a.Counts, b.Edges, b.Counts
	// room for every edge of both; n is the length written
	n := len(edges)
	edges = slices.Grow(edges, len(ae)+len(be))[:n+len(ae)+len(be)]
	counts = slices.Grow(counts, len(ae)+len(be))[:n+len(ae)+len(be)]
	ac, bc = ac[:len(ae)], bc[:len(be)]
	i, j := 0, 0
	belowA, belowB := 0.0, 0.0 // a's and b's counts at their last edges passed
	for i < len(ae) && j < len(be) {
		x, y := ae[i], be[j]
		switch {
		case x < y:
			// a's edges below y: b's count at them is the one below
			// them, unless they lie inside a bin of b's that holds values
			if bc[j] > belowB {
				dropped = true
				for i < len(ae) && ae[i] < y {
					i++
				}
				belowA = ac[i-1]
				continue
			}
			for {
				edges[n], counts[n] = ae[i], ac[i]+belowB
				n++
				i++
				if i >= len(ae) || !(ae[i] < y) {
					break
				}
			}
			belowA = ac[i-1]
		case y < x:
			if ac[i] > belowA {
				dropped = true
				for j < len(be) && be[j] < x {
					j++
				}
				belowB = bc[j-1]
				continue
			}
			for {
				edges[n], counts[n] = be[j], belowA+bc[j]
				n++
				j++
				if j >= len(be) || !(be[j] < x) {
					break
				}
			}
			belowB = bc[j-1]
		default:
			// the same edge in both
			edges[n], counts[n] = x, ac[i]+bc[j]
			n++
			belowA, belowB = ac[i], bc[j]
			i++
			j++
		}
	}
	// past the last edge of one, its count is its last
	for ; i < len(ae); i++ {
		edges[n], counts[n] = ae[i], ac[i]+belowB
		n++
	}
	for ; j < len(be); j++ {
		edges[n], counts[n] = be[j], belowA+bc[j]
		n++
	}
	return edges[:n], counts[:n], dropped
}

// Sum adds histograms one at a time, each to the sum of those before it
// as Merge(sum, h) would (Sparse histograms over the union of their edges,
// classic ones on their common edges; an empty histogram adds nothing),
// with the same edges and counts bit for bit, reusing its buffers from one
// addition to the next. The zero value is an empty sum.
type Sum struct {
	h, buf sources.Histogram
}

// Add adds h to the sum.
func (s *Sum) Add(h sources.Histogram) {
	switch {
	case len(h.Edges) == 0:
	case len(s.h.Edges) == 0:
		s.h.Edges = append(s.h.Edges[:0], h.Edges...)
		s.h.Counts = append(s.h.Counts[:0], h.Counts...)
		s.h.Sparse = h.Sparse
	case s.h.Sparse && h.Sparse:
		s.buf.Edges, s.buf.Counts, _ = merge2Into(s.buf.Edges[:0], s.buf.Counts[:0], s.h, h)
		s.buf.Sparse = true
		s.h, s.buf = s.buf, s.h
	default:
		s.h, _ = Merge(s.h, h)
	}
}

// Reset empties the sum, keeping its buffers.
func (s *Sum) Reset() {
	s.h.Edges, s.h.Counts, s.h.Sparse = s.h.Edges[:0], s.h.Counts[:0], false
}

// Histogram returns a copy of the sum (the zero Histogram when nothing
// was added).
func (s *Sum) Histogram() sources.Histogram {
	if len(s.h.Edges) == 0 {
		return sources.Histogram{}
	}
	return sources.Histogram{Edges: slices.Clone(s.h.Edges), Counts: slices.Clone(s.h.Counts), Sparse: s.h.Sparse}
}
