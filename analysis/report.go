package analysis

import (
	"math"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// SchemaVersion is the version of the JSON report contract (DESIGN.md §6).
// It changes only when a field is removed or changes meaning; new fields may
// be added within a version.
const SchemaVersion = 1

// Verdict is the answer for a gate or for the whole comparison.
type Verdict string

// Verdicts (DESIGN.md §5).
const (
	Pass         Verdict = "pass"
	Fail         Verdict = "fail"
	Inconclusive Verdict = "inconclusive"
)

// Num is a float64 that encodes NaN and ±Inf as JSON null and every other
// value in the shortest form that round-trips, so reports are valid JSON and
// byte-identical for the same inputs.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler; null decodes to NaN.
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// Report is the complete result of one comparison. Renderers (text,
// markdown, json, the terminal review, PR comments) only read it.
type Report struct {
	SchemaVersion int           `json:"schema_version"`
	Verdict       Verdict       `json:"verdict"`
	Reasons       []string      `json:"reasons"` // one line per decisive fact, most important first
	Measurement   Measurement   `json:"measurement"`
	Arms          Arms          `json:"arms"`
	Metrics       []Metric      `json:"metrics"`     // the gates, in policy order
	Diagnostics   []Diagnostic  `json:"diagnostics"` // shown, never gating on their own
	Classes       []ClassRow    `json:"classes"`     // per-class breakdown, sorted by name
	Normalization Normalization `json:"normalization"`
	Series        Series        `json:"series"`        // per-bucket figures for charts
	Distributions Distributions `json:"distributions"` // latency quantile curves for CDFs
	// Timeline is both stories per slice — requests (offered, goodput,
	// attainment, retries) and internal work (GPU, KV, queue) — when an arm
	// has a metrics source; omitted otherwise.
	Timeline []TimelineRow `json:"timeline,omitempty"`
	// Findings are facts named beside the verdict that never gate (e.g.
	// internal work steady while goodput falls); omitted when none.
	Findings    []Finding       `json:"findings,omitempty"`
	Warnings    []string        `json:"warnings"`
	Inputs      []sources.Input `json:"inputs"`
	Policy      PolicyRef       `json:"policy"`
	ToolVersion string          `json:"tool_version"`
	Judge       string          `json:"judge"` // "goodput" (default), or a comparator judge name
}

// PolicyRef names the policy a report was judged with.
type PolicyRef struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"` // of the policy's YAML text
	Source string `json:"source"` // "builtin" or the file path
}

// Measurement is the measurement spec: what population, where, when, and
// what counts as done and good.
type Measurement struct {
	Population          string     `json:"population"`           // e.g. "all offered requests, all classes"
	Location            string     `json:"location"`             // client | server | gateway | mixed
	CompletionCondition string     `json:"completion_condition"` // e.g. "status ok (response finished)"
	Window              Window     `json:"window"`               // the analysed window (after the warm-up cut), union of both arms
	BucketSeconds       float64    `json:"bucket_s"`             // resampling unit, seconds
	Clock               string     `json:"clock"`                // epoch | relative | none (see sources.Clock)
	Confidence          float64    `json:"confidence"`           // e.g. 0.95; gate intervals are (1 − 2α) two-sided
	SLO                 []ClassSLO `json:"slo"`                  // the per-class SLOs applied
	// Method is how the arms were judged: MethodRequests (every request
	// kept: quantiles, strata and diagnostics from the values) or
	// MethodAggregate (per time slice × stratum counts and log-linear
	// histograms: request logs scanned in bounded memory, ClickHouse,
	// Prometheus, scrapes).
	Method string `json:"method,omitempty"`
	// MethodReason says why `goodput judge` took Method for files, e.g.
	// "--exact given" or "the inputs hold 1.2 GiB, above 256 MiB";
	// omitted when the source left no choice (ClickHouse, Prometheus).
	MethodReason string `json:"method_reason,omitempty"`
	// ResamplingUnit, set only when an arm has no arrival times, is the
	// resampling unit in place of BucketSeconds (which then is only the
	// policy's window.bucket): "each request" or "runs of N consecutive
	// requests in file order", per arm when the arms differ.
	ResamplingUnit string `json:"resampling_unit,omitempty"`
}

