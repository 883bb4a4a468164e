package tui

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/goodput-dev/goodput/analysis/capacity"
)

// CapacityOptions configures the review of a capacity comparison (from
// `goodput review --capacity`). Result is required.
type CapacityOptions struct {
	Result *capacity.Result
	SLO    string // e.g. "TTFT ≤ 1s ∧ TPOT ≤ 80ms"
	Policy string // the policy's name
	Name   string // shown in the header: what was compared
	// NoColor renders without any colour or text attributes (NO_COLOR).
	NoColor bool
	// Output is the terminal drawn on; it only picks the colour profile and
	// may be nil (no colour).
	Output io.Writer
	// Width and Height, when > 0, are the terminal size before the first
	// tea.WindowSizeMsg (default 80×24).
	Width, Height int
}

// CapacityModel is the terminal review of a capacity comparison: one
// Capacity view with the verdict, both arms' capacities and intervals, the
// ratio against its margin, a chart of attainment against offered rate and
// the points table. The deciding numbers come first, so an 80×24 terminal
// shows them without scrolling; j/k scroll to the chart's rest and the
// points. It only reads; it records no decision.
type CapacityModel struct {
	r             *capacity.Result // sanitized copy
	st            styles
	keys          keyMap
	slo, policy   string
	name          string
	width, height int
	off           int
}

// NewCapacity builds the capacity review; it fails without a result.
func NewCapacity(o CapacityOptions) (CapacityModel, error) {
	if o.Result == nil {
		return CapacityModel{}, errors.New("tui: no capacity result")
	}
	w, h := defaultWidth, defaultHeight
	if o.Width > 0 && o.Height > 0 {
		w, h = o.Width, o.Height
	}
	return CapacityModel{r: sanitizeCapacity(o.Result), st: newStyles(o.Output, o.NoColor), keys: newKeyMap(),
		slo: clean(o.SLO), policy: clean(o.Policy), name: clean(o.Name), width: w, height: h}, nil
}

// sanitizeCapacity copies r with every piece of text from the inputs
// (sources, notes, reasons, warnings) made safe for a terminal.
func sanitizeCapacity(in *capacity.Result) *capacity.Result {
	r := *in
	r.MarginText = clean(r.MarginText)
	r.Scale = clean(r.Scale)
	r.Reasons = cleanAll(r.Reasons)
	r.Warnings = cleanAll(r.Warnings)
	for _, a := range []*capacity.Arm{&r.Baseline, &r.Canary} {
		a.Points = append([]capacity.Point(nil), a.Points...)
		for i := range a.Points {
			a.Points[i].Source = clean(a.Points[i].Source)
			a.Points[i].Notes = cleanAll(a.Points[i].Notes)
		}
		a.Capacity.Reason = clean(a.Capacity.Reason)
		a.Capacity.Identify = clean(a.Capacity.Identify)
	}
	return &r
}

// Init implements tea.Model.
func (m CapacityModel) Init() tea.Cmd { return nil }

// Update implements tea.Model: resize, scroll and quit.
func (m CapacityModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyMsg:
		if msg.Type == tea.KeyCtrlC || key.Matches(msg, m.keys.Quit) {
			return m, tea.Quit
		}
		page := m.bodyHeight()
		switch {
		case key.Matches(msg, m.keys.Down):
			m.off++
		case key.Matches(msg, m.keys.Up):
			m.off--
		case msg.Type == tea.KeyPgDown || msg.String() == " ":
			m.off += page
		case msg.Type == tea.KeyPgUp:
			m.off -= page
		case msg.Type == tea.KeyHome || msg.String() == "g":
			m.off = 0
		case msg.Type == tea.KeyEnd || msg.String() == "G":
			m.off = len(m.body(m.width))
		}
		_, m.off = scroll(m.body(m.width), m.off, m.bodyHeight())
	}
	return m, nil
}

func (m CapacityModel) bodyHeight() int { return max(1, m.height-4) }

// View implements tea.Model: exactly height lines, none wider than width.
func (m CapacityModel) View() string {
	w, h := m.width, m.height
	if w < minWidth || h < minHeight {
		msg := fmt.Sprintf("terminal too small (%d×%d); the review needs at least %d×%d", w, h, minWidth, minHeight)
		return strings.Join(fit(strings.Split(ansi.Hardwrap(msg, max(w, 1), true), "\n"), w, h), "\n")
	}
	st := m.st
	v := m.r.Verdict
	// the verdict before the name: a long path is cut, the verdict never
	head := st.title.Render("goodput review") + "  " + st.verdict(v).Render(strings.ToUpper(string(v))) + "  capacity"
	if m.policy != "" {
		head += st.dim.Render(" (policy " + m.policy + ")")
	}
	head += "  " + m.name
	body, _ := scroll(m.body(w), m.off, m.bodyHeight())
	all := m.body(w)
	pos := ""
	if len(all) > m.bodyHeight() {
		pos = fmt.Sprintf("lines %d–%d of %d", m.off+1, m.off+len(body), len(all))
	}
	lines := []string{head, st.tabActive.Render("Capacity")}
	lines = append(lines, fit(body, w, m.bodyHeight())...)
	lines = append(lines, st.dim.Render(pos), st.dim.Render("↑/k up • ↓/j down • pgup/pgdn page • q quit"))
	return strings.Join(fit(lines, w, h), "\n")
}

