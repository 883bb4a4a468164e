package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/capacity"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/sources"
)

// CapacityDoc is what `goodput capacity` reports: the comparison with the
// inputs and policy it was made from.
type CapacityDoc struct {
	Result      *capacity.Result
	SLO         string // e.g. "TTFT ≤ 1s ∧ TPOT ≤ 80ms"
	Policy      analysis.PolicyRef
	Inputs      []sources.Input
	ToolVersion string
}

// capacity JSON contract (schema_version 1; README "Capacity JSON")

type capJSON struct {
	SchemaVersion int                `json:"schema_version"`
	Verdict       analysis.Verdict   `json:"verdict"`
	Reasons       []string           `json:"reasons"`
	Capacity      capSection         `json:"capacity"`
	Warnings      []string           `json:"warnings"`
	Inputs        []sources.Input    `json:"inputs"`
	Policy        analysis.PolicyRef `json:"policy"`
	ToolVersion   string             `json:"tool_version"`
}

type capSection struct {
	Target              analysis.Num     `json:"target"`
	SLO                 string           `json:"slo"`
	Margin              analysis.Num     `json:"margin"`
	GateFromPolicy      bool             `json:"gate_from_policy"`
	Confidence          analysis.Num     `json:"confidence"`
	SaturationTolerance analysis.Num     `json:"saturation_tolerance"`
	Scale               string           `json:"scale"`
	Baseline            capArm           `json:"baseline"`
	Canary              capArm           `json:"canary"`
	Ratio               analysis.Num     `json:"ratio"`
	Interval            [2]analysis.Num  `json:"interval"`
	Verdict             analysis.Verdict `json:"verdict"`
	CommonRates         []capCommon      `json:"common_rates"`
}

type capArm struct {
	Points     []capPoint       `json:"points"`
	Fit        capFit           `json:"fit"`
	Capacity   capCap           `json:"capacity"`
	Replicas   int              `json:"replicas,omitempty"`
	GPUs       int              `json:"gpus,omitempty"`
	USDPerHour analysis.Num     `json:"usd_per_hour,omitempty"`
	PerReplica *[3]analysis.Num `json:"capacity_per_replica,omitempty"`
	PerGPU     *[3]analysis.Num `json:"capacity_per_gpu,omitempty"`
	GoodPerUSD *[3]analysis.Num `json:"good_requests_per_usd,omitempty"`
}

type capPoint struct {
	Source        string          `json:"source"`
	Rate          analysis.Num    `json:"rate"`
	RequestedRate analysis.Num    `json:"requested_rate"`
	AchievedRate  analysis.Num    `json:"achieved_rate"`
	Saturated     bool            `json:"saturated"`
	Offered       int64           `json:"offered"`
	Completed     int64           `json:"completed"`
	GoodLo        int64           `json:"good_lo"`
	GoodHi        int64           `json:"good_hi"`
	Exact         bool            `json:"exact"`
	Attainment    analysis.Num    `json:"attainment"`
	Bounds        [2]analysis.Num `json:"bounds"`
	Interval      [2]analysis.Num `json:"interval"`
	GoodputRPS    analysis.Num    `json:"goodput_rps"`
	Notes         []string        `json:"notes"`
}

type capFit struct {
	Rates      []analysis.Num `json:"rates"`
	Attainment []analysis.Num `json:"attainment"`
	Lower      []analysis.Num `json:"lower"`
	Upper      []analysis.Num `json:"upper"`
}

type capCap struct {
	Identifiable bool            `json:"identifiable"`
	Estimate     analysis.Num    `json:"estimate"`
	Interval     [2]analysis.Num `json:"interval"`
	Reason       string          `json:"reason,omitempty"`
	Identify     string          `json:"identify,omitempty"`
}

