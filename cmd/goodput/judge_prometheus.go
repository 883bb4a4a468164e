package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/engines"
	"github.com/goodput-dev/goodput/sources/prometheus"
)

// promOptions are the judge's flags for reading both arms from a
// Prometheus-compatible API instead of files.
type promOptions struct {
	URL              string        // --prometheus: API base URL (http or https)
	BaselineSelector string        // --baseline-selector: label matchers without braces
	CanarySelector   string        // --canary-selector
	Start, End       string        // --start, --end: RFC 3339 times
	Last             time.Duration // --last: window ending at --end (or now)
	Step             time.Duration // --step: bucket width (default 60 s)
	Profile          string        // --profile: auto, vllm, sglang, tgi or triton
	TokenEnv         string        // --prometheus-token-env: variable holding a bearer token
	BasicUser        string        // --prometheus-user: basic-auth user
	PasswordEnv      string        // --prometheus-password-env: variable holding the basic-auth password
	Headers          []string      // --prometheus-header 'Name: value' (repeatable)
	PathPrefix       string        // --prometheus-path-prefix, e.g. /prometheus for Mimir
	Timeout          time.Duration // --prometheus-timeout: per request (default 30 s)
	ClassLabel       string        // --class-label: label carrying the request class (default "class")
}

// Defaults of the Prometheus flags.
const (
	defaultPromStep    = 60 * time.Second
	defaultPromTimeout = 30 * time.Second
	defaultTokenEnv    = "PROMETHEUS_TOKEN"
	defaultPasswordEnv = "PROMETHEUS_PASSWORD"
)

// addFlags registers the Prometheus flag group on fs.
func (o *promOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "prometheus", "", "read both arms from this Prometheus-compatible API (http[s]://host:port) instead of files")
	fs.StringVar(&o.BaselineSelector, "baseline-selector", "", `label matchers picking the baseline's series, without braces, e.g. 'deployment="baseline"'`)
	fs.StringVar(&o.CanarySelector, "canary-selector", "", `label matchers picking the canary's series, e.g. 'deployment="canary",namespace="llm"'`)
	fs.StringVar(&o.Start, "start", "", "window start, RFC 3339 (e.g. 2026-11-29T14:00:00Z); with --end")
	fs.StringVar(&o.End, "end", "", "window end, RFC 3339; default now when --last is given")
	fs.DurationVar(&o.Last, "last", 0, "window of this length ending at --end or now (e.g. 30m); instead of --start")
	fs.DurationVar(&o.Step, "step", defaultPromStep, "bucket width; at least twice the scrape interval")
	fs.StringVar(&o.Profile, "profile", "auto", "engine metric names: auto, "+strings.Join(engines.EngineNames(), ", "))
	fs.StringVar(&o.TokenEnv, "prometheus-token-env", defaultTokenEnv, "environment variable holding a bearer token (sent when set and non-empty)")
	fs.StringVar(&o.BasicUser, "prometheus-user", "", "basic-auth user; the password is read from --prometheus-password-env")
	fs.StringVar(&o.PasswordEnv, "prometheus-password-env", defaultPasswordEnv, "environment variable holding the basic-auth password")
	fs.StringArrayVar(&o.Headers, "prometheus-header", nil, "extra request header 'Name: value' (repeatable), e.g. 'X-Scope-OrgID: team-a'")
	fs.StringVar(&o.PathPrefix, "prometheus-path-prefix", "", "path prefix of the API, e.g. /prometheus (Mimir) or /select/0/prometheus (VictoriaMetrics cluster)")
	fs.StringVar(&o.ClassLabel, "class-label", "class", "label of the engine's metrics that carries the request class, e.g. model_name to judge per model or LoRA adapter")
	fs.DurationVar(&o.Timeout, "prometheus-timeout", defaultPromTimeout, "timeout of each request to Prometheus; transient failures are retried for twice as long")
}

// enabled reports whether --prometheus was given.
func (o *promOptions) enabled() bool { return o.URL != "" }

// promPlan is the validated form of the options.
type promPlan struct {
	cfg        prometheus.Config
	start, end time.Time
	baseline   engines.Selector
	canary     engines.Selector
}

