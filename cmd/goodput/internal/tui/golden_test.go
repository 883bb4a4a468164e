package tui

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/goodput-dev/goodput/analysis"
)

// TestGoldenViews drives the program through teatest at 100×30 with colour
// off and compares each view's final frame with testdata/TestGoldenViews/
// <name>.golden (go test -run TestGoldenViews -update rewrites them).
func TestGoldenViews(t *testing.T) {
	cases := []struct {
		name string
		keys []string
		wait string
		w, h int // terminal size; 0 is 100×30
	}{
		{"summary", nil, "Gates (7)", 0, 0},
		// at 80 columns the arms' values give way; interval and margin stay
		{"summary_80x24", nil, "Gates (7)", 80, 24},
		{"gate_fail", []string{"j", "j", "enter"}, "lower bound of harm", 0, 0},
		{"gate_inconclusive_naive", []string{"j", "enter"}, "More data", 0, 0},
		{"distributions_ttft", []string{"tab", "tab"}, "TTFT CDF", 0, 0},
		{"distributions_tpot", []string{"tab", "tab", "l"}, "TPOT CDF", 0, 0},
		{"time", []string{"tab", "tab", "tab"}, "TTFT p99 per", 0, 0},
		{"warnings_spec", []string{"shift+tab"}, "Measurement spec", 0, 0},
		{"help", []string{"?"}, "needs a note", 0, 0},
		{"filter", []string{"/", "r", "a", "t"}, "match", 0, 0},
		{"approve_override", append([]string{"j", "j", "a"}, typed("known cold cache")...), "cold cache", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := richReport()
			m := reviewModel(t, rep)
			if tc.w == 0 {
				tc.w, tc.h = 100, 30
			}
			tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(tc.w, tc.h))
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
			if fm.width != tc.w || fm.height != tc.h {
				t.Fatalf("size %dx%d", fm.width, fm.height)
			}
			teatest.RequireEqualOutput(t, []byte(fm.View()))
		})
	}
}

// bigReport is richReport with n gates and distributions built from
// samples requests per arm.
func bigReport(n, samples int) *analysis.Report {
	r := richReport()
	base := r.Metrics
	r.Metrics = make([]analysis.Metric, n)
	for i := range r.Metrics {
		g := base[i%len(base)]
		g.Name = fmt.Sprintf("%s_%03d", g.Name, i)
		r.Metrics[i] = g
	}
	p := r.Distributions.Probs
	r.Distributions.TTFT = analysis.ArmQuantCurve{Baseline: lognormalCurve(3, samples, 0.18, 0.55, p), Canary: lognormalCurve(4, samples, 0.21, 0.6, p)}
	r.Distributions.TPOT = analysis.ArmQuantCurve{Baseline: lognormalCurve(5, samples, 0.029, 0.3, p), Canary: lognormalCurve(6, samples, 0.029, 0.28, p)}
	return r
}

// BenchmarkView renders every view of a report with 200 gates and
// distributions from 1M-request samples per arm at 100×30 (ns/op is one
// frame).
func BenchmarkView(b *testing.B) {
	rep := bigReport(200, 1_000_000)
	views := []struct {
		name string
		keys []string
	}{
		{"summary", nil},
		{"summary_scrolled", []string{"end"}},
		{"gate", []string{"enter"}},
		{"distributions", []string{"tab", "tab"}},
		{"time", []string{"tab", "tab", "tab"}},
		{"spec", []string{"shift+tab"}},
		{"help", []string{"?"}},
		{"filter", []string{"/", "r", "a", "t", "i", "o"}},
	}
	for _, v := range views {
		b.Run(v.name, func(b *testing.B) {
			m := newModel(b, rep, nil)
			for _, k := range v.keys {
				var next tea.Model
				if k == "end" {
					next, _ = m.Update(tea.KeyMsg{Type: tea.KeyEnd})
				} else {
					next, _ = m.Update(keyMsg(k))
				}
				m = next.(Model)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
	b.Run("keypress_filter_200", func(b *testing.B) {
		m, _ := press(newModel(b, rep, nil), "/")
		b.ReportAllocs()
		for b.Loop() {
			next, _ := m.Update(keyMsg("r"))
			next, _ = next.(Model).Update(keyMsg("backspace"))
			_ = next.(Model).View()
		}
	})
}

// TestSpecShowsLeftOut: a report whose arms had a baseline outage left out
// of both (left_out) says so in the measurement spec, with each arm's
// requests, seconds and failures there.
func TestSpecShowsLeftOut(t *testing.T) {
	rep := richReport()
	rep.Arms.Baseline.LeftOut = &analysis.LeftOut{Seconds: 120, Accounting: analysis.Accounting{Offered: 2182, Admitted: 2182, Failed: 983, Completed: 1199, Good: 1165}}
	rep.Arms.Canary.LeftOut = &analysis.LeftOut{Seconds: 120, Accounting: analysis.Accounting{Offered: 2090, Admitted: 2090, Completed: 2090, Good: 2057}}
	m := reviewModel(t, rep)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 60))
	tm.Send(keyMsg("shift+tab"))
	want := "left out (outage)"
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte(want)) && bytes.Contains(b, []byte("baseline 2,182 requests in 120 s (983 failed), canary 2,090 requests in 120 s (0 failed)"))
	}, teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}

// TestNotFailedShown: a per-class check that did not fail without passing
// on its own (Metric.NotFailed) reads NOT FAILED in the gate list and in
// its own view, never PASS.
func TestNotFailedShown(t *testing.T) {
	rep := richReport()
	k := -1
	for i, g := range rep.Metrics {
		if g.Verdict == analysis.Pass {
			k = i
			break
		}
	}
	if k < 0 {
		t.Fatal("the fixture has no passing gate")
	}
	rep.Metrics[k].NotFailed = true
	name := rep.Metrics[k].Name
	m := reviewModel(t, rep)
	next, _ := m.Update(tea.WindowSizeMsg{Width: 140, Height: 40})
	m = next.(Model)
	if v := m.View(); !strings.Contains(v, "NOT FAILED") {
		t.Fatalf("the gate list does not say NOT FAILED for %s:\n%s", name, v)
	}
	for range k {
		m, _ = press(m, "j")
	}
	m, _ = press(m, "enter")
	if v := m.View(); !strings.Contains(v, name) || !strings.Contains(v, "NOT FAILED") {
		t.Fatalf("the view of %s does not say NOT FAILED:\n%s", name, v)
	}
}

// TestSpecShowsResamplingUnit: arms without arrival times show their
// resampling unit in the measurement spec, not a time bucket.
func TestSpecShowsResamplingUnit(t *testing.T) {
	rep := richReport()
	rep.Measurement.Clock, rep.Measurement.ResamplingUnit = "none", "each request"
	m := reviewModel(t, rep)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 60))
	tm.Send(keyMsg("shift+tab"))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("resampling unit")) && bytes.Contains(b, []byte("each request"))
	}, teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Send(keyMsg("q"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}
