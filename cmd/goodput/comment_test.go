package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/cmd/goodput/internal/github/githubtest"
	"github.com/goodput-dev/goodput/sources"
)

const commentTestToken = "ghp_commentTESTtoken_9876543210_SECRET"

// commentTestReport is a small failing report with one failed and one
// inconclusive gate, and a hostile class name.
func commentTestReport() *analysis.Report {
	n := func(v float64) analysis.Num { return analysis.Num(v) }
	return &analysis.Report{
		SchemaVersion: analysis.SchemaVersion,
		Verdict:       analysis.Fail,
		Reasons:       []string{"tpot_p99 +23.1% [+18.0%, +28.4%] exceeds the 10% margin"},
		Measurement:   analysis.Measurement{Population: "all offered requests", Location: "client", Clock: "epoch", BucketSeconds: 10, Confidence: 0.95},
		Arms: analysis.Arms{
			Baseline: analysis.ArmSummary{Accounting: analysis.Accounting{Offered: 1000, Admitted: 1000, Completed: 990, Failed: 10, Good: 950},
				GoodputRPS: n(3.2), SLOAttainment: n(0.95), GoodputPerReplica: n(math.NaN())},
			Canary: analysis.ArmSummary{Accounting: analysis.Accounting{Offered: 1010, Admitted: 1000, Rejected: 10, Completed: 980, Failed: 20, Good: 900},
				GoodputRPS: n(3.0), SLOAttainment: n(0.891), GoodputPerReplica: n(math.NaN())},
		},
		Metrics: []analysis.Metric{
			{Name: "tpot_p99", Verdict: analysis.Fail, Direction: "lower_is_better", Scale: "relative", Unit: "s",
				Baseline: n(0.061), Canary: n(0.0751), Delta: n(0.231), Interval: [2]analysis.Num{n(0.18), n(0.284)}, Margin: n(0.1),
				PFail: n(0.001), NBaseline: 990, NCanary: 980, Reason: "100% sure\nit is worse"},
			{Name: "slo_attainment", Verdict: analysis.Inconclusive, Direction: "higher_is_better", Scale: "absolute", Unit: "fraction",
				Baseline: n(0.95), Canary: n(0.891), Delta: n(-0.059), Interval: [2]analysis.Num{n(-0.09), n(0.01)}, Margin: n(0.01),
				PFail: n(0.2), NBaseline: 1000, NCanary: 1010},
		},
		Classes: []analysis.ClassRow{{Class: "<img src=x onerror=alert(1)> @org/team | x"}},
		Inputs: []sources.Input{{Path: "runs/`b`.jsonl", SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
			Format: "native-jsonl", Arm: sources.Baseline, Count: 1000}},
		Policy:      analysis.PolicyRef{Name: "chat", Source: "builtin"},
		ToolVersion: "test",
		Judge:       "goodput",
	}
}

