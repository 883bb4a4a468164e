package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/clickhouse/chtest"
	"github.com/goodput-dev/goodput/sources/sim"
)

// simToClickHouse simulates scenario for d, writes both arms' native logs
// into dir and loads them into table (arm column "baseline"/"canary").
// A scenario ending in .yaml is read from testdata/scenarios.
func simToClickHouse(t *testing.T, srv *chtest.Server, scenario, table, dir string, d time.Duration) (base, can string) {
	t.Helper()
	return simToClickHouseWith(t, srv, scenario, table, dir, d, nil)
}

// simToClickHouseWith is simToClickHouse with each arm's records passed
// through mod (when not nil) before they are written.
func simToClickHouseWith(t *testing.T, srv *chtest.Server, scenario, table, dir string, d time.Duration, mod func([]sources.Request)) (base, can string) {
	t.Helper()
	return simToClickHouseEdited(t, srv, scenario, table, dir, d, mod, nil)
}

// simToClickHouseEdited is simToClickHouseWith with each record's JSONL
// line (without its closing brace) passed through edit, when not nil,
// with its arm and number.
func simToClickHouseEdited(t *testing.T, srv *chtest.Server, scenario, table, dir string, d time.Duration, mod func([]sources.Request), edit func(arm sources.Arm, i int, line string) string) (base, can string) {
	t.Helper()
	var sc sim.Scenario
	var err error
	if strings.HasSuffix(scenario, ".yaml") {
		var y []byte
		if y, err = os.ReadFile(filepath.Join("..", "..", "testdata", "scenarios", scenario)); err == nil {
			sc, err = sim.ParseScenario(scenario, y)
		}
	} else {
		sc, err = sim.Builtin(scenario)
	}
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[sources.Arm]string{}
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		p := filepath.Join(dir, string(arm)+".jsonl")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if mod != nil {
			mod(res.Requests(arm))
		}
		var buf bytes.Buffer
		if err := sim.WriteRequestLog(&buf, res.Requests(arm)); err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			buf.Reset()
			for i, l := range lines {
				buf.WriteString(edit(arm, i, strings.TrimSuffix(l, "}")) + "}\n")
			}
		}
		if _, err := f.Write(buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		f.Close()
		f, _ = os.Open(p)
		srv.LoadRequests(t, table, string(arm), f)
		f.Close()
		paths[arm] = p
	}
	return paths[sources.Baseline], paths[sources.Canary]
}

func chArgs(url string, extra ...string) []string {
	return append([]string{"judge", "--clickhouse", url, "--table", "req",
		"--baseline-where", "arm = 'baseline'", "--canary-where", "arm = 'canary'",
		"--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T01:00:00Z"}, extra...)
}

// TestJudgeClickHouseReport: `goodput judge --clickhouse` prints the same
// JSON report, apart from inputs[] and why the files were aggregated
// (measurement.method_reason), as `goodput judge --stream` on the same
// records as files; its inputs name the queries, and the same query twice
// gives the same bytes.
func TestJudgeClickHouseReport(t *testing.T) {
	srv := chtest.Start(t)
	out, got, inputs := judgedFromBoth(t, srv, "bs-errors-rejected", 4*time.Minute)
	if acc := got["arms"].(map[string]any)["canary"].(map[string]any)["accounting"].(map[string]any); acc["rejected"] == 0.0 {
		t.Errorf("the canary rejects nothing: %v", acc)
	}
	if len(inputs) != 2 || inputs[0].Format != "clickhouse" || !strings.Contains(inputs[0].Path, "where (arm = 'baseline')") ||
		!strings.Contains(inputs[1].Path, "where (arm = 'canary')") || len(inputs[0].SHA256) != 64 {
		t.Errorf("inputs %+v", inputs)
	}
	_, out2, _ := runCLI(t, nil, chArgs(srv.URL, "--format", "json", "--resamples", "200")...)
	if out2 != out {
		t.Error("two runs on the same data gave different reports")
	}
}

// TestJudgeClickHouseOutcomeStrata: what did not complete logged without a
// prompt length or class (a gateway's log of what it turned away) makes
// strata that each arm keeps at its own share; from ClickHouse the report
// equals judge --stream's on the same records as files, and its mix step
// names the stratum so kept.
func TestJudgeClickHouseOutcomeStrata(t *testing.T) {
	strip := func(rs []sources.Request) {
		for i := range rs {
			if r := &rs[i]; r.Status != sources.StatusOK {
				r.PromptTokens, r.OutputTokens, r.CachedTokens, r.Class = -1, -1, -1, ""
			}
		}
	}
	_, got, _ := judgedFromBothWith(t, chtest.Start(t), "bs-errors-rejected", 4*time.Minute, strip)
	steps, _ := json.Marshal(got["normalization"])
	if !strings.Contains(string(steps), `kept at each arm's own share`) {
		t.Errorf("no stratum kept at each arm's own share in the report: %s", steps)
	}
}

