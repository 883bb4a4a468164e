package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goodput-dev/goodput/analysis"
)

// TextOptions configure the text renderer.
type TextOptions struct {
	Color bool // ANSI colour for verdicts (off under NO_COLOR or --no-color)
}

// Sanitize makes untrusted text (labels, class names, paths, messages) safe
// for a terminal: control characters, including ESC, are shown as \xNN, and
// invalid UTF-8 as U+FFFD.
func Sanitize(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune('\uFFFD')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r):
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

func verdictWord(v analysis.Verdict, color bool) string {
	w := strings.ToUpper(string(v))
	if !color {
		return w
	}
	switch v {
	case analysis.Pass:
		return ansiGreen + w + ansiReset
	case analysis.Fail:
		return ansiRed + w + ansiReset
	}
	return ansiYellow + w + ansiReset
}

// Text writes the human-readable report.
func Text(w io.Writer, r *analysis.Report, opt TextOptions) error {
	tw := &errWriter{w: w}
	bold := func(s string) string {
		if opt.Color {
			return ansiBold + s + ansiReset
		}
		return s
	}
	judge := ""
	if r.Judge != "" && r.Judge != "goodput" {
		judge = fmt.Sprintf(", %s-style comparator judge", Sanitize(r.Judge))
	}
	nGates := fmt.Sprintf("%d gates", len(r.Metrics))
	if len(r.Metrics) == 1 {
		nGates = "1 gate"
	}
	tw.printf("%s %s  (policy %s, %s, confidence %g%s)\n", bold("goodput:"), verdictWord(r.Verdict, opt.Color),
		Sanitize(r.Policy.Name), nGates, r.Measurement.Confidence, judge)
	for _, reason := range r.Reasons {
		tw.printf("  %s\n", Sanitize(reason))
	}
	tw.printf("\n")

	b, c := r.Arms.Baseline, r.Arms.Canary
	rows := [][]string{
		{"", "baseline", "canary"},
		{"offered", count(b.Accounting.Offered), count(c.Accounting.Offered)},
		{"admitted", count(b.Accounting.Admitted), count(c.Accounting.Admitted)},
		{"rejected", count(b.Accounting.Rejected), count(c.Accounting.Rejected)},
		{"canceled", count(b.Accounting.Canceled), count(c.Accounting.Canceled)},
		{"failed", count(b.Accounting.Failed), count(c.Accounting.Failed)},
		{"completed", count(b.Accounting.Completed), count(c.Accounting.Completed)},
		{"good", count(b.Accounting.Good), count(c.Accounting.Good)},
		{"SLO attainment", pct(b.SLOAttainment), pct(c.SLOAttainment)},
		{"goodput", rate(b.GoodputRPS, "req/s"), rate(c.GoodputRPS, "req/s")},
		{"token goodput", rate(b.TokenGoodputTPS, "tok/s"), rate(c.TokenGoodputTPS, "tok/s")},
		{"window", secs(b.WindowSeconds), secs(c.WindowSeconds)},
	}
	if b.LeftOut != nil || c.LeftOut != nil {
		// a stretch left out of both arms (baseline_outage, shared_outage): its requests
		// are in no row above, its seconds in no rate
		left := func(a analysis.ArmSummary, f func(*analysis.LeftOut) string) string {
			if a.LeftOut == nil {
				return "-"
			}
			return f(a.LeftOut)
		}
		for _, l := range []struct {
			name string
			f    func(*analysis.LeftOut) string
		}{
			{"left out (outage)", func(l *analysis.LeftOut) string { return count(l.Accounting.Offered) + " in " + secs(l.Seconds) }},
			{"  failed there", func(l *analysis.LeftOut) string { return count(l.Accounting.Failed) }},
			{"  good there", func(l *analysis.LeftOut) string { return count(l.Accounting.Good) }},
		} {
			rows = append(rows, []string{l.name, left(b, l.f), left(c, l.f)})
		}
	}
	if b.Replicas > 0 || c.Replicas > 0 {
		rows = append(rows, []string{"replicas", fmt.Sprint(b.Replicas), fmt.Sprint(c.Replicas)},
			[]string{"goodput/replica", rate(b.GoodputPerReplica, "req/s"), rate(c.GoodputPerReplica, "req/s")})
	}
	if b.Accounting.Retries > 0 || c.Accounting.Retries > 0 {
		rows = append(rows, []string{"retry amplification", fmt.Sprintf("%.3f", float64(b.RetryAmplification)), fmt.Sprintf("%.3f", float64(c.RetryAmplification))})
	}
	if b.CostPerGoodRequest != nil || c.CostPerGoodRequest != nil {
		rows = append(rows, []string{"cost/good request", usd(b.CostPerGoodRequest), usd(c.CostPerGoodRequest)})
	}
	if b.Cost != nil && c.Cost != nil {
		part := func(f func(*analysis.ArmCost) analysis.Num) []string {
			x, y := f(b.Cost), f(c.Cost)
			return []string{usd(&x), usd(&y)}
		}
		for _, p := range []struct {
			name string
			f    func(*analysis.ArmCost) analysis.Num
		}{
			{"  accelerator", func(c *analysis.ArmCost) analysis.Num { return c.AcceleratorUSD }},
			{"  host", func(c *analysis.ArmCost) analysis.Num { return c.HostUSD }},
			{"  network", func(c *analysis.ArmCost) analysis.Num { return c.NetworkUSD }},
			{"  idle reserve", func(c *analysis.ArmCost) analysis.Num { return c.IdleReserveUSD }},
			{"  total cost", func(c *analysis.ArmCost) analysis.Num { return c.TotalUSD }},
			{"good req per $", func(c *analysis.ArmCost) analysis.Num { return c.GoodRequestsPerDollar }},
		} {
			rows = append(rows, append([]string{p.name}, part(p.f)...))
		}
	}
	for _, l := range []struct {
		name   string
		qb, qc analysis.Quantiles
	}{{"TTFT", b.Latency.TTFT, c.Latency.TTFT}, {"TPOT", b.Latency.TPOT, c.Latency.TPOT}, {"E2E", b.Latency.E2E, c.Latency.E2E}} {
		if l.qb.N == 0 && l.qc.N == 0 {
			continue
		}
		rows = append(rows, []string{l.name + " p50 / p99", dur(l.qb.P50) + " / " + dur(l.qb.P99), dur(l.qc.P50) + " / " + dur(l.qc.P99)})
	}
	table(tw, rows, []bool{false, true, true})
	tw.printf("\n")

	conf := 1 - 2*(1-r.Measurement.Confidence)
	gates := [][]string{{"gate", "baseline", "canary", "delta", fmt.Sprintf("interval (%g%%)", math.Round(conf*1000)/10), "margin", "verdict", "n (b/c)"}}
	var colors []analysis.Verdict
	for _, m := range r.Metrics {
		var notes []string
		if m.Guardrail {
			notes = append(notes, "guardrail")
		}
		if AdjustedValues(m) {
			// the row shows the tested numbers, not the measured ones
			// (those stay in the summary above): say so
			l := AdjustedLabel(m)
			if l == "" {
				l = "adjusted"
			}
			notes = append(notes, l)
		}
		name := Sanitize(m.Name) // a per-class gate's name holds the input's label
		if len(notes) > 0 {
			name += " (" + strings.Join(notes, ", ") + ")"
		}
		gates = append(gates, []string{name, value(m, m.Baseline), value(m, m.Canary), delta(m, m.Delta),
			"[" + delta(m, m.Interval[0]) + ", " + delta(m, m.Interval[1]) + "]", margin(m),
			strings.ToUpper(m.VerdictLabel()), count(m.NBaseline) + "/" + count(m.NCanary)})
		colors = append(colors, m.Verdict)
	}
	lines := tableLines(gates, []bool{false, true, true, true, true, true, false, true})
	for i, l := range lines {
		if i > 0 && opt.Color {
			v := colors[i-1]
			word := strings.ToUpper(string(v))
			l = strings.Replace(l, word, verdictWord(v, true), 1)
		}
		tw.printf("%s\n", l)
	}
	for _, m := range r.Metrics {
		if m.Naive != nil {
			label := AdjustedLabel(m)
			if label == "" {
				label = "adjusted"
			}
			measured := ""
			if AdjustedValues(m) {
				measured = fmt.Sprintf(" (measured %s vs %s; tested %s vs %s)", value(m, m.Naive.Baseline), value(m, m.Naive.Canary), value(m, m.Baseline), value(m, m.Canary))
			}
			tw.printf("  %s: naive %s [%s, %s] → %s %s [%s, %s]%s\n", Sanitize(m.Name), delta(m, m.Naive.Delta),
				delta(m, m.Naive.Interval[0]), delta(m, m.Naive.Interval[1]), label, delta(m, m.Delta), delta(m, m.Interval[0]), delta(m, m.Interval[1]), measured)
		}
	}
	if len(r.Metrics) > 0 {
		tw.printf("  methods: %s\n", methods(r.Metrics))
	}
	textInternal(tw, r)

	if len(r.Classes) > 1 {
		tw.printf("\n")
		cl := [][]string{{"class", "share b/c", "attainment b/c", "TTFT p99 b/c", "TPOT p99 b/c"}}
		for _, k := range r.Classes {
			cl = append(cl, []string{Sanitize(ClassName(k)), pct(k.Baseline.Share) + " / " + pct(k.Canary.Share),
				classPct(k.Baseline) + " / " + classPct(k.Canary),
				classDur(k.Baseline.TTFTP99, k.Baseline.TTFTP99Bounds) + " / " + classDur(k.Canary.TTFTP99, k.Canary.TTFTP99Bounds),
				classDur(k.Baseline.TPOTP99, k.Baseline.TPOTP99Bounds) + " / " + classDur(k.Canary.TPOTP99, k.Canary.TPOTP99Bounds)})
		}
		table(tw, cl, []bool{false, true, true, true, true})
	}

	if len(r.Diagnostics) > 0 {
		tw.printf("\ndiagnostics (not gating):\n")
		for _, d := range r.Diagnostics {
			if d.Method != "mann-whitney" {
				tw.printf("  %s %s [%s, %s] (n %s/%s): %s\n", Sanitize(d.Metric), fmtSigned(float64(d.Estimate)), fmtSigned(float64(d.Interval[0])),
					fmtSigned(float64(d.Interval[1])), count(d.NBaseline), count(d.NCanary), Sanitize(d.Note))
				continue
			}
			tw.printf("  %-5s Mann-Whitney U=%.6g p=%.3g q=%.3g; Hodges-Lehmann shift %s [%s, %s] (n %s/%s)\n", d.Metric, float64(d.Statistic),
				float64(d.PValue), float64(d.QValue), sdur(d.Estimate), sdur(d.Interval[0]), sdur(d.Interval[1]), count(d.NBaseline), count(d.NCanary))
		}
	}
	var applied []string
	for _, s := range r.Normalization.Steps {
		if s.Applied {
			applied = append(applied, s.Name+": "+s.Detail)
		}
	}
	if len(applied) > 0 {
		tw.printf("\nadjusted:\n")
		for _, a := range applied {
			tw.printf("  %s\n", Sanitize(a))
		}
	}
	if len(r.Warnings) > 0 {
		tw.printf("\nwarnings:\n")
		for _, w := range r.Warnings {
			tw.printf("  - %s\n", Sanitize(w))
		}
	}
	m := r.Measurement
	unit := fmt.Sprintf("buckets of %gs", m.BucketSeconds)
	if m.ResamplingUnit != "" {
		unit = "resampling unit: " + Sanitize(m.ResamplingUnit)
	}
	tw.printf("\nmeasured at %s; window %s; %s; clock %s\n", Sanitize(m.Location), window(m.Window), unit, m.Clock)
	return tw.err
}

