package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// TestLoadRatioTwoSidedLevel: offered_load_ratio fails in either direction,
// so a failure needs the interval at 1 − (1 − conf)/2 beyond the tolerance;
// an interval beyond it at the shown level only holds the check
// inconclusive. Without the split an even split failed up to twice as often
// as a one-sided gate (low-traffic A/A: 6.0 ± 1.7% fails over 200 runs).
func TestLoadRatioTwoSidedLevel(t *testing.T) {
	big := stats.Ratio{Num: []float64{1e6, 1e6}, Den: []float64{1e6, 1e6}}
	at := func(point float64, ivl map[float64][2]float64) func(float64) stats.Estimate {
		return func(conf float64) stats.Estimate {
			iv, ok := ivl[conf]
			if !ok {
				t.Fatalf("estimate asked at %v", conf)
			}
			return stats.Estimate{Point: point, SE: (iv[1] - iv[0]) / 4, CI: stats.Interval{Lo: iv[0], Hi: iv[1]}, Method: "test"}
		}
	}
	for _, tc := range []struct {
		name    string
		point   float64
		ivl     map[float64][2]float64
		verdict Verdict
		reason  string
	}{
		{"more, beyond at 95%", 0.10, map[float64][2]float64{0.90: {0.06, 0.14}, 0.95: {0.04, 0.16}}, Fail, "beyond ±3% at 95%"},
		{"more, beyond at 90% only", 0.10, map[float64][2]float64{0.90: {0.04, 0.16}, 0.95: {0.02, 0.18}}, Inconclusive, "but not at 95%"},
		{"less, beyond at 95%", -0.10, map[float64][2]float64{0.90: {-0.14, -0.06}, 0.95: {-0.16, -0.04}}, Fail, "offered less"},
		{"less, beyond at 90% only", -0.10, map[float64][2]float64{0.90: {-0.16, -0.04}, 0.95: {-0.18, -0.02}}, Inconclusive, "but not at 95%"},
		{"even", 0.0, map[float64][2]float64{0.90: {-0.01, 0.01}, 0.95: {-0.012, 0.012}}, Pass, "no sample-ratio mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := loadRatioEval(big, big, at(tc.point, tc.ivl), 0.90, "logged")
			if e.m.Verdict != tc.verdict || !strings.Contains(e.m.Reason, tc.reason) {
				t.Fatalf("verdict %s, reason %q; want %s with %q", e.m.Verdict, e.m.Reason, tc.verdict, tc.reason)
			}
			// the interval shown is the one at the report's level
			if got := math.Log1p(float64(e.m.Interval[0])); math.Abs(got-tc.ivl[0.90][0]) > 1e-12 {
				t.Fatalf("shown interval starts at %v, want the 90%% one %v", got, tc.ivl[0.90][0])
			}
		})
	}
}

// TestLoadRatioNotFailed: offered_load_ratio passes without its interval
// inside the tolerance only where a mismatch cannot hide harm, and then
// says "not failed": more load on the canary, or a shortfall whose point
// is too small to be a shed. Inside the tolerance it passes outright;
// beyond it with confidence it fails.
func TestLoadRatioNotFailed(t *testing.T) {
	buckets := func(v float64) stats.Ratio {
		r := stats.Ratio{Num: make([]float64, 60), Den: make([]float64, 60)}
		for i := range r.Num {
			r.Num[i], r.Den[i] = 100*v, 40 // 60 buckets of 100 requests per 40 replica-seconds
		}
		return r
	}
	for _, tc := range []struct {
		name          string
		point, lo, hi float64 // the estimate, relative
		verdict       Verdict
		notFailed     bool
	}{
		{"inside", 0.01, -0.02, 0.025, Pass, false},
		{"more load, past the tolerance", 0.037, -0.001, 0.076, Pass, true},
		{"a small shortfall, past the tolerance", -0.01, -0.04, 0.02, Pass, true},
		{"a shortfall that may be a shed", -0.025, -0.05, 0.001, Inconclusive, false},
		{"more load beyond with confidence", 0.10, 0.07, 0.13, Fail, false},
	} {
		est := func(float64) stats.Estimate {
			return stats.Estimate{Point: math.Log1p(tc.point), CI: stats.Interval{Lo: math.Log1p(tc.lo), Hi: math.Log1p(tc.hi)}, SE: 1, Method: "test"}
		}
		m := loadRatioEval(buckets(1), buckets(1+tc.point), est, 0.9, "logged").m
		if m.Verdict != tc.verdict || m.NotFailed != tc.notFailed {
			t.Errorf("%s: %s, not failed %v; want %s, %v (%s)", tc.name, m.Verdict, m.NotFailed, tc.verdict, tc.notFailed, m.Reason)
		}
		if want := map[bool]string{true: "not failed", false: string(tc.verdict)}[tc.notFailed]; m.VerdictLabel() != want {
			t.Errorf("%s: shown as %q, want %q", tc.name, m.VerdictLabel(), want)
		}
	}
}

