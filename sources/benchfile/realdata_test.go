package benchfile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestRealVLLM reads both real vLLM benchmark_serving.py files and checks the
// recomputed per-request figures against the summary the file itself carries
// (decoded independently with encoding/json). Counts were checked with
// python3: 200 requests, 0 errors, 14 with a single output token, 186 with
// a TPOT; stalls from max(itls).
func TestRealVLLM(t *testing.T) {
	tests := []struct {
		file        string
		outputToks  int64
		maxStall    float64
		tpotKnown   int
		promptToks  int64
		wantWarning string
	}{
		{"IB_serving_meta-llama-Llama-3.3-70B-Instruct_tp4_pp2_sharegpt_qps_04.json", 42736, 0.21636964100071054, 186, 42659, "no start_times"},
		{"no_IB_serving_meta-llama-Llama-3.3-70B-Instruct_tp4_pp2_sharegpt_qps_04.json", 42604, 0.21146982699974615, 186, 42659, "no start_times"},
	}
	for _, tt := range tests {
		t.Run(tt.file[:8], func(t *testing.T) {
			path := realdata("vllm-bench-serve", tt.file)
			ds, b := readFile(t, "", path)
			if got := Detect(b); got != FormatVLLM {
				t.Fatalf("Detect = %q", got)
			}
			var sum struct {
				Duration    float64 `json:"duration"`
				Completed   int     `json:"completed"`
				NumPrompts  int     `json:"num_prompts"`
				MeanTTFTms  float64 `json:"mean_ttft_ms"`
				MeanTPOTms  float64 `json:"mean_tpot_ms"`
				TotalOutput int64   `json:"total_output_tokens"`
				TotalInput  int64   `json:"total_input_tokens"`
			}
			if err := json.Unmarshal(b, &sum); err != nil {
				t.Fatal(err)
			}
			got := measure(ds)
			if got.n != sum.NumPrompts || got.completed != sum.Completed || got.errored+got.timedOut != 0 {
				t.Errorf("n=%d completed=%d failed=%d, want %d, %d, 0", got.n, got.completed, got.errored+got.timedOut, sum.NumPrompts, sum.Completed)
			}
			if !close(got.meanTTFT*1000, sum.MeanTTFTms, 1e-9) {
				t.Errorf("mean TTFT = %.12g ms, file says %.12g ms", got.meanTTFT*1000, sum.MeanTTFTms)
			}
			if !close(got.meanTPOT*1000, sum.MeanTPOTms, 1e-6) {
				t.Errorf("mean TPOT = %.12g ms, file says %.12g ms", got.meanTPOT*1000, sum.MeanTPOTms)
			}
			if got.tpotKnown != tt.tpotKnown || got.outputTokens != sum.TotalOutput || got.outputTokens != tt.outputToks ||
				got.promptTokens != tt.promptToks || got.promptTokens != sum.TotalInput {
				t.Errorf("tpot known %d, output tokens %d, prompt tokens %d", got.tpotKnown, got.outputTokens, got.promptTokens)
			}
			if got.maxStall != tt.maxStall {
				t.Errorf("max stall = %v, want %v", got.maxStall, tt.maxStall)
			}
			if ds.Clock != sources.ClockNone || ds.Duration != sum.Duration || !math.IsNaN(ds.Requests[0].Time) {
				t.Errorf("clock %q duration %v time %v", ds.Clock, ds.Duration, ds.Requests[0].Time)
			}
			if len(ds.Warnings) != 1 || !strings.Contains(ds.Warnings[0], tt.wantWarning) || !strings.Contains(ds.Warnings[0], "time buckets") {
				t.Errorf("warnings = %q", ds.Warnings)
			}
			h := sha256.Sum256(b)
			if ds.Inputs[0].SHA256 != hex.EncodeToString(h[:]) || ds.Inputs[0].Count != 200 {
				t.Errorf("input = %+v", ds.Inputs[0])
			}
			for i, r := range ds.Requests {
				if r.Status == sources.StatusOK && (!sources.Known(r.TTFT) || !sources.Known(r.E2E) || r.E2E < r.TTFT) {
					t.Fatalf("request %d = %+v", i, r)
				}
			}
		})
	}
}

// TestRealFilesPresent fails loudly rather than skipping when the shared
// real files are missing, so conformance is never silently untested.
func TestRealFilesPresent(t *testing.T) {
	for _, dir := range []string{"vllm-bench-serve"} {
		if _, err := os.Stat(realdata(dir)); err != nil {
			t.Errorf("real data missing: %v", err)
		}
	}
}
