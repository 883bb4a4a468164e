// Package github publishes goodput's verdict on a pull request as one sticky
// comment: a hidden marker per key finds the comment an earlier run left, and
// it is edited in place instead of posting another. Rate limits and server
// errors are retried within a deadline on an injected clock, and the token
// never reaches any output: the debug log and every error are redacted.
package github

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
	log := newDebugLog(p.opt.Debug, p.opt.Token)
	rt := &retryTransport{
		next:     &authTransport{next: &debugTransport{next: p.opt.Transport, log: log}, token: p.opt.Token, host: p.base.Host},
		clock:    p.opt.Clock,
		deadline: p.opt.Clock.Now().Add(p.opt.RetryDeadline),
		attempts: p.opt.MaxAttempts,
		log:      log,
	}
	client := gh.NewClient(&http.Client{Transport: rt})
	client.BaseURL = p.base
	client.UserAgent = p.opt.UserAgent
	where := fmt.Sprintf("%s/%s#%d", p.opt.Owner, p.opt.Repo, p.opt.Number)

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
			if strings.HasPrefix(c.GetBody(), p.marker) {
				found = append(found, c)
			}
		}
		if resp.NextPage == 0 || resp.NextPage == listOpt.Page {
			break
		}
		listOpt.Page = resp.NextPage
	}
	comment := &gh.IssueComment{Body: &full}
	if len(found) == 0 {
		c, _, err := client.Issues.CreateComment(ctx, p.opt.Owner, p.opt.Repo, p.opt.Number, comment)
		if err != nil {
			return Result{}, p.explain("creating the comment on "+where, err, rt)
		}
		log.printf("created comment %d", c.GetID())
		return Result{CommentID: c.GetID(), URL: c.GetHTMLURL(), Created: true}, nil
	}
	id := found[0].GetID()
	if found[0].GetBody() == full {
		log.printf("comment %d is already up to date", id)
		return Result{CommentID: id, URL: found[0].GetHTMLURL(), Unchanged: true, Duplicates: len(found) - 1}, nil
	}
	c, _, err := client.Issues.EditComment(ctx, p.opt.Owner, p.opt.Repo, id, comment)
	if err != nil {
		return Result{}, p.explain(fmt.Sprintf("editing comment %d on %s", id, where), err, rt)
	}
	log.printf("edited comment %d", c.GetID())
	return Result{CommentID: c.GetID(), URL: c.GetHTMLURL(), Duplicates: len(found) - 1}, nil
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

func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[redacted]")
}
