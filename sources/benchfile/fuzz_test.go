package benchfile

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// fuzzFormat feeds arbitrary bytes to one format's reader, seeded with its
// test files. It must never panic, and whatever it accepts must hold
// requests with valid statuses, non-negative finite latencies and counts.
func fuzzFormat(f *testing.F, format string, seeds ...string) {
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"ttfts": [Infinity, NaN, -1e400], "itls": [[1e308, -0]], "input_lens": [1e99]}`))
	f.Add([]byte("[{\"x\": [[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]}]"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := Read(context.Background(), format, "f", bytes.NewReader(data), sources.Canary)
		if err != nil {
			if len(ds.Requests) != 0 {
				t.Fatal("requests returned with an error")
			}
			return
		}
		if len(ds.Requests) == 0 || ds.Inputs[0].Count != len(ds.Requests) {
			t.Fatalf("accepted with %d requests, count %d", len(ds.Requests), ds.Inputs[0].Count)
		}
		for i, r := range ds.Requests {
			if r.Status < sources.StatusOK || r.Status > sources.StatusRejected {
				t.Fatalf("request %d: status %d", i, r.Status)
			}
			for _, v := range []float64{r.TTFT, r.TPOT, r.E2E, r.MaxITL} {
				if math.IsInf(v, 0) || v < 0 {
					t.Fatalf("request %d: latency %v", i, v)
				}
			}
			if math.IsInf(r.Time, 0) {
				t.Fatalf("request %d: time %v", i, r.Time)
			}
		}
	})
}

func FuzzVLLM(f *testing.F) {
	fuzzFormat(f, FormatVLLM, "testdata/vllm_detailed.json", "testdata/vllm_appended.json", "testdata/vllm_old_latencies.json", "testdata/vllm_summary_only.json")
}

func FuzzSGLang(f *testing.F) { fuzzFormat(f, FormatSGLang, "testdata/sglang_details.jsonl") }

func FuzzLLMPerf(f *testing.F) {
	fuzzFormat(f, FormatLLMPerf, "testdata/llmperf_individual.json", "testdata/llmperf_summary.json")
}

func FuzzGenAIPerf(f *testing.F) {
	fuzzFormat(f, FormatGenAIPerf, "testdata/genaiperf_profile_export.json")
}

func FuzzAIPerf(f *testing.F) { fuzzFormat(f, FormatAIPerf, "testdata/aiperf_profile_export.jsonl") }

func FuzzInferencePerf(f *testing.F) {
	fuzzFormat(f, FormatInferencePerf, "testdata/inferenceperf_per_request.json", "testdata/inferenceperf_summary.json")
}

// TestSizeCap (hardening item 6): benchmark files are read whole, so a small
// .json.gz that inflates past MaxBytes — here 4 KiB members of a gzip
// stream that decompress to 1 MiB each, looking like a vLLM result — is
// refused with an error naming the file once MaxBytes have been read,
// instead of taking the inflated size in memory.
func TestSizeCap(t *testing.T) {
	var member bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
	zw.Write(bytes.Repeat([]byte(" "), 1<<20))
	zw.Close()
	var bomb bytes.Buffer
	head, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	head.Write([]byte(`{"date": "20250901-120000", "backend": "vllm", "ttfts": [0.1`))
	head.Close()
	for i := 0; i < MaxBytes>>20+2; i++ {
		bomb.Write(member.Bytes())
	}
	if bomb.Len() > 8<<20 {
		t.Fatalf("bomb is %d bytes compressed", bomb.Len())
	}
	zr, err := gzip.NewReader(bytes.NewReader(bomb.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Read(context.Background(), FormatVLLM, "bomb.json.gz", zr, sources.Canary)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Path != "bomb.json.gz" || !strings.Contains(err.Error(), "larger than 512 MiB") {
		t.Fatalf("got %v, want the size cap naming the file", err)
	}
	// a regular file over the cap is refused from its size, unread
	big := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(MaxBytes + 1)
	f.Close()
	f, _ = os.Open(big)
	defer f.Close()
	if _, err := Read(context.Background(), FormatVLLM, "big.json", f, sources.Canary); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("sparse file over the cap: %v", err)
	}
}
