package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestTQuantileManyDF checks Student's t quantile and survival function
// against scipy (testdata/make_tquantile.py) from 5 to 1e300 degrees of
// freedom: past TNormalDF they are the normal's, within 2e-7 of t's
// (gonum's StudentsT read −0.14 for the 95% quantile at 1e15).
func TestTQuantileManyDF(t *testing.T) {
	raw, err := os.ReadFile("testdata/tquantile.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			DF, P, Quantile, X, SF *float64
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) != 60 {
		t.Fatalf("%d reference cases, want 60", len(ref.Cases))
	}
	for _, c := range ref.Cases {
		// relative: gonum's incomplete beta (and scipy's) lose digits
		// as the degrees of freedom grow
		tol := 1e-10
		switch {
		case *c.DF > TNormalDF:
			tol = 2e-7
		case *c.DF > 1e3:
			tol = 1e-8
		}
		if c.P != nil {
			if got := tQuantile(*c.P, *c.DF); !(math.Abs(got-*c.Quantile) <= tol*math.Abs(*c.Quantile)) {
				t.Errorf("tQuantile(%g, %g) = %.16g, scipy %.16g", *c.P, *c.DF, got, *c.Quantile)
			}
			continue
		}
		if got := tSurvival(*c.X, *c.DF); !(math.Abs(got-*c.SF) <= tol*(*c.SF)) {
			t.Errorf("tSurvival(%g, %g) = %.16g, scipy %.16g", *c.X, *c.DF, got, *c.SF)
		}
	}
}

// TestWithExtraVarianceNegligible: a variance of 1e-20 added to a
// bootstrap interval (no degrees of freedom of its own) leaves it as it
// was. The Satterthwaite degrees of freedom come out near 1e38, where
// gonum's t quantile read 1e11 and −0.14 instead of 1.645: the interval
// was widened 1e11 times, or turned inside out (upper end below the lower),
// and a p99 gate out of order passed.
func TestWithExtraVarianceNegligible(t *testing.T) {
	for _, ci := range []Interval{{-1.1636518007459706, 1.1653019277085328}, {-1.4505829018005651, 1.453189657188501}, {-0.05, 0.07}} {
		est := Estimate{Point: (ci.Lo + ci.Hi) / 2, CI: ci, SE: (ci.Hi - ci.Lo) / 2 / 1.6448536269514722}
		for _, v := range []float64{5.442305405300995e-20, 1.1029215260723407e-19, 1e-30} {
			w := WithExtraVariance(est, 0.9, v, 3)
			if !(w.CI.Lo <= w.CI.Hi) || math.Abs(w.CI.Lo-ci.Lo) > 1e-9 || math.Abs(w.CI.Hi-ci.Hi) > 1e-9 {
				t.Errorf("%v + variance %g: %v", ci, v, w.CI)
			}
		}
	}
}

// TestDecisionOutOfOrder: an interval whose ends are out of order or NaN
// decides nothing, whatever the margin.
func TestDecisionOutOfOrder(t *testing.T) {
	for _, iv := range []Interval{{1e17, -1e17}, {0.2, 0.1}, {math.NaN(), -1}, {-1, math.NaN()}} {
		if d := NonInferiority(iv, 0.1); d != Inconclusive {
			t.Errorf("NonInferiority(%v) = %v", iv, d)
		}
		if d := Guardrail(iv, 0.1); d != Inconclusive {
			t.Errorf("Guardrail(%v) = %v", iv, d)
		}
	}
}
