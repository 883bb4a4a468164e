package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// aggCache is the prefix-cache handling of an exact aggregate, chosen by
// the request path's rule (planMix): mode is stratify or none (CUPED,
// normalize.cache adjust, is not applied to an aggregate: the reason says
// so when the rule would have chosen it), reason says which and why.
type aggCache struct {
	mode, reason string
}

// stratified reports whether the prefix-cache bands are strata.
func (c aggCache) stratified() bool { return c.mode == "stratify" }

// planAggCache decides the prefix-cache handling of two exact aggregates
// (Aggregator strata carry the request's prefix-cache band) as planMix
// does on the requests, and returns the aggregates restratified for it:
// with the bands as strata (stray bands folded into their nearest band,
// requests without a cached-token count in their stratum's most common
// band over both arms), or with the bands merged away. The band counts are
// offered requests over every slice (the request path counts the
// requests after the warm-up cut; the aggregate decides before its cut,
// as its class mix does). Metrics aggregates carry no bands and are
// returned as they are.
func planAggCache(p *policies.Policy, b, c *sources.Aggregate) (*sources.Aggregate, *sources.Aggregate, aggCache) {
	if !b.Exact || !c.Exact {
		return b, c, aggCache{}
	}
	cache, mix := p.Normalize.Cache, p.Normalize.Mix
	plan := aggCache{mode: "none"}
	var fold map[string]string
	if cache != "none" {
		bandsB, bandsC := aggCacheBands(b), aggCacheBands(c)
		fold = strayBands(bandsB, bandsC)
		bandsB, bandsC = foldBands(bandsB, fold), foldBands(bandsC, fold)
		notHere := "CUPED on the per-bucket hit rate is not applied to an aggregate (judge with --exact to apply it)"
		switch cache {
		case "stratify":
			plan.mode, plan.reason = "stratify", "requested"
		case "adjust":
			plan.reason = "adjust requested, but " + notHere
			if mix != "none" {
				plan.reason = "adjust requested, but CUPED compares mean bucket attainment over each arm's own mix and would replace the mix-standardized comparison: not applied (set normalize.mix: none to use it)"
			}
		case "auto":
			if ok, why := baselineBandsCovered(bandsB, bandsC, mix); ok {
				plan.mode, plan.reason = "stratify", why
				break
			}
			ch := normalize.AutoCache(bandsC, bandsB, [2]int{aggSliceCount(c), aggSliceCount(b)})
			plan.reason = ch.Reason
			switch ch.Mode {
			case normalize.CacheModeStratify:
				plan.mode = "stratify"
			case normalize.CacheModeAdjust:
				if mix != "none" {
					plan.reason = "no cache adjustment: the bands are too thin to stratify and CUPED on the hit rate would replace the mix-standardized comparison (" + ch.Reason + ")"
				} else {
					plan.reason = "no cache adjustment: the bands are too thin to stratify, and " + notHere + " (" + ch.Reason + ")"
				}
			}
		}
		if plan.stratified() && len(fold) > 0 {
			plan.reason += "; " + foldText(fold)
		}
	}
	if !plan.stratified() {
		return restratify(b, func(head, _ string) string { return head }), restratify(c, func(head, _ string) string { return head }), plan
	}
	// a stratum's requests without a cached-token count count in its most
	// common known band over both arms
	counts := map[string]map[string]float64{}
	for _, agg := range []*sources.Aggregate{b, c} {
		for _, bk := range agg.Buckets {
			head, band := SplitCacheBand(bk.Class)
			if band == "" || band == normalize.CacheUnknown {
				continue
			}
			if to, ok := fold[band]; ok {
				band = to
			}
			if counts[head] == nil {
				counts[head] = map[string]float64{}
			}
			counts[head][band] += aggOffered(bk)
		}
	}
	dominant := map[string]string{}
	for head, m := range counts {
		best := ""
		for _, band := range sortedKeys(m) {
			if best == "" || m[band] > m[best] {
				best = band
			}
		}
		dominant[head] = best
	}
	name := func(head, band string) string {
		switch to, ok := fold[band]; {
		case ok:
			band = to
		case band == "" || band == normalize.CacheUnknown:
			band = normalize.CacheUnknown
			if d, ok := dominant[head]; ok {
				band = d
			}
		}
		return head + cacheSep + band
	}
	return restratify(b, name), restratify(c, name), plan
}

// aggCacheBands counts an exact aggregate's offered requests per known
// prefix-cache band.
func aggCacheBands(agg *sources.Aggregate) map[string]float64 {
	m := map[string]float64{}
	for _, bk := range agg.Buckets {
		if _, band := SplitCacheBand(bk.Class); band != "" && band != normalize.CacheUnknown {
			m[band] += aggOffered(bk)
		}
	}
	return m
}

