package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/capacity"
	"github.com/goodput-dev/goodput/analysis/report"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/benchfile"
)

// capacityOptions are the flags of `goodput capacity`.
type capacityOptions struct {
	Baseline, Canary                 []string
	Policy                           string
	Target                           float64
	Format                           string
	Out                              string
	FailOnInconclusive               bool
	SaturationTolerance              float64
	BaselineReplicas, CanaryReplicas int
	BaselineGPUs, CanaryGPUs         int
	BaselineUSD, CanaryUSD           float64
	Simulate                         string
	Rates                            string
	SimWindow                        time.Duration
	Seed                             uint64
}

func (a *app) newCapacityCmd() *cobra.Command {
	o := &capacityOptions{}
	cmd := &cobra.Command{
		Use:   "capacity --baseline FILE|DIR… --canary FILE|DIR… [flags]",
		Short: "Compare two rate sweeps by their capacity at SLO",
		Long: `Compare the canary's rate sweep with the baseline's by capacity at SLO: the
highest request rate at which SLO attainment (good / offered requests) stays
at or above the target (default 99%; the policy's SLO, default "chat":
TTFT ≤ 1 s, TPOT ≤ 80 ms).

Each arm takes benchmark files, one or more points of a sweep each, or
directories holding a sweep (every file of it is read):
  inference-perf   stage_N_lifecycle_metrics.json (stage aggregates: attainment
                   bounded from the percentile lists) or
                   per_request_lifecycle_metrics.json (one point per stage)
  vllm-bench       one vllm bench serve --save-result file per request rate
  sglang-bench     bench_serving JSONL, one point per line (summary-only lines
                   without tail percentiles cannot bound attainment)
  guidellm         benchmarks.json, one point per benchmark
  llmperf          *_summary.json (at its achieved rate)

A point whose achieved rate falls short of the requested rate by more than
--saturation-tolerance is saturated and counts at its achieved rate. The
verdict compares canary / baseline capacity with the policy's capacity gate
({metric: capacity, target: 99%, margin: 5%}; those defaults when the policy
has none): pass when the interval's low end is above 1 − margin, fail when
its high end is below.

Exit codes: 0 pass, 1 fail, 2 usage error, 3 inconclusive
(1 with --fail-on-inconclusive), 4 could not evaluate.`,
		Example: `  goodput capacity --baseline results/vllm --canary results/vllm+quantization
  goodput capacity --baseline b/qps_*.json --canary c/qps_*.json --target 0.999 --format markdown`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runCapacity(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.Baseline, "baseline", nil, "baseline sweep: files or directories; repeat the flag or list several after it")
	fs.StringArrayVar(&o.Canary, "canary", nil, "canary sweep: files or directories; repeat the flag or list several after it")
	fs.StringVar(&o.Policy, "policy", policies.DefaultName, "built-in policy name ("+strings.Join(policies.Names(), ", ")+") or a policy YAML file")
	fs.Float64Var(&o.Target, "target", 0, "SLO-attainment target in (0, 1) (default: the policy's capacity gate target, else 0.99)")
	fs.StringVar(&o.Format, "format", "text", "output format: text, markdown or json")
	fs.StringVarP(&o.Out, "out", "o", "", "write the report to FILE instead of stdout (written atomically)")
	fs.BoolVar(&o.FailOnInconclusive, "fail-on-inconclusive", false, "exit 1 instead of 3 when the verdict is inconclusive")
	fs.Float64Var(&o.SaturationTolerance, "saturation-tolerance", capacity.DefaultSaturationTolerance, "a point is saturated when its achieved rate is below requested × (1 − this)")
	fs.IntVar(&o.BaselineReplicas, "baseline-replicas", 0, "replicas serving the baseline sweep (capacity per replica; compared per replica when the arms differ)")
	fs.IntVar(&o.CanaryReplicas, "canary-replicas", 0, "replicas serving the canary sweep")
	fs.IntVar(&o.BaselineGPUs, "baseline-gpus", 0, "GPUs serving the baseline sweep (capacity per GPU)")
	fs.IntVar(&o.CanaryGPUs, "canary-gpus", 0, "GPUs serving the canary sweep")
	fs.Float64Var(&o.BaselineUSD, "baseline-usd-per-hour", 0, "the baseline deployment's cost, USD per hour (good requests per dollar at capacity; default from the policy's cost rates × replicas)")
	fs.Float64Var(&o.CanaryUSD, "canary-usd-per-hour", 0, "the canary deployment's cost, USD per hour")
	fs.StringVar(&o.Simulate, "simulate", "", "instead of files: sweep the fleet simulator's scenario (built-in name or YAML file) over --rates, its fleet as baseline and its canary block as canary")
	fs.StringVar(&o.Rates, "rates", "", "with --simulate: request rates per arm, a list 2,4,8 or a range from:to:step")
	fs.DurationVar(&o.SimWindow, "sim-window", 3*time.Minute, "with --simulate: simulated time per rate")
	fs.Uint64Var(&o.Seed, "seed", 1, "with --simulate: seed of the first rate (rate i uses seed+i)")
	return cmd
}

func (a *app) runCapacity(ctx context.Context, o *capacityOptions) error {
	switch o.Format {
	case "text", "markdown", "json":
	default:
		return usageError("--format %q: want text, markdown or json", o.Format)
	}
	var rates []float64
	if o.Simulate != "" {
		if len(o.Baseline) > 0 || len(o.Canary) > 0 {
			return usageError("give either --simulate with --rates, or --baseline/--canary files, not both")
		}
		var err error
		if rates, err = parseRates(o.Rates); err != nil || o.Rates == "" {
			return usageError("--simulate needs --rates: a list such as 2,4,8 or a range from:to:step such as 2:24:2")
		}
		if o.SimWindow < 10*time.Second || o.SimWindow > time.Hour {
			return usageError("--sim-window %v: want 10s … 1h", o.SimWindow)
		}
	} else if len(o.Baseline) == 0 || len(o.Canary) == 0 {
		return usageError("capacity needs --baseline FILE|DIR and --canary FILE|DIR, or --simulate SCENARIO --rates LIST (see goodput capacity --help)")
	}
	if o.Target != 0 && !(o.Target > 0 && o.Target < 1) {
		return usageError("--target %v: want a fraction in (0, 1), e.g. 0.99", o.Target)
	}
	if !(o.SaturationTolerance > 0 && o.SaturationTolerance < 1) {
		return usageError("--saturation-tolerance %v: want a fraction in (0, 1), e.g. 0.05", o.SaturationTolerance)
	}
	for _, v := range []int{o.BaselineReplicas, o.CanaryReplicas, o.BaselineGPUs, o.CanaryGPUs} {
		if v < 0 {
			return usageError("replica and GPU counts must be ≥ 0")
		}
	}
	if o.BaselineUSD < 0 || o.CanaryUSD < 0 {
		return usageError("--*-usd-per-hour must be ≥ 0")
	}
	pol, err := policies.Load(o.Policy)
	if err != nil {
		return inputError(err)
	}
	var base, can []sources.RatePoint
	var bin, cin []sources.Input
	if o.Simulate != "" {
		if base, can, bin, err = simSweep(ctx, o.Simulate, rates, o.SimWindow, o.Seed, a.io.ErrOut); err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			return inputError(err)
		}
	} else {
		if base, bin, err = readSweep(ctx, sources.Baseline, o.Baseline, a.io.ErrOut); err != nil {
			return inputError(err)
		}
		if can, cin, err = readSweep(ctx, sources.Canary, o.Canary, a.io.ErrOut); err != nil {
			return inputError(err)
		}
	}
	res, err := capacity.Compare(base, can, capacity.Config{Policy: pol, Target: o.Target, SaturationTolerance: o.SaturationTolerance,
		Baseline: capacity.ArmConfig{Replicas: o.BaselineReplicas, GPUs: o.BaselineGPUs, USDPerHour: o.BaselineUSD},
		Canary:   capacity.ArmConfig{Replicas: o.CanaryReplicas, GPUs: o.CanaryGPUs, USDPerHour: o.CanaryUSD}})
	if err != nil {
		var de *capacity.DataError
		if errors.As(err, &de) {
			return inputError(fmt.Errorf("could not evaluate: %w", err))
		}
		return inputError(err)
	}
	doc := &report.CapacityDoc{Result: res, SLO: sloText(pol.SLO), Inputs: append(bin, cin...), ToolVersion: version,
		Policy: analysis.PolicyRef{Name: pol.Name, SHA256: pol.SHA256, Source: pol.Source}}
	var buf bytes.Buffer
	switch o.Format {
	case "json":
		err = report.CapacityJSON(&buf, doc)
	case "markdown":
		err = report.CapacityMarkdown(&buf, doc)
	default:
		err = report.CapacityText(&buf, doc)
	}
	if err != nil {
		return inputError(err)
	}
	if o.Out == "" {
		if _, err := a.io.Out.Write(buf.Bytes()); err != nil {
			return inputError(err)
		}
	} else if err := writeFileAtomic(o.Out, buf.Bytes()); err != nil {
		return inputError(err)
	}
	return verdictExit(res.Verdict, o.FailOnInconclusive)
}

