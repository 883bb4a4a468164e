package tui

import (
	"math"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/goodput-dev/goodput/analysis"
)

// internalModel draws Report.Timeline: per arm, the request story
// (offered, goodput, SLO attainment, retry share) above the internal-work
// story (GPU utilization, KV-cache usage, queue) as aligned Unicode strips,
// so "GPU busy while goodput falls" reads as one picture; then each arm's
// internal-work means and work per good request, and the divergence
// findings. The view is offered only when the report has internal work.
type internalModel struct{}

func (v internalModel) update(_ tea.KeyMsg, _ *common) internalModel { return v }

// hasInternal reports whether a report carries internal work to show.
func hasInternal(r *analysis.Report) bool {
	return len(r.Timeline) > 0 || r.Arms.Baseline.Internal != nil || r.Arms.Canary.Internal != nil
}

const internalLevels = "▁▂▃▄▅▆▇█"

func (v internalModel) view(c *common, w, h int) []string {
	levels := []rune(internalLevels)
	st := c.st
	rows := c.rep.Timeline
	width := "slice"
	if len(rows) > 0 && !bad(float64(rows[0].Seconds)) {
		width = fmtG(float64(rows[0].Seconds), 3) + " s"
	}
	out := []string{st.title.Render("Internal work and goodput over time") +
		st.dim.Render(" (per "+width+"; % on 0–100, rates on one scale; ! divergence)")}
	const labW = 26 // arm + series name
	const rangeW = 18
	rep := 1
	if n := len(rows); n > 0 {
		rep = min(3, max(1, (w-labW-rangeW-2)/n))
	}
	var series []analysis.TimelineQuantity
	for _, s := range analysis.TimelineQuantities() {
		for i := range rows {
			ok := false
			for ai := range 2 {
				if a := rows[i].Arm(ai); a != nil && !bad(float64(s.Get(a))) {
					ok = true
				}
			}
			if ok {
				series = append(series, s)
				break
			}
		}
	}
	for ai, arm := range []string{"baseline", "canary"} {
		style := st.baseline
		if ai == 1 {
			style = st.canary
		}
		for k, s := range series {
			top := 1.0
			if !s.Fraction {
				top = 0
				for i := range rows {
					for aj := range 2 {
						if a := rows[i].Arm(aj); a != nil && !bad(float64(s.Get(a))) {
							top = math.Max(top, float64(s.Get(a)))
						}
					}
				}
			}
			var b strings.Builder
			lo, hi := math.Inf(1), math.Inf(-1)
			for i := range rows {
				a := rows[i].Arm(ai)
				ch := '·'
				if a != nil && !bad(float64(s.Get(a))) {
					x := float64(s.Get(a))
					lo, hi = math.Min(lo, x), math.Max(hi, x)
					lv := 0
					if top > 0 {
						lv = int(math.Round(x / top * float64(len(levels)-1)))
					}
					ch = levels[min(max(lv, 0), len(levels)-1)]
				}
				b.WriteString(strings.Repeat(string(ch), rep))
			}
			label := ""
			if k == 0 {
				label = arm
			}
			rng := na
			if !math.IsInf(lo, 0) {
				if s.Fraction {
					rng = fmtG(lo*100, 3) + "–" + fmtG(hi*100, 3) + " %"
				} else {
					rng = fmtG(lo, 3) + "–" + fmtG(hi, 3) + " " + s.Unit
				}
			}
			out = append(out, pad(style.Render(label), 9)+pad(s.Name, labW-9)+style.Render(b.String())+"  "+st.dim.Render(rng))
		}
		var marks strings.Builder
		anyMark := false
		for i := range rows {
			ch := " "
			if a := rows[i].Arm(ai); a != nil && a.Diverging {
				ch, anyMark = "!", true
			}
			marks.WriteString(strings.Repeat(ch, rep))
		}
		if anyMark {
			out = append(out, strings.Repeat(" ", labW)+st.fail.Render(strings.TrimRight(marks.String(), " ")))
		}
	}
	for _, f := range c.rep.Findings {
		out = append(out, "")
		out = append(out, wrap(st.warn.Render("finding (not a gate): ")+f.Detail, w, "  ")...)
	}
	out = append(out, "")
	var srcs []string
	for _, x := range []struct {
		arm string
		s   analysis.ArmSummary
	}{{"baseline", c.rep.Arms.Baseline}, {"canary", c.rep.Arms.Canary}} {
		in, ef := x.s.Internal, x.s.Efficiency
		if in == nil {
			continue
		}
		parts := []string{"GPU " + fmtPct(float64(in.GPUUtilization)), fmtG(float64(in.GPUPowerW), 4) + " W",
			"KV " + fmtPct(float64(in.KVUsage)), "waiting " + fmtG(float64(in.QueueWaiting), 4)}
		if ef != nil {
			parts = append(parts, fmtG(float64(ef.JoulesPerGoodRequest), 4)+" J/good", fmtG(float64(ef.GPUSecondsPerGoodRequest), 3)+" GPU·s/good")
		}
		out = append(out, wrap(pad(x.arm+":", 10)+strings.Join(parts, " · "), w, "          ")...)
		srcs = append(srcs, x.arm+" from "+in.Source)
	}
	if len(srcs) > 0 {
		out = append(out, wrap(st.dim.Render(strings.Join(srcs, "; ")), w, "  ")...)
	}
	if len(rows) == 0 && c.rep.Arms.Baseline.Internal == nil && c.rep.Arms.Canary.Internal == nil {
		out = append(out, "", st.dim.Render("  The report has no internal work (give a metrics source)."))
	}
	return out
}