// plan validates the options against env and the clock. Every error is a
// usage error (exit 2) naming the flag and the fix; no secret is echoed.
func (o *promOptions) plan(env Env, now func() time.Time) (promPlan, error) {
	p, err := o.planSource(env, now)
	if err != nil {
		return p, err
	}
	return o.planWindow(p, now)
}

// planSource validates everything but the window: URL, selectors,
// profile, step, timeout and credentials.
func (o *promOptions) planSource(env Env, now func() time.Time) (promPlan, error) {
	var p promPlan
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return p, usageError("--prometheus %q: want an http:// or https:// URL with a host", redactURL(o.URL))
	}
	if u.User != nil {
		return p, usageError("--prometheus: credentials in the URL are not accepted; use --prometheus-user with --prometheus-password-env, or --prometheus-token-env")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return p, usageError("--prometheus %q: the URL must not carry a query or fragment", redactURL(o.URL))
	}
	if o.PathPrefix != "" {
		if !strings.HasPrefix(o.PathPrefix, "/") || strings.ContainsAny(o.PathPrefix, "?#") {
			return p, usageError("--prometheus-path-prefix %q: want a path starting with /", o.PathPrefix)
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + strings.TrimSuffix(o.PathPrefix, "/")
	}
	p.cfg.URL = strings.TrimSuffix(u.String(), "/")

	if o.BaselineSelector == "" || o.CanarySelector == "" {
		return p, usageError(`--prometheus needs --baseline-selector and --canary-selector (e.g. 'deployment="baseline"' and 'deployment="canary"')`)
	}
	if p.baseline, err = engines.ParseSelector(o.BaselineSelector); err != nil {
		return p, usageError("--baseline-selector: %v", err)
	}
	if p.canary, err = engines.ParseSelector(o.CanarySelector); err != nil {
		return p, usageError("--canary-selector: %v", err)
	}
	if p.baseline.String() == p.canary.String() {
		return p, usageError("--baseline-selector and --canary-selector are the same: both arms would read the same series")
	}

	if o.Profile != "auto" && !contains(engines.EngineNames(), o.Profile) {
		return p, usageError("--profile %q: want auto, %s", o.Profile, strings.Join(engines.EngineNames(), ", "))
	}
	if !validLabelName(o.ClassLabel) {
		return p, usageError("--class-label %q: want a plain label name such as model_name", o.ClassLabel)
	}
	if o.Step <= 0 || o.Step%time.Millisecond != 0 {
		return p, usageError("--step %v: want a positive duration in whole milliseconds (e.g. 30s)", o.Step)
	}
	if o.Timeout <= 0 {
		return p, usageError("--prometheus-timeout %v: want a positive duration", o.Timeout)
	}
	if err := o.planCredentials(&p, env, now); err != nil {
		return p, err
	}
	return p, nil
}

// planWindow validates the window flags into p.start and p.end.
func (o *promOptions) planWindow(p promPlan, now func() time.Time) (promPlan, error) {
	var err error
	// window
	parse := func(flag, v string) (time.Time, error) {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return t, usageError("--%s %q: want an RFC 3339 time such as 2026-11-29T14:00:00Z", flag, v)
		}
		return t, nil
	}
	switch {
	case o.Last > 0 && o.Start != "":
		return p, usageError("give either --last or --start/--end, not both")
	case o.Last < 0:
		return p, usageError("--last %v: want a positive duration", o.Last)
	case o.Last > 0:
		// "now" is rounded down to a whole step, so runs within one step
		// read the same slices (and range caches such as Mimir's hit)
		p.end = now().Truncate(o.Step)
		if o.End != "" {
			if p.end, err = parse("end", o.End); err != nil {
				return p, err
			}
		}
		p.start = p.end.Add(-o.Last)
	case o.Start != "" && o.End != "":
		if p.start, err = parse("start", o.Start); err != nil {
			return p, err
		}
		if p.end, err = parse("end", o.End); err != nil {
			return p, err
		}
	default:
		return p, usageError("--prometheus needs a window: --start T --end T, or --last D (e.g. --last 30m)")
	}
	if !p.end.After(p.start) {
		return p, usageError("the window ends (%s) before it starts (%s)", p.end.UTC().Format(time.RFC3339), p.start.UTC().Format(time.RFC3339))
	}
	if p.end.Sub(p.start) < o.Step {
		return p, usageError("the window (%v) is shorter than one --step (%v)", p.end.Sub(p.start), o.Step)
	}
	return p, nil
}