// The values of Measurement.Method.
const (
	MethodRequests  = "requests"
	MethodAggregate = "aggregate"
)

// Window is a time range. Start and End are RFC 3339 when the clock is
// epoch, otherwise seconds on the input's own clock as a decimal string.
type Window struct {
	Start   string `json:"start"`
	End     string `json:"end"`
	Seconds Num    `json:"seconds"`
}

// ClassSLO is the SLO of one request class. Thresholds in seconds; 0 means
// not required.
type ClassSLO struct {
	Class         string `json:"class"`
	TTFT          Num    `json:"ttft_s,omitempty"`
	TPOT          Num    `json:"tpot_s,omitempty"`
	E2E           Num    `json:"e2e_s,omitempty"`
	MaxITL        Num    `json:"max_itl_s,omitempty"`
	QualityNeeded bool   `json:"quality_required,omitempty"`
}

// Arms holds the per-arm summaries.
type Arms struct {
	Baseline ArmSummary `json:"baseline"`
	Canary   ArmSummary `json:"canary"`
}

// Accounting is request accounting: offered = admitted + rejected;
// admitted = canceled + failed + completed; good ⊆ completed.
type Accounting struct {
	Offered   int64 `json:"offered"`
	Admitted  int64 `json:"admitted"`
	Rejected  int64 `json:"rejected"`
	Canceled  int64 `json:"canceled"`
	Failed    int64 `json:"failed"`
	Completed int64 `json:"completed"`
	Good      int64 `json:"good"`
	Retries   int64 `json:"retries"` // offered requests with attempt > 1
}

// ArmSummary is one arm's figures over the analysed window.
type ArmSummary struct {
	Accounting         Accounting `json:"accounting"`
	GoodputRPS         Num        `json:"goodput_rps"`       // good requests per second of window
	SLOAttainment      Num        `json:"slo_attainment"`    // good / offered, 0..1
	TokenGoodputTPS    Num        `json:"token_goodput_tps"` // output tokens of good requests per second
	ThroughputRPS      Num        `json:"throughput_rps"`    // completed requests per second
	OutputTokensPS     Num        `json:"output_tokens_ps"`  // all output tokens per second (good or not)
	RetryAmplification Num        `json:"retry_amplification"`
	WindowSeconds      Num        `json:"window_s"` // duration the rates are divided by
	Window             Window     `json:"window"`
	WarmupCutSeconds   Num        `json:"warmup_cut_s"`
	Replicas           int        `json:"replicas"`            // distinct replicas seen (0 = unknown)
	ReplicaSeconds     Num        `json:"replica_seconds"`     // Σ replica presence over the window; null if unknown
	GoodputPerReplica  Num        `json:"goodput_per_replica"` // good requests per replica-second; null if replicas unknown
	CacheHitRate       Num        `json:"cache_hit_rate"`      // cached / prompt tokens; null if unknown
	Latency            Latency    `json:"latency"`
	CostPerGoodRequest *Num       `json:"cost_per_good_request,omitempty"` // USD; absent when cost is unknown
	Cost               *ArmCost   `json:"cost,omitempty"`
	// GPU-side extras from metrics sources (null when absent).
	GPUUtilization Num `json:"gpu_utilization"`
	// Internal and Efficiency are the arm's internal work and work per good
	// request, present when the arm has a metrics source (see internal.go).
	Internal   *Internal   `json:"internal,omitempty"`
	Efficiency *Efficiency `json:"efficiency,omitempty"`
	// LeftOut is present when stretches of the analysed window were left
	// out of both arms (the baseline_outage or shared_outage normalization
	// step): their
	// requests are not in Accounting nor in any gate, and their seconds,
	// replica-seconds and cost not in the rates above.
	LeftOut *LeftOut `json:"left_out,omitempty"`
}

