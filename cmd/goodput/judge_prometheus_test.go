package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

var promNow = func() time.Time { return time.Date(2024, 1, 1, 1, 0, 0, 0, time.UTC) }

func parsePromFlags(t *testing.T, args ...string) *promOptions {
	t.Helper()
	o := &promOptions{}
	fs := pflag.NewFlagSet("judge", pflag.ContinueOnError)
	o.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return o
}

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return -1
}

func TestPromFlagsDefaults(t *testing.T) {
	o := parsePromFlags(t)
	if o.enabled() || o.Step != time.Minute || o.Profile != "auto" || o.TokenEnv != "PROMETHEUS_TOKEN" ||
		o.PasswordEnv != "PROMETHEUS_PASSWORD" || o.Timeout != 30*time.Second {
		t.Errorf("defaults = %+v", o)
	}
	o = parsePromFlags(t, "--prometheus", "http://127.0.0.1:9090", "--baseline-selector", `deployment="baseline"`,
		"--canary-selector", `deployment="canary"`, "--last", "30m", "--step", "15s", "--profile", "vllm",
		"--prometheus-header", "X-Scope-OrgID: a", "--prometheus-header", "X-Extra: b", "--prometheus-path-prefix", "/prometheus")
	if !o.enabled() || len(o.Headers) != 2 || o.Last != 30*time.Minute || o.Step != 15*time.Second || o.PathPrefix != "/prometheus" {
		t.Errorf("parsed = %+v", o)
	}
	p, err := o.plan(func(string) string { return "" }, func() time.Time { return promNow().Add(7 * time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	if p.cfg.URL != "http://127.0.0.1:9090/prometheus" || !p.end.Equal(promNow()) || p.end.Sub(p.start) != 30*time.Minute ||
		p.cfg.Headers.Get("X-Scope-OrgID") != "a" || p.cfg.BearerToken != "" {
		t.Errorf("plan = %+v", p)
	}
}

func TestPromPlanErrors(t *testing.T) {
	base := []string{"--prometheus", "http://127.0.0.1:9090", "--baseline-selector", `deployment="baseline"`,
		"--canary-selector", `deployment="canary"`}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no window", nil, nil, "needs a window"},
		{"last and start", []string{"--last", "30m", "--start", "2024-01-01T00:00:00Z"}, nil, "either --last or --start"},
		{"bad start", []string{"--start", "yesterday", "--end", "2024-01-01T00:00:00Z"}, nil, "RFC 3339"},
		{"end before start", []string{"--start", "2024-01-01T01:00:00Z", "--end", "2024-01-01T00:00:00Z"}, nil, "ends"},
		{"window shorter than a step", []string{"--last", "30s"}, nil, "shorter than one --step"},
		{"bad selector", []string{"--last", "1h", "--canary-selector", `deployment="canary"} or vector(1) #`}, nil, "--canary-selector"},
		{"selector with braces", []string{"--last", "1h", "--baseline-selector", `{deployment="baseline"}`}, nil, "without braces"},
		{"same selectors", []string{"--last", "1h", "--canary-selector", `deployment="baseline"`}, nil, "the same"},
		{"unknown profile", []string{"--last", "1h", "--profile", "llamacpp"}, nil, "--profile"},
		{"zero step", []string{"--last", "1h", "--step", "0s"}, nil, "--step"},
		{"user without password", []string{"--last", "1h", "--prometheus-user", "bob"}, nil, "PROMETHEUS_PASSWORD"},
		{"token and user", []string{"--last", "1h", "--prometheus-user", "bob"},
			map[string]string{"PROMETHEUS_TOKEN": "tok-123456", "PROMETHEUS_PASSWORD": "pw-123456"}, "use one"},
		{"bad header", []string{"--last", "1h", "--prometheus-header", "no colon"}, nil, "Name: value"},
		{"authorization header", []string{"--last", "1h", "--prometheus-header", "Authorization: Bearer x"}, nil, "environment"},
		{"credentials in URL", []string{"--last", "1h", "--prometheus", "http://bob:hunter2@127.0.0.1:9090"}, nil, "credentials in the URL"},
		{"not http", []string{"--last", "1h", "--prometheus", "127.0.0.1:9090"}, nil, "http://"},
		{"bad path prefix", []string{"--last", "1h", "--prometheus-path-prefix", "prometheus"}, nil, "starting with /"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := parsePromFlags(t, append(append([]string{}, base...), tt.args...)...)
			env := func(k string) string { return tt.env[k] }
			_, _, err := o.load(context.Background(), env, promNow)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
			if exitCode(err) != ExitUsage {
				t.Errorf("exit code %d, want %d", exitCode(err), ExitUsage)
			}
			for _, secret := range []string{"hunter2", "tok-123456", "pw-123456"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error leaks a secret: %v", err)
				}
			}
		})
	}
}

