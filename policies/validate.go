package policies

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MetricInfo describes a gateable metric.
type MetricInfo struct {
	Name string
	// Scale is "absolute" (difference canary − baseline, margin in pp or a
	// duration) or "relative" (ratio canary/baseline − 1, margin in %).
	Scale string
	// HigherIsBetter is true for attainment and goodput, false for
	// latency, error rate and cost.
	HigherIsBetter bool
	Unit           string // of the metric's values
	Doc            string
	// Quantile is the probability for latency quantile metrics (0.99 for
	// ttft_p99); 0 otherwise. Latency names the latency ("ttft", "tpot", "e2e").
	Quantile float64
	Latency  string
	// RequestsOnly marks metrics that need per-request records (retries,
	// output lengths, cancels): aggregate metrics inputs cannot give them.
	RequestsOnly bool
}

// Direction is the metric's own direction as reports name it:
// "higher_is_better" or "lower_is_better".
func (m MetricInfo) Direction() string {
	if m.HigherIsBetter {
		return "higher_is_better"
	}
	return "lower_is_better"
}

// Metrics returns the catalog of gateable metrics, sorted by name.
func Metrics() []MetricInfo {
	ms := []MetricInfo{
		{Name: "slo_attainment", Scale: "absolute", HigherIsBetter: true, Unit: "fraction", Doc: "good / offered requests"},
		{Name: "error_rate", Scale: "absolute", Unit: "fraction", Doc: "failed (error, timeout, or canceled_by server) / offered requests; usually a guardrail"},
		{Name: "rejected_share", Scale: "absolute", Unit: "fraction", Doc: "rejected / offered requests; usually a guardrail"},
		{Name: "canceled_share", Scale: "absolute", Unit: "fraction", RequestsOnly: true, Doc: "canceled (by the client, or by someone the log does not name) / offered requests; usually a guardrail"},
		{Name: "retry_share", Scale: "absolute", Unit: "fraction", RequestsOnly: true, Doc: "offered requests that are retries (attempt > 1) / offered requests; usually a guardrail"},
		{Name: "output_tokens_mean", Scale: "relative", HigherIsBetter: true, Unit: "tokens", RequestsOnly: true, Doc: "mean output tokens per completed request; a guardrail against truncated answers (two_sided: against answers that run on too)"},
		{Name: "goodput", Scale: "relative", HigherIsBetter: true, Unit: "req/s", Doc: "good requests per second of window"},
		{Name: "goodput_per_replica", Scale: "relative", HigherIsBetter: true, Unit: "req/s/replica", Doc: "good requests per replica-second"},
		{Name: "token_goodput", Scale: "relative", HigherIsBetter: true, Unit: "tokens/s", Doc: "output tokens of good requests per second"},
		{Name: "cost_per_good_request", Scale: "relative", Unit: "USD", Doc: "cost over the window / good requests"},
		{Name: "energy_per_good_request", Scale: "relative", Unit: "J", Doc: "GPU energy (power × time, from DCGM or engine GPU gauges) / good requests, at matched load"},
		{Name: "gpu_seconds_per_good_request", Scale: "relative", Unit: "GPU·s", Doc: "busy GPU-seconds (utilisation × GPUs × time) / good requests, at matched load"},
		{Name: "capacity", Scale: "relative", HigherIsBetter: true, Unit: "req/s", Doc: "highest request rate whose SLO attainment stays at or above the gate's target (default 99%); judged by goodput capacity on rate sweeps, not by goodput judge"},
	}
	for _, lat := range []string{"ttft", "tpot", "e2e"} {
		for _, q := range []int{50, 90, 95, 99} {
			ms = append(ms, MetricInfo{Name: fmt.Sprintf("%s_p%d", lat, q), Scale: "relative", Unit: "s",
				Doc: fmt.Sprintf("p%d of %s over completed requests", q, strings.ToUpper(lat)), Quantile: float64(q) / 100, Latency: lat})
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Name < ms[j].Name })
	return ms
}

// Metric looks up a gateable metric by name.
func Metric(name string) (MetricInfo, bool) {
	for _, m := range Metrics() {
		if m.Name == name {
			return m, true
		}
	}
	return MetricInfo{}, false
}

func metricNames() string {
	var ns []string
	for _, m := range Metrics() {
		ns = append(ns, m.Name)
	}
	return strings.Join(ns, ", ")
}

