package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/sources"
)

// aggMix is the mix standardisation of an aggregate comparison: the
// canary's counts and histograms per stratum are weighted by
// w_baseline/w_canary of the stratum's offered requests, so its figures
// are those of the baseline's mix (post-stratification) — but in the strata
// the outcome made, which each arm keeps at its own share: there the
// canary's weight is 1, and its other strata take the baseline's mix
// within the share those leave. The strata are
// the aggregate's (AggBucket.Class: the class label or token-length band
// with the policy class), crossed with the prefix-cache band
// (AggBucket.Cache) when the cache is stratified, decided as the request
// path's planMix decides.
type aggMix struct {
	factor  map[string]float64 // canary weight per stratum (key); nil when not applied
	applied bool
	detail  string
	// unmatched is the unmatched_strata guardrail when one arm serves
	// classes the other never served (unmatchedEval)
	unmatched *gateEval
	// classFold counts a stray class in another (strayStrataFolds), by
	// the class strata merge gives
	classFold map[string]string
	// merge is the class stratum of a bucket's class key: the key itself,
	// or its label or band alone when a policy class is decided by output
	// length (outcomeClasses)
	merge func(string) string
	// own holds the class strata each arm keeps at its own share, the
	// outcome's strata (strayStrataFolds): the canary's weight there is 1
	// and its other strata share what is left
	own map[string]bool
	// band maps a stratum (after classFold) and the bucket's own band to
	// the band it is counted in; nil when the cache is not stratified
	band map[[2]string]string
	// cache is the cache handling (stratify or none) and cacheReason why
	cache, cacheReason string
	// late holds the arms' prefix-cache hit rates (baseline, canary) over
	// the later half of the run when normalize.cache is not none
	// (aggHitRateLate)
	late [2]float64
	// keys holds key's answer per class and band once the plan is made
	// (read-only after classMix)
	keys map[[2]string]string
	// untold names a class stratum, applied, that both arms served and
	// whose prompt lengths one arm's log gives for none of its requests
	// (promptUntold): the arms' standardized mean prompt length cannot
	// be told, and mixShift is not read
	untold string
}

// key is the stratum a bucket is weighted by: its class stratum, after
// stray folds, and " · " and its prefix-cache band when the cache is
// stratified and the bucket is a band's (a stratum's bucket with Cache ""
// holds its latency histograms, weighted by the class's factor).
func (m *aggMix) key(bk *sources.AggBucket) string {
	if k, ok := m.keys[[2]string{bk.Class, bk.Cache}]; ok {
		return k
	}
	return m.keyOf(bk)
}

// keyOf computes key.
func (m *aggMix) keyOf(bk *sources.AggBucket) string {
	if bk.Class == "" {
		// a slice without requests
		return ""
	}
	k := m.foldClass(bk.Class)
	if m.band != nil && bk.Cache != "" && !m.own[k] {
		b, ok := m.band[[2]string{k, bk.Cache}]
		if !ok {
			b = bk.Cache
		}
		k += " · " + b
	}
	return k
}

// foldClass is the class stratum a bucket of class key k (AggBucket.Class)
// is counted in: k's stratum (merge), or the one classFold counts a stray
// stratum in, one both arms have.
func (m *aggMix) foldClass(k string) string {
	if m.merge != nil {
		k = m.merge(k)
	}
	return m.foldStratum(k)
}

// foldStratum is foldClass for a class stratum k (merged already).
func (m *aggMix) foldStratum(k string) string {
	if to, ok := m.classFold[k]; ok {
		return to
	}
	return k
}

// offered is a bucket's offered requests (NaN counts as 0).
func offered(bk *sources.AggBucket) float64 {
	return nan0(bk.Completed) + nan0(bk.Failed) + nan0(bk.Canceled) + nan0(bk.Rejected)
}

// classOffered sums an aggregate's offered requests per key(bucket).
func classOffered(agg *sources.Aggregate, key func(*sources.AggBucket) string) (map[string]float64, float64) {
	out := map[string]float64{}
	total := 0.0
	for i := range agg.Buckets {
		bk := &agg.Buckets[i]
		n := offered(bk)
		out[key(bk)] += n
		total += n
	}
	return out, total
}

