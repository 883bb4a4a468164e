package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realdata is the repository's directory of real captured files
// (testdata/realdata, provenance in its SOURCES.md).
var realdata = filepath.Join("..", "..", "testdata", "realdata")

// runCLI runs the CLI in-process and returns its exit code and output.
func runCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
		func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

func vllmPair(t *testing.T) (string, string) {
	t.Helper()
	d := filepath.Join(realdata, "vllm-bench-serve")
	b := filepath.Join(d, "no_IB_serving_meta-llama-Llama-3.3-70B-Instruct_tp4_pp2_sharegpt_qps_04.json")
	c := filepath.Join(d, "IB_serving_meta-llama-Llama-3.3-70B-Instruct_tp4_pp2_sharegpt_qps_04.json")
	for _, p := range []string{b, c} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("real data missing (testdata/realdata is part of the repository): %v", err)
		}
	}
	return b, c
}

// TestJudgeRealVLLM is the must-show: the no-IB/IB pair judged as
// baseline/canary, text and JSON, with the exit code matching the verdict.
func TestJudgeRealVLLM(t *testing.T) {
	b, c := vllmPair(t)
	code, out, errs := runCLI(t, nil, "judge", "--baseline", b, "--canary", c)
	verdict := strings.Fields(strings.SplitN(out, "\n", 2)[0])
	if len(verdict) < 2 {
		t.Fatalf("no verdict line in %q (stderr %q)", out, errs)
	}
	want := map[string]int{"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}[verdict[1]]
	if code != want {
		t.Errorf("exit %d for verdict %s", code, verdict[1])
	}
	for _, s := range []string{"offered", "completed", "good", "SLO attainment", "goodput", "req/s", "2.358 req/s", "2.364 req/s"} {
		if !strings.Contains(out, s) {
			t.Errorf("text output lacks %q", s)
		}
	}

	var runs [2]string
	for i := range runs {
		code, runs[i], _ = runCLI(t, nil, "judge", "--baseline", b, "--canary", c, "--format", "json")
		if code != want {
			t.Fatalf("json run exit %d, want %d", code, want)
		}
	}
	if runs[0] != runs[1] {
		t.Fatal("two JSON runs on the same inputs differ")
	}
	var r struct {
		SchemaVersion int    `json:"schema_version"`
		Verdict       string `json:"verdict"`
		Arms          map[string]struct {
			Accounting struct{ Offered, Completed, Good int64 }
			GoodputRPS float64 `json:"goodput_rps"`
		} `json:"arms"`
		Inputs []struct{ Path, SHA256 string }
	}
	if err := json.Unmarshal([]byte(runs[0]), &r); err != nil {
		t.Fatal(err)
	}
	if r.SchemaVersion != 1 || strings.ToUpper(r.Verdict) != verdict[1] {
		t.Errorf("schema %d verdict %q", r.SchemaVersion, r.Verdict)
	}
	bl := r.Arms["baseline"]
	// 14 of the 200 completions stopped after 1 output token (output_lens
	// in the file): not good under chat's slo.min_output_tokens of 2
	if bl.Accounting.Offered != 200 || bl.Accounting.Completed != 200 || bl.Accounting.Good != 186 {
		t.Errorf("baseline accounting %+v, want 200/200/186", bl.Accounting)
	}
	// goodput = good / run duration (78.87844001800022 s in the file)
	if got, want := bl.GoodputRPS, 186/78.87844001800022; got < want*(1-1e-12) || got > want*(1+1e-12) {
		t.Errorf("baseline goodput %v, want %v", got, want)
	}
	if len(r.Inputs) != 2 || len(r.Inputs[0].SHA256) != 64 {
		t.Errorf("inputs %+v", r.Inputs)
	}
}

func TestJudgeOutFileAndFailOnInconclusive(t *testing.T) {
	b, c := vllmPair(t)
	out := filepath.Join(t.TempDir(), "report.json")
	code, stdout, _ := runCLI(t, nil, "judge", "--baseline", b, "--canary", c, "--format", "json", "--out", out, "--fail-on-inconclusive")
	if code != ExitFail {
		t.Errorf("exit %d, want 1 (inconclusive turned into fail)", code)
	}
	if stdout != "" {
		t.Errorf("stdout should be empty with --out, got %q", stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil || !json.Valid(data) {
		t.Fatalf("report file: %v", err)
	}
}

// TestMultiFileArms gives each arm two files after one flag.
func TestMultiFileArms(t *testing.T) {
	d := t.TempDir()
	b1 := writeFile(t, d, "b1.jsonl", goodLogV(200, 0))
	b2 := writeFile(t, d, "b2.jsonl", goodLogV(200, 1))
	c1 := writeFile(t, d, "c1.jsonl", goodLogV(200, 2))
	c2 := writeFile(t, d, "c2.jsonl", goodLogV(200, 3))
	code, out, errs := runCLI(t, nil, "judge", "--baseline", b1, b2, "--canary", c1, c2, "--format", "json")
	if code == ExitError || code == ExitUsage {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, `"offered": 400`) {
		t.Errorf("each arm should hold 400 requests from two files")
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// goodLog is a valid native request log with enough requests to judge.
func goodLog(n int) string { return goodLogV(n, 0) }

// goodLogV is goodLog with every TTFT shifted by v ms: another arm's data
// of the same shape (an arm identical to the other is refused).
func goodLogV(n, v int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"ts": %d.%03d, "status": "ok", "ttft_s": 0.%03d, "tpot_s": 0.03, "output_tokens": 100}`+"\n", 1700000000+i/10, (i%10)*100, 100+(i+v)%400)
	}
	return b.String()
}

// seqLines writes n lines from a format taking the line's index.
func seqLines(format string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, format+"\n", i)
	}
	return b.String()
}

// TestBadInputs is the catalog of invalid inputs: each must exit 4 (or 2
// for a usage error) naming the file and line, the policy key, or the fix —
// never 0.
func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.jsonl", goodLog(300))
	good2 := writeFile(t, dir, "good2.jsonl", goodLogV(300, 7))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(goodLog(300)))
	zw.Close()
	truncGz := writeFile(t, dir, "trunc.jsonl.gz", gz.String()[:gz.Len()/2])

	cases := []struct {
		name   string
		file   string // canary file content ("" = use args as given)
		fname  string
		policy string // policy file content
		args   []string
		code   int
		want   []string
	}{
		{name: "truncated JSON line", fname: "c.jsonl", file: goodLog(5) + `{"ts": 1700000100, "status": "ok", "ttft_s": 0.`, want: []string{"c.jsonl:6"}},
		{name: "wrong type", fname: "c.jsonl", file: goodLog(3) + `{"ts": 1700000100, "status": "ok", "ttft_s": "fast"}` + "\n", want: []string{"c.jsonl:4", "ttft_s"}},
		{name: "negative latency", fname: "c.jsonl", file: goodLog(2) + `{"ts": 1700000100, "status": "ok", "ttft_s": -0.2}` + "\n", want: []string{"c.jsonl:3", "ttft_s"}},
		{name: "NaN latency", fname: "c.jsonl", file: `{"ts": 1700000100, "status": "ok", "ttft_s": NaN}` + "\n", want: []string{"c.jsonl:1"}},
		{name: "empty file", fname: "c.jsonl", file: "", want: []string{"c.jsonl", "empty"}},
		{name: "unknown status", fname: "c.jsonl", file: goodLog(7) + `{"ts": 1700000100, "status": "maybe", "ttft_s": 0.1}` + "\n", want: []string{"c.jsonl:8", "status"}},
		{name: "missing ts", fname: "c.jsonl", file: `{"status": "ok", "ttft_s": 0.1}` + "\n" + goodLog(3), want: []string{"c.jsonl"}},
		{name: "ok without ttft", fname: "c.jsonl", file: goodLog(4) + `{"ts": 1700000100, "status": "ok"}` + "\n", want: []string{"c.jsonl:5", "ttft_s"}},
		{name: "CSV wrong column count", fname: "c.csv", file: "ts,status,ttft_s\n1700000000,ok,0.1\n1700000001,ok\n", want: []string{"c.csv:3"}},
		{name: "CSV header only", fname: "c.csv", file: "ts,status,ttft_s\n", want: []string{"c.csv"}},
		{name: "truncated gzip", args: []string{"--canary", truncGz}, want: []string{"trunc.jsonl.gz"}},
		{name: "unrecognised format", fname: "c.txt", file: "hello world\n", want: []string{"c.txt", "--input-format"}},
		{name: "vLLM arrays of different lengths", fname: "c.json", file: `{"date": "x", "backend": "vllm", "duration": 1.0, "completed": 2, "input_lens": [1, 2], "output_lens": [3], "ttfts": [0.1, 0.2], "itls": [[], []], "errors": ["", ""]}`, want: []string{"c.json"}},
		{name: "vLLM summary only", fname: "c.json", file: `{"date": "x", "backend": "vllm", "duration": 1.0, "completed": 2, "mean_ttft_ms": 100.0}`, want: []string{"c.json", "--save-detailed"}},
		{name: "missing file", args: []string{"--canary", filepath.Join(dir, "nope.jsonl")}, want: []string{"canary input " + filepath.Join(dir, "nope.jsonl") + ": no such file or directory", "give a request log"}},
		{name: "policy unknown key", fname: "c.jsonl", file: goodLog(300), policy: "name: p\nslo: {ttft: 1s}\ngates:\n  - {metric: slo_attainment, margin: 1pp, gaurdrail: true}\n", want: []string{"p.yaml:4:43", "gaurdrail"}},
		{name: "policy bad duration", fname: "c.jsonl", file: goodLog(300), policy: "name: p\nslo: {ttft: 1 second}\ngates:\n  - {metric: slo_attainment, margin: 1pp}\n", want: []string{"p.yaml:2:13", "duration"}},
		{name: "unknown built-in policy", args: []string{"--policy", "chatt"}, want: []string{"chatt", "built-ins"}},
		{name: "unknown input format", args: []string{"--input-format", "csvx"}, want: []string{"csvx"}},
		{name: "no canary flag", args: []string{"--canary="}, code: ExitUsage, want: []string{"canary"}},
		{name: "bad output format", args: []string{"--format", "yaml"}, code: ExitUsage, want: []string{"--format"}},
		{name: "unknown flag", args: []string{"--canary", good, "--colour"}, code: ExitUsage, want: []string{"unknown flag"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			args := []string{"judge", "--baseline", good}
			hasCanary := false
			for _, a := range tc.args {
				hasCanary = hasCanary || strings.HasPrefix(a, "--canary")
			}
			if tc.fname != "" {
				args = append(args, "--canary", writeFile(t, d, tc.fname, tc.file))
			} else if !hasCanary {
				args = append(args, "--canary", good2)
			}
			if tc.policy != "" {
				args = append(args, "--policy", writeFile(t, d, "p.yaml", tc.policy))
			}
			args = append(args, tc.args...)
			if tc.name == "no canary flag" {
				args = []string{"judge", "--baseline", good}
			}
			code, out, errs := runCLI(t, nil, args...)
			want := tc.code
			if want == 0 {
				want = ExitError
			}
			if code != want {
				t.Errorf("exit %d, want %d; stderr %q", code, want, errs)
			}
			if out != "" {
				t.Errorf("nothing may be written to stdout on error, got %q", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
		})
	}
}

// TestInsufficientData: valid but tiny inputs are inconclusive (exit 3), never pass.
func TestInsufficientData(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(12))
	c := writeFile(t, d, "c.jsonl", goodLogV(12, 5))
	code, out, errs := runCLI(t, nil, "judge", "--baseline", b, "--canary", c)
	if code != ExitInconclusive {
		t.Errorf("exit %d, want 3; %s %s", code, out, errs)
	}
}

func TestNoColor(t *testing.T) {
	b, c := vllmPair(t)
	// the streams are buffers, not terminals: never colour
	_, out, _ := runCLI(t, map[string]string{}, "judge", "--baseline", b, "--canary", c)
	if strings.Contains(out, "\x1b[") {
		t.Error("colour escapes written to a non-terminal")
	}
}

func TestVersionAndPolicyCommands(t *testing.T) {
	code, out, _ := runCLI(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(out, "goodput ") {
		t.Errorf("--version: %d %q", code, out)
	}
	code, out, _ = runCLI(t, nil, "policy", "list")
	if code != 0 || !strings.Contains(out, "chat") || !strings.Contains(out, "batch") {
		t.Errorf("policy list: %d %q", code, out)
	}
	code, out, _ = runCLI(t, nil, "policy", "show", "chat")
	if code != 0 || !strings.Contains(out, "name: chat") {
		t.Errorf("policy show: %d %q", code, out)
	}
	code, _, errs := runCLI(t, nil, "policy", "show", "nosuch")
	if code != ExitError || !strings.Contains(errs, "nosuch") {
		t.Errorf("policy show nosuch: %d %q", code, errs)
	}
}

func TestExpandMultiValueFlags(t *testing.T) {
	got := expandMultiValueFlags([]string{"judge", "--baseline", "a", "b", "--policy", "chat", "--canary", "c", "--", "x"}, "--baseline", "--canary")
	want := []string{"judge", "--baseline", "a", "--baseline", "b", "--policy", "chat", "--canary", "c", "--", "x"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %q", got)
	}
}

// TestOutToDevice writes the report to a non-regular file in place: an
// atomic rename over a device would replace the device.
func TestOutToDevice(t *testing.T) {
	b, c := vllmPair(t)
	code, _, errs := runCLI(t, nil, "judge", "--baseline", b, "--canary", c, "--format", "json", "--out", os.DevNull)
	if code != ExitInconclusive {
		t.Fatalf("exit %d: %s", code, errs)
	}
	st, err := os.Stat(os.DevNull)
	if err != nil || st.Mode().IsRegular() {
		t.Fatalf("%s is no longer a device: %v %v", os.DevNull, st.Mode(), err)
	}
}

func TestJudgeCostFlag(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(300))
	c := writeFile(t, d, "c.jsonl", goodLogV(300, 3))
	bad := writeFile(t, d, "cost.csv", "start,end,arm,accelerator_usd\n1700000000,1700000060,baseline,-3\n")
	code, out, errs := runCLI(t, nil, "judge", "--baseline", b, "--canary", c, "--cost", bad)
	if code != ExitError || out != "" || !strings.Contains(errs, "cost.csv:2") {
		t.Errorf("bad cost file: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	good := writeFile(t, d, "cost2.csv", "start,end,arm,accelerator_usd,host_usd,network_usd,idle_reserve_usd\n"+
		"1700000000,1700000060,baseline,1,0,0,0\n1700000000,1700000060,canary,1,0,0,0\n")
	code, out, errs = runCLI(t, nil, "judge", "--baseline", b, "--canary", c, "--cost", good, "--format", "json")
	if code == ExitError || code == ExitUsage {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, `"per_good_request_usd"`) || !strings.Contains(out, `"format": "cost"`) {
		t.Errorf("report lacks the cost breakdown or the cost input")
	}
}

// TestTextShowsNaiveAndAdjusted: the text report prints, for a gate that
// normalization changed, the naive and the adjusted comparison side by side.
func TestTextShowsNaiveAndAdjusted(t *testing.T) {
	code, out, errs := runCLI(t, nil, "judge", "--baseline", filepath.Join("..", "..", "testdata", "example", "baseline.jsonl"),
		"--canary", filepath.Join("..", "..", "testdata", "example", "canary.jsonl"))
	if code != ExitPass {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"ttft_p99: naive -5.3%", "→ mix-weighted -4.8%", "measured 254.0ms vs 240.5ms; tested 254.0ms vs 241.9ms", "mix: standardized to the baseline mix", "load: offered load per replica-second"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
}

// TestComparatorJudges: --judge kayenta|threshold run the comparator
// judges on the same inputs and say so in the report.
func TestComparatorJudges(t *testing.T) {
	b := filepath.Join("..", "..", "testdata", "example", "baseline.jsonl")
	c := filepath.Join("..", "..", "testdata", "example", "canary.jsonl")
	for _, j := range []string{"kayenta", "threshold"} {
		code, out, errs := runCLI(t, nil, "judge", "--judge", j, "--baseline", b, "--canary", c, "--format", "json")
		if code == ExitError || code == ExitUsage {
			t.Fatalf("%s: exit %d: %s", j, code, errs)
		}
		if !strings.Contains(out, `"judge": "`+j+`"`) {
			t.Errorf("%s: the report does not name its judge", j)
		}
		_, text, _ := runCLI(t, nil, "judge", "--judge", j, "--baseline", b, "--canary", c)
		if !strings.Contains(strings.SplitN(text, "\n", 2)[0], j+"-style comparator judge") {
			t.Errorf("%s: the verdict line does not say which judge: %q", j, strings.SplitN(text, "\n", 2)[0])
		}
	}
	if code, _, _ := runCLI(t, nil, "judge", "--judge", "vibes", "--baseline", b, "--canary", c); code != ExitUsage {
		t.Errorf("unknown judge: exit %d, want 2", code)
	}
}
