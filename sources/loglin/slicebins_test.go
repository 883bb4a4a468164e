package loglin

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSliceBinsAsHist: a replica's slice bins count as a Hist does —
// the same total, ranks and median — with few distinct bins (the sorted
// list) and past sliceBinsSmall of them (moved to a Hist), added one by
// one or merged, in any order.
func TestSliceBinsAsHist(t *testing.T) {
	for _, distinct := range []int{1, 5, sliceBinsSmall, sliceBinsSmall + 1, 300} {
		rng := rand.New(rand.NewPCG(uint64(distinct), 3))
		var s, half1, half2 SliceBins
		var h Hist
		for k := range 4 * distinct {
			bin := int32(rng.IntN(distinct)) - 40
			if k < distinct {
				bin = int32(k) - 40 // every bin at least once
			}
			w := float64(1 + rng.IntN(3))
			s.AddBin(bin, w)
			h.AddBin(bin, w)
			if k%2 == 0 {
				half1.AddBin(bin, w)
			} else {
				half2.AddBin(bin, w)
			}
		}
		half1.Merge(&half2)
		if (s.big != nil) != (distinct > sliceBinsSmall) {
			t.Errorf("%d distinct bins: moved to a Hist %v", distinct, s.big != nil)
		}
		for _, x := range []*SliceBins{&s, &half1} {
			if x.Total() != h.Total() {
				t.Fatalf("%d distinct bins: total %g, Hist %g", distinct, x.Total(), h.Total())
			}
			for k := 1.0; k <= h.Total(); k++ {
				a, _ := x.Rank(k)
				b, _ := h.Rank(k)
				if a != b {
					t.Fatalf("%d distinct bins: rank %g in bin %d, Hist %d", distinct, k, a, b)
				}
			}
		}
		c, _ := h.Rank(math.Ceil(0.5 * h.Total()))
		if m := s.Median(); m != Upper(c<<2+3) {
			t.Errorf("%d distinct bins: median %g, want %g", distinct, m, Upper(c<<2+3))
		}
	}
	var empty SliceBins
	if !math.IsNaN(empty.Median()) || empty.Total() != 0 {
		t.Error("an empty SliceBins has a median or a total")
	}
}

// Fill and TailBinOf read a SliceBins through the bins appendBins lists:
// the weight, the weight beyond a bin and the median come out bit for bit
// as Beyond and medianOf read them through each, for small lists and
// Hists, with map bins, the zero bin and fractional weights.
func TestSliceBinsListedAsEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var bins []bin
	for trial := range 300 {
		var s SliceBins
		for range 1 + rng.IntN(200) {
			w := 1.0
			if trial%3 == 0 {
				w = 0.1 * float64(1+rng.IntN(30)) // fractional: the map
			}
			b := int32(rng.IntN(20 + trial))
			switch rng.IntN(40) {
			case 0:
				b = Zero
			case 1:
				b = 1 << 20 // far from the array: the map
			}
			s.AddBin(b, w)
		}
		bins = s.appendBins(bins[:0])
		for _, c := range []int32{Zero, 0, 7, int32(trial / 2), 1 << 21} {
			k1, o1 := s.Beyond(c)
			k2, o2 := beyondBins(bins, c)
			if math.Float64bits(k1) != math.Float64bits(k2) || math.Float64bits(o1) != math.Float64bits(o2) {
				t.Fatalf("trial %d, beyond %d: listed %v %v, each %v %v", trial, c, k2, o2, k1, o1)
			}
		}
		total := s.Total()
		if a, b := s.medianOf(total), medianOfBins(bins, total); math.Float64bits(a) != math.Float64bits(b) {
			t.Fatalf("trial %d: median listed %v, each %v", trial, b, a)
		}
	}
}

// TestSliceBinsReserveLike: a SliceBins reserved like one holding a Hist
// lists the same bins and weights, and the same median, as one that was
// not, whether it then holds few values or many; one reserved like a
// short list, or nil, keeps its list.
func TestSliceBinsReserveLike(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	var big, small SliceBins
	for range 2000 {
		i, _ := Index(0.2 * math.Exp(0.6*rng.NormFloat64()))
		big.AddBin(Coarse(i), 1)
	}
	small.AddBin(3, 1)
	if big.big == nil || small.big != nil {
		t.Fatal("the test needs one SliceBins with a Hist and one without")
	}
	for _, n := range []int{1, 5, 40, 3000} {
		var plain, reserved SliceBins
		reserved.ReserveLike(&big)
		for range n {
			i, _ := Index(0.3 * math.Exp(0.8*rng.NormFloat64()))
			plain.AddBin(Coarse(i), 1)
			reserved.AddBin(Coarse(i), 1)
		}
		if got, want := reserved.appendBins(nil), plain.appendBins(nil); !slices.Equal(got, want) {
			t.Fatalf("%d values: reserved %v, plain %v", n, got, want)
		}
		if got, want := reserved.Median(), plain.Median(); got != want {
			t.Fatalf("%d values: median %v, plain %v", n, got, want)
		}
	}
	var s SliceBins
	s.ReserveLike(&small)
	s.ReserveLike(nil)
	if s.big != nil {
		t.Fatal("reserved like a short list: made a Hist")
	}
}
