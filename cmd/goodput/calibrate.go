package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/comparators"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/exposition"
	"github.com/goodput-dev/goodput/sources/sim"
)

// calibrateOptions are the flags of `goodput calibrate`.
type calibrateOptions struct {
	Scenarios  []string
	Replicates int
	Seed       uint64
	Duration   time.Duration
	Out        string
	Jobs       int
	Policy     string
	Resamples  int
	Judges     []string
	// Gates, when set, is a file that gets the per-replicate breakdown of
	// goodput's gates on every scenario (which gates kept a replicate
	// from its expected verdict, and by how much).
	Gates      string
	confidence float64 // the policy's, for the coverage table
}

// calibrationJudges are the judges compared, in table order:
// goodput-stream is goodput's judge on the streaming aggregate of the same
// records (judge --stream); goodput-metrics is goodput's judge on the
// arms' engine metrics alone (the simulator's vLLM scrapes, read as judge
// reads scrape files and fills the aggregate a Prometheus query fills).
func calibrationJudges() []string {
	return []string{"goodput", "kayenta", "threshold", "goodput-stream", "goodput-metrics"}
}

// defaultCalibrationJudges are the judges run when --judges is not given.
func defaultCalibrationJudges() []string { return []string{"goodput", "kayenta", "threshold"} }

// defaultCalibrationScenarios are the scenarios run when --scenarios is not
// given: the 30-minute fleet with per-arm batch noise, a shared traffic wave
// and labelled classes near their SLO edges — A/A (alike replicas and
// replicas of their own speeds), mix shift, masked and
// plain regressions, cold start, and every blind spot a judge can be
// blind to. The older 15-minute scenarios (steady, regress-10, …) remain
// available by name.
func defaultCalibrationScenarios() []string {
	return []string{"aa-quiet-30m", "aa-replica-spread-30m", "aa-sticky-users", "mix-shift-labels", "masked-regression", "regress-latency-10", "regress-latency-10-edge", "cold-start-30m",
		"bs-short-outputs", "bs-half-outputs", "bs-shed-8", "bs-retry-5", "bs-errors-canceled", "bs-server-cancels",
		"bs-errors-rejected", "bs-class-ttft-50", "bs-slow-start-10m", "bs-tpot-leak", "bs-replica-lost",
		"bs-replica-restart", "bs-error-burst", "bs-answers-run-on", "bs-log-drops-slow", "baseline-error-burst", "shared-error-burst"}
}

// expectation is what a correct judge answers on a scenario and the targets
// its rates are held to.
type expectation struct {
	kind    string           // A/A, confounder, improvement, regression, blind spot, low traffic, unknown
	verdict analysis.Verdict // the right answer ("" when unknown)
	note    string
	// targets replace the default target of the verdict (A/A and
	// confounders: fail ≤ 5%; regressions: fail ≥ 90%; inconclusive:
	// pass ≤ 5%) when set.
	targets []target
}

// target bounds one rate: the share of replicates with verdict rate is at
// most (atMost) or at least bound.
type target struct {
	rate   analysis.Verdict
	atMost bool
	bound  float64
}

func (t target) String() string {
	op := "≥"
	if t.atMost {
		op = "≤"
	}
	return fmt.Sprintf("%s %s %s%%", t.rate, op, strconv.FormatFloat(100*t.bound, 'f', -1, 32))
}

// targetsOf returns the targets of an expectation.
func targetsOf(e expectation) []target {
	if len(e.targets) > 0 {
		return e.targets
	}
	switch e.verdict {
	case analysis.Pass:
		return []target{{analysis.Fail, true, 0.05}}
	case analysis.Fail:
		return []target{{analysis.Fail, false, 0.90}}
	case analysis.Inconclusive:
		return []target{{analysis.Pass, true, 0.05}}
	}
	return nil
}

