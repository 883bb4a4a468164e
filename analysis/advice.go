package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/benchfile"
)

// This file turns an inconclusive gate's reason into something a person can
// act on: how many more prompts (with the benchmark tool's own flag) or how
// much longer a run would decide it, which policy fits the data when the
// gate cannot be estimated at all, and when more data will not help.

// The largest "more data" an advice names; beyond it the reason says that
// more data will not decide the gate. Benchmark files are limited by
// prompts per arm, timed inputs by the extra run time, and inputs with
// neither by the multiple of the current data.
const (
	MaxUsefulPrompts = 100_000 // per arm
	MaxUsefulMinutes = 24 * 60 // one more day of traffic
	MaxUsefulFactor  = 20      // × the current data
)

// promptFlags is the option that sets the number of requests of each
// benchmark tool, by input format.
func promptFlags() map[string]string {
	return map[string]string{
		benchfile.FormatVLLM:          "--num-prompts",
		benchfile.FormatSGLang:        "--num-prompts",
		benchfile.FormatLLMPerf:       "--max-num-completed-requests",
		benchfile.FormatGenAIPerf:     "--request-count",
		benchfile.FormatAIPerf:        "--request-count",
		benchfile.FormatInferencePerf: "",
	}
}

// benchFormat is the benchmark-file format both arms were read from, or ""
// when an arm is not (only) benchmark files of one tool.
func benchFormat(b, c *armData) string {
	flags := promptFlags()
	f := ""
	for _, a := range []*armData{b, c} {
		for _, in := range a.ds.Inputs {
			if _, ok := flags[in.Format]; !ok || (f != "" && in.Format != f) {
				return ""
			}
			f = in.Format
		}
	}
	return f
}

// moreDataAdvice says what would decide an inconclusive gate whose
// interval straddles its margin: the extra data, in the unit the user
// controls, or that more data will not decide it. format is both arms'
// benchmark-file format (benchFormat; "" for request logs and
// aggregates, judged by minutes or by the data's multiple), n the larger
// arm's offered requests (read only for benchmark files: prompts per arm).
func moreDataAdvice(format string, n float64, md *MoreData, m Metric) string {
	k := float64(md.Factor)
	mins := float64(md.Minutes)
	perArm := math.Ceil(k * n)
	var useful bool
	switch {
	case format != "":
		useful = perArm <= MaxUsefulPrompts
	case !math.IsNaN(mins):
		useful = mins <= MaxUsefulMinutes
	default:
		useful = k <= MaxUsefulFactor
	}
	if !useful {
		return "more data will not decide this: " + notDecidable(m, k)
	}
	if format != "" {
		more := perArm - n
		s := fmt.Sprintf("about %s more prompts per arm (%s× the data) would decide the %s margin", fmtCount(more), fmtFactor(k), fmtMargin(m))
		if flag := promptFlags()[format]; flag != "" {
			return s + fmt.Sprintf(": rerun both with `%s %.0f`", flag, perArm)
		}
		return s + ": lengthen the stages of both runs"
	}
	return moreDataText(md, m)
}

// fmtFactor renders a data multiple: two digits below 10×.
func fmtFactor(k float64) string {
	if k < 10 {
		return fmt.Sprintf("%.1f", k)
	}
	return fmt.Sprintf("%.0f", k)
}

// tooLittleAdvice extends a "too little data" reason with what would make
// the gate estimable under policy p: the bench policy for benchmark files
// (an arm without arrival times, such as LLMPerf's or vLLM's without
// start_times, or files of one benchmark tool).
func tooLittleAdvice(p *policies.Policy, b, c *armData, m Metric) string {
	if !strings.HasPrefix(m.Reason, "too little data") && !strings.HasPrefix(m.Reason, "goodput needs a run duration") {
		return ""
	}
	if (b.pseudo || c.pseudo) && p.Window.Untimed != "requests" {
		return "benchmark files without arrival times decide under `--policy bench` (p50/p90 gates, each request a unit)"
	}
	if benchFormat(b, c) != "" && p.Name != "bench" {
		return "benchmark files of this size decide under `--policy bench` (p50/p90 gates)"
	}
	return ""
}

// plural renders "1 stratum", "3 strata".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// onceForBothArms says a warning once when both arms have it: "baseline:
// M" and "canary: M" become "both arms: M", and "baseline: FILE: M" and
// "canary: FILE2: M" become "both arms (FILE, FILE2): M", in the place of
// the baseline's. Other warnings keep their order.
// b and c are the arms' datasets (their Arm and Inputs).
func onceForBothArms(warns []string, b, c *sources.Dataset) []string {
	type split struct{ files, msg string }
	parse := func(w string, a *sources.Dataset) (split, bool) {
		rest, ok := strings.CutPrefix(w, string(a.Arm)+": ")
		if !ok {
			return split{}, false
		}
		for _, in := range a.Inputs {
			if m, ok := strings.CutPrefix(rest, in.Path+": "); ok {
				return split{in.Path, m}, true
			}
		}
		return split{"", rest}, true
	}
	canary := map[string]int{} // message → index of the canary's warning
	for i, w := range warns {
		if s, ok := parse(w, c); ok {
			if _, dup := canary[s.msg]; !dup {
				canary[s.msg] = i
			}
		}
	}
	drop := map[int]bool{}
	out := make([]string, 0, len(warns))
	for i, w := range warns {
		if drop[i] {
			continue
		}
		if s, ok := parse(w, b); ok {
			if ci, ok := canary[s.msg]; ok && !drop[ci] {
				cs, _ := parse(warns[ci], c)
				drop[ci] = true
				if s.files != "" || cs.files != "" {
					out = append(out, fmt.Sprintf("both arms (%s, %s): %s", s.files, cs.files, s.msg))
				} else {
					out = append(out, "both arms: "+s.msg)
				}
				continue
			}
		}
		out = append(out, w)
	}
	return out
}

// notDecidable says why a gate that more data would only decide after an
// impractical amount stays open: its difference sits at the margin, or
// its interval is wide for the data's own noise.
func notDecidable(m Metric, k float64) string {
	harm := m.Harm(float64(m.Delta))
	margin := float64(m.Margin)
	if margin > 0 && math.Abs(harm-margin) <= 0.25*margin {
		return fmt.Sprintf("it would take about %s× the data; the difference is about as large as the %s margin, so decide whether a change that size matters (`--margin %s=…`)",
			fmtFactor(k), fmtMargin(m), m.Name)
	}
	return fmt.Sprintf("it would take about %s× the data for an interval narrow enough against the %s margin; widen the margin if that is acceptable (`--margin %s=…`), or look for the source of the variation",
		fmtFactor(k), fmtMargin(m), m.Name)
}
