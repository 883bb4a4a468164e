package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/goodput-dev/goodput/analysis"
)

// specModel lists the warnings, the measurement spec, normalization,
// diagnostics, inputs and policy; it scrolls.
type specModel struct {
	offset int
}

func (s specModel) update(msg tea.KeyMsg, c *common) specModel {
	switch {
	case key.Matches(msg, c.keys.Up):
		s.offset = max(0, s.offset-1)
	case key.Matches(msg, c.keys.Down):
		s.offset++
	case msg.Type == tea.KeyPgUp:
		s.offset = max(0, s.offset-10)
	case msg.Type == tea.KeyPgDown:
		s.offset += 10
	}
	return s
}

func (s specModel) view(c *common, w, h int) []string {
	lines := specLines(c, w)
	out, off := scroll(lines, s.offset, h)
	if off+h < len(lines) && len(out) > 0 {
		out[len(out)-1] = c.st.dim.Render(fmt.Sprintf("  … %d more lines (↓/j)", len(lines)-off-h))
	}
	return out
}

func specLines(c *common, w int) []string {
	st := c.st
	rep := c.rep
	var lines []string
	kv := func(k, v string) {
		lines = append(lines, wrap(fmt.Sprintf("  %-22s %s", k, v), w, strings.Repeat(" ", 25))...)
	}

	lines = append(lines, st.title.Render(fmt.Sprintf("Warnings (%d)", len(rep.Warnings))))
	if len(rep.Warnings) == 0 {
		lines = append(lines, st.dim.Render("  none"))
	}
	for _, wn := range rep.Warnings {
		for i, l := range wrap("  ! "+wn, w, "    ") {
			if i == 0 {
				l = st.warn.Render(l)
			}
			lines = append(lines, l)
		}
	}

	m := rep.Measurement
	lines = append(lines, "", st.title.Render("Measurement spec"))
	kv("population", m.Population)
	kv("location", m.Location)
	kv("completion condition", m.CompletionCondition)
	kv("window", fmt.Sprintf("%s … %s (%s s)", m.Window.Start, m.Window.End, fmtG(float64(m.Window.Seconds), 4)))
	kv("warm-up cut", fmt.Sprintf("baseline %s s, canary %s s", fmtG(float64(rep.Arms.Baseline.WarmupCutSeconds), 3), fmtG(float64(rep.Arms.Canary.WarmupCutSeconds), 3)))
	if b, c := rep.Arms.Baseline.LeftOut, rep.Arms.Canary.LeftOut; b != nil && c != nil {
		// a stretch left out of both arms (baseline_outage, shared_outage)
		left := func(l *analysis.LeftOut) string {
			return fmt.Sprintf("%s requests in %s s (%s failed)", fmtInt(l.Accounting.Offered), fmtG(float64(l.Seconds), 4), fmtInt(l.Accounting.Failed))
		}
		kv("left out (outage)", fmt.Sprintf("baseline %s, canary %s", left(b), left(c)))
	}
	if m.ResamplingUnit != "" {
		kv("resampling unit", m.ResamplingUnit)
	} else {
		kv("bucket", fmtG(m.BucketSeconds, 3)+" s")
	}
	kv("clock", m.Clock)
	kv("confidence", fmtG(float64(m.Confidence), 3))
	for _, slo := range m.SLO {
		var parts []string
		if v := float64(slo.TTFT); v > 0 {
			parts = append(parts, "TTFT ≤ "+fmtSeconds(v))
		}
		if v := float64(slo.TPOT); v > 0 {
			parts = append(parts, "TPOT ≤ "+fmtSeconds(v))
		}
		if v := float64(slo.E2E); v > 0 {
			parts = append(parts, "E2E ≤ "+fmtSeconds(v))
		}
		if v := float64(slo.MaxITL); v > 0 {
			parts = append(parts, "stall ≤ "+fmtSeconds(v))
		}
		if slo.QualityNeeded {
			parts = append(parts, "quality ok")
		}
		kv("SLO "+slo.Class, "completed ∧ "+strings.Join(parts, " ∧ "))
	}

	lines = append(lines, "", st.title.Render("Normalization"))
	if len(rep.Normalization.Steps) == 0 {
		lines = append(lines, st.dim.Render("  none"))
	}
	for _, n := range rep.Normalization.Steps {
		state := "not applied"
		if n.Applied {
			state = "applied"
		}
		kv(n.Name+" ("+state+")", strings.TrimSpace(n.Setting+"  "+n.Detail))
	}

	if len(rep.Diagnostics) > 0 {
		lines = append(lines, "", st.title.Render("Diagnostics")+st.dim.Render("  (shown, never gating)"))
		for _, d := range rep.Diagnostics {
			s := fmt.Sprintf("estimate %s [%s, %s]  p %s  q %s  n %s/%s", fmtG(float64(d.Estimate), 3),
				fmtG(float64(d.Interval[0]), 3), fmtG(float64(d.Interval[1]), 3), fmtG(float64(d.PValue), 3),
				fmtG(float64(d.QValue), 3), fmtInt(d.NBaseline), fmtInt(d.NCanary))
			if d.Note != "" {
				s += "  " + d.Note
			}
			kv(d.Metric+" "+d.Method, s)
		}
	}

	lines = append(lines, "", st.title.Render("Inputs"))
	for _, in := range rep.Inputs {
		sha := in.SHA256
		if len(sha) > 12 {
			sha = sha[:12]
		}
		s := fmt.Sprintf("%s  %s  %s requests  sha256 %s", in.Path, in.Format, fmtInt(int64(in.Count)), sha)
		if in.Note != "" {
			s += "  (" + in.Note + ")"
		}
		kv(string(in.Arm), s)
	}
	lines = append(lines, "", st.title.Render("Policy"))
	sha := rep.Policy.SHA256
	if len(sha) > 12 {
		sha = sha[:12]
	}
	kv("policy", fmt.Sprintf("%s (%s) sha256 %s", rep.Policy.Name, rep.Policy.Source, sha))
	kv("tool", fmt.Sprintf("%s  judge %s  schema %d", rep.ToolVersion, rep.Judge, rep.SchemaVersion))
	lines = append(lines, "", st.dim.Render("  review record: "+c.recordPath))
	return lines
}
