// Package sim is goodput's fleet simulator: a deterministic, seeded
// discrete-event simulation of an LLM serving fleet with a baseline and a
// canary arm side by side. It produces per-request records (the native
// request log of DESIGN.md §3), per-replica engine and GPU metrics sampled
// like a Prometheus scrape, and per-interval cost records — data with known
// ground truth for checking the judge, and a what-if tool for capacity
// planning.
//
// The model: requests arrive as a non-homogeneous Poisson process (bursts,
// schedules, slow drift, AR(1) load modulation) split between the arms; a
// router sends each to a replica that runs continuous batching with a
// per-step time model, a KV-block budget, a prefix cache, warm-up after
// start, and declared failures; clients time out, cancel and retry with
// backoff. Everything is driven by math/rand/v2 PCG streams derived from the
// seed, so the same scenario and seed give byte-identical output.
package sim

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/goodput-dev/goodput/sources"
)

// DefaultStart returns the window start used when a scenario sets none:
// 2026-01-01T00:00:00Z. Timestamps in every output are unix seconds counted
// on from the window start.
func DefaultStart() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// Scenario is a complete simulation setup. Scenarios are usually parsed from
// YAML (ParseScenario, Builtin): the `fleet:` block describes the baseline
// arm and the default for the canary, and the `canary:` block overrides any
// of those keys for the canary arm. Programmatic callers start from Builtin
// and change fields; Run validates.
type Scenario struct {
	Name        string
	Description string
	// Start is the window start (wall clock of the first instant simulated).
	Start time.Time
	// Duration is the default window length; Run's duration argument
	// overrides it. Default 15 min.
	Duration time.Duration
	// SampleInterval is the metrics scrape interval. Default 15 s.
	SampleInterval time.Duration
	// CostInterval is the length of one cost record. Default 1 min.
	CostInterval time.Duration
	// Model is the model_name label of the engine metrics. Default "sim-llm".
	Model string
	// SLO is used only by the simulator's own summary (goodput per minute);
	// the judge applies its policy's SLO.
	SLO     SLO
	Traffic Traffic
	Client  Client
	// Baseline and Canary are the two arms' fleets (YAML: `fleet:` and the
	// `canary:` overlay).
	Baseline ArmSpec
	Canary   ArmSpec
	// Failures are declared replica failures and restarts.
	Failures []Failure
	// Ranges are parameters drawn afresh for every replicate of a
	// calibration (Draw); Run itself uses the values as written.
	Ranges []Range
}

// SLO is a per-request success criterion for the summary's goodput.
type SLO struct {
	TTFT time.Duration `yaml:"ttft"` // time to first token limit; default 1 s
	TPOT time.Duration `yaml:"tpot"` // time per output token limit; default 80 ms
	// Classes overrides the limits for requests of the named traffic
	// classes (a zero limit keeps the default).
	Classes map[string]ClassSLO `yaml:"classes"`
}

// ClassSLO is a per-class override of the summary SLO.
type ClassSLO struct {
	TTFT time.Duration `yaml:"ttft"`
	TPOT time.Duration `yaml:"tpot"`
}

// Traffic is the arrival process offered to the whole service (both arms).
// The instantaneous total rate is
//
//	rate(t) = base(t) · burst(t) · (1 + drift.amplitude·sin(2πt/drift.period)) · exp(ar1(t) − σ²/2)
//
// where base(t) is Rate or the piecewise-linear Schedule, and burst(t)
// raises the rate to a burst's Rate (or multiplies by its Factor), with
// linear ramps at both ends.
type Traffic struct {
	// Rate is the total offered first-attempt rate, requests/s, summed over
	// both arms. Ignored when Schedule is set. Default 20.
	Rate float64 `yaml:"rate"`
	// Schedule is a piecewise-linear base rate (ramps, steps): before the
	// first point the first rate holds, after the last the last.
	Schedule []RatePoint `yaml:"schedule"`
	Bursts   []Burst     `yaml:"bursts"`
	Drift    Drift       `yaml:"drift"`
	AR1      AR1         `yaml:"ar1"`
	// CanaryShare is the fraction of traffic sent to the canary, in (0, 1).
	// Default 0.5.
	CanaryShare float64 `yaml:"canary_share"`
	// Split is "independent" (default: each arm draws its own Poisson stream
	// from the same rate function) or "mirrored" (both arms receive the
	// same first-attempt sequence; needs canary_share 0.5).
	Split string `yaml:"split"`
	// Classes are the request classes; weights need not sum to 1. Default:
	// "chat" (85%, ~600-token prompts, ~180-token outputs, 16 shared
	// system prompts) and "long" (15%, ~6000-token prompts).
	Classes []Class `yaml:"classes"`
	// Users, when Count > 0, are who send the requests (see Users).
	Users Users `yaml:"users"`
}

// Users model who sends the requests: each first attempt comes from one
// of Count users, drawn uniformly, whose prompts and answers are
// exp(σ·N(0,1)) times what the request's class draws (PromptSigma and
// OutputSigma on the log scale, 0 = no difference; within the class's
// min and max). By default each arm serves users of its own (a sticky
// router: a cookie or a hash of a user header keeps a user on one arm);
// Shared makes both arms serve the same users, alike in both (each
// request routed anywhere). The logs name each request's user (user).
type Users struct {
	Count       int     `yaml:"count"`
	Shared      bool    `yaml:"shared"`
	PromptSigma float64 `yaml:"prompt_sigma"`
	OutputSigma float64 `yaml:"output_sigma"`
}