// TestUnnamedReplicasLoadUnknown: a 90/10 split whose request logs name no
// replica. The offered load per replica-second is unknown in both arms, so
// offered_load_ratio is not checked, on either path, and a warning says
// what goes unseen. The streaming aggregate counts one replica per slice
// when none is named (a denominator for its rates); taken as a replica
// count, it compared the canary's tenth of the traffic with the
// baseline's nine tenths and failed the split.
func TestUnnamedReplicasLoadUnknown(t *testing.T) {
	const seed = 9
	b, c := aaFleet(seed), aaFleet(seed)
	b.rate, b.replicas = 18, 9
	c.rate, c.replicas = 2, 1
	bd, cd := fleetArms(b, c, seed)
	for _, ds := range []*sources.Dataset{bd, cd} {
		for i := range ds.Requests {
			ds.Requests[i].Replica = ""
		}
	}
	exact, agg := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 300})
	for _, r := range []*Report{exact, agg} {
		if m, ok := metricNamed(r, "offered_load_ratio"); ok {
			t.Errorf("offered_load_ratio %s without replica names: %s", m.Verdict, m.Reason)
		}
		if r.Verdict == Fail {
			t.Errorf("an even A/A split failed: %q", r.Reasons)
		}
		if !strings.Contains(strings.Join(r.Warnings, "\n"), "offered_load_ratio is not checked: neither arm's requests name the replica") {
			t.Errorf("no warning about the unchecked split: %q", r.Warnings)
		}
	}
	// priced from the policy's rates, one replica each made the canary's
	// hour cost the baseline's: its cost per good request 9× as high
	p := costPolicy(t)
	p.Cost = &policies.CostRates{AcceleratorPerHour: 2.5, HostPerHour: 0.5}
	exact, agg = judgedBothWays(t, bd, cd, Config{Policy: p, Resamples: 300})
	for _, r := range []*Report{exact, agg} {
		if m := metric(t, r, "cost_per_good_request"); m.Verdict != Inconclusive {
			t.Errorf("cost_per_good_request %s without replica names: %s", m.Verdict, m.Reason)
		}
		if !strings.Contains(strings.Join(r.Warnings, "\n"), "cost is not priced from the policy's rates: neither arm's requests name the replica") {
			t.Errorf("no warning about the unpriced arms: %q", r.Warnings)
		}
	}
}

// TestDeployedReplicas: the deployed size at each slice is the most
// replicas that served together through a whole minute starting at or
// before it, so a handover slice or a name seen once does not count
// twice, a replica lost mid-run still counts, and a scale-up counts from
// when it held for a minute.
func TestDeployedReplicas(t *testing.T) {
	rep := func(v float64, n int) []float64 { return slices.Repeat([]float64{v}, n) }
	for _, tc := range []struct {
		name    string
		serving []float64
		secs    float64
		want    []float64
	}{
		{"steady four", rep(4, 30), 10, rep(4, 30)},
		{"one lost halfway", append(rep(4, 15), rep(3, 15)...), 10, rep(4, 30)},
		{"handover slice", append(append(rep(1, 15), 2), rep(1, 15)...), 10, rep(1, 31)},
		{"stray in one slice", append(append(rep(2, 5), 3), rep(2, 24)...), 10, rep(2, 30)},
		{"surge of 50 s", append(append(rep(4, 10), rep(5, 5)...), rep(4, 10)...), 10, rep(4, 25)},
		{"scaled up at 100 s", append(rep(2, 10), rep(3, 12)...), 10, append(rep(2, 10), rep(3, 12)...)},
		{"wide slices: two at least", append(append(rep(1, 10), 2), rep(1, 10)...), 120, rep(1, 21)},
		{"fewer slices than a minute", []float64{3, 2, 3}, 10, []float64{2, 2, 2}},
		{"partial first and last slices", []float64{0.5, 2, 2, 2, 2, 2, 2, 1.2}, 10, []float64{0.5, 2, 2, 2, 2, 2, 2, 2}},
		{"a stretch left out at the start", append(append(rep(0, 3), rep(2, 10)...), math.NaN()), 10, rep(2, 14)},
		{"none", nil, 10, nil},
	} {
		if got := deployedReplicas(tc.serving, tc.secs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestOfferedRateEval: runs one after the other without replica names
// are each one deployment offered its client's rate; a canary run at half
// the baseline's rate cannot pass (inconclusive, never a fail: the
// comparison is at fault), a rate within the 10% tolerance passes, named,
// as does a canary offered more (a closed-loop client offers a faster
// build more), and a run too short for the interval is not checked.
func TestOfferedRateEval(t *testing.T) {
	arm := func(perBucket float64, n int) stats.Ratio {
		r := stats.Ratio{}
		for i := range n {
			// ±10% around the rate, alternating: a steady client
			r.Num = append(r.Num, perBucket*(1+0.1*float64(i%2*2-1)))
			r.Den = append(r.Den, 10)
		}
		return r
	}
	for _, tc := range []struct {
		name    string
		b, c    stats.Ratio
		present bool
		verdict Verdict
		reason  string
	}{
		{"same rate", arm(80, 48), arm(80, 48), true, Pass, "not shown beyond ±10%"},
		{"4% more", arm(80, 48), arm(83.2, 48), true, Pass, "not shown beyond ±10%"},
		{"half the rate", arm(80, 48), arm(40, 48), true, Inconclusive, "rerun one arm at the other's rate"},
		{"twice the rate", arm(40, 48), arm(80, 48), true, Pass, "more load only makes the canary's other gates harder to pass"},
		{"too short", arm(80, MinBuckets-1), arm(40, 48), false, "", ""},
	} {
		e, ok := offeredRateEval(tc.b, tc.c, 0.95)
		if ok != tc.present {
			t.Errorf("%s: present %v, want %v", tc.name, ok, tc.present)
			continue
		}
		if ok && (e.m.Verdict != tc.verdict || !strings.Contains(e.m.Reason, tc.reason) || e.m.Name != "offered_rate_ratio") {
			t.Errorf("%s: %s %s: %s", tc.name, e.m.Name, e.m.Verdict, e.m.Reason)
		}
	}
}
