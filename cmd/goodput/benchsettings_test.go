package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchmarkSettingsDiffer: two real vLLM results of two builds are
// judged; the same canary rerun at twice the request rate, or with
// burstier arrivals, was judged as well (INCONCLUSIVE, without a word) and is now
// refused naming both settings and the files; a canary naming another
// model is judged with a warning (a quantized build may name its model
// apart).
func TestBenchmarkSettingsDiffer(t *testing.T) {
	dir := t.TempDir()
	vllm := filepath.Join(realdata, "vllm-bench-serve")
	base := filepath.Join(vllm, "IB_serving_meta-llama-Llama-3.3-70B-Instruct_tp4_pp2_sharegpt_qps_04.json")
	src := filepath.Join(vllm, "no_IB_serving_meta-llama-Llama-3.3-70B-Instruct_tp4_pp2_sharegpt_qps_04.json")
	edited := func(name string, set map[string]any) string {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for k, v := range set {
			m[k] = v
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return writeFile(t, dir, name, string(out))
	}
	for _, tc := range []struct {
		name   string
		canary string
		code   []int
		errs   []string // in stderr
		warn   string   // in stdout's report
	}{
		{"same settings", src, []int{ExitPass, ExitFail, ExitInconclusive}, nil, ""},
		{"the rate written as the string \"4.0\"", edited("rate40.json", map[string]any{"request_rate": "4.0"}), []int{ExitPass, ExitFail, ExitInconclusive}, nil, ""},
		{"twice the rate", edited("rate8.json", map[string]any{"request_rate": 8}), []int{ExitError},
			[]string{`request_rate "4" in the baseline against "8" in the canary`, `canary "` + filepath.Join(dir, "rate8.json") + `"`, "rerun one arm with the other's settings"}, ""},
		{"another burstiness", edited("bursty.json", map[string]any{"burstiness": 0.5}), []int{ExitError},
			[]string{`burstiness "1" in the baseline against "0.5" in the canary`}, ""},
		{"another model", edited("8b.json", map[string]any{"model_id": "meta-llama/Llama-3.1-8B-Instruct"}), []int{ExitPass, ExitFail, ExitInconclusive}, nil,
			`the arms name different models (model_id "meta-llama/Llama-3.3-70B-Instruct" in the baseline, "meta-llama/Llama-3.1-8B-Instruct" in the canary)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, nil, "judge", "--policy", "bench", "--baseline", base, "--canary", tc.canary)
			ok := false
			for _, c := range tc.code {
				ok = ok || code == c
			}
			if !ok {
				t.Fatalf("exit %d, want one of %v; stderr %s", code, tc.code, errs)
			}
			for _, e := range tc.errs {
				if !strings.Contains(errs, e) {
					t.Errorf("stderr lacks %q: %s", e, errs)
				}
			}
			if code == ExitError && out != "" {
				t.Errorf("refused, yet stdout %.100q", out)
			}
			if tc.warn != "" && !strings.Contains(out, tc.warn) {
				t.Errorf("report lacks %q:\n%s", tc.warn, out)
			}
			if tc.warn == "" && strings.Contains(out, "different models") {
				t.Errorf("a model warning where the models agree:\n%s", out)
			}
		})
	}
}
