// Package prometheus reads an arm's metrics-based dataset from a Prometheus
// HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics) with
// github.com/prometheus/client_golang/api.
//
// Aggregation is pushed down to PromQL: per step, increase() of the engine's
// request counters (by finish reason), token and prefix-cache counters and
// histogram buckets (sum by le), summed over the arm's replicas and split by
// the class label where the request counter carries one; increase() handles
// counter resets. A latency histogram is read in native form (exponential
// buckets, queried by its family name) where the arm exports it that way,
// else from its classic _bucket series; never both (see forms). Gauges are averaged over each step (avg_over_time) and
// combined over replicas. Metric names come from the engine profiles in
// package engines, detected per arm from the names the arm's series
// actually have (so a baseline on vLLM V0 names and a canary on V1 names
// both read). Long ranges are split below Prometheus's 11,000 points per
// series; transient failures (HTTP 5xx and 429, refused connections,
// per-request timeouts) are retried with exponential backoff within a
// retry budget; any other failure is an error naming the query. An arm
// without series is an error, never an empty dataset.
package prometheus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/api"
	"github.com/prometheus/common/model"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/engines"
)

// MaxPoints is Prometheus's limit of points per series in one range query
// ((end − start)/step ≤ 11,000).
const MaxPoints = 11000

// Config says how to reach the Prometheus API.
type Config struct {
	// URL is the API base, with any path prefix (e.g.
	// http://mimir:8080/prometheus); /api/v1/… is appended.
	URL string
	// Headers are added to every request (e.g. X-Scope-OrgID for Mimir).
	Headers http.Header
	// BearerToken, when set, is sent as "Authorization: Bearer …". It is
	// never printed.
	BearerToken string
	// BasicUser and BasicPassword, when BasicUser is set, are sent as
	// basic authentication. The password is never printed.
	BasicUser, BasicPassword string
	// Timeout bounds each HTTP request (default 30 s).
	Timeout time.Duration
	// RetryBudget bounds the time spent retrying transient failures of one
	// query, counted from its first attempt (default 60 s). The caller's
	// context deadline, when earlier, wins.
	RetryBudget time.Duration
	// MaxPoints caps points per series per range query (default and
	// maximum MaxPoints).
	MaxPoints int
	// Transport, when set, replaces http.DefaultTransport (tests).
	Transport http.RoundTripper
	// Now is the clock (default time.Now); Sleep waits between retries
	// (default: a context-aware timer). Both injectable for tests.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Source reads datasets from one Prometheus API.
type Source struct {
	cfg     Config
	api     *httpAPI
	queries atomic.Int64

	mu    sync.Mutex
	forms map[sources.Arm]map[engines.Quantity]HistogramForm
}

// New validates cfg and returns a Source. No request is made.
func New(cfg Config) (*Source, error) {
	if cfg.URL == "" {
		return nil, errors.New("prometheus: no URL given")
	}
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("prometheus URL %q: want http:// or https://", cfg.URL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.RetryBudget <= 0 {
		cfg.RetryBudget = 60 * time.Second
	}
	if cfg.MaxPoints <= 0 || cfg.MaxPoints > MaxPoints {
		cfg.MaxPoints = MaxPoints
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	s := &Source{cfg: cfg}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: not a URL with a host", cfg.URL)
	}
	client, err := api.NewClient(api.Config{Address: cfg.URL,
		RoundTripper: &authTransport{cfg: &s.cfg, base: base, count: &s.queries, origin: originOf(u)}})
	if err != nil {
		return nil, fmt.Errorf("prometheus URL %q: %v", cfg.URL, err)
	}
	s.api = &httpAPI{client: client, timeout: cfg.Timeout}
	return s, nil
}

// Queries returns the number of HTTP requests issued so far, retries
// included.
func (s *Source) Queries() int { return int(s.queries.Load()) }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// authTransport adds credentials and headers and counts requests.
// Credentials and headers go only to the configured origin (scheme, host
// and port): a redirect to another host, or from https to http, is
// followed without them, so a token never reaches a server it was not
// given for.
type authTransport struct {
	cfg   *Config
	base  http.RoundTripper
	count *atomic.Int64
	// origin is the configured URL's scheme://host:port.
	origin string
}

// originOf returns scheme://host:port of u, with the scheme's default port
// made explicit; "" when u does not parse.
func originOf(u *url.URL) string {
	if u == nil || u.Host == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(net.JoinHostPort(u.Hostname(), port))
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.count.Add(1)
	if o := originOf(r.URL); o == "" || o != t.origin {
		// another host (a redirect): no credentials, no configured headers
		r = r.Clone(r.Context())
		r.Header.Del("Authorization")
		for k := range t.cfg.Headers {
			r.Header.Del(k)
		}
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, vs := range t.cfg.Headers {
		for _, v := range vs {
			r.Header.Add(k, v)
		}
	}
	switch {
	case t.cfg.BearerToken != "":
		r.Header.Set("Authorization", "Bearer "+t.cfg.BearerToken)
	case t.cfg.BasicUser != "":
		r.SetBasicAuth(t.cfg.BasicUser, t.cfg.BasicPassword)
	}
	return t.base.RoundTrip(r)
}

// Query says what to read for one arm.
type Query struct {
	Arm      sources.Arm
	Selector engines.Selector // the arm's label matchers (validated)
	// Start and End bound the window. Buckets are (Start + k·Step,
	// Start + (k+1)·Step] for k < ⌊(End − Start)/Step⌋; a remainder
	// shorter than a step at the end is not read.
	Start time.Time
	End   time.Time
	// Step is the bucket width (> 0). Use at least twice the scrape
	// interval: increase() needs two samples per step.
	Step time.Duration
	// Engine restricts profile detection: "" or "auto", or one of
	// engines.EngineNames().
	Engine string
	// ClassLabel is the label whose values are the request classes
	// (default engines.ClassLabel, "class"); e.g. model_name to judge per
	// model or LoRA adapter. A plain label name.
	ClassLabel string
}

// classLabel returns the class label in use.
func (q Query) classLabel() string {
	if q.ClassLabel == "" {
		return engines.ClassLabel
	}
	return q.ClassLabel
}

// Read reads one arm: discovers its metric names, detects the engine
// profile, checks histogram bucket layouts, then runs the increase and gauge
// queries over the window (split under MaxPoints).
func (s *Source) Read(ctx context.Context, q Query) (sources.Dataset, error) {
	ds := sources.Dataset{Arm: q.Arm, Clock: sources.ClockEpoch, Location: "server"}
	if len(q.Selector) == 0 {
		return ds, fmt.Errorf("arm %s: no selector: give label matchers that pick the arm's series", q.Arm)
	}
	if !model.LabelName(q.classLabel()).IsValid() || strings.HasPrefix(q.classLabel(), "__") || q.classLabel() == "le" {
		return ds, fmt.Errorf("arm %s: class label %q is not a plain label name", q.Arm, sanitize(q.classLabel(), 80))
	}
	if q.Step <= 0 || q.Step%time.Millisecond != 0 {
		return ds, fmt.Errorf("arm %s: step %v must be a positive whole number of milliseconds", q.Arm, q.Step)
	}
	steps := int(q.End.Sub(q.Start) / q.Step)
	if steps < 1 {
		return ds, fmt.Errorf("arm %s: window %s … %s is shorter than one step (%v)", q.Arm,
			q.Start.UTC().Format(time.RFC3339), q.End.UTC().Format(time.RFC3339), q.Step)
	}
	agg := &sources.Aggregate{Step: q.Step.Seconds()}
	noteSet := map[string]bool{}
	note := func(format string, a ...any) {
		n := fmt.Sprintf(format, a...)
		if !noteSet[n] {
			noteSet[n] = true
			agg.Notes = append(agg.Notes, n)
		}
	}
	partialSet := map[string]bool{}
	partial := func(format string, a ...any) {
		n := fmt.Sprintf(format, a...)
		if !partialSet[n] {
			partialSet[n] = true
			agg.Partial = append(agg.Partial, n)
		}
	}
	run := &runner{s: s, ds: &ds, note: note, partial: partial}

	// 1. discovery
	names, err := run.names(ctx, q)
	if err != nil {
		return ds, err
	}
	if len(names) == 0 {
		return ds, fmt.Errorf("arm %s: no series match {%s} between %s and %s: check the selector and the window",
			q.Arm, q.Selector, q.Start.UTC().Format(time.RFC3339), q.End.UTC().Format(time.RFC3339))
	}
	// a histogram family present only in native form (its own name, no
	// _bucket series) counts as present for detection and resolution
	raw := map[string]bool{}
	for _, n := range names {
		raw[n] = true
	}
	have := maps.Clone(raw)
	detect := slices.Clone(names)
	for n := range histogramFamilies() {
		if raw[n] && !raw[n+"_bucket"] {
			have[n+"_bucket"] = true
			detect = append(detect, n+"_bucket")
		}
	}
	prof, err := engines.Detect(detect, q.Engine)
	if err != nil {
		return ds, fmt.Errorf("arm %s (selector {%s}): %v; metric names found: %s", q.Arm, q.Selector, err,
			sanitize(strings.Join(first(names, 12), ", "), 600))
	}
	res, err := engines.Resolve(prof, func(n string) bool { return have[n] })
	if err != nil {
		return ds, fmt.Errorf("arm %s: %v", q.Arm, err)
	}
	agg.Profile = prof.Name
	for _, n := range res.Notes {
		note("%s", n)
	}
	costOK := have[engines.DefaultOpenCost().Allocation]

	// 2. histogram form per quantity (native or classic), then the classic
	// histograms' layouts: edges every series shares
	native, err := run.forms(ctx, q, res, raw)
	if err != nil {
		return ds, err
	}
	s.setForms(q.Arm, res, native)
	keep, err := run.layouts(ctx, q, res, native)
	if err != nil {
		return ds, err
	}

	// 3. increases and gauges per chunk
	incQ := increaseQuery(q, res, native)
	gaugeQ := gaugeQuery(q, res, costOK)
	b := newBuilder(q, steps, res, keep, note)
	for _, r := range chunks(q.Start.Add(q.Step), steps, q.Step, s.cfg.MaxPoints) {
		m, err := run.rangeQuery(ctx, incQ, r)
		if err != nil {
			return ds, err
		}
		if err := b.addIncreases(m, incQ); err != nil {
			return ds, fmt.Errorf("arm %s (selector {%s}): %w", q.Arm, q.Selector, err)
		}
		for _, hq := range engines.Histograms() {
			if !native[hq] {
				continue
			}
			nq := nativeQuery(q, res.Metrics[hq])
			m, err := run.rangeQuery(ctx, nq, r)
			if err != nil {
				return ds, err
			}
			if err := b.addNative(m, hq, nq); err != nil {
				return ds, fmt.Errorf("arm %s (selector {%s}): %w", q.Arm, q.Selector, err)
			}
		}
		if gaugeQ != "" {
			m, err = run.rangeQuery(ctx, gaugeQ, r)
			if err != nil {
				return ds, err
			}
			b.addGauges(m)
		}
	}
	if err := b.finish(agg); err != nil {
		return ds, fmt.Errorf("arm %s (selector {%s}): %v", q.Arm, q.Selector, err)
	}
	ds.Agg = agg
	ds.Duration = float64(steps) * q.Step.Seconds()
	return ds, nil
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}

// runner issues queries with retries and records inputs and warnings.
type runner struct {
	s       *Source
	ds      *sources.Dataset
	note    func(string, ...any)
	partial func(string, ...any)
}

// record lists a query among the dataset's inputs with the SHA-256 of its
// response body.
func (r *runner) record(query string, digest string) {
	r.ds.Inputs = append(r.ds.Inputs, sources.Input{Path: query, SHA256: digest, Format: "prometheus", Arm: r.ds.Arm})
}

// warnings records an answer's warnings as reasons the data may be
// partial, and its infos as notes.
func (r *runner) warnings(query string, ws Warnings) {
	for _, w := range ws.Partial {
		r.partial("Prometheus warned that its answer may be incomplete (%s): %s", shorten(query, 120), r.redact(sanitize(w, 300)))
	}
	for _, w := range ws.Infos {
		r.note("Prometheus info for %s: %s", shorten(query, 120), r.redact(sanitize(w, 300)))
	}
}

// redact removes the configured secrets from text a server sent back
// (a proxy may echo request headers in an error page).
func (r *runner) redact(s string) string {
	for _, secret := range []string{r.s.cfg.BearerToken, r.s.cfg.BasicPassword} {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// retry runs call until it succeeds, fails permanently, or the retry
// budget is spent. Each attempt has its own timeout.
func (r *runner) retry(ctx context.Context, what string, call func(ctx context.Context) error) error {
	cfg := r.s.cfg
	startAt := cfg.Now()
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, cfg.Timeout)
		err := call(actx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %v (after %d attempt(s))", what, ctx.Err(), attempt)
		}
		transient, msg := classify(err, cfg.Timeout, r.redact)
		if !transient {
			return fmt.Errorf("%s: %s", what, msg)
		}
		if cfg.Now().Add(backoff).Sub(startAt) > cfg.RetryBudget {
			return fmt.Errorf("%s: %s; gave up after %d attempt(s) in %v", what, msg, attempt, cfg.Now().Sub(startAt).Round(time.Millisecond))
		}
		if err := cfg.Sleep(ctx, backoff); err != nil {
			return fmt.Errorf("%s: %s; %v", what, msg, err)
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// classify says whether err is worth retrying and describes it without
// echoing response bodies verbatim.
func classify(err error, timeout time.Duration, redact func(string) string) (bool, string) {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		msg := fmt.Sprintf("%s: %s", apiErr.Type, sanitize(redact(apiErr.Msg), 300))
		switch apiErr.Type {
		case ErrServer:
			if d := sanitize(redact(apiErr.Detail), 200); d != "" {
				msg += " (" + d + ")"
			}
			return true, msg
		case ErrClient:
			return apiErr.Status == http.StatusTooManyRequests, msg
		case ErrTimeout:
			return true, msg
		}
		return false, msg
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true, fmt.Sprintf("no answer within %v", timeout)
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) {
		return true, "cannot connect: " + sanitize(redact(err.Error()), 300)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true, fmt.Sprintf("no answer within %v", timeout)
	}
	return false, sanitize(redact(err.Error()), 300)
}

// sanitize drops control characters from untrusted text and truncates it.
func sanitize(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, s)
	return shorten(strings.TrimSpace(s), n)
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// names lists the metric names that may matter and exist for the arm.
func (r *runner) names(ctx context.Context, q Query) ([]string, error) {
	var alts []string
	for _, n := range engines.AllNames() {
		alts = append(alts, regexp.QuoteMeta(n), regexp.QuoteMeta(n)+"_bucket")
	}
	match := fmt.Sprintf(`{__name__=~%s,%s}`, strconv.Quote(strings.Join(alts, "|")), q.Selector)
	what := fmt.Sprintf("query label values of __name__ for %s", shorten(match, 160))
	var vals []string
	var digest string
	err := r.retry(ctx, what, func(ctx context.Context) error {
		v, ws, err := r.s.api.LabelValues(ctx, "__name__", []string{match}, q.Start, q.End, &digest)
		if err == nil {
			vals = v
			r.warnings("name discovery", ws)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("arm %s: %w", q.Arm, err)
	}
	out := append([]string(nil), vals...)
	sort.Strings(out)
	r.record("label_values(__name__, "+match+")", digest)
	return out, nil
}

func (r *runner) rangeQuery(ctx context.Context, query string, rg Range) (model.Matrix, error) {
	what := fmt.Sprintf("query %s (%s … %s, step %v)", query, rg.Start.UTC().Format(time.RFC3339),
		rg.End.UTC().Format(time.RFC3339), rg.Step)
	var m model.Matrix
	var digest string
	err := r.retry(ctx, what, func(ctx context.Context) error {
		mat, ws, err := r.s.api.QueryRange(ctx, query, rg, &digest)
		if err != nil {
			return err
		}
		m = mat
		r.warnings(query, ws)
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.record(query, digest)
	return m, nil
}

func (r *runner) instantQuery(ctx context.Context, query string, at time.Time) (model.Vector, error) {
	what := fmt.Sprintf("query %s (at %s)", query, at.UTC().Format(time.RFC3339))
	var vec model.Vector
	var digest string
	err := r.retry(ctx, what, func(ctx context.Context) error {
		vv, ws, err := r.s.api.Query(ctx, query, at, &digest)
		if err != nil {
			return err
		}
		vec = vv
		r.warnings(query, ws)
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.record(query, digest)
	return vec, nil
}

// promDuration renders d for PromQL in whole milliseconds.
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

// queryLabel tags each sub-expression's series in combined queries.
const queryLabel = "goodput_query"

// replicaTag tags the per-replica request increases.
const replicaTag = "per_replica"

func tag(expr, value string) string {
	return fmt.Sprintf(`label_replace(%s, %q, %q, "", "")`, expr, queryLabel, value)
}

// layouts finds, per histogram, the bucket edges every series of the arm
// has over the window; an edge only some replicas export would be summed
// over those replicas alone. Returns the kept edges per quantity.
func (r *runner) layouts(ctx context.Context, q Query, res engines.Resolved, native map[engines.Quantity]bool) (map[engines.Quantity]map[float64]bool, error) {
	var parts []string
	window := promDuration(q.End.Sub(q.Start).Truncate(time.Millisecond))
	for _, hq := range engines.Histograms() {
		c, ok := res.Metrics[hq]
		if !ok || native[hq] {
			continue
		}
		parts = append(parts, tag(fmt.Sprintf("last_over_time(%s[%s])", q.Selector.With(c.Name+"_bucket", c.Match), window), string(hq)))
	}
	out := map[engines.Quantity]map[float64]bool{}
	parts = append(parts, saneParts(q, res, native)...)
	if len(parts) == 0 {
		return out, nil
	}
	query := fmt.Sprintf("count by (%s, le) (%s)", queryLabel, strings.Join(parts, " or "))
	vec, err := r.instantQuery(ctx, query, q.End)
	if err != nil {
		return nil, fmt.Errorf("arm %s: %w", q.Arm, err)
	}
	counts := map[engines.Quantity]map[float64]float64{}
	bad := map[string]float64{}
	for _, smp := range vec {
		if what, name, ok := strings.Cut(string(smp.Metric[queryLabel]), " "); ok {
			bad[fmt.Sprintf("%s has %s values", sanitize(name, 120), what)] += float64(smp.Value)
			continue
		}
		hq := engines.Quantity(smp.Metric[queryLabel])
		le, err := strconv.ParseFloat(string(smp.Metric["le"]), 64)
		if err != nil {
			continue
		}
		if counts[hq] == nil {
			counts[hq] = map[float64]float64{}
		}
		counts[hq][le] += float64(smp.Value)
	}
	if len(bad) > 0 {
		var msgs []string
		for m, n := range bad {
			msgs = append(msgs, fmt.Sprintf("%s in %g series", m, n))
		}
		sort.Strings(msgs)
		return nil, fmt.Errorf("arm %s (selector {%s}): %s between %s and %s: counters never go negative or infinite; fix the exporter or narrow the selector",
			q.Arm, q.Selector, strings.Join(msgs, "; "), q.Start.UTC().Format(time.RFC3339), q.End.UTC().Format(time.RFC3339))
	}
	for hq, byLE := range counts {
		most := 0.0
		for _, n := range byLE {
			most = math.Max(most, n)
		}
		out[hq] = map[float64]bool{}
		for le, n := range byLE {
			if n == most {
				out[hq][le] = true
			} else {
				r.note("%s: bucket edge %g is not exported by every replica: dropped", res.Metrics[hq].Name, le)
			}
		}
	}
	return out, nil
}

// saneParts are sub-queries, for the layouts query, that find counters
// going negative or reaching ±Inf in the window: the increases read from
// them would be meaningless (a reset is a drop to a smaller non-negative
// value, which increase() handles). Tagged "negative NAME" and "infinite NAME".
func saneParts(q Query, res engines.Resolved, native map[engines.Quantity]bool) []string {
	window := promDuration(q.End.Sub(q.Start).Truncate(time.Millisecond))
	var names []string
	for _, oc := range res.Outcomes {
		names = append(names, oc.Name)
	}
	for _, cq := range engines.Counters() {
		if c, ok := res.Metrics[cq]; ok {
			names = append(names, c.Name)
		}
	}
	for _, hq := range engines.Histograms() {
		if c, ok := res.Metrics[hq]; ok && !native[hq] {
			names = append(names, c.Name+"_bucket")
		}
	}
	sort.Strings(names)
	names = slices.Compact(names)
	var parts []string
	for _, n := range names {
		sel := q.Selector.With(n, nil)
		parts = append(parts,
			tag(fmt.Sprintf("min_over_time(%s[%s]) < 0", sel, window), "negative "+n),
			tag(fmt.Sprintf("abs(max_over_time(%s[%s])) == +Inf or abs(min_over_time(%s[%s])) == +Inf", sel, window, sel, window), "infinite "+n))
	}
	return parts
}

// increaseQuery combines every counter and histogram increase of the arm
// into one PromQL expression, each part tagged with goodput_query.
// Histograms read in native form are left out: label_replace drops a
// native histogram's value (Prometheus 2.x), so they are queried alone
// (nativeQuery).
func increaseQuery(q Query, res engines.Resolved, native map[engines.Quantity]bool) string {
	step := promDuration(q.Step)
	var parts []string
	for i, oc := range res.Outcomes {
		by := q.classLabel()
		if oc.Label != "" {
			by = oc.Label + ", " + by
		}
		parts = append(parts, tag(fmt.Sprintf("sum by (%s) (increase(%s[%s]))", by, q.Selector.With(oc.Name, nil), step),
			"outcome"+strconv.Itoa(i)))
	}
	// per replica: the first request counter's increase with reason and
	// class summed away, one series per replica (presence and activity)
	if len(res.Outcomes) > 0 {
		oc := res.Outcomes[0]
		without := q.classLabel()
		if oc.Label != "" {
			without = oc.Label + ", " + without
		}
		parts = append(parts, tag(fmt.Sprintf("sum without (%s) (increase(%s[%s]))", without, q.Selector.With(oc.Name, nil), step), replicaTag))
	}
	// per replica: its own TTFT and TPOT bucket increases, class summed
	// away, from which the judge bounds each replica's good requests
	// (the between-replica spread of attainment and of the tail shares)
	for _, hq := range []engines.Quantity{engines.TTFT, engines.TPOT} {
		c, ok := res.Metrics[hq]
		if !ok || native[hq] {
			continue
		}
		parts = append(parts, tag(fmt.Sprintf("sum without (%s) (increase(%s[%s]))", q.classLabel(),
			q.Selector.With(c.Name+"_bucket", c.Match), step), replicaTag+" "+string(hq)))
	}
	for _, cq := range engines.Counters() {
		c, ok := res.Metrics[cq]
		if !ok {
			continue
		}
		parts = append(parts, tag(fmt.Sprintf("sum by (%s) (increase(%s[%s]))", q.classLabel(),
			q.Selector.With(c.Name, c.Match), step), string(cq)))
	}
	for _, hq := range engines.Histograms() {
		c, ok := res.Metrics[hq]
		if !ok || native[hq] {
			continue
		}
		parts = append(parts, tag(fmt.Sprintf("sum by (le, %s) (increase(%s[%s]))", q.classLabel(),
			q.Selector.With(c.Name+"_bucket", c.Match), step), string(hq)))
	}
	return strings.Join(parts, " or ")
}

// gaugeQuery combines the gauges, the replica count and the OpenCost join.
func gaugeQuery(q Query, res engines.Resolved, cost bool) string {
	step := promDuration(q.Step)
	var parts []string
	for _, gq := range engines.Gauges() {
		c, ok := res.Metrics[gq]
		if !ok {
			continue
		}
		agg := "sum"
		if c.Combine == engines.CombineAvg {
			agg = "avg"
		}
		parts = append(parts, tag(fmt.Sprintf("%s(avg_over_time(%s[%s]))", agg, q.Selector.With(c.Name, c.Match), step), string(gq)))
	}
	// requests in flight per replica (running + waiting, the last sample
	// of each step, not an average: the router's reading needs counts),
	// keyed as the per-replica request counters are
	if parts2, ok := inFlightParts(q, res, step); ok {
		parts = append(parts, parts2...)
	}
	// replicas: distinct series of the request counters once reason and
	// class labels are removed
	for i, oc := range res.Outcomes {
		without := q.classLabel()
		if oc.Label != "" {
			without = oc.Label + ", " + without
		}
		parts = append(parts, tag(fmt.Sprintf("count(sum without (%s) (last_over_time(%s[%s])))", without,
			q.Selector.With(oc.Name, nil), step), "replicas"+strconv.Itoa(i)))
	}
	if cost {
		oc := engines.DefaultOpenCost()
		parts = append(parts, tag(fmt.Sprintf("sum(avg_over_time(%s[%s]) * on (%s) group_left () max by (%s) (avg_over_time(%s[%s])))",
			q.Selector.With(oc.Allocation, nil), step, oc.Join, oc.Join, oc.GPUPrice, step), "cost"))
	}
	return strings.Join(parts, " or ")
}

// inFlightTag prefixes the tags of the per-replica in-flight gauges.
const inFlightTag = "in_flight "

// inFlightParts queries each replica's requests running and waiting, the
// last sample in each step, the class label and the gauge's own match
// labels summed away so that a replica's series is named as its request
// counters' are (builder.replicaName). ok is false when the engine does
// not export both gauges: requests running alone stop at the batch limit,
// which would read as an even router.
func inFlightParts(q Query, res engines.Resolved, step string) ([]string, bool) {
	var parts []string
	for _, gq := range []engines.Quantity{engines.Running, engines.Waiting} {
		c, ok := res.Metrics[gq]
		if !ok {
			return nil, false
		}
		without := []string{q.classLabel()}
		for l := range c.Match {
			without = append(without, l)
		}
		sort.Strings(without)
		parts = append(parts, tag(fmt.Sprintf("sum without (%s) (last_over_time(%s[%s]))", strings.Join(without, ", "),
			q.Selector.With(c.Name, c.Match), step), inFlightTag+string(gq)))
	}
	return parts, true
}

// chunks splits the evaluation times first, first+step, … (n of them) into
// ranges of at most maxPoints points.
func chunks(first time.Time, n int, step time.Duration, maxPoints int) []Range {
	var out []Range
	for i := 0; i < n; i += maxPoints {
		m := min(maxPoints, n-i)
		s := first.Add(time.Duration(i) * step)
		out = append(out, Range{Start: s, End: s.Add(time.Duration(m-1) * step), Step: step})
	}
	return out
}
