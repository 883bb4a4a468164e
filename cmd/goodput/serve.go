package main

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/report"
	"github.com/goodput-dev/goodput/policies"
)

// serveOptions are the flags of `goodput serve`.
type serveOptions struct {
	Listen string
	// Prometheus is the default API (used when a request names none);
	// Allow lists further APIs a request may name with `prometheus`.
	Prometheus string
	Allow      []string
	// Policies are policy files a request may name (by their name) besides
	// the built-ins; requests cannot read arbitrary files.
	Policies []string
	// TokenEnv names the variable holding the bearer token callers must
	// send; unset or empty: no authentication.
	TokenEnv string
	// Timeout bounds one analysis (default 2 m); MaxConcurrent bounds the
	// analyses running at once (default 2); more get 429.
	Timeout       time.Duration
	MaxConcurrent int
	prom          promOptions // Prometheus credentials, step, profile, timeout
}

const (
	defaultServeTimeout    = 2 * time.Minute
	defaultServeConcurrent = 2
	defaultServeTokenEnv   = "GOODPUT_SERVE_TOKEN"
	maxWebhookBody         = 1 << 20
)

func (a *app) newServeCmd() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve --listen ADDR [--prometheus URL]",
		Short: "Serve canary analyses over HTTP for Argo Rollouts and Flagger",
		Long: `Serve the judge over HTTP for rollout controllers (see docs/rollouts.md).

  GET  /v1/analysis?baseline_selector=…&canary_selector=…&start=…&end=…
       (or last=30m; optional prometheus, policy, step, profile) returns the
       JSON report (the judge's --format json): 200 for pass, fail and
       inconclusive alike, so Argo's web provider reads {$.verdict};
       400 with the reason for a bad query, 503 when the data cannot be read.
  POST /v1/flagger/rollout             Flagger "rollout" webhook: non-2xx (412)
       on fail, 200 on pass and inconclusive.
  POST /v1/flagger/confirm-promotion   Flagger "confirm-promotion" webhook:
       200 only on pass; 412 otherwise (the promotion waits).
  Both webhooks read the options from the payload's metadata map, under the
  query parameters' names. A malformed request gets 400 and unreadable data
  503 from every endpoint.

The service is read-only (GET analyses; the webhooks only read), starts no
processes, bounds each analysis (--timeout) and the analyses running at once
(--max-concurrent; more get 429). A request may name only the Prometheus
URLs given with --prometheus or --allow-prometheus, and only built-in
policies or those given with --policy. When $GOODPUT_SERVE_TOKEN (see
--token-env) is set, callers must send it as "Authorization: Bearer …"; it
is never logged.`,
		Example: `  GOODPUT_SERVE_TOKEN=s3cret goodput serve --listen 127.0.0.1:8080 --prometheus http://prometheus:9090`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runServe(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Listen, "listen", "", "address to listen on, e.g. 127.0.0.1:8080 or :8080")
	fs.StringVar(&o.Prometheus, "prometheus", "", "default Prometheus-compatible API for analyses that name none")
	fs.StringArrayVar(&o.Allow, "allow-prometheus", nil, "further Prometheus API a request may name with prometheus= (repeatable)")
	fs.StringArrayVar(&o.Policies, "policy", nil, "policy YAML file requests may name by its name (repeatable); built-ins are always available")
	fs.StringVar(&o.TokenEnv, "token-env", defaultServeTokenEnv, "environment variable holding the bearer token callers must send (unset or empty: none)")
	fs.DurationVar(&o.Timeout, "timeout", defaultServeTimeout, "longest time one analysis may take")
	fs.IntVar(&o.MaxConcurrent, "max-concurrent", defaultServeConcurrent, "most analyses at once; further requests get 429")
	fs.StringVar(&o.prom.ClassLabel, "class-label", "class", "label of the engine's metrics that carries the request class")
	fs.DurationVar(&o.prom.Step, "step", defaultPromStep, "default bucket width (a request may give step=)")
	fs.StringVar(&o.prom.TokenEnv, "prometheus-token-env", defaultTokenEnv, "environment variable holding a bearer token for Prometheus")
	fs.StringVar(&o.prom.BasicUser, "prometheus-user", "", "basic-auth user for Prometheus; the password is read from --prometheus-password-env")
	fs.StringVar(&o.prom.PasswordEnv, "prometheus-password-env", defaultPasswordEnv, "environment variable holding the basic-auth password")
	fs.StringArrayVar(&o.prom.Headers, "prometheus-header", nil, "extra request header to Prometheus 'Name: value' (repeatable)")
	fs.DurationVar(&o.prom.Timeout, "prometheus-timeout", defaultPromTimeout, "timeout of each request to Prometheus")
	return cmd
}

