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

// Inflated is the fit with the variance of its slope and fitted value
// multiplied by k (TrendInflation; k ≤ 1 or NaN leaves it as it is):
// SlopeSE and AtSE times √k, PIncrease from the slope over the larger SE on
// the same degrees of freedom.
func (f LinearTrend) Inflated(k float64) LinearTrend {
	r := seFactor(k)
	if r == 1 {
		return f
	}
	f.SlopeSE *= r
	f.AtSE *= r
	if f.SlopeSE > 0 {
		f.PIncrease = tSurvival(f.Slope/f.SlopeSE, f.DF)
	}
	return f
}

// seFactor is what a variance factor k does to a standard error: √k, or 1
// for k ≤ 1, NaN or +Inf (left as it is).
func seFactor(k float64) float64 {
	if !(k > 1) || math.IsInf(k, 1) {
		return 1
	}
	return math.Sqrt(k)
}

// TQuantile is the p-quantile (p ≥ 0.5) of Student's t with nu degrees of
// freedom.
func TQuantile(p, nu float64) float64 { return tQuantile(p, nu) }

// tSurvival is P(T_nu ≥ t).
func tSurvival(t, nu float64) float64 {
	if nu > TNormalDF {
		return normSF(t)
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Survival(t)
}

// maxCornerPoints is the most points whose every corner FitTrendWithin
// tries (2^n series).
const maxCornerPoints = 12

// TrendBounds bounds what FitTrend would give when each y_i is only known to
// lie in [lo_i, hi_i] (a quantile read from histogram bins): whatever the
// values in those intervals, the fitted value at x0 lies in [AtLo, AtHi],
// the lower confidence bound At − tq·AtSE is at least Lower and the upper
// one At + tq·AtSE at most Upper, and the one-sided p-value of "slope > 0"
// is at least PLo and, when the slope is positive for every value, at most
// PHi. With lo = hi = y every figure is FitTrend's.
type TrendBounds struct {
	AtLo, AtHi   float64
	Lower, Upper float64
	PLo, PHi     float64
}

// FitTrendWithin fits y on x as FitTrend does (y_i the point values, each
// within [lo_i, hi_i]) and bounds the fit over every series within the
// intervals, for confidence bounds at tq standard errors. The fitted value
// and the slope are linear in y, so their ranges are exact. With few points
// (n ≤ maxCornerPoints) every corner of the box is fitted: the residual
// standard deviation s is convex in y, so At − tq·AtSE is concave and its
// smallest value is at a corner (likewise the largest At + tq·AtSE), and
// the t statistic b/SE(b) is quasi-concave where positive, so a p-value
// below 1/2 at every corner is at most the corners' largest. Otherwise, and
// for the smallest p-value, s moves by at most ‖d‖/√(n − 2) for a move d of
// y (the residual projection does not lengthen a vector). Fields are NaN
// where FitTrend's are; an interval not holding its y_i is an error of the
// caller (NaN out). k multiplies every variance as Inflated does (1: none):
// the bounds, p-values and the returned fit are the inflated ones.
func FitTrendWithin(x, y, lo, hi []float64, x0, tq, k float64) (LinearTrend, TrendBounds) {
	f0 := FitTrend(x, y, x0)
	f := f0.Inflated(k)
	sk := seFactor(k)
	nan := math.NaN()
	out := TrendBounds{AtLo: nan, AtHi: nan, Lower: nan, Upper: nan, PLo: nan, PHi: nan}
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
		out.Lower, out.Upper = f.At-tq*f.AtSE, f.At+tq*f.AtSE
		out.PLo, out.PHi = f.PIncrease, f.PIncrease
		return f, out
	}
	// the standard errors per unit of the residual standard deviation
	cAt := sk * math.Sqrt(1/float64(n)+(x0-mx)*(x0-mx)/sxx)
	cb := sk / math.Sqrt(sxx)
	// fit returns a series' slope and residual standard deviation
	fit := func(z []float64) (b, s float64) {
		var mz, sxz float64
		for i := range z {
			mz += z[i]
			sxz += (x[i] - mx) * z[i]
		}
		mz /= float64(n)
		b = sxz / sxx
		var r2 float64
		for i := range z {
			r := z[i] - mz - b*(x[i]-mx)
			r2 += r * r
		}
		return b, math.Sqrt(r2 / f.DF)
	}
	tOf := func(b, s float64) float64 {
		switch {
		case s > 0:
			return b / (s * cb)
		case b > 0:
			return math.Inf(1)
		case b < 0:
			return math.Inf(-1)
		}
		return math.NaN()
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
	s := f0.SlopeSE * math.Sqrt(sxx)
	ds := math.Sqrt(dd / f.DF)
	sLo, sHi := math.Max(0, s-ds), s+ds
	out.Lower, out.Upper = out.AtLo-tq*sHi*cAt, out.AtHi+tq*sHi*cAt
	tLo := tOf(bLo, sHi)
	if bLo < 0 {
		tLo = tOf(bLo, sLo)
	}
	if n <= maxCornerPoints {
		z, d := make([]float64, n), make([]float64, n)
		var dMax float64
		lower, upper, tMin := math.Inf(1), math.Inf(-1), math.Inf(1)
		for m := 0; m < 1<<n; m++ {
			for i := range z {
				if m>>i&1 == 1 {
					z[i], d[i] = hi[i], hi[i]-y[i]
				} else {
					z[i], d[i] = lo[i], lo[i]-y[i]
				}
			}
			b, sz := fit(z)
			at := f.At
			for i := range z {
				at += (1/float64(n) + (x0-mx)*(x[i]-mx)/sxx) * (z[i] - y[i])
			}
			lower, upper = math.Min(lower, at-tq*sz*cAt), math.Max(upper, at+tq*sz*cAt)
			tMin = math.Min(tMin, tOf(b, sz))
			_, sd := fit(d)
			dMax = math.Max(dMax, sd)
		}
		out.Lower, out.Upper, tLo = lower, upper, tMin
		sLo = math.Max(0, s-dMax)
	}
	// the largest t: the largest slope over the smallest s
	tHi := tOf(bHi, sLo)
	if bHi <= 0 {
		tHi = tOf(bHi, sHi)
	}
	out.PLo, out.PHi = surv(tHi), surv(tLo)
	if math.IsNaN(tHi) || math.IsNaN(tLo) {
		out.PLo, out.PHi = nan, nan
	}
	return f, out
}
