// Package engines maps goodput's canonical quantities (TTFT, TPOT, E2E and
// queue histograms, request outcomes, token and prefix-cache counters,
// scheduler and GPU gauges, hourly cost) to the metric names each inference
// engine exports: vLLM V1, vLLM V0 (older names), SGLang, Hugging Face TGI,
// NVIDIA Triton (core and TensorRT-LLM backend), trtllm-serve, plus the DCGM
// exporter and OpenCost as optional extras. Both metrics-based sources —
// the Prometheus adapter and the scrape-file reader — resolve names through
// the same profiles, so an engine upgrade that renames a metric is handled in
// one place.
//
// Names are exposed sample names as a scraper sees them: counters include
// their `_total` suffix when the engine's client library appends one;
// histograms are given by family name (the `_bucket`, `_sum` and `_count`
// series follow).
package engines

import (
	"fmt"
	"sort"
	"strings"
)

// Quantity is a canonical quantity a profile can supply.
type Quantity string

// Histogram quantities (values in seconds after Candidate.Scale).
const (
	TTFT  Quantity = "ttft"  // time to first token
	TPOT  Quantity = "tpot"  // per-request time per output token (request-weighted)
	E2E   Quantity = "e2e"   // end-to-end request latency
	Queue Quantity = "queue" // time waiting before admission to a batch
)

// Counter quantities (increases over a slice).
const (
	PromptTokens  Quantity = "prompt_tokens"
	OutputTokens  Quantity = "output_tokens"
	PrefixHits    Quantity = "prefix_hits"
	PrefixQueries Quantity = "prefix_queries"
	// Good counts requests that met their SLO, when a server exports such a
	// counter; joint attainment is then exact.
	Good Quantity = "good"
)

// Gauge quantities (averaged over a slice, then combined over replicas as
// Candidate.Combine says).
const (
	Running     Quantity = "running"       // requests in batches
	Waiting     Quantity = "waiting"       // requests queued
	KVUsage     Quantity = "kv_usage"      // KV-cache usage, fraction 0..1
	GPUUtil     Quantity = "gpu_util"      // GPU utilisation, fraction 0..1
	GPUPowerW   Quantity = "gpu_power_w"   // GPU power, watts
	GPUMemBytes Quantity = "gpu_mem_bytes" // GPU memory used, bytes
)

// Kind says how a quantity is read.
type Kind uint8

// Kinds of quantities.
const (
	KindHistogram Kind = iota + 1
	KindCounter
	KindGauge
)

// KindOf returns the kind of a canonical quantity.
func KindOf(q Quantity) Kind {
	switch q {
	case TTFT, TPOT, E2E, Queue:
		return KindHistogram
	case PromptTokens, OutputTokens, PrefixHits, PrefixQueries, Good:
		return KindCounter
	}
	return KindGauge
}

// Histograms, Counters and Gauges list the canonical quantities of each kind
// in a fixed order (used for deterministic query building and output).
func Histograms() []Quantity { return []Quantity{TTFT, TPOT, E2E, Queue} }

// Counters lists the canonical counter quantities in a fixed order.
func Counters() []Quantity {
	return []Quantity{PromptTokens, OutputTokens, PrefixHits, PrefixQueries, Good}
}

// Gauges lists the canonical gauge quantities in a fixed order.
func Gauges() []Quantity {
	return []Quantity{Running, Waiting, KVUsage, GPUUtil, GPUPowerW, GPUMemBytes}
}

// Combine says how per-replica gauge values are combined into one arm value.
type Combine uint8

// Gauge combination rules.
const (
	CombineSum Combine = iota + 1 // add replicas (requests running, watts, bytes)
	CombineAvg                    // average replicas (fractions such as KV usage)
)