// writeCommentReport writes r as dir/report.json and returns its path.
func writeCommentReport(t *testing.T, dir string, r *analysis.Report) string {
	t.Helper()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type commentResult struct {
	stdout, stderr string
	err            error
	code           int
}

// commentExitCode maps a command error to the exit code as run() does.
func commentExitCode(err error) int {
	if err == nil {
		return ExitPass
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if isUsage(err) {
		return ExitUsage
	}
	return ExitError
}

// runCommentCmd runs `goodput comment args…` with env; a non-nil clock
// replaces the system clock of the retries.
func runCommentCmd(t *testing.T, env map[string]string, clock *commentFakeClock, args ...string) commentResult {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{io: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, env: func(k string) string { return env[k] }}
	cmd := a.newCommentCmd()
	if clock != nil {
		cmd = a.newCommentCmdWith(&commentOptions{clock: clock})
	}
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.ExecuteContext(context.Background())
	return commentResult{stdout: out.String(), stderr: errb.String(), err: err, code: commentExitCode(err)}
}

type commentFakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func (c *commentFakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *commentFakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

// actionsEnv is the environment of a pull_request job for PR 7.
func actionsEnv(t *testing.T, dir string, srv *githubtest.Server) map[string]string {
	t.Helper()
	event := filepath.Join(dir, "event.json")
	if err := os.WriteFile(event, []byte(`{"action": "synchronize", "number": 7, "pull_request": {"number": 7, "head": {"sha": "abc"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"GITHUB_ACTIONS":      "true",
		"CI":                  "true",
		"GITHUB_REPOSITORY":   "acme/infer",
		"GITHUB_EVENT_PATH":   event,
		"GITHUB_API_URL":      srv.URL(),
		"GITHUB_TOKEN":        commentTestToken,
		"GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary.md"),
	}
}

func goodputComments(srv *githubtest.Server, key string) []githubtest.Comment {
	var out []githubtest.Comment
	for _, c := range srv.Comments("acme", "infer", 7) {
		if strings.HasPrefix(c.Body, "<!-- goodput:"+key+" -->\n") {
			out = append(out, c)
		}
	}
	return out
}

func assertNoToken(t *testing.T, what string, outputs ...string) {
	t.Helper()
	for _, o := range outputs {
		if strings.Contains(o, commentTestToken) {
			t.Errorf("%s: the token appears in the output:\n%s", what, o)
		}
	}
}

func TestComment_stickyInActions(t *testing.T) {
	srv := githubtest.New("/api/v3", commentTestToken)
	defer srv.Close()
	srv.PerPage = 2
	srv.Seed("acme", "infer", 7, "first!", "needs a rerun", "<!-- goodput:other -->\nanother gate")
	dir := t.TempDir()
	env := actionsEnv(t, dir, srv)
	rep := commentTestReport()
	path := writeCommentReport(t, dir, rep)
	for run := 1; run <= 3; run++ {
		if run == 3 { // the verdict changed between runs
			rep.Metrics[0].Delta = 0.25
			path = writeCommentReport(t, dir, rep)
		}
		res := runCommentCmd(t, env, nil, "--report", path, "--debug")
		if res.code != 0 {
			t.Fatalf("run %d: exit %d: %v\n%s", run, res.code, res.err, res.stderr)
		}
		assertNoToken(t, fmt.Sprintf("run %d", run), res.stdout, res.stderr)
		if !strings.Contains(res.stderr, "Authorization: [redacted]") {
			t.Errorf("run %d: --debug log lacks the redacted header:\n%s", run, res.stderr)
		}
		// run 2 repeats run 1's report: nothing is sent, and it says so
		want := map[int]string{1: "goodput: created comment on acme/infer#7: https://github.example/",
			2: "goodput: comment on acme/infer#7 is already up to date (nothing sent): https://github.example/",
			3: "goodput: updated comment on acme/infer#7: https://github.example/"}[run]
		if !strings.Contains(res.stderr, want) {
			t.Errorf("run %d: stderr lacks %q:\n%s", run, want, res.stderr)
		}
		// annotations: the failed gate as an error, the undecided one as a warning, data escaped
		for _, want := range []string{
			"::error title=goodput default%3A tpot_p99 failed::tpot_p99 fail: +",
			"against the 10%25 margin (n = 990 / 980): 100%25 sure%0Ait is worse\n",
			"::warning title=goodput default%3A slo_attainment inconclusive::slo_attainment inconclusive: -5.9 pp [-9.0 pp, +1.0 pp] against the 1 pp margin (n = 1,000 / 1,010)\n",
		} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("run %d: stdout lacks %q:\n%s", run, want, res.stdout)
			}
		}
	}
	mine := goodputComments(srv, "default")
	if len(mine) != 1 {
		t.Fatalf("%d goodput comments, want exactly 1", len(mine))
	}
	body := mine[0].Body
	if !strings.Contains(body, "\n❌ **fail** — tpot_p99 +25.0% [+18.0%, +28.4%] exceeds the 10% margin (n = 990 / 980)\n") {
		t.Errorf("comment not edited to the last report:\n%.300s", body)
	}
	if got := len(srv.Comments("acme", "infer", 7)); got != 4 {
		t.Errorf("%d comments in all, want 4", got)
	}
	for _, want := range []string{"&lt;img src=x onerror=alert(1)&gt; @\u200dorg/team \\| x", "runs/\\`b\\`.jsonl"} {
		if !strings.Contains(body, want) {
			t.Errorf("comment lacks escaped %q", want)
		}
	}
	summary, err := os.ReadFile(env["GITHUB_STEP_SUMMARY"])
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(summary), "❌ **fail** — tpot_p99"); n != 3 {
		t.Errorf("step summary holds %d reports, want 3 (appended, never truncated)", n)
	}
	assertNoToken(t, "step summary", string(summary))
	for _, r := range srv.Requests() {
		if !strings.HasPrefix(r.Path, "/api/v3/") {
			t.Errorf("request outside the API prefix: %s", r.Path)
		}
	}
}

func TestComment_twoKeys(t *testing.T) {
	srv := githubtest.New("/api/v3", commentTestToken)
	defer srv.Close()
	dir := t.TempDir()
	env := actionsEnv(t, dir, srv)
	delete(env, "GITHUB_STEP_SUMMARY")
	path := writeCommentReport(t, dir, commentTestReport())
	for _, key := range []string{"chat", "batch", "chat", "batch"} {
		if res := runCommentCmd(t, env, nil, "--report", path, "--key", key); res.code != 0 {
			t.Fatalf("key %s: exit %d: %v", key, res.code, res.err)
		}
	}
	if a, b := len(goodputComments(srv, "chat")), len(goodputComments(srv, "batch")); a != 1 || b != 1 {
		t.Errorf("comments per key: chat %d, batch %d; want 1 each", a, b)
	}
	if n := len(srv.Comments("acme", "infer", 7)); n != 2 {
		t.Errorf("%d comments, want 2", n)
	}
}

func TestComment_retriesOnFakeClock(t *testing.T) {
	srv := githubtest.New("/api/v3", commentTestToken)
	defer srv.Close()
	dir := t.TempDir()
	env := actionsEnv(t, dir, srv)
	clock := &commentFakeClock{now: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)}
	srv.FailNext(
		githubtest.Fault{Status: 429, Header: map[string]string{"Retry-After": "3"}},
		githubtest.Fault{Status: 403, Header: map[string]string{"X-RateLimit-Remaining": "0",
			"X-RateLimit-Reset": fmt.Sprint(clock.Now().Add(9 * time.Second).Unix())}, Body: `{"message": "API rate limit exceeded"}`},
		githubtest.Fault{Status: 503},
	)
	path := writeCommentReport(t, dir, commentTestReport())
	res := runCommentCmd(t, env, clock, "--report", path, "--debug")
	if res.code != 0 {
		t.Fatalf("exit %d: %v\n%s", res.code, res.err, res.stderr)
	}
	if got, want := fmt.Sprint(clock.slept), "[3s 7s 4s]"; got != want {
		t.Errorf("slept %s, want %s", got, want)
	}
	if !strings.Contains(res.stderr, "rate limited: 429 Too Many Requests; retrying in 3s (attempt 1 of 6)") {
		t.Errorf("debug log lacks the retry:\n%s", res.stderr)
	}
	if len(goodputComments(srv, "default")) != 1 {
		t.Error("comment not written after the retries")
	}
	assertNoToken(t, "retries", res.stdout, res.stderr)

	// persistent server errors: a clear error, exit 4
	srv.FailNext(githubtest.Fault{Status: 502}, githubtest.Fault{Status: 502}, githubtest.Fault{Status: 502},
		githubtest.Fault{Status: 502}, githubtest.Fault{Status: 502}, githubtest.Fault{Status: 502})
	res = runCommentCmd(t, env, clock, "--report", path)
	if res.code != ExitError || res.err == nil || !strings.Contains(res.err.Error(), "gave up after 6 attempts (server error: 502 Bad Gateway)") {
		t.Errorf("exit %d, error %v; want 4 and a clear give-up message", res.code, res.err)
	}
}

func TestComment_tokenNeverPrinted(t *testing.T) {
	srv := githubtest.New("/api/v3", commentTestToken)
	defer srv.Close()
	dir := t.TempDir()
	env := actionsEnv(t, dir, srv)
	delete(env, "GITHUB_TOKEN")
	env["GH_TOKEN"] = commentTestToken // the fallback
	// a server that echoes the credentials back in its error
	srv.FailNext(githubtest.Fault{Status: 422, Body: `{"message": "Validation Failed: Bearer ` + commentTestToken + `"}`})
	path := writeCommentReport(t, dir, commentTestReport())
	res := runCommentCmd(t, env, nil, "--report", path, "--debug")
	if res.code != ExitError {
		t.Fatalf("exit %d, want 4", res.code)
	}
	assertNoToken(t, "echoed token", res.stdout, res.stderr, res.err.Error(), fmt.Sprintf("%+v", res.err))
	if !strings.Contains(res.err.Error(), "[redacted]") {
		t.Errorf("error %q: want the echoed token redacted", res.err)
	}
	// with GH_TOKEN it authenticated
	if reqs := srv.Requests(); len(reqs) == 0 || reqs[0].Authorization != "Bearer "+commentTestToken {
		t.Error("GH_TOKEN was not used")
	}
}

func TestComment_dryRun(t *testing.T) {
	dir := t.TempDir()
	path := writeCommentReport(t, dir, commentTestReport())
	res := runCommentCmd(t, map[string]string{}, nil, "--report", path, "--dry-run", "--key", "chat")
	if res.code != 0 {
		t.Fatalf("exit %d: %v", res.code, res.err)
	}
	if !strings.HasPrefix(res.stdout, "<!-- goodput:chat -->\n❌ **fail** — tpot_p99 +23.1%") {
		t.Errorf("dry run prints %.120q", res.stdout)
	}
	if strings.Contains(res.stdout, "::error") {
		t.Error("workflow commands outside Actions")
	}
	// inside Actions the body is fenced so none of it acts as a workflow command
	srv := githubtest.New("/api/v3", commentTestToken)
	defer srv.Close()
	env := actionsEnv(t, dir, srv)
	res = runCommentCmd(t, env, nil, "--report", path, "--dry-run")
	if res.code != 0 {
		t.Fatalf("exit %d: %v", res.code, res.err)
	}
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	var stop string
	for _, l := range lines {
		if tok, ok := strings.CutPrefix(l, "::stop-commands::"); ok {
			stop = tok
		}
	}
	if stop == "" || lines[len(lines)-1] != "::"+stop+"::" {
		t.Errorf("body not fenced with ::stop-commands::\n%s", res.stdout)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("dry run sent %d requests", n)
	}
	if _, err := os.Stat(env["GITHUB_STEP_SUMMARY"]); err == nil {
		t.Error("dry run wrote the step summary")
	}
}

// A report too big for one comment is trimmed to fit, never rejected.
func TestComment_trimmedToLimit(t *testing.T) {
	srv := githubtest.New("/api/v3", commentTestToken)
	defer srv.Close()
	dir := t.TempDir()
	env := actionsEnv(t, dir, srv)
	rep := commentTestReport()
	for i := 0; i < 4000; i++ {
		rep.Classes = append(rep.Classes, analysis.ClassRow{Class: fmt.Sprintf("tenant-%04d-é-with-a-long-class-name", i)})
	}
	path := writeCommentReport(t, dir, rep)
	res := runCommentCmd(t, env, nil, "--report", path, "--key", "a-rather-long-key-name-for-the-marker")
	if res.code != 0 {
		t.Fatalf("exit %d: %v", res.code, res.err)
	}
	cs := goodputComments(srv, "a-rather-long-key-name-for-the-marker")
	if len(cs) != 1 {
		t.Fatalf("%d comments, want 1", len(cs))
	}
	body := cs[0].Body
	if n := len([]rune(body)); n > 65536 {
		t.Errorf("comment is %d characters", n)
	}
	if !strings.Contains(body, "Trimmed to fit GitHub's 65,536-character comment limit; left out: per-class breakdown") {
		t.Errorf("no trim note in the comment's end: %q", body[max(0, len(body)-300):])
	}
	// the step summary has room for everything
	summary, err := os.ReadFile(env["GITHUB_STEP_SUMMARY"])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary), "tenant-3999-é") || strings.Contains(string(summary), "Trimmed") {
		t.Error("the step summary was trimmed although it fits in 1 MiB")
	}
}

func TestComment_review(t *testing.T) {
	dir := t.TempDir()
	path := writeCommentReport(t, dir, commentTestReport())
	raw, _ := os.ReadFile(path)
	sum := sha256.Sum256(raw)
	writeReview := func(name, sha string) string {
		b, _ := json.Marshal(analysis.ReviewRecord{Reviewer: "@bob", At: "2026-11-29T10:00:00Z", ReportSHA256: sha,
			Decision: "approve", Note: "known regression", ReportVerdict: analysis.Fail, Overrides: true})
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// beside the report: picked up on its own
	writeReview("report.review.json", hex.EncodeToString(sum[:]))
	res := runCommentCmd(t, nil, nil, "--report", path, "--dry-run")
	if !strings.Contains(res.stdout, "✅ **approved** by @\u200dbob at 2026-11-29T10:00:00Z — overrides the **fail** verdict") {
		t.Errorf("review beside the report not included:\n%s", res.stdout)
	}
	// --review with a record of other report bytes: left out, with a warning
	other := writeReview("other.json", strings.Repeat("ab", 32))
	res = runCommentCmd(t, nil, nil, "--report", path, "--dry-run", "--review", other)
	if res.code != 0 || strings.Contains(res.stdout, "#### Review") || !strings.Contains(res.stderr, "reviews another report") {
		t.Errorf("stale review: exit %d, stderr %q", res.code, res.stderr)
	}
	// --review that does not exist is an error
	res = runCommentCmd(t, nil, nil, "--report", path, "--dry-run", "--review", filepath.Join(dir, "missing.json"))
	if res.code != ExitError {
		t.Errorf("missing --review: exit %d, want 4", res.code)
	}
}

func TestComment_errors(t *testing.T) {
	srv := githubtest.New("/api/v3", commentTestToken)
	defer srv.Close()
	dir := t.TempDir()
	good := writeCommentReport(t, dir, commentTestReport())
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.json", "{\n  \"schema_version\": 1,\n  \"verdict\": pass\n}\n")
	typed := write("typed.json", "{\"schema_version\": \"one\"}")
	noSchema := write("noschema.json", `{"verdict": "pass"}`)
	newer := write("newer.json", `{"schema_version": 99, "verdict": "pass"}`)
	badVerdict := write("verdict.json", `{"schema_version": 1, "verdict": "maybe"}`)
	push := write("push.json", `{"ref": "refs/heads/main"}`)
	// a pass with nothing behind it (hardening item 8): never shown as one
	emptyPass := write("empty-pass.json", `{"schema_version": 1, "verdict": "pass", "metrics": [], "arms": {"baseline": {"accounting": {"offered": 0}}, "canary": {"accounting": {"offered": 0}}}}`)
	actions := actionsEnv(t, dir, srv)
	without := func(keys ...string) map[string]string {
		m := map[string]string{}
		for k, v := range actions {
			m[k] = v
		}
		for _, k := range keys {
			delete(m, k)
		}
		return m
	}
	withEvent := without()
	withEvent["GITHUB_EVENT_PATH"] = push
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no report flag", nil, nil, ExitUsage, "--report is required"},
		{"positional argument", nil, []string{"--report", good, "extra"}, ExitUsage, "unknown command"},
		{"unknown flag", nil, []string{"--report", good, "--nope"}, ExitUsage, "unknown flag"},
		{"bad repo", nil, []string{"--report", good, "--repo", "acme"}, ExitUsage, "want OWNER/NAME"},
		{"bad key", nil, []string{"--report", good, "--key", "a b"}, ExitUsage, "--key"},
		{"negative pr", nil, []string{"--report", good, "--pr", "-3"}, ExitUsage, "--pr -3"},
		{"missing report", nil, []string{"--report", filepath.Join(dir, "none.json")}, ExitError, "reading the report"},
		{"malformed report", nil, []string{"--report", bad}, ExitError, bad + ":3:14: invalid character 'p'"},
		{"wrong type", nil, []string{"--report", typed}, ExitError, typed + ":1:24: field \"schema_version\": got a JSON string, want int"},
		{"not a report", nil, []string{"--report", noSchema}, ExitError, "no schema_version"},
		{"newer schema", nil, []string{"--report", newer}, ExitError, "report schema 99 is newer"},
		{"bad verdict", nil, []string{"--report", badVerdict}, ExitError, `verdict "maybe"`},
		{"pass without gates or requests", nil, []string{"--report", emptyPass, "--dry-run"}, ExitError, "says pass with no gates and no requests in an arm"},
		{"no repository", nil, []string{"--report", good}, ExitUsage, "pass --repo OWNER/NAME"},
		{"no pull request", map[string]string{"GITHUB_REPOSITORY": "acme/infer"}, []string{"--report", good}, ExitUsage, "pass --pr N"},
		{"push event", withEvent, []string{"--report", good}, ExitUsage, "no pull request in the event payload"},
		{"no token", without("GITHUB_TOKEN"), []string{"--report", good}, ExitError, "no GitHub token"},
		{"wrong token", func() map[string]string { m := without(); m["GITHUB_TOKEN"] = "nope"; return m }(), []string{"--report", good}, ExitError, "GitHub rejected the token"},
		{"bad api url", func() map[string]string { m := without(); m["GITHUB_API_URL"] = "::"; return m }(), []string{"--report", good}, ExitError, "GitHub API URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runCommentCmd(t, tt.env, nil, tt.args...)
			if res.code != tt.wantCode {
				t.Errorf("exit %d, want %d (error: %v)", res.code, tt.wantCode, res.err)
			}
			if res.err == nil || !strings.Contains(res.err.Error(), tt.wantErr) {
				t.Errorf("error %v, want it to contain %q", res.err, tt.wantErr)
			}
			assertNoToken(t, tt.name, res.stdout, res.stderr, fmt.Sprint(res.err))
		})
	}
	if n := len(goodputComments(srv, "default")); n != 0 {
		t.Errorf("%d comments posted by failing runs", n)
	}
}

func TestCommentEventPR(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		payload string
		want    int
		wantErr string
	}{
		{`{"number": 12, "pull_request": {"number": 12}}`, 12, ""},
		{`{"issue": {"number": 31, "pull_request": {"url": "x"}}, "comment": {"id": 1}}`, 31, ""},
		{`{"workflow_run": {"pull_requests": [{"number": 5}, {"number": 6}]}}`, 5, ""},
		{`{"workflow_run": {"pull_requests": []}}`, 0, "no pull request"},
		{`{"ref": "refs/heads/main"}`, 0, "no pull request"},
		{`{"pull_request": `, 0, "event.json:1:17: unexpected end of JSON input"},
	}
	for i, tt := range tests {
		p := filepath.Join(dir, "event.json")
		if err := os.WriteFile(p, []byte(tt.payload), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := commentEventPR(p)
		if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("case %d: got %d, %v; want %d, %q", i, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestWorkflowEscaping(t *testing.T) {
	tests := []struct{ in, data, prop string }{
		{"plain", "plain", "plain"},
		{"100% sure", "100%25 sure", "100%25 sure"},
		{"a\nb\r\nc", "a%0Ab%0D%0Ac", "a%0Ab%0D%0Ac"},
		{"canary: ttft_p99, regression", "canary: ttft_p99, regression", "canary%3A ttft_p99%2C regression"},
		{"x\n::add-mask::y", "x%0A::add-mask::y", "x%0A%3A%3Aadd-mask%3A%3Ay"},
	}
	for _, tt := range tests {
		if got := workflowData(tt.in); got != tt.data {
			t.Errorf("workflowData(%q) = %q, want %q", tt.in, got, tt.data)
		}
		if got := workflowProperty(tt.in); got != tt.prop {
			t.Errorf("workflowProperty(%q) = %q, want %q", tt.in, got, tt.prop)
		}
	}
}
