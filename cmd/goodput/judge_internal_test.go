package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
)

// internalReport is the part of the JSON report the internal-work tests read.
type internalReport struct {
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons"`
	Arms    map[string]struct {
		Internal *struct {
			Source         string   `json:"source"`
			GPUUtilization *float64 `json:"gpu_utilization"`
			GPUPowerW      *float64 `json:"gpu_power_w"`
			GPUMemoryBytes *float64 `json:"gpu_memory_bytes"`
			KVUsage        *float64 `json:"kv_usage"`
			QueueWaiting   *float64 `json:"queue_waiting"`
			Running        *float64 `json:"running"`
		} `json:"internal"`
		Efficiency *struct {
			JoulesPerGoodRequest     *float64 `json:"joules_per_good_request"`
			GPUSecondsPerGoodRequest *float64 `json:"gpu_seconds_per_good_request"`
		} `json:"efficiency"`
	} `json:"arms"`
	Timeline []struct {
		T        float64 `json:"t"`
		Baseline *struct {
			SLOAttainment  *float64 `json:"slo_attainment"`
			GPUUtilization *float64 `json:"gpu_utilization"`
		} `json:"baseline"`
	} `json:"timeline"`
	Findings []struct {
		Arm    string   `json:"arm"`
		Causes []string `json:"causes"`
		Rows   []int    `json:"rows"`
	} `json:"findings"`
	Metrics []struct {
		Name    string `json:"name"`
		Verdict string `json:"verdict"`
	} `json:"metrics"`
}

func judgeInternal(t *testing.T, want int, args ...string) internalReport {
	t.Helper()
	code, out, errs := runCLI(t, nil, append([]string{"judge", "--format", "json"}, args...)...)
	if code != want {
		t.Fatalf("judge %v: exit %d, want %d: %s", args, code, want, errs)
	}
	var r internalReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// seed-overload's metrics backfilled into a real Prometheus: judged from
// Prometheus alone and from the request logs with --metrics-prometheus,
// the timeline shows attainment collapsing under GPUs at ≥ 90%, and the
// divergence is named (with retry amplification when the request logs
// count retries).
func TestJudgeSeedOverloadFromPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator and Prometheus")
	}
	dir := t.TempDir()
	if code, _, errs := runCLI(t, nil, "simulate", "--scenario", "seed-overload", "--out", dir); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errs)
	}
	url := promtest.Start(t, filepath.Join(dir, "metrics.om"))
	sel := []string{"--baseline-selector", `deployment="baseline"`, "--canary-selector", `deployment="canary"`}
	prom := judgeInternal(t, ExitInconclusive, append([]string{"--prometheus", url, "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:20:00Z",
		"--step", "30s"}, sel...)...)
	mixed := judgeInternal(t, ExitInconclusive, append([]string{"--baseline", filepath.Join(dir, "baseline.jsonl"), "--canary", filepath.Join(dir, "canary.jsonl"),
		"--metrics-prometheus", url}, sel...)...)
	for _, tc := range []struct {
		name   string
		r      internalReport
		causes []string
	}{{"prometheus", prom, []string{"overload", "queue_growth"}}, {"requests+prometheus", mixed, []string{"overload", "retry_amplification", "queue_growth"}}} {
		r := tc.r
		collapsed := 0
		for _, row := range r.Timeline {
			b := row.Baseline
			if b == nil || b.SLOAttainment == nil || *b.SLOAttainment >= 0.2 {
				continue
			}
			collapsed++
			if b.GPUUtilization == nil || *b.GPUUtilization < 0.9 {
				t.Errorf("%s: t=%g s attainment %.3f with GPU utilization %v, want ≥ 0.9", tc.name, row.T, *b.SLOAttainment, b.GPUUtilization)
			}
		}
		if collapsed < 5 {
			t.Errorf("%s: %d collapsed minutes in the timeline, want ≥ 5", tc.name, collapsed)
		}
		if len(r.Findings) != 2 {
			t.Fatalf("%s: findings %+v, want one per arm", tc.name, r.Findings)
		}
		for _, f := range r.Findings {
			for _, c := range tc.causes {
				if !slices.Contains(f.Causes, c) {
					t.Errorf("%s: %s finding causes %v lack %s", tc.name, f.Arm, f.Causes, c)
				}
			}
		}
		reasons := strings.Join(r.Reasons, "\n")
		if !strings.Contains(reasons, "finding (not a gate): baseline: GPU utilization steady while goodput falls") {
			t.Errorf("%s: reasons lack the finding:\n%s", tc.name, reasons)
		}
		in := r.Arms["baseline"].Internal
		if in == nil || in.GPUPowerW == nil || in.KVUsage == nil || in.QueueWaiting == nil || in.Running == nil || in.GPUMemoryBytes == nil ||
			!strings.Contains(in.Source, "prometheus") {
			t.Errorf("%s: internal %+v", tc.name, in)
		}
	}
	if !strings.Contains(strings.Join(mixed.Reasons, "\n"), "retry amplification") {
		t.Error("request logs with Prometheus metrics: retry amplification not named")
	}
}

// The efficiency policy through a real Prometheus: 10% less GPU power at
// equal goodput passes (exit 0), 10% more fails (exit 1).
func TestJudgeEfficiencyFromPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator and Prometheus")
	}
	for _, tc := range []struct {
		file string
		code int
		gate string
	}{{"kernel-power-down.yaml", ExitPass, "pass"}, {"kernel-power-up.yaml", ExitFail, "fail"}} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			sc := filepath.Join("..", "..", "testdata", "scenarios", tc.file)
			if code, _, errs := runCLI(t, nil, "simulate", "--scenario", sc, "--out", dir); code != 0 {
				t.Fatalf("simulate: exit %d: %s", code, errs)
			}
			url := promtest.Start(t, filepath.Join(dir, "metrics.om"))
			r := judgeInternal(t, tc.code, "--policy", "efficiency", "--prometheus", url, "--baseline-selector", `deployment="baseline"`,
				"--canary-selector", `deployment="canary"`, "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:15:00Z", "--step", "30s")
			if len(r.Metrics) == 0 || r.Metrics[0].Name != "energy_per_good_request" || r.Metrics[0].Verdict != tc.gate {
				t.Errorf("gates %+v: want energy_per_good_request %s first", r.Metrics, tc.gate)
			}
			for _, arm := range []string{"baseline", "canary"} {
				if e := r.Arms[arm].Efficiency; e == nil || e.JoulesPerGoodRequest == nil || e.GPUSecondsPerGoodRequest == nil {
					t.Errorf("%s efficiency %+v", arm, e)
				}
			}
		})
	}
}

// Metrics beside request files: flags that do not fit are usage errors
// (exit 2), a metrics file that is not a scrape is exit 4 naming it.
func TestJudgeMetricsFlags(t *testing.T) {
	b, c := filepath.Join("..", "..", "testdata", "example", "baseline.jsonl"), filepath.Join("..", "..", "testdata", "example", "canary.jsonl")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--baseline", b, "--canary", c, "--baseline-metrics", b}, ExitUsage, "give metrics for both arms"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--metrics-prometheus", "http://127.0.0.1:1"}, ExitUsage, "with --prometheus the metrics are the input"},
		{[]string{"--baseline", b, "--canary", c, "--baseline-metrics", b, "--canary-metrics", c}, ExitError, "not a Prometheus text or OpenMetrics scrape"},
	} {
		code, _, errs := runCLI(t, nil, append([]string{"judge"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("judge %v: exit %d (%s), want %d with %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}
