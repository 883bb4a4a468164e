package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/goodput-dev/goodput/analysis"
)

// detailModel shows one gate in full.
type detailModel struct {
	gate   int // index into Report.Metrics
	opened bool
	offset int // scroll position, lines
}

func (d detailModel) show(gate int) detailModel {
	return detailModel{gate: gate, opened: true}
}

// update scrolls with up/down and steps through the (filtered) gates with
// left/right.
func (d detailModel) update(msg tea.KeyMsg, c *common, visible []int) detailModel {
	switch {
	case key.Matches(msg, c.keys.Up):
		d.offset = max(0, d.offset-1)
	case key.Matches(msg, c.keys.Down):
		d.offset++
	case key.Matches(msg, c.keys.Left), key.Matches(msg, c.keys.Right):
		if len(visible) == 0 {
			return d
		}
		pos := 0
		for i, g := range visible {
			if g == d.gate {
				pos = i
			}
		}
		if key.Matches(msg, c.keys.Left) {
			pos = (pos + len(visible) - 1) % len(visible)
		} else {
			pos = (pos + 1) % len(visible)
		}
		return d.show(visible[pos])
	}
	return d
}

func (d detailModel) view(c *common, w, h int) []string {
	rep := c.rep
	if len(rep.Metrics) == 0 || d.gate >= len(rep.Metrics) {
		return []string{c.st.dim.Render("The report has no gates.")}
	}
	lines := detailLines(c, &rep.Metrics[d.gate], d.gate, w)
	out, off := scroll(lines, d.offset, h)
	if off+h < len(lines) && len(out) > 0 {
		out[len(out)-1] = c.st.dim.Render(fmt.Sprintf("  … %d more lines (↓/j)", len(lines)-off-h))
	}
	return out
}

// intervalLevel is the two-sided level of gate intervals, (1 − 2α) with
// α = 1 − confidence; NaN when the confidence is unknown.
func intervalLevel(conf float64) float64 {
	if bad(conf) || conf <= 0.5 || conf >= 1 {
		return math.NaN()
	}
	return 2*conf - 1
}

func detailLines(c *common, g *analysis.Metric, idx, w int) []string {
	st := c.st
	rep := c.rep
	var lines []string
	kind := "gate"
	if g.Guardrail {
		kind = "guardrail"
	}
	dir := strings.ReplaceAll(g.Direction, "_", " ")
	lines = append(lines, st.title.Render(g.Name)+"  "+st.verdict(g.Verdict).Render(strings.ToUpper(g.VerdictLabel()))+
		st.dim.Render(fmt.Sprintf("   %s %d of %d · %s · %s · unit %s", kind, idx+1, len(rep.Metrics), dir, g.Scale, g.Unit)))
	lines = append(lines, "")

	ivTitle := "interval"
	if lv := intervalLevel(float64(rep.Measurement.Confidence)); !bad(lv) {
		ivTitle = fmt.Sprintf("interval (%s)", strings.TrimSuffix(fmtPct(lv), ".00 %")+" %")
	}
	lines = append(lines, st.dim.Render(fmt.Sprintf("%-12s %14s %14s %12s %24s %10s", "", "baseline", "canary", "delta", ivTitle, "margin")))
	lines = append(lines, fmt.Sprintf("%-12s %14s %14s %12s %24s %10s", "value",
		fmtCompact(g.Baseline, g.Unit), fmtCompact(g.Canary, g.Unit), fmtDelta(g, g.Delta), fmtInterval(g, g.Interval), fmtMargin(g)))
	if g.Naive != nil {
		n := g.Naive
		lines = append(lines, st.naive.Render(fmt.Sprintf("%-12s %14s %14s %12s %24s", "naive",
			fmtCompact(n.Baseline, g.Unit), fmtCompact(n.Canary, g.Unit), fmtDelta(g, n.Delta), fmtInterval(g, n.Interval))))
	}
	lines = append(lines, fmt.Sprintf("%-12s %14s %14s", "requests", fmtInt(g.NBaseline), fmtInt(g.NCanary)))
	lines = append(lines, fmt.Sprintf("%-12s %14d %14d", "buckets", g.Buckets[0], g.Buckets[1]))
	lines = append(lines, fmt.Sprintf("%-12s %s   method %s", "p_fail", fmtG(float64(g.PFail), 3), g.Method))
	if g.Reason != "" {
		lines = append(lines, wrap(fmt.Sprintf("%-12s %s", "reason", g.Reason), w, strings.Repeat(" ", 13))...)
	}
	if len(g.Adjusted) > 0 {
		lines = append(lines, wrap(fmt.Sprintf("%-12s %s", "adjusted", strings.Join(g.Adjusted, ", ")), w, strings.Repeat(" ", 13))...)
	}
	lines = append(lines, "")
	lines = append(lines, numberLine(st, g, w)...)
	if g.Naive != nil {
		lines = append(lines, wrap(naiveSentence(g), w, "  ")...)
	}
	if g.MoreData != nil {
		lines = append(lines, wrap(moreDataSentence(g.MoreData), w, "  ")...)
	}
	lines = append(lines, "")
	lines = append(lines, classLines(st, rep.Classes, w)...)
	return lines
}

