package normalize

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/goodput-dev/goodput/analysis/stats"
)

// Prefix-cache hit-rate bands of CacheBand (share of prompt tokens served
// from the prefix cache).
const (
	CacheNone    = "cache 0"       // no cached prompt tokens
	CachePartial = "cache <50%"    // 0 < cached/prompt < 0.5
	CacheMostly  = "cache >=50%"   // cached/prompt ≥ 0.5
	CacheUnknown = "cache unknown" // cached or prompt tokens not known
	// CacheHighEdge is the hit rate at which CachePartial ends.
	CacheHighEdge = 0.5
)

// CacheBandAt names the bands by a small index, for aggregates that count
// per band: 1 CacheNone, 2 CachePartial, 3 CacheMostly, 4 CacheUnknown; ""
// for any other index (0: not split).
func CacheBandAt(i int) string {
	switch i {
	case 1:
		return CacheNone
	case 2:
		return CachePartial
	case 3:
		return CacheMostly
	case 4:
		return CacheUnknown
	}
	return ""
}

// CacheBand returns the prefix-cache hit-rate band of a request from its
// cached and prompt token counts: CacheNone (cached = 0), CachePartial
// (0 < cached/prompt < 0.5), CacheMostly (≥ 0.5; cached > prompt counts as
// fully cached) or CacheUnknown (cached < 0 or prompt ≤ 0, i.e. not
// reported).
//
// Caveat: the band is a pre-treatment stratum only when the change cannot
// affect caching (see AutoCache).
func CacheBand(cached, prompt int64) string {
	switch {
	case cached < 0 || prompt <= 0:
		return CacheUnknown
	case cached == 0:
		return CacheNone
	case float64(cached)/float64(prompt) < CacheHighEdge:
		return CachePartial
	}
	return CacheMostly
}

// Covariate is one arm's per-bucket outcome (e.g. the bucket's SLO
// attainment, or its median TTFT in seconds) and covariate (e.g. the
// bucket's prefix-cache hit rate in [0, 1], or its offered load in
// requests/s), in time order. A bucket where either is NaN is left out.
type Covariate struct {
	Outcome, Covariate []float64
}

// CUPEDArm is one arm's side of a CUPED adjustment.
type CUPEDArm struct {
	Buckets int // buckets used (both values finite)
	// Mean and AdjustedMean are the mean outcome per bucket before and
	// after adjustment; CovariateMean is the arm's mean covariate.
	Mean, AdjustedMean, CovariateMean float64
	// Var and AdjustedVar are the sample variances (n − 1) of the
	// per-bucket outcome before and after adjustment.
	Var, AdjustedVar float64
}

// CUPEDResult is a regression-adjusted comparison of bucket means.
type CUPEDResult struct {
	// Theta is the pooled within-arm slope Σ(X−X̄_a)(Y−Ȳ_a)/Σ(X−X̄_a)²
	// (outcome units per covariate unit); CovariateMean is X̄ over both
	// arms' buckets; Correlation is the pooled within-arm correlation ρ.
	Theta, CovariateMean, Correlation float64
	Canary, Baseline                  CUPEDArm
	// Unadjusted and Adjusted estimate the difference of mean outcome per
	// bucket, canary − baseline, with batch-means intervals
	// (stats.DiffOfRatios on the per-bucket series); Adjusted subtracts
	// Theta·(X̄_canary − X̄_baseline).
	Unadjusted, Adjusted stats.Estimate
	// VarianceReduction is 1 − SE²(Adjusted)/SE²(Unadjusted) (NaN when
	// undefined): the share of variance the covariate explained.
	VarianceReduction float64
}

// CUPED adjusts per-bucket outcomes for a covariate (Deng et al. 2013;
// statistics.md §3.8): Y_adj,t = Y_t − θ·(X_t − X̄), with θ the slope of Y on
// X pooled within arms (each arm centred at its own means, so a treatment
// effect on Y does not leak into θ) and X̄ the mean of X over both arms. The
// adjusted difference is (Ȳ_x − Ȳ_y) − θ·(X̄_x − X̄_y). Intervals at two-sided
// level conf use the batch-means variance of stats.DiffOfRatios on the
// per-bucket series, so bucket autocorrelation is respected; θ is treated
// as known (its estimation error is second order).
//
// The mediator caveat: CUPED removes the part of the difference that the
// covariate explains. That is right for exogenous covariates (offered load,
// class mix, and cache hit rate when the change cannot touch caching, e.g.
// a new attention kernel). When the change may alter caching (KV eviction,
// batch scheduler, prefix routing), a lower hit rate in the canary is part
// of its effect: adjusting for it hides a real regression. Then gate on
// Unadjusted and show Adjusted only as "how much is explained by the
// cache".
//
// Errors: mismatched lengths, fewer than two usable buckets in an arm, or a
// covariate with no variation within arms (θ undefined).
func CUPED(canary, baseline Covariate, conf float64) (CUPEDResult, error) {
	return cuped(canary, baseline, conf, false)
}

