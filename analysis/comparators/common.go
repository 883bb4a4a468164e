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
	"strconv"
	"time"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// classSLO returns the SLO of r's class under p: the first policy class
// whose conditions hold (its SLO overrides the policy SLO), else the policy
// SLO. It follows the rule of goodput's judge, so "good" means the same in
// every judge.
func classSLO(p *policies.Policy, r *sources.Request) policies.SLO {
	for _, cl := range p.Classes {
		w := cl.When
		if len(w.Label) > 0 && !slices.Contains(w.Label, r.Class) {
			continue
		}
		if w.PromptTokens != nil && (r.PromptTokens < 0 || !w.PromptTokens.Contains(r.PromptTokens)) {
			continue
		}
		if w.OutputTokens != nil && (r.OutputTokens < 0 || !w.OutputTokens.Contains(r.OutputTokens)) {
			continue
		}
		return p.ClassSLO(cl.Name)
	}
	return p.SLO
}

// good reports whether r completed and met every criterion of its SLO; a
// criterion whose field is unknown is not met (TPOT and the largest gap are
// undefined, and so met, for a single output token).
func good(slo policies.SLO, r *sources.Request) bool {
	if r.Status != sources.StatusOK {
		return false
	}
	single := r.OutputTokens >= 0 && r.OutputTokens <= 1
	check := func(limit policies.Duration, v float64, undefinedOK bool) bool {
		if limit == 0 {
			return true
		}
		if !sources.Known(v) {
			return undefinedOK
		}
		return v <= limit.Seconds()
	}
	if !check(slo.TTFT, r.TTFT, false) || !check(slo.TPOT, r.TPOT, single) ||
		!check(slo.E2E, r.E2E, false) || !check(slo.MaxITL, r.MaxITL, single) {
		return false
	}
	if slo.Quality == "required" && r.Quality != sources.QualityOK {
		return false
	}
	return true
}

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
		if good(classSLO(p, r), r) {
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

// quantile is the inverted empirical CDF of sorted xs (Hyndman-Fan type 1,
// as goodput's judge uses): the smallest value with at least ⌈q·n⌉ values at
// or below it; NaN when empty.
func quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	k := min(max(int(math.Ceil(q*float64(n)-1e-9)), 1), n)
	return sorted[k-1]
}

func meanOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func quantiles(sorted []float64) analysis.Quantiles {
	return analysis.Quantiles{N: int64(len(sorted)), Mean: analysis.Num(meanOf(sorted)),
		P50: analysis.Num(quantile(sorted, 0.5)), P90: analysis.Num(quantile(sorted, 0.9)),
		P95: analysis.Num(quantile(sorted, 0.95)), P99: analysis.Num(quantile(sorted, 0.99))}
}

// fmtTime renders a window bound as goodput's judge does: RFC 3339 (UTC,
// ms) for epoch clocks, decimal seconds on the input's own clock otherwise.
func fmtTime(c sources.Clock, t float64) string {
	if c == sources.ClockEpoch {
		sec, frac := math.Modf(t)
		return time.Unix(int64(sec), int64(math.Round(frac*1e3))*1e6).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return strconv.FormatFloat(t, 'f', 3, 64)
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
		Window:             analysis.Window{Start: fmtTime(ds.Clock, a.start), End: fmtTime(ds.Clock, a.end), Seconds: analysis.Num(secs)},
		Replicas:           a.replicas,
		ReplicaSeconds:     nan,
		GoodputPerReplica:  nan,
		CacheHitRate:       nan,
		GPUUtilization:     nan,
		Latency:            analysis.Latency{TTFT: quantiles(t.ttft), TPOT: quantiles(t.tpot)},
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
		Window: analysis.Window{Start: fmtTime(baseline.Clock, math.Min(b.start, c.start)),
			End: fmtTime(baseline.Clock, math.Max(b.end, c.end)), Seconds: analysis.Num(math.Max(b.end, c.end) - math.Min(b.start, c.start))},
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
				GoodputRPS: analysis.Num(float64(s.good) / s.secs), TTFTP50: analysis.Num(quantile(s.ttft, 0.5)), TTFTP99: analysis.Num(quantile(s.ttft, 0.99))}
		}
		return out
	}
	r.Series.Baseline, r.Series.Canary = pts(b), pts(c)
	return r
}
