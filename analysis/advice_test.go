package analysis

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

func adviceArm(arm sources.Arm, format, path string, n int) *armData {
	ds := &sources.Dataset{Arm: arm, Inputs: []sources.Input{{Path: path, Format: format, Arm: arm}}}
	a := &armData{arm: arm, ds: ds, buckets: []bucket{{offered: float64(n)}}, keep: []bool{true}, windowSecs: 60}
	return a
}

func TestOnceForBothArms(t *testing.T) {
	b := adviceArm(sources.Baseline, "llmperf", "b.json", 1)
	c := adviceArm(sources.Canary, "llmperf", "c.json", 1)
	got := onceForBothArms([]string{
		"baseline: b.json: no timestamps",
		"baseline: without arrival times, each request is its own unit",
		"canary: c.json: no timestamps",
		"canary: without arrival times, each request is its own unit",
		"canary: only here",
		"the arms' clocks differ",
	}, b.ds, c.ds)
	want := []string{
		"both arms (b.json, c.json): no timestamps",
		"both arms: without arrival times, each request is its own unit",
		"canary: only here",
		"the arms' clocks differ",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestMoreDataAdvice: the advice names the benchmark tool's own flag with
// the per-arm total, and past 20× the data (or a day) says that more data
// will not decide.
func TestMoreDataAdvice(t *testing.T) {
	m := Metric{Name: "ttft_p90", Scale: "relative", Margin: 0.1}
	for _, tc := range []struct {
		format string
		md     MoreData
		want   string
	}{
		{"vllm-bench", MoreData{Factor: 2.5, Requests: 450, Minutes: Num(math.NaN())},
			"about 300 more prompts per arm (2.5× the data) would decide the 10% margin: rerun both with `--num-prompts 500`"},
		{"llmperf", MoreData{Factor: 3, Requests: 600, Minutes: Num(math.NaN())}, "`--max-num-completed-requests 600`"},
		{"inference-perf", MoreData{Factor: 3, Requests: 600, Minutes: 2}, "lengthen the stages of both runs"},
		{"requestlog", MoreData{Factor: 3, Requests: 600, Minutes: 2}, "about 600 more requests (3.0× the data) ≈ 2 min more at the current rate"},
		{"vllm-bench", MoreData{Factor: 21, Requests: 4000, Minutes: Num(math.NaN())}, "rerun both with `--num-prompts 4200`"},
		{"vllm-bench", MoreData{Factor: 600, Requests: 240000, Minutes: Num(math.NaN())}, "more data will not decide this: it would take about 600× the data"},
		{"requestlog", MoreData{Factor: 5, Requests: 1e9, Minutes: 5e6}, "more data will not decide this"},
		{"llmperf-none", MoreData{Factor: 25, Requests: 9600, Minutes: Num(math.NaN())}, "more data will not decide this"},
	} {
		b, c := adviceArm(sources.Baseline, tc.format, "b", 200), adviceArm(sources.Canary, tc.format, "c", 200)
		if got := moreDataAdvice(benchFormat(b, c), math.Max(b.totals().offered, c.totals().offered), &tc.md, m); !strings.Contains(got, tc.want) {
			t.Errorf("%s %+v:\n got %q\nwant %q", tc.format, tc.md, got, tc.want)
		}
	}
}

// TestNotDecidable: "about as large as the margin" only when the
// difference is near the margin; a wide interval around no difference is
// said to be wide.
func TestNotDecidable(t *testing.T) {
	at := Metric{Name: "slo_attainment", Scale: "absolute", Direction: "higher_is_better", Margin: 0.01, Delta: -0.0095}
	if got := notDecidable(at, 40); !strings.Contains(got, "about as large as the 1 pp margin") {
		t.Errorf("at the margin: %q", got)
	}
	wide := at
	wide.Delta = -0.0008
	if got := notDecidable(wide, 40); strings.Contains(got, "about as large") || !strings.Contains(got, "interval narrow enough") {
		t.Errorf("wide interval: %q", got)
	}
	// a two-sided gate is at its margin on either side
	for _, d := range []float64{0.048, -0.048} {
		two := Metric{Name: "output_tokens_mean", Scale: "relative", Direction: "two_sided", Margin: 0.05, Delta: Num(d)}
		if got := notDecidable(two, 40); !strings.Contains(got, "about as large as the 5% margin") {
			t.Errorf("two-sided at %+g: %q", d, got)
		}
	}
}
