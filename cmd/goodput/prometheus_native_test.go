package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
)

// TestJudgeNativeHistograms judges, with the default chat policy, arms a
// real Prometheus scraped as native histograms (schema 3, client_golang's
// bucket factor 1.1) from a simulated vLLM fleet: an A/A pair passes, a
// canary with 50% slower first tokens fails, and a native arm against a
// classic one is judged (a verdict, not exit 4), each arm bounded by its
// own edges, with the mix of forms in the report's warnings.
func TestJudgeNativeHistograms(t *testing.T) {
	start := time.Now().Add(-40 * time.Minute).Truncate(time.Minute)
	f := promtest.ServeFleet(t, start, 10*time.Second, 90,
		promtest.FleetArm{Deployment: "base", Seed: 1},
		promtest.FleetArm{Deployment: "same", Seed: 2},
		promtest.FleetArm{Deployment: "slow", Seed: 3, TTFTScale: 1.5},
		promtest.FleetArm{Deployment: "classic", Seed: 4, Form: promtest.FormClassic})
	f.Wait(t, 50*time.Second)
	type rep struct {
		Verdict string `json:"verdict"`
		Metrics []struct {
			Name, Verdict, Reason, Method string
		} `json:"metrics"`
		Arms map[string]struct {
			SLOAttainment float64 `json:"slo_attainment"`
		} `json:"arms"`
		Warnings []string `json:"warnings"`
	}
	judge := func(base, canary string) (int, rep) {
		t.Helper()
		code, out, errs := runCLI(t, nil, "judge", "--format", "json", "--prometheus", f.URL,
			"--baseline-selector", `deployment="`+base+`"`, "--canary-selector", `deployment="`+canary+`"`,
			"--start", f.Start.UTC().Format(time.RFC3339), "--end", f.End.UTC().Format(time.RFC3339), "--step", "30s")
		if code == ExitError || code == ExitUsage {
			t.Fatalf("judge %s vs %s: exit %d: %s", base, canary, code, errs)
		}
		var r rep
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, m := range r.Metrics {
			t.Logf("%s vs %s: %s %s: %s", base, canary, m.Name, m.Verdict, m.Reason)
		}
		return code, r
	}
	warned := func(r rep, want string) bool {
		for _, w := range r.Warnings {
			if strings.Contains(w, want) {
				return true
			}
		}
		return false
	}

	code, aa := judge("base", "same")
	if code != ExitPass || aa.Verdict != "pass" {
		t.Errorf("A/A from native histograms: exit %d, verdict %s; want pass", code, aa.Verdict)
	}
	for _, w := range aa.Warnings {
		t.Logf("A/A warning: %s", w)
	}
	if !warned(aa, "baseline: vllm:time_to_first_token_seconds: read from native histograms (exponential buckets, schema 3") {
		t.Errorf("A/A: no warning naming the native form: %q", aa.Warnings)
	}

	code, slow := judge("base", "slow")
	if code != ExitFail || slow.Verdict != "fail" {
		t.Errorf("50%% TTFT regression from native histograms: exit %d, verdict %s; want fail", code, slow.Verdict)
	}

	code, mixed := judge("base", "classic")
	if !warned(mixed, "ttft histograms differ in form between the arms (baseline native, canary classic)") {
		t.Errorf("native against classic: no warning of the mixed forms: %q", mixed.Warnings)
	}
	if code == ExitFail {
		t.Errorf("native against classic, same distribution: fail")
	}
	b, c := mixed.Arms["baseline"].SLOAttainment, mixed.Arms["canary"].SLOAttainment
	if !(b > 0.98 && c > 0.98) {
		t.Errorf("native against classic: attainment %v and %v; both arms serve the same distribution at ≈ 99.6%%", b, c)
	}
	t.Logf("native against classic: exit %d, verdict %s, attainment %.4f vs %.4f", code, mixed.Verdict, b, c)
}
