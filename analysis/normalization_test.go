package analysis

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/sim"
)

// simArms runs a built-in simulator scenario with a fixed seed.
func simArms(t *testing.T, name string, seed uint64) (*sources.Dataset, *sources.Dataset) {
	t.Helper()
	sc, err := sim.Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(arm sources.Arm, rs []sources.Request) *sources.Dataset {
		return &sources.Dataset{Arm: arm, Requests: rs, Clock: sources.ClockEpoch, Location: "client"}
	}
	return mk(sources.Baseline, res.Baseline), mk(sources.Canary, res.Canary)
}

func step(r *Report, name string) NormalizationStep {
	for _, s := range r.Normalization.Steps {
		if s.Name == name {
			return s
		}
	}
	return NormalizationStep{}
}

// TestMixShiftAlone: the canary gets twice the share of long prompts, which
// miss their SLO more often, with identical per-class behaviour. The naive
// attainment difference is beyond the 1 pp margin; standardised to the
// baseline's mix the gate passes.
func TestMixShiftAlone(t *testing.T) {
	b := synth{n: 60000, rate: 50, ttftMed: 0.3, tpotMed: 0.04, longShare: 0.15, longTTFTMed: 3.2, longTPOTMed: 0.05, replicas: 2, seed: 31}
	c := b
	c.seed, c.longShare = 32, 0.30
	r := judge(t, chat(t), b, c)
	m := metric(t, r, "slo_attainment")
	if m.Naive == nil || float64(m.Naive.Delta) > -0.01 || float64(m.Naive.Interval[1]) > -0.01 {
		t.Fatalf("naive attainment difference should be beyond -1 pp: %+v", m.Naive)
	}
	if m.Verdict != Pass {
		t.Errorf("standardized attainment: %s, want pass (%s)", m.Verdict, m.Reason)
	}
	if r.Verdict == Fail {
		t.Errorf("a mix shift alone failed the comparison: %q", r.Reasons)
	}
	if s := step(r, "mix"); !s.Applied || !strings.Contains(s.Detail, `× long"`) {
		t.Errorf("mix step not reported: %+v", s)
	}
}

// TestMaskedRegression: a real 15% per-class TPOT regression hidden by a
// favourable mix (the canary gets fewer long prompts, whose TPOT is higher)
// must fail.
func TestMaskedRegression(t *testing.T) {
	b := synth{n: 60000, rate: 50, ttftMed: 0.3, tpotMed: 0.030, longShare: 0.5, longTTFTMed: 0.6, longTPOTMed: 0.060, replicas: 2, seed: 41}
	c := synth{n: 60000, rate: 50, ttftMed: 0.3, tpotMed: 0.030 * 1.15, longShare: 0.2, longTTFTMed: 0.6, longTPOTMed: 0.060 * 1.15, replicas: 2, seed: 42}
	r := judge(t, chat(t), b, c)
	m := metric(t, r, "tpot_p99")
	if m.Naive == nil || float64(m.Naive.Delta) > 0.10 {
		t.Fatalf("the mix should mask the regression in the naive comparison: %+v", m.Naive)
	}
	if m.Verdict != Fail || r.Verdict != Fail {
		t.Errorf("tpot_p99 %s (%s), overall %s: want fail", m.Verdict, m.Reason, r.Verdict)
	}
}

