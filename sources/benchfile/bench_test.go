package benchfile

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// genVLLM writes a detailed vLLM result with n requests: ~1 in 50 failed,
// output lengths 1..120 with one gap per further token, generated texts of
// ~4 bytes per token (the bulk of real files), start_times on a perf_counter
// clock. Seeded, so every run builds the same bytes.
func genVLLM(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	outs := make([]int, n)
	fail := make([]bool, n)
	for i := range outs {
		outs[i] = 1 + rng.IntN(120)
		fail[i] = rng.IntN(50) == 0
		if fail[i] {
			outs[i] = 0
		}
	}
	var b bytes.Buffer
	f := func(v float64) { b.WriteString(strconv.FormatFloat(v, 'g', -1, 64)) }
	list := func(key string, each func(i int)) {
		b.WriteString(`, "` + key + `": [`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			each(i)
		}
		b.WriteString("]")
	}
	b.WriteString(`{"date": "20250901-120000", "backend": "vllm", "model_id": "m", "tokenizer_id": "m", "num_prompts": ` + strconv.Itoa(n) +
		`, "request_rate": "inf", "duration": 1234.5, "request_goodput": null`)
	list("input_lens", func(i int) { b.WriteString(strconv.Itoa(10 + rng.IntN(2000))) })
	list("output_lens", func(i int) { b.WriteString(strconv.Itoa(outs[i])) })
	list("ttfts", func(i int) {
		if fail[i] {
			b.WriteString("0.0")
		} else {
			f(0.05 + rng.Float64())
		}
	})
	list("itls", func(i int) {
		b.WriteByte('[')
		for j := 1; j < outs[i]; j++ {
			if j > 1 {
				b.WriteString(", ")
			}
			f(0.02 + 0.05*rng.Float64())
		}
		b.WriteByte(']')
	})
	list("start_times", func(i int) { f(81234.5 + float64(i)*0.01) })
	list("generated_texts", func(i int) {
		b.WriteByte('"')
		for j := 0; j < outs[i]; j++ {
			b.WriteString("tok ")
		}
		b.WriteString(`\n\"end\""`)
	})
	list("errors", func(i int) {
		if fail[i] {
			b.WriteString(`"Internal Server Error"`)
		} else {
			b.WriteString(`""`)
		}
	})
	b.WriteString(`, "mean_ttft_ms": NaN}`)
	return b.Bytes()
}

// BenchmarkReadVLLM reads a generated detailed file of 200k requests
// (≈ 307 MB, the size of a long detailed run). Reports MB/s via SetBytes.
func BenchmarkReadVLLM(b *testing.B) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	data := genVLLM(n)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		ds, err := Read(context.Background(), FormatVLLM, "gen.json", bytes.NewReader(data), sources.Baseline)
		if err != nil {
			b.Fatal(err)
		}
		if len(ds.Requests) != n {
			b.Fatalf("read %d requests, want %d", len(ds.Requests), n)
		}
	}
	b.ReportMetric(float64(len(data))/1e6, "file-MB")
}

// TestGeneratedVLLM runs the benchmark's generator at a small size so the
// generated layout is checked on every test run.
func TestGeneratedVLLM(t *testing.T) {
	data := genVLLM(500)
	if got := Detect(data); got != FormatVLLM {
		t.Fatalf("Detect = %q", got)
	}
	ds, err := Read(context.Background(), FormatVLLM, "gen.json", bytes.NewReader(data), sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	f := measure(ds)
	if f.n != 500 || f.completed+f.errored != 500 || f.errored == 0 || f.clock != sources.ClockRelative || f.firstTime != 0 {
		t.Errorf("figures %+v", f)
	}
}

// BenchmarkDecodeStdlibVLLM decodes the same generated file with
// encoding/json into typed arrays (NaN replaced by null, which the standard
// library requires): the reference point for BenchmarkReadVLLM's speed.
func BenchmarkDecodeStdlibVLLM(b *testing.B) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	data := bytes.Replace(genVLLM(n), []byte(`"mean_ttft_ms": NaN`), []byte(`"mean_ttft_ms": null`), 1)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		var v struct {
			InputLens  []int64     `json:"input_lens"`
			OutputLens []int64     `json:"output_lens"`
			TTFTs      []float64   `json:"ttfts"`
			ITLs       [][]float64 `json:"itls"`
			StartTimes []float64   `json:"start_times"`
			Errors     []string    `json:"errors"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
		if len(v.TTFTs) != n {
			b.Fatalf("decoded %d requests", len(v.TTFTs))
		}
	}
}
