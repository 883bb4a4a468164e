package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRadixSortMatchesSort: the pooled samples come out in the same order
// of values as a comparison sort, negative, zero, infinite and subnormal
// values included, and each value keeps its bucket.
func TestRadixSortMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	vals := []float64{0, math.Copysign(0, -1), -1, 1, math.Inf(1), math.Inf(-1), 5e-324, -5e-324, math.MaxFloat64, 1e-300}
	for i := 0; i < 5000; i++ {
		vals = append(vals, rng.NormFloat64()*math.Pow(10, float64(rng.IntN(20)-10)))
	}
	buckets := make([][]float64, 7)
	for i, v := range vals {
		buckets[i%7] = append(buckets[i%7], v)
	}
	p, ok := newPooled(buckets)
	if !ok {
		t.Fatal("newPooled refused finite input")
	}
	want := slices.Clone(vals)
	slices.Sort(want)
	for i := range want {
		if p.vals[i] != want[i] && !(p.vals[i] == 0 && want[i] == 0) {
			t.Fatalf("position %d: %v, want %v", i, p.vals[i], want[i])
		}
	}
	// every (value, bucket) pair survives
	seen := map[[2]uint64]int{}
	for b, s := range buckets {
		for _, v := range s {
			seen[[2]uint64{math.Float64bits(v), uint64(b)}]++
		}
	}
	for i := range p.vals {
		seen[[2]uint64{math.Float64bits(p.vals[i]), uint64(p.bucket[i])}]--
	}
	for k, n := range seen {
		if n != 0 {
			t.Fatalf("pair %v count off by %d", k, n)
		}
	}
}

func TestSortFloat64s(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 2, 3, 100, 10000} {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4))
		}
		if n > 3 {
			v[0], v[1], v[2] = math.Inf(1), math.Inf(-1), 0
		}
		want := slices.Clone(v)
		slices.Sort(want)
		SortFloat64s(v)
		if !slices.Equal(v, want) {
			t.Fatalf("n=%d: not sorted like slices.Sort", n)
		}
	}
}
