package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
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
	// allStarts are the slice starts before any warm-up cut (the grid of
	// the aggregate's replica tracks); cutSecs is the warm-up cut.
	allStarts []float64
	cutSecs   float64
}

type aggSlice struct {
	start, end                  float64
	completed, failed, canceled float64
	rejected                    float64
	goodLo, goodHi              float64
	replicas                    float64
	costPerHour                 float64
	gpuUtil                     float64
	gauges                      sources.AggBucket // Running, Waiting, KVUsage, GPUPowerW, GPUMemBytes of the slice
	outTokens                   float64
	promptTokens                float64 // NaN when unknown
	prefixHits, prefixQueries   float64 // NaN when unknown
	ttft, tpot, e2e             sources.Histogram
}

func (s *aggSlice) offered() float64 { return s.completed + s.failed + s.canceled + s.rejected }

// judgeAggregate judges two metrics-based arms. Joint SLO attainment is
// only bounded by histograms (thresholds between bucket edges, Fréchet
// bounds for TTFT ∧ TPOT), so every count gate is computed at both ends of
// the bounds: it passes only if the canary passes with its good counts at
// their lower bound and the baseline's at their upper bound (the
// canary-unfavourable end), and fails only if it fails the other way round
// (the canary-favourable end).
func judgeAggregate(baseline, canary *sources.Dataset, cfg Config) (*Report, error) {
	p := cfg.Policy
	if baseline.Agg == nil || canary.Agg == nil {
		return nil, &DataError{Msg: "one arm is metrics-based (Prometheus or scrapes) and the other per-request files: give both arms the same kind of input"}
	}
	if err := overlap(baseline, canary); err != nil {
		return nil, err
	}
	if p.SLO.E2E > 0 || p.SLO.MaxITL > 0 || p.SLO.Quality != "" {
		return nil, &DataError{Msg: fmt.Sprintf("policy %s needs per-request e2e, max_itl or quality criteria, which metrics histograms cannot check jointly; use per-request files or a policy with ttft/tpot only", p.Name)}
	}
	slo := histo.SLO{TTFT: math.NaN(), TPOT: math.NaN()}
	if p.SLO.TTFT > 0 {
		slo.TTFT = p.SLO.TTFT.Seconds()
	}
	if p.SLO.TPOT > 0 {
		slo.TPOT = p.SLO.TPOT.Seconds()
	}
	plan := classMix(baseline.Agg, canary.Agg, p.Normalize.Mix)
	b, err := newAggArm(baseline, slo, nil)
	if err != nil {
		return nil, err
	}
	c, err := newAggArm(canary, slo, plan.factor)
	if err != nil {
		return nil, err
	}
	j := &aggJudgement{p: p, cfg: cfg, b: b, c: c, mix: plan}
	for _, a := range []*aggArm{b, c} {
		st, err := a.warmup(p.Window)
		if err != nil {
			return nil, err
		}
		j.steps = append(j.steps, st)
	}
	if len(p.Classes) > 0 {
		j.warnf("per-class SLOs are not applied to metrics data: every request is judged with the policy's default SLO")
	}
	return j.report(), nil
}

