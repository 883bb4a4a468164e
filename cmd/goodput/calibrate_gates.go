package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/goodput-dev/goodput/analysis"
)

// gateShortfall is how far a gate that did not pass stands from passing: the
// end of its interval on the harmful side (the upper end for a
// lower-is-better gate, the lower end negated for a higher-is-better one,
// the farther of the two for a two-sided one)
// minus its margin, in the gate's units (a fraction for absolute gates, a
// relative change for relative ones). Positive: the interval reaches that
// far beyond the margin. NaN when the gate has no finite interval.
func gateShortfall(g analysis.Metric) float64 {
	worst := g.WorstHarm()
	if math.IsNaN(worst) || math.IsInf(worst, 0) {
		return math.NaN()
	}
	return worst - float64(g.Margin)
}

// writeGateBreakdown writes, for goodput's judge on every scenario (and
// then for goodput-metrics, when it ran), which gates kept each replicate
// from passing: per gate how many replicates it did not pass and how many it
// alone held, then per replicate that did not pass each such gate with its
// verdict, interval and shortfall (gateShortfall). A gate that fails alone
// but not after the weighted Holm step is marked "Holm".
func writeGateBreakdown(w io.Writer, scs []*calibScenario, o *calibrateOptions) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	if slices.Contains(o.Judges, "goodput") {
		writeJudgeGates(bw, "goodput's judge", scs, o, func(cs *calibScenario) []replicateGates { return cs.replicates })
	}
	if slices.Contains(o.Judges, "goodput-metrics") {
		writeJudgeGates(bw, "goodput-metrics: goodput's judge on the engine metrics", scs, o, func(cs *calibScenario) []replicateGates { return cs.metricsReplicates })
	}
}

// writeJudgeGates writes writeGateBreakdown's section for one judge; of
// gives that judge's replicates of a scenario.
func writeJudgeGates(bw *bufio.Writer, judge string, scs []*calibScenario, o *calibrateOptions, of func(*calibScenario) []replicateGates) {
	fmt.Fprintf(bw, "## Gates per replicate (%s)\n\n", judge)
	fmt.Fprintf(bw, "Command: `%s --gates FILE`\n\n", calibrateCommandLine(o))
	fmt.Fprintf(bw, "A gate listed did not pass. \"beyond\" is the harmful end of its interval minus its margin "+
		"(pp for absolute gates, %% for relative ones): how much narrower, or how much less harm, it needed to pass. "+
		"\"Holm\": the gate fails alone but not after the weighted Holm step.\n\n")
	for _, cs := range scs {
		reps := of(cs)
		if len(reps) == 0 {
			continue
		}
		fmt.Fprintf(bw, "### `%s`\n\n", markdownCell(cs.name))
		type tally struct {
			name        string
			open, alone int
			beyond      []float64
		}
		var order []*tally
		by := map[string]*tally{}
		for _, r := range reps {
			var open []analysis.Metric
			for _, g := range r.gates {
				if g.Verdict != analysis.Pass {
					open = append(open, g)
				}
			}
			for _, g := range open {
				t := by[g.Name]
				if t == nil {
					t = &tally{name: g.Name}
					by[g.Name] = t
					order = append(order, t)
				}
				t.open++
				if len(open) == 1 {
					t.alone++
				}
				if b := gateShortfall(g); !math.IsNaN(b) {
					t.beyond = append(t.beyond, b)
				}
			}
		}
		if len(order) > 0 {
			fmt.Fprintf(bw, "| gate | replicates not passed | held alone | median beyond |\n|---|---:|---:|---:|\n")
			for _, t := range order {
				med := "—"
				if len(t.beyond) > 0 {
					med = fmtBeyond(reps, t.name, median(t.beyond))
				}
				fmt.Fprintf(bw, "| %s | %d | %d | %s |\n", markdownCell(t.name), t.open, t.alone, med)
			}
			fmt.Fprintln(bw)
		}
		fmt.Fprintf(bw, "| replicate | verdict | gates not passed: verdict, Δ [interval], beyond |\n|---:|---|---|\n")
		for i, r := range reps {
			if r.err != nil {
				fmt.Fprintf(bw, "| %d | error | %s |\n", i+1, markdownCell(r.err.Error()))
				continue
			}
			var parts []string
			for _, g := range r.gates {
				if g.Verdict == analysis.Pass {
					continue
				}
				s := fmt.Sprintf("%s: %s", g.Name, g.Verdict)
				if strings.Contains(g.Reason, "weighted Holm") {
					s += " (Holm)"
				}
				m := metricScale(g)
				s += fmt.Sprintf(", %s [%s, %s]", m(float64(g.Delta)), m(float64(g.Interval[0])), m(float64(g.Interval[1])))
				if b := gateShortfall(g); !math.IsNaN(b) {
					s += fmt.Sprintf(", beyond %s", m(b))
				}
				parts = append(parts, markdownCell(s))
			}
			fmt.Fprintf(bw, "| %d | %s | %s |\n", i+1, r.verdict, strings.Join(parts, "; "))
		}
		fmt.Fprintln(bw)
	}
}

// metricScale renders a number of gate g's units: pp for absolute fractions,
// % for relative gates.
func metricScale(g analysis.Metric) func(float64) string {
	return func(x float64) string {
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return "—"
		case g.Scale == "relative":
			return fmt.Sprintf("%+.2f%%", 100*x)
		case g.Unit == "fraction":
			return fmt.Sprintf("%+.2f pp", 100*x)
		}
		return fmt.Sprintf("%+.4g", x)
	}
}

func fmtBeyond(rs []replicateGates, name string, v float64) string {
	for _, r := range rs {
		for _, g := range r.gates {
			if g.Name == name {
				return metricScale(g)(v)
			}
		}
	}
	return fmt.Sprintf("%g", v)
}

func median(x []float64) float64 {
	s := slices.Sorted(slices.Values(x))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
