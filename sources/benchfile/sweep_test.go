package benchfile

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

func readSweepFile(t *testing.T, path string) ([]sources.RatePoint, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ReadSweep(context.Background(), path, f)
}

// TestReadSweep reads one file of each kind a sweep is made of, real files
// where the project has them, and checks the figures a point carries. The
// project has no captured GuideLLM report: testdata/guidellm_benchmarks.json
// is written here after GuideLLM's documented benchmarks.json layout.
func TestReadSweep(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name                string
		path                string
		points              int
		first               int // index of the point checked
		label               string
		requested, achieved float64 // NaN: unknown; checked to 4 digits
		offered, completed  int64
		perRequest          bool
		sketches            []string
		workload            string
	}{
		{"inference-perf stage (real)", realdata("inference-perf", "vllm", "stage_4_lifecycle_metrics.json"), 1, 0, "stage 4", 122.59, 106.4937, 7355, 7355, false, []string{"e2e", "output_tokens", "tpot", "ttft"}, ""},
		{"vLLM bench serve (real, no start_times)", realdata("vllm-bench-serve", "IB_serving_meta-llama-Llama-3.3-70B-Instruct_tp4_pp2_sharegpt_qps_04.json"), 1, 0, "", 4, math.NaN(), 200, 200, true, nil, "model_id=meta-llama/Llama-3.3-70B-Instruct"},
		{"SGLang summary rows (real)", realdata("sglang-bench-serving", "llama_3_3_70b_online_output.jsonl"), 7, 5, "line 6", 4, math.NaN(), 1200, 1200, false, []string{"e2e", "ttft"}, "dataset_name=sharegpt random_input_len=1024 random_output_len=1024 random_range_ratio=0"},
		{"SGLang unlimited rate (real, bare Infinity)", realdata("sglang-bench-serving", "deepseek_dp_mla_output.jsonl"), 1, 0, "line 1", inf, 10000 / 412.49091206211597, 10000, 10000, false, []string{"e2e", "ttft"}, "dataset_name=random random_input_len=1 random_output_len=512 random_range_ratio=1"},
		{"LLMPerf summary (real)", realdata("llmperf", "summary_anyscale_70b.json"), 1, 0, "", math.NaN(), 0, 150, 150, false, []string{"e2e", "ttft"}, "model=meta-llama/Llama-2-70b-chat-hf mean_input_tokens=550 mean_output_tokens=150"},
		{"GuideLLM report (layout fixture)", filepath.Join("testdata", "guidellm_benchmarks.json"), 3, 1, "benchmark 2", 8, 7.9, 480, 470, false, []string{"e2e", "tpot", "ttft"}, ""},
		{"inference-perf per-request", filepath.Join("testdata", "inferenceperf_per_request.json"), 1, 0, "stage 0", math.NaN(), 0, 5, 0, true, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pts, err := readSweepFile(t, tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if len(pts) != tc.points {
				t.Fatalf("%d points, want %d", len(pts), tc.points)
			}
			p := pts[tc.first]
			same := func(got, want float64) bool {
				if math.IsNaN(want) {
					return math.IsNaN(got)
				}
				if math.IsInf(want, 0) {
					return got == want
				}
				return math.Abs(got-want) <= 1e-4*math.Abs(want)
			}
			if p.Label != tc.label || !same(p.RequestedRate, tc.requested) || (tc.achieved != 0 && !same(p.AchievedRate, tc.achieved)) {
				t.Errorf("label %q requested %v achieved %v, want %q %v %v", p.Label, p.RequestedRate, p.AchievedRate, tc.label, tc.requested, tc.achieved)
			}
			if p.Offered != tc.offered || (tc.completed != 0 && p.Completed != tc.completed) {
				t.Errorf("offered %d completed %d, want %d %d", p.Offered, p.Completed, tc.offered, tc.completed)
			}
			if (p.Requests != nil) != tc.perRequest {
				t.Errorf("per-request %v, want %v", p.Requests != nil, tc.perRequest)
			}
			var names []string
			for _, k := range sortedKeys(p.Sketches) {
				names = append(names, k)
				sk := p.Sketches[k]
				for i := 1; i < len(sk.Probs); i++ {
					if sk.Probs[i] <= sk.Probs[i-1] {
						t.Errorf("%s: probabilities not increasing: %v", k, sk.Probs)
					}
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.sketches, ",") {
				t.Errorf("sketches %v, want %v", names, tc.sketches)
			}
			if p.Workload != tc.workload {
				t.Errorf("workload %q, want %q", p.Workload, tc.workload)
			}
			if p.SHA256 == "" || p.Path != tc.path {
				t.Errorf("path %q sha %q", p.Path, p.SHA256)
			}
		})
	}
}

// TestReadSweepSketchUnits: inference-perf percentiles are seconds with
// numpy interpolation; SGLang and GuideLLM milliseconds are converted;
// GuideLLM's compact keys (p001, p999) are 0.1% and 99.9%.
func TestReadSweepSketchUnits(t *testing.T) {
	pts, err := readSweepFile(t, realdata("inference-perf", "vllm", "stage_3_lifecycle_metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	sk := pts[0].Sketches["ttft"]
	if sk.Interpolation != "linear" || sk.Probs[0] != 0 || sk.Probs[len(sk.Probs)-1] != 1 || len(sk.Probs) != 13 {
		t.Errorf("inference-perf TTFT sketch %+v", sk)
	}
	g, err := readSweepFile(t, filepath.Join("testdata", "guidellm_benchmarks.json"))
	if err != nil {
		t.Fatal(err)
	}
	gs := g[1].Sketches["ttft"]
	want := map[float64]float64{0: 0.040, 0.001: 0.041, 0.999: 1.85, 0.99: 1.4, 1: 1.9}
	for i, p := range gs.Probs {
		if v, ok := want[p]; ok && math.Abs(gs.Values[i]-v) > 1e-12 {
			t.Errorf("GuideLLM p%v = %v s, want %v", p, gs.Values[i], v)
		}
	}
	if gs.Interpolation != "unknown" || !math.IsInf(g[2].RequestedRate, 1) || !math.IsNaN(g[0].RequestedRate) {
		t.Errorf("interp %q, throughput rate %v, synchronous rate %v", gs.Interpolation, g[2].RequestedRate, g[0].RequestedRate)
	}
}

func TestReadSweepRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		path, want string
	}{
		{realdata("inference-perf", "vllm", "summary_lifecycle_metrics.json"), "pooled summary"},
		{realdata("inference-perf", "vllm", "stage_2_prometheus_metrics.json"), "prometheus_metrics"},
		{realdata("llmperf", "individual_fireworks_70b.json"), "no request rate"},
		{write("empty.json", "  \n"), "empty"},
		{write("other.json", `{"hello": 1}`), "not a benchmark file"},
		{write("broken.jsonl", `{"backend": "sglang", "dataset_name": "random", "completed": 10, "duration": 5,`), "broken.jsonl:1:"},
	}
	for _, tc := range cases {
		_, err := readSweepFile(t, tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.path, err, tc.want)
		}
	}
	for name, want := range map[string]bool{"stage_0_lifecycle_metrics.json": true, "summary_lifecycle_metrics.json": false,
		"stage_0_prometheus_metrics.json": false, "config.yaml": false, "run.jsonl": true, ".hidden.json": false} {
		if SweepFile(name) != want {
			t.Errorf("SweepFile(%q) = %v", name, !want)
		}
	}
}
