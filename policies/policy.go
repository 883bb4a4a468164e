// Package policies defines goodput's policy: the SLO per request class, the
// window and bucket, normalization choices, the gated metrics with their
// non-inferiority margins, the confidence level and cost rates. Policies are
// strict YAML: an unknown key, a bad duration or a margin in the wrong unit
// is an error naming line:col. Built-in policies are embedded in the binary.
package policies

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// DefaultName is the built-in policy used when none is given.
const DefaultName = "chat"

// Policy is a parsed, validated policy.
type Policy struct {
	Name        string        `yaml:"name"`
	Description string        `yaml:"description"`
	SLO         SLO           `yaml:"slo"`     // the default SLO, for requests in no class
	Classes     []Class       `yaml:"classes"` // matched in order; the first match wins
	Window      WindowSpec    `yaml:"window"`
	Normalize   NormalizeSpec `yaml:"normalize"`
	Gates       []Gate        `yaml:"gates"`
	// Confidence is the two-sided level c (0.5 < c < 1, default 0.95);
	// α = 1 − c, and each gate decides on a (1 − 2α) interval.
	Confidence float64    `yaml:"confidence"`
	Cost       *CostRates `yaml:"cost"`
	// Traffic declares the expected split so a sample-ratio mismatch can
	// be detected; nil when the split is not declared.
	Traffic *TrafficSpec `yaml:"traffic"`

	// Source is "builtin" or the file path; Text the YAML bytes; SHA256 their digest.
	Source string `yaml:"-"`
	Text   []byte `yaml:"-"`
	SHA256 string `yaml:"-"`
}

// SLO is a per-request success criterion. A zero Duration means the
// criterion is not required.
type SLO struct {
	TTFT    Duration `yaml:"ttft"`    // time to first token, upper bound
	TPOT    Duration `yaml:"tpot"`    // time per output token, upper bound
	E2E     Duration `yaml:"e2e"`     // end-to-end latency, upper bound
	MaxITL  Duration `yaml:"max_itl"` // largest inter-token gap, upper bound
	Quality string   `yaml:"quality"` // "required" or "" (not judged)
	// MinOutputTokens is the fewest output tokens a completion needs to be
	// good (nil: DefaultMinOutputTokens; 0 lets empty completions count,
	// e.g. for classification or embedding-like calls). A completion with
	// 0 or 1 token has no TPOT to check, so without this floor an empty
	// answer would pass every latency criterion.
	MinOutputTokens *int64 `yaml:"min_output_tokens"`
}

// DefaultMinOutputTokens is the output-token floor of a good completion
// when the policy does not set slo.min_output_tokens.
const DefaultMinOutputTokens = 2

// OutputFloor returns the SLO's output-token floor (the default when unset).
func (s SLO) OutputFloor() int64 {
	if s.MinOutputTokens == nil {
		return DefaultMinOutputTokens
	}
	return *s.MinOutputTokens
}

// Class is a request class with its own SLO overrides.
type Class struct {
	Name string    `yaml:"name"`
	When ClassWhen `yaml:"when"`
	SLO  SLO       `yaml:"slo"` // overrides of the policy SLO; unset keys inherit
}

// ClassWhen selects requests: all given conditions must hold.
type ClassWhen struct {
	Label        []string `yaml:"label"` // the input's class label is one of these
	PromptTokens *Range   `yaml:"prompt_tokens"`
	OutputTokens *Range   `yaml:"output_tokens"`
}

// Range is an inclusive-min, exclusive-max token range; nil bounds are open.
type Range struct {
	Min *int64 `yaml:"min"`
	Max *int64 `yaml:"max"`
}

// Contains reports whether v lies in [Min, Max).
func (r *Range) Contains(v int64) bool {
	if r == nil {
		return true
	}
	if r.Min != nil && v < *r.Min {
		return false
	}
	if r.Max != nil && v >= *r.Max {
		return false
	}
	return true
}

