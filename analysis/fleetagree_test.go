package analysis

import (
	"fmt"
	"testing"
)

// TestFleetAgreement judges each fleet-model case both ways, on the
// requests and on their streaming aggregate, and lists every gate whose
// verdict differs: GOODPUT_FLEET_AGREE_REPS replicates per case (default
// 0: skipped), GOODPUT_FLEET_CASES a comma-separated subset,
// GOODPUT_FLEET_VARIANT every case moved one way (fleetVariants). A difference
// toward pass (inconclusive or fail on the requests, pass on the
// aggregate) is marked "less cautious" and printed with both intervals.
func TestFleetAgreement(t *testing.T) {
	reps, cases := fleetRun(t, "GOODPUT_FLEET_AGREE_REPS", "compare the request path and the aggregate on the fleet model")
	_, move := fleetVariant(t)
	cfg := Config{Policy: chat(t), Resamples: 400}
	for _, fc := range cases {
		gates, verdicts := map[string]int{}, map[string]int{}
		// each path's verdicts, for the rates
		exactV, aggV := map[Verdict]int{}, map[Verdict]int{}
		compared := 0
		for i := range reps {
			seed := uint64(1000*len(fc.name) + i)
			bf, cf := fc.b(seed), fc.c(seed)
			move(&bf, &cf)
			b, c := fleetArms(bf, cf, seed)
			cfg.Seed = seed + 1
			ex, ag := judgedBothWays(t, b, c, cfg)
			exactV[ex.Verdict]++
			aggV[ag.Verdict]++
			if ex.Verdict != ag.Verdict {
				verdicts[fmt.Sprintf("%s → %s", ex.Verdict, ag.Verdict)]++
			}
			for _, me := range ex.Metrics {
				ma, ok := metricNamed(ag, me.Name)
				if !ok {
					continue
				}
				compared++
				if me.Verdict == ma.Verdict {
					continue
				}
				less := ma.Verdict == Pass
				tag := ""
				if less {
					tag = " (less cautious)"
					t.Logf("%s replicate %d: %s %s [%.5f, %.5f] on the requests (%s), %s [%.5f, %.5f] on the aggregate (%s)", fc.name, i, me.Name,
						me.Verdict, float64(me.Interval[0]), float64(me.Interval[1]), me.Method, ma.Verdict, float64(ma.Interval[0]), float64(ma.Interval[1]), ma.Method)
				}
				gates[fmt.Sprintf("%s %s → %s%s", me.Name, me.Verdict, ma.Verdict, tag)]++
			}
		}
		t.Logf("%-20s %d gates compared; verdicts differ %v; gates differ %v; requests %v, aggregate %v", fc.name, compared, verdicts, gates, exactV, aggV)
	}
}
