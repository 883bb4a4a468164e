// Package github publishes goodput's verdict on a pull request as one sticky
// comment: a hidden marker per key finds the comment an earlier run left, and
// it is edited in place instead of posting another. Rate limits and server
// errors are retried within a deadline on an injected clock, and the token
// never reaches any output: the debug log and every error are redacted.
package github

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	gh "github.com/google/go-github/v60/github"
)

// MaxCommentChars is GitHub's limit on a comment body, in characters
// ("Body is too long (maximum is 65536 characters)").
const MaxCommentChars = 65536

// DefaultKey is the marker key when none is given.
const DefaultKey = "default"

// DefaultAPIURL is the REST API root of github.com.
const DefaultAPIURL = "https://api.github.com"

// validKey reports whether key is 1–64 of [A-Za-z0-9._-], starting with a
// letter or digit.
func validKey(key string) bool {
	if len(key) == 0 || len(key) > 64 {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		alnum := '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !alnum && (i == 0 || (c != '.' && c != '_' && c != '-')) {
			return false
		}
	}
	return true
}

// Marker returns the hidden first line that identifies the comment of one
// key: `<!-- goodput:KEY -->`. A key is 1–64 characters of letters, digits,
// '.', '_' and '-', starting with a letter or digit; "" means DefaultKey.
func Marker(key string) (string, error) {
	if key == "" {
		key = DefaultKey
	}
	if !validKey(key) {
		return "", fmt.Errorf("comment key %q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", key)
	}
	return "<!-- goodput:" + key + " -->", nil
}

// Clock is the time source of the retries; tests inject one that does not
// really sleep.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done, returning ctx.Err() then.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits for d or until ctx is done.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Options configure a Publisher.
type Options struct {
	// APIURL is the REST API root: https://api.github.com (the default when
	// empty) or https://HOST/api/v3 for GitHub Enterprise; a path prefix is
	// kept. Actions sets it as GITHUB_API_URL.
	APIURL string
	// Token authenticates as "Authorization: Bearer TOKEN". Required.
	Token string
	// Owner and Repo name the repository; Number is the pull request (or
	// issue) number, > 0.
	Owner, Repo string
	Number      int
	// Key tells several comments on one pull request apart (one per
	// policy, say); "" means DefaultKey. See Marker.
	Key string
	// Transport sends the requests; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Clock times the retries; nil means SystemClock.
	Clock Clock
	// RetryDeadline bounds one Upsert, waits included; a retry whose wait
	// would end past it is not made. 0 means 2 minutes.
	RetryDeadline time.Duration
	// MaxAttempts bounds the tries of one request; 0 means 6.
	MaxAttempts int
	// PerPage is the page size when listing comments, 1–100; 0 means 100.
	PerPage int
	// Debug, when set, receives one line per request, response and retry,
	// with the token redacted.
	Debug io.Writer
	// UserAgent is sent with every request; "" means "goodput".
	UserAgent string
	// RequestTimeout bounds each request until its response headers
	// arrive, and (with RetryDeadline) the whole Upsert: an API that
	// accepts the connection and never answers cannot hang the run.
	// 0 means 30 s.
	RequestTimeout time.Duration
}

// Publisher writes the sticky comment of one key on one pull request.
type Publisher struct {
	opt    Options
	base   *url.URL
	marker string
}

// Result says what Upsert did.
type Result struct {
	CommentID int64
	URL       string // the comment's html_url
	Created   bool   // false when an earlier comment was edited
	// Unchanged is true when the earlier comment already had this body:
	// nothing was sent.
	Unchanged bool
	// Duplicates counts further comments with the same marker (left from a
	// race between two runs); they are left alone.
	Duplicates int
	// Warnings are facts the caller should show: marker comments written
	// by another account, which were ignored.
	Warnings []string
}

// New checks opt and returns a Publisher.
func New(opt Options) (*Publisher, error) {
	if opt.Token == "" {
		return nil, errors.New("no GitHub token: set GITHUB_TOKEN (or GH_TOKEN)")
	}
	if opt.Owner == "" || opt.Repo == "" || strings.Contains(opt.Owner+opt.Repo, "/") {
		return nil, fmt.Errorf("repository %q/%q: want OWNER/NAME", opt.Owner, opt.Repo)
	}
	if opt.Number <= 0 {
		return nil, fmt.Errorf("pull request number %d: want a positive number", opt.Number)
	}
	marker, err := Marker(opt.Key)
	if err != nil {
		return nil, err
	}
	api := opt.APIURL
	if api == "" {
		api = DefaultAPIURL
	}
	base, err := url.Parse(strings.TrimRight(api, "/") + "/")
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("GitHub API URL %q: want http(s)://HOST[/PREFIX], e.g. https://api.github.com or https://HOST/api/v3", api)
	}
	if opt.PerPage < 0 || opt.PerPage > 100 {
		return nil, fmt.Errorf("page size %d: want 1-100", opt.PerPage)
	}
	if opt.PerPage == 0 {
		opt.PerPage = 100
	}
	if opt.Transport == nil {
		opt.Transport = http.DefaultTransport
	}
	if opt.Clock == nil {
		opt.Clock = SystemClock{}
	}
	if opt.RetryDeadline <= 0 {
		opt.RetryDeadline = 2 * time.Minute
	}
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = 6
	}
	if opt.UserAgent == "" {
		opt.UserAgent = "goodput"
	}
	if opt.RequestTimeout <= 0 {
		opt.RequestTimeout = 30 * time.Second
	}
	return &Publisher{opt: opt, base: base, marker: marker}, nil
}

