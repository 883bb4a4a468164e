package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
)

// judgeWithOptions runs `goodput judge` on options as its flags would set
// them, o's unexported fields (streamAbove) included, and returns the exit
// code, stdout and stderr.
func judgeWithOptions(t *testing.T, o judgeOptions) (int, string, string) {
	t.Helper()
	if o.Policy == "" {
		o.Policy = policies.DefaultName
	}
	o.Format, o.Judge, o.Seed = "json", cmpOr(o.Judge, "goodput"), 1
	o.Resamples = 200
	var out, errb bytes.Buffer
	a := &app{io: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, env: func(string) string { return "" }}
	err := a.runJudge(context.Background(), &o)
	code := ExitPass
	if err != nil {
		var ee *exitError
		if !asExit(err, &ee) {
			t.Fatalf("runJudge: %v", err)
		}
		code = ee.Code
		if ee.Err != nil {
			errb.WriteString(ee.Err.Error())
		}
	}
	return code, out.String(), errb.String()
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// reportMethod reads measurement.method and method_reason from a JSON
// report.
func reportMethod(t *testing.T, out string) (method, reason string) {
	t.Helper()
	var r analysis.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%.400s", err, out)
	}
	return r.Measurement.Method, r.Measurement.MethodReason
}

// TestJudgePathChoice: request logs above the size threshold are judged
// from streaming aggregates, smaller ones with every request; --exact and
// --stream decide it outright; benchmark files, metrics beside the logs
// and the comparator judges keep every request whatever the size. Stderr
// names the path and why in one line, and the report records both.
func TestJudgePathChoice(t *testing.T) {
	ex := filepath.Join("..", "..", "testdata", "example")
	b, c := filepath.Join(ex, "baseline.jsonl"), filepath.Join(ex, "canary.jsonl")
	vb, vc := vllmPair(t)
	for _, tc := range []struct {
		name       string
		o          judgeOptions
		method     string
		reason     string // in the report's method_reason and on stderr
		stderrLine string
	}{
		{"small logs stay exact", judgeOptions{Baseline: []string{b}, Canary: []string{c}},
			analysis.MethodRequests, "the request logs hold 1.64 MiB, not above 256 MiB; --stream aggregates them instead", "judging with every request in memory: "},
		{"large logs stream", judgeOptions{Baseline: []string{b}, Canary: []string{c}, streamAbove: 1 << 20},
			analysis.MethodAggregate, "the request logs hold 1.64 MiB, above 1 MiB; --exact keeps every request instead", "judging from streaming aggregates in bounded memory: "},
		{"--exact keeps every request", judgeOptions{Baseline: []string{b}, Canary: []string{c}, streamAbove: 1, Exact: true},
			analysis.MethodRequests, "--exact given", "judging with every request in memory: "},
		{"--stream streams small logs", judgeOptions{Baseline: []string{b}, Canary: []string{c}, Stream: true},
			analysis.MethodAggregate, "--stream given", "judging from streaming aggregates in bounded memory: "},
		{"benchmark files stay exact", judgeOptions{Baseline: []string{vb}, Canary: []string{vc}, streamAbove: 1, Policy: "bench"},
			analysis.MethodRequests, "not every input is a request log (vllm-bench)", "judging with every request in memory: "},
		{"comparators stay exact", judgeOptions{Baseline: []string{b}, Canary: []string{c}, streamAbove: 1, Judge: "threshold"},
			analysis.MethodRequests, "--judge threshold needs every request", "judging with every request in memory: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := judgeWithOptions(t, tc.o)
			if code != ExitPass && code != ExitFail && code != ExitInconclusive {
				t.Fatalf("exit %d: %s", code, errs)
			}
			method, reason := reportMethod(t, out)
			if method != tc.method || !strings.Contains(reason, tc.reason) {
				t.Errorf("report: method %q, reason %q; want %q, reason containing %q", method, reason, tc.method, tc.reason)
			}
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if !strings.HasPrefix(lines[0], tc.stderrLine) || !strings.HasSuffix(lines[0], reason) {
				t.Errorf("stderr's first line %q: want %q and the report's reason %q", lines[0], tc.stderrLine, reason)
			}
		})
	}
}