// TestJudgeClickHouseReplicaWarmup: a canary replica fails and comes back
// cold (testdata/scenarios/replica-restart.yaml): from ClickHouse its own
// warm-up is found from the per-replica TTFT medians the query returns
// and left out by a second query, and the report equals judge --stream's
// on the same records as files (which reads the file a second time),
// the cut named in both.
func TestJudgeClickHouseReplicaWarmup(t *testing.T) {
	_, got, _ := judgedFromBoth(t, chtest.Start(t), "replica-restart.yaml", 0)
	steps, _ := json.Marshal(got["normalization"])
	if !strings.Contains(string(steps), `replica \"canary-1\" entered at`) {
		t.Errorf("no replica cut in the report: %s", steps)
	}
}

// TestJudgeClickHouseLoneCanary: identical builds, a canary of one
// replica beside four behind the simulator's least-loaded router
// (testdata/scenarios/lone-canary-pooled.yaml). From ClickHouse each
// replica's requests in flight come back as their own rows (the ends
// grouped by the slice they fall in), the baseline's router reads as even
// from them, and the report, its warning and its verdict, equals judge
// --stream's on the same records as files.
func TestJudgeClickHouseLoneCanary(t *testing.T) {
	_, got, _ := judgedFromBoth(t, chtest.Start(t), "lone-canary-pooled.yaml", 0)
	w, _ := json.Marshal(got["warnings"])
	for _, want := range []string{"the arms differ in size: the baseline ran 4.0 replicas on average, the canary 1.0",
		"more evenly than at random (their requests in flight at each bucket's end vary"} {
		if !strings.Contains(string(w), want) {
			t.Errorf("the warnings do not say %q: %s", want, w)
		}
	}
	if got["verdict"] == "fail" {
		t.Errorf("identical builds failed: %v", got["reasons"])
	}
}

// TestJudgeClickHouseUsers: records naming their users, each arm 300
// users of its own whose answers are up to twice or half as long
// (sticky routing): from ClickHouse the groups of users come back as rows
// of their own, output_tokens_mean is widened for them as from the files,
// and the report equals judge --stream's on the same records.
func TestJudgeClickHouseUsers(t *testing.T) {
	user := func(i int) int { return (i * 7919) % 300 }
	scale := map[sources.Arm][]float64{}
	for k, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		rng := rand.New(rand.NewPCG(uint64(k+1), 5))
		for range 300 {
			scale[arm] = append(scale[arm], math.Exp(0.5*rng.NormFloat64()))
		}
	}
	arm := sources.Baseline
	mod := func(rs []sources.Request) {
		// simToClickHouseEdited passes the baseline's records first
		for i := range rs {
			if r := &rs[i]; r.Status == sources.StatusOK && r.OutputTokens > 1 {
				r.OutputTokens = max(2, int64(math.Round(float64(r.OutputTokens)*scale[arm][user(i)])))
				r.E2E = r.TTFT + float64(r.OutputTokens-1)*r.TPOT
			}
		}
		arm = sources.Canary
	}
	edit := func(a sources.Arm, i int, line string) string {
		return line + fmt.Sprintf(`,"user":"%s-u%d"`, a, user(i))
	}
	_, got, _ := judgedFromBothEdited(t, chtest.Start(t), "aa-quiet-30m", 10*time.Minute, mod, edit)
	steps, _ := json.Marshal(got["normalization"])
	if !strings.Contains(string(steps), `"name":"users"`) || !strings.Contains(string(steps), "output_tokens_mean: groups differ") {
		t.Errorf("no users widening in the report: %s", steps)
	}
	metrics, _ := json.Marshal(got["metrics"])
	if !strings.Contains(string(metrics), "+users") {
		t.Errorf("no gate widened for users: %s", metrics)
	}
}