// RatePoint is one point of a rate schedule.
type RatePoint struct {
	At   time.Duration `yaml:"at"`   // offset from the window start
	Rate float64       `yaml:"rate"` // total requests/s
}

// Burst raises the arrival rate for a while.
type Burst struct {
	Start    time.Duration `yaml:"start"`    // offset from the window start
	Duration time.Duration `yaml:"duration"` // including both ramps
	// Ramp is the length of the linear ramp up at the start and down at the
	// end (default 0: a step).
	Ramp time.Duration `yaml:"ramp"`
	// Rate is the total rate during the burst (requests/s); or Factor
	// multiplies the base rate. Exactly one must be set.
	Rate   float64 `yaml:"rate"`
	Factor float64 `yaml:"factor"`
}

// Drift is a slow sinusoidal change of the rate.
type Drift struct {
	Amplitude float64       `yaml:"amplitude"` // relative, in [0, 1)
	Period    time.Duration `yaml:"period"`
}

// AR1 modulates the log rate with a stationary AR(1) process (an
// Ornstein-Uhlenbeck process sampled every second): slowly varying load
// that makes neighbouring minutes correlated. The same path drives both arms.
type AR1 struct {
	Sigma float64       `yaml:"sigma"` // stationary standard deviation of the log rate
	Tau   time.Duration `yaml:"tau"`   // correlation time
}

// Class is a request class: its share of traffic and length distributions.
type Class struct {
	Name   string  `yaml:"name"`
	Weight float64 `yaml:"weight"`
	// PromptTokens and OutputTokens are length distributions in tokens. An
	// output that reaches OutputTokens.Max finishes with reason "length".
	PromptTokens Dist   `yaml:"prompt_tokens"`
	OutputTokens Dist   `yaml:"output_tokens"`
	Prefix       Prefix `yaml:"prefix"`
}

// Prefix declares prefix-sharing groups (system prompts, few-shot
// templates): each request belongs to one of Groups groups (Zipf-distributed
// popularity with exponent Zipf, 0 = uniform), and the first Tokens tokens of
// its prompt are shared with its group.
type Prefix struct {
	Groups int     `yaml:"groups"`
	Tokens int     `yaml:"tokens"`
	Zipf   float64 `yaml:"zipf"`
}

// Dist is a token-length distribution. Kind is one of:
//
//	constant     Value
//	uniform      integers in [Min, Max]
//	exponential  ceil of an exponential with mean Mean (geometric)
//	lognormal    Median·exp(Sigma·N(0,1)), rounded
//
// Samples are clamped to [Min, Max] (Min defaults to 1; Max 0 = no cap).
type Dist struct {
	Kind   string  `yaml:"dist"`
	Value  float64 `yaml:"value"`
	Mean   float64 `yaml:"mean"`
	Median float64 `yaml:"median"`
	Sigma  float64 `yaml:"sigma"`
	Min    int     `yaml:"min"`
	Max    int     `yaml:"max"`
}

// Client is the client behaviour: timeouts and retries.
type Client struct {
	// TTFTTimeout: the client cancels when no first token has arrived after
	// this long (0 = never). Canceled requests have status canceled.
	TTFTTimeout time.Duration `yaml:"ttft_timeout"`
	// Timeout: the client cancels when the response has not finished after
	// this long (0 = never).
	Timeout time.Duration `yaml:"timeout"`
	Retry   Retry         `yaml:"retry"`
}

// Retry is the client's retry policy. Every retry is a new offered request
// with attempt > 1.
type Retry struct {
	// MaxAttempts counts the first try: 1 = no retries (the default).
	MaxAttempts int `yaml:"max_attempts"`
	// Backoff before the second attempt; later attempts multiply it by
	// Multiplier (default 2). Jitter in [0, 1] spreads each delay uniformly
	// over ±Jitter of its value.
	Backoff    time.Duration `yaml:"backoff"`
	Multiplier float64       `yaml:"multiplier"`
	Jitter     float64       `yaml:"jitter"`
	// On lists the outcomes that are retried: any of rejected, canceled,
	// error, timeout. Default: all four.
	On []string `yaml:"on"`
}

