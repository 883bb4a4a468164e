// Package sources holds goodput's canonical data model — the request record,
// the arm, the per-arm dataset with its measurement spec — and the interfaces
// that input readers implement. Each input kind lives in a subpackage
// (requestlog, benchfile, prometheus, exposition, sim); they all produce the
// types defined here, and nothing here knows about policies or verdicts.
package sources

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Arm names one side of the comparison.
type Arm string

// The two arms of a canary comparison.
const (
	Baseline Arm = "baseline"
	Canary   Arm = "canary"
)

// ParseArm accepts "baseline" or "canary" (case-insensitive).
func ParseArm(s string) (Arm, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "baseline":
		return Baseline, nil
	case "canary":
		return Canary, nil
	}
	return "", fmt.Errorf("unknown arm %q (want baseline or canary)", s)
}

// Status is the request-accounting outcome of one offered request. Every
// offered request ends as exactly one of rejected, canceled, failed (error or
// timeout) or completed (ok).
type Status uint8

// Request outcomes, in the vocabulary of DESIGN.md §1 and the `status` column
// of the native request log.
const (
	StatusOK       Status = iota + 1 // completed
	StatusError                      // failed: the server returned an error
	StatusTimeout                    // failed: the request timed out
	StatusCanceled                   // the client gave up
	StatusRejected                   // never admitted (queue full, 429, shed)
)

// String returns the native-log spelling of s ("ok", "error", …).
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusError:
		return "error"
	case StatusTimeout:
		return "timeout"
	case StatusCanceled:
		return "canceled"
	case StatusRejected:
		return "rejected"
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// ParseStatus parses the native-log spelling of a status. "cancelled" is
// accepted as a synonym of "canceled".
func ParseStatus(s string) (Status, error) {
	switch s {
	case "ok":
		return StatusOK, nil
	case "error":
		return StatusError, nil
	case "timeout":
		return StatusTimeout, nil
	case "canceled", "cancelled":
		return StatusCanceled, nil
	case "rejected":
		return StatusRejected, nil
	}
	return 0, fmt.Errorf("unknown status %q (want ok, error, timeout, canceled or rejected)", s)
}

// CanceledBy says who ended a canceled request (the native log's optional
// canceled_by field). A server-side cancel — the engine or gateway aborted
// a request it had admitted: preemption, an out-of-memory abort, a drain, a
// proxy cutting the upstream — is a failure of the service; a client's
// cancel (it disconnected or gave up; HTTP 499 at nginx-style gateways,
// AIPerf's was_cancelled) is not. vLLM's finish reason "abort" and SGLang's
// aborted counter cover both and so stay unknown.
type CanceledBy uint8

// Who canceled a request; CanceledByUnknown when the input does not say.
const (
	CanceledByUnknown CanceledBy = iota
	CanceledByClient
	CanceledByServer
)

// String returns the native-log spelling ("client", "server"; "" unknown).
func (c CanceledBy) String() string {
	switch c {
	case CanceledByClient:
		return "client"
	case CanceledByServer:
		return "server"
	}
	return ""
}

// Completed reports whether the request finished successfully.
func (s Status) Completed() bool { return s == StatusOK }

// Admitted reports whether the request was admitted (everything but rejected).
func (s Status) Admitted() bool { return s != StatusRejected }

// Failed reports whether the request failed (error or timeout).
func (s Status) Failed() bool { return s == StatusError || s == StatusTimeout }

// CountsFailed is the one rule of request accounting for a request's
// outcome: it failed when its status is error or timeout, or when it was
// canceled by the server (CanceledByServer) — the service dropped a request
// it had admitted. Every reader that counts failed and canceled requests
// (the exact judge, the streaming aggregate) decides with it; the
// ClickHouse query states the same rule in SQL.
func CountsFailed(s Status, by CanceledBy) bool {
	return s.Failed() || s == StatusCanceled && by == CanceledByServer
}

// CountsCanceled reports whether the request counts as canceled in request
// accounting: canceled by the client, or by someone the input does not
// name (see CountsFailed).
func CountsCanceled(s Status, by CanceledBy) bool {
	return s == StatusCanceled && by != CanceledByServer
}

// Quality is the optional per-request quality verdict.
type Quality uint8

// Quality values; QualityUnknown when the input does not say.
const (
	QualityUnknown Quality = iota
	QualityOK
	QualityBad
)