type capCommon struct {
	Rate               analysis.Num    `json:"rate"`
	BaselineAttainment analysis.Num    `json:"baseline_attainment"`
	BaselineBand       [2]analysis.Num `json:"baseline_band"`
	CanaryAttainment   analysis.Num    `json:"canary_attainment"`
	CanaryBand         [2]analysis.Num `json:"canary_band"`
	BaselineGoodput    analysis.Num    `json:"baseline_goodput_rps"`
	CanaryGoodput      analysis.Num    `json:"canary_goodput_rps"`
}

func nums(v []float64) []analysis.Num {
	out := make([]analysis.Num, len(v))
	for i, x := range v {
		out[i] = analysis.Num(x)
	}
	return out
}

func pair(lo, hi float64) [2]analysis.Num { return [2]analysis.Num{analysis.Num(lo), analysis.Num(hi)} }

func triple(t *[3]float64) *[3]analysis.Num {
	if t == nil {
		return nil
	}
	return &[3]analysis.Num{analysis.Num(t[0]), analysis.Num(t[1]), analysis.Num(t[2])}
}

func capArmJSON(a *capacity.Arm) capArm {
	out := capArm{Fit: capFit{Rates: nums(a.Fit.Rates), Attainment: nums(a.Fit.Estimate), Lower: nums(a.Fit.Lower), Upper: nums(a.Fit.Upper)},
		Capacity: capCap{Identifiable: a.Capacity.Identifiable, Estimate: analysis.Num(a.Capacity.Estimate),
			Interval: pair(a.Capacity.Lo, a.Capacity.Hi), Reason: a.Capacity.Reason, Identify: a.Capacity.Identify},
		Replicas: a.Replicas, GPUs: a.GPUs, USDPerHour: analysis.Num(a.USDPerHour),
		PerReplica: triple(a.PerReplica), PerGPU: triple(a.PerGPU), GoodPerUSD: triple(a.GoodPerUSD)}
	for _, p := range a.Points {
		notes := p.Notes
		if notes == nil {
			notes = []string{}
		}
		out.Points = append(out.Points, capPoint{Source: p.Source, Rate: analysis.Num(p.Rate), RequestedRate: analysis.Num(p.RequestedRate),
			AchievedRate: analysis.Num(p.AchievedRate), Saturated: p.Saturated, Offered: p.Offered, Completed: p.Completed,
			GoodLo: p.GoodLo, GoodHi: p.GoodHi, Exact: p.Exact, Attainment: analysis.Num(p.Attainment),
			Bounds: pair(p.Bounds.Lo, p.Bounds.Hi), Interval: pair(p.CI.Lo, p.CI.Hi), GoodputRPS: analysis.Num(p.Goodput), Notes: notes})
	}
	return out
}