// LeftOut is what an arm had in the stretches left out of both arms.
type LeftOut struct {
	Seconds    Num        `json:"seconds"` // analysed seconds left out
	Accounting Accounting `json:"accounting"`
}

// Latency holds per-arm quantiles of completed requests, seconds.
type Latency struct {
	TTFT Quantiles `json:"ttft"`
	TPOT Quantiles `json:"tpot"`
	E2E  Quantiles `json:"e2e"`
}

// Quantiles of one latency, seconds; N is the number of observations.
type Quantiles struct {
	N    int64 `json:"n"`
	Mean Num   `json:"mean"`
	P50  Num   `json:"p50"`
	P90  Num   `json:"p90"`
	P95  Num   `json:"p95"`
	P99  Num   `json:"p99"`
}

// ArmCost is the cost breakdown of one arm over the analysed window, USD.
type ArmCost struct {
	Source                string   `json:"source"` // "records" | "policy-rates" | "opencost"
	AcceleratorUSD        Num      `json:"accelerator_usd"`
	HostUSD               Num      `json:"host_usd"`
	NetworkUSD            Num      `json:"network_usd"`
	IdleReserveUSD        Num      `json:"idle_reserve_usd"`
	TotalUSD              Num      `json:"total_usd"`
	PerGoodRequest        Num      `json:"per_good_request_usd"`
	PerMillionGoodTokens  Num      `json:"per_million_good_tokens_usd"`
	GoodRequestsPerDollar Num      `json:"good_requests_per_usd"`
	MissingComponents     []string `json:"missing_components,omitempty"`
}

// Metric is one gate's result.
//
// Scale "absolute": Delta = canary − baseline in the metric's unit (for
// attainment and rates a fraction: 0.01 = 1 pp). Scale "relative": Delta =
// canary/baseline − 1 (0.02 = +2 %). Interval is the (1 − 2α) interval of
// Delta. Margin is the tolerated harm, ≥ 0, on the same scale; harm is
// −Delta when Direction is "higher_is_better", |Delta| when it is
// "two_sided" (a change either way: offered_load_ratio, or a gate the
// policy declares two_sided) and +Delta otherwise.
type Metric struct {
	Name string `json:"name"`
	// Class is set on a per-class tail gate (name "ttft_p99:chat"): the
	// class label (or policy class) whose requests alone it compares.
	Class     string  `json:"class,omitempty"`
	Verdict   Verdict `json:"verdict"`
	Guardrail bool    `json:"guardrail"`
	Direction string  `json:"direction"` // higher_is_better | lower_is_better | two_sided
	Scale     string  `json:"scale"`     // absolute | relative
	Unit      string  `json:"unit"`      // unit of Baseline and Canary, e.g. "fraction", "req/s/replica", "s", "USD"
	Baseline  Num     `json:"baseline"`
	Canary    Num     `json:"canary"`
	Delta     Num     `json:"delta"`
	Interval  [2]Num  `json:"interval"`
	Margin    Num     `json:"margin"`
	// PFail is the Holm-adjusted one-sided p-value of "harm > margin"
	// (for guardrails, "harm > 0"); a fail call needs PFail < α.
	PFail     Num      `json:"p_fail"`
	NBaseline int64    `json:"n_baseline"`
	NCanary   int64    `json:"n_canary"`
	Buckets   [2]int   `json:"buckets"` // resampling units (baseline, canary)
	Method    string   `json:"method"`  // how the interval was computed
	Reason    string   `json:"reason"`
	Adjusted  []string `json:"adjusted"` // adjustments applied to this metric
	// Naive is the unadjusted comparison when normalization changed it.
	Naive *NaiveComparison `json:"naive,omitempty"`
	// MoreData, for an inconclusive gate, estimates how much more data
	// would decide it.
	MoreData *MoreData `json:"more_data,omitempty"`
	// Bounds, for gates on histogram data whose good counts are only
	// bounded, holds the comparison at both ends of the bounds: a pass is
	// decided at the canary-unfavourable end, a fail at the favourable end.
	Bounds *BoundEnds `json:"bounds,omitempty"`
	// NotFailed marks a fail-only check that did not fail and did not pass
	// on its own either: a per-class tail gate whose interval reaches past
	// the margin, or whose class had too little data to check (the pooled
	// gate decides a pass), or offered_load_ratio with its interval past
	// the tolerance where a mismatch cannot hide harm (more load on the
	// canary, or a shortfall too small to be a shed). Its Verdict is pass
	// because such a check does not hold up the comparison; renderers
	// show "not failed".
	NotFailed bool `json:"not_failed,omitempty"`
}

