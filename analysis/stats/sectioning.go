package stats

import (
	"math"
	"slices"
)

// SectionedQuantileLogRatio is the sectioning interval (Asmussen & Glynn's
// batch means with the full-sample estimator as centre) of log(Q_q(x) /
// Q_q(y)) for per-bucket samples in time order: each arm's buckets are cut
// into k = min(PairedBatches, buckets/4) contiguous sections (on both arms'
// own grids, so for arms that ran side by side section g covers about the
// same minutes of both), d_g is the log ratio of section g's quantiles, and
// the interval is the full-sample log ratio ± t_{k−1}·sd(d)/√k. A tail set
// by a few slow stretches (a batch slowdown that holds every request's
// token time up at once) varies between sections as it does between runs,
// which a bootstrap of buckets with a short block does not see. Quantiles
// are the inverse-CDF definition (the smallest value with at least ⌈q·n⌉
// values at or below it). Method "sectioning-t"; SE is the normal-
// equivalent standard error (t·sd(d)/√k / z). The estimate is NaN-pointed
// or has an infinite interval when a section holds fewer than minValues
// values in either arm or a quantile is not positive.
func SectionedQuantileLogRatio(x, y [][]float64, q, conf float64, minValues int) Estimate {
	est := Estimate{Point: math.NaN(), SE: math.NaN(), CI: Interval{math.Inf(-1), math.Inf(1)}, Method: "sectioning-t"}
	k := Sections(len(x), len(y))
	if k < 2 || math.IsNaN(zTwoSided(conf)) {
		return est
	}
	qx, qy := invCDFQuantile(pool(x, 0, len(x)), q), invCDFQuantile(pool(y, 0, len(y)), q)
	if !(qx > 0 && qy > 0) {
		return est
	}
	est.Point = math.Log(qx / qy)
	d := make([]float64, k)
	for g := range k {
		sx := pool(x, g*len(x)/k, (g+1)*len(x)/k)
		sy := pool(y, g*len(y)/k, (g+1)*len(y)/k)
		if len(sx) < max(minValues, 1) || len(sy) < max(minValues, 1) {
			return est
		}
		a, b := invCDFQuantile(sx, q), invCDFQuantile(sy, q)
		if !(a > 0 && b > 0) {
			return est
		}
		d[g] = math.Log(a / b)
	}
	return SectioningInterval(est, d, conf)
}

// Sections is the number of contiguous sections SectionedQuantileLogRatio
// cuts arms of nx and ny buckets into: min(PairedBatches, nx/4, ny/4);
// section g of an arm of n buckets is [g·n/k, (g+1)·n/k). Below 2 there is
// no sectioning interval.
func Sections(nx, ny int) int { return min(PairedBatches, nx/4, ny/4) }

// SectioningInterval completes est (its Point the full-sample estimate)
// with the sectioning interval Point ± t_{k−1}·sd(d)/√k from the k ≥ 2
// per-section estimates d, and SE its normal-equivalent t·sd(d)/√k / z.
func SectioningInterval(est Estimate, d []float64, conf float64) Estimate {
	k := len(d)
	z := zTwoSided(conf)
	if k < 2 || math.IsNaN(z) {
		return est
	}
	var mean, ss float64
	for _, v := range d {
		mean += v
	}
	mean /= float64(k)
	for _, v := range d {
		ss += (v - mean) * (v - mean)
	}
	half := tQuantile(0.5+conf/2, float64(k-1)) * math.Sqrt(ss/float64(k-1)/float64(k))
	est.SE = half / z
	est.CI = Interval{est.Point - half, est.Point + half}
	return est
}

// pool returns the sorted values of buckets [lo, hi).
func pool(b [][]float64, lo, hi int) []float64 {
	var out []float64
	for _, v := range b[lo:hi] {
		out = append(out, v...)
	}
	slices.Sort(out)
	return out
}

// invCDFQuantile is the inverse-CDF q-quantile of ascending s (NaN when
// empty), with the rank tolerance the gates use.
func invCDFQuantile(s []float64, q float64) float64 {
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(n) - 1e-9))
	return s[min(max(i, 1), n)-1]
}
