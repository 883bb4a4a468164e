package tui

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/teatest"

	"github.com/goodput-dev/goodput/analysis"
)

// overloadReport is richReport with internal work: an overload in
// timeline rows 5–8 where attainment collapses while the GPUs stay busy,
// retries and the queue grow, and a divergence finding.
func overloadReport() *analysis.Report {
	r := richReport()
	att := []float64{1, 0.99, 1, 0.98, 0.3, 0.02, 0, 0.1, 0.95, 1, 1, 0.99}
	off := []float64{70, 71, 69, 72, 140, 230, 232, 180, 80, 70, 71, 70}
	retry := []float64{0, 0, 0, 0.01, 0.2, 0.5, 0.52, 0.4, 0.05, 0, 0, 0}
	gpu := []float64{0.88, 0.97, 0.99, 1, 1, 1, 1, 1, 1, 0.99, 0.98, 1}
	kv := []float64{0.31, 0.33, 0.34, 0.35, 0.55, 0.6, 0.61, 0.66, 0.45, 0.35, 0.33, 0.32}
	q := []float64{1.5, 1.4, 2, 2.5, 300, 505, 508, 430, 40, 1.2, 1.6, 1.3}
	for i := range att {
		arm := func(scale float64) *analysis.TimelineArm {
			return &analysis.TimelineArm{OfferedRPS: analysis.Num(off[i] * scale), GoodputRPS: analysis.Num(off[i] * scale * att[i]),
				SLOAttainment: analysis.Num(att[i]), RetryShare: analysis.Num(retry[i]), GPUUtilization: analysis.Num(gpu[i]),
				KVUsage: analysis.Num(kv[i]), QueueWaiting: analysis.Num(q[i] * scale), Diverging: i >= 4 && i <= 7}
		}
		r.Timeline = append(r.Timeline, analysis.TimelineRow{T: analysis.Num(float64(i) * 60), Seconds: 60, Baseline: arm(1), Canary: arm(0.98)})
	}
	r.Arms.Baseline.Internal = &analysis.Internal{Source: "prometheus (vllm-v1 + GPU gauges)", GPUUtilization: 0.9937, GPUPowerW: 2713,
		GPUMemoryBytes: 3.548e11, KVUsage: 0.4386, QueueWaiting: 185.9, Running: 406.7, Buckets: 80}
	r.Arms.Canary.Internal = &analysis.Internal{Source: "prometheus (vllm-v1 + GPU gauges)", GPUUtilization: 0.9938, GPUPowerW: 2703,
		GPUMemoryBytes: 3.548e11, KVUsage: 0.4322, QueueWaiting: 169.9, Running: 399.6, Buckets: 80}
	r.Arms.Baseline.Efficiency = &analysis.Efficiency{GPUSecondsPerGoodRequest: 0.1075, JoulesPerGoodRequest: 63.99,
		GoodTokensPerJoule: analysis.Num(math.NaN()), GoodRequestsPerGPUHour: 33274}
	r.Arms.Canary.Efficiency = &analysis.Efficiency{GPUSecondsPerGoodRequest: 0.1029, JoulesPerGoodRequest: 61.06,
		GoodTokensPerJoule: analysis.Num(math.NaN()), GoodRequestsPerGPUHour: 34742}
	r.Findings = []analysis.Finding{{Kind: "divergence", Arm: "baseline", Rows: []int{4, 5, 6, 7}, From: 240, To: 480,
		Causes: []string{"overload", "retry_amplification", "queue_growth"},
		Detail: "baseline: GPU utilization steady while goodput falls in timeline rows 5–8 (240–480 s); retry amplification 1.87×\x1b[31m"}}
	return r
}

// TestGoldenInternalView drives the review to the internal-work view at
// 100×30 (teatest, colour off) and compares the frame with
// testdata/TestGoldenInternalView/internal.golden (-update rewrites).
func TestGoldenInternalView(t *testing.T) {
	rep := overloadReport()
	m := reviewModel(t, rep)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	for range 4 {
		tm.Send(keyMsg("tab"))
	}
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("Internal work and goodput")) },
		teatest.WithDuration(5*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	tm.Send(tea.KeyMsg{Type: tea.KeyCtrlC})
	fm, ok := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model)
	if !ok {
		t.Fatal("final model is not a Model")
	}
	out := fm.View()
	teatest.RequireEqualOutput(t, []byte(out))
	for _, want := range []string{"Internal work", "SLO attainment", "GPU utilization", "!!!!", "finding (not a gate)"} {
		if !strings.Contains(out, want) {
			t.Errorf("view lacks %q", want)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Error("an escape sequence from report text reached the terminal")
	}
}

// The internal-work tab is offered only when the report has internal
// work: tab from the time view goes straight to the warnings otherwise.
func TestInternalTabOffered(t *testing.T) {
	for _, tc := range []struct {
		rep  *analysis.Report
		want viewID
	}{{richReport(), viewSpec}, {overloadReport(), viewInternal}} {
		m, err := New(Options{Report: tc.rep, ReportBytes: reportJSON(t, tc.rep), ReportName: "r.json", RecordPath: "r.review.json",
			Now: fixedNow, NoColor: true, WriteFile: (&fakeWriter{}).write})
		if err != nil {
			t.Fatal(err)
		}
		m.active = viewTime
		if got := m.stepView(1); got != tc.want {
			t.Errorf("after Time comes %v, want %v", got, tc.want)
		}
		m.active = tc.want
		if got := m.stepView(numViews - 1); got != viewTime {
			t.Errorf("before %v comes %v, want Time", tc.want, got)
		}
	}
}
