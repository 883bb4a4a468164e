package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/goodput-dev/goodput/analysis"
)

// maxReasons is how many of the report's reasons the summary shows.
const maxReasons = 3

// summaryModel is the verdict, the gates table and the request accounting.
type summaryModel struct {
	visible   []int // indices into Report.Metrics that match the filter
	cursor    int   // position in visible
	offset    int   // first visible row of the table
	rows      int   // table rows that fit
	filtering bool
	filter    lineInput
}

func newSummary(c *common) summaryModel {
	ti := newLineInput(c.st, "/", 100)
	ti.Placeholder = "gate name or verdict"
	s := summaryModel{filter: ti}
	return s.refilter(c)
}

// matchGate reports whether a gate matches a filter (case-insensitive
// substring of its name or verdict).
func matchGate(g *analysis.Metric, f string) bool {
	if f == "" {
		return true
	}
	f = strings.ToLower(f)
	return strings.Contains(strings.ToLower(g.Name), f) || strings.Contains(string(g.Verdict), f)
}

func (s summaryModel) refilter(c *common) summaryModel {
	f := strings.TrimSpace(s.filter.Value())
	keep := -1
	if s.cursor < len(s.visible) {
		keep = s.visible[s.cursor]
	}
	s.visible = s.visible[:0:0]
	s.cursor = 0
	for i := range c.rep.Metrics {
		if matchGate(&c.rep.Metrics[i], f) {
			if i == keep {
				s.cursor = len(s.visible)
			}
			s.visible = append(s.visible, i)
		}
	}
	return s.clampScroll()
}

func (s summaryModel) selected() (int, bool) {
	if s.cursor < 0 || s.cursor >= len(s.visible) {
		return 0, false
	}
	return s.visible[s.cursor], true
}

func (s summaryModel) startFilter() (summaryModel, tea.Cmd) {
	s.filtering = true
	s.filter.Focus()
	return s, nil
}

func (s summaryModel) clearFilter(c *common) summaryModel {
	s.filter.Reset()
	return s.refilter(c)
}

// updateFilter handles a key while the filter input is open: enter keeps
// the filter, esc clears it, anything else edits it (live).
func (s summaryModel) updateFilter(msg tea.KeyMsg, c *common) (summaryModel, tea.Cmd) {
	switch msg.Type {
	case tea.KeyEnter:
		s.filtering = false
		s.filter.Blur()
		return s, nil
	case tea.KeyEsc:
		s.filtering = false
		s.filter.Blur()
		return s.clearFilter(c), nil
	}
	s.filter = s.filter.Update(msg)
	return s.refilter(c), nil
}

func (s summaryModel) update(msg tea.KeyMsg, c *common) summaryModel {
	switch {
	case key.Matches(msg, c.keys.Up):
		s.cursor--
	case key.Matches(msg, c.keys.Down):
		s.cursor++
	case msg.Type == tea.KeyPgUp:
		s.cursor -= max(1, s.rows)
	case msg.Type == tea.KeyPgDown:
		s.cursor += max(1, s.rows)
	case msg.Type == tea.KeyHome:
		s.cursor = 0
	case msg.Type == tea.KeyEnd:
		s.cursor = len(s.visible) - 1
	}
	return s.clampScroll()
}

// listRows is how many gates are listed in a table of rows lines: one
// line goes to the "… above, below" note when the list overflows.
func listRows(rows, n int) int {
	if n > rows && rows >= 3 {
		return rows - 1
	}
	return max(1, rows)
}

func (s summaryModel) clampScroll() summaryModel {
	s.cursor = max(0, min(s.cursor, len(s.visible)-1))
	rows := listRows(s.rows, len(s.visible))
	if s.cursor < s.offset {
		s.offset = s.cursor
	}
	if s.cursor >= s.offset+rows {
		s.offset = s.cursor - rows + 1
	}
	s.offset = max(0, min(s.offset, len(s.visible)-rows))
	return s
}

// minTableRows is the fewest gate rows kept on screen; reasons give way
// to them on short terminals.
const minTableRows = 5

// shownReasons is how many reasons fit above a table of minTableRows.
func shownReasons(rep *analysis.Report, bodyH int) int {
	n := min(maxReasons, len(rep.Reasons))
	for n > 0 && bodyH-fixedLines(n) < minTableRows {
		n--
	}
	return n
}

// fixedLines is the summary's height without the table rows, with n
// reasons shown.
func fixedLines(n int) int {
	return 1 + n + 1 + 2 + 1 + 3
}