// WindowSpec sets the warm-up rule and the bucket width.
type WindowSpec struct {
	// Warmup is "auto", "none" or a duration cut from the start of each arm.
	Warmup string `yaml:"warmup"`
	// Bucket is the resampling unit (default 10 s, range 1 s … 10 min).
	Bucket Duration `yaml:"bucket"`
	// MaxWarmup caps the automatic warm-up cut (warmup: auto) so that a
	// slow start longer than a warm-up stays in the judged window (default:
	// the longer of DefaultMaxWarmup and MaxWarmupShare of the run). A
	// fixed warmup duration is not capped.
	MaxWarmup Duration `yaml:"max_warmup"`
	// Persistence is how long the arms' own slowdowns last: the
	// correlation time τ of a slowdown whose correlation decays as
	// exp(−t/τ), measured on the fleet's history (`goodput persistence`).
	// Unset or 0 (the default) reads every interval's variance from the
	// run alone, which is calibrated for slowdowns that fade within about
	// a minute (τ ≈ 45 s) and under-covers longer ones: identical arms
	// fail 8% of 30-minute runs at τ 3.3 min. A declared τ widens every
	// gate's interval by the factor its batch sums fall short by under
	// such slowdowns at the run's length (for 30 minutes at the gates'
	// 90% level: 1 at τ 45 s, 1.10 at 1.5 min, 1.46 at 3.3 min, 2.48 at
	// 8.3 min; 1.12 at 3.3 min for an hour), floors the trend check's
	// factor the same way, and holds inconclusive (not failed) a
	// good-share dip no longer than 2τ and no deeper than such a slowdown
	// can go on the run's spread. Range 0 … 24h.
	Persistence Duration `yaml:"persistence"`
	// Implausible says what a request-log record whose arrival time lies far
	// outside the rest of its file (ts 0, a clock a year off) does: "error"
	// (the default, naming file:line) or "drop" (dropped, with a count in
	// the report's warnings).
	Implausible string `yaml:"implausible"`
	// Untimed says what the resampling unit is for an input without
	// arrival times (LLMPerf, vLLM bench files without start_times):
	// "runs" (default) groups consecutive requests into runs of about one
	// bucket's worth, and a gate needs MinBuckets of them per arm;
	// "requests" makes every request its own unit, so a benchmark of a few
	// hundred prompts can decide, at the price of treating the requests of
	// one run as independent (run-to-run variance is left out unless an
	// arm gives several runs).
	Untimed string `yaml:"untimed"`
}

// DefaultMaxWarmup is the cap on the automatic warm-up cut when the
// policy sets no window.max_warmup.
const DefaultMaxWarmup = 5 * time.Minute

// MaxWarmupShare is the share of an arm's run the automatic warm-up cut may
// remove when that is longer than DefaultMaxWarmup (long runs).
const MaxWarmupShare = 0.15

// WarmupCap returns the longest automatic warm-up cut for a run of runSecs
// seconds, in seconds: window.max_warmup when the policy sets it, else the
// longer of DefaultMaxWarmup (5 min) and MaxWarmupShare (15%) of the run.
func (w WindowSpec) WarmupCap(runSecs float64) float64 {
	if w.MaxWarmup > 0 {
		return w.MaxWarmup.Seconds()
	}
	return math.Max(DefaultMaxWarmup.Seconds(), MaxWarmupShare*runSecs)
}

// LabelBands reports whether labelled records' prompt bands are strata
// too (normalize.prompt_bands: all).
func (n NormalizeSpec) LabelBands() bool { return n.PromptBands == "all" }

// WarmupDuration returns the fixed warm-up cut, or 0 for "none"/"auto".
func (w WindowSpec) WarmupDuration() time.Duration {
	d, err := time.ParseDuration(w.Warmup)
	if err != nil {
		return 0
	}
	return d
}