// body is the whole Capacity view, w cells wide, before scrolling.
func (m CapacityModel) body(w int) []string {
	r, st := m.r, m.st
	var out []string
	scale := "capacity"
	if r.Scale == "replica" {
		scale = "capacity per replica"
	}
	out = append(out, wrap(fmt.Sprintf("%s at ≥ %s good (%s)", scale, capPct(r.Target), m.slo), w, "  ")...)
	for _, a := range []struct {
		name string
		arm  *capacity.Arm
		sty  lipgloss.Style
	}{{"baseline", &r.Baseline, st.baseline}, {"canary  ", &r.Canary, st.canary}} {
		c := a.arm.Capacity
		if c.Identifiable {
			out = append(out, fmt.Sprintf("  %s %s req/s  interval %s  (%d points, %d saturated)", a.sty.Render(a.name),
				st.bold.Render(fmtG(c.Estimate, 4)), capIvl(c.Lo, c.Hi), len(a.arm.Points), saturated(a.arm)))
		} else {
			out = append(out, fmt.Sprintf("  %s not identifiable: %s", a.sty.Render(a.name), c.Reason))
			if c.Identify != "" {
				out = append(out, "    to identify it: "+c.Identify)
			}
		}
	}
	out = append(out, fmt.Sprintf("  canary / baseline %s  interval %s  margin %s → %s", st.bold.Render(fmtG(r.Ratio, 4)),
		capIvl(r.RatioCI.Lo, r.RatioCI.Hi), r.MarginText, st.verdict(r.Verdict).Render(strings.ToUpper(string(r.Verdict)))))
	for _, s := range r.Reasons {
		out = append(out, wrap("  "+s, w, "    ")...)
	}
	out = append(out, m.chart(w)...)
	for _, a := range []struct {
		name string
		arm  *capacity.Arm
	}{{"baseline", &r.Baseline}, {"canary", &r.Canary}} {
		out = append(out, "", st.bold.Render(a.name+" points"))
		out = append(out, st.dim.Render(fmt.Sprintf("  %-11s %8s %-16s %-16s %7s  %s", "rate req/s", "offered", "attainment", "95% interval", "fit", "point")))
		for i, p := range a.arm.Points {
			rate := fmtG(p.Rate, 4)
			if p.Saturated {
				rate += " sat"
			}
			att := capPct(p.Bounds.Lo)
			if !p.Exact {
				att = "[" + capPct(p.Bounds.Lo) + ", " + capPct(p.Bounds.Hi) + "]"
			}
			fitv := na
			if i < len(a.arm.Fit.Estimate) {
				fitv = capPct(a.arm.Fit.Estimate[i])
			}
			out = append(out, fmt.Sprintf("  %-11s %8d %-16s %-16s %7s  %s", rate, p.Offered, att,
				"["+capPct(p.CI.Lo)+", "+capPct(p.CI.Hi)+"]", fitv, pointLabel(p.Source)))
		}
		for _, p := range a.arm.Points {
			for _, n := range p.Notes {
				out = append(out, wrap("  "+shortSource(p.Source)+": "+n, w, "    ")...)
			}
		}
	}
	for _, s := range r.Warnings {
		out = append(out, wrap(st.warn.Render("warning: ")+s, w, "  ")...)
	}
	return out
}

func saturated(a *capacity.Arm) int {
	n := 0
	for _, p := range a.Points {
		if p.Saturated {
			n++
		}
	}
	return n
}

