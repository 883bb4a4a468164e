package analysis

import (
	"fmt"
	"math"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/sources"
)

// pairing decides whether the arms are compared as paired in time, as the
// request path does (pairing): both aggregates on one bucket grid (the same
// step, every slice start a whole number of steps from the others) and
// each arm's analysed span overlapping the other's for at least
// MinPairedOverlap of its length. A Prometheus query of both arms over one
// window, or a request scan on the absolute 10 s grid, is paired.
func (j *aggJudgement) pairing() bool {
	step := j.b.ds.Agg.Step
	if !(step > 0) || step != j.c.ds.Agg.Step {
		return false
	}
	o := j.b.slices[0].start
	for _, a := range []*aggArm{j.b, j.c} {
		for _, s := range a.slices {
			k := (s.start - o) / step
			if math.Abs(k-math.Round(k)) > 1e-6 {
				return false
			}
		}
	}
	span := func(a *aggArm) (float64, float64) { return a.slices[0].from(), a.slices[len(a.slices)-1].end }
	lb, hb := span(j.b)
	lc, hc := span(j.c)
	ov := math.Min(hb, hc) - math.Max(lb, lc)
	return ov >= MinPairedOverlap*(hb-lb) && ov >= MinPairedOverlap*(hc-lc)
}

// align lays a canary series (one entry per canary slice) and a baseline
// series (per baseline slice) on the common grid of paired arms, from the
// earlier first analysed slice to the later last one, zeros where an arm
// has no slice (as judgement.alignedRatios does for requests).
func (j *aggJudgement) align(c, b stats.Ratio) (stats.Ratio, stats.Ratio) {
	lo, step, n := j.commonGrid()
	lay := func(r stats.Ratio, a *aggArm) stats.Ratio {
		out := stats.Ratio{Num: make([]float64, n), Den: make([]float64, n)}
		for i, s := range a.slices {
			if i >= len(r.Num) {
				break
			}
			t := int(math.Round((s.start - lo) / step))
			out.Num[t], out.Den[t] = r.Num[i], r.Den[i]
		}
		return out
	}
	return lay(c, j.c), lay(b, j.b)
}

// commonGrid is the common grid of paired arms: the earlier first
// analysed slice's start (unix seconds), the slice width (seconds) and the
// number of slices to the later last one; slice t starts at lo + t·step.
func (j *aggJudgement) commonGrid() (lo, step float64, n int) {
	step = j.b.ds.Agg.Step
	lo = math.Min(j.b.slices[0].start, j.c.slices[0].start)
	hi := math.Max(j.b.slices[len(j.b.slices)-1].start, j.c.slices[len(j.c.slices)-1].start)
	return lo, step, int(math.Round((hi-lo)/step)) + 1
}

// sliceIndex maps each analysed slice's start to its index in a.slices.
func (a *aggArm) sliceIndex() map[float64]int {
	at := make(map[float64]int, len(a.slices))
	for i, s := range a.slices {
		at[s.start] = i
	}
	return at
}

