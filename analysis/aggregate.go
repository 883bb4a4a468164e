package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"gonum.org/v1/gonum/stat/distuv"
)

// aggArm is one arm of metrics-based data, merged per time slice over
// classes.
type aggArm struct {
	arm    sources.Arm
	ds     *sources.Dataset
	slices []aggSlice
	bounds histo.Bounds
	secs   float64
	// rejectedKnown is false when the engine does not count rejections.
	rejectedKnown bool
	// exact is true for an aggregate built from per-request records
	// (Aggregate.Exact): counts and good requests are counted, histograms
	// are log-linear and merge by the union of their edges.
	exact bool
	// completedAll counts the completed requests of every bucket of the
	// aggregate as the source gave it (before any cut or reweighting),
	// outUnknownAll those of them that give no output length, as
	// armData's
	completedAll, outUnknownAll float64
	// unknown names the counts the source left NaN in some bucket
	// ("canceled", "failed", "retried", "short outputs", "output tokens"):
	// gates on them are not decided from this arm.
	unknown map[string]bool
	// precut are the slices the warm-up cut removed (for the warm-up
	// guardrail), in time order.
	precut []aggSlice
	// cost is the arm's cost from records or the policy's rates (nil:
	// OpenCost series, or none); see costs.
	cost *aggCost
	// allStarts are the slice starts before any warm-up cut (the grid of
	// the aggregate's replica tracks); cutSecs is the warm-up cut.
	allStarts []float64
	cutSecs   float64
	// lateSlowdown: the automatic warm-up rule refused a cut because the
	// slow part of the start began after a normal one
	// (normalize.WarmupResult.LateSlowdown)
	lateSlowdown bool
	// driftAt is the slice after the warm-up cut where TTFT still shifts
	// (the run is not stationary); −1 when none was found
	driftAt int
	// left is what the arm had in the stretches left out of both arms
	// (markLeftOut); nil when none was
	left *LeftOut
}

type aggSlice struct {
	start, end float64
	// lead is the seconds at the slice's start before the arm's first
	// arrival (sources.Aggregate.FirstArrival), counted nowhere: the
	// request path's first bucket begins at the first arrival. 0 but on
	// an arm's first slice.
	lead float64
	// leftOut marks a slice of a stretch left out of both arms (a
	// baseline outage, baseline_outage; markLeftOut): emptied, and its
	// time, replicas and cost count nowhere
	leftOut                     bool
	completed, failed, canceled float64
	rejected                    float64
	retried, short              float64 // retried requests, completions below slo.min_output_tokens; 0 where unknown
	goodLo, goodHi              float64
	replicas                    float64
	costPerHour                 float64
	gpuUtil                     float64
	gauges                      sources.AggBucket // Running, Waiting, KVUsage, GPUPowerW, GPUMemBytes of the slice
	outTokens                   float64
	outUnknown                  float64 // completions without an output length (not in outTokens)
	outMax                      float64 // the most output tokens of one completion (0: none known)
	goodTokens                  float64 // output tokens of good requests; 0 where unknown (aggArm.unknown)
	promptTokens                float64 // NaN when unknown
	promptUnknown               float64 // admitted requests without a prompt length (not in promptTokens)
	prefixHits, prefixQueries   float64 // NaN when unknown
	ttft, tpot, e2e             sources.Histogram
	// sums of the latencies the histograms count, seconds; 0 unless the
	// aggregate has LatencySums
	ttftSum, tpotSum, e2eSum float64
}

// secs is the slice's seconds: its span less its lead.
func (s *aggSlice) secs() float64 { return s.end - s.start - s.lead }

// from is the slice's first counted second: its start, or the arm's first
// arrival in its first slice.
func (s *aggSlice) from() float64 { return s.start + s.lead }

// addCounts adds the request counts of slice o (those accounting and the
// output-length rules read) to s.
func (s *aggSlice) addCounts(o *aggSlice) {
	s.completed += o.completed
	s.failed += o.failed
	s.canceled += o.canceled
	s.rejected += o.rejected
	s.goodLo += o.goodLo
	s.retried += o.retried
	s.outUnknown += o.outUnknown
	s.outTokens += o.outTokens
	s.outMax = max(s.outMax, o.outMax)
}

// outputTop is what the mean output length of s (a sum of slices) rests
// on (heldByOneCompletion).
func (s *aggSlice) outputTop() outputTop {
	return outputTop{s.outTokens, s.completed - s.outUnknown, s.outMax}
}

// accounting is the request accounting of s (a slice, or a sum of
// slices), counted as the arm summary reports it: good requests at their
// lower bound, retries 0 where the source does not count them.
func (s *aggSlice) accounting() Accounting {
	acc := Accounting{Offered: int64(math.Round(s.offered())), Rejected: int64(math.Round(s.rejected)), Canceled: int64(math.Round(s.canceled)),
		Failed: int64(math.Round(s.failed)), Completed: int64(math.Round(s.completed)), Good: int64(math.Round(s.goodLo)), Retries: int64(math.Round(s.retried))}
	acc.Admitted = acc.Offered - acc.Rejected
	return acc
}

func (s *aggSlice) offered() float64 { return s.completed + s.failed + s.canceled + s.rejected }

// judgeAggregate judges two aggregated arms: from metrics, or built from
// per-request records (Aggregate.Exact). The gates, guardrails and
// normalizations are the request path's, on per-slice counts and
// histograms. From metrics, joint SLO attainment is only bounded by
// histograms (thresholds between bucket edges, Fréchet bounds for
// TTFT ∧ TPOT), so every count gate is computed at both ends of the
// bounds: it passes only if the canary passes with its good counts at
// their lower bound and the baseline's at their upper bound (the
// canary-unfavourable end), and fails only if it fails the other way round
// (the canary-favourable end). An exact aggregate counted good requests at
// scan time (per class), so the two ends coincide; only its quantiles are
// bounded, by their log-linear bins, and decided the same cautious way.
func judgeAggregate(baseline, canary *sources.Dataset, cfg Config) (*Report, error) {
	var outs []baselineOutage
	var left [2]Accounting // each arm's requests in them
	kept := ""             // a shared outage kept in (findSharedOutage)
	for {
		j, err := aggArms(baseline, canary, cfg, true)
		if err != nil {
			return nil, err
		}
		if j.cRaw == nil {
			j.cRaw = j.c
		} else {
			// the canary as counted, read beside the baseline (aggArms)
			j.cRaw.cutTo(j.c)
		}
		j.paired = j.pairing()
		if len(outs) < MaxBaselineOutages {
			// the baseline's own outage, or one both arms shared
			// (findOutage): its slices emptied in both arms, the
			// warm-up cuts kept, and the arms read again
			if g, ok := j.dipGrid(); ok {
				o, why, found := findOutage(cfg.Policy, g, sources.ClockEpoch)
				kept = why
				if found {
					outs = append(outs, o)
					left[0] = left[0].plus(sliceAccounting(j.b, o))
					left[1] = left[1].plus(sliceAccounting(j.cRaw, o))
					baseline = leaveOutAgg(baseline, j.b, j.steps[j.warmStep[0]], o)
					canary = leaveOutAgg(canary, j.c, j.steps[j.warmStep[1]], o)
					continue
				}
			}
		}
		j.outages = outs
		for _, o := range outs {
			j.warnf("%s", outageWarning(sources.ClockEpoch, o))
		}
		if kept != "" {
			j.warnf("%s", kept)
		}
		j.b.markLeftOut(outs, left[0])
		for _, a := range []*aggArm{j.c, j.cRaw} {
			a.markLeftOut(outs, left[1])
		}
		return j.judge()
	}
}