// NormalizeSpec sets how arms are made comparable.
type NormalizeSpec struct {
	Mix   string `yaml:"mix"`   // baseline | canary | pooled | none | weights
	Cache string `yaml:"cache"` // auto | stratify | adjust | none
	Load  string `yaml:"load"`  // matched | flag | none
	// CanaryReplicaLoss says what a canary replica that stops serving
	// mid-window while the baseline's serve means — lost for good, or out
	// for a while and back (a crash and restart): "blame" (the default)
	// makes it the canary's problem — the canary_replica_loss guardrail
	// fails for a loss or an outage of at least 60 s and is inconclusive on
	// a shorter one, since a crash under the change may be the change's
	// doing; "excuse" reports it without failing (e.g. a node drained for
	// maintenance). Either way the canary's requests stay in every gate as
	// served.
	CanaryReplicaLoss string `yaml:"canary_replica_loss"`
	// CanaryDip says what a stretch in which the canary alone loses many
	// good requests (an outage, a burst of errors) means: "blame" (the
	// default) fails the attainment_dip guardrail; "excuse" reports it
	// without failing (e.g. a fleet whose replicas are known to hiccup on
	// their own). Either way the stretch stays in every gate.
	CanaryDip string `yaml:"canary_dip"`
	// BaselineDip says what a stretch in which the baseline alone loses
	// many good requests (its own outage or burst of errors, the canary
	// unaffected) means for arms paired in time: "exclude" (the default)
	// leaves that stretch out of both arms' comparison and reports it as
	// the baseline_outage normalization step (the stretch is the one most
	// favourable to the canary, so leaving it out moves every count gate
	// toward the canary's harm; it takes the outage out of the variance,
	// which otherwise keeps a sound canary inconclusive); "keep" judges
	// the run as recorded.
	BaselineDip string `yaml:"baseline_dip"`
	// SharedDip says what a stretch in which both arms at once lose many
	// good requests (an incident they share: a network or storage fault,
	// an upstream stall) means for arms paired in time: "exclude" (the
	// default) leaves it out of both arms and reports it as the
	// shared_outage normalization step, when the canary fared no worse
	// there than the baseline (its shares of good and served requests no
	// lower at one-sided level α, its p90 TTFT and TPOT within the p99
	// gates' margins); "keep" judges the run as recorded.
	SharedDip string `yaml:"shared_dip"`
	// PromptBands says which records' prompt lengths, in octave bands
	// (512 … 16k tokens), are strata of the reference mix: "unlabelled"
	// (the default) those of records without a class label only, whose
	// label the band stands in for; "all" labelled records' too, each
	// label split by its prompt band ("chat, prompt 1k-2k"), so that a
	// canary sent longer prompts under the same labels is standardized to
	// the baseline's prompt lengths (TTFT grows with the prompt). It costs
	// the streaming judge memory: with four labels at 10M requests per arm,
	// 527 MiB against 365 MiB.
	PromptBands string `yaml:"prompt_bands"`
	// Weights is the explicit reference mix when Mix is "weights":
	// class name → share (normalized to sum 1).
	Weights map[string]float64 `yaml:"weights"`
}

// Gate is one gated metric.
type Gate struct {
	Metric    string `yaml:"metric"`
	Margin    Margin `yaml:"margin"`
	Guardrail bool   `yaml:"guardrail"`
	// Weight is the gate's share of the family-wise error rate α in the
	// weighted Holm procedure across gates (any positive scale; 0 = unset).
	// When no gate sets one, slo_attainment gets DefaultAttainmentWeight of
	// α and the other gates share the rest equally; when some do, unset
	// ones weigh 1.
	Weight float64 `yaml:"weight"`
	// Target is the SLO-attainment target of a capacity gate, a fraction in
	// (0, 1) written as "99%" or 0.99 (default 0.99); 0 on other gates.
	Target Fraction `yaml:"target"`
	// Direction is "" (the default: harm is the metric's own bad
	// direction, e.g. fewer output tokens) or TwoSided: a change either
	// way beyond the margin is harm (output_tokens_mean in chat: answers
	// cut short or running on). The metric's own direction
	// ("higher_is_better" or "lower_is_better") may be written and reads
	// as "".
	Direction string `yaml:"direction"`
}

// TwoSided is the gate direction under which a change beyond the margin
// either way is harm: the gate passes when its interval lies within
// ±margin and fails when it lies beyond the margin on either side.
const TwoSided = "two_sided"

// DefaultAttainmentWeight is the share of α the slo_attainment gate gets
// when no gate sets a weight: attainment carries the decision, the other
// gates and guardrails share the rest.
const DefaultAttainmentWeight = 0.6