// Request is one offered request as observed at the measurement location.
//
// Latencies are in seconds; an unknown latency is NaN (use Known). Token
// counts are -1 when unknown. Time is the arrival time in seconds on the
// input's clock (see Dataset.Clock): unix seconds for native logs, a
// monotonic offset for benchmark files that record perf_counter values, NaN
// when the input records no arrival times.
type Request struct {
	Time         float64 // arrival, seconds on the dataset's clock; NaN if unknown
	TTFT         float64 // time to first token, seconds; NaN if unknown
	TPOT         float64 // (e2e − TTFT)/(output tokens − 1), seconds; NaN if unknown or output ≤ 1 token
	E2E          float64 // end-to-end latency, seconds; NaN if unknown
	MaxITL       float64 // largest inter-token gap (stall), seconds; NaN if unknown
	PromptTokens int64   // prompt length in tokens; -1 if unknown
	OutputTokens int64   // output length in tokens; -1 if unknown
	CachedTokens int64   // prefix-cache hit tokens; -1 if unknown
	Class        string  // request class as given by the input; "" when absent
	Replica      string  // replica or pod that served it; "" when absent
	Attempt      int32   // 1 = first try, > 1 = retry; 0 when unknown (treated as 1)
	Status       Status
	Quality      Quality
	// CanceledBy says who canceled a request with Status StatusCanceled;
	// CanceledByUnknown otherwise and when the input does not say.
	CanceledBy CanceledBy
	// User is 1 + the group (0 … UserGroups−1) the request's user, as the
	// input names it (`user`), hashes to (UserGroupOf); 0 when the input
	// does not name one. Only the group is kept, never the name.
	User uint8
}

// UserGroups is how many groups the users a request log names are hashed
// into (UserGroupOf): 64. Users, not requests, are what a sticky router
// assigns to an arm; groups of users are independent of each other when
// users are, and 64 of them bound the memory a million users would take.
const UserGroups = 64

// UserGates is how many rows a UserTally tallies: SLO attainment, error,
// rejected, canceled and retry shares (over offered requests), output
// tokens per completion that gives its length, and prompt tokens per
// admitted request that gives its length (what users ask of the fleet),
// in that order.
const UserGates = 7

// UserTally is one arm's count gates summed per group of users
// (Request.User): for each gate (UserGates) the numerator and denominator
// per group, and the numerator's squares over requests. Integers, so every
// path, adding in any order, gets the same sums. A record that names no
// user is a unit of its own, placed by a hash of its arrival time
// (unnamedGroup).
type UserTally struct {
	Named    bool // a record named its user
	Num, Den [UserGates][UserGroups]int64
	Sq       [UserGates]int64
}

// Add counts request r, judged good or not under its class's SLO.
func (u *UserTally) Add(r *Request, good bool) {
	g := int(r.User) - 1
	if r.User == 0 {
		g = unnamedGroup(r)
	} else {
		u.Named = true
	}
	// gates 0–4 count over every offered request; a 0/1 numerator is
	// its own square
	var n [5]int64
	if good {
		n[0] = 1
	}
	if r.Failed() {
		n[1] = 1
	}
	if r.Status == StatusRejected {
		n[2] = 1
	}
	if r.Canceled() {
		n[3] = 1
	}
	if r.Attempt > 1 {
		n[4] = 1
	}
	for k, v := range n {
		u.Num[k][g] += v
		u.Den[k][g]++
		u.Sq[k] += v
	}
	if r.Status == StatusOK && r.OutputTokens >= 0 {
		u.Num[5][g] += r.OutputTokens
		u.Den[5][g]++
		u.Sq[5] += r.OutputTokens * r.OutputTokens
	}
	if r.Status.Admitted() && r.PromptTokens >= 0 {
		u.Num[6][g] += r.PromptTokens
		u.Den[6][g]++
		u.Sq[6] += r.PromptTokens * r.PromptTokens
	}
}

// Merge adds o's counts to u's.
func (u *UserTally) Merge(o *UserTally) {
	u.Named = u.Named || o.Named
	for k := range UserGates {
		for g := range UserGroups {
			u.Num[k][g] += o.Num[k][g]
			u.Den[k][g] += o.Den[k][g]
		}
		u.Sq[k] += o.Sq[k]
	}
}

