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
	ch := max(3, (h-2-9)/3) // three charts of title, rows, axis, labels; two legend lines
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
	var framed func(title, unit string, cv *canvas, ymin, ymax float64, fmtY func(float64) string) []string
	chart := func(title, unit string, val func(p *analysis.Point) float64, fmtY func(float64) string) []string {
		// the y-axis spans the data, not 0 … max: a 5% gap between the
		// arms must be visible
		var vs []float64
		for _, pts := range [][]analysis.Point{s.Baseline, s.Canary} {
			for i := range pts {
				if v := val(&pts[i]); !bad(v) {
					vs = append(vs, v)
				}
			}
		}
		ymin, ymax := dataRange(vs)
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
					rows[x] = cv.row(val(p), ymin, ymax)
				}
			}
			cv.trace(rows, arm.code)
		}
		return framed(title, unit, cv, ymin, ymax, fmtY)
	}
	framed = func(title, unit string, cv *canvas, ymin, ymax float64, fmtY func(float64) string) []string {
		out := []string{st.title.Render(title) + st.dim.Render(" ("+unit+")")}
		for i, l := range cv.render(st) {
			lab := strings.Repeat(" ", yLabW-1) + "│"
			switch i {
			case 0:
				lab = padLeft(fmtY(ymax), yLabW-2) + " ┤"
			case ch - 1:
				lab = padLeft(fmtY(ymin), yLabW-2) + " ┤"
			case (ch - 1) / 2:
				if ch >= 5 {
					lab = padLeft(fmtY((ymin+ymax)/2), yLabW-2) + " ┤"
				}
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
	goodput := func(p *analysis.Point) float64 { return float64(p.GoodputRPS) }
	lines := chart("Goodput "+per, "good requests/s", goodput, func(v float64) string { return fmtG(v, 3) })
	dl, band := deltaChart(c, bucket, tmax, cw, ch, cut, goodput, framed)
	lines = append(lines, dl...)
	lines = append(lines, chart("TTFT p99 "+per, "completed requests", func(p *analysis.Point) float64 { return float64(p.TTFTP99) },
		fmtSeconds)...)
	leg := legend(st) + st.bold.Render("  # canary − baseline") + "  " + st.canary.Render(": "+band)
	if anyCut {
		b, c := c.rep.Arms.Baseline.WarmupCutSeconds, c.rep.Arms.Canary.WarmupCutSeconds
		leg += "\n" + st.dim.Render(fmt.Sprintf(". warm-up cut, not analysed: baseline %s s, canary %s s", fmtG(float64(b), 3), fmtG(float64(c), 3)))
	}
	return append(lines, strings.Split(leg, "\n")...)
}

// dataRange is the y-range of a chart: the data's min and max with 5% of
// their span added on both sides (so neither end sits on the frame), or
// ±5% around a constant; 0 … 1 without data.
func dataRange(vs []float64) (lo, hi float64) {
	if len(vs) == 0 {
		return 0, 1
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	pad := 0.05 * (hi - lo)
	if pad == 0 {
		pad = 0.05 * math.Max(math.Abs(hi), 1e-9)
	}
	return lo - pad, hi + pad
}

// deltaChart draws canary − baseline goodput per bucket (buckets paired by
// their time from each arm's start, warm-up buckets left out), the zero
// line, and a band: the goodput gate's interval in req/s when the report
// gates goodput, else the 90% interval of the mean bucket difference
// (buckets taken as independent). It returns the chart and the band's
// legend text.
func deltaChart(c *common, bucket, tmax float64, cw, ch int, cut []bool, val func(*analysis.Point) float64,
	framed func(string, string, *canvas, float64, float64, func(float64) string) []string) ([]string, string) {
	s := c.rep.Series
	d := make([]float64, cw)
	var ds []float64
	for x := range d {
		d[x] = math.NaN()
		tc := (float64(x) + 0.5) / float64(cw) * tmax
		pb, pc := pointAt(s.Baseline, bucket, tc), pointAt(s.Canary, bucket, tc)
		if pb == nil || pc == nil || pb.Cut || pc.Cut {
			continue
		}
		if v := val(pc) - val(pb); !bad(v) {
			d[x] = v
		}
	}
	var sum, n float64
	seen := map[[2]float64]bool{}
	for _, pb := range s.Baseline {
		pc := pointAt(s.Canary, bucket, float64(pb.T))
		if pc == nil || pb.Cut || pc.Cut || seen[[2]float64{float64(pb.T), float64(pc.T)}] {
			continue
		}
		seen[[2]float64{float64(pb.T), float64(pc.T)}] = true
		if v := val(pc) - val(&pb); !bad(v) {
			ds = append(ds, v)
			sum += v
			n++
		}
	}
	lo, hi := math.NaN(), math.NaN()
	label := "no band (too few buckets)"
	for _, g := range c.rep.Metrics {
		if (g.Name == "goodput" || g.Name == "goodput_per_replica") && !bad(float64(g.Interval[0])) && !bad(float64(g.Interval[1])) {
			base := float64(c.rep.Arms.Baseline.GoodputRPS)
			if !bad(base) {
				lo, hi = float64(g.Interval[0])*base, float64(g.Interval[1])*base
				label = g.Name + " interval"
			}
		}
	}
	if bad(lo) && n >= 2 {
		mean := sum / n
		ss := 0.0
		for _, v := range ds {
			ss += (v - mean) * (v - mean)
		}
		half := 1.645 * math.Sqrt(ss/(n-1)/n)
		lo, hi = mean-half, mean+half
		label = "90% interval of the mean"
	}
	vs := append([]float64{0}, ds...)
	if !bad(lo) {
		vs = append(vs, lo, hi)
	}
	ymin, ymax := dataRange(vs)
	cv := newCanvas(cw, ch)
	for x := range d {
		if cut[x] {
			cv.shadeColumn(x)
		}
		if !bad(lo) {
			a, b := cv.row(hi, ymin, ymax), cv.row(lo, ymin, ymax)
			for y := a; y <= b && a >= 0; y++ {
				cv.set(x, y, cellBand)
			}
		}
		cv.set(x, cv.row(0, ymin, ymax), cellZero)
	}
	rows := make([]int, cw)
	for x := range rows {
		rows[x] = cv.row(d[x], ymin, ymax)
	}
	cv.trace(rows, cellDelta)
	signed := func(v float64) string {
		if math.Abs(v) < 1e-12 {
			return "0"
		}
		if v > 0 {
			return "+" + fmtG(v, 3)
		}
		return fmtG(v, 3)
	}
	return framed("Goodput canary − baseline", "good requests/s", cv, ymin, ymax, signed), label
}