// Marker returns the publisher's marker line.
func (p *Publisher) Marker() string { return p.marker }

// Upsert writes marker + "\n" + body as the sticky comment: it pages
// through the pull request's comments for one that starts with the marker
// and edits the first it finds, or creates one. body must leave room for
// the marker line within MaxCommentChars.
func (p *Publisher) Upsert(ctx context.Context, body string) (Result, error) {
	res, err := p.upsert(ctx, body)
	if err != nil {
		return res, redactError(err, p.opt.Token)
	}
	return res, nil
}

func (p *Publisher) upsert(ctx context.Context, body string) (Result, error) {
	full := p.marker + "\n" + body
	if n := utf8.RuneCountInString(full); n > MaxCommentChars {
		return Result{}, fmt.Errorf("comment is %d characters with its marker, over GitHub's %d limit", n, MaxCommentChars)
	}
	// the whole exchange, retries included, ends by this real-time bound
	ctx, cancel := context.WithTimeout(ctx, p.opt.RetryDeadline+p.opt.RequestTimeout)
	defer cancel()
	log := newDebugLog(p.opt.Debug, p.opt.Token)
	rt := &retryTransport{
		next:     &authTransport{next: &debugTransport{next: &timeoutTransport{next: p.opt.Transport, timeout: p.opt.RequestTimeout}, log: log}, token: p.opt.Token, host: p.base.Host},
		clock:    p.opt.Clock,
		deadline: p.opt.Clock.Now().Add(p.opt.RetryDeadline),
		attempts: p.opt.MaxAttempts,
		log:      log,
	}
	client := gh.NewClient(&http.Client{Transport: rt})
	client.BaseURL = p.base
	client.UserAgent = p.opt.UserAgent
	where := fmt.Sprintf("%s/%s#%d", p.opt.Owner, p.opt.Repo, p.opt.Number)

	// the sticky comment is the token's own: anyone can write the marker
	// into a comment, and editing theirs would fail or overwrite it
	// (asked once, when a marker comment turns up)
	var res Result
	var mine func(*gh.User) bool
	ignored := 0
	var found []*gh.IssueComment
	listOpt := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: p.opt.PerPage}}
	for page := 0; ; page++ {
		if page > 1000 {
			return Result{}, fmt.Errorf("listing comments on %s: more than 1000 pages", where)
		}
		cs, resp, err := client.Issues.ListComments(ctx, p.opt.Owner, p.opt.Repo, p.opt.Number, listOpt)
		if err != nil {
			return Result{}, p.explain("listing comments on "+where, err, rt)
		}
		for _, c := range cs {
			if !strings.HasPrefix(c.GetBody(), p.marker) {
				continue
			}
			if mine == nil {
				if mine, err = p.owner(ctx, client, log); err != nil {
					return Result{}, p.explain("asking GitHub who the token belongs to (GET /user)", err, rt)
				}
			}
			if !mine(c.GetUser()) {
				ignored++
				log.printf("comment %d carries the marker but was written by %q, not the token's account: ignored", c.GetID(), c.GetUser().GetLogin())
				continue
			}
			found = append(found, c)
		}
		if resp.NextPage == 0 || resp.NextPage == listOpt.Page {
			break
		}
		listOpt.Page = resp.NextPage
	}
	if ignored > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%d comment(s) on %s carry the %s marker but were written by another account; they were ignored and left alone", ignored, where, p.marker))
	}
	comment := &gh.IssueComment{Body: &full}
	if len(found) == 0 {
		c, _, err := client.Issues.CreateComment(ctx, p.opt.Owner, p.opt.Repo, p.opt.Number, comment)
		if err != nil {
			return Result{}, p.explain("creating the comment on "+where, err, rt)
		}
		log.printf("created comment %d", c.GetID())
		res.CommentID, res.URL, res.Created = c.GetID(), c.GetHTMLURL(), true
		return res, nil
	}
	id := found[0].GetID()
	if found[0].GetBody() == full {
		log.printf("comment %d is already up to date", id)
		res.CommentID, res.URL, res.Duplicates, res.Unchanged = id, found[0].GetHTMLURL(), len(found)-1, true
		return res, nil
	}
	c, _, err := client.Issues.EditComment(ctx, p.opt.Owner, p.opt.Repo, id, comment)
	if err != nil {
		return Result{}, p.explain(fmt.Sprintf("editing comment %d on %s", id, where), err, rt)
	}
	log.printf("edited comment %d", c.GetID())
	res.CommentID, res.URL, res.Duplicates = c.GetID(), c.GetHTMLURL(), len(found)-1
	return res, nil
}

