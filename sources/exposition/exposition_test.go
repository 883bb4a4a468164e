package exposition

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/engines"
)

func realdata(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "testdata", "realdata"}, parts...)...)
}

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

func hist(edges, counts []float64) sources.Histogram {
	return sources.Histogram{Edges: edges, Counts: counts}
}

func sameHist(a, b sources.Histogram) bool {
	if len(a.Edges) != len(b.Edges) || len(a.Counts) != len(b.Counts) {
		return false
	}
	for i := range a.Edges {
		if a.Edges[i] != b.Edges[i] || !near(a.Counts[i], b.Counts[i]) {
			return false
		}
	}
	return true
}

var inf = math.Inf(1)

// The before/after fixtures: pod b-0 keeps running (stop +60, length +5,
// abort first seen with 5); pod b-1 restarted (its counters went down, and
// its prompt-token counter's _created changed although the count rose).
func checkPairBucket(t *testing.T, b sources.AggBucket) {
	t.Helper()
	checks := []struct {
		name      string
		got, want float64
	}{
		{"completed", b.Completed, 60 + 5 + 20},
		{"canceled", b.Canceled, 5},
		{"failed", b.Failed, 0},
		{"rejected (vLLM does not count it)", b.Rejected, math.NaN()},
		{"good (no counter)", b.Good, math.NaN()},
		{"output tokens", b.OutputTokens, 6000 + 2000},
		{"prompt tokens (b-1 restarted: _created changed)", b.PromptTokens, 15000 + 1500},
		{"prefix hits (absent)", b.PrefixHits, math.NaN()},
		{"KV usage: mean of ends of replica means", b.KVUsage, (0.4 + 0.6) / 2},
		{"replicas", b.Replicas, 2},
		{"GPU util (absent)", b.GPUUtil, math.NaN()},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if want := hist([]float64{0.5, 1, inf}, []float64{50 + 15, 60 + 19, 65 + 20}); !sameHist(b.TTFT, want) {
		t.Errorf("TTFT = %+v, want %+v", b.TTFT, want)
	}
	if want := hist([]float64{0.05, 0.1, inf}, []float64{40 + 12, 50 + 18, 60 + 20}); !sameHist(b.TPOT, want) {
		t.Errorf("TPOT = %+v, want %+v", b.TPOT, want)
	}
}

func TestReadPair(t *testing.T) {
	ctx := context.Background()
	ds, err := ReadPair(ctx, "testdata/vllm_before.prom", open(t, "testdata/vllm_before.prom"),
		"testdata/vllm_after.prom", open(t, "testdata/vllm_after.prom"), sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Agg == nil || len(ds.Agg.Buckets) != 1 {
		t.Fatalf("want one bucket, got %+v", ds.Agg)
	}
	if ds.Agg.Profile != "vllm-v1" || ds.Location != "server" || ds.Arm != sources.Baseline {
		t.Errorf("profile %q location %q arm %q", ds.Agg.Profile, ds.Location, ds.Arm)
	}
	checkPairBucket(t, ds.Agg.Buckets[0])
	if len(ds.Inputs) != 2 || len(ds.Inputs[0].SHA256) != 64 || ds.Inputs[0].Format != FormatText {
		t.Errorf("inputs = %+v", ds.Inputs)
	}
	if ds.Clock != sources.ClockNone {
		t.Errorf("clock = %q, want none (scrapes without timestamps)", ds.Clock)
	}
	notes := strings.Join(ds.Agg.Notes, "\n")
	if !strings.Contains(notes, "counter reset") {
		t.Errorf("notes lack the counter reset: %q", ds.Agg.Notes)
	}
	if strings.Contains(notes, "went away") {
		t.Errorf("no series disappeared, yet: %q", ds.Agg.Notes)
	}
	// pod b-1 gone from the after scrape: its counts stop, and a note says so
	after, _ := os.ReadFile("testdata/vllm_after.prom")
	var kept []string
	for _, l := range strings.Split(string(after), "\n") {
		if !strings.Contains(l, `pod="b-1"`) {
			kept = append(kept, l)
		}
	}
	ds, err = ReadPair(ctx, "testdata/vllm_before.prom", open(t, "testdata/vllm_before.prom"),
		"after-without-b-1.prom", strings.NewReader(strings.Join(kept, "\n")), sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	if b := ds.Agg.Buckets[0]; b.Completed != 65 || b.Replicas != 1.5 {
		t.Errorf("without b-1: completed %v replicas %v, want 65 and 1.5", b.Completed, b.Replicas)
	}
	if !strings.Contains(strings.Join(ds.Agg.Notes, "\n"), "went away") {
		t.Errorf("vanished replica not noted: %q", ds.Agg.Notes)
	}
}

// Both scrapes in one file, separated by "# EOF", give the same figures;
// so do two Markdown fences.
func TestReadOneFileTwoScrapes(t *testing.T) {
	before, _ := os.ReadFile("testdata/vllm_before.prom")
	after, _ := os.ReadFile("testdata/vllm_after.prom")
	shapes := map[string]string{
		"EOF separator": string(before) + "# EOF\n" + string(after) + "# EOF\n",
		"Markdown fences": "# Run 42\n\nBefore:\n\n```\n" + string(before) + "```\n\nAfter:\n\n```text\n" +
			string(after) + "```\n\n```bash\n> kubectl get pods\n```\n",
	}
	for name, body := range shapes {
		t.Run(name, func(t *testing.T) {
			ds, err := Read(context.Background(), "both.txt", strings.NewReader(body), sources.Baseline)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Agg.Buckets) != 1 {
				t.Fatalf("buckets = %d, want 1", len(ds.Agg.Buckets))
			}
			checkPairBucket(t, ds.Agg.Buckets[0])
		})
	}
}

func TestReadSingleScrape(t *testing.T) {
	ds, err := Read(context.Background(), "testdata/vllm_after.prom", open(t, "testdata/vllm_after.prom"), sources.Canary)
	if err != nil {
		t.Fatal(err)
	}
	b := ds.Agg.Buckets[0]
	if b.Completed != 195 || b.Canceled != 5 || !math.IsNaN(b.Start) {
		t.Errorf("single scrape: completed %v canceled %v start %v", b.Completed, b.Canceled, b.Start)
	}
	if !strings.Contains(strings.Join(ds.Warnings, "\n"), "only one scrape") {
		t.Errorf("no single-scrape warning: %q", ds.Warnings)
	}
}

// The simulator's shape: one OpenMetrics file, timestamps in seconds, both
// arms told apart by the deployment label, one series set per pod.
func TestReadTimeSeriesBothArms(t *testing.T) {
	tests := []struct {
		arm       sources.Arm
		completed []float64
		failed    []float64
		ttft      []sources.Histogram
		running   []float64
	}{
		{sources.Baseline, []float64{60, 60}, []float64{0, 0},
			[]sources.Histogram{hist([]float64{1, inf}, []float64{57, 60}), hist([]float64{1, inf}, []float64{60, 60})},
			[]float64{3, 5}},
		{sources.Canary, []float64{30, 40}, []float64{0, 2},
			[]sources.Histogram{hist([]float64{1, inf}, []float64{20, 30}), hist([]float64{1, inf}, []float64{30, 42})},
			[]float64{1, 2}},
	}
	for _, tt := range tests {
		t.Run(string(tt.arm), func(t *testing.T) {
			ds, err := Read(context.Background(), "testdata/timeseries.om", open(t, "testdata/timeseries.om"), tt.arm)
			if err != nil {
				t.Fatal(err)
			}
			if ds.Clock != sources.ClockEpoch || ds.Duration != 30 || ds.Agg.Step != 15 || ds.Inputs[0].Format != FormatOpenMetrics {
				t.Errorf("clock %q duration %v step %v format %q", ds.Clock, ds.Duration, ds.Agg.Step, ds.Inputs[0].Format)
			}
			if len(ds.Agg.Buckets) != 2 {
				t.Fatalf("buckets = %d, want 2", len(ds.Agg.Buckets))
			}
			for i, b := range ds.Agg.Buckets {
				if b.Start != 1704067200+15*float64(i) || b.End != b.Start+15 {
					t.Errorf("bucket %d spans [%v, %v]", i, b.Start, b.End)
				}
				if b.Completed != tt.completed[i] || b.Failed != tt.failed[i] || b.Running != tt.running[i] || b.Replicas != 1 {
					t.Errorf("bucket %d: completed %v failed %v running %v replicas %v", i, b.Completed, b.Failed, b.Running, b.Replicas)
				}
				if !sameHist(b.TTFT, tt.ttft[i]) {
					t.Errorf("bucket %d: TTFT %+v, want %+v", i, b.TTFT, tt.ttft[i])
				}
			}
			if !strings.Contains(ds.Inputs[0].Note, `deployment="`+string(tt.arm)+`"`) {
				t.Errorf("input note does not say how the arm was selected: %q", ds.Inputs[0].Note)
			}
		})
	}
}

// A selector replaces the label rule.
func TestReadWithSelector(t *testing.T) {
	sel, err := engines.ParseSelector(`pod="c-0"`)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ReadWith(context.Background(), []File{{Path: "testdata/timeseries.om", R: open(t, "testdata/timeseries.om")}},
		sources.Canary, Options{Selector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if got := ds.Agg.Buckets[1].Completed; got != 40 {
		t.Errorf("completed = %v, want 40", got)
	}
}

// The real vLLM V1 (≈0.10) scrape carries old and new names side by side.
func TestRealVLLMScrape(t *testing.T) {
	path := realdata("vllm-metrics-scrape", "logs.txt")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !Detect(data[:8192]) {
		t.Error("Detect(vLLM scrape) = false")
	}
	segs := splitSegments(data)
	if len(segs) != 1 {
		t.Fatalf("segments = %d", len(segs))
	}
	lines, err := lexSegment(path, segs[0])
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := parseSegment(path, lines)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]float64{}
	for _, s := range snaps[0].samples {
		names[s.name] += s.value
	}
	// both generations of names parse, with the same values
	for _, pair := range [][2]string{
		{"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"},
		{"vllm:gpu_prefix_cache_queries_total", "vllm:prefix_cache_queries_total"},
		{"vllm:gpu_prefix_cache_hits_total", "vllm:prefix_cache_hits_total"},
	} {
		old, okOld := names[pair[0]]
		cur, okNew := names[pair[1]]
		if !okOld || !okNew || old != cur {
			t.Errorf("%s=%v (%v) vs %s=%v (%v)", pair[0], old, okOld, pair[1], cur, okNew)
		}
	}
	if _, ok := names["vllm:time_per_output_token_seconds_bucket"]; !ok {
		t.Error("older per-token histogram name missing")
	}

	ds, err := Read(context.Background(), path, bytes.NewReader(data), sources.Canary)
	if err != nil {
		t.Fatal(err)
	}
	b := ds.Agg.Buckets[0]
	if ds.Agg.Profile != "vllm-v1" || b.Completed != 6 || b.Canceled != 0 || b.Failed != 0 || b.Replicas != 1 {
		t.Errorf("profile %s completed %v canceled %v failed %v replicas %v", ds.Agg.Profile, b.Completed, b.Canceled, b.Failed, b.Replicas)
	}
	if b.PrefixQueries != 246 || b.PrefixHits != 80 || !near(b.KVUsage, 0.0011764705882353343) {
		t.Errorf("prefix %v/%v KV %v", b.PrefixHits, b.PrefixQueries, b.KVUsage)
	}
	if b.TTFT.Total() != 6 || len(b.TTFT.Edges) != 23 {
		t.Errorf("TTFT total %v edges %d", b.TTFT.Total(), len(b.TTFT.Edges))
	}
	// 4 of 6 first tokens within 40 ms
	for i, e := range b.TTFT.Edges {
		if e == 0.04 && b.TTFT.Counts[i] != 4 {
			t.Errorf("TTFT ≤ 0.04 = %v, want 4", b.TTFT.Counts[i])
		}
	}
	if len(b.TPOT.Edges) != 0 {
		t.Errorf("TPOT filled from a per-token histogram: %+v", b.TPOT)
	}
}

// The V0 name set is recognised as the older engine.
func TestVLLMV0Detected(t *testing.T) {
	body := `# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop",model_name="m"} 10.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.25
# TYPE vllm:num_requests_swapped gauge
vllm:num_requests_swapped{model_name="m"} 0.0
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{le="0.1",model_name="m"} 5.0
vllm:time_per_output_token_seconds_bucket{le="+Inf",model_name="m"} 9.0
vllm:time_per_output_token_seconds_count{model_name="m"} 9.0
vllm:time_per_output_token_seconds_sum{model_name="m"} 0.5
`
	ds, err := Read(context.Background(), "v0.prom", strings.NewReader(body), sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Agg.Profile != "vllm-v0" || ds.Agg.Buckets[0].KVUsage != 0.25 || ds.Agg.Buckets[0].Completed != 10 {
		t.Errorf("profile %s bucket %+v", ds.Agg.Profile, ds.Agg.Buckets[0])
	}
	if !strings.Contains(strings.Join(ds.Agg.Notes, "\n"), "older name of vllm:kv_cache_usage_perc") {
		t.Errorf("rename not noted: %q", ds.Agg.Notes)
	}
}

// The DCGM exporter scrape sits inside Markdown fences among kubectl output.
func TestRealDCGMScrape(t *testing.T) {
	path := realdata("dcgm-exporter-scrape", "output.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !Detect(data[:8192]) {
		t.Error("Detect(DCGM Markdown) = false")
	}
	segs := splitSegments(data)
	if len(segs) != 1 {
		t.Fatalf("segments = %d, want 1 (only the fenced scrape)", len(segs))
	}
	lines, err := lexSegment(path, segs[0])
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := parseSegment(path, lines)
	if err != nil {
		t.Fatal(err)
	}
	s := &snaps[0]
	extras := map[engines.Quantity]float64{}
	p, _ := engines.ByName("vllm-v1")
	for _, q := range []engines.Quantity{engines.GPUUtil, engines.GPUPowerW, engines.GPUMemBytes} {
		for _, c := range p.Metrics[q] {
			if v := gaugeAt(s, c); !math.IsNaN(v) {
				extras[q] = v
				break
			}
		}
	}
	var fbUsed, fbFree float64
	for _, smp := range s.samples {
		switch smp.name {
		case "DCGM_FI_DEV_FB_USED":
			fbUsed = smp.value
		case "DCGM_FI_DEV_FB_FREE":
			fbFree = smp.value
		}
		if smp.labels["modelName"] != "NVIDIA L4" {
			t.Errorf("%s: modelName %q", smp.name, smp.labels["modelName"])
		}
	}
	// an idle L4: 0 % busy, 16.365 W, no framebuffer in use, 22563 MiB free
	gm, ok := extras[engines.GPUMemBytes]
	if extras[engines.GPUUtil] != 0 || !near(extras[engines.GPUPowerW], 16.365) || fbFree != 22563 ||
		!ok || gm != fbUsed*(1<<20) {
		t.Errorf("GPU extras = %v (FB used %v MiB, free %v MiB)", extras, fbUsed, fbFree)
	}
	if len(s.samples) < 20 {
		t.Errorf("only %d samples parsed", len(s.samples))
	}
	// a GPU-only scrape cannot be judged: a clear error, not an empty pass
	_, err = Read(context.Background(), path, bytes.NewReader(data), sources.Baseline)
	if err == nil || !strings.Contains(err.Error(), "no request counters") {
		t.Errorf("Read(DCGM only) error = %v", err)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		head string
		want bool
	}{
		{"text format", "# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n", true},
		{"bare samples", "up{job=\"a\"} 1\nup{job=\"b\"} 0\n", true},
		{"openmetrics", "# TYPE a counter\na_total 1 1704067200\n# EOF\n", true},
		{"markdown with a scrape", "# Title\n\nSome text\n```\n# HELP DCGM_FI_DEV_GPU_UTIL util\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n```\n", true},
		{"jsonl request log", `{"ts": 1704067200, "status": "ok", "ttft_s": 0.2}` + "\n", false},
		{"csv request log", "ts,status,ttft_s\n1704067200,ok,0.2\n", false},
		{"json document", "{\n  \"ttfts\": [0.1]\n}\n", false},
		{"markdown heading named TYPE", "# TYPE of things\n\nprose\n", false},
		{"markdown heading named HELP", "# HELP wanted\n\nprose\n", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		if got := Detect([]byte(tt.head)); got != tt.want {
			t.Errorf("%s: Detect = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
		arm              sources.Arm
	}{
		{"mixed timestamps", "# TYPE a_total counter\na_total 1 1704067200\na_total{x=\"1\"} 2\n", "bad.prom:3: sample without a timestamp", sources.Baseline},
		{"repeat without timestamps", "vllm:request_success_total{finished_reason=\"stop\"} 1\nvllm:request_success_total{finished_reason=\"stop\"} 2\n", "bad.prom:2: ", sources.Baseline},
		{"bad value", "# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason=\"stop\"} abc\n", "bad.prom:2: ", sources.Baseline},
		{"unterminated labels", "vllm:request_success_total{finished_reason=\"stop\" 1\n", "bad.prom:1: unterminated label set", sources.Baseline},
		{"bad timestamp", "a_total 1 yesterday\n", "bad.prom:1: bad timestamp", sources.Baseline},
		{"no samples", "hello\n", "bad.prom:1: ", sources.Baseline},
		{"nothing at all", "", "no Prometheus samples", sources.Baseline},
		{"no request counters", "# TYPE up gauge\nup 1\n", "no request counters", sources.Baseline},
		{"arm absent from a two-arm file", "vllm:request_success_total{deployment=\"baseline\",finished_reason=\"stop\"} 1\n", `none with deployment="canary"`, sources.Canary},
		{"scrapes out of order", "a_total{finished_reason=\"stop\"} 2 1704067300\n# EOF\na_total{finished_reason=\"stop\"} 1 1704067200\n# EOF\n", "older than the one before it", sources.Baseline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(context.Background(), "bad.prom", strings.NewReader(tt.body), tt.arm)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestReadCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, "x", strings.NewReader("a 1\n"), sources.Baseline); err == nil {
		t.Error("Read with a canceled context succeeded")
	}
}

// TestParserPanicRecovered (hardening item 5): the Prometheus text parser
// panics on "# TYPE x counter\n#0\n{}0\n"; the reader recovers at its
// boundary and reports the file and line, so the CLI exits 4, not 2.
func TestParserPanicRecovered(t *testing.T) {
	_, err := Read(context.Background(), "bad.prom", strings.NewReader("# TYPE x counter\n#0\n{}0\n"), sources.Canary)
	if err == nil || !strings.Contains(err.Error(), "bad.prom:1") {
		t.Fatalf("got %v, want an error naming bad.prom:1", err)
	}
}