// PairedCUPED is CUPED for arms that ran at the same time on one bucket
// grid (canary and baseline of equal length, bucket t of both covering
// the same seconds; a bucket an arm has no data in holds NaN): θ and the
// adjusted series are as CUPED's, and the intervals are the paired ones
// of stats.PairedDiffOfRatios on the per-bucket differences, a bucket
// either arm lacks weighing 0 in that arm. Arms that share a traffic
// wave then no longer carry it in both variances, as the unadjusted
// paired comparison does not (Methods "bucket-mean-" and "cuped-"
// before the paired method's name, e.g. "cuped-paired-delta-lagwindow").
func PairedCUPED(canary, baseline Covariate, conf float64) (CUPEDResult, error) {
	if len(canary.Outcome) != len(baseline.Outcome) {
		return CUPEDResult{}, fmt.Errorf("CUPED: paired arms need one grid: canary %d buckets, baseline %d", len(canary.Outcome), len(baseline.Outcome))
	}
	return cuped(canary, baseline, conf, true)
}

func cuped(canary, baseline Covariate, conf float64, paired bool) (CUPEDResult, error) {
	var res CUPEDResult
	xs, xy, err := pairs(canary, "canary")
	if err != nil {
		return res, err
	}
	ys, yy, err := pairs(baseline, "baseline")
	if err != nil {
		return res, err
	}
	mxY, mxX := meanOf(xs), meanOf(xy)
	myY, myX := meanOf(ys), meanOf(yy)
	var sxy, sxx, syy float64
	acc := func(out, cov []float64, mo, mc float64) {
		for i := range out {
			sxy += (cov[i] - mc) * (out[i] - mo)
			sxx += (cov[i] - mc) * (cov[i] - mc)
			syy += (out[i] - mo) * (out[i] - mo)
		}
	}
	acc(xs, xy, mxY, mxX)
	acc(ys, yy, myY, myX)
	if !(sxx > 0) {
		return res, fmt.Errorf("CUPED: the covariate does not vary within the arms: the adjustment is undefined")
	}
	theta := sxy / sxx
	res.Theta = theta
	res.Correlation = sxy / math.Sqrt(sxx*syy)
	res.CovariateMean = (sumOf(xy) + sumOf(yy)) / float64(len(xy)+len(yy))
	adj := func(out, cov []float64) []float64 {
		a := make([]float64, len(out))
		for i := range out {
			a[i] = out[i] - theta*(cov[i]-res.CovariateMean)
		}
		return a
	}
	ax, ay := adj(xs, xy), adj(ys, yy)
	res.Canary = CUPEDArm{Buckets: len(xs), Mean: mxY, AdjustedMean: meanOf(ax), CovariateMean: mxX, Var: sampleVar(xs), AdjustedVar: sampleVar(ax)}
	res.Baseline = CUPEDArm{Buckets: len(ys), Mean: myY, AdjustedMean: meanOf(ay), CovariateMean: myX, Var: sampleVar(ys), AdjustedVar: sampleVar(ay)}
	if paired {
		res.Unadjusted = stats.PairedDiffOfRatios(gridRatio(canary, 0, 0), gridRatio(baseline, 0, 0), conf)
		res.Unadjusted.Method = "bucket-mean-" + res.Unadjusted.Method
		res.Adjusted = stats.PairedDiffOfRatios(gridRatio(canary, theta, res.CovariateMean), gridRatio(baseline, theta, res.CovariateMean), conf)
		res.Adjusted.Method = "cuped-" + res.Adjusted.Method
	} else {
		res.Unadjusted = stats.DiffOfRatios(meanRatio(xs), meanRatio(ys), conf)
		res.Unadjusted.Method = "bucket-mean-batchmeans"
		res.Adjusted = stats.DiffOfRatios(meanRatio(ax), meanRatio(ay), conf)
		res.Adjusted.Method = "cuped-batchmeans"
	}
	res.VarianceReduction = 1 - (res.Adjusted.SE*res.Adjusted.SE)/(res.Unadjusted.SE*res.Unadjusted.SE)
	return res, nil
}

// gridRatio is an arm's adjusted outcome Y_t − θ·(X_t − X̄) per bucket of
// its grid as the ratio ΣY/Σ1, a bucket without both values finite
// holding 0/0.
func gridRatio(c Covariate, theta, mean float64) stats.Ratio {
	r := stats.Ratio{Num: make([]float64, len(c.Outcome)), Den: make([]float64, len(c.Outcome))}
	for i, o := range c.Outcome {
		if v := c.Covariate[i]; bothFinite(o, v) {
			r.Num[i], r.Den[i] = o-theta*(v-mean), 1
		}
	}
	return r
}

// bothFinite reports whether a bucket's outcome o and covariate v are
// both finite: a bucket CUPED uses.
func bothFinite(o, v float64) bool {
	return !math.IsNaN(o) && !math.IsNaN(v) && !math.IsInf(o, 0) && !math.IsInf(v, 0)
}