// actionsBot is the account GITHUB_TOKEN writes as in GitHub Actions.
const actionsBot = "github-actions[bot]"

// owner returns a test for "written by the token's account". GET /user
// names it; an Actions GITHUB_TOKEN may not call GET /user (403 "Resource
// not accessible by integration"), and then writes as github-actions[bot].
func (p *Publisher) owner(ctx context.Context, client *gh.Client, log *debugLog) (func(*gh.User) bool, error) {
	u, _, err := client.Users.Get(ctx, "")
	if err != nil {
		var er *gh.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && (er.Response.StatusCode == http.StatusForbidden || er.Response.StatusCode == http.StatusNotFound) {
			log.printf("GET /user refused (%d): an installation token; taking %s's comments as ours", er.Response.StatusCode, actionsBot)
			return func(c *gh.User) bool { return c.GetLogin() == actionsBot && c.GetType() != "User" }, nil
		}
		return nil, err
	}
	log.printf("the token belongs to %q (id %d)", u.GetLogin(), u.GetID())
	return func(c *gh.User) bool {
		if u.GetID() != 0 && c.GetID() != 0 {
			return c.GetID() == u.GetID()
		}
		return c.GetLogin() != "" && c.GetLogin() == u.GetLogin()
	}, nil
}

// timeoutTransport fails a request whose response headers do not arrive
// within timeout; the body is then read under the caller's context.
type timeoutTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (t *timeoutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	type result struct {
		resp *http.Response
		err  error
	}
	ctx, cancel := context.WithCancel(req.Context())
	done := make(chan result, 1)
	go func() {
		resp, err := t.next.RoundTrip(req.WithContext(ctx))
		done <- result{resp, err}
	}()
	timer := time.NewTimer(t.timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			cancel()
			return nil, r.err
		}
		r.resp.Body = &cancelBody{ReadCloser: r.resp.Body, cancel: cancel}
		return r.resp, nil
	case <-timer.C:
		cancel()
		return nil, fmt.Errorf("%s %s: no response within %v (is the API reachable?)", req.Method, req.URL.Redacted(), t.timeout)
	}
}

// cancelBody releases a request's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// explain turns a failed call into an error that says what to do.
func (p *Publisher) explain(what string, err error, rt *retryTransport) error {
	if gu := rt.gaveUp; gu != nil {
		return fmt.Errorf("%s: %s: %w", what, gu, err)
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch er.Response.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("%s: GitHub rejected the token (check GITHUB_TOKEN or GH_TOKEN): %w", what, err)
		case http.StatusForbidden:
			return fmt.Errorf("%s: the token may not write comments here (give the job `permissions: pull-requests: write`; "+
				"on pull requests from forks GITHUB_TOKEN is read-only): %w", what, err)
		case http.StatusNotFound:
			return fmt.Errorf("%s: repository or pull request not found, or not visible to the token: %w", what, err)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// authTransport adds the token to requests for the API host only, so a
// redirect elsewhere never carries it.
type authTransport struct {
	next  http.RoundTripper
	token string
	host  string
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != t.host {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

// redactError hides the token in an error's text. The original error is
// not reachable through it, so nothing can print the token by unwrapping.
func redactError(err error, token string) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: redact(err.Error(), token)}
}

type redactedError struct{ msg string }

func (e *redactedError) Error() string { return e.msg }

// redact hides the token in s, also where a server echoed it encoded:
// URL query escaping, URL path escaping, JSON string escaping (with and
// without HTML-safe escapes) and base64 (Basic authentication).
func redact(s, token string) string {
	if token == "" {
		return s
	}
	for _, form := range tokenForms(token) {
		s = strings.ReplaceAll(s, form, "[redacted]")
	}
	return s
}

// tokenForms lists the spellings of token to redact, longest first so a
// form containing another is replaced whole.
func tokenForms(token string) []string {
	forms := []string{token, url.QueryEscape(token), url.PathEscape(token),
		base64.StdEncoding.EncodeToString([]byte(token)), base64.URLEncoding.EncodeToString([]byte(token))}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(token) == nil {
			forms = append(forms, strings.TrimSuffix(strings.TrimSuffix(b.String(), "\n"), `"`)[1:])
		}
	}
	// \uXXXX escapes of every character, as some servers write them
	var u strings.Builder
	for _, r := range token {
		fmt.Fprintf(&u, "\\u%04x", r)
	}
	forms = append(forms, u.String())
	seen := map[string]bool{}
	out := forms[:0]
	for _, f := range forms {
		if f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}
