package analysis

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// randomPolicy writes a policy as a user might: one to four SLO criteria,
// an output floor now and then, up to three classes by prompt length,
// output length or label, each window, normalization and confidence
// setting, and a random subset of the gates, count and ratio alike.
func randomPolicy(rng *rand.Rand) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	var b strings.Builder
	b.WriteString("name: r\n")
	slo := []string{}
	for _, c := range []string{"ttft: " + pick("200ms", "1s", "5s"), "tpot: " + pick("30ms", "80ms", "200ms"), "e2e: " + pick("5s", "60s"), "max_itl: " + pick("100ms", "1s")} {
		if rng.IntN(2) == 0 {
			slo = append(slo, c)
		}
	}
	if len(slo) == 0 {
		slo = append(slo, "ttft: 1s")
	}
	if rng.IntN(4) == 0 {
		slo = append(slo, "min_output_tokens: "+pick("0", "1", "2", "10"))
	}
	b.WriteString("slo: {" + strings.Join(slo, ", ") + "}\n")
	if rng.IntN(2) == 0 {
		b.WriteString("classes:\n")
		n := 1 + rng.IntN(3)
		for i := range n {
			fmt.Fprintf(&b, "  - name: c%d\n", i)
			var w []string
			if rng.IntN(2) == 0 {
				w = append(w, "prompt_tokens: {min: "+pick("500", "2000", "8192")+"}")
			}
			if rng.IntN(3) == 0 {
				w = append(w, "output_tokens: {min: "+pick("100", "400")+"}")
			}
			if rng.IntN(3) == 0 {
				w = append(w, "label: ["+pick("chat", "long", "chat, long")+"]")
			}
			if len(w) > 0 {
				b.WriteString("    when: {" + strings.Join(w, ", ") + "}\n")
			}
			fmt.Fprintf(&b, "    slo: {ttft: %s}\n", pick("2s", "4s", "500ms"))
		}
	}
	fmt.Fprintf(&b, "window: {warmup: %s, bucket: %s}\n", pick("auto", "none", "60s"), pick("10s", "5s", "30s"))
	fmt.Fprintf(&b, "normalize: {mix: %s, cache: %s, load: %s, prompt_bands: %s}\n", pick("baseline", "none", "pooled", "canary"), pick("auto", "none", "stratify", "adjust"), pick("matched", "none", "flag"), pick("unlabelled", "all"))
	b.WriteString("gates:\n")
	used := map[string]bool{}
	for _, g := range []string{"{metric: slo_attainment, margin: 1pp}", "{metric: ttft_p99, margin: 10%}", "{metric: tpot_p50, margin: 5%}", "{metric: e2e_p95, margin: 10%}",
		"{metric: error_rate, margin: 0.5pp, guardrail: true}", "{metric: output_tokens_mean, margin: 5%, direction: two_sided}", "{metric: goodput_per_replica, margin: 2%}",
		"{metric: goodput, margin: 3%}", "{metric: token_goodput, margin: 3%}", "{metric: canceled_share, margin: 0.5pp, guardrail: true}", "{metric: retry_share, margin: 0.5pp}"} {
		if rng.IntN(3) == 0 && !used[g] {
			used[g] = true
			b.WriteString("  - " + g + "\n")
		}
	}
	if len(used) == 0 {
		b.WriteString("  - {metric: slo_attainment, margin: 1pp}\n")
	}
	b.WriteString("confidence: " + pick("0.9", "0.95", "0.99") + "\n")
	return b.String()
}

// TestRandomPolicies judges simulator runs under seeded random policies
// (randomPolicy) exactly and from their streaming aggregates. Neither path
// may panic, and, standardized to the same mix (the aggregate takes the
// baseline's whatever normalize.mix names), the aggregate may be more
// cautious than the request path but never less: it passes only what the
// request path passes and fails only what it fails. It found a goodput
// gate compared raw on the request path (a masked regression PASSED there
// and FAILED from the aggregate)
// and token goodput at matched load stretched toward the good requests'
// own ratio (answers cut in half inconclusive). 20 policies on three
// scenarios by default; GOODPUT_RANDOM_POLICIES=N judges N,
// GOODPUT_RANDOM_POLICIES_FROM the first seed, GOODPUT_RANDOM_POLICIES_SCENARIOS
// names the scenarios (comma-separated): a simulator scenario, or
// fleet:CASE for a case of the independent fleet model (fleet_test.go),
// which found CUPED comparing arms that ran together unpaired.
func TestRandomPolicies(t *testing.T) {
	n, from := seedRange("GOODPUT_RANDOM_POLICIES", 20)
	scenarios := []string{"masked-regression", "bs-half-outputs", "aa-quiet-30m", "fleet:tiny-outputs"}
	if s := os.Getenv("GOODPUT_RANDOM_POLICIES_SCENARIOS"); s != "" {
		scenarios = strings.Split(s, ",")
	}
	ended := map[string]int{}
	for _, sc := range scenarios {
		b, c := randomPolicyArms(t, sc)
		for i := from; i < from+n; i++ {
			y := randomPolicy(rand.New(rand.NewPCG(uint64(i), 11)))
			p := streamPolicy(t, y)
			cfg := Config{Policy: p, Resamples: 50, Seed: 1}
			func() {
				defer func() {
					if e := recover(); e != nil {
						t.Errorf("%s, policy %d: panic: %v\n%s\n%s", sc, i, e, y, debug.Stack())
					}
				}()
				exact, errExact := Judge(b, c, cfg)
				ab, ac, err := StreamedArms(b, c, cfg)
				var agg *Report
				if err == nil {
					agg, err = Judge(ab, ac, cfg)
				}
				switch {
				case errExact != nil || err != nil:
					ended["refused"]++
					if (errExact == nil) != (err == nil) {
						t.Errorf("%s, policy %d: refused on one path only: request path %v; aggregate %v\n%s", sc, i, errExact, err, y)
					}
				default:
					ended[string(exact.Verdict)+"/"+string(agg.Verdict)]++
					// the aggregate standardizes to the baseline's mix
					// whatever the policy names (with a warning): under
					// another reference the two estimate different things
					sameReference := p.Normalize.Mix == "baseline" || p.Normalize.Mix == "none"
					if sameReference && (agg.Verdict == Pass && exact.Verdict != Pass || agg.Verdict == Fail && exact.Verdict != Fail) {
						t.Errorf("%s, policy %d: the aggregate %s where the request path is %s: %v / %v\n%s", sc, i, agg.Verdict, exact.Verdict, agg.Reasons, exact.Reasons, y)
					}
				}
			}()
		}
	}
	t.Logf("request path / aggregate: %v", ended)
}

// randomPolicyArms are the arms TestRandomPolicies judges: the simulator
// scenario's (seed 2), or with the prefix fleet: the fleet model's case
// (its second replicate).
func randomPolicyArms(t *testing.T, sc string) (*sources.Dataset, *sources.Dataset) {
	t.Helper()
	name, ok := strings.CutPrefix(sc, "fleet:")
	if !ok {
		return simArms(t, sc, 2)
	}
	fc := fleetCaseNamed(t, name)
	seed := uint64(1000*len(fc.name) + 2)
	return fleetArms(fc.b(seed), fc.c(seed), seed)
}
