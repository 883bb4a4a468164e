package stats

import (
	"math"
	"testing"
)

// TestSectioningReference checks SectionedQuantileLogRatio against
// testdata/sectioning.json (make_sectioning.py: numpy's inverted-CDF
// quantiles per section, scipy's t quantile).
func TestSectioningReference(t *testing.T) {
	var ref struct {
		Cases []struct {
			X, Y    [][]float64
			Q, Conf float64
			Want    [3]float64
		} `json:"cases"`
	}
	readTestdata(t, "sectioning.json", &ref)
	if len(ref.Cases) == 0 {
		t.Fatal("no reference cases")
	}
	for i, c := range ref.Cases {
		est := SectionedQuantileLogRatio(c.X, c.Y, c.Q, c.Conf, 1)
		for k, got := range []float64{est.Point, est.CI.Lo, est.CI.Hi} {
			if math.Abs(got-c.Want[k]) > 1e-8*math.Max(1, math.Abs(c.Want[k])) {
				t.Errorf("case %d (q %g): got %g [%g, %g], want %v", i, c.Q, est.Point, est.CI.Lo, est.CI.Hi, c.Want)
				break
			}
		}
	}
}

// TestSectioningTooFew: too few buckets or values per section give no
// interval.
func TestSectioningTooFew(t *testing.T) {
	b := [][]float64{{1}, {2}, {3}, {4}, {5}, {6}, {7}}
	if est := SectionedQuantileLogRatio(b, b, 0.5, 0.9, 1); !math.IsInf(est.CI.Hi, 1) {
		t.Errorf("7 buckets (one section): %+v, want no interval", est)
	}
	b = append(b, []float64{8})
	if est := SectionedQuantileLogRatio(b, b, 0.5, 0.9, 5); !math.IsInf(est.CI.Hi, 1) {
		t.Errorf("1 value per section with 5 needed: %+v, want no interval", est)
	}
	if est := SectionedQuantileLogRatio(b, b, 0.5, 0.9, 1); est.Point != 0 || math.IsInf(est.CI.Hi, 1) {
		t.Errorf("identical arms: %+v, want point 0 with an interval", est)
	}
}
