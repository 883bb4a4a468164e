package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/sources/sim"
)

// simulateOptions are the flags of `goodput simulate`.
type simulateOptions struct {
	Scenario string
	Seed     uint64
	Duration time.Duration
	Out      string
	List     bool
}

func (a *app) newSimulateCmd() *cobra.Command {
	o := &simulateOptions{}
	cmd := &cobra.Command{
		Use:   "simulate --scenario NAME|FILE --out DIR [--seed N] [--duration D]",
		Short: "Simulate a baseline and a canary fleet and write their request logs, metrics and cost",
		Long: `Run the fleet simulator: a deterministic discrete-event simulation of an LLM
serving fleet (continuous batching, KV-block budget, prefix cache, warm-up,
replica failures, admission control, client timeouts and retries) with a
baseline and a canary arm side by side. The same scenario and seed give
byte-identical files.

It writes, into DIR:
  baseline.jsonl, canary.jsonl  native request logs, one offered request per line
  metrics.om                    per-replica vLLM V1 and DCGM metrics every scrape
                                interval, OpenMetrics for promtool tsdb create-blocks-from
  cost.csv                      cost per replica and interval (the judge's --cost format)
and prints a summary (request accounting, retry amplification, GPU
utilisation, tokens/s, goodput per minute). Files are written atomically.

A scenario is a built-in name (see --list) or a YAML file with the same keys
as the built-ins (unknown keys are errors).`,
		Example: `  goodput simulate --list
  goodput simulate --scenario seed-overload --out /tmp/overload
  goodput simulate --scenario steady --seed 7 --duration 30m --out runs/steady-7
  goodput judge --baseline runs/steady-7/baseline.jsonl --canary runs/steady-7/canary.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runSimulate(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Scenario, "scenario", "", "built-in scenario name or scenario YAML file")
	f.Uint64Var(&o.Seed, "seed", 1, "random seed; the same scenario and seed give identical output")
	f.DurationVar(&o.Duration, "duration", 0, "simulated window, e.g. 20m (default: the scenario's)")
	f.StringVarP(&o.Out, "out", "o", "", "directory to write the files into (created if missing)")
	f.BoolVar(&o.List, "list", false, "list the built-in scenarios and exit")
	return cmd
}

func (a *app) runSimulate(ctx context.Context, o *simulateOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.List {
		return listScenarios(a.io.Out)
	}
	if o.Scenario == "" {
		return usageError("--scenario is required (a built-in name or a YAML file; see --list)")
	}
	if o.Out == "" {
		return usageError("--out DIR is required")
	}
	if o.Duration < 0 {
		return usageError("--duration %v is negative", o.Duration)
	}
	sc, err := loadScenario(o.Scenario)
	if err != nil {
		return err
	}
	window := sc.Duration
	if o.Duration > 0 {
		window = o.Duration
	}
	fmt.Fprintf(a.io.ErrOut, "simulating %s (seed %d, %s window from %s)…\n",
		displayName(sc.Name), o.Seed, window, sc.Start.UTC().Format(time.RFC3339))
	prog := a.startProgress(fmt.Sprintf("simulating %s of %s", window, displayName(sc.Name)))
	res, err := sim.Run(ctx, sc, o.Seed, o.Duration)
	prog.Stop()
	if err != nil {
		return inputError(err)
	}
	fmt.Fprintf(a.io.ErrOut, "simulated %d baseline and %d canary requests\n", len(res.Baseline), len(res.Canary))
	outs := []simOutput{
		{"baseline.jsonl", func(w io.Writer) error { return sim.WriteRequestLog(w, res.Baseline) }},
		{"canary.jsonl", func(w io.Writer) error { return sim.WriteRequestLog(w, res.Canary) }},
		{"metrics.om", func(w io.Writer) error { return sim.WriteOpenMetrics(w, res.Metrics) }},
		{"cost.csv", func(w io.Writer) error { return sim.WriteCostCSV(w, res.Cost) }},
	}
	sizes, err := writeOutputsAtomic(ctx, o.Out, outs)
	if err != nil {
		return inputError(err)
	}
	for i, f := range outs {
		fmt.Fprintf(a.io.ErrOut, "wrote %s (%d bytes)\n", filepath.Join(o.Out, f.name), sizes[i])
	}
	if err := sim.WriteSummary(a.io.Out, res.Summary); err != nil {
		return inputError(err)
	}
	return nil
}

// displayName makes a scenario name safe to print on a terminal.
func displayName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
	if s == "" {
		return "(unnamed scenario)"
	}
	return s
}

func listScenarios(w io.Writer) error {
	names := sim.BuiltinNames()
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		sc, err := sim.Builtin(n)
		if err != nil {
			return inputError(err)
		}
		if _, err := fmt.Fprintf(w, "%-*s  %s\n", width, n, sc.Describe()); err != nil {
			return err
		}
	}
	return nil
}

// loadScenario resolves a built-in name or reads a scenario file.
func loadScenario(arg string) (sim.Scenario, error) {
	for _, n := range sim.BuiltinNames() {
		if n == arg {
			sc, err := sim.Builtin(n)
			if err != nil {
				return sim.Scenario{}, inputError(err)
			}
			return sc, nil
		}
	}
	data, err := os.ReadFile(arg)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return sim.Scenario{}, usageError("no built-in scenario or file named %q (built-in: %s)",
				arg, strings.Join(sim.BuiltinNames(), ", "))
		}
		return sim.Scenario{}, inputError(err)
	}
	sc, err := sim.ParseScenario(arg, data)
	if err != nil {
		return sim.Scenario{}, inputError(err)
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(arg), filepath.Ext(arg))
	}
	return sc, nil
}

// simOutput is one output file and the function that renders it.
type simOutput struct {
	name  string
	write func(io.Writer) error
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeOutputsAtomic renders every file into a temporary file in dir and
// renames them into place only when all were written, so an error (or a
// canceled ctx) leaves no half-written file and earlier versions intact.
// It returns the size of each file.
func writeOutputsAtomic(ctx context.Context, dir string, outs []simOutput) ([]int64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	temps := make([]string, 0, len(outs))
	sizes := make([]int64, 0, len(outs))
	cleanup := func() {
		for _, t := range temps {
			os.Remove(t)
		}
	}
	fail := func(name string, err error) ([]int64, error) {
		cleanup()
		return nil, fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	for _, o := range outs {
		if err := ctx.Err(); err != nil {
			return fail(o.name, err)
		}
		f, err := os.CreateTemp(dir, "."+o.name+".tmp*")
		if err != nil {
			return fail(o.name, err)
		}
		temps = append(temps, f.Name())
		bw := bufio.NewWriterSize(f, 1<<20)
		cw := &countingWriter{w: bw}
		werr := o.write(cw)
		ferr := bw.Flush()
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, ferr, serr, cerr); err != nil {
			return fail(o.name, err)
		}
		if err := os.Chmod(f.Name(), 0o644); err != nil {
			return fail(o.name, err)
		}
		sizes = append(sizes, cw.n)
	}
	for i, o := range outs {
		if err := os.Rename(temps[i], filepath.Join(dir, o.name)); err != nil {
			return fail(o.name, err)
		}
	}
	return sizes, nil
}
