package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goodput-dev/goodput/analysis"
)

// MarkdownOptions configures Markdown.
type MarkdownOptions struct {
	// MaxBytes caps the rendered body in bytes of UTF-8 (0 = unlimited).
	// Sections are left out, least important first, until the body fits,
	// and a note says what was left out; the body is never rejected. Bytes
	// are never fewer than characters, so a byte cap also holds GitHub's
	// 65,536-character comment limit (PR comments pass 65,536 minus the
	// length of their hidden marker line).
	MaxBytes int
	// Review is an optional reviewer decision on the report; nil leaves the
	// review section out.
	Review *analysis.ReviewRecord
}

// Markdown writes r as GitHub-flavoured Markdown: a first line with the
// verdict and the decisive gate, the gate table, request accounting, a
// Mermaid chart of goodput over time, latency quantiles and collapsible
// details (measurement spec, normalization, per-class breakdown,
// diagnostics, warnings, inputs, policy, review). Every string taken from
// the report passes through EscapeMarkdown. The output is deterministic.
func Markdown(w io.Writer, r *analysis.Report, opt MarkdownOptions) error {
	if r == nil {
		return errors.New("markdown: no report to render")
	}
	if opt.MaxBytes < 0 {
		return fmt.Errorf("markdown: MaxBytes %d is negative (use 0 for unlimited)", opt.MaxBytes)
	}
	body := mdAssemble(mdSections(r, opt.Review), opt.MaxBytes)
	_, err := io.WriteString(w, body)
	return err
}

// zwj is U+200D ZERO WIDTH JOINER: invisible, and enough to stop GitHub from
// turning "@team" into a mention or "#12" into an issue reference.
const zwj = "\u200d"