// GateWeights returns the weighted-Holm weight of each gate, summing to 1.
func GateWeights(gates []Gate) []float64 {
	w := make([]float64, len(gates))
	if len(gates) == 0 {
		return w
	}
	explicit, att := false, -1
	for i, g := range gates {
		explicit = explicit || g.Weight > 0
		if g.Metric == "slo_attainment" && !g.Guardrail && att < 0 {
			att = i
		}
	}
	switch {
	case explicit:
		for i, g := range gates {
			w[i] = 1
			if g.Weight > 0 {
				w[i] = g.Weight
			}
		}
	case att >= 0 && len(gates) > 1:
		for i := range w {
			w[i] = (1 - DefaultAttainmentWeight) / float64(len(gates)-1)
		}
		w[att] = DefaultAttainmentWeight
	default:
		for i := range w {
			w[i] = 1
		}
	}
	total := 0.0
	for _, v := range w {
		total += v
	}
	for i := range w {
		w[i] /= total
	}
	return w
}

// Fraction is a share in (0, 1), written "99%", "99.9%" or 0.99.
type Fraction float64

// UnmarshalYAML implements yaml.Unmarshaler with line:col errors.
func (f *Fraction) UnmarshalYAML(n *yaml.Node) error {
	bad := func() error { return nodeErr(n, "want a share strictly between 0 and 100%%, e.g. 99%% or 0.99") }
	if n.Kind != yaml.ScalarNode {
		return bad()
	}
	t := strings.TrimSpace(n.Value)
	scale := 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSpace(strings.TrimSuffix(t, "%")), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v/scale > 0 && v/scale < 1) {
		return bad()
	}
	*f = Fraction(v / scale)
	return nil
}

// CostRates price replica time when no cost records are given (USD).
type CostRates struct {
	AcceleratorPerHour float64 `yaml:"accelerator_per_hour"` // per replica
	HostPerHour        float64 `yaml:"host_per_hour"`        // per replica
	NetworkPerGB       float64 `yaml:"network_per_gb"`
	IdleReservePerHour float64 `yaml:"idle_reserve_per_hour"` // per arm
}

// TrafficSpec declares the expected share of offered requests per arm.
type TrafficSpec struct {
	CanaryShare float64 `yaml:"canary_share"` // 0 < share < 1
}

// Duration is a YAML duration ("1s", "80ms", "10m"); a bare number is seconds.
type Duration time.Duration

// Seconds returns d in seconds.
func (d Duration) Seconds() float64 { return time.Duration(d).Seconds() }

func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML implements yaml.Unmarshaler with line:col errors.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return nodeErr(n, "want a duration such as 1s or 80ms")
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return nodeErr(n, "%v", err)
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses "1s", "80ms", "1m30s" or a bare number of seconds.
// Negative, NaN and infinite values are errors.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return 0, fmt.Errorf("bad duration %q: want a non-negative duration such as 1s or 80ms", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q: want a non-negative duration such as 1s or 80ms", s)
	}
	return d, nil
}

// MarginKind says on which scale a margin is stated.
type MarginKind string

// Margin kinds.
const (
	MarginPP       MarginKind = "pp"       // percentage points of a fraction: 1pp = 0.01
	MarginPercent  MarginKind = "percent"  // relative change: 2% = 0.02
	MarginDuration MarginKind = "duration" // absolute seconds
)

// Margin is a non-inferiority margin: "1pp", "2%", "50ms".
type Margin struct {
	Kind  MarginKind
	Value float64 // fraction for pp and percent, seconds for duration
	Text  string  // as written
}

// UnmarshalYAML implements yaml.Unmarshaler with line:col errors.
func (m *Margin) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return nodeErr(n, "want a margin such as 1pp, 2%% or 50ms")
	}
	v, err := ParseMargin(n.Value)
	if err != nil {
		return nodeErr(n, "%v", err)
	}
	*m = v
	return nil
}

// ParseMargin parses "1pp", "0.5pp", "2%", "50ms".
func ParseMargin(s string) (Margin, error) {
	t := strings.TrimSpace(s)
	bad := func() (Margin, error) {
		return Margin{}, fmt.Errorf("bad margin %q: want a value from 0 to below 100 in pp (1pp) or percent (2%%), or a non-negative duration (50ms)", s)
	}
	num := func(x string) (float64, bool) {
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && f >= 0 && !math.IsInf(f, 0) && !math.IsNaN(f)
	}
	switch {
	case strings.HasSuffix(t, "pp"):
		f, ok := num(strings.TrimSuffix(t, "pp"))
		if !ok || f >= 100 {
			return bad()
		}
		return Margin{Kind: MarginPP, Value: f / 100, Text: t}, nil
	case strings.HasSuffix(t, "%"):
		f, ok := num(strings.TrimSuffix(t, "%"))
		if !ok || f >= 100 {
			return bad()
		}
		return Margin{Kind: MarginPercent, Value: f / 100, Text: t}, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return bad()
	}
	return Margin{Kind: MarginDuration, Value: d.Seconds(), Text: t}, nil
}

