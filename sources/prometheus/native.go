package prometheus

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/goodput-dev/goodput/sources"
	"github.com/prometheus/common/model"
)

// nativeBucket is one non-empty bucket of a native histogram: Count
// observations between Lower and Upper (seconds after the unit factor).
type nativeBucket struct{ lower, upper, count float64 }

// nativeSample is a decoded native histogram: its non-empty buckets,
// ascending and disjoint, and its total count (≥ the buckets' sum).
type nativeSample struct {
	buckets []nativeBucket
	total   float64
}

// decodeNative checks and decodes a native histogram as the HTTP API
// answers it (the "histogram" of a vector sample or one of the
// "histograms" of a matrix series: non-cumulative buckets [boundary rule,
// lower, upper, count] on exponential boundaries, with a zero bucket
// around 0). Boundaries are multiplied by factor (the metric's unit to
// seconds). Latencies cannot be negative: a non-empty bucket whose upper
// boundary is below 0, a negative or non-finite count, or a total below
// the buckets' sum is an error. A zero bucket's negative lower boundary is
// taken as 0. Buckets that overlap (which one histogram's never do) are
// joined into one spanning both, so no edge inside either is claimed exact.
func decodeNative(h *model.SampleHistogram, factor float64) (nativeSample, error) {
	if h == nil {
		return nativeSample{}, fmt.Errorf("native histogram: empty sample")
	}
	var bs []nativeBucket
	for _, k := range h.Buckets {
		if k == nil {
			continue
		}
		lo, up, c := float64(k.Lower)*factor, float64(k.Upper)*factor, float64(k.Count)
		if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			return nativeSample{}, fmt.Errorf("native histogram: bucket %s has count %g", k, c)
		}
		if c == 0 {
			continue
		}
		if math.IsNaN(up) || math.IsNaN(lo) || up < 0 || lo > up {
			return nativeSample{}, fmt.Errorf("native histogram: bucket %s counts negative observations, which a latency cannot have", k)
		}
		bs = append(bs, nativeBucket{max(lo, 0), up, c})
	}
	sort.SliceStable(bs, func(i, j int) bool {
		if bs[i].upper != bs[j].upper {
			return bs[i].upper < bs[j].upper
		}
		return bs[i].lower < bs[j].lower
	})
	out := nativeSample{}
	sum := 0.0
	for _, b := range bs {
		sum += b.count
		if n := len(out.buckets); n > 0 && b.lower < out.buckets[n-1].upper && !sameEdge(b.lower, out.buckets[n-1].upper) {
			last := &out.buckets[n-1]
			last.lower = math.Min(last.lower, b.lower)
			last.upper = math.Max(last.upper, b.upper)
			last.count += b.count
			continue
		}
		out.buckets = append(out.buckets, b)
	}
	// joining may have made an earlier bucket overlap the joined one
	for i := len(out.buckets) - 1; i > 0; i-- {
		a, b := &out.buckets[i-1], out.buckets[i]
		if b.lower < a.upper && !sameEdge(b.lower, a.upper) {
			a.lower, a.upper, a.count = math.Min(a.lower, b.lower), math.Max(a.upper, b.upper), a.count+b.count
			out.buckets = slices.Delete(out.buckets, i, i+1)
		}
	}
	total := float64(h.Count)
	if math.IsNaN(total) || math.IsInf(total, 0) || total < sum*(1-1e-9)-1e-9 {
		return nativeSample{}, fmt.Errorf("native histogram: count %g is below the sum of its buckets %g", total, sum)
	}
	out.total = math.Max(total, sum)
	return out, nil
}

