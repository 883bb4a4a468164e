package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/sources"
)

// mixPlan says how gates are standardised to a reference traffic mix:
// which strata (policy classes, else token-length bands; crossed with
// prefix-cache hit bands when the cache is stratified) and which reference
// weights.
type mixPlan struct {
	mode        string // normalize.Weights mode
	by          string // what the strata are, for the report
	names       []string
	index       map[string]int32
	cache       string // stratify | adjust | none: the cache handling chosen
	cacheReason string
	// stratum of each request per arm, −1 when not analysed
	b, c []int32
	// results per gate, and the arms' mixes, for the report
	notes []string
	mixes string
}

// planMix decides the strata and weights, or returns nil when no
// standardisation was asked for.
func (j *judgement) planMix() *mixPlan {
	p := j.p
	cache := p.Normalize.Cache
	mode := p.Normalize.Mix
	if mode == "none" && cache == "none" {
		return nil
	}
	plan := &mixPlan{index: map[string]int32{}, cache: "none"}
	// cache handling
	if cache != "none" {
		bandsB, bandsC := cacheBands(j.b), cacheBands(j.c)
		switch cache {
		case "stratify":
			plan.cache, plan.cacheReason = "stratify", "requested"
		case "adjust":
			plan.cache, plan.cacheReason = "adjust", "requested"
		case "auto":
			if ok, why := baselineBandsCovered(bandsB, bandsC, mode); ok {
				plan.cache, plan.cacheReason = "stratify", why
				break
			}
			ch := normalize.AutoCache(bandsC, bandsB, [2]int{len(j.c.kept()), len(j.b.kept())})
			plan.cacheReason = ch.Reason
			switch ch.Mode {
			case normalize.CacheModeStratify:
				plan.cache = "stratify"
			case normalize.CacheModeAdjust:
				plan.cache = "adjust"
			}
		}
		switch {
		case !cacheShifted(j.b, j.c):
			// the caveat matters only when the change moved the hit
			// rate; the cache step's detail says it did not
		case plan.cache == "stratify":
			j.warnf("prefix-cache bands are strata: %s", normalize.MediatorCaveat)
		case plan.cache == "adjust":
			j.warnf("slo_attainment is CUPED-adjusted for the per-bucket prefix-cache hit rate: %s", normalize.MediatorCaveat)
		}
		j.cache, j.cacheReason = plan.cache, plan.cacheReason
	}
	if mode == "none" {
		if plan.cache != "stratify" {
			return nil
		}
		mode = "baseline"
	}
	plan.mode = mode
	useClasses := len(j.cls.names) > 1
	plan.by = "token-length bands"
	if useClasses {
		plan.by = "classes"
	}
	if plan.cache == "stratify" {
		plan.by += " × prefix-cache hit bands"
	}
	key := func(a *armData, i int) string {
		r := &a.ds.Requests[i]
		k := normalize.Band(r.PromptTokens, r.OutputTokens)
		if useClasses {
			k = j.cls.names[a.class[i]]
		}
		if plan.cache == "stratify" {
			k += " · " + normalize.CacheBand(r.CachedTokens, r.PromptTokens)
		}
		return k
	}
	assign := func(a *armData) []int32 {
		out := make([]int32, len(a.ds.Requests))
		for i := range out {
			out[i] = -1
			if a.bidx[i] < int32(a.firstKept) {
				continue
			}
			k := key(a, i)
			si, ok := plan.index[k]
			if !ok {
				si = int32(len(plan.names))
				plan.names = append(plan.names, k)
				plan.index[k] = si
			}
			out[i] = si
		}
		return out
	}
	plan.b, plan.c = assign(j.b), assign(j.c)
	// sort strata by name for a deterministic report
	order := make([]int, len(plan.names))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(x, y int) bool { return plan.names[order[x]] < plan.names[order[y]] })
	remap := make([]int32, len(order))
	names := make([]string, len(order))
	for newIdx, old := range order {
		remap[old] = int32(newIdx)
		names[newIdx] = plan.names[old]
	}
	for _, s := range [][]int32{plan.b, plan.c} {
		for i, v := range s {
			if v >= 0 {
				s[i] = remap[v]
			}
		}
	}
	plan.names = names
	return plan
}

func cacheBands(a *armData) map[string]float64 {
	m := map[string]float64{}
	for i := range a.ds.Requests {
		if a.bidx[i] < int32(a.firstKept) {
			continue
		}
		r := &a.ds.Requests[i]
		m[normalize.CacheBand(r.CachedTokens, r.PromptTokens)]++
	}
	return m
}