// judge completes judgeAggregate on arms read and cut by aggArms, the
// canary as counted beside them and their pairing decided.
func (j *aggJudgement) judge() (*Report, error) {
	p := j.p
	if !j.paired {
		span := func(a *aggArm) armSpan { return armSpan{first: a.slices[0].start, last: a.slices[len(a.slices)-1].end} }
		if w := nestedArmsWarning(span(j.b), span(j.c)); w != "" {
			j.warnf("%s", w)
		}
	}
	for i, a := range []*aggArm{j.b, j.c} {
		for _, c := range a.ds.Agg.ReplicaWarmups {
			j.steps[j.warmStep[i]].Detail += "; " + c
			j.steps[j.warmStep[i]].Applied = true
		}
	}
	if step, w := j.b.ds.Agg.Step, p.Window.Bucket.Seconds(); j.exact() && w > 0 && step > w {
		// the arm whose span widened the buckets: the longer
		long := j.b
		if aggSpan(j.c.ds.Agg) > aggSpan(j.b.ds.Agg) {
			long = j.c
		}
		j.warnf("buckets of %gs, not the policy's window.bucket %gs: the %s's arrivals span %s, and the streaming aggregate keeps at most %d buckets per arm so that its memory does not grow with the run's length; %gs buckets are the unit every interval resamples (judge with --exact for %gs buckets)",
			step, w, long.arm, fmtMinutes(aggSpan(long.ds.Agg)/60), sources.MaxStreamSlices, step, w)
	}
	if len(p.Classes) > 0 && !j.exact() {
		// an exact aggregate counted good requests per class at scan time
		j.warnf("per-class SLOs are not applied to metrics data: every request is judged with the policy's default SLO")
	}
	if m := p.Normalize.Mix; j.mix.applied && m != normalize.MixBaseline && m != normalize.MixNone {
		// the aggregate reweights the canary alone (classMix)
		j.warnf("normalize.mix %s is applied by the exact judge (--exact) only: the streaming aggregate reweights the canary to the baseline's mix", m)
	}
	lb, lc := j.labelled(j.b), j.labelled(j.c)
	j.oneArmLabels = lb != lc
	if j.exact() {
		if w := labelMismatch(lb, lc); w != "" {
			j.warnf("%s; the aggregate keeps no token-length band for a labelled record, so the arms are compared without mix standardization, a difference in mean prompt tokens keeping the verdict from passing or failing; --exact stratifies both by band", w)
			// the arms' strata differ in how their records are labelled,
			// not in the traffic they served: unmatched_strata, which
			// holds traffic of another kind, would hold every such run
			// and leave the comparison this warning promises unmade.
			// It stays when an arm gives no prompt length, so that the
			// mean prompt tokens cannot be compared either
			if promptsGiven(j.b) && promptsGiven(j.c) {
				j.mix.unmatched = nil
			}
		}
	}
	warns, err := priceAggArms(j.p, j.cfg, j.b, j.c)
	j.warns = append(j.warns, warns...)
	if err != nil {
		return nil, err
	}
	j.cRaw.cost = j.c.cost
	j.cRaw.priceLike(j.c)
	r := j.report()
	if err := latencyUnits(r); err != nil {
		return nil, err
	}
	if err := latencyParts(r); err != nil {
		return nil, err
	}
	return r, nil
}

// promptsGiven reports whether some of the arm's analysed requests give
// their prompt length (mixShift can compare the arms' mean prompts).
func promptsGiven(a *aggArm) bool {
	for _, s := range a.slices {
		if s.promptTokens > 0 {
			return true
		}
	}
	return false
}

// aggArms reads both arms from their aggregates and cuts their warm-ups,
// each arm by its own rule and then, for paired arms, to a common start
// (aggCommonCut): the judge's first steps, which ReplicaWarmupCuts takes
// too. withRaw also reads the canary as counted (cRaw, uncut) when its mix
// is reweighted; cRaw stays nil otherwise.
func aggArms(baseline, canary *sources.Dataset, cfg Config, withRaw bool) (*aggJudgement, error) {
	p := cfg.Policy
	if baseline.Agg == nil || canary.Agg == nil {
		return nil, &DataError{Msg: "one arm is metrics-based (Prometheus or scrapes) and the other per-request files: give both arms the same kind of input"}
	}
	if err := overlap(baseline, canary); err != nil {
		return nil, err
	}
	if baseline.Agg.Exact != canary.Agg.Exact {
		return nil, &DataError{Msg: "one arm is aggregated from per-request records and the other read from metrics: their histograms and good counts cannot be compared; give both arms the same kind of input"}
	}
	if !baseline.Agg.Exact && (p.SLO.E2E > 0 || p.SLO.MaxITL > 0 || p.SLO.Quality != "") {
		return nil, &DataError{Msg: fmt.Sprintf("policy %s needs per-request e2e, max_itl or quality criteria, which metrics histograms cannot check jointly; use per-request files or a policy with ttft/tpot only", p.Name)}
	}
	slo := histo.SLO{TTFT: math.NaN(), TPOT: math.NaN()}
	if p.SLO.TTFT > 0 {
		slo.TTFT = p.SLO.TTFT.Seconds()
	}
	if p.SLO.TPOT > 0 {
		slo.TPOT = p.SLO.TPOT.Seconds()
	}
	plan := classMix(baseline.Agg, canary.Agg, p.Normalize.Mix, p.Normalize.Cache, outcomeClasses(p))
	// the arms are read from their aggregates side by side (most of the
	// cost is summing each slice's strata), and with the canary
	// reweighted, its arm as counted beside them. Errors are reported
	// baseline first, whichever finished first
	var (
		b, c, raw    *aggArm
		errB, errRaw error
		wg           sync.WaitGroup
	)
	wg.Go(func() { b, errB = newAggArm(baseline, slo, nil) })
	if withRaw && plan.factor != nil {
		wg.Go(func() { raw, errRaw = newAggArm(canary, slo, nil) })
	}
	c, err := newAggArm(canary, slo, plan.weight())
	wg.Wait()
	for _, e := range []error{errB, err, errRaw} {
		if e != nil {
			return nil, e
		}
	}
	if baseline.Agg.Exact && canary.Agg.Exact && !baseline.Agg.AttemptKnown && !canary.Agg.AttemptKnown {
		// records that never say which request is a retry, in either
		// arm: retries are not reported, as from metrics
		for _, a := range []*aggArm{b, c, raw} {
			if a != nil {
				a.unknown["retried"] = true
			}
		}
	}
	j := &aggJudgement{p: p, cfg: cfg, b: b, c: c, cRaw: raw, mix: plan, slo: slo}
	for i, a := range []*aggArm{b, c} {
		var st NormalizationStep
		if wk := a.ds.Agg.WarmupKept; wk != nil {
			// decided on the records before replicas' own warm-ups were
			// left out (ReplicaWarmupCuts): kept
			st = NormalizationStep{Name: "warmup", Setting: p.Window.Warmup, Detail: wk.Detail, Applied: wk.Applied}
			if k := a.slicesBefore(wk.From - 1e-9); k > 0 && k < len(a.slices) {
				a.dropLeading(k)
			}
			a.driftAt, a.lateSlowdown = wk.DriftAt, wk.LateSlowdown
		} else if st, err = a.warmup(p.Window); err != nil {
			return nil, err
		}
		j.warmStep[i] = len(j.steps)
		j.steps = append(j.steps, st)
		if a.driftAt >= 0 {
			j.warnf("%s: TTFT still shifts after the warm-up cut (at bucket %d): the run is not stationary; extend it or treat the verdict with care", a.arm, a.driftAt)
		}
	}
	if p.Window.Warmup == "auto" && j.pairing() {
		for i, s := range aggCommonCut(b, c, p.Window) {
			if s != "" {
				j.steps[j.warmStep[i]].Detail += s
				j.steps[j.warmStep[i]].Applied = true
			}
		}
	}
	return j, nil
}

// cutTo cuts a where o, the same arm weighted otherwise, was cut by its
// warm-up rule.
func (a *aggArm) cutTo(o *aggArm) {
	if len(o.slices) == 0 {
		return
	}
	if k := a.slicesBefore(o.slices[0].start); k > 0 && k < len(a.slices) {
		a.dropLeading(k)
	}
}

