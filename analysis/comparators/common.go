// Package comparators holds the comparator judges: re-implementations of the
// decision rules of the canary judges people migrate from, so their verdicts
// can be set beside goodput's own judge on the same data.
//
//   - Kayenta is the rule of Kayenta's NetflixACAJudge: per-metric time
//     series (one value per step, default 60 s), a Mann-Whitney 98%
//     interval of the shift with a ±25% tolerance band around the
//     Hodges-Lehmann estimate and the mean-ratio effect-size gate, metric
//     classification (Pass/High/Low/Nodata), the group score 0-100 and the
//     pass (95) and marginal (75) thresholds.
//   - Threshold is the rule of Argo Rollouts and Flagger analyses: every
//     analysis interval (default 1 min) the canary's p99 TTFT must stay at
//     or below a fixed limit and its success rate at or above one; the run
//     fails once FailureLimit intervals have failed.
//
// Both return the same analysis.Report shape as goodput's judge (Judge
// "kayenta" or "threshold"; one Metric per compared series with its own
// verdict and reason) so every renderer works. They are comparators: they
// treat per-minute points as independent, apply no warm-up cut and no
// normalization, and their error rates on autocorrelated or low-traffic data
// are what `goodput calibrate` measures. Use goodput's judge to decide.
package comparators

