package analysis

import (
	"fmt"
	"math"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
)

// offeredRateName names the guardrail of runs one after the other whose
// records name no replica.
const offeredRateName = "offered_rate_ratio"

// offeredRateEval is the offered_rate_ratio guardrail, on the request path
// and the aggregate alike: two arms that ran one after the other (not
// paired in time) and whose records name no replica — a benchmark client
// run against each build — each taken as one deployment offered its
// client's load. rb and rc hold each arm's offered requests (Num) and
// seconds (Den) per analysed bucket. Runs at different rates compare the
// loads, not the builds (a canary offered half the baseline's rate looks
// faster), and the judge cannot match load it has no replicas or shared
// time for: when the ratio's interval, at the level a check in either
// direction needs (1 − (1 − conf)/2), lies entirely below
// −normalize.DefaultLoadTolerance (10%, the like-for-like tolerance of the
// load step), the run cannot pass (inconclusive: the comparison, not the
// canary, is at fault); else it passes, named — a canary offered more
// only finds its gates harder to pass, and a closed-loop client (a fixed
// number of requests in flight) offers a faster build more. Arms served
// side by side without replica names, or one run mostly within the
// other's (armsRecords.ranWithin), are not checked: their split is unknown
// (unloggedShedWarning says so).
func offeredRateEval(rb, rc stats.Ratio, conf float64) (gateEval, bool) {
	if len(rb.Num) < MinBuckets || len(rc.Num) < MinBuckets || !(sum(rb.Num) > 0 && sum(rc.Num) > 0 && sum(rb.Den) > 0 && sum(rc.Den) > 0) {
		return gateEval{}, false
	}
	vb, vc := sum(rb.Num)/sum(rb.Den), sum(rc.Num)/sum(rc.Den)
	level := 1 - (1-conf)/2
	est := poissonFloor(stats.LogRatioOfRatios(rc, rb, level), sum(rb.Num), sum(rc.Num), level)
	tol := normalize.DefaultLoadTolerance
	m := Metric{Name: offeredRateName, Guardrail: true, Direction: "two_sided", Scale: "relative", Unit: "req/s",
		Margin: Num(tol), Buckets: [2]int{len(rb.Num), len(rc.Num)}, Adjusted: []string{},
		NBaseline: int64(math.Round(sum(rb.Num))), NCanary: int64(math.Round(sum(rc.Num))), Baseline: Num(vb), Canary: Num(vc),
		Delta: Num(math.Expm1(est.Point)), Interval: [2]Num{Num(math.Expm1(est.CI.Lo)), Num(math.Expm1(est.CI.Hi))},
		PFail: Num(math.NaN()), Method: est.Method, Verdict: Pass}
	iv := fmt.Sprintf("%s [%s, %s]", fmtDelta(m, float64(m.Delta)), fmtDelta(m, float64(m.Interval[0])), fmtDelta(m, float64(m.Interval[1])))
	lt := math.Log1p(tol)
	switch {
	case math.IsNaN(est.CI.Lo) || math.IsNaN(est.CI.Hi):
		m.Verdict = Inconclusive
		m.Reason = "the offered-rate ratio could not be estimated"
	case est.CI.Hi < -lt:
		m.Verdict = Inconclusive
		m.Reason = fmt.Sprintf("the canary's run was offered %.4g req/s against the baseline's %.4g: %s at %s, beyond the ±%s within which two runs are taken as under one load; runs one after the other at different rates compare the loads, not the builds, and without replica names or shared time the judge cannot match them; rerun one arm at the other's rate",
			vc, vb, iv, pctLevel(level), fmtMargin(m))
	case est.CI.Lo > lt:
		// more load on the canary only makes its gates harder to pass;
		// and a client that keeps a fixed number of requests in flight
		// offers a faster build more
		m.Reason = fmt.Sprintf("the canary's run was offered %.4g req/s against the baseline's %.4g: %s, more than the baseline's beyond ±%s (a faster build under a client that keeps a fixed number of requests in flight, or a higher rate); more load only makes the canary's other gates harder to pass, so it does not hold up a pass",
			vc, vb, iv, fmtMargin(m))
	default:
		m.Reason = fmt.Sprintf("runs one after the other, each taken as one deployment (their records name no replica): offered %.4g req/s in the canary against %.4g in the baseline, %s, not shown beyond ±%s", vc, vb, iv, fmtMargin(m))
	}
	return gateEval{m: m}, true
}

// offeredRateGuardrail is offered_rate_ratio on the requests of arms not
// paired in time whose records name no replica (absent otherwise, and for
// arms one within the other's run: rec): each analysed bucket's offered
// requests over its seconds.
func (j *judgement) offeredRateGuardrail(conf float64, rec armsRecords) (gateEval, bool) {
	if j.paired || !j.b.replicasUnnamed() || !j.c.replicasUnnamed() || rec.ranWithin() {
		return gateEval{}, false
	}
	build := func(a *armData) stats.Ratio {
		var r stats.Ratio
		for _, b := range a.kept() {
			if b.secs > 0 {
				r.Num, r.Den = append(r.Num, b.offered), append(r.Den, b.secs)
			}
		}
		return r
	}
	return offeredRateEval(build(j.b), build(j.c), conf)
}

// offeredRateGuardrail is offered_rate_ratio on aggregated arms not paired
// in time whose records name no replica: each slice's offered requests
// over its seconds, the canary as counted.
func (j *aggJudgement) offeredRateGuardrail(conf float64, rec armsRecords) (gateEval, bool) {
	if j.paired || replicasNamed(j.b) || replicasNamed(j.cRaw) || !j.b.ds.Agg.ReplicasUnnamed || !j.cRaw.ds.Agg.ReplicasUnnamed || rec.ranWithin() {
		return gateEval{}, false
	}
	build := func(a *aggArm) stats.Ratio {
		r := stats.Ratio{Num: make([]float64, len(a.slices)), Den: make([]float64, len(a.slices))}
		for i, s := range a.slices {
			r.Num[i], r.Den[i] = s.offered(), s.secs()
		}
		return r
	}
	return offeredRateEval(build(j.b), build(j.cRaw), conf)
}