// weight, when not nil, gives the factor by which a bucket's counts and
// histograms are weighted (the canary reweighted to the baseline's mix),
// false for none.
func newAggArm(ds *sources.Dataset, slo histo.SLO, weight func(*sources.AggBucket) (float64, bool)) (*aggArm, error) {
	agg := ds.Agg
	if len(agg.Buckets) == 0 {
		return nil, &DataError{Arm: ds.Arm, Msg: "no metrics in the window: no series matched (check the selector and the time range)"}
	}
	a := &aggArm{arm: ds.Arm, ds: ds, rejectedKnown: true, exact: agg.Exact, unknown: map[string]bool{}, driftAt: -1}
	a.bounds = histo.GoodBounds(agg, slo)
	byStart := map[float64]int{}
	// each slice's buckets' latency histograms, in bucket order, added up
	// once every bucket is read
	var lat [][][3]sources.Histogram
	for i := range agg.Buckets {
		// by pointer: a bucket is copied only when it is reweighted
		bk := &agg.Buckets[i]
		bb := a.bounds.Buckets[i]
		a.completedAll, a.outUnknownAll = a.completedAll+nan0(bk.Completed), a.outUnknownAll+bk.OutputUnknown
		k, ok := byStart[bk.Start]
		if !ok {
			k = len(a.slices)
			byStart[bk.Start] = k
			a.slices = append(a.slices, aggSlice{start: bk.Start, end: bk.End, replicas: bk.Replicas, costPerHour: bk.CostPerHour, gpuUtil: bk.GPUUtil, gauges: gaugesOf(*bk)})
			lat = append(lat, nil)
		}
		s := &a.slices[k]
		if weight != nil {
			if f, ok := weight(bk); ok {
				var sc sources.AggBucket
				sc, bb = scaleBucket(*bk, bb, f)
				bk = &sc
			}
		}
		s.completed += nan0(bk.Completed)
		s.outUnknown += nan0(bk.OutputUnknown)
		s.outMax = max(s.outMax, nan0(bk.OutputMax))
		s.promptUnknown += nan0(bk.PromptUnknown)
		for _, c := range []struct {
			name string
			v    float64
			to   *float64
		}{{"failed", bk.Failed, &s.failed}, {"canceled", bk.Canceled, &s.canceled}, {"retried", bk.Retried, &s.retried},
			{"short outputs", bk.ShortOutputs, &s.short}, {"output tokens", bk.OutputTokens, &s.outTokens}} {
			if math.IsNaN(c.v) {
				a.unknown[c.name] = true
			} else {
				*c.to += c.v
			}
		}
		if math.IsNaN(bk.Rejected) {
			a.rejectedKnown = false
			a.unknown["rejected"] = true
		} else {
			s.rejected += bk.Rejected
		}
		if agg.GoodTokensCounted {
			s.goodTokens += bk.GoodTokens
		} else {
			a.unknown[goodTokensCount] = true
		}
		s.goodLo += nan0(bb.Lo)
		s.goodHi += nan0(bb.Hi)
		s.promptTokens += bk.PromptTokens
		s.prefixHits += bk.PrefixHits
		s.prefixQueries += bk.PrefixQueries
		s.ttftSum += bk.TTFTSum
		s.tpotSum += bk.TPOTSum
		s.e2eSum += bk.E2ESum
		lat[k] = append(lat[k], [3]sources.Histogram{bk.TTFT, bk.TPOT, bk.E2E})
	}
	var sums [3]histo.Sum
	for k, hs := range lat {
		for l := range sums {
			sums[l].Reset()
			for _, h := range hs {
				sums[l].Add(h[l])
			}
		}
		s := &a.slices[k]
		s.ttft, s.tpot, s.e2e = sums[0].Histogram(), sums[1].Histogram(), sums[2].Histogram()
	}
	slices.SortFunc(a.slices, func(x, y aggSlice) int { return cmp.Compare(x.start, y.start) })
	if f := agg.FirstArrival; f > 0 && len(a.slices) > 0 && f > a.slices[0].start && f < a.slices[0].end {
		a.slices[0].lead = f - a.slices[0].start
	}
	a.allStarts = a.sliceStarts()
	var completed, offered float64
	for _, s := range a.slices {
		a.secs += s.secs()
		completed += s.completed
		offered += s.offered()
	}
	if completed == 0 && (ds.Arm != sources.Canary || offered == 0) {
		msg := "no completed requests in the window's metrics: check the selector, the time range and that the arm served traffic"
		if agg.Profile == "requests" {
			msg = fmt.Sprintf("no completed requests among %.0f offered (%s): there is nothing to compare the canary with — check that the client reached the endpoint", offered, aggStatusCounts(a))
		}
		return nil, &DataError{Arm: ds.Arm, Msg: msg}
	}
	return a, nil
}

// shortShare is the share of both arms' analysed completions (the canary
// as counted) with fewer output tokens than their class's
// slo.min_output_tokens, as judgement.shortShare on the request path; NaN
// when a source does not count them (metrics) or nothing completed.
func (j *aggJudgement) shortShare() float64 {
	if j.b.unknown["short outputs"] || j.cRaw.unknown["short outputs"] {
		return math.NaN()
	}
	var short, done float64
	for _, a := range []*aggArm{j.b, j.cRaw} {
		for _, s := range a.slices {
			short, done = short+s.short, done+s.completed
		}
	}
	if done == 0 {
		return math.NaN()
	}
	return short / done
}

// aggStatusCounts names an aggregate arm's requests that did not complete
// by outcome, as statusCounts does a request log's: "120 failed, 3
// rejected".
func aggStatusCounts(a *aggArm) string {
	var failed, canceled, rejected float64
	for _, s := range a.slices {
		failed, canceled, rejected = failed+s.failed, canceled+s.canceled, rejected+s.rejected
	}
	var parts []string
	for _, c := range []struct {
		n    float64
		what string
	}{{failed, "failed"}, {canceled, "canceled"}, {rejected, "rejected"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%.0f %s", c.n, c.what))
		}
	}
	return strings.Join(parts, ", ")
}