// shortSource is a point's source without its directories: the file name
// and the point's label.
func shortSource(s string) string {
	file, label, _ := strings.Cut(s, "#")
	if i := strings.LastIndexAny(file, `/\`); i >= 0 {
		file = file[i+1:]
	}
	if label != "" {
		return file + "#" + label
	}
	return file
}

// pointLabel names a point in the table: its label within the file
// ("stage 3") when it has one, else the file name.
func pointLabel(s string) string {
	if _, label, ok := strings.Cut(s, "#"); ok && label != "" {
		return label
	}
	return shortSource(s)
}

// capPct prints a fraction as a percentage with at most two decimals.
func capPct(f float64) string {
	if math.IsNaN(f) {
		return na
	}
	s := fmt.Sprintf("%.2f", 100*f)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".") + "%"
}

func capIvl(lo, hi float64) string {
	l, h := fmtG(lo, 4), fmtG(hi, 4)
	if math.IsInf(hi, 1) {
		h = "∞"
	}
	return "[" + l + ", " + h + "]"
}

// nines maps attainment to the chart's y axis: −log10 of the miss rate,
// so 90%, 99% and 99.9% are equally spaced; capped at 4 (99.99%).
func nines(att float64) float64 {
	if att >= 1 {
		return 4
	}
	return math.Min(4, math.Max(0, -math.Log10(1-att)))
}

// chart draws both arms' attainment against offered rate: the fits as dots,
// the points as b and c (* both), the target line, each identifiable
// capacity as a vertical line B / C, and below the axis each capacity's
// interval as ├──┤. The y axis is in nines (log scale of misses).
func (m CapacityModel) chart(w int) []string {
	r, st := m.r, m.st
	const H = 9 // rows for 4 nines in half-nine steps
	const label = 8
	W := max(20, min(72, w-label-16)) // room for the axis's "200 req/s"
	xmax := 0.0
	for _, a := range []*capacity.Arm{&r.Baseline, &r.Canary} {
		for _, p := range a.Points {
			xmax = math.Max(xmax, p.Rate)
		}
		if a.Capacity.Identifiable && !math.IsInf(a.Capacity.Hi, 0) {
			xmax = math.Max(xmax, a.Capacity.Hi)
		}
	}
	xmax = niceCeil(xmax * 1.05)
	type cell struct {
		ch  rune
		sty *lipgloss.Style
	}
	grid := make([][]cell, H)
	for y := range grid {
		grid[y] = make([]cell, W)
		for x := range grid[y] {
			grid[y][x] = cell{ch: ' '}
		}
	}
	col := func(x float64) int { return min(W-1, max(0, int(math.Round(x/xmax*float64(W-1))))) }
	row := func(att float64) int { return min(H-1, max(0, int(math.Round((4-nines(att))*2)))) }
	tr := row(r.Target)
	for x := range grid[tr] {
		grid[tr][x] = cell{ch: '┈', sty: &st.dim}
	}
	arms := []struct {
		arm       *capacity.Arm
		pt, cp    rune
		sty       lipgloss.Style
		fitMarker rune
	}{{&r.Baseline, 'b', 'B', st.baseline, '·'}, {&r.Canary, 'c', 'C', st.canary, '·'}}
	for i := range arms {
		a := &arms[i]
		f := a.arm.Fit
		for x := 0; x < W; x++ {
			att, ok := f.At(float64(x) / float64(W-1) * xmax)
			if !ok {
				continue
			}
			if y := row(att); grid[y][x].ch == ' ' || grid[y][x].ch == '┈' {
				grid[y][x] = cell{ch: a.fitMarker, sty: &a.sty}
			}
		}
	}
	for i := range arms {
		a := &arms[i]
		if c := a.arm.Capacity; c.Identifiable {
			x := col(c.Estimate)
			for y := 1; y < H; y++ {
				if ch := grid[y][x].ch; ch == ' ' || ch == '┈' || ch == '·' {
					grid[y][x] = cell{ch: '│', sty: &a.sty}
				}
			}
			grid[0][x] = cell{ch: a.cp, sty: &a.sty}
		}
	}
	for i := range arms {
		a := &arms[i]
		for _, p := range a.arm.Points {
			x, y := col(p.Rate), row(p.Attainment)
			switch grid[y][x].ch {
			case 'b', 'c', '*':
				if grid[y][x].ch != a.pt {
					grid[y][x] = cell{ch: '*', sty: &st.bold}
				}
			default:
				grid[y][x] = cell{ch: a.pt, sty: &a.sty}
			}
		}
	}
	render := func(cs []cell) string {
		var b strings.Builder
		for _, c := range cs {
			if c.sty != nil && c.ch != ' ' {
				b.WriteString(c.sty.Render(string(c.ch)))
			} else {
				b.WriteRune(c.ch)
			}
		}
		return strings.TrimRight(b.String(), " ")
	}
	labels := map[int]string{0: "99.99%", 2: "99.9%", 4: "99%", 6: "90%", 8: "0%"}
	out := []string{fmt.Sprintf("attainment vs rate: %s  %s  · fit  %s target  B C capacity",
		st.baseline.Render("b baseline"), st.canary.Render("c canary"), st.dim.Render("┈ "+capPct(r.Target)))}
	for y := 0; y < H; y++ {
		out = append(out, fmt.Sprintf("%*s ┤%s", label, labels[y], render(grid[y])))
	}
	xl := " " + fmtG(xmax, 4) + " req/s"
	out = append(out, fmt.Sprintf("%*s └%s%s", label, "0", strings.Repeat("─", W), xl))
	for i := range arms {
		a := &arms[i]
		c := a.arm.Capacity
		if !c.Identifiable {
			continue
		}
		line := make([]cell, W)
		for x := range line {
			line[x] = cell{ch: ' '}
		}
		lo, hi := col(c.Lo), col(math.Min(c.Hi, xmax))
		for x := lo; x <= hi; x++ {
			line[x] = cell{ch: '─', sty: &a.sty}
		}
		line[lo] = cell{ch: '├', sty: &a.sty}
		if !math.IsInf(c.Hi, 1) {
			line[hi] = cell{ch: '┤', sty: &a.sty}
		}
		line[col(c.Estimate)] = cell{ch: a.cp, sty: &a.sty}
		name := "baseline"
		if a.pt == 'c' {
			name = "canary"
		}
		out = append(out, fmt.Sprintf("%*s  %s", label, name, render(line)))
	}
	return out
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, k := range []float64{1, 2, 2.5, 5, 10} {
		if k*p >= v {
			return k * p
		}
	}
	return 10 * p
}
