package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/capacity"
	"github.com/goodput-dev/goodput/analysis/report"
	"github.com/goodput-dev/goodput/cmd/goodput/internal/tui"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// reviewJudgeFunc runs the judge pipeline on the review's inputs and
// returns the report and its JSON encoding (the bytes the review record's
// report_sha256 is computed over). Progress goes to progress.
type reviewJudgeFunc func(ctx context.Context, in reviewInput, progress io.Writer) (*analysis.Report, []byte, error)

// reviewInput is what `goodput review` judges instead of reading a
// report: request files per arm (on the exact path, or streamed into
// aggregates with Stream), or request logs aggregated in ClickHouse.
type reviewInput struct {
	Baseline, Canary []string
	Policy           string // "" is the judge's default
	// Stream counts the files' requests into aggregates while reading
	// them, keeping none (goodput judge --stream); Exact keeps every
	// request (goodput judge --exact); neither: the judge's choice by size.
	Stream, Exact bool
	// ClickHouse, when its URL is set, reads both arms from a table with
	// the window Start/End or Last (goodput judge --clickhouse).
	ClickHouse chOptions
	Start, End string
	Last       time.Duration
}

// reviewOptions are the dependencies of `goodput review` that tests and
// the wiring replace.
type reviewOptions struct {
	// judge serves `review --baseline … --canary …`; nil makes that form
	// an error that points to `goodput judge --format json`.
	judge reviewJudgeFunc
	// now is the clock for the review record's "at".
	now func() time.Time
	// interactive reports whether the streams are terminals; nil means
	// isatty on the streams' file descriptors.
	interactive func(in io.Reader, out io.Writer) bool
	// teaOptions are extra bubbletea options (tests pass input
	// pacing or renderer settings).
	teaOptions []tea.ProgramOption
	// gitUser looks up git's user.name for the reviewer; nil skips it.
	gitUser func(context.Context) string
}

// defaultJudgedRecord is the review record written for the
// --baseline/--canary form when --record is not given.
const defaultJudgedRecord = "goodput.review.json"

func (a *app) newReviewCmd() *cobra.Command {
	return a.newReviewCmdWith(reviewOptions{now: time.Now, gitUser: gitUserName})
}