func methods(ms []analysis.Metric) string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		if m.Method != "" && !seen[m.Method] {
			seen[m.Method] = true
			out = append(out, m.Method)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

func window(w analysis.Window) string {
	if w.Start == "" {
		if !(float64(w.Seconds) > 0) {
			return "unknown (no arrival times, no run duration)"
		}
		return secs(w.Seconds)
	}
	return fmt.Sprintf("%s … %s (%s)", w.Start, w.End, secs(w.Seconds))
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

func table(w *errWriter, rows [][]string, right []bool) {
	for _, l := range tableLines(rows, right) {
		w.printf("%s\n", l)
	}
}

// tableLines aligns cells into columns two spaces apart; right[i]
// right-aligns column i. Widths count runes.
func tableLines(rows [][]string, right []bool) []string {
	widths := make([]int, len(right))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var out []string
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out
}

func isNaN(n analysis.Num) bool { return math.IsNaN(float64(n)) || math.IsInf(float64(n), 0) }

func count(n int64) string { return analysis.Thousands(n) }

func pct(n analysis.Num) string {
	if isNaN(n) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f%%", float64(n)*100)
}

func rate(n analysis.Num, unit string) string {
	if isNaN(n) {
		return "n/a"
	}
	return fmt.Sprintf("%.4g %s", float64(n), unit)
}

func secs(n analysis.Num) string {
	if isNaN(n) {
		return "n/a"
	}
	return fmt.Sprintf("%.1fs", float64(n))
}

func usd(n *analysis.Num) string {
	if n == nil || isNaN(*n) {
		return "n/a"
	}
	return fmt.Sprintf("$%.4g", float64(*n))
}

// dur renders seconds as ms below 1 s.
func dur(n analysis.Num) string {
	v := float64(n)
	switch {
	case isNaN(n):
		return "n/a"
	case math.Abs(v) < 1:
		return fmt.Sprintf("%.1fms", v*1000)
	}
	return fmt.Sprintf("%.3fs", v)
}

func sdur(n analysis.Num) string {
	if !isNaN(n) && float64(n) >= 0 {
		return "+" + dur(n)
	}
	return dur(n)
}

// value renders a gate's per-arm value in its unit.
func value(m analysis.Metric, n analysis.Num) string {
	switch m.Unit {
	case "fraction":
		return pct(n)
	case "s", "seconds":
		return dur(n)
	case "USD":
		if isNaN(n) {
			return "n/a"
		}
		return fmt.Sprintf("$%.4g", float64(n))
	}
	if isNaN(n) {
		return "n/a"
	}
	return fmt.Sprintf("%.4g", float64(n))
}

// delta renders a difference on the gate's scale.
func delta(m analysis.Metric, n analysis.Num) string {
	if isNaN(n) {
		return "n/a"
	}
	if m.Scale == "relative" {
		return fmt.Sprintf("%+.1f%%", float64(n)*100)
	}
	if isSeconds(m) {
		return sdur(n) // an absolute difference of times (window_end)
	}
	return fmt.Sprintf("%+.2fpp", float64(n)*100)
}

// isSeconds reports whether a gate's values are times (seconds).
func isSeconds(m analysis.Metric) bool { return m.Unit == "s" || m.Unit == "seconds" }

func margin(m analysis.Metric) string {
	v := math.Round(float64(m.Margin)*100*1e6) / 1e6
	if m.Scale == "relative" {
		return fmt.Sprintf("%g%%", v)
	}
	if isSeconds(m) {
		return dur(m.Margin)
	}
	return fmt.Sprintf("%gpp", v)
}

// AdjustedValues reports whether a gate's row shows values other than the
// arms' measured ones (its naive comparison's).
func AdjustedValues(m analysis.Metric) bool {
	if m.Naive == nil {
		return false
	}
	differ := func(a, b analysis.Num) bool {
		x, y := float64(a), float64(b)
		if math.IsNaN(x) || math.IsNaN(y) {
			return math.IsNaN(x) != math.IsNaN(y)
		}
		return math.Abs(x-y) > 1e-9*math.Max(math.Abs(x), math.Abs(y))
	}
	return differ(m.Baseline, m.Naive.Baseline) || differ(m.Canary, m.Naive.Canary)
}

// AdjustedLabel names what a gate's tested numbers were adjusted for, from
// its Adjusted notes: "at baseline load", "standardized", "mix-weighted",
// "CUPED-adjusted", joined by " + "; "" when nothing changed them.
func AdjustedLabel(m analysis.Metric) string {
	if m.Naive == nil {
		return ""
	}
	var out []string
	add := func(s string) {
		for _, o := range out {
			if o == s {
				return
			}
		}
		out = append(out, s)
	}
	for _, a := range m.Adjusted {
		switch {
		case strings.HasPrefix(a, "matched offered load"):
			add("at baseline load")
		case strings.HasPrefix(a, "standardized to the"):
			add("standardized")
		case strings.HasPrefix(a, "quantiles of the"):
			add("mix-weighted")
		case strings.HasPrefix(a, "CUPED on"):
			add("CUPED-adjusted")
		}
	}
	return strings.Join(out, " + ")
}

// classPct is a class's SLO attainment: its bounds "lo–hi%" when metrics
// data bound it, else the figure.
func classPct(a analysis.ClassArm) string {
	if b := a.SLOAttainmentBounds; b != nil && !isNaN(b[0]) && !isNaN(b[1]) && b[0] != b[1] {
		return fmt.Sprintf("%.2f–%.2f%%", float64(b[0])*100, float64(b[1])*100)
	}
	return pct(a.SLOAttainment)
}

// classDur is a class's p99 with, for metrics data, the edges of the
// bucket holding it: "412.0ms (250.0ms–500.0ms)".
func classDur(v analysis.Num, b *[2]analysis.Num) string {
	if b == nil || isNaN(v) {
		return dur(v)
	}
	hi := "+Inf"
	if !math.IsInf(float64(b[1]), 1) {
		hi = dur(b[1])
	}
	return fmt.Sprintf("%s (%s–%s)", dur(v), dur(b[0]), hi)
}

// fmtSigned renders a diagnostic's estimate that is not a duration.
func fmtSigned(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%+.4g", v)
}