func naiveSentence(g *analysis.Metric) string {
	n := g.Naive
	s := fmt.Sprintf("Before normalization the delta was %s %s; after it is %s %s.",
		fmtDelta(g, n.Delta), fmtInterval(g, n.Interval), fmtDelta(g, g.Delta), fmtInterval(g, g.Interval))
	k, u := deltaUnit(g)
	if shift := float64(g.Delta - n.Delta); !bad(shift) {
		s += fmt.Sprintf(" Normalization moved it by %s %s.", signed(shift*k, 3), u)
	}
	return s
}

func moreDataSentence(md *analysis.MoreData) string {
	s := "More data: about " + fmtG(float64(md.Factor), 2) + "× the current sample"
	var parts []string
	if !bad(float64(md.Requests)) {
		parts = append(parts, "~"+fmtInt(int64(math.Round(float64(md.Requests))))+" more requests (both arms)")
	}
	if !bad(float64(md.Minutes)) {
		parts = append(parts, "~"+fmtG(float64(md.Minutes), 3)+" min at the current rate")
	}
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	return s + " would likely decide this gate."
}

// numberLine draws the gate's interval (and the naive one) against the
// margin on the delta axis; the zone where harm exceeds the margin is
// shaded. Harm is −delta for higher_is_better gates, |delta| for
// two_sided ones (shaded on both sides), +delta otherwise.
func numberLine(st styles, g *analysis.Metric, w int) []string {
	k, unit := deltaUnit(g)
	lo, hi := float64(g.Interval[0])*k, float64(g.Interval[1])*k
	if bad(lo) || bad(hi) {
		return []string{st.dim.Render("  no interval to draw")}
	}
	margin := float64(g.Margin) * k
	higherBetter := g.Direction == "higher_is_better"
	twoSided := g.Direction == "two_sided"
	bound := margin
	if higherBetter {
		bound = -margin
	}
	vals := []float64{lo, hi, 0, float64(g.Delta) * k}
	if !bad(bound) {
		vals = append(vals, bound)
		if twoSided {
			vals = append(vals, -bound)
		}
	}
	if g.Naive != nil {
		vals = append(vals, float64(g.Naive.Interval[0])*k, float64(g.Naive.Interval[1])*k)
	}
	dmin, dmax := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if !bad(v) {
			dmin, dmax = math.Min(dmin, v), math.Max(dmax, v)
		}
	}
	span := dmax - dmin
	if span <= 0 {
		span = math.Max(1, math.Abs(dmax))
	}
	dmin -= span * 0.15
	dmax += span * 0.15

	const labelW = 12
	cw := max(10, w-labelW-2)
	col := func(v float64) int {
		x := int(math.Round((v - dmin) / (dmax - dmin) * float64(cw-1)))
		return max(0, min(cw-1, x))
	}
	lab := func(s string) string { return fmt.Sprintf("%-*s", labelW, s) }

	// fail zone
	zone := []rune(strings.Repeat(" ", cw))
	if !bad(bound) {
		bc, lc := col(bound), -1 // lc: the lower margin of a two-sided gate
		if twoSided {
			lc = col(-bound)
		}
		for x := 0; x < cw; x++ {
			if (higherBetter && x < bc) || (!higherBetter && x > bc) || x < lc {
				zone[x] = '░'
			}
		}
		zone[bc] = '┊'
		if twoSided {
			zone[lc] = '┊'
		}
	}
	bar := func(ivLo, ivHi, mid float64, fill, dot rune) string {
		r := []rune(strings.Repeat(" ", cw))
		a, b := col(ivLo), col(ivHi)
		for x := a; x <= b; x++ {
			r[x] = fill
		}
		r[a], r[b] = '[', ']'
		if !bad(mid) {
			r[col(mid)] = dot
		}
		return string(r)
	}
	out := []string{
		st.dim.Render(fmt.Sprintf("Shaded: harm beyond the margin (fails). Pass needs the interval clear of it. Axis: delta, %s", unit)),
		lab("fail zone") + st.zone.Render(string(zone)),
		lab("interval") + st.verdict(g.Verdict).Render(bar(lo, hi, float64(g.Delta)*k, '═', '●')),
	}
	if g.Naive != nil && !bad(float64(g.Naive.Interval[0])) && !bad(float64(g.Naive.Interval[1])) {
		out = append(out, lab("naive")+st.naive.Render(bar(float64(g.Naive.Interval[0])*k, float64(g.Naive.Interval[1])*k, float64(g.Naive.Delta)*k, '─', '○')))
	}
	// axis with ticks
	axis := []rune(strings.Repeat("─", cw))
	step := niceStep(dmax-dmin, max(2, cw/14))
	var tickCols []int
	var tickLabels []string
	// zero and the margin boundary first so they win label space
	tickCols = append(tickCols, col(0))
	tickLabels = append(tickLabels, "0")
	if !bad(bound) && bound != 0 {
		tickCols = append(tickCols, col(bound))
		tickLabels = append(tickLabels, "margin "+fmtAxis(bound))
		if twoSided {
			tickCols = append(tickCols, col(-bound))
			tickLabels = append(tickLabels, "margin "+fmtAxis(-bound))
		}
	}
	for t := math.Ceil(dmin/step) * step; t <= dmax; t += step {
		if math.Abs(t) < step/1e6 {
			t = 0
		}
		tickCols = append(tickCols, col(t))
		tickLabels = append(tickLabels, fmtAxis(t))
	}
	for _, x := range tickCols {
		axis[x] = '┼'
	}
	out = append(out, lab("")+string(axis))
	out = append(out, lab(unit)+axisLabels(cw, tickCols, tickLabels))
	return out
}

