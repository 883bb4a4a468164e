package github

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Waits used when the response does not say how long to wait.
const (
	backoffBase      = time.Second      // first wait after a 5xx or a connection error; doubles per attempt
	backoffMax       = 30 * time.Second // cap of the doubling
	secondaryWait    = time.Minute      // GitHub asks to wait at least a minute after a secondary rate limit
	minRateLimitWait = time.Second      // floor when a reset time is already past (clock skew)
)

// retryTransport retries rate-limited (403 with X-RateLimit-Remaining: 0 or
// Retry-After, 429) and failed (5xx, connection error) requests, waiting as
// the response asks or with exponential backoff, as long as the wait ends
// before the deadline and attempts remain. Then it hands the last response
// to go-github, which turns it into an error, and records why it stopped.
//
// go-github also refuses requests on its own, before sending them, while a
// rate limit it saw is in force; it checks that on the wall clock. So that
// all waiting happens here, on the injected clock, X-RateLimit-Reset is
// removed from successful responses that report an exhausted limit: the
// next request is then sent, answered 403, and retried here.
type retryTransport struct {
	next     http.RoundTripper
	clock    Clock
	deadline time.Time
	attempts int
	log      *debugLog

	mu     sync.Mutex
	gaveUp *giveUp // why the last request stopped being retried; nil if it was not
}

// giveUp records why a retried request was handed back as failed.
type giveUp struct {
	attempts     int
	reason       string
	wait         time.Duration // the wait the next try needed
	pastDeadline bool
}

func (g *giveUp) String() string {
	if g.pastDeadline {
		return fmt.Sprintf("gave up after %d %s (%s): the next try would have to wait %s, past the retry deadline",
			g.attempts, plural(g.attempts, "attempt", "attempts"), g.reason, g.wait)
	}
	return fmt.Sprintf("gave up after %d %s (%s)", g.attempts, plural(g.attempts, "attempt", "attempts"), g.reason)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	t.mu.Lock()
	t.gaveUp = nil
	t.mu.Unlock()
	for attempt := 1; ; attempt++ {
		r := req
		if attempt > 1 {
			r = req.Clone(ctx)
			if req.Body != nil && req.Body != http.NoBody {
				if req.GetBody == nil {
					return nil, errors.New("cannot retry a request whose body cannot be replayed")
				}
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		resp, err := t.next.RoundTrip(r)
		if ctx.Err() != nil {
			return resp, err
		}
		reason, wait, retry := t.classify(resp, err, attempt)
		if !retry {
			return resp, err
		}
		if attempt >= t.attempts || t.clock.Now().Add(wait).After(t.deadline) {
			t.mu.Lock()
			t.gaveUp = &giveUp{attempts: attempt, reason: reason, wait: wait,
				pastDeadline: attempt < t.attempts}
			t.mu.Unlock()
			t.log.printf("%s %s: %s; not retrying (attempt %d of %d)", req.Method, req.URL.Path, reason, attempt, t.attempts)
			return resp, err
		}
		t.log.printf("%s %s: %s; retrying in %s (attempt %d of %d)", req.Method, req.URL.Path, reason, wait, attempt, t.attempts)
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
		}
		if err := t.clock.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// classify says whether a response (or transport error) is worth retrying,
// why, and after how long.
func (t *retryTransport) classify(resp *http.Response, err error, attempt int) (reason string, wait time.Duration, retry bool) {
	backoff := backoffBase << min(attempt-1, 10)
	if backoff > backoffMax {
		backoff = backoffMax
	}
	if err != nil {
		return "connection error: " + err.Error(), backoff, true
	}
	now := t.clock.Now()
	h := resp.Header
	retryAfter, hasRetryAfter := parseRetryAfter(h.Get("Retry-After"), now)
	reset, hasReset := parseReset(h.Get("X-RateLimit-Reset"), now)
	exhausted := h.Get("X-RateLimit-Remaining") == "0"
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		switch {
		case hasRetryAfter:
			wait = retryAfter
		case exhausted && hasReset:
			wait = reset
		default:
			wait = backoff
		}
		return "rate limited: 429 Too Many Requests", wait, true
	case resp.StatusCode == http.StatusForbidden && exhausted:
		switch {
		case hasRetryAfter:
			wait = retryAfter
		case hasReset:
			wait = reset
		default:
			wait = secondaryWait
		}
		return "rate limit exhausted: 403 with X-RateLimit-Remaining: 0", wait, true
	case resp.StatusCode == http.StatusForbidden && hasRetryAfter:
		return "secondary rate limit: 403 with Retry-After", retryAfter, true
	case resp.StatusCode == http.StatusForbidden:
		if peekContains(resp, "secondary rate limit", "abuse") {
			return "secondary rate limit: 403", secondaryWait, true
		}
		return "", 0, false
	case resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
		wait = backoff
		if hasRetryAfter {
			wait = retryAfter
		}
		return "server error: " + resp.Status, wait, true
	}
	if resp.StatusCode < 400 && exhausted {
		h.Del("X-RateLimit-Reset")
	}
	return "", 0, false
}

// parseRetryAfter reads Retry-After: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return max(time.Duration(s)*time.Second, minRateLimitWait), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), minRateLimitWait), true
	}
	return 0, false
}

// parseReset reads X-RateLimit-Reset (unix seconds) as a wait from now.
func parseReset(v string, now time.Time) (time.Duration, bool) {
	s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, false
	}
	return max(time.Unix(s, 0).Sub(now)+time.Second, minRateLimitWait), true
}

// peekContains reports whether the first 64 KiB of the body contain one of
// the phrases (case-insensitive), leaving the body readable.
func peekContains(resp *http.Response, phrases ...string) bool {
	if resp.Body == nil {
		return false
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	low := strings.ToLower(string(head))
	for _, p := range phrases {
		if strings.Contains(low, p) {
			return true
		}
	}
	return false
}

// debugLog writes the request log with the token redacted; a nil writer
// makes it a no-op.
type debugLog struct {
	w     io.Writer
	token string
	mu    sync.Mutex
}

func newDebugLog(w io.Writer, token string) *debugLog { return &debugLog{w: w, token: token} }

func (l *debugLog) printf(format string, args ...any) {
	if l == nil || l.w == nil {
		return
	}
	line := redact(fmt.Sprintf(format, args...), l.token)
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "github: %s\n", strings.TrimRight(line, "\n"))
}

// debugTransport logs each request as sent (headers included, credentials
// never) and each response status with its rate-limit headers.
type debugTransport struct {
	next http.RoundTripper
	log  *debugLog
}

func (t *debugTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.log.w == nil {
		return t.next.RoundTrip(req)
	}
	names := make([]string, 0, len(req.Header))
	for k := range req.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	var hs []string
	for _, k := range names {
		v := strings.Join(req.Header[k], ", ")
		switch http.CanonicalHeaderKey(k) {
		case "Authorization", "Cookie", "Proxy-Authorization":
			v = "[redacted]"
		}
		hs = append(hs, k+": "+v)
	}
	t.log.printf("> %s %s (%s)", req.Method, req.URL.Redacted(), strings.Join(hs, "; "))
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		t.log.printf("< %s %s: %v", req.Method, req.URL.Redacted(), err)
		return resp, err
	}
	var rl []string
	for _, k := range []string{"X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
		if v := resp.Header.Get(k); v != "" {
			rl = append(rl, k+": "+v)
		}
	}
	t.log.printf("< %s %s: %s %s", req.Method, req.URL.Redacted(), resp.Status, strings.Join(rl, "; "))
	return resp, nil
}