// factor, when not nil, weights each class's counts and histograms (the
// canary reweighted to the baseline's class mix).
func newAggArm(ds *sources.Dataset, slo histo.SLO, factor map[string]float64) (*aggArm, error) {
	agg := ds.Agg
	if len(agg.Buckets) == 0 {
		return nil, &DataError{Arm: ds.Arm, Msg: "no metrics in the window: no series matched (check the selector and the time range)"}
	}
	a := &aggArm{arm: ds.Arm, ds: ds, rejectedKnown: true}
	a.bounds = histo.GoodBounds(agg, slo)
	byStart := map[float64]int{}
	for i, bk := range agg.Buckets {
		bb := a.bounds.Buckets[i]
		k, ok := byStart[bk.Start]
		if !ok {
			k = len(a.slices)
			byStart[bk.Start] = k
			a.slices = append(a.slices, aggSlice{start: bk.Start, end: bk.End, replicas: bk.Replicas, costPerHour: bk.CostPerHour, gpuUtil: bk.GPUUtil, gauges: gaugesOf(bk)})
		}
		s := &a.slices[k]
		if f, ok := factor[bk.Class]; ok {
			bk, bb = scaleBucket(bk, bb, f)
		}
		s.completed += nan0(bk.Completed)
		s.failed += nan0(bk.Failed)
		s.canceled += nan0(bk.Canceled)
		if math.IsNaN(bk.Rejected) {
			a.rejectedKnown = false
		} else {
			s.rejected += bk.Rejected
		}
		s.goodLo += nan0(bb.Lo)
		s.goodHi += nan0(bb.Hi)
		s.outTokens += nan0(bk.OutputTokens)
		s.promptTokens += bk.PromptTokens
		s.prefixHits += bk.PrefixHits
		s.prefixQueries += bk.PrefixQueries
		s.ttft = addHist(s.ttft, bk.TTFT)
		s.tpot = addHist(s.tpot, bk.TPOT)
		s.e2e = addHist(s.e2e, bk.E2E)
	}
	slices.SortFunc(a.slices, func(x, y aggSlice) int { return cmp.Compare(x.start, y.start) })
	a.allStarts = a.sliceStarts()
	var completed float64
	for _, s := range a.slices {
		a.secs += s.end - s.start
		completed += s.completed
	}
	if completed == 0 {
		return nil, &DataError{Arm: ds.Arm, Msg: "no completed requests in the window's metrics: check the selector, the time range and that the arm served traffic"}
	}
	return a, nil
}

func nan0(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

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
	p     *policies.Policy
	cfg   Config
	b, c  *aggArm
	warns []string
	steps []NormalizationStep // warm-up steps, baseline then canary
	mix   aggMix
}

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
	j.warnf("diagnostics (Mann-Whitney, Hodges-Lehmann) need per-request data and are not computed from metrics")
	r.Arms.Baseline, r.Arms.Canary = j.armSummary(j.b), j.armSummary(j.c)
	lo := math.Min(j.b.slices[0].start, j.c.slices[0].start)
	hi := math.Max(j.b.slices[len(j.b.slices)-1].end, j.c.slices[len(j.c.slices)-1].end)
	r.Measurement = Measurement{
		Population:          "all requests the engines counted in the window, both arms, summed over replicas",
		Location:            "server",
		CompletionCondition: "finished with reason stop or length; good = completed and within the SLO, bounded from histograms",
		Window:              makeWindow(sources.ClockEpoch, lo, hi),
		BucketSeconds:       j.b.ds.Agg.Step,
		Clock:               string(sources.ClockEpoch),
		Confidence:          p.Confidence,
		SLO:                 []ClassSLO{{Class: "default", TTFT: Num(p.SLO.TTFT.Seconds()), TPOT: Num(p.SLO.TPOT.Seconds())}},
	}
	r.Normalization = Normalization{Steps: []NormalizationStep{{Name: "histogram-bounds", Setting: "both ends", Applied: true,
		Detail: fmt.Sprintf("good requests bounded from histograms: baseline [%.0f, %.0f], canary [%.0f, %.0f]; a gate passes only at the canary-unfavourable end and fails only at the canary-favourable end",
			j.b.bounds.Lo, j.b.bounds.Hi, j.c.bounds.Lo, j.c.bounds.Hi)}}}
	r.Normalization.Steps = append(r.Normalization.Steps, j.normSteps()...)
	r.Metrics = j.gates()
	r.Series = j.series()
	r.Classes = aggClasses(j.b, j.c, len(p.Classes) > 0)
	r.Distributions = j.distributions()
	r.Verdict, r.Reasons = Overall(r.Metrics)
	if ms := mixShift(j.b, j.c, 1-2*p.Alpha()); ms != "" {
		j.warnf("traffic mix: %s", ms)
		if r.Verdict != Inconclusive {
			r.Reasons = append([]string{fmt.Sprintf("the gates give %s, but %s, so neither a pass nor a fail can be blamed on the change",
				strings.ToUpper(string(r.Verdict)), ms)}, r.Reasons...)
			r.Verdict = Inconclusive
		}
	}
	cov := coverageOf(j.b, j.c)
	applyCoverage(r, cov)
	for _, m := range append(append(cov.missing, cov.canaryLost...), cov.events...) {
		j.warnf("%s", m)
	}
	if len(cov.events)+len(cov.canaryLost) > 0 {
		r.Normalization.Steps = append(r.Normalization.Steps, NormalizationStep{Name: "replicas", Setting: "detect", Applied: true,
			Detail: strings.Join(append(append([]string{}, cov.canaryLost...), cov.events...), "; ") +
				" (goodput is compared per replica-second; a lost canary replica keeps the verdict from passing)"})
	}
	internalView(r, aggWork(j.b), aggWork(j.c), j.b.ds.Agg.Step)
	r.Warnings = j.warns
	return r
}