// pairs returns the buckets of c where both values are finite.
func pairs(c Covariate, arm string) (out, cov []float64, err error) {
	if len(c.Outcome) != len(c.Covariate) {
		return nil, nil, fmt.Errorf("CUPED: %s has %d outcomes but %d covariate values", arm, len(c.Outcome), len(c.Covariate))
	}
	for i := range c.Outcome {
		o, v := c.Outcome[i], c.Covariate[i]
		if !bothFinite(o, v) {
			continue
		}
		out = append(out, o)
		cov = append(cov, v)
	}
	if len(out) < 2 {
		return nil, nil, fmt.Errorf("CUPED: %s has %d buckets with both outcome and covariate, need ≥ 2", arm, len(out))
	}
	return out, cov, nil
}

// meanRatio expresses a per-bucket series as the ratio ΣY/Σ1 for the
// batch-means machinery of package stats.
func meanRatio(y []float64) stats.Ratio {
	r := stats.Ratio{Num: y, Den: make([]float64, len(y))}
	for i := range r.Den {
		r.Den[i] = 1
	}
	return r
}

func sampleVar(v []float64) float64 {
	if len(v) < 2 {
		return math.NaN()
	}
	m := meanOf(v)
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return ss / float64(len(v)-1)
}

// The cache modes (policy key normalize.cache).
const (
	CacheModeNone     = "none"
	CacheModeStratify = "stratify"
	CacheModeAdjust   = "adjust"
	CacheModeAuto     = "auto"
)

// MinBandRequests is the fewest requests per arm in every populated
// hit-rate band for AutoCache to stratify (three times the
// MinStratumRequests floor: hit-rate bands are usually unbalanced).
const MinBandRequests = 30

// MinCovariateBuckets is the fewest buckets per arm with a known hit rate
// for AutoCache to adjust (the batch-means variance needs two batches of
// four).
const MinCovariateBuckets = 8

// CacheChoice is AutoCache's decision.
type CacheChoice struct {
	Mode   string // CacheModeStratify, CacheModeAdjust or CacheModeNone
	Reason string // which and why, with the numbers
	// Caveat is the mediator warning to show whenever Mode is not none.
	Caveat string
}

// MediatorCaveat is the warning attached to every cache adjustment.
const MediatorCaveat = "the prefix-cache hit rate is a mediator if the change can alter caching (KV eviction, batch scheduling, prefix routing): " +
	"then adjusting for it hides part of a real effect, and the unadjusted comparison is the one to gate on"

// AutoCache chooses how to handle prefix-cache state (normalize.cache:
// auto). canary and baseline map each CacheBand to the arm's requests in it
// (after warm-up); covBuckets are the buckets per arm (canary, baseline)
// with a known hit rate. The rule, in order:
//
//   - none when neither arm reports cached tokens (every request in
//     CacheUnknown);
//   - stratify when every band populated in either arm (CacheUnknown
//     included) has at least MinBandRequests requests in both arms;
//   - adjust (CUPED on the per-bucket hit rate) when both arms have at
//     least MinCovariateBuckets buckets with a known hit rate;
//   - else none.
func AutoCache(canary, baseline map[string]float64, covBuckets [2]int) CacheChoice {
	known := 0.0
	bands := map[string]bool{}
	for _, m := range []map[string]float64{canary, baseline} {
		for b, n := range m {
			if n > 0 {
				bands[b] = true
				if b != CacheUnknown {
					known += n
				}
			}
		}
	}
	if known == 0 {
		return CacheChoice{Mode: CacheModeNone, Reason: "no cache adjustment: neither arm reports cached prompt tokens"}
	}
	names := make([]string, 0, len(bands))
	for b := range bands {
		names = append(names, b)
	}
	sort.Strings(names)
	var thin []string
	var counts []string
	for _, b := range names {
		counts = append(counts, fmt.Sprintf("%q: canary %.0f, baseline %.0f", b, canary[b], baseline[b]))
		if canary[b] < MinBandRequests || baseline[b] < MinBandRequests {
			thin = append(thin, b)
		}
	}
	if len(thin) == 0 {
		return CacheChoice{Mode: CacheModeStratify, Caveat: MediatorCaveat,
			Reason: fmt.Sprintf("stratify by prefix-cache hit band: every band has ≥ %d requests in both arms (%s)", MinBandRequests, strings.Join(counts, "; "))}
	}
	if covBuckets[0] >= MinCovariateBuckets && covBuckets[1] >= MinCovariateBuckets {
		return CacheChoice{Mode: CacheModeAdjust, Caveat: MediatorCaveat,
			Reason: fmt.Sprintf("adjust for the per-bucket hit rate (CUPED): band(s) %s have fewer than %d requests in an arm (%s); %d and %d buckets have a known hit rate",
				quoteList(thin), MinBandRequests, strings.Join(counts, "; "), covBuckets[0], covBuckets[1])}
	}
	return CacheChoice{Mode: CacheModeNone,
		Reason: fmt.Sprintf("no cache adjustment: band(s) %s have fewer than %d requests in an arm and only %d (canary) and %d (baseline) buckets have a known hit rate (need ≥ %d)",
			quoteList(thin), MinBandRequests, covBuckets[0], covBuckets[1], MinCovariateBuckets)}
}