// TestColdStartAlone: the canary is slow for its first minutes, then
// identical: the automatic warm-up cut removes the slow start (from both
// arms, which run together) and the verdict is not fail.
func TestColdStartAlone(t *testing.T) {
	b, c := simArms(t, "cold-start", 1)
	r, err := Judge(b, c, Config{Policy: chat(t), Resamples: 400})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict == Fail {
		t.Errorf("cold start alone failed: %q", r.Reasons)
	}
	if float64(r.Arms.Canary.WarmupCutSeconds) < 60 {
		t.Errorf("canary warm-up cut %vs, want the slow start cut", r.Arms.Canary.WarmupCutSeconds)
	}
	// the baseline has no warm-up of its own; paired in time, it is cut
	// to where the canary's cut ends so both arms share one span
	if d := float64(r.Arms.Baseline.WarmupCutSeconds) - float64(r.Arms.Canary.WarmupCutSeconds); d < -1 || d > 1 {
		t.Errorf("baseline warm-up cut %vs, canary %vs: want one span", r.Arms.Baseline.WarmupCutSeconds, r.Arms.Canary.WarmupCutSeconds)
	}
	if s := step(r, "warmup"); !strings.Contains(s.Detail, "extended from 0s") {
		t.Errorf("the baseline's own warm-up rule should find none: %q", s.Detail)
	}
	if s := step(r, "warmup"); !s.Applied || !strings.Contains(s.Detail, "canary: cut") {
		t.Errorf("warm-up step: %+v", s)
	}
}

// TestReplicaLossNotBlamed: a baseline replica fails mid-window. It is
// reported, and the verdict does not blame the change for it.
func TestReplicaLossNotBlamed(t *testing.T) {
	b, c := simArms(t, "replica-loss", 1)
	r, err := Judge(b, c, Config{Policy: chat(t), Resamples: 400})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict == Fail {
		t.Errorf("replica loss failed the canary: %q", r.Reasons)
	}
	if s := step(r, "replicas"); !strings.Contains(s.Detail, "lost") || !strings.Contains(s.Detail, "baseline") {
		t.Errorf("replica loss not reported: %+v", s)
	}
	p := chat(t)
	p.Gates = append(p.Gates, policies.Gate{Metric: "goodput_per_replica", Margin: policies.Margin{Value: 0.02}})
	r, err = Judge(b, c, Config{Policy: p, Resamples: 400})
	if err != nil {
		t.Fatal(err)
	}
	if m := metric(t, r, "goodput_per_replica"); m.Naive == nil || float64(m.Naive.Delta) > -0.05 {
		t.Errorf("the naive per-replica comparison should show the confound: %+v", m.Naive)
	}
}

// TestSRMGuardrail: a declared 50/50 split observed as 45/55 fails.
func TestSRMGuardrail(t *testing.T) {
	p := chat(t)
	p.Traffic = &policiesTraffic{CanaryShare: 0.5}
	b := synth{n: 11000, rate: 11, ttftMed: 0.3, tpotMed: 0.04, seed: 51}
	c := synth{n: 9000, rate: 9, ttftMed: 0.3, tpotMed: 0.04, seed: 52}
	r := judge(t, p, b, c)
	m := metric(t, r, "traffic_split")
	if m.Verdict != Fail || !m.Guardrail || r.Verdict != Fail {
		t.Errorf("traffic split %s guardrail=%v overall %s: %s", m.Verdict, m.Guardrail, r.Verdict, m.Reason)
	}
}

type policiesTraffic = policies.TrafficSpec

