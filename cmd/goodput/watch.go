package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/engines"
	"github.com/goodput-dev/goodput/sources/prometheus"
)

// watchOptions are the flags of `goodput watch`.
type watchOptions struct {
	Policy             string
	Format             string
	Out                string
	FailOnInconclusive bool
	NoColor            bool
	Seed               uint64
	Resamples          int
	// Every is the time between looks (default: one --step bucket).
	Every time.Duration
	// MaxDuration is the planned length of the watch from --start; its end
	// gives the final verdict (default 30 m live, the whole window in replay).
	MaxDuration time.Duration
	// Looks is the planned number of looks (default MaxDuration / Every);
	// given alone it sets Every = MaxDuration / Looks.
	Looks int
	// Lag is how long after a look's time a live look waits before it
	// queries, so the last scrape has landed (default 30 s).
	Lag  time.Duration
	prom promOptions
}

// Defaults of `goodput watch`.
const (
	defaultWatchDuration = 30 * time.Minute
	defaultWatchLag      = 30 * time.Second
	maxWatchLooks        = 1000
)

func (a *app) newWatchCmd() *cobra.Command {
	o := &watchOptions{}
	cmd := &cobra.Command{
		Use:   "watch --prometheus URL --baseline-selector S --canary-selector S [--start T [--end T]] [flags]",
		Short: "Judge a running canary again and again as data arrives, and stop as soon as the answer is clear",
		Long: `Watch a canary on Prometheus: judge the window from --start to the look's
time every --every (default one --step bucket), and stop at the first look
that fails a gate, or as soon as every gate has passed. The end of
--max-duration gives the final verdict.

Looking again and again at a fixed-horizon test inflates its error rate (30
looks at α = 5% fail an unchanged canary about a quarter of the time). Each
look here decides at a group-sequential boundary instead: O'Brien–Fleming-type
(Lan–DeMets) alpha spending over the planned looks, so the chance of a false
fail over the whole watch stays at the policy's α. Early looks need strong
evidence; a large regression still fails within minutes.

Live: without --end, the window grows from --start (default: now) and a look
is taken every --every of wall-clock time, --lag after the look's time.
Replay: with --start and --end, the looks are made as if live over a past
window (post-mortems, calibration, tests).

Output: the final report in --format text, markdown or json (as judge);
--format jsonl prints one JSON object per look instead (fields look, window,
verdict, metrics[] with each gate's verdict and interval, alpha_spent), the
last with "final": true. Progress goes to stderr. Ctrl-C stops the watch and
reports the state at the last look.

Exit codes as judge: 0 pass, 1 fail, 2 usage error, 3 inconclusive
(1 with --fail-on-inconclusive), 4 could not evaluate.`,
		Example: `  goodput watch --prometheus http://127.0.0.1:9090 --baseline-selector 'deployment="baseline"' --canary-selector 'deployment="canary"' --max-duration 30m
  goodput watch --prometheus http://127.0.0.1:9090 --baseline-selector 'deployment="baseline"' --canary-selector 'deployment="canary"' \
    --start 2026-01-01T00:00:00Z --end 2026-01-01T00:30:00Z --format jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runWatch(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Policy, "policy", policies.DefaultName, "built-in policy name ("+strings.Join(policies.Names(), ", ")+") or a policy YAML file")
	fs.StringVar(&o.Format, "format", "text", "output format: text, markdown or json (the final report), or jsonl (one line per look)")
	fs.StringVarP(&o.Out, "out", "o", "", "write the output to FILE instead of stdout (written atomically at the end)")
	fs.BoolVar(&o.FailOnInconclusive, "fail-on-inconclusive", false, "exit 1 instead of 3 when the final verdict is inconclusive")
	fs.BoolVar(&o.NoColor, "no-color", false, "no colour in text output (also when NO_COLOR is set)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed for resampling; the same inputs and seed give the same report")
	fs.IntVar(&o.Resamples, "resamples", 2000, "bootstrap resamples for quantile gates (≥ 200)")
	fs.DurationVar(&o.Every, "every", 0, "time between looks (default: one --step bucket)")
	fs.DurationVar(&o.MaxDuration, "max-duration", 0, "planned length of the watch from --start; its end gives the final verdict (default 30m live, --end − --start in replay)")
	fs.IntVar(&o.Looks, "looks", 0, "planned number of looks (default --max-duration / --every)")
	fs.DurationVar(&o.Lag, "lag", defaultWatchLag, "live: wait this long after a look's time before querying, so its last scrape has landed")
	o.prom.addFlags(fs)
	return cmd
}

// watchPlan is the validated schedule of a watch.
type watchPlan struct {
	start, end time.Time // end = start + max-duration: the last look
	every      time.Duration
	looks      []time.Time // the planned look times
	replay     bool
	seq        stats.SequentialPlan
}

// planWatch validates the watch's flags against the policy's α.
func (o *watchOptions) planWatch(alpha float64, now func() time.Time) (watchPlan, error) {
	var w watchPlan
	po := &o.prom
	if po.Last != 0 {
		return w, usageError("watch grows its window from --start: --last is not used (give --start, or nothing to start now)")
	}
	parse := func(flag, v string) (time.Time, error) {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return t, usageError("--%s %q: want an RFC 3339 time such as 2026-11-29T14:00:00Z", flag, v)
		}
		return t, nil
	}
	var err error
	switch {
	case po.Start != "":
		if w.start, err = parse("start", po.Start); err != nil {
			return w, err
		}
	case po.End != "":
		return w, usageError("--end needs --start (a replay of a past window)")
	default:
		w.start = now().Truncate(time.Second)
	}
	w.replay = po.End != ""
	var end time.Time
	if w.replay {
		if end, err = parse("end", po.End); err != nil {
			return w, err
		}
		if !end.After(w.start) {
			return w, usageError("the window ends (%s) before it starts (%s)", end.UTC().Format(time.RFC3339), w.start.UTC().Format(time.RFC3339))
		}
		if end.After(now()) {
			return w, usageError("--end %s is in the future: a replay needs a past window (drop --end to watch live)", po.End)
		}
	}
	if o.MaxDuration < 0 || o.Every < 0 || o.Looks < 0 || o.Lag < 0 {
		return w, usageError("--max-duration, --every, --looks and --lag must not be negative")
	}
	maxDur := o.MaxDuration
	if maxDur == 0 {
		maxDur = defaultWatchDuration
		if w.replay {
			maxDur = end.Sub(w.start)
		}
	}
	if w.replay && w.start.Add(maxDur).After(end) {
		return w, usageError("--max-duration %v runs past --end (the window holds %v): shorten it or extend --end", maxDur, end.Sub(w.start))
	}
	w.every = o.Every
	switch {
	case o.Looks > 0 && o.Every > 0:
		if time.Duration(o.Looks)*o.Every != maxDur {
			return w, usageError("--looks %d × --every %v ≠ --max-duration %v: give two of them", o.Looks, o.Every, maxDur)
		}
	case o.Looks > 0:
		w.every = maxDur / time.Duration(o.Looks)
	case w.every == 0:
		w.every = po.Step
	}
	if w.every < po.Step {
		return w, usageError("--every %v is shorter than one --step bucket (%v): a look needs a new bucket", w.every, po.Step)
	}
	if w.every%time.Second != 0 {
		return w, usageError("--every %v: want whole seconds", w.every)
	}
	n := int(maxDur / w.every)
	if n < 1 {
		return w, usageError("--max-duration %v is shorter than --every %v", maxDur, w.every)
	}
	if n > maxWatchLooks {
		return w, usageError("%d looks planned (--max-duration %v / --every %v): at most %d", n, maxDur, w.every, maxWatchLooks)
	}
	w.end = w.start.Add(maxDur)
	fr := make([]float64, 0, n+1)
	for k := 1; k <= n; k++ {
		t := w.start.Add(time.Duration(k) * w.every)
		w.looks = append(w.looks, t)
		fr = append(fr, float64(t.Sub(w.start))/float64(maxDur))
	}
	if last := w.looks[len(w.looks)-1]; last.Before(w.end) {
		// a remainder shorter than --every: the last look is the end
		w.looks = append(w.looks, w.end)
		fr = append(fr, 1)
	}
	if w.seq, err = stats.OBFPlan(alpha, fr); err != nil {
		return w, usageError("%v", err)
	}
	return w, nil
}

// gateTrack is one gate's state over the looks.
type gateTrack struct {
	verdict   analysis.Verdict // sticky pass; fail stops the watch
	decidedAt int              // look number (1-based) of the decision, 0 if none
}

// watchState is what the looks have decided so far: a value each look
// updates (applyLook) and the renderers read.
type watchState struct {
	look    int // looks made
	verdict analysis.Verdict
	gates   map[string]gateTrack
	order   []string
	last    *analysis.Report
	stopped string // why the watch ended: "fail", "pass", "end", "interrupted"
}

// applyLook folds look k's report (judged at the look's nominal level) into
// the state: any gate's fail fails the watch at once; a gate that passes
// stays passed; the watch passes when every gate has passed.
func applyLook(s watchState, k int, rep *analysis.Report) watchState {
	s.look = k
	s.last = rep
	if s.gates == nil {
		s.gates = map[string]gateTrack{}
	}
	anyFail := false
	for _, m := range rep.Metrics {
		g, seen := s.gates[m.Name]
		if !seen {
			s.order = append(s.order, m.Name)
			g.verdict = analysis.Inconclusive
		}
		switch {
		case m.Verdict == analysis.Fail:
			g = gateTrack{verdict: analysis.Fail, decidedAt: k}
			anyFail = true
		case m.Verdict == analysis.Pass && g.verdict != analysis.Pass:
			g = gateTrack{verdict: analysis.Pass, decidedAt: k}
		}
		s.gates[m.Name] = g
	}
	s.verdict = analysis.Inconclusive
	switch {
	case anyFail:
		s.verdict = analysis.Fail
	case len(s.order) > 0 && allPassed(s):
		s.verdict = analysis.Pass
	}
	return s
}

func allPassed(s watchState) bool {
	for _, n := range s.order {
		if s.gates[n].verdict != analysis.Pass {
			return false
		}
	}
	return true
}

// lookLine is one line of --format jsonl. Field names are stable.
type lookLine struct {
	Look       int          `json:"look"`
	Looks      int          `json:"looks"` // planned
	At         string       `json:"at"`    // the look's time, RFC 3339
	Window     lookWin      `json:"window"`
	Verdict    string       `json:"verdict"`       // the watch's verdict after this look
	Fraction   float64      `json:"information"`   // share of the planned window seen
	AlphaSpent float64      `json:"alpha_spent"`   // cumulative one-sided α spent by this look
	Alpha      float64      `json:"alpha"`         // the policy's one-sided α, spent in full at the last look
	Bound      float64      `json:"boundary_z"`    // this look's critical value on the z scale (null: nothing spent yet)
	Nominal    float64      `json:"nominal_alpha"` // this look's one-sided level per gate
	Metrics    []lookMetric `json:"metrics"`
	Final      bool         `json:"final"`
	Stopped    string       `json:"stopped,omitempty"` // on the final line: fail, pass, end or interrupted
	Reasons    []string     `json:"reasons,omitempty"`
}

type lookWin struct {
	Start   string  `json:"start"`
	End     string  `json:"end"`
	Seconds float64 `json:"seconds"`
}

type lookMetric struct {
	Name        string          `json:"name"`
	Verdict     string          `json:"verdict"`      // sticky: pass once passed, fail once failed
	LookVerdict string          `json:"look_verdict"` // this look's own call
	DecidedAt   int             `json:"decided_at"`   // look of the decision, 0 if none
	Delta       analysis.Num    `json:"delta"`
	Interval    [2]analysis.Num `json:"interval"` // at this look's nominal level
	Margin      analysis.Num    `json:"margin"`
	Guardrail   bool            `json:"guardrail"`
}

func nullableZ(v float64) float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}

func makeLookLine(w watchPlan, s watchState, k int, at time.Time) lookLine {
	l := lookLine{Look: k, Looks: len(w.looks), At: at.UTC().Format(time.RFC3339), Verdict: string(s.verdict),
		Fraction: w.seq.Fractions[k-1], AlphaSpent: w.seq.Spent[k-1], Alpha: w.seq.Alpha,
		Bound: nullableZ(w.seq.Bounds[k-1]), Nominal: w.seq.Nominal[k-1], Metrics: []lookMetric{},
		Window: lookWin{Start: w.start.UTC().Format(time.RFC3339), End: at.UTC().Format(time.RFC3339), Seconds: at.Sub(w.start).Seconds()}}
	if s.last != nil {
		for _, m := range s.last.Metrics {
			g := s.gates[m.Name]
			l.Metrics = append(l.Metrics, lookMetric{Name: m.Name, Verdict: string(g.verdict), LookVerdict: string(m.Verdict), DecidedAt: g.decidedAt,
				Delta: m.Delta, Interval: m.Interval, Margin: m.Margin, Guardrail: m.Guardrail})
		}
	}
	return l
}

// lookPolicy is the policy a look judges with: the same gates at the look's
// nominal level (confidence 1 − nominal, so each gate's interval is the
// repeated confidence interval at that look).
func lookPolicy(p *policies.Policy, nominal float64) *policies.Policy {
	q := *p
	q.Confidence = 1 - nominal
	return &q
}

func (a *app) runWatch(ctx context.Context, o *watchOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	switch o.Format {
	case "text", "markdown", "json", "jsonl":
	default:
		return usageError("--format %q: want text, markdown, json or jsonl", o.Format)
	}
	if !o.prom.enabled() {
		return usageError("watch reads both arms from Prometheus: give --prometheus URL with --baseline-selector and --canary-selector")
	}
	if o.Resamples < 200 {
		return usageError("--resamples %d: want at least 200", o.Resamples)
	}
	pp, err := o.prom.planSource(a.env, a.now)
	if err != nil {
		return err
	}
	pol, err := policies.Load(o.Policy)
	if err != nil {
		return inputError(err)
	}
	// 1 − 0.95 is 0.050000000000000044 in binary: round to what was meant
	w, err := o.planWatch(math.Round(pol.Alpha()*1e9)/1e9, a.now)
	if err != nil {
		return err
	}
	src, err := prometheus.New(pp.cfg)
	if err != nil {
		return usageError("%v", err)
	}
	engine := o.prom.Profile
	if engine == "auto" {
		engine = ""
	}
	mode := "live"
	if w.replay {
		mode = "replay"
	}
	fmt.Fprintf(a.io.ErrOut, "watching %s from %s for %v: %d looks every %v, one-sided α = %g spent O'Brien–Fleming-style\n",
		mode, w.start.UTC().Format(time.RFC3339), w.end.Sub(w.start), len(w.looks), w.every, w.seq.Alpha)

	var out bytes.Buffer // jsonl lines go out as they come unless --out
	lineOut := io.Writer(a.io.Out)
	if o.Out != "" {
		lineOut = &out
	}
	var s watchState
	s.verdict = analysis.Inconclusive
	var lookErr error
	for i, at := range w.looks {
		k := i + 1
		if !w.replay {
			if err := a.waitUntil(ctx, at.Add(o.Lag)); err != nil {
				s.stopped = "interrupted"
				break
			}
		} else if ctx.Err() != nil {
			s.stopped = "interrupted"
			break
		}
		rep, err := a.watchLook(ctx, src, pp, engine, w, k, at, pol, o)
		if err != nil {
			if ctx.Err() != nil {
				s.stopped = "interrupted"
				break
			}
			lookErr = err
			break
		}
		s = applyLook(s, k, rep)
		switch {
		case s.verdict == analysis.Fail:
			s.stopped = "fail"
		case s.verdict == analysis.Pass:
			s.stopped = "pass"
		case k == len(w.looks):
			s.stopped = "end"
		}
		fmt.Fprintf(a.io.ErrOut, "look %d/%d at %s (%v): %s; α spent %.4g of %g, boundary z ≥ %s\n", k, len(w.looks),
			at.UTC().Format(time.RFC3339), at.Sub(w.start), s.verdict, w.seq.Spent[k-1], w.seq.Alpha, fmtBound(w.seq.Bounds[k-1]))
		if o.Format == "jsonl" {
			l := makeLookLine(w, s, k, at)
			if s.stopped != "" {
				l.Final, l.Stopped = true, s.stopped
				l.Reasons = watchReasons(w, s)
			}
			if err := writeJSONLine(lineOut, l); err != nil {
				return inputError(err)
			}
		}
		if s.stopped != "" {
			break
		}
	}
	if lookErr != nil {
		if s.last != nil {
			fmt.Fprintf(a.io.ErrOut, "watch stopped at look %d of %d: %s so far\n", s.look, len(w.looks), s.verdict)
		}
		return lookErr
	}
	if s.stopped == "interrupted" {
		fmt.Fprintf(a.io.ErrOut, "interrupted after look %d of %d: reporting the state so far\n", s.look, len(w.looks))
		if s.verdict == analysis.Pass { // cannot happen: a pass stops at once
			s.verdict = analysis.Inconclusive
		}
	}
	if s.last == nil {
		return inputError(errors.New("watch ended before its first look: nothing to report"))
	}
	final := finalReport(w, s)
	if o.Format == "jsonl" {
		if s.stopped == "interrupted" {
			l := makeLookLine(w, s, s.look, w.looks[s.look-1])
			l.Final, l.Stopped, l.Reasons = true, s.stopped, final.Reasons
			if err := writeJSONLine(lineOut, l); err != nil {
				return inputError(err)
			}
		}
		if o.Out != "" {
			if err := writeFileAtomic(o.Out, out.Bytes()); err != nil {
				return inputError(err)
			}
		}
	} else {
		jo := &judgeOptions{Format: o.Format, Out: o.Out, NoColor: o.NoColor}
		if err := a.writeReport(final, jo); err != nil {
			return inputError(err)
		}
	}
	return verdictExit(final.Verdict, o.FailOnInconclusive)
}

func fmtBound(c float64) string {
	if math.IsInf(c, 1) {
		return "∞ (nothing spent yet)"
	}
	return fmt.Sprintf("%.3f", c)
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// waitUntil sleeps until the injected clock reaches t, or ctx ends.
func (a *app) waitUntil(ctx context.Context, t time.Time) error {
	for {
		d := t.Sub(a.now())
		if d <= 0 {
			return ctx.Err()
		}
		if a.sleep != nil {
			if err := a.sleep(ctx, d); err != nil {
				return err
			}
			continue
		}
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// watchLook reads the window [start, at] of both arms and judges it at look
// k's nominal level. A look whose boundary is still infinite (nothing spent
// yet) is judged for display but cannot decide.
func (a *app) watchLook(ctx context.Context, src *prometheus.Source, pp promPlan, engine string, w watchPlan, k int, at time.Time, pol *policies.Policy, o *watchOptions) (*analysis.Report, error) {
	read := func(arm sources.Arm, sel engines.Selector) (sources.Dataset, error) {
		ds, err := src.Read(ctx, prometheus.Query{Arm: arm, Selector: sel, Start: w.start, End: at, Step: o.prom.Step, Engine: engine, ClassLabel: o.prom.ClassLabel})
		if err != nil {
			return ds, inputError(fmt.Errorf("look %d: prometheus %s: %w", k, redactURL(pp.cfg.URL), err))
		}
		return ds, nil
	}
	base, err := read(sources.Baseline, pp.baseline)
	if err != nil {
		return nil, err
	}
	can, err := read(sources.Canary, pp.canary)
	if err != nil {
		return nil, err
	}
	noteMixedForms(src.HistogramForms(sources.Baseline), src.HistogramForms(sources.Canary), can.Agg)
	return judgeLook(&base, &can, pol, w.seq.Nominal[k-1], o.Seed, o.Resamples)
}

// judgeLook judges one look's data at the one-sided level nominal; with
// nominal 0 (an infinite boundary) every gate is held inconclusive.
func judgeLook(base, can *sources.Dataset, pol *policies.Policy, nominal float64, seed uint64, resamples int) (*analysis.Report, error) {
	hold := !(nominal > 0)
	lp := pol
	if !hold {
		lp = lookPolicy(pol, nominal)
		// a percentile bootstrap places a one-sided level only when enough
		// resamples fall beyond it: take more resamples at small levels
		resamples = max(resamples, min(maxLookResamples, int(math.Ceil(minTailResamples/nominal))))
	}
	rep, err := analysis.Judge(base, can, analysis.Config{Policy: lp, Seed: seed, Resamples: resamples, ToolVersion: version})
	if err != nil {
		var de *analysis.DataError
		if errors.As(err, &de) {
			// too little data so far is not an error in a watch: the
			// look is inconclusive and the next one has more
			return &analysis.Report{SchemaVersion: analysis.SchemaVersion, Verdict: analysis.Inconclusive,
				Reasons: []string{"could not evaluate yet: " + err.Error()}, Metrics: []analysis.Metric{}, Warnings: []string{},
				Policy: analysis.PolicyRef{Name: pol.Name, SHA256: pol.SHA256, Source: pol.Source}, ToolVersion: version, Judge: "goodput"}, nil
		}
		return nil, inputError(err)
	}
	if hold {
		for i := range rep.Metrics {
			if rep.Metrics[i].Verdict != analysis.Inconclusive {
				rep.Metrics[i].Verdict = analysis.Inconclusive
				rep.Metrics[i].Reason += "; held: this early look spends no α (its boundary is infinite)"
			}
		}
		rep.Verdict = analysis.Inconclusive
		return rep, nil
	}
	holdUnresolved(rep, nominal, resamples)
	return rep, nil
}

// holdUnresolved holds the decisions of bootstrap gates at a look whose
// one-sided level nominal is finer than resamples can place: with fewer
// than minTailResamples resamples beyond it, the percentile interval is
// too narrow on both sides, so neither a pass nor a fail may stand.
func holdUnresolved(rep *analysis.Report, nominal float64, resamples int) {
	if nominal*float64(resamples) >= minTailResamples {
		return
	}
	held := false
	for i := range rep.Metrics {
		m := &rep.Metrics[i]
		if strings.Contains(m.Method, "bootstrap") && m.Verdict != analysis.Inconclusive {
			m.Verdict = analysis.Inconclusive
			m.Reason += fmt.Sprintf("; held: %d bootstrap resamples cannot place this look's one-sided level %.2g", resamples, nominal)
			held = true
		}
	}
	if held {
		rep.Verdict, rep.Reasons = analysis.Overall(rep.Metrics)
	}
}

// Resampling at a look: at least minTailResamples resamples beyond the
// look's one-sided level, at most maxLookResamples in all.
const (
	minTailResamples = 10
	maxLookResamples = 20000
)

// watchReasons explains the watch's verdict in the report's reasons.
func watchReasons(w watchPlan, s watchState) []string {
	k := s.look
	at := w.looks[k-1]
	head := fmt.Sprintf("watch: look %d of %d at %v of %v; one-sided α spent %.4g of %g (O'Brien–Fleming-type spending, boundary z ≥ %s at this look)",
		k, len(w.looks), at.Sub(w.start), w.end.Sub(w.start), w.seq.Spent[k-1], w.seq.Alpha, fmtBound(w.seq.Bounds[k-1]))
	var out []string
	switch s.stopped {
	case "fail":
		out = append(out, head+": a gate failed, the watch stopped")
	case "pass":
		out = append(out, head+": every gate has passed, the watch stopped")
	case "interrupted":
		out = append(out, head+": interrupted before the planned end; the verdict is the state so far")
	default:
		out = append(out, head+": the planned end; gates not decided by now are inconclusive")
	}
	for _, n := range s.order {
		g := s.gates[n]
		if g.decidedAt > 0 {
			out = append(out, fmt.Sprintf("%s: %s at look %d (%v)", n, g.verdict, g.decidedAt, w.looks[g.decidedAt-1].Sub(w.start)))
		}
	}
	return out
}

// finalReport is the last look's report with the watch's verdict: gates
// that passed at an earlier look keep their pass (with the look noted).
func finalReport(w watchPlan, s watchState) *analysis.Report {
	r := *s.last
	r.Metrics = append([]analysis.Metric(nil), s.last.Metrics...)
	for i := range r.Metrics {
		m := &r.Metrics[i]
		g := s.gates[m.Name]
		if g.verdict == analysis.Pass && m.Verdict != analysis.Pass {
			m.Verdict = analysis.Pass
			m.Reason = fmt.Sprintf("passed at look %d (%v); at the last look: %s", g.decidedAt, w.looks[g.decidedAt-1].Sub(w.start), m.Reason)
		}
	}
	r.Verdict = s.verdict
	var rs []string
	for _, m := range r.Metrics {
		if m.Verdict == s.verdict || (s.verdict == analysis.Fail && m.Verdict == analysis.Inconclusive) {
			if s.verdict != analysis.Pass {
				rs = append(rs, m.Name+": "+m.Reason)
			}
		}
	}
	r.Reasons = append(watchReasons(w, s), rs...)
	if len(r.Metrics) == 0 {
		r.Reasons = append(r.Reasons, s.last.Reasons...)
	}
	return &r
}
