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

// TestFitTrendWithin: with lo = hi = y the bounds are FitTrend's figures;
// for intervals around y, every series drawn within them (inside and at the
// corners) fits inside the bounds: fitted end value, its confidence bounds
// at tq standard errors, the slope's p-value.
func TestFitTrendWithin(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	const tq = 1.94
	for _, x := range [][]float64{{1, 3, 5, 7, 9, 11, 13, 15}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}} {
		for rep := 0; rep < 200; rep++ {
			y := make([]float64, len(x))
			lo, hi := make([]float64, len(x)), make([]float64, len(x))
			for i := range y {
				y[i] = 0.01*x[i]*rng.Float64() + 0.02*rng.NormFloat64()
				lo[i], hi[i] = y[i]-0.004*rng.Float64(), y[i]+0.004*rng.Float64()
			}
			f, b := FitTrendWithin(x, y, y, y, 16, tq, 1)
			if b.AtLo != f.At || b.AtHi != f.At || b.Lower != f.At-tq*f.AtSE || b.Upper != f.At+tq*f.AtSE ||
				b.PLo != f.PIncrease || b.PHi != f.PIncrease {
				t.Fatalf("zero-width bounds %+v differ from the fit %+v", b, f)
			}
			fk, bk := FitTrendWithin(x, y, y, y, 16, tq, 2.5)
			if math.Abs(fk.AtSE-f.AtSE*math.Sqrt(2.5)) > 1e-12*f.AtSE || bk.Lower != fk.At-tq*fk.AtSE || bk.PLo != fk.PIncrease ||
				(f.Slope > 0 && !(fk.PIncrease > f.PIncrease)) {
				t.Fatalf("inflated zero-width bounds %+v, fit %+v, against %+v", bk, fk, f)
			}
			_, b = FitTrendWithin(x, y, lo, hi, 16, tq, 1)
			_, bk = FitTrendWithin(x, y, lo, hi, 16, tq, 2.5)
			if !(b.AtLo < f.At && f.At < b.AtHi && b.Lower < f.At-tq*f.AtSE && f.At+tq*f.AtSE < b.Upper && b.PLo <= f.PIncrease) ||
				(b.PHi < 0.5 && !(f.PIncrease <= b.PHi)) {
				t.Fatalf("bounds %+v do not hold the point fit %+v", b, f)
			}
			for k := 0; k < 50; k++ {
				z := make([]float64, len(x))
				for i := range z {
					z[i] = lo[i] + (hi[i]-lo[i])*rng.Float64()
					if k%2 == 0 {
						// the corners, where the bounds are reached
						z[i] = [2]float64{lo[i], hi[i]}[rng.IntN(2)]
					}
				}
				const eps = 1e-12
				// and inflated (k = 2.5): the inflated fits within the
				// inflated bounds
				for _, c := range []struct {
					k float64
					b TrendBounds
				}{{1, b}, {2.5, bk}} {
					g := FitTrend(x, z, 16).Inflated(c.k)
					if g.At < c.b.AtLo-eps || g.At > c.b.AtHi+eps || g.At-tq*g.AtSE < c.b.Lower-eps || g.At+tq*g.AtSE > c.b.Upper+eps ||
						g.PIncrease < c.b.PLo-eps || (c.b.PHi < 0.5 && g.PIncrease > c.b.PHi+eps) {
						t.Fatalf("series %v fits %+v (k %g) outside the bounds %+v", z, g, c.k, c.b)
					}
				}
			}
		}
	}
	x := []float64{1, 3, 5}
	if _, b := FitTrendWithin(x[:2], x[:2], x[:2], x[:2], 3, tq, 1); !math.IsNaN(b.AtLo) || !math.IsNaN(b.PLo) {
		t.Errorf("two points: bounds %+v, want NaN", b)
	}
	y := []float64{1, 2, 3}
	if _, b := FitTrendWithin(x, y, []float64{1, 2.5, 3}, y, 6, tq, 1); !math.IsNaN(b.AtLo) {
		t.Errorf("an interval not holding its point: bounds %+v, want NaN", b)
	}
}
