// Package clickhouse reads an arm's aggregate from request logs stored in
// ClickHouse, over its HTTP interface: the aggregation runs where the logs
// live and only the aggregate crosses the network.
//
// # What it asks
//
// One query per arm selects the table's rows that satisfy the arm's
// condition (the operator's SQL, wrapped in parentheses) and arrive in the
// window, and groups them by time slice (floor(ts/w)·w on the absolute
// grid of the policy's bucket width w), stratum (class label, token-length
// bands for unlabelled requests, policy class; its counts also by
// prefix-cache band when Plan.Cache is set) and log-linear latency bin
// (⌈log2(v)·256⌉, Prometheus schema 8, as sources/loglin computes it).
// Each group carries the request accounting counts, the "good" count under
// the request's class SLO, retries, short outputs, token sums (the good
// requests' output tokens among them) and prefix-cache sums and unverified
// criteria; replica rows carry each replica's
// requests per slice and how many of them, of known E2E, it admitted;
// rows of ends count, per replica and slice, those that ended there
// (arrival + E2E), so that its requests in flight at each slice's end
// follow. The result is the same sources.Aggregate (Exact) that
// the streaming scan of the same records as files builds: same slices,
// same stratum keys, same counts and the same bins. The rule deciding a
// request good is the request path's, passed in as a Plan built from the
// policy (this package does not read policies).
//
// A first query (DESCRIBE TABLE) learns the table's columns, so optional
// native-log fields the table lacks read as unknown. Columns map like the
// native request log (DESIGN.md §3: ts, status, ttft_s, tpot_s, e2e_s,
// max_itl_s, prompt_tokens, output_tokens, cached_tokens, class, replica,
// attempt, quality_ok, canceled_by, user; latencies in seconds); a Columns mapping names
// other columns. ts is unix seconds (any number type) or DateTime; a NULL
// or NaN latency is unknown. Rows the native log's reader refuses (an
// unknown status, a completion without ttft_s, a negative or infinite
// latency, e2e_s below ttft_s, a negative or fractional count, attempt
// below 1, a canceled_by other than client or server or on a request that
// was not canceled) make the read fail with their counts.
//
// # Safety
//
// Every identifier is backquoted with backquote and backslash escaped,
// every value is an escaped string literal or a number formatted here; the
// operator's condition is checked (no `;`, no comments, balanced quotes
// and parentheses) and wrapped in parentheses, and every query runs with
// readonly=1. Credentials come from the caller (the CLI reads them from
// the environment), are sent as X-ClickHouse-User and X-ClickHouse-Key to
// the configured origin only (a redirect to another host or scheme is
// followed without them) and never appear in a message. The server's
// error text is sanitised (control characters removed, shortened) before
// it is shown. A result over the row or byte cap is refused, not
// truncated.
//
// # On a cluster
//
// The same query runs unchanged on a ClickHouse cluster: point Table at a
// Distributed table over the per-shard tables (ENGINE = Distributed(cluster,
// db, requests_local, rand())). ClickHouse pushes the WHERE and the GROUP
// BY down to every shard, each shard aggregates its own rows, and the
// initiator merges the partial aggregates (counts and sums add up; a bin
// count is a count): only the aggregate — a few MB, slices × strata ×
// non-empty bins, independent of the number of requests — crosses the
// network, to the initiator and then to goodput. Sharding by anything
// (rand(), replica, time) gives the same answer, since every group's
// counters are sums.
package clickhouse

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"
)

// Format names the input in sources.Input.Format.
const Format = "clickhouse"

// Defaults and limits.
const (
	// DefaultTimeout bounds one query (connect, run, read the answer).
	DefaultTimeout = 5 * time.Minute
	// DefaultMaxRows caps the rows of one arm's aggregate (slices ×
	// strata × non-empty bins): far above what a few days of 10 s slices
	// need, far below what would exhaust memory.
	DefaultMaxRows = 4_000_000
	// DefaultMaxBytes caps the bytes of one answer.
	DefaultMaxBytes = 1 << 30
)

