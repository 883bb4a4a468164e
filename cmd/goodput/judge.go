package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/comparators"
	"github.com/goodput-dev/goodput/analysis/report"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/benchfile"
	"github.com/goodput-dev/goodput/sources/costfile"
	"github.com/goodput-dev/goodput/sources/requestlog"
)

// judgeOptions are the flags of `goodput judge`.
type judgeOptions struct {
	Baseline, Canary   []string
	Policy             string
	SLO, Margin        string
	Format             string
	Out                string
	InputFormat        string
	FailOnInconclusive bool
	NoColor            bool
	Seed               uint64
	Resamples          int
	Cost               string
	Judge              string
	Stream, Exact      bool
	// streamAbove is the size of request logs (bytes, both arms) above
	// which they are judged from streaming aggregates; 0 means
	// autoStreamBytes (see chooseJudgePath)
	streamAbove int64
	prom        promOptions
	ch          chOptions
	metrics     metricsOptions
	// window, when not nil, is the [start, end) of --start/--end given
	// with request logs (unix seconds; ±Inf for an open end): requests
	// arriving outside it are left out (fileWindow)
	window *[2]float64
}

func (a *app) newJudgeCmd() *cobra.Command {
	o := &judgeOptions{}
	cmd := &cobra.Command{
		Use:   "judge (--baseline FILE [FILE…] --canary FILE [FILE…] | OLD NEW) [flags]",
		Short: "Compare a canary with its baseline and print pass, fail or inconclusive",
		Long: `Judge a canary against its baseline under a policy (default: the built-in
"chat" policy, TTFT ≤ 1 s and TPOT ≤ 80 ms).

Each arm takes one or more files (e.g. one per replica, or one per run);
two files can also be given as OLD NEW, baseline first. Files of one arm
whose time ranges overlap are replicas; files that follow one another are
repeated runs. Benchmark files of a few hundred prompts decide under
--policy bench (p50/p90 gates). The input format is
detected from content; --input-format overrides it. Formats:
` + formatHelp() + `
Request logs larger than 256 MiB (both arms together, gzip counted
uncompressed), or read from a pipe, are judged in bounded memory: each
request is counted into 10 s buckets per stratum (wider past an hour:
at most 360 per arm; exact counts and good
requests, latencies on log-linear bins 0.27% wide) and not kept, and the
arms are judged from those aggregates, the Mann-Whitney / Hodges-Lehmann
diagnostics included (from the pooled bins, never less cautious than from
the values). Smaller logs, benchmark files, scrapes, metrics beside the
logs and --judge kayenta/threshold keep every request in memory (the exact
path). --stream forces the aggregates, --exact every request; stderr says
which path was taken and why, and so does the JSON report
(measurement.method, measurement.method_reason).

Exit codes: 0 pass, 1 fail, 2 usage error, 3 inconclusive
(1 with --fail-on-inconclusive), 4 could not evaluate.`,
		Example: `  goodput judge --baseline testdata/example/baseline.jsonl --canary testdata/example/canary.jsonl
  goodput judge --policy bench old.json new.json
  goodput judge --policy bench --slo ttft=500ms,tpot=50ms --margin slo_attainment=2pp old.json new.json
  goodput judge --baseline b1.jsonl b2.jsonl --canary c1.jsonl --policy batch --format json --out report.json
  goodput judge --stream --baseline big-baseline.jsonl.gz --canary big-canary.jsonl.gz
  goodput judge --clickhouse http://clickhouse:8123 --table logs.requests --last 30m \
    --baseline-where "deployment = 'baseline'" --canary-where "deployment = 'canary'"`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				if len(o.Baseline) > 0 || len(o.Canary) > 0 || len(args) != 2 {
					return usageError("give two files as OLD NEW (baseline first), or --baseline FILE… --canary FILE…, not both; got %d file(s) without a flag", len(args))
				}
				o.Baseline, o.Canary = args[:1], args[1:]
			}
			if !o.prom.enabled() {
				// the step and selectors of a Prometheus query mean
				// nothing for files: refuse rather than ignore them
				// silently; files take --start/--end (fileWindow)
				flags := []string{"start", "end", "last", "step", "baseline-selector", "canary-selector", "profile"}
				switch {
				case o.ch.enabled():
					// ClickHouse takes the window; the bucket is the policy's
					flags = flags[3:]
				case o.metrics.PrometheusURL != "":
					// metrics beside files: selectors, step and profile
					// apply; the window is the files'
					flags = flags[:3]
				default:
					flags = flags[2:]
					w, err := fileWindow(o.prom.Start, o.prom.End)
					if err != nil {
						return err
					}
					o.window = w
				}
				var given []string
				for _, f := range flags {
					if cmd.Flags().Changed(f) {
						given = append(given, "--"+f)
					}
				}
				if len(given) > 0 && o.ch.enabled() {
					return usageError("%s only apply with --prometheus; with --clickhouse the arms are --baseline-where/--canary-where and the bucket is the policy's window.bucket", strings.Join(given, ", "))
				}
				if len(given) > 0 {
					return usageError("%s only apply with --prometheus; for files the window is the files' own (narrowed by --start/--end), and the bucket is the policy's window.bucket", strings.Join(given, ", "))
				}
			}
			if !o.ch.enabled() {
				var given []string
				for _, f := range o.ch.flagNames() {
					if cmd.Flags().Changed(f) {
						given = append(given, "--"+f)
					}
				}
				if len(given) > 0 {
					return usageError("%s only apply with --clickhouse URL", strings.Join(given, ", "))
				}
			}
			return a.runJudge(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.Baseline, "baseline", nil, "baseline input file(s); repeat the flag or list several files after it")
	fs.StringArrayVar(&o.Canary, "canary", nil, "canary input file(s); repeat the flag or list several files after it")
	fs.StringVar(&o.Policy, "policy", policies.DefaultName, "built-in policy name ("+strings.Join(policies.Names(), ", ")+") or a policy YAML file")
	fs.StringVar(&o.SLO, "slo", "", "change the policy's SLO for this run: criterion=duration pairs, e.g. ttft=1s,tpot=80ms (ttft, tpot, e2e, max_itl; classes that do not set a criterion inherit it)")
	fs.StringVar(&o.Margin, "margin", "", "change gate margins for this run: metric=margin pairs in the metric's unit, e.g. slo_attainment=2pp,ttft_p90=15%")
	fs.StringVar(&o.Format, "format", "text", "output format: text, markdown or json")
	fs.StringVarP(&o.Out, "out", "o", "", "write the report to FILE instead of stdout (written atomically)")
	fs.StringVar(&o.InputFormat, "input-format", "", "force the input format instead of detecting it ("+strings.Join(inputFormats(), ", ")+")")
	fs.BoolVar(&o.FailOnInconclusive, "fail-on-inconclusive", false, "exit 1 instead of 3 when the verdict is inconclusive")
	fs.BoolVar(&o.NoColor, "no-color", false, "no colour in text output (also when NO_COLOR is set)")
	fs.StringVar(&o.Cost, "cost", "", "cost records (CSV or JSONL: start,end,arm[,replica],accelerator_usd,host_usd,network_usd,idle_reserve_usd)")
	fs.BoolVar(&o.Stream, "stream", false, "judge request logs in one streaming pass with bounded memory, whatever their size (the default above 256 MiB): each request is counted into 10 s buckets per stratum (exact counts and good requests, latencies on log-linear bins 0.27% wide) and not kept; both arms and all files are read in parallel. Request logs only (not benchmark files or scrapes)")
	fs.BoolVar(&o.Exact, "exact", false, "keep every request in memory, whatever the request logs' size (the default up to 256 MiB): prefix-cache strata from the values, per-replica warm-up cuts without a second read; memory grows by about 440 bytes per request")
	fs.StringVar(&o.Judge, "judge", "goodput", "which judge decides: goodput (this tool's), or the comparators kayenta (Kayenta-style Mann-Whitney with a ±25% band on per-minute series) and threshold (Argo/Flagger-style per-minute limits), for comparing on your own data")
	o.prom.addFlags(fs)
	// judge's files take the window too (fileWindow)
	fs.Lookup("start").Usage = "window start, RFC 3339 (e.g. 2026-11-29T14:00:00Z): with --end, a query's; with request files, the earliest arrival kept"
	fs.Lookup("end").Usage = "window end, RFC 3339; default now when --last is given; with request files, requests arriving from then on are left out"
	o.ch.addFlags(fs)
	o.metrics.addFlags(fs)
	fs.Uint64Var(&o.Seed, "seed", 1, "seed for resampling; the same inputs and seed give the same report")
	fs.IntVar(&o.Resamples, "resamples", 2000, "bootstrap resamples for quantile gates (≥ 200)")
	return cmd
}

