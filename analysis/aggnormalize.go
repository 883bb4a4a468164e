package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// aggWarmup cuts a metrics arm's warm-up from its slices by the policy's
// rule, as the request path does: "auto" applies normalize.Warmup to the
// per-slice TTFT medians read from the histograms (interpolated within
// buckets, so a warm-up shows as long as it moves the median across the
// buckets' resolution), in batches of about 50 s as on the request path; a duration cuts the slices that start before it;
// "none" cuts nothing. As on the request path, MSER's own cut is taken
// when the changepoint check rejects a gradual ramp that truncation
// clearly settles, and the cut is capped by window.max_warmup. Returns the
// normalization step.
func (a *aggArm) warmup(w policies.WindowSpec) (NormalizationStep, error) {
	st := NormalizationStep{Name: "warmup", Setting: w.Warmup}
	cut := 0
	switch {
	case w.Warmup == "none" || w.Warmup == "":
		st.Detail = "not requested"
		return st, nil
	case w.Warmup == "auto":
		ttft, tpot := a.dominantMedians()
		// batches of about the request path's 50 s (5 buckets of 10 s),
		// so the cut's granularity does not grow with the step
		batch := 5
		if w := a.slices[0].end - a.slices[0].start; w > 0 {
			batch = max(1, int(math.Round(50/w)))
		}
		res := slowStart(ttft, tpot, normalize.WarmupOptions{Batch: batch}, "slices")
		if w0 := a.slices[0].end - a.slices[0].start; w0 > 0 {
			run := a.slices[len(a.slices)-1].end - a.slices[0].from()
			if capB := int(math.Floor(w.WarmupCap(run)/w0 + 1e-9)); res.Cut > capB {
				// a slow start longer than a warm-up is judged, not cut
				res.Reason += fmt.Sprintf("; capped at %d slices (%gs: window.max_warmup, by default the longer of 5 min and %g%% of the run): the slow start beyond it is judged",
					capB, float64(capB)*w0, 100*policies.MaxWarmupShare)
				res.Cut = capB
			}
		}
		cut, a.lateSlowdown = res.Cut, res.LateSlowdown
		if res.Drift {
			a.driftAt = res.DriftAt
		}
		st.Detail = fmt.Sprintf("%s: %s (per-slice TTFT medians from the histogram)", a.arm, res.Reason)
	default:
		d := w.WarmupDuration().Seconds()
		for cut < len(a.slices) && a.slices[cut].start < a.slices[0].start+d {
			cut++
		}
		st.Detail = fmt.Sprintf("%s: cut the first %d slices (%gs)", a.arm, cut, d)
	}
	if cut >= len(a.slices) {
		return st, &DataError{Arm: a.arm, Msg: fmt.Sprintf("the warm-up cut removes every slice of the window (%d); shorten window.warmup or widen the window", len(a.slices))}
	}
	if cut > 0 {
		a.dropLeading(cut)
		st.Applied = true
	}
	return st, nil
}

// dominantMedians is the request path's series of the same name
// (armData.dominantMedians) on the aggregate: per slice, the medians of
// TTFT and of TPOT over the stratum (AggBucket.Class, a label's prompt
// bands taken together) with the most completed requests in the arm, ties
// to the first key; NaN where that stratum has none.
func (a *aggArm) dominantMedians() (ttft, tpot []float64) {
	// a label's prompt bands taken together, as on the request path
	group := map[string]string{}
	n := map[string]float64{}
	for _, bk := range a.ds.Agg.Buckets {
		g, ok := group[bk.Class]
		if !ok {
			g = normalize.WithoutLabelBand(bk.Class)
			group[bk.Class] = g
		}
		n[g] += nan0(bk.Completed)
	}
	best, most := "", -1.0
	for _, k := range sortedKeys(n) {
		if n[k] > most {
			best, most = k, n[k]
		}
	}
	at := a.sliceIndex()
	st, sp := make([]histo.Sum, len(a.slices)), make([]histo.Sum, len(a.slices))
	for _, bk := range a.ds.Agg.Buckets {
		if i, ok := at[bk.Start]; ok && group[bk.Class] == best {
			st[i].Add(bk.TTFT)
			sp[i].Add(bk.TPOT)
		}
	}
	medians := func(sums []histo.Sum) []float64 {
		series := make([]float64, len(sums))
		for i := range sums {
			series[i] = math.NaN()
			if h := sums[i].Histogram(); len(h.Edges) > 0 {
				series[i] = histo.Quantile(0.5, h)
			}
		}
		return series
	}
	return medians(st), medians(sp)
}

