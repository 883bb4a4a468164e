package analysis

import (
	"context"
	"strings"
	"testing"

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
	if s := step(r, "cache"); !s.Applied || !strings.Contains(s.Detail, "hit rate baseline") {
		t.Errorf("cache step: %+v", s)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "mediator") {
		t.Error("the mediator caveat is not shown")
	}
}

// TestReplicaRestartWarmup: a canary replica fails at 5 min and comes back
// cold a minute later; its own slow restart is cut from the window (by the
// arm-level rule, from its re-entry) and reported.
func TestReplicaRestartWarmup(t *testing.T) {
	sc, err := sim.ParseScenario("restart", []byte(`name: restart
description: a canary replica fails at 5m and restarts cold 1m later
duration: 15m
traffic:
  rate: 60
fleet:
  replicas: 4
  warmup: {duration: 2m, slowdown: 3}
failures:
  - {arm: canary, replica: 1, at: 5m, restart_after: 1m}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := &sources.Dataset{Arm: sources.Baseline, Requests: res.Baseline, Clock: sources.ClockEpoch}
	c := &sources.Dataset{Arm: sources.Canary, Requests: res.Canary, Clock: sources.ClockEpoch}
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
	if r.Verdict == Fail {
		t.Errorf("a replica restart failed the canary: %q", r.Reasons)
	}
}