// Failed reports whether r counts as failed (CountsFailed).
func (r *Request) Failed() bool { return CountsFailed(r.Status, r.CanceledBy) }

// Canceled reports whether r counts as canceled (CountsCanceled).
func (r *Request) Canceled() bool { return CountsCanceled(r.Status, r.CanceledBy) }

// Known reports whether a latency field holds a value.
func Known(v float64) bool { return !math.IsNaN(v) }

// NewRequest returns a Request with every optional field marked unknown.
func NewRequest() Request {
	nan := math.NaN()
	return Request{Time: nan, TTFT: nan, TPOT: nan, E2E: nan, MaxITL: nan,
		PromptTokens: -1, OutputTokens: -1, CachedTokens: -1}
}

// DeriveTPOT fills TPOT from E2E, TTFT and OutputTokens when it is unknown,
// as vLLM's benchmark does: (e2e − ttft)/(output − 1), defined only for
// requests with more than one output token.
func (r *Request) DeriveTPOT() {
	if Known(r.TPOT) || !Known(r.E2E) || !Known(r.TTFT) || r.OutputTokens <= 1 {
		return
	}
	r.TPOT = (r.E2E - r.TTFT) / float64(r.OutputTokens-1)
}

// Clock says what Request.Time means for a dataset.
type Clock string

// Clock kinds.
const (
	ClockEpoch    Clock = "epoch"    // unix seconds: arms can be aligned in wall time
	ClockRelative Clock = "relative" // seconds on a per-file monotonic clock (perf_counter): buckets within a file only
	ClockNone     Clock = "none"     // no arrival times: time-bucketed analyses are disabled
)

// Input describes one file (or query) read into a dataset.
type Input struct {
	Path   string `json:"path"`           // file path, or the query text for remote sources
	SHA256 string `json:"sha256"`         // hex digest of the bytes read
	Format string `json:"format"`         // detected or forced input format
	Arm    Arm    `json:"arm"`            // which arm it was given for
	Count  int    `json:"requests"`       // records read from it
	Note   string `json:"note,omitempty"` // e.g. "times are perf_counter seconds, aligned to the file's first request"
}

// Dataset is everything read for one arm.
type Dataset struct {
	Arm      Arm
	Requests []Request
	// Agg is set instead of Requests for metrics-based inputs.
	Agg *Aggregate
	// Metrics, beside Requests, holds the arm's engine and GPU metrics for
	// the same window (a Prometheus query or scrape files read next to
	// per-request files): the judge takes internal work from it (GPU
	// utilisation, power, memory, KV usage, queue) while requests come
	// from the records. nil when none was given.
	Metrics *Aggregate
	Inputs  []Input
	Clock   Clock
	// Location is where the figures were measured: "client" for benchmark
	// clients, "server" for engine logs/metrics, "gateway" for proxies.
	Location string
	// Duration is the run's wall time in seconds when the input states it
	// (e.g. vLLM's `duration`); 0 when unknown, in which case the analysis
	// uses the span of arrival times.
	Duration float64
	// Warnings are facts about the input the report must show (units
	// assumed, fields missing, analyses disabled).
	Warnings []string
	// Stated holds the run settings a benchmark result states
	// (StatedSettings, and model_id), each as written, kept only where
	// every run and file of the arm states the same value: the judge
	// compares them between the arms. Nil for inputs that state none.
	Stated map[string]string
}

// StatedSettings are the benchmark settings that set the offered load
// (request_rate, burstiness, max_concurrency) and what is sent
// (dataset_name and the random or ShareGPT lengths): arms run under
// different ones are not comparable. model_id is stated too, not in this
// list: a quantized build may name its model apart.
func StatedSettings() []string {
	return []string{"request_rate", "burstiness", "max_concurrency",
		"dataset_name", "random_input_len", "random_output_len", "random_range_ratio", "sharegpt_output_len"}
}

// MergeStated keeps the settings a and b state alike (Dataset.Stated):
// a copy of b when b is the first (of an arm's files, or a file's runs),
// else a with only the keys both give the same value.
func MergeStated(a, b map[string]string, first bool) map[string]string {
	if first {
		return maps.Clone(b)
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			delete(a, k)
		}
	}
	return a
}

