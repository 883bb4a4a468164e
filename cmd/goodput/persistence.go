package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/clickhouse"
	"github.com/goodput-dev/goodput/sources/requestlog"
)

// persistenceOptions are the flags of `goodput persistence`.
type persistenceOptions struct {
	Baseline, Canary []string
	Policy           string
	Window           time.Duration
	Format           string
	InputFormat      string
	Out              string
	// ch reads the history (an A/A pair's, or one arm's) from request
	// logs in ClickHouse instead, over win's --start/--end or --last
	ch  chOptions
	win promOptions
}

func (a *app) newPersistenceCmd() *cobra.Command {
	o := &persistenceOptions{}
	cmd := &cobra.Command{
		Use:   "persistence (--baseline FILE… [--canary FILE…] | --clickhouse URL --table T --baseline-where C [--canary-where C]) [flags]",
		Short: "Measure how long the fleet's own slowdowns last, for window.persistence",
		Long: `Read a long history and say how long the fleet's own slowdowns last: the
value of the policy's window.persistence. A 30-minute run reads its intervals'
variance from itself, which is right when slowdowns fade within about a minute
and too narrow when they last several (identical arms then fail more often
than the confidence level says). Hours of history tell what one run cannot.

The history is cut into windows as long as the runs to be judged (--window,
default 30m). For each window, how far its SLO attainment strayed from the
history's, set against what the window's own batch sums read; their ratio,
κ, is 1 when a run reads its variance right. κ is turned into the
correlation time of a slowdown that would give it, with an interval.

Give, best first:
  --baseline A --canary B   an A/A history: two arms of the same build side by
                            side on one clock, paired as the judge pairs them
  --clickhouse URL --table T --baseline-where C --canary-where C (--start T
  --end T | --last D)       the same from request logs in ClickHouse: each arm's
                            requests and good ones counted per replica and
                            bucket by the server, no record sent back (without
                            --canary-where, one arm as below)
  --baseline A              one arm's history: its replicas split in two
                            halves (a slowdown every replica shares at once is
                            not seen); with no replica names the arm alone (its
                            own load cycle then counts: an upper bound)

At least 8 windows are needed (4 hours at 30m); more read better. On the
fleet model a day's A/A history shows slowdowns of 3.3 minutes in 73% of
histories and declares for slowdowns of 45 s in 7%; eight hours, in 37% and
5%. The time read sits below a slowdown's own where sampling noise shares
the variance: the interval's upper end is the cautious declaration.
Exit codes: 0 measured, 2 usage error, 4 could not evaluate.`,
		Example: `  goodput persistence --baseline aa/baseline-*.jsonl --canary aa/canary-*.jsonl
  goodput persistence --baseline history.jsonl.gz --window 1h --format json
  goodput persistence --clickhouse http://clickhouse:8123 --table logs.requests --last 24h \
      --baseline-where "deployment = 'aa-a'" --canary-where "deployment = 'aa-b'"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runPersistence(cmd.Context(), o, cmd.Flags().Changed)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.Baseline, "baseline", nil, "request logs of the history (one arm, or the baseline of an A/A pair)")
	fs.StringArrayVar(&o.Canary, "canary", nil, "request logs of the A/A pair's other arm, on the same clock")
	fs.StringVar(&o.Policy, "policy", policies.DefaultName, "built-in policy name ("+strings.Join(policies.Names(), ", ")+") or a policy YAML file: its SLO, bucket and confidence")
	fs.DurationVar(&o.Window, "window", 30*time.Minute, "length of the runs to be judged")
	fs.StringVar(&o.Format, "format", "text", "output format: text or json")
	fs.StringVar(&o.InputFormat, "input-format", "", "force the input format instead of detecting it ("+strings.Join(inputFormats(), ", ")+")")
	fs.StringVarP(&o.Out, "out", "o", "", "write the result to FILE instead of stdout (written atomically)")
	o.ch.addFlags(fs)
	fs.Lookup("clickhouse").Usage = "read the history from request logs in ClickHouse over its HTTP interface (http[s]://host:8123): one arm's rows (--baseline-where), or an A/A pair's (and --canary-where); credentials from $" + envClickHouseUser + " and $" + envClickHousePassword
	fs.StringVar(&o.win.Start, "start", "", "with --clickhouse: the history's start, RFC 3339 (e.g. 2026-11-29T00:00:00Z); with --end")
	fs.StringVar(&o.win.End, "end", "", "with --clickhouse: the history's end, RFC 3339; default now when --last is given")
	fs.DurationVar(&o.win.Last, "last", 0, "with --clickhouse: a history of this length ending at --end or now (e.g. 24h); instead of --start")
	return cmd
}

// runPersistence runs the command; changed says whether a flag was given.
func (a *app) runPersistence(ctx context.Context, o *persistenceOptions, changed func(name string) bool) error {
	if o.Format != "text" && o.Format != "json" {
		return usageError("--format %q: want text or json", o.Format)
	}
	if o.ch.enabled() {
		if len(o.Baseline)+len(o.Canary) > 0 || o.InputFormat != "" {
			return usageError("give either --clickhouse with --baseline-where/--canary-where, or --baseline/--canary files (and --input-format), not both")
		}
	} else {
		var given []string
		for _, name := range append(o.ch.flagNames(), "start", "end", "last") {
			if changed(name) {
				given = append(given, "--"+name)
			}
		}
		if len(given) > 0 {
			return usageError("%s only apply with --clickhouse URL", strings.Join(given, ", "))
		}
		if len(o.Baseline) == 0 {
			return usageError("persistence needs --baseline FILE (one arm's history, or with --canary an A/A pair's), or --clickhouse URL with --baseline-where (and --canary-where for an A/A pair)")
		}
	}
	if o.Window < time.Minute || o.Window > 24*time.Hour {
		return usageError("--window %v: want 1m … 24h, the length of the runs to be judged", o.Window)
	}
	pol, err := policies.Load(o.Policy)
	if err != nil {
		return inputError(err)
	}
	if o.ch.enabled() {
		cs, err := o.ch.open(&o.win, pol, a.env, a.now, true)
		if err != nil {
			return err
		}
		h, names, err := a.countClickHouse(ctx, cs, &o.ch, pol)
		if err != nil {
			return inputError(err)
		}
		return a.writePersistence(o, pol, h, o.ch.CanaryWhere != "", names)
	}
	// as the judge does: no input given twice (an arm counted twice, or
	// an A/A pair compared with itself), by name or by content
	if err := samePathOrFile(map[sources.Arm][]string{sources.Baseline: o.Baseline, sources.Canary: o.Canary}, a.io.In); err != nil {
		return inputError(err)
	}
	ro := requestlog.Options{DropImplausible: pol.Window.Implausible == "drop"}
	h := analysis.NewHistoryCounter(pol)
	bin, err := a.countHistory(ctx, sources.Baseline, 0, o.Baseline, o.InputFormat, pol, h, ro)
	if err != nil {
		return inputError(err)
	}
	names := [2]string{strings.Join(o.Baseline, ", "), ""}
	if len(o.Canary) > 0 {
		cin, err := a.countHistory(ctx, sources.Canary, 1, o.Canary, o.InputFormat, pol, h, ro)
		if err != nil {
			return inputError(err)
		}
		bin = append(bin, cin...)
		names[1] = strings.Join(o.Canary, ", ")
	}
	ins := make([]armInput, len(bin))
	for i, in := range bin {
		ins[i] = armInput{arm: in.Arm, path: in.Path, sha256: in.SHA256, format: in.Format}
	}
	if err := sameContent(ins); err != nil {
		return inputError(err)
	}
	return a.writePersistence(o, pol, h, len(o.Canary) > 0, names)
}

// writePersistence fits what h counted (an A/A pair's arms when pair) and
// writes the result; names name each arm's input for errors.
func (a *app) writePersistence(o *persistenceOptions, pol *policies.Policy, h *analysis.HistoryCounter, pair bool, names [2]string) error {
	res, err := h.Fit(pol, o.Window, pair, names)
	if err != nil {
		return inputError(err)
	}
	var buf bytes.Buffer
	if o.Format == "json" {
		err = persistenceJSON(&buf, res, o.Window, pol)
	} else {
		err = persistenceText(&buf, res, o.Window)
	}
	if err != nil {
		return inputError(err)
	}
	if o.Out == "" {
		_, err = a.io.Out.Write(buf.Bytes())
	} else {
		err = writeFileAtomic(o.Out, buf.Bytes())
	}
	if err != nil {
		return inputError(err)
	}
	return nil
}

// countHistory counts one arm's files into h as arm k and returns their
// inputs, of inputFormat ("" or auto: detected). A native request log is scanned (requestlog.Scan: the judge's
// parser and checks) into a counter of its own, merged once the file is
// accepted whole, and no record is kept: memory follows the history's
// length, not its requests. Read again, as the streaming judge does, when
// dropping implausible records needs a second look. Other formats are
// read whole.
func (a *app) countHistory(ctx context.Context, arm sources.Arm, k int, paths []string, inputFormat string, pol *policies.Policy, h *analysis.HistoryCounter, ro requestlog.Options) ([]sources.Input, error) {
	var inputs []sources.Input
	for _, p := range paths {
		in, err := openInput(ctx, p, a.io.In, a.io.ErrOut)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s input %s: %v (give a request log; - reads standard input)", arm, p, pe.Err)
			}
			return nil, err
		}
		format := inputFormat
		if format == "" || format == "auto" {
			if format, err = detectFormat(in); err != nil {
				in.Close()
				return nil, err
			}
		}
		if format != requestlog.Format {
			in.Close()
			if p == "-" {
				return nil, fmt.Errorf("standard input is %s, which is read whole: give it as a file", format)
			}
			ds, _, err := readArm(ctx, arm, []string{p}, format, ro, a.io.In, a.io.ErrOut)
			if err != nil {
				return nil, err
			}
			if ds.Agg != nil {
				return nil, fmt.Errorf("%s: persistence reads request logs (one record per request), not metrics", p)
			}
			for i := range ds.Requests {
				h.Add(k, &ds.Requests[i])
			}
			inputs = append(inputs, ds.Inputs...)
			continue
		}
		in.h = nil // the scan hashes on a goroutine of its own
		f := &streamFile{arm: arm, in: in}
		sub := analysis.NewHistoryCounter(pol)
		ds, err := f.scanRereading(ctx, requestlog.ScanOptions{Options: ro},
			func() { sub = analysis.NewHistoryCounter(pol) },
			func(r *sources.Request) error { sub.Add(k, r); return nil }, "give a file")
		in.Close()
		if err != nil {
			return nil, err
		}
		h.Merge(sub)
		inputs = append(inputs, ds.Inputs...)
	}
	return inputs, nil
}

// historyChunk is how much history one ClickHouse count query reads: a
// few of them show progress on a day, and each stays well inside the
// query timeout.
const historyChunk = 6 * time.Hour

// countClickHouse counts a history from ClickHouse into a new counter —
// an A/A pair's two arms, or without --canary-where one arm by replica —
// each arm's requests and good ones per replica and bucket of the policy
// (good by its SLO, counted by the server; no record is sent back), one
// query per historyChunk of the window cs names; it names each arm for
// errors.
func (a *app) countClickHouse(ctx context.Context, cs chSource, o *chOptions, pol *policies.Policy) (*analysis.HistoryCounter, [2]string, error) {
	h := analysis.NewHistoryCounter(pol)
	names := [2]string{"the baseline's rows in ClickHouse (--baseline-where)", "the canary's rows in ClickHouse (--canary-where)"}
	queries := int((cs.end.Sub(cs.start) + historyChunk - 1) / historyChunk)
	arms := []struct {
		arm   sources.Arm
		where string
	}{{sources.Baseline, o.BaselineWhere}, {sources.Canary, o.CanaryWhere}}
	if o.CanaryWhere == "" {
		arms, names[0], names[1] = arms[:1], "the history's rows in ClickHouse (--baseline-where)", ""
	}
	for k, arm := range arms {
		fmt.Fprintf(a.io.ErrOut, "counting the %s's history in ClickHouse table %s per %gs bucket (%d queries)…\n", arm.arm, o.Table, cs.plan.Step, queries)
		for from := cs.start; from.Before(cs.end); from = from.Add(historyChunk) {
			to := from.Add(historyChunk)
			if to.After(cs.end) {
				to = cs.end
			}
			counts, err := cs.src.ReadCounts(ctx, clickhouse.Query{Arm: arm.arm, Where: arm.where, Start: from, End: to, Plan: cs.plan, AllowEmpty: true})
			if err != nil {
				return nil, names, err
			}
			for _, c := range counts {
				h.AddCounts(k, c.Replica, c.Slice, float64(c.Good), float64(c.Offered))
			}
		}
	}
	return h, names, nil
}

// declared is the window.persistence to declare from h: its point
// correlation time to the second, "" when the history shows none beyond
// what a run reads for itself (κ's interval holds 1).
func declared(h analysis.HistoryPersistence) string {
	if !(h.KappaLo > 1) || !(h.Tau > 0) {
		return ""
	}
	return fmtTau(math.Ceil(h.Tau))
}

// fmtTau writes s seconds as a duration to the nearest second ("0s" for
// none).
func fmtTau(s float64) string {
	if !(s > 0) {
		return "0s"
	}
	return (time.Duration(math.Round(s)) * time.Second).String()
}

// persistenceText renders h for a terminal or a log.
func persistenceText(w io.Writer, h analysis.HistoryPersistence, window time.Duration) error {
	var b strings.Builder
	what := map[string]string{
		"arms":     "the two arms of an A/A history, paired as the judge pairs them",
		"replicas": fmt.Sprintf("one arm's %d replicas split in two halves (a slowdown every replica has at once is not seen)", h.Replicas),
		"arm":      "one arm alone, without replica names (its own load cycle counts as persistence: an upper bound)",
	}[h.Source]
	fmt.Fprintf(&b, "history: %s, %s requests; %s\n", fmtTau(h.Span), analysis.Thousands(int64(h.Requests)), what)
	fmt.Fprintf(&b, "windows: %d of %v, buckets of %gs\n", h.Windows, window, h.BucketSecs)
	fmt.Fprintf(&b, "kappa:   %.2f [%.2f, %.2f] (%.0f%% interval): the windows' attainment strays %.2f times as much (in variance) as each window's own batch sums read; 1 is read right\n",
		h.Kappa, h.KappaLo, h.KappaHi, 100*h.Confidence, h.Kappa)
	fmt.Fprintf(&b, "slowdowns last: %s [%s, %s] (correlation time)\n", fmtTau(h.Tau), fmtTau(h.TauLo), fmtTau(h.TauHi))
	if d := declared(h); d != "" {
		fmt.Fprintf(&b, "declare: window: {persistence: %s}  (runs of %v then widen their intervals to what such slowdowns call for; the read sits below a slowdown's own time where sampling noise shares the variance — up to %s, the interval's end, is the cautious choice)\n",
			d, window, fmtTau(math.Ceil(h.TauHi)))
	} else {
		fmt.Fprintf(&b, "declare: nothing: the history shows no persistence beyond what a run of %v reads for itself (the interval holds 1); leave window.persistence unset, or read a longer history (up to %s is not ruled out)\n",
			window, fmtTau(h.TauHi))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// persistenceDoc is the JSON form of the result (schema_version 1).
type persistenceDoc struct {
	SchemaVersion int        `json:"schema_version"`
	Source        string     `json:"source"`
	Replicas      int        `json:"replicas"`
	Requests      int        `json:"requests"`
	SpanSeconds   float64    `json:"span_seconds"`
	WindowSeconds float64    `json:"window_seconds"`
	BucketSeconds float64    `json:"bucket_seconds"`
	Windows       int        `json:"windows"`
	Confidence    float64    `json:"confidence"`
	Kappa         float64    `json:"kappa"`
	KappaInterval [2]float64 `json:"kappa_interval"`
	TauSeconds    float64    `json:"tau_seconds"`
	TauInterval   [2]float64 `json:"tau_interval_seconds"`
	Declare       string     `json:"declare"`
	// DeclareUpper is the τ interval's upper end as a duration, the
	// cautious declaration ("" when Declare is).
	DeclareUpper string `json:"declare_upper"`
	Policy       string `json:"policy"`
}

func persistenceJSON(w io.Writer, h analysis.HistoryPersistence, window time.Duration, pol *policies.Policy) error {
	r6 := func(v float64) float64 { return math.Round(v*1e6) / 1e6 }
	doc := persistenceDoc{SchemaVersion: 1, Source: h.Source, Replicas: h.Replicas, Requests: h.Requests,
		SpanSeconds: h.Span, WindowSeconds: window.Seconds(), BucketSeconds: h.BucketSecs, Windows: h.Windows,
		Confidence: r6(h.Confidence), Kappa: r6(h.Kappa), KappaInterval: [2]float64{r6(h.KappaLo), r6(h.KappaHi)},
		TauSeconds: r6(h.Tau), TauInterval: [2]float64{r6(h.TauLo), r6(h.TauHi)}, Declare: declared(h), Policy: pol.Name}
	if doc.Declare != "" {
		doc.DeclareUpper = fmtTau(math.Ceil(h.TauHi))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
