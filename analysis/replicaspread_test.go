package analysis

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
)

// TestReplicaSpreadBothPaths: replicas 6% apart in speed for the whole
// run widen the attainment interval on the request path and on the
// streaming aggregate alike (the same method, note and interval), and an
// arm on one replica per side has no spread to estimate.
func TestReplicaSpreadBothPaths(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 100, Seed: 3}
	spread := func(f *fleet) { f.replicaSigma = 0.06 }
	one := func(f *fleet) { f.replicas, f.rate = 1, 5 }
	for _, tc := range []struct {
		name  string
		mod   func(*fleet)
		widen bool
	}{{"replicas 6% apart", spread, true}, {"one replica per arm", one, false}} {
		t.Run(tc.name, func(t *testing.T) {
			const seed = 41
			b, c := aaFleet(seed), aaFleet(seed)
			tc.mod(&b)
			tc.mod(&c)
			bd, cd := fleetArms(b, c, seed)
			ex, ag := judgedBothWays(t, bd, cd, cfg)
			me, _ := metricNamed(ex, "slo_attainment")
			ma, _ := metricNamed(ag, "slo_attainment")
			note := func(m Metric) string {
				for _, a := range m.Adjusted {
					if strings.HasPrefix(a, "interval widened") {
						return a
					}
				}
				return ""
			}
			if got := strings.Contains(me.Method, "+replica-spread"); got != tc.widen {
				t.Errorf("request path: method %s, note %q", me.Method, note(me))
			}
			if me.Method != ma.Method || note(me) != note(ma) || math.Abs(float64(me.Interval[0]-ma.Interval[0])) > 1e-9 || math.Abs(float64(me.Interval[1]-ma.Interval[1])) > 1e-9 {
				t.Errorf("request path %s [%.6f, %.6f] %q; aggregate %s [%.6f, %.6f] %q", me.Method, float64(me.Interval[0]), float64(me.Interval[1]), note(me),
					ma.Method, float64(ma.Interval[0]), float64(ma.Interval[1]), note(ma))
			}
			if tc.widen && note(me) == "" {
				t.Errorf("no note of the widening in %q", me.Adjusted)
			}
			t.Logf("%s: %s [%.5f, %.5f] %q", tc.name, me.Method, float64(me.Interval[0]), float64(me.Interval[1]), note(me))
		})
	}
}

// TestReplicaWideningVars: the spread and the capacity parts add as
// standard deviations, on the fewer of their degrees of freedom; a part
// that adds nothing leaves the other as it is.
func TestReplicaWideningVars(t *testing.T) {
	for _, tc := range []struct {
		name          string
		w             replicaWidening
		wantV, wantDF float64
	}{
		{"none", replicaWidening{}, 0, 0},
		{"spread only", replicaWidening{spread: stats.ReplicaSpread{Var: 4e-6, DF: 6}}, 4e-6, 6},
		{"capacity only", replicaWidening{capacity: stats.ReplicaCapacity{Var: 1e-6, DF: 3}}, 1e-6, 3},
		{"both", replicaWidening{spread: stats.ReplicaSpread{Var: 4e-6, DF: 6}, capacity: stats.ReplicaCapacity{Var: 1e-6, DF: 5}}, 9e-6, 5},
	} {
		v, df := tc.w.vars()
		if math.Abs(v-tc.wantV) > 1e-18 || df != tc.wantDF {
			t.Errorf("%s: %g on %g df, want %g on %g", tc.name, v, df, tc.wantV, tc.wantDF)
		}
	}
}

// TestReplicaLevelsBothPaths: replicas 12% apart in speed for the whole
// run widen the TTFT and TPOT p99 intervals on the request path and on
// the streaming aggregate alike (the same between-replica spread from the
// same coarse per-bucket medians), and make them wider than batches in
// time alone; one replica per arm adds nothing.
func TestReplicaLevelsBothPaths(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 100, Seed: 3}
	spread := func(f *fleet) { f.replicaSigma = 0.12 }
	one := func(f *fleet) { f.replicas, f.rate = 1, 5 }
	note := func(m Metric) string {
		for _, a := range m.Adjusted {
			if i := strings.Index(a, "for replicas of their own speeds"); i >= 0 {
				return a[i:]
			}
		}
		return ""
	}
	for _, tc := range []struct {
		name  string
		mod   func(*fleet)
		widen bool
	}{{"replicas 12% apart", spread, true}, {"one replica per arm", one, false}} {
		t.Run(tc.name, func(t *testing.T) {
			const seed = 43
			b, c := aaFleet(seed), aaFleet(seed)
			tc.mod(&b)
			tc.mod(&c)
			bd, cd := fleetArms(b, c, seed)
			ex, ag := judgedBothWays(t, bd, cd, cfg)
			for _, name := range []string{"ttft_p99", "tpot_p99"} {
				me, _ := metricNamed(ex, name)
				ma, _ := metricNamed(ag, name)
				for _, m := range []struct {
					path string
					m    Metric
				}{{"request path", me}, {"aggregate", ma}} {
					if got := strings.Contains(m.m.Method, "+replica-levels"); got != tc.widen || (note(m.m) != "") != tc.widen {
						t.Errorf("%s %s: method %s, note %q", m.path, name, m.m.Method, note(m.m))
					}
				}
				if note(me) != note(ma) {
					t.Errorf("%s: request path %q, aggregate %q", name, note(me), note(ma))
				}
				// how much wider than batches in time alone
				var factor float64
				for _, a := range me.Adjusted {
					if strings.HasPrefix(a, "interval widened ×") {
						fmt.Sscanf(strings.TrimPrefix(a, "interval widened ×"), "%g", &factor)
					}
				}
				if tc.widen && !(factor > 1.05) {
					t.Errorf("%s widened ×%g for replicas 12%% apart, want well over 1: %q", name, factor, me.Adjusted)
				}
				t.Logf("%s %s: [%.4f, %.4f] %q", tc.name, name, float64(me.Interval[0]), float64(me.Interval[1]), note(me))
			}
		})
	}
}

// TestSlowCanaryReplicaFails: one canary replica 1.5× slower than its
// peers, the baseline's replicas alike, fails the tail gates on both
// paths: how far replicas differ by chance is read from the baseline's
// replicas, so the canary's slow one is not taken for chance.
func TestSlowCanaryReplicaFails(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 100, Seed: 3}
	const seed = 47
	b, c := aaFleet(seed), aaFleet(seed)
	c.slowReplicaX = 1.5
	bd, cd := fleetArms(b, c, seed)
	ex, ag := judgedBothWays(t, bd, cd, cfg)
	for _, r := range []struct {
		path string
		rep  *Report
	}{{"request path", ex}, {"aggregate", ag}} {
		m, _ := metricNamed(r.rep, "tpot_p99")
		if m.Verdict != Fail {
			t.Errorf("%s: tpot_p99 %s (%s), want fail", r.path, m.Verdict, m.Reason)
		}
	}
}
