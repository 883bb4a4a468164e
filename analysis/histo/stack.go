package histo

import (
	"math"
	"slices"
	"sort"

	"github.com/goodput-dev/goodput/sources"
)

// Stack holds a series of Sparse histograms on one grid (one per time
// slice, e.g. log-linear bins from sources/loglin) as cumulative counts at
// the union of their edges, so that the quantile of any multiset of them —
// a bootstrap resample — costs O(log edges × members) instead of a merge.
// Memory: one float64 per slice and edge of the union.
type Stack struct {
	edges []float64   // union of the finite edges, ascending, then +Inf
	cum   [][]float64 // per histogram, its count at each edge
	top   []float64   // per histogram, its highest finite edge (−Inf if none)
}

// NewStack returns a Stack of hs, or nil when some non-empty histogram is
// not Sparse or two of them are not on one grid (an edge of one lies
// inside an occupied bin of another), where Merge's own rules apply.
func NewStack(hs []sources.Histogram) *Stack {
	var union []float64
	for _, h := range hs {
		if len(h.Edges) == 0 {
			continue
		}
		if !h.Sparse || len(h.Counts) != len(h.Edges) || !math.IsInf(h.Edges[len(h.Edges)-1], 1) {
			return nil
		}
		union = append(union, h.Edges...)
	}
	if len(union) == 0 {
		return nil
	}
	slices.Sort(union)
	union = slices.Compact(union)
	s := &Stack{edges: union, cum: make([][]float64, len(hs)), top: make([]float64, len(hs))}
	for n, h := range hs {
		s.top[n] = math.Inf(-1)
		if len(h.Edges) == 0 {
			continue
		}
		row := make([]float64, len(union))
		k := 0
		for i, x := range union {
			for k < len(h.Edges) && h.Edges[k] <= x {
				k++
			}
			below := 0.0
			if k > 0 {
				below = h.Counts[k-1]
			}
			if !(k > 0 && h.Edges[k-1] == x) && k < len(h.Edges) && h.Counts[k] > below {
				return nil // x inside an occupied bin of h: not one grid
			}
			row[i] = below
		}
		s.cum[n] = row
		for k := len(h.Edges) - 1; k >= 0; k-- {
			if !math.IsInf(h.Edges[k], 1) {
				s.top[n] = h.Edges[k]
				break
			}
		}
	}
	return s
}

// Quantile returns Quantile(q, Merge(hs[idx]...)) — idx may repeat
// indices — without merging.
func (s *Stack) Quantile(q float64, idx []int) float64 {
	if math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(1)
	}
	at := func(k int) float64 {
		c := 0.0
		for _, i := range idx {
			if row := s.cum[i]; row != nil {
				c += row[k]
			}
		}
		return c
	}
	n := len(s.edges)
	top, members := math.Inf(-1), 0
	for _, i := range idx {
		if s.cum[i] != nil {
			members++
			top = math.Max(top, s.top[i])
		}
	}
	if members == 0 || n < 2 {
		return math.NaN()
	}
	obs := at(n - 1)
	if obs == 0 {
		return math.NaN()
	}
	rank := q * obs
	b := sort.Search(n-1, func(k int) bool { return at(k) >= rank })
	if b == n-1 {
		return top
	}
	if b == 0 && s.edges[0] <= 0 {
		return s.edges[0]
	}
	start, end, count := 0.0, s.edges[b], at(b)
	if b > 0 {
		// the edge below b in the merged histogram: the union's edge below
		// b when the members' counts are flat below it (no grid edge lies
		// inside the bin ending at b)
		start = s.edges[b-1]
		below := at(b - 1)
		count -= below
		rank -= below
	}
	return start + (end-start)*(rank/count)
}