// EscapeMarkdown makes untrusted text (labels, class names, file names,
// error strings) safe to place anywhere in a Markdown paragraph, list item
// or table cell: HTML is shown as text (< > & become entities), | and line
// breaks cannot break a table (| is escaped, CR, LF, tabs and Unicode line
// separators become spaces, other control and bidi-override characters are
// dropped), @-mentions and #123 / GH-123 references are defused with a zero
// width joiner, and Markdown punctuation (* _ ` [ ] ~ $ \ #, and a leading
// "- ", "+ " or "1. " list marker) is backslash-escaped; an underscore inside a
// word (snake_case) is left alone, as GFM never reads it as emphasis. With
// [ and ] escaped, ( ) and ! cannot form links or images and stay as they
// are. Invalid UTF-8 becomes U+FFFD.
func EscapeMarkdown(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	start := true // at the start of the text: list markers would take effect
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		next := s[i+size:]
		i += size
		if start {
			start = false
			switch {
			case (r == '-' || r == '+') && (next == "" || next[0] == ' ' || next[0] == '\t'):
				// "- x" or "+ x" would start a list item; "-0.2%" would not
				b.WriteByte('\\')
				b.WriteRune(r)
				continue
			case r >= '0' && r <= '9':
				// "1." or "1)" at the start would begin an ordered list.
				j := 0
				for j < len(next) && next[j] >= '0' && next[j] <= '9' {
					j++
				}
				if j < len(next) && (next[j] == '.' || next[j] == ')') &&
					(j+1 == len(next) || next[j+1] == ' ' || next[j+1] == '\t') {
					b.WriteRune(r)
					b.WriteString(next[:j])
					b.WriteByte('\\')
					b.WriteByte(next[j])
					i += j + 1
					continue
				}
			}
		}
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\r' || r == '\t' || r == '\u2028' || r == '\u2029' || r == '\u0085':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			// other control characters: dropped
		case r == '\u200e' || r == '\u200f' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069'):
			// bidi controls could make text read differently than it is
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '@':
			b.WriteString("@" + zwj)
		case r == '#':
			b.WriteString(`\#`)
			if len(next) > 0 && next[0] >= '0' && next[0] <= '9' {
				b.WriteString(zwj)
			}
		case (r == 'g' || r == 'G') && len(next) >= 3 && (next[0] == 'h' || next[0] == 'H') &&
			next[1] == '-' && next[2] >= '0' && next[2] <= '9':
			b.WriteRune(r)
			b.WriteByte(next[0])
			b.WriteString(zwj)
			i++
		case r == '_' && mdWordBefore(s[:i-size]) && mdWordAfter(next):
			// snake_case: GFM never reads an underscore inside a word as emphasis
			b.WriteByte('_')
		case strings.ContainsRune("\\`*_[]~|$", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func mdIsWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func mdWordBefore(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return len(s) > 0 && mdIsWordRune(r)
}

func mdWordAfter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return len(s) > 0 && mdIsWordRune(r)
}

// mdSection is one part of the body. prio 0 is never left out; higher
// priorities are kept longer when the body must shrink.
type mdSection struct {
	name string // for the trim note
	prio int
	text string
}

// Trim priorities, least important first.
const (
	mdPrioKeep = iota
	mdPrioClasses
	mdPrioDiagnostics
	mdPrioGateDetails
	mdPrioInputs
	mdPrioChart
	mdPrioLatency
	mdPrioMeasurement
	mdPrioNormalization
	mdPrioPolicy
	mdPrioAccounting
	mdPrioWarnings
	mdPrioReview
)

func mdSections(r *analysis.Report, review *analysis.ReviewRecord) []mdSection {
	secs := []mdSection{{name: "summary", prio: mdPrioKeep, text: mdHead(r) + mdGates(r)}}
	add := func(name string, prio int, text string) {
		if text != "" {
			secs = append(secs, mdSection{name: name, prio: prio, text: text})
		}
	}
	if review != nil {
		add("review decision", mdPrioReview, mdReview(review, r.Verdict))
	}
	add("request accounting", mdPrioAccounting, mdAccounting(r))
	add("goodput chart", mdPrioChart, mdChart(r))
	add("internal work", mdPrioChart, mdInternal(r))
	add("latency quantiles", mdPrioLatency, mdLatency(r))
	add("gate details", mdPrioGateDetails, mdGateDetails(r))
	add("measurement spec", mdPrioMeasurement, mdMeasurement(r))
	add("normalization", mdPrioNormalization, mdNormalization(r))
	add("per-class breakdown", mdPrioClasses, mdClasses(r))
	add("diagnostics", mdPrioDiagnostics, mdDiagnostics(r))
	add("warnings", mdPrioWarnings, mdWarnings(r))
	add("inputs", mdPrioInputs, mdInputs(r))
	add("policy and tool version", mdPrioPolicy, mdPolicy(r))
	return secs
}

// mdAssemble joins the sections, leaving out the least important ones
// until the body fits in maxBytes (0 = unlimited).
func mdAssemble(secs []mdSection, maxBytes int) string {
	total := 0
	for _, s := range secs {
		total += len(s.text)
	}
	if maxBytes <= 0 || total <= maxBytes {
		return mdJoin(secs, nil)
	}
	dropped := make([]bool, len(secs))
	for prio := mdPrioKeep + 1; prio <= mdPrioReview; prio++ {
		for i, s := range secs {
			if s.prio == prio && !dropped[i] {
				dropped[i] = true
				total -= len(s.text)
			}
		}
		if total+len(mdTrimNote(secs, dropped, false, maxBytes)) <= maxBytes {
			return mdJoin(secs, dropped) + mdTrimNote(secs, dropped, false, maxBytes)
		}
	}
	// Only the summary is left and it is still too long: cut it at a line
	// boundary.
	note := mdTrimNote(secs, dropped, true, maxBytes)
	var head strings.Builder
	for i, s := range secs {
		if !dropped[i] {
			head.WriteString(s.text)
		}
	}
	h := head.String()
	room := maxBytes - len(note)
	if room <= 0 {
		return mdCutRunes(note, maxBytes)
	}
	if len(h) > room {
		h = h[:room]
		if nl := strings.LastIndexByte(h, '\n'); nl >= 0 {
			h = h[:nl+1]
		} else {
			h = mdCutRunes(h, room)
		}
	}
	return h + note
}

func mdJoin(secs []mdSection, dropped []bool) string {
	var b strings.Builder
	for i, s := range secs {
		if dropped == nil || !dropped[i] {
			b.WriteString(s.text)
		}
	}
	return b.String()
}

// mdTrimNote says which sections were left out to fit the size limit.
func mdTrimNote(secs []mdSection, dropped []bool, summaryCut bool, maxBytes int) string {
	var names []string
	for i, s := range secs {
		if dropped[i] {
			names = append(names, s.name)
		}
	}
	if summaryCut {
		names = append(names, "the end of the summary")
	}
	limit := "GitHub's 65,536-character comment limit"
	if maxBytes > 65536 {
		limit = "the " + mdInt(int64(maxBytes)) + "-byte limit"
	}
	return "\n---\n\n_✂️ Trimmed to fit " + limit + "; left out: " +
		strings.Join(names, ", ") + ". The full report is in the JSON report._\n"
}

// mdCutRunes cuts s to at most n bytes without splitting a character.
func mdCutRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ---- summary -------------------------------------------------------------

func mdIcon(v analysis.Verdict) string {
	switch v {
	case analysis.Pass:
		return "✅"
	case analysis.Fail:
		return "❌"
	case analysis.Inconclusive:
		return "⚠️"
	}
	return "❔"
}

func mdVerdict(v analysis.Verdict) string {
	switch v {
	case analysis.Pass, analysis.Fail, analysis.Inconclusive:
		return string(v)
	case "":
		return "no verdict"
	}
	return EscapeMarkdown(string(v))
}

// mdGateIcon and mdGateVerdict show a gate's row: a fail-only check that
// did not fail without passing (Metric.NotFailed) reads "not failed"
// beside a neutral icon, not a pass.
func mdGateIcon(m *analysis.Metric) string {
	if m.DidNotFail() {
		return "➖"
	}
	return mdIcon(m.Verdict)
}

func mdGateVerdict(m *analysis.Metric) string {
	if m.DidNotFail() {
		return m.VerdictLabel()
	}
	return mdVerdict(m.Verdict)
}

// mdDecisive picks the gate that explains the overall verdict: for fail the
// failed gate with the smallest p(fail), for inconclusive the first
// undecided gate, for pass the gate whose interval comes closest to its
// margin. Ties go to policy order. It returns nil when no gate fits.
func mdDecisive(r *analysis.Report) *analysis.Metric {
	var best *analysis.Metric
	bestKey := math.Inf(1)
	for i := range r.Metrics {
		m := &r.Metrics[i]
		if m.Verdict != r.Verdict || m.DidNotFail() {
			// a check that did not fail is not within its margin
			continue
		}
		var key float64
		switch r.Verdict {
		case analysis.Fail:
			key = float64(m.PFail)
		case analysis.Inconclusive:
			return m
		default:
			// share of the margin left unused; scales differ across gates
			key = float64(m.Margin) - m.WorstHarm()
			if float64(m.Margin) > 0 {
				key /= float64(m.Margin)
			}
		}
		if math.IsNaN(key) {
			key = math.Inf(1)
		}
		if best == nil || key < bestKey {
			best, bestKey = m, key
		}
	}
	return best
}

func mdHead(r *analysis.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s **%s**", mdIcon(r.Verdict), mdVerdict(r.Verdict))
	if m := mdDecisive(r); m != nil {
		b.WriteString(" — ")
		b.WriteString(mdGateSentence(r, m))
	} else if len(r.Reasons) > 0 {
		b.WriteString(" — ")
		b.WriteString(EscapeMarkdown(r.Reasons[0]))
	}
	b.WriteString("\n\n")
	if len(r.Reasons) > 0 {
		for _, reason := range r.Reasons {
			b.WriteString("- " + EscapeMarkdown(reason) + "\n")
		}
		b.WriteString("\n")
	}
	if n := len(r.Warnings); n > 0 {
		fmt.Fprintf(&b, "⚠️ %d %s — see **Warnings** below.\n\n", n, mdPlural(n, "warning", "warnings"))
	}
	return b.String()
}

func mdGateSentence(r *analysis.Report, m *analysis.Metric) string {
	name := EscapeMarkdown(m.Name)
	nums := mdDelta(m, float64(m.Delta)) + " " + mdInterval(m)
	n := fmt.Sprintf(" (n = %s / %s)", mdInt(m.NBaseline), mdInt(m.NCanary))
	switch m.Verdict {
	case analysis.Fail:
		if m.Guardrail {
			return fmt.Sprintf("%s %s is worse with confidence (guardrail)%s", name, nums, n)
		}
		return fmt.Sprintf("%s %s exceeds the %s margin%s", name, nums, mdMargin(m), n)
	case analysis.Inconclusive:
		lo, hi, margin := float64(m.Interval[0]), float64(m.Interval[1]), float64(m.Margin)
		switch {
		case m.Guardrail && (math.IsNaN(lo) || math.IsNaN(hi)):
			// a check without an interval (records that end early, a
			// short replica outage): its reason says what holds the run
			return fmt.Sprintf("%s holds the run: %s", name, EscapeMarkdown(m.Reason))
		case math.IsNaN(float64(m.Delta)) || math.IsNaN(lo) || math.IsNaN(hi):
			// nothing was estimated: say why instead of empty numbers
			return fmt.Sprintf("%s could not be estimated: %s", name, EscapeMarkdown(m.Reason))
		case m.Guardrail && m.Direction == "two_sided" && (lo > margin || hi < -margin):
			// beyond its tolerance, yet a check that does not fail on it
			return fmt.Sprintf("%s %s lies beyond its ±%s tolerance, which holds the run (guardrail)%s", name, nums, mdMargin(m), n)
		}
		return fmt.Sprintf("%s %s cannot be told apart from the %s margin%s", name, nums, mdMargin(m), n)
	}
	passed, notFailed := 0, 0
	for _, g := range r.Metrics {
		switch {
		case g.DidNotFail():
			notFailed++
		case g.Verdict == analysis.Pass:
			passed++
		}
	}
	also := ""
	if notFailed == 1 {
		also = "; 1 fail-only check did not fail"
	} else if notFailed > 1 {
		also = fmt.Sprintf("; %d fail-only checks did not fail", notFailed)
	}
	if len(r.Metrics)-notFailed == 1 {
		return fmt.Sprintf("the gate is within its margin: %s %s vs the %s margin%s%s", name, nums, mdMargin(m), n, also)
	}
	return fmt.Sprintf("%d of %d gates within their margins; closest: %s %s vs the %s margin%s%s",
		passed, len(r.Metrics)-notFailed, name, nums, mdMargin(m), n, also)
}

func mdGates(r *analysis.Report) string {
	if len(r.Metrics) == 0 {
		return "_No gates were evaluated._\n\n"
	}
	var b strings.Builder
	b.WriteString("| gate | baseline | canary | delta | interval | margin | verdict | n |\n")
	b.WriteString("|---|--:|--:|--:|:-:|--:|---|--:|\n")
	for i := range r.Metrics {
		m := &r.Metrics[i]
		name := EscapeMarkdown(m.Name)
		if m.Guardrail {
			name += " (guardrail)"
		}
		if AdjustedValues(*m) {
			// tested, not measured, values: the summary keeps the measured ones
			l := AdjustedLabel(*m)
			if l == "" {
				l = "adjusted"
			}
			name += " _(" + l + ")_"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s %s | %s / %s |\n",
			name, mdValue(float64(m.Baseline), m.Unit), mdValue(float64(m.Canary), m.Unit),
			mdDelta(m, float64(m.Delta)), mdInterval(m), mdMargin(m), mdGateIcon(m), mdGateVerdict(m),
			mdInt(m.NBaseline), mdInt(m.NCanary))
	}
	b.WriteString("\n")
	var notes []string
	for i := range r.Metrics {
		m := &r.Metrics[i]
		if m.Verdict == analysis.Pass || mdListed(r.Reasons, m.Reason) {
			continue // the reasons above already say it
		}
		note := fmt.Sprintf("- **%s** (%s)", EscapeMarkdown(m.Name), mdVerdict(m.Verdict))
		if m.Reason != "" {
			note += ": " + EscapeMarkdown(m.Reason)
		}
		if md := m.MoreData; md != nil && mdFinite(float64(md.Factor)) && !strings.Contains(m.Reason, "× the data") {
			note += fmt.Sprintf(" — about %s× the data would decide it", mdSig(float64(md.Factor)))
			var parts []string
			if mdFinite(float64(md.Requests)) {
				parts = append(parts, mdInt(int64(math.Ceil(float64(md.Requests))))+" more requests")
			}
			if mdFinite(float64(md.Minutes)) {
				parts = append(parts, "~"+mdSig(float64(md.Minutes))+" min at the current rate")
			}
			if len(parts) > 0 {
				note += " (" + strings.Join(parts, ", ") + ")"
			}
		}
		notes = append(notes, note)
	}
	if len(notes) > 0 {
		b.WriteString(strings.Join(notes, "\n") + "\n\n")
	}
	return b.String()
}

// mdListed reports whether a gate's reason already appears in the
// report's reasons.
func mdListed(reasons []string, reason string) bool {
	if reason == "" {
		return false
	}
	for _, r := range reasons {
		if strings.Contains(r, reason) {
			return true
		}
	}
	return false
}

func mdReview(rv *analysis.ReviewRecord, verdict analysis.Verdict) string {
	var b strings.Builder
	b.WriteString("#### Review\n\n")
	var decision string
	switch rv.Decision {
	case "approve":
		decision = "✅ **approved**"
	case "reject":
		decision = "❌ **rejected**"
	default:
		decision = "❔ **" + EscapeMarkdown(rv.Decision) + "**"
	}
	b.WriteString(decision)
	if rv.Reviewer != "" {
		b.WriteString(" by " + EscapeMarkdown(rv.Reviewer))
	}
	if rv.At != "" {
		b.WriteString(" at " + EscapeMarkdown(rv.At))
	}
	judged := rv.ReportVerdict
	if judged == "" {
		judged = verdict
	}
	if rv.Overrides {
		b.WriteString(" — overrides the **" + mdVerdict(judged) + "** verdict")
	}
	b.WriteString("\n\n")
	if rv.Note != "" {
		b.WriteString("> " + EscapeMarkdown(rv.Note) + "\n\n")
	}
	if mdIsHex(rv.ReportSHA256) {
		b.WriteString("<sub>for report sha256 `" + rv.ReportSHA256 + "`</sub>\n\n")
	}
	return b.String()
}

// ---- accounting ------------------------------------------------------------

func mdAccounting(r *analysis.Report) string {
	var b strings.Builder
	b.WriteString("#### Request accounting\n\n")
	b.WriteString("| arm | offered | admitted | rejected | canceled | failed | completed | good | attainment | goodput |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, arm := range []struct {
		name string
		s    *analysis.ArmSummary
	}{{"baseline", &r.Arms.Baseline}, {"canary", &r.Arms.Canary}} {
		a := arm.s.Accounting
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", arm.name,
			mdInt(a.Offered), mdInt(a.Admitted), mdInt(a.Rejected), mdInt(a.Canceled), mdInt(a.Failed),
			mdInt(a.Completed), mdInt(a.Good), mdValue(float64(arm.s.SLOAttainment), "fraction"),
			mdValue(float64(arm.s.GoodputRPS), "req/s"))
	}
	b.WriteString("\n")

	bs, cs := &r.Arms.Baseline, &r.Arms.Canary
	type row struct {
		name     string
		unit     string
		base, ca float64
	}
	cost := func(p *analysis.Num) float64 {
		if p == nil {
			return math.NaN()
		}
		return float64(*p)
	}
	rows := []row{
		{"token goodput", "tok/s", float64(bs.TokenGoodputTPS), float64(cs.TokenGoodputTPS)},
		{"throughput (completed)", "req/s", float64(bs.ThroughputRPS), float64(cs.ThroughputRPS)},
		{"output tokens", "tok/s", float64(bs.OutputTokensPS), float64(cs.OutputTokensPS)},
		{"goodput per replica", "req/s/replica", float64(bs.GoodputPerReplica), float64(cs.GoodputPerReplica)},
		{"replicas", "count", float64(bs.Replicas), float64(cs.Replicas)},
		{"retries", "count", float64(bs.Accounting.Retries), float64(cs.Accounting.Retries)},
		{"retry amplification", "×", float64(bs.RetryAmplification), float64(cs.RetryAmplification)},
		{"prefix-cache hit rate", "fraction", float64(bs.CacheHitRate), float64(cs.CacheHitRate)},
		{"GPU utilization", "fraction", float64(bs.GPUUtilization), float64(cs.GPUUtilization)},
		{"cost per good request", "USD", cost(bs.CostPerGoodRequest), cost(cs.CostPerGoodRequest)},
		{"cost, accelerator", "USD", part(bs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.AcceleratorUSD }), part(cs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.AcceleratorUSD })},
		{"cost, host", "USD", part(bs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.HostUSD }), part(cs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.HostUSD })},
		{"cost, network", "USD", part(bs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.NetworkUSD }), part(cs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.NetworkUSD })},
		{"cost, idle reserve", "USD", part(bs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.IdleReserveUSD }), part(cs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.IdleReserveUSD })},
		{"cost, total", "USD", part(bs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.TotalUSD }), part(cs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.TotalUSD })},
		{"cost per million good tokens", "USD", part(bs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.PerMillionGoodTokens }), part(cs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.PerMillionGoodTokens })},
		{"good requests per dollar", "count", part(bs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.GoodRequestsPerDollar }), part(cs.Cost, func(c *analysis.ArmCost) analysis.Num { return c.GoodRequestsPerDollar })},
		{"window", "s setting", float64(bs.WindowSeconds), float64(cs.WindowSeconds)},
		{"warm-up cut", "s setting", float64(bs.WarmupCutSeconds), float64(cs.WarmupCutSeconds)},
		// a stretch left out of both arms (baseline_outage, shared_outage): in no figure above
		{"left out (outage)", "s setting", part(bs.LeftOut, func(l *analysis.LeftOut) analysis.Num { return l.Seconds }), part(cs.LeftOut, func(l *analysis.LeftOut) analysis.Num { return l.Seconds })},
		{"left out: requests", "count", part(bs.LeftOut, func(l *analysis.LeftOut) int64 { return l.Accounting.Offered }), part(cs.LeftOut, func(l *analysis.LeftOut) int64 { return l.Accounting.Offered })},
		{"left out: failed", "count", part(bs.LeftOut, func(l *analysis.LeftOut) int64 { return l.Accounting.Failed }), part(cs.LeftOut, func(l *analysis.LeftOut) int64 { return l.Accounting.Failed })},
		{"left out: good", "count", part(bs.LeftOut, func(l *analysis.LeftOut) int64 { return l.Accounting.Good }), part(cs.LeftOut, func(l *analysis.LeftOut) int64 { return l.Accounting.Good })},
	}
	var lines []string
	for _, rw := range rows {
		if !mdFinite(rw.base) && !mdFinite(rw.ca) {
			continue
		}
		if rw.name == "replicas" && rw.base == 0 && rw.ca == 0 {
			continue // unknown
		}
		if rw.name == "retries" && rw.base == 0 && rw.ca == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s |", rw.name, mdValue(rw.base, rw.unit), mdValue(rw.ca, rw.unit)))
	}
	if len(lines) > 0 {
		b.WriteString("| per arm | baseline | canary |\n|---|--:|--:|\n")
		b.WriteString(strings.Join(lines, "\n") + "\n\n")
	}
	return b.String()
}

