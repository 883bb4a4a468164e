package sim

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// renderAll renders every output of a run, in the order the CLI writes them.
func renderAll(t *testing.T, res *Result) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	var b bytes.Buffer
	for name, write := range map[string]func() error{
		"baseline.jsonl": func() error { return WriteRequestLog(&b, res.Baseline) },
		"canary.jsonl":   func() error { return WriteRequestLog(&b, res.Canary) },
		"metrics.om":     func() error { return WriteOpenMetrics(&b, res.Metrics) },
		"cost.csv":       func() error { return WriteCostCSV(&b, res.Cost) },
		"summary.txt":    func() error { return WriteSummary(&b, res.Summary) },
	} {
		b.Reset()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = bytes.Clone(b.Bytes())
	}
	return out
}

func loadTiny(t *testing.T) Scenario {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseScenario("testdata/tiny.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestGolden pins the rendered output of a small scenario byte for byte.
// Run with -update to rewrite testdata/golden/ after a deliberate change.
func TestGolden(t *testing.T) {
	res, err := Run(context.Background(), loadTiny(t), 42, 0)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range renderAll(t, res) {
		path := filepath.Join("testdata", "golden", "tiny-"+name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (run with -update if the change is deliberate)\n%s", name, path, firstDiff(got, want))
		}
	}
}

func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ":\n got: " + g[i] + "\nwant: " + w[i]
		}
	}
	return "lengths differ: " + strconv.Itoa(len(g)) + " vs " + strconv.Itoa(len(w)) + " lines"
}

// TestDeterminism: the same scenario and seed give byte-identical files;
// another seed gives different ones; and the canary's knobs do not change
// the baseline arm (separate random streams).
func TestDeterminism(t *testing.T) {
	sc, err := Builtin("seed-overload")
	if err != nil {
		t.Fatal(err)
	}
	run := func(sc Scenario, seed uint64) map[string][]byte {
		res, err := Run(context.Background(), sc, seed, 8*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return renderAll(t, res)
	}
	a, b := run(sc, 9), run(sc, 9)
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two runs with the same seed:\n%s", name, firstDiff(a[name], b[name]))
		}
	}
	c := run(sc, 10)
	if bytes.Equal(a["baseline.jsonl"], c["baseline.jsonl"]) {
		t.Error("seeds 9 and 10 gave the same baseline log")
	}
	sc.Canary.DecodeSpeed = 1.3
	d := run(sc, 9)
	if !bytes.Equal(a["baseline.jsonl"], d["baseline.jsonl"]) {
		t.Error("changing a canary knob changed the baseline arm")
	}
	if bytes.Equal(a["canary.jsonl"], d["canary.jsonl"]) {
		t.Error("changing the canary's decode speed did not change the canary arm")
	}
}

