package prometheus

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

// fakeClock advances only when the code sleeps, so retry budgets are
// deterministic and tests do not wait.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.now = c.now.Add(d)
	return nil
}

func fakeConfig(url string) (Config, *fakeClock) {
	clk := &fakeClock{now: time.Unix(1704067200, 0)}
	return Config{URL: url, Timeout: 2 * time.Second, RetryBudget: 3 * time.Second, Now: clk.Now, Sleep: clk.Sleep}, clk
}

func fakeQuery(t *testing.T) Query {
	start := time.Unix(1704067200, 0)
	return Query{Arm: sources.Canary, Selector: mustSel(t, `deployment="canary"`), Start: start,
		End: start.Add(time.Minute), Step: 15 * time.Second}
}

// fakeProm answers the three endpoints like a Prometheus holding one vLLM
// request counter per arm (5 stops per step), with optional warnings. It
// records every request.
type fakeProm struct {
	warnings []string
	names    []string
	requests []*http.Request
	forms    []string
	// value is the increase per step (default "5"); instant is the
	// result of instant queries (default none).
	value   string
	instant []any
}

func (f *fakeProm) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.requests = append(f.requests, r)
	f.forms = append(f.forms, r.Form.Encode())
	reply := func(data any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data, "warnings": f.warnings})
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/api/v1/label/__name__/values"):
		reply(f.names)
	case strings.HasSuffix(r.URL.Path, "/api/v1/query"):
		res := f.instant
		if res == nil {
			res = []any{}
		}
		reply(map[string]any{"resultType": "vector", "result": res})
	case strings.HasSuffix(r.URL.Path, "/api/v1/query_range"):
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		var values [][]any
		v := f.value
		if v == "" {
			v = "5"
		}
		for ts := start; ts <= end; ts += step {
			values = append(values, []any{ts, v})
		}
		var result []any
		if strings.Contains(r.Form.Get("query"), "increase(") {
			result = append(result, map[string]any{
				"metric": map[string]string{queryLabel: "outcome0", "finished_reason": "stop"},
				"values": values})
		}
		reply(map[string]any{"resultType": "matrix", "result": result})
	default:
		http.NotFound(w, r)
	}
}

