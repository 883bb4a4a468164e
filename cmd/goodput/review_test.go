package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/goodput-dev/goodput/analysis"
)

// reviewFixture is the rich test report kept by the tui package
// (regenerated there with -update).
const reviewFixture = "internal/tui/testdata/report.json"

func reviewNow() time.Time { return time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC) }

// runReviewCmd executes `review args…` with the given options and returns
// the exit code (0 for success) and stderr.
func runReviewCmd(t *testing.T, ro reviewOptions, in io.Reader, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{io: &IOStreams{In: in, Out: &out, ErrOut: &errOut}, env: func(k string) string { return env[k] }}
	cmd := a.newReviewCmdWith(ro)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceErrors = true
	cmd.SilenceUsage = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0, out.String(), errOut.String()
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.Code, out.String(), errOut.String() + err.Error()
	}
	return -1, out.String(), errOut.String() + err.Error()
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReviewRefusesAndValidates(t *testing.T) {
	always := func(io.Reader, io.Writer) bool { return true }
	good := reviewFixture
	tests := []struct {
		name     string
		args     []string
		term     bool // pretend the streams are terminals
		wantCode int
		wantMsg  string
	}{
		{"no report", nil, true, ExitUsage, "needs REPORT.json"},
		{"report and inputs", []string{good, "--baseline", "b.jsonl", "--canary", "c.jsonl"}, true, ExitUsage, "not both"},
		{"baseline alone", []string{"--baseline", "b.jsonl"}, true, ExitUsage, "both --baseline and --canary"},
		{"policy with report", []string{good, "--policy", "chat"}, true, ExitUsage, "--policy applies only"},
		{"two reports", []string{good, good}, true, -1, "accepts at most 1 arg"},
		{"not a terminal", []string{good}, false, ExitUsage, "use `goodput judge"},
		{"judge form without the pipeline", []string{"--baseline", "b.jsonl", "--canary", "c.jsonl"}, true, ExitError, "goodput review report.json"},
		{"missing report", []string{filepath.Join(t.TempDir(), "nope.json")}, true, ExitError, "no such file"},
		{"malformed JSON", []string{writeTemp(t, "bad.json", "{\n  \"schema_version\": 1,\n  \"verdict\": pass\n}\n")}, true, ExitError, "bad.json:3:14: not valid JSON"},
		{"wrong type", []string{writeTemp(t, "type.json", "{\"schema_version\": \"one\"}")}, true, ExitError, "type.json:1:"},
		{"no schema", []string{writeTemp(t, "other.json", `{"verdict":"pass"}`)}, true, ExitError, "not a goodput report"},
		{"newer schema", []string{writeTemp(t, "new.json", `{"schema_version":99,"verdict":"pass"}`)}, true, ExitError, "upgrade goodput"},
		{"bad verdict", []string{writeTemp(t, "v.json", "{\"schema_version\":1,\"verdict\":\"ok\\u001b[2J\"}")}, true, ExitError, `verdict "ok\x1b[2J"`},
		{"stream with a report", []string{good, "--stream"}, true, ExitUsage, "--stream applies only"},
		{"stream with clickhouse", []string{"--stream", "--clickhouse", "http://127.0.0.1:8123", "--table", "t"}, true, ExitUsage, "drop --stream"},
		{"clickhouse and files", []string{"--clickhouse", "http://127.0.0.1:8123", "--baseline", "b.jsonl", "--canary", "c.jsonl"}, true, ExitUsage, "not both"},
		{"clickhouse flags without clickhouse", []string{good, "--table", "t", "--last", "30m"}, true, ExitUsage, "--table, --last only apply with --clickhouse"},
		{"stream with capacity", []string{"--capacity", "--stream", "--baseline", "b", "--canary", "c"}, true, ExitUsage, "drop one of them"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ro := reviewOptions{now: reviewNow}
			if tt.term {
				ro.interactive = always
			}
			code, _, msg := runReviewCmd(t, ro, strings.NewReader(""), nil, tt.args...)
			if code != tt.wantCode || !strings.Contains(msg, tt.wantMsg) {
				t.Fatalf("exit %d %q, want %d containing %q", code, msg, tt.wantCode, tt.wantMsg)
			}
		})
	}
}

// byteReader hands out one byte per Read so that the terminal input parser
// sees one key at a time, as typing would produce.
type byteReader struct{ r io.Reader }

