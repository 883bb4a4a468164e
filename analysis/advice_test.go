package analysis

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
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
	}, b, c)
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
	p, err := policies.Builtin("bench")
	if err != nil {
		t.Fatal(err)
	}
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
		{"vllm-bench", MoreData{Factor: 21, Requests: 4000, Minutes: Num(math.NaN())}, "more data will not decide this: it would take about 21× the data"},
		{"requestlog", MoreData{Factor: 5, Requests: 1e9, Minutes: 5e6}, "more data will not decide this"},
	} {
		j := &judgement{p: p, b: adviceArm(sources.Baseline, tc.format, "b", 200), c: adviceArm(sources.Canary, tc.format, "c", 200)}
		if got := j.moreDataAdvice(&tc.md, m); !strings.Contains(got, tc.want) {
			t.Errorf("%s %+v:\n got %q\nwant %q", tc.format, tc.md, got, tc.want)
		}
	}
}
