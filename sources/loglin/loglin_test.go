package loglin

import (
	"math"
	"testing"
)

func TestIndexEdges(t *testing.T) {
	cases := []struct {
		v    float64
		want int32
	}{
		{1, 0},
		{2, 256},
		{0.5, -256},
		{0.25, -512},
		{math.Nextafter(1, 2), 1},
		{math.Nextafter(1, 0), 0},
		{0, Zero},
		{-3, Zero},
	}
	for _, c := range cases {
		got, ok := Index(c.v)
		if !ok || got != c.want {
			t.Errorf("Index(%v) = %d, %v; want %d", c.v, got, ok, c.want)
		}
	}
	if _, ok := Index(math.NaN()); ok {
		t.Error("NaN has a bin")
	}
}

// Every value lies in (Lower, Upper] of its bin, and the bin is at most a
// factor 2^(1/256) wide.
func TestBinContainsValue(t *testing.T) {
	for _, v := range []float64{1e-6, 0.0031, 0.0123, 0.08, 0.080001, 0.999, 1.001, 2.5, 37.2, 1e4} {
		i, _ := Index(v)
		lo, hi := Lower(i), Upper(i)
		if !(lo < v && v <= hi*(1+1e-15)) {
			t.Errorf("%v not in bin %d (%v, %v]", v, i, lo, hi)
		}
		if r := hi / lo; math.Abs(r-math.Exp2(1.0/256)) > 1e-12 {
			t.Errorf("bin %d width ratio %v", i, r)
		}
	}
}

func TestCumulative(t *testing.T) {
	var h Hist
	for _, v := range []float64{0, 0.1, 0.1, 0.2, 1, 1} {
		h.Add(v, 1)
	}
	if h.Add(math.NaN(), 1) {
		t.Error("NaN added")
	}
	c := h.Cumulative()
	if n := len(c.Edges); n == 0 || !math.IsInf(c.Edges[n-1], 1) || c.Counts[n-1] != 6 {
		t.Fatalf("last edge %v", c)
	}
	// counts at edges are exact: ≤ 0 is 1, ≤ upper(bin of 0.1) is 3, ≤ 1 is 6
	at := func(e float64) float64 {
		for k, x := range c.Edges {
			if x == e {
				return c.Counts[k]
			}
		}
		t.Fatalf("edge %v missing from %v", e, c.Edges)
		return 0
	}
	i01, _ := Index(0.1)
	if at(0) != 1 || at(Lower(i01)) != 1 || at(Upper(i01)) != 3 || at(1) != 6 {
		t.Errorf("cumulative %v", c)
	}
	for k := 1; k < len(c.Edges); k++ {
		if c.Edges[k] <= c.Edges[k-1] || c.Counts[k] < c.Counts[k-1] {
			t.Fatalf("not ascending at %d: %v", k, c)
		}
	}
	var o Hist
	o.Add(0.1, 2)
	h.Merge(&o)
	if h.Total() != 8 || h.Count(i01) != 4 || h.Len() != 4 {
		t.Errorf("merge: total %v count %v len %d", h.Total(), h.Count(i01), h.Len())
	}
}