// sloText renders the default SLO: "TTFT ≤ 1s ∧ TPOT ≤ 80ms ∧ ≥ 2 output tokens".
func sloText(s policies.SLO) string {
	var parts []string
	for _, c := range []struct {
		name string
		d    policies.Duration
	}{{"TTFT", s.TTFT}, {"TPOT", s.TPOT}, {"E2E", s.E2E}, {"largest inter-token gap", s.MaxITL}} {
		if c.d != 0 {
			parts = append(parts, fmt.Sprintf("%s ≤ %v", c.name, c.d))
		}
	}
	if s.Quality == "required" {
		parts = append(parts, "quality ok")
	}
	if f := s.OutputFloor(); f > 0 {
		parts = append(parts, fmt.Sprintf("≥ %d output tokens", f))
	}
	return strings.Join(parts, " ∧ ")
}

// readSweep reads every point of one arm: files as given, directories as
// every sweep file inside them (sorted by name, not recursive).
func readSweep(ctx context.Context, arm sources.Arm, args []string, progress io.Writer) ([]sources.RatePoint, []sources.Input, error) {
	var paths []string
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil {
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, nil, fmt.Errorf("--%s %s: %v (give a benchmark file per rate, or a directory holding one sweep's files)", arm, arg, err)
		}
		if !st.IsDir() {
			paths = append(paths, arg)
			continue
		}
		ents, err := os.ReadDir(arg)
		if err != nil {
			return nil, nil, err
		}
		var in []string
		for _, e := range ents {
			if e.Type().IsRegular() && benchfile.SweepFile(e.Name()) {
				in = append(in, filepath.Join(arg, e.Name()))
			}
		}
		if len(in) == 0 {
			return nil, nil, fmt.Errorf("%s: the directory holds no benchmark files (.json or .jsonl)", arg)
		}
		sort.Strings(in)
		paths = append(paths, in...)
	}
	var pts []sources.RatePoint
	var inputs []sources.Input
	seen := map[string]string{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, nil, err
		}
		got, err := benchfile.ReadSweep(ctx, p, f)
		f.Close()
		if err != nil {
			return nil, nil, err
		}
		if prev, ok := seen[got[0].SHA256]; ok {
			return nil, nil, fmt.Errorf("%s and %s are the same file (identical bytes): each point of a sweep must be its own run", prev, p)
		}
		seen[got[0].SHA256] = p
		n := 0
		for _, g := range got {
			n += int(g.Offered)
		}
		inputs = append(inputs, sources.Input{Path: p, SHA256: got[0].SHA256, Format: got[0].Format, Arm: arm, Count: n,
			Note: fmt.Sprintf("%d sweep point(s)", len(got))})
		pts = append(pts, got...)
	}
	fmt.Fprintf(progress, "%s: %d sweep points from %d files\n", arm, len(pts), len(paths))
	return pts, inputs, nil
}