// strata builds an arm's per-stratum, per-bucket totals of num/den over
// the analysed buckets.
func (plan *mixPlan) strata(a *armData, stratum []int32, num, den func(i int) float64) normalize.Strata {
	nb := len(a.buckets) - a.firstKept
	s := normalize.Strata{Names: plan.names, Num: make([][]float64, len(plan.names)), Den: make([][]float64, len(plan.names))}
	for k := range plan.names {
		s.Num[k], s.Den[k] = make([]float64, nb), make([]float64, nb)
	}
	for i, si := range stratum {
		if si < 0 {
			continue
		}
		t := int(a.bidx[i]) - a.firstKept
		s.Num[si][t] += num(i)
		s.Den[si][t] += den(i)
	}
	return s
}

// standardized runs a count gate standardised to the reference mix. num
// and den give a request's contribution (e.g. good, 1). logScale is for
// relative gates. The naive estimate is returned for the report.
func (j *judgement) standardized(metric string, num, den func(a *armData, i int) float64, logScale bool, conf float64) (adj, naive stats.Estimate, vb, vc float64, err error) {
	plan := j.mix
	bind := func(a *armData, f func(*armData, int) float64) func(int) float64 {
		return func(i int) float64 { return f(a, i) }
	}
	xb := plan.strata(j.b, plan.b, bind(j.b, num), bind(j.b, den))
	xc := plan.strata(j.c, plan.c, bind(j.c, num), bind(j.c, den))
	w, err := normalize.Weights(plan.mode, xc, xb, j.p.Normalize.Weights)
	if err != nil {
		return adj, naive, 0, 0, err
	}
	var res normalize.MixResult
	if logScale {
		res, err = normalize.StandardizeLog(xc, xb, w, conf)
	} else {
		res, err = normalize.Standardize(xc, xb, w, conf)
	}
	if err != nil {
		return adj, naive, 0, 0, err
	}
	plan.notes = append(plan.notes, fmt.Sprintf("%s %s", metric, estimateText(res)))
	if plan.mixes == "" {
		plan.mixes = fmt.Sprintf("mix (reference / baseline / canary): %s", mixText(res))
	}
	return res.Adjusted, res.Naive, res.Baseline, res.Canary, nil
}

// requestGood and friends are per-request contributions for standardised
// gates.
func requestGood(a *armData, i int) float64 {
	if a.good[i] {
		return 1
	}
	return 0
}

func requestGoodTokens(a *armData, i int) float64 {
	if a.good[i] && a.ds.Requests[i].OutputTokens > 0 {
		return float64(a.ds.Requests[i].OutputTokens)
	}
	return 0
}

func requestOne(*armData, int) float64 { return 1 }

func requestFailed(a *armData, i int) float64 {
	if a.ds.Requests[i].Status.Failed() {
		return 1
	}
	return 0
}

func requestRejected(a *armData, i int) float64 {
	if a.ds.Requests[i].Status == sources.StatusRejected {
		return 1
	}
	return 0
}

// mixTotals reports each arm's share per stratum for the report.
func (plan *mixPlan) shares(stratum []int32) []float64 {
	out := make([]float64, len(plan.names))
	n := 0.0
	for _, s := range stratum {
		if s >= 0 {
			out[s]++
			n++
		}
	}
	for i := range out {
		out[i] /= math.Max(n, 1)
	}
	return out
}

// thinned returns both arms' latency samples per analysed bucket, thinned
// deterministically so that each arm's mix of strata equals the reference
// weights: every stratum keeps the same fraction of its share, the largest
// that the scarcest stratum allows, and the kept values are spread evenly
// in time order. Quantiles of a mixture cannot be standardised by
// reweighting ratios, so they are compared on these matched subsamples.
func (plan *mixPlan) thinned(j *judgement, latency string) (xb, xc [][]float64, keptB, keptC int) {
	one := func(int) float64 { return 1 }
	xbS := plan.strata(j.b, plan.b, one, one)
	xcS := plan.strata(j.c, plan.c, one, one)
	w, err := normalize.Weights(plan.mode, xcS, xbS, j.p.Normalize.Weights)
	if err != nil {
		return nil, nil, 0, 0
	}
	thin := func(a *armData, stratum []int32) ([][]float64, int) {
		counts := make([]float64, len(plan.names))
		for i, s := range stratum {
			if s >= 0 && latencyOf(&a.ds.Requests[i], latency) {
				counts[s]++
			}
		}
		scale := math.Inf(1)
		for s, wt := range w {
			if wt > 0 {
				scale = math.Min(scale, counts[s]/wt)
			}
		}
		if math.IsInf(scale, 0) || scale == 0 {
			return nil, 0
		}
		seen := make([]float64, len(plan.names))
		out := make([][]float64, len(a.buckets)-a.firstKept)
		kept := 0
		for i, s := range stratum {
			r := &a.ds.Requests[i]
			if s < 0 || !latencyOf(r, latency) {
				continue
			}
			target := math.Floor(scale * w[s])
			// keep the k-th value of the stratum when ⌊(k+1)·t/n⌋ steps
			if math.Floor((seen[s]+1)*target/counts[s]) > math.Floor(seen[s]*target/counts[s]) {
				t := int(a.bidx[i]) - a.firstKept
				out[t] = append(out[t], latencyValue(r, latency))
				kept++
			}
			seen[s]++
		}
		return out, kept
	}
	xb, keptB = thin(j.b, plan.b)
	xc, keptC = thin(j.c, plan.c)
	return xb, xc, keptB, keptC
}

