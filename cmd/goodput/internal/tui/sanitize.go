package tui

import (
	"cmp"
	"slices"
	"strings"
	"unicode"

	"github.com/charmbracelet/x/ansi"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/sources"
)

// clean makes untrusted text safe to print on a terminal: it removes ANSI
// escape sequences, C0/C1 control characters and DEL, and bidirectional
// overrides (which can reorder what the reader sees); tabs and line breaks
// become spaces so one value stays on one line, and invalid UTF-8 becomes
// U+FFFD.
func clean(s string) string {
	if isPlain(s) {
		return s
	}
	s = ansi.Strip(strings.ToValidUTF8(s, "\uFFFD"))
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f':
			b.WriteByte(' ')
		case unicode.IsControl(r), isBidiControl(r):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isPlain reports whether s is printable ASCII only, the common case.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

func isBidiControl(r rune) bool {
	switch {
	case r == 0x061C, r == 0x200E, r == 0x200F:
		return true
	case r >= 0x202A && r <= 0x202E:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

func cleanAll(in []string) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = clean(s)
	}
	return out
}

// sanitizeReport returns a copy of r whose every free-text field has been
// passed through clean; numbers are shared, r is not modified.
func sanitizeReport(r *analysis.Report) *analysis.Report {
	c := *r
	c.Verdict = analysis.Verdict(clean(string(r.Verdict)))
	c.Reasons = cleanAll(r.Reasons)
	c.Warnings = cleanAll(r.Warnings)
	c.ToolVersion = clean(r.ToolVersion)
	c.Judge = clean(r.Judge)
	c.Policy = analysis.PolicyRef{Name: clean(r.Policy.Name), SHA256: clean(r.Policy.SHA256), Source: clean(r.Policy.Source)}

	m := r.Measurement
	m.Population = clean(m.Population)
	m.Location = clean(m.Location)
	m.CompletionCondition = clean(m.CompletionCondition)
	m.Clock = clean(m.Clock)
	m.ResamplingUnit = clean(m.ResamplingUnit)
	m.Window.Start = clean(m.Window.Start)
	m.Window.End = clean(m.Window.End)
	m.SLO = make([]analysis.ClassSLO, len(r.Measurement.SLO))
	for i, s := range r.Measurement.SLO {
		s.Class = clean(s.Class)
		m.SLO[i] = s
	}
	c.Measurement = m

	c.Arms.Baseline = cleanArm(r.Arms.Baseline)
	c.Arms.Canary = cleanArm(r.Arms.Canary)

	c.Metrics = make([]analysis.Metric, len(r.Metrics))
	for i, g := range r.Metrics {
		g.Name = clean(g.Name)
		g.Class = clean(g.Class)
		g.Verdict = analysis.Verdict(clean(string(g.Verdict)))
		g.Direction = clean(g.Direction)
		g.Scale = clean(g.Scale)
		g.Unit = clean(g.Unit)
		g.Method = clean(g.Method)
		g.Reason = clean(g.Reason)
		g.Adjusted = cleanAll(g.Adjusted)
		c.Metrics[i] = g
	}
	c.Diagnostics = make([]analysis.Diagnostic, len(r.Diagnostics))
	for i, d := range r.Diagnostics {
		d.Metric = clean(d.Metric)
		d.Method = clean(d.Method)
		d.Note = clean(d.Note)
		c.Diagnostics[i] = d
	}
	c.Classes = make([]analysis.ClassRow, len(r.Classes))
	for i, cl := range r.Classes {
		cl.Class = clean(cl.Class)
		cl.Label = clean(cl.Label)
		c.Classes[i] = cl
	}
	c.Normalization.Steps = make([]analysis.NormalizationStep, len(r.Normalization.Steps))
	for i, s := range r.Normalization.Steps {
		s.Name = clean(s.Name)
		s.Setting = clean(s.Setting)
		s.Detail = clean(s.Detail)
		c.Normalization.Steps[i] = s
	}
	// charts look points up by time
	byT := func(a, b analysis.Point) int { return cmp.Compare(float64(a.T), float64(b.T)) }
	c.Series.Baseline = slices.Clone(r.Series.Baseline)
	c.Series.Canary = slices.Clone(r.Series.Canary)
	slices.SortStableFunc(c.Series.Baseline, byT)
	slices.SortStableFunc(c.Series.Canary, byT)
	c.Findings = make([]analysis.Finding, len(r.Findings))
	for i, f := range r.Findings {
		f.Kind = clean(f.Kind)
		f.Arm = sources.Arm(clean(string(f.Arm)))
		f.Detail = clean(f.Detail)
		f.Causes = cleanAll(f.Causes)
		c.Findings[i] = f
	}
	c.Inputs = make([]sources.Input, len(r.Inputs))
	for i, in := range r.Inputs {
		in.Path = clean(in.Path)
		in.SHA256 = clean(in.SHA256)
		in.Format = clean(in.Format)
		in.Arm = sources.Arm(clean(string(in.Arm)))
		in.Note = clean(in.Note)
		c.Inputs[i] = in
	}
	return &c
}

func cleanArm(a analysis.ArmSummary) analysis.ArmSummary {
	if a.Internal != nil {
		in := *a.Internal
		in.Source = clean(in.Source)
		a.Internal = &in
	}
	if a.Efficiency != nil {
		ef := *a.Efficiency
		ef.Note = clean(ef.Note)
		a.Efficiency = &ef
	}
	if a.Cost != nil {
		cost := *a.Cost
		cost.Source = clean(cost.Source)
		cost.MissingComponents = cleanAll(cost.MissingComponents)
		a.Cost = &cost
	}
	return a
}