func aggOffered(bk sources.AggBucket) float64 {
	return nan0(bk.Completed) + nan0(bk.Failed) + nan0(bk.Canceled) + nan0(bk.Rejected)
}

// aggSliceCount is the number of time slices of an aggregate.
func aggSliceCount(agg *sources.Aggregate) int {
	n := 0
	for i, bk := range agg.Buckets {
		if i == 0 || bk.Start != agg.Buckets[i-1].Start {
			n++
		}
	}
	return n
}

// restratify renames each stratum of an exact aggregate by name(stratum
// without its band, band) and merges the buckets of one slice that end up
// with the same name: counts and sums add, histograms merge on the union
// of their edges (exact). The input is not changed.
func restratify(agg *sources.Aggregate, name func(head, band string) string) *sources.Aggregate {
	out := *agg
	out.Buckets = make([]sources.AggBucket, 0, len(agg.Buckets))
	from := 0 // first bucket of the current slice in out.Buckets
	for i, bk := range agg.Buckets {
		if i > 0 && bk.Start != agg.Buckets[i-1].Start {
			slices.SortStableFunc(out.Buckets[from:], func(x, y sources.AggBucket) int { return cmp.Compare(x.Class, y.Class) })
			from = len(out.Buckets)
		}
		if bk.Class != "" {
			bk.Class = name(SplitCacheBand(bk.Class))
		}
		k := from
		for k < len(out.Buckets) && out.Buckets[k].Class != bk.Class {
			k++
		}
		if k == len(out.Buckets) {
			out.Buckets = append(out.Buckets, bk)
			continue
		}
		addBucket(&out.Buckets[k], bk)
	}
	slices.SortStableFunc(out.Buckets[from:], func(x, y sources.AggBucket) int { return cmp.Compare(x.Class, y.Class) })
	return &out
}

// addBucket adds o's counts, sums and histograms to b (two strata of one
// slice; the slice's gauges are the same on both).
func addBucket(b *sources.AggBucket, o sources.AggBucket) {
	for _, f := range []struct{ to, v *float64 }{{&b.Completed, &o.Completed}, {&b.Failed, &o.Failed}, {&b.Canceled, &o.Canceled},
		{&b.Rejected, &o.Rejected}, {&b.Good, &o.Good}, {&b.Retried, &o.Retried}, {&b.ShortOutputs, &o.ShortOutputs},
		{&b.TTFTSum, &o.TTFTSum}, {&b.TPOTSum, &o.TPOTSum}, {&b.E2ESum, &o.E2ESum}, {&b.PromptTokens, &o.PromptTokens},
		{&b.OutputTokens, &o.OutputTokens}, {&b.PrefixHits, &o.PrefixHits}, {&b.PrefixQueries, &o.PrefixQueries}, {&b.GoodTokens, &o.GoodTokens}} {
		*f.to += *f.v
	}
	b.TTFT, b.TPOT, b.E2E, b.Queue = addHist(b.TTFT, o.TTFT), addHist(b.TPOT, o.TPOT), addHist(b.E2E, o.E2E), addHist(b.Queue, o.Queue)
}

// cacheStep is the cache normalization step of an exact aggregate, worded
// as the request path's.
func (j *aggJudgement) cacheStep() NormalizationStep {
	p := j.p
	st := NormalizationStep{Name: "cache", Setting: p.Normalize.Cache, Detail: "not requested"}
	if p.Normalize.Cache == "none" {
		return st
	}
	hb, hc := cacheRate(j.b), cacheRate(j.c)
	if !j.exact() {
		st.Detail = fmt.Sprintf("hit rate (prefix_cache_hits / prefix_cache_queries) baseline %s, canary %s; shown, not adjusted", pctOrNA(hb), pctOrNA(hc))
		return st
	}
	// the canary as counted, not reweighted to the baseline's strata (which
	// would give a cold cache's requests weight 0)
	hc = cacheRate(j.cRaw)
	note := ""
	if !aggCacheShifted(hb, hc) {
		note = fmt.Sprintf(" (within %d pp of each other: the change did not move caching, so adjusting for it hides no effect)", CacheShiftPP)
	}
	st.Applied = j.cache.stratified()
	st.Detail = fmt.Sprintf("%s: %s; hit rate baseline %s, canary %s%s", j.cache.mode, j.cache.reason, pctOrNA(hb), pctOrNA(hc), note)
	return st
}

// aggCacheShifted is cacheShifted on the arms' hit rates.
func aggCacheShifted(hb, hc float64) bool {
	return !(math.Abs(hb-hc)*100 <= CacheShiftPP)
}
