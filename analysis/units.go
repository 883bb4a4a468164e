package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// A log that writes milliseconds where the contract wants seconds (a
// logger changed with the build, a field renamed from ttft_ms) makes
// every latency of its arm about 1000 times the other's: judged as given,
// the canary "fails" with TTFT +95,000%. A real regression does not look
// like that: a stuck queue multiplies TTFT, not TPOT, and adds its wait
// to E2E rather than multiplying it. When every latency both arms give
// (at least two of TTFT, TPOT and E2E, by their medians) stands at one
// power of 1000 to the other's, within unitSlack, the input is refused.

// unitStep is a unit a log may write seconds in by mistake: 10^log10 of
// it make a second.
type unitStep struct {
	log10 float64
	name  string
}

// unitSteps are milliseconds and microseconds.
func unitSteps() []unitStep { return []unitStep{{3, "milliseconds"}, {6, "microseconds"}} }

// unitSlack is how far (in decades) each latency's median ratio may lie
// from a unit step: 0.5 takes ratios 316–3162 as a factor of 1000.
const unitSlack = 0.5

// minUnitSamples is the fewest latencies of a field per arm for its
// median to count.
const minUnitSamples = 20

// latencyUnits returns a DataError when one arm's latencies all stand at a
// unit step (1000× or 10⁶×) to the other's, nil otherwise.
func latencyUnits(r *Report) error {
	b, c := r.Arms.Baseline.Latency, r.Arms.Canary.Latency
	type field struct {
		name, key string
		b, c      Quantiles
	}
	var logs []float64
	var shown []string
	for _, f := range []field{{"TTFT", "ttft_s", b.TTFT, c.TTFT}, {"TPOT", "tpot_s", b.TPOT, c.TPOT}, {"E2E", "e2e_s", b.E2E, c.E2E}} {
		vb, vc := float64(f.b.P50), float64(f.c.P50)
		if f.b.N < minUnitSamples || f.c.N < minUnitSamples || !(vb > 0) || !(vc > 0) || math.IsInf(vb, 0) || math.IsInf(vc, 0) {
			continue
		}
		logs = append(logs, math.Log10(vc/vb))
		shown = append(shown, fmt.Sprintf("%s p50 %.4g s against %.4g s", f.name, vc, vb))
	}
	if len(logs) < 2 {
		return nil
	}
	for _, u := range unitSteps() {
		for _, sign := range []float64{1, -1} {
			all := true
			for _, l := range logs {
				all = all && math.Abs(l-sign*u.log10) <= unitSlack
			}
			if !all {
				continue
			}
			arm, other := sources.Canary, sources.Baseline
			if sign < 0 {
				arm, other = sources.Baseline, sources.Canary
			}
			k := math.Pow(10, u.log10)
			return &DataError{Arm: arm, Msg: fmt.Sprintf(
				"every latency is about %.0f× the %s's (canary against baseline: %s): its log writes %s where seconds are expected (request logs: ttft_s, tpot_s, e2e_s, max_itl_s are seconds)? The arms cannot be compared as given: convert it, e.g. jq -c 'with_entries(if (.key | endswith(\"_s\")) and (.value | type == \"number\") then .value /= %.0f else . end)', or fix the logger",
				k, other, strings.Join(shown, "; "), u.name, k)}
		}
	}
	return nil
}

// latencyParts returns a DataError when one arm's own latencies disagree
// by a unit step (1000× or 10⁶×): its median E2E against its median TTFT
// plus the mean output length less one times its median TPOT, which a
// request's end-to-end time is made of. A log that writes one field in
// milliseconds (tpot_s from a ms counter, say) keeps the others in
// seconds, so latencyUnits, which asks every field at once, cannot see it:
// the canary's TPOT read 63 s a token and failed identical builds by
// −95 pp. A real regression cannot make an arm's requests end a thousand
// times sooner, or later, than their own first token and token times
// add up to. nil when the arm gives too few of the fields.
func latencyParts(r *Report) error {
	for _, arm := range []struct {
		name sources.Arm
		s    ArmSummary
	}{{sources.Baseline, r.Arms.Baseline}, {sources.Canary, r.Arms.Canary}} {
		l := arm.s.Latency
		ttft, tpot, e2e := float64(l.TTFT.P50), float64(l.TPOT.P50), float64(l.E2E.P50)
		out := float64(arm.s.OutputTokensPS) / float64(arm.s.ThroughputRPS)
		if l.TTFT.N < minUnitSamples || l.TPOT.N < minUnitSamples || l.E2E.N < minUnitSamples ||
			!(ttft > 0 && tpot > 0 && e2e > 0 && out > 1) || math.IsInf(e2e+ttft+tpot+out, 0) {
			continue
		}
		parts := ttft + (out-1)*tpot
		lr := math.Log10(e2e / parts)
		for _, u := range unitSteps() {
			field := ""
			switch {
			case math.Abs(lr-u.log10) <= unitSlack:
				field = "e2e_s"
			case math.Abs(lr+u.log10) <= unitSlack:
				field = "tpot_s"
			default:
				continue
			}
			return &DataError{Arm: arm.name, Msg: fmt.Sprintf(
				"its latencies disagree by about %.0f×: median e2e_s %.4g s against %.4g s from median ttft_s %.4g s + (mean output_tokens %.0f − 1) × median tpot_s %.4g s: %s in %s where seconds are expected? A request's end-to-end time is its first token's and its tokens' times added; convert the field to seconds or fix the logger",
				math.Pow(10, u.log10), e2e, parts, ttft, out, tpot, field, u.name)}
		}
	}
	return nil
}