// Append adds another file's records to d, merging clocks, durations and
// warnings. Relative clocks from different files cannot be aligned in wall
// time, so each file is shifted to start at 0 before merging and the
// dataset's duration is the longest file's.
func (d *Dataset) Append(o Dataset) {
	d.Stated = MergeStated(d.Stated, o.Stated, len(d.Inputs) == 0)
	if d.Requests == nil {
		// the first file: take its records without copying them
		d.Requests = o.Requests
	} else {
		d.Requests = append(d.Requests, o.Requests...)
	}
	d.Inputs = append(d.Inputs, o.Inputs...)
	d.Warnings = append(d.Warnings, o.Warnings...)
	switch {
	case d.Clock == "":
		d.Clock = o.Clock
	case d.Clock != o.Clock:
		// mixed clocks: the weakest wins
		if d.Clock == ClockNone || o.Clock == ClockNone {
			d.Clock = ClockNone
		} else {
			d.Clock = ClockRelative
		}
	}
	if d.Location == "" {
		d.Location = o.Location
	} else if o.Location != "" && o.Location != d.Location {
		d.Location = "mixed"
	}
	if o.Duration > d.Duration {
		d.Duration = o.Duration
	}
}

// Histogram is a cumulative histogram in Prometheus form: Counts[i] is the
// number of observations ≤ Edges[i]; the last edge is +Inf and its count is
// the total. Edges are in the quantity's unit (seconds for latencies).
type Histogram struct {
	Edges  []float64
	Counts []float64
	// Sparse is true when the histogram lists both edges of every
	// non-empty bin of a fixed grid and nothing else (sources/loglin's
	// Cumulative, native histograms): no observation lies between a listed
	// edge and the next unlisted one, so the count at an unlisted edge is
	// the count at the nearest listed edge below it, and sparse histograms
	// merge over the union of their edges (analysis/histo.Merge) instead
	// of the intersection classic histograms need.
	Sparse bool
}

// LatencyNanos is latency v (seconds, ≥ 0) rounded to the nanosecond,
// halves up: floor(v·1e9 + 0.5), the rule every source of an aggregate's
// latency sums (AggBucket.TTFTSum) applies, so that their integer sums
// agree bit for bit. Values past about 9.2e9 s do not fit; sums holding
// them are meaningless, and a mean outside the histogram's range is not
// reported.
func LatencyNanos(v float64) int64 { return int64(math.Floor(v*1e9 + 0.5)) }

// HistogramOf is the cumulative histogram whose count at each edge is
// byEdge's (edges in seconds, +Inf among them); empty without a +Inf edge.
func HistogramOf(byEdge map[float64]float64) Histogram {
	edges := make([]float64, 0, len(byEdge))
	for e := range byEdge {
		edges = append(edges, e)
	}
	slices.Sort(edges)
	if len(edges) == 0 || !math.IsInf(edges[len(edges)-1], 1) {
		return Histogram{}
	}
	h := Histogram{Edges: edges, Counts: make([]float64, len(edges))}
	for i, e := range edges {
		h.Counts[i] = byEdge[e]
	}
	return h
}

