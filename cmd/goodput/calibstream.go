package main

import (
	"bufio"
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/analysis"
)

// streamDiff tallies, over one scenario's replicates, every difference
// between goodput's judge on the records (exact) and on their streaming
// aggregate (goodput-stream).
type streamDiff struct {
	replicates int
	verdicts   map[[2]analysis.Verdict]int // exact, stream → replicates
	gates      []*gateDiff                 // in the order first seen
}

// gateDiff is one gate's differences.
type gateDiff struct {
	name                  string
	both, onlyExact       int
	onlyStream            int
	verdicts              map[[2]analysis.Verdict]int
	maxDelta, maxInterval float64 // largest |stream − exact| of the estimate and of an interval end, gate units
	maxValue              float64 // largest relative difference of an arm's figure
}

func (cs *calibScenario) addStreamDiff(exact, stream analysis.Verdict, eg, sg []analysis.Metric) {
	if cs.stream == nil {
		cs.stream = &streamDiff{verdicts: map[[2]analysis.Verdict]int{}}
	}
	d := cs.stream
	d.replicates++
	d.verdicts[[2]analysis.Verdict{exact, stream}]++
	gate := func(name string) *gateDiff {
		for _, g := range d.gates {
			if g.name == name {
				return g
			}
		}
		g := &gateDiff{name: name, verdicts: map[[2]analysis.Verdict]int{}}
		d.gates = append(d.gates, g)
		return g
	}
	find := func(ms []analysis.Metric, name string) *analysis.Metric {
		for i := range ms {
			if ms[i].Name == name {
				return &ms[i]
			}
		}
		return nil
	}
	absDiff := func(a, b analysis.Num) float64 {
		x, y := float64(a), float64(b)
		if math.IsNaN(x) && math.IsNaN(y) {
			return 0
		}
		return math.Abs(x - y)
	}
	relDiff := func(a, b analysis.Num) float64 {
		x, y := float64(a), float64(b)
		if math.IsNaN(x) && math.IsNaN(y) || x == y {
			return 0
		}
		return math.Abs(x-y) / math.Max(math.Abs(x), math.Abs(y))
	}
	for _, m := range eg {
		g := gate(m.Name)
		sm := find(sg, m.Name)
		if sm == nil {
			g.onlyExact++
			continue
		}
		g.both++
		g.verdicts[[2]analysis.Verdict{m.Verdict, sm.Verdict}]++
		g.maxDelta = nanMax(g.maxDelta, absDiff(m.Delta, sm.Delta))
		g.maxInterval = nanMax(g.maxInterval, math.Max(absDiff(m.Interval[0], sm.Interval[0]), absDiff(m.Interval[1], sm.Interval[1])))
		g.maxValue = nanMax(g.maxValue, math.Max(relDiff(m.Baseline, sm.Baseline), relDiff(m.Canary, sm.Canary)))
	}
	for _, m := range sg {
		if find(eg, m.Name) == nil {
			gate(m.Name).onlyStream++
		}
	}
}

// nanMax is the larger of a and b, NaN when b is (a difference that could
// not be taken is shown as such).
func nanMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

// cautionOf says which way a verdict moved from the exact judge's to the
// streaming one's: a pass is the only verdict that lets a change through.
func cautionOf(exact, stream analysis.Verdict) string {
	switch {
	case exact == stream:
		return "same"
	case stream == analysis.Pass:
		return "**less cautious**"
	case exact == analysis.Pass:
		return "more cautious"
	case exact == analysis.Fail:
		return "less decisive (fail → inconclusive: still blocks)"
	}
	return "more decisive (inconclusive → fail)"
}

func pairText(m map[[2]analysis.Verdict]int) string {
	var parts []string
	for _, e := range []analysis.Verdict{analysis.Pass, analysis.Inconclusive, analysis.Fail} {
		for _, s := range []analysis.Verdict{analysis.Pass, analysis.Inconclusive, analysis.Fail} {
			if n := m[[2]analysis.Verdict{e, s}]; n > 0 && e != s {
				parts = append(parts, fmt.Sprintf("%d× %s → %s (%s)", n, e, s, cautionOf(e, s)))
			}
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// writeStreamDiffs lists, per scenario, every difference between the exact
// and the streaming judge on the same replicates.
func writeStreamDiffs(bw *bufio.Writer, scs []*calibScenario) {
	var rows []*calibScenario
	for _, cs := range scs {
		if cs.stream != nil {
			rows = append(rows, cs)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(bw, "### goodput-stream against goodput, replicate by replicate\n\n")
	fmt.Fprintf(bw, "The same simulated records judged exactly (every request) and from their streaming aggregate "+
		"(10 s buckets × strata, log-linear latency bins). Verdict differences are exact → stream; a pass is the only "+
		"verdict that lets a change through, so stream → pass where the exact judge did not pass is the one that is "+
		"less cautious. Per gate: how often its verdict differs, and the largest difference of its estimate (delta) "+
		"and of an interval end, in the gate's units, and of an arm's figure (relative); gates only one path computes "+
		"are counted.\n\n")
	fmt.Fprintf(bw, "| scenario | replicates | verdicts exact → stream | gate | compared | gate verdicts exact → stream | max |Δ delta| | max |Δ interval end| | max arm figure Δ (rel.) | exact only | stream only |\n")
	fmt.Fprintf(bw, "|---|---:|---|---|---:|---|---:|---:|---:|---:|---:|\n")
	for _, cs := range rows {
		d := cs.stream
		for i, g := range d.gates {
			name, reps, vs := "", "", ""
			if i == 0 {
				name, reps, vs = "`"+markdownCell(cs.name)+"`", fmt.Sprint(d.replicates), pairText(d.verdicts)
			}
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %d | %s | %.4g | %.4g | %.2g | %d | %d |\n", name, reps, vs, g.name, g.both,
				pairText(g.verdicts), g.maxDelta, g.maxInterval, g.maxValue, g.onlyExact, g.onlyStream)
		}
	}
	fmt.Fprintln(bw)
}