func TestFakeServerReadWithAuthAndWarnings(t *testing.T) {
	fp := &fakeProm{names: []string{"vllm:request_success_total"}, warnings: []string{"partial response: store eu-1 down\x1b[31m"}}
	mux := http.NewServeMux()
	mux.Handle("/tenant-a/prometheus/", fp)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	cfg, _ := fakeConfig(srv.URL + "/tenant-a/prometheus")
	cfg.BearerToken = "s3cret-token"
	cfg.Headers = http.Header{"X-Scope-Orgid": {"tenant-a"}}
	src, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := src.Read(context.Background(), fakeQuery(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Agg.Buckets) != 4 {
		t.Fatalf("buckets = %d, want 4", len(ds.Agg.Buckets))
	}
	for _, b := range ds.Agg.Buckets {
		if b.Completed != 5 || b.Failed != 0 || b.Canceled != 0 {
			t.Errorf("bucket %+v", b)
		}
	}
	partial := strings.Join(ds.Agg.Partial, "\n")
	if !strings.Contains(partial, "may be incomplete") || !strings.Contains(partial, "store eu-1 down") || strings.Contains(partial, "\x1b") {
		t.Errorf("partial-response warning not recorded as partial data (or not sanitised): %q", ds.Agg.Partial)
	}
	for _, r := range fp.requests {
		if r.Header.Get("Authorization") != "Bearer s3cret-token" || r.Header.Get("X-Scope-OrgID") != "tenant-a" {
			t.Errorf("%s: headers %v", r.URL.Path, r.Header)
		}
	}
	// the selector reaches PromQL only through the validated matcher
	if !strings.Contains(fp.forms[2], url_(`deployment="canary"`)) {
		t.Errorf("range query form: %s", fp.forms[2])
	}
	for _, in := range ds.Inputs {
		if strings.Contains(in.Path, "s3cret") {
			t.Error("token leaked into inputs")
		}
	}
}

func url_(s string) string {
	r := strings.NewReplacer(`"`, "%22", "=", "%3D")
	return r.Replace(s)
}

func TestFaults(t *testing.T) {
	// a port that was just free: connection refused
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + ln.Addr().String()
	ln.Close()

	var n503 atomic.Int64
	always503 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n503.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "upstream overloaded\x1b]0;pwned\x07")
	}))
	defer always503.Close()

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer slow.Close()

	badData := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected character"}`)
	}))
	defer badData.Close()

	empty := httptest.NewServer(&fakeProm{names: []string{}})
	defer empty.Close()
	gpuOnly := httptest.NewServer(&fakeProm{names: []string{"DCGM_FI_DEV_GPU_UTIL"}})
	defer gpuOnly.Close()
	notJSON := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "<html>login</html>")
	}))
	defer notJSON.Close()

	tests := []struct {
		name    string
		url     string
		timeout time.Duration
		want    []string
		retried bool
	}{
		{"server down", downURL, 0, []string{"cannot connect", "gave up after"}, true},
		{"HTTP 503", always503.URL, 0, []string{"server error: 503", "gave up after", "upstream overloaded"}, true},
		{"slow server past the deadline", slow.URL, 50 * time.Millisecond, []string{"no answer within 50ms", "gave up after"}, true},
		{"bad PromQL is not retried", badData.URL, 0, []string{"bad_data", "parse error"}, false},
		{"no series for the arm", empty.URL, 0, []string{"no series match {deployment=\"canary\"}"}, false},
		{"no request counters", gpuOnly.URL, 0, []string{"no request counters", "DCGM_FI_DEV_GPU_UTIL"}, false},
		{"not a Prometheus API", notJSON.URL, 0, []string{"not Prometheus API JSON"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, clk := fakeConfig(tt.url)
			if tt.timeout > 0 {
				cfg.Timeout = tt.timeout
				cfg.RetryBudget = 4 * tt.timeout
			}
			start := clk.now
			src, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := src.Read(context.Background(), fakeQuery(t))
			if err == nil {
				t.Fatalf("read succeeded: %+v", ds.Agg)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			if strings.ContainsAny(msg, "\x1b\x07") {
				t.Errorf("error carries control characters: %q", msg)
			}
			if !strings.Contains(msg, "canary") && !strings.Contains(msg, "query") {
				t.Errorf("error names neither the arm nor the query: %q", msg)
			}
			retried := src.Queries() > 1 && clk.now.After(start)
			if retried != tt.retried {
				t.Errorf("retried = %v (%d requests), want %v", retried, src.Queries(), tt.retried)
			}
			if tt.retried && clk.now.Sub(start) > cfg.RetryBudget {
				t.Errorf("retried for %v, past the budget %v", clk.now.Sub(start), cfg.RetryBudget)
			}
		})
	}
}

func TestReadRejectsBadQueries(t *testing.T) {
	src, err := New(Config{URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	q := fakeQuery(t)
	bad := []struct {
		name string
		edit func(*Query)
		want string
	}{
		{"no selector", func(q *Query) { q.Selector = nil }, "no selector"},
		{"zero step", func(q *Query) { q.Step = 0 }, "step"},
		{"window shorter than a step", func(q *Query) { q.End = q.Start.Add(10 * time.Second) }, "shorter than one step"},
		{"end before start", func(q *Query) { q.End = q.Start.Add(-time.Hour) }, "shorter than one step"},
	}
	for _, b := range bad {
		qq := q
		b.edit(&qq)
		if _, err := src.Read(context.Background(), qq); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: error %v", b.name, err)
		}
	}
	if src.Queries() != 0 {
		t.Errorf("invalid queries reached the network: %d requests", src.Queries())
	}
	for _, u := range []string{"", "127.0.0.1:9090", "ftp://x"} {
		if _, err := New(Config{URL: u}); err == nil {
			t.Errorf("New(%q) succeeded", u)
		}
	}
}

func TestCanceledContextStopsRetries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	cfg := Config{URL: srv.URL, Sleep: func(ctx context.Context, d time.Duration) error {
		calls++
		if calls == 2 {
			cancel()
		}
		return ctx.Err()
	}}
	src, _ := New(cfg)
	_, err := src.Read(ctx, fakeQuery(t))
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("error = %v", err)
	}
}
