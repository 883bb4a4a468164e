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
