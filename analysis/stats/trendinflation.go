package stats

import "math"

// Trend inflation parameters (pre-declared; testdata/trend_inflation.txt
// measures the level they give).
const (
	// trendMinR1 is the smallest lag-1 autocorrelation of the detrended
	// bucket series read as a persistent component: below it the series
	// is taken as white and the inflation is 1.
	trendMinR1 = 0.05
	// trendMaxPhi caps the fitted per-bucket persistence.
	trendMaxPhi = 0.98
	// trendPhiSEs is how many standard errors √((1 − φ²)/n) are added to
	// the fitted persistence: the moment fit reads φ low on 180 buckets,
	// and the inflation it gives is then too small to restore the level
	// (named at 1.6× nominal at φ = 0.9 with none added, 1.1× with 2).
	trendPhiSEs = 2
)

// TrendInflation is the factor (≥ 1) by which the variance of a
// least-squares line through segment means of a bucket series must be
// multiplied when the buckets' noise lasts across segment boundaries: a
// per-arm slowdown lasting minutes makes adjacent segments of a 30-minute
// run correlate (0.12 at a per-bucket AR(1) φ of 0.8, 0.29 at 0.9), the
// residual variance of the line reads the segments' variance low and the
// slope's true variance is higher than independent segments give, so a
// worsening trend is named 1.6 to 2.6 times as often as its level says.
//
// d is the bucket series (one value per position of the grid, e.g. the
// paired difference of both arms' linearised residuals); segs are the
// segments the line runs through, each [lo, hi) positions of d, in order,
// at least 3 of them. The series is detrended by its own least-squares
// line; its lag-1 and lag-2 autocorrelations r1, r2 fit an ARMA(1, 1)
// correlation by moments, ρ(k) = a·φ^k for k ≥ 1 with φ = r2/r1 and
// a = r1/φ (white noise plus an AR(1) part), φ then raised by
// trendPhiSEs·√((1 − φ²)/n) and capped at trendMaxPhi. With Σ the
// covariance of the segment means under ρ, c the segments' centred
// positions (their midpoints) and M the residual projection of the line,
//
//	κ = (c'Σc / c'c) · (k − 2) / tr(MΣ),
//
// the slope's variance under Σ over the expectation of its estimate from
// the residuals (testdata/trend_inflation.py checks the level it gives).
// κ is 1 when r1 < trendMinR1, when φ ≤ 0, and whenever the inputs do not
// allow the fit (fewer than 8 positions or 3 segments, a constant series,
// a segment outside d): never below 1, so a trend is never named more
// readily than independent segments would name it.
func TrendInflation(d []float64, segs [][2]int) float64 {
	n, k := len(d), len(segs)
	if n < 8 || k < 3 {
		return 1
	}
	for i, s := range segs {
		if s[0] < 0 || s[1] > n || s[0] >= s[1] || (i > 0 && s[0] < segs[i-1][1]) {
			return 1
		}
	}
	var mt, md float64
	for t, v := range d {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 1
		}
		mt += float64(t)
		md += v
	}
	mt /= float64(n)
	md /= float64(n)
	var stt, std float64
	for t, v := range d {
		stt += (float64(t) - mt) * (float64(t) - mt)
		std += (float64(t) - mt) * (v - md)
	}
	slope := std / stt
	r := make([]float64, n)
	for t, v := range d {
		r[t] = v - md - slope*(float64(t)-mt)
	}
	var g0, g1, g2 float64
	for t := range r {
		g0 += r[t] * r[t]
		if t >= 1 {
			g1 += r[t] * r[t-1]
		}
		if t >= 2 {
			g2 += r[t] * r[t-2]
		}
	}
	if !(g0 > 0) {
		return 1
	}
	r1, r2 := g1/g0, g2/g0
	if !(r1 >= trendMinR1) {
		return 1
	}
	phi := math.Min(r2/r1, trendMaxPhi)
	if !(phi > 0) {
		return 1
	}
	a := math.Min(r1/phi, 1)
	phi = math.Min(phi+trendPhiSEs*math.Sqrt((1-phi*phi)/float64(n)), trendMaxPhi)
	// rho[j] is the correlation at lag j
	span := segs[k-1][1] - segs[0][0]
	rho := make([]float64, span)
	rho[0] = 1
	for j, p := 1, a*phi; j < span; j, p = j+1, p*phi {
		rho[j] = p
	}
	sigma := make([][]float64, k)
	for i := range sigma {
		sigma[i] = make([]float64, k)
	}
	for i := range k {
		for j := i; j < k; j++ {
			var s float64
			for u := segs[i][0]; u < segs[i][1]; u++ {
				for v := segs[j][0]; v < segs[j][1]; v++ {
					lag := v - u
					if lag < 0 {
						lag = -lag
					}
					s += rho[lag]
				}
			}
			s /= float64(segs[i][1]-segs[i][0]) * float64(segs[j][1]-segs[j][0])
			sigma[i][j], sigma[j][i] = s, s
		}
	}
	x := make([]float64, k)
	var mx float64
	for i, s := range segs {
		x[i] = float64(s[0]+s[1]) / 2
		mx += x[i]
	}
	mx /= float64(k)
	var cc, cSc, tr, oSo float64
	for i := range k {
		ci := x[i] - mx
		cc += ci * ci
		tr += sigma[i][i]
		for j := range k {
			cSc += ci * sigma[i][j] * (x[j] - mx)
			oSo += sigma[i][j]
		}
	}
	trM := tr - oSo/float64(k) - cSc/cc
	if !(cc > 0 && trM > 0) {
		return 1
	}
	return math.Max(1, cSc/cc*float64(k-2)/trM)
}
