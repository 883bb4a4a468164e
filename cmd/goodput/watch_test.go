package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/report"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources/prometheus"
	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
)

func TestWatchUsageErrors(t *testing.T) {
	base := []string{"watch", "--prometheus", "http://127.0.0.1:1", "--baseline-selector", `deployment="b"`, "--canary-selector", `deployment="c"`}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"watch"}, "give --prometheus"},
		{append(base, "--last", "30m"), "--last is not used"},
		{append(base, "--end", "2026-01-01T00:30:00Z"), "--end needs --start"},
		{append(base, "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:30:00Z", "--looks", "7", "--every", "5m"), "give two of them"},
		{append(base, "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:30:00Z", "--every", "30s"), "shorter than one --step"},
		{append(base, "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:30:00Z", "--max-duration", "1h"), "runs past --end"},
		{append(base, "--start", "2999-01-01T00:00:00Z", "--end", "2999-01-01T00:30:00Z"), "in the future"},
		{append(base, "--format", "csv"), "--format"},
		{append(base, "--start", "yesterday"), "RFC 3339"},
	} {
		code, _, errs := runCLI(t, nil, tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args[1:], code, errs, tc.want)
		}
	}
}

// watchFixture backfills one A/A replicate (deployment baseline-0 /
// canary-0) and one with tail TTFT about 50% higher (baseline-1 /
// canary-1), 12 minutes each, into a real Prometheus.
func watchFixture(t *testing.T) (url, policy string) {
	t.Helper()
	dir := t.TempDir()
	om := filepath.Join(dir, "merged.om")
	for i, sc := range []string{watchCalScenario("aa", 1), watchCalScenario("ttft-plus-50", 0.6)} {
		s, err := simScenario("w", strings.Replace(sc, "duration: 30m", "duration: 12m", 1))
		if err != nil {
			t.Fatal(err)
		}
		part := filepath.Join(dir, "part.om")
		if err := simMerged(s, 77, 1, part); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			mustRename(t, part, om)
		} else {
			mergeRelabel(t, om, part, "-0", "-1")
		}
	}
	return promtest.Start(t, om), writeFile(t, dir, "policy.yaml", serveTestPolicy)
}

type jsonLook struct {
	Look       int     `json:"look"`
	Looks      int     `json:"looks"`
	Verdict    string  `json:"verdict"`
	AlphaSpent float64 `json:"alpha_spent"`
	Window     struct {
		Start, End string
		Seconds    float64
	} `json:"window"`
	Metrics []struct {
		Name, Verdict string
		Interval      [2]any
	} `json:"metrics"`
	Final   bool   `json:"final"`
	Stopped string `json:"stopped"`
}

func parseLooks(t *testing.T, out string) []jsonLook {
	t.Helper()
	var ls []jsonLook
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l jsonLook
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		ls = append(ls, l)
	}
	return ls
}