// server is the validated configuration the handlers close over.
type server struct {
	a        *app
	o        serveOptions
	allowed  []string                    // normalised Prometheus URLs
	policies map[string]*policies.Policy // name → policy (files given with --policy)
	token    string
	sem      chan struct{}
}

func (a *app) runServe(ctx context.Context, o *serveOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Listen == "" {
		return usageError("serve needs --listen ADDR (e.g. 127.0.0.1:8080)")
	}
	s, err := a.newServer(*o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return usageError("--listen %s: %v", o.Listen, err)
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: o.Timeout + 30*time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(a.io.ErrOut, "serving on http://%s (authentication %s)\n", ln.Addr(), map[bool]string{true: "required", false: "off"}[s.token != ""])
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return inputError(err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		fmt.Fprintln(a.io.ErrOut, "stopped")
		return nil
	}
}

func (a *app) newServer(o serveOptions) (*server, error) {
	if o.Timeout <= 0 {
		return nil, usageError("--timeout %v: want a positive duration", o.Timeout)
	}
	if o.MaxConcurrent < 1 {
		return nil, usageError("--max-concurrent %d: want at least 1", o.MaxConcurrent)
	}
	if o.prom.ClassLabel == "" {
		o.prom.ClassLabel = "class"
	}
	s := &server{a: a, o: o, policies: map[string]*policies.Policy{}, sem: make(chan struct{}, o.MaxConcurrent)}
	for _, u := range append([]string{o.Prometheus}, o.Allow...) {
		if u == "" {
			continue
		}
		po := o.prom
		po.URL = u
		if _, err := po.planSource(a.env, a.now); err != nil && !strings.Contains(err.Error(), "selector") {
			return nil, err
		}
		s.allowed = append(s.allowed, strings.TrimSuffix(u, "/"))
	}
	for _, f := range o.Policies {
		p, err := policies.Load(f)
		if err != nil {
			return nil, inputError(err)
		}
		s.policies[p.Name] = p
	}
	if o.TokenEnv != "" {
		s.token = a.env(o.TokenEnv)
	}
	return s, nil
}

func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/analysis", s.analysis)
	mux.HandleFunc("/v1/flagger/rollout", s.flagger(false))
	mux.HandleFunc("/v1/flagger/confirm-promotion", s.flagger(true))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSONStatus(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return s.logged(s.authed(mux))
}

// authed requires the bearer token when one is configured.
func (s *server) authed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.token != "" && r.URL.Path != "/healthz" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="goodput"`)
				writeJSONStatus(w, http.StatusUnauthorized, errBody("missing or wrong bearer token"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(c int) { r.code = c; r.ResponseWriter.WriteHeader(c) }

// logged writes one line per request to stderr: method, path (no query, no
// headers: nothing secret), status and duration.
func (s *server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		fmt.Fprintf(s.a.io.ErrOut, "%s %s %d %v\n", r.Method, sanitizePath(r.URL.Path), rec.code, time.Since(t0).Round(time.Millisecond))
	})
}

func sanitizePath(p string) string {
	return strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return '?'
		}
		return c
	}, p)
}

func errBody(msg string) map[string]string { return map[string]string{"error": msg} }

func writeJSONStatus(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	b, _ := json.Marshal(v)
	_, _ = w.Write(append(b, '\n'))
}

// analysisParams are the options a request may give, by query or metadata name.
func analysisParams() []string {
	return []string{"baseline_selector", "canary_selector", "start", "end", "last", "prometheus", "policy", "step", "profile"}
}

// run validates the options like the CLI does and judges. The int is the
// HTTP status of an error (400 bad options, 503 data not readable, 429 busy).
func (s *server) run(ctx context.Context, get func(string) string) (*analysis.Report, int, error) {
	for _, k := range []string{"baseline_selector", "canary_selector"} {
		if get(k) == "" {
			return nil, http.StatusBadRequest, fmt.Errorf("%s is required (label matchers without braces, e.g. deployment=\"canary\")", k)
		}
	}
	po := s.o.prom
	po.URL = s.o.Prometheus
	if p := get("prometheus"); p != "" {
		if !slices.Contains(s.allowed, strings.TrimSuffix(p, "/")) {
			return nil, http.StatusBadRequest, fmt.Errorf("prometheus %q is not one this service may query (start it with --allow-prometheus)", redactURL(p))
		}
		po.URL = p
	}
	if po.URL == "" {
		return nil, http.StatusBadRequest, errors.New("no Prometheus: give prometheus= or start the service with --prometheus")
	}
	po.BaselineSelector, po.CanarySelector = get("baseline_selector"), get("canary_selector")
	po.Start, po.End = get("start"), get("end")
	if v := get("last"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, http.StatusBadRequest, fmt.Errorf("last %q: want a positive duration such as 30m", v)
		}
		po.Last = d
	}
	if v := get("step"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("step %q: want a duration such as 60s", v)
		}
		po.Step = d
	}
	po.Profile = "auto"
	if v := get("profile"); v != "" {
		po.Profile = v
	}
	polName := get("policy")
	if polName == "" {
		polName = policies.DefaultName
	}
	pol, ok := s.policies[polName]
	if !ok {
		if !slices.Contains(policies.Names(), polName) {
			return nil, http.StatusBadRequest, fmt.Errorf("policy %q: want a built-in (%s) or one the service was started with", polName, strings.Join(policies.Names(), ", "))
		}
		var err error
		if pol, err = policies.Load(polName); err != nil {
			return nil, http.StatusBadRequest, err
		}
	}
	if _, err := po.plan(s.a.env, s.a.now); err != nil {
		return nil, http.StatusBadRequest, unwrapExit(err)
	}
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	default:
		return nil, http.StatusTooManyRequests, fmt.Errorf("%d analyses are running: retry shortly", cap(s.sem))
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Timeout)
	defer cancel()
	base, can, err := po.load(ctx, s.a.env, s.a.now)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.Code == ExitUsage {
			return nil, http.StatusBadRequest, unwrapExit(err)
		}
		return nil, http.StatusServiceUnavailable, unwrapExit(err)
	}
	rep, err := analysis.Judge(&base, &can, analysis.Config{Policy: pol, Seed: 1, Resamples: 2000, ToolVersion: version})
	if err != nil {
		return nil, http.StatusServiceUnavailable, fmt.Errorf("could not evaluate: %w", err)
	}
	rep.ToolVersion = version
	return rep, 0, nil
}

func unwrapExit(err error) error {
	var ee *exitError
	if errors.As(err, &ee) && ee.Err != nil {
		return ee.Err
	}
	return err
}

func (s *server) analysis(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSONStatus(w, http.StatusMethodNotAllowed, errBody("use GET"))
		return
	}
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains(analysisParams(), k) {
			writeJSONStatus(w, http.StatusBadRequest, errBody(fmt.Sprintf("unknown parameter %q (known: %s)", k, strings.Join(analysisParams(), ", "))))
			return
		}
	}
	rep, code, err := s.run(r.Context(), q.Get)
	if err != nil {
		writeJSONStatus(w, code, errBody(err.Error()))
		return
	}
	var buf bytes.Buffer
	if err := report.JSON(&buf, rep); err != nil {
		writeJSONStatus(w, http.StatusInternalServerError, errBody(err.Error()))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// flaggerPayload is the body Flagger posts to a webhook.
type flaggerPayload struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Phase     string            `json:"phase"`
	Checksum  string            `json:"checksum"`
	Metadata  map[string]string `json:"metadata"`
}

// flaggerReply is the webhook's answer body.
type flaggerReply struct {
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons"`
}