// sameEdge reports whether two bucket boundaries are the same edge: the
// API prints each boundary from the same computation, so equal edges
// normally compare equal; a relative 1e-12 absorbs a unit factor's
// rounding.
func sameEdge(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

// edges returns the sample's bucket boundaries above 0, ascending: the
// lower and upper edge of every non-empty bucket.
func (s nativeSample) edges() []float64 {
	var out []float64
	for _, b := range s.buckets {
		for _, e := range []float64{b.lower, b.upper} {
			if e > 0 && !math.IsInf(e, 1) && (len(out) == 0 || !sameEdge(out[len(out)-1], e)) {
				out = append(out, e)
			}
		}
	}
	return out
}

// inside reports whether e lies strictly inside one of the sample's
// non-empty buckets: the count at or below e is then unknown.
func (s nativeSample) inside(e float64) bool {
	i := sort.Search(len(s.buckets), func(i int) bool { return s.buckets[i].upper >= e })
	if i == len(s.buckets) {
		return false
	}
	b := s.buckets[i]
	return b.lower < e && e < b.upper && !sameEdge(b.lower, e) && !sameEdge(b.upper, e)
}

// cumulative returns the sample in the cumulative form classic histograms
// fill, at the given ascending finite edges (none inside a non-empty
// bucket of the sample) plus +Inf: the count at an edge is the
// observations in buckets whose upper boundary is at or below it, exact
// as a classic histogram's count at its le bound (for the API's boundary
// rules 0 and 3 it counts observations ≤ the edge; rules 1 and 2, open on
// the right, give those < it: the same for a continuous latency). The
// result is Sparse: both ends of every non-empty bucket are listed, so it
// merges with other native histograms over the union of their edges.
func (s nativeSample) cumulative(edges []float64) sources.Histogram {
	h := sources.Histogram{Edges: make([]float64, 0, len(edges)+1), Counts: make([]float64, 0, len(edges)+1), Sparse: true}
	i, cum := 0, 0.0
	for _, e := range edges {
		for i < len(s.buckets) && (s.buckets[i].upper < e || sameEdge(s.buckets[i].upper, e)) {
			cum += s.buckets[i].count
			i++
		}
		h.Edges = append(h.Edges, e)
		h.Counts = append(h.Counts, cum)
	}
	h.Edges = append(h.Edges, math.Inf(1))
	h.Counts = append(h.Counts, s.total)
	return h
}

// nativeHistogram decodes one native histogram sample into the cumulative
// form, with an edge at both ends of every non-empty bucket: the counts
// at the edges are exact, and a bucket whose lower neighbours are empty
// starts at its own lower boundary rather than at the previous non-empty
// bucket's upper one.
func nativeHistogram(h *model.SampleHistogram) (sources.Histogram, error) {
	s, err := decodeNative(h, 1)
	if err != nil {
		return sources.Histogram{}, err
	}
	return s.cumulative(s.edges()), nil
}

// unifyNative chooses one edge set for many samples of the same histogram
// (every step and class of an arm), so that merged over steps no edge is
// lost: the union of their bucket boundaries, less any boundary that lies
// inside a non-empty bucket of some sample (a coarser schema there), whose
// count that sample cannot give. dropped counts those.
func unifyNative(samples []nativeSample) (edges []float64, dropped int) {
	for _, s := range samples {
		edges = append(edges, s.edges()...)
	}
	sort.Float64s(edges)
	edges = slices.CompactFunc(edges, sameEdge)
	keep := edges[:0]
	for _, e := range edges {
		ok := true
		for _, s := range samples {
			if s.inside(e) {
				ok = false
				break
			}
		}
		if ok {
			keep = append(keep, e)
		} else {
			dropped++
		}
	}
	return keep, dropped
}

// nativeSchema finds the exponential schema of native buckets from the
// ratio of each bucket's upper to its lower boundary, 2^(2^−schema): the
// finest schema seen is returned. ok is false when no bucket has a positive
// finite lower boundary, or when some bucket's ratio fits no schema
// (custom bucket boundaries, as Prometheus 3's classic-to-native
// conversion stores).
func nativeSchema(samples []nativeSample) (schema int, ok bool) {
	best := math.MinInt
	for _, s := range samples {
		for _, b := range s.buckets {
			if !(b.lower > 0 && b.upper > b.lower) || math.IsInf(b.upper, 1) {
				continue
			}
			x := -math.Log2(math.Log2(b.upper / b.lower))
			r := math.Round(x)
			if math.Abs(x-r) > 1e-6 || r < -4 || r > 8 {
				return 0, false
			}
			best = max(best, int(r))
		}
	}
	if best == math.MinInt {
		return 0, false
	}
	return best, true
}