// CapacityJSON writes the capacity report as indented JSON (schema_version
// 1; NaN and unbounded interval ends as null).
func CapacityJSON(w io.Writer, d *CapacityDoc) error {
	r := d.Result
	doc := capJSON{SchemaVersion: analysis.SchemaVersion, Verdict: r.Verdict, Reasons: r.Reasons,
		Capacity: capSection{Target: analysis.Num(r.Target), SLO: d.SLO, Margin: analysis.Num(r.Margin), GateFromPolicy: r.GateFromPolicy,
			Confidence: analysis.Num(r.Confidence), SaturationTolerance: analysis.Num(r.SaturationTolerance), Scale: r.Scale,
			Baseline: capArmJSON(&r.Baseline), Canary: capArmJSON(&r.Canary), Ratio: analysis.Num(r.Ratio),
			Interval: pair(r.RatioCI.Lo, r.RatioCI.Hi), Verdict: r.Verdict, CommonRates: []capCommon{}},
		Warnings: r.Warnings, Inputs: d.Inputs, Policy: d.Policy, ToolVersion: d.ToolVersion}
	if doc.Warnings == nil {
		doc.Warnings = []string{}
	}
	for _, c := range r.Common {
		doc.Capacity.CommonRates = append(doc.Capacity.CommonRates, capCommon{Rate: analysis.Num(c.Rate),
			BaselineAttainment: analysis.Num(c.Baseline), BaselineBand: pair(c.BaselineBand.Lo, c.BaselineBand.Hi),
			CanaryAttainment: analysis.Num(c.Canary), CanaryBand: pair(c.CanaryBand.Lo, c.CanaryBand.Hi),
			BaselineGoodput: analysis.Num(c.Rate * c.Baseline), CanaryGoodput: analysis.Num(c.Rate * c.Canary)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(true)
	return enc.Encode(doc)
}

// cnum formats a rate or ratio with 4 significant digits.
func cnum(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "∞"
	case math.IsNaN(v):
		return "n/a"
	}
	return fmt.Sprintf("%.4g", v)
}

func cpct(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	s := fmt.Sprintf("%.2f", 100*v)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".") + "%"
}

func capInterval(c capacity.Capacity) string {
	lo := cnum(c.Lo)
	if c.Lo == 0 {
		lo = "0"
	}
	return "[" + lo + ", " + cnum(c.Hi) + "]"
}

// capRows is the capacity table shared by text and Markdown.
func capRows(r *capacity.Result) [][]string {
	rows := [][]string{{"arm", "capacity (req/s)", "interval", "points", "saturated", "per replica", "good req/$"}}
	for _, a := range []struct {
		name string
		arm  *capacity.Arm
	}{{"baseline", &r.Baseline}, {"canary", &r.Canary}} {
		sat := 0
		for _, p := range a.arm.Points {
			if p.Saturated {
				sat++
			}
		}
		est := cnum(a.arm.Capacity.Estimate)
		if !a.arm.Capacity.Identifiable {
			est = "not identifiable"
		}
		perRep, perUSD := "—", "—"
		if a.arm.PerReplica != nil {
			perRep = cnum(a.arm.PerReplica[0])
		}
		if a.arm.GoodPerUSD != nil {
			perUSD = fmt.Sprintf("%.0f", a.arm.GoodPerUSD[0])
		}
		rows = append(rows, []string{a.name, est, capInterval(a.arm.Capacity), fmt.Sprint(len(a.arm.Points)), fmt.Sprint(sat), perRep, perUSD})
	}
	return rows
}

func capPointRows(a *capacity.Arm) [][]string {
	rows := [][]string{{"rate", "requested", "achieved", "offered", "attainment", "interval", "fit", "source"}}
	for i, p := range a.Points {
		att := cpct(p.Bounds.Lo)
		if !p.Exact {
			att = "[" + cpct(p.Bounds.Lo) + ", " + cpct(p.Bounds.Hi) + "]"
		}
		rate := cnum(p.Rate)
		if p.Saturated {
			rate += " sat"
		}
		rows = append(rows, []string{rate, cnum(p.RequestedRate), cnum(p.AchievedRate), fmt.Sprint(p.Offered), att,
			"[" + cpct(p.CI.Lo) + ", " + cpct(p.CI.Hi) + "]", cpct(a.Fit.Estimate[i]), p.Source})
	}
	return rows
}

func alignRows(w io.Writer, rows [][]string, indent string) {
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + strings.Repeat(" ", width[i]-len([]rune(c))+2))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// CapacityText writes the capacity report as plain text with a Unicode
// chart of attainment and goodput against offered rate.
func CapacityText(w io.Writer, d *CapacityDoc) error {
	r := d.Result
	fmt.Fprintf(w, "goodput capacity: %s\n", strings.ToUpper(string(r.Verdict)))
	for _, s := range r.Reasons {
		fmt.Fprintf(w, "  %s\n", Sanitize(s))
	}
	fmt.Fprintf(w, "\ncapacity at SLO: the highest rate at which ≥ %s of offered requests are good (%s), policy %s\n",
		cpct(r.Target), d.SLO, Sanitize(d.Policy.Name))
	gate := "policy capacity gate"
	if !r.GateFromPolicy {
		gate = "default capacity gate (the policy declares none)"
	}
	fmt.Fprintf(w, "margin %s (%s); point intervals Wilson at %s; saturation when achieved < requested by > %s\n\n",
		Sanitize(r.MarginText), gate, cpct(r.Confidence), cpct(r.SaturationTolerance))
	alignRows(w, capRows(r), "  ")
	scale := "capacity"
	if r.Scale == "replica" {
		scale = "capacity per replica"
	}
	fmt.Fprintf(w, "  canary / baseline %s: %s, interval [%s, %s]\n", scale, cnum(r.Ratio), cnum(r.RatioCI.Lo), cnum(r.RatioCI.Hi))
	for _, a := range []struct {
		name string
		arm  *capacity.Arm
	}{{"baseline", &r.Baseline}, {"canary", &r.Canary}} {
		if !a.arm.Capacity.Identifiable && r.Verdict != analysis.Inconclusive { // inconclusive reasons already say it
			fmt.Fprintf(w, "  %s not identifiable: %s\n    to identify it: %s\n", a.name, Sanitize(a.arm.Capacity.Reason), Sanitize(a.arm.Capacity.Identify))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "attainment vs offered rate (b baseline, c canary, * both; ┈ target; │ capacities B and C):")
	chart(w, r, func(rate, att float64) float64 { return att }, 0, 1, "%4.0f%%", 100)
	fmt.Fprintln(w)
	maxGood := 0.0
	for _, a := range []*capacity.Arm{&r.Baseline, &r.Canary} {
		for _, p := range a.Points {
			maxGood = math.Max(maxGood, p.Goodput)
		}
	}
	fmt.Fprintln(w, "goodput (good req/s) vs offered rate:")
	chart(w, r, func(rate, att float64) float64 { return rate * att }, 0, niceCeil(maxGood), "%5.0f", 1)
	for _, a := range []struct {
		name string
		arm  *capacity.Arm
	}{{"baseline", &r.Baseline}, {"canary", &r.Canary}} {
		fmt.Fprintf(w, "\n%s points:\n", a.name)
		pr := capPointRows(a.arm)
		for _, row := range pr[1:] {
			row[len(row)-1] = Sanitize(row[len(row)-1]) // the source: a file name
		}
		alignRows(w, pr, "  ")
		for _, p := range a.arm.Points {
			for _, n := range p.Notes {
				fmt.Fprintf(w, "  note %s: %s\n", Sanitize(p.Source), Sanitize(n))
			}
		}
	}
	if len(r.Common) > 0 {
		fmt.Fprintln(w, "\ngoodput at common rates (fit; band from the bracketing points):")
		rows := [][]string{{"rate", "baseline good/s", "band", "canary good/s", "band"}}
		for _, c := range r.Common {
			rows = append(rows, []string{cnum(c.Rate), cnum(c.Rate * c.Baseline), "[" + cnum(c.Rate*c.BaselineBand.Lo) + ", " + cnum(c.Rate*c.BaselineBand.Hi) + "]",
				cnum(c.Rate * c.Canary), "[" + cnum(c.Rate*c.CanaryBand.Lo) + ", " + cnum(c.Rate*c.CanaryBand.Hi) + "]"})
		}
		alignRows(w, rows, "  ")
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", Sanitize(s))
	}
	fmt.Fprintln(w, "\ninputs:")
	for _, in := range d.Inputs {
		fmt.Fprintf(w, "  %s %s  %s\n", in.Arm, Sanitize(in.Path), in.SHA256[:12])
	}
	return nil
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// chart draws both arms' points (y = f(rate, attainment)) on a 64×11 grid
// over [0, max rate], with the target line for attainment charts.
func chart(w io.Writer, r *capacity.Result, f func(rate, att float64) float64, ylo, yhi float64, yfmt string, yscale float64) {
	const W, H = 64, 11
	xmax := 0.0
	for _, a := range []*capacity.Arm{&r.Baseline, &r.Canary} {
		for _, p := range a.Points {
			xmax = math.Max(xmax, p.Rate)
		}
	}
	xmax = niceCeil(xmax * 1.05)
	grid := make([][]rune, H)
	for i := range grid {
		grid[i] = []rune(strings.Repeat(" ", W))
	}
	col := func(x float64) int { return min(W-1, max(0, int(math.Round(x/xmax*float64(W-1))))) }
	row := func(y float64) int {
		return min(H-1, max(0, int(math.Round((yhi-y)/(yhi-ylo)*float64(H-1)))))
	}
	isAttain := yhi == 1 && yscale == 100
	if isAttain {
		tr := row(r.Target)
		for x := range grid[tr] {
			grid[tr][x] = '┈'
		}
	}
	for _, c := range []struct {
		cap capacity.Capacity
		ch  rune
	}{{r.Baseline.Capacity, 'B'}, {r.Canary.Capacity, 'C'}} {
		if c.cap.Identifiable {
			x := col(c.cap.Estimate)
			for y := 0; y < H; y++ {
				if grid[y][x] == ' ' || grid[y][x] == '┈' {
					grid[y][x] = '│'
				}
			}
			grid[0][x] = c.ch
		}
	}
	for _, a := range []struct {
		arm *capacity.Arm
		ch  rune
	}{{&r.Baseline, 'b'}, {&r.Canary, 'c'}} {
		for _, p := range a.arm.Points {
			x, y := col(p.Rate), row(f(p.Rate, p.Attainment))
			switch grid[y][x] {
			case 'b', 'c', '*':
				if grid[y][x] != a.ch {
					grid[y][x] = '*'
				}
			default:
				grid[y][x] = a.ch
			}
		}
	}
	for y := 0; y < H; y++ {
		label := strings.Repeat(" ", 6)
		if y == 0 || y == H-1 || y == H/2 {
			v := yhi - (yhi-ylo)*float64(y)/float64(H-1)
			label = fmt.Sprintf(yfmt, v*yscale)
			label = fmt.Sprintf("%6s", label)
		}
		fmt.Fprintf(w, "  %s ┤%s\n", label, strings.TrimRight(string(grid[y]), " "))
	}
	fmt.Fprintf(w, "  %s └%s\n", strings.Repeat(" ", 6), strings.Repeat("─", W))
	fmt.Fprintf(w, "  %s  0%s%s req/s\n", strings.Repeat(" ", 6), strings.Repeat(" ", W-2-len(cnum(xmax))), cnum(xmax))
}

// CapacityMarkdown writes the capacity report as GitHub-flavoured Markdown
// with Mermaid charts of attainment and goodput against offered rate.
func CapacityMarkdown(w io.Writer, d *CapacityDoc) error {
	r := d.Result
	icon := map[analysis.Verdict]string{analysis.Pass: "✅", analysis.Fail: "❌", analysis.Inconclusive: "⚠️"}[r.Verdict]
	fmt.Fprintf(w, "## %s goodput capacity: %s\n\n", icon, strings.ToUpper(string(r.Verdict)))
	for _, s := range r.Reasons {
		fmt.Fprintf(w, "- %s\n", EscapeMarkdown(s))
	}
	fmt.Fprintf(w, "\nCapacity at SLO: the highest rate at which ≥ %s of offered requests are good (%s), policy `%s`, margin %s.\n\n",
		cpct(r.Target), EscapeMarkdown(d.SLO), strings.ReplaceAll(d.Policy.Name, "`", "'"), EscapeMarkdown(r.MarginText))
	rows := capRows(r)
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(rows[0], " | "), strings.Repeat("---|", len(rows[0])))
	for _, row := range rows[1:] {
		for i := range row {
			row[i] = EscapeMarkdown(row[i])
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintf(w, "\nCanary / baseline: **%s**, interval [%s, %s].\n", cnum(r.Ratio), cnum(r.RatioCI.Lo), cnum(r.RatioCI.Hi))
	for _, a := range []struct {
		name string
		arm  *capacity.Arm
	}{{"baseline", &r.Baseline}, {"canary", &r.Canary}} {
		if !a.arm.Capacity.Identifiable {
			fmt.Fprintf(w, "\n- %s capacity not identifiable: %s. To identify it: %s.\n", a.name, EscapeMarkdown(a.arm.Capacity.Reason), EscapeMarkdown(a.arm.Capacity.Identify))
		}
	}
	mermaid(w, r, "SLO attainment (%) vs offered rate", 100, func(rate, att float64) float64 { return att * 100 }, true)
	mermaid(w, r, "goodput (good req/s) vs offered rate", 0, func(rate, att float64) float64 { return rate * att }, false)
	fmt.Fprintln(w, "\n<details><summary>points</summary>")
	for _, a := range []struct {
		name string
		arm  *capacity.Arm
	}{{"baseline", &r.Baseline}, {"canary", &r.Canary}} {
		fmt.Fprintf(w, "\n**%s**\n\n", a.name)
		pr := capPointRows(a.arm)
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(pr[0], " | "), strings.Repeat("---|", len(pr[0])))
		for _, row := range pr[1:] {
			for i := range row {
				row[i] = EscapeMarkdown(row[i])
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	}
	fmt.Fprintln(w, "\n</details>")
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "\n> warning: %s\n", EscapeMarkdown(s))
	}
	return nil
}

// mermaid draws both arms' fits on a 21-point rate grid as an xychart.
func mermaid(w io.Writer, r *capacity.Result, title string, ymax float64, f func(rate, att float64) float64, target bool) {
	xmax := 0.0
	for _, a := range []*capacity.Arm{&r.Baseline, &r.Canary} {
		xmax = math.Max(xmax, a.Fit.Rates[len(a.Fit.Rates)-1])
	}
	xmax = niceCeil(xmax)
	const n = 21
	series := func(a *capacity.Arm) string {
		var vs []string
		for i := 0; i < n; i++ {
			x := xmax * float64(i) / (n - 1)
			att, ok := a.Fit.At(x)
			if !ok {
				vs = append(vs, "0")
				continue
			}
			vs = append(vs, fmt.Sprintf("%.4g", f(x, att)))
		}
		return "[" + strings.Join(vs, ", ") + "]"
	}
	fmt.Fprintf(w, "\n```mermaid\nxychart-beta\n  title \"%s (line 1 baseline, line 2 canary)\"\n", title)
	fmt.Fprintf(w, "  x-axis \"offered rate (req/s)\" 0 --> %s\n", cnum(xmax))
	if ymax > 0 {
		fmt.Fprintf(w, "  y-axis \"%%\" 0 --> %g\n", ymax)
	} else {
		fmt.Fprintf(w, "  y-axis \"good req/s\"\n")
	}
	fmt.Fprintf(w, "  line %s\n  line %s\n", series(&r.Baseline), series(&r.Canary))
	if target {
		var vs []string
		for i := 0; i < n; i++ {
			vs = append(vs, fmt.Sprintf("%g", r.Target*100))
		}
		fmt.Fprintf(w, "  line [%s]\n", strings.Join(vs, ", "))
	}
	fmt.Fprintln(w, "```")
	if target {
		fmt.Fprintf(w, "\nLine 3 is the %s target. Points outside an arm's sweep are drawn at 0.\n", cpct(r.Target))
	}
}

// ReadCapacityJSON reads a capacity report written by CapacityJSON back
// into a CapacityDoc (for the terminal review). Null numbers decode as NaN,
// except an interval's upper end, where null means unbounded (+Inf). It
// fails when raw is not a capacity report or its schema is newer than this
// build's.
func ReadCapacityJSON(raw []byte) (*CapacityDoc, error) {
	var doc struct {
		capJSON
		Capacity *capSection `json:"capacity"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	switch {
	case doc.Capacity == nil:
		return nil, fmt.Errorf("no capacity section: not a capacity report (make one with `goodput capacity --format json`)")
	case doc.SchemaVersion == 0:
		return nil, fmt.Errorf("no schema_version: not a goodput report")
	case doc.SchemaVersion > analysis.SchemaVersion:
		return nil, fmt.Errorf("schema_version %d is newer than this goodput understands (%d); upgrade goodput", doc.SchemaVersion, analysis.SchemaVersion)
	}
	switch doc.Verdict {
	case analysis.Pass, analysis.Fail, analysis.Inconclusive:
	default:
		return nil, fmt.Errorf("verdict %q: want pass, fail or inconclusive", string(doc.Verdict))
	}
	c := doc.Capacity
	upper := func(n analysis.Num) float64 {
		if math.IsNaN(float64(n)) {
			return math.Inf(1)
		}
		return float64(n)
	}
	ivl := func(p [2]analysis.Num) stats.Interval { return stats.Interval{Lo: float64(p[0]), Hi: upper(p[1])} }
	r := &capacity.Result{Target: float64(c.Target), Margin: float64(c.Margin), MarginText: cpct(float64(c.Margin)),
		Confidence: float64(c.Confidence), Scale: c.Scale, SaturationTolerance: float64(c.SaturationTolerance),
		Ratio: float64(c.Ratio), RatioCI: ivl(c.Interval), Verdict: doc.Verdict, Reasons: doc.Reasons,
		GateFromPolicy: c.GateFromPolicy, Warnings: doc.Warnings}
	for _, a := range []struct {
		in  *capArm
		out *capacity.Arm
	}{{&c.Baseline, &r.Baseline}, {&c.Canary, &r.Canary}} {
		a.out.Capacity = capacity.Capacity{Identifiable: a.in.Capacity.Identifiable, Estimate: float64(a.in.Capacity.Estimate),
			Lo: float64(a.in.Capacity.Interval[0]), Hi: upper(a.in.Capacity.Interval[1]), Reason: a.in.Capacity.Reason, Identify: a.in.Capacity.Identify}
		a.out.Replicas, a.out.GPUs, a.out.USDPerHour = a.in.Replicas, a.in.GPUs, float64(a.in.USDPerHour)
		for _, v := range [][]analysis.Num{a.in.Fit.Rates, a.in.Fit.Attainment, a.in.Fit.Lower, a.in.Fit.Upper} {
			if len(v) != len(a.in.Points) {
				return nil, fmt.Errorf("capacity fit has %d values for %d points", len(v), len(a.in.Points))
			}
		}
		a.out.Fit = capacity.Fit{Rates: floats(a.in.Fit.Rates), Estimate: floats(a.in.Fit.Attainment), Lower: floats(a.in.Fit.Lower), Upper: floats(a.in.Fit.Upper)}
		for _, p := range a.in.Points {
			a.out.Points = append(a.out.Points, capacity.Point{Source: p.Source, Rate: float64(p.Rate), RequestedRate: float64(p.RequestedRate),
				AchievedRate: float64(p.AchievedRate), Saturated: p.Saturated, Offered: p.Offered, Completed: p.Completed,
				GoodLo: p.GoodLo, GoodHi: p.GoodHi, Exact: p.Exact, Attainment: float64(p.Attainment),
				Bounds: stats.Interval{Lo: float64(p.Bounds[0]), Hi: float64(p.Bounds[1])}, CI: ivl(p.Interval),
				Goodput: float64(p.GoodputRPS), Notes: p.Notes})
		}
	}
	for _, cr := range c.CommonRates {
		r.Common = append(r.Common, capacity.Common{Rate: float64(cr.Rate), Baseline: float64(cr.BaselineAttainment), Canary: float64(cr.CanaryAttainment),
			BaselineBand: ivl(cr.BaselineBand), CanaryBand: ivl(cr.CanaryBand)})
	}
	return &CapacityDoc{Result: r, SLO: c.SLO, Policy: doc.Policy, Inputs: doc.Inputs, ToolVersion: doc.ToolVersion}, nil
}

func floats(v []analysis.Num) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
