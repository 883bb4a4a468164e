package analysis

import (
	"math"
	"slices"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/sources"
)

// bucketCount gives a count gate's per-bucket numerator and denominator
// from an exact aggregate's bucket (the request path's requestGood,
// requestFailed and friends over offered requests); ok false for metrics
// it does not cover.
func bucketCount(metric string) (f func(bk *sources.AggBucket) (num, den float64), ok bool) {
	var num func(bk *sources.AggBucket) float64
	switch metric {
	case "slo_attainment":
		num = func(bk *sources.AggBucket) float64 { return bk.Good }
	case "error_rate":
		num = func(bk *sources.AggBucket) float64 { return bk.Failed }
	case "rejected_share":
		num = func(bk *sources.AggBucket) float64 { return bk.Rejected }
	case "canceled_share":
		num = func(bk *sources.AggBucket) float64 { return bk.Canceled }
	case "retry_share":
		num = func(bk *sources.AggBucket) float64 { return bk.Retried }
	case matchedTokens:
		num = func(bk *sources.AggBucket) float64 { return bk.GoodTokens }
	default:
		return nil, false
	}
	return func(bk *sources.AggBucket) (float64, float64) { return num(bk), offered(bk) }, true
}

// stratumCount is bucketCount, and for output_tokens_mean a bucket's
// output tokens over its completed requests that give their output
// length: what standardizedCount and the trend's strata (trendStrataOf)
// standardize per stratum.
func stratumCount(metric string) (f func(bk *sources.AggBucket) (num, den float64), ok bool) {
	if metric == "output_tokens_mean" {
		return func(bk *sources.AggBucket) (float64, float64) {
			return bk.OutputTokens, bk.Completed - bk.OutputUnknown
		}, true
	}
	return bucketCount(metric)
}

// standardizesByStratum reports whether the aggregate's count gates and
// their trends are standardized per stratum to the baseline's shares: an
// exact aggregate whose canary was reweighted to the baseline's mix, which
// the aggregate takes whatever mix the policy names (pooled or canary:
// a warning says so), but not explicit weights, which name policy
// classes, not these strata.
func (j *aggJudgement) standardizesByStratum() bool {
	return j.exact() && j.mix.factor != nil && j.c != j.cRaw && j.p.Normalize.Mix != normalize.MixWeights
}

// standardizedCount is the request path's standardized count gate
// (judgement.standardized) on an exact aggregate whose mix is reweighted
// to the baseline's: per stratum (aggMix.key: class, and prefix-cache band
// when stratified) and bucket totals of the analysed window, the
// baseline's shares as weights, and normalize.StandardizePaired on the
// common grid when the arms are paired (Standardize when not), so the
// interval is the request path's per-stratum influence variance, not the
// reweighted counts' pooled one. It returns the estimate and the arms'
// standardized values; ok false when it does not apply
// (standardizesByStratum: metrics data, explicit weights, the canary as
// counted (the naive comparison); a metric it does not cover, a NaN
// count, or a stratum one arm lacks).
//
// logScale compares the standardized values by their log ratio (a
// relative gate: goodput at matched offered load, whose metric is good
// requests, or their tokens, per offered request; output_tokens_mean).
func (j *aggJudgement) standardizedCount(metric string, logScale bool, conf float64) (est stats.Estimate, vb, vc float64, ok bool) {
	count, covered := stratumCount(metric)
	if !covered || !j.standardizesByStratum() || len(j.b.slices) == 0 || len(j.c.slices) == 0 {
		return est, 0, 0, false
	}
	if metric == matchedTokens && !(j.b.ds.Agg.GoodTokensCounted && j.cRaw.ds.Agg.GoodTokensCounted) {
		return est, 0, 0, false
	}
	lo, step, n := j.commonGrid()
	position := func(_ *sources.AggBucket, slice int) int { return slice }
	nbB, nbC := len(j.b.slices), len(j.cRaw.slices)
	if j.paired {
		position = func(bk *sources.AggBucket, _ int) int { return int(math.Round((bk.Start - lo) / step)) }
		nbB, nbC = n, n
	}
	xb, xc, ok := j.countStrata(count, position, nbB, nbC)
	if !ok {
		return est, 0, 0, false
	}
	w, err := normalize.Weights(normalize.MixBaseline, xc, xb, nil)
	if err != nil {
		return est, 0, 0, false
	}
	var res normalize.MixResult
	switch {
	case j.paired && logScale:
		res, err = normalize.StandardizeLogPaired(xc, xb, w, conf)
	case j.paired:
		res, err = normalize.StandardizePaired(xc, xb, w, conf)
	case logScale:
		res, err = normalize.StandardizeLog(xc, xb, w, conf)
	default:
		res, err = normalize.Standardize(xc, xb, w, conf)
	}
	if err != nil || math.IsNaN(res.Adjusted.Point) {
		return est, 0, 0, false
	}
	return res.Adjusted, res.Baseline, res.Canary, true
}

