package histo

import (
	"math"
	"sort"
)

// Increasing reports whether edges are strictly increasing, at least two
// long and end with +Inf: the form Quantile sorts and coalesces histograms
// into, which QuantileSorted and QuantileMonotone take as given.
func Increasing(edges []float64) bool {
	n := len(edges)
	return n >= 2 && math.IsInf(edges[n-1], 1) && increasing(edges)
}

// increasing reports whether edges are strictly increasing (no NaN).
func increasing(edges []float64) bool {
	for i := 1; i < len(edges); i++ {
		if !(edges[i-1] < edges[i]) {
			return false
		}
	}
	return true
}

// QuantileSorted is Quantile(q, {edges, counts}) for edges that satisfy
// Increasing, bit for bit, without copying or sorting: counts (one per
// edge) is made monotone in place (running maximum), as Quantile does to
// its copy.
func QuantileSorted(q float64, edges, counts []float64) float64 {
	if v, out := outsideUnit(q); out {
		return v
	}
	if len(counts) != len(edges) {
		return math.NaN()
	}
	for i := 1; i < len(counts); i++ {
		if counts[i] < counts[i-1] {
			counts[i] = counts[i-1]
		}
	}
	return quantileAt(q, edges, func(i int) float64 { return counts[i] })
}

// QuantileMonotone is Quantile(q, h) for a histogram h whose edges satisfy
// Increasing and whose counts, read through count(i) for edge i, are
// already non-decreasing: bit for bit the same value, reading O(log n)
// counts.
func QuantileMonotone(q float64, edges []float64, count func(i int) float64) float64 {
	if v, out := outsideUnit(q); out {
		return v
	}
	return quantileAt(q, edges, count)
}

// quantileAt is the part of Quantile after its buckets are sorted,
// coalesced and made monotone: count(i) is the cumulative count at
// edges[i].
func quantileAt(q float64, edges []float64, count func(i int) float64) float64 {
	n := len(edges)
	obs := count(n - 1)
	if obs == 0 {
		return math.NaN()
	}
	rank := q * obs
	b := sort.Search(n-1, func(i int) bool { return count(i) >= rank })
	if b == n-1 {
		return edges[n-2]
	}
	if b == 0 && edges[0] <= 0 {
		return edges[0]
	}
	start, end, c := 0.0, edges[b], count(b)
	if b > 0 {
		below := count(b - 1)
		start = edges[b-1]
		c -= below
		rank -= below
	}
	return start + (end-start)*(rank/c)
}

// nonDecreasing reports whether no count is below the one before it (as
// the running maximum Quantile takes leaves them; NaN counts fail).
func nonDecreasing(c []float64) bool {
	for i := 1; i < len(c); i++ {
		if !(c[i] >= c[i-1]) {
			return false
		}
	}
	return len(c) == 0 || !math.IsNaN(c[0])
}