func (j *aggJudgement) armSummary(a *aggArm) ArmSummary {
	var t aggSlice
	var repSecs, util, utilN, cost float64
	costKnown := true
	for _, s := range a.slices {
		t.completed += s.completed
		t.failed += s.failed
		t.canceled += s.canceled
		t.rejected += s.rejected
		t.goodLo += s.goodLo
		t.outTokens += s.outTokens
		repSecs += s.replicas * (s.end - s.start)
		if !math.IsNaN(s.gpuUtil) {
			util += s.gpuUtil
			utilN++
		}
		if math.IsNaN(s.costPerHour) {
			costKnown = false
		} else {
			cost += s.costPerHour * (s.end - s.start) / 3600
		}
	}
	off := t.offered()
	acc := Accounting{Offered: int64(math.Round(off)), Rejected: int64(math.Round(t.rejected)), Canceled: int64(math.Round(t.canceled)),
		Failed: int64(math.Round(t.failed)), Completed: int64(math.Round(t.completed)), Good: int64(math.Round(t.goodLo))}
	acc.Admitted = acc.Offered - acc.Rejected
	s := ArmSummary{Accounting: acc, SLOAttainment: Num(t.goodLo / off), GoodputRPS: Num(t.goodLo / a.secs),
		TokenGoodputTPS: Num(math.NaN()), ThroughputRPS: Num(t.completed / a.secs), OutputTokensPS: Num(t.outTokens / a.secs),
		RetryAmplification: Num(math.NaN()), WindowSeconds: Num(a.secs),
		Window:         makeWindow(sources.ClockEpoch, a.slices[0].start, a.slices[len(a.slices)-1].end),
		ReplicaSeconds: Num(repSecs), GoodputPerReplica: Num(t.goodLo / repSecs), CacheHitRate: Num(cacheRate(a)), WarmupCutSeconds: Num(a.cutSecs),
		GPUUtilization: Num(math.NaN())}
	s.Replicas = int(math.Round(maxReplicas(a)))
	if utilN > 0 {
		s.GPUUtilization = Num(util / utilN)
	}
	if costKnown && cost > 0 {
		per := Num(cost / t.goodLo)
		s.CostPerGoodRequest = &per
		s.Cost = &ArmCost{Source: "opencost", AcceleratorUSD: Num(math.NaN()), HostUSD: Num(math.NaN()), NetworkUSD: Num(math.NaN()),
			IdleReserveUSD: Num(math.NaN()), TotalUSD: Num(cost), PerGoodRequest: per, PerMillionGoodTokens: Num(math.NaN()),
			GoodRequestsPerDollar: Num(t.goodLo / cost), MissingComponents: []string{"breakdown by component (OpenCost gives the total)"}}
	}
	var ttft, tpot, e2e sources.Histogram
	for _, sl := range a.slices {
		ttft, tpot, e2e = addHist(ttft, sl.ttft), addHist(tpot, sl.tpot), addHist(e2e, sl.e2e)
	}
	s.Latency = Latency{TTFT: histQuantiles(ttft), TPOT: histQuantiles(tpot), E2E: histQuantiles(e2e)}
	return s
}

func maxReplicas(a *aggArm) float64 {
	m := 0.0
	for _, s := range a.slices {
		m = math.Max(m, s.replicas)
	}
	return m
}

