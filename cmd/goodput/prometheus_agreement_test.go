package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
)

// agreeReport is the part of the JSON report the agreement test reads.
type agreeReport struct {
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons"`
	Arms    map[string]struct {
		SLOAttainment float64 `json:"slo_attainment"`
	} `json:"arms"`
	Metrics []struct {
		Name     string     `json:"name"`
		Verdict  string     `json:"verdict"`
		Delta    float64    `json:"delta"`
		Interval [2]float64 `json:"interval"`
	} `json:"metrics"`
}

// decisive names the first gate that decided the verdict (or the first
// gate when all pass) with its delta and interval.
func (r agreeReport) decisive() string {
	for _, want := range []string{strings.ToUpper(r.Verdict), "FAIL", "INCONCLUSIVE", "PASS"} {
		for _, m := range r.Metrics {
			if strings.EqualFold(m.Verdict, want) {
				return fmt.Sprintf("%s %s %+.3g [%+.3g, %+.3g]", m.Name, m.Verdict, m.Delta, m.Interval[0], m.Interval[1])
			}
		}
	}
	return "-"
}

// TestPrometheusAgreesWithRequestLogsAcrossScenarios judges each simulated
// run twice with the same policy (chat's gates with its SLO thresholds on
// vLLM's bucket edges: TTFT 1 s, TPOT 100 ms): from the per-request logs
// and from the simulator's vLLM metrics backfilled into a real Prometheus
// (30 s steps over 15 s scrapes). The verdicts must agree — the metrics
// path cuts the cold canary's warm-up from its histogram series, compares
// per replica-second past a lost baseline replica and judges the p99 TTFT
// gate as an exceedance share at a bucket edge — except for the mix shift:
// the simulator's metrics carry no class label, so the metrics path cannot
// reweight the arms to one mix and must say so with an inconclusive
// verdict, never a pass or a fail. The table is logged (go test -v).
func TestPrometheusAgreesWithRequestLogsAcrossScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("starts one Prometheus per scenario")
	}
	pol := filepath.Join("testdata", "promagree", "chat-edges.yaml")
	cases := []struct {
		name, scenario string
		minutes        int
		want           string // request-log verdict; the metrics verdict must match
		metricsWant    string // when the metrics verdict must differ
	}{
		{"A/A", "steady", 15, "pass", ""},
		{"p99 TTFT +50%", filepath.Join("testdata", "promagree", "ttft-50.yaml"), 15, "fail", ""},
		{"10% regression", "regress-10", 15, "fail", ""},
		{"errors up (2%)", filepath.Join("testdata", "promagree", "errors-up.yaml"), 15, "fail", ""},
		{"cold canary", "cold-start", 20, "pass", ""},
		{"lost baseline replica", "replica-loss", 15, "pass", ""},
		{"mix shift, classes unlabelled in metrics", "mix-shift", 15, "pass", "inconclusive"},
	}
	var table strings.Builder
	table.WriteString("\n| scenario | request-log verdict | metrics verdict | attainment b/c (logs) | attainment b/c (metrics) | deciding gate (logs) | deciding gate (metrics) |\n|---|---|---|---|---|---|---|\n")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if code, _, errs := runCLI(t, nil, "simulate", "--scenario", tc.scenario, "--seed", "7", "--out", dir); code != 0 {
				t.Fatalf("simulate: exit %d: %s", code, errs)
			}
			judge := func(args ...string) agreeReport {
				t.Helper()
				code, out, errs := runCLI(t, nil, append([]string{"judge", "--format", "json", "--policy", pol}, args...)...)
				if code == ExitError || code == ExitUsage {
					t.Fatalf("judge %v: exit %d: %s", args, code, errs)
				}
				var r agreeReport
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatal(err)
				}
				return r
			}
			logs := judge("--baseline", filepath.Join(dir, "baseline.jsonl"), "--canary", filepath.Join(dir, "canary.jsonl"))
			url := promtest.Start(t, filepath.Join(dir, "metrics.om"))
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			prom := judge("--prometheus", url, "--baseline-selector", `deployment="baseline"`, "--canary-selector", `deployment="canary"`,
				"--step", "30s", "--start", start.Format(time.RFC3339), "--end", start.Add(time.Duration(tc.minutes)*time.Minute).Format(time.RFC3339))
			want := tc.want
			if tc.metricsWant != "" {
				want = tc.metricsWant
			}
			if logs.Verdict != tc.want || prom.Verdict != want {
				t.Errorf("verdicts: request logs %s (want %s), metrics %s (want %s)\nlogs: %q\nmetrics: %q",
					logs.Verdict, tc.want, prom.Verdict, want, logs.Reasons, prom.Reasons)
			}
			if tc.metricsWant != "" && !strings.Contains(strings.Join(prom.Reasons, " "), "different traffic") {
				t.Errorf("metrics verdict does not name the mix difference: %q", prom.Reasons)
			}
			fmt.Fprintf(&table, "| %s | %s | %s | %.2f%% / %.2f%% | %.2f%% / %.2f%% | %s | %s |\n", tc.name,
				strings.ToUpper(logs.Verdict), strings.ToUpper(prom.Verdict),
				100*logs.Arms["baseline"].SLOAttainment, 100*logs.Arms["canary"].SLOAttainment,
				100*prom.Arms["baseline"].SLOAttainment, 100*prom.Arms["canary"].SLOAttainment,
				logs.decisive(), prom.decisive())
		})
	}
	t.Log(table.String())
}