// ArmSpec is one arm's fleet: replicas, scheduler, step-time model and
// budgets, the knobs of a change under test, GPU and cost rates.
type ArmSpec struct {
	// Replicas is the number of replicas of the arm, 1–1000. Default 4.
	Replicas int `yaml:"replicas"`
	// Router: "least-loaded" (default; each replica has its own queue and a
	// request joins the replica with the fewest waiting+running),
	// "shared-queue" (one gateway queue; a replica pulls when it has room)
	// or "random" (each request to a live replica picked at random, as a
	// hash or a random load balancer does: each replica queues alone).
	Router string `yaml:"router"`
	// Scheduler: "chunked" (default; decodes first, then prefill chunks in
	// the token budget) or "fcfs" (whole prefills run in prefill-only steps
	// that pause decoding, as engines without chunked prefill do).
	Scheduler string `yaml:"scheduler"`
	// MaxBatch is the most requests in a batch (vLLM max_num_seqs). Default 128.
	MaxBatch int `yaml:"max_batch"`
	// MaxBatchedTokens is the per-step token budget (vLLM
	// max_num_batched_tokens). Default 2048.
	MaxBatchedTokens int `yaml:"max_batched_tokens"`
	// QueueLimit is the most waiting requests per replica (shared-queue:
	// per live replica); a request beyond it is rejected. 0 = unlimited.
	QueueLimit int `yaml:"queue_limit"`
	// RequestTimeout is a server-side deadline: requests still unfinished
	// after it end with status timeout. 0 = none.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	KV             KV            `yaml:"kv"`
	PrefixCache    PrefixCache   `yaml:"prefix_cache"`
	Step           StepModel     `yaml:"step"`
	// PrefillSpeed and DecodeSpeed divide the prefill and decode parts of
	// the step time (a faster kernel: > 1). Default 1.
	PrefillSpeed float64 `yaml:"prefill_speed"`
	// InputPerToken is frontend input processing (tokenization,
	// preprocessing) per prompt token before a request joins the engine
	// queue; it adds to TTFT without using the GPU. Default 0.
	InputPerToken time.Duration `yaml:"input_per_token"`
	DecodeSpeed   float64       `yaml:"decode_speed"`
	Stalls        Stalls        `yaml:"stalls"`
	Warmup        Warmup        `yaml:"warmup"`
	// ColdStart: the arm's replicas start at the window start (warm-up
	// slowdown and an empty prefix cache) instead of being already warm.
	ColdStart bool `yaml:"cold_start"`
	// ClassWeights overrides traffic class weights for requests sent to
	// this arm (a traffic-mix shift), by class name.
	ClassWeights map[string]float64 `yaml:"class_weights"`
	// ErrorRate is the probability that an admitted request ends with a
	// server error instead of completing, in [0, 1). Default 0.
	ErrorRate float64 `yaml:"error_rate"`
	// ErrorStatus is how the arm's gateway logs the requests that ErrorRate
	// dooms: "error" (default; "" means error), "timeout", "canceled" (a server-side cancel,
	// logged as if the client gave up) or "rejected" (turned away at
	// admission without being served).
	ErrorStatus string `yaml:"error_status"`
	// ErrorBursts are stretches of the run in which an admitted request
	// also fails with the burst's probability (an outage, a bad push),
	// logged as ErrorStatus (error, timeout or canceled). Default none.
	ErrorBursts []ErrorBurst `yaml:"error_bursts"`
	// LogCanceledBy makes the arm's log say who canceled each canceled
	// request (the native log's canceled_by): "server" for the requests
	// ErrorRate dooms under error_status canceled, "client" for the
	// client's own cancels (a deadline it gave up on, the drain limit).
	// Default false: canceled requests are not attributed.
	LogCanceledBy bool    `yaml:"log_canceled_by"`
	Quality       Quality `yaml:"quality"`
	GPU           GPU     `yaml:"gpu"`
	Cost          Cost    `yaml:"cost"`
	// BatchNoise is a persistent, arm-wide slowdown of engine steps
	// (co-tenant interference, thermal and clock variation, batch
	// composition): independent between the arms, so that two identical
	// arms run side by side still differ.
	BatchNoise BatchNoise `yaml:"batch_noise"`
	// ReplicaSpread is the standard deviation of the log of a step-time
	// factor each replica draws once and keeps for the whole run (GPUs,
	// hosts and placements differ), independent between replicas and
	// arms: with a few replicas per arm, identical arms differ by their
	// replicas' mean for as long as the run lasts. In [0, 1]; default 0.
	ReplicaSpread float64 `yaml:"replica_spread"`
	// DecodeLeakPerHour makes the decode part of every step slower as the
	// window goes on (a leak): it is multiplied by 1 + DecodeLeakPerHour·t,
	// t in hours from the window start. Default 0, ≥ 0.
	DecodeLeakPerHour float64 `yaml:"decode_leak_per_hour"`
	// Output changes the lengths of the arm's outputs (a truncation or
	// early-stop bug).
	Output OutputChange `yaml:"output"`
	// Shed is the share of the arm's first attempts dropped upstream
	// (by a load balancer or a gateway) before anything logs them, in
	// [0, 1). Default 0.
	Shed float64 `yaml:"shed"`
	// LogDropSlow, when positive, loses from the arm's request log the
	// records of completions whose first token took longer than it (a
	// gateway that times requests out and drops their lines): the
	// engine served them, its metrics and the run's summary count them.
	// Default 0 (none).
	LogDropSlow time.Duration `yaml:"log_drop_slow"`
	// GatewayRetry makes a share of the arm's requests succeed only on a
	// retry the gateway makes itself: the failed first attempt is not
	// logged, the retry is logged with attempt 2.
	GatewayRetry GatewayRetry `yaml:"gateway_retry"`
	// ClassLatency multiplies the client-visible TTFT and TPOT of the
	// named traffic classes (a per-class change such as a slower chat
	// template or guided decoding), without changing the engine's work.
	ClassLatency map[string]ClassLatency `yaml:"class_latency"`
	// TPOTJitter spreads TPOT across requests: each request's inter-token
	// gaps, as the client sees them, are multiplied by exp(TPOTJitter·Z),
	// Z standard normal drawn per request (speculative-decoding acceptance,
	// sampling settings and output structure vary per request). Default 0,
	// in [0, 1].
	TPOTJitter float64 `yaml:"tpot_jitter"`
}