func latencyOf(r *sources.Request, latency string) bool {
	return r.Status == sources.StatusOK && sources.Known(latencyValue(r, latency))
}

func latencyValue(r *sources.Request, latency string) float64 {
	switch latency {
	case "ttft":
		return r.TTFT
	case "tpot":
		return r.TPOT
	}
	return r.E2E
}

// estimateText renders a standardised comparison: naive → standardized.
func estimateText(r normalize.MixResult) string {
	f := func(e stats.Estimate) string {
		if r.LogScale {
			return fmt.Sprintf("%+.2f%% [%+.2f, %+.2f]", 100*math.Expm1(e.Point), 100*math.Expm1(e.CI.Lo), 100*math.Expm1(e.CI.Hi))
		}
		return fmt.Sprintf("%+.2f pp [%+.2f, %+.2f]", 100*e.Point, 100*e.CI.Lo, 100*e.CI.Hi)
	}
	return "naive " + f(r.Naive) + " → standardized " + f(r.Adjusted)
}

// mixText lists each stratum's reference weight and both arms' shares.
func mixText(r normalize.MixResult) string {
	parts := make([]string, len(r.Names))
	for i, n := range r.Names {
		parts[i] = fmt.Sprintf("%q %.1f%% / %.1f%% / %.1f%%", n, 100*r.Weights[i], 100*r.BaselineMix[i], 100*r.CanaryMix[i])
	}
	return strings.Join(parts, ", ")
}

// cuped adjusts the attainment difference for the per-bucket prefix-cache
// hit rate (normalize.CUPED on bucket attainment; normalize.cache: adjust,
// or auto when bands are too thin to stratify). The comparison becomes one
// of mean bucket attainment, adjusted; the caller keeps the unadjusted one
// as the naive figure.
func (j *judgement) cuped(conf float64) (normalize.CUPEDResult, error) {
	cov := func(a *armData) normalize.Covariate {
		kept := a.kept()
		c := normalize.Covariate{Outcome: make([]float64, len(kept)), Covariate: make([]float64, len(kept))}
		cached, prompt := make([]float64, len(kept)), make([]float64, len(kept))
		for i := range a.ds.Requests {
			t := int(a.bidx[i]) - a.firstKept
			r := &a.ds.Requests[i]
			if t < 0 || r.CachedTokens < 0 || r.PromptTokens <= 0 {
				continue
			}
			cached[t] += float64(r.CachedTokens)
			prompt[t] += float64(r.PromptTokens)
		}
		for t := range kept {
			c.Outcome[t] = kept[t].good / kept[t].offered
			c.Covariate[t] = cached[t] / prompt[t]
		}
		return c
	}
	return normalize.CUPED(cov(j.c), cov(j.b), conf)
}

// baselineBandsCovered is the stratify rule when the reference mix is the
// baseline's (normalize.mix baseline or none): only bands the baseline
// serves carry weight, so each of them needs normalize.MinBandRequests
// requests in both arms; a band only the canary has (a cold cache's
// zero-hit requests) gets weight 0 and is left out of the comparison,
// which is the point of stratifying.
func baselineBandsCovered(bandsB, bandsC map[string]float64, mode string) (bool, string) {
	if mode != "baseline" && mode != "none" {
		return false, ""
	}
	var names []string
	for b := range bandsB {
		names = append(names, b)
	}
	sort.Strings(names)
	var parts, canaryOnly []string
	for _, b := range names {
		if bandsB[b] == 0 {
			continue
		}
		if b == normalize.CacheUnknown || bandsB[b] < normalize.MinBandRequests || bandsC[b] < normalize.MinBandRequests {
			return false, ""
		}
		parts = append(parts, fmt.Sprintf("%q: baseline %.0f, canary %.0f", b, bandsB[b], bandsC[b]))
	}
	if len(parts) == 0 {
		return false, ""
	}
	for b, n := range bandsC {
		if n > 0 && bandsB[b] == 0 {
			canaryOnly = append(canaryOnly, fmt.Sprintf("%q (%.0f canary requests)", b, n))
		}
	}
	sort.Strings(canaryOnly)
	why := "stratify by prefix-cache hit band: every band of the baseline's mix has ≥ " + fmt.Sprint(normalize.MinBandRequests) +
		" requests in both arms (" + strings.Join(parts, "; ") + ")"
	if len(canaryOnly) > 0 {
		why += "; bands only the canary has get weight 0: " + strings.Join(canaryOnly, ", ")
	}
	return true, why
}
