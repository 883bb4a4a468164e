package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/goodput-dev/goodput/analysis"
)

// newcomerGolden compares got with testdata/newcomer/NAME, or rewrites it
// with -update.
func newcomerGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "newcomer", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update after checking):\n--- got ---\n%s", path, got)
	}
}

func llmperfPair(t *testing.T) (string, string) {
	t.Helper()
	d := filepath.Join(realdata, "llmperf")
	return filepath.Join(d, "individual_anyscale_70b.json"), filepath.Join(d, "individual_fireworks_70b.json")
}

// TestBenchPolicyRealPairs is the must-show on real files: under
// --policy bench the vLLM no-IB → IB pair is not a failure and says what
// would decide it, and fireworks' 2.4× TTFT against anyscale is a FAIL.
// Under the default chat policy both give reasons that name what to change.
func TestBenchPolicyRealPairs(t *testing.T) {
	vb, vc := vllmPair(t)
	lb, lc := llmperfPair(t)
	for _, tc := range []struct {
		name     string
		args     []string
		exit     int
		contains []string
	}{
		{"vllm-bench", []string{"judge", "--policy", "bench", vb, vc}, ExitInconclusive,
			[]string{"goodput: INCONCLUSIVE  (policy bench, 6 gates", "rerun both with `--num-prompts ", "each request is its own unit"}},
		{"llmperf-bench", []string{"judge", "--policy", "bench", lb, lc}, ExitFail,
			[]string{"goodput: FAIL  (policy bench, 6 gates", "ttft_p50: +144.2%", "the canary is worse by more than the 10% margin"}},
		{"vllm-chat", []string{"judge", vb, vc}, ExitInconclusive,
			[]string{"decide under `--policy bench`", "rerun both with `--num-prompts "}},
		{"llmperf-chat", []string{"judge", lb, lc}, ExitInconclusive,
			[]string{"decide under `--policy bench`", "rerun both with `--max-num-completed-requests "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, nil, tc.args...)
			if code != tc.exit {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.exit, out, errs)
			}
			for _, s := range tc.contains {
				if !strings.Contains(out, s) {
					t.Errorf("output lacks %q", s)
				}
			}
			if strings.Contains(out, "NaN") {
				t.Error("NaN reached the report")
			}
			newcomerGolden(t, tc.name+".txt", out)
		})
	}
}