// classCounts sums an aggregate's requests per key: offered, failed or
// rejected, canceled, and retries (strataCounts).
func classCounts(agg *sources.Aggregate, key func(*sources.AggBucket) string) strataCounts {
	out := strataCounts{offered: map[string]float64{}, failed: map[string]float64{}, canceled: map[string]float64{}, retried: map[string]float64{}}
	for i := range agg.Buckets {
		bk := &agg.Buckets[i]
		k := key(bk)
		out.offered[k] += offered(bk)
		out.failed[k] += nan0(bk.Failed) + nan0(bk.Rejected)
		out.canceled[k] += nan0(bk.Canceled)
		out.retried[k] += nan0(bk.Retried)
	}
	return out
}

// aggCacheBands sums an aggregate's offered requests per prefix-cache band
// (requests without a cached-token count left out, as on the request
// path's cacheBands); empty when the aggregate is not split by band.
func aggCacheBands(agg *sources.Aggregate) map[string]float64 {
	m := map[string]float64{}
	for i := range agg.Buckets {
		bk := &agg.Buckets[i]
		if bk.Cache != "" && bk.Cache != normalize.CacheUnknown {
			m[bk.Cache] += offered(bk)
		}
	}
	return m
}

// aggHitRateLate is an aggregate's prefix-cache hit rate (hit over
// queried prompt tokens, or blocks) over the later half of its run: the
// buckets that start at or after the midpoint of the bucket starts. NaN
// when unknown.
func aggHitRateLate(a *sources.Aggregate) float64 {
	return laterHalfRate(len(a.Buckets), func(i int) (float64, float64, float64, bool) {
		bk := &a.Buckets[i]
		if math.IsNaN(bk.PrefixHits) || math.IsNaN(bk.PrefixQueries) {
			return 0, 0, 0, false
		}
		return bk.Start, bk.PrefixHits, bk.PrefixQueries, true
	})
}

// aggCacheChoice decides the cache handling of an aggregate comparison by
// the request path's rule (planMix): stray bands fold into their
// neighbours; under auto the bands are left out when the arms' hit rates
// over the later half of the run (late: baseline, canary) differ by more
// than CacheShiftPP (cacheMovedReason),
// else the cache is stratified when every band of the baseline's
// mix has enough requests in both arms, else as normalize.AutoCache says;
// CUPED (adjust) is the request path's only, so here it is none. It
// returns the handling, why, and the stray band folds.
func aggCacheChoice(b, c *sources.Aggregate, late [2]float64, cache, mode string) (string, string, map[string]string) {
	bandsB, bandsC := aggCacheBands(b), aggCacheBands(c)
	if len(bandsB)+len(bandsC) == 0 {
		return "none", "no cache strata: the aggregate keeps no prefix-cache band (metrics, or no record reports cached tokens)", nil
	}
	fold := strayBands(bandsB, bandsC)
	bandsB, bandsC = foldBands(bandsB, fold), foldBands(bandsC, fold)
	choice, why := "none", ""
	switch cache {
	case "stratify":
		choice, why = "stratify", "requested"
	case "adjust":
		why = "CUPED on the per-bucket hit rate is applied on the request path only (--exact); the aggregate compares the arms unadjusted"
	case "auto":
		if hitRatesShifted(late[0], late[1]) {
			why = cacheMovedReason(late[0], late[1])
			break
		}
		if ok, w := baselineBandsCovered(bandsB, bandsC, mode); ok {
			choice, why = "stratify", w
			break
		}
		nb, nc := 0.0, 0.0
		for _, n := range bandsB {
			nb += n
		}
		for _, n := range bandsC {
			nc += n
		}
		ch := normalize.AutoCache(bandsC, bandsB, [2]int{int(nc), int(nb)})
		why = ch.Reason
		switch ch.Mode {
		case normalize.CacheModeStratify:
			choice = "stratify"
		case normalize.CacheModeAdjust:
			why = "no cache adjustment: the bands are too thin to stratify and CUPED on the hit rate is the request path's only (" + ch.Reason + ")"
		}
	}
	if choice == "stratify" && len(fold) > 0 {
		why += "; " + foldText(fold)
	}
	return choice, why, fold
}