// classLines is the per-class breakdown of both arms; columns that do not
// fit in w are dropped from the right.
func classLines(st styles, classes []analysis.ClassRow, w int) []string {
	if len(classes) == 0 {
		return []string{st.dim.Render("No per-class breakdown in the report.")}
	}
	type classCol struct {
		title string
		cell  func(a analysis.ClassArm) string
	}
	cols := []classCol{
		{"offered", func(a analysis.ClassArm) string { return fmtInt(a.Offered) }},
		{"share", func(a analysis.ClassArm) string { return fmtPct(float64(a.Share)) }},
		{"attainment", func(a analysis.ClassArm) string { return fmtPct(float64(a.SLOAttainment)) }},
		{"TTFT p99", func(a analysis.ClassArm) string { return fmtSeconds(float64(a.TTFTP99)) }},
		{"TPOT p99", func(a analysis.ClassArm) string { return fmtSeconds(float64(a.TPOTP99)) }},
	}
	const nameW, half = 14, 8
	colW := 2*half + 3
	n := max(1, min(len(cols), (w-nameW)/(colW+1)))
	cols = cols[:n]
	var hb strings.Builder
	hb.WriteString(fmt.Sprintf("%-*s", nameW, "class"))
	for _, col := range cols {
		hb.WriteString(" " + padLeft(col.title, half+2) + strings.Repeat(" ", colW-half-2))
	}
	lines := []string{
		st.title.Render("Per class") + st.dim.Render("  (baseline / canary)"),
		st.dim.Render(hb.String()),
	}
	for _, cl := range classes {
		var b strings.Builder
		name := cl.Class
		if cl.Label != "" && cl.Label != cl.Class {
			name += "·" + cl.Label
		}
		b.WriteString(pad(name, nameW))
		for _, col := range cols {
			b.WriteString(" " + padLeft(col.cell(cl.Baseline), half) + " / " + pad(col.cell(cl.Canary), half))
		}
		lines = append(lines, b.String())
	}
	return lines
}