// expectedFor returns the expectation of a built-in scenario under the chat
// policy; scenario files outside the built-ins have none.
func expectedFor(name string) expectation {
	noWrongPass := []target{{analysis.Pass, true, 0.05}}
	if strings.HasPrefix(name, "bs-") {
		notes := map[string]string{
			"bs-short-outputs":   "6–10% of canary completions have 0 or 1 output token",
			"bs-half-outputs":    "canary outputs cut to 45–55% of their length",
			"bs-shed-8":          "6–10% of canary traffic shed upstream, never logged",
			"bs-retry-5":         "4–6% of canary requests succeed only on an unlogged gateway retry",
			"bs-errors-canceled": "2–4% canary server errors logged as canceled",
			"bs-server-cancels":  "1–2% of canary requests canceled by the server (canceled_by: server)",
			"bs-errors-rejected": "2–4% canary server errors logged as rejected",
			"bs-class-ttft-50":   "+40–60% TTFT on the class with 80% of traffic",
			"bs-slow-start-10m":  "canary 1.4–1.8× slower for its first 10 minutes",
			"bs-tpot-leak":       "canary decode slows by 20–40% over 30 minutes",
			"bs-replica-lost":    "canary loses 1 of 4 replicas at minute 10",
			"bs-replica-restart": "a canary replica crashes at minute 10 and restarts 2 minutes later",
			"bs-error-burst":     "the canary fails 30–60% of its requests for 2 minutes at minute 15",
			"bs-answers-run-on":  "3–8% of canary answers run on to a 1024-token cap",
			"bs-log-drops-slow":  "the canary's log loses every completion whose first token took over 1.5–2 s (0.4–2.4% of its records)",
		}
		if n, ok := notes[name]; ok {
			return expectation{"blind spot", analysis.Fail, n + "; no PASS allowed", noWrongPass}
		}
	}
	switch name {
	case "aa-quiet-30m":
		return expectation{"A/A", analysis.Pass, "identical arms, per-arm batch noise, shared wave",
			[]target{{analysis.Fail, true, 0.05}, {analysis.Pass, false, 0.55}}}
	case "aa-replica-spread-30m":
		// no pass-rate target: with replicas 3–7% apart the honest
		// interval is wide, and passes are few
		return expectation{"A/A", analysis.Pass, "identical arms whose replicas differ in speed all run", nil}
	case "aa-sticky-users":
		// no pass-rate target: 500 users a side whose answers differ
		// by σ 0.5 of the log cannot show a 5% difference in answer
		// length in 30 minutes
		return expectation{"A/A", analysis.Pass, "identical arms behind a sticky router, 500 users each whose prompts and answers differ", []target{{analysis.Fail, true, 0.05}}}
	case "mix-shift-labels":
		return expectation{"confounder", analysis.Pass, "35% → 10% long prompts, identical per-class behaviour", nil}
	case "masked-regression":
		return expectation{"regression", analysis.Fail, "TPOT 12–18% worse in every class under the mix shift",
			[]target{{analysis.Fail, false, 0.95}}}
	case "regress-latency-10":
		return expectation{"regression", analysis.Fail, "TTFT and TPOT 8–12% worse for every request",
			[]target{{analysis.Fail, false, 0.75}}}
	case "regress-latency-10-edge":
		return expectation{"regression", analysis.Fail, "TTFT and TPOT 10% worse for every request, true attainment harm about 2.9 pp",
			[]target{{analysis.Fail, false, 0.75}}}
	case "baseline-error-burst":
		return expectation{"confounder", analysis.Pass, "the baseline fails 30–60% of its requests for 2 minutes at minute 15; the canary is its twin",
			[]target{{analysis.Fail, true, 0.05}, {analysis.Pass, false, 0.55}}}
	case "shared-error-burst":
		return expectation{"confounder", analysis.Pass, "both arms fail 30–60% of their requests for the same 2 minutes at minute 15; the canary is the baseline's twin",
			[]target{{analysis.Fail, true, 0.05}, {analysis.Pass, false, 0.55}}}
	case "cold-start-30m":
		return expectation{"confounder", analysis.Pass, "canary warms up for 2–4 min, then identical",
			[]target{{analysis.Fail, true, 0.05}, {analysis.Pass, false, 0.60}}}
	case "steady", "aa-autocorrelated":
		return expectation{"A/A", analysis.Pass, "identical arms", nil}
	case "seed-overload":
		return expectation{"A/A", analysis.Pass, "identical overloaded arms, both lose a replica", nil}
	case "mix-shift":
		return expectation{"confounder", analysis.Pass, "only the traffic mix differs", nil}
	case "cold-start":
		return expectation{"confounder", analysis.Pass, "canary warms up for 4 min, then identical", nil}
	case "cache-cold":
		return expectation{"confounder", analysis.Pass, "canary prefix cache starts empty", nil}
	case "replica-loss":
		return expectation{"confounder", analysis.Pass, "the baseline loses a replica", nil}
	case "cost-up-5":
		return expectation{"confounder", analysis.Pass, "cost +5%, latency unchanged; the chat policy gates no cost", nil}
	case "kernel-faster":
		return expectation{"improvement", analysis.Pass, "canary decode 15% faster", nil}
	case "regress-5", "regress-10", "tail-regression":
		return expectation{"regression", analysis.Fail, "canary worse beyond the margins", nil}
	case "low-traffic":
		return expectation{"low traffic", analysis.Inconclusive, "~60 requests per arm", nil}
	}
	return expectation{kind: "unknown"}
}

