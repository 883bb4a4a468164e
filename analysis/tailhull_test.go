package analysis

import (
	"strings"
	"testing"
)

// TestSequentialTailHull: arms that did not run side by side (the fleet
// model's sequential-aa case: the canary starts after the baseline ends)
// get the pooled tail gates' interval widened to the sectioning interval
// on both judging paths, as a class's tail is, because the bucket
// bootstrap alone under-covered them there (pooled p99 TPOT 83.7% at
// nominal 90% over 300 replicates, 89.0% with the hull; docs/EVIDENCE.md).
// Arms paired in time keep the bootstrap alone: it over-covers there.
func TestSequentialTailHull(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 200, Seed: 1}
	var seq, aa fleetCase
	for _, fc := range fleetCases() {
		switch fc.name {
		case "sequential-aa":
			seq = fc
		case "aa":
			aa = fc
		}
	}
	widened := map[string]int{}
	for seed := uint64(1); seed <= 4; seed++ {
		for _, tc := range []struct {
			fc     fleetCase
			paired bool
		}{{seq, false}, {aa, true}} {
			b, c := fleetArms(tc.fc.b(seed), tc.fc.c(seed), seed)
			exact, agg := judgedBothWays(t, b, c, cfg)
			for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
				for _, name := range []string{"ttft_p99", "tpot_p99"} {
					m, ok := metricNamed(r, name)
					if !ok {
						t.Fatalf("%s seed %d %s: no %s gate", tc.fc.name, seed, path, name)
					}
					hull := strings.Contains(m.Method, "sectioning-hull")
					if tc.paired && hull {
						t.Errorf("paired arms, seed %d, %s: %s widened by sectioning (%s)", seed, path, name, m.Method)
					}
					if !tc.paired && hull {
						widened[path]++
					}
				}
			}
		}
	}
	for _, path := range []string{"request path", "aggregate"} {
		if widened[path] == 0 {
			t.Errorf("%s: no pooled tail gate of sequential arms was widened by sectioning in 8 gates", path)
		}
	}
	t.Logf("widened by sectioning, of 8 pooled tail gates on sequential arms: %v", widened)
}
