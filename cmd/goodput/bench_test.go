package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/requestlog"
)

func TestBenchLogs(t *testing.T) {
	ctx := context.Background()
	d1, d2 := t.TempDir(), t.TempDir()
	const n = 70_000 // more than one chunk of 65,536
	if err := writeBenchLogs(ctx, d1, n); err != nil {
		t.Fatal(err)
	}
	if err := writeBenchLogs(ctx, d2, n); err != nil {
		t.Fatal(err)
	}
	medians := map[sources.Arm]float64{}
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		a, _ := os.ReadFile(benchArm(d1, arm))
		b, _ := os.ReadFile(benchArm(d2, arm))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s: the generated file is empty or differs between runs", arm)
		}
		ds, err := requestlog.Open(ctx, benchArm(d1, arm), arm)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds.Requests) != n {
			t.Fatalf("%s: %d records, want %d", arm, len(ds.Requests), n)
		}
		status := map[sources.Status]int{}
		var ttft []float64
		long, retries := 0, 0
		prev := 0.0
		for i, r := range ds.Requests {
			status[r.Status]++
			if r.Time < prev {
				t.Fatalf("%s: arrival %d goes back in time", arm, i)
			}
			prev = r.Time
			if r.Status == sources.StatusOK {
				ttft = append(ttft, r.TTFT)
				if r.OutputTokens > 1 && (!sources.Known(r.TPOT) || !sources.Known(r.E2E)) {
					t.Fatalf("%s: completed record %d lacks TPOT or E2E", arm, i)
				}
			}
			if r.PromptTokens >= 8192 {
				long++
			}
			if r.Attempt > 1 {
				retries++
			}
		}
		for _, s := range []sources.Status{sources.StatusOK, sources.StatusError, sources.StatusTimeout, sources.StatusCanceled, sources.StatusRejected} {
			if status[s] == 0 {
				t.Errorf("%s: no %s records", arm, s)
			}
		}
		if ok := float64(status[sources.StatusOK]) / n; ok < 0.98 || ok > 0.995 {
			t.Errorf("%s: ok share %.4f", arm, ok)
		}
		if f := float64(long) / n; f < 0.04 || f > 0.06 {
			t.Errorf("%s: long-prompt share %.4f", arm, f)
		}
		if retries == 0 {
			t.Errorf("%s: no retries", arm)
		}
		slices.Sort(ttft)
		medians[arm] = ttft[len(ttft)/2]
		// 500 arrivals per second
		if span := ds.Requests[n-1].Time - ds.Requests[0].Time; span < 130 || span > 150 {
			t.Errorf("%s: %d arrivals span %.1fs, want about 140s", arm, n, span)
		}
	}
	if r := medians[sources.Canary] / medians[sources.Baseline]; r < 1.01 || r > 1.05 {
		t.Errorf("canary/baseline median TTFT %.4f, want about 1.03", r)
	}
}

func TestMedianDuration(t *testing.T) {
	s := time.Second
	tests := []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{3 * s}, 3 * s},
		{[]time.Duration{5 * s, 1 * s, 3 * s}, 3 * s},
		{[]time.Duration{4 * s, 1 * s, 2 * s, 9 * s}, 3 * s},
	}
	for _, tc := range tests {
		if got := medianDuration(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--records", "0"}, {"--runs", "0"}} {
		var out, errb bytes.Buffer
		a := &app{io: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, env: func(string) string { return "" }}
		cmd := a.newBenchCmd()
		cmd.SetArgs(args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.ExecuteContext(context.Background())
		var ee *exitError
		if !asExit(err, &ee) || ee.Code != ExitUsage {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestBenchEndToEnd times a real goodput binary, wc -l and the pandas +
// scipy script on 20,000 records per arm. It builds the binary and needs
// python3-pandas and python3-scipy, so it runs only with GOODPUT_BENCH=1.
func TestBenchEndToEnd(t *testing.T) {
	if os.Getenv("GOODPUT_BENCH") != "1" {
		t.Skip("set GOODPUT_BENCH=1 to run the bench end to end (builds goodput, needs python3-pandas and python3-scipy)")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import pandas, scipy").Run(); err != nil {
		t.Skip("python3-pandas or python3-scipy missing:", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "goodput")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var out, errb bytes.Buffer
	a := &app{io: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, env: func(string) string { return "" }}
	cmd := a.newBenchCmd()
	cmd.SetArgs([]string{"--records", "20000", "--runs", "1", "--dir", filepath.Join(dir, "data"),
		"--goodput", bin, "--script", filepath.Join("..", "..", "scripts", "reference_judge.py")})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	md := out.String()
	for _, want := range []string{"| goodput judge --stream |", "| goodput judge |", "| wc -l |", "| pandas + scipy |", "vs the exact judge's report: agree", "vs the streaming judge's report: agree", "Machine: "} {
		if !strings.Contains(md, want) {
			t.Errorf("output lacks %q:\n%s", want, md)
		}
	}
	if _, err := os.Stat(benchArm(filepath.Join(dir, "data"), sources.Baseline)); err == nil {
		t.Error("generated files kept without --keep")
	}
}
