package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden outputs under testdata/")

// golden compares got with testdata/capacity/name, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "capacity", name)
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the output (rerun with -update if intended):\n%s", path, got)
	}
}

func ipArm(name string) string { return filepath.Join(realdata, "inference-perf", name) }

// TestCapacityRealInferencePerf is the must-show: the inference-perf
// V1 arm as baseline against its quantized arm passes (≈ 170 req/s against
// ≈ 92–106), in every output format, and the reverse order fails.
func TestCapacityRealInferencePerf(t *testing.T) {
	b, c := ipArm("vllm"), ipArm("vllm+quantization")
	for _, f := range []string{"text", "markdown", "json"} {
		code, out, errs := runCLI(t, nil, "capacity", "--baseline", b, "--canary", c, "--format", f)
		if code != ExitPass {
			t.Fatalf("%s: exit %d, want 0 (pass)\n%s%s", f, code, out, errs)
		}
		golden(t, "quantization."+map[string]string{"text": "txt", "markdown": "md", "json": "json"}[f], out)
	}
	code, out, _ := runCLI(t, nil, "capacity", "--baseline", b, "--canary", c, "--format", "json")
	if code != ExitPass {
		t.Fatal(code)
	}
	var doc struct {
		SchemaVersion int    `json:"schema_version"`
		Verdict       string `json:"verdict"`
		Capacity      struct {
			Target   float64    `json:"target"`
			Ratio    float64    `json:"ratio"`
			Interval [2]float64 `json:"interval"`
			Baseline struct {
				Capacity struct {
					Identifiable bool       `json:"identifiable"`
					Estimate     float64    `json:"estimate"`
					Interval     [2]float64 `json:"interval"`
				} `json:"capacity"`
				Points []struct {
					Saturated bool `json:"saturated"`
				} `json:"points"`
			} `json:"baseline"`
			Canary struct {
				Capacity struct {
					Identifiable bool       `json:"identifiable"`
					Interval     [2]float64 `json:"interval"`
				} `json:"capacity"`
			} `json:"canary"`
		} `json:"capacity"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	cp := doc.Capacity
	if doc.SchemaVersion != 1 || doc.Verdict != "pass" || cp.Target != 0.99 {
		t.Errorf("schema %d verdict %s target %v", doc.SchemaVersion, doc.Verdict, cp.Target)
	}
	// V1 holds 99% through 92.19 req/s and saturates at ≈ 105.6 achieved
	if bi := cp.Baseline.Capacity.Interval; !cp.Baseline.Capacity.Identifiable || bi[0] != 92.19 || bi[1] < 105 || bi[1] > 106 {
		t.Errorf("baseline capacity interval %v, want [92.19, ≈105.6]", bi)
	}
	if ci := cp.Canary.Capacity.Interval; !cp.Canary.Capacity.Identifiable || ci[0] != 170.24 || ci[1] < 176 || ci[1] > 178 {
		t.Errorf("canary capacity interval %v, want [170.24, ≈177]", ci)
	}
	if cp.Interval[0] <= 1.5 || cp.Interval[1] >= 2 {
		t.Errorf("ratio interval %v, want ≈ [1.61, 1.92]", cp.Interval)
	}
	sat := 0
	for _, p := range cp.Baseline.Points {
		if p.Saturated {
			sat++
		}
	}
	if sat != 3 {
		t.Errorf("baseline saturated points %d, want 3 (stages 4–6)", sat)
	}

	code, out, errs := runCLI(t, nil, "capacity", "--baseline", c, "--canary", b)
	if code != ExitFail || !strings.Contains(out, "goodput capacity: FAIL") {
		t.Errorf("reverse order: exit %d, want 1 (fail)\n%s%s", code, out, errs)
	}
	golden(t, "quantization-reverse.txt", out)
}

// TestCapacityNotIdentifiable: the two vLLM qps_04 files are one rate each,
// below the knee: no capacity, exit 3, and the reason with the rates to add.
// 14 of each file's 200 completions stopped after one output token, which
// chat does not count as good (slo.min_output_tokens 2): the policy here
// is chat with a floor of 1, so that all 200 are good as the benchmark
// intended and the point lies below the knee.
func TestCapacityNotIdentifiable(t *testing.T) {
	b, c := vllmPair(t)
	pol := filepath.Join(t.TempDir(), "chat1.yaml")
	if err := os.WriteFile(pol, []byte(`name: chat1
description: chat, one-token answers count
slo: {ttft: 1s, tpot: 80ms, min_output_tokens: 1}
classes:
  - name: long
    when: {prompt_tokens: {min: 8192}}
    slo: {ttft: 4s}
window: {warmup: auto, bucket: 10s}
normalize: {mix: baseline, cache: auto, load: matched}
gates:
  - {metric: slo_attainment, margin: 1pp}
confidence: 0.95
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, nil, "capacity", "--baseline", b, "--canary", c, "--policy", pol)
	if code != ExitInconclusive {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, errs)
	}
	for _, want := range []string{"not identifiable", "one rate only (4 req/s)", "add rates above 4 req/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	golden(t, "qps04.txt", out)
	if code, _, _ := runCLI(t, nil, "capacity", "--baseline", b, "--canary", c, "--policy", pol, "--fail-on-inconclusive"); code != ExitFail {
		t.Errorf("--fail-on-inconclusive: exit %d, want 1", code)
	}
}

