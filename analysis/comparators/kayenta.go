package comparators

import (
	"fmt"
	"gonum.org/v1/gonum/stat"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// Kayenta metric directions: which change a metric's classification may
// report (Kayenta's `direction` key).
const (
	Increase = "increase" // only High (canary larger) is flagged
	Decrease = "decrease" // only Low (canary smaller) is flagged
	Either   = "either"   // both; Kayenta's default
)

// KayentaMetric is one per-step series the Kayenta-style judge compares.
type KayentaMetric struct {
	// Name is one of slo_attainment (good/offered per step), goodput (good
	// requests per second), error_rate (failed/offered), ttft_p50, ttft_p99,
	// tpot_p50, tpot_p99 (seconds, completed requests of the step).
	Name string
	// Direction is Increase, Decrease or Either ("" = Either).
	Direction string
	// Critical makes any non-Pass result (including no data) force the
	// score to 0, as Kayenta's `critical: true`.
	Critical bool
}

// DefaultKayentaMetrics is the canary configuration used when
// KayentaOptions.Metrics is empty: the chat policy's gated quantities as
// per-minute series, each flagged only in its harmful direction (what a
// Kayenta user sets for latency, errors and success metrics). One group, no
// critical metric, no weights.
func DefaultKayentaMetrics() []KayentaMetric {
	return []KayentaMetric{
		{Name: "slo_attainment", Direction: Decrease},
		{Name: "goodput", Direction: Decrease},
		{Name: "ttft_p99", Direction: Increase},
		{Name: "tpot_p99", Direction: Increase},
		{Name: "error_rate", Direction: Increase},
	}
}

// KayentaOptions configures the Kayenta-style judge. Zero values take the
// defaults of Kayenta's NetflixACAJudge and the Spinnaker documentation.
type KayentaOptions struct {
	Step    time.Duration   // width of one series point (default 1 min)
	Metrics []KayentaMetric // default DefaultKayentaMetrics()
	// Confidence of the Mann-Whitney interval (default 0.98, hard-coded
	// upstream). Tolerance is the band as a fraction of |estimate|
	// (default 0.25).
	Confidence, Tolerance float64
	// AllowedIncrease and AllowedDecrease are the mean-ratio effect-size
	// gate (default 1.0 each: any increase or decrease may be flagged).
	AllowedIncrease, AllowedDecrease float64
	// PassScore and MarginalScore are the score thresholds, 0-100
	// (defaults 95 and 75). A score ≥ PassScore passes, ≥ MarginalScore is
	// marginal (reported as inconclusive), lower fails.
	PassScore, MarginalScore float64
}

func (o KayentaOptions) withDefaults() KayentaOptions {
	if o.Step <= 0 {
		o.Step = time.Minute
	}
	if len(o.Metrics) == 0 {
		o.Metrics = DefaultKayentaMetrics()
	}
	if o.Confidence <= 0 || o.Confidence >= 1 {
		o.Confidence = 0.98
	}
	if o.Tolerance <= 0 {
		o.Tolerance = 0.25
	}
	if o.AllowedIncrease <= 0 {
		o.AllowedIncrease = 1
	}
	if o.AllowedDecrease <= 0 {
		o.AllowedDecrease = 1
	}
	if o.PassScore <= 0 {
		o.PassScore = 95
	}
	if o.MarginalScore <= 0 {
		o.MarginalScore = 75
	}
	return o
}

// Classification is a Kayenta metric classification.
type Classification string

// Metric classifications.
const (
	ClassPass   Classification = "Pass"
	ClassHigh   Classification = "High"
	ClassLow    Classification = "Low"
	ClassNodata Classification = "Nodata"
)

// MetricResult is one metric's Kayenta classification.
type MetricResult struct {
	Class Classification
	// Estimate is the Hodges-Lehmann shift canary − baseline and Lo, Hi
	// its interval, in the metric's unit; Band is Tolerance·|Estimate|.
	Estimate, Lo, Hi, Band float64
	// EffectSize is mean(canary)/mean(baseline), NaN when a mean is 0.
	EffectSize float64
	Reason     string
}

// Classify is the Mann-Whitney classifier of NetflixACAJudge on one
// metric's series (canary x, baseline y; NaN points are removed first). It
// is exported so the band logic can be checked on hand-computed cases.
//
// Order: an empty side is Nodata; identical sorted series, or a single
// distinct value overall, Pass; two different constants are compared
// directly (Kayenta adds random noise of 1e-5 relative and runs the test,
// which gives the same answer non-deterministically); otherwise the shift's
// interval at the given confidence (the distribution-free Hodges-Lehmann
// interval that inverts the Mann-Whitney test) decides: High when the
// direction allows it, lo > Tolerance·|est| and the mean ratio ≥
// AllowedIncrease (or undefined); Low symmetrically; else Pass.
func Classify(x, y []float64, direction string, o KayentaOptions) MetricResult {
	o = o.withDefaults()
	x, y = dropNaN(x), dropNaN(y)
	nan := math.NaN()
	res := MetricResult{Estimate: nan, Lo: nan, Hi: nan, Band: nan, EffectSize: nan}
	if len(x) == 0 || len(y) == 0 {
		res.Class, res.Reason = ClassNodata, fmt.Sprintf("no data (%d canary, %d baseline points)", len(x), len(y))
		return res
	}
	xs, ys := slices.Sorted(slices.Values(x)), slices.Sorted(slices.Values(y))
	mx, my := stat.Mean(xs, nil), stat.Mean(ys, nil)
	if mx != 0 && my != 0 {
		res.EffectSize = mx / my
	}
	if slices.Equal(xs, ys) {
		res.Class, res.Estimate, res.Lo, res.Hi, res.Band = ClassPass, 0, 0, 0, 0
		res.Reason = "identical series"
		return res
	}
	if xs[0] == xs[len(xs)-1] && ys[0] == ys[len(ys)-1] {
		if xs[0] == ys[0] {
			res.Class, res.Estimate, res.Lo, res.Hi, res.Band = ClassPass, 0, 0, 0, 0
			res.Reason = "a single value in both series"
			return res
		}
		d := xs[0] - ys[0]
		res.Estimate, res.Lo, res.Hi = d, d, d
	} else {
		est, ci := stats.HodgesLehmann(xs, ys, o.Confidence)
		res.Estimate, res.Lo, res.Hi = est, ci.Lo, ci.Hi
	}
	res.Band = o.Tolerance * math.Abs(res.Estimate)
	up := direction == Increase || direction == Either || direction == ""
	down := direction == Decrease || direction == Either || direction == ""
	e := res.EffectSize
	res.Class = ClassPass
	switch {
	case up && res.Lo > res.Band && (math.IsNaN(e) || e >= o.AllowedIncrease):
		res.Class = ClassHigh
	case down && res.Hi < -res.Band && (math.IsNaN(e) || e <= o.AllowedDecrease):
		res.Class = ClassLow
	}
	res.Reason = fmt.Sprintf("%g%% interval of the shift [%.4g, %.4g], estimate %.4g, tolerance band ±%.4g, mean ratio %.4g",
		o.Confidence*100, res.Lo, res.Hi, res.Estimate, res.Band, e)
	return res
}

func dropNaN(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// Score is the Kayenta summary score of one group of classifications
// (0-100, rounded half up to 2 decimals): 100·Pass/(Pass+High+Low), Nodata
// not counted, 100 when nothing is counted; 0 when a critical metric is not
// Pass or when half or more of the metrics are Nodata. The string says why
// when an override applied.
func Score(classes []Classification, critical []bool) (float64, string) {
	var pass, counted, nodata int
	for i, c := range classes {
		if i < len(critical) && critical[i] && c != ClassPass {
			return 0, "a critical metric was classified " + string(c)
		}
		switch c {
		case ClassPass:
			pass++
			counted++
		case ClassHigh, ClassLow:
			counted++
		case ClassNodata:
			nodata++
		}
	}
	if len(classes) > 0 && 2*nodata >= len(classes) {
		return 0, "50% or more metrics returned NODATA"
	}
	if counted == 0 {
		return 100, ""
	}
	s := 100 * float64(pass) / float64(counted)
	return math.Floor(s*100+0.5) / 100, ""
}

// Kayenta judges canary against baseline with the rule of Kayenta's
// NetflixACAJudge on per-step series of opt.Metrics (one judgement over the
// whole window, i.e. analysisIntervalMins = lifetime). Good requests follow
// p's class SLOs; p's gates, margins, warm-up and normalization are not used.
// The score maps to pass (≥ PassScore), inconclusive (marginal) or fail.
func Kayenta(baseline, canary *sources.Dataset, p *policies.Policy, opt KayentaOptions) (*analysis.Report, error) {
	if p == nil {
		return nil, fmt.Errorf("comparators: no policy")
	}
	o := opt.withDefaults()
	w := o.Step.Seconds()
	b, err := slice(baseline, p, w, "kayenta")
	if err != nil {
		return nil, err
	}
	c, err := slice(canary, p, w, "kayenta")
	if err != nil {
		return nil, err
	}
	r := baseReport("kayenta", baseline, canary, b, c, p, w,
		fmt.Sprintf("all offered requests of both arms as %s series of %d metrics (Kayenta-style comparator)", o.Step, len(o.Metrics)))
	r.Measurement.Confidence = o.Confidence
	classes := make([]Classification, len(o.Metrics))
	critical := make([]bool, len(o.Metrics))
	var flagged []string
	for i, km := range o.Metrics {
		xb, err := series(b, km.Name)
		if err != nil {
			return nil, err
		}
		xc, _ := series(c, km.Name)
		res := Classify(xc, xb, km.Direction, o)
		classes[i], critical[i] = res.Class, km.Critical
		m := kayentaMetric(km, res, xb, xc, o)
		r.Metrics = append(r.Metrics, m)
		if res.Class != ClassPass {
			flagged = append(flagged, km.Name+" was classified "+string(res.Class)+": "+res.Reason)
		}
	}
	score, override := Score(classes, critical)
	head := fmt.Sprintf("score %.2f (pass ≥ %g, marginal ≥ %g)", score, o.PassScore, o.MarginalScore)
	if override != "" {
		head += ": " + override
	}
	switch {
	case score >= o.PassScore:
		r.Verdict = analysis.Pass
		head += ": Pass"
	case score >= o.MarginalScore:
		r.Verdict = analysis.Inconclusive
		head += ": Marginal"
	default:
		r.Verdict = analysis.Fail
		head += ": Fail"
	}
	r.Reasons = append([]string{head}, flagged...)
	if nb := countKnown(b); nb < 50 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("One of the metrics returned fewer than 50 data points (%d baseline points of %s), which can reduce confidence in the final canary score.", nb, o.Step))
	}
	r.Warnings = append(r.Warnings, "comparator judge: per-step points are treated as independent (no allowance for autocorrelation), no warm-up cut, no mix normalization; see goodput calibrate for its error rates")
	return r, nil
}