// guardrails are the checks the request path decides outside the Holm
// family: the declared traffic split, or without one the offered load per
// replica-second; and what the warm-up cut removed.
func (j *aggJudgement) guardrails(conf float64) []gateEval {
	var out []gateEval
	rec := recordsOf(j)
	if t := j.p.Traffic; t != nil {
		// counts as counted: the canary reweighted to the baseline's mix is
		// not a sample
		srm := normalize.SRM(sumOffered(j.cRaw), sumOffered(j.b), t.CanaryShare)
		e := gateEval{m: Metric{Name: "traffic_split", Guardrail: true, Direction: "lower_is_better", Scale: "absolute", Unit: "fraction",
			Baseline: Num(t.CanaryShare), Canary: Num(srm.ObservedShare), Delta: Num(srm.ObservedShare - t.CanaryShare),
			Interval: [2]Num{Num(math.NaN()), Num(math.NaN())}, Margin: 0, NBaseline: int64(math.Round(srm.Baseline)), NCanary: int64(math.Round(srm.Canary)),
			Method: "srm-chi-square", Reason: srm.Reason, Adjusted: []string{}, PFail: Num(srm.P), Verdict: Pass}}
		if srm.Mismatch {
			e.m.Verdict = Fail
		} else if math.IsNaN(srm.P) {
			e.m.Verdict = Inconclusive
		}
		out = append(out, e)
	} else if e, ok := j.loadRatioGuardrail(conf); ok {
		out = append(out, e)
	} else if w := unloggedShedWarning(!replicasNamed(j.b), !replicasNamed(j.cRaw)); w != "" {
		j.warnf("%s", w)
	}
	if j.p.Traffic == nil {
		if e, ok := j.offeredRateGuardrail(conf, rec); ok {
			out = append(out, e)
		}
	}
	if e, ok := j.warmupGuardrail(conf); ok {
		out = append(out, e)
	}
	if e, ok := j.replicaLossGuardrail(); ok {
		out = append(out, e)
	}
	if e, ok := j.dipGuardrail(); ok {
		out = append(out, e)
	}
	if e, ok := windowEndOf(rec); ok {
		out = append(out, e)
	}
	if e, ok := recordsGapOf(rec); ok {
		out = append(out, e)
	}
	if j.mix.unmatched != nil {
		out = append(out, *j.mix.unmatched)
	}
	return out
}

// replicaLossGuardrail is the request path's canary_replica_loss check on
// the arms' replica tracks (coverageOf finds the outages; replicaLossEval
// decides them): absent without a canary outage the baseline did not show
// at the same time.
func (j *aggJudgement) replicaLossGuardrail() (gateEval, bool) {
	cov := coverageOf(j.b, j.c)
	outs := unsharedOutages(cov.outages[1], cov.outages[0])
	return replicaLossEval(outs, sources.ClockEpoch, j.p.Normalize.CanaryReplicaLoss,
		int(math.Round(maxReplicas(j.b))), int(math.Round(maxReplicas(j.c))))
}

// loadRatioGuardrail is the sample-ratio check without a declared traffic
// split, as on the request path (judgement.loadRatioGuardrail): offered
// requests per deployed replica-second (deployedReplicas) per slice,
// compared by batch means (paired when the arms are); it fails when the
// interval of the ratio lies entirely beyond ±LoadRatioTolerance. Absent
// when an arm's replicas are unknown (replicasNamed).
func (j *aggJudgement) loadRatioGuardrail(conf float64) (gateEval, bool) {
	build := func(a *aggArm) (stats.Ratio, bool) {
		if !replicasNamed(a) {
			return stats.Ratio{}, false
		}
		deployed := a.deployed()
		r := stats.Ratio{Num: make([]float64, len(a.slices)), Den: make([]float64, len(a.slices))}
		for i, s := range a.slices {
			r.Num[i], r.Den[i] = s.offered(), s.secs()*deployed[i]
		}
		return r, len(a.slices) >= MinBuckets && sum(r.Num) > 0
	}
	// the canary as counted (cRaw): a sample-ratio check compares the
	// requests each arm was offered, not the canary reweighted to the
	// baseline's mix, whose per-slice totals move with the strata
	rb, okb := build(j.b)
	rc, okc := build(j.cRaw)
	if !okb || !okc {
		return gateEval{}, false
	}
	estimate := func(conf float64) stats.Estimate { return stats.LogRatioOfRatios(rc, rb, conf) }
	if j.paired {
		// a traffic wave both arms ride cancels in the paired difference
		xa, ya := j.align(rc, rb)
		bothAnalysed(xa, ya)
		estimate = func(conf float64) stats.Estimate { return stats.PairedLogRatioOfRatios(xa, ya, conf) }
	}
	return loadRatioEval(rb, rc, estimate, conf, "counted"), true
}

