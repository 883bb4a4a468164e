// Package loglin bins non-negative values (latencies in seconds, token
// counts) on log-linear bins: Prometheus native-histogram indexing at
// schema 8, 256 sub-bins per octave. Bin i holds the values in
// (2^((i−1)/256), 2^(i/256)], so neighbouring edges differ by a factor of
// 2^(1/256) ≈ 1.0027 (0.27%); a quantile read from the bins is known to
// within that factor, whatever the value's magnitude. Values ≤ 0 go to a
// zero bin whose upper edge is 0.
//
// The index is ⌈log2(v)·256⌉, computed the same way by every producer of
// bins (the request-log scan and the SQL a column store runs), so one
// value lands in one bin everywhere; a value within a rounding error of a
// bin edge (only exact powers of two are edges that decimal data can hit,
// and those are computed exactly) may fall either side of it.
//
// No I/O, no state beyond the Hist value.
package loglin

import (
	"math"
	"slices"

	"github.com/goodput-dev/goodput/sources"
)

// Schema is the Prometheus native-histogram schema of the bins.
const Schema = 8

// PerOctave is the number of bins per doubling of the value (2^Schema).
const PerOctave = 1 << Schema

// Zero is the index of the zero bin (values ≤ 0). It sorts below every
// other index.
const Zero int32 = math.MinInt32

// Index is the bin of v: ⌈log2(v)·256⌉, or Zero for v ≤ 0. NaN has no bin
// (ok false). +Inf lands in the highest index.
func Index(v float64) (int32, bool) {
	switch {
	case math.IsNaN(v):
		return 0, false
	case v <= 0:
		return Zero, true
	case math.IsInf(v, 1):
		return math.MaxInt32, true
	}
	x := math.Ceil(math.Log2(v) * PerOctave)
	if x >= math.MaxInt32 {
		return math.MaxInt32, true
	}
	if x <= math.MinInt32+1 {
		return math.MinInt32 + 1, true
	}
	return int32(x), true
}

// Upper is bin i's upper edge, 2^(i/256); 0 for the zero bin.
func Upper(i int32) float64 {
	if i == Zero {
		return 0
	}
	if i == math.MaxInt32 {
		return math.Inf(1)
	}
	return math.Exp2(float64(i) / PerOctave)
}

// Lower is bin i's lower edge (exclusive), 2^((i−1)/256); 0 for the zero
// bin and for the lowest ordinary bin.
func Lower(i int32) float64 {
	if i == Zero || i == math.MinInt32+1 {
		return 0
	}
	return Upper(i - 1)
}

// Hist counts values per bin. The zero value is an empty histogram ready
// to use; it is not safe for concurrent use.
type Hist struct {
	bins map[int32]float64
}

// Add counts v with weight w (1 for one request). NaN values are ignored
// and reported as not added.
func (h *Hist) Add(v, w float64) bool {
	i, ok := Index(v)
	if !ok {
		return false
	}
	h.AddBin(i, w)
	return true
}

// AddBin adds weight w to bin i (as read from a store that binned already).
func (h *Hist) AddBin(i int32, w float64) {
	if h.bins == nil {
		h.bins = make(map[int32]float64)
	}
	h.bins[i] += w
}

// Merge adds o's counts into h.
func (h *Hist) Merge(o *Hist) {
	for i, w := range o.bins {
		h.AddBin(i, w)
	}
}

// Total is the summed weight of every bin.
func (h *Hist) Total() float64 {
	t := 0.0
	for _, i := range h.Indexes() {
		t += h.bins[i]
	}
	return t
}

// Len is the number of non-empty bins.
func (h *Hist) Len() int { return len(h.bins) }

// Indexes returns the non-empty bins' indexes in ascending order.
func (h *Hist) Indexes() []int32 {
	out := make([]int32, 0, len(h.bins))
	for i, w := range h.bins {
		if w != 0 {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// Count is the weight in bin i.
func (h *Hist) Count(i int32) float64 { return h.bins[i] }

// Cumulative returns h in the cumulative form classic histograms use
// (sources.Histogram): every non-empty bin contributes its lower and its
// upper edge, so the count at each edge is exact and the only uncertainty
// left about a value is its bin's width (a factor 2^(1/256)). The last
// edge is +Inf with the total. An empty histogram gives the zero value.
func (h *Hist) Cumulative() sources.Histogram {
	idx := h.Indexes()
	if len(idx) == 0 {
		return sources.Histogram{}
	}
	out := sources.Histogram{Sparse: true}
	push := func(edge, cum float64) {
		if n := len(out.Edges); n > 0 && out.Edges[n-1] == edge {
			out.Counts[n-1] = cum
			return
		}
		out.Edges = append(out.Edges, edge)
		out.Counts = append(out.Counts, cum)
	}
	cum := 0.0
	for _, i := range idx {
		if i != Zero {
			push(Lower(i), cum)
		}
		cum += h.bins[i]
		push(Upper(i), cum)
	}
	if !math.IsInf(out.Edges[len(out.Edges)-1], 1) {
		push(math.Inf(1), cum)
	}
	return out
}
