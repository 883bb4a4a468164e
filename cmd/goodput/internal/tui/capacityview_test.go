package tui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest"
	"github.com/muesli/termenv"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/capacity"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/benchfile"
)

// realSweep reads every stage file of one arm of the inference-perf
// sweeps in the repository's testdata/realdata.
func realSweep(t testing.TB, arm string) []sources.RatePoint {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "..", "testdata", "realdata", "inference-perf", arm)
	paths, err := filepath.Glob(filepath.Join(dir, "stage_*_lifecycle_metrics.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no stage files in %s: %v", dir, err)
	}
	sort.Strings(paths)
	var pts []sources.RatePoint
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := benchfile.ReadSweep(context.Background(), "inference-perf/"+arm+"/"+filepath.Base(p), f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		pts = append(pts, got...)
	}
	return pts
}

// realCapacity compares the inference-perf V1 sweep (baseline) with the
// quantized one (canary) under the chat policy.
func realCapacity(t testing.TB, reverse bool) *capacity.Result {
	t.Helper()
	pol, err := policies.Load("chat")
	if err != nil {
		t.Fatal(err)
	}
	b, c := realSweep(t, "vllm"), realSweep(t, "vllm+quantization")
	if reverse {
		b, c = c, b
	}
	res, err := capacity.Compare(b, c, capacity.Config{Policy: pol, SaturationTolerance: capacity.DefaultSaturationTolerance})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func newCapacityModel(t testing.TB, res *capacity.Result, noColor bool, w, h int) CapacityModel {
	t.Helper()
	m, err := NewCapacity(CapacityOptions{Result: res, SLO: "TTFT ≤ 1s ∧ TPOT ≤ 80ms", Policy: "chat",
		Name: "7 baseline + 7 canary sweep points", NoColor: noColor, Width: w, Height: h})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGoldenCapacityView drives the capacity review through teatest with
// colour off and compares the final frame with testdata/
// TestGoldenCapacityView/<name>.golden (-update rewrites them): the first
// screen at 80×24 must hold both capacities with their intervals, the
// ratio, its interval, the margin and the verdict.
func TestGoldenCapacityView(t *testing.T) {
	cases := []struct {
		name    string
		reverse bool
		keys    []string
		wait    string
		w, h    int
		want    []string // on the final frame
	}{
		{"pass_80x24", false, nil, "capacity at", 80, 24,
			[]string{"PASS", "92.33 req/s", "[92.19, 105.6]", "170.3 req/s", "[170.2, 177]", "1.845", "[1.612, 1.919]", "margin 5%", "99% ┤┈┈"}},
		{"fail_reverse_80x24", true, nil, "capacity at", 80, 24,
			[]string{"FAIL", "170.3 req/s", "92.33 req/s", "0.5421", "[0.521, 0.6202]", "margin 5%"}},
		{"points_80x24", false, []string{"pgdown"}, "baseline points", 80, 24,
			[]string{"baseline points", "105.6 sat", "[99.89%, 99.98%]"}},
		{"pass_120x40", false, nil, "capacity at", 120, 40, []string{"PASS", "baseline points", "stage 6"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newCapacityModel(t, realCapacity(t, tc.reverse), true, tc.w, tc.h)
			tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(tc.w, tc.h))
			for _, k := range tc.keys {
				if k == "pgdown" {
					tm.Send(tea.KeyMsg{Type: tea.KeyPgDown})
					continue
				}
				tm.Send(keyMsg(k))
			}
			teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(tc.wait)) },
				teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
			tm.Send(keyMsg("q"))
			fm, ok := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(CapacityModel)
			if !ok {
				t.Fatal("final model is not a CapacityModel")
			}
			v := fm.View()
			for _, s := range tc.want {
				if !strings.Contains(v, s) {
					t.Errorf("%q not on the screen:\n%s", s, v)
				}
			}
			teatest.RequireEqualOutput(t, []byte(v))
		})
	}
}

// TestCapacityViewFitsAndSanitizes checks every size and scroll position:
// exactly height lines, none wider than the terminal, and hostile text
// from the inputs (a point's source and notes, reasons, warnings) reaches
// the terminal without escapes, with colour off and on.
func TestCapacityViewFitsAndSanitizes(t *testing.T) {
	res := realCapacity(t, false)
	evil := "\x1b]0;title\x07\x1b[2J\u202eevil"
	res.Baseline.Points[0].Source = "stage_0.json#" + evil
	res.Baseline.Points[0].Notes = []string{"note " + evil}
	res.Reasons = append(res.Reasons, "reason "+evil)
	res.Warnings = append(res.Warnings, "warning "+evil)
	res.Canary.Capacity.Reason = evil
	sizes := [][2]int{{80, 24}, {100, 30}, {50, 12}, {200, 15}, {40, 10}}
	for _, sz := range sizes {
		for _, keys := range [][]tea.KeyMsg{nil, {{Type: tea.KeyPgDown}}, {{Type: tea.KeyEnd}}, {keyMsg("j"), keyMsg("j")}} {
			var tm tea.Model = newCapacityModel(t, res, true, sz[0], sz[1])
			tm, _ = tm.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
			for _, k := range keys {
				tm, _ = tm.Update(k)
			}
			v := tm.View()
			lines := strings.Split(v, "\n")
			if len(lines) != sz[1] {
				t.Errorf("%v: %d lines, want %d", sz, len(lines), sz[1])
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > sz[0] {
					t.Errorf("%v line %d: width %d > %d: %q", sz, i, w, sz[0], l)
				}
			}
			if strings.ContainsAny(v, "\x1b\x07\u202e") {
				t.Errorf("%v: control characters reach the terminal: %q", sz, v)
			}
		}
	}
	// the hostile note is shown, cleaned, at the end
	var tm tea.Model = newCapacityModel(t, res, true, 200, 200)
	if v := tm.View(); !strings.Contains(v, "note ]0;title") && !strings.Contains(v, "note evil") {
		t.Errorf("the cleaned note is missing:\n%s", v)
	}
	// colour on: styles appear, hostile text still inert
	m := newCapacityModel(t, res, false, 200, 200)
	m.st.r.SetColorProfile(termenv.ANSI256)
	m.st = newStylesFrom(m.st.r)
	v := m.View()
	if !strings.Contains(v, "\x1b[") {
		t.Fatal("a colour profile produced no colour")
	}
	if strings.Contains(v, "\x1b]0;") || strings.Contains(v, "\x1b[2J") || strings.Contains(v, "\u202e") {
		t.Fatal("input text injected escapes")
	}
}

// TestCapacityNotIdentifiable shows the reason and the rates that would
// identify a capacity instead of a number.
func TestCapacityNotIdentifiable(t *testing.T) {
	res := realCapacity(t, false)
	res.Canary.Capacity = capacity.Capacity{Reason: "every point is above the target", Identify: "sweep beyond 177 req/s"}
	res.Verdict = analysis.Inconclusive
	v := newCapacityModel(t, res, true, 80, 24).View()
	for _, s := range []string{"INCONCLUSIVE", "canary   not identifiable: every point is above the target", "to identify it: sweep beyond 177 req/s"} {
		if !strings.Contains(v, s) {
			t.Errorf("%q missing:\n%s", s, v)
		}
	}
}

func TestNewCapacityRequiresResult(t *testing.T) {
	if _, err := NewCapacity(CapacityOptions{}); err == nil {
		t.Fatal("no error without a result")
	}
}