// Total is the number of observations (the +Inf bucket).
func (h Histogram) Total() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// AggBucket holds one arm's increases over one time slice, summed over its
// replicas, as read from metrics (Prometheus queries or scrape pairs) rather
// than from per-request records. Counts are float64 because PromQL
// increase() extrapolates; a count that the source could not read is NaN.
type AggBucket struct {
	Start float64 // unix seconds, inclusive
	End   float64 // unix seconds, exclusive

	// Cache is the prefix-cache hit band of the bucket's requests when the
	// source split each stratum's counts by band (an aggregate of
	// per-request records under a policy with normalize.cache other than
	// none): "cache 0", "cache <50%", "cache >=50%" or "cache unknown", the
	// names of analysis/normalize.CacheBand. The latency histograms (and
	// their sums) are not split: a split stratum's slice has one bucket
	// with Cache "" holding them and no counts, and one per band holding
	// the counts and token sums with empty histograms — the bands cost a
	// few counters, not a histogram each. "" in every bucket when the
	// source did not split. A judge that does not stratify by cache sums a
	// stratum's buckets.
	Cache string

	Completed float64 // finished successfully (finish reason stop/length)
	Failed    float64 // finished with an error or timeout, or canceled by the server (sources.CountsFailed)
	Canceled  float64 // aborted by the client, or by someone the source does not name (vLLM's "abort")
	Rejected  float64 // never admitted; NaN when the engine does not count rejections

	// Good is the increase of a per-request "good" counter when the engine
	// exports one (joint SLO attainment is then exact); NaN otherwise. An
	// aggregate built from per-request records (Aggregate.Exact) counts it
	// at scan time under the policy's SLO for the bucket's class.
	Good float64

	// Retried counts offered requests that were a retry (attempt > 1);
	// NaN when the source does not say.
	Retried float64
	// ShortOutputs counts completions with fewer output tokens than the
	// policy's slo.min_output_tokens; NaN when the source does not say.
	ShortOutputs float64
	// OutputUnknown counts completions that gave no output length, whose
	// tokens OutputTokens therefore leaves out: a mean output length is
	// OutputTokens over Completed − OutputUnknown. 0 when every
	// completion's length is counted (metrics count tokens as a whole).
	OutputUnknown float64
	// PromptUnknown counts admitted requests that gave no prompt length,
	// whose tokens PromptTokens therefore leaves out: a mean prompt
	// length is PromptTokens over the admitted requests less these. 0
	// when every admitted request's length is counted.
	PromptUnknown float64

	TTFT  Histogram // seconds
	TPOT  Histogram // seconds per output token (vLLM request_time_per_output_token)
	E2E   Histogram // seconds
	Queue Histogram // seconds waiting before admission to a batch

	// TTFTSum, TPOTSum and E2ESum are the sums, in seconds, of the values
	// the TTFT, TPOT and E2E histograms count (the arm's latency mean's
	// numerators), each value rounded to the nanosecond and summed as an
	// integer, so that every source summing the same records in any order
	// gets the same bits. Set only when the aggregate's LatencySums is
	// true, meaningless otherwise.
	TTFTSum, TPOTSum, E2ESum float64

	PromptTokens float64 // increase of prompt tokens processed
	OutputTokens float64 // increase of generated tokens
	// OutputMax is the most output tokens one completion in the bucket
	// gave (0 when none gave a length). Set only by an aggregate of
	// per-request records (Aggregate.Exact); metrics count tokens as a
	// whole and leave it 0. A mean output length one completion sets is
	// not judged (analysis: heldByOneCompletion).
	OutputMax     float64
	PrefixHits    float64 // prefix-cache hit tokens (or blocks); NaN if unknown
	PrefixQueries float64 // prefix-cache queried tokens; NaN if unknown
	// GoodTokens sums the output tokens of the good requests (token
	// goodput's numerator); counted only when the aggregate's
	// GoodTokensCounted is true, meaningless otherwise.
	GoodTokens float64

	Replicas float64 // mean number of replicas reporting during the slice
	// Gauges averaged over the slice (NaN when absent): running and waiting
	// requests, KV-cache usage (0..1), GPU utilisation (0..1), GPU power
	// (watts), GPU memory used (bytes), cost (USD per hour, OpenCost).
	Running, Waiting, KVUsage, GPUUtil, GPUPowerW, GPUMemBytes, CostPerHour float64

	// Class is the request class this bucket's counts and histograms belong
	// to, when the metrics carry a class label; "" for the whole arm. An
	// aggregate with classes holds one bucket per (time slice, class),
	// ordered by Start then Class; gauges (which carry no class) are repeated
	// on every class's bucket of the same slice.
	Class string
}

// MaxStreamSlices is the most time slices an aggregate counted from
// per-request records keeps per arm (analysis.Aggregator, the ClickHouse
// source): 360, an hour of the default 10 s buckets. An arm whose
// arrivals span more is counted on slices twice as wide, as often as
// needed (20 s up to two hours, 40 s up to four, …), so that memory
// follows a bounded number of slices, not the run's length; both arms
// are then brought to the wider of their widths, so their slices pair.
const MaxStreamSlices = 360

