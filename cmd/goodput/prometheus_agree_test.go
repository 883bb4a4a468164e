package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
)

// agreePolicy puts both SLO thresholds on bucket edges of vLLM's
// histograms (TTFT 1 s, TPOT 25 ms), so that attainment read from metrics
// is exact up to requests that straddle the window's ends.
const agreePolicy = `name: edges
slo: {ttft: 1s, tpot: 25ms}
window: {warmup: none, bucket: 10s}
normalize: {mix: none, load: matched}
gates:
  - {metric: slo_attainment, margin: 1pp}
  - {metric: goodput_per_replica, margin: 2%}
  - {metric: error_rate, margin: 0.5pp, guardrail: true}
`

// slowDecode is the steady scenario with a canary whose decode is 40%
// slower: TPOT moves across the 25 ms edge.
const slowDecode = `name: slow-decode
description: canary decode 40% slower
duration: 12m
traffic:
  rate: 60
fleet:
  replicas: 4
canary:
  decode_speed: 0.6
`

// TestPrometheusAgreesWithRequestLogs judges the same simulated runs twice:
// from the per-request logs and from the simulator's metrics backfilled
// into a real Prometheus. The verdicts must agree, and the attainment the
// metrics path reports (the conservative end of its histogram bounds) must
// be within 1 pp of the per-request figure: with thresholds on bucket edges
// the bounds are exact but for requests that started before the window or
// finished after it.
func TestPrometheusAgreesWithRequestLogs(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		want     string
	}{
		{"steady", "pass"},
		{"slow-decode", "fail"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			dir := t.TempDir()
			pol := writeFile(t, dir, "policy.yaml", agreePolicy)
			scenario := tc.scenario
			if scenario == "slow-decode" {
				scenario = writeFile(t, dir, "slow.yaml", slowDecode)
			}
			if code, _, errs := runCLI(t, nil, "simulate", "--scenario", scenario, "--seed", "5", "--duration", "12m", "--out", dir); code != 0 {
				t.Fatalf("simulate: exit %d: %s", code, errs)
			}
			url := promtest.Start(t, filepath.Join(dir, "metrics.om"))
			type rep struct {
				Verdict string `json:"verdict"`
				Arms    map[string]struct {
					Accounting    struct{ Offered, Good int64 }
					SLOAttainment float64 `json:"slo_attainment"`
				} `json:"arms"`
				Normalization struct {
					Steps []struct{ Name, Detail string }
				} `json:"normalization"`
			}
			judgeJSON := func(args ...string) rep {
				t.Helper()
				code, out, errs := runCLI(t, nil, append([]string{"judge", "--format", "json", "--policy", pol}, args...)...)
				if code == ExitError || code == ExitUsage {
					t.Fatalf("judge %v: exit %d: %s", args, code, errs)
				}
				var r rep
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatal(err)
				}
				return r
			}
			files := judgeJSON("--baseline", filepath.Join(dir, "baseline.jsonl"), "--canary", filepath.Join(dir, "canary.jsonl"))
			prom := judgeJSON("--prometheus", url, "--baseline-selector", `deployment="baseline"`, "--canary-selector", `deployment="canary"`,
				"--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:12:00Z")
			if files.Verdict != tc.want || prom.Verdict != tc.want {
				t.Errorf("verdicts: request logs %s, Prometheus %s; want %s for both", files.Verdict, prom.Verdict, tc.want)
			}
			for _, arm := range []string{"baseline", "canary"} {
				f, p := files.Arms[arm], prom.Arms[arm]
				if d := p.SLOAttainment - f.SLOAttainment; d > 0.01 || d < -0.01 {
					t.Errorf("%s: metrics attainment %.4f, per-request %.4f: differ by more than 1 pp", arm, p.SLOAttainment, f.SLOAttainment)
				}
				t.Logf("%s: attainment per request %.4f, from metrics %.4f", arm, f.SLOAttainment, p.SLOAttainment)
			}
		})
	}
}

// TestSimulatedScenarioVerdicts: the simulator's steady A/A run passes the
// default policy and its tail regression fails it (exit codes 0 and 1).
func TestSimulatedScenarioVerdicts(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		code     int
	}{
		{"steady", ExitPass},
		{"tail-regression", ExitFail},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			dir := t.TempDir()
			if code, _, errs := runCLI(t, nil, "simulate", "--scenario", tc.scenario, "--seed", "11", "--out", dir); code != 0 {
				t.Fatalf("simulate: exit %d: %s", code, errs)
			}
			code, out, errs := runCLI(t, nil, "judge", "--baseline", filepath.Join(dir, "baseline.jsonl"), "--canary", filepath.Join(dir, "canary.jsonl"),
				"--cost", filepath.Join(dir, "cost.csv"))
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
		})
	}
}