// replicasNamed reports whether the arm's replicas are known: from metrics,
// the series that report them; from request logs, only when the records
// name their replica. A log that names none counts one replica serving per
// slice so that its rates have a denominator (Aggregate.ReplicasUnnamed),
// but that one is not a replica count two arms' offered load can be
// compared by: a 10% canary would be offered a tenth of the baseline's
// load.
func replicasNamed(a *aggArm) bool {
	return maxReplicas(a) > 0 && !a.ds.Agg.ReplicasUnnamed
}

// warmupGuardrail checks what the warm-up cut removed, automatic or of a
// declared duration, as the
// request path does (judgement.warmupGuardrail): over the span cut from
// either arm, measured from each arm's own start, the canary's share of
// offered requests that completed may be lower than the baseline's by up
// to ColdStartMargin before it fails. Present only when something was cut.
func (j *aggJudgement) warmupGuardrail(conf float64) (gateEval, bool) {
	cut := math.Max(j.b.cutSecs, j.c.cutSecs)
	if j.p.Window.Warmup == "none" || !(cut > 0) {
		return gateEval{}, false
	}
	span := func(a *aggArm) stats.Ratio {
		var r stats.Ratio
		all := append(append([]aggSlice{}, a.precut...), a.slices...)
		for _, s := range all {
			if s.start >= all[0].start+cut-1e-9 {
				break
			}
			r.Num, r.Den = append(r.Num, s.completed), append(r.Den, s.offered())
		}
		return r
	}
	// the canary as counted, as on the request path
	rb, rc := span(j.b), span(j.cRaw)
	return warmupCompletedEval(rb, rc, cut, conf, "slices"), true
}

// shortOutputs is the aggregate's diagnostic on completions cut short: the
// share of completed requests with fewer output tokens than the class's
// slo.min_output_tokens (AggBucket.ShortOutputs), canary − baseline, by
// batch means over slices with a Newcombe floor. Such completions are not
// good, so the attainment gates already count them; it is shown, not
// gated, and absent when a source does not count them (metrics).
func (j *aggJudgement) shortOutputs(conf float64) []Diagnostic {
	if j.b.unknown["short outputs"] || j.c.unknown["short outputs"] {
		return nil
	}
	build := func(a *aggArm) stats.Ratio {
		r := stats.Ratio{Num: make([]float64, len(a.slices)), Den: make([]float64, len(a.slices))}
		for i, s := range a.slices {
			r.Num[i], r.Den[i] = s.short, s.completed
		}
		return r
	}
	rb, rc := build(j.b), build(j.c)
	if !(sum(rb.Den) > 0 && sum(rc.Den) > 0) {
		return nil
	}
	est := stats.DiffOfRatios(rc, rb, conf)
	if j.paired {
		xa, ya := j.align(rc, rb)
		est = stats.PairedDiffOfRatios(xa, ya, conf)
	}
	est = binomialFloor(est, sum(rc.Num), sum(rc.Den), sum(rb.Num), sum(rb.Den), conf)
	nan := Num(math.NaN())
	return []Diagnostic{{Metric: "short_output_share", Method: est.Method, Statistic: nan, PValue: nan, QValue: nan,
		Estimate: Num(est.Point), Interval: [2]Num{Num(est.CI.Lo), Num(est.CI.Hi)},
		NBaseline: int64(math.Round(sum(rb.Den))), NCanary: int64(math.Round(sum(rc.Den))),
		Note: fmt.Sprintf("completions with fewer output tokens than slo.min_output_tokens, share of completed requests: baseline %.3g%%, canary %.3g%%; canary − baseline with its %.0f%% interval; not good, so already in slo_attainment; shown, not gated",
			100*sum(rb.Num)/sum(rb.Den), 100*sum(rc.Num)/sum(rc.Den), 100*conf)}}
}