// MaxClassLabels is the most distinct class labels (field class) one
// request log, or one arm of a column store, may carry: 32. Each label is a stratum the arms are
// compared within (with the policy class and the prefix-cache band), and
// the streaming judge keeps latency bins per stratum and time bucket: a
// field that holds a value per request (an id, a prompt) would compare
// nothing and grow memory with every request (300,000 distinct labels
// per arm ran out of 4 GB), and 32 labels spread at random over 1M
// requests per arm took the judge from 245 to 404 MB (64: 466 MB, 256:
// 1.1 GB). Under normalize.prompt_bands: all, where a label's prompt
// bands are strata too, 32 labels take 625 MiB (394 MiB without,
// `goodput bench`'s files with a label drawn per record), and four labels
// 352, 449 and 527 MiB at 1M, 5M and 10M per arm (221, 366 and 365
// without). A file with more is refused at the line that brings the 33rd
// (a column store's arm with more, on the first row past the cap).
const MaxClassLabels = 32

// MaxReplicas is the most distinct replica names an arm's records may
// carry for the judge to follow each replica: 512. Fleets are counted in
// replicas by the tens or hundreds; a field naming more is taken to carry
// something else (request, session or client ids), and per-replica state
// (spans, counts and TTFT medians per replica and slice, see
// ReplicaSpans) would grow with it past any memory bound. Past it the
// arm's records are judged as naming no replica (ReplicasUnnamed), with
// the warning TooManyReplicas, on every path alike.
const MaxReplicas = 512

// TooManyReplicas is the warning for an arm whose records name more than
// MaxReplicas replicas.
func TooManyReplicas() string {
	return fmt.Sprintf("the records name more than %d replicas (is the replica field a request, session or client id?): "+
		"judged as naming none, so load per replica-second, lost and warming replicas and the between-replica spread are not checked; "+
		"map the replica field to the serving instance", MaxReplicas)
}

// WithoutTooManyReplicas returns d itself when its records name at most
// MaxReplicas replicas (or none), else a copy of d whose records name
// none, with TooManyReplicas added to its warnings; d is left as it is.
func WithoutTooManyReplicas(d *Dataset) *Dataset {
	names := map[string]struct{}{}
	for i := range d.Requests {
		if n := d.Requests[i].Replica; n != "" {
			names[n] = struct{}{}
			if len(names) > MaxReplicas {
				break
			}
		}
	}
	if len(names) <= MaxReplicas {
		return d
	}
	out := *d
	out.Requests = make([]Request, len(d.Requests))
	for i, r := range d.Requests {
		r.Replica = ""
		out.Requests[i] = r
	}
	out.Warnings = append(append([]string{}, d.Warnings...), TooManyReplicas())
	return &out
}

// Aggregate is an arm's metrics-based data: time-bucketed increases. A
// Dataset carries either per-request records or an Aggregate.
type Aggregate struct {
	Profile string // engine profile used to read it, e.g. "vllm-v1"
	// Exact is true when the aggregate was built from per-request records
	// (request logs, benchmark files, a column store): counts and Good are
	// exact, histograms are log-linear (sources/loglin) and only bin width
	// bounds a quantile. False for metrics (Prometheus, scrapes).
	Exact   bool
	Step    float64     // bucket width, seconds
	Buckets []AggBucket // in time order
	// Users tallies the count gates per group of users over every record
	// counted, when the aggregate was built from per-request records
	// (UserTally); nil from metrics and column stores.
	Users *UserTally
	// GoodTokensCounted is true when every bucket's GoodTokens was counted
	// (per-request records); metrics cannot tell them.
	GoodTokensCounted bool
	// LatencySums is true when every bucket's TTFTSum, TPOTSum and E2ESum
	// were summed from the same observations as its histograms
	// (per-request records); metrics leave it false.
	LatencySums bool
	// AttemptKnown is true when some record counted gave its attempt (per-
	// request records only): a log that writes attempt only on retries
	// gives it on none when nothing was retried, so only when neither arm
	// gives it are retries taken as unreported (analysis).
	AttemptKnown bool
	// QualityChecked counts the completed requests whose record gives
	// quality_ok, QualityFailed those whose check failed (per-request
	// records only; 0 from metrics): a policy that does not judge quality
	// still does not pass a canary whose answers fail their checks more
	// often (analysis).
	QualityChecked, QualityFailed int64
	// Unverified counts, per SLO criterion (ttft, tpot, e2e, max_itl,
	// quality), the completed requests that lack the field it needs and
	// were counted as not good, and under ClassUnverified those whose
	// policy class a missing prompt or output length may have decided;
	// nil from metrics, which cannot tell.
	Unverified map[string]int64
	// Notes are facts the report must show (renamed metrics detected,
	// Prometheus infos, bucket edges that do not fall on an SLO threshold).
	Notes []string
	// Partial lists reasons the data may be incomplete: warnings in the
	// API's answers (partial responses of Thanos or Mimir, failed remote
	// reads). A judge never passes an arm whose aggregate has any.
	Partial []string
	// Replicas holds one track per replica series the source could tell
	// apart (nil when it cannot): the requests each replica finished per
	// time slice, for finding replicas lost, silent or missing mid-window.
	Replicas []ReplicaTrack
	// ReplicasUnnamed is true for records that name no replica
	// (ReplicaSpans.Tracks): each bucket's Replicas is then 1, a
	// denominator for its rates, not the deployment's size, and two arms'
	// load per replica-second or replica time cannot be compared by it.
	ReplicasUnnamed bool
	// ReplicaWarmups says, one line per cut, which replicas that entered
	// service after the arm's start had their own warm-up left out of this
	// aggregate (records scanned a second time without them), e.g.
	// `replica "r3" entered at 600s: cut its first 60s (median TTFT
	// 1.2s, then 0.31s)`; empty when nothing was cut.
	ReplicaWarmups []string
	// FirstArrival is the arm's earliest arrival, unix seconds, when the
	// aggregate was built from timed per-request records; 0 when unknown
	// (metrics). The first slice's seconds before it count nowhere, as
	// the request path's first bucket begins at the first arrival (and
	// its last slice ends at the run's end, EndLastSliceAt).
	FirstArrival float64
	// WarmupKept, when set, is the arm's own warm-up as decided on an
	// earlier aggregate of the same records, before replicas' own
	// warm-ups were left out of this one: the judge keeps that decision,
	// as the request path decides the arm's cut before the replicas'.
	WarmupKept *AggWarmup
}