// TestRequestLogFormat checks the JSONL against DESIGN.md §3: known fields
// only, ts with 6 decimals, and completed requests carrying ttft_s.
func TestRequestLogFormat(t *testing.T) {
	nan := sources.NewRequest()
	nan.Time = 1767225600.5
	nan.Status = sources.StatusRejected
	nan.PromptTokens = 12
	nan.Class = `q"x`
	nan.Attempt = 2
	ok := sources.NewRequest()
	ok.Time, ok.Status, ok.TTFT, ok.TPOT, ok.E2E, ok.MaxITL = 1767225601, sources.StatusOK, 0.25, 0.0125, 1.5, 0.03
	ok.PromptTokens, ok.OutputTokens, ok.CachedTokens, ok.Replica, ok.Attempt, ok.Quality = 100, 101, 64, "canary-0", 1, sources.QualityBad
	var b bytes.Buffer
	if err := WriteRequestLog(&b, []sources.Request{nan, ok}); err != nil {
		t.Fatal(err)
	}
	want := `{"ts":1767225600.500000,"status":"rejected","prompt_tokens":12,"class":"q\"x","attempt":2}
{"ts":1767225601.000000,"status":"ok","ttft_s":0.250000,"tpot_s":0.012500,"e2e_s":1.500000,"max_itl_s":0.030000,"prompt_tokens":100,"output_tokens":101,"cached_tokens":64,"replica":"canary-0","attempt":1,"quality_ok":false}
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestOpenMetricsRules checks the backfill rules of integration.md §1.3
// without promtool: ends in # EOF, no blank lines, every sample
// timestamped in seconds, counters sampled with _total, no _created,
// families contiguous, each series in ascending time.
func TestOpenMetricsRules(t *testing.T) {
	res, err := Run(context.Background(), loadTiny(t), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteOpenMetrics(&b, res.Metrics); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.HasSuffix(text, "# EOF\n") {
		t.Fatal("does not end in # EOF")
	}
	sampleRE := regexp.MustCompile(`^([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\} (\S+) (\d+(?:\.\d+)?)$`)
	types := map[string]string{}
	seenFamily := map[string]bool{}
	lastTS := map[string]float64{}
	current := ""
	start, end := float64(res.Scenario.Start.Unix()), float64(res.Scenario.Start.Unix())+res.Scenario.Duration.Seconds()
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case line == "":
			t.Fatalf("line %d is blank", n)
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Fields(line)
			if seenFamily[f[2]] {
				t.Fatalf("line %d: family %s is not contiguous", n, f[2])
			}
			seenFamily[f[2]], types[f[2]], current = true, f[3], f[2]
		case strings.HasPrefix(line, "#"):
		default:
			m := sampleRE.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("line %d is not a timestamped sample: %q", n, line)
			}
			name := m[1]
			if strings.HasSuffix(name, "_created") {
				t.Fatalf("line %d: _created series", n)
			}
			switch types[current] {
			case "counter":
				if name != current+"_total" {
					t.Fatalf("line %d: counter %s sampled as %s", n, current, name)
				}
			case "histogram":
				if !strings.HasPrefix(name, current+"_") {
					t.Fatalf("line %d: %s outside its family %s", n, name, current)
				}
			default:
				if name != current {
					t.Fatalf("line %d: %s outside its family %s", n, name, current)
				}
			}
			ts, _ := strconv.ParseFloat(m[4], 64)
			if ts < start || ts > end {
				t.Fatalf("line %d: timestamp %v outside the window (seconds expected)", n, ts)
			}
			key := name + "{" + m[2] + "}"
			if prev, ok := lastTS[key]; ok && ts <= prev {
				t.Fatalf("line %d: series %s not in ascending time", n, key)
			}
			lastTS[key] = ts
		}
	}
	for _, fam := range []string{"vllm:request_success", "vllm:time_to_first_token_seconds", "vllm:request_time_per_output_token_seconds",
		"vllm:e2e_request_latency_seconds", "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:prompt_tokens", "vllm:generation_tokens", "vllm:prefix_cache_queries", "vllm:prefix_cache_hits",
		"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED"} {
		if !seenFamily[fam] {
			t.Errorf("family %s missing", fam)
		}
	}
	if !strings.Contains(text, `deployment="canary",pod="canary-0"`) || !strings.Contains(text, `finished_reason="stop"`) {
		t.Error("labels deployment/pod/finished_reason missing")
	}
}

// TestPromtoolBackfill loads metrics.om into a TSDB with promtool, when it
// is installed (REQUIRE_PROMETHEUS=1 turns a missing promtool into a
// failure), and checks that no sample was dropped.
func TestPromtoolBackfill(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		if os.Getenv("REQUIRE_PROMETHEUS") == "1" {
			t.Fatal("promtool not on PATH and REQUIRE_PROMETHEUS=1 (apt-get install -y --no-install-recommends prometheus)")
		}
		t.Skip("promtool not installed (apt-get install -y --no-install-recommends prometheus)")
	}
	res := runBuiltin(t, "replica-loss", 3, 10*time.Minute)
	dir := t.TempDir()
	om := filepath.Join(dir, "metrics.om")
	var b bytes.Buffer
	if err := WriteOpenMetrics(&b, res.Metrics); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(om, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	samples := 0
	for _, l := range strings.Split(b.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			samples++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "promtool", "tsdb", "create-blocks-from", "openmetrics", om, filepath.Join(dir, "data")).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	// BLOCK ULID  MIN TIME  MAX TIME  DURATION  NUM SAMPLES  NUM CHUNKS  NUM SERIES  SIZE
	got := 0
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 8 && f[0] != "BLOCK" {
			n, err := strconv.Atoi(f[4])
			if err != nil {
				t.Fatalf("unexpected promtool line %q", l)
			}
			min, _ := strconv.ParseInt(f[1], 10, 64)
			if want := res.Scenario.Start.UnixMilli(); min != want {
				t.Errorf("block starts at %d ms, want %d (timestamps must be seconds)", min, want)
			}
			got += n
		}
	}
	if got != samples {
		t.Errorf("promtool stored %d samples, the file has %d:\n%s", got, samples, out)
	}
}

func TestDataset(t *testing.T) {
	res, err := Run(context.Background(), loadTiny(t), 42, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := res.Dataset(sources.Canary)
	if d.Arm != sources.Canary || len(d.Requests) != len(res.Canary) || d.Clock != sources.ClockEpoch ||
		d.Duration != 120 || len(d.Inputs) != 1 || d.Inputs[0].Count != len(res.Canary) {
		t.Fatalf("dataset %+v", d.Inputs)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "golden", "tiny-canary.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(want); d.Inputs[0].SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA-256 %s is not that of the rendered log", d.Inputs[0].SHA256)
	}
}