// Candidate is one metric name that can supply a quantity.
type Candidate struct {
	// Name is the exposed sample name for counters and gauges, the family
	// name (without `_bucket`) for histograms. For a counter read from a
	// histogram's `_sum` series (TGI token counts), Name ends in `_sum`.
	Name string
	// Scale converts the metric's unit to the canonical one (seconds,
	// fraction 0..1, bytes, watts): 0.001 for milliseconds, 0.01 for
	// percent, 1048576 for MiB. 0 means 1. For histograms it scales the
	// bucket edges.
	Scale float64
	// Match holds fixed label constraints that select the relevant series
	// of a multi-purpose family, e.g. request_type="active".
	Match map[string]string
	// Combine applies to gauges only; 0 means CombineSum.
	Combine Combine
	// Newer is set on an older name: the name that replaced it. Reading the
	// older name is reported in the aggregate's notes.
	Newer string
	// Note is shown whenever this candidate is used (semantic caveats).
	Note string
}

// Factor returns the multiplier from the metric's unit to the canonical unit.
func (c Candidate) Factor() float64 {
	if c.Scale == 0 {
		return 1
	}
	return c.Scale
}

// Outcome is a request-accounting outcome a counter can contribute to.
type Outcome uint8

// Outcomes, matching sources.AggBucket's Completed/Failed/Canceled/Rejected.
const (
	Completed Outcome = iota + 1
	Failed
	Canceled
	Rejected
)

// Outcomes lists the outcomes in report order.
func Outcomes() []Outcome { return []Outcome{Completed, Failed, Canceled, Rejected} }

// String returns the outcome's report name.
func (o Outcome) String() string {
	switch o {
	case Completed:
		return "completed"
	case Failed:
		return "failed"
	case Canceled:
		return "canceled"
	case Rejected:
		return "rejected"
	}
	return fmt.Sprintf("outcome(%d)", uint8(o))
}

// OutcomeCounter is a counter of finished (or refused) requests. When Label
// is set its values are mapped through Reasons; a value not listed counts as
// Default. Minus, when set, is an outcome this counter's increase is also
// subtracted from (SGLang counts aborted requests inside its finished
// total).
type OutcomeCounter struct {
	Name    string
	Label   string
	Reasons map[string]Outcome
	Default Outcome
	Minus   Outcome
}

// Outcomes returns the outcomes this counter can contribute to, sorted.
func (oc OutcomeCounter) Outcomes() []Outcome {
	set := map[Outcome]bool{oc.Default: true}
	for _, o := range oc.Reasons {
		set[o] = true
	}
	var out []Outcome
	for _, o := range Outcomes() {
		if set[o] {
			out = append(out, o)
		}
	}
	return out
}

// Classify returns the outcome a label value maps to.
func (oc OutcomeCounter) Classify(value string) Outcome {
	if o, ok := oc.Reasons[value]; ok {
		return o
	}
	return oc.Default
}

// Profile maps canonical quantities to one engine generation's names.
type Profile struct {
	Name     string // e.g. "vllm-v1"
	Engine   string // e.g. "vllm": what --profile accepts
	Prefixes []string
	// Outcomes are the counters that give request accounting. At least one
	// must be present for an arm to be read.
	Outcomes []OutcomeCounter
	// Metrics lists candidates per quantity, preferred first.
	Metrics map[Quantity][]Candidate
	// Notes are caveats shown whenever the profile is used.
	Notes []string
}

// Extras are the optional GPU (DCGM exporter, Triton's own GPU gauges)
// candidates that are appended to every profile; they are shown in the
// report and never gate on their own.
func extras() map[Quantity][]Candidate {
	return map[Quantity][]Candidate{
		GPUUtil: {
			{Name: "DCGM_FI_DEV_GPU_UTIL", Scale: 0.01, Combine: CombineAvg},
			{Name: "nv_gpu_utilization", Combine: CombineAvg},
		},
		GPUPowerW: {
			{Name: "DCGM_FI_DEV_POWER_USAGE"},
			{Name: "nv_gpu_power_usage"},
		},
		GPUMemBytes: {
			{Name: "DCGM_FI_DEV_FB_USED", Scale: 1 << 20},
			{Name: "nv_gpu_memory_used_bytes"},
		},
	}
}

