package benchfile

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// vllmDoc builds a small multi-line vLLM result; lines are numbered from 1
// as written, so each key below sits on a known line:
//
//	1 {
//	2 "date": ..., "backend": ..., "model_id": ..., "num_prompts": 2,
//	3 "duration": 2.0, "completed": 2,
//	4 "input_lens": INPUT,
//	5 "output_lens": OUTPUT,
//	6 "ttfts": TTFTS,
//	7 "itls": ITLS,
//	8 "errors": ERRORS
//	9 }
func vllmDoc(repl ...string) string {
	doc := "{\n" +
		`"date": "20250101-000000", "backend": "vllm", "model_id": "m", "num_prompts": 2,` + "\n" +
		`"duration": 2.0, "completed": 2,` + "\n" +
		`"input_lens": [10, 20],` + "\n" +
		`"output_lens": [3, 4],` + "\n" +
		`"ttfts": [0.1, 0.2],` + "\n" +
		`"itls": [[0.01, 0.02], [0.01, 0.02, 0.03]],` + "\n" +
		`"errors": ["", ""]` + "\n" +
		"}\n"
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(doc, repl[i]) {
			panic("vllmDoc: no " + repl[i])
		}
		doc = strings.Replace(doc, repl[i], repl[i+1], 1)
	}
	return doc
}