// BatchNoise is an AR(1) process on the log of a step-time factor, held
// constant within each Interval: in interval k every step time of the arm
// is multiplied by exp(x_k), where x is stationary with standard deviation
// Sigma and lag-1 autocorrelation Phi between consecutive intervals. Each
// arm draws its own path.
type BatchNoise struct {
	Sigma float64 `yaml:"sigma"` // stationary SD of the log factor, in [0, 1]; default 0 (off)
	Phi   float64 `yaml:"phi"`   // lag-1 autocorrelation between intervals, in [0, 1); default 0.8
	// Interval is how long one factor holds; default (and 0) 10s, the
	// judge's default bucket.
	Interval time.Duration `yaml:"interval"`
}

// OutputChange changes output lengths. Scale multiplies every drawn output
// length (rounded, at least 1 token; default 1, 0 means 1); then, with probability
// ShortShare, a request's output is replaced by ShortTokens tokens (0 or
// 1: an empty or one-token completion that still ends with status ok);
// then, with probability RunOnShare, it runs on to RunOnTokens (a stop
// condition missed: the answer goes on to max_tokens, decoded like any
// other, so it loads its replica as long).
type OutputChange struct {
	Scale       float64 `yaml:"scale"`
	ShortShare  float64 `yaml:"short_share"`
	ShortTokens int     `yaml:"short_tokens"`
	RunOnShare  float64 `yaml:"run_on_share"`  // in [0, 1]; default 0
	RunOnTokens int     `yaml:"run_on_tokens"` // the cap the answers run on to, tokens; default (and 0) 1024
}

// GatewayRetry: with probability Share a first attempt fails at once and is
// retried by the gateway Delay later; only the retry (attempt 2) is logged.
type GatewayRetry struct {
	Share float64       `yaml:"share"` // in [0, 1); default 0
	Delay time.Duration `yaml:"delay"` // default 0
}

// ClassLatency multipliers; 0 means 1 (unchanged).
type ClassLatency struct {
	TTFT float64 `yaml:"ttft"` // multiplies the time to first token
	TPOT float64 `yaml:"tpot"` // multiplies every later inter-token gap
}

// KV is the KV-cache block budget of one replica.
type KV struct {
	Blocks    int `yaml:"blocks"`     // blocks per replica; default 24576
	BlockSize int `yaml:"block_size"` // tokens per block; default 16
	// OnExhaustion: "preempt" (default: blocks are allocated as tokens are
	// generated and the newest running request is preempted and recomputed
	// later when they run out) or "wait" (a request is admitted only when
	// blocks for its whole prompt and output are free).
	OnExhaustion string `yaml:"on_exhaustion"`
}

// PrefixCache is the replica's prefix cache (automatic prefix caching).
type PrefixCache struct {
	// CapacityTokens is the most prefix tokens kept (LRU over groups); 0
	// disables the cache. Default 32768.
	CapacityTokens int `yaml:"capacity_tokens"`
	// StartCold: the cache is empty at the window start (otherwise it holds
	// the most popular groups). Restarted replicas always start cold.
	StartCold bool `yaml:"start_cold"`
}

// StepModel is the duration of one engine step:
//
//	(Base + DecodePerSeq·decoding + PerContextToken·context)/DecodeSpeed
//	  + PrefillPerToken·prefilled/PrefillSpeed
//
// times the warm-up slowdown, plus a stall with probability Stalls.Probability.
// decoding is the number of requests decoding in the step, context their
// total context length in tokens, prefilled the prompt tokens computed.
type StepModel struct {
	Base            time.Duration `yaml:"base"`              // default 10ms
	DecodePerSeq    time.Duration `yaml:"decode_per_seq"`    // default 40µs
	PerContextToken time.Duration `yaml:"per_context_token"` // default 20ns
	PrefillPerToken time.Duration `yaml:"prefill_per_token"` // default 12µs
}

// Stalls are rare long pauses (a tail-latency regression). With Scope
// "step" (the default) each engine step takes Duration longer with
// probability Probability, delaying every request in the batch; with scope
// "request" each request, with probability Probability, has one of its
// output tokens delayed by Duration (only that request sees it: a tail-only
// TPOT and stall regression).
type Stalls struct {
	Probability float64       `yaml:"probability"`
	Duration    time.Duration `yaml:"duration"`
	Scope       string        `yaml:"scope"`
	// Token, for scope request, is the output token that is delayed: 1 =
	// the first (a TTFT stall), k = the k-th (or the last when the output is
	// shorter); 0 (the default) = a uniformly random one.
	Token int `yaml:"token"`
}

// Warmup is the slow period after a replica starts: step times are
// multiplied by Slowdown at start, falling linearly to 1 over Duration.
type Warmup struct {
	Duration time.Duration `yaml:"duration"`
	Slowdown float64       `yaml:"slowdown"` // ≥ 1; default 1 (no warm-up)
}

// Quality is the optional per-request quality check.
type Quality struct {
	// Check: completed requests carry quality_ok (otherwise it is unknown).
	Check bool `yaml:"check"`
	// ErrorRate is the probability a completed request fails the check.
	ErrorRate float64 `yaml:"error_rate"`
}

// GPU describes the accelerator for the DCGM-style signals.
type GPU struct {
	IdlePowerW float64 `yaml:"idle_power_w"` // default 90
	MaxPowerW  float64 `yaml:"max_power_w"`  // default 700
	MemoryMiB  float64 `yaml:"memory_mib"`   // default 81559
	// MemoryFraction is the share of memory the engine reserves at start
	// (vLLM gpu_memory_utilization). Default 0.9.
	MemoryFraction float64 `yaml:"memory_fraction"`
}