func formatHelp() string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %-15s %s\n", requestlog.Format, "goodput's native request log: JSONL (optionally gzip) or CSV, one request per line")
	for _, f := range benchfile.Formats() {
		fmt.Fprintf(&b, "  %-15s %s\n", f.Name, strings.ReplaceAll(f.Summary, "`", ""))
	}
	fmt.Fprintf(&b, "  %-15s %s\n", formatScrape, "Prometheus text / OpenMetrics /metrics scrapes: an arm's files in order (before, after)")
	return b.String()
}

func (a *app) runJudge(ctx context.Context, o *judgeOptions) error {
	switch o.Format {
	case "text", "markdown", "json":
	default:
		return usageError("--format %q: want text, markdown or json", o.Format)
	}
	switch o.Judge {
	case "goodput", "kayenta", "threshold":
	default:
		return usageError("--judge %q: want goodput, kayenta or threshold", o.Judge)
	}
	switch {
	case o.prom.enabled() && o.ch.enabled():
		return usageError("give either --prometheus or --clickhouse, not both")
	case o.prom.enabled():
		if len(o.Baseline) > 0 || len(o.Canary) > 0 {
			return usageError("give either --prometheus with --baseline-selector/--canary-selector, or --baseline/--canary files, not both")
		}
	case o.ch.enabled():
		if len(o.Baseline) > 0 || len(o.Canary) > 0 {
			return usageError("give either --clickhouse with --baseline-where/--canary-where, or --baseline/--canary files, not both")
		}
		if o.metrics.enabled() {
			return usageError("--baseline-metrics, --canary-metrics and --metrics-prometheus go beside request files, not --clickhouse")
		}
	case len(o.Baseline) == 0 || len(o.Canary) == 0:
		return usageError("judge needs --baseline FILE and --canary FILE, --prometheus URL with selectors, or --clickhouse URL with --table and --baseline-where/--canary-where (see goodput judge --help)")
	}
	if o.Resamples < 200 {
		return usageError("--resamples %d: want at least 200", o.Resamples)
	}
	if err := outNotAnInput(o.Out, append(append([]string{o.Cost, o.Policy}, o.Baseline...), o.Canary...)); err != nil {
		return err
	}
	if err := o.metrics.check(o); err != nil {
		return err
	}
	if o.Stream && o.Exact {
		return usageError("--stream and --exact choose opposite paths: give one of them")
	}
	if o.Exact && (o.prom.enabled() || o.ch.enabled()) {
		return usageError("--exact reads request-log files; --prometheus and --clickhouse are aggregates already: drop --exact")
	}
	if o.Stream {
		switch {
		case o.prom.enabled():
			return usageError("--stream reads request-log files; --prometheus is already an aggregate: drop --stream")
		case o.ch.enabled():
			return usageError("--stream reads request-log files; --clickhouse aggregates on the server already: drop --stream")
		case o.metrics.enabled():
			return usageError("--stream does not take --baseline-metrics, --canary-metrics or --metrics-prometheus yet; judge without --stream to read metrics beside the request logs")
		case o.Judge != "goodput":
			return usageError("--judge %s needs every request; --stream keeps none: drop one of them", o.Judge)
		}
	}
	rep, err := a.judgeFiles(ctx, o, a.io.ErrOut)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		// interrupted (SIGINT, SIGTERM): the analysis may have run on
		// regardless, but no verdict is printed for a stopped run
		return inputError(fmt.Errorf("stopped before the verdict: %w", err))
	}
	if err := a.writeReport(rep, o); err != nil {
		return inputError(err)
	}
	return verdictExit(rep.Verdict, o.FailOnInconclusive)
}

