package benchfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

var update = flag.Bool("update", false, "rewrite the golden dumps in testdata/")

// realdata returns the path of a real captured file in the repository's
// testdata/realdata (provenance in its SOURCES.md).
func realdata(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "testdata", "realdata"}, parts...)...)
}

func readFile(t testing.TB, format, path string) (sources.Dataset, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if format == "" {
		format = Detect(b)
		if format == "" {
			t.Fatalf("%s: format not detected", path)
		}
	}
	ds, err := Read(context.Background(), format, path, bytes.NewReader(b), sources.Canary)
	if err != nil {
		t.Fatalf("Read(%s): %v", path, err)
	}
	return ds, b
}

// figures are the per-arm figures a fixture must produce. Means are over
// the requests where the quantity is known; NaN means "no such request".
type figures struct {
	n, completed, errored, timedOut int
	clock                           sources.Clock
	duration                        float64 // s
	meanTTFT, meanTPOT, meanE2E     float64 // s
	maxStall                        float64 // s, largest MaxITL
	outputTokens, promptTokens      int64   // sums over all requests, unknown counted as 0
	tpotKnown                       int     // requests with a TPOT
	firstTime, lastTime             float64 // min and max Time, NaN without times
}

func measure(ds sources.Dataset) figures {
	f := figures{n: len(ds.Requests), clock: ds.Clock, duration: ds.Duration,
		maxStall: math.NaN(), firstTime: math.NaN(), lastTime: math.NaN()}
	var sT, sP, sE float64
	var nT, nE int
	for _, r := range ds.Requests {
		switch r.Status {
		case sources.StatusOK:
			f.completed++
		case sources.StatusError:
			f.errored++
		case sources.StatusTimeout:
			f.timedOut++
		}
		if sources.Known(r.TTFT) {
			sT += r.TTFT
			nT++
		}
		if sources.Known(r.TPOT) {
			sP += r.TPOT
			f.tpotKnown++
		}
		if sources.Known(r.E2E) {
			sE += r.E2E
			nE++
		}
		if sources.Known(r.MaxITL) && (math.IsNaN(f.maxStall) || r.MaxITL > f.maxStall) {
			f.maxStall = r.MaxITL
		}
		f.outputTokens += max(r.OutputTokens, 0)
		f.promptTokens += max(r.PromptTokens, 0)
		if sources.Known(r.Time) {
			if math.IsNaN(f.firstTime) || r.Time < f.firstTime {
				f.firstTime = r.Time
			}
			if math.IsNaN(f.lastTime) || r.Time > f.lastTime {
				f.lastTime = r.Time
			}
		}
	}
	div := func(s float64, n int) float64 {
		if n == 0 {
			return math.NaN()
		}
		return s / float64(n)
	}
	f.meanTTFT, f.meanTPOT, f.meanE2E = div(sT, nT), div(sP, f.tpotKnown), div(sE, nE)
	return f
}

// close reports whether a and b agree within rel (relative) or are both NaN.
func close(a, b, rel float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= rel*math.Max(math.Abs(b), 1e-12)
}