func (a *app) newCalibrateCmd() *cobra.Command {
	o := &calibrateOptions{}
	cmd := &cobra.Command{
		Use:   "calibrate [--scenarios a,b,…] [--replicates N] [--seed S] [--duration D] [--out FILE.md]",
		Short: "Measure the error rates of goodput's judge and of Kayenta-style and threshold judges on simulated scenarios",
		Long: `Run simulator scenarios many times and judge every replicate with three judges:
goodput's judge (the policy's non-inferiority gates), a Kayenta-style judge
(Mann-Whitney 98% interval with the ±25% Hodges-Lehmann band on per-minute
series, scored 0-100 with pass 95 / marginal 75) and an Argo/Flagger-style
threshold judge (canary p99 TTFT ≤ the TTFT SLO and success rate ≥ 99% per
minute, failing after 2 failed minutes); --judges adds goodput's judge on
the streaming aggregate of the same records (goodput-stream) and on the
arms' vLLM metrics alone (goodput-metrics: the simulator's scrapes read as
judge reads scrape files, the aggregate a Prometheus query fills). It
prints one Markdown table:
scenario × judge → fail, pass and inconclusive rates with Monte Carlo
standard errors, the expected verdict and whether the judge meets its target
(A/A and confounders: fail ≤ 5%; regressions: fail ≥ 90%; low traffic:
pass ≤ 5%; all within 2 standard errors).

Replicate i of scenario s uses a seed derived from --seed, s and i, so the
table is identical for the same flags whatever --jobs is. Progress goes to
stderr.`,
		Example: `  goodput calibrate --replicates 200 --out calibration.md
  goodput calibrate --scenarios steady,regress-10 --replicates 20 --duration 10m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runCalibrate(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.Scenarios, "scenarios", defaultCalibrationScenarios(), "built-in scenario names or scenario YAML files, comma-separated")
	f.IntVar(&o.Replicates, "replicates", 100, "simulated runs per scenario (Monte Carlo standard error ≈ 50/√N pp at worst)")
	f.Uint64Var(&o.Seed, "seed", 1, "base seed; replicate seeds are derived from it")
	f.DurationVar(&o.Duration, "duration", 0, "simulated window per run, e.g. 10m (default: each scenario's own)")
	f.StringVarP(&o.Out, "out", "o", "", "also write the Markdown table to FILE (written atomically)")
	f.IntVar(&o.Jobs, "jobs", 2, "replicates simulated and judged at once")
	f.StringVar(&o.Policy, "policy", policies.DefaultName, "policy for goodput's judge and the SLOs of all judges")
	f.IntVar(&o.Resamples, "resamples", 2000, "bootstrap resamples of goodput's quantile gates (≥ 200)")
	f.StringSliceVar(&o.Judges, "judges", defaultCalibrationJudges(), "judges to run, comma-separated: goodput, kayenta, threshold, goodput-stream (goodput's judge on the streaming aggregate of the same records; with goodput, every difference of verdict and gate is listed), goodput-metrics (goodput's judge on the arms' vLLM metrics alone, as from scrapes or Prometheus)")
	f.StringVar(&o.Gates, "gates", "", "also write, per scenario and replicate, goodput's gates that did not pass and how far each interval end lies from its margin, to FILE (Markdown, written atomically)")
	return cmd
}

// calibCell counts one judge's verdicts on one scenario.
type calibCell struct {
	fail, pass, inconclusive, errors int
	firstErr                         string
}

func (c *calibCell) add(v analysis.Verdict, err error) {
	switch {
	case err != nil:
		c.errors++
		if c.firstErr == "" {
			c.firstErr = err.Error()
		}
	case v == analysis.Fail:
		c.fail++
	case v == analysis.Pass:
		c.pass++
	default:
		c.inconclusive++
	}
}

// calibScenario is one scenario's row group.
type calibScenario struct {
	name     string
	sc       sim.Scenario
	expect   expectation
	cells    map[string]*calibCell
	coverage []*gateCoverage // goodput's gates, A/A scenarios only, in policy order
	// metricsCoverage is the same for goodput-metrics
	metricsCoverage []*gateCoverage
	stream          *streamDiff // goodput-stream against goodput, when both ran
	// replicates are goodput's verdict and gates per replicate, kept for
	// --gates; metricsReplicates the same for goodput-metrics
	replicates, metricsReplicates []replicateGates
}

// replicateGates is one replicate's verdict and gates under goodput's judge.
type replicateGates struct {
	seed    uint64
	verdict analysis.Verdict
	err     error
	gates   []analysis.Metric
}

func (a *app) runCalibrate(ctx context.Context, o *calibrateOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Replicates < 1 {
		return usageError("--replicates %d: want at least 1", o.Replicates)
	}
	if o.Jobs < 1 {
		return usageError("--jobs %d: want at least 1", o.Jobs)
	}
	if o.Resamples < 200 {
		return usageError("--resamples %d: want at least 200", o.Resamples)
	}
	if o.Duration < 0 {
		return usageError("--duration %s: want a positive duration", o.Duration)
	}
	if len(o.Judges) == 0 {
		return usageError("--judges is empty (want some of %s)", strings.Join(calibrationJudges(), ", "))
	}
	for _, j := range o.Judges {
		if !slices.Contains(calibrationJudges(), j) {
			return usageError("--judges: unknown judge %q (want some of %s)", j, strings.Join(calibrationJudges(), ", "))
		}
	}
	if len(o.Scenarios) == 0 {
		return usageError("--scenarios is empty (built-in: %s)", strings.Join(sim.BuiltinNames(), ", "))
	}
	pol, err := policies.Load(o.Policy)
	if err != nil {
		return inputError(err)
	}
	o.confidence = pol.Confidence
	scs := make([]*calibScenario, len(o.Scenarios))
	for i, name := range o.Scenarios {
		sc, err := loadScenario(name)
		if err != nil {
			return err
		}
		cs := &calibScenario{name: name, sc: sc, expect: expectedFor(name), cells: map[string]*calibCell{}}
		for _, j := range calibrationJudges() {
			cs.cells[j] = &calibCell{}
		}
		scs[i] = cs
	}
	start := time.Now()
	for _, cs := range scs {
		if err := a.calibrateScenario(ctx, cs, pol, o); err != nil {
			return err
		}
		fmt.Fprintf(a.io.ErrOut, "calibrate: %s done (%d replicates, %.0fs elapsed)\n", cs.name, o.Replicates, time.Since(start).Seconds())
	}
	var buf bytes.Buffer
	writeCalibrationTable(&buf, scs, o)
	if _, err := a.io.Out.Write(buf.Bytes()); err != nil {
		return err
	}
	if o.Out != "" {
		if err := writeFileAtomic(o.Out, buf.Bytes()); err != nil {
			return inputError(err)
		}
	}
	if o.Gates != "" {
		var gb bytes.Buffer
		writeGateBreakdown(&gb, scs, o)
		if err := writeFileAtomic(o.Gates, gb.Bytes()); err != nil {
			return inputError(err)
		}
	}
	return nil
}

// replicateSeed derives replicate i's seed from the base seed and the
// scenario name with SplitMix64, so seeds differ across scenarios and
// replicates and do not depend on scheduling.
func replicateSeed(base uint64, scenario string, i int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(scenario))
	z := base ^ h.Sum64() + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	if z == 0 {
		z = 1
	}
	return z
}

// replicateVerdicts is one replicate's verdict per judge.
type replicateVerdicts struct {
	v    [5]analysis.Verdict
	errs [5]error
	ran  [5]bool
	// streamGates are the gates of goodput's judge on the streaming
	// aggregate, when it ran; metricsGates those on the engine metrics.
	streamGates, metricsGates []analysis.Metric
	err                       error // the simulation itself failed
	// gates are goodput's judge's gates (name, delta, interval).
	gates []analysis.Metric
}

// gateCoverage counts, for one gate over the A/A replicates, how often its
// interval held the true harm 0 (identical arms).
type gateCoverage struct {
	name        string
	covered, n  int
	deltas      []float64 // the gate's point estimates, for the spread across replicates
	halves      []float64 // the gate's interval half-widths, (hi − lo)/2
	margin      float64
	unit, scale string
	noInterval  int // replicates where the gate had no finite interval
	guardrail   bool
}

func (a *app) calibrateScenario(ctx context.Context, cs *calibScenario, pol *policies.Policy, o *calibrateOptions) error {
	results := make([]replicateVerdicts, o.Replicates)
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	step := max(o.Replicates/10, 1)
	for w := 0; w < o.Jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = judgeReplicate(ctx, cs.sc, replicateSeed(o.Seed, cs.name, i), pol, o)
				mu.Lock()
				done++
				if done%step == 0 && done < o.Replicates {
					fmt.Fprintf(a.io.ErrOut, "calibrate: %s %d/%d\n", cs.name, done, o.Replicates)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < o.Replicates; i++ {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return inputError(err)
	}
	for i, r := range results {
		if r.err != nil {
			return inputError(fmt.Errorf("scenario %s replicate %d: %w", cs.name, i+1, r.err))
		}
		for k, j := range calibrationJudges() {
			if r.ran[k] {
				cs.cells[j].add(r.v[k], r.errs[k])
			}
		}
		if cs.expect.kind == "A/A" {
			cs.coverage = addCoverage(cs.coverage, r.gates)
			cs.metricsCoverage = addCoverage(cs.metricsCoverage, r.metricsGates)
		}
		if r.ran[0] && r.ran[3] && r.errs[0] == nil && r.errs[3] == nil {
			cs.addStreamDiff(r.v[0], r.v[3], r.gates, r.streamGates)
		}
		if r.ran[0] {
			cs.replicates = append(cs.replicates, replicateGates{seed: replicateSeed(o.Seed, cs.name, i), verdict: r.v[0], err: r.errs[0], gates: r.gates})
		}
		if r.ran[4] {
			cs.metricsReplicates = append(cs.metricsReplicates, replicateGates{seed: replicateSeed(o.Seed, cs.name, i), verdict: r.v[4], err: r.errs[4], gates: r.metricsGates})
		}
	}
	return nil
}

// addCoverage counts one A/A replicate's gates into coverage (one judge's
// rows) and returns it: the true harm of identical
// arms is 0, so a gate's interval covers when lo ≤ 0 ≤ hi. Rows a check
// reports only when it found something (<gate>_trend, attainment_dip) are
// selected for excluding 0 and are not counted.
func addCoverage(coverage []*gateCoverage, gates []analysis.Metric) []*gateCoverage {
	for _, g := range gates {
		if g.Conditional() {
			continue
		}
		var gc *gateCoverage
		for _, x := range coverage {
			if x.name == g.Name {
				gc = x
			}
		}
		if gc == nil {
			gc = &gateCoverage{name: g.Name, margin: float64(g.Margin), unit: g.Unit, scale: g.Scale, guardrail: g.Guardrail}
			coverage = append(coverage, gc)
		}
		lo, hi := float64(g.Interval[0]), float64(g.Interval[1])
		if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			gc.noInterval++
			continue
		}
		gc.n++
		if lo <= 0 && 0 <= hi {
			gc.covered++
		}
		if d := float64(g.Delta); !math.IsNaN(d) && !math.IsInf(d, 0) {
			gc.deltas = append(gc.deltas, d)
		}
		gc.halves = append(gc.halves, (hi-lo)/2)
	}
	return coverage
}

// judgeReplicate simulates one replicate and judges it with every judge.
func judgeReplicate(ctx context.Context, sc sim.Scenario, seed uint64, pol *policies.Policy, o *calibrateOptions) replicateVerdicts {
	var out replicateVerdicts
	// the scenario's parameter ranges are drawn per replicate, from the
	// replicate's seed
	sc, _, err := sc.Draw(seed)
	if err != nil {
		out.err = err
		return out
	}
	res, err := sim.Run(ctx, sc, seed, o.Duration)
	if err != nil {
		out.err = err
		return out
	}
	dur := res.Scenario.Duration.Seconds()
	ds := func(arm sources.Arm, reqs []sources.Request) *sources.Dataset {
		return &sources.Dataset{Arm: arm, Requests: reqs, Clock: sources.ClockEpoch, Location: "client", Duration: dur,
			Inputs: []sources.Input{{Path: fmt.Sprintf("sim:%s/seed=%d", sc.Name, seed), Format: "simulator", Arm: arm, Count: len(reqs)}}}
	}
	b, c := ds(sources.Baseline, res.Baseline), ds(sources.Canary, res.Canary)
	cost := make([]sources.CostRecord, len(res.Cost))
	for i, r := range res.Cost {
		cost[i] = sources.CostRecord{Start: r.Start, End: r.End, Arm: r.Arm, Replica: r.Replica, Accelerator: r.AcceleratorUSD,
			Host: r.HostUSD, Network: r.NetworkUSD, IdleReserve: r.IdleReserveUSD}
	}
	set := func(k int, rep *analysis.Report, err error) {
		out.ran[k] = true
		if err != nil {
			out.errs[k] = err
			return
		}
		out.v[k] = rep.Verdict
	}
	want := func(j string) bool { return slices.Contains(o.Judges, j) }
	if want("goodput") {
		rep, err := analysis.Judge(b, c, analysis.Config{Policy: pol, Seed: seed, Resamples: o.Resamples, ToolVersion: version, Cost: cost})
		set(0, rep, err)
		if err == nil {
			out.gates = rep.Metrics
		}
	}
	if want("kayenta") {
		rep, err := comparators.Kayenta(b, c, pol, comparators.KayentaOptions{})
		set(1, rep, err)
	}
	if want("threshold") {
		rep, err := comparators.Threshold(b, c, pol, comparators.ThresholdOptions{})
		set(2, rep, err)
	}
	if want("goodput-stream") {
		rep, err := judgeStreamed(b, c, analysis.Config{Policy: pol, Seed: seed, Resamples: o.Resamples, ToolVersion: version, Cost: cost})
		set(3, rep, err)
		if err == nil {
			out.streamGates = rep.Metrics
		}
	}
	if want("goodput-metrics") {
		rep, err := judgeFromMetrics(ctx, res, sc.Name, seed, analysis.Config{Policy: pol, Seed: seed, Resamples: o.Resamples, ToolVersion: version})
		set(4, rep, err)
		if err == nil {
			out.metricsGates = rep.Metrics
		}
	}
	return out
}

// judgeFromMetrics judges a replicate from its engine metrics alone: the
// simulator's per-replica vLLM scrapes of both arms, written as the
// metrics.om that goodput simulate writes and read per arm by the scrape
// reader (split by the deployment label), which fills the aggregate a
// Prometheus query fills.
func judgeFromMetrics(ctx context.Context, res *sim.Result, name string, seed uint64, cfg analysis.Config) (*analysis.Report, error) {
	var om bytes.Buffer
	if err := sim.WriteOpenMetrics(&om, res.Metrics); err != nil {
		return nil, err
	}
	path := fmt.Sprintf("sim:%s/seed=%d/metrics.om", name, seed)
	var arms [2]sources.Dataset
	for i, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		ds, err := exposition.Read(ctx, path, bytes.NewReader(om.Bytes()), arm)
		if err != nil {
			return nil, err
		}
		arms[i] = ds
	}
	return analysis.Judge(&arms[0], &arms[1], cfg)
}

// judgeStreamed judges two arms' records as judge --stream does, from
// their streaming aggregates (analysis.StreamedArms).
func judgeStreamed(b, c *sources.Dataset, cfg analysis.Config) (*analysis.Report, error) {
	sb, sc, err := analysis.StreamedArms(b, c, cfg)
	if err != nil {
		return nil, err
	}
	return analysis.Judge(sb, sc, cfg)
}

// rateSE is a Monte Carlo proportion k/n and its standard error, in percent.
func rateSE(k, n int) (float64, float64) {
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	p := float64(k) / float64(n)
	return 100 * p, 100 * math.Sqrt(p*(1-p)/float64(n))
}

// meetsTarget says whether a judge's rates meet the scenario's target within
// two Monte Carlo standard errors (the standard error of a 5% rate is used
// when none were observed, so 0 of N is not judged on a zero error).
func meetsTarget(e expectation, c *calibCell) string {
	n := c.fail + c.pass + c.inconclusive + c.errors
	ts := targetsOf(e)
	if n == 0 || len(ts) == 0 {
		return "—"
	}
	ok := true
	var what []string
	for _, t := range ts {
		k := c.fail
		if t.rate == analysis.Pass {
			k = c.pass
		}
		p := float64(k) / float64(n)
		se := math.Sqrt(math.Max(p*(1-p), t.bound*(1-t.bound)) / float64(n))
		if t.atMost {
			ok = ok && p-2*se <= t.bound
		} else {
			ok = ok && p+2*se >= t.bound
		}
		what = append(what, t.String())
	}
	if ok {
		return "yes (" + strings.Join(what, ", ") + ")"
	}
	return "**no** (" + strings.Join(what, ", ") + ")"
}

func writeCalibrationTable(w io.Writer, scs []*calibScenario, o *calibrateOptions) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	fmt.Fprintf(bw, "## Calibration\n\n")
	fmt.Fprintf(bw, "Command: `%s`\n\n", calibrateCommandLine(o))
	fmt.Fprintf(bw, "Each cell: rate in %% ± its Monte Carlo standard error (pp) over %d replicates per scenario. ", o.Replicates)
	fmt.Fprintf(bw, "Judges: **goodput** = goodput's judge with the `%s` policy; **kayenta** = Kayenta-style comparator "+
		"(per-minute series of SLO attainment, goodput, p99 TTFT, p99 TPOT and error rate; Mann-Whitney 98%% interval, ±25%% "+
		"Hodges-Lehmann band, mean-ratio gate 1.0; score pass ≥ 95, marginal ≥ 75 → inconclusive); **threshold** = Argo/Flagger-style "+
		"comparator (per minute: canary p99 TTFT ≤ the TTFT SLO, success rate ≥ 99%%; fails after 2 failed minutes). "+
		"Target met = the rate is on the right side of the target within 2 standard errors.\n\n", o.Policy)
	fmt.Fprintf(bw, "| scenario | kind | expected | judge | fail %% | pass %% | inconclusive %% | errors | target met |\n")
	fmt.Fprintf(bw, "|---|---|---|---|---:|---:|---:|---:|---|\n")
	var errNotes []string
	for _, cs := range scs {
		exp := string(cs.expect.verdict)
		if exp == "" {
			exp = "?"
		}
		first := true
		for _, j := range calibrationJudges() {
			if !slices.Contains(o.Judges, j) {
				continue
			}
			c := cs.cells[j]
			n := c.fail + c.pass + c.inconclusive + c.errors
			cell := func(x int) string {
				p, se := rateSE(x, n)
				return fmt.Sprintf("%.1f ± %.1f", p, se)
			}
			name, kind, e := "", "", ""
			if first {
				name, kind, e = "`"+markdownCell(cs.name)+"`", cs.expect.kind, exp
				first = false
			}
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", name, kind, e, j,
				cell(c.fail), cell(c.pass), cell(c.inconclusive), c.errors, meetsTarget(cs.expect, c))
			if c.firstErr != "" {
				errNotes = append(errNotes, fmt.Sprintf("- `%s` / %s: %d errors, first: %s", markdownCell(cs.name), j, c.errors, markdownCell(c.firstErr)))
			}
		}
	}
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "Scenarios:")
	fmt.Fprintln(bw)
	for _, cs := range scs {
		note := cs.expect.note
		if note == "" {
			note = "no expectation (not a built-in scenario)"
		}
		fmt.Fprintf(bw, "- `%s` (%s): %s. %s\n", markdownCell(cs.name), cs.expect.kind, markdownCell(note), markdownCell(cs.sc.Description))
	}
	if len(errNotes) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "Errors (a judge that could not evaluate a replicate):")
		fmt.Fprintln(bw)
		for _, e := range errNotes {
			fmt.Fprintln(bw, e)
		}
	}
	fmt.Fprintln(bw)
	writeCoverageTable(bw, scs, o, "goodput's judge", func(cs *calibScenario) []*gateCoverage { return cs.coverage })
	writeCoverageTable(bw, scs, o, "goodput-metrics", func(cs *calibScenario) []*gateCoverage { return cs.metricsCoverage })
	writeStreamDiffs(bw, scs)
}

// writeCoverageTable prints, for one judge (rows of reads its counts from a
// scenario: goodput's judge, or goodput-metrics) on every A/A scenario, how
// often each gate's interval covered 0 (the true harm of identical arms)
// against the nominal 1 − 2α, and the spread of the gate's estimate across
// replicates. For the attainment gate it adds the pass-rate ceiling an
// efficient unbiased judge would reach with that spread: Φ(margin/SD − z),
// z the one-sided normal quantile of the policy's confidence.
func writeCoverageTable(bw *bufio.Writer, scs []*calibScenario, o *calibrateOptions, judge string, of func(*calibScenario) []*gateCoverage) {
	var rows []*calibScenario
	for _, cs := range scs {
		if len(of(cs)) > 0 {
			rows = append(rows, cs)
		}
	}
	if len(rows) == 0 {
		return
	}
	conf := o.confidence
	nominal := 2*conf - 1
	z := distuv.UnitNormal.Quantile(conf)
	fmt.Fprintf(bw, "### A/A interval coverage (%s)\n\n", judge)
	fmt.Fprintf(bw, "The arms are identical, so every gate's true harm is 0; coverage is the share of replicates whose "+
		"interval holds 0 (nominal %.0f%%, the (1 − 2α) interval of confidence %g), ± its Monte Carlo standard error. "+
		"SD is the spread of the gate's estimate across replicates, in the gate's units; for attainment, "+
		"\"ceiling\" is the pass rate of that gate alone for a judge whose interval were exactly as wide as that spread: "+
		"Φ(margin/SD − %.3f). \"width / spread\" is the mean interval half-width over z·SD: above 1 the intervals are "+
		"wider than the spread of the estimate asks for (the SD of 20 replicates is itself uncertain by about ±16%%).\n\n", 100*nominal, conf, z)
	fmt.Fprintf(bw, "| scenario | gate | coverage %% | intervals | mean estimate | SD across replicates | width / spread | note |\n")
	fmt.Fprintf(bw, "|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, cs := range rows {
		for i, g := range of(cs) {
			name := ""
			if i == 0 {
				name = "`" + markdownCell(cs.name) + "`"
			}
			cov := "—"
			if g.n > 0 {
				p, se := rateSE(g.covered, g.n)
				cov = fmt.Sprintf("%.1f ± %.1f", p, se)
				if float64(g.covered)/float64(g.n)+2*se/100 < nominal {
					cov = "**" + cov + "**"
				}
			}
			mean, sd := meanSD(g.deltas)
			// a spread of rounding alone (estimates all 0, summed in
			// floating point) is none: no ceiling, no width ratio
			spread := sd > 1e-12
			note := ""
			if g.noInterval > 0 {
				note = fmt.Sprintf("%d without a finite interval", g.noInterval)
			}
			if g.name == "slo_attainment" && spread && g.margin > 0 {
				c := distuv.UnitNormal.CDF(g.margin/sd - z)
				note = strings.TrimPrefix(note+fmt.Sprintf("; ceiling %.0f%% at margin %s", 100*c, fmtGateNum(g.margin, g.unit, g.scale)), "; ")
			}
			ratio := "—"
			if hw, _ := meanSD(g.halves); spread && !math.IsNaN(hw) {
				ratio = fmt.Sprintf("%.2f", hw/(z*sd))
			}
			fmt.Fprintf(bw, "| %s | %s | %s | %d | %s | %s | %s | %s |\n", name, markdownCell(g.name), cov, g.n,
				fmtGateNum(mean, g.unit, g.scale), fmtGateNum(sd, g.unit, g.scale), ratio, note)
		}
	}
	fmt.Fprintln(bw)
}

// fmtGateNum renders a gate quantity: percentage points for absolute
// fractions, percent for relative gates.
func fmtGateNum(x float64, unit, scale string) string {
	if math.IsNaN(x) {
		return "—"
	}
	switch {
	case scale == "relative":
		return fmt.Sprintf("%.2f%%", 100*x)
	case unit == "fraction":
		return fmt.Sprintf("%.2f pp", 100*x)
	}
	return fmt.Sprintf("%.4g", x)
}

func meanSD(x []float64) (float64, float64) {
	if len(x) == 0 {
		return math.NaN(), math.NaN()
	}
	m := stat.Mean(x, nil)
	if len(x) < 2 {
		return m, math.NaN()
	}
	return m, stat.StdDev(x, nil)
}

// markdownCell escapes text for a Markdown table cell or list item.
func markdownCell(s string) string {
	r := strings.NewReplacer("|", "\\|", "\n", " ", "\r", " ", "`", "'", "<", "&lt;", ">", "&gt;", "*", "\\*", "_", "\\_")
	return r.Replace(s)
}

func calibrateCommandLine(o *calibrateOptions) string {
	s := fmt.Sprintf("goodput calibrate --scenarios %s --replicates %d --seed %d", strings.Join(o.Scenarios, ","), o.Replicates, o.Seed)
	if o.Duration > 0 {
		s += " --duration " + o.Duration.String()
	}
	if o.Policy != policies.DefaultName {
		s += " --policy " + o.Policy
	}
	if o.Resamples != 2000 {
		s += fmt.Sprintf(" --resamples %d", o.Resamples)
	}
	if !slices.Equal(o.Judges, defaultCalibrationJudges()) {
		s += " --judges " + strings.Join(o.Judges, ",")
	}
	return s
}

// machineInfo describes the machine a measurement ran on: CPUs, memory, CPU
// model and the Go version, from /proc where available.
func machineInfo() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := "unknown memory"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && k == "MemTotal" {
				var kb float64
				if _, err := fmt.Sscanf(strings.TrimSpace(v), "%f", &kb); err == nil {
					mem = fmt.Sprintf("%.1f GiB RAM", kb/(1<<20))
				}
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs (nproc), %s, %s, %s %s/%s", runtime.NumCPU(), mem, markdownCell(model), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