func TestCapacityRefusals(t *testing.T) {
	b, c := ipArm("vllm"), ipArm("vllm+quantization")
	tmp := t.TempDir()
	mixed := filepath.Join(tmp, "mixed.jsonl")
	if err := os.WriteFile(mixed, []byte(`{"backend":"sglang","dataset_name":"random","request_rate":1.0,"random_input_len":1024,"random_output_len":1024,"duration":100,"completed":100,"median_ttft_ms":80}
{"backend":"sglang","dataset_name":"random","request_rate":2.0,"random_input_len":4096,"random_output_len":1024,"duration":100,"completed":200,"median_ttft_ms":90}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"same data", []string{"--baseline", b, "--canary", b}, ExitError, "same data"},
		{"mixed workloads", []string{"--baseline", mixed, "--canary", c}, ExitError, "mixes workloads"},
		{"pooled summary", []string{"--baseline", filepath.Join(b, "summary_lifecycle_metrics.json"), "--canary", c}, ExitError, "pooled summary of a whole sweep"},
		{"prometheus stage file", []string{"--baseline", filepath.Join(b, "stage_0_prometheus_metrics.json"), "--canary", c}, ExitError, "server-side prometheus_metrics"},
		{"llmperf individual", []string{"--baseline", filepath.Join(realdata, "llmperf", "individual_anyscale_70b.json"), "--canary", c}, ExitError, "no request rate"},
		{"missing file", []string{"--baseline", filepath.Join(tmp, "nope.json"), "--canary", c}, ExitError, "--baseline " + filepath.Join(tmp, "nope.json") + ": no such file or directory (give a benchmark file per rate"},
		{"no canary", []string{"--baseline", b}, ExitUsage, "needs --baseline"},
		{"bad format", []string{"--baseline", b, "--canary", c, "--format", "xml"}, ExitUsage, "--format"},
		{"bad target", []string{"--baseline", b, "--canary", c, "--target", "99"}, ExitUsage, "--target"},
	}
	for _, tc := range cases {
		code, out, errs := runCLI(t, nil, append([]string{"capacity"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d (want %d), stderr %q lacks %q", tc.name, code, tc.code, errs, tc.want)
		}
		if code == ExitError && out != "" {
			t.Errorf("%s: wrote a half report on exit 4: %q", tc.name, out)
		}
	}
}

// TestCapacitySummaryRows: SGLang summary-only rows have no tail percentiles,
// so they cannot bound attainment; the report says so and stays inconclusive.
func TestCapacitySummaryRows(t *testing.T) {
	real := filepath.Join(realdata, "sglang-bench-serving", "llama_3_3_70b_online_output.jsonl")
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	// the real file holds a random-dataset sweep (lines 1–5) and a ShareGPT
	// one (lines 6–7): as one arm it mixes workloads and is refused
	code, _, errs := runCLI(t, nil, "capacity", "--baseline", real, "--canary", ipArm("vllm"))
	if code != ExitError || !strings.Contains(errs, `mixes workloads`) || !strings.Contains(errs, "sharegpt") {
		t.Errorf("mixed real sweep: exit %d, %s", code, errs)
	}
	f := filepath.Join(t.TempDir(), "random.jsonl")
	lines := strings.SplitAfter(string(data), "\n")
	if err := os.WriteFile(f, []byte(strings.Join(lines[:5], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, nil, "capacity", "--baseline", f, "--canary", ipArm("vllm"))
	if code != ExitInconclusive {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "without tail percentiles") || !strings.Contains(out, "baseline capacity not identifiable") {
		t.Errorf("summary rows not explained:\n%s", out)
	}
}

// TestCapacityPolicyGate: a policy's capacity gate sets target and margin.
func TestCapacityPolicyGate(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "cap.yaml")
	if err := os.WriteFile(pol, []byte("name: cap\nslo: {ttft: 1s}\ngates:\n  - {metric: capacity, target: 99.9%, margin: 5%}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, nil, "capacity", "--baseline", ipArm("vllm"), "--canary", ipArm("vllm+quantization"), "--policy", pol, "--format", "json")
	if code != ExitPass || !strings.Contains(out, `"target": 0.999`) || !strings.Contains(out, `"gate_from_policy": true`) {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	// the judge leaves a capacity-only policy alone, with a reason
	b, c := vllmPair(t)
	code, _, errs = runCLI(t, nil, "judge", "--baseline", b, "--canary", c, "--policy", pol)
	if code != ExitError || !strings.Contains(errs, "goodput capacity") {
		t.Errorf("judge with a capacity-only policy: exit %d, %s", code, errs)
	}
}

// capacityJSON runs goodput capacity with --format json and decodes the
// capacities and the verdict.
func capacityJSON(t *testing.T, args ...string) (int, float64, float64, [2]float64, string) {
	t.Helper()
	code, out, errs := runCLI(t, nil, append(append([]string{"capacity"}, args...), "--format", "json")...)
	var doc struct {
		Verdict  string `json:"verdict"`
		Capacity struct {
			Interval [2]float64 `json:"interval"`
			Baseline struct {
				Capacity struct {
					Estimate float64 `json:"estimate"`
				} `json:"capacity"`
			} `json:"baseline"`
			Canary struct {
				Capacity struct {
					Estimate float64 `json:"estimate"`
				} `json:"capacity"`
			} `json:"canary"`
		} `json:"capacity"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errs)
	}
	return code, doc.Capacity.Baseline.Capacity.Estimate, doc.Capacity.Canary.Capacity.Estimate, doc.Capacity.Interval, doc.Verdict
}

