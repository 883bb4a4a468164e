package github

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/cmd/goodput/internal/github/githubtest"
)

const testToken = "ghs_TESTtoken0123456789abcdefSECRET"

// fakeClock advances only when slept on.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *fakeClock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

func newTestPublisher(t *testing.T, srv *githubtest.Server, key string, clock Clock, debug *bytes.Buffer) *Publisher {
	t.Helper()
	opt := Options{APIURL: srv.URL(), Token: testToken, Owner: "acme", Repo: "infer", Number: 7, Key: key,
		Clock: clock, PerPage: 2}
	if debug != nil {
		opt.Debug = debug
	}
	p, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUpsert_sticky(t *testing.T) {
	srv := githubtest.New("/api/v3", testToken)
	defer srv.Close()
	srv.PerPage = 2
	// five comments by people: the tool's comment lands on page 3
	srv.Seed("acme", "infer", 7, "lgtm", "please rerun", "<!-- goodput:other -->\nnot mine either", "> <!-- goodput:default -->\nquoted", "ok")
	ctx := context.Background()
	var debug bytes.Buffer
	clock := newFakeClock()
	var ids []int64
	for run := 1; run <= 3; run++ {
		p := newTestPublisher(t, srv, "", clock, &debug)
		res, err := p.Upsert(ctx, fmt.Sprintf("run %d", run))
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if res.Created != (run == 1) {
			t.Errorf("run %d: Created = %v", run, res.Created)
		}
		ids = append(ids, res.CommentID)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("comment ids %v: want one comment edited in place", ids)
	}
	var mine []githubtest.Comment
	for _, c := range srv.Comments("acme", "infer", 7) {
		if strings.HasPrefix(c.Body, "<!-- goodput:default -->") {
			mine = append(mine, c)
		}
	}
	if len(mine) != 1 || mine[0].Body != "<!-- goodput:default -->\nrun 3" {
		t.Fatalf("want exactly one tool comment with the last body, got %+v", mine)
	}
	if got := len(srv.Comments("acme", "infer", 7)); got != 6 {
		t.Errorf("%d comments in all, want 6 (5 seeded + 1)", got)
	}
	// pagination really happened, under the prefix, and with the token
	pages := map[string]bool{}
	for _, r := range srv.Requests() {
		if !strings.HasPrefix(r.Path, "/api/v3/repos/acme/infer/issues/") && r.Path != "/api/v3/user" {
			t.Errorf("request outside the API prefix: %s %s", r.Method, r.Path)
		}
		if r.Authorization != "Bearer "+testToken {
			t.Errorf("request without the token: %s %s", r.Method, r.Path)
		}
		if r.Method == http.MethodGet {
			pages[r.Query] = true
		}
	}
	if len(pages) < 3 {
		t.Errorf("listed pages %v: want at least 3 distinct pages", pages)
	}
	if strings.Contains(debug.String(), testToken) {
		t.Error("debug log contains the token")
	}
	if !strings.Contains(debug.String(), "Authorization: [redacted]") {
		t.Errorf("debug log lacks the redacted Authorization header:\n%s", debug.String())
	}
}

func TestUpsert_keys(t *testing.T) {
	srv := githubtest.New("/ghe/api/v3/", testToken)
	defer srv.Close()
	srv.PerPage = 1
	ctx := context.Background()
	for _, run := range []string{"chat", "batch", "chat", "batch"} {
		p := newTestPublisher(t, srv, run, newFakeClock(), nil)
		if _, err := p.Upsert(ctx, "verdict for "+run); err != nil {
			t.Fatal(err)
		}
	}
	cs := srv.Comments("acme", "infer", 7)
	if len(cs) != 2 {
		t.Fatalf("%d comments, want 2 (one per key)", len(cs))
	}
	if cs[0].Body != "<!-- goodput:chat -->\nverdict for chat" || cs[1].Body != "<!-- goodput:batch -->\nverdict for batch" {
		t.Errorf("bodies %q, %q", cs[0].Body, cs[1].Body)
	}
}

func TestUpsert_retries(t *testing.T) {
	reset := func(c *fakeClock, in time.Duration) string {
		return strconv.FormatInt(c.Now().Add(in).Unix(), 10)
	}
	tests := []struct {
		name      string
		faults    func(c *fakeClock) []githubtest.Fault
		wantSlept []time.Duration
		wantErr   string // "" = success
	}{
		{
			name: "primary rate limit, 429, secondary, 5xx then success",
			faults: func(c *fakeClock) []githubtest.Fault {
				return []githubtest.Fault{
					{Status: 403, Header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Limit": "5000", "X-RateLimit-Reset": reset(c, 20*time.Second)},
						Body: `{"message": "API rate limit exceeded", "documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"}`},
					{Status: 429, Header: map[string]string{"Retry-After": "7"}},
					{Status: 403, Body: `{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`},
					{Status: 502},
					{Status: 503},
				}
			},
			wantSlept: []time.Duration{21 * time.Second, 7 * time.Second, time.Minute, 8 * time.Second, 16 * time.Second},
		},
		{
			name: "server errors back off exponentially",
			faults: func(*fakeClock) []githubtest.Fault {
				return []githubtest.Fault{{Status: 500}, {Status: 502}, {Status: 503}}
			},
			wantSlept: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
		},
		{
			name: "5xx until attempts run out",
			faults: func(*fakeClock) []githubtest.Fault {
				return []githubtest.Fault{{Status: 503}, {Status: 503}, {Status: 503}, {Status: 503}, {Status: 503}, {Status: 503}, {Status: 503}}
			},
			wantSlept: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second},
			wantErr:   "listing comments on acme/infer#7: gave up after 6 attempts (server error: 503 Service Unavailable)",
		},
		{
			name: "rate limit resets past the deadline",
			faults: func(c *fakeClock) []githubtest.Fault {
				return []githubtest.Fault{{Status: 403, Header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset(c, time.Hour)},
					Body: `{"message": "API rate limit exceeded"}`}}
			},
			wantErr: "gave up after 1 attempt (rate limit exhausted: 403 with X-RateLimit-Remaining: 0): the next try would have to wait 1h0m1s, past the retry deadline",
		},
		{
			name: "429 Retry-After past the deadline",
			faults: func(*fakeClock) []githubtest.Fault {
				return []githubtest.Fault{{Status: 429, Header: map[string]string{"Retry-After": "600"}}}
			},
			wantErr: "gave up after 1 attempt (rate limited: 429 Too Many Requests)",
		},
		{
			name: "forbidden is not retried",
			faults: func(*fakeClock) []githubtest.Fault {
				return []githubtest.Fault{{Status: 403, Body: `{"message": "Resource not accessible by integration"}`}}
			},
			wantErr: "permissions: pull-requests: write",
		},
		{
			name: "bad credentials",
			faults: func(*fakeClock) []githubtest.Fault {
				return []githubtest.Fault{{Status: 401, Body: `{"message": "Bad credentials"}`}}
			},
			wantErr: "GitHub rejected the token",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := githubtest.New("/api/v3", testToken)
			defer srv.Close()
			clock := newFakeClock()
			srv.FailNext(tt.faults(clock)...)
			var debug bytes.Buffer
			p := newTestPublisher(t, srv, "", clock, &debug)
			res, err := p.Upsert(context.Background(), "body")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !res.Created || len(srv.Comments("acme", "infer", 7)) != 1 {
					t.Errorf("want the comment created once, got %+v and %d comments", res, len(srv.Comments("acme", "infer", 7)))
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
				}
				if n := len(srv.Comments("acme", "infer", 7)); n != 0 {
					t.Errorf("%d comments written despite the error", n)
				}
			}
			if got := clock.Slept(); fmt.Sprint(got) != fmt.Sprint(tt.wantSlept) {
				t.Errorf("slept %v, want %v", got, tt.wantSlept)
			}
			var total time.Duration
			for _, d := range clock.Slept() {
				total += d
			}
			if total > 2*time.Minute {
				t.Errorf("waited %s in all, past the 2m deadline", total)
			}
			for _, out := range []string{debug.String(), fmt.Sprint(err)} {
				if strings.Contains(out, testToken) {
					t.Errorf("token leaked: %s", out)
				}
			}
		})
	}
}