// TestJudgeClickHouseLongRun: arms spanning 3 hours and 1.5 hours are
// aggregated on wider slices than the policy's (40 s and 20 s: see
// sources.MaxStreamSlices), the shorter read again on the longer's, and
// the report equals judge --stream's on the same records as files, which
// widens the finer aggregate the same way; both say so.
func TestJudgeClickHouseLongRun(t *testing.T) {
	srv := chtest.Start(t)
	dir := t.TempDir()
	var paths []string
	for k, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		path, _ := armFiles(t, dir, arm, longRecords(uint64(k+1), 3/float64(k+1)))
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		srv.LoadRequests(t, "req", string(arm), f)
		f.Close()
		paths = append(paths, path)
	}
	code, out, errs := runCLI(t, nil, chArgs(srv.URL, "--format", "json", "--resamples", "200", "--start", "2025-12-31T23:00:00Z", "--end", "2026-01-02T00:00:00Z")...)
	if code != 0 && code != 1 && code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	fcode, fout, ferrs := runCLI(t, nil, "judge", "--stream", "--baseline", paths[0], "--canary", paths[1], "--format", "json", "--resamples", "200")
	if fcode != code {
		t.Fatalf("--stream exit %d, --clickhouse exit %d: %s", fcode, code, ferrs)
	}
	got, _ := sameReportBut(t, out, fout)
	warns, _ := json.Marshal(got["warnings"])
	if !strings.Contains(string(warns), "buckets of 40s, not the policy's window.bucket 10s") {
		t.Errorf("no word of the wider buckets: %s", warns)
	}
	series, _ := json.Marshal(got["series"])
	if !strings.Contains(string(series), `"t":40,`) || strings.Contains(string(series), `"t":10,`) {
		t.Errorf("series not on 40 s buckets: %.300s", series)
	}
}

// TestJudgeClickHouseTooManyReplicas: a replica column that names more
// replicas than sources.MaxReplicas (a request id, say) is judged as
// naming none from ClickHouse as from the files, with the same warning
// and the same report.
func TestJudgeClickHouseTooManyReplicas(t *testing.T) {
	srv := chtest.Start(t)
	ids := func(rs []sources.Request) {
		for i := range rs {
			rs[i].Replica = fmt.Sprintf("req-%d", i)
		}
	}
	_, got, _ := judgedFromBothWith(t, srv, "aa-quiet-30m", 10*time.Minute, ids)
	warns, _ := json.Marshal(got["warnings"])
	if !strings.Contains(string(warns), "both arms: the records name more than 512 replicas") {
		t.Errorf("no warning of the replica field: %s", warns)
	}
}

// judgedFromBoth simulates scenario (see simToClickHouse) into table req
// and files, judges it with --clickhouse and with --stream on the files,
// requires the same exit code and the same report apart from inputs (see
// sameReportBut), and returns the ClickHouse report's text, its fields
// without inputs, and its inputs.
func judgedFromBoth(t *testing.T, srv *chtest.Server, scenario string, d time.Duration) (string, map[string]any, []sources.Input) {
	t.Helper()
	return judgedFromBothWith(t, srv, scenario, d, nil)
}

// judgedFromBothWith is judgedFromBoth with each arm's records passed
// through mod (see simToClickHouseWith).
func judgedFromBothWith(t *testing.T, srv *chtest.Server, scenario string, d time.Duration, mod func([]sources.Request)) (string, map[string]any, []sources.Input) {
	t.Helper()
	return judgedFromBothEdited(t, srv, scenario, d, mod, nil)
}

// judgedFromBothEdited is judgedFromBothWith with each record's line
// edited (see simToClickHouseEdited).
func judgedFromBothEdited(t *testing.T, srv *chtest.Server, scenario string, d time.Duration, mod func([]sources.Request), edit func(arm sources.Arm, i int, line string) string) (string, map[string]any, []sources.Input) {
	t.Helper()
	b, c := simToClickHouseEdited(t, srv, scenario, "req", t.TempDir(), d, mod, edit)
	code, out, errs := runCLI(t, nil, chArgs(srv.URL, "--format", "json", "--resamples", "200")...)
	if code != 0 && code != 1 && code != 3 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	fcode, fout, ferrs := runCLI(t, nil, "judge", "--stream", "--baseline", b, "--canary", c, "--format", "json", "--resamples", "200")
	if fcode != code {
		t.Fatalf("--stream exit %d, --clickhouse exit %d: %s", fcode, code, ferrs)
	}
	got, inputs := sameReportBut(t, out, fout)
	return out, got, inputs
}