// part reads one figure of an optional part of an arm's summary (its
// cost breakdown, what was left out of it); NaN when the part is absent.
func part[T any, V ~float64 | ~int64](p *T, f func(*T) V) float64 {
	if p == nil {
		return math.NaN()
	}
	return float64(f(p))
}

// ---- chart -----------------------------------------------------------------

// mdMaxChartPoints caps the points per line so the chart stays legible.
const mdMaxChartPoints = 60

func mdChart(r *analysis.Report) string {
	if r.Measurement.Clock == "none" {
		return "#### Goodput over time\n\n_No arrival times in the inputs, so there is no time series._\n\n"
	}
	base, can := r.Series.Baseline, r.Series.Canary
	n := min(len(base), len(can))
	if n < 2 {
		if len(base) == 0 && len(can) == 0 {
			return ""
		}
		return "#### Goodput over time\n\n_Too few buckets in common for a chart._\n\n"
	}
	step := (n + mdMaxChartPoints - 1) / mdMaxChartPoints
	bl, cl := mdDownsample(base[:n], step), mdDownsample(can[:n], step)
	ymax := 0.0
	for _, v := range append(append([]float64(nil), bl...), cl...) {
		ymax = math.Max(ymax, v)
	}
	width := float64(r.Series.BucketSeconds)
	if !mdFinite(width) || width <= 0 {
		width = r.Measurement.BucketSeconds
	}
	span := float64(n) * width
	var b strings.Builder
	b.WriteString("#### Goodput over time\n\n")
	b.WriteString("```mermaid\nxychart-beta\n")
	b.WriteString("    title \"Good requests per second (line 1 baseline, line 2 canary)\"\n")
	if mdFinite(span) && span > 0 {
		fmt.Fprintf(&b, "    x-axis \"seconds from each arm's start\" 0 --> %s\n", mdChartNum(span))
	}
	fmt.Fprintf(&b, "    y-axis \"good req/s\" 0 --> %s\n", mdChartNum(mdNiceCeil(ymax*1.1)))
	b.WriteString("    line [" + mdChartList(bl) + "]\n")
	b.WriteString("    line [" + mdChartList(cl) + "]\n")
	b.WriteString("```\n\n")
	var note []string
	note = append(note, "line 1 baseline, line 2 canary")
	if mdFinite(width) && width > 0 {
		if step > 1 {
			note = append(note, fmt.Sprintf("%s buckets averaged %d at a time", mdDurSetting(width), step))
		} else {
			note = append(note, mdDurSetting(width)+" buckets")
		}
	}
	if len(base) != len(can) {
		note = append(note, fmt.Sprintf("only the first %s buckets, where both arms have data (baseline %s, canary %s)",
			mdInt(int64(n)), mdInt(int64(len(base))), mdInt(int64(len(can)))))
	}
	cb, cc := mdCutCount(base[:n]), mdCutCount(can[:n])
	if cb > 0 || cc > 0 {
		note = append(note, fmt.Sprintf("includes the warm-up cut (%d / %d buckets, not analysed)", cb, cc))
	}
	b.WriteString("<sub>" + strings.Join(note, "; ") + ".</sub>\n\n")
	return b.String()
}