func countKnown(a *armSteps) int {
	n := 0
	for _, s := range a.steps {
		if s.offered > 0 {
			n++
		}
	}
	return n
}

// series returns one point per step of a Kayenta metric; NaN where the step
// has no data for it.
func series(a *armSteps, name string) ([]float64, error) {
	out := make([]float64, len(a.steps))
	for i := range a.steps {
		s := &a.steps[i]
		switch name {
		case "slo_attainment":
			out[i] = ratio(s.good, s.offered)
		case "goodput":
			out[i] = float64(s.good) / s.secs
		case "error_rate":
			out[i] = ratio(s.failed, s.offered)
		case "ttft_p50":
			out[i] = analysis.Quantile(s.ttft, 0.5)
		case "ttft_p99":
			out[i] = analysis.Quantile(s.ttft, 0.99)
		case "tpot_p50":
			out[i] = analysis.Quantile(s.tpot, 0.5)
		case "tpot_p99":
			out[i] = analysis.Quantile(s.tpot, 0.99)
		default:
			return nil, fmt.Errorf("kayenta metric %q: want one of %s", name, strings.Join(kayentaMetricNames(), ", "))
		}
	}
	return out, nil
}

func kayentaMetricNames() []string {
	return []string{"error_rate", "goodput", "slo_attainment", "tpot_p50", "tpot_p99", "ttft_p50", "ttft_p99"}
}

