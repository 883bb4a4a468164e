package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// TestOBFPlanReference checks the boundaries against scipy's
// multivariate-normal reference (testdata/make_sequential.py).
func TestOBFPlanReference(t *testing.T) {
	var ref struct {
		Cases []struct {
			Name      string
			Alpha     float64
			Fractions []float64
			Spent     []float64
			Bounds    []float64
		}
	}
	readTestdata(t, "sequential.json", &ref)
	if len(ref.Cases) == 0 {
		t.Fatal("no reference cases")
	}
	for _, c := range ref.Cases {
		t.Run(c.Name, func(t *testing.T) {
			p, err := OBFPlan(c.Alpha, c.Fractions)
			if err != nil {
				t.Fatal(err)
			}
			for k := range c.Bounds {
				if d := math.Abs(p.Spent[k] - c.Spent[k]); d > 1e-12 {
					t.Errorf("look %d: spent %.15g, scipy %.15g", k+1, p.Spent[k], c.Spent[k])
				}
				if d := math.Abs(p.Bounds[k] - c.Bounds[k]); d > 1e-3 {
					t.Errorf("look %d: bound %.6f, scipy %.6f (|Δ| %.2g > 1e-3)", k+1, p.Bounds[k], c.Bounds[k], d)
				}
			}
		})
	}
}

// TestOBFPlanMonteCarlo checks the 30-look plan the watch uses by default
// (too many dimensions for the scipy reference) on simulated Brownian
// paths: the share crossing any boundary is α within Monte Carlo error,
// while the naive rule (1.645 at every look) crosses far more often.
func TestOBFPlanMonteCarlo(t *testing.T) {
	const K, alpha, paths = 30, 0.05, 200000
	p, err := OBFPlan(alpha, EqualFractions(K))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	zFixed := distuv.UnitNormal.Quantile(1 - alpha)
	seq, naive := 0, 0
	for range paths {
		s := 0.0
		crossed, crossedNaive := false, false
		for k := range K {
			s += rng.NormFloat64() * math.Sqrt(1.0/K)
			z := s / math.Sqrt(float64(k+1)/K)
			if z >= p.Bounds[k] {
				crossed = true
			}
			if z >= zFixed {
				crossedNaive = true
			}
		}
		if crossed {
			seq++
		}
		if crossedNaive {
			naive++
		}
	}
	rate := float64(seq) / paths
	mcse := math.Sqrt(alpha * (1 - alpha) / paths)
	if math.Abs(rate-alpha) > 4*mcse {
		t.Errorf("OBF plan crosses on %.4f of null paths, want %.3f ± %.4f", rate, alpha, 4*mcse)
	}
	if nr := float64(naive) / paths; nr < 3*alpha {
		t.Errorf("naive repeated test crosses on %.4f of null paths: expected the inflation (> %.2f)", nr, 3*alpha)
	}
	t.Logf("30 looks: OBF %.4f, naive %.4f (MC error %.4f); bounds first %.3f, look 8 %.3f, last %.3f",
		rate, float64(naive)/paths, mcse, p.Bounds[0], p.Bounds[7], p.Bounds[K-1])
}

// TestSequentialWidthPenalty measures what the doc comment states: the
// final look's critical value of the 30-look plan against the fixed
// horizon, and the normal-mixture confidence sequence's at the same point,
// tuned (over its mixing variance) to be as narrow as possible there.
func TestSequentialWidthPenalty(t *testing.T) {
	const alpha = 0.05
	p, err := OBFPlan(alpha, EqualFractions(30))
	if err != nil {
		t.Fatal(err)
	}
	fixed := distuv.UnitNormal.Quantile(1 - alpha)
	obf := p.Bounds[29]
	best := math.Inf(1)
	for rho := 0.01; rho < 10; rho *= 1.01 {
		best = math.Min(best, MixtureBoundary(alpha, 1, rho))
	}
	t.Logf("final critical value: fixed %.3f, OBF %.3f (+%.1f%%), mixture CS %.3f (+%.0f%%)",
		fixed, obf, 100*(obf/fixed-1), best, 100*(best/fixed-1))
	if math.Abs(obf-1.860) > 0.002 {
		t.Errorf("OBF final bound %.4f; the doc comment says 1.860", obf)
	}
	if math.Abs(best-2.778) > 0.002 {
		t.Errorf("mixture CS at the end %.4f; the doc comment says 2.778", best)
	}
}

func TestOBFPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		alpha float64
		fr    []float64
	}{
		{0, []float64{1}}, {0.5, []float64{1}}, {0.05, nil}, {0.05, []float64{0.5, 0.5}}, {0.05, []float64{0.5, 1.2}}, {0.05, []float64{0, 1}},
	} {
		if _, err := OBFPlan(tc.alpha, tc.fr); err == nil {
			t.Errorf("OBFPlan(%g, %v): no error", tc.alpha, tc.fr)
		}
	}
	if v := SpendingOBF(0.05, 0); v != 0 {
		t.Errorf("α(0) = %g", v)
	}
	if v := SpendingOBF(0.05, 1); v != 0.05 {
		t.Errorf("α(1) = %g", v)
	}
}
