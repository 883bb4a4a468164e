package loglin

import (
	"math"
	"slices"
)

// SliceBins is one replica's coarse bins (Coarse) in one time slice: a
// short sorted list of distinct bins and their weights while it holds few
// (a replica serves a few requests per slice when an arm has hundreds of
// replicas: 8 bytes per distinct bin, not a Hist's 512-byte array), and a
// Hist once it holds more than sliceBinsSmall, or from the start when
// reserved like one that does (ReserveLike). The zero value is empty.
type SliceBins struct {
	bins []int32
	w    []float64
	big  *Hist
}

// sliceBinsSmall is the number of distinct bins a SliceBins keeps in its
// list before it moves them to a Hist (32: a replica's requests in a
// 10-second slice at a few requests per second fit, and the binary search
// stays a few comparisons).
const sliceBinsSmall = 32

// AddBin adds weight w to coarse bin i.
func (s *SliceBins) AddBin(i int32, w float64) {
	if w == 0 {
		return
	}
	if s.big != nil {
		s.big.AddBin(i, w)
		return
	}
	k, found := slices.BinarySearch(s.bins, i)
	if found {
		s.w[k] += w
		return
	}
	if len(s.bins) == sliceBinsSmall {
		s.big = &Hist{}
		for j, b := range s.bins {
			s.big.AddBin(b, s.w[j])
		}
		s.bins, s.w = nil, nil
		s.big.AddBin(i, w)
		return
	}
	s.bins = slices.Insert(s.bins, k, i)
	s.w = slices.Insert(s.w, k, w)
}

// ReserveLike gives an empty s a Hist over the array range of o's when o
// holds one: a replica's next slice, likely to hold as many distinct bins
// as its last, then counts in the array from its first value instead of
// listing its first bins and moving them. Weights are the same in either
// form. A non-empty s, or a nil o or one without a Hist, is left as it
// is.
func (s *SliceBins) ReserveLike(o *SliceBins) {
	if o == nil || o.big == nil || s.big != nil || len(s.bins) != 0 {
		return
	}
	s.big = &Hist{}
	s.big.ReserveLike(o.big)
}

// TryInc is Hist.TryInc: it adds one to coarse bin i when s holds a Hist
// whose array already counts that bin, and reports whether it did; when
// it did not, AddBin(i, 1) counts the value.
func (s *SliceBins) TryInc(i int32) bool {
	return s.big != nil && s.big.TryInc(i)
}

// Merge adds o's weights into s.
func (s *SliceBins) Merge(o *SliceBins) { o.each(s.AddBin) }

// each calls fn for every non-empty bin in ascending order.
func (s *SliceBins) each(fn func(i int32, w float64)) {
	if s.big != nil {
		s.big.each(fn)
		return
	}
	for k, b := range s.bins {
		fn(b, s.w[k])
	}
}

// appendBins appends s's non-empty bins to buf in ascending order, with
// the weights each gives them.
func (s *SliceBins) appendBins(buf []bin) []bin {
	if s.big != nil {
		return s.big.appendBins(buf)
	}
	for k, b := range s.bins {
		buf = append(buf, bin{b, s.w[k]})
	}
	return buf
}

// eachOf iterates over bins as appendBins lists them, in order: the
// listing read as SliceBins.each reads s.
func eachOf(bins []bin) func(func(int32, float64)) {
	return func(fn func(int32, float64)) {
		for _, b := range bins {
			fn(b.i, b.w)
		}
	}
}

// beyondBins is Beyond of the bins appendBins lists, in the same order of
// additions.
func beyondBins(bins []bin, c int32) (known, over float64) { return beyond(eachOf(bins), c) }

// Beyond returns s's weight (known) and the weight in bins above c
// (over).
func (s *SliceBins) Beyond(c int32) (known, over float64) { return beyond(s.each, c) }

// beyond is Beyond of the bins each visits.
func beyond(each func(func(int32, float64)), c int32) (known, over float64) {
	each(func(i int32, w float64) {
		known += w
		if i > c {
			over += w
		}
	})
	return known, over
}

// Total is the weight of every bin.
func (s *SliceBins) Total() float64 {
	var t float64
	s.each(func(_ int32, w float64) { t += w })
	return t
}

// Rank returns the bin holding the k-th smallest value (k from 1 to
// Total); ok is false when s is empty or k is out of that range.
func (s *SliceBins) Rank(k float64) (i int32, ok bool) { return rank(s.each, k) }

// Median is the upper edge (seconds, or the values' unit) of the coarse
// bin holding the lower median of s (the ⌈n/2⌉-th smallest of n values,
// at most a factor 2^(4/256) ≈ 1.011 below the edge); NaN when s is empty.
func (s *SliceBins) Median() float64 { return s.medianOf(s.Total()) }

// medianOf is Median for s of total weight total.
func (s *SliceBins) medianOf(total float64) float64 { return median(s.each, total) }

// medianOfBins is medianOf of the SliceBins whose bins appendBins lists.
func medianOfBins(bins []bin, total float64) float64 { return median(eachOf(bins), total) }

// median is medianOf of the bins each visits, of total weight total.
func median(each func(func(int32, float64)), total float64) float64 {
	c, ok := rank(each, math.Max(1, math.Ceil(0.5*total-1e-9)))
	if !ok {
		return math.NaN()
	}
	return coarseEdge(c)
}
