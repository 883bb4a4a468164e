package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTrendReference checks FitTrend against testdata/trend.json
// (make_trend.py: scipy.stats.linregress for the slope, its standard error
// and p-value; numpy's least-squares covariance for the fitted value at the
// window end; scipy's t quantile).
func TestTrendReference(t *testing.T) {
	var ref struct {
		Cases []struct {
			X, Y      []float64
			X0        float64 `json:"x0"`
			Slope     float64 `json:"slope"`
			SlopeSE   float64 `json:"slope_se"`
			PIncrease float64 `json:"p_increase"`
			At        float64 `json:"at"`
			AtSE      float64 `json:"at_se"`
			T95       float64 `json:"t95"`
		} `json:"cases"`
	}
	readTestdata(t, "trend.json", &ref)
	if len(ref.Cases) == 0 {
		t.Fatal("no reference cases")
	}
	close := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want)) }
	for i, c := range ref.Cases {
		f := FitTrend(c.X, c.Y, c.X0)
		for _, chk := range []struct {
			name      string
			got, want float64
			tol       float64
		}{
			{"slope", f.Slope, c.Slope, 1e-12}, {"slope_se", f.SlopeSE, c.SlopeSE, 1e-12}, {"p_increase", f.PIncrease, c.PIncrease, 1e-9},
			{"at", f.At, c.At, 1e-12}, {"at_se", f.AtSE, c.AtSE, 1e-12}, {"t95", TQuantile(0.95, f.DF), c.T95, 1e-8},
		} {
			if !close(chk.got, chk.want, chk.tol) {
				t.Errorf("case %d %s: got %.15g, want %.15g", i, chk.name, chk.got, chk.want)
			}
		}
	}
}

// TestTrendDegenerate: fewer than 3 points or one distinct x give NaN.
func TestTrendDegenerate(t *testing.T) {
	for _, c := range [][2][]float64{{{1, 2}, {1, 2}}, {{3, 3, 3}, {1, 2, 3}}} {
		if f := FitTrend(c[0], c[1], 4); !math.IsNaN(f.Slope) || !math.IsNaN(f.At) || !math.IsNaN(f.PIncrease) {
			t.Errorf("FitTrend(%v, %v) = %+v, want NaN", c[0], c[1], f)
		}
	}
}

// TestTrendFalseAlarm: on 8 equally spaced segments of pure noise the
// one-sided slope test at 5% rejects at about 5% (4000 replicates; Monte
// Carlo SE 0.34 pp).
func TestTrendFalseAlarm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	y := make([]float64, len(x))
	const reps = 4000
	hits := 0
	for r := 0; r < reps; r++ {
		for i := range y {
			y[i] = rng.NormFloat64()
		}
		if FitTrend(x, y, 8.5).PIncrease < 0.05 {
			hits++
		}
	}
	if rate := float64(hits) / reps; math.Abs(rate-0.05) > 0.015 {
		t.Errorf("false-alarm rate %.3f, want 0.05 ± 0.015", rate)
	}
}
