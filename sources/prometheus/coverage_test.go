package prometheus

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recorder wraps a handler and keeps the credentials each request carried.
type recorder struct {
	mu    sync.Mutex
	h     http.Handler
	auths []string // Authorization + "|" + X-Scope-OrgID per request
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.auths = append(rc.auths, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Scope-OrgID"))
	rc.mu.Unlock()
	rc.h.ServeHTTP(w, r)
}

// TestCredentialsNeverReachAnotherHost: the configured server redirects
// every API call to a second server on another port. The second server
// answers (the read succeeds) but never sees the bearer token, the basic
// password or the configured headers; a redirect within the configured
// origin keeps them.
func TestCredentialsNeverReachAnotherHost(t *testing.T) {
	other := &recorder{h: &fakeProm{names: []string{"vllm:request_success_total"}}}
	otherSrv := httptest.NewServer(other)
	defer otherSrv.Close()
	for _, tc := range []struct {
		name  string
		setup func(*Config)
		want  string // the Authorization the configured host must see
	}{
		{"bearer", func(c *Config) { c.BearerToken = "tok-3f9a-secret" }, "Bearer tok-3f9a-secret"},
		{"basic", func(c *Config) { c.BasicUser, c.BasicPassword = "ops", "pw-77c1-secret" }, "Basic b3BzOnB3LTc3YzEtc2VjcmV0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other.mu.Lock()
			other.auths = nil
			other.mu.Unlock()
			front := &recorder{h: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, otherSrv.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			})}
			frontSrv := httptest.NewServer(front)
			defer frontSrv.Close()
			cfg, _ := fakeConfig(frontSrv.URL)
			cfg.Headers = http.Header{"X-Scope-Orgid": {"tenant-a"}}
			tc.setup(&cfg)
			src, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := src.Read(context.Background(), fakeQuery(t)); err != nil {
				t.Fatalf("read through the redirect: %v", err)
			}
			if len(front.auths) == 0 || len(other.auths) != len(front.auths) {
				t.Fatalf("requests: %d to the configured host, %d to the other", len(front.auths), len(other.auths))
			}
			for _, a := range front.auths {
				if a != tc.want+"|tenant-a" {
					t.Errorf("configured host got %q, want its credentials", a)
				}
			}
			for _, a := range other.auths {
				if a != "|" {
					t.Errorf("another host got credentials or headers: %q", a)
				}
			}
		})
	}

	// a redirect within the same origin keeps the credentials
	inner := &recorder{h: &fakeProm{names: []string{"vllm:request_success_total"}}}
	mux := http.NewServeMux()
	mux.Handle("/v2/", http.StripPrefix("/v2", inner))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v2"+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
	same := httptest.NewServer(mux)
	defer same.Close()
	cfg, _ := fakeConfig(same.URL)
	cfg.BearerToken = "tok-3f9a-secret"
	src, _ := New(cfg)
	if _, err := src.Read(context.Background(), fakeQuery(t)); err != nil {
		t.Fatal(err)
	}
	for _, a := range inner.auths {
		if a != "Bearer tok-3f9a-secret|" {
			t.Errorf("same-origin redirect lost the token: %q", a)
		}
	}
}

// TestBrokenCountersRefused: a counter with negative or infinite values in
// the window, or a negative increase, is an error (exit 4), not data.
func TestBrokenCountersRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		fp   *fakeProm
		want string
	}{
		{"negative raw values", &fakeProm{names: []string{"vllm:request_success_total"},
			instant: []any{map[string]any{"metric": map[string]string{queryLabel: "negative vllm:request_success_total"}, "value": []any{1704067260, "2"}}}},
			"vllm:request_success_total has negative values in 2 series"},
		{"infinite raw values", &fakeProm{names: []string{"vllm:request_success_total"},
			instant: []any{map[string]any{"metric": map[string]string{queryLabel: "infinite vllm:request_success_total"}, "value": []any{1704067260, "1"}}}},
			"vllm:request_success_total has infinite values in 1 series"},
		{"negative increase", &fakeProm{names: []string{"vllm:request_success_total"}, value: "-3"}, "never negative"},
		{"infinite increase", &fakeProm{names: []string{"vllm:request_success_total"}, value: "+Inf"}, "never negative"},
		{"NaN increase", &fakeProm{names: []string{"vllm:request_success_total"}, value: "NaN"}, "never negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.fp)
			defer srv.Close()
			cfg, _ := fakeConfig(srv.URL)
			src, _ := New(cfg)
			_, err := src.Read(context.Background(), fakeQuery(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "canary") {
				t.Errorf("error = %v, want one naming the arm and %q", err, tc.want)
			}
		})
	}
}