// OpenCost names the OpenCost metrics whose product gives an arm's hourly
// cost: Σ over the arm's containers of GPUs allocated × the hourly price of
// one GPU on the container's node (joined on Join). Prices are in the
// currency OpenCost is configured with, per hour.
type OpenCost struct {
	Allocation string // per container, labels namespace, pod, container, node
	GPUPrice   string // per node, price of one GPU per hour
	Join       string // label joining the two
}

// DefaultOpenCost returns the OpenCost names read for CostPerHour.
func DefaultOpenCost() OpenCost {
	return OpenCost{Allocation: "container_gpu_allocation", GPUPrice: "node_gpu_hourly_cost", Join: "node"}
}

func vllmReasons() map[string]Outcome {
	return map[string]Outcome{
		"stop": Completed, "length": Completed, "repetition": Completed,
		"abort": Canceled, "error": Failed,
	}
}

func vllmV1() Profile {
	return Profile{
		Name: "vllm-v1", Engine: "vllm", Prefixes: []string{"vllm:"},
		Outcomes: []OutcomeCounter{{Name: "vllm:request_success_total", Label: "finished_reason",
			Reasons: vllmReasons(), Default: Failed}},
		Metrics: map[Quantity][]Candidate{
			TTFT: {{Name: "vllm:time_to_first_token_seconds"}},
			TPOT: {{Name: "vllm:request_time_per_output_token_seconds"}},
			E2E:  {{Name: "vllm:e2e_request_latency_seconds"}},
			Queue: {{Name: "vllm:request_queue_time_seconds"},
				{Name: "vllm:time_in_queue_requests", Newer: "vllm:request_queue_time_seconds"}},
			PromptTokens: {{Name: "vllm:prompt_tokens_total"}},
			OutputTokens: {{Name: "vllm:generation_tokens_total"}},
			PrefixHits: {{Name: "vllm:prefix_cache_hits_total"},
				{Name: "vllm:gpu_prefix_cache_hits_total", Newer: "vllm:prefix_cache_hits_total"}},
			PrefixQueries: {{Name: "vllm:prefix_cache_queries_total"},
				{Name: "vllm:gpu_prefix_cache_queries_total", Newer: "vllm:prefix_cache_queries_total"}},
			Running: {{Name: "vllm:num_requests_running"}},
			Waiting: {{Name: "vllm:num_requests_waiting"}},
			KVUsage: {{Name: "vllm:kv_cache_usage_perc", Combine: CombineAvg},
				{Name: "vllm:gpu_cache_usage_perc", Combine: CombineAvg, Newer: "vllm:kv_cache_usage_perc"}},
		},
		Notes: []string{
			"vLLM counts no rejected requests (rejected is unknown); aborted requests count as canceled",
			"vLLM TTFT and E2E are measured from the API server's arrival time (server-side, excludes network)",
		},
	}
}

func vllmV0() Profile {
	return Profile{
		Name: "vllm-v0", Engine: "vllm", Prefixes: []string{"vllm:"},
		Outcomes: []OutcomeCounter{{Name: "vllm:request_success_total", Label: "finished_reason",
			Reasons: vllmReasons(), Default: Failed}},
		Metrics: map[Quantity][]Candidate{
			TTFT: {{Name: "vllm:time_to_first_token_seconds"}},
			E2E:  {{Name: "vllm:e2e_request_latency_seconds"}},
			Queue: {{Name: "vllm:request_queue_time_seconds"},
				{Name: "vllm:time_in_queue_requests", Newer: "vllm:request_queue_time_seconds"}},
			PromptTokens: {{Name: "vllm:prompt_tokens_total"}},
			OutputTokens: {{Name: "vllm:generation_tokens_total"}},
			Running:      {{Name: "vllm:num_requests_running"}},
			Waiting:      {{Name: "vllm:num_requests_waiting"}},
			KVUsage: {{Name: "vllm:gpu_cache_usage_perc", Combine: CombineAvg, Newer: "vllm:kv_cache_usage_perc"},
				{Name: "vllm:kv_cache_usage_perc", Combine: CombineAvg}},
		},
		Notes: []string{
			"vLLM V0 exports no per-request TPOT histogram (vllm:time_per_output_token_seconds is per token): TPOT attainment is unknown",
			"vLLM V0 exports a prefix-cache hit-rate gauge, not hit/query counters: prefix-cache counts are unknown",
			"vLLM counts no rejected requests (rejected is unknown); aborted requests count as canceled",
		},
	}
}