// judgeFiles reads both arms and judges them; errors carry exit 4.
func (a *app) judgeFiles(ctx context.Context, o *judgeOptions, progress io.Writer) (rep *analysis.Report, err error) {
	pol, err := loadPolicy(o.Policy, o.SLO, o.Margin)
	if err != nil {
		return nil, err
	}
	var base, can sources.Dataset
	var path judgePath
	if !o.prom.enabled() && !o.ch.enabled() {
		if path, err = a.chooseJudgePath(ctx, o); err != nil {
			return nil, err
		}
		fmt.Fprintln(progress, path.line())
	}
	stage := fmt.Sprintf("reading %d baseline and %d canary files", len(o.Baseline), len(o.Canary))
	if o.prom.enabled() {
		stage = "querying " + o.prom.URL
	}
	if o.ch.enabled() {
		stage = "aggregating in " + redactURL(o.ch.URL)
	}
	// a line on a terminal's stderr while this takes more than 2 s
	prog := a.startProgress(stage)
	defer prog.Stop()
	if o.prom.enabled() {
		if base, can, err = o.prom.load(ctx, a.env, a.now); err != nil {
			return nil, err
		}
	} else if o.ch.enabled() {
		if base, can, err = o.ch.load(ctx, &o.prom, pol, a.env, a.now); err != nil {
			return nil, err
		}
	} else if path.stream {
		// bounded memory is the point: collect garbage before the heap
		// passes streamHeapLimit rather than let it double
		if debug.SetMemoryLimit(-1) == math.MaxInt64 {
			defer debug.SetMemoryLimit(debug.SetMemoryLimit(streamHeapLimit))
		}
		ro := requestlog.Options{DropImplausible: pol.Window.Implausible == "drop"}
		if base, can, err = a.readArmsStream(ctx, o, pol, ro, progress); err != nil {
			var de *analysis.DataError
			if errors.As(err, &de) {
				return nil, inputError(fmt.Errorf("could not evaluate: %w", err))
			}
			return nil, inputError(err)
		}
	} else {
		ro := requestlog.Options{DropImplausible: pol.Window.Implausible == "drop"}
		if base, can, err = a.readArms(ctx, o, ro, progress); err != nil {
			return nil, inputError(err)
		}
		for _, ds := range []*sources.Dataset{&base, &can} {
			if err := narrowToWindow(ds, o.window); err != nil {
				return nil, inputError(err)
			}
		}
		if o.metrics.enabled() {
			if base.Agg != nil || can.Agg != nil {
				return nil, usageError("--baseline-metrics, --canary-metrics and --metrics-prometheus go beside per-request files, not scrape files")
			}
			if err := a.attachMetrics(ctx, o, &base, &can); err != nil {
				return nil, err
			}
		}
	}
	cfg := analysis.Config{Policy: pol, Seed: o.Seed, Resamples: o.Resamples, ToolVersion: version}
	if o.Cost != "" {
		f, err := os.Open(o.Cost)
		if err != nil {
			return nil, inputError(err)
		}
		res, err := costfile.Read(ctx, o.Cost, f)
		f.Close()
		if err != nil {
			return nil, inputError(err)
		}
		cfg.Cost, cfg.CostMissing = res.Records, res.Missing
		defer func() {
			if rep != nil {
				rep.Inputs = append(rep.Inputs, res.Input)
			}
		}()
	}
	if path.stream || o.ch.enabled() {
		prog.Stage(fmt.Sprintf("judging %d baseline and %d canary buckets", len(base.Agg.Buckets), len(can.Agg.Buckets)))
	} else {
		prog.Stage(fmt.Sprintf("judging %d baseline and %d canary requests (%d resamples per quantile gate)", len(base.Requests), len(can.Requests), o.Resamples))
	}
	switch o.Judge {
	case "kayenta":
		if base.Agg != nil || can.Agg != nil {
			return nil, usageError("--judge kayenta needs per-request inputs")
		}
		rep, err = comparators.Kayenta(&base, &can, pol, comparators.KayentaOptions{})
	case "threshold":
		if base.Agg != nil || can.Agg != nil {
			return nil, usageError("--judge threshold needs per-request inputs")
		}
		rep, err = comparators.Threshold(&base, &can, pol, comparators.ThresholdOptions{})
	default:
		rep, err = analysis.Judge(&base, &can, cfg)
	}
	if rep != nil {
		rep.ToolVersion = version
		if path.reason != "" {
			rep.Measurement.MethodReason = path.reason
		}
		if rep.Measurement.Method == "" {
			// the comparators judge every request
			rep.Measurement.Method = analysis.MethodRequests
		}
	}
	if err != nil {
		var de *analysis.DataError
		if errors.As(err, &de) {
			return nil, inputError(fmt.Errorf("could not evaluate: %w", err))
		}
		return nil, inputError(err)
	}
	return rep, nil
}