func (b byteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return b.r.Read(p[:1])
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func readRecord(t *testing.T, path string) analysis.ReviewRecord {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec analysis.ReviewRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rec
}

// TestReviewSessionInProcess runs the whole command with scripted keys:
// open the failing gate, approve it with a note, quit.
func TestReviewSessionInProcess(t *testing.T) {
	raw, err := os.ReadFile(reviewFixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	report := filepath.Join(dir, "run.json")
	if err := os.WriteFile(report, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	ro := reviewOptions{
		now:         reviewNow,
		interactive: func(io.Reader, io.Writer) bool { return true },
		teaOptions:  []tea.ProgramOption{tea.WithoutSignalHandler()},
	}
	tests := []struct {
		name     string
		keys     string
		args     []string
		record   string
		decision string
		note     string
		override bool
	}{
		{"approve with note", "jj\ra" + "known cold cache" + "\rq", []string{report}, filepath.Join(dir, "run.review.json"), "approve", "known cold cache", true},
		{"approve without note refused, then rejected", "a\r\x1bx\rq", []string{report, "--record", filepath.Join(dir, "r.json")}, filepath.Join(dir, "r.json"), "reject", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, msg := runReviewCmd(t, ro, byteReader{strings.NewReader(tt.keys)}, map[string]string{"USER": "ada", "NO_COLOR": "1"}, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, msg)
			}
			if !strings.Contains(msg, tt.decision+" recorded in "+tt.record) {
				t.Fatalf("stderr %q", msg)
			}
			want := analysis.ReviewRecord{
				Reviewer: "ada", At: "2026-11-29T16:00:00Z", ReportSHA256: sha256Hex(raw), Decision: tt.decision,
				Note: tt.note, ReportVerdict: analysis.Fail, Overrides: tt.override,
			}
			if got := readRecord(t, tt.record); got != want {
				t.Fatalf("record %+v\nwant   %+v", got, want)
			}
		})
	}
}

func TestReviewJudgeHook(t *testing.T) {
	raw, err := os.ReadFile(reviewFixture)
	if err != nil {
		t.Fatal(err)
	}
	var rep analysis.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	var got reviewInput
	ro := reviewOptions{
		now:         reviewNow,
		interactive: func(io.Reader, io.Writer) bool { return true },
		teaOptions:  []tea.ProgramOption{tea.WithoutSignalHandler()},
		judge: func(_ context.Context, in reviewInput, progress io.Writer) (*analysis.Report, []byte, error) {
			got = in
			return &rep, raw, nil
		},
	}
	rec := filepath.Join(t.TempDir(), "decision.json")
	code, _, msg := runReviewCmd(t, ro, byteReader{strings.NewReader("x\rq")}, nil,
		"--baseline", "b1.jsonl", "--baseline", "b2.jsonl", "--canary", "c.jsonl", "--policy", "batch", "--record", rec)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if strings.Join(got.Baseline, ",") != "b1.jsonl,b2.jsonl" || strings.Join(got.Canary, ",") != "c.jsonl" || got.Policy != "batch" || got.Stream {
		t.Fatalf("hook got %+v", got)
	}
	if r := readRecord(t, rec); r.Decision != "reject" || r.Reviewer != "" && r.Reviewer != "unknown" || r.ReportSHA256 != sha256Hex(raw) {
		t.Fatalf("record %+v", r)
	}

	// --stream and --clickhouse reach the judge
	rec2 := filepath.Join(t.TempDir(), "streamed.json")
	if code, _, msg := runReviewCmd(t, ro, byteReader{strings.NewReader("x\rq")}, nil,
		"--stream", "--baseline", "b.jsonl", "--canary", "c.jsonl", "--record", rec2); code != 0 || !got.Stream || got.ClickHouse.enabled() {
		t.Fatalf("--stream: exit %d %q, hook got %+v", code, msg, got)
	}
	if code, _, msg := runReviewCmd(t, ro, byteReader{strings.NewReader("x\rq")}, nil,
		"--clickhouse", "http://127.0.0.1:8123", "--table", "logs.requests", "--baseline-where", "d = 'b'", "--canary-where", "d = 'c'",
		"--last", "30m", "--record", rec2); code != 0 || got.Stream || got.ClickHouse.URL != "http://127.0.0.1:8123" ||
		got.ClickHouse.Table != "logs.requests" || got.Last != 30*time.Minute || got.ClickHouse.CanaryWhere != "d = 'c'" {
		t.Fatalf("--clickhouse: exit %d %q, hook got %+v", code, msg, got)
	}

	ro.judge = func(context.Context, reviewInput, io.Writer) (*analysis.Report, []byte, error) {
		return nil, nil, errors.New("canary.jsonl:3: bad status")
	}
	if code, _, msg := runReviewCmd(t, ro, strings.NewReader(""), nil, "--baseline", "b", "--canary", "c"); code != ExitError || !strings.Contains(msg, "canary.jsonl:3") {
		t.Fatalf("judge error: exit %d %q", code, msg)
	}
}

func TestReviewRecordPath(t *testing.T) {
	for in, want := range map[string]string{
		"run.json":          "run.review.json",
		"dir/run.json":      "dir/run.review.json",
		"report":            "report.review.json",
		"a.json.json":       "a.json.review.json",
		"/abs/x.report.txt": "/abs/x.report.txt.review.json",
	} {
		if got := reviewRecordPath(in); got != want {
			t.Errorf("reviewRecordPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReviewTmux is the end-to-end test: it builds the binary, runs a
// review in a detached tmux session at 100×30, opens the failing gate,
// approves it with a note, quits, and checks the review record. It skips
// when tmux is missing unless REQUIRE_TMUX=1.
func TestReviewTmux(t *testing.T) {
	dir, bin, tmux := tmuxTerminal(t)
	if out, err := exec.Command(bin, "review", "--help").CombinedOutput(); err != nil {
		if os.Getenv("REQUIRE_TMUX") == "1" {
			t.Fatalf("the binary has no review command (register a.newReviewCmd() in commands.go): %v\n%s", err, out)
		}
		t.Skipf("the binary has no review command yet (commands.go does not register it): %s", bytes.TrimSpace(out))
	}
	raw, err := os.ReadFile(reviewFixture)
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "run.json")
	if err := os.WriteFile(report, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	status := filepath.Join(dir, "status")

	start := time.Now()
	shell := "cd '" + dir + "' && env USER=e2e-reviewer GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1 TERM=xterm-256color '" + bin + "' review run.json; echo $? > '" + status + "'"
	tmux("new-session", "-d", "-s", "e2e", "-x", "100", "-y", "30", "sh", "-c", shell)
	tmux("set-option", "-t", "e2e", "remain-on-exit", "on")

	screen := func() string { return tmux("capture-pane", "-p", "-t", "e2e") }
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if strings.Contains(screen(), what) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %q; screen:\n%s", what, screen())
	}
	waitFor("Gates (7)")
	tmux("send-keys", "-t", "e2e", "j", "j", "Enter")
	waitFor("lower bound of harm")
	tmux("send-keys", "-t", "e2e", "a")
	waitFor("APPROVE OVERRIDES the FAIL verdict")
	tmux("send-keys", "-t", "e2e", "Enter")
	waitFor("a note is required")
	tmux("send-keys", "-t", "e2e", "-l", "known cold cache after restart")
	waitFor("known cold cache after restart")
	tmux("send-keys", "-t", "e2e", "Enter")
	waitFor("approve recorded in run.review.json")
	tmux("send-keys", "-t", "e2e", "q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(status); err == nil && len(bytes.TrimSpace(b)) > 0 {
			if code := strings.TrimSpace(string(b)); code != "0" {
				t.Fatalf("exit status %s; screen:\n%s", code, tmux("capture-pane", "-p", "-S", "-", "-t", "e2e"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("review did not exit; screen:\n%s", screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if all := tmux("capture-pane", "-p", "-S", "-", "-t", "e2e"); !strings.Contains(all, "goodput: approve recorded in run.review.json (overrides the fail verdict)") {
		t.Fatalf("no confirmation after exit:\n%s", all)
	}
	rec := readRecord(t, filepath.Join(dir, "run.review.json"))
	at, err := time.Parse(time.RFC3339, rec.At)
	if err != nil || at.Before(start.Add(-2*time.Second).Truncate(time.Second)) || at.After(time.Now().Add(time.Second)) {
		t.Fatalf("at %q (%v) not within the session", rec.At, err)
	}
	want := analysis.ReviewRecord{
		Reviewer: "e2e-reviewer", At: rec.At, ReportSHA256: sha256Hex(raw), Decision: "approve",
		Note: "known cold cache after restart", ReportVerdict: analysis.Fail, Overrides: true,
	}
	if rec != want {
		t.Fatalf("record %+v\nwant   %+v", rec, want)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, ".run.review.json.tmp-*")); len(ents) != 0 {
		t.Fatalf("temporary files left: %v", ents)
	}
}