func (a *app) newReviewCmdWith(ro reviewOptions) *cobra.Command {
	var (
		record       string
		in           reviewInput
		noColor      bool
		capacityMode bool
	)
	cmd := &cobra.Command{
		Use:   "review REPORT.json [--record FILE] | review [--capacity] [--stream] --baseline FILE… --canary FILE… [--policy P] | review --clickhouse URL --table T --baseline-where … --canary-where … (--start/--end | --last)",
		Short: "Review a report interactively in the terminal and record approve or reject",
		Long: `Open a judge report (from goodput judge --format json) in an interactive
terminal view: the verdict and gates, each gate's interval against its margin,
per-class breakdowns, TTFT/TPOT distributions, per-bucket goodput and TTFT p99
over time, warnings and the measurement spec.

Press a to approve or x to reject, type a note and press enter: a review record
(reviewer from $GITHUB_ACTOR, else git's user.name, else $USER; time, the
report's SHA-256, decision, note, and whether it overrides the verdict) is
written atomically to REPORT.review.json beside the report, or to --record
FILE, and appended to the decision history REPORT.review.history.jsonl, so a
later decision never erases an earlier one. Approving over a fail or inconclusive verdict needs
a note. Press ? for all keys.

A capacity report (from goodput capacity --format json) opens in the
Capacity view; so do two rate sweeps given with --capacity --baseline …
--canary … (files or directories, as for goodput capacity). The view shows
the comparison: both arms' capacities at SLO with intervals, the ratio against
its margin and the verdict, attainment against offered rate with the target
line, and the points. It records no decision.

--stream judges the --baseline/--canary request logs as goodput judge
--stream does, in one pass with bounded memory (no request is kept: memory
follows at most 360 buckets per arm, not the number of requests); the distributions, time series
and diagnostics come from the aggregates.
--clickhouse reviews request logs aggregated in ClickHouse, with the
flags of goodput judge --clickhouse.

review needs a terminal; in scripts and pipes use goodput judge. NO_COLOR or
--no-color turns colour off.`,
		Example: `  goodput judge --baseline b.jsonl --canary c.jsonl --format json --out run.json
  goodput review run.json                      # decision goes to run.review.json
  goodput review run.json --record decisions/run-42.json
  goodput review --stream --baseline big-baseline.jsonl.gz --canary big-canary.jsonl.gz
  goodput review --clickhouse http://clickhouse:8123 --table logs.requests --last 30m \
    --baseline-where "deployment = 'baseline'" --canary-where "deployment = 'canary'"
  goodput review --capacity --baseline sweeps/v1 --canary sweeps/quantized
  goodput capacity --baseline sweeps/v1 --canary sweeps/quantized --format json --out cap.json; goodput review cap.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !in.ClickHouse.enabled() {
				var given []string
				for _, f := range append(in.ClickHouse.flagNames(), "start", "end", "last") {
					if cmd.Flags().Changed(f) {
						given = append(given, "--"+f)
					}
				}
				if len(given) > 0 {
					return usageError("%s only apply with --clickhouse URL", strings.Join(given, ", "))
				}
			}
			if capacityMode {
				if in.Stream || in.Exact || in.ClickHouse.enabled() {
					return usageError("--capacity reads rate sweeps; --stream, --exact and --clickhouse judge request logs: drop one of them")
				}
				return a.runCapacityReview(cmd.Context(), ro, args, record, in.Baseline, in.Canary, in.Policy, noColor)
			}
			return a.runReview(cmd.Context(), ro, args, record, in, noColor)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&record, "record", "", "write the review record to FILE (default: REPORT.review.json beside the report)")
	fs.StringArrayVar(&in.Baseline, "baseline", nil, "judge these baseline files first instead of reading a report")
	fs.StringArrayVar(&in.Canary, "canary", nil, "judge these canary files first instead of reading a report")
	fs.StringVar(&in.Policy, "policy", "", "policy for --baseline/--canary or --clickhouse (built-in name or YAML file; default: the judge's)")
	fs.BoolVar(&in.Stream, "stream", false, "with --baseline/--canary request logs: judge them in one streaming pass with bounded memory, keeping no request, whatever their size (as goodput judge --stream)")
	fs.BoolVar(&in.Exact, "exact", false, "with --baseline/--canary request logs: keep every request in memory, whatever their size (as goodput judge --exact)")
	in.ClickHouse.addFlags(fs)
	fs.StringVar(&in.Start, "start", "", "with --clickhouse: window start, RFC 3339 (e.g. 2026-11-29T14:00:00Z); with --end")
	fs.StringVar(&in.End, "end", "", "with --clickhouse: window end, RFC 3339; default now when --last is given")
	fs.DurationVar(&in.Last, "last", 0, "with --clickhouse: window of this length ending at --end or now (e.g. 30m); instead of --start")
	fs.BoolVar(&noColor, "no-color", false, "no colour (also when NO_COLOR is set)")
	fs.BoolVar(&capacityMode, "capacity", false, "review the capacity comparison of two rate sweeps given with --baseline/--canary (see goodput capacity)")
	return cmd
}

func (a *app) runReview(ctx context.Context, ro reviewOptions, args []string, record string, in reviewInput, noColor bool) error {
	files := len(in.Baseline) > 0 || len(in.Canary) > 0
	ch := in.ClickHouse.enabled()
	judged := files || ch
	switch {
	case files && ch:
		return usageError("give either --clickhouse with --baseline-where/--canary-where, or --baseline/--canary files, not both")
	case judged && len(args) > 0:
		return usageError("give either REPORT.json or --baseline/--canary (or --clickhouse), not both")
	case !judged && len(args) == 0:
		return usageError("review needs REPORT.json (from goodput judge --format json), --baseline FILE --canary FILE, or --clickhouse URL")
	case files && (len(in.Baseline) == 0 || len(in.Canary) == 0):
		return usageError("review needs both --baseline and --canary")
	case !judged && in.Policy != "":
		return usageError("--policy applies only with --baseline/--canary or --clickhouse; a report already names its policy")
	case in.Stream && ch:
		return usageError("--stream reads request-log files; --clickhouse aggregates on the server already: drop --stream")
	case in.Stream && !files:
		return usageError("--stream applies only with --baseline/--canary request logs; a report is already judged")
	case in.Exact && !files:
		return usageError("--exact applies only with --baseline/--canary request logs")
	case in.Stream && in.Exact:
		return usageError("--stream and --exact choose opposite paths: give one of them")
	}
	interactive := ro.interactive
	if interactive == nil {
		interactive = streamsAreTerminals
	}
	if !interactive(a.io.In, a.io.Out) {
		return usageError("review is interactive and needs a terminal on stdin and stdout; " +
			"in scripts and pipes use `goodput judge --format text|markdown|json` instead")
	}
	if ro.now == nil {
		return inputError(errors.New("review: no clock"))
	}

	var (
		rep  *analysis.Report
		raw  []byte
		name string
	)
	if judged {
		if ro.judge == nil {
			return inputError(errors.New("review --baseline/--canary is not available in this build; run " +
				"`goodput judge --baseline … --canary … --format json --out report.json` and then `goodput review report.json`"))
		}
		var err error
		rep, raw, err = ro.judge(ctx, in, a.io.ErrOut)
		if err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			return inputError(err)
		}
		if rep == nil {
			return inputError(errors.New("review: the judge returned no report"))
		}
		switch {
		case ch:
			name = fmt.Sprintf("judged in ClickHouse (%s)", clip(in.ClickHouse.Table))
		case rep.Measurement.Method == analysis.MethodAggregate:
			name = fmt.Sprintf("judged %d baseline + %d canary inputs, streamed", len(in.Baseline), len(in.Canary))
		default:
			name = fmt.Sprintf("judged %d baseline + %d canary inputs", len(in.Baseline), len(in.Canary))
		}
		if record == "" {
			record = defaultJudgedRecord
		}
	} else {
		path := args[0]
		if doc, ok, err := readCapacityReport(ctx, path); err != nil {
			return inputError(err)
		} else if ok {
			if record != "" {
				return usageError("--record does not apply to a capacity report: the capacity review records no decision")
			}
			return a.showCapacity(ctx, ro, doc, path, noColor)
		}
		var err error
		rep, raw, err = readReviewReport(ctx, path)
		if err != nil {
			return inputError(err)
		}
		name = path
		if record == "" {
			record = reviewRecordPath(path)
		}
	}

	m, err := tui.New(tui.Options{
		Report:      rep,
		ReportBytes: raw,
		ReportName:  name,
		RecordPath:  record,
		Reviewer:    reviewerName(ctx, a.env, ro.gitUser),
		Now:         ro.now,
		NoColor:     noColor || a.env("NO_COLOR") != "" || a.env("TERM") == "dumb",
		Output:      a.io.Out,
		Context:     ctx,
	})
	if err != nil {
		return inputError(err)
	}
	opts := append([]tea.ProgramOption{
		tea.WithContext(ctx), tea.WithInput(a.io.In), tea.WithOutput(a.io.Out), tea.WithAltScreen(),
	}, ro.teaOptions...)
	final, err := tea.NewProgram(m, opts...).Run()
	if err != nil {
		if ctx.Err() != nil {
			return inputError(fmt.Errorf("review interrupted: %w", ctx.Err()))
		}
		return inputError(fmt.Errorf("review: %w", err))
	}
	fm, ok := final.(tui.Model)
	if !ok {
		return inputError(fmt.Errorf("review: unexpected final model %T", final))
	}
	if rec, ok := fm.Recorded(); ok {
		msg := fmt.Sprintf("goodput: %s recorded in %s", rec.Decision, fm.RecordPath())
		defer fmt.Fprintf(a.io.ErrOut, "goodput: decision history: %s\n", tui.HistoryPath(fm.RecordPath()))
		if rec.Overrides {
			msg += fmt.Sprintf(" (overrides the %s verdict)", rec.ReportVerdict)
		}
		fmt.Fprintln(a.io.ErrOut, msg)
		return nil
	}
	if err := fm.WriteErr(); err != nil {
		return inputError(err)
	}
	fmt.Fprintln(a.io.ErrOut, "goodput: no decision recorded")
	return nil
}

// reviewerName is who records a decision: $GITHUB_ACTOR (in Actions), else
// git's user.name, else $USER; "unknown" when none is set.
func reviewerName(ctx context.Context, env Env, gitUser func(context.Context) string) string {
	if v := strings.TrimSpace(env("GITHUB_ACTOR")); v != "" {
		return v
	}
	if gitUser != nil {
		if v := gitUser(ctx); v != "" {
			return v
		}
	}
	if v := strings.TrimSpace(env("USER")); v != "" {
		return v
	}
	return "unknown"
}

// gitUserName is `git config user.name`, "" when git or the setting is
// missing; it waits at most two seconds.
func gitUserName(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "config", "user.name").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// streamsAreTerminals reports whether in and out are terminals.
func streamsAreTerminals(in io.Reader, out io.Writer) bool {
	fi, ok := in.(*os.File)
	if !ok || !isatty.IsTerminal(fi.Fd()) {
		return false
	}
	fo, ok := out.(*os.File)
	return ok && isatty.IsTerminal(fo.Fd())
}

// reviewRecordPath is REPORT.review.json beside the report: run.json →
// run.review.json, other names get .review.json appended.
func reviewRecordPath(report string) string {
	return strings.TrimSuffix(report, ".json") + ".review.json"
}

// readReviewReport reads and checks a JSON report; errors name the file
// and, for malformed JSON, the line and column.
func readReviewReport(ctx context.Context, path string) (*analysis.Report, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read report: %w", err)
	}
	var rep analysis.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := lineCol(raw, se.Offset)
			return nil, nil, fmt.Errorf("%s:%d:%d: not valid JSON: %v; review reads the output of `goodput judge --format json`", path, line, col, se)
		case errors.As(err, &te):
			line, col := lineCol(raw, te.Offset)
			return nil, nil, fmt.Errorf("%s:%d:%d: field %q: %s where a %s belongs; is this a goodput report?", path, line, col, te.Field, te.Value, te.Type)
		}
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case rep.SchemaVersion == 0:
		return nil, nil, fmt.Errorf("%s: no schema_version: not a goodput report (make one with `goodput judge --format json`)", path)
	case rep.SchemaVersion > analysis.SchemaVersion:
		return nil, nil, fmt.Errorf("%s: schema_version %d is newer than this goodput understands (%d); upgrade goodput", path, rep.SchemaVersion, analysis.SchemaVersion)
	}
	switch rep.Verdict {
	case analysis.Pass, analysis.Fail, analysis.Inconclusive:
	default:
		return nil, nil, fmt.Errorf("%s: verdict %q: want pass, fail or inconclusive", path, clip(string(rep.Verdict)))
	}
	return &rep, raw, nil
}

// lineCol converts a byte offset (as json errors report it: the byte after
// the problem) into a 1-based line and column.
func lineCol(b []byte, off int64) (int, int) {
	off = max(0, min(off, int64(len(b))))
	if off > 0 {
		off--
	}
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// clip quotes at most 40 bytes of untrusted text for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// runCapacityReview is `goodput review --capacity`: it reads both sweeps as
// `goodput capacity` does, with the policy's capacity gate and the default
// saturation tolerance, and shows the comparison.
func (a *app) runCapacityReview(ctx context.Context, ro reviewOptions, args []string, record string, baseline, canary []string, policy string, noColor bool) error {
	switch {
	case len(args) > 0:
		return usageError("review --capacity reads rate sweeps from --baseline/--canary; a capacity JSON report opens without --capacity: goodput review capacity.json")
	case len(baseline) == 0 || len(canary) == 0:
		return usageError("review --capacity needs both --baseline FILE|DIR and --canary FILE|DIR (rate sweeps, as for goodput capacity)")
	case record != "":
		return usageError("--record does not apply with --capacity: the capacity review records no decision")
	}
	interactive := ro.interactive
	if interactive == nil {
		interactive = streamsAreTerminals
	}
	if !interactive(a.io.In, a.io.Out) {
		return usageError("review is interactive and needs a terminal on stdin and stdout; " +
			"in scripts and pipes use `goodput capacity --format text|markdown|json` instead")
	}
	if policy == "" {
		policy = policies.DefaultName
	}
	pol, err := policies.Load(policy)
	if err != nil {
		return inputError(err)
	}
	base, _, err := readSweep(ctx, sources.Baseline, baseline, a.io.ErrOut)
	if err != nil {
		return inputError(err)
	}
	can, _, err := readSweep(ctx, sources.Canary, canary, a.io.ErrOut)
	if err != nil {
		return inputError(err)
	}
	res, err := capacity.Compare(base, can, capacity.Config{Policy: pol, SaturationTolerance: capacity.DefaultSaturationTolerance})
	if err != nil {
		var de *capacity.DataError
		if errors.As(err, &de) {
			return inputError(fmt.Errorf("could not evaluate: %w", err))
		}
		return inputError(err)
	}
	doc := &report.CapacityDoc{Result: res, SLO: sloText(pol.SLO), Policy: analysis.PolicyRef{Name: pol.Name}}
	return a.showCapacity(ctx, ro, doc, fmt.Sprintf("%d baseline + %d canary sweep points", len(base), len(can)), noColor)
}

// showCapacity runs the capacity review of doc; name says what was
// compared (a report's path, or the sweeps' point counts).
func (a *app) showCapacity(ctx context.Context, ro reviewOptions, doc *report.CapacityDoc, name string, noColor bool) error {
	m, err := tui.NewCapacity(tui.CapacityOptions{
		Result: doc.Result, SLO: doc.SLO, Policy: doc.Policy.Name, Name: name,
		NoColor: noColor || a.env("NO_COLOR") != "" || a.env("TERM") == "dumb",
		Output:  a.io.Out,
	})
	if err != nil {
		return inputError(err)
	}
	opts := append([]tea.ProgramOption{
		tea.WithContext(ctx), tea.WithInput(a.io.In), tea.WithOutput(a.io.Out), tea.WithAltScreen(),
	}, ro.teaOptions...)
	if _, err := tea.NewProgram(m, opts...).Run(); err != nil {
		if ctx.Err() != nil {
			return inputError(fmt.Errorf("review interrupted: %w", ctx.Err()))
		}
		return inputError(fmt.Errorf("review: %w", err))
	}
	return nil
}

// readCapacityReport reads path as a capacity report (from goodput
// capacity --format json) when it is one: ok is false for any other file,
// which readReviewReport then reads (and reports errors of, with line and
// column).
func readCapacityReport(ctx context.Context, path string) (*report.CapacityDoc, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, false, nil // readReviewReport names the error
	}
	var peek struct {
		Capacity json.RawMessage `json:"capacity"`
	}
	if json.Unmarshal(raw, &peek) != nil || len(peek.Capacity) == 0 || string(peek.Capacity) == "null" {
		return nil, false, nil
	}
	doc, err := report.ReadCapacityJSON(raw)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return doc, true, nil
}