// Config says how to reach the server and what to read.
type Config struct {
	// URL is the HTTP interface, http(s)://host:port with an optional path
	// (a proxy's prefix); no credentials, query or fragment.
	URL string
	// User and Password, when set, are sent as X-ClickHouse-User and
	// X-ClickHouse-Key to URL's origin only. Never printed.
	User, Password string
	// Table is "table" or "database.table" (escaped here).
	Table string
	// Columns maps native-log fields to the table's columns.
	Columns Columns
	// Timeout bounds each query; DefaultTimeout when 0.
	Timeout time.Duration
	// MaxRows and MaxBytes cap one answer (defaults when 0).
	MaxRows  int
	MaxBytes int64
	// Location is the measurement location of the logs ("client" when
	// empty, as for native request logs).
	Location string
	// Transport is the HTTP transport (http.DefaultTransport when nil).
	Transport http.RoundTripper
}

// Source runs aggregation queries against one server and table.
type Source struct {
	cfg    Config
	table  string // escaped
	client *http.Client
	secret []string // credential values scrubbed from any message
}

// New validates cfg and returns a Source. It does not contact the server.
func New(cfg Config) (*Source, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("clickhouse URL %q: want http://host:port or https://host:port", redact(cfg.URL))
	}
	if u.User != nil {
		return nil, errors.New("clickhouse URL: credentials in the URL are not accepted; give them in the environment")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("clickhouse URL %q: must not carry a query or fragment", redact(cfg.URL))
	}
	table, err := QuoteTable(cfg.Table)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRows <= 0 {
		cfg.MaxRows = DefaultMaxRows
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Location == "" {
		cfg.Location = "client"
	}
	if strings.ContainsAny(cfg.User+cfg.Password, "\r\n\x00") {
		return nil, errors.New("clickhouse credentials hold a line break or NUL")
	}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	s := &Source{cfg: cfg, table: table}
	for _, v := range []string{cfg.User, cfg.Password} {
		if v != "" {
			s.secret = append(s.secret, v)
		}
	}
	s.client = &http.Client{Transport: &authTransport{user: cfg.User, key: cfg.Password, base: base, origin: originOf(u)}}
	return s, nil
}

// authTransport adds the credentials to requests for the configured origin
// and strips them from any other (a redirect).
type authTransport struct {
	user, key string
	base      http.RoundTripper
	origin    string
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Del("X-ClickHouse-User")
	r.Header.Del("X-ClickHouse-Key")
	r.Header.Del("Authorization")
	if o := originOf(r.URL); o != "" && o == t.origin {
		if t.user != "" {
			r.Header.Set("X-ClickHouse-User", t.user)
		}
		if t.key != "" {
			r.Header.Set("X-ClickHouse-Key", t.key)
		}
	}
	return t.base.RoundTrip(r)
}

// originOf returns scheme://host:port of u with the default port explicit.
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

// redact drops user information from a URL for messages.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return sanitize(u.String(), 200)
}

// QueryError is a failed query: its name (e.g. "canary aggregate") and
// the sanitised reason. It never holds credentials.
type QueryError struct {
	Query string
	Msg   string
}

func (e *QueryError) Error() string { return "clickhouse query " + e.Query + ": " + e.Msg }

// run posts query and calls row for every line of the answer (JSONEachRow),
// stopping at the caps. name names the query in errors.
//
// A connection that fails or breaks mid-answer (a server restarting, a
// proxy dropping an idle connection) is tried again, twice, after reset
// forgets the rows of the broken attempt: the query only reads.
func (s *Source) run(ctx context.Context, name, query string, row func([]byte) error, reset func()) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			reset()
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(attempt) * 250 * time.Millisecond):
			}
		}
		var transient bool
		if transient, err = s.runOnce(ctx, name, query, row); err == nil || !transient {
			return err
		}
	}
	return err
}

