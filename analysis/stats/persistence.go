package stats

import (
	"math"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// PersistencePhi is the per-bucket AR(1) coefficient φ = exp(−bucket/tau)
// of a slowdown whose correlation decays as exp(−t/tau): 0 for tau ≤ 0
// (no declared persistence) or a non-positive bucket. Both in seconds.
func PersistencePhi(bucketSecs, tauSecs float64) float64 {
	if !(tauSecs > 0) || !(bucketSecs > 0) {
		return 0
	}
	return math.Exp(-bucketSecs / tauSecs)
}

// PersistenceTau is PersistencePhi's inverse: the correlation time
// −bucket/ln φ, in seconds, of a per-bucket AR(1) coefficient phi on
// buckets of bucketSecs seconds; 0 for phi ≤ 0 (no persistence), +Inf for
// phi ≥ 1.
func PersistenceTau(bucketSecs, phi float64) float64 {
	switch {
	case !(phi > 0):
		return 0
	case phi >= 1:
		return math.Inf(1)
	}
	return -bucketSecs / math.Log(phi)
}

// batchLayout is the batches a batch-sum variance of a run of b buckets
// uses: the lag window's min(LagWindowBatches, b/4) from 4·15 buckets up,
// the plain batch means' PairedBatches below (as paired chooses), with
// whether the lag-1 term is added.
func batchLayout(b int) (q int, lag bool) {
	if b/4 >= lagWindowMinBatches {
		return min(LagWindowBatches, b/4), true
	}
	return min(PairedBatches, b), false
}

// batchMoments is, for a unit-variance AR(1) bucket series of coefficient
// phi over b buckets cut into q contiguous batches (batch g covering
// [g·b/q, (g+1)·b/q)) and centred on its mean, the variance estimate
// V = ΣD_g² (+ 2ΣD_g·D_{g+1} when lag) of the batch sums D_g: the ratio
// r = E[V]/Var(ΣD) of its mean to the variance of the run's total, and
// its Satterthwaite degrees of freedom ν = 2E[V]²/Var(V) for a Gaussian
// series (Var(V) = 2·tr((AΣ_D)²), A the quadratic form's matrix, Σ_D the
// batch sums' covariance). Sums over buckets are in closed form, so the
// cost is O(q²) whatever b.
func batchMoments(b, q int, lag bool, phi float64) (r, nu float64) {
	lo := func(g int) int { return g * b / q }
	n := make([]float64, q)
	for g := range q {
		n[g] = float64(lo(g+1) - lo(g))
	}
	// C: covariance of the raw batch sums S_g
	c := make([][]float64, q)
	for g := range c {
		c[g] = make([]float64, q)
	}
	geo := func(m float64) float64 { // Σ_{u<m} φ^u
		if phi == 0 {
			return 1
		}
		return (1 - math.Pow(phi, m)) / (1 - phi)
	}
	for g := range q {
		c[g][g] = arSumVar(n[g], phi)
		for h := g + 1; h < q; h++ {
			gap := float64(lo(h) - lo(g+1))
			v := math.Pow(phi, gap+1) * geo(n[g]) * geo(n[h])
			c[g][h], c[h][g] = v, v
		}
	}
	// the run's total, and each batch's covariance with it
	row := make([]float64, q)
	var total float64
	for g := range q {
		for h := range q {
			row[g] += c[g][h]
		}
		total += row[g]
	}
	bf := float64(b)
	// Σ_D = P C P', P = I − w1', w_g = n_g/b
	sd := make([][]float64, q)
	for g := range q {
		sd[g] = make([]float64, q)
		wg := n[g] / bf
		for h := range q {
			wh := n[h] / bf
			sd[g][h] = c[g][h] - wh*row[g] - wg*row[h] + wg*wh*total
		}
	}
	// AΣ_D with A = I (+ the adjacent off-diagonals when lag)
	as := make([][]float64, q)
	for g := range q {
		as[g] = make([]float64, q)
		for h := range q {
			v := sd[g][h]
			if lag {
				if g > 0 {
					v += sd[g-1][h]
				}
				if g+1 < q {
					v += sd[g+1][h]
				}
			}
			as[g][h] = v
		}
	}
	var ev, tr2 float64
	for g := range q {
		ev += as[g][g]
		for h := range q {
			tr2 += as[g][h] * as[h][g]
		}
	}
	return ev / total, 2 * ev * ev / (2 * tr2)
}

// PersistenceWidening is the factor (≥ 1) by which the half-width of a
// batch-sum interval on a run of b buckets is multiplied when the arms'
// own slowdowns are declared to follow an AR(1) of coefficient phi per
// bucket (PersistencePhi of the policy's window.persistence), at two-sided
// confidence conf:
//
//	f = t_ν(φ)(½ + c/2)/t_ν(0)(½ + c/2) · √(r(0)/r(φ)),
//
// with r and ν those of batchMoments for the batch layout the run's
// interval uses (the lag window from 60 buckets up, six batch means
// below). A run of 30 minutes holds few stretches as long as such a
// slowdown: its batch sums read the variance low (r falls) and the
// estimate is noisier (ν falls), which the run alone cannot tell apart
// from white noise (a lag-window factor fitted from one run's 180 buckets
// read 9.5 at the 90th percentile under φ 0.8). The factor is 1 for
// phi ≤ 0, fewer than 2 buckets or a non-finite input; it assumes all the
// paired residual's variance persists (white sampling noise mixed in makes
// it conservative). testdata/persistence.py checks r and ν by dense
// matrices.
func PersistenceWidening(b int, phi, conf float64) float64 {
	q, lag := batchLayout(b)
	return widening(b, q, lag, 1, phi, conf)
}

// PersistenceWideningOf is PersistenceWidening for an estimate of this
// package made by method: the independent arms' batch means
// (DiffOfRatios, LogRatioOfRatios: methods "…delta-batchmeans…" without
// "paired") on each arm's min(maxBatches, b/4) plain batches, their two
// arms' degrees of freedom added as Welch's are for equal variances;
// every other method (the paired lag window or batch means, the block
// bootstraps, sectioning) on the paired layout of PersistenceWidening.
func PersistenceWideningOf(method string, b int, phi, conf float64) float64 {
	if strings.Contains(method, "delta-batchmeans") && !strings.Contains(method, "paired") {
		return widening(b, min(maxBatches, b/4), false, 2, phi, conf)
	}
	return PersistenceWidening(b, phi, conf)
}

// widening is the factor for b buckets in q batches (lag: with the lag-1
// term), the degrees of freedom of the batch sums' estimate multiplied by
// arms (independent arms of one layout).
func widening(b, q int, lag bool, arms float64, phi, conf float64) float64 {
	if !(phi > 0) || !(phi < 1) || b < 2 || q < 2 || !(conf > 0 && conf < 1) {
		return 1
	}
	r0, nu0 := batchMoments(b, q, lag, 0)
	r, nu := batchMoments(b, q, lag, phi)
	if !(r > 0) || !(nu > 0) {
		return 1
	}
	p := 0.5 + conf/2
	f := tQuantile(p, math.Max(arms*nu, 1)) / tQuantile(p, arms*nu0) * math.Sqrt(r0/r)
	if !(f > 1) || math.IsInf(f, 0) {
		return 1
	}
	return f
}

// SegmentInflationAt is TrendInflation's factor for the segments segs when
// the bucket series is declared to follow an AR(1) of coefficient phi
// (0 < phi < 1) in all of its variance, fitted from nothing: the floor a
// declared window.persistence sets under the fitted factor. 1 for phi
// outside (0, 1) or fewer than 3 segments.
func SegmentInflationAt(segs [][2]int, phi float64) float64 {
	if !(phi > 0 && phi < 1) || len(segs) < 3 {
		return 1
	}
	for i, s := range segs {
		if s[1]-s[0] < 1 || (i > 0 && s[0] < segs[i-1][1]) {
			return 1
		}
	}
	return math.Max(1, segmentInflation(segs, phi, 1))
}

// StretchDF is the degrees of freedom of the spread of q disjoint
// stretches of m buckets each around their mean, for a bucket series
// declared to follow an AR(1) of coefficient phi: the Satterthwaite
// ν = 2E[Q]²/Var(Q) of Q = Σ(S_i − S̄)² (batchMoments without the lag
// term), q − 1 at phi = 0 (and for phi outside (0, 1)). Stretches that
// share slowdowns longer than themselves spread less than their number
// says, so a stretch set against their spread at t on q − 1 degrees of
// freedom stands out too often; at most q − 1, at least 1.
func StretchDF(q, m int, phi float64) float64 {
	if q < 2 || m < 1 {
		return math.NaN()
	}
	if !(phi > 0 && phi < 1) {
		return float64(q - 1)
	}
	_, nu := batchMoments(q*m, q, false, phi)
	return math.Max(1, math.Min(float64(q-1), nu))
}

// PersistenceFit is what a long history says about how long an arm's own
// slowdowns last, read on windows as long as the runs to be judged.
type PersistenceFit struct {
	// Windows is how many disjoint windows of Buckets buckets the history
	// held (a trailing part window is not read).
	Windows, Buckets int
	// Kappa is the variance of the windows' errors (each window's estimate
	// less the history's) over what each window's own lag-window batch
	// sums read, relative to the same ratio for independent buckets: 1 when
	// a window's variance is read right, above 1 by as much as the
	// intervals of runs that long are too narrow (squared). KappaLo and
	// KappaHi bound it at two-sided confidence Confidence (the windows'
	// error variance taken as χ² on Windows − 1 degrees of freedom; the
	// mean of the windows' own estimates is far steadier).
	Kappa, KappaLo, KappaHi, Confidence float64
	// Phi, PhiLo and PhiHi are the per-bucket AR(1) coefficients whose
	// shortfall at Buckets buckets equals Kappa, KappaLo and KappaHi (0
	// where that is 1 or less): the persistence to declare is
	// −bucket/ln φ.
	Phi, PhiLo, PhiHi float64
}

// FitPersistence reads a history's persistence from the bucket series of
// two halves of one arm (x and y on one grid, e.g. its replicas split in
// two, so that what both halves share — the load of the hour — cancels as
// it does between paired arms), or of x alone when y is empty (then what
// the arm's load does over the day counts as persistence: an upper bound).
// The history is cut into disjoint windows of windowBuckets buckets; for
// each, the error of the difference of the halves' ratios against the
// history's, and the variance the judge's batch sums read from that
// window alone (the lag window at 60 buckets and more, six batch means
// below: batchLayout). ok is false when fewer than 8 windows fit, or a
// window has no denominator in a half, or the input is malformed.
func FitPersistence(x, y Ratio, windowBuckets int, conf float64) (PersistenceFit, bool) {
	n := len(x.Num)
	single := len(y.Num) == 0
	if single {
		y = Ratio{Num: make([]float64, n), Den: make([]float64, n)}
		for t := range y.Den {
			y.Den[t] = 1
		}
	}
	if n == 0 || len(x.Den) != n || len(y.Num) != n || len(y.Den) != n || windowBuckets < 8 || !(conf > 0 && conf < 1) {
		return PersistenceFit{}, false
	}
	w := n / windowBuckets
	fit := PersistenceFit{Windows: w, Buckets: windowBuckets, Confidence: conf}
	if w < 8 {
		return fit, false
	}
	rx, ry, _, _, ok := pairedScales(x, y, false)
	if !ok {
		return fit, false
	}
	q, lag := batchLayout(windowBuckets)
	errs := make([]float64, w)
	var meanV float64
	for k := range w {
		lo, hi := k*windowBuckets, (k+1)*windowBuckets
		xw := Ratio{Num: x.Num[lo:hi], Den: x.Den[lo:hi]}
		yw := Ratio{Num: y.Num[lo:hi], Den: y.Den[lo:hi]}
		wx, wy, sums, ok := pairedSums(xw, yw, false, q)
		if !ok || len(sums) != q {
			return fit, false
		}
		errs[k] = (wx - rx) - (wy - ry)
		v := batchMeansVar(sums) * float64(q-1) / float64(q) // ΣD²
		if lag {
			v = lagWindowVar(sums)
		}
		meanV += v / float64(w)
	}
	if !(meanV > 0) {
		return fit, false
	}
	var m, ss float64
	for _, e := range errs {
		m += e / float64(w)
	}
	for _, e := range errs {
		ss += (e - m) * (e - m)
	}
	varT := ss / float64(w-1)
	r0, _ := batchMoments(windowBuckets, q, lag, 0)
	fit.Kappa = varT * r0 / meanV
	// the interval: the windows' error variance on w − 1 degrees of
	// freedom and the mean of their own estimates on w·ν (ν theirs at the
	// fitted persistence), combined as the Satterthwaite sum of the two
	// log-variances
	fit.Phi = phiForKappa(windowBuckets, q, lag, fit.Kappa)
	_, nu := batchMoments(windowBuckets, q, lag, fit.Phi)
	df := 1 / (1/float64(w-1) + 1/(float64(w)*nu))
	chi := distuv.ChiSquared{K: df}
	fit.KappaLo = fit.Kappa * df / chi.Quantile(0.5+conf/2)
	fit.KappaHi = fit.Kappa * df / chi.Quantile(0.5-conf/2)
	fit.PhiLo = phiForKappa(windowBuckets, q, lag, fit.KappaLo)
	fit.PhiHi = phiForKappa(windowBuckets, q, lag, fit.KappaHi)
	return fit, true
}

// phiForKappa is the AR(1) coefficient φ in [0, 0.9999] at which the
// batch layout's shortfall r(0)/r(φ) equals kappa (bisection; the shortfall
// grows with φ): 0 for kappa ≤ 1, 0.9999 beyond what that reaches.
func phiForKappa(b, q int, lag bool, kappa float64) float64 {
	if !(kappa > 1) {
		return 0
	}
	lo, hi := 0.0, 0.9999
	if shortfall(b, q, lag, hi) <= kappa {
		return hi
	}
	for range 60 {
		mid := (lo + hi) / 2
		if shortfall(b, q, lag, mid) < kappa {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// ARMeanVar is the variance of the mean of m consecutive values of a
// unit-variance AR(1) of coefficient phi (1/m at phi 0, near 1 when the
// correlation outlasts the m values): (m(1+φ)/(1−φ) − 2φ(1−φᵐ)/(1−φ)²)/m².
// NaN for m < 1 or phi outside [0, 1).
func ARMeanVar(m int, phi float64) float64 {
	if m < 1 || !(phi >= 0 && phi < 1) {
		return math.NaN()
	}
	f := float64(m)
	return arSumVar(f, phi) / (f * f)
}

// arSumVar is the variance of the sum of m consecutive values of a
// unit-variance AR(1) of coefficient phi in [0, 1):
// m(1+φ)/(1−φ) − 2φ(1−φᵐ)/(1−φ)² (m at phi 0).
func arSumVar(m, phi float64) float64 {
	return m*(1+phi)/(1-phi) - 2*phi*(1-math.Pow(phi, m))/((1-phi)*(1-phi))
}

// shortfall is r(0)/r(φ) for b buckets in q batches (lag: with the lag-1
// term): how much narrower the batch sums read the total's variance under
// an AR(1) of coefficient phi than under independent buckets.
func shortfall(b, q int, lag bool, phi float64) float64 {
	r0, _ := batchMoments(b, q, lag, 0)
	r, _ := batchMoments(b, q, lag, phi)
	return r0 / r
}

// LagWindowShortfall is r(0)/r(φ) for the paired layout of b buckets: the
// κ FitPersistence reads on a history whose paired residual is all a
// unit AR(1) of coefficient phi (1 at phi 0 and outside [0, 1)).
func LagWindowShortfall(b int, phi float64) float64 {
	q, lag := batchLayout(b)
	if !(phi > 0 && phi < 1) || q < 2 {
		return 1
	}
	return shortfall(b, q, lag, phi)
}
