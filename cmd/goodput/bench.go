package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/sim"
)

// benchOptions are the flags of `goodput bench`.
type benchOptions struct {
	Records []int
	// Window, when > 0, is the generated run's length: arrivals come at
	// Records/Window per second, so every size spans the same buckets.
	// 0: 500 arrivals per second, the run growing with the records.
	Window time.Duration
	// ExactMax and ScriptMax skip the exact judge and the script above
	// that many records per arm (0: never).
	ExactMax, ScriptMax int
	Dir                 string
	Keep                bool
	Runs                int
	Script              string
	Python              string
	Out                 string
	// Goodput is the goodput binary timed as `goodput judge` (default: this
	// executable).
	Goodput string
	// now is the clock the timings read (time.Now in the command).
	now func() time.Time
}

func (a *app) newBenchCmd() *cobra.Command {
	o := &benchOptions{now: time.Now}
	cmd := &cobra.Command{
		Use:   "bench [--records N[,N…]] [--dir DIR] [--keep]",
		Short: "Time goodput judge against wc -l and a pandas + scipy script on generated request logs",
		Long: `Generate N native request-log records per arm (deterministic, realistic
fields), then time, in one invocation and on the same files:

  goodput judge --stream  this binary as a subprocess, streaming aggregates
  goodput judge --exact   the same on the exact (per-request) path
  wc -l                   the floor: reading both files once
  pandas + scipy          the reference script (scripts/reference_judge.py)
                          computing the same goodput, attainment and
                          Mann-Whitney diagnostic

each --runs times (interleaved; the median is reported) with its peak RSS,
for every size given to --records. Targets for the streaming judge: ≥ 10×
faster than the script, within 5× of wc -l, peak RSS ≤ 500 MB at every size.
When a target is missed, the streaming judge is profiled in-process and the
top of 'go tool pprof -top' is printed to say where the time goes. The
script's goodput and attainment are checked against the exact judge's
report, its counts and attainment against the streaming judge's. Progress
goes to stderr; the Markdown result to stdout (and --out).`,
		Example: `  goodput bench                         # 5,000,000 records per arm
  goodput bench --records 200000 --keep --dir /tmp/bench
  goodput bench --records 1000000,5000000,10000000 --window 1h --exact-max 5000000 --runs 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runBench(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.IntSliceVar(&o.Records, "records", []int{5_000_000}, "records per arm; several sizes comma-separated (e.g. 1000000,5000000,10000000) are run one after another")
	f.DurationVar(&o.Window, "window", 0, "length of the generated run (e.g. 1h: every size spans the same buckets, the rate growing with the records); 0 = 500 arrivals per second")
	f.IntVar(&o.ExactMax, "exact-max", 0, "skip the exact judge above this many records per arm (0: never), e.g. where it would need more memory than the machine has")
	f.IntVar(&o.ScriptMax, "script-max", 0, "skip the pandas + scipy script above this many records per arm (0: never)")
	f.StringVar(&o.Dir, "dir", "", "directory for the generated files (default: a new temporary directory)")
	f.BoolVar(&o.Keep, "keep", false, "keep the generated files (a temporary directory is removed otherwise)")
	f.IntVar(&o.Runs, "runs", 3, "timed runs of each tool; the median is reported")
	f.StringVar(&o.Script, "script", filepath.Join("scripts", "reference_judge.py"), "the pandas + scipy reference script")
	f.StringVar(&o.Python, "python", "/usr/bin/python3", "Python interpreter with pandas and scipy")
	f.StringVarP(&o.Out, "out", "o", "", "also write the Markdown result to FILE (written atomically)")
	f.StringVar(&o.Goodput, "goodput", "", "goodput binary to time (default: this executable)")
	_ = f.MarkHidden("goodput")
	return cmd
}

// benchArm returns the generated file of an arm in dir.
func benchArm(dir string, arm sources.Arm) string { return filepath.Join(dir, string(arm)+".jsonl") }

// writeBenchLogs writes n records per arm into dir as native JSONL, both
// arms at once, in chunks so memory stays small.
func writeBenchLogs(ctx context.Context, dir string, n int) error {
	return writeBenchLogsAt(ctx, dir, n, 500)
}

// writeBenchLogsAt is writeBenchLogs at rate arrivals per second.
func writeBenchLogsAt(ctx context.Context, dir string, n int, rate float64) error {
	const chunk = 1 << 16
	t0 := float64(sim.DefaultStart().Unix())
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for k, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = func() error {
				f, err := os.Create(benchArm(dir, arm))
				if err != nil {
					return err
				}
				bw := bufio.NewWriterSize(f, 1<<20)
				buf := make([]sources.Request, chunk)
				t := t0
				for first := 0; first < n; first += chunk {
					if err := ctx.Err(); err != nil {
						f.Close()
						return err
					}
					m := min(chunk, n-first)
					t = sim.BenchRequests(buf[:m], arm, first, t, rate)
					if err := sim.WriteRequestLog(bw, buf[:m]); err != nil {
						f.Close()
						return err
					}
				}
				if err := bw.Flush(); err != nil {
					f.Close()
					return err
				}
				return f.Close()
			}()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// benchTool is one timed command.
type benchTool struct {
	name, desc string
	argv       []string
	okCodes    []int // exit codes that mean success
	walls      []time.Duration
	rss        []int64         // peak RSS per run, KiB
	cpu        []time.Duration // user + system CPU time per run
	stdout     []byte          // of the last run
	skipped    string          // why it was not run
}

func (t *benchTool) median() time.Duration { return medianDuration(t.walls) }

// medianDuration is the median of ds (the mean of the middle two for an
// even count); 0 when empty.
func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	w := slices.Clone(ds)
	slices.Sort(w)
	if len(w)%2 == 1 {
		return w[len(w)/2]
	}
	return (w[len(w)/2-1] + w[len(w)/2]) / 2
}

func (t *benchTool) peakRSS() int64 {
	if len(t.rss) == 0 {
		return 0
	}
	return slices.Max(t.rss)
}

// timeTool runs t once, recording wall time and peak RSS.
func timeTool(ctx context.Context, t *benchTool, now func() time.Time) error {
	cmd := exec.CommandContext(ctx, t.argv[0], t.argv[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := now()
	err := cmd.Run()
	wall := now().Sub(start)
	if cmd.ProcessState == nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	code := cmd.ProcessState.ExitCode()
	if !slices.Contains(t.okCodes, code) {
		return fmt.Errorf("%s exited %d: %s", strings.Join(t.argv, " "), code, strings.TrimSpace(lastLines(errb.String(), 5)))
	}
	t.walls = append(t.walls, wall)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		t.rss = append(t.rss, int64(ru.Maxrss)) // KiB on Linux
	}
	t.cpu = append(t.cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	t.stdout = out.Bytes()
	return nil
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

func (a *app) runBench(ctx context.Context, o *benchOptions) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.now == nil {
		o.now = time.Now
	}
	if len(o.Records) == 0 {
		return usageError("--records: give at least one size")
	}
	for _, n := range o.Records {
		if n < 1 {
			return usageError("--records %d: want at least 1", n)
		}
	}
	if o.Runs < 1 {
		return usageError("--runs %d: want at least 1", o.Runs)
	}
	if o.Window < 0 {
		return usageError("--window %v: want a positive length, or 0", o.Window)
	}
	exe := o.Goodput
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return inputError(fmt.Errorf("cannot find this executable to time goodput judge: %w", err))
		}
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "goodput-bench-"); err != nil {
			return inputError(err)
		}
		if !o.Keep {
			defer os.RemoveAll(dir)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return inputError(err)
	}
	progress := a.io.ErrOut
	pyMissing := pythonMissing(ctx, o)
	if pyMissing != "" {
		fmt.Fprintf(progress, "bench: skipping the pandas + scipy script: %s\n", pyMissing)
	}
	var results []benchSize
	for _, n := range o.Records {
		sub := filepath.Join(dir, fmt.Sprint(n))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return inputError(err)
		}
		rate := 500.0
		if o.Window > 0 {
			rate = float64(n) / o.Window.Seconds()
		}
		fmt.Fprintf(progress, "bench: writing %d records per arm (%.0f arrivals/s) into %s…\n", n, rate, sub)
		start := o.now()
		if err := writeBenchLogsAt(ctx, sub, n, rate); err != nil {
			return inputError(fmt.Errorf("writing the request logs: %w", err))
		}
		b, c := benchArm(sub, sources.Baseline), benchArm(sub, sources.Canary)
		var size int64
		for _, p := range []string{b, c} {
			if st, err := os.Stat(p); err == nil {
				size += st.Size()
			}
		}
		fmt.Fprintf(progress, "bench: wrote %d MB in %.1fs\n", size>>20, o.now().Sub(start).Seconds())
		streamReport, exactReport := filepath.Join(sub, "report-stream.json"), filepath.Join(sub, "report.json")
		tools := []*benchTool{
			{name: "goodput judge --stream", desc: "streaming aggregates (subprocess)", okCodes: []int{ExitPass, ExitFail, ExitInconclusive},
				argv: []string{exe, "judge", "--stream", "--baseline", b, "--canary", c, "--format", "json", "--out", streamReport}},
			{name: "goodput judge --exact", desc: "exact, every request in memory (subprocess)", okCodes: []int{ExitPass, ExitFail, ExitInconclusive},
				argv: []string{exe, "judge", "--exact", "--baseline", b, "--canary", c, "--format", "json", "--out", exactReport}},
			{name: "wc -l", desc: "reads both files once (the floor)", okCodes: []int{0}, argv: []string{"wc", "-l", b, c}},
			{name: "pandas + scipy", desc: "scripts/reference\\_judge.py", okCodes: []int{0}, argv: []string{o.Python, o.Script, b, c}},
		}
		if o.ExactMax > 0 && n > o.ExactMax {
			tools[1].skipped = fmt.Sprintf("above --exact-max %d: every request in memory (~440 B each)", o.ExactMax)
		}
		if pyMissing != "" {
			tools[3].skipped = pyMissing
		} else if o.ScriptMax > 0 && n > o.ScriptMax {
			tools[3].skipped = fmt.Sprintf("above --script-max %d", o.ScriptMax)
		}
		for run := 1; run <= o.Runs; run++ {
			for _, t := range tools {
				if t.skipped != "" {
					continue
				}
				fmt.Fprintf(progress, "bench: %d records, run %d/%d: %s…\n", n, run, o.Runs, t.name)
				if err := timeTool(ctx, t, o.now); err != nil {
					return inputError(err)
				}
				fmt.Fprintf(progress, "bench: %d records, run %d/%d: %s %.2fs wall, %.2fs CPU, peak RSS %d MiB\n", n, run, o.Runs, t.name,
					t.walls[len(t.walls)-1].Seconds(), t.cpu[len(t.cpu)-1].Seconds(), t.peakRSS()>>10)
			}
		}
		res := benchSize{records: n, rate: rate, size: size, tools: tools}
		if tools[1].skipped == "" {
			res.agree = checkAgreement(exactReport, tools[3], true)
		} else {
			res.agree = "not checked (the exact judge did not run)"
		}
		res.agreeStream = checkAgreement(streamReport, tools[3], false)
		st, wc, py := tools[0], tools[2], tools[3]
		missed := py.skipped == "" && float64(py.median()) < 10*float64(st.median())
		missed = missed || float64(st.median()) > 5*float64(wc.median()) || st.peakRSS() > benchRSSTarget
		if missed && n == o.Records[len(o.Records)-1] {
			fmt.Fprintf(progress, "bench: a target was missed; profiling the streaming judge…\n")
			res.prof = a.profileJudge(ctx, exe, b, c, sub)
		}
		results = append(results, res)
		if !o.Keep {
			os.RemoveAll(sub)
		}
	}
	var buf bytes.Buffer
	writeBenchTable(&buf, o, results)
	if _, err := a.io.Out.Write(buf.Bytes()); err != nil {
		return err
	}
	if o.Out != "" {
		if err := writeFileAtomic(o.Out, buf.Bytes()); err != nil {
			return inputError(err)
		}
	}
	return nil
}

// benchRSSTarget is the streaming judge's peak-RSS target, KiB (500 MB).
const benchRSSTarget = 500_000_000 / 1024

// benchSize is one size's timings.
type benchSize struct {
	records            int
	rate               float64 // arrivals per second
	size               int64   // bytes of both files
	tools              []*benchTool
	agree, agreeStream string
	prof               string
}

// pythonMissing says why the reference script cannot run, or "".
func pythonMissing(ctx context.Context, o *benchOptions) string {
	if _, err := os.Stat(o.Script); err != nil {
		return fmt.Sprintf("script %s not found (run from the repository root or give --script)", o.Script)
	}
	cmd := exec.CommandContext(ctx, o.Python, "-c", "import pandas, scipy")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("%s cannot import pandas and scipy (install python3-pandas python3-scipy): %s", o.Python, strings.TrimSpace(lastLines(string(out), 1)))
	}
	return ""
}

// checkAgreement compares the script's offered and good counts and
// attainment of both arms with the judge's report (each to 1e-9
// relative), and its goodput when withGoodput is set. The streaming
// judge's goodput is over whole buckets, not the first-to-last arrival
// span, so its check leaves goodput out.
func checkAgreement(reportPath string, py *benchTool, withGoodput bool) string {
	if py.skipped != "" || len(py.stdout) == 0 {
		return "not checked (the script did not run)"
	}
	data, err := os.ReadFile(reportPath)
	if err != nil {
		return "not checked: " + err.Error()
	}
	var rep analysis.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return "not checked: the judge's report: " + err.Error()
	}
	type arm struct {
		Offered       int64   `json:"offered"`
		Good          int64   `json:"good"`
		SLOAttainment float64 `json:"slo_attainment"`
		GoodputRPS    float64 `json:"goodput_rps"`
	}
	var ref struct{ Baseline, Canary arm }
	if err := json.Unmarshal(py.stdout, &ref); err != nil {
		return "not checked: the script's output: " + err.Error()
	}
	var diffs []string
	cmp := func(what string, x, y float64) {
		if math.Abs(x-y) > 1e-9*math.Max(math.Abs(x), math.Abs(y)) {
			diffs = append(diffs, fmt.Sprintf("%s %.10g vs %.10g", what, x, y))
		}
	}
	for _, p := range []struct {
		name string
		g    analysis.ArmSummary
		r    arm
	}{{"baseline", rep.Arms.Baseline, ref.Baseline}, {"canary", rep.Arms.Canary, ref.Canary}} {
		cmp(p.name+" offered", float64(p.g.Accounting.Offered), float64(p.r.Offered))
		cmp(p.name+" good", float64(p.g.Accounting.Good), float64(p.r.Good))
		cmp(p.name+" attainment", float64(p.g.SLOAttainment), p.r.SLOAttainment)
		if withGoodput {
			cmp(p.name+" goodput", float64(p.g.GoodputRPS), p.r.GoodputRPS)
		}
	}
	if len(diffs) > 0 {
		return "**disagree**: " + strings.Join(diffs, "; ")
	}
	what := "offered, good and attainment"
	if withGoodput {
		what = "offered, good, attainment and goodput"
	}
	return fmt.Sprintf("agree (%s of both arms; baseline attainment %.4f, canary %.4f)",
		what, float64(rep.Arms.Baseline.SLOAttainment), float64(rep.Arms.Canary.SLOAttainment))
}

// profileJudge runs the judge in-process under the CPU profiler on the same
// files and returns the top of `go tool pprof -top`, or why it could not.
func (a *app) profileJudge(ctx context.Context, exe, b, c, dir string) string {
	profPath := filepath.Join(dir, "judge.cpu.pprof")
	f, err := os.Create(profPath)
	if err != nil {
		return "profile not taken: " + err.Error()
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return "profile not taken: " + err.Error()
	}
	o := &judgeOptions{Baseline: []string{b}, Canary: []string{c}, Policy: policies.DefaultName, Seed: 1, Resamples: 2000, Format: "json", Stream: true}
	_, jerr := a.judgeFiles(ctx, o, io.Discard)
	pprof.StopCPUProfile()
	f.Close()
	if jerr != nil {
		return "profile not taken: the judge failed: " + jerr.Error()
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return fmt.Sprintf("CPU profile written to %s; 'go' is not on PATH, run: go tool pprof -top %s %s", profPath, exe, profPath)
	}
	var sb strings.Builder
	for _, view := range [][]string{{"-top", "-cum", "-nodecount=45"}, {"-top", "-nodecount=20"}} {
		args := append(append([]string{"tool", "pprof"}, view...), exe, profPath)
		out, err := exec.CommandContext(ctx, goTool, args...).Output()
		if err != nil {
			return "go tool pprof failed: " + err.Error()
		}
		fmt.Fprintf(&sb, "$ go tool pprof %s\n%s\n", strings.Join(view, " "), strings.TrimSpace(string(out)))
	}
	return sb.String()
}

func writeBenchTable(w io.Writer, o *benchOptions, results []benchSize) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	fmt.Fprintf(bw, "## Speed\n\n")
	sizes := make([]string, len(o.Records))
	for i, n := range o.Records {
		sizes[i] = fmt.Sprint(n)
	}
	cmdline := fmt.Sprintf("goodput bench --records %s --runs %d", strings.Join(sizes, ","), o.Runs)
	if o.Window > 0 {
		cmdline += " --window " + o.Window.String()
	}
	if o.ExactMax > 0 {
		cmdline += fmt.Sprintf(" --exact-max %d", o.ExactMax)
	}
	if o.ScriptMax > 0 {
		cmdline += fmt.Sprintf(" --script-max %d", o.ScriptMax)
	}
	if o.Script != filepath.Join("scripts", "reference_judge.py") {
		cmdline += " --script " + strings.ReplaceAll(o.Script, "`", "'")
	}
	fmt.Fprintf(bw, "Command: `%s`\n\n", cmdline)
	fmt.Fprintf(bw, "Machine: %s; load average at the end: %s.\n\n", machineInfo(), loadAvg())
	fmt.Fprintf(bw, "Input: native JSONL request logs per arm (both files in the page cache). "+
		"Median wall time of %d interleaved runs, and median CPU time (user + system, all threads); "+
		"peak RSS is the largest of the runs (getrusage; on Linux it includes the forked image of this process before exec, "+
		"so it never reads below this process's own RSS). On a busy machine wall times stretch; CPU times much less.\n\n", o.Runs)
	fmt.Fprintf(bw, "| records per arm | streaming judge wall | CPU | peak RSS | script ÷ stream | stream ÷ `wc -l` | exact ÷ stream | exact peak RSS |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	ratio := func(x, y *benchTool) string {
		if x.skipped != "" || y.skipped != "" || len(x.walls) == 0 || len(y.walls) == 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f×", x.median().Seconds()/y.median().Seconds())
	}
	for _, r := range results {
		st, ex, wc, py := r.tools[0], r.tools[1], r.tools[2], r.tools[3]
		exRSS := "skipped"
		if ex.skipped == "" {
			exRSS = fmt.Sprintf("%d MiB", ex.peakRSS()>>10)
		}
		fmt.Fprintf(bw, "| %d | %.3f s | %.3f s | %d MiB | %s | %s | %s | %s |\n", r.records, st.median().Seconds(), medianDuration(st.cpu).Seconds(),
			st.peakRSS()>>10, ratio(py, st), ratio(st, wc), ratio(ex, st), exRSS)
	}
	fmt.Fprintln(bw)
	for _, r := range results {
		st, wc, py := r.tools[0], r.tools[2], r.tools[3]
		fmt.Fprintf(bw, "### %d records per arm\n\n%d MB in all, %.0f arrivals per second per arm.\n\n", r.records, r.size>>20, r.rate)
		fmt.Fprintf(bw, "| tool | what | median wall | wall runs | median CPU | peak RSS | wall ÷ stream | CPU ÷ stream |\n|---|---|---:|---|---:|---:|---:|---:|\n")
		jm, jc := st.median().Seconds(), medianDuration(st.cpu).Seconds()
		for _, t := range r.tools {
			if t.skipped != "" {
				fmt.Fprintf(bw, "| %s | %s | skipped: %s | — | — | — | — | — |\n", t.name, t.desc, markdownCell(t.skipped))
				continue
			}
			runs := make([]string, len(t.walls))
			for i, d := range t.walls {
				runs[i] = fmt.Sprintf("%.3f", d.Seconds())
			}
			fmt.Fprintf(bw, "| %s | %s | %.3f s | %s | %.3f s | %d MiB | %.2f× | %.2f× |\n", t.name, t.desc, t.median().Seconds(),
				strings.Join(runs, ", "), medianDuration(t.cpu).Seconds(), t.peakRSS()>>10, t.median().Seconds()/jm,
				medianDuration(t.cpu).Seconds()/jc)
		}
		fmt.Fprintln(bw)
		fmt.Fprintf(bw, "Targets (streaming judge):\n\n")
		if py.skipped == "" {
			x := py.median().Seconds() / jm
			fmt.Fprintf(bw, "- ≥ 10× faster than pandas + scipy: %.1f× by wall time (%.1f× by CPU time) — %s\n", x,
				medianDuration(py.cpu).Seconds()/jc, metWord(x >= 10))
		} else {
			fmt.Fprintf(bw, "- ≥ 10× faster than pandas + scipy: not measured (%s)\n", markdownCell(py.skipped))
		}
		x := jm / wc.median().Seconds()
		fmt.Fprintf(bw, "- within 5× of `wc -l`: %.1f× by wall time (%.1f× by CPU time) — %s\n", x,
			jc/medianDuration(wc.cpu).Seconds(), metWord(x <= 5))
		fmt.Fprintf(bw, "- peak RSS ≤ 500 MB: %d MiB — %s\n", st.peakRSS()>>10, metWord(st.peakRSS() <= benchRSSTarget))
		fmt.Fprintf(bw, "- the script vs the exact judge's report: %s\n", strings.ReplaceAll(r.agree, "\n", " "))
		fmt.Fprintf(bw, "- the script vs the streaming judge's report: %s\n", strings.ReplaceAll(r.agreeStream, "\n", " "))
		if r.prof != "" {
			fmt.Fprintf(bw, "\nCPU profile of the streaming judge on the same files (in-process; by cumulative time, then by own time):\n\n```\n%s\n```\n", strings.TrimSpace(r.prof))
		}
		fmt.Fprintln(bw)
	}
}

// loadAvg is the 1-, 5- and 15-minute load average from /proc/loadavg, or
// "unknown": a busy machine slows every tool alike but widens the spread.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func metWord(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}