func histQuantiles(h sources.Histogram) Quantiles {
	return Quantiles{N: int64(math.Round(h.Total())), Mean: Num(math.NaN()), P50: Num(histo.Quantile(0.5, h)),
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
		secs := s.end - s.start
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
		case "goodput":
			r.Num[i], r.Den[i] = good, secs
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

func (j *aggJudgement) gates() []Metric {
	alpha := j.p.Alpha()
	conf := 1 - 2*alpha
	var gates []policies.Gate
	for _, g := range j.p.Gates {
		if info, _ := policies.Metric(g.Metric); info.RequestsOnly {
			j.warnf("the %s %s needs per-request records and is not checked on metrics data", g.Metric, gateKind(g))
			continue
		}
		if g.Metric == "rejected_share" && g.Guardrail && (!j.b.rejectedKnown || !j.c.rejectedKnown) {
			// the engine never sees requests shed before it: like the
			// per-request guardrails above, not checked, and said so
			j.warnf("the rejected_share guardrail is not checked on these metrics: the engine (%s) counts no rejected requests; a gateway's or the clients' records can check it",
				j.b.ds.Agg.Profile)
			continue
		}
		gates = append(gates, g)
	}
	out := make([]Metric, len(gates))
	evals := make([]gateEval, len(gates))
	ps := make([]float64, len(evals))
	for i, g := range gates {
		evals[i] = j.evalGate(i, g, conf)
		ps[i] = math.NaN()
		if evals[i].decidable {
			ps[i] = stats.FailPValue(evals[i].harmPoint, evals[i].se, evals[i].failAt)
		}
	}
	adj := stats.WeightedHolm(ps, policies.GateWeights(gates))
	for i := range evals {
		m := evals[i].m
		m.PFail = Num(adj[i])
		if evals[i].decidable {
			m.Verdict = Verdict(evals[i].decision)
			if m.Verdict == Fail && !(adj[i] < alpha) {
				m.Verdict = Inconclusive
				m.Reason += fmt.Sprintf("; fails alone but not after the weighted Holm correction across %d gates", len(evals))
			}
		}
		out[i] = m
	}
	return out
}

func (j *aggJudgement) evalGate(idx int, g policies.Gate, conf float64) gateEval {
	info, _ := policies.Metric(g.Metric)
	dir := "lower_is_better"
	if info.HigherIsBetter {
		dir = "higher_is_better"
	}
	nan := Num(math.NaN())
	e := gateEval{m: Metric{Name: g.Metric, Guardrail: g.Guardrail, Direction: dir, Scale: info.Scale, Unit: info.Unit,
		Margin: Num(g.Margin.Value), Buckets: [2]int{len(j.b.slices), len(j.c.slices)}, Adjusted: []string{"histogram bounds: pass decided at the canary-unfavourable end, fail at the favourable end"},
		NBaseline: int64(math.Round(sumOffered(j.b))), NCanary: int64(math.Round(sumOffered(j.c))),
		Baseline: nan, Canary: nan, Delta: nan, Interval: [2]Num{nan, nan}, PFail: nan, Verdict: Inconclusive}}
	inconclusive := func(why string) gateEval { e.m.Reason = why; return e }
	if info.Latency != "" {
		return j.latencyGate(e, idx, info, g, conf)
	}
	if isEfficiencyMetric(g.Metric) {
		return efficiencyGate(e, g, info, j.p, aggWork(j.b), aggWork(j.c), conf)
	}
	// pessimistic: canary at its worst end (fewest good requests, which is
	// worse for attainment, goodput and cost per good request alike),
	// baseline at its best
	metric := g.Metric
	matched := j.p.Normalize.Load == "matched" && (metric == "goodput" || metric == "goodput_per_replica")
	if matched {
		// at matched offered load a goodput ratio is the ratio of good
		// requests per offered request (see judgement.matchedLoad)
		metric = "slo_attainment"
		e.m.Adjusted = append(e.m.Adjusted, "matched offered load: good requests per offered request")
	}
	cWorst, okc := j.c.ratioAt(metric, false)
	bBest, okb := j.b.ratioAt(metric, true)
	cBest, _ := j.c.ratioAt(metric, true)
	bWorst, _ := j.b.ratioAt(metric, false)
	if !okc || !okb {
		if g.Metric == "cost_per_good_request" {
			return inconclusive("cost is unknown: no OpenCost series for an arm; a declared cost gate is never passed without cost data")
		}
		return inconclusive(fmt.Sprintf("%s cannot be computed from these metrics", g.Metric))
	}
	est := func(x, y stats.Ratio) stats.Estimate {
		if info.Scale == "absolute" {
			return stats.DiffOfRatios(x, y, conf)
		}
		return stats.LogRatioOfRatios(x, y, conf)
	}
	pess, opt := est(cWorst, bBest), est(cBest, bWorst)
	if info.Scale == "absolute" {
		// never narrower than the independent-requests interval
		pess = binomialFloor(pess, sum(cWorst.Num), sum(cWorst.Den), sum(bBest.Num), sum(bBest.Den), conf)
		opt = binomialFloor(opt, sum(cBest.Num), sum(cBest.Den), sum(bWorst.Num), sum(bWorst.Den), conf)
	} else if matched {
		pess = ratioFloor(pess, sum(cWorst.Num), sum(cWorst.Den), sum(bBest.Num), sum(bBest.Den), conf)
		opt = ratioFloor(opt, sum(cBest.Num), sum(cBest.Den), sum(bWorst.Num), sum(bWorst.Den), conf)
	} else {
		pess = poissonFloor(pess, sum(bBest.Num), sum(cWorst.Num), conf)
		opt = poissonFloor(opt, sum(bWorst.Num), sum(cBest.Num), conf)
	}
	// the figures shown at each end: (baseline, canary)
	vals := func(b, c stats.Ratio, baseHi bool) [2]float64 {
		vb, vc := sum(b.Num)/sum(b.Den), sum(c.Num)/sum(c.Den)
		if matched {
			// goodput figures: the baseline's, and the canary's at the
			// baseline's offered load
			gb, _ := j.b.ratioAt(g.Metric, baseHi)
			g0 := sum(gb.Num) / sum(gb.Den)
			return [2]float64{g0, g0 * vc / vb}
		}
		return [2]float64{vb, vc}
	}
	pessVals, optVals := vals(bBest, cWorst, true), vals(bWorst, cBest, false)
	e.m.Baseline, e.m.Canary = Num(pessVals[0]), Num(pessVals[1])
	e.m.Method = pess.Method + ", at both ends of the histogram bounds"
	if len(j.b.slices) < MinBuckets || len(j.c.slices) < MinBuckets {
		return inconclusive(fmt.Sprintf("too little data: %d and %d buckets (need ≥ %d per arm)", len(j.b.slices), len(j.c.slices), MinBuckets))
	}
	if math.IsNaN(pess.Point) || math.IsNaN(opt.Point) || math.IsInf(pess.CI.Lo, 0) || math.IsInf(opt.CI.Hi, 0) {
		return inconclusive("the interval could not be computed (no variation or no data in an arm)")
	}
	return decideBounds(e, g, info, pess, opt, pessVals, optVals)
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

// latencyGate compares a quantile of merged histograms, with a block
// bootstrap over time slices for the interval. Quantiles interpolate within
// a histogram bucket, so the figures are only as fine as the bucket edges.
func (j *aggJudgement) latencyGate(e gateEval, idx int, info policies.MetricInfo, g policies.Gate, conf float64) gateEval {
	pick := func(s *aggSlice) sources.Histogram {
		switch info.Latency {
		case "ttft":
			return s.ttft
		case "tpot":
			return s.tpot
		}
		return s.e2e
	}
	merged := func(a *aggArm, idx []int) sources.Histogram {
		var h sources.Histogram
		for _, i := range idx {
			h = addHist(h, pick(&a.slices[i]))
		}
		return h
	}
	all := func(a *aggArm) []int {
		ix := make([]int, len(a.slices))
		for i := range ix {
			ix[i] = i
		}
		return ix
	}
	hb, hc := merged(j.b, all(j.b)), merged(j.c, all(j.c))
	qb, qc := histo.Quantile(info.Quantile, hb), histo.Quantile(info.Quantile, hc)
	e.m.Baseline, e.m.Canary = Num(qb), Num(qc)
	e.m.NBaseline, e.m.NCanary = int64(math.Round(hb.Total())), int64(math.Round(hc.Total()))
	e.m.Method = "block-bootstrap of histogram quantiles (interpolated within buckets)"
	e.m.Adjusted = []string{}
	if !(qb > 0 && qc > 0) || math.IsInf(qb, 0) || math.IsInf(qc, 0) {
		e.m.Reason = fmt.Sprintf("no %s histogram quantile for an arm (missing histogram, or the quantile lies in the +Inf bucket)", info.Latency)
		return e
	}
	if len(j.b.slices) < MinBuckets || len(j.c.slices) < MinBuckets {
		e.m.Reason = fmt.Sprintf("too little data: %d and %d buckets (need ≥ %d per arm)", len(j.b.slices), len(j.c.slices), MinBuckets)
		return e
	}
	nb, nc := len(j.b.slices), len(j.c.slices)
	block := []int{max(1, int(math.Ceil(math.Sqrt(float64(nb))))), max(1, int(math.Ceil(math.Sqrt(float64(nc)))))}
	reps := stats.BlockBootstrap([]int{nb, nc}, block, j.cfg.Resamples, j.cfg.Seed+uint64(idx)*7919, func(ix [][]int) float64 {
		b := histo.Quantile(info.Quantile, merged(j.b, ix[0]))
		c := histo.Quantile(info.Quantile, merged(j.c, ix[1]))
		return math.Log(c / b)
	})
	ci := stats.PercentileInterval(reps, conf)
	// a histogram only places a quantile within its bucket: the interval
	// covers every ratio the two buckets allow, whatever the interpolation
	lb, ub := histo.QuantileBounds(info.Quantile, hb)
	lc, uc := histo.QuantileBounds(info.Quantile, hc)
	res := stats.Interval{Lo: math.Log(lc / ub), Hi: math.Log(uc / lb)}
	widened := res.Lo < ci.Lo || res.Hi > ci.Hi
	if widened {
		ci = stats.Interval{Lo: math.Min(ci.Lo, res.Lo), Hi: math.Max(ci.Hi, res.Hi)}
		e.m.Method += "; widened to the histogram buckets' resolution"
		e.m.Adjusted = append(e.m.Adjusted, fmt.Sprintf("p%g within bucket (%g, %g] s in the baseline and (%g, %g] s in the canary",
			info.Quantile*100, lb, ub, lc, uc))
	}
	est := stats.Estimate{Point: math.Log(qc / qb), CI: ci, SE: stats.SDFinite(reps), Method: e.m.Method}
	qe := decide(e, g, info, est)
	if !widened || qe.decision != stats.Inconclusive {
		return qe
	}
	why := fmt.Sprintf("p%g cannot be resolved by the buckets (baseline in (%g, %g] s, canary in (%g, %g] s)", info.Quantile*100, lb, ub, lc, uc)
	if ex, ok := j.exceedanceGate(e, g, info, conf, pick, why, lb, ub); ok {
		return ex
	}
	qe.m.Reason += "; " + why + " and no bucket edge gives an exceedance share to judge instead: more data will not decide it, finer buckets would"
	return qe
}

// exceedanceGate judges a tail-latency gate in its exceedance form: the
// share of requests whose latency is above a bucket edge, which a
// histogram gives exactly (a quantile it only places within a bucket). The
// edge is the lower edge of the bucket holding the baseline's quantile
// (so the baseline's share above it is at least 1 − q), or its upper edge
// when more than half the baseline lies above the lower one (a test of the
// bulk, not the tail). The policy's relative margin applies to the share: the
// canary's share may exceed the baseline's by at most that fraction.
// Shares are per-slice ratios (delta method over slices, with a Newcombe
// floor for independent requests).
func (j *aggJudgement) exceedanceGate(e gateEval, g policies.Gate, info policies.MetricInfo, conf float64,
	pick func(*aggSlice) sources.Histogram, why string, lb, ub float64) (gateEval, bool) {
	if info.Scale != "relative" || info.HigherIsBetter {
		return e, false
	}
	var hb sources.Histogram
	for i := range j.b.slices {
		hb = addHist(hb, pick(&j.b.slices[i]))
	}
	share := func(t float64) float64 {
		if !(t > 0) || math.IsInf(t, 0) {
			return math.NaN()
		}
		n, exact := histo.Above(hb, t)
		if !exact {
			return math.NaN()
		}
		return n / hb.Total()
	}
	// the lower edge keeps most requests in the test; when more than half
	// the baseline is above it, it says nothing about the tail: take the
	// upper edge
	edge := lb
	if sl := share(lb); math.IsNaN(sl) || sl > 0.5 {
		edge = ub
		if su := share(ub); math.IsNaN(su) || su == 0 {
			return e, false
		}
	}
	ratio := func(a *aggArm) (stats.Ratio, bool) {
		r := stats.Ratio{Num: make([]float64, len(a.slices)), Den: make([]float64, len(a.slices))}
		for i := range a.slices {
			h := pick(&a.slices[i])
			if h.Total() == 0 {
				continue
			}
			above, exact := histo.Above(h, edge)
			if !exact || math.IsNaN(above) {
				return r, false
			}
			r.Num[i], r.Den[i] = above, h.Total()
		}
		return r, true
	}
	rb, okb := ratio(j.b)
	rc, okc := ratio(j.c)
	if !okb || !okc || !(sum(rb.Num) > 0) || !(sum(rb.Den) > 0) || !(sum(rc.Den) > 0) {
		return e, false
	}
	est := stats.LogRatioOfRatios(rc, rb, conf)
	est = ratioFloor(est, sum(rc.Num), sum(rc.Den), sum(rb.Num), sum(rb.Den), conf)
	if sum(rc.Num) == 0 {
		// no canary request above the edge: the log ratio is −∞; bound it
		// by the Newcombe interval alone
		est = stats.Estimate{Point: math.Inf(-1), CI: stats.Interval{Lo: math.Inf(-1), Hi: math.Inf(-1)}, SE: math.NaN(), Method: "newcombe"}
		est = ratioFloor(est, 0, sum(rc.Den), sum(rb.Num), sum(rb.Den), conf)
		est.Point = est.CI.Lo
	}
	e.m.Baseline, e.m.Canary = Num(sum(rb.Num)/sum(rb.Den)), Num(sum(rc.Num)/sum(rc.Den))
	e.m.Unit = "fraction"
	e.m.NBaseline, e.m.NCanary = int64(math.Round(sum(rb.Den))), int64(math.Round(sum(rc.Den)))
	e.m.Method = fmt.Sprintf("share of requests above the %g s bucket edge (exact from the histograms), %s", edge, est.Method)
	e.m.Adjusted = []string{fmt.Sprintf("judged as the share of requests with %s above %g s instead of p%g", strings.ToUpper(info.Latency), edge, info.Quantile*100)}
	ex := decide(e, g, info, est)
	ex.m.Reason = fmt.Sprintf("%s: judged as the share of requests with %s above the %g s edge, %.3g%% baseline vs %.3g%% canary (exact from the histograms; margin %s of the share): %s",
		why, strings.ToUpper(info.Latency), edge, 100*float64(e.m.Baseline), 100*float64(e.m.Canary), fmtMargin(ex.m), ex.m.Reason)
	return ex, true
}

func (j *aggJudgement) series() Series {
	s := Series{BucketSeconds: Num(j.b.ds.Agg.Step)}
	pts := func(a *aggArm) []Point {
		out := []Point{}
		t0 := a.slices[0].start
		for _, sl := range a.slices {
			out = append(out, Point{T: Num(sl.start - t0), Offered: int64(math.Round(sl.offered())), Good: int64(math.Round(sl.goodLo)),
				GoodputRPS: Num(sl.goodLo / (sl.end - sl.start)), TTFTP50: Num(histo.Quantile(0.5, sl.ttft)), TTFTP99: Num(histo.Quantile(0.99, sl.ttft))})
		}
		return out
	}
	s.Baseline, s.Canary = pts(j.b), pts(j.c)
	return s
}

func (j *aggJudgement) distributions() Distributions {
	ps := distributionProbs()
	d := Distributions{Probs: make([]Num, len(ps))}
	for i, q := range ps {
		d.Probs[i] = Num(q)
	}
	curve := func(a *aggArm, tpot bool) []Num {
		var h sources.Histogram
		for i := range a.slices {
			if tpot {
				h = addHist(h, a.slices[i].tpot)
			} else {
				h = addHist(h, a.slices[i].ttft)
			}
		}
		out := make([]Num, len(ps))
		for i, q := range ps {
			out[i] = Num(histo.Quantile(q, h))
		}
		return out
	}
	d.TTFT = ArmQuantCurve{Baseline: curve(j.b, false), Canary: curve(j.c, false)}
	d.TPOT = ArmQuantCurve{Baseline: curve(j.b, true), Canary: curve(j.c, true)}
	return d
}

func gateKind(g policies.Gate) string {
	if g.Guardrail {
		return "guardrail"
	}
	return "gate"
}
