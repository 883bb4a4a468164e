package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/goodput-dev/goodput/analysis"
)

// distModel draws the latency CDFs of both arms from Report.Distributions.
type distModel struct {
	which int // 0 TTFT, 1 TPOT
}

// distName names the latency shown by distModel.which.
func distName(which int) string {
	if which == 1 {
		return "TPOT"
	}
	return "TTFT"
}

func (d distModel) update(msg tea.KeyMsg, c *common) distModel {
	if key.Matches(msg, c.keys.Left, c.keys.Right, c.keys.Up, c.keys.Down) {
		d.which = 1 - d.which
	}
	return d
}

// cdfAt is the empirical CDF at x from a quantile curve q at probabilities
// p (both ascending): the largest probability whose quantile is ≤ x,
// interpolated linearly between neighbouring points.
func cdfAt(q, p []analysis.Num, x float64) float64 {
	n := min(len(q), len(p))
	if n == 0 {
		return math.NaN()
	}
	if x < float64(q[0]) {
		return 0
	}
	if x >= float64(q[n-1]) {
		return float64(p[n-1])
	}
	lo, hi := 0, n-1 // q[lo] <= x < q[hi]
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if float64(q[mid]) <= x {
			lo = mid
		} else {
			hi = mid
		}
	}
	q0, q1 := float64(q[lo]), float64(q[hi])
	p0, p1 := float64(p[lo]), float64(p[hi])
	if q1 <= q0 {
		return p1
	}
	return p0 + (p1-p0)*(x-q0)/(q1-q0)
}

// quantileAt returns the curve's value at the probability nearest to p.
func quantileAt(q, probs []analysis.Num, p float64) float64 {
	best, bestD := -1, math.Inf(1)
	for i := 0; i < min(len(q), len(probs)); i++ {
		if d := math.Abs(float64(probs[i]) - p); d < bestD {
			best, bestD = i, d
		}
	}
	if best < 0 || bestD > 0.005 {
		return math.NaN()
	}
	return float64(q[best])
}

func usable(q []analysis.Num) bool {
	if len(q) == 0 {
		return false
	}
	for _, v := range q {
		if bad(float64(v)) {
			return false
		}
	}
	return true
}

func (d distModel) view(c *common, w, h int) []string {
	st := c.st
	dist := c.rep.Distributions
	curve := dist.TTFT
	if d.which == 1 {
		curve = dist.TPOT
	}
	name := distName(d.which)
	other := distName(1 - d.which)
	lines := []string{st.title.Render(name+" CDF") + st.dim.Render(" of completed requests, both arms   ←/→ "+other)}
	bOK, cOK := usable(curve.Baseline) && len(dist.Probs) == len(curve.Baseline), usable(curve.Canary) && len(dist.Probs) == len(curve.Canary)
	if !bOK && !cOK {
		return append(lines, "", st.dim.Render("  The report has no "+name+" distribution."))
	}
	// x range: from the smallest quantile to the larger p99, so one outlier
	// does not squash the curves; the maxima are listed below the chart.
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, arm := range []struct {
		ok bool
		q  []analysis.Num
	}{{bOK, curve.Baseline}, {cOK, curve.Canary}} {
		if !arm.ok {
			continue
		}
		xmin = math.Min(xmin, float64(arm.q[0]))
		p99 := quantileAt(arm.q, dist.Probs, 0.99)
		if bad(p99) {
			p99 = float64(arm.q[len(arm.q)-1])
		}
		xmax = math.Max(xmax, p99)
	}
	if xmax <= xmin {
		xmax = xmin + math.Max(1e-3, math.Abs(xmin)*0.1)
	}
	const yLabW = 6
	table := 4 // blank, header, two arms
	ch := max(3, h-1-2-1-table)
	cw := max(10, w-yLabW)
	cv := newCanvas(cw, ch)
	for _, arm := range []struct {
		ok   bool
		q    []analysis.Num
		code uint8
	}{{bOK, curve.Baseline, cellBaseline}, {cOK, curve.Canary, cellCanary}} {
		if !arm.ok {
			continue
		}
		rows := make([]int, cw)
		for x := range rows {
			v := xmin + (float64(x)+0.5)/float64(cw)*(xmax-xmin)
			rows[x] = cv.row(cdfAt(arm.q, dist.Probs, v), 0, 1)
		}
		cv.trace(rows, arm.code)
	}
	for i, l := range cv.render(st) {
		lab := "      "
		switch i {
		case 0:
			lab = "1.00 ┤"
		case ch / 2:
			lab = "0.50 ┤"
		case ch - 1:
			lab = "0.00 ┤"
		default:
			lab = "     │"
		}
		lines = append(lines, st.dim.Render(lab)+l)
	}
	// x axis in ms or s
	scale, unit := 1000.0, "ms"
	if xmax >= 2 {
		scale, unit = 1, "s"
	}
	step := niceStep((xmax-xmin)*scale, max(2, cw/12))
	var cols []int
	var labs []string
	axis := []rune(strings.Repeat("─", cw))
	for t := math.Ceil(xmin*scale/step) * step; t <= xmax*scale+1e-9; t += step {
		x := int(math.Round((t/scale - xmin) / (xmax - xmin) * float64(cw-1)))
		if x < 0 || x >= cw {
			continue
		}
		axis[x] = '┬'
		cols = append(cols, x)
		labs = append(labs, fmtAxis(t))
	}
	lines = append(lines, st.dim.Render("     └"+string(axis)))
	lines = append(lines, st.dim.Render(padLeft(unit, yLabW-2))+"  "+axisLabels(cw, cols, labs))
	lines = append(lines, legend(st)+st.dim.Render("   x axis ends at the larger p99; maxima in the table"))

	// quantile table
	qs := []struct {
		name string
		p    float64
	}{{"p50", 0.5}, {"p90", 0.9}, {"p95", 0.95}, {"p99", 0.99}, {"max", 1}}
	var hb strings.Builder
	hb.WriteString(fmt.Sprintf("%-10s", ""))
	for _, q := range qs {
		hb.WriteString(fmt.Sprintf(" %10s", q.name))
	}
	lines = append(lines, "", st.dim.Render(hb.String()))
	for _, arm := range []struct {
		name  string
		ok    bool
		q     []analysis.Num
		style func(...string) string
	}{{"baseline", bOK, curve.Baseline, st.baseline.Render}, {"canary", cOK, curve.Canary, st.canary.Render}} {
		var b strings.Builder
		b.WriteString(arm.style(fmt.Sprintf("%-10s", arm.name)))
		for _, q := range qs {
			v := math.NaN()
			if arm.ok {
				v = quantileAt(arm.q, dist.Probs, q.p)
			}
			b.WriteString(fmt.Sprintf(" %10s", fmtSeconds(v)))
		}
		lines = append(lines, b.String())
	}
	return lines
}