// runOnce is one attempt of run; transient reports a broken connection.
func (s *Source) runOnce(ctx context.Context, name, query string, row func([]byte) error) (transient bool, err error) {
	u := strings.TrimSuffix(s.cfg.URL, "/") + "/?readonly=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(query))
	if err != nil {
		return false, &QueryError{name, s.scrub(err.Error())}
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := s.client.Do(req)
	if err != nil {
		msg := err.Error()
		var ue *url.Error
		if errors.As(err, &ue) {
			msg = ue.Err.Error()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			msg = fmt.Sprintf("no answer within %v (raise the timeout, or narrow the window)", s.cfg.Timeout)
		}
		return ctx.Err() == nil, &QueryError{name, "cannot reach " + redact(s.cfg.URL) + ": " + s.scrub(msg)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return false, &QueryError{name, fmt.Sprintf("server answered %s: %s", resp.Status, s.serverMessage(body))}
	}
	limited := &capReader{r: resp.Body, left: s.cfg.MaxBytes}
	br := bufio.NewReaderSize(limited, 1<<16)
	rows := 0
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			if limited.over {
				return false, &QueryError{name, fmt.Sprintf("the answer exceeds %d bytes: narrow the window or the condition, or widen the policy's window.bucket", s.cfg.MaxBytes)}
			}
			if ctx.Err() != nil {
				return false, &QueryError{name, fmt.Sprintf("no complete answer within %v (raise the timeout, or narrow the window)", s.cfg.Timeout)}
			}
			return true, &QueryError{name, "reading the answer: " + s.scrub(err.Error())}
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if line[0] != '{' {
				// an exception written after the first rows
				rest, _ := io.ReadAll(io.LimitReader(br, 64<<10))
				return false, &QueryError{name, "server failed while answering: " + s.serverMessage(append(line, rest...))}
			}
			rows++
			if rows > s.cfg.MaxRows {
				return false, &QueryError{name, fmt.Sprintf("the aggregate exceeds %d rows (slices × strata × latency bins): "+
					"narrow the window or the condition, or widen the policy's window.bucket", s.cfg.MaxRows)}
			}
			if err := row(line); err != nil {
				return false, &QueryError{name, s.scrub(err.Error())}
			}
		}
		if err == io.EOF {
			break
		}
	}
	return false, nil
}

// capReader reads at most left bytes and then fails.
type capReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, errors.New("answer too large")
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

var exceptionTail = regexp.MustCompile(`,? ?e\.what\(\) = DB::Exception.*$`)

// serverMessage turns an error body into one sanitised line.
func (s *Source) serverMessage(body []byte) string {
	msg := strings.TrimSpace(string(body))
	msg = exceptionTail.ReplaceAllString(msg, "")
	if msg == "" {
		return "(no message)"
	}
	return s.scrub(sanitize(msg, 400))
}

// scrub removes credential values from a message.
func (s *Source) scrub(msg string) string {
	for _, v := range s.secret {
		if len(v) >= 1 {
			msg = strings.ReplaceAll(msg, v, "[redacted]")
		}
	}
	return msg
}

// sanitize makes untrusted text one printable line of at most n runes.
func sanitize(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r == '\r' {
			return ' '
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, ""))
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// describe returns the table's columns and types.
func (s *Source) describe(ctx context.Context) (tableInfo, error) {
	info := tableInfo{}
	err := s.run(ctx, "describe "+sanitize(s.cfg.Table, 120), "DESCRIBE TABLE "+s.table+" FORMAT JSONEachRow", func(line []byte) error {
		var c struct{ Name, Type string }
		if err := json.Unmarshal(line, &c); err != nil {
			return fmt.Errorf("unexpected DESCRIBE answer: %v", err)
		}
		info[c.Name] = c.Type
		return nil
	}, func() { clear(info) })
	if err != nil {
		return nil, err
	}
	if len(info) == 0 {
		return nil, &QueryError{"describe " + sanitize(s.cfg.Table, 120), "the table has no columns"}
	}
	return info, nil
}

// digest is the SHA-256 of the query text and its canonical rows.
func digest(query string, rows []string) string {
	h := sha256.New()
	io.WriteString(h, query)
	for _, r := range rows {
		h.Write([]byte{'\n'})
		io.WriteString(h, r)
	}
	return hex.EncodeToString(h.Sum(nil))
}