func mdCutCount(ps []analysis.Point) int {
	c := 0
	for _, p := range ps {
		if p.Cut {
			c++
		}
	}
	return c
}

// mdDownsample averages goodput over consecutive runs of step buckets;
// unknown values are skipped, and a run with none reads 0.
func mdDownsample(ps []analysis.Point, step int) []float64 {
	out := make([]float64, 0, (len(ps)+step-1)/step)
	for i := 0; i < len(ps); i += step {
		sum, k := 0.0, 0
		for _, p := range ps[i:min(i+step, len(ps))] {
			if v := float64(p.GoodputRPS); mdFinite(v) {
				sum += v
				k++
			}
		}
		if k > 0 {
			sum /= float64(k)
		}
		out = append(out, sum)
	}
	return out
}

func mdChartList(vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = mdChartNum(v)
	}
	return strings.Join(parts, ", ")
}

// mdChartNum prints a plain decimal with at most three decimals.
func mdChartNum(v float64) string {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// mdNiceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func mdNiceCeil(v float64) float64 {
	if !mdFinite(v) || v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v*(1-1e-12) {
			return m * p
		}
	}
	return 10 * p
}

// ---- latency ---------------------------------------------------------------

func mdLatency(r *analysis.Report) string {
	b0, c0 := &r.Arms.Baseline.Latency, &r.Arms.Canary.Latency
	rows := []struct {
		name string
		b, c analysis.Quantiles
	}{{"TTFT", b0.TTFT, c0.TTFT}, {"TPOT", b0.TPOT, c0.TPOT}, {"E2E", b0.E2E, c0.E2E}}
	var b strings.Builder
	for _, rw := range rows {
		if rw.b.N == 0 && rw.c.N == 0 {
			continue
		}
		for _, q := range []struct {
			arm string
			q   analysis.Quantiles
		}{{"baseline", rw.b}, {"canary", rw.c}} {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", rw.name, q.arm, mdInt(q.q.N),
				mdDur(float64(q.q.Mean)), mdDur(float64(q.q.P50)), mdDur(float64(q.q.P90)),
				mdDur(float64(q.q.P95)), mdDur(float64(q.q.P99)))
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "#### Latency of completed requests\n\n" +
		"| latency | arm | n | mean | p50 | p90 | p95 | p99 |\n|---|---|--:|--:|--:|--:|--:|--:|\n" +
		b.String() + "\n"
}

// ---- details ---------------------------------------------------------------

func mdDetails(summary, body string) string {
	return "<details><summary>" + summary + "</summary>\n\n" + body + "\n</details>\n\n"
}

func mdGateDetails(r *analysis.Report) string {
	if len(r.Metrics) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| gate | direction | scale | method | p(fail) | buckets | adjusted | reason |\n")
	b.WriteString("|---|---|---|---|--:|--:|---|---|\n")
	for _, m := range r.Metrics {
		adj := make([]string, len(m.Adjusted))
		for i, a := range m.Adjusted {
			adj[i] = EscapeMarkdown(a)
		}
		adjusted := strings.Join(adj, ", ")
		if adjusted == "" {
			adjusted = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d / %d | %s | %s |\n",
			EscapeMarkdown(m.Name), mdOrDash(EscapeMarkdown(strings.ReplaceAll(m.Direction, "_", " "))),
			mdOrDash(EscapeMarkdown(m.Scale)), mdOrDash(EscapeMarkdown(m.Method)), mdP(float64(m.PFail)),
			m.Buckets[0], m.Buckets[1], adjusted, mdOrDash(EscapeMarkdown(m.Reason)))
	}
	return mdDetails("Gate details", b.String())
}

func mdMeasurement(r *analysis.Report) string {
	ms := r.Measurement
	var b strings.Builder
	item := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "- **%s:** %s\n", k, v)
		}
	}
	item("population", EscapeMarkdown(ms.Population))
	item("measured at", EscapeMarkdown(ms.Location))
	item("completion condition", EscapeMarkdown(ms.CompletionCondition))
	if ms.Window.Start != "" || ms.Window.End != "" {
		w := EscapeMarkdown(ms.Window.Start) + " → " + EscapeMarkdown(ms.Window.End)
		if mdFinite(float64(ms.Window.Seconds)) {
			w += " (" + mdDur(float64(ms.Window.Seconds)) + ")"
		}
		item("window", w)
	}
	for _, arm := range []struct {
		name string
		s    analysis.ArmSummary
	}{{"baseline", r.Arms.Baseline}, {"canary", r.Arms.Canary}} {
		w := arm.s.Window
		if w.Start == "" && w.End == "" {
			continue
		}
		item(arm.name+" window", EscapeMarkdown(w.Start)+" → "+EscapeMarkdown(w.End))
	}
	switch {
	case ms.ResamplingUnit != "":
		item("resampling unit", EscapeMarkdown(ms.ResamplingUnit))
	case ms.BucketSeconds > 0:
		item("bucket (resampling unit)", mdDurSetting(ms.BucketSeconds))
	}
	item("clock", EscapeMarkdown(ms.Clock))
	if ms.Confidence > 0 && ms.Confidence < 1 {
		item("confidence", mdTrimPct(ms.Confidence*100)+" (gate intervals are (1 − 2α) two-sided)")
	}
	if len(ms.SLO) > 0 {
		b.WriteString("\n| class | TTFT ≤ | TPOT ≤ | E2E ≤ | max ITL ≤ | quality |\n|---|--:|--:|--:|--:|---|\n")
		for _, s := range ms.SLO {
			q := "—"
			if s.QualityNeeded {
				q = "required"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", EscapeMarkdown(s.Class),
				mdThreshold(float64(s.TTFT)), mdThreshold(float64(s.TPOT)), mdThreshold(float64(s.E2E)),
				mdThreshold(float64(s.MaxITL)), q)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return mdDetails("Measurement spec", b.String())
}

func mdNormalization(r *analysis.Report) string {
	var b strings.Builder
	if len(r.Normalization.Steps) > 0 {
		b.WriteString("| step | setting | applied | effect |\n|---|---|---|---|\n")
		for _, s := range r.Normalization.Steps {
			applied := "no"
			if s.Applied {
				applied = "yes"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", EscapeMarkdown(s.Name), mdOrDash(EscapeMarkdown(s.Setting)),
				applied, mdOrDash(EscapeMarkdown(s.Detail)))
		}
	}
	var naive strings.Builder
	for i := range r.Metrics {
		m := &r.Metrics[i]
		if m.Naive == nil {
			continue
		}
		nv := m.Naive
		nm := *m // the naive figures share the gate's unit and scale
		nm.Interval = nv.Interval
		fmt.Fprintf(&naive, "| %s | %s | %s | %s %s | %s %s |\n", EscapeMarkdown(m.Name),
			mdValue(float64(nv.Baseline), m.Unit), mdValue(float64(nv.Canary), m.Unit),
			mdDelta(m, float64(nv.Delta)), mdInterval(&nm), mdDelta(m, float64(m.Delta)), mdInterval(m))
	}
	if naive.Len() > 0 {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("Naive (unadjusted) against adjusted comparison:\n\n")
		b.WriteString("| gate | naive baseline | naive canary | naive delta | adjusted delta |\n|---|--:|--:|--:|--:|\n")
		b.WriteString(naive.String())
	}
	if b.Len() == 0 {
		return ""
	}
	return mdDetails("Normalization applied", b.String())
}

// ClassName names a class-table row: the policy class, and the input's own
// class label when the policy's classes split the data by something else
// ("default · label long").
func ClassName(c analysis.ClassRow) string {
	if c.Label == "" || c.Label == c.Class {
		return c.Class
	}
	return c.Class + " · label " + c.Label
}

func mdClasses(r *analysis.Report) string {
	if len(r.Classes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Cells read baseline / canary.")
	if len(r.Classes) > 0 && r.Classes[0].Baseline.SLOAttainmentBounds != nil {
		b.WriteString(" From metrics: attainment is bounded by the histograms (Δ at the lower ends), a p99 is interpolated within the bucket whose edges follow it.")
	}
	b.WriteString("\n\n")
	b.WriteString("| class | offered | share | attainment | Δ attainment | TTFT p99 | TPOT p99 |\n|---|--:|--:|--:|--:|--:|--:|\n")
	for _, c := range r.Classes {
		d := float64(c.Canary.SLOAttainment) - float64(c.Baseline.SLOAttainment)
		fmt.Fprintf(&b, "| %s | %s / %s | %s / %s | %s / %s | %s | %s / %s | %s / %s |\n", EscapeMarkdown(ClassName(c)),
			mdInt(c.Baseline.Offered), mdInt(c.Canary.Offered),
			mdValue(float64(c.Baseline.Share), "fraction"), mdValue(float64(c.Canary.Share), "fraction"),
			mdAttain(c.Baseline), mdAttain(c.Canary),
			mdSigned(d*100, " pp"),
			mdP99(c.Baseline.TTFTP99, c.Baseline.TTFTP99Bounds), mdP99(c.Canary.TTFTP99, c.Canary.TTFTP99Bounds),
			mdP99(c.Baseline.TPOTP99, c.Baseline.TPOTP99Bounds), mdP99(c.Canary.TPOTP99, c.Canary.TPOTP99Bounds))
	}
	return mdDetails(fmt.Sprintf("Per-class breakdown (%d %s)", len(r.Classes),
		mdPlural(len(r.Classes), "class", "classes")), b.String())
}

// mdIsLatency reports whether a diagnostic's estimate is in seconds.
func mdIsLatency(metric string) bool {
	switch strings.ToLower(metric) {
	case "ttft", "tpot", "e2e", "itl", "max_itl", "stall":
		return true
	}
	return false
}

func mdDiagnostics(r *analysis.Report) string {
	if len(r.Diagnostics) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Shown for context; diagnostics never gate on their own.\n\n")
	b.WriteString("| metric | method | estimate | interval | p | q | n | note |\n|---|---|--:|:-:|--:|--:|--:|---|\n")
	for _, d := range r.Diagnostics {
		f := mdSignedSig
		if mdIsLatency(d.Metric) {
			f = mdSignedDur
		}
		fmt.Fprintf(&b, "| %s | %s | %s | [%s, %s] | %s | %s | %s / %s | %s |\n", EscapeMarkdown(d.Metric),
			mdOrDash(EscapeMarkdown(d.Method)), f(float64(d.Estimate)), f(float64(d.Interval[0])), f(float64(d.Interval[1])),
			mdP(float64(d.PValue)), mdP(float64(d.QValue)), mdInt(d.NBaseline), mdInt(d.NCanary),
			mdOrDash(EscapeMarkdown(d.Note)))
	}
	return mdDetails("Diagnostics", b.String())
}

func mdWarnings(r *analysis.Report) string {
	if len(r.Warnings) == 0 {
		return ""
	}
	var b strings.Builder
	for _, w := range r.Warnings {
		b.WriteString("- " + EscapeMarkdown(w) + "\n")
	}
	return mdDetails(fmt.Sprintf("Warnings (%d)", len(r.Warnings)), b.String())
}

func mdInputs(r *analysis.Report) string {
	if len(r.Inputs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| arm | input | format | requests | sha256 |\n|---|---|---|--:|---|\n")
	for _, in := range r.Inputs {
		path := EscapeMarkdown(in.Path)
		if in.Note != "" {
			path += " — " + EscapeMarkdown(in.Note)
		}
		sum := "—"
		if mdIsHex(in.SHA256) {
			sum = "`" + in.SHA256 + "`"
		} else if in.SHA256 != "" {
			sum = EscapeMarkdown(in.SHA256)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", mdOrDash(EscapeMarkdown(string(in.Arm))), path,
			mdOrDash(EscapeMarkdown(in.Format)), mdInt(int64(in.Count)), sum)
	}
	return mdDetails(fmt.Sprintf("Inputs (%d)", len(r.Inputs)), b.String())
}

func mdPolicy(r *analysis.Report) string {
	var b strings.Builder
	p := r.Policy
	if p.Name != "" || p.Source != "" {
		line := "- **policy:** " + mdOrDash(EscapeMarkdown(p.Name))
		if p.Source != "" {
			line += " (" + EscapeMarkdown(p.Source) + ")"
		}
		if mdIsHex(p.SHA256) {
			line += ", sha256 `" + p.SHA256 + "`"
		}
		b.WriteString(line + "\n")
	}
	if r.Judge != "" {
		b.WriteString("- **judge:** " + EscapeMarkdown(r.Judge) + "\n")
	}
	if r.ToolVersion != "" {
		b.WriteString("- **tool:** goodput " + EscapeMarkdown(r.ToolVersion) + "\n")
	}
	fmt.Fprintf(&b, "- **report schema:** %d\n", r.SchemaVersion)
	return mdDetails("Policy and tool version", b.String())
}

// ---- numbers ---------------------------------------------------------------

func mdFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func mdPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func mdOrDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// mdIsHex reports whether s looks like a digest: 7–128 hex digits. Only
// such strings are shown verbatim in code spans.
func mdIsHex(s string) bool {
	if len(s) < 7 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// mdInt prints an integer with thousands separators: 12,000.
func mdInt(n int64) string { return analysis.Thousands(n) }

// mdSig prints v with about three significant digits (integers of 1,000
// and more in full, with separators).
func mdSig(v float64) string {
	if !mdFinite(v) {
		return "—"
	}
	a := math.Abs(v)
	var s string
	switch {
	case a == 0:
		return "0"
	case a >= 999.5:
		return mdInt(int64(math.Round(v)))
	case a >= 99.95:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 9.995:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 0.9995:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	default:
		d := 2 - int(math.Floor(math.Log10(a)))
		s = strconv.FormatFloat(v, 'f', d, 64)
	}
	return s
}

// mdPctPlain prints a percentage: one decimal, two near 0 or 100.
func mdPctPlain(p float64) string {
	if !mdFinite(p) {
		return "—"
	}
	d := 1
	if a := math.Abs(p); a < 1 || math.Abs(100-a) < 1 {
		d = 2
	}
	return mdNoNegZero(strconv.FormatFloat(p, 'f', d, 64)) + "%"
}

// mdDur prints seconds as µs, ms or s with three significant digits.
func mdDur(s float64) string {
	if !mdFinite(s) {
		return "—"
	}
	a := math.Abs(s)
	switch {
	case a == 0:
		return "0 s"
	case a < 1e-3:
		return mdSig(s*1e6) + " µs"
	case a < 0.9995:
		return mdSig(s*1e3) + " ms"
	}
	return mdSig(s) + " s"
}

// mdDurSetting prints a configured duration without trailing zeros: 10 s,
// 80 ms, 1.5 s.
func mdDurSetting(s float64) string {
	d := mdDur(s)
	num, unit, ok := strings.Cut(d, " ")
	if !ok || !strings.Contains(num, ".") {
		return d
	}
	num = strings.TrimRight(strings.TrimRight(num, "0"), ".")
	return num + " " + unit
}

func mdThreshold(s float64) string {
	if !mdFinite(s) || s <= 0 {
		return "—"
	}
	return mdDurSetting(s)
}

func mdUSD(v float64) string {
	if !mdFinite(v) {
		return "—"
	}
	a := math.Abs(v)
	sign := ""
	if v < 0 {
		sign = "-"
	}
	if a >= 1 {
		return sign + "$" + strconv.FormatFloat(a, 'f', 2, 64)
	}
	return sign + "$" + mdSig(a)
}

// mdValue prints a measured value in its unit: fractions as percentages,
// seconds as ms or s, USD with a dollar sign.
func mdValue(v float64, unit string) string {
	if !mdFinite(v) {
		return "—"
	}
	switch unit {
	case "fraction":
		return mdPctPlain(v * 100)
	case "s":
		return mdDur(v)
	case "USD":
		return mdUSD(v)
	case "s setting":
		return mdDurSetting(v)
	case "count":
		return mdInt(int64(math.Round(v)))
	case "":
		return mdSig(v)
	case "×":
		return mdSig(v) + "×"
	}
	return mdSig(v) + " " + EscapeMarkdown(unit)
}

func mdNoNegZero(s string) string {
	if strings.HasPrefix(s, "-") && !strings.ContainsAny(s, "123456789") {
		return s[1:]
	}
	return s
}

// mdSigned prefixes a formatted number with + when it is positive and
// leaves no sign on a value that rounds to zero.
func mdSigned(v float64, suffix string) string {
	if !mdFinite(v) {
		return "—"
	}
	d := 1
	if math.Abs(v) < 1 {
		d = 2
	}
	s := mdNoNegZero(strconv.FormatFloat(v, 'f', d, 64))
	if v > 0 && strings.ContainsAny(s, "123456789") {
		s = "+" + s
	}
	return s + suffix
}

func mdSignedWith(v float64, f func(float64) string) string {
	if !mdFinite(v) {
		return "—"
	}
	s := mdNoNegZero(f(v))
	if v > 0 && strings.ContainsAny(s, "123456789") {
		s = "+" + s
	}
	return s
}

func mdSignedSig(v float64) string { return mdSignedWith(v, mdSig) }
func mdSignedDur(v float64) string { return mdSignedWith(v, mdDur) }

// mdDelta prints a difference on the metric's scale: relative as a signed
// percentage, absolute fractions in percentage points, other absolute
// differences in the metric's unit.
func mdDelta(m *analysis.Metric, d float64) string {
	if !mdFinite(d) {
		return "—"
	}
	if m.Scale == "relative" {
		return mdSigned(d*100, "%")
	}
	switch m.Unit {
	case "fraction":
		return mdSigned(d*100, " pp")
	case "s":
		return mdSignedDur(d)
	case "USD":
		return mdSignedWith(d, mdUSD)
	}
	return mdSignedWith(d, func(v float64) string { return mdValue(v, m.Unit) })
}

func mdInterval(m *analysis.Metric) string {
	lo, hi := float64(m.Interval[0]), float64(m.Interval[1])
	if !mdFinite(lo) && !mdFinite(hi) {
		return "—"
	}
	return "[" + mdDelta(m, lo) + ", " + mdDelta(m, hi) + "]"
}

// mdMargin prints the tolerated harm (≥ 0) on the delta's scale.
func mdMargin(m *analysis.Metric) string {
	v := float64(m.Margin)
	if !mdFinite(v) {
		return "—"
	}
	if m.Scale == "relative" {
		return mdTrimPct(v * 100)
	}
	switch m.Unit {
	case "fraction":
		return strings.TrimSuffix(mdTrimPct(v*100), "%") + " pp"
	case "s":
		return mdDurSetting(v)
	case "USD":
		return mdUSD(v)
	}
	return mdValue(v, m.Unit)
}

// mdTrimPct prints a percentage without trailing zeros: 10%, 2.5%.
func mdTrimPct(p float64) string {
	s := strconv.FormatFloat(p, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return mdNoNegZero(s) + "%"
}

// mdP prints a p-value: two significant digits, "< 0.0001" below that.
func mdP(p float64) string {
	switch {
	case !mdFinite(p):
		return "—"
	case p < 1e-4:
		return "< 0.0001"
	case p >= 0.995:
		return "1"
	}
	return strconv.FormatFloat(p, 'f', max(2, 1-int(math.Floor(math.Log10(p)))), 64)
}

// GateSummary describes one gate in one line of plain text, with the
// numbers formatted as in the Markdown gate table, e.g. "tpot_p99 fail:
// +23.1% [+18.0%, +28.4%] against the 10% margin (n = 12,000 / 11,950)".
// It does not escape anything: callers escape the gate name and reason for
// their medium (workflow commands, terminals).
func GateSummary(m *analysis.Metric) string {
	kind := "margin"
	if m.Guardrail {
		kind = "guardrail margin"
	}
	s := fmt.Sprintf("%s %s: %s %s against the %s %s (n = %s / %s)", m.Name, m.Verdict,
		mdDelta(m, float64(m.Delta)), mdInterval(m), mdMargin(m), kind, mdInt(m.NBaseline), mdInt(m.NCanary))
	if m.Reason != "" {
		s += ": " + m.Reason
	}
	return s
}

// mdAttain is a class's SLO attainment, as its bounds when metrics data
// bound it.
func mdAttain(a analysis.ClassArm) string {
	if b := a.SLOAttainmentBounds; b != nil && mdFinite(float64(b[0])) && mdFinite(float64(b[1])) && b[0] != b[1] {
		return mdValue(float64(b[0]), "fraction") + "–" + mdValue(float64(b[1]), "fraction")
	}
	return mdValue(float64(a.SLOAttainment), "fraction")
}

// mdP99 is a class's p99 with, for metrics data, its bucket's edges.
func mdP99(v analysis.Num, b *[2]analysis.Num) string {
	if b == nil || !mdFinite(float64(v)) {
		return mdDur(float64(v))
	}
	hi := "+Inf"
	if mdFinite(float64(b[1])) {
		hi = mdDur(float64(b[1]))
	}
	return mdDur(float64(v)) + " (" + mdDur(float64(b[0])) + "–" + hi + ")"
}