// Error is a policy error with its position.
type Error struct {
	Source string // file path or "builtin:NAME"
	Line   int
	Col    int
	Msg    string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.Source, e.Line, e.Col, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Source, e.Msg)
}

type posError struct {
	line, col int
	msg       string
}

func (e *posError) Error() string { return fmt.Sprintf("%d:%d: %s", e.line, e.col, e.msg) }

func nodeErr(n *yaml.Node, format string, a ...any) error {
	return &posError{line: n.Line, col: n.Column, msg: fmt.Sprintf(format, a...)}
}

// Names lists the built-in policies, sorted.
func Names() []string {
	ents, err := builtinFS.ReadDir("builtin")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}

// BuiltinText returns the YAML of a built-in policy.
func BuiltinText(name string) ([]byte, bool) {
	b, err := builtinFS.ReadFile(path.Join("builtin", name+".yaml"))
	return b, err == nil
}

// Builtin returns a parsed built-in policy.
func Builtin(name string) (*Policy, error) {
	b, ok := BuiltinText(name)
	if !ok {
		return nil, fmt.Errorf("no built-in policy %q (built-ins: %s)", name, strings.Join(Names(), ", "))
	}
	p, err := Parse("builtin:"+name, b)
	if err != nil {
		return nil, err
	}
	p.Source = "builtin"
	return p, nil
}

// maxPolicyBytes caps a policy file: a policy is a page of YAML, and a
// large file (or /dev/zero given by mistake) is not one.
const maxPolicyBytes = 1 << 20

// readCapped reads a file of at most max bytes.
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d KiB: not a policy file", path, max>>10)
	}
	return b, nil
}

// Load resolves --policy: a built-in name, or a file path (anything with a
// path separator or a .yaml/.yml suffix, or an existing file).
func Load(nameOrPath string) (*Policy, error) {
	if nameOrPath == "" {
		nameOrPath = DefaultName
	}
	if _, ok := BuiltinText(nameOrPath); ok && !strings.ContainsAny(nameOrPath, "/\\.") {
		return Builtin(nameOrPath)
	}
	b, err := readCapped(nameOrPath, maxPolicyBytes)
	if err != nil {
		if os.IsNotExist(err) && !strings.ContainsAny(nameOrPath, "/\\.") {
			return nil, fmt.Errorf("no built-in policy %q and no such file (built-ins: %s)", nameOrPath, strings.Join(Names(), ", "))
		}
		return nil, fmt.Errorf("policy: %w", err)
	}
	return Parse(nameOrPath, b)
}