// fakePromServer answers like a Prometheus holding vLLM request counters
// for both arms (5 completed requests per step); fail makes every request
// a 503 whose body echoes the Authorization header.
type fakePromServer struct {
	mu       sync.Mutex
	fail     bool
	emptyFor string // a selector value whose arm has no series
	headers  []http.Header
}

func (f *fakePromServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.headers = append(f.headers, r.Header.Clone())
	fail := f.fail
	f.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("proxy saw Authorization: " + r.Header.Get("Authorization")))
		return
	}
	_ = r.ParseForm()
	reply := func(data any) {
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/api/v1/label/__name__/values"):
		if f.emptyFor != "" && strings.Contains(r.Form.Get("match[]"), f.emptyFor) {
			reply([]string{})
			return
		}
		reply([]string{"vllm:request_success_total"})
	case strings.HasSuffix(r.URL.Path, "/api/v1/query"):
		reply(map[string]any{"resultType": "vector", "result": []any{}})
	case strings.HasSuffix(r.URL.Path, "/api/v1/query_range"):
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		var values [][]any
		for ts := start; ts <= end; ts += step {
			values = append(values, []any{ts, "5"})
		}
		var result []any
		if strings.Contains(r.Form.Get("query"), "increase(") {
			result = append(result, map[string]any{"metric": map[string]string{"goodput_query": "outcome0", "finished_reason": "stop"}, "values": values})
		}
		reply(map[string]any{"resultType": "matrix", "result": result})
	default:
		http.NotFound(w, r)
	}
}

func TestPromLoad(t *testing.T) {
	fake := &fakePromServer{}
	mux := http.NewServeMux()
	mux.Handle("/prometheus/", fake)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	env := map[string]string{"MY_TOKEN": "tok-abcdef-secret"}
	o := parsePromFlags(t, "--prometheus", srv.URL, "--prometheus-path-prefix", "/prometheus",
		"--baseline-selector", `deployment="baseline"`, "--canary-selector", `deployment="canary"`,
		"--start", "2024-01-01T00:00:00Z", "--end", "2024-01-01T00:10:00Z", "--step", "30s",
		"--prometheus-token-env", "MY_TOKEN", "--prometheus-header", "X-Scope-OrgID: team-a")
	b, c, err := o.load(context.Background(), func(k string) string { return env[k] }, promNow)
	if err != nil {
		t.Fatal(err)
	}
	if b.Agg == nil || c.Agg == nil || len(b.Agg.Buckets) != 20 || b.Arm != "baseline" || c.Arm != "canary" {
		t.Fatalf("datasets: %+v / %+v", b.Agg, c.Agg)
	}
	if b.Agg.Buckets[0].Completed != 5 || b.Agg.Profile != "vllm-v0" { // no V1-only names on the fake server
		t.Errorf("bucket 0 = %+v", b.Agg.Buckets[0])
	}
	for _, h := range fake.headers {
		if h.Get("Authorization") != "Bearer tok-abcdef-secret" || h.Get("X-Scope-OrgID") != "team-a" {
			t.Errorf("request headers %v", h)
		}
	}

	// an arm without series: exit 4, naming the arm and its selector
	o.CanarySelector = `deployment="canary-typo"`
	fake.emptyFor = "canary-typo"
	_, _, err = o.load(context.Background(), func(k string) string { return env[k] }, promNow)
	if err == nil || exitCode(err) != ExitError || !strings.Contains(err.Error(), "arm canary") || !strings.Contains(err.Error(), "canary-typo") {
		t.Errorf("arm without series: err %v code %d", err, exitCode(err))
	}
	fake.emptyFor = ""
	o.CanarySelector = `deployment="canary"`

	// a failing server: exit 4, the secret echoed by the server is redacted
	fake.fail = true
	o.Timeout = 50 * time.Millisecond
	_, _, err = o.load(context.Background(), func(k string) string { return env[k] }, time.Now)
	if err == nil || exitCode(err) != ExitError {
		t.Fatalf("failing server: err %v code %d", err, exitCode(err))
	}
	if strings.Contains(err.Error(), "tok-abcdef-secret") || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "baseline") {
		t.Errorf("failing server error = %v", err)
	}

	// basic auth from the environment
	fake.fail = false
	fake.headers = nil
	o = parsePromFlags(t, "--prometheus", srv.URL+"/prometheus/", "--baseline-selector", `deployment="baseline"`,
		"--canary-selector", `deployment="canary"`, "--last", "5m", "--prometheus-user", "bob", "--step", "1m")
	env = map[string]string{"PROMETHEUS_PASSWORD": "pw-secret"}
	if _, _, err := o.load(context.Background(), func(k string) string { return env[k] }, promNow); err != nil {
		t.Fatal(err)
	}
	if u, p, ok := (&http.Request{Header: fake.headers[0]}).BasicAuth(); !ok || u != "bob" || p != "pw-secret" {
		t.Errorf("basic auth = %q %q %v", u, p, ok)
	}
}