// Cost holds the rates billed per provisioned replica. A replica is billed
// from the window start until it is lost for good (a failed replica that is
// restarting is still billed).
type Cost struct {
	AcceleratorPerHour float64 `yaml:"accelerator_per_hour"` // USD; default 4.0
	HostPerHour        float64 `yaml:"host_per_hour"`        // USD; default 0.6
	// IdleReservePerHour is each replica's share of the warm spare capacity
	// kept for failover, USD per hour. Default 0.4.
	IdleReservePerHour float64 `yaml:"idle_reserve_per_hour"`
	NetworkPerGB       float64 `yaml:"network_per_gb"`    // USD per GB (1e9 bytes); default 0.05
	BytesPerToken      float64 `yaml:"bytes_per_token"`   // wire bytes per prompt or output token; default 6
	BytesPerRequest    float64 `yaml:"bytes_per_request"` // request/response overhead; default 1500
}

// Failure is a declared replica failure: at At the replica dies (its queued
// and running requests fail with status error and its counters reset) and,
// when RestartAfter > 0, starts again (cold) that much later.
type Failure struct {
	Arm          string        `yaml:"arm"` // baseline, canary or both
	Replica      int           `yaml:"replica"`
	At           time.Duration `yaml:"at"`
	RestartAfter time.Duration `yaml:"restart_after"`
}

// ErrorBurst is one stretch of extra server errors in an arm.
type ErrorBurst struct {
	At       time.Duration `yaml:"at"`       // offset from the window start
	Duration time.Duration `yaml:"duration"` // > 0
	Rate     float64       `yaml:"rate"`     // probability an admitted request fails, in (0, 1]
}

// burstRate is the extra error probability of the arm's bursts at t
// seconds from the window start (the largest of those under way).
func (a *ArmSpec) burstRate(t float64) float64 {
	r := 0.0
	for _, b := range a.ErrorBursts {
		if t >= b.At.Seconds() && t < (b.At+b.Duration).Seconds() {
			r = max(r, b.Rate)
		}
	}
	return r
}

// arms returns the arms a failure applies to.
func (f Failure) arms() []sources.Arm {
	switch f.Arm {
	case "both":
		return []sources.Arm{sources.Baseline, sources.Canary}
	case "canary":
		return []sources.Arm{sources.Canary}
	}
	return []sources.Arm{sources.Baseline}
}

// Arm returns the spec of the given arm.
func (sc *Scenario) Arm(a sources.Arm) *ArmSpec {
	if a == sources.Canary {
		return &sc.Canary
	}
	return &sc.Baseline
}

func defaultArm() ArmSpec {
	return ArmSpec{
		Replicas:         4,
		Router:           "least-loaded",
		Scheduler:        "chunked",
		MaxBatch:         128,
		MaxBatchedTokens: 2048,
		QueueLimit:       0,
		KV:               KV{Blocks: 24576, BlockSize: 16, OnExhaustion: "preempt"},
		PrefixCache:      PrefixCache{CapacityTokens: 32768},
		Step: StepModel{
			Base:            10 * time.Millisecond,
			DecodePerSeq:    40 * time.Microsecond,
			PerContextToken: 20 * time.Nanosecond,
			PrefillPerToken: 12 * time.Microsecond,
		},
		PrefillSpeed: 1,
		DecodeSpeed:  1,
		Warmup:       Warmup{Slowdown: 1},
		ErrorStatus:  "error",
		BatchNoise:   BatchNoise{Phi: 0.8, Interval: 10 * time.Second},
		Output:       OutputChange{Scale: 1},
		GPU:          GPU{IdlePowerW: 90, MaxPowerW: 700, MemoryMiB: 81559, MemoryFraction: 0.9},
		Cost: Cost{AcceleratorPerHour: 4.0, HostPerHour: 0.6, IdleReservePerHour: 0.4,
			NetworkPerGB: 0.05, BytesPerToken: 6, BytesPerRequest: 1500},
	}
}

func defaultClasses() []Class {
	return []Class{
		{Name: "chat", Weight: 0.85,
			PromptTokens: Dist{Kind: "lognormal", Median: 600, Sigma: 0.7, Min: 16, Max: 6000},
			OutputTokens: Dist{Kind: "lognormal", Median: 180, Sigma: 0.6, Min: 2, Max: 1024},
			Prefix:       Prefix{Groups: 16, Tokens: 384, Zipf: 1}},
		{Name: "long", Weight: 0.15,
			PromptTokens: Dist{Kind: "lognormal", Median: 6000, Sigma: 0.4, Min: 2000, Max: 16000},
			OutputTokens: Dist{Kind: "lognormal", Median: 250, Sigma: 0.5, Min: 2, Max: 1024},
			Prefix:       Prefix{Groups: 4, Tokens: 1024}},
	}
}

// defaultScenario is what a scenario file starts from before its keys are
// applied.
func defaultScenario() Scenario {
	return Scenario{
		Start:          DefaultStart(),
		Duration:       15 * time.Minute,
		SampleInterval: 15 * time.Second,
		CostInterval:   time.Minute,
		Model:          "sim-llm",
		SLO:            SLO{TTFT: time.Second, TPOT: 80 * time.Millisecond},
		Traffic:        Traffic{Rate: 20, CanaryShare: 0.5, Split: "independent", Classes: defaultClasses()},
		Client: Client{Retry: Retry{MaxAttempts: 1, Multiplier: 2,
			On: []string{"rejected", "canceled", "error", "timeout"}}},
		Baseline: defaultArm(),
	}
}