// Small logs judged by default give the report --exact gives, apart from
// the reason: the default does not move a small run's verdict.
func TestJudgePathSmallIsExact(t *testing.T) {
	ex := filepath.Join("..", "..", "testdata", "example")
	b, c := filepath.Join(ex, "baseline.jsonl"), filepath.Join(ex, "canary.jsonl")
	code, def, errs := judgeWithOptions(t, judgeOptions{Baseline: []string{b}, Canary: []string{c}})
	xcode, exact, _ := judgeWithOptions(t, judgeOptions{Baseline: []string{b}, Canary: []string{c}, Exact: true})
	if code != xcode {
		t.Fatalf("exit %d by default, %d with --exact: %s", code, xcode, errs)
	}
	_, reason := reportMethod(t, def)
	_, xreason := reportMethod(t, exact)
	if strings.Replace(def, reason, xreason, 1) != exact {
		t.Error("the default's report differs from --exact's beyond the reason")
	}
}

// A gzip file counts its uncompressed length; a pipe's size is unknown,
// so it streams; --stream with --exact is a usage error.
func TestJudgePathSizes(t *testing.T) {
	d := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "example", "baseline.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	path := writeFile(t, d, "b.jsonl.gz", gz.String())
	in, err := openInput(context.Background(), path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	a := &app{io: &IOStreams{In: strings.NewReader("")}, env: func(string) string { return "" }}
	if got, known := inputBytes(in, int64(gz.Len())); got != int64(len(raw)) || !known || gz.Len() >= len(raw) {
		t.Errorf("gzip of %d bytes (%d compressed): counted %d (known %v)", len(raw), gz.Len(), got, known)
	}
	// a file cut short ends in deflate data, not its trailer: what the
	// last four bytes read as is no size (here above 1032 times the
	// file, deflate's largest expansion), so it is judged as a pipe is
	cut := gz.Bytes()[:gz.Len()/2]
	cut = append(cut[:len(cut)-4:len(cut)-4], 0xff, 0xff, 0xff, 0x7f)
	cutPath := writeFile(t, d, "cut.jsonl.gz", string(cut))
	p, err := a.chooseJudgePath(context.Background(), &judgeOptions{Baseline: []string{cutPath}, Canary: []string{path}, Judge: "goodput"})
	if err != nil || !p.stream || !strings.Contains(p.reason, "1 gzip input(s) do not record their uncompressed size") {
		t.Errorf("gzip cut short: %+v, %v; want the stream, its size unknown", p, err)
	}
	p, err = a.chooseJudgePath(context.Background(), &judgeOptions{Baseline: []string{path}, Canary: []string{stdinPath}, Judge: "goodput"})
	if err != nil || !p.stream || !strings.Contains(p.reason, "the size of 1 input(s) read from a pipe or standard input is not known") {
		t.Errorf("standard input: %+v, %v; want the stream, its size unknown", p, err)
	}
	p, err = a.chooseJudgePath(context.Background(), &judgeOptions{Baseline: []string{path}, Canary: []string{path}, Judge: "goodput", streamAbove: int64(2*len(raw) - 1)})
	if err != nil || !p.stream {
		t.Errorf("two gzip files of %d bytes uncompressed, threshold %d: %+v, %v; want the stream", len(raw), 2*len(raw)-1, p, err)
	}
	code, _, errs := runCLI(t, nil, "judge", "--stream", "--exact", "--baseline", path, "--canary", path)
	if code != ExitUsage || !strings.Contains(errs, "--stream and --exact") {
		t.Errorf("--stream --exact: exit %d, %s", code, errs)
	}
}