// didYouMean is "; did you mean X?" for the known metric within two
// edits (insertions, deletions, substitutions) of name, the nearest and
// then the first in Metrics' order; "" when none is.
func didYouMean(name string) string {
	best, bestD := "", 3
	for _, m := range Metrics() {
		if d := editDistance(name, m.Name); d < bestD {
			best, bestD = m.Name, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Alpha is 1 − Confidence: the one-sided error rate of each gate decision.
func (p *Policy) Alpha() float64 { return 1 - p.Confidence }

// ClassSLO returns the SLO of a class name, "" for the default.
func (p *Policy) ClassSLO(name string) SLO {
	for _, c := range p.Classes {
		if c.Name == name {
			return c.SLO
		}
	}
	return p.SLO
}

func (p *Policy) validate(doc *yaml.Node) error {
	if strings.TrimSpace(p.Name) == "" {
		return nodeErr(doc, "the policy needs a name")
	}
	if s := p.SLO; s.TTFT == 0 && s.TPOT == 0 && s.E2E == 0 && s.MaxITL == 0 && s.Quality == "" {
		return nodeErr(find(doc, "slo"), "slo: declare at least one criterion (ttft, tpot, e2e, max_itl or quality)")
	}
	if err := checkQuality(p.SLO.Quality, find(doc, "slo", "quality")); err != nil {
		return err
	}
	if m := p.SLO.MinOutputTokens; m != nil && *m < 0 {
		return nodeErr(find(doc, "slo", "min_output_tokens"), "slo.min_output_tokens: %d is negative; give 0 or more tokens", *m)
	}
	if err := checkBareSeconds(doc, "slo"); err != nil {
		return err
	}
	names := map[string]bool{}
	for i := range p.Classes {
		c := &p.Classes[i]
		if c.Name == "" {
			return nodeErr(find(doc, "classes", i), "classes[%d]: a class needs a name", i)
		}
		if c.Name == "default" || names[c.Name] {
			return nodeErr(find(doc, "classes", i, "name"), "classes[%d]: duplicate or reserved class name %q", i, c.Name)
		}
		names[c.Name] = true
		if err := checkQuality(c.SLO.Quality, find(doc, "classes", i, "slo", "quality")); err != nil {
			return err
		}
		if err := checkBareSeconds(doc, "classes", i, "slo"); err != nil {
			return err
		}
		for _, r := range []struct {
			key string
			r   *Range
		}{{"prompt_tokens", c.When.PromptTokens}, {"output_tokens", c.When.OutputTokens}} {
			if r.r != nil && r.r.Min != nil && r.r.Max != nil && *r.r.Max <= *r.r.Min {
				return nodeErr(find(doc, "classes", i, "when", r.key), "classes[%d].when.%s: max must be greater than min", i, r.key)
			}
		}
		// inherit unset SLO keys from the policy SLO
		if c.SLO.TTFT == 0 {
			c.SLO.TTFT = p.SLO.TTFT
		}
		if c.SLO.TPOT == 0 {
			c.SLO.TPOT = p.SLO.TPOT
		}
		if c.SLO.E2E == 0 {
			c.SLO.E2E = p.SLO.E2E
		}
		if c.SLO.MaxITL == 0 {
			c.SLO.MaxITL = p.SLO.MaxITL
		}
		if c.SLO.Quality == "" {
			c.SLO.Quality = p.SLO.Quality
		}
		if m := c.SLO.MinOutputTokens; m != nil && *m < 0 {
			return nodeErr(find(doc, "classes", i, "slo", "min_output_tokens"), "classes[%d].slo.min_output_tokens: %d is negative; give 0 or more tokens", i, *m)
		}
		if c.SLO.MinOutputTokens == nil {
			c.SLO.MinOutputTokens = p.SLO.MinOutputTokens
		}
	}
	switch w := p.Window.Warmup; {
	case w == "":
		p.Window.Warmup = "none"
	case w == "auto" || w == "none":
	default:
		if _, err := time.ParseDuration(w); err != nil {
			return nodeErr(find(doc, "window", "warmup"), "window.warmup: %q is not auto, none or a duration such as 2m", w)
		}
	}
	if p.Window.Bucket == 0 {
		p.Window.Bucket = Duration(10 * time.Second)
	}
	if err := oneOf(doc, p.Window.Implausible, "error", []string{"error", "drop"}, "window", "implausible"); err != nil {
		return err
	}
	if b := time.Duration(p.Window.Bucket); b < time.Second || b > 10*time.Minute {
		return nodeErr(find(doc, "window", "bucket"), "window.bucket: %v is outside 1s … 10m", b)
	}
	if d := time.Duration(p.Window.Persistence); d > 24*time.Hour {
		return nodeErr(find(doc, "window", "persistence"), "window.persistence: %v is longer than a day; give the correlation time of the fleet's own slowdowns, e.g. 3m", d)
	}
	if err := oneOf(doc, p.Window.Untimed, "runs", []string{"runs", "requests"}, "window", "untimed"); err != nil {
		return err
	}
	if p.Window.Untimed == "" {
		p.Window.Untimed = "runs"
	}
	if err := oneOf(doc, p.Normalize.Mix, "none", []string{"none", "baseline", "canary", "pooled", "weights"}, "normalize", "mix"); err != nil {
		return err
	}
	if p.Normalize.Mix == "" {
		p.Normalize.Mix = "none"
	}
	if p.Normalize.Mix == "weights" && len(p.Normalize.Weights) == 0 {
		return nodeErr(find(doc, "normalize", "mix"), "normalize.mix: weights needs normalize.weights (class: share)")
	}
	for k, v := range p.Normalize.Weights {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nodeErr(find(doc, "normalize", "weights", k), "normalize.weights.%s: want a share ≥ 0", k)
		}
	}
	if err := oneOf(doc, p.Normalize.Cache, "none", []string{"none", "auto", "stratify", "adjust"}, "normalize", "cache"); err != nil {
		return err
	}
	if p.Normalize.Cache == "" {
		p.Normalize.Cache = "none"
	}
	if err := oneOf(doc, p.Normalize.Load, "none", []string{"none", "matched", "flag"}, "normalize", "load"); err != nil {
		return err
	}
	if p.Normalize.Load == "" {
		p.Normalize.Load = "none"
	}
	if err := oneOf(doc, p.Normalize.CanaryReplicaLoss, "blame", []string{"blame", "excuse"}, "normalize", "canary_replica_loss"); err != nil {
		return err
	}
	if p.Normalize.CanaryReplicaLoss == "" {
		p.Normalize.CanaryReplicaLoss = "blame"
	}
	if err := oneOf(doc, p.Normalize.CanaryDip, "blame", []string{"blame", "excuse"}, "normalize", "canary_dip"); err != nil {
		return err
	}
	if p.Normalize.CanaryDip == "" {
		p.Normalize.CanaryDip = "blame"
	}
	if err := oneOf(doc, p.Normalize.BaselineDip, "exclude", []string{"exclude", "keep"}, "normalize", "baseline_dip"); err != nil {
		return err
	}
	if p.Normalize.BaselineDip == "" {
		p.Normalize.BaselineDip = "exclude"
	}
	if err := oneOf(doc, p.Normalize.SharedDip, "exclude", []string{"exclude", "keep"}, "normalize", "shared_dip"); err != nil {
		return err
	}
	if p.Normalize.SharedDip == "" {
		p.Normalize.SharedDip = "exclude"
	}
	if err := oneOf(doc, p.Normalize.PromptBands, "unlabelled", []string{"unlabelled", "all"}, "normalize", "prompt_bands"); err != nil {
		return err
	}
	if p.Normalize.PromptBands == "" {
		p.Normalize.PromptBands = "unlabelled"
	}
	if len(p.Gates) == 0 {
		return nodeErr(find(doc, "gates"), "gates: declare at least one gated metric (%s)", metricNames())
	}
	seen := map[string]bool{}
	for i, g := range p.Gates {
		m, ok := Metric(g.Metric)
		if !ok {
			return nodeErr(find(doc, "gates", i, "metric"), "gates[%d].metric: unknown metric %q%s (known: %s)", i, g.Metric, didYouMean(g.Metric), metricNames())
		}
		if seen[g.Metric] {
			return nodeErr(find(doc, "gates", i, "metric"), "gates[%d].metric: %s is gated twice", i, g.Metric)
		}
		seen[g.Metric] = true
		if g.Target != 0 && g.Metric != "capacity" {
			return nodeErr(find(doc, "gates", i, "target"), "gates[%d].target: only a capacity gate has a target (the attainment it must hold), not %s", i, g.Metric)
		}
		if g.Margin.Text == "" {
			return nodeErr(find(doc, "gates", i), "gates[%d]: %s needs a margin", i, g.Metric)
		}
		want := "pp (e.g. 1pp)"
		okKind := g.Margin.Kind == MarginPP
		if m.Scale == "relative" {
			want, okKind = "percent (e.g. 5%)", g.Margin.Kind == MarginPercent
		}
		if !okKind {
			return nodeErr(find(doc, "gates", i, "margin"), "gates[%d].margin: %s is compared on the %s scale: state its margin in %s, not %q",
				i, g.Metric, m.Scale, want, g.Margin.Text)
		}
		if g.Weight < 0 || math.IsNaN(g.Weight) || math.IsInf(g.Weight, 0) {
			return nodeErr(find(doc, "gates", i, "weight"), "gates[%d].weight: %g is not a finite number ≥ 0 (its share of α in the weighted Holm step)", i, g.Weight)
		}
		own := m.Direction()
		switch g.Direction {
		case "", own:
			p.Gates[i].Direction = ""
		case TwoSided:
			if g.Metric == "capacity" || m.Latency != "" {
				return nodeErr(find(doc, "gates", i, "direction"), "gates[%d].direction: %s is judged in one direction (%s); two_sided is for counts and means such as output_tokens_mean; leave direction out",
					i, g.Metric, strings.ReplaceAll(own, "_", " "))
			}
		default:
			return nodeErr(find(doc, "gates", i, "direction"), "gates[%d].direction: %q is not a direction of %s: want %s (a change either way beyond the margin is harm) or leave it out (harm is %s)",
				i, g.Direction, g.Metric, TwoSided, strings.ReplaceAll(own, "_", " "))
		}
	}
	if p.Confidence == 0 {
		p.Confidence = 0.95
	}
	if !(p.Confidence > 0.5 && p.Confidence < 1) {
		return nodeErr(find(doc, "confidence"), "confidence: %v is outside (0.5, 1); e.g. 0.95", p.Confidence)
	}
	if c := p.Cost; c != nil {
		for _, v := range []struct {
			k string
			v float64
		}{{"accelerator_per_hour", c.AcceleratorPerHour}, {"host_per_hour", c.HostPerHour}, {"network_per_gb", c.NetworkPerGB}, {"idle_reserve_per_hour", c.IdleReservePerHour}} {
			if v.v < 0 || math.IsNaN(v.v) || math.IsInf(v.v, 0) {
				return nodeErr(find(doc, "cost", v.k), "cost.%s: want a rate ≥ 0 (USD)", v.k)
			}
		}
	}
	if t := p.Traffic; t != nil && !(t.CanaryShare > 0 && t.CanaryShare < 1) {
		return nodeErr(find(doc, "traffic", "canary_share"), "traffic.canary_share: want a share strictly between 0 and 1, e.g. 0.5")
	}
	return nil
}

func checkQuality(q string, n *yaml.Node) error {
	if q != "" && q != "required" {
		return nodeErr(n, "quality: %q is not a setting; write quality: required, or leave it out", q)
	}
	return nil
}

func oneOf(doc *yaml.Node, v, _ string, allowed []string, path ...string) error {
	if v == "" {
		return nil
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	keys := make([]any, len(path))
	for i, p := range path {
		keys[i] = p
	}
	return nodeErr(find(doc, keys...), "%s: %q is not one of %s", strings.Join(path, "."), v, strings.Join(allowed, ", "))
}

// bareSecondsLimit is, per SLO criterion, the smallest bare number (read
// as seconds) that is refused as a bound no service of its kind sets: a
// token every 10 s, or a first token after a minute, is a number written
// in milliseconds without its unit ("tpot: 80" for 80 ms would make every
// request good). A value with its unit ("80s") is taken as written; e2e
// bounds are not checked (batch jobs take hours).
var bareSecondsLimit = [...]struct {
	key, what string
	limit     float64
}{{"ttft", "to the first token", 60}, {"tpot", "a token", 10}, {"max_itl", "between two tokens", 10}}

// checkBareSeconds refuses an SLO criterion under path (the policy's
// "slo" or a class's) written as a bare number of seconds at or above its
// bareSecondsLimit, naming the line and the fix.
func checkBareSeconds(doc *yaml.Node, path ...any) error {
	slo := find(doc, path...)
	if slo.Kind != yaml.MappingNode {
		return nil
	}
	where := ""
	for _, k := range path {
		switch k := k.(type) {
		case string:
			if where != "" {
				where += "."
			}
			where += k
		case int:
			where += fmt.Sprintf("[%d]", k)
		}
	}
	for i := 0; i+1 < len(slo.Content); i += 2 {
		key, v := slo.Content[i].Value, slo.Content[i+1]
		for _, b := range bareSecondsLimit {
			if key != b.key || v.Kind != yaml.ScalarNode {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v.Value), 64)
			if err != nil || !(f >= b.limit) {
				continue
			}
			return nodeErr(v, "%s.%s: %s reads as %s s %s (a bare number is seconds), a bound no service sets; write its unit: %sms if that was meant, %ss if not",
				where, key, v.Value, v.Value, b.what, v.Value, v.Value)
		}
	}
	return nil
}
