package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/goodput-dev/goodput/sources/clickhouse/chtest"
)

// TestReviewStreamTmux reviews request logs judged in one streaming pass
// (review --stream) in a real terminal: a detached tmux session at 100×30
// running the built binary. The Distributions and Time views draw the
// aggregate's curves and series (not their "no data" notes), the spec view
// lists the Mann-Whitney diagnostics computed from the bins, and the
// decision's record carries the SHA-256 of the very report `goodput judge
// --stream --format json` writes for the same files.
func TestReviewStreamTmux(t *testing.T) {
	dir, bin, tmux := tmuxTerminal(t)
	example, err := filepath.Abs(filepath.Join("..", "..", "testdata", "example"))
	if err != nil {
		t.Fatal(err)
	}
	base, can := filepath.Join(example, "baseline.jsonl"), filepath.Join(example, "canary.jsonl")
	want, err := exec.Command(bin, "judge", "--stream", "--baseline", base, "--canary", can, "--format", "json").Output()
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() <= ExitInconclusive) {
		t.Fatalf("judge --stream: %v", err)
	}
	status := filepath.Join(dir, "status")
	shell := "cd '" + dir + "' && env USER=e2e-reviewer GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 NO_COLOR=1 TERM=xterm-256color '" + bin +
		"' review --stream --baseline '" + base + "' --canary '" + can + "' --record decision.json; echo $? > '" + status + "'"
	tmux("new-session", "-d", "-s", "e2e", "-x", "100", "-y", "30", "sh", "-c", shell)
	tmux("set-option", "-t", "e2e", "remain-on-exit", "on")
	screen := func() string { return tmux("capture-pane", "-p", "-t", "e2e") }
	waitFor := func(what string) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if s := screen(); strings.Contains(s, what) {
				return s
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("timed out waiting for %q; screen:\n%s", what, screen())
		return ""
	}
	if s := waitFor("Gates ("); !strings.Contains(s, "streamed") {
		t.Fatalf("the header does not say the inputs were streamed:\n%s", s)
	}
	tmux("send-keys", "-t", "e2e", "Tab", "Tab")
	if s := waitFor("TTFT CDF"); strings.Contains(s, "has no TTFT distribution") || !strings.Contains(s, "p99") {
		t.Fatalf("no TTFT distribution drawn:\n%s", s)
	}
	tmux("send-keys", "-t", "e2e", "l")
	if s := waitFor("TPOT CDF"); strings.Contains(s, "has no TPOT distribution") {
		t.Fatalf("no TPOT distribution drawn:\n%s", s)
	}
	tmux("send-keys", "-t", "e2e", "Tab")
	if s := waitFor("TTFT p99 per 10 s bucket"); strings.Contains(s, "has no per-bucket series") {
		t.Fatalf("no series drawn:\n%s", s)
	}
	tmux("send-keys", "-t", "e2e", "BTab", "BTab", "BTab", "BTab")
	waitFor("Measurement spec")
	found := false
	for range 80 {
		if strings.Contains(screen(), "ttft mann-whitney") {
			found = true
			break
		}
		tmux("send-keys", "-t", "e2e", "j")
		time.Sleep(10 * time.Millisecond)
	}
	if !found {
		t.Fatalf("the spec view lists no Mann-Whitney diagnostic; screen:\n%s", screen())
	}
	tmux("send-keys", "-t", "e2e", "x")
	waitFor("REJECT")
	tmux("send-keys", "-t", "e2e", "Enter")
	waitFor("reject recorded in decision.json")
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
	rec := readRecord(t, filepath.Join(dir, "decision.json"))
	if rec.Decision != "reject" || rec.Reviewer != "e2e-reviewer" || rec.ReportSHA256 != sha256Hex(want) {
		t.Fatalf("record %+v; want a reject of the report with sha256 %s", rec, sha256Hex(want))
	}
}

// TestReviewClickHouse reviews request logs aggregated in a real
// ClickHouse server (review --clickhouse, the judge's flags): the decision's
// record carries the SHA-256 of the report `goodput judge --clickhouse
// --format json` writes for the same table and window.
func TestReviewClickHouse(t *testing.T) {
	srv := chtest.Start(t)
	simToClickHouse(t, srv, "bs-errors-rejected", "req", t.TempDir(), 4*time.Minute)
	code, want, errs := runCLI(t, nil, chArgs(srv.URL, "--format", "json")...)
	if code != 0 && code != ExitFail && code != ExitInconclusive {
		t.Fatalf("judge --clickhouse: exit %d: %s", code, errs)
	}
	judge := &app{io: &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, env: func(string) string { return "" }}
	ro := reviewOptions{
		now:         reviewNow,
		interactive: func(io.Reader, io.Writer) bool { return true },
		teaOptions:  []tea.ProgramOption{tea.WithoutSignalHandler()},
		judge:       judge.reviewJudge,
	}
	rec := filepath.Join(t.TempDir(), "decision.json")
	args := append(chArgs(srv.URL)[1:], "--record", rec)
	code, _, msg := runReviewCmd(t, ro, byteReader{strings.NewReader("x\rq")}, map[string]string{"USER": "ada"}, args...)
	if code != 0 || !strings.Contains(msg, "reject recorded in "+rec) {
		t.Fatalf("review --clickhouse: exit %d: %s", code, msg)
	}
	if r := readRecord(t, rec); r.ReportSHA256 != sha256Hex([]byte(want)) || r.Decision != "reject" {
		t.Fatalf("record %+v; want a reject of the report with sha256 %s", r, sha256Hex([]byte(want)))
	}
}