// The token must not leak even when the server echoes it back.
func TestUpsert_redactsEchoedToken(t *testing.T) {
	srv := githubtest.New("/api/v3", testToken)
	defer srv.Close()
	srv.FailNext(githubtest.Fault{Status: 422, Body: `{"message": "Validation Failed for token ` + testToken + `"}`})
	var debug bytes.Buffer
	p := newTestPublisher(t, srv, "", newFakeClock(), &debug)
	_, err := p.Upsert(context.Background(), "body")
	if err == nil {
		t.Fatal("want an error")
	}
	if strings.Contains(err.Error(), testToken) || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error not redacted: %v", err)
	}
	if strings.Contains(debug.String(), testToken) {
		t.Error("debug log contains the token")
	}
}

func TestUpsert_tooLong(t *testing.T) {
	srv := githubtest.New("/api/v3", testToken)
	defer srv.Close()
	p := newTestPublisher(t, srv, "", newFakeClock(), nil)
	_, err := p.Upsert(context.Background(), strings.Repeat("é", MaxCommentChars))
	if err == nil || !strings.Contains(err.Error(), "over GitHub's 65536 limit") {
		t.Fatalf("error %v", err)
	}
	if len(srv.Requests()) != 0 {
		t.Error("a request was sent for an oversize body")
	}
}

