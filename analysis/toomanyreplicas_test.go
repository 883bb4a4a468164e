package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestTooManyReplicas: records whose replica field carries more than
// sources.MaxReplicas names (request ids, say) are judged as naming none,
// on the request path and the streaming aggregate alike, with one warning
// that says so, and the arms' replica counts unknown on both (the
// aggregate reported its one replica per slice); the caller's records
// keep their names. At the limit the replicas are followed as before.
func TestTooManyReplicas(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 100, Seed: 3}
	const seed = 43
	for _, tc := range []struct {
		names int
		drop  bool
	}{{sources.MaxReplicas, false}, {sources.MaxReplicas + 1, true}} {
		t.Run(fmt.Sprint(tc.names, " names"), func(t *testing.T) {
			bd, cd := fleetArms(aaFleet(seed), aaFleet(seed), seed)
			for _, d := range []*sources.Dataset{bd, cd} {
				for i := range d.Requests {
					d.Requests[i].Replica = fmt.Sprintf("%s-%d", d.Arm, i%tc.names)
				}
			}
			ab, ac, err := StreamedArms(bd, cd, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := ab.Agg.ReplicasUnnamed; got != tc.drop || !tc.drop && len(ab.Agg.Replicas) != tc.names {
				t.Errorf("aggregate: unnamed %v with %d tracks", got, len(ab.Agg.Replicas))
			}
			exact, err := Judge(bd, cd, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if bd.Requests[0].Replica == "" || len(bd.Warnings) != 0 {
				t.Errorf("the caller's records were changed: replica %q, warnings %q", bd.Requests[0].Replica, bd.Warnings)
			}
			agg, err := Judge(ab, ac, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := "both arms: " + sources.TooManyReplicas()
			for name, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
				if got := slices.Contains(r.Warnings, want); got != tc.drop {
					t.Errorf("%s: warning %v, want %v: %q", name, got, tc.drop, r.Warnings)
				}
				m, ok := metricNamed(r, "offered_load_ratio")
				if ok == tc.drop {
					t.Errorf("%s: offered_load_ratio checked %v (%s) with %d names", name, ok, m.Verdict, tc.names)
				}
				if m, _ := metricNamed(r, "slo_attainment"); strings.Contains(m.Method, "+replica-spread") && tc.drop {
					t.Errorf("%s: attainment %s: no replicas to estimate a spread from", name, m.Method)
				}
			}
			// the arms' replica figures: counted alike, or unknown (0 and
			// null) on both paths; the aggregate reported the one replica
			// per slice it counts for its rates' denominators
			for _, arm := range []struct {
				name string
				e, g ArmSummary
			}{{"baseline", exact.Arms.Baseline, agg.Arms.Baseline}, {"canary", exact.Arms.Canary, agg.Arms.Canary}} {
				e, g := arm.e, arm.g
				if e.Replicas != g.Replicas || tc.drop != (g.Replicas == 0) || tc.drop != math.IsNaN(float64(g.ReplicaSeconds)) || tc.drop != math.IsNaN(float64(g.GoodputPerReplica)) {
					t.Errorf("%s: replicas %d / %d, replica-seconds %v / %v, goodput per replica %v / %v (request path / aggregate)",
						arm.name, e.Replicas, g.Replicas, e.ReplicaSeconds, g.ReplicaSeconds, e.GoodputPerReplica, g.GoodputPerReplica)
				}
			}
			if exact.Verdict != agg.Verdict || strings.Join(exact.Warnings, "\n") != strings.Join(agg.Warnings, "\n") {
				t.Errorf("request path %s %q; aggregate %s %q", exact.Verdict, exact.Warnings, agg.Verdict, agg.Warnings)
			}
		})
	}
}

// TestTooManyReplicasMerged: files aggregated apart that each name fewer
// than sources.MaxReplicas replicas, but more together, merge into an
// arm that names none.
func TestTooManyReplicasMerged(t *testing.T) {
	p := streamPolicy(t, "name: x\nslo: {ttft: 1s}\n"+streamGates)
	half := sources.MaxReplicas/2 + 1
	left, right := NewAggregator(p), NewAggregator(p)
	for i := range 2 * half {
		r := rec(1_700_000_000+float64(i), 0.1, 0.01, 10, 10)
		r.Replica = fmt.Sprint("r", i)
		if i < half {
			left.Add(&r)
		} else {
			right.Add(&r)
		}
	}
	left.Merge(right)
	agg, err := left.Aggregate(sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	if !agg.ReplicasUnnamed || len(agg.Replicas) != 0 || !slices.Contains(agg.Notes, sources.TooManyReplicas()) {
		t.Errorf("merged %d names: unnamed %v, %d tracks, notes %q", 2*half, agg.ReplicasUnnamed, len(agg.Replicas), agg.Notes)
	}
	for _, b := range agg.Buckets {
		if b.Replicas != 1 {
			t.Fatalf("a bucket with %g replicas serving, want 1 (unnamed)", b.Replicas)
		}
	}
}