// planCredentials reads credentials (environment only) and headers into p.cfg.
func (o *promOptions) planCredentials(pp *promPlan, env Env, now func() time.Time) error {
	p := pp
	// credentials: environment only
	token := ""
	if o.TokenEnv != "" {
		token = env(o.TokenEnv)
	}
	if o.BasicUser != "" {
		if token != "" {
			return usageError("both a bearer token ($%s) and --prometheus-user are set: use one", o.TokenEnv)
		}
		if o.PasswordEnv == "" || env(o.PasswordEnv) == "" {
			return usageError("--prometheus-user needs the password in $%s (see --prometheus-password-env)", o.PasswordEnv)
		}
		p.cfg.BasicUser, p.cfg.BasicPassword = o.BasicUser, env(o.PasswordEnv)
	}
	p.cfg.BearerToken = token

	p.cfg.Headers = http.Header{}
	for _, h := range o.Headers {
		name, value, ok := strings.Cut(h, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || !validHeaderName(name) {
			return usageError("--prometheus-header %q: want 'Name: value'", h)
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return usageError("--prometheus-header %s: the value holds a line break", name)
		}
		if strings.EqualFold(name, "Authorization") {
			return usageError("--prometheus-header Authorization: put credentials in the environment (--prometheus-token-env), not on the command line")
		}
		p.cfg.Headers.Add(name, value)
	}
	p.cfg.Timeout = o.Timeout
	p.cfg.RetryBudget = 2 * o.Timeout
	p.cfg.Now = now
	return nil
}

// load reads both arms from Prometheus. Flag problems are usage errors
// (exit 2); an unreachable server, a failed query or an arm without series
// is a could-not-evaluate error (exit 4). Return them unwrapped.
func (o *promOptions) load(ctx context.Context, env Env, now func() time.Time) (baseline, canary sources.Dataset, err error) {
	p, err := o.plan(env, now)
	if err != nil {
		return baseline, canary, err
	}
	src, err := prometheus.New(p.cfg)
	if err != nil {
		return baseline, canary, usageError("%v", err)
	}
	engine := o.Profile
	if engine == "auto" {
		engine = ""
	}
	read := func(arm sources.Arm, sel engines.Selector) (sources.Dataset, error) {
		ds, err := src.Read(ctx, prometheus.Query{Arm: arm, Selector: sel, Start: p.start, End: p.end, Step: o.Step, Engine: engine, ClassLabel: o.ClassLabel})
		if err != nil {
			return ds, inputError(fmt.Errorf("prometheus %s: %w", redactURL(p.cfg.URL), err))
		}
		return ds, nil
	}
	if baseline, err = read(sources.Baseline, p.baseline); err != nil {
		return baseline, canary, err
	}
	if canary, err = read(sources.Canary, p.canary); err != nil {
		return baseline, canary, err
	}
	noteMixedForms(src.HistogramForms(sources.Baseline), src.HistogramForms(sources.Canary), canary.Agg)
	return baseline, canary, nil
}

// noteMixedForms notes, on the canary's aggregate, each latency histogram
// read as a native histogram in one arm and a classic one in the other:
// the arms are still judged, each with bounds from its own bucket edges,
// but a gate needing an edge both arms share (a tail gate's exceedance
// form) may find none.
func noteMixedForms(b, c map[engines.Quantity]prometheus.HistogramForm, agg *sources.Aggregate) {
	if agg == nil {
		return
	}
	for _, hq := range engines.Histograms() {
		fb, fc := b[hq], c[hq]
		if fb == "" || fc == "" || fb == fc {
			continue
		}
		agg.Notes = append(agg.Notes, fmt.Sprintf("%s histograms differ in form between the arms (baseline %s, canary %s): each arm's bounds come from its own bucket edges; only edges both arms have give exact comparisons",
			hq, fb, fc))
	}
}

// redactURL drops any user information from a URL for messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		u.User = url.User("[redacted]")
	}
	return u.String()
}

func validHeaderName(s string) bool {
	for _, c := range s {
		if !(c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// validLabelName reports whether s is a plain Prometheus label name that
// may carry classes (not reserved, not le).
func validLabelName(s string) bool {
	if s == "" || s == "le" || strings.HasPrefix(s, "__") {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