// fieldError is a validation problem at a key path such as
// "traffic.classes[1].weight".
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

type validator struct{ errs []*fieldError }

func (v *validator) check(ok bool, path, format string, a ...any) {
	if !ok {
		v.errs = append(v.errs, &fieldError{path: path, msg: fmt.Sprintf(format, a...)})
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Validate checks a scenario and returns the first problem, naming its key.
func (sc *Scenario) Validate() error {
	errs := sc.validate()
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

func (sc *Scenario) validate() []*fieldError {
	v := &validator{}
	v.check(!strings.ContainsFunc(sc.Name+sc.Model, unicode.IsControl), "name", "name and model must not contain control characters")
	v.check(sc.Duration > 0, "duration", "must be > 0 (e.g. 15m)")
	v.check(sc.SampleInterval >= time.Second, "sample_interval", "must be ≥ 1s")
	v.check(sc.CostInterval >= time.Second, "cost_interval", "must be ≥ 1s")
	v.check(sc.SLO.TTFT > 0 && sc.SLO.TPOT > 0, "slo", "ttft and tpot must be > 0")
	t := &sc.Traffic
	if len(t.Schedule) == 0 {
		v.check(finite(t.Rate) && t.Rate > 0, "traffic.rate", "must be > 0 requests/s")
	}
	for i, p := range t.Schedule {
		path := fmt.Sprintf("traffic.schedule[%d]", i)
		v.check(finite(p.Rate) && p.Rate >= 0, path+".rate", "must be ≥ 0")
		v.check(i == 0 || p.At > t.Schedule[i-1].At, path+".at", "schedule points must be in increasing time order")
	}
	for i, b := range t.Bursts {
		path := fmt.Sprintf("traffic.bursts[%d]", i)
		v.check(b.Duration > 0, path+".duration", "must be > 0")
		v.check(2*b.Ramp <= b.Duration && b.Ramp >= 0, path+".ramp", "must be ≥ 0 and at most half the duration")
		v.check((b.Rate > 0) != (b.Factor > 0), path, "set exactly one of rate (requests/s) or factor (> 0)")
	}
	v.check(t.Drift.Amplitude >= 0 && t.Drift.Amplitude < 1, "traffic.drift.amplitude", "must be in [0, 1)")
	v.check(t.Drift.Amplitude == 0 || t.Drift.Period > 0, "traffic.drift.period", "must be > 0 when amplitude is set")
	v.check(t.AR1.Sigma >= 0 && t.AR1.Sigma <= 2, "traffic.ar1.sigma", "must be in [0, 2]")
	v.check(t.AR1.Sigma == 0 || t.AR1.Tau >= time.Second, "traffic.ar1.tau", "must be ≥ 1s when sigma is set")
	v.check(t.CanaryShare > 0 && t.CanaryShare < 1, "traffic.canary_share", "must be in (0, 1)")
	v.check(t.Split == "independent" || t.Split == "mirrored", "traffic.split", "must be independent or mirrored")
	v.check(t.Split != "mirrored" || t.CanaryShare == 0.5, "traffic.split", "mirrored needs canary_share 0.5")
	v.check(t.Users.Count >= 0 && t.Users.Count <= 10_000_000, "traffic.users.count", "must be in [0, 10000000]")
	v.check(t.Users.PromptSigma >= 0 && t.Users.PromptSigma <= 3, "traffic.users.prompt_sigma", "must be in [0, 3]")
	v.check(t.Users.OutputSigma >= 0 && t.Users.OutputSigma <= 3, "traffic.users.output_sigma", "must be in [0, 3]")
	v.check(len(t.Classes) > 0, "traffic.classes", "at least one class is needed")
	for _, k := range sortedKeys(sc.SLO.Classes) {
		c := sc.SLO.Classes[k]
		v.check(slices.ContainsFunc(t.Classes, func(x Class) bool { return x.Name == k }), "slo.classes."+k, "no traffic class named %q", k)
		v.check(c.TTFT >= 0 && c.TPOT >= 0, "slo.classes."+k, "limits must be ≥ 0")
	}
	names := map[string]bool{}
	maxLen := 0
	for i, c := range t.Classes {
		path := fmt.Sprintf("traffic.classes[%d]", i)
		v.check(c.Name != "" && !strings.ContainsAny(c.Name, "\"\\\n\r\t"), path+".name", "must be non-empty, without quotes, backslashes or control characters")
		v.check(!names[c.Name], path+".name", "duplicate class %q", c.Name)
		names[c.Name] = true
		v.check(finite(c.Weight) && c.Weight >= 0, path+".weight", "must be ≥ 0")
		validateDist(v, path+".prompt_tokens", c.PromptTokens)
		validateDist(v, path+".output_tokens", c.OutputTokens)
		v.check(c.Prefix.Groups >= 0 && c.Prefix.Tokens >= 0 && c.Prefix.Zipf >= 0, path+".prefix", "groups, tokens and zipf must be ≥ 0")
		v.check(c.Prefix.Groups == 0 || c.Prefix.Tokens > 0, path+".prefix.tokens", "must be > 0 when groups is set")
		maxLen = max(maxLen, distMax(c.PromptTokens)+distMax(c.OutputTokens))
	}
	c := &sc.Client
	v.check(c.TTFTTimeout >= 0 && c.Timeout >= 0, "client", "timeouts must be ≥ 0")
	v.check(c.Retry.MaxAttempts >= 1 && c.Retry.MaxAttempts <= 20, "client.retry.max_attempts", "must be in [1, 20]")
	v.check(c.Retry.Backoff >= 0, "client.retry.backoff", "must be ≥ 0")
	v.check(c.Retry.Multiplier >= 1, "client.retry.multiplier", "must be ≥ 1")
	v.check(c.Retry.Jitter >= 0 && c.Retry.Jitter <= 1, "client.retry.jitter", "must be in [0, 1]")
	for i, o := range c.Retry.On {
		v.check(slices.Contains([]string{"rejected", "canceled", "error", "timeout"}, o),
			fmt.Sprintf("client.retry.on[%d]", i), "unknown outcome %q (want rejected, canceled, error or timeout)", o)
	}
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		prefix := "fleet"
		if arm == sources.Canary {
			prefix = "canary"
		}
		validateArm(v, prefix, sc.Arm(arm), names, maxLen)
	}
	for i, f := range sc.Failures {
		path := fmt.Sprintf("failures[%d]", i)
		v.check(f.Arm == "baseline" || f.Arm == "canary" || f.Arm == "both", path+".arm", "must be baseline, canary or both")
		for _, a := range f.arms() {
			v.check(f.Replica >= 0 && f.Replica < sc.Arm(a).Replicas, path+".replica",
				"no replica %d in the %s arm (replicas are numbered from 0)", f.Replica, a)
		}
		v.check(f.At >= 0 && f.RestartAfter >= 0, path, "at and restart_after must be ≥ 0")
	}
	return v.errs
}

func validateDist(v *validator, path string, d Dist) {
	switch d.Kind {
	case "constant":
		v.check(d.Value >= 1, path+".value", "must be ≥ 1")
	case "uniform":
		v.check(d.Min >= 1 && d.Max >= d.Min, path, "uniform needs 1 ≤ min ≤ max")
	case "exponential":
		v.check(d.Mean > 0 && finite(d.Mean), path+".mean", "must be > 0")
	case "lognormal":
		v.check(d.Median > 0 && finite(d.Median), path+".median", "must be > 0")
		v.check(d.Sigma >= 0 && d.Sigma <= 3, path+".sigma", "must be in [0, 3]")
	default:
		v.check(false, path+".dist", "unknown distribution %q (want constant, uniform, exponential or lognormal)", d.Kind)
	}
	v.check(d.Min >= 0 && (d.Max == 0 || d.Max >= d.Min), path, "need 0 ≤ min ≤ max (max 0 = no cap)")
	v.check(d.Max <= 1_000_000, path+".max", "must be ≤ 1000000 tokens")
	if d.Max == 0 && d.Kind != "constant" && d.Kind != "uniform" {
		v.check(false, path+".max", "set a cap (max) for %s lengths", d.Kind)
	}
}

func distMax(d Dist) int {
	switch {
	case d.Kind == "constant":
		return int(math.Round(d.Value))
	default:
		return d.Max
	}
}

func validateArm(v *validator, p string, a *ArmSpec, classes map[string]bool, maxLen int) {
	v.check(a.Replicas >= 1 && a.Replicas <= 1000, p+".replicas", "must be in [1, 1000]")
	v.check(a.Router == "least-loaded" || a.Router == "shared-queue" || a.Router == "random", p+".router", "must be least-loaded, shared-queue or random")
	v.check(a.Scheduler == "chunked" || a.Scheduler == "fcfs", p+".scheduler", "must be chunked or fcfs")
	v.check(a.MaxBatch >= 1, p+".max_batch", "must be ≥ 1")
	v.check(a.MaxBatchedTokens >= 1, p+".max_batched_tokens", "must be ≥ 1")
	v.check(a.QueueLimit >= 0, p+".queue_limit", "must be ≥ 0 (0 = unlimited)")
	v.check(a.RequestTimeout >= 0, p+".request_timeout", "must be ≥ 0")
	v.check(a.KV.Blocks >= 1 && a.KV.BlockSize >= 1, p+".kv", "blocks and block_size must be ≥ 1")
	v.check(a.KV.OnExhaustion == "preempt" || a.KV.OnExhaustion == "wait", p+".kv.on_exhaustion", "must be preempt or wait")
	v.check(a.KV.Blocks*a.KV.BlockSize >= maxLen+a.KV.BlockSize, p+".kv.blocks",
		"%d blocks of %d tokens cannot hold the longest request (%d prompt+output tokens)", a.KV.Blocks, a.KV.BlockSize, maxLen)
	v.check(a.PrefixCache.CapacityTokens >= 0, p+".prefix_cache.capacity_tokens", "must be ≥ 0")
	s := a.Step
	v.check(s.Base >= 0 && s.DecodePerSeq >= 0 && s.PerContextToken >= 0 && s.PrefillPerToken >= 0, p+".step", "step times must be ≥ 0")
	v.check(s.Base > 0 || s.DecodePerSeq > 0, p+".step.base", "base or decode_per_seq must be > 0")
	v.check(finite(a.PrefillSpeed) && a.PrefillSpeed > 0, p+".prefill_speed", "must be > 0 (1 = unchanged)")
	v.check(finite(a.DecodeSpeed) && a.DecodeSpeed > 0, p+".decode_speed", "must be > 0 (1 = unchanged)")
	v.check(a.Stalls.Probability >= 0 && a.Stalls.Probability < 1, p+".stalls.probability", "must be in [0, 1)")
	v.check(a.Stalls.Duration >= 0, p+".stalls.duration", "must be ≥ 0")
	v.check(a.Stalls.Scope == "" || a.Stalls.Scope == "step" || a.Stalls.Scope == "request", p+".stalls.scope", "must be step or request")
	v.check(a.Stalls.Token >= 0, p+".stalls.token", "must be ≥ 0 (0 = a random output token)")
	v.check(a.InputPerToken >= 0, p+".input_per_token", "must be ≥ 0")
	v.check(a.Warmup.Slowdown >= 1 && finite(a.Warmup.Slowdown), p+".warmup.slowdown", "must be ≥ 1 (1 = no warm-up)")
	v.check(a.Warmup.Duration >= 0, p+".warmup.duration", "must be ≥ 0")
	for _, k := range sortedKeys(a.ClassWeights) {
		w := a.ClassWeights[k]
		v.check(classes[k], p+".class_weights."+k, "no traffic class named %q", k)
		v.check(finite(w) && w >= 0, p+".class_weights."+k, "must be ≥ 0")
	}
	v.check(a.ErrorRate >= 0 && a.ErrorRate < 1, p+".error_rate", "must be in [0, 1)")
	v.check(slices.Contains([]string{"", "error", "timeout", "canceled", "rejected"}, a.ErrorStatus), p+".error_status",
		"must be error, timeout, canceled or rejected")
	for i, b := range a.ErrorBursts {
		bp := fmt.Sprintf("%s.error_bursts[%d]", p, i)
		v.check(b.At >= 0 && b.Duration > 0, bp, "at must be ≥ 0 and duration > 0")
		v.check(b.Rate > 0 && b.Rate <= 1, bp+".rate", "must be in (0, 1]")
		v.check(a.ErrorStatus != "rejected", bp, "bursts fail admitted requests: error_status must be error, timeout or canceled")
	}
	n := a.BatchNoise
	v.check(finite(n.Sigma) && n.Sigma >= 0 && n.Sigma <= 1, p+".batch_noise.sigma", "must be in [0, 1]")
	v.check(finite(n.Phi) && n.Phi >= 0 && n.Phi < 1, p+".batch_noise.phi", "must be in [0, 1)")
	v.check(n.Interval == 0 || n.Interval >= time.Second, p+".batch_noise.interval", "must be ≥ 1s (0 = 10s)")
	v.check(finite(a.ReplicaSpread) && a.ReplicaSpread >= 0 && a.ReplicaSpread <= 1, p+".replica_spread", "must be in [0, 1]")
	v.check(finite(a.DecodeLeakPerHour) && a.DecodeLeakPerHour >= 0, p+".decode_leak_per_hour", "must be ≥ 0")
	o := a.Output
	v.check(finite(o.Scale) && o.Scale >= 0 && o.Scale <= 100, p+".output.scale", "must be in [0, 100] (0 or 1 = unchanged)")
	v.check(o.ShortShare >= 0 && o.ShortShare <= 1, p+".output.short_share", "must be in [0, 1]")
	v.check(o.ShortTokens == 0 || o.ShortTokens == 1, p+".output.short_tokens", "must be 0 or 1")
	v.check(finite(o.RunOnShare) && o.RunOnShare >= 0 && o.RunOnShare <= 1, p+".output.run_on_share", "must be in [0, 1]")
	v.check(o.RunOnTokens >= 0 && o.RunOnTokens <= 32768, p+".output.run_on_tokens", "must be in [0, 32768] (0 = 1024)")
	v.check(a.Shed >= 0 && a.Shed < 1, p+".shed", "must be in [0, 1)")
	v.check(a.LogDropSlow >= 0, p+".log_drop_slow", "must be ≥ 0 (0 = none)")
	v.check(finite(a.TPOTJitter) && a.TPOTJitter >= 0 && a.TPOTJitter <= 1, p+".tpot_jitter", "must be in [0, 1]")
	v.check(a.GatewayRetry.Share >= 0 && a.GatewayRetry.Share < 1, p+".gateway_retry.share", "must be in [0, 1)")
	v.check(a.GatewayRetry.Delay >= 0, p+".gateway_retry.delay", "must be ≥ 0")
	for _, k := range sortedKeys(a.ClassLatency) {
		m := a.ClassLatency[k]
		v.check(classes[k], p+".class_latency."+k, "no traffic class named %q", k)
		v.check(finite(m.TTFT) && finite(m.TPOT) && m.TTFT >= 0 && m.TPOT >= 0 && m.TTFT <= 100 && m.TPOT <= 100,
			p+".class_latency."+k, "multipliers must be in [0, 100] (0 or 1 = unchanged)")
	}
	v.check(a.Quality.ErrorRate >= 0 && a.Quality.ErrorRate <= 1, p+".quality.error_rate", "must be in [0, 1]")
	g := a.GPU
	v.check(g.IdlePowerW >= 0 && g.MaxPowerW >= g.IdlePowerW, p+".gpu", "need 0 ≤ idle_power_w ≤ max_power_w")
	v.check(g.MemoryMiB > 0 && g.MemoryFraction > 0 && g.MemoryFraction <= 1, p+".gpu", "need memory_mib > 0 and memory_fraction in (0, 1]")
	c := a.Cost
	v.check(c.AcceleratorPerHour >= 0 && c.HostPerHour >= 0 && c.IdleReservePerHour >= 0 &&
		c.NetworkPerGB >= 0 && c.BytesPerToken >= 0 && c.BytesPerRequest >= 0, p+".cost", "rates must be ≥ 0")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