// TestWatchReplay replays both fixtures as if live, a look every minute for
// 12 minutes: the regression fails and the watch stops there (how early is
// the calibration's business: TestWatchCalibration); the A/A canary does not fail; jsonl carries the stable fields on every line.
func TestWatchReplay(t *testing.T) {
	url, pol := watchFixture(t)
	args := func(r string, more ...string) []string {
		return append([]string{"watch", "--prometheus", url, "--policy", pol, "--baseline-selector", `deployment="baseline-` + r + `"`,
			"--canary-selector", `deployment="canary-` + r + `"`, "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:12:00Z"}, more...)
	}
	code, out, errs := runCLI(t, nil, args("1", "--format", "jsonl")...)
	if code != ExitFail {
		t.Fatalf("regression: exit %d, want 1\n%s%s", code, out, errs)
	}
	ls := parseLooks(t, out)
	last := ls[len(ls)-1]
	if !last.Final || last.Stopped != "fail" || last.Verdict != "fail" {
		t.Errorf("regression: last line %+v; want a final fail", last)
	}
	for i, l := range ls {
		if l.Look != i+1 || l.Looks != 12 || l.Window.Seconds != float64(60*(i+1)) || len(l.Metrics) == 0 && i >= 8 {
			t.Errorf("line %d: %+v", i, l)
		}
		if i > 0 && l.AlphaSpent < ls[i-1].AlphaSpent {
			t.Errorf("alpha_spent falls at look %d", l.Look)
		}
		if l.Final != (i == len(ls)-1) {
			t.Errorf("line %d: final=%v", i, l.Final)
		}
	}
	if !strings.Contains(errs, "look 1/12") {
		t.Errorf("no progress on stderr: %q", errs)
	}
	t.Logf("regression failed at look %d of 12", last.Look)

	code, out, errs = runCLI(t, nil, args("0", "--format", "json")...)
	if code == ExitFail || code == ExitError || code == ExitUsage {
		t.Fatalf("A/A: exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Verdict string
		Reasons []string
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Reasons[0], "watch: look ") {
		t.Errorf("final report reasons lack the watch's account: %q", rep.Reasons)
	}
	// the same replay gives the same bytes
	_, out2, _ := runCLI(t, nil, args("0", "--format", "json")...)
	if out2 != out {
		t.Error("two replays of the same window differ")
	}
	for _, f := range []string{"text", "markdown"} {
		if code2, o, e := runCLI(t, nil, args("0", "--format", f)...); code2 != code || o == "" {
			t.Errorf("--format %s: exit %d (json gave %d): %s", f, code2, code, e)
		}
	}
}

// TestWatchPrefixEqualsLiveQuery: the calibration judges each look on a
// prefix of one full-window read; that must equal the report of the query a
// live look makes over [start, look].
func TestWatchPrefixEqualsLiveQuery(t *testing.T) {
	url, polPath := watchFixture(t)
	pol, err := policies.Load(polPath)
	if err != nil {
		t.Fatal(err)
	}
	src, err := prometheus.New(prometheus.Config{URL: url, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fb, fc := readFull(t, src, 1, 12*time.Minute)
	for _, k := range []int{8, 10, 12} {
		lb, lc := readFull(t, src, 1, time.Duration(k)*time.Minute)
		pb, pc := prefix(fb, simStart.Add(time.Duration(k)*time.Minute)), prefix(fc, simStart.Add(time.Duration(k)*time.Minute))
		live, err := judgeLook(&lb, &lc, pol, 0.01, 1, 200)
		if err != nil {
			t.Fatal(err)
		}
		pre, err := judgeLook(&pb, &pc, pol, 0.01, 1, 200)
		if err != nil {
			t.Fatal(err)
		}
		live.Inputs, pre.Inputs = nil, nil
		var a, b bytes.Buffer
		if err := report.JSON(&a, live); err != nil {
			t.Fatal(err)
		}
		if err := report.JSON(&b, pre); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("look %d: the prefix's report differs from the live query's", k)
		}
	}
}

// TestWatchLiveInterrupt watches live on an injected clock and cancels the
// context after the third look, as Ctrl-C does: the watch ends cleanly,
// reports the state at the last look (exit 3) and says so.
func TestWatchLiveInterrupt(t *testing.T) {
	url, pol := watchFixture(t)
	var mu sync.Mutex
	now := simStart
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	looks := 0
	var out, errb bytes.Buffer
	a := &app{io: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, env: func(string) string { return "" },
		clock: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			if looks == 3 {
				cancel()
				return ctx.Err()
			}
			now = now.Add(d)
			looks++
			return nil
		}}
	root, _ := a.newRootCmd()
	root.SetArgs([]string{"watch", "--prometheus", url, "--policy", pol, "--baseline-selector", `deployment="baseline-0"`,
		"--canary-selector", `deployment="canary-0"`, "--start", "2026-01-01T00:00:00Z", "--max-duration", "12m", "--lag", "0s", "--format", "jsonl"})
	err := root.ExecuteContext(ctx)
	ee, ok := err.(*exitError)
	if !ok || ee.Code != ExitInconclusive {
		t.Fatalf("err %v; want exit 3\n%s%s", err, out.String(), errb.String())
	}
	ls := parseLooks(t, out.String())
	last := ls[len(ls)-1]
	if !last.Final || last.Stopped != "interrupted" || last.Look != 3 {
		t.Errorf("last line %+v; want the final state at look 3, stopped interrupted", last)
	}
	if !strings.Contains(errb.String(), "interrupted after look 3 of 12") {
		t.Errorf("stderr: %q", errb.String())
	}
}

// TestHoldUnresolved: at a look whose one-sided level is finer than the
// bootstrap can place, a bootstrap gate's pass or fail is held
// (inconclusive, saying why) and the overall verdict recomputed; other
// gates and resolvable levels are left alone.
func TestHoldUnresolved(t *testing.T) {
	mk := func() *analysis.Report {
		return &analysis.Report{Verdict: analysis.Fail, Metrics: []analysis.Metric{
			{Name: "slo_attainment", Verdict: analysis.Pass, Method: "delta-hac"},
			{Name: "ttft_p99", Verdict: analysis.Fail, Method: "block-bootstrap of histogram quantiles"},
		}}
	}
	r := mk()
	holdUnresolved(r, 1e-4, 20000) // 2 resamples beyond the level
	if r.Metrics[1].Verdict != analysis.Inconclusive || !strings.Contains(r.Metrics[1].Reason, "held") || r.Metrics[0].Verdict != analysis.Pass {
		t.Errorf("held: %+v", r.Metrics)
	}
	if r.Verdict != analysis.Inconclusive {
		t.Errorf("overall %s after holding the only fail; want inconclusive", r.Verdict)
	}
	r = mk()
	holdUnresolved(r, 1e-3, 20000) // 20 beyond: resolvable
	if r.Metrics[1].Verdict != analysis.Fail || r.Verdict != analysis.Fail {
		t.Errorf("resolvable level was held: %+v", r.Metrics)
	}
}