func compareFigures(t *testing.T, got, want figures) {
	t.Helper()
	ints := []struct {
		name      string
		got, want int64
	}{
		{"requests", int64(got.n), int64(want.n)},
		{"completed", int64(got.completed), int64(want.completed)},
		{"errored", int64(got.errored), int64(want.errored)},
		{"timed out", int64(got.timedOut), int64(want.timedOut)},
		{"TPOT known", int64(got.tpotKnown), int64(want.tpotKnown)},
		{"output tokens", got.outputTokens, want.outputTokens},
		{"prompt tokens", got.promptTokens, want.promptTokens},
	}
	for _, c := range ints {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if got.clock != want.clock {
		t.Errorf("clock = %q, want %q", got.clock, want.clock)
	}
	floats := []struct {
		name      string
		got, want float64
	}{
		{"duration", got.duration, want.duration},
		{"mean TTFT", got.meanTTFT, want.meanTTFT},
		{"mean TPOT", got.meanTPOT, want.meanTPOT},
		{"mean E2E", got.meanE2E, want.meanE2E},
		{"max stall", got.maxStall, want.maxStall},
		{"first time", got.firstTime, want.firstTime},
		{"last time", got.lastTime, want.lastTime},
	}
	for _, c := range floats {
		if !close(c.got, c.want, 1e-9) {
			t.Errorf("%s = %.12g, want %.12g", c.name, c.got, c.want)
		}
	}
}

// dump renders a dataset as text for the golden files: one line per request.
func dump(ds sources.Dataset) string {
	var b strings.Builder
	fmt.Fprintf(&b, "arm=%s clock=%s location=%s duration=%.9g\n", ds.Arm, ds.Clock, ds.Location, ds.Duration)
	for _, in := range ds.Inputs {
		fmt.Fprintf(&b, "input format=%s requests=%d note=%q\n", in.Format, in.Count, in.Note)
	}
	for _, w := range ds.Warnings {
		fmt.Fprintf(&b, "warning %s\n", w)
	}
	g := func(v float64) string { return fmt.Sprintf("%.12g", v) }
	for i, r := range ds.Requests {
		fmt.Fprintf(&b, "%d status=%s time=%s ttft=%s tpot=%s e2e=%s max_itl=%s in=%d out=%d cached=%d\n",
			i, r.Status, g(r.Time), g(r.TTFT), g(r.TPOT), g(r.E2E), g(r.MaxITL), r.PromptTokens, r.OutputTokens, r.CachedTokens)
	}
	return b.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (go test -update rewrites it after review):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func nan() float64 { return math.NaN() }

// TestFixtures reads each hand-written fixture and checks the per-arm
// figures, computed by hand from the fixture's numbers, and the golden dump.
func TestFixtures(t *testing.T) {
	tests := []struct {
		file     string
		format   string
		want     figures
		warnings []string // substrings that must appear in the warnings
	}{
		{
			// 6 requests: 4 ok (one with 1 output token and no gaps, one
			// with 0 tokens), 1 error, 1 timeout; string "inf" request rate,
			// NaN and Infinity tokens in the summary.
			file: "vllm_detailed.json", format: FormatVLLM,
			want: figures{n: 6, completed: 4, errored: 1, timedOut: 1, clock: sources.ClockRelative, duration: 3,
				meanTTFT: (0.2 + 0.3 + 0.5 + 0.25) / 4, meanTPOT: (0.2/3 + 0.5) / 2,
				meanE2E: (0.4 + 0.3 + 1.0 + 0.25) / 4, maxStall: 0.5,
				outputTokens: 7, promptTokens: 90, tpotKnown: 2, firstTime: 0, lastTime: 2.5},
		},
		{
			// Old layout: "request_goodput:" key, bare Infinity request
			// rate, latencies present, no start_times.
			file: "vllm_old_latencies.json", format: FormatVLLM,
			want: figures{n: 3, completed: 2, errored: 1, clock: sources.ClockNone, duration: 2,
				meanTTFT: 0.8, meanTPOT: ((0.16-0.1)/2 + 0.2) / 2, meanE2E: (0.16 + 1.7) / 2, maxStall: 0.1,
				outputTokens: 5, promptTokens: 350, tpotKnown: 2, firstTime: nan(), lastTime: nan()},
			warnings: []string{"time buckets, warm-up detection and goodput over time are disabled", "goodput uses the file's duration (2 s)"},
		},
		{
			// Two appended runs: the second starts where the first ended
			// (2.5 s), so times are 0, 1, 2.5, 3.
			file: "vllm_appended.json", format: FormatVLLM,
			want: figures{n: 4, completed: 3, errored: 1, clock: sources.ClockRelative, duration: 4,
				meanTTFT: 0.2, meanTPOT: (0.1 + 0.25 + 0.1) / 3, meanE2E: (0.3 + 0.7 + 0.7) / 3, maxStall: 0.3,
				outputTokens: 11, promptTokens: 40, tpotKnown: 3, firstTime: 0, lastTime: 3},
			warnings: []string{"2 runs at different request rates (1, 2)"},
		},
		{
			// 4 ok (one with a single output token, one with none and a NaN
			// inter_token_latency_s), a 429 and a timeout with NaN/Infinity.
			file: "llmperf_individual.json", format: FormatLLMPerf,
			want: figures{n: 6, completed: 4, errored: 1, timedOut: 1, clock: sources.ClockNone,
				meanTTFT: 0.5, meanTPOT: (0.9/39 + 0.6/9) / 2, meanE2E: 0.875, maxStall: nan(),
				outputTokens: 51, promptTokens: 480, tpotKnown: 2, firstTime: nan(), lastTime: nan()},
			warnings: []string{"carry no timestamps and no run duration", "goodput per second cannot be computed from this file alone"},
		},
		{
			// Two runs (bare Infinity and 4 req/s): a 1-token and a failed
			// request in the first, with a NaN summary field.
			file: "sglang_details.jsonl", format: FormatSGLang,
			want: figures{n: 5, completed: 4, errored: 1, clock: sources.ClockNone, duration: 3,
				meanTTFT: 0.1875, meanTPOT: (0.05 + 0.2 + 0.1) / 3, meanE2E: 0.5, maxStall: 0.4,
				outputTokens: 17, promptTokens: 288, tpotKnown: 3, firstTime: nan(), lastTime: nan()},
			warnings: []string{"SGLang bench_serving file has no start_times", "goodput uses the file's duration (3 s)", "2 runs at different request rates (inf, 4)"},
		},
		{
			// Role-only first chunk (counts for TTFT, as in genai-perf),
			// trailing empty and [DONE] chunks (dropped for e2e), a usage
			// chunk, a one-token request, a server error body and a
			// request that got no response at all.
			file: "genaiperf_profile_export.json", format: FormatGenAIPerf,
			want: figures{n: 5, completed: 3, errored: 2, clock: sources.ClockRelative, duration: 2.5,
				meanTTFT: 0.2, meanTPOT: (0.15 + 0.025) / 2, meanE2E: 1.0 / 3, maxStall: 0.2,
				outputTokens: 9, promptTokens: 12, tpotKnown: 2, firstTime: 0, lastTime: 2},
			warnings: []string{"counted as responses with content"},
		},
		{
			// A warm-up record (skipped), units ms, s, ns and us, a NaN
			// metric, an error with error_isl, a cancellation and a timeout.
			file: "aiperf_profile_export.jsonl", format: FormatAIPerf,
			want: figures{n: 5, completed: 2, errored: 1, timedOut: 1, clock: sources.ClockEpoch,
				meanTTFT: 0.175, meanTPOT: 0.25, meanE2E: 0.55, maxStall: 0.25,
				outputTokens: 8, promptTokens: 250, tpotKnown: 1, firstTime: 1732000001, lastTime: 1732000004},
		},
		{
			// Current and older info layouts, a one-token request, a 503,
			// a timeout and a non-streaming request without token times.
			file: "inferenceperf_per_request.json", format: FormatInferencePerf,
			want: figures{n: 5, completed: 3, errored: 1, timedOut: 1, clock: sources.ClockRelative,
				meanTTFT: 0.25, meanTPOT: 0.2, meanE2E: 2.3 / 3, maxStall: 0.3,
				outputTokens: 15, promptTokens: 115, tpotKnown: 1, firstTime: 0, lastTime: 2},
			warnings: []string{"1 completed requests have no output_token_times"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			ds, b := readFile(t, "", path)
			if got := Detect(b); got != tt.format {
				t.Errorf("Detect = %q, want %q", got, tt.format)
			}
			compareFigures(t, measure(ds), tt.want)
			if tt.format == FormatAIPerf {
				// AIPerf cancels requests itself: the client's cancels
				n := 0
				for _, r := range ds.Requests {
					if r.Status == sources.StatusCanceled {
						n++
						if r.CanceledBy != sources.CanceledByClient || r.Failed() {
							t.Errorf("AIPerf cancellation read as canceled by %q (failed %v), want the client's", r.CanceledBy, r.Failed())
						}
					}
				}
				if n != 1 {
					t.Errorf("%d canceled requests, want the file's 1", n)
				}
			}
			all := strings.Join(ds.Warnings, "\n")
			for _, w := range tt.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("warnings %q lack %q", ds.Warnings, w)
				}
			}
			if len(tt.warnings) == 0 && len(ds.Warnings) > 0 {
				t.Errorf("unexpected warnings %q", ds.Warnings)
			}
			if ds.Location != "client" || ds.Arm != sources.Canary {
				t.Errorf("location %q arm %q", ds.Location, ds.Arm)
			}
			sum := sha256.Sum256(b)
			if len(ds.Inputs) != 1 || ds.Inputs[0].SHA256 != hex.EncodeToString(sum[:]) || ds.Inputs[0].Count != len(ds.Requests) ||
				ds.Inputs[0].Path != path || ds.Inputs[0].Format != tt.format || ds.Inputs[0].Arm != sources.Canary {
				t.Errorf("inputs = %+v", ds.Inputs)
			}
			checkGolden(t, strings.TrimSuffix(tt.file, filepath.Ext(tt.file)), dump(ds))
		})
	}
}

