package tui

import (
	"fmt"
	"math"
	"sort"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/goodput-dev/goodput/analysis"
)

// timeModel draws goodput and TTFT p99 per bucket for both arms from
// Report.Series, with the warm-up cut shaded.
type timeModel struct{}

func (t timeModel) update(_ tea.KeyMsg, _ *common) timeModel { return t }

// pointAt returns the point whose bucket [T, T+bucket) holds t, or nil.
func pointAt(pts []analysis.Point, bucket, t float64) *analysis.Point {
	i := sort.Search(len(pts), func(i int) bool { return float64(pts[i].T) > t }) - 1
	if i < 0 {
		return nil
	}
	if bucket > 0 && t >= float64(pts[i].T)+bucket {
		return nil
	}
	return &pts[i]
}

func (t timeModel) view(c *common, w, h int) []string {
	st := c.st
	s := c.rep.Series
	if len(s.Baseline) == 0 && len(s.Canary) == 0 {
		return []string{st.title.Render("Time"), "", st.dim.Render("  The report has no per-bucket series.")}
	}
	bucket := float64(s.BucketSeconds)
	if bad(bucket) || bucket <= 0 {
		bucket = 0
	}
	tmax := 0.0
	for _, pts := range [][]analysis.Point{s.Baseline, s.Canary} {
		if n := len(pts); n > 0 {
			tmax = math.Max(tmax, float64(pts[n-1].T)+bucket)
		}
	}
	if tmax <= 0 {
		tmax = 1
	}
	const yLabW = 9
	cw := max(10, w-yLabW)
	ch := max(3, (h-1-6)/2) // each chart: title, rows, axis, labels; one legend line
	// which columns fall in a warm-up cut (either arm)
	cut := make([]bool, cw)
	anyCut := false
	for x := range cut {
		tc := (float64(x) + 0.5) / float64(cw) * tmax
		for _, pts := range [][]analysis.Point{s.Baseline, s.Canary} {
			if p := pointAt(pts, bucket, tc); p != nil && p.Cut {
				cut[x] = true
				anyCut = true
			}
		}
	}
	chart := func(title, unit string, val func(p *analysis.Point) float64, fmtY func(float64) string) []string {
		ymax := 0.0
		for _, pts := range [][]analysis.Point{s.Baseline, s.Canary} {
			for i := range pts {
				if v := val(&pts[i]); !bad(v) {
					ymax = math.Max(ymax, v)
				}
			}
		}
		if ymax <= 0 {
			ymax = 1
		}
		ymax *= 1.05
		cv := newCanvas(cw, ch)
		for x, isCut := range cut {
			if isCut {
				cv.shadeColumn(x)
			}
		}
		for _, arm := range []struct {
			pts  []analysis.Point
			code uint8
		}{{s.Baseline, cellBaseline}, {s.Canary, cellCanary}} {
			rows := make([]int, cw)
			for x := range rows {
				rows[x] = -1
				tc := (float64(x) + 0.5) / float64(cw) * tmax
				if p := pointAt(arm.pts, bucket, tc); p != nil {
					rows[x] = cv.row(val(p), 0, ymax)
				}
			}
			cv.trace(rows, arm.code)
		}
		out := []string{st.title.Render(title) + st.dim.Render(" ("+unit+")")}
		for i, l := range cv.render(st) {
			lab := strings.Repeat(" ", yLabW-1) + "│"
			switch i {
			case 0:
				lab = padLeft(fmtY(ymax), yLabW-2) + " ┤"
			case ch - 1:
				lab = padLeft(fmtY(0), yLabW-2) + " ┤"
			}
			out = append(out, st.dim.Render(lab)+l)
		}
		step := niceStep(tmax, max(2, cw/12))
		axis := []rune(strings.Repeat("─", cw))
		var cols []int
		var labs []string
		for tt := 0.0; tt <= tmax+1e-9; tt += step {
			x := int(math.Round(tt / tmax * float64(cw-1)))
			axis[x] = '┬'
			cols = append(cols, x)
			labs = append(labs, fmtAxis(tt))
		}
		out = append(out, st.dim.Render(strings.Repeat(" ", yLabW-1)+"└"+string(axis)))
		out = append(out, st.dim.Render(padLeft("s", yLabW-2))+"  "+axisLabels(cw, cols, labs))
		return out
	}
	per := "per bucket"
	if bucket > 0 {
		per = "per " + fmtG(bucket, 3) + " s bucket"
	}
	lines := chart("Goodput "+per, "good requests/s", func(p *analysis.Point) float64 { return float64(p.GoodputRPS) },
		func(v float64) string { return fmtG(v, 3) })
	lines = append(lines, chart("TTFT p99 "+per, "completed requests", func(p *analysis.Point) float64 { return float64(p.TTFTP99) },
		fmtSeconds)...)
	leg := legend(st)
	if anyCut {
		b, c := c.rep.Arms.Baseline.WarmupCutSeconds, c.rep.Arms.Canary.WarmupCutSeconds
		leg += st.dim.Render(fmt.Sprintf("   . warm-up cut, not analysed: baseline %s s, canary %s s", fmtG(float64(b), 3), fmtG(float64(c), 3)))
	}
	return append(lines, leg)
}
