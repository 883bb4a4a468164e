package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPersistenceCommand measures an A/A history from the simulator whose
// per-arm slowdowns last 8.3 minutes (AR(1) φ 0.98 per 10 s bucket) and one
// whose slowdowns fade within a minute: the first is read as persistent,
// its interval holding the truth, and a declaration printed; the second
// declares nothing. The JSON is byte-identical run to run.
func TestPersistenceCommand(t *testing.T) {
	dir := t.TempDir()
	sim := func(scenario, dur, seed, out string) {
		t.Helper()
		if code, _, errs := runCLI(t, nil, "simulate", "--scenario", scenario, "--duration", dur, "--seed", seed, "--out", out); code != 0 {
			t.Fatalf("simulate %s: exit %d: %s", scenario, code, errs)
		}
	}
	slow, quiet := filepath.Join(dir, "slow"), filepath.Join(dir, "quiet")
	sim(filepath.Join("testdata", "aa-persistent-history.yaml"), "5h", "2", slow)
	sim("aa-quiet-30m", "4h", "5", quiet)

	code, out, errs := runCLI(t, nil, "persistence", "--baseline", filepath.Join(slow, "baseline.jsonl"), "--canary", filepath.Join(slow, "canary.jsonl"), "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc persistenceDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	const truth = 10 / 0.0202027 // −10 s / ln 0.98
	if doc.Source != "arms" || doc.Windows != 10 || doc.SchemaVersion != 1 {
		t.Errorf("read %+v", doc)
	}
	up, errUp := time.ParseDuration(doc.DeclareUpper)
	if errUp != nil || up.Seconds() < doc.TauSeconds || up.Seconds() < doc.TauInterval[1] {
		t.Errorf("declare_upper %q against τ %.0f [%.0f, %.0f] s", doc.DeclareUpper, doc.TauSeconds, doc.TauInterval[0], doc.TauInterval[1])
	}
	if !(doc.KappaInterval[0] > 1) || doc.Declare == "" || !(doc.TauInterval[0] <= truth && truth <= doc.TauInterval[1]) {
		t.Errorf("slowdowns of %.0f s read as τ %.0f s [%.0f, %.0f], κ %.2f %v, declare %q", truth, doc.TauSeconds, doc.TauInterval[0], doc.TauInterval[1], doc.Kappa, doc.KappaInterval, doc.Declare)
	}
	_, again, _ := runCLI(t, nil, "persistence", "--baseline", filepath.Join(slow, "baseline.jsonl"), "--canary", filepath.Join(slow, "canary.jsonl"), "--format", "json")
	if again != out {
		t.Error("two runs on the same history differ")
	}
	// the declaration is a policy line the judge takes
	code, text, errs := runCLI(t, nil, "persistence", "--baseline", filepath.Join(slow, "baseline.jsonl"), "--canary", filepath.Join(slow, "canary.jsonl"))
	if code != 0 || !strings.Contains(text, "declare: window: {persistence: "+doc.Declare+"}") {
		t.Fatalf("exit %d: %s%s", code, text, errs)
	}
	pol := filepath.Join(dir, "chat-persistent.yaml")
	body := "name: chat-persistent\nslo: {ttft: 1s, tpot: 80ms}\nwindow: {warmup: auto, bucket: 10s, persistence: " + doc.Declare + "}\nnormalize: {mix: baseline, cache: auto, load: matched}\ngates:\n  - {metric: slo_attainment, margin: 1pp}\n  - {metric: ttft_p99, margin: 10%}\n"
	if err := os.WriteFile(pol, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	sim(filepath.Join("testdata", "aa-persistent-history.yaml"), "30m", "9", run)
	_, js, errs := runCLI(t, nil, "judge", "--baseline", filepath.Join(run, "baseline.jsonl"), "--canary", filepath.Join(run, "canary.jsonl"), "--policy", pol, "--format", "json")
	if !strings.Contains(js, "widened for declared persistence") || !strings.Contains(js, "+persistence") {
		t.Errorf("the judge under the declared persistence does not say it widened: %s", errs)
	}

	// slowdowns that fade within a minute: nothing to declare
	code, text, errs = runCLI(t, nil, "persistence", "--baseline", filepath.Join(quiet, "baseline.jsonl"), "--canary", filepath.Join(quiet, "canary.jsonl"))
	if code != 0 || !strings.Contains(text, "declare: nothing") {
		t.Errorf("quiet history: exit %d: %s%s", code, text, errs)
	}
	// one arm alone: its replicas split in two
	code, text, _ = runCLI(t, nil, "persistence", "--baseline", filepath.Join(quiet, "baseline.jsonl"))
	if code != 0 || !strings.Contains(text, "4 replicas split in two halves") {
		t.Errorf("one arm: exit %d: %s", code, text)
	}
}

// TestPersistenceCommandRefuses: too short a history, the same records in
// both arms and bad flags are errors that say what to give.
func TestPersistenceCommandRefuses(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runCLI(t, nil, "simulate", "--scenario", "aa-quiet-30m", "--duration", "1h", "--out", dir); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errs)
	}
	b, c := filepath.Join(dir, "baseline.jsonl"), filepath.Join(dir, "canary.jsonl")
	// the canary's first records without their arrival times
	nots := filepath.Join(t.TempDir(), "no-ts.jsonl")
	if data, err := os.ReadFile(c); err != nil || os.WriteFile(nots, regexp.MustCompile(`"ts":[0-9.]+,`).ReplaceAll(data[:bytes.IndexByte(data, '\n')+1], nil), 0o644) != nil {
		t.Fatal("writing records without ts")
	}
	cp := filepath.Join(t.TempDir(), "copy.jsonl")
	if data, err := os.ReadFile(b); err != nil || os.WriteFile(cp, data, 0o644) != nil {
		t.Fatal("copying the baseline")
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"an hour of history", []string{"--baseline", b, "--canary", c}, 4, []string{"baseline.jsonl", "2 windows of 30m0s", "at least 8 (240 min)", "longer history"}},
		{"one file as both arms", []string{"--baseline", b, "--canary", b}, 4, []string{"are the same input", "given once"}},
		{"one file twice in an arm", []string{"--baseline", b, "--baseline", b}, 4, []string{"are the same input", "given once"}},
		{"a copy as the other arm", []string{"--baseline", b, "--canary", cp}, 4, []string{"is identical to", "each arm needs its own data"}},
		{"no history", []string{}, 2, []string{"needs --baseline"}},
		{"window too short", []string{"--baseline", b, "--window", "10s"}, 2, []string{"--window 10s", "1m … 24h"}},
		{"bad format", []string{"--baseline", b, "--format", "xml"}, 2, []string{"text or json"}},
		{"missing file", []string{"--baseline", filepath.Join(dir, "nope.jsonl")}, 4, []string{"nope.jsonl"}},
		{"records without arrival times", []string{"--baseline", b, "--canary", nots, "--input-format", "requestlog"}, 4, []string{"no-ts.jsonl:1", `field "ts"`}},
	} {
		code, out, errs := runCLI(t, nil, append([]string{"persistence"}, tc.args...)...)
		if code != tc.code || out != "" {
			t.Errorf("%s: exit %d (want %d), stdout %q", tc.name, code, tc.code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: %q lacks %q", tc.name, errs, w)
			}
		}
	}
}