// TestVLLMEdgeCases pins the per-request conversions of vllm_detailed.json.
func TestVLLMEdgeCases(t *testing.T) {
	ds, _ := readFile(t, FormatVLLM, filepath.Join("testdata", "vllm_detailed.json"))
	r := ds.Requests
	if !close(r[0].TPOT, 0.2/3, 1e-12) || !close(r[0].E2E, 0.4, 1e-12) || r[0].MaxITL != 0.1 || r[0].Time != 0.5 {
		t.Errorf("request 0 = %+v", r[0])
	}
	if r[1].OutputTokens != 1 || !math.IsNaN(r[1].TPOT) || !math.IsNaN(r[1].MaxITL) || r[1].E2E != 0.3 {
		t.Errorf("one-token request = %+v, want TPOT and MaxITL unknown, E2E = TTFT", r[1])
	}
	if r[2].Status != sources.StatusError || !math.IsNaN(r[2].TTFT) || !math.IsNaN(r[2].E2E) || r[2].OutputTokens != 0 || r[2].PromptTokens != 30 {
		t.Errorf("failed request = %+v", r[2])
	}
	if r[4].Status != sources.StatusTimeout {
		t.Errorf("timed-out request status = %v", r[4].Status)
	}
	if r[5].Status != sources.StatusOK || r[5].OutputTokens != 0 || !math.IsNaN(r[5].TPOT) {
		t.Errorf("empty completion = %+v", r[5])
	}
}