// flagger serves the rollout webhook (promotion false: non-2xx only on
// fail) or the confirm-promotion webhook (2xx only on pass).
func (s *server) flagger(promotion bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeJSONStatus(w, http.StatusMethodNotAllowed, errBody("use POST with Flagger's webhook payload"))
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxWebhookBody+1))
		if err != nil || len(body) > maxWebhookBody {
			writeJSONStatus(w, http.StatusBadRequest, errBody("unreadable or oversized body (limit 1 MiB)"))
			return
		}
		var p flaggerPayload
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&p); err != nil {
			writeJSONStatus(w, http.StatusBadRequest, errBody("payload: "+err.Error()))
			return
		}
		for k := range p.Metadata {
			if !slices.Contains(analysisParams(), k) {
				writeJSONStatus(w, http.StatusBadRequest, errBody(fmt.Sprintf("metadata key %q unknown (known: %s)", k, strings.Join(analysisParams(), ", "))))
				return
			}
		}
		rep, code, err := s.run(r.Context(), func(k string) string { return p.Metadata[k] })
		if err != nil {
			writeJSONStatus(w, code, errBody(err.Error()))
			return
		}
		reply := flaggerReply{Verdict: string(rep.Verdict), Reasons: rep.Reasons}
		code = http.StatusOK
		switch {
		case promotion && rep.Verdict != analysis.Pass:
			code = http.StatusPreconditionFailed
		case !promotion && rep.Verdict == analysis.Fail:
			code = http.StatusPreconditionFailed
		}
		writeJSONStatus(w, code, reply)
	}
}
