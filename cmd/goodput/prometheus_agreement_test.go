package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
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
	Normalization struct {
		Steps []struct {
			Name   string `json:"name"`
			Detail string `json:"detail"`
		} `json:"steps"`
	} `json:"normalization"`
	Warnings []string `json:"warnings"`
}

// step returns the detail of the normalization step named name ("" when
// the report has none).
func (r agreeReport) step(name string) string {
	for _, s := range r.Normalization.Steps {
		if s.Name == name {
			return s.Detail
		}
	}
	return ""
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
// logsAndMetrics simulates scenario (seed 7), judges its request logs and
// its metrics backfilled into a real Prometheus (the first minutes of the
// run, 30 s steps) under policy pol, and decodes both JSON reports as R.
func logsAndMetrics[R any](t *testing.T, scenario, pol string, minutes int) (logs, prom R) {
	t.Helper()
	dir := t.TempDir()
	if code, _, errs := runCLI(t, nil, "simulate", "--scenario", scenario, "--seed", "7", "--out", dir); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errs)
	}
	judge := func(args ...string) R {
		t.Helper()
		code, out, errs := runCLI(t, nil, append([]string{"judge", "--format", "json", "--policy", pol}, args...)...)
		if code == ExitError || code == ExitUsage {
			t.Fatalf("judge %v: exit %d: %s", args, code, errs)
		}
		var r R
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	logs = judge("--baseline", filepath.Join(dir, "baseline.jsonl"), "--canary", filepath.Join(dir, "canary.jsonl"))
	url := promtest.Start(t, filepath.Join(dir, "metrics.om"))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prom = judge("--prometheus", url, "--baseline-selector", `deployment="baseline"`, "--canary-selector", `deployment="canary"`,
		"--step", "30s", "--start", start.Format(time.RFC3339), "--end", start.Add(time.Duration(minutes)*time.Minute).Format(time.RFC3339))
	return logs, prom
}

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
		{"canary error burst (2 min at 50%)", filepath.Join("testdata", "promagree", "error-burst.yaml"), 20, "fail", ""},
		{"canary error burst in the first minutes (2 min at 50% from minute 2)", filepath.Join("testdata", "promagree", "error-burst-early.yaml"), 20, "fail", ""},
		{"baseline error burst (2 min at 50%)", filepath.Join("testdata", "promagree", "baseline-error-burst.yaml"), 20, "pass", ""},
		// from metrics vLLM's classic TTFT buckets place both arms' p90
		// there in (0.1, 0.25] s: the shares above 0.25 s are compared
		{"shared error burst (both arms, 2 min at 50%)", filepath.Join("testdata", "promagree", "shared-error-burst.yaml"), 20, "pass", ""},
		{"cold canary", "cold-start", 20, "pass", ""},
		{"lost baseline replica", "replica-loss", 15, "pass", ""},
		{"mix shift, classes unlabelled in metrics", "mix-shift", 15, "pass", "inconclusive"},
	}
	var table strings.Builder
	table.WriteString("\n| scenario | request-log verdict | metrics verdict | attainment b/c (logs) | attainment b/c (metrics) | deciding gate (logs) | deciding gate (metrics) |\n|---|---|---|---|---|---|---|\n")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logs, prom := logsAndMetrics[agreeReport](t, tc.scenario, pol, tc.minutes)
			want := tc.want
			if tc.metricsWant != "" {
				want = tc.metricsWant
			}
			if logs.Verdict != tc.want || prom.Verdict != want {
				t.Errorf("verdicts: request logs %s (want %s), metrics %s (want %s)\nlogs: %q\nmetrics: %q",
					logs.Verdict, tc.want, prom.Verdict, want, logs.Reasons, prom.Reasons)
			}
			if strings.HasPrefix(tc.name, "baseline error burst") {
				// both sources leave the baseline's outage out of both arms
				for _, r := range []struct {
					src string
					r   agreeReport
				}{{"request logs", logs}, {"metrics", prom}} {
					if !strings.Contains(r.r.step("baseline_outage"), "left out") {
						t.Errorf("%s: no baseline_outage step: %+v", r.src, r.r.Normalization.Steps)
					}
				}
			} else if logs.step("baseline_outage")+prom.step("baseline_outage") != "" {
				t.Errorf("a baseline outage left out of a run without one: logs %q, metrics %q", logs.step("baseline_outage"), prom.step("baseline_outage"))
			}
			if strings.HasPrefix(tc.name, "mix shift") && !strings.Contains(strings.Join(prom.Reasons, " "), "different traffic") {
				t.Errorf("metrics verdict does not name the mix difference: %q", prom.Reasons)
			}
			if strings.HasPrefix(tc.name, "shared error burst") {
				// both sources leave the shared stretch out of both arms,
				// the metrics on the shares above a bucket edge
				if !strings.Contains(logs.step("shared_outage"), "left out") {
					t.Errorf("request logs: no shared_outage step: %+v", logs.Normalization.Steps)
				}
				if st := prom.step("shared_outage"); !strings.Contains(st, "left out") || !strings.Contains(st, "known only within their histogram bins") {
					t.Errorf("metrics: no shared_outage step read on the shares above an edge: %q %q", st, prom.Warnings)
				}
			} else if logs.step("shared_outage")+prom.step("shared_outage") != "" {
				t.Errorf("a shared outage left out of a run without one: logs %q, metrics %q", logs.step("shared_outage"), prom.step("shared_outage"))
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

// mergeModelOM writes one OpenMetrics file holding every family of the given
// files, each family's samples contiguous. Families whose samples carry
// no model_name label (the GPU's, which do not differ by model) are taken
// from the first file only.
func mergeModelOM(t *testing.T, dst string, srcs ...string) {
	t.Helper()
	type family struct {
		head    []string
		samples [][]string // per source
	}
	var order []string
	fams := map[string]*family{}
	for i, src := range srcs {
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var cur *family
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "# EOF":
			case strings.HasPrefix(line, "# HELP "):
				name := strings.Fields(line)[2]
				cur = fams[name]
				if cur == nil {
					cur = &family{samples: make([][]string, len(srcs))}
					fams[name] = cur
					order = append(order, name)
				}
				if i == 0 {
					cur.head = append(cur.head, line)
				}
			case strings.HasPrefix(line, "#"):
				if i == 0 {
					cur.head = append(cur.head, line)
				}
			default:
				if i > 0 && !strings.Contains(line, "model_name=") {
					continue
				}
				cur.samples[i] = append(cur.samples[i], line)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	for _, name := range order {
		for _, l := range fams[name].head {
			out.WriteString(l + "\n")
		}
		for _, ls := range fams[name].samples {
			for _, l := range ls {
				out.WriteString(l + "\n")
			}
		}
	}
	out.WriteString("# EOF\n")
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPrometheusAgreesOnALabelledMixShift: the mix-shift run again, with
// each class served as its own model (model_name "chat" and "long"), so
// the metrics carry the class. Judged with --class-label model_name the
// metrics path reweights the canary to the baseline's class mix, as the
// request path does with the logs' class field, and both pass.
func TestPrometheusAgreesOnALabelledMixShift(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus")
	}
	dir := t.TempDir()
	var oms []string
	var args []string
	for _, c := range []string{"chat", "long"} {
		out := filepath.Join(dir, c)
		if code, _, errs := runCLI(t, nil, "simulate", "--scenario", filepath.Join("testdata", "promagree", "mix-"+c+".yaml"), "--seed", "7", "--out", out); code != 0 {
			t.Fatalf("simulate %s: exit %d: %s", c, code, errs)
		}
		oms = append(oms, filepath.Join(out, "metrics.om"))
		args = append(args, "--baseline", filepath.Join(out, "baseline.jsonl"), "--canary", filepath.Join(out, "canary.jsonl"))
	}
	om := filepath.Join(dir, "metrics.om")
	mergeModelOM(t, om, oms...)
	pol := filepath.Join("testdata", "promagree", "chat-edges.yaml")
	judge := func(args ...string) (agreeReport, string) {
		t.Helper()
		code, out, errs := runCLI(t, nil, append([]string{"judge", "--format", "json", "--policy", pol}, args...)...)
		if code == ExitError || code == ExitUsage {
			t.Fatalf("judge %v: exit %d: %s", args, code, errs)
		}
		var r agreeReport
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r, out
	}
	logs, logsRaw := judge(args...)
	url := promtest.Start(t, om)
	prom, raw := judge("--prometheus", url, "--baseline-selector", `deployment="baseline"`, "--canary-selector", `deployment="canary"`,
		"--class-label", "model_name", "--step", "30s", "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:15:00Z")
	if logs.Verdict != "pass" || prom.Verdict != "pass" {
		t.Errorf("verdicts: request logs %s, metrics %s; want pass for both\nlogs: %q\nmetrics: %q", logs.Verdict, prom.Verdict, logs.Reasons, prom.Reasons)
	}
	if !strings.Contains(raw, "canary reweighted per class to the baseline's mix") {
		t.Errorf("no class reweighting in the metrics report")
	}
	// the class table comes from the metrics too: per label, shares as
	// in the request logs, and attainment bounds holding the logs' figure
	type classes struct {
		Classes []struct {
			Class, Label string
			Baseline     map[string]any
			Canary       map[string]any
		}
	}
	var lc, pc classes
	if err := json.Unmarshal([]byte(logsRaw), &lc); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(raw), &pc); err != nil {
		t.Fatal(err)
	}
	name := func(class, label string) string {
		if label != "" {
			return label
		}
		return class
	}
	byLabel := map[string]map[string]any{}
	for _, c := range lc.Classes {
		byLabel[name(c.Class, c.Label)+"/b"], byLabel[name(c.Class, c.Label)+"/c"] = c.Baseline, c.Canary
	}
	if len(pc.Classes) != 2 {
		t.Fatalf("metrics class rows: %+v", pc.Classes)
	}
	for _, c := range pc.Classes {
		for arm, m := range map[string]map[string]any{"b": c.Baseline, "c": c.Canary} {
			c.Label = name(c.Class, c.Label)
			l := byLabel[c.Label+"/"+arm]
			if l == nil {
				t.Errorf("class %q: no request-log row", c.Label)
				continue
			}
			share, lshare := m["share"].(float64), l["share"].(float64)
			bnd, _ := m["slo_attainment_bounds"].([]any)
			if math.Abs(share-lshare) > 0.01 || len(bnd) != 2 {
				t.Errorf("class %s arm %s: metrics share %v bounds %v; logs share %v", c.Label, arm, share, bnd, lshare)
				continue
			}
			// the runs' windows differ by the scrape grid, so the logs'
			// figures are checked against the metrics' bounds with a
			// small slack: attainment 0.5 pp, the p99 within its bucket
			la, lo, hi := l["slo_attainment"].(float64), bnd[0].(float64), bnd[1].(float64)
			if la < lo-0.005 || la > hi+0.005 {
				t.Errorf("class %s arm %s: logs attainment %.4f outside the metrics bounds [%.4f, %.4f]", c.Label, arm, la, lo, hi)
			}
			if pb, _ := m["ttft_p99_bounds"].([]any); len(pb) != 2 || l["ttft_p99"].(float64) < pb[0].(float64) || l["ttft_p99"].(float64) > pb[1].(float64) {
				t.Errorf("class %s arm %s: logs TTFT p99 %v outside the metrics p99 bucket %v", c.Label, arm, l["ttft_p99"], m["ttft_p99_bounds"])
			}
			t.Logf("class %s arm %s: share logs %.4f metrics %.4f; attainment logs %.4f metrics [%.4f, %.4f]; TTFT p99 logs %.3f metrics %.3f %v",
				c.Label, arm, lshare, share, l["slo_attainment"], bnd[0], bnd[1], l["ttft_p99"], m["ttft_p99"], m["ttft_p99_bounds"])
		}
	}
	t.Logf("| mix shift, classes labelled (model_name) | %s | %s | %.2f%% / %.2f%% | %.2f%% / %.2f%% | %s | %s |",
		strings.ToUpper(logs.Verdict), strings.ToUpper(prom.Verdict),
		100*logs.Arms["baseline"].SLOAttainment, 100*logs.Arms["canary"].SLOAttainment,
		100*prom.Arms["baseline"].SLOAttainment, 100*prom.Arms["canary"].SLOAttainment, logs.decisive(), prom.decisive())
}

// TestPrometheusReplicaSpread: identical arms whose replicas run at their
// own speeds (aa-replica-spread-30m, seed 7), judged from a real
// Prometheus, have attainment widened for their replicas as the request
// logs of the same run have it: from each replica's own histograms, which
// the source now reads (before, metrics gave no per-replica counts and
// such arms failed 15% of runs from metrics).
func TestPrometheusReplicaSpread(t *testing.T) {
	type gate struct {
		Name     string   `json:"name"`
		Method   string   `json:"method"`
		Adjusted []string `json:"adjusted"`
	}
	type report struct {
		Metrics []gate `json:"metrics"`
	}
	logs, prom := logsAndMetrics[report](t, "aa-replica-spread-30m", "chat", 30)
	for _, r := range []struct {
		from string
		rep  report
	}{{"request logs", logs}, {"Prometheus", prom}} {
		var att *gate
		for i := range r.rep.Metrics {
			if r.rep.Metrics[i].Name == "slo_attainment" {
				att = &r.rep.Metrics[i]
			}
		}
		if att == nil {
			t.Fatalf("%s: no slo_attainment gate", r.from)
		}
		if !strings.Contains(att.Method, "+replica-spread") || !strings.Contains(strings.Join(att.Adjusted, "; "), "for replicas that differ all run: ") {
			t.Errorf("%s: attainment not widened for the replicas: %s %q", r.from, att.Method, att.Adjusted)
		}
	}
}