// TestReadErrorsAreParseErrors checks the error type the CLI relies on.
func TestReadErrorsAreParseErrors(t *testing.T) {
	_, err := Read(context.Background(), "nope", "x.json", strings.NewReader("{}"), sources.Baseline)
	var pe *ParseError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "unknown benchmark file format") {
		t.Fatalf("err = %v", err)
	}
}

// TestReadHonoursContext checks that a canceled context stops Read.
func TestReadHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Read(ctx, FormatVLLM, "x.json", strings.NewReader("{}"), sources.Baseline)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestDetect covers every format, the summary files of each tool (detected
// so that Read can explain them), heads cut mid-value, and inputs that are
// none of these formats.
func TestDetect(t *testing.T) {
	file := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name, head, want string
	}{
		{"vllm detailed", file("vllm_detailed.json"), FormatVLLM},
		{"vllm old", file("vllm_old_latencies.json"), FormatVLLM},
		{"vllm summary only", file("vllm_summary_only.json"), FormatVLLM},
		{"vllm cut after 80 bytes", file("vllm_detailed.json")[:80], FormatVLLM},
		{"sglang", file("sglang_details.jsonl"), FormatSGLang},
		{"llmperf individual", file("llmperf_individual.json"), FormatLLMPerf},
		{"llmperf cut in first record", file("llmperf_individual.json")[:120], FormatLLMPerf},
		{"llmperf summary", file("llmperf_summary.json"), FormatLLMPerf},
		{"genai-perf", file("genaiperf_profile_export.json"), FormatGenAIPerf},
		{"genai-perf cut", file("genaiperf_profile_export.json")[:200], FormatGenAIPerf},
		{"genai-perf summary", `{"request_latency": {"unit": "ms", "avg": 1}, "time_to_first_token": {"unit": "ms", "avg": 1}}`, FormatGenAIPerf},
		{"aiperf", file("aiperf_profile_export.jsonl"), FormatAIPerf},
		{"aiperf summary", `{"benchmark_duration": 10, "request_count": {"avg": 5}}`, FormatAIPerf},
		{"inference-perf", file("inferenceperf_per_request.json"), FormatInferencePerf},
		{"inference-perf summary", file("inferenceperf_summary.json"), FormatInferencePerf},
		{"byte-order mark", "\xef\xbb\xbf" + file("vllm_old_latencies.json"), FormatVLLM},
		{"native request log", `{"ts": 1732000000, "status": "ok", "ttft_s": 0.2}` + "\n", ""},
		{"csv", "ts,status,ttft_s\n1,ok,0.2\n", ""},
		{"empty", "", ""},
		{"number", "42", ""},
		{"empty array", "[]", ""},
		{"array of numbers", "[1, 2]", ""},
		{"unrelated object", `{"hello": "world"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Detect([]byte(tt.head)); got != tt.want {
				t.Errorf("Detect = %q, want %q", got, tt.want)
			}
		})
	}
	big := append([]byte(`{"date": "x", "backend": "vllm", "model_id": "m", "generated_texts": ["`), bytes.Repeat([]byte("a"), 2*DetectBytes)...)
	if got := Detect(big); got != FormatVLLM {
		t.Errorf("Detect(head longer than DetectBytes) = %q", got)
	}
}

// TestSummaryFilesRefused checks that each tool's summary file is refused
// with a message pointing at the per-request file.
func TestSummaryFilesRefused(t *testing.T) {
	tests := []struct{ file, format, msg string }{
		{"vllm_summary_only.json", FormatVLLM, "--save-detailed"},
		{"llmperf_summary.json", FormatLLMPerf, "*_individual_responses.json"},
		{"inferenceperf_summary.json", FormatInferencePerf, "report.request_lifecycle.per_request: true"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", tt.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := Detect(b); got != tt.format {
				t.Errorf("Detect = %q, want %q", got, tt.format)
			}
			_, err = Read(context.Background(), tt.format, path, bytes.NewReader(b), sources.Baseline)
			if err == nil || !strings.HasPrefix(err.Error(), path+":1:1: ") || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want %s:1:1: … %s", err, path, tt.msg)
			}
		})
	}
}

// TestFormats checks the documentation table: every format is listed once,
// readable, and described.
func TestFormats(t *testing.T) {
	want := []string{FormatVLLM, FormatSGLang, FormatLLMPerf, FormatGenAIPerf, FormatAIPerf, FormatInferencePerf}
	got := Formats()
	if len(got) != len(want) {
		t.Fatalf("Formats() has %d entries, want %d", len(got), len(want))
	}
	for i, fi := range got {
		if fi.Name != want[i] || fi.Summary == "" || fi.Produce == "" || fi.Reads == "" || readerFor(fi.Name) == nil {
			t.Errorf("Formats()[%d] = %+v", i, fi)
		}
	}
}
