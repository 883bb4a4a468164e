package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/analysis"
)

// stripLevels are the eight block heights of a Unicode strip; stripUnknown
// marks a slice without a value.
const stripLevels = "▁▂▃▄▅▆▇█"

const stripUnknown = '·'

// seriesMax is the largest finite value of a series over both arms (the
// shared scale of a non-fraction strip), or 0.
func seriesMax(rows []analysis.TimelineRow, s analysis.TimelineQuantity) float64 {
	m := 0.0
	for i := range rows {
		for ai := range 2 {
			if a := rows[i].Arm(ai); a != nil && !isNaN(s.Get(a)) {
				m = math.Max(m, float64(s.Get(a)))
			}
		}
	}
	return m
}

// strip draws one series of one arm as a row of block characters, one per
// timeline row: a fraction on 0–100%, other values on 0..top.
func strip(rows []analysis.TimelineRow, ai int, s analysis.TimelineQuantity, top float64) string {
	levels := []rune(stripLevels)
	var b strings.Builder
	for i := range rows {
		a := rows[i].Arm(ai)
		if a == nil || isNaN(s.Get(a)) {
			b.WriteRune(stripUnknown)
			continue
		}
		v := float64(s.Get(a))
		hi := top
		if s.Fraction {
			hi = 1
		}
		k := 0
		if hi > 0 {
			k = int(math.Round(v / hi * float64(len(levels)-1)))
		}
		b.WriteRune(levels[min(max(k, 0), len(levels)-1)])
	}
	return b.String()
}

// seriesRange renders a series' range over one arm, e.g. "0–72.5 req/s" or
// "0–100%"; "n/a" when it has no values.
func seriesRange(rows []analysis.TimelineRow, ai int, s analysis.TimelineQuantity) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range rows {
		if a := rows[i].Arm(ai); a != nil && !isNaN(s.Get(a)) {
			v := float64(s.Get(a))
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 0) {
		return "n/a"
	}
	if s.Fraction {
		return fmt.Sprintf("%.0f–%.0f%%", lo*100, hi*100)
	}
	return fmt.Sprintf("%.3g–%.3g %s", lo, hi, s.Unit)
}

// hasSeries reports whether any arm of any row has a value of s.
func hasSeries(rows []analysis.TimelineRow, s analysis.TimelineQuantity) bool {
	for i := range rows {
		for ai := range 2 {
			if a := rows[i].Arm(ai); a != nil && !isNaN(s.Get(a)) {
				return true
			}
		}
	}
	return false
}

// timelineMarks draws the divergence (!) and warm-up (w) marks of one arm.
func timelineMarks(rows []analysis.TimelineRow, ai int) (string, bool) {
	var b strings.Builder
	any := false
	for i := range rows {
		a := rows[i].Arm(ai)
		switch {
		case a != nil && a.Diverging:
			b.WriteRune('!')
			any = true
		case a != nil && a.Warmup:
			b.WriteRune('w')
			any = true
		default:
			b.WriteRune(' ')
		}
	}
	return strings.TrimRight(b.String(), " "), any
}

// timelineWidthText names the timeline's slice width, e.g. "60 s".
func timelineWidthText(rows []analysis.TimelineRow) string {
	if len(rows) == 0 || isNaN(rows[0].Seconds) {
		return "slice"
	}
	return fmt.Sprintf("%g s", float64(rows[0].Seconds))
}