// AggWarmup is an arm's warm-up decision (Aggregate.WarmupKept).
type AggWarmup struct {
	// From is the start of the arm's first analysed slice, unix seconds.
	From float64
	// Detail and Applied are the warm-up step as it was reported.
	Detail  string
	Applied bool
	// DriftAt is the slice at which TTFT still shifted after the cut; −1
	// when it did not.
	DriftAt int
	// LateSlowdown is true when the automatic rule refused a cut because
	// the slow part of the start began after a normal one (a stall, not
	// a warm-up): the attainment_dip guardrail then scans the start too.
	LateSlowdown bool
}

// ReplicaTrack is one replica's activity on its aggregate's time grid.
type ReplicaTrack struct {
	// Name identifies the replica: its series' labels other than the
	// arm's selector, sanitised, e.g. {instance="10.0.0.7:8000",pod="vllm-1"}.
	Name string
	// Series is the replica's full label set as read, the selector's
	// labels included, sorted and sanitised: two arms sharing a Series
	// read the same replica.
	Series string
	// Finished holds, per time slice (the aggregate's distinct bucket
	// starts, in order), the requests the replica finished; NaN where the
	// replica's counters had no samples in the slice.
	Finished []float64
	// InFlight holds, per time slice as Finished, the replica's requests
	// in flight at the slice's end: from metrics its requests running +
	// waiting, the last sample of each gauge in the slice (NaN where
	// either had none); from records the requests it admitted whose
	// arrival lies in or before the slice and whose end (arrival + E2E)
	// lies after it, those of unknown E2E left out
	// (ReplicaSpans.AddFlights; NaN outside the replica's span). Nil when
	// the source cannot tell (neither gauge, or no E2E in any record).
	InFlight []float64
	// TTFTMedian holds, per time slice as Finished, the median TTFT
	// (seconds) of the requests the replica completed with a known TTFT:
	// the upper edge of a log-linear bin 2^(4/256) wide that holds the
	// lower median, so at most 1.1% above it; NaN where it completed none. Nil when the source
	// cannot tell (metrics), so no replica warm-up can be found.
	TTFTMedian []float64
	// TPOTMedian holds, per time slice as Finished, the median TPOT
	// (seconds per token) of the requests the replica completed with a
	// known TPOT, on the same coarse bins as TTFTMedian: with it, how far
	// replicas' speeds differ all run (stats.BetweenReplicaLevels). Nil
	// when the source cannot tell (metrics).
	TPOTMedian []float64
	// TTFTTail and TPOTTail are the replica's requests beyond its arm's
	// tail per time slice (ReplicaTail); zero when the source cannot
	// tell (metrics).
	TTFTTail, TPOTTail ReplicaTail
	// Offered and Good hold, per time slice as Finished, the requests
	// the replica was sent that the aggregate judges (a replica's own
	// warm-up left out) and those of them that met their SLO: the
	// between-replica spread of attainment (stats.BetweenReplicas). NaN
	// outside the replica's span; nil when the source cannot tell
	// (metrics).
	Offered, Good []float64
	// TTFTHist and TPOTHist hold, per time slice as Finished, the
	// replica's own TTFT and TPOT histogram increases (seconds), where a
	// source of metrics reads each replica's bucket series: a judge
	// bounds each replica's good requests from them where Offered and
	// Good are nil, for the same between-replica spread. Nil when the
	// source did not read them (records, native histograms, an arm of
	// more than MaxReplicas replicas); a slice without samples holds an
	// empty histogram.
	TTFTHist, TPOTHist []Histogram
}

