package comparators

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// ThresholdOptions configures the fixed-threshold judge. Zero values take
// the defaults.
type ThresholdOptions struct {
	// Interval is the analysis interval, one measurement each (default 1 min).
	Interval time.Duration
	// TTFTP99Limit is the largest canary p99 TTFT an interval may have
	// (default: the policy's TTFT SLO, or 1 s when it sets none).
	TTFTP99Limit time.Duration
	// SuccessRateLimit is the smallest canary success rate (completed /
	// offered, 0..1) an interval may have (default 0.99).
	SuccessRateLimit float64
	// FailureLimit is the number of failed intervals of one metric at which
	// the run fails (default 2). It is Flagger's `threshold`; Argo Rollouts'
	// `failureLimit` is one less (Argo fails when failures exceed it).
	FailureLimit int
}

func (o ThresholdOptions) withDefaults(p *policies.Policy) ThresholdOptions {
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	if o.TTFTP99Limit <= 0 {
		o.TTFTP99Limit = time.Duration(p.SLO.TTFT)
		if o.TTFTP99Limit <= 0 {
			o.TTFTP99Limit = time.Second
		}
	}
	if o.SuccessRateLimit <= 0 {
		o.SuccessRateLimit = 0.99
	}
	if o.FailureLimit <= 0 {
		o.FailureLimit = 2
	}
	return o
}

// Measurement outcomes of one interval of one threshold metric.
type Measurement int

// Outcomes.
const (
	MeasureNoData Measurement = iota // no completed canary request in the interval
	MeasurePass
	MeasureFail
)

// ThresholdDecision applies the failure limit to one metric's interval
// outcomes: fail once failureLimit intervals failed; otherwise inconclusive
// when no interval had data or fewer than half of them had data; else pass.
// It is exported so the failure-limit rule can be checked on its own.
func ThresholdDecision(ms []Measurement, failureLimit int) analysis.Verdict {
	var failed, withData int
	for _, m := range ms {
		switch m {
		case MeasureFail:
			failed++
			withData++
		case MeasurePass:
			withData++
		}
	}
	switch {
	case failed >= failureLimit:
		return analysis.Fail
	case withData == 0 || 2*withData < len(ms):
		return analysis.Inconclusive
	}
	return analysis.Pass
}

// Threshold judges the canary with fixed per-interval limits, as Argo
// Rollouts and Flagger analyses do: in every interval the canary's p99 TTFT
// must be ≤ TTFTP99Limit and its success rate ≥ SuccessRateLimit; a metric
// fails once FailureLimit of its intervals failed, and the run fails when
// any metric fails. The baseline is not compared (it is summarised only).
// An interval without completed canary requests is a no-data measurement.
func Threshold(baseline, canary *sources.Dataset, p *policies.Policy, opt ThresholdOptions) (*analysis.Report, error) {
	if p == nil {
		return nil, fmt.Errorf("comparators: no policy")
	}
	o := opt.withDefaults(p)
	w := o.Interval.Seconds()
	b, err := slice(baseline, p, w, "threshold")
	if err != nil {
		return nil, err
	}
	c, err := slice(canary, p, w, "threshold")
	if err != nil {
		return nil, err
	}
	r := baseReport("threshold", baseline, canary, b, c, p, w,
		fmt.Sprintf("the canary's offered requests per %s interval, against fixed limits (Argo/Flagger-style comparator)", o.Interval))
	limit := o.TTFTP99Limit.Seconds()
	type check struct {
		name, unit, scale, dir string
		value                  func(s *step) float64
		ok                     func(v float64) bool
		limit                  string
		worst                  func(a, b float64) float64
	}
	checks := []check{
		{name: "ttft_p99", unit: "s", scale: "relative", dir: "lower_is_better",
			value: func(s *step) float64 { return analysis.Quantile(s.ttft, 0.99) },
			ok:    func(v float64) bool { return v <= limit }, limit: fmt.Sprintf("≤ %s", o.TTFTP99Limit),
			worst: math.Max},
		{name: "success_rate", unit: "fraction", scale: "absolute", dir: "higher_is_better",
			value: func(s *step) float64 { return ratio(s.completed, s.offered) },
			ok:    func(v float64) bool { return v >= o.SuccessRateLimit }, limit: fmt.Sprintf("≥ %g%%", o.SuccessRateLimit*100),
			worst: math.Min},
	}
	verdicts := make([]analysis.Verdict, len(checks))
	for i, ch := range checks {
		ms := make([]Measurement, len(c.steps))
		var failedAt []string
		worstC, worstB := math.NaN(), math.NaN()
		for k := range c.steps {
			s := &c.steps[k]
			if s.completed == 0 {
				ms[k] = MeasureNoData
				continue
			}
			v := ch.value(s)
			worstC = nanWorst(ch.worst, worstC, v)
			if ch.ok(v) {
				ms[k] = MeasurePass
			} else {
				ms[k] = MeasureFail
				failedAt = append(failedAt, fmt.Sprintf("#%d (%.4g)", k+1, v))
			}
		}
		for k := range b.steps {
			if b.steps[k].completed > 0 {
				worstB = nanWorst(ch.worst, worstB, ch.value(&b.steps[k]))
			}
		}
		v := ThresholdDecision(ms, o.FailureLimit)
		verdicts[i] = v
		noData := 0
		for _, m := range ms {
			if m == MeasureNoData {
				noData++
			}
		}
		reason := fmt.Sprintf("%d of %d intervals failed %s %s (failure limit %d), %d without data",
			len(failedAt), len(ms), ch.name, ch.limit, o.FailureLimit, noData)
		if len(failedAt) > 0 {
			reason += "; failed: " + strings.Join(failedAt, ", ")
		}
		r.Metrics = append(r.Metrics, analysis.Metric{Name: ch.name, Verdict: v, Direction: ch.dir, Scale: ch.scale, Unit: ch.unit,
			Baseline: analysis.Num(worstB), Canary: analysis.Num(worstC), Delta: analysis.Num(math.NaN()),
			Interval: [2]analysis.Num{analysis.Num(math.NaN()), analysis.Num(math.NaN())}, PFail: analysis.Num(math.NaN()),
			NBaseline: int64(b.tot.offered), NCanary: int64(c.tot.offered), Buckets: [2]int{len(b.steps), len(c.steps)},
			Adjusted: []string{}, Reason: reason,
			Method: fmt.Sprintf("threshold: canary per %s interval %s; baseline and canary shown are the worst interval", o.Interval, ch.limit)})
	}
	r.Verdict, r.Reasons = thresholdOverall(r.Metrics, verdicts)
	r.Warnings = append(r.Warnings, "comparator judge: fixed limits on the canary alone; the baseline is not compared and sample size is not taken into account")
	return r, nil
}

func nanWorst(f func(a, b float64) float64, acc, v float64) float64 {
	if math.IsNaN(v) {
		return acc
	}
	if math.IsNaN(acc) {
		return v
	}
	return f(acc, v)
}

func thresholdOverall(ms []analysis.Metric, vs []analysis.Verdict) (analysis.Verdict, []string) {
	var fails, incs []string
	for i, m := range ms {
		switch vs[i] {
		case analysis.Fail:
			fails = append(fails, m.Name+": "+m.Reason)
		case analysis.Inconclusive:
			incs = append(incs, m.Name+": "+m.Reason)
		}
	}
	switch {
	case len(fails) > 0:
		return analysis.Fail, append(fails, incs...)
	case len(incs) > 0:
		return analysis.Inconclusive, incs
	}
	return analysis.Pass, []string{fmt.Sprintf("all %d threshold checks stayed within their limits often enough", len(ms))}
}