// dropLeading moves a's first k analysed slices (0 < k < len(a.slices))
// after those already cut (precut), and sets cutSecs to the span from the
// arm's first slice to its first analysed one and secs to the analysed
// seconds. The warm-up cut, the common cut of paired arms and the counted
// canary's cut (cutTo) all go through it.
func (a *aggArm) dropLeading(k int) {
	first := a.firstSlice().start
	a.precut = append(a.precut[:len(a.precut):len(a.precut)], a.slices[:k]...)
	a.slices = a.slices[k:]
	a.cutSecs = a.slices[0].start - first
	a.secs = 0
	for _, s := range a.slices {
		a.secs += s.secs()
	}
}

// firstSlice is a's first slice, cut or not.
func (a *aggArm) firstSlice() *aggSlice {
	if len(a.precut) > 0 {
		return &a.precut[0]
	}
	return &a.slices[0]
}

// slicesBefore counts a's analysed slices that start before t (seconds on
// the aggregate's clock).
func (a *aggArm) slicesBefore(t float64) int {
	k := 0
	for k < len(a.slices) && a.slices[k].start < t {
		k++
	}
	return k
}

// mixShift compares the arms' mean prompt tokens per finished request that
// gives its prompt length (one that gives none is not counted as 0), per
// slice (delta method over slices): prompt lengths come from the clients,
// not from the change, so arms whose means differ beyond 10% with
// confidence were sent different traffic mixes. Without class labels the
// metrics cannot be reweighted to one mix, so such a difference keeps a
// fail from being blamed on the change. Returns "" when the mix matches or
// cannot be told.
func mixShift(b, c *aggArm, conf float64, why string) string {
	ratio := func(a *aggArm) (stats.Ratio, bool) {
		r := stats.Ratio{Num: make([]float64, len(a.slices)), Den: make([]float64, len(a.slices))}
		for i, s := range a.slices {
			if math.IsNaN(s.promptTokens) {
				return r, false
			}
			r.Num[i], r.Den[i] = s.promptTokens, s.completed+s.failed+s.canceled-s.promptUnknown
		}
		return r, sum(r.Den) > 0 && sum(r.Num) > 0
	}
	rb, okb := ratio(b)
	rc, okc := ratio(c)
	if !okb || !okc || len(b.slices) < MinBuckets || len(c.slices) < MinBuckets {
		return ""
	}
	return promptShiftText(sum(rb.Num)/sum(rb.Den), sum(rc.Num)/sum(rc.Den), stats.LogRatioOfRatios(rc, rb, conf), why)
}

// promptShift is mixShift on the judgement's arms, at the policy's
// confidence, "" when a stratum's prompt lengths are given by one arm
// only (aggMix.untold): what the mix step reports and what holds the run.
func (j *aggJudgement) promptShift() string {
	if j.mix.untold != "" {
		return ""
	}
	return mixShift(j.b, j.c, 1-2*j.p.Alpha(), promptShiftWhy(j.p, j.exact()))
}

// promptShiftWhy is promptShiftText's why: metrics carry no label that
// could account for the shift; request records under p have strata that
// did not (exact: the arms are request records).
func promptShiftWhy(p *policies.Policy, exact bool) string {
	switch {
	case !exact:
		return "the metrics carry no class label that accounts for it"
	case p.Normalize.LabelBands():
		return "the strata (class labels and their prompt bands) do not account for it: prompts differ in length within the bands"
	}
	return "the strata (class labels, and prompt bands of records without one) do not account for it: prompts differ in length within the labels, which normalize.prompt_bands: all standardizes"
}

// PromptShiftLimit is how far (a factor) the arms' mean prompt tokens per
// request may differ after the mix standardization, with confidence, before
// a verdict is held as one on different traffic: 1.1.
const PromptShiftLimit = 1.1

