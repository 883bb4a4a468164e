package github

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/cmd/goodput/internal/github/githubtest"
)

// TestMarkerBoundToTokenUser (item 8): a comment that carries the marker but
// was written by someone else is not the sticky comment: it is left alone
// (editing it failed with a misleading 403, or overwrote it) and reported
// as a warning; the token's own comment is created and then edited.
func TestMarkerBoundToTokenUser(t *testing.T) {
	for _, installation := range []bool{false, true} {
		srv := githubtest.New("/api/v3", testToken)
		srv.Installation = installation
		srv.Seed("acme", "infer", 7, "<!-- goodput:default -->\nplanted by a commenter")
		ctx := context.Background()
		var ids []int64
		for run := 0; run < 2; run++ {
			res, err := newTestPublisher(t, srv, "", newFakeClock(), nil).Upsert(ctx, "verdict")
			if err != nil {
				t.Fatalf("installation=%v run %d: %v", installation, run, err)
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "written by another account") {
				t.Errorf("installation=%v: warnings %q", installation, res.Warnings)
			}
			ids = append(ids, res.CommentID)
		}
		cs := srv.Comments("acme", "infer", 7)
		if len(cs) != 2 || cs[0].Body != "<!-- goodput:default -->\nplanted by a commenter" || ids[0] != ids[1] || cs[1].ID != ids[0] {
			t.Errorf("installation=%v: comments %+v ids %v: want the planted one untouched and our own edited in place", installation, cs, ids)
		}
		srv.Close()
	}
}

// TestRequestTimeout (item 7): an API that accepts the connection and never
// answers fails the comment after the request timeout, naming the request,
// instead of hanging the run.
func TestRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	p, err := New(Options{APIURL: srv.URL, Token: testToken, Owner: "acme", Repo: "infer", Number: 7,
		RequestTimeout: 300 * time.Millisecond, RetryDeadline: time.Second, MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Upsert(context.Background(), "verdict")
	if err == nil || !strings.Contains(err.Error(), "no response within 300ms") {
		t.Errorf("got %v, want a timeout naming the request", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("took %v", el)
	}
}

// TestRedactEncodedToken (item 8): a server error that echoes the token
// URL-encoded, JSON-escaped or in Basic-auth base64 is printed redacted.
func TestRedactEncodedToken(t *testing.T) {
	tok := "ghp_a+b/c=d&e<f>\"g"
	for _, echoed := range []string{
		tok,
		url.QueryEscape(tok),
		url.PathEscape(tok),
		`ghp_a+b/c=d\u0026e\u003cf\u003e\"g`,
		`ghp_a+b/c=d&e<f>\"g`,
		base64.StdEncoding.EncodeToString([]byte(tok)),
	} {
		err := redactError(errors.New(`422 {"message": "bad token `+echoed+`"}`), tok)
		if strings.Contains(err.Error(), echoed) || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("echoed as %q: %v", echoed, err)
		}
	}
}
