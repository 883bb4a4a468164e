package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis"
)

// internalFixture is the inconclusive fixture with internal work: an
// overload in rows 4–7 where attainment collapses while the GPUs stay at
// 97–100%, retries and the queue grow, and a divergence finding; the canary
// has no retry information (metrics only) in one row.
func internalFixture() *analysis.Report {
	r := mdFixture(analysis.Inconclusive)
	att := []float64{1, 0.99, 1, 0.98, 0.3, 0.02, 0, 0.1, 0.95, 1, 1, 0.99}
	off := []float64{70, 71, 69, 72, 140, 230, 232, 180, 80, 70, 71, 70}
	retry := []float64{0, 0, 0, 0.01, 0.2, 0.5, 0.52, 0.4, 0.05, 0, 0, 0}
	gpu := []float64{0.88, 0.97, 0.99, 1, 1, 1, 1, 1, 1, 0.99, 0.98, 1}
	kv := []float64{0.31, 0.33, 0.34, 0.35, 0.55, 0.6, 0.61, 0.66, 0.45, 0.35, 0.33, 0.32}
	q := []float64{1.5, 1.4, 2, 2.5, 300, 505, 508, 430, 40, 1.2, 1.6, 1.3}
	for i := range att {
		arm := func(scale float64, retryKnown bool) *analysis.TimelineArm {
			a := &analysis.TimelineArm{OfferedRPS: num(off[i] * scale), GoodputRPS: num(off[i] * scale * att[i]), SLOAttainment: num(att[i]),
				RetryShare: num(retry[i]), GPUUtilization: num(gpu[i]), KVUsage: num(kv[i]), QueueWaiting: num(q[i] * scale),
				Diverging: i >= 4 && i <= 7}
			if !retryKnown {
				a.RetryShare = num(math.NaN())
			}
			return a
		}
		r.Timeline = append(r.Timeline, analysis.TimelineRow{T: num(float64(i) * 60), Seconds: 60,
			Baseline: arm(1, true), Canary: arm(0.98, i != 2)})
	}
	r.Timeline[0].Baseline.Warmup = true
	r.Timeline[0].Canary.Warmup = true
	in := func(util, power float64) *analysis.Internal {
		return &analysis.Internal{Source: "prometheus (vllm-v1 + GPU gauges)", GPUUtilization: num(util), GPUPowerW: num(power),
			GPUMemoryBytes: num(3.548e11), KVUsage: num(0.4386), QueueWaiting: num(185.9), Running: num(406.7), Buckets: 80}
	}
	ef := func(j float64) *analysis.Efficiency {
		return &analysis.Efficiency{GPUSecondsPerGoodRequest: num(0.1075), JoulesPerGoodRequest: num(j), GoodTokensPerJoule: num(math.NaN()),
			GoodRequestsPerGPUHour: num(33274), Note: "good tokens per joule needs per-request output tokens; GPUs counted as one per replica"}
	}
	r.Arms.Baseline.Internal, r.Arms.Baseline.Efficiency = in(0.9937, 2713), ef(63.99)
	r.Arms.Canary.Internal, r.Arms.Canary.Efficiency = in(0.9938, 2703), ef(61.06)
	f := analysis.Finding{Kind: "divergence", Arm: "baseline", Rows: []int{4, 5, 6, 7}, From: 240, To: 480,
		Causes: []string{"overload", "retry_amplification", "queue_growth"},
		Detail: "baseline: GPU utilization steady while goodput falls in timeline rows 5–8 (240–480 s): GPU utilization 100% (healthy 99%) while SLO attainment fell to 10.0% (healthy 99.8%), goodput 19.6 req/s; overload: offered 196 req/s vs 70.5 healthy (×2.77); retry amplification 1.87× (47% of offered requests are retries; threshold 1.2×); queue growth: 436 requests waiting vs 1.55 healthy"}
	r.Findings = []analysis.Finding{f}
	r.Reasons = append(r.Reasons, "finding (not a gate): "+f.Detail)
	return r
}

// The internal-work table, the timeline strips and the finding, in text,
// Markdown (Mermaid) and JSON, against golden files (-update rewrites).
func TestInternalGolden(t *testing.T) {
	r := internalFixture()
	var txt, md, js bytes.Buffer
	if err := Text(&txt, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := JSON(&js, r); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "text", "internal.txt", txt.Bytes())
	checkGolden(t, "markdown", "internal.md", md.Bytes())
	checkGolden(t, "json", "internal.json", js.Bytes())

	// the strips: attainment collapses under a GPU row that stays full
	for _, want := range []string{
		"SLO attainment   ████▃▁▁▂████",
		"GPU utilization  ▇███████████",
		"marks            w   !!!!",
		"finding (not a gate): baseline: GPU utilization steady while goodput falls",
		"joules/good request",
	} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q", want)
		}
	}
	for _, want := range []string{"```mermaid\nxychart-beta\n    title \"baseline: percent per 60 s slice\"",
		"line [100, 99, 100, 98, 30, 2, 0, 10, 95, 100, 100, 99]", "diverging slices: 240–480 s",
		"not drawn (unknown in some slices): retry share", "- **finding (not a gate)**"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	arms := back["arms"].(map[string]any)
	for _, arm := range []string{"baseline", "canary"} {
		a := arms[arm].(map[string]any)
		in := a["internal"].(map[string]any)
		for _, k := range []string{"source", "gpu_utilization", "gpu_power_w", "gpu_memory_bytes", "kv_usage", "queue_waiting", "running"} {
			if _, ok := in[k]; !ok {
				t.Errorf("arms.%s.internal lacks %s", arm, k)
			}
		}
		ef := a["efficiency"].(map[string]any)
		for _, k := range []string{"gpu_seconds_per_good_request", "joules_per_good_request", "good_tokens_per_joule", "good_requests_per_gpu_hour"} {
			if _, ok := ef[k]; !ok {
				t.Errorf("arms.%s.efficiency lacks %s", arm, k)
			}
		}
		if ef["good_tokens_per_joule"] != nil {
			t.Errorf("unknown good tokens per joule should be null, got %v", ef["good_tokens_per_joule"])
		}
	}
	row := back["timeline"].([]any)[5].(map[string]any)["baseline"].(map[string]any)
	for _, k := range []string{"offered_rps", "goodput_rps", "slo_attainment", "retry_share", "gpu_utilization", "kv_usage", "queue_waiting"} {
		if _, ok := row[k]; !ok {
			t.Errorf("timeline row lacks %s", k)
		}
	}
}

// Untrusted text in the internal view (a source name, a note, a finding)
// reaches neither a terminal nor Markdown unescaped.
func TestInternalEscapes(t *testing.T) {
	r := internalFixture()
	bad := "\x1b[31mred\x1b[0m <img src=x onerror=alert(1)> | @admin #12"
	r.Arms.Baseline.Internal.Source = bad
	r.Arms.Canary.Efficiency.Note = bad
	r.Findings[0].Detail = bad
	var txt, md bytes.Buffer
	if err := Text(&txt, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(txt.String(), "\x1b") {
		t.Error("text carries an escape sequence from report text")
	}
	for _, s := range []string{"<img", "| @admin", "\x1b"} {
		if strings.Contains(md.String(), s) {
			t.Errorf("markdown carries %q unescaped", s)
		}
	}
}