// TestCacheAdjust: normalize.cache: adjust applies CUPED on the per-bucket
// hit rate to the attainment gate and reports it when no mix
// standardization applies; with one, CUPED would replace the standardized
// estimate, so it is not applied and the cache step says why.
func TestCacheAdjust(t *testing.T) {
	b, c := simArms(t, "cache-cold", 1)
	p := chat(t)
	p.Normalize.Cache = "adjust"
	r, err := Judge(b, c, Config{Policy: p, Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range metric(t, r, "slo_attainment").Adjusted {
		if strings.Contains(a, "CUPED on") {
			t.Errorf("CUPED replaced the mix-standardized attainment: %q", a)
		}
	}
	if s := step(r, "cache"); s.Applied || !strings.Contains(s.Detail, "would replace the mix-standardized comparison") {
		t.Errorf("cache step with mix: %+v", s)
	}
	p.Normalize.Mix = "none"
	// the canary's cold cache stays in the window (the automatic warm-up
	// cut removes most of it)
	p.Window.Warmup = "none"
	r, err = Judge(b, c, Config{Policy: p, Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	m := metric(t, r, "slo_attainment")
	found := false
	for _, a := range m.Adjusted {
		found = found || strings.Contains(a, "CUPED on the per-bucket prefix-cache hit rate")
	}
	if !found || m.Naive == nil {
		t.Errorf("attainment not CUPED-adjusted: %q naive %+v", m.Adjusted, m.Naive)
	}
	// the cold start is over by mid-run: over the later half the hit
	// rates agree, so the change did not move caching and no caveat is due
	if s := step(r, "cache"); !s.Applied || !strings.Contains(s.Detail, "hit rate baseline") || !strings.Contains(s.Detail, "within 2 pp of each other over the later half") {
		t.Errorf("cache step: %+v", s)
	}
	if strings.Contains(strings.Join(r.Warnings, "\n"), "mediator") {
		t.Errorf("a cold start warned of a mediator: %q", r.Warnings)
	}
	// a canary that lost cache hits all run long: CUPED is still what was
	// asked for, and the caveat says what it hides
	b, c = cacheLostArms(t)
	r, err = Judge(b, c, Config{Policy: p, Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	if s := step(r, "cache"); !s.Applied {
		t.Errorf("cache step: %+v", s)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "mediator") {
		t.Error("the mediator caveat is not shown")
	}
}

// TestCUPEDPaired: arms that ran together on one clock share the fleet's
// traffic wave; CUPED on their hit rate compares them paired, bucket by
// bucket, as the unadjusted comparison does. On each arm's own buckets
// the wave was counted in both variances: on the fleet model's identical
// arms the CUPED interval was 2–3× the unadjusted paired one and a
// 4.2 pp attainment loss (tiny-outputs under a random policy) was
// INCONCLUSIVE on the request path and FAILED from its aggregate, which
// compares the arms paired and unadjusted.
func TestCUPEDPaired(t *testing.T) {
	p := chat(t)
	p.Normalize.Mix, p.Normalize.Cache = "none", "adjust"
	for seed := uint64(1); seed <= 3; seed++ {
		b, c := fleetArms(aaFleet(seed), aaFleet(seed), seed)
		r, err := Judge(b, c, Config{Policy: p, Resamples: 100, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		m := metric(t, r, "slo_attainment")
		if !strings.HasPrefix(m.Method, "cuped-paired") || m.Naive == nil {
			t.Fatalf("seed %d: method %q naive %+v", seed, m.Method, m.Naive)
		}
		w, naive := float64(m.Interval[1]-m.Interval[0]), float64(m.Naive.Interval[1]-m.Naive.Interval[0])
		t.Logf("seed %d: CUPED %+.2f pp [%+.2f, %+.2f], unadjusted paired width %.2f pp", seed, 100*m.Delta, 100*m.Interval[0], 100*m.Interval[1], 100*naive)
		if w > 1.25*naive {
			t.Errorf("seed %d: the CUPED interval is %.2f× the unadjusted paired one", seed, w/naive)
		}
	}
}

// restartArms runs testdata/scenarios/replica-restart.yaml (seed 2): a
// canary replica fails at 5 min and comes back cold a minute later.
func restartArms(t *testing.T) (*sources.Dataset, *sources.Dataset) {
	return scenarioArms(t, "replica-restart.yaml", 2)
}

// scenarioArms runs the scenario file testdata/scenarios/NAME with seed.
func scenarioArms(t *testing.T, name string, seed uint64) (*sources.Dataset, *sources.Dataset) {
	t.Helper()
	y, err := os.ReadFile(filepath.Join("..", "testdata", "scenarios", name))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sim.ParseScenario(name, y)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &sources.Dataset{Arm: sources.Baseline, Requests: res.Baseline, Clock: sources.ClockEpoch},
		&sources.Dataset{Arm: sources.Canary, Requests: res.Canary, Clock: sources.ClockEpoch}
}

// TestReplicaRestartWarmup: a canary replica fails at 5 min and comes back
// cold a minute later; its own slow restart is cut from the window (by the
// arm-level rule, from its re-entry) and reported. The minute it served
// nothing (six empty 10 s buckets on the absolute grid) is for the
// canary_replica_loss guardrail alone to judge: no other gate fails on the
// restart.
func TestReplicaRestartWarmup(t *testing.T) {
	b, c := restartArms(t)
	r, err := Judge(b, c, Config{Policy: chat(t), Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	s := step(r, "warmup")
	if !s.Applied || !strings.Contains(s.Detail, `replica "canary-1" entered at`) {
		t.Errorf("the restarted replica's warm-up is not cut: %s", s.Detail)
	}
	if !strings.Contains(step(r, "replicas").Detail, "canary-1 gap") {
		t.Errorf("the restart gap is not reported: %+v", step(r, "replicas"))
	}
	for _, m := range r.Metrics {
		if m.Verdict == Fail && m.Name != "canary_replica_loss" {
			t.Errorf("a replica restart failed %s: %s", m.Name, m.Reason)
		}
	}
}

// TestOfferedLoadShed: without a declared split, a canary offered less per
// replica-second fails when the shortfall is beyond the tolerance with
// confidence, and is inconclusive — never a pass — when a shortfall beyond
// the tolerance is not ruled out; equal load passes.
func TestOfferedLoadShed(t *testing.T) {
	shed := func(s synth, share float64) *sources.Dataset {
		ds := s.dataset(sources.Canary)
		kept := ds.Requests[:0]
		for i, r := range ds.Requests {
			// every k-th request lost before it was logged, k ≈ 1/share
			if share > 0 && math.Floor(float64(i+1)*share) > math.Floor(float64(i)*share) {
				continue
			}
			kept = append(kept, r)
		}
		ds.Requests = kept
		return ds
	}
	for _, tc := range []struct {
		name  string
		n     int
		share float64
		want  Verdict
	}{
		{"equal load passes", 40000, 0, Pass},
		{"10% shed fails", 40000, 0.10, Fail},
		{"5% shed on 4000 requests is not ruled out", 4000, 0.05, Inconclusive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := synth{n: tc.n, rate: 20, ttftMed: 0.3, tpotMed: 0.04, replicas: 2, seed: 61}
			c := b
			c.seed = 62
			r, err := Judge(b.dataset(sources.Baseline), shed(c, tc.share), Config{Policy: chat(t), Resamples: 200})
			if err != nil {
				t.Fatal(err)
			}
			m := metric(t, r, "offered_load_ratio")
			if m.Verdict != tc.want {
				t.Errorf("offered_load_ratio %s, want %s: %s", m.Verdict, tc.want, m.Reason)
			}
			if tc.want != Pass && r.Verdict == Pass {
				t.Errorf("a shed canary passed: %q", r.Reasons)
			}
		})
	}
}

// TestCanaryReplicaLoss: a canary that loses a replica the baseline keeps,
// for good or for a crash and restart, fails the canary_replica_loss
// guardrail by default and is reported but not failed for it under
// normalize.canary_replica_loss: excuse, judged from the requests and from
// their streaming aggregate alike, with a reason naming the replica, when
// it stopped and for how long; a loss in the baseline alone, or in both
// arms at once, adds no guardrail.
func TestCanaryReplicaLoss(t *testing.T) {
	find := func(r *Report) (Metric, bool) {
		for _, m := range r.Metrics {
			if m.Name == "canary_replica_loss" {
				return m, true
			}
		}
		return Metric{}, false
	}
	for _, sc := range []struct{ name, what string }{
		{"bs-replica-lost", `stopped serving at 2026-`},
		{"bs-replica-restart", `served nothing from 2026-`},
	} {
		b, c := simArms(t, sc.name, 1)
		for _, tc := range []struct {
			setting string
			want    Verdict
		}{{"", Fail}, {"blame", Fail}, {"excuse", Pass}} {
			p := chat(t)
			p.Normalize.CanaryReplicaLoss = tc.setting
			for _, path := range []struct {
				name string
				b, c *sources.Dataset
			}{{"requests", b, c}, {"aggregate", aggregated(t, b, p), aggregated(t, c, p)}} {
				r, err := Judge(path.b, path.c, Config{Policy: p, Resamples: 200})
				if err != nil {
					t.Fatal(err)
				}
				m, ok := find(r)
				if !ok {
					t.Fatalf("%s %s %q: no canary_replica_loss guardrail; metrics %+v", sc.name, path.name, tc.setting, r.Metrics)
				}
				if m.Verdict != tc.want || !m.Guardrail || !strings.Contains(m.Reason, "canary-1") || !strings.Contains(m.Reason, sc.what) ||
					strings.Contains(m.Reason, "canary-0") {
					t.Errorf("%s %s %q: canary_replica_loss %s (guardrail %v), want %s naming canary-1 (%q): %s", sc.name, path.name, tc.setting, m.Verdict, m.Guardrail, tc.want, sc.what, m.Reason)
				}
				if tc.want == Fail && r.Verdict != Fail {
					t.Errorf("%s %s %q: a canary replica's outage left the verdict %s", sc.name, path.name, tc.setting, r.Verdict)
				}
				t.Logf("%s %s %q: %s", sc.name, path.name, tc.setting, m.Reason)
			}
		}
	}
	for _, name := range []string{"replica-loss", "seed-overload", "aa-quiet-30m"} {
		b, c := simArms(t, name, 1)
		p := chat(t)
		for _, path := range []struct {
			name string
			b, c *sources.Dataset
		}{{"requests", b, c}, {"aggregate", aggregated(t, b, p), aggregated(t, c, p)}} {
			r, err := Judge(path.b, path.c, Config{Policy: p, Resamples: 200})
			if err != nil {
				t.Fatal(err)
			}
			if m, ok := find(r); ok {
				t.Errorf("%s %s: the canary is blamed for a loss it does not have alone: %s", name, path.name, m.Reason)
			}
		}
	}
}

// TestRejectingReplicaIsLost: a canary replica that only rejects after
// mid-run (a crash-looping pod behind a gateway that answers 503 for it)
// serves nothing: both paths call it lost. The request path counted
// every record a replica's name was on as served, the aggregate only
// what it finished, so a rejection at the window's end kept the request
// path from a loss the aggregate failed.
func TestRejectingReplicaIsLost(t *testing.T) {
	b, c := simArms(t, "aa-quiet-30m", 1)
	t0, t1 := c.Requests[0].Time, c.Requests[len(c.Requests)-1].Time
	n := 0
	for i := range c.Requests {
		if r := &c.Requests[i]; r.Replica == "canary-1" && r.Time > t0+(t1-t0)/2 {
			r.Status, r.TTFT, r.TPOT, r.E2E, r.OutputTokens = sources.StatusRejected, math.NaN(), math.NaN(), math.NaN(), -1
			n++
		}
	}
	if n < 100 {
		t.Fatalf("%d records of canary-1 rejected", n)
	}
	exact, agg := judgedBothWays(t, b, c, Config{Policy: chat(t), Resamples: 100})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		m := metric(t, r, "canary_replica_loss")
		if m.Verdict != Fail || !strings.Contains(m.Reason, `replica "canary-1" stopped serving`) {
			t.Errorf("%s: canary_replica_loss %s: %s", path, m.Verdict, m.Reason)
		}
	}
}

// TestRestartAtCoarseBuckets: the fleet model's canary replica out for two
// minutes at 10 minutes, under chat with window.bucket 30s, left three
// empty buckets, no more than the three a silence could last in buckets,
// and the canary PASSED on both paths; the normal silence is 30 s now
// whatever the bucket, and the restart fails canary_replica_loss.
func TestRestartAtCoarseBuckets(t *testing.T) {
	p := chat(t)
	p.Window.Bucket = policies.Duration(30 * time.Second)
	exact, agg := fleetBothWays(t, "replica-restart", 1000*uint64(len("replica-restart"))+3, Config{Policy: p, Resamples: 100, Seed: 1})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		m := metric(t, r, "canary_replica_loss")
		if m.Verdict != Fail || r.Verdict != Fail {
			t.Errorf("%s: canary_replica_loss %s, verdict %s: %s", path, m.Verdict, r.Verdict, m.Reason)
		}
	}
}

// TestReplicaLossEval: the canary_replica_loss decision on outages of given
// kind and length: lost for good or out for ≥ OutageFailSecs fails, a
// shorter outage is inconclusive, an outage the baseline shows at an
// overlapping time is not the canary's, the policy's excuse passes, and a
// hostile replica name is quoted.
func TestReplicaLossEval(t *testing.T) {
	ev := func(kind string, from, to int) normalize.ReplicaEvent {
		return normalize.ReplicaEvent{Replica: "r\x1b[31m\"1", Kind: kind, From: from, To: to, FromSec: 10 * float64(from), ToSec: 10 * float64(to), Others: 3}
	}
	at := func(k int) float64 { return 1.75e9 + 10*float64(k) }
	quote := func(s string) string { return fmt.Sprintf("%q", s) }
	for _, tc := range []struct {
		name     string
		c, b     []normalize.ReplicaEvent
		setting  string
		want     Verdict // "" : no guardrail
		inReason string
	}{
		{"none", nil, nil, "", "", ""},
		{"lost", []normalize.ReplicaEvent{ev(normalize.EventLost, 100, 180)}, nil, "", Fail, "stopped serving at 2025-06-15T"},
		{"restart 120 s", []normalize.ReplicaEvent{ev(normalize.EventGap, 60, 72)}, nil, "", Fail, "for 120s, then served again"},
		{"restart 60 s", []normalize.ReplicaEvent{ev(normalize.EventGap, 60, 66)}, nil, "", Fail, "(+600s) for 60s"},
		{"pause 50 s", []normalize.ReplicaEvent{ev(normalize.EventGap, 60, 65)}, nil, "", Inconclusive, "shorter than 60s"},
		{"pause 50 s and a restart", []normalize.ReplicaEvent{ev(normalize.EventGap, 10, 15), ev(normalize.EventGap, 60, 80)}, nil, "", Fail, "for 200s"},
		{"shared with the baseline", []normalize.ReplicaEvent{ev(normalize.EventGap, 60, 72)}, []normalize.ReplicaEvent{ev(normalize.EventGap, 70, 75)}, "", "", ""},
		{"baseline's at another time", []normalize.ReplicaEvent{ev(normalize.EventGap, 60, 72)}, []normalize.ReplicaEvent{ev(normalize.EventGap, 72, 80)}, "", Fail, "for 120s"},
		{"joined late is no outage", []normalize.ReplicaEvent{ev(normalize.EventJoined, 0, 30)}, nil, "", "", ""},
		{"excused", []normalize.ReplicaEvent{ev(normalize.EventGap, 60, 72)}, nil, "excuse", Pass, "excused by the policy"},
		{"excused short", []normalize.ReplicaEvent{ev(normalize.EventGap, 60, 64)}, nil, "excuse", Pass, "excused by the policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs := unsharedOutages(placeOutages(tc.c, at, quote), placeOutages(tc.b, at, quote))
			e, ok := replicaLossEval(outs, sources.ClockEpoch, tc.setting, 4, 4)
			if tc.want == "" {
				if ok {
					t.Fatalf("guardrail %s: %s", e.m.Verdict, e.m.Reason)
				}
				return
			}
			if !ok {
				t.Fatal("no guardrail")
			}
			if e.m.Verdict != tc.want || !strings.Contains(e.m.Reason, tc.inReason) || e.m.Canary != 1 {
				t.Errorf("%s (canary %v): %s; want %s with %q", e.m.Verdict, e.m.Canary, e.m.Reason, tc.want, tc.inReason)
			}
			if strings.Contains(e.m.Reason, "\x1b") || !strings.Contains(e.m.Reason, `"r\x1b[31m\"1"`) {
				t.Errorf("replica name not quoted: %s", e.m.Reason)
			}
		})
	}
}

// TestMixStepQuotesGates: the mix step lists each standardized gate's
// comparison with the interval its row reports, on both paths. With every
// request good in both arms the paired interval is [0, 0] and the gate
// reports the Newcombe floor instead; the request path's step once quoted
// the [0, 0] beside a row that said otherwise.
func TestMixStepQuotesGates(t *testing.T) {
	b := synth{n: 12000, rate: 20, ttftMed: 0.05, tpotMed: 0.01, longShare: 0.2, replicas: 2, seed: 41}
	c := b
	c.seed, c.longShare = 42, 0.25
	exact, agg := judgedBothWays(t, b.dataset(sources.Baseline), c.dataset(sources.Canary), Config{Policy: chat(t), Resamples: 400, Seed: 1})
	for _, r := range []struct {
		path string
		rep  *Report
	}{{"requests", exact}, {"aggregate", agg}} {
		m := metric(t, r.rep, "slo_attainment")
		if !(float64(m.Interval[0]) < 0 && float64(m.Interval[1]) > 0) {
			t.Fatalf("%s: slo_attainment interval %v: want the floor around 0 (every request good)", r.path, m.Interval)
		}
		if !standardizedGate(m) {
			t.Fatalf("%s: slo_attainment not standardized: %q", r.path, m.Adjusted)
		}
		want := naiveText(m)
		if s := step(r.rep, "mix"); !strings.Contains(s.Detail, want) {
			t.Errorf("%s: the mix step does not quote the gate's %q:\n%s", r.path, want, s.Detail)
		}
		if s := step(r.rep, "mix"); strings.Contains(s.Detail, "slo_attainment naive +0.00 pp [+0.00, +0.00]") {
			t.Errorf("%s: the mix step quotes a [0, 0] interval the gate does not report:\n%s", r.path, s.Detail)
		}
	}
}

// TestClassChecksSayNotFailed: a per-class tail check that does not fail
// passes (it never holds up the comparison), and one whose interval
// reaches past its margin is marked NotFailed and says so, on both paths;
// the overall pass reason counts such checks apart from the gates.
func TestClassChecksSayNotFailed(t *testing.T) {
	b, c := simArms(t, "regress-latency-10", 2)
	exact, agg := judgedBothWays(t, b, c, Config{Policy: chat(t), Resamples: 400, Seed: 1})
	for _, r := range []struct {
		path string
		rep  *Report
	}{{"requests", exact}, {"aggregate", agg}} {
		kinds := map[bool]int{}
		for _, m := range r.rep.Metrics {
			if m.Class == "" {
				continue
			}
			if m.Verdict != Pass {
				t.Fatalf("%s: %s is %s; this run's class checks do not fail", r.path, m.Name, m.Verdict)
			}
			reaches := float64(m.Interval[1]) >= float64(m.Margin)
			if m.NotFailed != reaches {
				t.Errorf("%s: %s interval %v against the %g margin: NotFailed %v", r.path, m.Name, m.Interval, float64(m.Margin), m.NotFailed)
			}
			if says := strings.Contains(m.Reason, "not failed, not passed either"); says != m.NotFailed {
				t.Errorf("%s: %s NotFailed %v but the reason reads %q", r.path, m.Name, m.NotFailed, m.Reason)
			}
			if want := map[bool]string{true: "not failed", false: "pass"}[m.NotFailed]; m.VerdictLabel() != want {
				t.Errorf("%s: %s shown as %q, want %q", r.path, m.Name, m.VerdictLabel(), want)
			}
			kinds[m.NotFailed]++
		}
		if kinds[true] == 0 || kinds[false] == 0 {
			t.Errorf("%s: want class checks of both kinds in this run, got %v", r.path, kinds)
		}
	}
	ms := []Metric{{Name: "slo_attainment", Verdict: Pass}, {Name: "ttft_p99", Verdict: Pass}, {Name: "ttft_p99:long", Verdict: Pass, NotFailed: true}}
	if v, rs := Overall(ms); v != Pass || len(rs) != 1 || !strings.HasPrefix(rs[0], "2 gates pass; 1 fail-only check did not fail") {
		t.Errorf("Overall: %s %q", v, rs)
	}
	if v, rs := Overall(ms[:2]); v != Pass || rs[0] != "all 2 gates pass" {
		t.Errorf("Overall without a not-failed check: %s %q", v, rs)
	}
}
