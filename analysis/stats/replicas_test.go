package stats

import (
	"math"
	"testing"
)

// TestBetweenReplicasReference checks BetweenReplicas, Capacity and
// WithExtraVariance against testdata/replicas.json (make_replicas.py:
// the same estimator written with numpy arrays, the Welch–Satterthwaite
// interval with scipy.stats.t).
func TestBetweenReplicasReference(t *testing.T) {
	type arm struct{ Offered, Good [][]float64 }
	type capacity struct{ Speed2, Slope, Var, DF float64 }
	type spread struct{ Tau2, Var, DF float64 }
	type refCase struct {
		Batches          int
		Baseline, Canary arm
		Tau2, Var, DF    float64
		BaselineOnly     *spread `json:"baseline_only"`
		Capacity         capacity
		CapacityBaseline *capacity `json:"capacity_baseline_only"`
	}
	var ref struct {
		Cases         []refCase
		CapacityCases []refCase `json:"capacity_cases"`
		Widen         []struct {
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
		bo, ok := BetweenReplicasOfBaseline(counts(c.Baseline), counts(c.Canary), c.Batches)
		if want := c.BaselineOnly; want == nil || !ok || !within(bo.Tau2, want.Tau2, 1e-9, 1e-15) || !within(bo.Var, want.Var, 1e-9, 1e-15) || bo.DF != want.DF {
			t.Errorf("case %d, the baseline's replicas alone: %+v (ok %v), want %+v", i, bo, ok, want)
		}
	}
	for i, c := range append(append([]refCase{}, ref.Cases...), ref.CapacityCases...) {
		rc, ok := Capacity(counts(c.Baseline), counts(c.Canary), c.Batches)
		want := c.Capacity
		if !ok {
			t.Fatalf("capacity case %d: not estimated", i)
		}
		if !within(rc.Speed2, want.Speed2, 1e-9, 1e-15) || !within(rc.Slope, want.Slope, 1e-9, 1e-15) || !within(rc.Var, want.Var, 1e-9, 1e-18) || rc.DF != want.DF {
			t.Errorf("capacity case %d: speed² %g slope %g var %g df %g, want %g %g %g %g", i, rc.Speed2, rc.Slope, rc.Var, rc.DF, want.Speed2, want.Slope, want.Var, want.DF)
		}
	}
	for i, c := range ref.CapacityCases {
		rc, ok := CapacityOfBaseline(counts(c.Baseline), counts(c.Canary), c.Batches)
		want := c.CapacityBaseline
		if want == nil || !ok || !within(rc.Speed2, want.Speed2, 1e-9, 1e-15) || !within(rc.Slope, want.Slope, 1e-9, 1e-15) || !within(rc.Var, want.Var, 1e-9, 1e-18) || rc.DF != want.DF {
			t.Errorf("capacity case %d, the baseline's shares alone: %+v (ok %v), want %+v", i, rc, ok, want)
		}
	}
	if len(ref.CapacityCases) == 0 || ref.CapacityCases[1].Capacity.Var == 0 {
		t.Fatal("no capacity case with replicas of their own speeds")
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

// TestCapacityEdges: one replica per arm says nothing; replicas whose
// shares of the traffic are equal add nothing; one replica taking twice
// its peers' share in every batch gives exactly the spread of the shares
// (0.16 in its arm, pooled with the other arm's 0 on 3 + 3 degrees of
// freedom), and attainment that falls as load rises a positive slope.
func TestCapacityEdges(t *testing.T) {
	const nb = 120
	arm := func(k int, double bool) []ReplicaCounts {
		out := make([]ReplicaCounts, k)
		for r := range out {
			out[r] = ReplicaCounts{Offered: make([]float64, nb), Good: make([]float64, nb)}
			for s := range nb {
				load := 20 + 10*math.Round(math.Sin(float64(s)/8)*2) // 0 … 40
				o := load
				if double && r == 0 {
					o *= 2
				}
				out[r].Offered[s] = o
				// attainment 0.99 at the lowest load, 0.9 at the highest
				out[r].Good[s] = o * (0.99 - 0.09*load/40)
			}
		}
		return out
	}
	if _, ok := Capacity(arm(1, false), arm(1, false), 18); ok {
		t.Error("one replica per arm: estimated")
	}
	eq, ok := Capacity(arm(4, false), arm(4, false), 18)
	if !ok || eq.Speed2 != 0 || eq.Var != 0 {
		t.Errorf("equal shares: %+v ok %v", eq, ok)
	}
	two, ok := Capacity(arm(4, true), arm(4, false), 18)
	if !ok || !within(two.Speed2, 0.08, 1e-12, 1e-15) || two.DF != 6 || !(two.Slope > 0) || !(two.Var > 0) {
		t.Errorf("a replica with twice the share: %+v ok %v", two, ok)
	}
}

// TestCapacityRefusesBadCounts: counts no estimate can be built on are
// refused, not turned into a NaN variance.
func TestCapacityRefusesBadCounts(t *testing.T) {
	good := func() []ReplicaCounts {
		out := make([]ReplicaCounts, 3)
		for r := range out {
			out[r] = ReplicaCounts{Offered: make([]float64, 40), Good: make([]float64, 40)}
			for s := range 40 {
				out[r].Offered[s], out[r].Good[s] = float64(10+s%7), float64(9+s%7)
			}
		}
		return out
	}
	if _, ok := Capacity(good(), good(), 18); !ok {
		t.Fatal("good counts refused")
	}
	for name, spoil := range map[string]func([]ReplicaCounts){
		"NaN good":          func(c []ReplicaCounts) { c[1].Good[3] = math.NaN() },
		"good over offered": func(c []ReplicaCounts) { c[0].Good[5] = 100 },
		"negative offered":  func(c []ReplicaCounts) { c[2].Offered[0] = -1 },
		"short series":      func(c []ReplicaCounts) { c[2].Good = c[2].Good[:10] },
	} {
		c := good()
		spoil(c)
		if rc, ok := Capacity(good(), c, 18); ok {
			t.Errorf("%s: estimated %+v", name, rc)
		}
	}
}

// TestBetweenReplicaLevelsReference checks BetweenReplicaLevels against
// testdata/replicas.json's level_cases (make_replicas.py: the same
// analysis of variance with numpy's nan functions): replicas 0–12% apart,
// one stopping half way, one entering in the last batch (left out), a
// canary on one replica, buckets with requests but no level.
func TestBetweenReplicaLevelsReference(t *testing.T) {
	type arm struct {
		Level [][]*float64
		Count [][]float64
	}
	var ref struct {
		LevelCases []struct {
			Batches          int
			Baseline, Canary arm
			Tau2, Var, DF    float64
			BaselineOnly     *struct{ Tau2, Var, DF float64 }          `json:"baseline_only"`
			CapacityBaseline *struct{ Speed2, Slope, Var, DF float64 } `json:"capacity_baseline_only"`
		} `json:"level_cases"`
	}
	readTestdata(t, "replicas.json", &ref)
	if len(ref.LevelCases) < 6 {
		t.Fatal("no level reference cases")
	}
	levels := func(a arm) []ReplicaLevels {
		out := make([]ReplicaLevels, len(a.Level))
		for r, row := range a.Level {
			out[r] = ReplicaLevels{Level: make([]float64, len(row)), Count: a.Count[r]}
			for k, v := range row {
				out[r].Level[k] = math.NaN()
				if v != nil {
					out[r].Level[k] = *v
				}
			}
		}
		return out
	}
	for i, c := range ref.LevelCases {
		ls, ok := BetweenReplicaLevels(levels(c.Baseline), levels(c.Canary), c.Batches)
		if !ok {
			t.Fatalf("level case %d: not estimated", i)
		}
		if !within(ls.Tau2, c.Tau2, 1e-9, 1e-15) || !within(ls.Var, c.Var, 1e-9, 1e-15) || ls.DF != c.DF {
			t.Errorf("level case %d: τ² %g var %g df %g, want %g %g %g", i, ls.Tau2, ls.Var, ls.DF, c.Tau2, c.Var, c.DF)
		}
		lc, ok := LevelCapacityOfBaseline(levels(c.Baseline), levels(c.Canary), c.Batches)
		if want := c.CapacityBaseline; (want == nil) == ok || want != nil && (!within(lc.Speed2, want.Speed2, 1e-9, 1e-15) || !within(lc.Slope, want.Slope, 1e-9, 1e-15) ||
			!within(lc.Var, want.Var, 1e-9, 1e-18) || lc.DF != want.DF) {
			t.Errorf("level case %d, capacity from the baseline's shares: %+v (ok %v), want %+v", i, lc, ok, want)
		}
		bo, ok := BetweenReplicaLevelsOfBaseline(levels(c.Baseline), levels(c.Canary), c.Batches)
		if want := c.BaselineOnly; want == nil || !ok || !within(bo.Tau2, want.Tau2, 1e-9, 1e-15) || !within(bo.Var, want.Var, 1e-9, 1e-15) || bo.DF != want.DF {
			t.Errorf("level case %d, the baseline's replicas alone: %+v (ok %v), want %+v", i, bo, ok, want)
		}
	}
}

// TestBetweenReplicaLevelsEdges: identical replicas add nothing; one
// replica 20% slower all run than its arm's three others is found in
// either arm; a shared slowdown in time is not a replica's; one replica
// per arm, too few buckets or malformed levels give no estimate.
func TestBetweenReplicaLevelsEdges(t *testing.T) {
	arm := func(k, nb int, offset func(r, b int) float64) []ReplicaLevels {
		out := make([]ReplicaLevels, k)
		for r := range out {
			out[r] = ReplicaLevels{Level: make([]float64, nb), Count: make([]float64, nb)}
			for b := range nb {
				// a fixed wiggle per replica and bucket, no trend
				out[r].Level[b] = math.Log(0.4) + offset(r, b) + 0.01*math.Sin(float64(7*r+3*b))
				out[r].Count[b] = 20
			}
		}
		return out
	}
	flat := func(r, b int) float64 { return 0 }
	oneSlow := func(r, b int) float64 {
		if r == 0 {
			return math.Log(1.2)
		}
		return 0
	}
	wave := func(r, b int) float64 { return 0.3 * math.Sin(float64(b)/10) }
	for _, tc := range []struct {
		name   string
		b, c   []ReplicaLevels
		ok     bool
		tauMin float64 // τ at least
		tauMax float64 // τ at most
	}{
		{"identical", arm(4, 120, flat), arm(4, 120, flat), true, 0, 0.005},
		{"a slow baseline replica", arm(4, 120, oneSlow), arm(4, 120, flat), true, 0.05, 0.12},
		{"a slow canary replica", arm(4, 120, flat), arm(4, 120, oneSlow), true, 0.05, 0.12},
		{"a wave all replicas ride", arm(4, 120, wave), arm(4, 120, wave), true, 0, 0.005},
		{"one replica per arm", arm(1, 120, oneSlow), arm(1, 120, flat), false, 0, 0},
		{"too few buckets", arm(4, 7, oneSlow), arm(4, 7, oneSlow), false, 0, 0},
	} {
		ls, ok := BetweenReplicaLevels(tc.b, tc.c, LagWindowBatches)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if tau := math.Sqrt(ls.Tau2); ok && (tau < tc.tauMin || tau > tc.tauMax) {
			t.Errorf("%s: τ %.4g, want in [%g, %g]", tc.name, tau, tc.tauMin, tc.tauMax)
		}
		if ok && !within(ls.Var, ls.Tau2*(0.25+0.25), 1e-12, 1e-15) {
			t.Errorf("%s: var %g, want τ²·(Σw_b² + Σw_c²) = %g", tc.name, ls.Var, ls.Tau2*0.5)
		}
	}
	// from the baseline's replicas alone: a slow canary replica is not
	// chance, a slow baseline replica is
	if ls, ok := BetweenReplicaLevelsOfBaseline(arm(4, 120, flat), arm(4, 120, oneSlow), LagWindowBatches); !ok || math.Sqrt(ls.Tau2) > 0.005 || ls.DF != 3 {
		t.Errorf("a slow canary replica, the baseline's alone: %+v (ok %v), want τ ≈ 0 on 3 df", ls, ok)
	}
	if ls, ok := BetweenReplicaLevelsOfBaseline(arm(4, 120, oneSlow), arm(4, 120, flat), LagWindowBatches); !ok || math.Sqrt(ls.Tau2) < 0.05 || !within(ls.Var, ls.Tau2*0.5, 1e-12, 1e-15) {
		t.Errorf("a slow baseline replica, the baseline's alone: %+v (ok %v), want τ ≥ 0.05 over both arms' shares", ls, ok)
	}
	bad := arm(4, 120, flat)
	bad[2].Level[5] = math.Inf(1)
	if _, ok := BetweenReplicaLevels(bad, arm(4, 120, flat), LagWindowBatches); ok {
		t.Error("an infinite level was taken")
	}
	short := arm(4, 120, flat)
	short[1].Count = short[1].Count[:100]
	if _, ok := BetweenReplicaLevels(arm(4, 120, flat), short, LagWindowBatches); ok {
		t.Error("mismatched counts were taken")
	}
}