// promptShiftText says why a verdict is held when est, the log ratio of
// the canary's mean prompt tokens per request (mc) to the baseline's (mb)
// after the mix standardization, lies beyond PromptShiftLimit either way
// with confidence; "" when it does not or cannot be told. why says what
// the strata could not account for (promptShiftWhy).
func promptShiftText(mb, mc float64, est stats.Estimate, why string) string {
	lim := math.Log(PromptShiftLimit)
	if math.IsNaN(est.CI.Lo) || !(est.CI.Lo > lim || est.CI.Hi < -lim) {
		return ""
	}
	return fmt.Sprintf("the arms were sent different traffic: mean prompt tokens per request baseline %.0f, canary %.0f (%+.0f%% [%+.0f%%, %+.0f%%]) "+
		"after any class reweighting; %s",
		mb, mc, 100*math.Expm1(est.Point), 100*math.Expm1(est.CI.Lo), 100*math.Expm1(est.CI.Hi), why)
}

// heldDecided makes a decided run inconclusive when why (mixShift,
// judgement.promptShift, classGap) says the arms' comparison cannot blame
// the change: traffic the strata did not account for, or SLO classes
// their logs decided. The same hold on the request path and the
// aggregate; "" or an inconclusive run leaves r as it is.
func heldDecided(r *Report, why string) {
	if why == "" || r.Verdict == Inconclusive {
		return
	}
	r.Reasons = append([]string{fmt.Sprintf("the gates give %s, but %s, so neither a pass nor a fail can be blamed on the change",
		strings.ToUpper(string(r.Verdict)), why)}, r.Reasons...)
	r.Verdict = Inconclusive
}

// cacheRate is the arm's prefix-cache hit rate over the analysed window,
// prefix_cache_hits / prefix_cache_queries; NaN when not exported.
func cacheRate(a *aggArm) float64 {
	var h, q float64
	for _, s := range a.slices {
		h += s.prefixHits
		q += s.prefixQueries
	}
	if !(q > 0) {
		return math.NaN()
	}
	return h / q
}

// normSteps are the normalization steps of a metrics comparison after the
// histogram bounds: warm-up per arm, traffic mix, prefix cache and load,
// each saying what was done with metrics data.
func (j *aggJudgement) normSteps() []NormalizationStep {
	p := j.p
	steps := append([]NormalizationStep{}, j.steps...)
	mix := NormalizationStep{Name: "mix", Setting: p.Normalize.Mix, Detail: j.mix.detail, Applied: j.mix.applied}
	if p.Normalize.Mix != "none" {
		mix.Detail += "; a difference in mean prompt tokens per request left after it keeps the verdict inconclusive"
		if j.mix.untold != "" {
			mix.Detail += fmt.Sprintf(" (not compared: one arm's log gives no prompt length for its requests in %q)", j.mix.untold)
		} else if ms := j.promptShift(); ms != "" {
			mix.Detail += "; " + ms
		}
	}
	steps = append(steps, mix)
	cache := NormalizationStep{Name: "cache", Setting: p.Normalize.Cache, Detail: "not requested"}
	if p.Normalize.Cache != "none" {
		// the canary as counted (cRaw, always set by judgeAggregate):
		// reweighted to the baseline's cache bands its hit rate would be
		// the baseline's
		hb, hc := cacheRate(j.b), cacheRate(j.cRaw)
		lb, lc := j.mix.late[0], j.mix.late[1]
		note := hitRatesNote(lb, lc)
		switch {
		case j.mix.cache == "stratify":
			cache.Applied = true
			cache.Detail = fmt.Sprintf("stratify: %s; hit rate (prefix_cache_hits / prefix_cache_queries) baseline %s, canary %s%s", j.mix.cacheReason, pctOrNA(hb), pctOrNA(hc), note)
			if hitRatesShifted(lb, lc) {
				j.warnf("prefix-cache bands are strata: %s", normalize.MediatorCaveat)
			}
		case j.mix.cacheReason != "":
			cache.Detail = fmt.Sprintf("none: %s; hit rate (prefix_cache_hits / prefix_cache_queries) baseline %s, canary %s%s", j.mix.cacheReason, pctOrNA(hb), pctOrNA(hc), note)
		default:
			cache.Detail = fmt.Sprintf("hit rate (prefix_cache_hits / prefix_cache_queries) baseline %s, canary %s; shown, not adjusted",
				pctOrNA(hb), pctOrNA(hc))
		}
	}
	steps = append(steps, cache)
	load := NormalizationStep{Name: "load", Setting: p.Normalize.Load, Detail: "not requested"}
	if bN, cN := !replicasNamed(j.b), !replicasNamed(j.cRaw); p.Normalize.Load != "none" && (bN || cN) {
		// request logs that name no replica: one per slice is a
		// denominator, not a deployment to compare load by
		load.Applied = p.Normalize.Load == "matched"
		load.Detail = "goodput compared at matched offered load (good per offered request); load per replica unknown (" + unnamedReplicas(bN, cN) + "): like-for-like not checked"
	} else if p.Normalize.Load != "none" {
		lf := func(a *aggArm) normalize.Load {
			l := normalize.Load{Offered: make([]float64, len(a.slices)), ReplicaSecs: make([]float64, len(a.slices))}
			for i, s := range a.slices {
				l.Offered[i], l.ReplicaSecs[i] = s.offered(), s.replicas*s.secs()
			}
			return l
		}
		// the canary as counted, as on the request path
		res, err := normalize.CompareLoad(lf(j.cRaw), lf(j.b), 0)
		switch {
		case err != nil:
			load.Detail = "like-for-like not checked: " + err.Error()
		default:
			load.Applied = p.Normalize.Load == "matched"
			load.Detail = "goodput compared at matched offered load (good per offered request), request rate per replica from the series; " + res.Reason + matchedOnlyWork(res)
			if !res.LikeForLike || res.Matched {
				j.warnf("offered load: %s", res.Reason)
			}
		}
	}
	return append(steps, load)
}