func sglang() Profile {
	return Profile{
		Name: "sglang", Engine: "sglang", Prefixes: []string{"sglang:"},
		Outcomes: []OutcomeCounter{
			{Name: "sglang:num_requests_total", Default: Completed},
			{Name: "sglang:num_aborted_requests_total", Default: Canceled, Minus: Completed},
		},
		Metrics: map[Quantity][]Candidate{
			TTFT:         {{Name: "sglang:time_to_first_token_seconds"}},
			E2E:          {{Name: "sglang:e2e_request_latency_seconds"}},
			Queue:        {{Name: "sglang:queue_time_seconds"}},
			PromptTokens: {{Name: "sglang:prompt_tokens_total"}},
			OutputTokens: {{Name: "sglang:generation_tokens_total"}},
			PrefixHits:   {{Name: "sglang:cached_tokens_total"}},
			// prompt tokens are the tokens looked up in the radix cache
			PrefixQueries: {{Name: "sglang:prompt_tokens_total"}},
			Running:       {{Name: "sglang:num_running_reqs"}},
			Waiting:       {{Name: "sglang:num_queue_reqs"}},
			KVUsage:       {{Name: "sglang:token_usage", Combine: CombineAvg}},
		},
		Notes: []string{
			"SGLang exports no per-request TPOT histogram (inter_token_latency_seconds is token-weighted): TPOT attainment is unknown",
			"SGLang has no failure counter: failed is unknown; completed = finished − aborted",
			"SGLang scheduler gauges are per tensor-parallel rank: running/waiting are summed over every rank reporting",
		},
	}
}

func tgi() Profile {
	return Profile{
		Name: "tgi", Engine: "tgi", Prefixes: []string{"tgi_"},
		Outcomes: []OutcomeCounter{
			{Name: "tgi_request_success", Default: Completed},
			{Name: "tgi_request_failure", Label: "err", Default: Failed,
				Reasons: map[string]Outcome{"validation": Rejected, "overloaded": Rejected, "template": Rejected}},
		},
		Metrics: map[Quantity][]Candidate{
			TPOT: {{Name: "tgi_request_mean_time_per_token_duration",
				Note: "TGI's per-token time divides the whole inference time (prefill included) by the generated tokens: it is larger than TPOT"}},
			E2E:          {{Name: "tgi_request_duration"}},
			Queue:        {{Name: "tgi_request_queue_duration"}},
			PromptTokens: {{Name: "tgi_request_input_length_sum"}},
			OutputTokens: {{Name: "tgi_request_generated_tokens_sum"}},
			Running:      {{Name: "tgi_batch_current_size"}},
			Waiting:      {{Name: "tgi_queue_size"}},
		},
		Notes: []string{
			"TGI exports no TTFT histogram: TTFT attainment is unknown",
			"TGI failures with err=validation, template or overloaded count as rejected (never admitted)",
		},
	}
}