// TestMalformed feeds broken inputs to Read and requires an error that names
// the file and the line (and column, for syntax errors) plus a hint.
func TestMalformed(t *testing.T) {
	tests := []struct {
		name   string
		format string
		input  string
		where  string // "file:line:col" prefix the error must start with
		msg    string // substring of the message
	}{
		{"empty file", FormatVLLM, "", "bad.json:1:1:", "the file is empty"},
		{"only whitespace", FormatVLLM, "\n\n  \n", "bad.json:1:1:", "the file is empty"},
		{"truncated inside an array", FormatVLLM, vllmDoc()[:strings.Index(vllmDoc(), "0.2]")], "bad.json:6:", "unexpected end of file"},
		{"truncated after a key", FormatVLLM, `{"ttfts": `, "bad.json:1:11:", "truncated"},
		{"ttfts is a string", FormatVLLM, vllmDoc(`"ttfts": [0.1, 0.2]`, `"ttfts": "0.1 0.2"`), "bad.json:6:10:", "ttfts: want an array of numbers, found a string"},
		{"token count is a string", FormatVLLM, vllmDoc(`[3, 4]`, `[3, "4"]`), "bad.json:5:20:", "output_lens element: want a number, found a string"},
		{"negative latency", FormatVLLM, vllmDoc(`[0.1, 0.2]`, `[0.1, -0.2]`), "bad.json:6:16:", "-0.2 is not a valid latency"},
		{"NaN latency", FormatVLLM, vllmDoc(`[0.1, 0.2]`, `[NaN, 0.2]`), "bad.json:6:11:", "NaN is not a valid latency"},
		{"infinite gap", FormatVLLM, vllmDoc(`[0.01, 0.02, 0.03]`, `[0.01, Infinity, 0.03]`), "bad.json:7:", "+Inf is not a valid latency"},
		{"fractional token count", FormatVLLM, vllmDoc(`[3, 4]`, `[3, 4.5]`), "bad.json:5:", "4.5 is not a valid token count"},
		{"arrays of different lengths", FormatVLLM, vllmDoc(`[3, 4]`, `[3]`), "bad.json:5:1:", "output_lens has 1 entries but ttfts (line 6) has 2"},
		{"itls shorter than ttfts", FormatVLLM, vllmDoc(`[[0.01, 0.02], [0.01, 0.02, 0.03]]`, `[[0.01]]`), "bad.json:7:1:", "itls has 1 entries"},
		{"itls element not a list", FormatVLLM, vllmDoc(`[[0.01, 0.02], [0.01`, `[0.5, [0.01`), "bad.json:7:10:", "itls element: want an array of numbers"},
		{"summary only", FormatVLLM, `{"date": "x", "backend": "vllm", "duration": 3.5, "completed": 10, "mean_ttft_ms": 100}`, "bad.json:1:1:", "--save-detailed"},
		{"latency shorter than TTFT", FormatVLLM, vllmDoc(`"errors": ["", ""]`, `"errors": ["", ""], "latencies": [0.5, 0.1]`), "bad.json:8:21:", "request 2 (0-based index 1) has latency 0.1 s, shorter than its TTFT 0.2 s"},
		{"ttfts without output_lens", FormatVLLM, vllmDoc(`"output_lens": [3, 4],`, ``), "bad.json:1:1:", "no output_lens"},
		{"trailing garbage", FormatVLLM, vllmDoc() + "}", "bad.json:10:1:", "after the end of the JSON document"},
		{"not Python's spelling of infinity", FormatVLLM, vllmDoc(`"duration": 2.0`, `"duration": Inf`), "bad.json:3:13:", "want a number"},
		{"missing comma", FormatVLLM, vllmDoc(`"completed": 2,`, `"completed": 2`), "bad.json:4:1:", "want ',' or '}'"},
		{"single-quoted string", FormatVLLM, vllmDoc(`["", ""]`, `['', '']`), "bad.json:8:12:", "invalid character '\\''"},
		{"unterminated string", FormatVLLM, `{"errors": ["abc` + "\n" + `]}`, "bad.json:1:17:", "control character 0x0a inside a string"},
		{"top-level array", FormatVLLM, `[1, 2]`, "bad.json:1:1:", "benchmark result: want an object, found an array"},
		{"NaN start time", FormatVLLM, vllmDoc(`"errors": ["", ""]`, `"errors": ["", ""], "start_times": [1.0, NaN]`), "bad.json:8:42:", "not a valid clock reading"},
		{"negative duration", FormatVLLM, vllmDoc(`"duration": 2.0`, `"duration": -2.0`), "bad.json:3:13:", "not a valid latency"},
		{"number out of range", FormatVLLM, vllmDoc(`"duration": 2.0`, `"duration": 1e999`), "bad.json:3:13:", "out of range"},
		{"malformed number", FormatVLLM, vllmDoc(`"duration": 2.0`, `"duration": 2.`), "bad.json:3:15:", "digits must follow the decimal point"},
		{"no requests", FormatVLLM, vllmDoc(`[10, 20]`, `[]`, `[3, 4]`, `[]`, `[0.1, 0.2]`, `[]`, `[[0.01, 0.02], [0.01, 0.02, 0.03]]`, `[]`, `["", ""]`, `[]`), "bad.json:1:1:", "no requests"},
	}
	tests = append(tests, []struct {
		name   string
		format string
		input  string
		where  string
		msg    string
	}{
		{"LLMPerf summary file", FormatLLMPerf, "{\n  \"version\": \"2023-08-31\",\n  \"results_ttft_s_mean\": 0.2\n}", "bad.json:1:1:", "give the *_individual_responses.json file"},
		{"AIPerf latency before ttft (found by fuzzing)", FormatAIPerf, `{"metadata": {"request_start_ns": 0}, "metrics": {"time_to_first_token": {"value": 10}, "request_latency": {"value": 0}, "output_sequence_length": 2}}`, "bad.json:1:", "shorter than time_to_first_token"},
		{"LLMPerf e2e before ttft", FormatLLMPerf, "[\n{\"error_code\": null, \"ttft_s\": 0.5,\n \"end_to_end_latency_s\": 0.4, \"number_output_tokens\": 3}\n]", "bad.json:3:26:", "shorter than ttft_s"},
		{"LLMPerf NaN ttft on success", FormatLLMPerf, "[{\"error_code\": null, \"ttft_s\": NaN, \"end_to_end_latency_s\": 0.4, \"number_output_tokens\": 3}]", "bad.json:1:33:", "NaN is not a valid latency"},
		{"LLMPerf missing keys", FormatLLMPerf, "[\n{\"error_code\": null, \"ttft_s\": 0.5}\n]", "bad.json:2:1:", "lacks end_to_end_latency_s, number_output_tokens"},
		{"LLMPerf error_code boolean", FormatLLMPerf, "[{\"error_code\": true}]", "bad.json:1:17:", "error_code: want null, a number or a string, found a boolean"},
		{"LLMPerf object that is not a summary", FormatLLMPerf, "{\"a\": 1}", "bad.json:1:1:", "want an array of request objects"},
		{"SGLang summary row after a detailed one", FormatSGLang, "{\"backend\": \"sglang\", \"duration\": 1.0, \"ttfts\": [0.1], \"output_lens\": [2], \"itls\": [[0.1]]}\n{\"backend\": \"sglang\", \"request_rate\": 2.0, \"duration\": 1.0, \"completed\": 5}\n", "bad.json:2:1:", "line 2 is a summary-only SGLang bench_serving row (request rate 2)"},
		{"SGLang line that is not an object", FormatSGLang, "{\"backend\": \"sglang\", \"duration\": 1.0, \"ttfts\": [0.1], \"output_lens\": [2]}\n[1]\n", "bad.json:2:1:", "SGLang run 2: want an object"},
		{"SGLang two objects on one line without separator", FormatSGLang, "{\"ttfts\": [0.1], \"output_lens\": [2]}{\"ttfts\": [NaN]", "bad.json:1:48:", "NaN is not a valid latency"},
		{"genai-perf summary", FormatGenAIPerf, `{"request_latency": {"unit": "ms", "avg": 1}, "time_to_first_token": {"unit": "ms"}}`, "bad.json:1:1:", "give profile_export.json"},
		{"genai-perf float timestamp", FormatGenAIPerf, "{\"experiments\": [{\"requests\": [\n{\"timestamp\": 1.5, \"response_timestamps\": [2]}]}]}", "bad.json:2:15:", "not a whole number of nanoseconds"},
		{"genai-perf responses before request", FormatGenAIPerf, "{\"experiments\": [{\"requests\": [\n{\"timestamp\": 100, \"response_timestamps\": [50], \"response_outputs\": [{\"text_output\": \"x\"}]}]}]}", "bad.json:2:1:", "precedes the request timestamp"},
		{"genai-perf unpaired outputs", FormatGenAIPerf, "{\"experiments\": [{\"requests\": [\n{\"timestamp\": 1, \"response_timestamps\": [2, 3], \"response_outputs\": [{\"text_output\": \"x\"}]}]}]}", "bad.json:2:1:", "must pair up"},
		{"AIPerf summary", FormatAIPerf, `{"benchmark_duration": 10.0, "records": {}, "input_config": {}}`, "bad.json:1:1:", "give profile_export.jsonl"},
		{"AIPerf unknown unit", FormatAIPerf, "{\"metadata\": {\"request_start_ns\": 1}, \"metrics\": {\"request_latency\": {\"value\": 5, \"unit\": \"ms\"}}, \"error\": null}\n{\"metadata\": {\"request_start_ns\": 2}, \"metrics\": {\"time_to_first_token\": {\"value\": 5, \"unit\": \"fortnights\"}}, \"error\": null}\n", "bad.json:2:84:", "unknown time unit \"fortnights\""},
		{"AIPerf negative latency", FormatAIPerf, "{\"metadata\": {\"request_start_ns\": 1}, \"metrics\": {\"request_latency\": {\"value\": -5, \"unit\": \"ms\"}}, \"error\": null}", "bad.json:1:80:", "not a valid latency"},
		{"AIPerf truncated line", FormatAIPerf, "{\"metadata\": {\"request_start_ns\": 1}, \"metrics\": {\"request_latency\": {\"value\": 5", "bad.json:1:81:", "unexpected end of file"},
		{"inference-perf summary", FormatInferencePerf, `{"load_summary": {}, "successes": {}, "failures": {}}`, "bad.json:1:1:", "per_request_lifecycle_metrics.json"},
		{"inference-perf end before start", FormatInferencePerf, "[\n{\"start_time\": 5.0, \"end_time\": 4.0, \"error\": null}\n]", "bad.json:2:1:", "end_time 4 is before start_time 5"},
		{"inference-perf token time outside", FormatInferencePerf, "[\n{\"start_time\": 5.0, \"end_time\": 6.0, \"info\": {\"output_token_times\": [7.0]}, \"error\": null}\n]", "bad.json:2:1:", "outside [start_time, end_time]"},
		{"inference-perf NaN start", FormatInferencePerf, "[{\"start_time\": NaN, \"end_time\": 6.0}]", "bad.json:1:17:", "not a valid clock reading"},
		{"inference-perf missing end", FormatInferencePerf, "[{\"start_time\": 1.0}]", "bad.json:1:2:", "lacks start_time or end_time"},
		{"LLMPerf truncated", FormatLLMPerf, "[{\"error_code\": null, \"ttft_s\": 0.5", "bad.json:1:36:", "unexpected end of file"},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := Read(context.Background(), tt.format, "bad.json", strings.NewReader(tt.input), sources.Baseline)
			if err == nil {
				t.Fatalf("no error; read %d requests", len(ds.Requests))
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			if !strings.HasPrefix(err.Error(), tt.where) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error\n  %v\nwant prefix %q and substring %q", err, tt.where, tt.msg)
			}
		})
	}
}

// TestVLLMOneChunkWarning: multi-token answers without gaps (non-streaming
// backends) are read, with a warning that their TPOT is 0.
func TestVLLMOneChunkWarning(t *testing.T) {
	in := vllmDoc(`[[0.01, 0.02], [0.01, 0.02, 0.03]]`, `[[], [0.01, 0.02, 0.03]]`)
	ds, err := Read(context.Background(), FormatVLLM, "one.json", strings.NewReader(in), sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Requests[0].TPOT != 0 || ds.Requests[0].E2E != ds.Requests[0].TTFT {
		t.Errorf("request 0 = %+v", ds.Requests[0])
	}
	if len(ds.Warnings) != 2 || !strings.Contains(ds.Warnings[0], "one.json: 1 completed requests have more than one output token but no inter-token gaps") {
		t.Errorf("warnings = %q", ds.Warnings)
	}
}