// tableRows is how many gate rows fit in a body of height bodyH.
func tableRows(rep *analysis.Report, bodyH int) int {
	return max(1, bodyH-fixedLines(shownReasons(rep, bodyH)))
}

func (s summaryModel) setRows(c *common, bodyH int) summaryModel {
	s.rows = tableRows(c.rep, bodyH)
	return s.clampScroll()
}

// gateColumn is one column of the gates table.
type gateColumn struct {
	title string
	width int // set by layoutColumns from the content
	right bool
	// drop is the order in which columns give way on a narrow terminal
	// (1 first; 0 never): the arms' values are in the gate view, the
	// verdict, interval and margin decide and always stay.
	drop int
	cell func(st styles, g *analysis.Metric) string
}

func gateColumns() []gateColumn {
	return []gateColumn{
		{"verdict", 0, false, 0, func(st styles, g *analysis.Metric) string {
			return st.verdict(g.Verdict).Render(strings.ToUpper(g.VerdictLabel()))
		}},
		{"baseline", 0, true, 1, func(_ styles, g *analysis.Metric) string { return fmtCompact(g.Baseline, g.Unit) }},
		{"canary", 0, true, 1, func(_ styles, g *analysis.Metric) string { return fmtCompact(g.Canary, g.Unit) }},
		{"delta", 0, true, 2, func(_ styles, g *analysis.Metric) string { return fmtDelta(g, g.Delta) }},
		{"interval", 0, true, 0, func(_ styles, g *analysis.Metric) string { return fmtInterval(g, g.Interval) }},
		{"margin", 0, true, 0, func(_ styles, g *analysis.Metric) string { return fmtMargin(g) }},
	}
}

// colGap separates the columns of the gates table.
const colGap = "  "

// minNameWidth is the narrowest gate-name column: below it, droppable
// columns give way before names are cut further.
const minNameWidth = 12

// layoutColumns sizes every column to its widest cell over all gates (not
// only the visible ones, so filtering does not move columns) and fits the
// table into w cells: droppable columns give way in their drop order
// until the widest name fits, and only when none is left are names cut
// (to no less than minNameWidth). It returns the columns kept and the
// name column's width.
func layoutColumns(st styles, ms []analysis.Metric, w int) ([]gateColumn, int) {
	cols := gateColumns()
	for i := range cols {
		cols[i].width = ansi.StringWidth(cols[i].title)
		for j := range ms {
			cols[i].width = max(cols[i].width, ansi.StringWidth(cols[i].cell(st, &ms[j])))
		}
	}
	nameW := len("gate")
	for j := range ms {
		nameW = max(nameW, ansi.StringWidth(ms[j].Name))
	}
	used := func(cs []gateColumn) int {
		n := 4 // cursor and guardrail marks
		for _, c := range cs {
			n += len(colGap) + c.width
		}
		return n
	}
	for rank := 1; used(cols)+nameW > w; rank++ {
		kept := cols[:0:0]
		dropped := false
		for _, c := range cols {
			if c.drop == rank {
				dropped = true
				continue
			}
			kept = append(kept, c)
		}
		cols = kept
		if !dropped && rank > len(gateColumns()) {
			break
		}
	}
	return cols, max(min(nameW, w-used(cols)), min(nameW, minNameWidth))
}