func triton() Profile {
	return Profile{
		Name: "triton", Engine: "triton", Prefixes: []string{"nv_inference_", "nv_trt_llm_"},
		Outcomes: []OutcomeCounter{
			{Name: "nv_inference_request_success", Default: Completed},
			{Name: "nv_inference_request_failure", Label: "reason", Default: Failed,
				Reasons: map[string]Outcome{"REJECTED": Rejected, "CANCELED": Canceled}},
		},
		Metrics: map[Quantity][]Candidate{
			TTFT: {{Name: "nv_inference_first_response_histogram_ms", Scale: 0.001,
				Note: "Triton's first-response histogram (milliseconds, converted) times the first streamed chunk"}},
			Running: {{Name: "nv_trt_llm_request_metrics", Match: map[string]string{"request_type": "active"}}},
			Waiting: {{Name: "nv_trt_llm_request_metrics", Match: map[string]string{"request_type": "waiting"}},
				{Name: "nv_inference_pending_request_count"}},
			KVUsage: {{Name: "nv_trt_llm_kv_cache_block_metrics", Match: map[string]string{"kv_cache_block_type": "fraction"},
				Combine: CombineAvg}},
		},
		Notes: []string{
			"Triton counts a batched request once; it exports no TPOT, E2E or queue histogram (only cumulative microsecond counters)",
		},
	}
}

func trtllmServe() Profile {
	return Profile{
		Name: "trtllm-serve", Engine: "triton", Prefixes: []string{"trtllm_"},
		Outcomes: []OutcomeCounter{
			{Name: "trtllm_request_success_total", Label: "finished_reason", Reasons: vllmReasons(), Default: Failed},
			{Name: "trtllm_request_error_total", Default: Failed},
		},
		Metrics: map[Quantity][]Candidate{
			TTFT: {{Name: "trtllm_time_to_first_token_seconds"}},
			TPOT: {{Name: "trtllm_time_per_output_token_seconds",
				Note: "trtllm-serve's time per output token is not verified to be per-request (it may be per step)"}},
			E2E:          {{Name: "trtllm_e2e_request_latency_seconds"}},
			Queue:        {{Name: "trtllm_request_queue_time_seconds"}},
			PromptTokens: {{Name: "trtllm_prompt_tokens_total"}},
			OutputTokens: {{Name: "trtllm_generation_tokens_total"}},
			Running:      {{Name: "trtllm_num_requests_running"}},
			Waiting:      {{Name: "trtllm_num_requests_waiting"}},
			KVUsage:      {{Name: "trtllm_kv_cache_utilization", Combine: CombineAvg}},
		},
	}
}

// All returns every profile, in detection preference order.
func All() []Profile {
	ps := []Profile{vllmV1(), vllmV0(), sglang(), tgi(), triton(), trtllmServe()}
	for i := range ps {
		for q, cs := range extras() {
			ps[i].Metrics[q] = append(ps[i].Metrics[q], cs...)
		}
	}
	return ps
}