// scaleBucket multiplies a bucket's counts, token sums and histograms, and
// its good-request bounds, by f.
func scaleBucket(bk sources.AggBucket, bb histo.BucketBound, f float64) (sources.AggBucket, histo.BucketBound) {
	for _, v := range []*float64{&bk.Completed, &bk.Failed, &bk.Canceled, &bk.Rejected, &bk.Good, &bk.PromptTokens,
		&bk.OutputTokens, &bk.GoodTokens, &bk.PrefixHits, &bk.PrefixQueries, &bk.Retried, &bk.ShortOutputs, &bk.OutputUnknown, &bk.PromptUnknown,
		&bk.TTFTSum, &bk.TPOTSum, &bk.E2ESum} {
		*v *= f
	}
	for _, h := range []*sources.Histogram{&bk.TTFT, &bk.TPOT, &bk.E2E, &bk.Queue} {
		if len(h.Counts) > 0 {
			c := make([]float64, len(h.Counts))
			for i, x := range h.Counts {
				c[i] = x * f
			}
			h.Counts = c
		}
	}
	bb.Lo *= f
	bb.Hi *= f
	bb.Completed *= f
	return bk, bb
}

// aggCommonCut gives aggregate arms paired in time one analysed span, as the
// request path's commonCut does: the arm whose automatic warm-up cut ends
// earlier is cut to the first slice the other analyses, within its own cap
// (window.max_warmup) plus one slice. It returns what it did to each arm
// for its warm-up step (b's, c's; "" when nothing). Each arm cut on its own, the canary's
// slow start was judged against its baseline's first minutes with the
// canary's own minutes removed, and the slow-start blind spot failed here
// where the request path, whose arms share the cut, was inconclusive.
func aggCommonCut(b, c *aggArm, w policies.WindowSpec) [2]string {
	var said [2]string
	if len(b.slices) == 0 || len(c.slices) == 0 || !(math.Max(b.cutSecs, c.cutSecs) > 0) {
		return said
	}
	end := math.Max(b.slices[0].start, c.slices[0].start)
	for i, a := range []*aggArm{b, c} {
		if !(a.slices[0].start < end-1e-9) {
			continue
		}
		// from the arm's first arrival, as the request path's
		// commonCut counts from it
		first := a.firstSlice().from()
		w0 := a.slices[0].end - a.slices[0].start
		run := a.slices[len(a.slices)-1].end - first
		if end-first > w.WarmupCap(run)+w0+1e-9 {
			continue
		}
		k := a.slicesBefore(end - 1e-9)
		if k == 0 || k >= len(a.slices) {
			continue
		}
		from := a.cutSecs
		a.dropLeading(k)
		said[i] = fmt.Sprintf("; extended from %gs to %gs, where the other arm's warm-up cut ends, so that both arms are compared over the same span", from, a.cutSecs)
	}
	return said
}