func (s summaryModel) view(c *common, w, h int) []string {
	st := c.st
	rep := c.rep
	var lines []string

	counts := map[analysis.Verdict]int{}
	for i := range rep.Metrics {
		counts[rep.Metrics[i].Verdict]++
	}
	lines = append(lines, st.title.Render("Verdict ")+st.verdict(rep.Verdict).Render(strings.ToUpper(string(rep.Verdict)))+
		st.dim.Render(fmt.Sprintf("   %d gates: %d pass, %d fail, %d inconclusive", len(rep.Metrics),
			counts[analysis.Pass], counts[analysis.Fail], counts[analysis.Inconclusive])))
	for _, r := range rep.Reasons[:shownReasons(rep, h)] {
		lines = append(lines, "  • "+r)
	}
	lines = append(lines, "")

	// gates table
	cols, nameW := layoutColumns(st, rep.Metrics, w)
	title := fmt.Sprintf("Gates (%d)", len(rep.Metrics))
	if f := strings.TrimSpace(s.filter.Value()); f != "" {
		title = fmt.Sprintf("Gates (%d of %d match %q)", len(s.visible), len(rep.Metrics), f)
	}
	lines = append(lines, st.title.Render(title))
	var hb strings.Builder
	hb.WriteString("    " + pad("gate", nameW))
	for _, col := range cols {
		hb.WriteString(colGap)
		if col.right {
			hb.WriteString(padLeft(col.title, col.width))
		} else {
			hb.WriteString(pad(col.title, col.width))
		}
	}
	lines = append(lines, st.dim.Render(hb.String()))
	all := tableRows(rep, h)
	rows := listRows(all, len(s.visible))
	shown := 0
	switch {
	case len(rep.Metrics) == 0:
		lines = append(lines, st.dim.Render("    the report has no gates"))
		shown = 1
	case len(s.visible) == 0:
		lines = append(lines, st.dim.Render("    no gate matches the filter (esc clears it)"))
		shown = 1
	}
	for i := s.offset; i < len(s.visible) && shown < rows; i++ {
		g := &rep.Metrics[s.visible[i]]
		var b strings.Builder
		if i == s.cursor {
			b.WriteString(st.bold.Render("> "))
		} else {
			b.WriteString("  ")
		}
		if g.Guardrail {
			b.WriteString(st.dim.Render("g "))
		} else {
			b.WriteString("  ")
		}
		name := pad(g.Name, nameW)
		if i == s.cursor {
			name = st.bold.Render(name)
		}
		b.WriteString(name)
		for _, col := range cols {
			b.WriteString(colGap)
			if col.right {
				b.WriteString(padLeft(col.cell(st, g), col.width))
			} else {
				b.WriteString(pad(col.cell(st, g), col.width))
			}
		}
		lines = append(lines, b.String())
		shown++
	}
	if rows < all {
		more := len(s.visible) - s.offset - rows
		lines = append(lines, st.dim.Render(fmt.Sprintf("    … %d above, %d below", s.offset, max(0, more))))
	}
	lines = append(lines, "")
	lines = append(lines, accountingLines(st, rep, w)...)
	return lines
}

// accountingLines is the request funnel of both arms:
// offered → admitted → completed → good, each with its share of offered.
func accountingLines(st styles, rep *analysis.Report, w int) []string {
	head := st.dim.Render(fmt.Sprintf("%-10s %12s   %-18s   %-18s   %-18s %11s", "accounting",
		"offered", "→ admitted", "→ completed", "→ good", "goodput"))
	row := func(name string, a analysis.ArmSummary, style func(...string) string) string {
		acc := a.Accounting
		stage := func(n int64) string {
			if acc.Offered <= 0 {
				return fmt.Sprintf("%-18s", fmtInt(n))
			}
			return fmt.Sprintf("%-18s", fmt.Sprintf("%s (%s)", fmtInt(n), fmtPct(float64(n)/float64(acc.Offered))))
		}
		gp := fmtG(float64(a.GoodputRPS), 4) + "/s"
		if bad(float64(a.GoodputRPS)) {
			gp = na
		}
		return style(fmt.Sprintf("%-10s", name)) + fmt.Sprintf(" %12s   %s   %s   %s %11s",
			fmtInt(acc.Offered), stage(acc.Admitted), stage(acc.Completed), stage(acc.Good), gp)
	}
	lines := []string{
		head,
		row("baseline", rep.Arms.Baseline, st.baseline.Render),
		row("canary", rep.Arms.Canary, st.canary.Render),
	}
	return append(lines, costLines(st, rep)...)
}

// costLines shows each arm's cost beside its goodput when cost is known.
func costLines(st styles, rep *analysis.Report) []string {
	b, c := rep.Arms.Baseline.Cost, rep.Arms.Canary.Cost
	if b == nil || c == nil {
		return nil
	}
	usd := func(v analysis.Num) string {
		if bad(float64(v)) {
			return na
		}
		return "$" + fmtG(float64(v), 4)
	}
	row := func(name string, a *analysis.ArmCost, style func(...string) string) string {
		return style(fmt.Sprintf("%-10s", name)) + fmt.Sprintf(" %12s   accel %s · host %s · net %s · idle %s · per good req %s",
			usd(a.TotalUSD), usd(a.AcceleratorUSD), usd(a.HostUSD), usd(a.NetworkUSD), usd(a.IdleReserveUSD), usd(a.PerGoodRequest))
	}
	return []string{
		st.dim.Render(fmt.Sprintf("%-10s %12s", "cost", "total")),
		row("baseline", b, st.baseline.Render),
		row("canary", c, st.canary.Render),
	}
}