// ReplicaTailQuantile is the quantile (0.99) of an arm's latency whose
// exceedance per replica ReplicaTail counts.
const ReplicaTailQuantile = 0.99

// ReplicaTail is one replica's share of its arm's tail of one latency: per
// time slice (as ReplicaTrack.Finished), its completed requests with a
// known value (Known) and those of them above Edge (Over), Edge the
// arm's ReplicaTailQuantile of the values of every replica, pooled over
// the run (the upper edge of the coarse bin, 2^(4/256) wide, that holds
// it). How far replicas' shares above it differ all run is how far their
// tails differ, whether a replica is slower throughout or only in its
// tail. LogSlope is the arm's d log(quantile)/d(probability) at Edge
// (from the same pooled coarse bins, over the central 1% of probability
// around it), which turns a spread of shares into a spread of the log
// quantile. Nil slices when the source cannot tell.
type ReplicaTail struct {
	Edge, LogSlope float64
	Known, Over    []float64
}

// CostRecord is the expense of one arm (optionally one replica) over a time
// interval, in USD. Analyses prorate it uniformly over [Start, End).
type CostRecord struct {
	Start, End  float64 // unix seconds, Start < End
	Arm         Arm
	Replica     string // "" when the record covers the whole arm
	Accelerator float64
	Host        float64
	Network     float64
	IdleReserve float64
	Line        int    // line in its file, for messages
	Path        string // file it came from
}

// Total is the sum of the components.
func (c CostRecord) Total() float64 { return c.Accelerator + c.Host + c.Network + c.IdleReserve }

// ClassUnverified is the Unverified key of completed requests whose
// policy class a missing prompt or output length may have decided: a class
// rule they meet on every field they give reads a length they do not.
const ClassUnverified = "class"

// UnverifiedNote is the report's line for n completed requests under
// Unverified key k.
func UnverifiedNote(k string, n int64) string {
	if k == ClassUnverified {
		return fmt.Sprintf("%d completed requests lack a prompt or output length that a policy class rule reads (prompt_tokens, output_tokens), so their class, and the SLO they were judged by, was decided without it", n)
	}
	return fmt.Sprintf("%d completed requests lack the field needed to check the %s criterion and were counted as not good", n, k)
}

// EndLastSliceAt ends an aggregate built from per-request records where
// the arm's run ends, end (unix seconds): its last arrival, or the end of
// its declared duration when later. Every bucket of the last slice (those
// sharing the last bucket's Start) gets End = end, no earlier than its
// Start. The request path's last bucket runs from its start to the arm's
// end, not to the grid's next boundary, and a fragment past the last
// boundary without arrivals (a declared duration's last seconds) joins
// the bucket before it; a full last slice counted up to one slice of
// seconds, and of replica-seconds, in which nothing arrived, so the two
// paths read different rates (an arm of 300 requests over 95 s: 1.50
// against 1.58 requests per replica-second). buckets are in time order;
// a NaN end or no buckets change nothing.
func EndLastSliceAt(buckets []AggBucket, end float64) {
	if len(buckets) == 0 || math.IsNaN(end) {
		return
	}
	start := buckets[len(buckets)-1].Start
	for i := len(buckets) - 1; i >= 0 && buckets[i].Start == start; i-- {
		buckets[i].End = math.Max(end, buckets[i].Start)
	}
}
