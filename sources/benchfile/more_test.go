package benchfile

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/goodput-dev/goodput/sources"
)

// TestReadFromUnsizedReader: a reader that does not know its size (and
// returns short reads) gives the same dataset and digest.
func TestReadFromUnsizedReader(t *testing.T) {
	path := filepath.Join("testdata", "vllm_detailed.json")
	want, b := readFile(t, FormatVLLM, path)
	got, err := Read(context.Background(), FormatVLLM, path, iotest.HalfReader(bytes.NewReader(b)), sources.Canary)
	if err != nil {
		t.Fatal(err)
	}
	if dump(got) != dump(want) || got.Inputs[0].SHA256 != want.Inputs[0].SHA256 {
		t.Errorf("unsized read differs:\n%s\n%s", dump(got), dump(want))
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	viaFile, err := Read(context.Background(), FormatVLLM, path, f, sources.Canary)
	if err != nil || dump(viaFile) != dump(want) || viaFile.Inputs[0].SHA256 != want.Inputs[0].SHA256 {
		t.Errorf("read via *os.File differs: %v", err)
	}
	_, err = Read(context.Background(), FormatVLLM, path, iotest.ErrReader(os.ErrClosed), sources.Canary)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("read error = %v", err)
	}
}

// TestGenAIPerfTriton covers the Triton layout (text_output responses), the
// oldest layout (bare strings), several experiments and a reordered clock.
func TestGenAIPerfTriton(t *testing.T) {
	in := `{"service_kind": "triton", "endpoint": "", "experiments": [
 {"experiment": {"mode": "concurrency", "value": 10}, "requests": [
  {"timestamp": 1000000, "request_inputs": {"text_input": "x"}, "response_timestamps": [3000000, 5000000, 8000000],
   "response_outputs": [{"text_output": "I"}, {"text_output": " like"}, {"text_output": " dogs"}]}]},
 {"experiment": {"mode": "request_rate", "value": 2.0}, "requests": [
  {"timestamp": 9000000, "response_timestamps": [10000000, 12000000], "response_outputs": ["a", ""]}]}
], "version": "x"}`
	ds, err := Read(context.Background(), FormatGenAIPerf, "t.json", strings.NewReader(in), sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	r := ds.Requests
	if len(r) != 2 || r[0].TTFT != 0.002 || r[0].E2E != 0.007 || r[0].OutputTokens != 3 || r[0].MaxITL != 0.003 || !close(r[0].TPOT, 0.0025, 1e-12) {
		t.Errorf("request 0 = %+v", r[0])
	}
	// The second response is empty, so e2e stops at the first: one token.
	if r[1].Time != 0.008 || r[1].TTFT != 0.001 || r[1].E2E != 0.001 || r[1].OutputTokens != 1 || !math.IsNaN(r[1].TPOT) {
		t.Errorf("request 1 = %+v", r[1])
	}
	if ds.Duration != 0 || len(ds.Warnings) != 2 || !strings.Contains(ds.Warnings[1], "2 experiments (concurrency 10, request_rate 2)") {
		t.Errorf("duration %v warnings %q", ds.Duration, ds.Warnings)
	}
}

// TestInferencePerfStages: several stages in one file are read with a
// warning; old flat info without output_tokens counts token times.
func TestInferencePerfStages(t *testing.T) {
	in := `[{"stage_id": 0, "start_time": 10.0, "end_time": 10.5, "info": {"input_tokens": 3, "output_token_times": [10.1, 10.2, 10.4]}, "error": null},
 {"stage_id": 1, "start_time": 20.0, "end_time": 20.5, "info": null, "error": "boom"}]`
	ds, err := Read(context.Background(), FormatInferencePerf, "s.json", strings.NewReader(in), sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	r := ds.Requests
	if r[0].OutputTokens != 3 || r[0].PromptTokens != 3 || !close(r[0].TTFT, 0.1, 1e-9) || !close(r[0].TPOT, 0.2, 1e-9) || !close(r[0].MaxITL, 0.2, 1e-9) {
		t.Errorf("request 0 = %+v", r[0])
	}
	if r[1].Status != sources.StatusError || r[1].Time != 10 {
		t.Errorf("request 1 = %+v", r[1])
	}
	if len(ds.Warnings) != 1 || !strings.Contains(ds.Warnings[0], "2 stages ([0 1])") {
		t.Errorf("warnings %q", ds.Warnings)
	}
}

// TestStrings covers escapes, including surrogate pairs, and invalid UTF-8.
func TestStrings(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: `"plain"`, want: "plain"},
		{in: `"a\"b\\c\/d\n"`, want: "a\"b\\c/d\n"},
		{in: `"\u00e9\ud83d\ude00"`, want: "é😀"},
		{in: `"bad \x escape"`, bad: true},
		{in: "\"\xff\xfe\"", bad: true},
		{in: `"unterminated`, bad: true},
		{in: `"trailing backslash\`, bad: true},
	}
	for _, tt := range tests {
		sc := &scanner{buf: []byte(tt.in), path: "x"}
		got, err := sc.str()
		if tt.bad != (err != nil) || (!tt.bad && got != tt.want) {
			t.Errorf("%q: got %q, %v", tt.in, got, err)
		}
	}
}