// loadPolicy resolves --policy and applies --slo and --margin to it. A bad
// flag value is a usage error; an unreadable policy file exit 4.
func loadPolicy(name, slo, margin string) (*policies.Policy, error) {
	pol, err := policies.Load(name)
	if err != nil {
		return nil, inputError(err)
	}
	var ov policies.Overrides
	if ov.SLO, err = policies.ParsePairs("--slo", slo); err != nil {
		return nil, usageError("%v", err)
	}
	if ov.Margins, err = policies.ParsePairs("--margin", margin); err != nil {
		return nil, usageError("%v", err)
	}
	if pol, err = policies.Override(pol, ov); err != nil {
		return nil, usageError("%v", err)
	}
	return pol, nil
}

// readArms reads both arms' files, each once, and refuses duplicated or
// identical data: one file named twice, a copy of a file, the same records
// in both arms or repeated within one.
func (a *app) readArms(ctx context.Context, o *judgeOptions, ro requestlog.Options, progress io.Writer) (base, can sources.Dataset, err error) {
	if err := samePathOrFile(map[sources.Arm][]string{sources.Baseline: o.Baseline, sources.Canary: o.Canary}, a.io.In); err != nil {
		return base, can, err
	}
	base, bin, err := readArm(ctx, sources.Baseline, o.Baseline, o.InputFormat, ro, a.io.In, progress)
	if err != nil {
		return base, can, err
	}
	can, cin, err := readArm(ctx, sources.Canary, o.Canary, o.InputFormat, ro, a.io.In, progress)
	if err != nil {
		return base, can, err
	}
	if err := sameContent(append(bin, cin...)); err != nil {
		return base, can, err
	}
	if err := distinctArms(&base, &can); err != nil {
		return base, can, err
	}
	if err := sameBenchmark(&base, &can); err != nil {
		return base, can, err
	}
	return base, can, nil
}