// countStrata lays out the per-stratum counts of an exact aggregate's two
// arms (the baseline and the canary as counted) as normalize.Strata over
// the union of their strata (aggMix.key, sorted): per stratum and
// position, the analysed buckets' numerator and denominator by count.
// position places an analysed bucket (slice: its slice's index in the arm)
// on a grid of nbB (baseline) or nbC (canary) positions; a bucket placed
// outside it is left out. ok is false when a bucket's count is NaN.
func (j *aggJudgement) countStrata(count func(*sources.AggBucket) (num, den float64), position func(bk *sources.AggBucket, slice int) int, nbB, nbC int) (xb, xc normalize.Strata, ok bool) {
	type cell struct {
		id       int // the stratum's index in ids, in order of first sight
		t        int
		num, den float64
	}
	// the strata's keys, each once, in order of first sight
	ids := map[string]int{}
	var keys []string
	arm := func(a *aggArm, nb int) ([]cell, bool) {
		at := a.sliceIndex()
		out := make([]cell, 0, len(a.ds.Agg.Buckets))
		for i := range a.ds.Agg.Buckets {
			bk := &a.ds.Agg.Buckets[i]
			k, in := at[bk.Start]
			if !in || bk.Class == "" {
				continue
			}
			num, den := count(bk)
			if math.IsNaN(num) || math.IsNaN(den) {
				return nil, false
			}
			if den == 0 && num == 0 {
				continue
			}
			if t := position(bk, k); t >= 0 && t < nb {
				key := j.mix.key(bk)
				id, seen := ids[key]
				if !seen {
					id = len(keys)
					ids[key] = id
					keys = append(keys, key)
				}
				out = append(out, cell{id, t, num, den})
			}
		}
		return out, true
	}
	cb, okb := arm(j.b, nbB)
	cc, okc := arm(j.cRaw, nbC)
	if !okb || !okc {
		return xb, xc, false
	}
	names := slices.Clone(keys)
	slices.Sort(names)
	// index maps a stratum's id to its place among the sorted names
	index := make([]int, len(keys))
	for i, k := range names {
		index[ids[k]] = i
	}
	var own []bool
	for i, k := range names {
		if j.mix.own[k] {
			if own == nil {
				own = make([]bool, len(names))
			}
			own[i] = true
		}
	}
	strata := func(cs []cell, nb int) normalize.Strata {
		s := normalize.Strata{Names: names, Own: own, Num: make([][]float64, len(names)), Den: make([][]float64, len(names))}
		for k := range names {
			s.Num[k], s.Den[k] = make([]float64, nb), make([]float64, nb)
		}
		for _, c := range cs {
			s.Num[index[c.id]][c.t] += c.num
			s.Den[index[c.id]][c.t] += c.den
		}
		return s
	}
	return strata(cb, nbB), strata(cc, nbC), true
}
