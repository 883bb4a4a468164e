package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// newTestServer starts the service's handler on a loopback httptest server
// over prom (the default API) with the calibration policy file.
func newTestServer(t *testing.T, prom, policyFile string, env map[string]string) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	a := &app{io: &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &logs}, env: func(k string) string { return env[k] },
		clock: func() time.Time { return time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC) }}
	o := serveOptions{Prometheus: prom, TokenEnv: defaultServeTokenEnv, Timeout: 30 * time.Second, MaxConcurrent: 2,
		prom: promOptions{Step: time.Minute, Timeout: time.Second, TokenEnv: defaultTokenEnv, PasswordEnv: defaultPasswordEnv}}
	if policyFile != "" {
		o.Policies = []string{policyFile}
	}
	s, err := a.newServer(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.handler())
	t.Cleanup(ts.Close)
	return ts, &logs
}

// arm options of the fixture: replicate "0" is A/A, "1" the TTFT regression
func armQuery(rep, start, end string) url.Values {
	return url.Values{"baseline_selector": {`deployment="baseline-` + rep + `"`}, "canary_selector": {`deployment="canary-` + rep + `"`},
		"start": {start}, "end": {end}, "policy": {"watch-calibration"}}
}

func getJSON(t *testing.T, ts *httptest.Server, path string, q url.Values, token string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ts.URL+path+"?"+q.Encode(), nil)
	return doJSON(t, ts, req, path, token)
}

// doJSON sends req (with the bearer token when one is given) and decodes
// the JSON body every endpoint answers with, failing the test otherwise.
func doJSON(t *testing.T, ts *httptest.Server, req *http.Request, path, token string) (int, map[string]any) {
	t.Helper()
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s: body is not JSON: %v", path, err)
	}
	return resp.StatusCode, v
}

func postFlagger(t *testing.T, ts *httptest.Server, path string, meta url.Values, token string) (int, map[string]any) {
	t.Helper()
	m := map[string]string{}
	for k, v := range meta {
		m[k] = v[0]
	}
	body, _ := json.Marshal(map[string]any{"name": "podinfo", "namespace": "test", "phase": "Progressing", "checksum": "abc", "metadata": m})
	req, _ := http.NewRequest(http.MethodPost, ts.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return doJSON(t, ts, req, path, token)
}

// TestServeVerdicts drives the Argo JSON and both Flagger endpoints on a
// real Prometheus for a pass, a fail and an inconclusive analysis: Argo
// always gets 200 and the verdict at $.verdict; the rollout webhook is
// non-2xx only on fail; the promotion webhook is 2xx only on pass.
func TestServeVerdicts(t *testing.T) {
	prom, pol := watchFixture(t)
	ts, logs := newTestServer(t, prom, pol, nil)
	cases := []struct {
		name, want string
		q          url.Values
	}{
		{"pass", "pass", armQuery("0", "2026-01-01T00:00:00Z", "2026-01-01T00:12:00Z")},
		{"fail", "fail", armQuery("1", "2026-01-01T00:00:00Z", "2026-01-01T00:12:00Z")},
		// five one-minute buckets: too few to decide
		{"inconclusive", "inconclusive", armQuery("0", "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := getJSON(t, ts, "/v1/analysis", tc.q, "")
			if code != http.StatusOK || body["verdict"] != tc.want {
				t.Fatalf("analysis: %d %v; want 200 with verdict %s", code, body["verdict"], tc.want)
			}
			if _, ok := body["metrics"]; !ok {
				t.Error("analysis: not the JSON report (no metrics)")
			}
			code, body = postFlagger(t, ts, "/v1/flagger/rollout", tc.q, "")
			if wantOK := tc.want != "fail"; (code/100 == 2) != wantOK || body["verdict"] != tc.want {
				t.Errorf("rollout webhook: %d %v; want 2xx=%v", code, body, wantOK)
			}
			code, body = postFlagger(t, ts, "/v1/flagger/confirm-promotion", tc.q, "")
			if wantOK := tc.want == "pass"; (code/100 == 2) != wantOK || body["verdict"] != tc.want {
				t.Errorf("confirm-promotion webhook: %d %v; want 2xx=%v", code, body, wantOK)
			}
		})
	}
	if !strings.Contains(logs.String(), "GET /v1/analysis 200") {
		t.Errorf("no request log: %q", logs.String())
	}
}

// TestServeErrors: bad queries get 400 with the reason (validated as the
// CLI validates), an unreachable Prometheus 503, and neither is ever a 2xx
// from the promotion endpoint; a configured token is required and never
// appears in the logs.
func TestServeErrors(t *testing.T) {
	// a loopback port with nothing listening: Prometheus is down
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	const token = "tok-SECRET-123"
	ts, logs := newTestServer(t, down, "", map[string]string{defaultServeTokenEnv: token})
	good := url.Values{"baseline_selector": {`deployment="b"`}, "canary_selector": {`deployment="c"`}, "last": {"30m"}}
	with := func(k, v string) url.Values {
		q := url.Values{}
		for kk, vv := range good {
			q[kk] = vv
		}
		if v == "" {
			delete(q, k)
		} else {
			q.Set(k, v)
		}
		return q
	}
	for _, tc := range []struct {
		name string
		q    url.Values
		code int
		want string
	}{
		{"no canary selector", with("canary_selector", ""), 400, "canary_selector is required"},
		{"bad selector", with("canary_selector", `deployment=~"(`), 400, "--canary-selector"},
		{"same selectors", with("canary_selector", `deployment="b"`), 400, "are the same"},
		{"bad last", with("last", "soon"), 400, "last"},
		{"start and last", with("start", "2026-01-01T00:00:00Z"), 400, "either --last or --start"},
		{"bad step", with("step", "-1s"), 400, "--step"},
		{"unknown policy", with("policy", "/etc/passwd"), 400, "policy"},
		{"foreign prometheus", with("prometheus", "http://169.254.169.254"), 400, "not one this service may query"},
		{"unknown parameter", with("verbose", "1"), 400, "unknown parameter"},
		{"prometheus down", good, 503, "prometheus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := getJSON(t, ts, "/v1/analysis", tc.q, token)
			if code != tc.code || !strings.Contains(body["error"].(string), tc.want) {
				t.Errorf("analysis: %d %v; want %d naming %q", code, body, tc.code, tc.want)
			}
			for _, path := range []string{"/v1/flagger/confirm-promotion", "/v1/flagger/rollout"} {
				if tc.name == "unknown parameter" {
					continue
				}
				code, body := postFlagger(t, ts, path, tc.q, token)
				if code != tc.code {
					t.Errorf("%s: %d %v; want %d", path, code, body, tc.code)
				}
			}
		})
	}
	if code, _ := getJSON(t, ts, "/v1/analysis", good, ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", code)
	}
	if code, _ := getJSON(t, ts, "/v1/analysis", good, "wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", code)
	}
	resp, err := ts.Client().Post(ts.URL+"/v1/analysis", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /v1/analysis: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/flagger/confirm-promotion", strings.NewReader("not json"))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("malformed payload: %d, want 400", resp.StatusCode)
	}
	if strings.Contains(logs.String(), token) {
		t.Error("the token appears in the logs")
	}
}