// ByName returns the profile with the given Name (e.g. "vllm-v0").
func ByName(name string) (Profile, bool) {
	for _, p := range All() {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// EngineNames lists what --profile accepts besides "auto".
func EngineNames() []string { return []string{"vllm", "sglang", "tgi", "triton"} }

// AllNames returns every metric name any profile may read (sample names for
// counters and gauges, family names for histograms), sorted and unique.
// Outcome counters are included. Sources use it to limit discovery queries.
func AllNames() []string {
	set := map[string]bool{}
	for _, p := range All() {
		for _, oc := range p.Outcomes {
			set[oc.Name] = true
		}
		for _, cs := range p.Metrics {
			for _, c := range cs {
				set[c.Name] = true
			}
		}
	}
	oc := DefaultOpenCost()
	set[oc.Allocation], set[oc.GPUPrice] = true, true
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// SeriesName returns the sample name to look for when testing whether a
// candidate exists: the `_bucket` series for histograms, the name itself
// otherwise.
func SeriesName(q Quantity, c Candidate) string {
	if KindOf(q) == KindHistogram {
		return c.Name + "_bucket"
	}
	return c.Name
}

// Resolved is a profile with one candidate chosen per quantity for a given
// set of available sample names.
type Resolved struct {
	Profile  Profile
	Outcomes []OutcomeCounter       // the outcome counters present
	Metrics  map[Quantity]Candidate // the chosen candidate per available quantity
	Notes    []string               // renamed metrics used, caveats
}

// Known reports whether an outcome can be counted with the present counters.
func (r Resolved) Known(o Outcome) bool {
	for _, oc := range r.Outcomes {
		for _, x := range oc.Outcomes() {
			if x == o {
				return true
			}
		}
	}
	return false
}

// Resolve picks, for each quantity, the first candidate whose series exists
// (have reports presence by exposed sample name). It fails when none of the
// profile's outcome counters exist: without request accounting there is
// nothing to judge.
func Resolve(p Profile, have func(name string) bool) (Resolved, error) {
	r := Resolved{Profile: p, Metrics: map[Quantity]Candidate{}}
	for _, oc := range p.Outcomes {
		if have(oc.Name) {
			r.Outcomes = append(r.Outcomes, oc)
		}
	}
	if len(r.Outcomes) == 0 {
		names := make([]string, len(p.Outcomes))
		for i, oc := range p.Outcomes {
			names[i] = oc.Name
		}
		return r, fmt.Errorf("profile %s: no request counter found (looked for %s)", p.Name, strings.Join(names, ", "))
	}
	r.Notes = append(r.Notes, p.Notes...)
	qs := make([]Quantity, 0, len(p.Metrics))
	for q := range p.Metrics {
		qs = append(qs, q)
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i] < qs[j] })
	for _, q := range qs {
		for _, c := range p.Metrics[q] {
			if !have(SeriesName(q, c)) {
				continue
			}
			r.Metrics[q] = c
			if c.Newer != "" {
				r.Notes = append(r.Notes, fmt.Sprintf("%s read from %s (older name of %s)", q, c.Name, c.Newer))
			}
			if c.Note != "" {
				r.Notes = append(r.Notes, c.Note)
			}
			break
		}
	}
	return r, nil
}

// Detect chooses the profile that fits a set of available sample names. For
// vLLM it tells V1 from V0 by names only the newer engine exports. engine
// restricts the choice ("" or "auto" = any; otherwise one of EngineNames).
func Detect(names []string, engine string) (Profile, error) {
	if engine == "auto" {
		engine = ""
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	best, bestScore := Profile{}, 0
	for _, p := range All() {
		if engine != "" && p.Engine != engine {
			continue
		}
		score := 0
		for _, oc := range p.Outcomes {
			if have[oc.Name] {
				score += 10
			}
		}
		if score == 0 {
			continue
		}
		for q, cs := range p.Metrics {
			for _, c := range cs {
				if have[SeriesName(q, c)] && hasPrefix(c.Name, p.Prefixes) {
					score++
				}
			}
		}
		if p.Name == "vllm-v1" || p.Name == "vllm-v0" {
			v1 := false
			for _, n := range []string{"vllm:inter_token_latency_seconds_bucket", "vllm:kv_cache_usage_perc",
				"vllm:request_time_per_output_token_seconds_bucket", "vllm:prefix_cache_queries_total",
				"vllm:gpu_prefix_cache_queries_total", "vllm:iteration_tokens_total_bucket"} {
				v1 = v1 || have[n]
			}
			if v1 != (p.Name == "vllm-v1") {
				continue
			}
		}
		if score > bestScore {
			best, bestScore = p, score
		}
	}
	if bestScore == 0 {
		want := "any supported engine (vLLM, SGLang, TGI, Triton, trtllm-serve)"
		if engine != "" {
			want = engine
		}
		return Profile{}, fmt.Errorf("no request counters of %s found", want)
	}
	return best, nil
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ClassLabel is the label that carries a request's class when metrics are
// broken down by class; counts and histograms are then kept per class.
const ClassLabel = "class"

// ArmLabels are labels whose value "baseline" or "canary" names the arm of
// a series in a file that holds both arms (the simulator's metrics.om).
func ArmLabels() []string { return []string{"deployment", "arm"} }
