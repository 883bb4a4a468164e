package stats

import "math"

// PairedBatches is the number of batches of the plain paired batch-means
// variance, used for runs too short for the lag window (fewer than
// 4·lagWindowMinBatches buckets): the interval uses Student's t with
// PairedBatches − 1 = 5 degrees of freedom (6 batches measured calibrated
// on arms that share a traffic wave and carry their own AR(1) slowdowns; 8
// under-cover).
const PairedBatches = 6

// LagWindowBatches is the number of batches of the lag-window paired
// variance used once a run has at least 4·lagWindowMinBatches buckets (10
// minutes of 10 s buckets): min(LagWindowBatches, buckets/4) batches.
const LagWindowBatches = 18

// lagWindowMinBatches is the fewest batches the lag window is used with;
// lagWindowConst holds its critical-value constants from that count up.
const lagWindowMinBatches = 15

// lagWindowConst[q−lagWindowMinBatches] = (m_q, ν_q): for iid normal
// batch sums the lag-window estimate over q·σ² has mean m_q and, matched on
// its first two moments, ν_q degrees of freedom, so the critical value at
// confidence c is t_{ν_q}(½ + c/2)/√m_q (2,000,000 draws per q,
// testdata/lagwindow.py; against the simulated exact quantiles the
// approximation is at most 0.3% narrower, up to 0.9% wider at c ≤ 0.95
// and wider still above).
var lagWindowConst = [...][2]float64{
	{0.82630, 4.8029}, // q = 15
	{0.83425, 5.1121},
	{0.84308, 5.4265},
	{0.84972, 5.7350}, // q = 18
}

// pairedSums returns both ratios and the paired residual differences of
// g(R̂_x) − g(R̂_y) summed per contiguous batch, for arms observed on one
// bucket grid (x.Num[t] and y.Num[t] cover the same seconds), with g the
// identity (logScale false) or the log. With the linearised residuals
// e_t = (Num_t − R·Den_t)/ΣDen of each arm (divided by R as well on the log
// scale), the paired differences d_t = e_x,t − e_y,t are summed per batch
// into D_k (ΣD_k = 0 exactly). What both arms share in time — a traffic
// wave, the load of the hour — cancels in d_t, where independent arms would
// count it twice. ok is false (and sums nil) for mismatched, empty or
// non-finite input, a zero denominator, fewer than minBuckets buckets, or a
// non-positive ratio on the log scale.
func pairedSums(x, y Ratio, logScale bool, batches int) (rx, ry float64, sums []float64, ok bool) {
	rx, ry, sx, sy, ok := pairedScales(x, y, logScale)
	b := len(x.Num)
	if !ok || b < minBuckets {
		return rx, ry, nil, false
	}
	q := min(batches, b/4)
	sums = make([]float64, q)
	for g := range q {
		lo, hi := g*b/q, (g+1)*b/q
		var d float64
		for t := lo; t < hi; t++ {
			d += pairedResidual(x, y, rx, ry, sx, sy, t)
		}
		sums[g] = d
	}
	return rx, ry, sums, true
}

// pairedScales checks both arms' bucket series and returns their ratios
// R = ΣNum/ΣDen and the scales S = ΣDen (times R on the log scale) the
// residuals are divided by; ok is false for mismatched, empty or
// non-finite input, a zero denominator (the ratios NaN), or a non-positive
// ratio on the log scale (the ratios kept).
func pairedScales(x, y Ratio, logScale bool) (rx, ry, sx, sy float64, ok bool) {
	nan := math.NaN()
	b := len(x.Num)
	if b != len(x.Den) || b != len(y.Num) || b != len(y.Den) || b == 0 {
		return nan, nan, nan, nan, false
	}
	var snx, sdx, sny, sdy float64
	for t := range b {
		for _, v := range []float64{x.Num[t], x.Den[t], y.Num[t], y.Den[t]} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nan, nan, nan, nan, false
			}
		}
		snx, sdx, sny, sdy = snx+x.Num[t], sdx+x.Den[t], sny+y.Num[t], sdy+y.Den[t]
	}
	if sdx == 0 || sdy == 0 {
		return nan, nan, nan, nan, false
	}
	rx, ry = snx/sdx, sny/sdy
	sx, sy = sdx, sdy
	if logScale {
		if !(rx > 0 && ry > 0) {
			return rx, ry, nan, nan, false
		}
		sx, sy = sdx*rx, sdy*ry
	}
	return rx, ry, sx, sy, true
}

// batchMeansVar is the plain batch-means variance of the total of batch
// sums D_k that sum to 0: q/(q−1)·ΣD_k², to be used with Student's t on
// q − 1 degrees of freedom (q ≥ 2).
func batchMeansVar(sums []float64) float64 {
	var ss float64
	for _, d := range sums {
		ss += d * d
	}
	q := float64(len(sums))
	return q / (q - 1) * ss
}

// lagWindowVar is the lag-window long-run variance of the total of batch
// sums D_k that sum to 0: V = max(ΣD_k² + 2·ΣD_k·D_{k+1}, ΣD_k²/4). Plain
// batch means take adjacent batches as uncorrelated; under a slowdown that
// lasts across a batch's end (a per-arm AR(1) with φ ≥ 0.8 on 10 s buckets)
// they are not, and the batch-means variance is biased low by about twice
// the lag-1 covariance of the batch sums, which the second term adds back.
// The floor (the lag-1 sample correlation taken as no lower than −0.375)
// keeps a noisy negative covariance from collapsing the interval; the
// critical value of lagWindowCritical accounts for it.
func lagWindowVar(sums []float64) float64 {
	var g0, g1 float64
	for k, d := range sums {
		g0 += d * d
		if k > 0 {
			g1 += d * sums[k-1]
		}
	}
	return max(g0+2*g1, g0/4)
}

