package stats

import (
	"math"
	"testing"
)

// TestBetweenReplicasReference checks BetweenReplicas and
// WithExtraVariance against testdata/replicas.json (make_replicas.py:
// the same estimator written with numpy arrays, the Welch–Satterthwaite
// interval with scipy.stats.t).
func TestBetweenReplicasReference(t *testing.T) {
	type arm struct{ Offered, Good [][]float64 }
	var ref struct {
		Cases []struct {
			Batches          int
			Baseline, Canary arm
			Tau2, Var, DF    float64
		}
		Widen []struct {
			Point, Lo, Hi, DF0, Conf, V, DF, Nu float64
			Want                                [2]float64
		}
	}
	readTestdata(t, "replicas.json", &ref)
	if len(ref.Cases) == 0 || len(ref.Widen) == 0 {
		t.Fatal("no reference cases")
	}
	counts := func(a arm) []ReplicaCounts {
		out := make([]ReplicaCounts, len(a.Offered))
		for r := range a.Offered {
			out[r] = ReplicaCounts{Offered: a.Offered[r], Good: a.Good[r]}
		}
		return out
	}
	for i, c := range ref.Cases {
		rs, ok := BetweenReplicas(counts(c.Baseline), counts(c.Canary), c.Batches)
		if !ok {
			t.Fatalf("case %d: not estimated", i)
		}
		if !within(rs.Tau2, c.Tau2, 1e-9, 1e-15) || !within(rs.Var, c.Var, 1e-9, 1e-15) || rs.DF != c.DF {
			t.Errorf("case %d: τ² %g var %g df %g, want %g %g %g", i, rs.Tau2, rs.Var, rs.DF, c.Tau2, c.Var, c.DF)
		}
	}
	for i, w := range ref.Widen {
		est := WithExtraVariance(Estimate{Point: w.Point, CI: Interval{w.Lo, w.Hi}, DF: w.DF0}, w.Conf, w.V, w.DF)
		if !within(est.CI.Lo, w.Want[0], 1e-9, 1e-12) || !within(est.CI.Hi, w.Want[1], 1e-9, 1e-12) || !within(est.DF, w.Nu, 1e-9, 0) {
			t.Errorf("widen %d: [%g, %g] on %g df, want [%g, %g] on %g", i, est.CI.Lo, est.CI.Hi, est.DF, w.Want[0], w.Want[1], w.Nu)
		}
	}
}

// within reports |a − b| ≤ rel·|b| + abs.
func within(a, b, rel, abs float64) bool { return math.Abs(a-b) <= rel*math.Abs(b)+abs }

// TestBetweenReplicasEdges: one replica per arm says nothing about
// replicas (no estimate); identical replicas give 0; one replica 10 pp
// below its arm's others all run gives a between-replica σ of several
// pp in either arm, and a canary on one replica carries the whole of it;
// a nothing-to-add or
// non-finite interval is returned unchanged.
func TestBetweenReplicasEdges(t *testing.T) {
	flat := func(k, nb int, p []float64) []ReplicaCounts {
		out := make([]ReplicaCounts, k)
		for r := range out {
			out[r] = ReplicaCounts{Offered: make([]float64, nb), Good: make([]float64, nb)}
			for b := range nb {
				out[r].Offered[b] = 100
				out[r].Good[b] = math.Round(100 * p[r])
			}
		}
		return out
	}
	if _, ok := BetweenReplicas(flat(1, 60, []float64{0.9}), flat(1, 60, []float64{0.9}), 18); ok {
		t.Error("one replica per arm: want no estimate")
	}
	same, ok := BetweenReplicas(flat(4, 60, []float64{0.9, 0.9, 0.9, 0.9}), flat(4, 60, []float64{0.9, 0.9, 0.9, 0.9}), 18)
	if !ok || same.Tau2 != 0 || same.DF != 6 {
		t.Errorf("identical replicas: %+v", same)
	}
	odd, ok := BetweenReplicas(flat(4, 60, []float64{0.9, 0.9, 0.9, 0.8}), flat(4, 60, []float64{0.9, 0.9, 0.9, 0.9}), 18)
	if !ok || !(math.Sqrt(odd.Tau2) > 0.02) || !(odd.Var > 0) {
		t.Errorf("one slow baseline replica: %+v", odd)
	}
	// pooled: a slow canary replica counts as spread too
	if c, ok := BetweenReplicas(flat(4, 60, []float64{0.9, 0.9, 0.9, 0.9}), flat(4, 60, []float64{0.9, 0.9, 0.9, 0.8}), 18); !ok || c.Tau2 != odd.Tau2 {
		t.Errorf("one slow canary replica: %+v, want %+v", c, odd)
	}
	// a canary on one replica: the baseline's replicas alone
	if c, ok := BetweenReplicas(flat(4, 60, []float64{0.9, 0.9, 0.9, 0.8}), flat(1, 60, []float64{0.9}), 18); !ok || c.DF != 3 || !(c.Var > odd.Var) {
		t.Errorf("canary on one replica: %+v", c)
	}
	base := Estimate{Point: 0.001, CI: Interval{-0.004, 0.006}, DF: 5}
	if got := WithExtraVariance(base, 0.9, 0, 3); got != base {
		t.Errorf("no extra variance: %+v", got)
	}
	inf := Estimate{Point: 0, CI: Interval{math.Inf(-1), math.Inf(1)}}
	if got := WithExtraVariance(inf, 0.9, 1e-4, 3); got.CI != inf.CI {
		t.Errorf("infinite interval: %+v", got)
	}
	if got := WithExtraVariance(base, 0.9, 1e-4, 3); !(got.CI.Lo < base.CI.Lo && got.CI.Hi > base.CI.Hi) {
		t.Errorf("widened: %+v", got)
	}
}
