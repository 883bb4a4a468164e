package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// LinearTrend is an ordinary least-squares line y = a + b·x through a short
// series (a few segment means of a paired difference over a run), with
// Student-t inference on n − 2 degrees of freedom.
type LinearTrend struct {
	N int
	// Slope is b, in y units per x unit; SlopeSE its standard error
	// s/√Sxx with s² = SSR/(n − 2).
	Slope, SlopeSE float64
	// PIncrease is the one-sided p-value of "slope > 0": P(T_{n−2} ≥
	// b/SE(b)); NaN when SE(b) is 0 or undefined.
	PIncrease float64
	// At is the fitted value at the x passed to FitTrend (the end of the
	// window), AtSE its standard error s·√(1/n + (x − x̄)²/Sxx).
	At, AtSE float64
	// DF is n − 2.
	DF float64
}

// FitTrend fits y on x by least squares and evaluates the line at x0. It
// needs n ≥ 3 points with at least two distinct x; otherwise every field
// but N is NaN. Inputs with NaN are an error of the caller (NaN out).
func FitTrend(x, y []float64, x0 float64) LinearTrend {
	n := len(x)
	out := LinearTrend{N: n, Slope: math.NaN(), SlopeSE: math.NaN(), PIncrease: math.NaN(), At: math.NaN(), AtSE: math.NaN(), DF: float64(n - 2)}
	if n != len(y) || n < 3 {
		return out
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if !(sxx > 0) {
		return out
	}
	b := sxy / sxx
	var ssr float64
	for i := range x {
		r := y[i] - my - b*(x[i]-mx)
		ssr += r * r
	}
	s2 := ssr / float64(n-2)
	out.Slope = b
	out.SlopeSE = math.Sqrt(s2 / sxx)
	out.At = my + b*(x0-mx)
	out.AtSE = math.Sqrt(s2 * (1/float64(n) + (x0-mx)*(x0-mx)/sxx))
	if out.SlopeSE > 0 {
		out.PIncrease = tSurvival(b/out.SlopeSE, out.DF)
	}
	return out
}

// TQuantile is the p-quantile (p ≥ 0.5) of Student's t with nu degrees of
// freedom.
func TQuantile(p, nu float64) float64 { return tQuantile(p, nu) }

// tSurvival is P(T_nu ≥ t).
func tSurvival(t, nu float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Survival(t)
}

// maxCornerPoints is the most points whose every corner FitTrendWithin
// tries (2^n series).
const maxCornerPoints = 12

// TrendBounds bounds what FitTrend would give when each y_i is only known to
// lie in [lo_i, hi_i] (a quantile read from histogram bins): whatever the
// values in those intervals, the fitted value at x0 lies in [AtLo, AtHi],
// its standard error in [SELo, SEHi], and the one-sided p-value of "slope
// > 0" in [PLo, PHi]. With lo = hi = y every range collapses to FitTrend's
// figure.
type TrendBounds struct {
	AtLo, AtHi float64
	SELo, SEHi float64
	PLo, PHi   float64
}

// FitTrendWithin fits y on x as FitTrend does (y_i the point values, each
// within [lo_i, hi_i]) and bounds the fit over every series within the
// intervals. The fitted value and the slope are linear in y, so their
// ranges are exact; the residual standard deviation s moves by at most
// ‖d‖/√(n − 2) for a move d of y (the residual projection does not lengthen
// a vector), which bounds both standard errors and, with the slope's
// range, the t statistic and its p-value. Fields are NaN where FitTrend's
// are; an interval not holding its y_i is an error of the caller (NaN out).
func FitTrendWithin(x, y, lo, hi []float64, x0 float64) (LinearTrend, TrendBounds) {
	f := FitTrend(x, y, x0)
	nan := math.NaN()
	out := TrendBounds{AtLo: nan, AtHi: nan, SELo: nan, SEHi: nan, PLo: nan, PHi: nan}
	n := len(x)
	if math.IsNaN(f.At) || len(lo) != n || len(hi) != n {
		return f, out
	}
	var mx float64
	for _, v := range x {
		mx += v
	}
	mx /= float64(n)
	var sxx float64
	for _, v := range x {
		sxx += (v - mx) * (v - mx)
	}
	var atLo, atHi, bLo, bHi, dd float64
	for i := range x {
		if !(lo[i] <= y[i] && y[i] <= hi[i]) {
			return f, out
		}
		w := 1/float64(n) + (x0-mx)*(x[i]-mx)/sxx
		v := (x[i] - mx) / sxx
		dl, dh := lo[i]-y[i], hi[i]-y[i]
		atLo += math.Min(w*dl, w*dh)
		atHi += math.Max(w*dl, w*dh)
		bLo += math.Min(v*dl, v*dh)
		bHi += math.Max(v*dl, v*dh)
		d := math.Max(y[i]-lo[i], hi[i]-y[i])
		dd += d * d
	}
	// moves from the point fit, so that zero-width intervals give its
	// figures exactly
	out.AtLo, out.AtHi = f.At+atLo, f.At+atHi
	bLo, bHi = f.Slope+bLo, f.Slope+bHi
	if dd == 0 {
		out.SELo, out.SEHi, out.PLo, out.PHi = f.AtSE, f.AtSE, f.PIncrease, f.PIncrease
		return f, out
	}
	s := f.SlopeSE * math.Sqrt(sxx)
	// ‖residual(z)‖ is convex in z: over a box its largest value is at a
	// corner. With few points every corner is tried (the largest s over
	// the box exactly, and the largest residual of a move, which bounds
	// how far s can fall); otherwise ‖d‖ bounds both moves.
	res := func(z []float64) float64 {
		var mz, sxz float64
		for i := range z {
			mz += z[i]
		}
		mz /= float64(n)
		for i := range z {
			sxz += (x[i] - mx) * z[i]
		}
		b := sxz / sxx
		var r2 float64
		for i := range z {
			r := z[i] - mz - b*(x[i]-mx)
			r2 += r * r
		}
		return math.Sqrt(r2)
	}
	sLo, sHi := math.Max(0, s-math.Sqrt(dd/f.DF)), s+math.Sqrt(dd/f.DF)
	if n <= maxCornerPoints {
		z, d := make([]float64, n), make([]float64, n)
		var zMax, dMax float64
		for m := 0; m < 1<<n; m++ {
			for i := range z {
				if m>>i&1 == 1 {
					z[i], d[i] = hi[i], hi[i]-y[i]
				} else {
					z[i], d[i] = lo[i], lo[i]-y[i]
				}
			}
			zMax, dMax = math.Max(zMax, res(z)), math.Max(dMax, res(d))
		}
		sLo, sHi = math.Max(0, s-dMax/math.Sqrt(f.DF)), math.Max(s, zMax/math.Sqrt(f.DF))
	}
	cAt := math.Sqrt(1/float64(n) + (x0-mx)*(x0-mx)/sxx)
	cb := 1 / math.Sqrt(sxx)
	out.SELo, out.SEHi = sLo*cAt, sHi*cAt
	if !(sHi > 0) {
		// no residual whatever the values: no test, as FitTrend
		return f, out
	}
	// t = b / (s·cb) at its largest and smallest over the ranges
	tOf := func(b, s float64) float64 {
		if s > 0 {
			return b / (s * cb)
		}
		if b > 0 {
			return math.Inf(1)
		}
		if b < 0 {
			return math.Inf(-1)
		}
		return 0
	}
	tHi := tOf(bHi, sHi)
	if bHi > 0 {
		tHi = tOf(bHi, sLo)
	}
	tLo := tOf(bLo, sLo)
	if bLo >= 0 {
		tLo = tOf(bLo, sHi)
	}
	surv := func(t float64) float64 {
		switch {
		case math.IsInf(t, 1):
			return 0
		case math.IsInf(t, -1):
			return 1
		}
		return tSurvival(t, f.DF)
	}
	out.PLo, out.PHi = surv(tHi), surv(tLo)
	return f, out
}
