package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestUnmatchedStrataBothPaths: a canary whose gateway sends it a class
// the baseline never served ("code", a tenth of its requests). Standardized
// to the baseline's mix, that class had weight 0 on the request path: with
// 3× its TTFT (attainment −7 pp as counted) the run passed in 5 of 6 seeds
// there, while the aggregate, which cannot reweight a one-arm class,
// compared as counted and failed. Now both compare as counted, both carry
// the unmatched_strata guardrail (inconclusive), and they agree: a benign
// new class is inconclusive, a slow one fails.
func TestUnmatchedStrataBothPaths(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 200, Seed: 1}
	for _, tc := range []struct {
		ttftX float64
		want  Verdict
	}{{1, Inconclusive}, {3, Fail}} {
		const seed = 801
		b, c := fleetArms(aaFleet(seed), aaFleet(seed), seed)
		for k := range c.Requests {
			if r := &c.Requests[k]; k%10 == 0 {
				r.Class = "code"
				if r.TTFT > 0 {
					r.E2E += r.TTFT * (tc.ttftX - 1)
					r.TTFT *= tc.ttftX
				}
			}
		}
		exact, agg := judgedBothWays(t, b, c, cfg)
		for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
			if r.Verdict != tc.want {
				t.Errorf("TTFT ×%g, %s: %s, want %s (%q)", tc.ttftX, path, r.Verdict, tc.want, r.Reasons)
			}
			m, ok := metricNamed(r, "unmatched_strata")
			if !ok || m.Verdict != Inconclusive || !strings.Contains(m.Reason, `"code × default"`) {
				t.Errorf("TTFT ×%g, %s: unmatched_strata %v %s: %s", tc.ttftX, path, ok, m.Verdict, m.Reason)
			}
			if c := float64(m.Canary); c < 0.09 || c > 0.11 {
				t.Errorf("%s: canary share in unmatched strata %.3f, want about 0.10", path, c)
			}
		}
		ae, _ := metricNamed(exact, "slo_attainment")
		aa, _ := metricNamed(agg, "slo_attainment")
		if d := float64(ae.Delta - aa.Delta); d > 1e-6 || d < -1e-6 {
			t.Errorf("TTFT ×%g: attainment %v on the requests, %v on the aggregate: both are as counted", tc.ttftX, ae.Delta, aa.Delta)
		}
	}
}

// TestOneArmStrata: the shares and keys, stray folds left out.
func TestOneArmStrata(t *testing.T) {
	b := map[string]float64{"chat": 900, "long": 95, "typo": 5}
	c := map[string]float64{"chat": 800, "long": 100, "code": 100}
	onlyB, onlyC, sb, sc := oneArmStrata(b, c, map[string]string{"typo": "chat"}, nil)
	if len(onlyB) != 0 || sb != 0 || len(onlyC) != 1 || onlyC[0] != "code" || sc != 0.1 {
		t.Fatalf("got %v %v %g %g", onlyB, onlyC, sb, sc)
	}
	if _, ok := unmatchedEval(oneArmStrata(b, map[string]float64{"chat": 990, "long": 100, "code": 5}, map[string]string{"typo": "chat"}, nil)); ok {
		t.Error("reported below UnmatchedShare")
	}
}

// TestOneArmStrataLabelWhole: under normalize.prompt_bands: all, a label
// only the canary served is named once, as the label, not band by band;
// a one-arm band of a label both served is named as the band.
func TestOneArmStrataLabelWhole(t *testing.T) {
	b := map[string]float64{"chat, prompt <512 × default": 900, "chat, prompt 512-1k × default": 100, "long, prompt 2k-4k × default": 50}
	c := map[string]float64{"chat, prompt <512 × default": 800, "chat, prompt 512-1k × default": 100,
		"code, prompt <512 × default": 60, "code, prompt 1k-2k × default": 40, "long, prompt 4k-8k × default": 30}
	_, onlyC, _, sc := oneArmStrata(b, c, nil, nil)
	want := []string{"code × default", "long, prompt 4k-8k × default"}
	if !slices.Equal(onlyC, want) || math.Abs(sc-130.0/1030) > 1e-12 {
		t.Errorf("got %q (share %g), want %q (%g)", onlyC, sc, want, 130.0/1030)
	}
}

// TestUnmatchedUnlabelledHint: one-arm strata that are all prompt bands
// of records without a class label (a canary whose log leaves the label
// off 5% of its requests beside a fully labelled baseline) get a hint
// that the log, not the traffic, may differ; one-arm labels do not.
func TestUnmatchedUnlabelledHint(t *testing.T) {
	const hint = "records without a class label: if the canary's log leaves the label off some requests"
	g, ok := unmatchedEval(nil, []string{"prompt 1k-2k × default", "prompt <512 × default"}, 0, 0.05)
	if !ok || !strings.Contains(g.m.Reason, hint) {
		t.Errorf("unlabelled bands: %v %q", ok, g.m.Reason)
	}
	g, ok = unmatchedEval(nil, []string{"code × default", "prompt <512 × default"}, 0, 0.05)
	if !ok || strings.Contains(g.m.Reason, "records without a class label") {
		t.Errorf("a label among them: %v %q", ok, g.m.Reason)
	}
}