func nan0(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// addHist adds two histograms: classic ones on their common edges, an
// exact aggregate's log-linear (Sparse) ones on the union of their edges
// (histo.Merge), which keeps every count exact.
func addHist(a, b sources.Histogram) sources.Histogram {
	if len(b.Edges) == 0 {
		return a
	}
	if len(a.Edges) == 0 {
		return sources.Histogram{Edges: slices.Clone(b.Edges), Counts: slices.Clone(b.Counts), Sparse: b.Sparse}
	}
	m, _ := histo.Merge(a, b)
	return m
}

type aggJudgement struct {
	// oneArmLabels: one arm's records carry class labels and the other's
	// none, so the per-class tails go by policy class (tailClass)
	oneArmLabels bool
	p            *policies.Policy
	cfg          Config
	b, c         *aggArm
	// cRaw is the canary as counted, without the mix reweighting the
	// gates compare (c itself when no reweighting applies): the report's
	// arm summary shows what was measured, not a reweighted figure
	cRaw  *aggArm
	warns []string
	steps []NormalizationStep // warm-up steps, baseline then canary
	// warmStep indexes each arm's warm-up step in steps
	warmStep [2]int
	slo      histo.SLO
	mix      aggMix
	// paired is true when both arms' slices lie on one time grid and
	// overlap (see pairing): count gates then take the paired variance.
	paired bool
	// classMemo holds classOf's answer per stratum key
	classMemo map[string][2]string
	// outages are the baseline's own outages left out of both arms'
	// aggregates (judgeAggregate), in the order found
	outages []baselineOutage
	// replicaSpreads holds the replica widening of each latency's
	// quantile gates (latencySpreads, the canary as counted), set by
	// gates before they are evaluated; only read after
	replicaSpreads map[string]latencyWidening
}

// exact reports whether both arms were aggregated from per-request
// records (Aggregate.Exact).
func (j *aggJudgement) exact() bool { return j.b.exact && j.c.exact }

// fork is a shallow copy of the judgement for work done beside the rest
// (eachSideBySide): the arms and the policy are only read, and the
// warnings and the class memo, the two things an evaluation writes, are
// the copy's own. join takes a fork's warnings back.
func (j *aggJudgement) fork() *aggJudgement {
	f := *j
	f.warns, f.classMemo = nil, nil
	return &f
}

// join appends a fork's warnings to the judgement's; joining forks in
// index order gives the warnings of one evaluation after the other.
func (j *aggJudgement) join(f *aggJudgement) { j.warns = append(j.warns, f.warns...) }

func (j *aggJudgement) warnf(format string, a ...any) {
	j.warns = append(j.warns, fmt.Sprintf(format, a...))
}

func (j *aggJudgement) report() *Report {
	p := j.p
	r := &Report{SchemaVersion: SchemaVersion, Policy: PolicyRef{Name: p.Name, SHA256: p.SHA256, Source: p.Source},
		ToolVersion: j.cfg.ToolVersion, Judge: "goodput", Diagnostics: []Diagnostic{}, Classes: []ClassRow{}}
	for _, a := range []*aggArm{j.b, j.c} {
		for _, w := range a.ds.Warnings {
			j.warnf("%s: %s", a.arm, w)
		}
		for _, n := range a.ds.Agg.Notes {
			j.warnf("%s: %s", a.arm, n)
		}
		for _, n := range a.bounds.Notes {
			j.warnf("%s: %s", a.arm, n)
		}
		if w := outputUnknownWarning(a.outUnknownAll, a.completedAll); w != "" {
			j.warnf("%s: %s", a.arm, w)
		}
		width := 0.0
		for _, s := range a.slices {
			width += s.goodHi - s.goodLo
		}
		if off := sumOffered(a); off > 0 && width > 0 {
			j.warnf("%s: good requests are bounded, not counted: the bounds are %.2f pp of SLO attainment wide, which an attainment gate gives up from its margin (a pass is judged at the canary's lower end and the baseline's upper end)",
				a.arm, 100*width/off)
		}
		r.Inputs = append(r.Inputs, a.ds.Inputs...)
	}
	r.Arms.Baseline, r.Arms.Canary = j.armSummary(j.b), j.armSummary(j.cRaw)
	lo := math.Min(j.b.slices[0].from(), j.c.slices[0].from())
	hi := math.Max(j.b.slices[len(j.b.slices)-1].end, j.c.slices[len(j.c.slices)-1].end)
	r.Measurement = Measurement{
		Population:          "all requests the engines counted in the window, both arms, summed over replicas",
		Location:            "server",
		CompletionCondition: "finished with reason stop or length; good = completed and within the SLO, bounded from histograms",
		Window:              makeWindow(sources.ClockEpoch, lo, hi),
		BucketSeconds:       j.b.ds.Agg.Step,
		Clock:               string(sources.ClockEpoch),
		Confidence:          p.Confidence,
		Method:              MethodAggregate,
		SLO:                 []ClassSLO{{Class: "default", TTFT: Num(p.SLO.TTFT.Seconds()), TPOT: Num(p.SLO.TPOT.Seconds())}},
	}
	r.Normalization = Normalization{Steps: []NormalizationStep{{Name: "histogram-bounds", Setting: "both ends", Applied: true,
		Detail: fmt.Sprintf("good requests bounded from histograms: baseline [%.0f, %.0f], canary [%.0f, %.0f]; a gate passes only at the canary-unfavourable end and fails only at the canary-favourable end",
			j.b.bounds.Lo, j.b.bounds.Hi, j.c.bounds.Lo, j.c.bounds.Hi)}}}
	if j.exact() {
		r.Measurement.Population = "every request in the records, both arms, aggregated per time slice and stratum while read"
		r.Measurement.CompletionCondition = "finished with reason stop or length; good = completed and within its class's SLO, decided per request while read"
		if loc := j.b.ds.Location; loc != "" && loc == j.c.ds.Location {
			r.Measurement.Location = loc
		}
		// good was decided per request under its class's SLO, as on the
		// request path
		cls := newClassifier(p)
		cls.add("default", p.SLO)
		r.Measurement.SLO = nil
		for i, name := range cls.names {
			sl := cls.slos[i]
			r.Measurement.SLO = append(r.Measurement.SLO, ClassSLO{Class: name, TTFT: Num(sl.TTFT.Seconds()), TPOT: Num(sl.TPOT.Seconds()),
				E2E: Num(sl.E2E.Seconds()), MaxITL: Num(sl.MaxITL.Seconds()), QualityNeeded: sl.Quality == "required"})
		}
		r.Normalization.Steps[0] = NormalizationStep{Name: "histogram-bounds", Setting: "both ends", Applied: true,
			Detail: fmt.Sprintf("good requests counted per request (baseline %.0f, canary %.0f): exact; latency quantiles known within their log-linear bins (a factor 2^(1/256)): a tail gate passes only with the canary at its bin's upper edge and the baseline at its lower, and fails only the other way round",
				j.b.bounds.Lo, j.c.bounds.Lo)}
	}
	r.Normalization.Steps = append(r.Normalization.Steps, j.normSteps()...)
	r.Normalization.Steps = append(r.Normalization.Steps, outageStep(p, j.outages)...)
	// the diagnostics and the class table read the arms and nothing the
	// gates write: they are computed beside the gates (the class table on
	// a fork, for its class memo), the diagnostics' warnings added after
	// the gates' (their order when computed one after the other)
	var (
		diags      []Diagnostic
		diagsWarns []string
		classes    []ClassRow
		wg         sync.WaitGroup
	)
	cj := j.fork()
	wg.Go(func() { diags, diagsWarns = binnedDiagnostics(j.b, j.cRaw) })
	wg.Go(func() { classes = aggClasses(j.b, j.c, cj.classOf) })
	r.Metrics = j.gates()
	naiveInMixStep(r)
	wg.Wait()
	r.Diagnostics = append(diags, j.shortOutputs(1-2*p.Alpha())...)
	j.warns = append(j.warns, diagsWarns...)
	r.Series = aggSeries(j.b, j.cRaw)
	r.Classes = classes
	r.Distributions = aggDistributions(j.b, j.cRaw)
	r.Verdict, r.Reasons = Overall(r.Metrics)
	gap, baselineMore := unverifiedGap(j.b.ds.Agg.Unverified, j.c.ds.Agg.Unverified, j.b.completedAll, j.c.completedAll)
	heldByUnverifiedGap(r, gap, baselineMore)
	heldByClassGap(r, classGap(p, j.b.ds.Agg.Unverified, j.c.ds.Agg.Unverified, j.b.completedAll, j.c.completedAll))
	if j.exact() {
		// (metrics carry no per-class SLO: every request is judged by the
		// default)
		heldByClassGap(r, labelClassGap(p, j.unlabelledCompleted(j.b), j.b.completedAll, j.unlabelledCompleted(j.c), j.c.completedAll))
	}
	ab, ac := j.b.ds.Agg, j.c.ds.Agg
	heldByQualityGap(r, qualityGap(p, ab.QualityChecked, ab.QualityFailed, ac.QualityChecked, ac.QualityFailed))
	if j.exact() {
		// log-linear bins read as the request path's values, within a bin
		heldByCutTail(r, histCounts(pooledHist(j.cRaw, "ttft")), histCounts(pooledHist(j.b, "ttft")),
			histCounts(pooledHist(j.cRaw, "e2e")), histCounts(pooledHist(j.b, "e2e")))
	}
	if w := queueHold(r, j.p, j.b, j.cRaw, j.dipGrid); w != "" {
		j.warnf("%s", w)
	}
	if ms := j.promptShift(); ms != "" {
		j.warnf("traffic mix: %s", ms)
		heldDecided(r, ms)
	}
	heldDecided(r, fewUsersApart(j.b.ds.Agg.Users, j.cRaw.ds.Agg.Users))
	cov := coverageOf(j.b, j.c)
	applyCoverage(r, cov)
	for _, m := range append(append(cov.missing, cov.canaryLost...), cov.events...) {
		j.warnf("%s", m)
	}
	if len(cov.events)+len(cov.canaryLost) > 0 {
		r.Normalization.Steps = append(r.Normalization.Steps, NormalizationStep{Name: "replicas", Setting: "detect", Applied: true,
			Detail: strings.Join(append(append([]string{}, cov.canaryLost...), cov.events...), "; ") +
				" (goodput is compared per replica-second; a canary replica that serves nothing while the baseline's serve is decided by canary_replica_loss; a canary series that stops reporting keeps the verdict from passing)"})
	}
	if st, ok := usersStep(j.b.ds.Agg.Users, j.cRaw.ds.Agg.Users, j.p.Gates); ok {
		r.Normalization.Steps = append(r.Normalization.Steps, st)
	}
	if st, ok := persistenceStep(j.p.Window, min(len(j.b.slices), len(j.c.slices)), j.b.ds.Agg.Step, 2*j.p.Confidence-1); ok {
		r.Normalization.Steps = append(r.Normalization.Steps, st)
	}
	internalView(r, aggWork(j.b), aggWork(j.cRaw), j.b.ds.Agg.Step)
	r.Warnings = onceForBothArms(j.warns, j.b.ds, j.c.ds)
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	return r
}

func (j *aggJudgement) armSummary(a *aggArm) ArmSummary {
	var t aggSlice
	var repSecs, util, utilN, cost float64
	costKnown := true
	for _, s := range a.slices {
		t.addCounts(&s)
		t.goodTokens += s.goodTokens
		repSecs += s.replicas * s.secs()
		if !math.IsNaN(s.gpuUtil) {
			util += s.gpuUtil
			utilN++
		}
		if math.IsNaN(s.costPerHour) {
			costKnown = false
		} else {
			cost += s.costPerHour * s.secs() / 3600
		}
	}
	off := t.offered()
	acc := t.accounting()
	if a.unknown["retried"] {
		acc.Retries = 0
	}
	tokenGoodput, goodTokens := math.NaN(), math.NaN()
	if !a.unknown[goodTokensCount] {
		tokenGoodput, goodTokens = t.goodTokens/a.secs, t.goodTokens
	}
	s := ArmSummary{Accounting: acc, SLOAttainment: Num(t.goodLo / off), GoodputRPS: Num(t.goodLo / a.secs),
		TokenGoodputTPS: Num(tokenGoodput), ThroughputRPS: Num(t.completed / a.secs), OutputTokensPS: Num(t.outTokens / a.secs),
		RetryAmplification: Num(retryAmplification(a, off, t.retried)), WindowSeconds: Num(a.secs),
		Window:         makeWindow(sources.ClockEpoch, a.slices[0].from(), a.slices[len(a.slices)-1].end),
		ReplicaSeconds: Num(repSecs), GoodputPerReplica: Num(t.goodLo / repSecs), CacheHitRate: Num(cacheRate(a)), WarmupCutSeconds: Num(a.cutSecs),
		GPUUtilization: Num(math.NaN())}
	s.Replicas = int(math.Round(maxReplicas(a)))
	if a.ds.Agg.ReplicasUnnamed {
		// records that name no replica are counted as one per slice for
		// the rates' denominators (replicasNamed); the report says what
		// the request path says of them: unknown
		s.Replicas, s.ReplicaSeconds, s.GoodputPerReplica = 0, Num(math.NaN()), Num(math.NaN())
	}
	if utilN > 0 {
		s.GPUUtilization = Num(util / utilN)
	}
	if a.cost != nil {
		s.Cost, s.CostPerGoodRequest = a.cost.summary(t.goodLo, goodTokens)
	} else if costKnown && cost > 0 {
		per := Num(cost / t.goodLo)
		s.CostPerGoodRequest = &per
		s.Cost = &ArmCost{Source: "opencost", AcceleratorUSD: Num(math.NaN()), HostUSD: Num(math.NaN()), NetworkUSD: Num(math.NaN()),
			IdleReserveUSD: Num(math.NaN()), TotalUSD: Num(cost), PerGoodRequest: per, PerMillionGoodTokens: Num(math.NaN()),
			GoodRequestsPerDollar: Num(t.goodLo / cost), MissingComponents: []string{"breakdown by component (OpenCost gives the total)"}}
	}
	var ttft, tpot, e2e histo.Sum
	var sums [3]float64
	for _, sl := range a.slices {
		ttft.Add(sl.ttft)
		tpot.Add(sl.tpot)
		e2e.Add(sl.e2e)
		sums[0], sums[1], sums[2] = sums[0]+sl.ttftSum, sums[1]+sl.tpotSum, sums[2]+sl.e2eSum
	}
	if !a.ds.Agg.LatencySums {
		sums = [3]float64{math.NaN(), math.NaN(), math.NaN()}
	}
	s.Latency = Latency{TTFT: histQuantiles(ttft.Histogram(), sums[0]), TPOT: histQuantiles(tpot.Histogram(), sums[1]), E2E: histQuantiles(e2e.Histogram(), sums[2])}
	s.LeftOut = a.left
	return s
}

// retryAmplification is offered requests over first attempts (r of them
// retries), as on the request path; NaN when the source does not count
// retries.
func retryAmplification(a *aggArm, offered, r float64) float64 {
	if a.unknown["retried"] {
		return math.NaN()
	}
	if !(offered > r) {
		return math.NaN()
	}
	return offered / (offered - r)
}

func maxReplicas(a *aggArm) float64 {
	m := 0.0
	for _, s := range a.slices {
		m = math.Max(m, s.replicas)
	}
	return m
}

// histQuantiles summarises histogram h; sum is the sum of the values it
// counts (NaN when unknown), for the mean, which is left unknown when it
// falls outside the histogram's non-empty bins (a sum that overflowed).
func histQuantiles(h sources.Histogram, sum float64) Quantiles {
	mean := math.NaN()
	if n := h.Total(); n > 0 {
		mean = sum / n
		// the values lie within the non-empty bins; so does their mean,
		// to the nanosecond each was rounded to
		lo, hi := math.Inf(-1), math.Inf(1)
		for i, c := range h.Counts {
			if i > 0 && c > 0 && h.Counts[i-1] == 0 {
				lo = h.Edges[i-1] // the first non-empty bin's lower edge
			}
			if c >= n {
				hi = h.Edges[i]
				break
			}
		}
		if !(mean >= lo-1e-9 && mean <= hi+1e-9) {
			mean = math.NaN()
		}
	}
	return Quantiles{N: int64(math.Round(h.Total())), Mean: Num(mean), P50: Num(histo.Quantile(0.5, h)),
		P90: Num(histo.Quantile(0.9, h)), P95: Num(histo.Quantile(0.95, h)), P99: Num(histo.Quantile(0.99, h))}
}

// ratioAt builds an arm's bucket series for a count gate; useHi picks the
// upper bound of good counts.
func (a *aggArm) ratioAt(metric string, useHi bool) (stats.Ratio, bool) {
	r := stats.Ratio{Num: make([]float64, len(a.slices)), Den: make([]float64, len(a.slices))}
	for i := range a.slices {
		s := &a.slices[i]
		good := s.goodLo
		if useHi {
			good = s.goodHi
		}
		secs := s.secs()
		if s.leftOut {
			secs = 0 // left out of both arms: no time to count
		}
		switch metric {
		case "slo_attainment":
			r.Num[i], r.Den[i] = good, s.offered()
		case "error_rate":
			r.Num[i], r.Den[i] = s.failed, s.offered()
		case "rejected_share":
			if !a.rejectedKnown {
				return r, false
			}
			r.Num[i], r.Den[i] = s.rejected, s.offered()
		case "canceled_share":
			r.Num[i], r.Den[i] = s.canceled, s.offered()
		case "retry_share":
			r.Num[i], r.Den[i] = s.retried, s.offered()
		case "output_tokens_mean":
			r.Num[i], r.Den[i] = s.outTokens, s.completed-s.outUnknown
		case "goodput":
			r.Num[i], r.Den[i] = good, secs
		case "token_goodput":
			if a.unknown[goodTokensCount] {
				return r, false
			}
			r.Num[i], r.Den[i] = s.goodTokens, secs
		case matchedTokens:
			if a.unknown[goodTokensCount] {
				return r, false
			}
			r.Num[i], r.Den[i] = s.goodTokens, s.offered()
		case "goodput_per_replica":
			r.Num[i], r.Den[i] = good, s.replicas*secs
		case "cost_per_good_request":
			if math.IsNaN(s.costPerHour) {
				return r, false
			}
			r.Num[i], r.Den[i] = s.costPerHour*secs/3600, good
		default:
			return r, false
		}
	}
	return r, true
}

// countOf names the aggregate count a gate's metric is built from, for
// the ones a source may leave unreported (NaN); "" for the others.
func countOf(metric string) string {
	switch metric {
	case "error_rate":
		return "failed"
	case "rejected_share":
		return "rejected"
	case "canceled_share":
		return "canceled"
	case "retry_share":
		return "retried"
	case "output_tokens_mean":
		return "output tokens"
	case "token_goodput":
		return goodTokensCount
	}
	return ""
}

// goodTokensCount names the good requests' output tokens among an arm's
// unknown counts (the message reads "does not report output tokens of
// good requests").
const goodTokensCount = "output tokens of good"

// matchedTokens is ratioAt's name for token goodput at matched offered
// load: good requests' output tokens per offered request.
const matchedTokens = "good tokens per offered request"

// unreported says which arm's source does not report the count a metric
// needs ("" when both do).
func (j *aggJudgement) unreported(metric string) string {
	c := countOf(metric)
	if c == "" {
		return ""
	}
	var arms []string
	for _, a := range []*aggArm{j.b, j.c} {
		if a.unknown[c] {
			arms = append(arms, fmt.Sprintf("%s (%s)", a.arm, sourceKind(a)))
		}
	}
	return unreportedText(arms, c)
}

// sourceKind names an arm's aggregate source for messages.
func sourceKind(a *aggArm) string {
	if a.exact {
		return "per-request records"
	}
	if a.ds.Agg.Profile != "" {
		return "metrics, " + a.ds.Agg.Profile
	}
	return "metrics"
}

// gates evaluates the policy's gates on the aggregate, as the request path
// does (judgement.gates): the policy's gates and per-class tail gates under
// one weighted Holm family, then the guardrails decided on their own
// (traffic split or offered-load ratio, warm-up).
func (j *aggJudgement) gates() []Metric {
	alpha := j.p.Alpha()
	conf := 1 - 2*alpha
	gates := checkedGates(j.p.Gates, j.unreported, j.warnf)
	j.replicaSpreads = latencySpreads(j.b, j.cRaw, gates)
	evals, forks := sideBySide(j, len(gates), func(f *aggJudgement, i int) gateEval {
		return f.evalGate(i, gates[i], conf)
	})
	for _, f := range forks {
		j.join(f)
	}
	ps := failPs(evals)
	weights := policies.GateWeights(gates)
	j.naive(gates, evals, conf)
	// per-class tail gates, as on the request path: every class with
	// ≥ MajorClassShare of the baseline's offered requests gets each tail
	// gate on its own histograms; the pooled gate and its class gates
	// share the pooled gate's weight
	evals, ps, weights = withClassTails(gates, j.majorClasses(), evals, ps, weights,
		func(idx int, g policies.Gate, info policies.MetricInfo, class string) gateEval {
			return j.evalClassTail(idx, g, info, class, conf)
		})
	family := len(evals)
	evals = append(evals, j.guardrails(conf)...)
	evals = append(evals, j.trendChecks(trendLevels(evals[:family]))...)
	adj := stats.WeightedHolm(ps, weights)
	out := make([]Metric, len(evals))
	for i := range evals {
		m := evals[i].m
		if i < family {
			m.PFail = Num(adj[i])
			if evals[i].decidable {
				m.Verdict = Verdict(evals[i].decision)
				if m.Verdict == Fail && !(adj[i] < alpha) {
					m.Verdict = Inconclusive
					m.Reason += fmt.Sprintf("; fails alone but not after the weighted Holm correction across %d gates (this gate's share of α %.0f%%, adjusted p = %.3g ≥ α = %.3g)",
						family, 100*weights[i], adj[i], alpha)
				}
			}
		}
		if e := &evals[i]; i < family && e.decidable && m.Verdict == Inconclusive && j.exact() {
			// counts are exact, so more of the same traffic narrows the
			// interval as on the request path (from metrics, the
			// histogram bounds may be what keeps a gate undecided)
			// the canary as counted, as the request path's offeredRate
			rate := sumOffered(j.b)/j.b.secs + sumOffered(j.cRaw)/j.cRaw.secs
			switch md, lopsided := moreDataFor(e, m, distuv.UnitNormal.Quantile(1-alpha), rate, persistenceShrink(j.p, j.b.ds.Agg.Step)); {
			case widenedByUsers(m):
				m.Reason += "; " + usersAdvice
			case lopsided:
				m.Reason += "; " + lopsidedAdvice
			case md != nil:
				m.MoreData = md
				m.Reason += "; " + moreDataAdvice("", 0, md, m)
			}
		}
		out[i] = m
	}
	return out
}

func (j *aggJudgement) evalGate(idx int, g policies.Gate, conf float64) gateEval {
	info, _ := policies.Metric(g.Metric)
	dir := gateDirection(g, info)
	nan := Num(math.NaN())
	adjusted := []string{"histogram bounds: pass decided at the canary-unfavourable end, fail at the favourable end"}
	if j.exact() {
		adjusted = []string{}
	}
	if cut := math.Max(j.b.cutSecs, j.c.cutSecs); cut > 0 {
		adjusted = append(adjusted, fmt.Sprintf("warm-up cut %gs", cut))
	}
	adjusted = append(adjusted, outageAdjusted(sources.ClockEpoch, j.outages)...)
	e := gateEval{m: Metric{Name: g.Metric, Guardrail: g.Guardrail, Direction: dir, Scale: info.Scale, Unit: info.Unit,
		Margin: Num(g.Margin.Value), Buckets: [2]int{len(j.b.slices), len(j.c.slices)}, Adjusted: adjusted,
		// sample sizes as counted (the canary's reweighted offered
		// count is not one), as on the request path
		NBaseline: int64(math.Round(sumOffered(j.b))), NCanary: int64(math.Round(sumOffered(j.cRaw))),
		Baseline: nan, Canary: nan, Delta: nan, Interval: [2]Num{nan, nan}, PFail: nan, Verdict: Inconclusive}}
	inconclusive := func(why string) gateEval { e.m.Reason = why; return e }
	if why := j.unreported(g.Metric); why != "" {
		return inconclusive(why + ": the gate cannot be decided from this data, and a gate is never passed on a count the source does not give")
	}
	if info.Latency != "" {
		return j.latencyGate(e, idx, info, g, conf)
	}
	if g.Metric == "slo_attainment" {
		// good requests at their upper bounds, over offered requests
		hb, _ := j.b.ratioAt("slo_attainment", true)
		hc, _ := j.cRaw.ratioAt("slo_attainment", true)
		if ob, oc := sum(hb.Den), sum(hc.Den); sum(hb.Num) == 0 && sum(hc.Num) == 0 && ob > 0 && oc > 0 {
			e.m.Baseline, e.m.Canary, e.m.Delta = 0, 0, 0
			return inconclusive(noneGood(ob, oc, j.shortShare()))
		}
	}
	if isEfficiencyMetric(g.Metric) {
		// work as counted, as on the request path (judgement.work)
		return efficiencyGate(e, g, info, j.p, aggWork(j.b), aggWork(j.cRaw), conf)
	}
	// pessimistic: canary at its worst end (fewest good requests, which is
	// worse for attainment, goodput and cost per good request alike),
	// baseline at its best
	metric := g.Metric
	matched := j.p.Normalize.Load == "matched" && (metric == "goodput" || metric == "goodput_per_replica" || metric == "token_goodput")
	if matched {
		// at matched offered load a goodput ratio is the ratio of good
		// requests (or their output tokens) per offered request (see
		// judgement.matchedLoad)
		metric = "slo_attainment"
		e.m.Adjusted = append(e.m.Adjusted, "matched offered load: good requests per offered request")
		if g.Metric == "token_goodput" {
			metric = matchedTokens
			e.m.Adjusted[len(e.m.Adjusted)-1] = "matched offered load: good requests' output tokens per offered request"
		}
	}
	ca := j.c
	if metric == "cost_per_good_request" {
		// cost per good request as counted, as on the request path: the
		// class mix is not standardized for cost
		ca = j.cRaw
	}
	cWorst, okc := ca.ratioAt(metric, false)
	bBest, okb := j.b.ratioAt(metric, true)
	cBest, _ := ca.ratioAt(metric, true)
	bWorst, _ := j.b.ratioAt(metric, false)
	if !okc || !okb {
		if g.Metric == "cost_per_good_request" {
			return inconclusive("cost is unknown: no cost records (--cost), policy cost rates or OpenCost series for an arm; a declared cost gate is never passed without cost data")
		}
		return inconclusive(fmt.Sprintf("%s cannot be computed from these metrics", g.Metric))
	}
	est := func(x, y stats.Ratio) stats.Estimate {
		if info.Scale == "absolute" {
			if j.paired {
				// a load wave both arms ride cancels in the paired difference
				xa, ya := j.align(x, y)
				return stats.PairedDiffOfRatios(xa, ya, conf)
			}
			return stats.DiffOfRatios(x, y, conf)
		}
		if g.Metric == "output_tokens_mean" && j.paired && j.cRaw != j.c {
			// standardized to the reference mix, the request path takes
			// the paired variance (judgement.standardized): so here
			xa, ya := j.align(x, y)
			return stats.PairedLogRatioOfRatios(xa, ya, conf)
		}
		return stats.LogRatioOfRatios(x, y, conf)
	}
	pess, opt := est(cWorst, bBest), est(cBest, bWorst)
	// the request path's standardized estimator where the aggregate has
	// what it needs (exact counts per stratum), as the request path
	// computes it
	std, stdB, stdC, standardized := stats.Estimate{}, 0.0, 0.0, false
	if !matched {
		// a mean per completed request is compared by its log ratio, as
		// on the request path
		std, stdB, stdC, standardized = j.standardizedCount(metric, g.Metric == "output_tokens_mean", conf)
	}
	if standardized {
		pess, opt = std, std
	}
	if g.Metric == "output_tokens_mean" {
		if !(sum(cWorst.Den) > 0 && sum(bBest.Den) > 0 && sum(bBest.Num) > 0) {
			return inconclusive("no completed requests with a known output length in " + armsMissing(int(sum(bBest.Den)), int(sum(cWorst.Den))))
		}
		// a mean per completed request: the batch-means interval as on
		// the request path, no count floor
	} else if info.Scale == "absolute" {
		// never narrower than the independent-requests interval (of the
		// canary as counted when standardized, as on the request path)
		fw, fb := cWorst, cBest
		if standardized {
			fw, _ = j.cRaw.ratioAt(metric, false)
			fb, _ = j.cRaw.ratioAt(metric, true)
		}
		if g.Metric == "slo_attainment" {
			// replicas that differ all run, as on the request path
			repB, _ := j.b.replicaCounts()
			repC, _ := j.cRaw.replicaCounts()
			if !j.exact() {
				// from metrics, which count no replica's good requests:
				// bounded from each replica's histograms
				repB, _ = j.b.replicaBounded(j.slo)
				repC, _ = j.cRaw.replicaBounded(j.slo)
			}
			spread := replicaSpread(repB, repC)
			var optNote []string
			pess = withReplicaSpread(pess, conf, spread, &e.m.Adjusted)
			opt = withReplicaSpread(opt, conf, spread, &optNote)
		}
		pess = binomialFloor(pess, sum(fw.Num), sum(fw.Den), sum(bBest.Num), sum(bBest.Den), conf)
		opt = binomialFloor(opt, sum(fb.Num), sum(fb.Den), sum(bWorst.Num), sum(bWorst.Den), conf)
	} else if matched {
		// the floor counts good requests per offered request, for token
		// goodput too, as on the request path
		cw, _ := ca.ratioAt("slo_attainment", false)
		bb, _ := j.b.ratioAt("slo_attainment", true)
		cb, _ := ca.ratioAt("slo_attainment", true)
		bw, _ := j.b.ratioAt("slo_attainment", false)
		floor := matchedFloor(metric == matchedTokens)
		pess = floor(pess, sum(cw.Num), sum(cw.Den), sum(bb.Num), sum(bb.Den), conf)
		opt = floor(opt, sum(cb.Num), sum(cb.Den), sum(bw.Num), sum(bw.Den), conf)
		if j.cRaw != j.c {
			// reweighted to the baseline's mix: as on the request path,
			// the interval keeps at least the half-width of the
			// as-counted comparison at matched load around its point,
			// and of the standardized comparison's per-stratum variance
			// (judgement.standardized), which a trend in one arm can make
			// the wider
			pess, opt = j.rawWidth(pess, metric, false, conf), j.rawWidth(opt, metric, true, conf)
			if s, _, _, ok := j.standardizedCount(metric, true, conf); ok {
				pess, opt = atLeastHalfOf(pess, s, "+standardized-width"), atLeastHalfOf(opt, s, "+standardized-width")
			}
		}
	} else if g.Metric == "token_goodput" {
		// the Poisson floor counts good requests, not their tokens, as
		// on the request path
		cw, _ := ca.ratioAt("goodput", false)
		bb, _ := j.b.ratioAt("goodput", true)
		cb, _ := ca.ratioAt("goodput", true)
		bw, _ := j.b.ratioAt("goodput", false)
		pess = poissonFloor(pess, sum(bb.Num), sum(cw.Num), conf)
		opt = poissonFloor(opt, sum(bw.Num), sum(cb.Num), conf)
	} else if g.Metric == "cost_per_good_request" {
		// the counts are the good requests, in the denominator (the
		// numerator is dollars), as on the request path
		pess = poissonFloor(pess, sum(bBest.Den), sum(cWorst.Den), conf)
		opt = poissonFloor(opt, sum(bWorst.Den), sum(cBest.Den), conf)
	} else {
		pess = poissonFloor(pess, sum(bBest.Num), sum(cWorst.Num), conf)
		opt = poissonFloor(opt, sum(bWorst.Num), sum(cBest.Num), conf)
	}
	costMatched := false
	if g.Metric == "cost_per_good_request" && j.p.Normalize.Load == "matched" {
		mp, okp := j.matchedCost(false, conf)
		mo, oko := j.matchedCost(true, conf)
		if okp && oko {
			naive := pess
			pess, opt, costMatched = mp, mo, true
			e.m.Naive = naiveOf(naive, sum(bBest.Num)/sum(bBest.Den), sum(cWorst.Num)/sum(cWorst.Den))
			e.m.Adjusted = append(e.m.Adjusted, "matched offered load: cost per second over attainment, so the Poisson count of good requests routing sends each arm is not counted as cost noise")
		}
	}
	// the figures shown at each end: (baseline, canary)
	vals := func(b, c stats.Ratio, baseHi bool) [2]float64 {
		vb, vc := sum(b.Num)/sum(b.Den), sum(c.Num)/sum(c.Den)
		if costMatched {
			// the canary's cost per good request at the baseline's
			// offered load, as on the request path
			est := pess
			if !baseHi {
				est = opt
			}
			return [2]float64{vb, vb * math.Exp(est.Point)}
		}
		if standardized {
			return [2]float64{stdB, stdC}
		}
		if matched {
			// goodput figures: the baseline's, and the canary's at the
			// baseline's offered load
			gb, _ := j.b.ratioAt(g.Metric, baseHi)
			g0 := sum(gb.Num) / sum(gb.Den)
			return [2]float64{g0, g0 * vc / vb}
		}
		return [2]float64{vb, vc}
	}
	if j.b.ds.Agg != nil && j.cRaw.ds.Agg != nil {
		// users served by one arm, as on the request path
		if w, ok := usersWideningOf(j.b.ds.Agg.Users, j.cRaw.ds.Agg.Users, g.Metric, info.Scale == "relative",
			func() ([]loadBlock, []loadBlock) { return j.loadBlocks(j.b), j.loadBlocks(j.cRaw) }); ok {
			var optNote []string
			pess, opt = w.widen(pess, &e.m.Adjusted), w.widen(opt, &optNote)
		}
	}
	pess, opt = persistenceWidenedBoth(pess, opt, j.p.Window, min(len(j.b.slices), len(j.c.slices)), j.b.ds.Agg.Step, conf, &e.m.Adjusted)
	pessVals, optVals := vals(bBest, cWorst, true), vals(bWorst, cBest, false)
	e.m.Baseline, e.m.Canary = Num(pessVals[0]), Num(pessVals[1])
	e.m.Method = pess.Method
	if !j.exact() {
		e.m.Method += ", at both ends of the histogram bounds"
	}
	if len(j.b.slices) < MinBuckets || len(j.c.slices) < MinBuckets {
		return inconclusive(fmt.Sprintf("too little data: %d and %d buckets (need ≥ %d per arm)", len(j.b.slices), len(j.c.slices), MinBuckets))
	}
	if math.IsNaN(pess.Point) || math.IsNaN(opt.Point) || math.IsInf(pess.CI.Lo, 0) || math.IsInf(opt.CI.Hi, 0) {
		return inconclusive("the interval could not be computed (no variation or no data in an arm)")
	}
	e = decideBounds(e, g, info, pess, opt, pessVals, optVals)
	if g.Metric == "output_tokens_mean" {
		// the canary as counted, as on the request path
		var tb, tc aggSlice
		for i := range j.b.slices {
			tb.addCounts(&j.b.slices[i])
		}
		for i := range j.cRaw.slices {
			tc.addCounts(&j.cRaw.slices[i])
		}
		e = heldByOutputGap(e, outputKnownGap(tb.completed, tb.outUnknown, tc.completed, tc.outUnknown))
		e = heldByOneCompletion(e, tb.outputTop(), tc.outputTop())
	}
	return e
}

// atLeastHalfOf widens e's interval to at least s's half-width on each
// side of e's point, its method gaining suffix when it does.
func atLeastHalfOf(e, s stats.Estimate, suffix string) stats.Estimate {
	half := (s.CI.Hi - s.CI.Lo) / 2
	if !(half > 0) || math.IsNaN(e.Point) {
		return e
	}
	if lo, hi := e.Point-half, e.Point+half; lo < e.CI.Lo || hi > e.CI.Hi {
		e.CI = stats.Interval{Lo: math.Min(e.CI.Lo, lo), Hi: math.Max(e.CI.Hi, hi)}
		e.SE = math.Max(nanTo0(e.SE), nanTo0(s.SE))
		e.Method += suffix
	}
	return e
}

// rawWidth widens a mix-reweighted matched-load estimate (canary at the
// upper end of its good counts when favourable) to at least the half-width,
// around its own point, of the same comparison with the canary as counted
// (cRaw), floored by Newcombe on the counted good requests per offered
// request: the request path takes the larger half-width of the two.
func (j *aggJudgement) rawWidth(e stats.Estimate, metric string, favourable bool, conf float64) stats.Estimate {
	rc, _ := j.cRaw.ratioAt(metric, favourable)
	rb, _ := j.b.ratioAt(metric, !favourable)
	raw := stats.LogRatioOfRatios(rc, rb, conf)
	gc, _ := j.cRaw.ratioAt("slo_attainment", favourable)
	gb, _ := j.b.ratioAt("slo_attainment", !favourable)
	raw = matchedFloor(metric == matchedTokens)(raw, sum(gc.Num), sum(gc.Den), sum(gb.Num), sum(gb.Den), conf)
	return atLeastHalfOf(e, raw, "+counted-width")
}

// decideBounds decides a gate whose good counts are only bounded by
// histograms. A pass must hold at the canary-unfavourable end of the
// bounds (canary at its worst, baseline at its best: pess), a fail at the
// canary-favourable end (opt): whatever the true counts inside the bounds,
// the decision stands. Both ends are shown, in Bounds and in the reason;
// Interval is their hull. vals are (baseline, canary) at each end.
func decideBounds(e gateEval, g policies.Gate, info policies.MetricInfo, pess, opt stats.Estimate, pessVals, optVals [2]float64) gateEval {
	if pess.CI == opt.CI && pess.Point == opt.Point {
		return decide(e, g, info, pess) // exact: the two ends coincide
	}
	ep := decide(e, g, info, pess)
	eo := decide(e, g, info, opt)
	cmpAt := func(x gateEval, v [2]float64) NaiveComparison {
		return NaiveComparison{Baseline: Num(v[0]), Canary: Num(v[1]), Delta: x.m.Delta, Interval: x.m.Interval}
	}
	bounds := &BoundEnds{Unfavourable: cmpAt(ep, pessVals), Favourable: cmpAt(eo, optVals)}
	if g.Direction == policies.TwoSided {
		// either end may be the unfavourable one: decided on the hull of
		// both ends' intervals (a pass within the margin both ways at
		// both ends, a fail beyond it at both)
		hull := stats.Estimate{Point: pess.Point, SE: math.Max(nanTo0(pess.SE), nanTo0(opt.SE)), Method: pess.Method,
			CI: stats.Interval{Lo: math.Min(pess.CI.Lo, opt.CI.Lo), Hi: math.Max(pess.CI.Hi, opt.CI.Hi)}}
		out := decide(e, g, info, hull)
		out.m.Bounds = bounds
		out.m.Reason = "on the hull of both ends of the histogram bounds: " + out.m.Reason
		return out
	}
	var out gateEval
	switch {
	case ep.decidable && ep.decision == stats.Pass:
		out = ep
	case eo.decidable && eo.decision == stats.Fail:
		out = eo
		out.m.Baseline, out.m.Canary = Num(optVals[0]), Num(optVals[1])
	default:
		out = ep
		out.decision = stats.Inconclusive
		if eo.decidable {
			// the fail p-value is taken at the favourable end
			out.harmPoint, out.se = eo.harmPoint, eo.se
		}
	}
	out.unfavourableFails = ep.decidable && ep.decision == stats.Fail
	lo := math.Min(float64(ep.m.Interval[0]), float64(eo.m.Interval[0]))
	hi := math.Max(float64(ep.m.Interval[1]), float64(eo.m.Interval[1]))
	out.m.Interval = [2]Num{Num(lo), Num(hi)}
	out.m.Bounds = bounds
	unf := fmt.Sprintf("%s [%s, %s]", fmtDelta(ep.m, float64(ep.m.Delta)), fmtDelta(ep.m, float64(ep.m.Interval[0])), fmtDelta(ep.m, float64(ep.m.Interval[1])))
	fav := fmt.Sprintf("%s [%s, %s]", fmtDelta(eo.m, float64(eo.m.Delta)), fmtDelta(eo.m, float64(eo.m.Interval[0])), fmtDelta(eo.m, float64(eo.m.Interval[1])))
	switch out.decision {
	case stats.Pass:
		out.m.Reason = fmt.Sprintf("passes even at the canary-unfavourable end of the histogram bounds, %s (canary-favourable end %s): harm stays within the %s margin",
			unf, fav, fmtMargin(ep.m))
	case stats.Fail:
		what := fmt.Sprintf("worse by more than the %s margin", fmtMargin(eo.m))
		if g.Guardrail {
			what = "worse with confidence (guardrail)"
		}
		out.m.Reason = fmt.Sprintf("fails even at the canary-favourable end of the histogram bounds, %s (canary-unfavourable end %s): the canary is %s",
			fav, unf, what)
	default:
		out.m.Reason = fmt.Sprintf("undecided within the histogram bounds: canary-unfavourable end %s does not pass, canary-favourable end %s does not fail (margin %s)",
			unf, fav, fmtMargin(ep.m))
	}
	return out
}

func sumOffered(a *aggArm) float64 {
	t := 0.0
	for i := range a.slices {
		t += a.slices[i].offered()
	}
	return t
}

func gateKind(g policies.Gate) string {
	if g.Guardrail {
		return "guardrail"
	}
	return "gate"
}

// aggSpan is the time an aggregate's buckets span, seconds.
func aggSpan(agg *sources.Aggregate) float64 {
	if len(agg.Buckets) == 0 {
		return 0
	}
	return agg.Buckets[len(agg.Buckets)-1].End - agg.Buckets[0].Start
}