// reviewJudge serves `goodput review --baseline … --canary …` (and its
// --stream and --clickhouse forms): the judge with default options, and
// the report's JSON bytes for the review record.
func (a *app) reviewJudge(ctx context.Context, in reviewInput, progress io.Writer) (*analysis.Report, []byte, error) {
	o := &judgeOptions{Baseline: in.Baseline, Canary: in.Canary, Policy: in.Policy, Stream: in.Stream, Exact: in.Exact, Judge: "goodput", Seed: 1, Resamples: 2000}
	if o.Policy == "" {
		o.Policy = policies.DefaultName
	}
	o.ch = in.ClickHouse
	o.prom.Start, o.prom.End, o.prom.Last = in.Start, in.End, in.Last
	switch {
	case o.ch.enabled():
		fmt.Fprintf(progress, "judging request logs in ClickHouse table %s…\n", in.ClickHouse.Table)
	case o.Stream:
		fmt.Fprintf(progress, "judging %d baseline and %d canary files in one streaming pass…\n", len(in.Baseline), len(in.Canary))
	default:
		fmt.Fprintf(progress, "judging %d baseline and %d canary files…\n", len(in.Baseline), len(in.Canary))
	}
	rep, err := a.judgeFiles(ctx, o, progress)
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	if err := report.JSON(&buf, rep); err != nil {
		return nil, nil, err
	}
	return rep, buf.Bytes(), nil
}

// verdictExit maps a verdict to its exit code (nil error for pass).
func verdictExit(v analysis.Verdict, failOnInconclusive bool) error {
	switch v {
	case analysis.Pass:
		return nil
	case analysis.Fail:
		return &exitError{Code: ExitFail}
	}
	if failOnInconclusive {
		return &exitError{Code: ExitFail}
	}
	return &exitError{Code: ExitInconclusive}
}

// colorOK reports whether text output may use colour: a terminal, and
// neither NO_COLOR nor --no-color.
func (a *app) colorOK(w io.Writer, noColor bool) bool {
	if noColor || a.env("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

func (a *app) writeReport(rep *analysis.Report, o *judgeOptions) error {
	var buf bytes.Buffer
	var err error
	switch o.Format {
	case "json":
		err = report.JSON(&buf, rep)
	case "markdown":
		err = report.Markdown(&buf, rep, report.MarkdownOptions{})
	default:
		err = report.Text(&buf, rep, report.TextOptions{Color: o.Out == "" && a.colorOK(a.io.Out, o.NoColor)})
	}
	if err != nil {
		return err
	}
	if o.Out == "" {
		_, err = a.io.Out.Write(buf.Bytes())
		return err
	}
	return writeFileAtomic(o.Out, buf.Bytes())
}

// outNotAnInput refuses an --out that names one of the run's inputs (by
// path or as the same file under another name): the report would replace
// the data it was computed from.
func outNotAnInput(out string, inputs []string) error {
	if out == "" {
		return nil
	}
	ost, oerr := os.Stat(out)
	if oerr == nil && !ost.Mode().IsRegular() {
		return nil // a device or pipe is written in place, never replaced
	}
	for _, in := range inputs {
		if in == "" || in == stdinPath {
			continue
		}
		same := filepath.Clean(in) == filepath.Clean(out)
		if !same && oerr == nil {
			if ist, err := os.Stat(in); err == nil && os.SameFile(ist, ost) {
				same = true
			}
		}
		if same {
			return usageError("--out %s is also an input (%s): the report would replace the data it was computed from; write it elsewhere", out, in)
		}
	}
	return nil
}
