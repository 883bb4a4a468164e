package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
)

func TestReviewCapacityRefuses(t *testing.T) {
	always := func(io.Reader, io.Writer) bool { return true }
	b := filepath.Join(realdata, "inference-perf", "vllm")
	c := filepath.Join(realdata, "inference-perf", "vllm+quantization")
	tests := []struct {
		name     string
		args     []string
		term     bool
		wantCode int
		wantMsg  string
	}{
		{"no sweeps", []string{"--capacity"}, true, ExitUsage, "needs both --baseline"},
		{"baseline alone", []string{"--capacity", "--baseline", b}, true, ExitUsage, "needs both --baseline"},
		{"report file", []string{"--capacity", "run.json", "--baseline", b, "--canary", c}, true, ExitUsage, "opens without --capacity"},
		{"record", []string{"--capacity", "--baseline", b, "--canary", c, "--record", "r.json"}, true, ExitUsage, "records no decision"},
		{"not a terminal", []string{"--capacity", "--baseline", b, "--canary", c}, false, ExitUsage, "use `goodput capacity"},
		{"missing sweep", []string{"--capacity", "--baseline", filepath.Join(t.TempDir(), "nope"), "--canary", c}, true, ExitError, "no such file"},
		{"unknown policy", []string{"--capacity", "--baseline", b, "--canary", c, "--policy", "no-such-policy"}, true, ExitError, "no-such-policy"},
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

// TestReviewCapacityTmux80x24 opens the capacity review of the real
// inference-perf sweeps (V1 baseline, quantized canary) in a detached tmux
// session of 80×24 with NO_COLOR set and checks that the first screen holds
// both capacities with their intervals, the ratio, its interval, the
// margin and the verdict, uncut and without escape sequences; then that
// paging reaches the points table and q exits 0.
func TestReviewCapacityTmux80x24(t *testing.T) {
	dir, bin, tmux := tmuxTerminal(t)
	b, err := filepath.Abs(filepath.Join(realdata, "inference-perf", "vllm"))
	if err != nil {
		t.Fatal(err)
	}
	c := b + "+quantization"
	status := filepath.Join(dir, "status")
	shell := "cd '" + dir + "' && env NO_COLOR=1 TERM=xterm-256color '" + bin + "' review --capacity --baseline '" + b +
		"' --canary '" + c + "' 2>/dev/null; echo $? > '" + status + "'"
	tmux("new-session", "-d", "-s", "cap", "-x", "80", "-y", "24", "sh", "-c", shell)
	tmux("set-option", "-t", "cap", "remain-on-exit", "on")
	screen := func() string { return tmux("capture-pane", "-p", "-e", "-t", "cap") }
	waitFor := func(what string) string {
		t.Helper()
		var s string
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if s = screen(); strings.Contains(s, what) {
				return s
			}
		}
		t.Fatalf("timed out waiting for %q; screen:\n%s", what, s)
		return ""
	}
	first := waitFor("req/s")
	if strings.Contains(first, "\x1b[") {
		t.Errorf("NO_COLOR is set but the screen has escape sequences:\n%q", first)
	}
	lines := strings.Split(strings.TrimRight(first, "\n"), "\n")
	if len(lines) > 24 {
		t.Fatalf("capture has %d lines", len(lines))
	}
	find := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return l
			}
		}
		t.Errorf("no line starting %q on the first screen:\n%s", prefix, first)
		return ""
	}
	for _, want := range []struct{ prefix, has string }{
		{"goodput review", "PASS"},
		{"baseline 92.33 req/s", "interval [92.19, 105.6]"},
		{"canary   170.3 req/s", "interval [170.2, 177]"},
		{"canary / baseline 1.845", "interval [1.612, 1.919]  margin 5% → PASS"},
		{"99% ┤┈", "┈"},
	} {
		l := find(want.prefix)
		if !strings.Contains(l, want.has) || strings.Contains(l, "…") || utf8.RuneCountInString(l) > 80 {
			t.Errorf("line %q: want %q, uncut", l, want.has)
		}
	}
	tmux("send-keys", "-t", "cap", "PageDown")
	pts := waitFor("baseline points")
	if !strings.Contains(pts, "105.6 sat") {
		t.Errorf("the points table does not mark the saturated stage:\n%s", pts)
	}
	tmux("send-keys", "-t", "cap", "q")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if raw, err := os.ReadFile(status); err == nil && len(bytes.TrimSpace(raw)) > 0 {
			if code := strings.TrimSpace(string(raw)); code != "0" {
				t.Fatalf("exit status %s", code)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("review did not exit; screen:\n%s", screen())
		}
	}
}

// TestReviewCapacityReport opens a capacity JSON report (from goodput
// capacity --format json on the real inference-perf sweeps) in the review,
// in process with scripted keys: the Capacity view shows the numbers the
// report holds, q exits 0 and nothing is recorded. --record is refused.
func TestReviewCapacityReport(t *testing.T) {
	dir := t.TempDir()
	capPath := filepath.Join(dir, "cap.json")
	b := filepath.Join(realdata, "inference-perf", "vllm")
	if code, _, errs := runCLI(t, nil, "capacity", "--baseline", b, "--canary", b+"+quantization", "--format", "json", "--out", capPath); code != 0 {
		t.Fatalf("capacity exit %d: %s", code, errs)
	}
	ro := reviewOptions{
		now:         reviewNow,
		interactive: func(io.Reader, io.Writer) bool { return true },
		teaOptions:  []tea.ProgramOption{tea.WithoutSignalHandler()},
	}
	code, out, msg := runReviewCmd(t, ro, byteReader{strings.NewReader("q")}, map[string]string{"NO_COLOR": "1"}, capPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if !strings.Contains(out, "goodput review  PASS  capacity (policy chat)  "+capPath[:20]) {
		t.Errorf("header without verdict, policy or report name:\n%s", out)
	}
	for _, want := range []string{"92.33 req/s", "[92.19, 105.6]", "170.3 req/s", "[170.2, 177]", "1.845", "[1.612, 1.919]", "margin 5%"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q not drawn:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[1m") || strings.Contains(out, "\x1b[3") {
		t.Errorf("NO_COLOR is set but colour was drawn")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the capacity review wrote files: %v", ents)
	}
	if code, _, msg := runReviewCmd(t, ro, strings.NewReader(""), nil, capPath, "--record", filepath.Join(dir, "r.json")); code != ExitUsage || !strings.Contains(msg, "records no decision") {
		t.Errorf("--record with a capacity report: exit %d %q", code, msg)
	}
	bad := writeTemp(t, "capPath-bad.json", `{"schema_version":99,"verdict":"pass","capacity":{}}`)
	if code, _, msg := runReviewCmd(t, ro, strings.NewReader(""), nil, bad); code != ExitError || !strings.Contains(msg, "capPath-bad.json: schema_version 99") {
		t.Errorf("newer capacity report: exit %d %q", code, msg)
	}
}