// sameReportBut compares two JSON reports of one run read from ClickHouse
// and from files, apart from inputs[] and measurement.method_reason, and
// returns the first without them and its inputs.
func sameReportBut(t *testing.T, out, fout string) (map[string]any, []sources.Input) {
	t.Helper()
	withoutInputs := func(s string) (map[string]any, []sources.Input) {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("%v\n%.500s", err, s)
		}
		raw, _ := json.Marshal(m["inputs"])
		var in []sources.Input
		_ = json.Unmarshal(raw, &in)
		delete(m, "inputs")
		delete(m["measurement"].(map[string]any), "method_reason")
		return m, in
	}
	got, inputs := withoutInputs(out)
	want, _ := withoutInputs(fout)
	gj, _ := json.MarshalIndent(got, "", " ")
	wj, _ := json.MarshalIndent(want, "", " ")
	if !bytes.Equal(gj, wj) {
		gl, wl := strings.Split(string(gj), "\n"), strings.Split(string(wj), "\n")
		for i := 0; i < min(len(gl), len(wl)); i++ {
			if gl[i] != wl[i] {
				t.Errorf("reports differ at line %d:\nclickhouse: %s\n--stream:   %s", i, gl[i], wl[i])
				break
			}
		}
		t.Errorf("reports differ (%d and %d lines)", len(gl), len(wl))
	}
	return got, inputs
}

// TestJudgeClickHouseErrors: flag mistakes exit 2 naming the flag; a
// failing query exits 4 naming the query, without the credentials.
func TestJudgeClickHouseErrors(t *testing.T) {
	srv := chtest.Start(t)
	srv.LoadRequests(t, "req", "baseline", strings.NewReader(`{"ts":1767225600.5,"status":"ok","ttft_s":0.1,"e2e_s":1.2,"output_tokens":30}`+"\n"))
	u := srv.URL
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		want []string
		not  []string
	}{
		{"no table", []string{"judge", "--clickhouse", u, "--baseline-where", "a = 1", "--canary-where", "a = 2", "--last", "1h"}, nil, 2, []string{"--table"}, nil},
		{"no where", []string{"judge", "--clickhouse", u, "--table", "req", "--canary-where", "a = 2", "--last", "1h"}, nil, 2, []string{"--baseline-where"}, nil},
		{"no window", []string{"judge", "--clickhouse", u, "--table", "req", "--baseline-where", "a = 1", "--canary-where", "a = 2"}, nil, 2, []string{"needs a window"}, nil},
		{"where with ;", chArgs(u, "--canary-where", "1 = 1; DROP TABLE req"), nil, 2, []string{"--canary-where", "`;`"}, nil},
		{"where escaping its parentheses", chArgs(u, "--baseline-where", "1) OR (1"), nil, 2, []string{"--baseline-where", "unbalanced )"}, nil},
		{"same where", chArgs(u, "--canary-where", "arm = 'baseline'"), nil, 2, []string{"the same"}, nil},
		{"bad columns", chArgs(u, "--columns", "ttft=x"), nil, 2, []string{"--columns", "unknown field"}, nil},
		{"step", chArgs(u, "--step", "30s"), nil, 2, []string{"--step", "only apply with --prometheus"}, nil},
		{"table without clickhouse", []string{"judge", "--table", "req", "a.jsonl", "b.jsonl"}, nil, 2, []string{"--table", "only apply with --clickhouse"}, nil},
		{"files too", append(chArgs(u), "--baseline", "a.jsonl", "--canary", "b.jsonl"), nil, 2, []string{"not both"}, nil},
		{"credentials in URL", chArgs(strings.Replace(u, "http://", "http://bob:pw-in-url-1@", 1)), nil, 2, []string{"credentials in the URL"}, []string{"pw-in-url-1"}},
		{"missing table", append(chArgs(u), "--table", "nope"), nil, 4, []string{"clickhouse query describe nope", "doesn't exist"}, nil},
		{"missing column", chArgs(u, "--columns", "ttft_s=first_token"), nil, 4, []string{"no column `first_token`"}, nil},
		{"wrong password", chArgs(u), map[string]string{envClickHouseUser: chtest.User, envClickHousePassword: "pw-wrong-5e2a"}, 4,
			[]string{"clickhouse query describe req", "Wrong password"}, []string{"pw-wrong-5e2a"}},
		{"no canary rows", chArgs(u), map[string]string{envClickHouseUser: chtest.User, envClickHousePassword: chtest.Password}, 4,
			[]string{"canary aggregate", "no requests"}, []string{chtest.Password}},
		{"unreachable", chArgs("http://127.0.0.1:1", "--clickhouse-timeout", "3s"), nil, 4, []string{"cannot reach http://127.0.0.1:1"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, c.env, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, c.code, errs)
			}
			if out != "" {
				t.Errorf("stdout %q", out)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
			for _, n := range c.not {
				if strings.Contains(errs, n) {
					t.Errorf("stderr %q shows %q", errs, n)
				}
			}
		})
	}
}