// lagWindowCritical is the critical value of the lag-window interval on q
// batches (lagWindowMinBatches ≤ q ≤ LagWindowBatches) at two-sided
// confidence conf: the half-width is lagWindowCritical·√V.
func lagWindowCritical(q int, conf float64) float64 {
	c := lagWindowConst[q-lagWindowMinBatches]
	return tQuantile(0.5+conf/2, c[1]) / math.Sqrt(c[0])
}

// PairedDiffOfRatios is DiffOfRatios for two arms observed at the same time
// on one bucket grid (x and y of equal length, bucket t of both covering
// the same seconds; a bucket an arm has no data in holds zeros). The
// variance comes from the paired per-bucket residual differences summed
// per contiguous batch (pairedSums): with at least 4·15 buckets, on
// min(LagWindowBatches, buckets/4) batches with the lag window
// (lagWindowVar, Method "paired-delta-lagwindow"), which covers at the
// nominal level where a per-arm slowdown lasts across batch ends
// (testdata/lagwindow.txt); on shorter runs the plain batch means on
// PairedBatches batches with Student's t on PairedBatches − 1 degrees of
// freedom (Method "paired-delta-batchmeans"). SE is the normal-equivalent
// standard error (critical value·√Var/z), as for DiffOfRatios.
func PairedDiffOfRatios(x, y Ratio, conf float64) Estimate {
	return paired(x, y, conf, false)
}

// PairedLogRatioOfRatios is LogRatioOfRatios for paired arms (see
// PairedDiffOfRatios); Method "paired-delta-lagwindow-log" or
// "paired-delta-batchmeans-log".
func PairedLogRatioOfRatios(x, y Ratio, conf float64) Estimate {
	return paired(x, y, conf, true)
}

func paired(x, y Ratio, conf float64, logScale bool) Estimate {
	if len(x.Num)/4 >= lagWindowMinBatches {
		return pairedLagWindow(x, y, conf, logScale)
	}
	return pairedBatches(x, y, conf, logScale, PairedBatches)
}

// pairedEstimate is the estimate of g(R̂_x) − g(R̂_y) with no interval yet.
func pairedEstimate(rx, ry float64, logScale bool, method string) Estimate {
	est := Estimate{Point: rx - ry, SE: math.NaN(), CI: Interval{math.Inf(-1), math.Inf(1)}, Method: method}
	if logScale {
		est.Method += "-log"
		est.Point = math.NaN()
		if rx > 0 && ry > 0 {
			est.Point = math.Log(rx / ry)
		}
	}
	return est
}

// withHalfWidth sets the interval est.Point ± half and the
// normal-equivalent SE half/z; est is returned unchanged when the point,
// half or z is not finite.
func withHalfWidth(est Estimate, half, z float64) Estimate {
	if math.IsNaN(est.Point) || math.IsNaN(z) || math.IsNaN(half) || math.IsInf(half, 0) {
		return est
	}
	est.SE = half / z
	est.CI = Interval{est.Point - half, est.Point + half}
	return est
}

// pairedLagWindow is paired with the lag-window variance on
// min(LagWindowBatches, buckets/4) batches.
func pairedLagWindow(x, y Ratio, conf float64, logScale bool) Estimate {
	rx, ry, sums, ok := pairedSums(x, y, logScale, LagWindowBatches)
	est := pairedEstimate(rx, ry, logScale, "paired-delta-lagwindow")
	if !ok || len(sums) < lagWindowMinBatches {
		return est
	}
	half := lagWindowCritical(len(sums), conf) * math.Sqrt(lagWindowVar(sums))
	est.DF = lagWindowConst[len(sums)-lagWindowMinBatches][1]
	return withHalfWidth(est, half, zTwoSided(conf))
}

// pairedBatches is paired with the plain batch means on a batch count
// other than the default (the calibration tests compare counts).
func pairedBatches(x, y Ratio, conf float64, logScale bool, batches int) Estimate {
	rx, ry, sums, ok := pairedSums(x, y, logScale, batches)
	est := pairedEstimate(rx, ry, logScale, "paired-delta-batchmeans")
	if !ok || len(sums) < 2 {
		return est
	}
	q := len(sums)
	est.DF = float64(q - 1)
	return withHalfWidth(est, math.Sqrt(batchMeansVar(sums))*tQuantile(0.5+conf/2, float64(q-1)), zTwoSided(conf))
}

// PairedResiduals is the per-bucket paired difference pairedSums sums per
// batch: d_t = (x.Num_t − R_x·x.Den_t)/S_x − (y.Num_t − R_y·y.Den_t)/S_y
// with R the arm's ratio and S its ΣDen (times R on the log scale). It is
// nil for mismatched, empty or non-finite input, a zero denominator, or a
// non-positive ratio on the log scale.
func PairedResiduals(x, y Ratio, logScale bool) []float64 {
	rx, ry, sx, sy, ok := pairedScales(x, y, logScale)
	if !ok {
		return nil
	}
	d := make([]float64, len(x.Num))
	for t := range d {
		d[t] = pairedResidual(x, y, rx, ry, sx, sy, t)
	}
	return d
}

// pairedResidual is bucket t's paired difference of the arms' linearised
// residuals, (x.Num_t − R_x·x.Den_t)/S_x − (y.Num_t − R_y·y.Den_t)/S_y.
func pairedResidual(x, y Ratio, rx, ry, sx, sy float64, t int) float64 {
	return (x.Num[t]-rx*x.Den[t])/sx - (y.Num[t]-ry*y.Den[t])/sy
}
