package report

import (
	"fmt"
	"strings"

	"github.com/goodput-dev/goodput/analysis"
)

// mdInternal is the "internal work" section: both arms' internal-work
// means and work per good request, one Mermaid chart per arm of SLO
// attainment beside GPU utilization, KV-cache usage and retry share over
// the timeline (all in percent, so "GPU busy while goodput falls" is one
// picture), and the divergence findings. Empty when the report has no
// internal work.
func mdInternal(r *analysis.Report) string {
	b, c := r.Arms.Baseline, r.Arms.Canary
	if b.Internal == nil && c.Internal == nil && len(r.Timeline) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("#### Internal work and goodput over time\n\n")
	if b.Internal != nil || c.Internal != nil {
		sb.WriteString("| internal work (not gating) | baseline | canary |\n|---|---:|---:|\n")
		row := func(name string, f func(analysis.ArmSummary) string) {
			sb.WriteString("| " + name + " | " + f(b) + " | " + f(c) + " |\n")
		}
		in := func(f func(*analysis.Internal) analysis.Num, unit string, scale float64) func(analysis.ArmSummary) string {
			return func(s analysis.ArmSummary) string {
				if s.Internal == nil {
					return "n/a"
				}
				return mdValue(float64(f(s.Internal))*scale, unit)
			}
		}
		ef := func(f func(*analysis.Efficiency) analysis.Num, unit string) func(analysis.ArmSummary) string {
			return func(s analysis.ArmSummary) string {
				if s.Efficiency == nil {
					return "n/a"
				}
				return mdValue(float64(f(s.Efficiency)), unit)
			}
		}
		row("GPU utilization", in(func(x *analysis.Internal) analysis.Num { return x.GPUUtilization }, "fraction", 1))
		row("GPU power", in(func(x *analysis.Internal) analysis.Num { return x.GPUPowerW }, "W", 1))
		row("GPU memory", in(func(x *analysis.Internal) analysis.Num { return x.GPUMemoryBytes }, "GB", 1e-9))
		row("KV-cache usage", in(func(x *analysis.Internal) analysis.Num { return x.KVUsage }, "fraction", 1))
		row("requests waiting", in(func(x *analysis.Internal) analysis.Num { return x.QueueWaiting }, "", 1))
		row("requests running", in(func(x *analysis.Internal) analysis.Num { return x.Running }, "", 1))
		row("GPU-seconds / good request", ef(func(x *analysis.Efficiency) analysis.Num { return x.GPUSecondsPerGoodRequest }, "GPU·s"))
		row("joules / good request", ef(func(x *analysis.Efficiency) analysis.Num { return x.JoulesPerGoodRequest }, "J"))
		row("good tokens / joule", ef(func(x *analysis.Efficiency) analysis.Num { return x.GoodTokensPerJoule }, ""))
		row("good requests / GPU-hour", ef(func(x *analysis.Efficiency) analysis.Num { return x.GoodRequestsPerGPUHour }, ""))
		sb.WriteString("\n")
		var notes []string
		for _, x := range []struct {
			arm string
			s   analysis.ArmSummary
		}{{"baseline", b}, {"canary", c}} {
			if x.s.Internal != nil {
				notes = append(notes, x.arm+" from "+EscapeMarkdown(x.s.Internal.Source))
			}
			if x.s.Efficiency != nil && x.s.Efficiency.Note != "" {
				notes = append(notes, x.arm+": "+EscapeMarkdown(x.s.Efficiency.Note))
			}
		}
		sb.WriteString("<sub>" + strings.Join(notes, "; ") + ".</sub>\n\n")
	}
	if rows := r.Timeline; len(rows) >= 2 {
		lines := []analysis.TimelineQuantity{}
		for _, s := range analysis.TimelineQuantities() {
			if s.Fraction {
				lines = append(lines, s)
			}
		}
		span := float64(rows[len(rows)-1].T) + float64(rows[len(rows)-1].Seconds)
		for ai, arm := range []string{"baseline", "canary"} {
			var drawn, missing []string
			var body strings.Builder
			for _, s := range lines {
				vals := make([]float64, len(rows))
				ok := true
				for i := range rows {
					a := rows[i].Arm(ai)
					if a == nil || isNaN(s.Get(a)) {
						ok = false
						break
					}
					vals[i] = 100 * float64(s.Get(a))
				}
				if !ok {
					missing = append(missing, s.Name)
					continue
				}
				drawn = append(drawn, fmt.Sprintf("%d %s", len(drawn)+1, s.Name))
				body.WriteString("    line [" + mdChartList(vals) + "]\n")
			}
			if len(drawn) == 0 {
				continue
			}
			sb.WriteString("```mermaid\nxychart-beta\n")
			fmt.Fprintf(&sb, "    title \"%s: percent per %s slice\"\n", arm, timelineWidthText(rows))
			fmt.Fprintf(&sb, "    x-axis \"seconds from the arm's start\" 0 --> %s\n", mdChartNum(span))
			sb.WriteString("    y-axis \"percent\" 0 --> 100\n")
			sb.WriteString(body.String())
			sb.WriteString("```\n\n")
			note := arm + ": line " + strings.Join(drawn, ", line ")
			if len(missing) > 0 {
				note += "; not drawn (unknown in some slices): " + strings.Join(missing, ", ")
			}
			if ds := mdDivergingSlices(rows, ai); ds != "" {
				note += "; diverging slices: " + ds
			}
			sb.WriteString("<sub>" + note + ".</sub>\n\n")
		}
	}
	for _, f := range r.Findings {
		sb.WriteString("- **finding (not a gate)**: " + EscapeMarkdown(f.Detail) + "\n")
	}
	if len(r.Findings) > 0 {
		sb.WriteString("\n")
	}
	return sb.String()
}

// mdDivergingSlices lists the diverging slices of one arm as "360–840 s".
func mdDivergingSlices(rows []analysis.TimelineRow, ai int) string {
	var parts []string
	for i := 0; i < len(rows); {
		a := rows[i].Arm(ai)
		if a == nil || !a.Diverging {
			i++
			continue
		}
		e := i
		for e < len(rows) {
			if x := rows[e].Arm(ai); x == nil || !x.Diverging {
				break
			}
			e++
		}
		parts = append(parts, fmt.Sprintf("%s–%s s", mdChartNum(float64(rows[i].T)), mdChartNum(float64(rows[e-1].T)+float64(rows[e-1].Seconds))))
		i = e
	}
	return strings.Join(parts, ", ")
}
