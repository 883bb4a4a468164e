package stats

import "math"

// PairedBatches is the number of batches of the paired batch-means
// variance: the interval uses Student's t with PairedBatches − 1 = 5 degrees
// of freedom (6 batches measured calibrated on arms that share a traffic
// wave and carry their own AR(1) slowdowns; 8 under-cover).
const PairedBatches = 6

// pairedVar returns both ratios and the batch-means variance of
// g(R̂_x) − g(R̂_y) for arms observed on one bucket grid (x.Num[t] and
// y.Num[t] cover the same seconds), with g the identity (logScale false) or
// the log. With the linearised residuals e_t = (Num_t − R·Den_t)/ΣDen of
// each arm (divided by R as well on the log scale), the paired differences
// d_t = e_x,t − e_y,t are summed per contiguous batch into D_k, and
// Var ≈ q/(q−1)·ΣD_k² (ΣD_k = 0 exactly). What both arms share in time — a
// traffic wave, the load of the hour — cancels in d_t, where independent
// arms would count it twice.
func pairedVar(x, y Ratio, logScale bool, batches int) (rx, ry, variance float64, ok bool) {
	b := len(x.Num)
	if b != len(x.Den) || b != len(y.Num) || b != len(y.Den) || b == 0 {
		return math.NaN(), math.NaN(), math.NaN(), false
	}
	var snx, sdx, sny, sdy float64
	for t := range b {
		for _, v := range []float64{x.Num[t], x.Den[t], y.Num[t], y.Den[t]} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return math.NaN(), math.NaN(), math.NaN(), false
			}
		}
		snx, sdx, sny, sdy = snx+x.Num[t], sdx+x.Den[t], sny+y.Num[t], sdy+y.Den[t]
	}
	if sdx == 0 || sdy == 0 {
		return math.NaN(), math.NaN(), math.NaN(), false
	}
	rx, ry = snx/sdx, sny/sdy
	if b < minBuckets {
		return rx, ry, math.NaN(), false
	}
	sx, sy := sdx, sdy
	if logScale {
		if !(rx > 0 && ry > 0) {
			return rx, ry, math.NaN(), false
		}
		sx, sy = sdx*rx, sdy*ry
	}
	q := min(batches, b/4)
	var ss float64
	for g := range q {
		lo, hi := g*b/q, (g+1)*b/q
		var d float64
		for t := lo; t < hi; t++ {
			d += (x.Num[t]-rx*x.Den[t])/sx - (y.Num[t]-ry*y.Den[t])/sy
		}
		ss += d * d
	}
	return rx, ry, float64(q) / float64(q-1) * ss, q > 1
}

// PairedDiffOfRatios is DiffOfRatios for two arms observed at the same time
// on one bucket grid (x and y of equal length, bucket t of both covering
// the same seconds; a bucket an arm has no data in holds zeros): the
// variance is the batch-means variance of the paired per-bucket residual
// differences (pairedVar), with PairedBatches batches and Student's t with
// PairedBatches − 1 degrees of freedom (Method "paired-delta-batchmeans").
// SE is the normal-equivalent standard error (t·√Var/z), as for
// DiffOfRatios.
func PairedDiffOfRatios(x, y Ratio, conf float64) Estimate {
	return paired(x, y, conf, false)
}

// PairedLogRatioOfRatios is LogRatioOfRatios for paired arms (see
// PairedDiffOfRatios); Method "paired-delta-batchmeans-log".
func PairedLogRatioOfRatios(x, y Ratio, conf float64) Estimate {
	return paired(x, y, conf, true)
}

func paired(x, y Ratio, conf float64, logScale bool) Estimate {
	return pairedBatches(x, y, conf, logScale, PairedBatches)
}

// pairedBatches is paired with a batch count other than PairedBatches (the
// calibration test compares counts).
func pairedBatches(x, y Ratio, conf float64, logScale bool, batches int) Estimate {
	rx, ry, v, ok := pairedVar(x, y, logScale, batches)
	est := Estimate{Point: rx - ry, SE: math.NaN(), CI: Interval{math.Inf(-1), math.Inf(1)}, Method: "paired-delta-batchmeans"}
	if logScale {
		est.Method += "-log"
		est.Point = math.NaN()
		if rx > 0 && ry > 0 {
			est.Point = math.Log(rx / ry)
		}
	}
	z := zTwoSided(conf)
	if !ok || math.IsNaN(est.Point) || math.IsNaN(z) {
		return est
	}
	q := min(batches, len(x.Num)/4)
	se := math.Sqrt(v) * tQuantile(0.5+conf/2, float64(q-1)) / z
	est.SE = se
	est.CI = Interval{est.Point - z*se, est.Point + z*se}
	return est
}
