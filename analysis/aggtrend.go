package analysis

import (
	"maps"
	"math"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// trendChecks is the trend check on paired aggregated arms, the request
// path's (trendEvals) on the slices: the shared grid runs from the earlier
// first analysed slice to the later last one; a count, share or mean gate
// takes each segment's summed counts, a latency-quantile gate the quantile
// of each arm's histograms merged over the segment's slices, known within
// the bin that holds it (an exact aggregate's log-linear bins, a factor
// 2^(1/256); a metrics histogram's buckets, often far wider: a metric
// they leave unresolved is not followed, with a warning). The canary is taken as counted
// (cRaw), not reweighted to the baseline's class mix, as on the request
// path: count, share and mean trends of a reweighted exact aggregate are
// standardized segment by segment (trendStrataOf), latency-quantile
// trends recentred on the gate's adjusted level (levels, trendLevels). A
// count the source does not report is not followed.
func (j *aggJudgement) trendChecks(levels map[string]float64) []gateEval {
	if !j.paired {
		return nil
	}
	step := j.b.ds.Agg.Step
	b, c := j.b, j.cRaw
	lo, nb, atB, atC := j.rawGrid()
	// a count's per-slice numerator and denominator in both arms
	// (baseline first), read once per metric for the segments and the
	// inflation of the line's variance
	ratios := map[string][2]aggRatioSeries{}
	ratiosOf := func(metric string) ([2]aggRatioSeries, bool) {
		if rs, ok := ratios[metric]; ok {
			return rs, true
		}
		rb, okb := b.ratioAt(metric, false)
		rc, okc := c.ratioAt(metric, false)
		if !okb || !okc {
			return [2]aggRatioSeries{}, false
		}
		rs := [2]aggRatioSeries{{rb.Num, rb.Den}, {rc.Num, rc.Den}}
		ratios[metric] = rs
		return rs, true
	}
	// count, share and mean gates are standardized segment by segment,
	// as on the request path, where their gates are (standardizesByStratum)
	strata := map[string]*trendStrata{}
	if j.standardizesByStratum() {
		levels = maps.Clone(levels)
		for _, g := range j.p.Gates {
			if s, ok := j.trendStrataOf(g.Metric, lo, step, nb); ok {
				strata[g.Metric] = s
				delete(levels, g.Metric)
			}
		}
	}
	segment := func(metric string, info policies.MetricInfo, from, to int) (trendPoint, bool) {
		if s, ok := strata[metric]; ok {
			return s.segment(from, to)
		}
		if info.Latency != "" {
			var sb, sc histo.Sum
			for t := from; t < to; t++ {
				if i := atB[t]; i >= 0 {
					sb.Add(latencyOfSlice(&b.slices[i], info.Latency))
				}
				if i := atC[t]; i >= 0 {
					sc.Add(latencyOfSlice(&c.slices[i], info.Latency))
				}
			}
			hb, hc := sb.Histogram(), sc.Histogram()
			need := math.Ceil(minTailPerSegment / (1 - info.Quantile))
			if !(hb.Total() >= need && hc.Total() >= need) {
				return trendPoint{}, false
			}
			q := info.Quantile
			pt := trendPoint{b: histo.Quantile(q, hb), c: histo.Quantile(q, hc), nb: hb.Total(), nc: hc.Total(), fromHistograms: true}
			pt.bLo, pt.bHi = histo.QuantileBounds(q, hb)
			pt.cLo, pt.cHi = histo.QuantileBounds(q, hc)
			// the interpolated point lies within its bin; a quantile in
			// the +Inf bucket has no finite upper end and is not followed
			ok := pt.bLo <= pt.b && pt.b <= pt.bHi && pt.cLo <= pt.c && pt.c <= pt.cHi && !math.IsInf(pt.bHi, 1) && !math.IsInf(pt.cHi, 1)
			return pt, ok
		}
		rs, ok := ratiosOf(metric)
		if !ok {
			return trendPoint{}, false
		}
		var nbs, dbs, ncs, dcs float64
		for t := from; t < to; t++ {
			if i := atB[t]; i >= 0 {
				nbs, dbs = nbs+rs[0].num[i], dbs+rs[0].den[i]
			}
			if i := atC[t]; i >= 0 {
				ncs, dcs = ncs+rs[1].num[i], dcs+rs[1].den[i]
			}
		}
		if !(dbs > 0 && dcs > 0) {
			return trendPoint{}, false
		}
		if !j.exact() && metric == "slo_attainment" {
			// good requests bounded from histograms: the segment's share
			// lies between its counts at the two ends of the bounds
			pt := trendPoint{b: nbs / dbs, c: ncs / dcs, nb: dbs, nc: dcs, fromHistograms: true}
			pt.bLo, pt.cLo = pt.b, pt.c
			var hbs, hcs float64
			for t := from; t < to; t++ {
				if i := atB[t]; i >= 0 {
					hbs += b.slices[i].goodHi
				}
				if i := atC[t]; i >= 0 {
					hcs += c.slices[i].goodHi
				}
			}
			pt.bHi, pt.cHi = hbs/dbs, hcs/dcs
			return pt, true
		}
		return exactTrendPoint(nbs/dbs, ncs/dcs, dbs, dcs), true
	}
	// a count's slices on the grid, for the inflation of the line's
	// variance (the lower counts of good requests where they are bounded)
	buckets := func(metric string, info policies.MetricInfo) (stats.Ratio, stats.Ratio, bool) {
		if info.Latency != "" {
			// the values in or above the bin that holds the arm's
			// quantile over the grid, among each slice's
			arm := func(a *aggArm, at []int) stats.Ratio {
				var sum histo.Sum
				for _, i := range at {
					if i >= 0 {
						sum.Add(latencyOfSlice(&a.slices[i], info.Latency))
					}
				}
				q, _ := histo.QuantileBounds(info.Quantile, sum.Histogram())
				out := stats.Ratio{Num: make([]float64, nb), Den: make([]float64, nb)}
				for t, i := range at {
					if i < 0 {
						continue
					}
					h := latencyOfSlice(&a.slices[i], info.Latency)
					if above, _ := histo.Above(h, q); above > 0 {
						out.Num[t] = above
					}
					if n := h.Total(); n > 0 {
						out.Den[t] = n
					}
				}
				return out
			}
			return arm(c, atC), arm(b, atB), true
		}
		rs, ok := ratiosOf(metric)
		if !ok {
			return stats.Ratio{}, stats.Ratio{}, false
		}
		arm := func(r aggRatioSeries, at []int) stats.Ratio {
			out := stats.Ratio{Num: make([]float64, nb), Den: make([]float64, nb)}
			for t, i := range at {
				if i >= 0 {
					out.Num[t], out.Den[t] = r.num[i], r.den[i]
				}
			}
			return out
		}
		return arm(rs[1], atC), arm(rs[0], atB), true
	}
	skip := func(metric string) bool { return j.unreported(metric) != "" }
	out, unresolved := trendEvals(j.p, nb, step, skip, levels, segment, buckets)
	for _, w := range unresolved {
		j.warnf("%s", w)
	}
	return out
}

type aggRatioSeries struct{ num, den []float64 }

// trendStrataOf is trendStrata for a count, share or mean gate of an exact
// aggregate: per stratum (aggMix.key) and position of the trend grid (lo
// seconds, step, nb positions) the analysed buckets' numerator and
// denominator in each arm (the canary as counted), and the baseline's
// shares as weights, as standardizedCount takes them for the gate. False
// for other metrics, or a count a bucket does not give.
func (j *aggJudgement) trendStrataOf(metric string, lo, step float64, nb int) (*trendStrata, bool) {
	count, ok := stratumCount(metric)
	if !ok {
		return nil, false
	}
	position := func(bk *sources.AggBucket, _ int) int { return int(math.Round((bk.Start - lo) / step)) }
	xb, xc, ok := j.countStrata(count, position, nb, nb)
	if !ok {
		return nil, false
	}
	w, err := normalize.Weights(normalize.MixBaseline, xc, xb, nil)
	if err != nil {
		return nil, false
	}
	return &trendStrata{b: xb, c: xc, w: w}, true
}

// rawGrid lays the baseline and the canary as counted (cRaw) on their
// shared grid: from the earlier first analysed slice (lo, seconds) to the
// later last one, nb positions one step apart; atB[t] and atC[t] are the
// arms' slices at position t, or −1. Both arms must hold slices.
func (j *aggJudgement) rawGrid() (lo float64, nb int, atB, atC []int) {
	step := j.b.ds.Agg.Step
	b, c := j.b, j.cRaw
	lo = math.Min(b.slices[0].start, c.slices[0].start)
	hi := math.Max(b.slices[len(b.slices)-1].start, c.slices[len(c.slices)-1].start)
	nb = int(math.Round((hi-lo)/step)) + 1
	index := func(a *aggArm) []int {
		at := make([]int, nb)
		for i := range at {
			at[i] = -1
		}
		for i, s := range a.slices {
			if t := int(math.Round((s.start - lo) / step)); t >= 0 && t < nb {
				at[t] = i
			}
		}
		return at
	}
	return lo, nb, index(b), index(c)
}
