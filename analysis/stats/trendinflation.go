package stats

import "math"

// Trend inflation parameters (pre-declared; testdata/trend_inflation.txt
// measures the level they give).
const (
	// trendMinR1 is how far the lag-1 autocorrelation of the buckets
	// within their segments must exceed its expectation for white noise
	// to be read as a persistent component: below it the inflation is 1.
	trendMinR1 = 0.05
	// trendPhiStep is the step of the grid the persistence φ is fitted
	// on, (0, trendMaxPhi].
	trendPhiStep = 0.005
	// trendMaxPhi caps the fitted per-bucket persistence, and with it the
	// factor (2.47 on 8 segments of 22 buckets): near φ = 1 the factor
	// climbs steeply (4.7 at 0.98) and a noisy fit would take a real trend
	// away.
	trendMaxPhi = 0.95
	// trendPhiSEs is how many standard errors √((1 − φ²)/n) are added to
	// the fitted persistence: the fit reads φ low, and with none added the
	// inflation is too small to restore the level at φ = 0.9 and above.
	trendPhiSEs = 1
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
// at least 3 of them; buckets outside them are not read. Each segment's
// buckets are centred on their own mean, so whatever the series does from
// segment to segment — the trend being tested, of any shape — does not read
// as persistence. Their lag-0, 1 and 2 sums of products within segments,
// g_k, are matched to their expectations under an ARMA(1, 1) correlation
// ρ(k) = a·φ^k (k ≥ 1; white noise plus an AR(1) part) centred the same
// way: for each φ on a grid of trendPhiStep up to trendMaxPhi, a solves
// g1/g0 = E[g1]/E[g0] (held within [0, 1]) and the φ whose ratios
// E[g1]/E[g0] and E[g2]/E[g0] lie nearest g1/g0 and g2/g0 (the sum of the
// distances) is taken — a series more persistent than any φ on the grid
// gives the largest — then raised by trendPhiSEs·√((1 − φ²)/n) (n the
// buckets read) and capped at trendMaxPhi. With Σ the covariance of the
// segment means under ρ, c the segments' centred positions (their
// midpoints) and M the residual projection of the line,
//
//	κ = (c'Σc / c'c) · (k − 2) / tr(MΣ),
//
// the slope's variance under Σ over the expectation of its estimate from
// the residuals (testdata/trend_inflation.py checks the level it gives).
// κ is 1 when g1/g0 exceeds its white-noise expectation by less than
// trendMinR1, when no φ fits, and whenever the inputs do not allow the fit
// (fewer than 3 segments, a segment of fewer than 3 buckets or outside d,
// a constant or non-finite series): never below 1, so a trend is never
// named more readily than independent segments would name it.
func TrendInflation(d []float64, segs [][2]int) float64 {
	k := len(segs)
	if k < 3 {
		return 1
	}
	n := 0
	for i, s := range segs {
		if s[0] < 0 || s[1] > len(d) || s[1]-s[0] < 3 || (i > 0 && s[0] < segs[i-1][1]) {
			return 1
		}
		n += s[1] - s[0]
	}
	// the buckets centred on their segment's mean; the lag sums within
	// segments
	var g [3]float64
	r := make([]float64, 0, segs[k-1][1]-segs[0][0])
	for _, s := range segs {
		var m float64
		for _, v := range d[s[0]:s[1]] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 1
			}
			m += v
		}
		m /= float64(s[1] - s[0])
		r = r[:0]
		for _, v := range d[s[0]:s[1]] {
			r = append(r, v-m)
		}
		for lag := range g {
			for t := lag; t < len(r); t++ {
				g[lag] += r[t] * r[t-lag]
			}
		}
	}
	if !(g[0] > 0) {
		return 1
	}
	r1, r2 := g[1]/g[0], g[2]/g[0]
	// expectations under white noise: Σ (m − k)(δ_k − 1/m)
	var ew [3]float64
	for _, s := range segs {
		m := float64(s[1] - s[0])
		ew[0] += m - 1
		ew[1] -= (m - 1) / m
		ew[2] -= (m - 2) / m
	}
	if !(r1-ew[1]/ew[0] >= trendMinR1) {
		return 1
	}
	bestErr, phi, a := math.Inf(1), 0.0, 0.0
	for i := 1; float64(i)*trendPhiStep <= trendMaxPhi+1e-12; i++ {
		p := float64(i) * trendPhiStep
		ea := centredLagSums(segs, p)
		den := r1*(ea[0]-ew[0]) - (ea[1] - ew[1])
		if den == 0 {
			continue
		}
		w := math.Max(0, math.Min(1, (ew[1]-r1*ew[0])/den))
		e0, e1, e2 := ew[0]+w*(ea[0]-ew[0]), ew[1]+w*(ea[1]-ew[1]), ew[2]+w*(ea[2]-ew[2])
		if err := math.Abs(e1/e0-r1) + math.Abs(e2/e0-r2); err < bestErr {
			bestErr, phi, a = err, p, w
		}
	}
	if !(phi > 0 && a > 0) {
		return 1
	}
	phi = math.Min(phi+trendPhiSEs*math.Sqrt((1-phi*phi)/float64(n)), trendMaxPhi)
	return segmentInflation(segs, phi, a)
}

// centredLagSums is E[Σ_t r_t·r_{t+k}] for k = 0, 1, 2 over the segments,
// each segment's values centred on its own mean, for a unit-variance AR(1)
// of coefficient phi: per segment of m buckets Σ_{t<m−k} (φ^k − ρ̄_t −
// ρ̄_{t+k} + ρ̿), with ρ̄_t = (1/m)·Σ_j φ^|t−j| and ρ̿ their mean.
func centredLagSums(segs [][2]int, phi float64) [3]float64 {
	var out [3]float64
	var rb []float64
	for _, s := range segs {
		m := s[1] - s[0]
		rb = rb[:0]
		var all float64
		for t := range m {
			// Σ_j φ^|t−j| = (1 − φ^(t+1))/(1 − φ) + (1 − φ^(m−t))/(1 − φ) − 1
			v := ((1-math.Pow(phi, float64(t+1)))+(1-math.Pow(phi, float64(m-t))))/(1-phi) - 1
			v /= float64(m)
			rb = append(rb, v)
			all += v
		}
		all /= float64(m)
		for lag := range out {
			pk := math.Pow(phi, float64(lag))
			for t := 0; t+lag < m; t++ {
				out[lag] += pk - rb[t] - rb[t+lag] + all
			}
		}
	}
	return out
}

// segmentInflation is κ = (c'Σc / c'c)·(k − 2)/tr(MΣ) for the segments'
// means under the correlation ρ(0) = 1, ρ(j) = a·φ^j.
func segmentInflation(segs [][2]int, phi, a float64) float64 {
	k := len(segs)
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