// textInternal writes the internal-work table, the efficiency figures and
// the timeline strips, when the report has them.
func textInternal(tw *errWriter, r *analysis.Report) {
	b, c := r.Arms.Baseline, r.Arms.Canary
	if b.Internal == nil && c.Internal == nil && len(r.Timeline) == 0 {
		return
	}
	if b.Internal != nil || c.Internal != nil {
		tw.printf("\n")
		in := func(s analysis.ArmSummary, f func(*analysis.Internal) string) string {
			if s.Internal == nil {
				return "n/a"
			}
			return f(s.Internal)
		}
		ef := func(s analysis.ArmSummary, f func(*analysis.Efficiency) string) string {
			if s.Efficiency == nil {
				return "n/a"
			}
			return f(s.Efficiency)
		}
		num := func(n analysis.Num, format, unit string) string {
			if isNaN(n) {
				return "n/a"
			}
			if math.Abs(float64(n)) >= 1e4 {
				return count(int64(math.Round(float64(n)))) + unit
			}
			return fmt.Sprintf(format, float64(n)) + unit
		}
		rows := [][]string{
			{"internal work (not gating)", "baseline", "canary"},
			{"GPU utilization", in(b, func(x *analysis.Internal) string { return pct(x.GPUUtilization) }), in(c, func(x *analysis.Internal) string { return pct(x.GPUUtilization) })},
			{"GPU power", in(b, func(x *analysis.Internal) string { return num(x.GPUPowerW, "%.4g", " W") }), in(c, func(x *analysis.Internal) string { return num(x.GPUPowerW, "%.4g", " W") })},
			{"GPU memory", in(b, func(x *analysis.Internal) string { return num(x.GPUMemoryBytes/1e9, "%.4g", " GB") }), in(c, func(x *analysis.Internal) string { return num(x.GPUMemoryBytes/1e9, "%.4g", " GB") })},
			{"KV-cache usage", in(b, func(x *analysis.Internal) string { return pct(x.KVUsage) }), in(c, func(x *analysis.Internal) string { return pct(x.KVUsage) })},
			{"requests waiting", in(b, func(x *analysis.Internal) string { return num(x.QueueWaiting, "%.4g", "") }), in(c, func(x *analysis.Internal) string { return num(x.QueueWaiting, "%.4g", "") })},
			{"requests running", in(b, func(x *analysis.Internal) string { return num(x.Running, "%.4g", "") }), in(c, func(x *analysis.Internal) string { return num(x.Running, "%.4g", "") })},
			{"GPU-seconds/good request", ef(b, func(x *analysis.Efficiency) string { return num(x.GPUSecondsPerGoodRequest, "%.4g", " GPU·s") }), ef(c, func(x *analysis.Efficiency) string { return num(x.GPUSecondsPerGoodRequest, "%.4g", " GPU·s") })},
			{"joules/good request", ef(b, func(x *analysis.Efficiency) string { return num(x.JoulesPerGoodRequest, "%.4g", " J") }), ef(c, func(x *analysis.Efficiency) string { return num(x.JoulesPerGoodRequest, "%.4g", " J") })},
			{"good tokens/joule", ef(b, func(x *analysis.Efficiency) string { return num(x.GoodTokensPerJoule, "%.4g", "") }), ef(c, func(x *analysis.Efficiency) string { return num(x.GoodTokensPerJoule, "%.4g", "") })},
			{"good requests/GPU-hour", ef(b, func(x *analysis.Efficiency) string { return num(x.GoodRequestsPerGPUHour, "%.4g", "") }), ef(c, func(x *analysis.Efficiency) string { return num(x.GoodRequestsPerGPUHour, "%.4g", "") })},
		}
		table(tw, rows, []bool{false, true, true})
		for _, x := range []struct {
			arm string
			s   analysis.ArmSummary
		}{{"baseline", b}, {"canary", c}} {
			if x.s.Internal != nil {
				tw.printf("  %s source: %s\n", x.arm, Sanitize(x.s.Internal.Source))
			}
			if x.s.Efficiency != nil && x.s.Efficiency.Note != "" {
				tw.printf("  %s efficiency: %s\n", x.arm, Sanitize(x.s.Efficiency.Note))
			}
		}
	}
	rows := r.Timeline
	if len(rows) == 0 {
		return
	}
	tw.printf("\ntimeline (one character per %s; fractions on 0–100%%, rates on a scale shared by both arms; · unknown, ! divergence, w warm-up):\n",
		timelineWidthText(rows))
	var series []analysis.TimelineQuantity
	for _, s := range analysis.TimelineQuantities() {
		if hasSeries(rows, s) {
			series = append(series, s)
		}
	}
	var lines [][]string
	for ai, arm := range []string{"baseline", "canary"} {
		for k, s := range series {
			label := ""
			if k == 0 {
				label = arm
			}
			lines = append(lines, []string{label, s.Name, strip(rows, ai, s, seriesMax(rows, s)), seriesRange(rows, ai, s)})
		}
		if m, ok := timelineMarks(rows, ai); ok {
			lines = append(lines, []string{"", "marks", m, ""})
		}
	}
	for _, l := range tableLines(lines, []bool{false, false, false, false}) {
		tw.printf("  %s\n", l)
	}
	end := float64(rows[len(rows)-1].T) + float64(rows[len(rows)-1].Seconds)
	tw.printf("  %s\n", fmt.Sprintf("time runs left to right from 0 to %g s of each arm's window", end))
}
