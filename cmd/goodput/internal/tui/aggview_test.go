package tui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/requestlog"
)

// streamedReport judges the example request logs as goodput judge
// --stream does: every record counted into the arm's aggregate while it is
// read, none kept. The policy is chat with a fixed 60 s warm-up, so the
// time view has a cut to shade.
func streamedReport(t testing.TB) *analysis.Report {
	t.Helper()
	p, err := policies.Builtin("chat")
	if err != nil {
		t.Fatal(err)
	}
	p.Window.Warmup = "60s"
	arms := map[sources.Arm]*sources.Dataset{}
	for arm, name := range map[sources.Arm]string{sources.Baseline: "baseline.jsonl", sources.Canary: "canary.jsonl"} {
		path := filepath.Join("..", "..", "..", "..", "testdata", "example", name)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ag := analysis.NewAggregator(p)
		ds, err := requestlog.Scan(context.Background(), path, f, arm, requestlog.ScanOptions{},
			func(r *sources.Request) error { ag.Add(r); return nil })
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ds.Requests = nil
		if ds.Agg, err = ag.Aggregate(arm); err != nil {
			t.Fatal(err)
		}
		arms[arm] = &ds
	}
	r, err := analysis.Judge(arms[sources.Baseline], arms[sources.Canary], analysis.Config{Policy: p, Seed: 1, Resamples: 400})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestGoldenStreamedViews: the review's distribution and time views of a
// report judged from streamed aggregates draw both arms' CDFs and per-slice
// series with the warm-up cut shaded, as they do for the request path
// (frames in testdata/TestGoldenStreamedViews, -update rewrites them); the
// spec view lists the Mann-Whitney / Hodges-Lehmann diagnostics.
func TestGoldenStreamedViews(t *testing.T) {
	rep := streamedReport(t)
	for _, tc := range []struct {
		name   string
		keys   []string
		wait   string
		absent string
	}{
		{"distributions_ttft", []string{"tab", "tab"}, "TTFT CDF", "has no TTFT distribution"},
		{"distributions_tpot", []string{"tab", "tab", "l"}, "TPOT CDF", "has no TPOT distribution"},
		{"time", []string{"tab", "tab", "tab"}, "TTFT p99 per", "has no per-bucket series"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := reviewModelNamed(t, rep, "judged 1 baseline + 1 canary inputs", "goodput.review.json")
			tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
			for _, k := range tc.keys {
				tm.Send(keyMsg(k))
			}
			teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(tc.wait)) },
				teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
			tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
			fm, ok := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model)
			if !ok {
				t.Fatal("final model is not a Model")
			}
			frame := fm.View()
			if strings.Contains(frame, tc.absent) {
				t.Fatalf("the view finds nothing to draw:\n%s", frame)
			}
			if tc.name == "time" && !strings.Contains(frame, "warm-up cut, not analysed") {
				t.Fatalf("no warm-up cut shaded:\n%s", frame)
			}
			teatest.RequireEqualOutput(t, []byte(frame))
		})
	}
	t.Run("spec lists the diagnostics", func(t *testing.T) {
		m, _ := press(newModel(t, rep, nil), "shift+tab")
		var frame strings.Builder
		// the spec view scrolls: collect every page
		for range 60 {
			frame.WriteString(m.View())
			m, _ = press(m, "j")
		}
		for _, want := range []string{"Diagnostics", "ttft", "tpot", "e2e", "mann-whitney"} {
			if !strings.Contains(frame.String(), want) {
				t.Errorf("spec view lacks %q:\n%s", want, frame.String())
			}
		}
	})
}
