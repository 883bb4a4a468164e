package policies

import (
	"strings"
	"testing"
	"time"
)

func TestOverride(t *testing.T) {
	p, err := Builtin("chat")
	if err != nil {
		t.Fatal(err)
	}
	q, err := Override(p, Overrides{SLO: map[string]string{"ttft": "500ms", "e2e": "30s"}, Margins: map[string]string{"slo_attainment": "2pp", "ttft_p99": "15%"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(q.SLO.TTFT); got != 500*time.Millisecond {
		t.Errorf("ttft = %v", got)
	}
	if got := time.Duration(q.SLO.TPOT); got != 80*time.Millisecond {
		t.Errorf("tpot changed: %v", got)
	}
	// the long class keeps its own ttft and inherits the new e2e
	long := q.ClassSLO("long")
	if time.Duration(long.TTFT) != 4*time.Second || time.Duration(long.E2E) != 30*time.Second {
		t.Errorf("long class = %+v", long)
	}
	want := map[string]float64{"slo_attainment": 0.02, "ttft_p99": 0.15, "goodput_per_replica": 0.02}
	for _, g := range q.Gates {
		if w, ok := want[g.Metric]; ok && g.Margin.Value != w {
			t.Errorf("%s margin = %v, want %v", g.Metric, g.Margin.Value, w)
		}
	}
	if q.SHA256 == p.SHA256 {
		t.Error("the digest must cover the overridden policy")
	}
	if q.Source != "builtin with --slo e2e=30s,ttft=500ms --margin slo_attainment=2pp,ttft_p99=15%" {
		t.Errorf("source = %q", q.Source)
	}
	// the original is untouched
	if time.Duration(p.SLO.TTFT) != time.Second || p.Gates[0].Margin.Value != 0.01 {
		t.Error("Override modified its input")
	}
	same, err := Override(p, Overrides{})
	if err != nil || same != p {
		t.Errorf("empty overrides: %v %v", same, err)
	}
}

func TestOverrideErrors(t *testing.T) {
	p, err := Builtin("bench")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    Overrides
		want string
	}{
		{Overrides{SLO: map[string]string{"ttfb": "1s"}}, "--slo ttfb: unknown criterion"},
		{Overrides{SLO: map[string]string{"ttft": "1"}}, "want a duration with its unit"},
		{Overrides{SLO: map[string]string{"ttft": "0s"}}, "above zero"},
		{Overrides{Margins: map[string]string{"ttft_p99": "10%"}}, "policy bench does not gate ttft_p99 (its gates: slo_attainment, ttft_p50"},
		{Overrides{Margins: map[string]string{"slo_attainment": "2%"}}, "state its margin in pp"},
	} {
		if _, err := Override(p, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestParsePairs(t *testing.T) {
	m, err := ParsePairs("--slo", "ttft=1s, tpot=80ms")
	if err != nil || len(m) != 2 || m["ttft"] != "1s" || m["tpot"] != "80ms" {
		t.Errorf("got %v %v", m, err)
	}
	for _, bad := range []string{"ttft", "ttft=", "=1s", "ttft=1s,ttft=2s"} {
		if _, err := ParsePairs("--slo", bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	if m, err := ParsePairs("--slo", ""); err != nil || len(m) != 0 {
		t.Errorf("empty: %v %v", m, err)
	}
}

// TestBenchPolicy pins what the bench policy is for: gates a benchmark of a
// few hundred prompts can decide, and requests as units without arrival times.
func TestBenchPolicy(t *testing.T) {
	p, err := Builtin("bench")
	if err != nil {
		t.Fatal(err)
	}
	if p.Window.Untimed != "requests" {
		t.Errorf("untimed = %q", p.Window.Untimed)
	}
	for _, g := range p.Gates {
		m, _ := Metric(g.Metric)
		if m.Quantile > 0.9 {
			t.Errorf("%s needs more values than a benchmark has", g.Metric)
		}
	}
	c, _ := Builtin("chat")
	if c.Window.Untimed != "runs" {
		t.Errorf("chat untimed = %q, want the default runs", c.Window.Untimed)
	}
}
