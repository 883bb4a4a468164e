package analysis

import (
	"fmt"
	"math"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestLoadPerReplicaSecondBothPaths: the request path and the streaming
// aggregate of the same records count an arm's replica-seconds alike —
// whole buckets from the arm's first, the last bucket ending at the last
// arrival (or at the declared duration's end), replicas that join or leave
// mid-run in whole buckets — so offered_load_ratio reads the same figures
// on both. An arm of 300 requests over 95 s on two replicas read 1.58
// requests per replica-second on the request path and 1.50 from its
// aggregate, whose last slice counted 5 s in which nothing arrived; a
// replica placed by its requests' own times read five requests on three
// replicas at 0.076 against the aggregate's 0.062.
func TestLoadPerReplicaSecondBothPaths(t *testing.T) {
	const t0 = 1_767_225_600.0
	arm := func(arm sources.Arm, n int, every, offset float64, reps []string, from map[string]float64, duration float64) *sources.Dataset {
		ds := &sources.Dataset{Arm: arm, Duration: duration, Clock: sources.ClockEpoch}
		for i := range n {
			r := rec(t0+offset+float64(i)*every, 0.3, 0.03, 200, 50)
			r.Replica = reps[i%len(reps)]
			if f, ok := from[r.Replica]; ok && r.Time < t0+f {
				r.Replica = reps[0] // not serving yet
			}
			ds.Requests = append(ds.Requests, r)
		}
		return ds
	}
	two, three := []string{"r0", "r1"}, []string{"r0", "r1", "r2"}
	for _, tc := range []struct {
		name string
		b, c *sources.Dataset
	}{
		{"a short run ending mid-bucket", arm(sources.Baseline, 1166, 0.1, 0, two, nil, 0), arm(sources.Canary, 300, 0.3167, 0, two, nil, 0)},
		{"starting mid-bucket", arm(sources.Baseline, 400, 0.25, 3.3, two, nil, 0), arm(sources.Canary, 390, 0.25, 6.1, two, nil, 0)},
		{"a replica joining mid-run", arm(sources.Baseline, 600, 0.2, 0, three, map[string]float64{"r2": 47.3}, 0), arm(sources.Canary, 600, 0.2, 0, three, nil, 0)},
		{"a declared duration past the last arrival", arm(sources.Baseline, 600, 0.2, 0, two, nil, 125), arm(sources.Canary, 600, 0.2, 0, two, nil, 127.5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := streamPolicy(t, "name: x\nslo: {ttft: 1s, tpot: 80ms}\nwindow: {warmup: none, bucket: 10s}\n"+streamGates)
			exact, agg := judgedBothWays(t, tc.b, tc.c, Config{Policy: p, Resamples: 50, Seed: 1})
			figures := func(r *Report) string {
				for _, m := range r.Metrics {
					if m.Name == "offered_load_ratio" {
						return fmt.Sprintf("baseline %.9g canary %.9g", float64(m.Baseline), float64(m.Canary))
					}
				}
				return "no offered_load_ratio"
			}
			if e, a := figures(exact), figures(agg); e != a || e == "no offered_load_ratio" {
				t.Errorf("offered requests per replica-second: request path %s, aggregate %s", e, a)
			}
			for k, arm := range []string{"baseline", "canary"} {
				es, as := exact.Arms.Baseline, agg.Arms.Baseline
				if k == 1 {
					es, as = exact.Arms.Canary, agg.Arms.Canary
				}
				if math.Abs(float64(es.ReplicaSeconds-as.ReplicaSeconds)) > 1e-6 || math.Abs(float64(es.GoodputRPS-as.GoodputRPS)) > 1e-9 {
					t.Errorf("%s: replica-seconds %g and goodput %g req/s on the request path, %g and %g from the aggregate",
						arm, float64(es.ReplicaSeconds), float64(es.GoodputRPS), float64(as.ReplicaSeconds), float64(as.GoodputRPS))
				}
			}
		})
	}
}