func TestNew_validation(t *testing.T) {
	ok := Options{Token: "t", Owner: "o", Repo: "r", Number: 1}
	tests := []struct {
		name    string
		mod     func(*Options)
		wantErr string
	}{
		{"ok", func(*Options) {}, ""},
		{"no token", func(o *Options) { o.Token = "" }, "set GITHUB_TOKEN"},
		{"no repo", func(o *Options) { o.Repo = "" }, "want OWNER/NAME"},
		{"slash in owner", func(o *Options) { o.Owner = "a/b" }, "want OWNER/NAME"},
		{"no number", func(o *Options) { o.Number = 0 }, "positive"},
		{"bad key", func(o *Options) { o.Key = "a b -->" }, "comment key"},
		{"bad url", func(o *Options) { o.APIURL = "ftp://x" }, "GitHub API URL"},
		{"bad page size", func(o *Options) { o.PerPage = 101 }, "page size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.mod(&o)
			_, err := New(o)
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("New: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestMarker(t *testing.T) {
	for key, want := range map[string]string{"": "<!-- goodput:default -->", "chat-p99": "<!-- goodput:chat-p99 -->", "v1.2_x": "<!-- goodput:v1.2_x -->"} {
		got, err := Marker(key)
		if err != nil || got != want {
			t.Errorf("Marker(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
	for _, bad := range []string{"-x", "a b", "x-->", strings.Repeat("k", 65), "ü"} {
		if _, err := Marker(bad); err == nil {
			t.Errorf("Marker(%q): want an error", bad)
		}
	}
}

// A redirect to another host must not carry the token.
func TestAuthTransport_otherHost(t *testing.T) {
	var seen []string
	rt := &authTransport{token: testToken, host: "api.example", next: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen = append(seen, r.URL.Host+"="+r.Header.Get("Authorization"))
		return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}}, nil
	})}
	for _, u := range []string{"https://api.example/x", "https://evil.example/x"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if req.Header.Get("Authorization") != "" {
			t.Error("the caller's request was modified")
		}
	}
	if want := "api.example=Bearer " + testToken + " evil.example="; strings.Join(seen, " ") != want {
		t.Errorf("got %q, want %q", strings.Join(seen, " "), want)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// After a successful response that used up the rate limit, go-github would
// refuse the next request on the wall clock without sending it; the retry
// transport keeps the waiting to itself, so the request goes out.
func TestUpsert_exhaustedLimitOnSuccess(t *testing.T) {
	srv := githubtest.New("/api/v3", testToken)
	defer srv.Close()
	srv.FailNext(githubtest.Fault{Status: 200, Body: `[]`, Header: map[string]string{
		"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset": strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}})
	p := newTestPublisher(t, srv, "", newFakeClock(), nil)
	res, err := p.Upsert(context.Background(), "body")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || len(srv.Comments("acme", "infer", 7)) != 1 {
		t.Errorf("comment not created: %+v", res)
	}
}