// TestPositionalEqualsFlags: `judge OLD NEW` is `--baseline OLD --canary NEW`.
func TestPositionalEqualsFlags(t *testing.T) {
	b, c := llmperfPair(t)
	_, pos, _ := runCLI(t, nil, "judge", "--policy", "bench", "--format", "json", b, c)
	_, flg, _ := runCLI(t, nil, "judge", "--policy", "bench", "--format", "json", "--baseline", b, "--canary", c)
	if pos == "" || pos != flg {
		t.Error("positional and flag forms give different reports")
	}
	for _, args := range [][]string{{"judge", b}, {"judge", b, c, b}, {"judge", "--baseline", b, b, "--canary", c, c}} {
		if args[1] == "--baseline" {
			continue // several files per arm after one flag stay valid
		}
		if code, _, _ := runCLI(t, nil, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestSLOAndMarginFlags: the quick-use flags change the judged policy, the
// report names them, and bad values are usage errors.
func TestSLOAndMarginFlags(t *testing.T) {
	b, c := vllmPair(t)
	code, out, errs := runCLI(t, nil, "judge", "--policy", "bench", "--slo", "ttft=150ms", "--margin", "slo_attainment=10pp", "--format", "json", b, c)
	if code == ExitError || code == ExitUsage {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, s := range []string{`"ttft_s": 0.15`, `"source": "builtin with --slo ttft=150ms --margin slo_attainment=10pp"`, `"margin": 0.1`} {
		if !strings.Contains(out, s) {
			t.Errorf("report lacks %s", s)
		}
	}
	for _, args := range [][]string{
		{"--slo", "ttft=1"}, {"--slo", "ttfb=1s"}, {"--margin", "slo_attainment"}, {"--margin", "ttft_p99=5%"},
	} {
		code, _, errs := runCLI(t, nil, append([]string{"judge", "--policy", "bench", b, c}, args...)...)
		if code != ExitUsage || !strings.Contains(errs, args[0]) {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}

// TestReviewTmux80x24 runs the review of a real judgement (the LLMPerf
// pair under --policy bench) in a detached tmux session of 80×24 and
// checks that every gate's row shows its interval and its margin: the
// columns that decide are the ones kept on a small terminal. The capture is
// kept as testdata/newcomer/review-80x24.txt.
func TestReviewTmux80x24(t *testing.T) {
	dir, bin, tmux := tmuxTerminal(t)
	b, c := llmperfPair(t)
	report := filepath.Join(dir, "run.json")
	if code, _, errs := runCLI(t, nil, "judge", "--policy", "bench", "--format", "json", "--out", report, b, c); code != ExitFail {
		t.Fatalf("judge exit %d: %s", code, errs)
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep analysis.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	shell := "cd '" + dir + "' && env USER=e2e NO_COLOR=1 TERM=xterm-256color '" + bin + "' review run.json"
	tmux("new-session", "-d", "-s", "r80", "-x", "80", "-y", "24", "sh", "-c", shell)
	var screen string
	for deadline := time.Now().Add(15 * time.Second); ; {
		screen = tmux("capture-pane", "-p", "-t", "r80")
		if strings.Contains(screen, "Gates (6)") && strings.Contains(screen, "error_rate") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the review did not show its gates; screen:\n%s", screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tmux("send-keys", "-t", "r80", "q")
	lines := strings.Split(screen, "\n")
	if len(lines) < 24 {
		t.Fatalf("capture has %d lines", len(lines))
	}
	header := ""
	for _, l := range lines {
		if strings.Contains(l, "gate ") && strings.Contains(l, "interval") {
			header = l
		}
	}
	if !strings.Contains(header, "margin") {
		t.Fatalf("no interval and margin columns at 80×24:\n%s", screen)
	}
	for _, g := range rep.Metrics {
		row := ""
		for _, l := range lines {
			if f := strings.Fields(strings.TrimLeft(l, ">g ")); len(f) > 0 && f[0] == g.Name {
				row = l
			}
		}
		if row == "" {
			t.Errorf("gate %s is not on the screen", g.Name)
			continue
		}
		if strings.Contains(row, "…") || utf8.RuneCountInString(row) > 80 {
			t.Errorf("gate %s's row is cut: %q", g.Name, row)
		}
		// the interval's bounds and the margin, as the review prints them
		f := strings.Fields(row)
		if !strings.HasSuffix(strings.Join(f, " "), marginText(g)) || !strings.Contains(row, "[") || !strings.Contains(row, "]") {
			t.Errorf("gate %s: interval or margin %q missing from %q", g.Name, marginText(g), row)
		}
	}
	newcomerGolden(t, "review-80x24.txt", screen)
}

// marginText is a margin as the review's gates table prints it.
func marginText(g analysis.Metric) string {
	if g.Scale == "relative" {
		return fmt.Sprintf("%g %%", float64(g.Margin)*100)
	}
	return fmt.Sprintf("%g pp", float64(g.Margin)*100)
}

func TestVersionOf(t *testing.T) {
	set := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, version},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, version},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "v0.3.1"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: set("vcs.revision", "0b085ab1234567890abcdef", "vcs.time", "2026-12-01T20:05:00Z", "vcs.modified", "true")},
			version + " (0b085ab12345+dirty, 2026-12-01T20:05:00Z)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: set("vcs.revision", "0b085ab1234567890abcdef", "vcs.modified", "false")},
			version + " (0b085ab12345)"},
	} {
		if got := versionOf(tc.bi, tc.bi != nil); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
	if code, out, _ := runCLI(t, nil, "--version"); code != 0 || !strings.HasPrefix(out, "goodput "+version) {
		t.Errorf("--version: exit %d %q", code, out)
	}
}

// TestPromFlagsRefusedForFiles: --step, --last and the other Prometheus
// query flags are refused with files instead of being ignored; --start,
// which narrows request files by arrival time (TestFileWindow), is
// refused for benchmark files, which have no wall-clock times.
func TestPromFlagsRefusedForFiles(t *testing.T) {
	b, c := llmperfPair(t)
	for _, f := range [][]string{{"--step", "30s"}, {"--last", "30m"}} {
		code, _, errs := runCLI(t, nil, append([]string{"judge", b, c}, f...)...)
		if code != ExitUsage || !strings.Contains(errs, f[0]+" only apply with --prometheus") {
			t.Errorf("%v: exit %d, stderr %q", f, code, errs)
		}
	}
	code, out, errs := runCLI(t, nil, "judge", b, c, "--start", "2026-01-01T00:00:00Z")
	if code != ExitError || out != "" || !strings.Contains(errs, "--start/--end select requests by wall-clock arrival time") {
		t.Errorf("--start with benchmark files: exit %d, stderr %q", code, errs)
	}
}

func TestReviewerName(t *testing.T) {
	git := func(name string) func(context.Context) string {
		return func(context.Context) string { return name }
	}
	for _, tc := range []struct {
		env  map[string]string
		git  func(context.Context) string
		want string
	}{
		{map[string]string{"GITHUB_ACTOR": "octo", "USER": "runner"}, git("Ada L"), "octo"},
		{map[string]string{"USER": "runner"}, git("Ada L"), "Ada L"},
		{map[string]string{"USER": "runner"}, git(""), "runner"},
		{map[string]string{}, nil, "unknown"},
	} {
		if got := reviewerName(context.Background(), func(k string) string { return tc.env[k] }, tc.git); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.env, got, tc.want)
		}
	}
}

// TestReviewHistoryAppendOnly: an approval then a reject of the same
// report leave the reject as the record and both, in order, in the
// history: a later decision never erases an earlier one.
func TestReviewHistoryAppendOnly(t *testing.T) {
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
	env := map[string]string{"GITHUB_ACTOR": "octo", "NO_COLOR": "1"}
	for _, keys := range []string{"jj\ra" + "known cold cache" + "\rq", "x" + "on second thought" + "\rq"} {
		if code, _, msg := runReviewCmd(t, ro, byteReader{strings.NewReader(keys)}, env, report); code != 0 || !strings.Contains(msg, "decision history: "+filepath.Join(dir, "run.review.history.jsonl")) {
			t.Fatalf("exit %d: %s", code, msg)
		}
	}
	if rec := readRecord(t, filepath.Join(dir, "run.review.json")); rec.Decision != "reject" || rec.Reviewer != "octo" {
		t.Errorf("latest record %+v", rec)
	}
	data, err := os.ReadFile(filepath.Join(dir, "run.review.history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("history has %d lines:\n%s", len(lines), data)
	}
	for i, want := range []string{"approve", "reject"} {
		var rec analysis.ReviewRecord
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil || rec.Decision != want {
			t.Errorf("history line %d: %v %+v", i+1, err, rec)
		}
	}
}

// TestProgress: nothing before the delay, then the stage and time, erased
// at the end; nothing at all when stderr is not a terminal.
func TestProgress(t *testing.T) {
	var quick bytes.Buffer
	p := newProgress(&syncWriter{w: &quick}, "reading 2 files", time.Hour, time.Millisecond)
	p.Stop()
	if quick.Len() != 0 {
		t.Errorf("work shorter than the delay printed %q", quick.String())
	}
	var slow syncWriter
	waitFor := func(s string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(slow.String(), s); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in %q", s, slow.String())
			}
		}
	}
	p = newProgress(&slow, "reading 2 files", 5*time.Millisecond, 5*time.Millisecond)
	waitFor("reading 2 files")
	p.Stage("judging 300 requests")
	waitFor("judging 300 requests")
	p.Stop()
	out := slow.String()
	for _, want := range []string{"goodput: reading 2 files… 0 s", "goodput: judging 300 requests…", "\r\x1b[K"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q: %q", want, out)
		}
	}
	if !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("the line is not erased at the end: %q", out)
	}
	a := &app{io: &IOStreams{ErrOut: &bytes.Buffer{}}, env: func(string) string { return "" }}
	if a.startProgress("x") != nil {
		t.Error("progress on a stderr that is not a terminal")
	}
	var nilP *progress
	nilP.Stage("x")
	nilP.Stop()
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
	b  bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w != nil {
		return s.w.Write(p)
	}
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