// DidNotFail reports whether m is a fail-only check that passed without
// its interval inside the margin (NotFailed): it neither fails nor holds
// up the comparison, and is not "within its margin".
func (m Metric) DidNotFail() bool { return m.NotFailed && m.Verdict == Pass }

// VerdictLabel is m's verdict as renderers show it: "not failed" when
// DidNotFail, the verdict itself otherwise.
func (m Metric) VerdictLabel() string {
	if m.DidNotFail() {
		return "not failed"
	}
	return string(m.Verdict)
}

// Harm reads a delta of m as harm (positive = canary worse): −delta when
// m's direction is "higher_is_better", |delta| when "two_sided", delta
// otherwise.
func (m Metric) Harm(delta float64) float64 {
	switch m.Direction {
	case "higher_is_better":
		return -delta
	case "two_sided":
		return math.Abs(delta)
	}
	return delta
}

// WorstHarm is the harmful end of m's interval: the upper end for a
// lower-is-better row, the lower end negated for a higher-is-better one,
// the farther from no change for a two-sided one.
func (m Metric) WorstHarm() float64 {
	lo, hi := float64(m.Interval[0]), float64(m.Interval[1])
	switch m.Direction {
	case "higher_is_better":
		return -lo
	case "two_sided":
		return math.Max(-lo, hi)
	}
	return hi
}

// Conditional reports whether m is a row a check adds only when it found
// something: a gated metric's trend over the window (<metric>_trend) or an
// attainment dip (attainment_dip). Such a row's interval was selected for
// excluding no harm, so coverage is never read from it.
func (m Metric) Conditional() bool {
	return strings.HasSuffix(m.Name, trendSuffix) || m.Name == dipName
}

// BoundEnds is a gate's comparison at the two ends of histogram bounds.
type BoundEnds struct {
	// Unfavourable: canary at the end worst for it, baseline at the end
	// best for it (decides a pass).
	Unfavourable NaiveComparison `json:"canary_unfavourable"`
	// Favourable: canary at its best end, baseline at its worst (decides
	// a fail).
	Favourable NaiveComparison `json:"canary_favourable"`
}

// NaiveComparison is a gate's comparison before normalization.
type NaiveComparison struct {
	Baseline Num    `json:"baseline"`
	Canary   Num    `json:"canary"`
	Delta    Num    `json:"delta"`
	Interval [2]Num `json:"interval"`
}

// MoreData says about how much more data would decide an inconclusive gate.
type MoreData struct {
	Factor   Num `json:"factor"`   // × the current sample size
	Requests Num `json:"requests"` // additional offered requests, both arms together
	Minutes  Num `json:"minutes"`  // at the current arrival rate
}

// Diagnostic is a test shown beside the gates (it never gates alone).
type Diagnostic struct {
	Metric    string `json:"metric"` // ttft | tpot | e2e | …
	Method    string `json:"method"` // e.g. "mann-whitney"
	Statistic Num    `json:"statistic"`
	PValue    Num    `json:"p_value"`
	QValue    Num    `json:"q_value"` // Benjamini-Hochberg across diagnostics
	Estimate  Num    `json:"estimate"`
	Interval  [2]Num `json:"interval"`
	NBaseline int64  `json:"n_baseline"`
	NCanary   int64  `json:"n_canary"`
	Note      string `json:"note,omitempty"`
}

