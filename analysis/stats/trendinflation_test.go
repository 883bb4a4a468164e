package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTrendInflationReference checks TrendInflation against
// testdata/trendinflation.json (make_trendinflation.py: numpy's
// least-squares detrending, the moment fit and Σ = A G A' with the
// residual projection as matrices).
func TestTrendInflationReference(t *testing.T) {
	var ref struct {
		Cases []struct {
			Name  string    `json:"name"`
			D     []float64 `json:"d"`
			Segs  [][2]int  `json:"segs"`
			Kappa float64   `json:"kappa"`
		} `json:"cases"`
	}
	readTestdata(t, "trendinflation.json", &ref)
	if len(ref.Cases) < 10 {
		t.Fatalf("%d reference cases, want 10", len(ref.Cases))
	}
	moved := 0
	for _, c := range ref.Cases {
		got := TrendInflation(c.D, c.Segs)
		if math.Abs(got-c.Kappa) > 1e-9*c.Kappa {
			t.Errorf("%s: κ %.12g, want %.12g", c.Name, got, c.Kappa)
		}
		if c.Kappa > 1.1 {
			moved++
		}
	}
	// the persistent series must inflate, or the reference checks nothing
	if moved < 6 {
		t.Errorf("only %d of %d reference series inflate by more than 10%%", moved, len(ref.Cases))
	}
}

// TestTrendInflationDegenerate: inputs the fit cannot use give 1.
func TestTrendInflationDegenerate(t *testing.T) {
	d := make([]float64, 40)
	for i := range d {
		d[i] = float64(i%7) * 0.1
	}
	even := [][2]int{{0, 10}, {10, 20}, {20, 30}, {30, 40}}
	for name, c := range map[string]struct {
		d    []float64
		segs [][2]int
	}{
		"constant":          {make([]float64, 40), even},
		"short":             {d[:6], [][2]int{{0, 2}, {2, 4}, {4, 6}}},
		"two segments":      {d, even[:2]},
		"segment past end":  {d, [][2]int{{0, 10}, {10, 20}, {20, 41}}},
		"segments overlap":  {d, [][2]int{{0, 10}, {5, 20}, {20, 30}}},
		"empty segment":     {d, [][2]int{{0, 10}, {10, 10}, {20, 30}}},
		"NaN in the series": {append(append([]float64{}, d[:39]...), math.NaN()), even},
	} {
		if got := TrendInflation(c.d, c.segs); got != 1 {
			t.Errorf("%s: κ %g, want 1", name, got)
		}
	}
}

// TestTrendInflationBounded: on series of every kind — persistent, white,
// stepped, near-constant, with huge values, on uneven segments — the factor
// is finite, at least 1, and at most the factor at the persistence cap for
// those segments.
func TestTrendInflationBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 7))
	for rep := range 1000 {
		n := 30 + rng.IntN(400)
		k := 3 + rng.IntN(8)
		if n/k < 3 {
			continue
		}
		var segs [][2]int
		for i := range k {
			lo, hi := i*n/k, (i+1)*n/k
			if rng.IntN(4) == 0 && hi-lo > 4 {
				lo++ // a gap between segments
			}
			segs = append(segs, [2]int{lo, hi})
		}
		d := make([]float64, n)
		phi := []float64{0, 0.5, 0.9, 0.99, -0.5}[rep%5]
		scale := []float64{1, 1e-12, 1e12}[rep%3]
		var z float64
		for i := range d {
			z = phi*z + rng.NormFloat64()
			d[i] = scale * z
			if rep%7 == 0 && i > n/2 {
				d[i] += scale * 50 // a step
			}
		}
		got := TrendInflation(d, segs)
		if math.IsNaN(got) || math.IsInf(got, 0) || got < 1 || got > segmentInflation(segs, trendMaxPhi, 1)*(1+1e-12) {
			t.Fatalf("rep %d (n %d, %d segments, φ %g, scale %g): κ %g", rep, n, k, phi, scale, got)
		}
	}
}