// Parse parses and validates a policy. source names it in errors.
func Parse(source string, data []byte) (*Policy, error) {
	wrap := func(err error) error {
		if pe, ok := err.(*posError); ok {
			return &Error{Source: source, Line: pe.line, Col: pe.col, Msg: pe.msg}
		}
		return &Error{Source: source, Msg: err.Error()}
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return nil, &Error{Source: source, Msg: strings.TrimPrefix(err.Error(), "yaml: ") + " (policies are YAML)"}
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{Source: source, Line: 1, Col: 1, Msg: "a policy is a YAML mapping (name:, slo:, gates: …)"}
	}
	doc := root.Content[0]
	if err := checkKeys(doc, policySchema(), ""); err != nil {
		return nil, wrap(err)
	}
	var p Policy
	if err := doc.Decode(&p); err != nil {
		if pe := firstPosError(err); pe != nil {
			return nil, wrap(pe)
		}
		return nil, &Error{Source: source, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if err := p.validate(doc); err != nil {
		return nil, wrap(err)
	}
	p.Source = source
	p.Text = data
	sum := sha256.Sum256(data)
	p.SHA256 = hex.EncodeToString(sum[:])
	return &p, nil
}

func firstPosError(err error) *posError {
	if pe, ok := err.(*posError); ok {
		return pe
	}
	if te, ok := err.(*yaml.TypeError); ok && len(te.Errors) > 0 {
		// yaml.v3 formats as "line N: msg"
		msg := te.Errors[0]
		var line int
		if _, e := fmt.Sscanf(msg, "line %d:", &line); e == nil {
			return &posError{line: line, col: 1, msg: strings.TrimSpace(msg[strings.Index(msg, ":")+1:])}
		}
	}
	return nil
}

// schema is the set of allowed keys at each mapping, for line:col errors on
// unknown keys (yaml.v3's KnownFields reports no column).
type schema map[string]schema

func sloSchema() schema {
	return schema{"ttft": nil, "tpot": nil, "e2e": nil, "max_itl": nil, "quality": nil, "min_output_tokens": nil}
}

// policySchema is the key tree of a policy; nil marks a leaf.
func policySchema() schema {
	var leaf schema
	return schema{
		"name": leaf, "description": leaf, "confidence": leaf,
		"slo": sloSchema(),
		"classes": {"[]": {"name": leaf, "slo": sloSchema(), "when": {
			"label":         leaf,
			"prompt_tokens": {"min": leaf, "max": leaf},
			"output_tokens": {"min": leaf, "max": leaf},
		}}},
		"window":    {"warmup": leaf, "bucket": leaf, "max_warmup": leaf, "persistence": leaf, "implausible": leaf, "untimed": leaf},
		"normalize": {"mix": leaf, "cache": leaf, "load": leaf, "canary_replica_loss": leaf, "canary_dip": leaf, "baseline_dip": leaf, "shared_dip": leaf, "prompt_bands": leaf, "weights": {"*": leaf}},
		"gates":     {"[]": {"metric": leaf, "margin": leaf, "guardrail": leaf, "weight": leaf, "target": leaf, "direction": leaf}},
		"cost":      {"accelerator_per_hour": leaf, "host_per_hour": leaf, "network_per_gb": leaf, "idle_reserve_per_hour": leaf},
		"traffic":   {"canary_share": leaf},
	}
}

func checkKeys(n *yaml.Node, s schema, at string) error {
	switch n.Kind {
	case yaml.MappingNode:
		if s == nil {
			return nodeErr(n, "%s: want a single value, not a mapping", at)
		}
		if _, ok := s["[]"]; ok {
			return nodeErr(n, "%s: want a list", at)
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := at + "." + k.Value
			if at == "" {
				key = k.Value
			}
			if seen[k.Value] {
				return nodeErr(k, "duplicate key %q", key)
			}
			seen[k.Value] = true
			sub, ok := s[k.Value]
			if !ok {
				if wild, ok := s["*"]; ok {
					sub = wild
				} else {
					return nodeErr(k, "unknown key %q (allowed here: %s)", key, strings.Join(keysOf(s), ", "))
				}
			}
			if err := checkKeys(v, sub, key); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		item, ok := s["[]"]
		if !ok {
			if s == nil {
				// a flow list as a leaf value (e.g. label: [a, b])
				return nil
			}
			return nodeErr(n, "%s: want a mapping, not a list", at)
		}
		for i, c := range n.Content {
			if err := checkKeys(c, item, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case yaml.AliasNode:
		return nodeErr(n, "%s: YAML aliases are not allowed in policies", at)
	default:
		if s != nil && n.Tag != "!!null" {
			return nodeErr(n, "%s: want a mapping", at)
		}
	}
	return nil
}

func keysOf(s schema) []string {
	var ks []string
	for k := range s {
		if k != "*" && k != "[]" {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}

// find returns the value node at a dotted path ("gates[2].margin"), or the
// document node when absent, for positioning validation errors.
func find(doc *yaml.Node, keys ...any) *yaml.Node {
	n := doc
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return n
			}
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					n, found = n.Content[i+1], true
					break
				}
			}
			if !found {
				return n
			}
		case int:
			if n.Kind != yaml.SequenceNode || k >= len(n.Content) {
				return n
			}
			n = n.Content[k]
		}
	}
	return n
}