// classMix plans the mix standardisation for the policy's normalize.mix
// (setting: "none" or a reference; the reference is the baseline's mix) and
// normalize.cache (cache).
//
// outcome names the policy classes decided by output length
// (outcomeClasses): with any, the strata are the labels or bands alone.
func classMix(b, c *sources.Aggregate, setting, cache string, outcome []string) aggMix {
	m := aggMix{cache: "none"}
	if cache != "none" && cache != "" {
		var fold map[string]string
		m.late = [2]float64{aggHitRateLate(b), aggHitRateLate(c)}
		m.cache, m.cacheReason, fold = aggCacheChoice(b, c, m.late, cache, setting)
		if m.cache == "stratify" {
			m.band = map[[2]string]string{}
			for k, to := range fold {
				// every class's buckets of a stray band count in its
				// neighbour (classes filled in below)
				m.band[[2]string{"", k}] = to
			}
		}
	}
	if setting == "none" {
		if m.cache != "stratify" {
			m.band = nil
			m.detail = "not requested"
			return m
		}
		setting = "baseline"
	}
	classKey := func(bk *sources.AggBucket) string { return bk.Class }
	if len(outcome) > 0 && setting != normalize.MixWeights {
		m.merge = keyHead
		classKey = func(bk *sources.AggBucket) string { return keyHead(bk.Class) }
	}
	strataB, strataC := classCounts(b, classKey), classCounts(c, classKey)
	rawB, rawC := strataB.offered, strataC.offered
	if len(rawB) < 2 && len(rawC) < 2 && m.cache != "stratify" {
		m.detail = "not applied: the metrics carry no class label (see --class-label) to reweight by"
		return m
	}
	// as on the request path, a stray stratum only one arm has is
	// counted in one both arms have (reweighted by that one's factor),
	// and the outcome's strata are kept at each arm's own share
	fold, own, said := strayStrataFolds(strataB, strataC, setting != normalize.MixWeights)
	m.classFold, m.own = fold, own
	if setting != normalize.MixWeights {
		if g, ok := unmatchedEval(oneArmStrata(rawB, rawC, fold, own)); ok {
			m.unmatched = &g
		}
	}
	if m.band != nil {
		said = append(said, m.bandFolds(b, c)...)
		// one string per class and band, not one per bucket
		m.keys = map[[2]string]string{}
		for _, agg := range []*sources.Aggregate{b, c} {
			for i := range agg.Buckets {
				bk := &agg.Buckets[i]
				if _, ok := m.keys[[2]string{bk.Class, bk.Cache}]; !ok {
					m.keys[[2]string{bk.Class, bk.Cache}] = m.keyOf(bk)
				}
			}
		}
	}
	wb, nb := classOffered(b, m.key)
	wc, nc := classOffered(c, m.key)
	names := make([]string, 0, len(wb))
	for k := range wb {
		names = append(names, k)
	}
	for k := range wc {
		if _, ok := wb[k]; !ok {
			names = append(names, k)
		}
	}
	if m.band != nil {
		// the strata's latency buckets (Cache "") count no requests
		names = slices.DeleteFunc(names, func(k string) bool { return wb[k] == 0 && wc[k] == 0 })
	}
	slices.Sort(names)
	// the arms' requests in strata of their own share: the canary's other
	// strata take the baseline's mix within the share they leave
	var ob, oc float64
	for k := range own {
		ob, oc = ob+wb[k], oc+wc[k]
	}
	known := func(b, c float64) float64 {
		if ob == 0 && oc == 0 {
			// the same value; these are the bits reports had before
			return (b / nb) / (c / nc)
		}
		return b / (nb - ob) * (nc - oc) / c
	}
	var parts []string
	f := map[string]float64{}
	for _, k := range names {
		pb, pc := wb[k]/nb, wc[k]/nc
		label := k
		if label == "" {
			label = "(unlabelled)"
		}
		if own[k] {
			parts = append(parts, fmt.Sprintf("%s %.1f%% vs %.1f%% (each arm's own)", label, 100*pb, 100*pc))
			f[k] = 1
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.1f%% vs %.1f%%", label, 100*pb, 100*pc))
		if pb > 0 && !(pc > 0) || pc > 0 && !(pb > 0) {
			m.detail = fmt.Sprintf("not applied: class %s has requests in only one arm (%s), so the canary cannot be reweighted to the baseline's mix",
				label, strings.Join(parts, ", "))
			if m.cache == "stratify" {
				m.cache, m.cacheReason = "none", "no cache strata: the mix is not standardized (stratum "+label+" has requests in only one arm)"
			}
			m.band, m.keys = nil, nil
			return m
		}
		if pc > 0 {
			f[k] = known(wb[k], wc[k])
		}
	}
	by := "class"
	if m.band != nil {
		by = "class and prefix-cache band (latency histograms, kept per class, by the class's factor)"
		// a class's latency histograms take the class's factor: its
		// offered requests after the stray folds
		cb, cc := map[string]float64{}, map[string]float64{}
		for k, n := range rawB {
			cb[m.foldStratum(k)] += n
		}
		for k, n := range rawC {
			cc[m.foldStratum(k)] += n
		}
		for k, n := range cc {
			if n > 0 && cb[k] > 0 && !own[k] {
				f[k] = known(cb[k], n)
			}
		}
	}
	m.detail = fmt.Sprintf("canary reweighted per %s to the baseline's mix, its arm figures included (share of offered requests, baseline vs canary: %s)",
		by, strings.Join(parts, ", "))
	if m.merge != nil {
		m.detail += "; " + outcomeClassesNote(outcome)
	}
	for _, s := range said {
		m.detail += "; " + s
	}
	m.factor, m.applied = f, true
	m.untold = promptUntold(b, c, m.foldClass)
	return m
}

// promptUntold is, in key order, the first class stratum (fold: a bucket
// class's stratum) with admitted requests in both arms whose prompt
// length one arm's records give for none of them, "" when there is none.
// The arms' mean prompt lengths pooled over strata would then compare
// the other strata's prompts in one arm with all of them in the other (a
// canary logging no prompt length for its chat requests read as sent
// prompts twice as long), so the mix-shift hold is not read; the request
// path, which standardizes stratum by stratum, cannot standardize them
// either (judgement.promptShift).
func promptUntold(b, c *sources.Aggregate, fold func(string) string) string {
	type counts struct{ admitted, known float64 }
	per := [2]map[string]counts{{}, {}}
	for i, agg := range []*sources.Aggregate{b, c} {
		for j := range agg.Buckets {
			bk := &agg.Buckets[j]
			if bk.Class == "" {
				continue
			}
			n := nan0(bk.Completed) + nan0(bk.Failed) + nan0(bk.Canceled)
			k := fold(bk.Class)
			x := per[i][k]
			x.admitted += n
			x.known += n - nan0(bk.PromptUnknown)
			per[i][k] = x
		}
	}
	for _, k := range sortedKeys(per[0]) {
		xb, xc := per[0][k], per[1][k]
		if xb.admitted > 0 && xc.admitted > 0 && (xb.known > 0) != (xc.known > 0) {
			return k
		}
	}
	return ""
}

// bandFolds fills m.band per class stratum as the request path's
// classBandFolds decides: a band only one arm has requests in within a
// class counts in the class's most common band both arms have, and so do
// the class's requests without a cached-token count. It returns the
// report's lines.
func (m *aggMix) bandFolds(b, c *sources.Aggregate) []string {
	global := map[string]string{}
	for k, to := range m.band {
		global[k[1]] = to
	}
	fold := func(band string) string {
		if to, ok := global[band]; ok {
			return to
		}
		return band
	}
	var counts [2]map[string]map[string]float64
	classes := map[string]bool{}
	for k, agg := range []*sources.Aggregate{b, c} {
		counts[k] = map[string]map[string]float64{}
		for i := range agg.Buckets {
			bk := &agg.Buckets[i]
			if bk.Class == "" && offered(bk) == 0 {
				continue
			}
			ck := m.foldClass(bk.Class)
			if m.own[ck] {
				// kept whole, without bands
				continue
			}
			classes[ck] = true
			if bk.Cache == normalize.CacheUnknown || bk.Cache == "" {
				continue
			}
			if counts[k][ck] == nil {
				counts[k][ck] = map[string]float64{}
			}
			counts[k][ck][fold(bk.Cache)] += offered(bk)
		}
	}
	dominant, classFold, said := classBandFolds(counts[0], counts[1])
	band := map[[2]string]string{}
	for ck := range classes {
		for _, raw := range []string{"", normalize.CacheNone, normalize.CachePartial, normalize.CacheMostly, normalize.CacheUnknown} {
			to := fold(raw)
			if d, ok := dominant[ck]; ok && (to == normalize.CacheUnknown || to == "") {
				to = d
			}
			if t, ok := classFold[ck][to]; ok {
				to = t
			}
			band[[2]string{ck, raw}] = to
		}
	}
	m.band = band
	return said
}

// weight is newAggArm's weight for the canary: its stratum's factor; nil
// when the mix is not standardized.
func (m *aggMix) weight() func(*sources.AggBucket) (float64, bool) {
	if m.factor == nil {
		return nil
	}
	return func(bk *sources.AggBucket) (float64, bool) {
		f, ok := m.factor[m.key(bk)]
		return f, ok
	}
}