var capScenarios = filepath.Join("..", "..", "testdata", "capacity")

// TestCapacitySimulatedDecodeFaster: the simulator swept over rates, a 20%
// faster decode raises capacity and passes.
func TestCapacitySimulatedDecodeFaster(t *testing.T) {
	code, b, c, iv, verdict := capacityJSON(t, "--simulate", filepath.Join(capScenarios, "decode-faster.yaml"), "--rates", "2:24:2")
	if code != ExitPass || verdict != "pass" || !(c > b*1.05) || !(iv[0] >= 0.95) {
		t.Errorf("exit %d %s: capacity %v → %v, ratio interval %v; want a pass with more capacity", code, verdict, b, c, iv)
	}
	t.Logf("decode 20%% faster: capacity %.2f → %.2f req/s, ratio interval %v", b, c, iv)
}

// TestCapacitySimulatedScheduler: prefill-first scheduling improves p99 TTFT
// at low load, so a single-rate canary passes it, but it saturates earlier:
// its capacity is lower and the sweep fails it.
func TestCapacitySimulatedScheduler(t *testing.T) {
	scen := filepath.Join(capScenarios, "scheduler-fcfs.yaml")
	code, b, c, iv, verdict := capacityJSON(t, "--simulate", scen, "--rates", "2:22:1")
	if code != ExitFail || verdict != "fail" || !(c < b) || !(iv[1] < 0.95) {
		t.Errorf("exit %d %s: capacity %v → %v, ratio interval %v; want a fail with less capacity", code, verdict, b, c, iv)
	}
	t.Logf("fcfs scheduler: capacity %.2f → %.2f req/s, ratio interval %v", b, c, iv)

	// the same change at one low rate (10 req/s per arm, as the scenario
	// sets it): better p99 TTFT, and a single-rate policy passes it
	dir := t.TempDir()
	if code, _, errs := runCLI(t, nil, "simulate", "--scenario", scen, "--duration", "5m", "--out", dir); code != 0 {
		t.Fatalf("simulate: exit %d %s", code, errs)
	}
	code, out, errs := runCLI(t, nil, "judge", "--baseline", filepath.Join(dir, "baseline.jsonl"), "--canary", filepath.Join(dir, "canary.jsonl"),
		"--policy", filepath.Join(capScenarios, "single-rate.yaml"), "--format", "json")
	var rep struct {
		Verdict string `json:"verdict"`
		Metrics []struct {
			Name     string  `json:"name"`
			Baseline float64 `json:"baseline"`
			Canary   float64 `json:"canary"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v %s", err, errs)
	}
	if code != ExitPass || rep.Verdict != "pass" {
		t.Errorf("single-rate judge: exit %d %s, want the pass a single-rate canary gives", code, rep.Verdict)
	}
	for _, m := range rep.Metrics {
		if m.Name == "ttft_p99" {
			if !(m.Canary < m.Baseline) {
				t.Errorf("p99 TTFT at low load %v → %v: want an improvement", m.Baseline, m.Canary)
			}
			t.Logf("single rate: p99 TTFT %.3f → %.3f s, verdict %s", m.Baseline, m.Canary, rep.Verdict)
		}
	}
}