// ClassRow is the per-class breakdown of both arms.
type ClassRow struct {
	Class string `json:"class"` // the policy class that sets the SLO
	// Label is the input's own class label of the row's requests when the
	// policy declares classes ("" for requests without one); omitted when
	// the policy declares none (then Class is the label itself).
	Label    string   `json:"label,omitempty"`
	Baseline ClassArm `json:"baseline"`
	Canary   ClassArm `json:"canary"`
}

// ClassArm is one class in one arm.
type ClassArm struct {
	Offered       int64 `json:"offered"`
	Good          int64 `json:"good"`
	Share         Num   `json:"share"`          // share of the arm's offered requests
	SLOAttainment Num   `json:"slo_attainment"` // good / offered (metrics data: the lower bound)
	TTFTP99       Num   `json:"ttft_p99"`       // seconds (metrics data: interpolated within its bucket)
	TPOTP99       Num   `json:"tpot_p99"`       // seconds per output token (as TTFTP99)
	// Bounds, for metrics data only (absent for per-request data): SLO
	// attainment between the histograms' lower and upper bounds (0..1), and
	// each p99 between the edges of the bucket holding it (seconds; +Inf,
	// written null, when it is in the +Inf bucket).
	SLOAttainmentBounds *[2]Num `json:"slo_attainment_bounds,omitempty"`
	TTFTP99Bounds       *[2]Num `json:"ttft_p99_bounds,omitempty"`
	TPOTP99Bounds       *[2]Num `json:"tpot_p99_bounds,omitempty"`
}

// Normalization records what was done to make the arms comparable.
type Normalization struct {
	Steps []NormalizationStep `json:"steps"`
}

// NormalizationStep is one adjustment, requested or applied.
type NormalizationStep struct {
	Name    string `json:"name"`    // mix | warmup | cache | load | baseline_outage | shared_outage | replicas | srm | histogram-bounds | users | persistence
	Setting string `json:"setting"` // the policy's value
	Applied bool   `json:"applied"`
	Detail  string `json:"detail"` // what was done and its effect, with numbers
}

// Series is per-bucket data for charts. T is seconds from the arm's first
// bucket; both arms use the same bucket width.
type Series struct {
	BucketSeconds Num     `json:"bucket_s"`
	Baseline      []Point `json:"baseline"`
	Canary        []Point `json:"canary"`
}

// Point is one bucket of one arm.
type Point struct {
	T          Num   `json:"t"`
	Offered    int64 `json:"offered"`
	Good       int64 `json:"good"`
	GoodputRPS Num   `json:"goodput_rps"`
	TTFTP50    Num   `json:"ttft_p50"`
	TTFTP99    Num   `json:"ttft_p99"`
	Cut        bool  `json:"warmup,omitempty"` // in the warm-up cut, not analysed
	// LeftOut marks a bucket of a stretch left out of both arms
	// (baseline_outage, shared_outage): not analysed, its requests counted
	// in no gate
	LeftOut bool `json:"left_out,omitempty"`
}

// Distributions holds quantile curves (CDFs) of completed requests'
// latencies per arm at probabilities Probs (0..1), seconds.
type Distributions struct {
	Probs []Num         `json:"probs"`
	TTFT  ArmQuantCurve `json:"ttft"`
	TPOT  ArmQuantCurve `json:"tpot"`
}

// ArmQuantCurve is one latency's quantile curve per arm.
type ArmQuantCurve struct {
	Baseline []Num `json:"baseline"`
	Canary   []Num `json:"canary"`
}

// ReviewRecord is a reviewer's decision on a report, written by the
// terminal review and included in PR comments.
type ReviewRecord struct {
	Reviewer      string  `json:"reviewer"`      // $USER
	At            string  `json:"at"`            // RFC 3339
	ReportSHA256  string  `json:"report_sha256"` // of the report file's bytes
	Decision      string  `json:"decision"`      // approve | reject
	Note          string  `json:"note"`
	ReportVerdict Verdict `json:"report_verdict"` // the judge's verdict, kept beside an override
	Overrides     bool    `json:"overrides"`      // the decision disagrees with the verdict
}