func kayentaMetric(km KayentaMetric, res MetricResult, xb, xc []float64, o KayentaOptions) analysis.Metric {
	unit := map[string]string{"slo_attainment": "fraction", "goodput": "req/s", "error_rate": "fraction"}[km.Name]
	if unit == "" {
		unit = "s"
	}
	dir := "lower_is_better"
	if km.Name == "slo_attainment" || km.Name == "goodput" {
		dir = "higher_is_better"
	}
	yb, yc := dropNaN(xb), dropNaN(xc)
	mb, mc := stat.Mean(yb, nil), stat.Mean(yc, nil)
	rel := func(v float64) analysis.Num {
		if mb == 0 || math.IsNaN(mb) {
			return analysis.Num(math.NaN())
		}
		return analysis.Num(v / math.Abs(mb))
	}
	m := analysis.Metric{Name: km.Name, Guardrail: km.Critical, Direction: dir, Scale: "relative", Unit: unit,
		Baseline: analysis.Num(mb), Canary: analysis.Num(mc),
		Delta: rel(res.Estimate), Interval: [2]analysis.Num{rel(res.Lo), rel(res.Hi)}, Margin: rel(res.Band),
		PFail: analysis.Num(math.NaN()), NBaseline: int64(len(yb)), NCanary: int64(len(yc)),
		Buckets: [2]int{len(xb), len(xc)}, Adjusted: []string{},
		Method: fmt.Sprintf("kayenta: mann-whitney %g%% interval, ±%g×estimate band, %s series", o.Confidence*100, o.Tolerance, o.Step),
		Reason: string(res.Class) + ": " + res.Reason + " (shift and band shown relative to the baseline mean)"}
	switch res.Class {
	case ClassPass:
		m.Verdict = analysis.Pass
	case ClassHigh, ClassLow:
		m.Verdict = analysis.Fail
	default:
		m.Verdict = analysis.Inconclusive
	}
	return m
}