import (
	"fmt"
	"math"
	"slices"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// step is one time slice of one arm.
type step struct {
	secs                      float64
	offered, completed, good  int
	failed, rejected, retries int
	ttft, tpot                []float64 // completed requests, sorted
}

// armSteps is one arm cut into steps of equal width from its first arrival.
type armSteps struct {
	arm        sources.Arm
	start, end float64 // window on the arm's clock, seconds
	steps      []step
	replicas   int
	tot        step // totals over the window
}

// slice cuts ds into steps of width w seconds. The window runs from the first
// arrival to the last arrival (or to first arrival + ds.Duration when that is
// later); the last step may be partial. Requests must have arrival times.
func slice(ds *sources.Dataset, p *policies.Policy, w float64, judge string) (*armSteps, error) {
	if ds.Agg != nil {
		return nil, &analysis.DataError{Arm: ds.Arm, Msg: fmt.Sprintf("the %s judge needs per-request records; metrics-based inputs are judged by goodput's judge only", judge)}
	}
	rs := ds.Requests
	if len(rs) == 0 {
		return nil, &analysis.DataError{Arm: ds.Arm, Msg: "no requests: the input holds no request records"}
	}
	isGood := analysis.GoodFunc(p)
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range rs {
		t := rs[i].Time
		if !sources.Known(t) || ds.Clock == sources.ClockNone {
			return nil, &analysis.DataError{Arm: ds.Arm, Msg: fmt.Sprintf("the %s judge builds per-interval series and needs arrival times; record %d has none", judge, i+1)}
		}
		lo, hi = math.Min(lo, t), math.Max(hi, t)
	}
	end := hi
	if ds.Duration > 0 && lo+ds.Duration > end {
		end = lo + ds.Duration
	}
	n := max(int(math.Ceil((end-lo)/w-1e-9)), 1)
	a := &armSteps{arm: ds.Arm, start: lo, end: end, steps: make([]step, n)}
	for i := range a.steps {
		a.steps[i].secs = math.Min(w, end-lo-float64(i)*w)
	}
	if a.steps[n-1].secs <= 0 {
		a.steps[n-1].secs = w
	}
	reps := map[string]bool{}
	for i := range rs {
		r := &rs[i]
		k := min(int((r.Time-lo)/w), n-1)
		s := &a.steps[k]
		s.offered++
		if r.Attempt > 1 {
			s.retries++
		}
		switch {
		case r.Status == sources.StatusOK:
			s.completed++
			if sources.Known(r.TTFT) {
				s.ttft = append(s.ttft, r.TTFT)
			}
			if sources.Known(r.TPOT) {
				s.tpot = append(s.tpot, r.TPOT)
			}
		case r.Status.Failed():
			s.failed++
		case r.Status == sources.StatusRejected:
			s.rejected++
		}
		if isGood(r) {
			s.good++
		}
		if r.Replica != "" {
			reps[r.Replica] = true
		}
	}
	a.replicas = len(reps)
	for i := range a.steps {
		s := &a.steps[i]
		slices.Sort(s.ttft)
		slices.Sort(s.tpot)
		a.tot.secs += s.secs
		a.tot.offered += s.offered
		a.tot.completed += s.completed
		a.tot.good += s.good
		a.tot.failed += s.failed
		a.tot.rejected += s.rejected
		a.tot.retries += s.retries
		a.tot.ttft = append(a.tot.ttft, s.ttft...)
		a.tot.tpot = append(a.tot.tpot, s.tpot...)
	}
	slices.Sort(a.tot.ttft)
	slices.Sort(a.tot.tpot)
	return a, nil
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// armSummary fills the figures every renderer shows for an arm.
func armSummary(ds *sources.Dataset, a *armSteps) analysis.ArmSummary {
	t := a.tot
	secs := a.end - a.start
	if secs <= 0 {
		secs = t.secs
	}
	canceled := t.offered - t.completed - t.failed - t.rejected
	nan := analysis.Num(math.NaN())
	s := analysis.ArmSummary{
		Accounting: analysis.Accounting{Offered: int64(t.offered), Admitted: int64(t.offered - t.rejected),
			Rejected: int64(t.rejected), Canceled: int64(canceled), Failed: int64(t.failed),
			Completed: int64(t.completed), Good: int64(t.good), Retries: int64(t.retries)},
		GoodputRPS:         analysis.Num(float64(t.good) / secs),
		SLOAttainment:      analysis.Num(ratio(t.good, t.offered)),
		TokenGoodputTPS:    nan,
		ThroughputRPS:      analysis.Num(float64(t.completed) / secs),
		OutputTokensPS:     nan,
		RetryAmplification: analysis.Num(ratio(t.offered, t.offered-t.retries)),
		WindowSeconds:      analysis.Num(secs),
		Window:             analysis.Window{Start: analysis.FormatTime(ds.Clock, a.start), End: analysis.FormatTime(ds.Clock, a.end), Seconds: analysis.Num(secs)},
		Replicas:           a.replicas,
		ReplicaSeconds:     nan,
		GoodputPerReplica:  nan,
		CacheHitRate:       nan,
		GPUUtilization:     nan,
		Latency:            analysis.Latency{TTFT: analysis.QuantilesOf(t.ttft), TPOT: analysis.QuantilesOf(t.tpot)},
	}
	return s
}

// baseReport is the part of a comparator report shared by both judges.
func baseReport(judge string, baseline, canary *sources.Dataset, b, c *armSteps, p *policies.Policy, stepSecs float64, population string) *analysis.Report {
	r := &analysis.Report{
		SchemaVersion: analysis.SchemaVersion,
		Policy:        analysis.PolicyRef{Name: p.Name, SHA256: p.SHA256, Source: p.Source},
		Judge:         judge,
		Diagnostics:   []analysis.Diagnostic{},
		Classes:       []analysis.ClassRow{},
		Warnings:      []string{},
		Normalization: analysis.Normalization{Steps: []analysis.NormalizationStep{
			{Name: "warmup", Setting: "none", Detail: "comparator judge: no warm-up cut"},
			{Name: "mix", Setting: "none", Detail: "comparator judge: no traffic-mix normalization"},
		}},
		Series:        analysis.Series{BucketSeconds: analysis.Num(stepSecs), Baseline: []analysis.Point{}, Canary: []analysis.Point{}},
		Distributions: analysis.Distributions{Probs: []analysis.Num{}},
	}
	r.Inputs = append(append([]sources.Input{}, baseline.Inputs...), canary.Inputs...)
	for _, ds := range []*sources.Dataset{baseline, canary} {
		for _, w := range ds.Warnings {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %s", ds.Arm, w))
		}
	}
	loc := baseline.Location
	if canary.Location != loc {
		loc = "mixed (baseline " + baseline.Location + ", canary " + canary.Location + ")"
	}
	if loc == "" {
		loc = "unknown"
	}
	r.Measurement = analysis.Measurement{
		Population:          population,
		Location:            loc,
		CompletionCondition: "status ok (the response finished); good = completed and every SLO criterion of its class met",
		Window: analysis.Window{Start: analysis.FormatTime(baseline.Clock, math.Min(b.start, c.start)),
			End: analysis.FormatTime(baseline.Clock, math.Max(b.end, c.end)), Seconds: analysis.Num(math.Max(b.end, c.end) - math.Min(b.start, c.start))},
		BucketSeconds: stepSecs,
		Clock:         string(baseline.Clock),
		Confidence:    p.Confidence,
	}
	for _, cl := range p.Classes {
		s := p.ClassSLO(cl.Name)
		r.Measurement.SLO = append(r.Measurement.SLO, analysis.ClassSLO{Class: cl.Name, TTFT: analysis.Num(s.TTFT.Seconds()),
			TPOT: analysis.Num(s.TPOT.Seconds()), E2E: analysis.Num(s.E2E.Seconds()), MaxITL: analysis.Num(s.MaxITL.Seconds()), QualityNeeded: s.Quality == "required"})
	}
	r.Measurement.SLO = append(r.Measurement.SLO, analysis.ClassSLO{Class: "default", TTFT: analysis.Num(p.SLO.TTFT.Seconds()),
		TPOT: analysis.Num(p.SLO.TPOT.Seconds()), E2E: analysis.Num(p.SLO.E2E.Seconds()), MaxITL: analysis.Num(p.SLO.MaxITL.Seconds()), QualityNeeded: p.SLO.Quality == "required"})
	r.Arms.Baseline = armSummary(baseline, b)
	r.Arms.Canary = armSummary(canary, c)
	pts := func(a *armSteps) []analysis.Point {
		out := make([]analysis.Point, len(a.steps))
		for i, s := range a.steps {
			out[i] = analysis.Point{T: analysis.Num(float64(i) * stepSecs), Offered: int64(s.offered), Good: int64(s.good),
				GoodputRPS: analysis.Num(float64(s.good) / s.secs), TTFTP50: analysis.Num(analysis.Quantile(s.ttft, 0.5)), TTFTP99: analysis.Num(analysis.Quantile(s.ttft, 0.99))}
		}
		return out
	}
	r.Series.Baseline, r.Series.Canary = pts(b), pts(c)
	return r
}
