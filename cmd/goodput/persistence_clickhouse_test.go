package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources/clickhouse/chtest"
)

// TestPersistenceFromClickHouse: an A/A history loaded into a real
// ClickHouse server and read back by `goodput persistence --clickhouse`
// (the server counting each replica's requests and good ones per bucket)
// gives byte for byte the result of the same history's files, text and
// JSON, and is read the same way twice; so does one arm alone, its
// replicas split in two. A window around the history reads as the
// history, and too short a one is refused naming the rows; flags that
// mix the two ways of giving a history, or lack what ClickHouse needs,
// are usage errors.
func TestPersistenceFromClickHouse(t *testing.T) {
	srv := chtest.Start(t)
	dir := t.TempDir()
	// the slowdowns of aa-persistent-history at a fifth of its load, so
	// that five hours load quickly
	y, err := os.ReadFile(filepath.Join("testdata", "aa-persistent-history.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(dir, "aa-persistent-light.yaml")
	light := strings.Replace(strings.Replace(string(y), "name: aa-persistent-history", "name: aa-persistent-light", 1), "rate: 20 ", "rate: 4  ", 1)
	if light == string(y) || os.WriteFile(scenario, []byte(light), 0o644) != nil {
		t.Fatal("writing the lighter scenario")
	}
	hist := filepath.Join(dir, "hist")
	if code, _, errs := runCLI(t, nil, "simulate", "--scenario", scenario, "--duration", "5h", "--seed", "4", "--out", hist); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errs)
	}
	b, c := filepath.Join(hist, "baseline.jsonl"), filepath.Join(hist, "canary.jsonl")
	for arm, p := range map[string]string{"baseline": b, "canary": c} {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		srv.LoadRequests(t, "hist", arm, f)
		f.Close()
	}
	ch := func(extra ...string) []string {
		return append([]string{"persistence", "--clickhouse", srv.URL, "--table", "hist",
			"--baseline-where", "arm = 'baseline'", "--canary-where", "arm = 'canary'"}, extra...)
	}
	// the simulator's clock starts at 2026-01-01T00:00:00Z; the window
	// reaches an hour either side of the history
	window := []string{"--start", "2025-12-31T23:00:00Z", "--end", "2026-01-01T06:00:00Z"}
	for _, format := range []string{"json", "text"} {
		code, files, errs := runCLI(t, nil, "persistence", "--baseline", b, "--canary", c, "--format", format)
		if code != 0 {
			t.Fatalf("files, %s: exit %d: %s", format, code, errs)
		}
		code, fromCH, errs := runCLI(t, nil, ch(append(window, "--format", format)...)...)
		if code != 0 {
			t.Fatalf("clickhouse, %s: exit %d: %s", format, code, errs)
		}
		if fromCH != files {
			t.Errorf("%s: ClickHouse and the files read differently:\n%s\nagainst\n%s", format, fromCH, files)
		}
		if !strings.Contains(errs, "per 10s bucket (2 queries)") {
			t.Errorf("%s: progress %q", format, errs)
		}
		if _, again, _ := runCLI(t, nil, ch(append(window, "--format", format)...)...); again != fromCH {
			t.Errorf("%s: two reads of the same rows differ", format)
		}
		if format == "text" && !strings.Contains(fromCH, "the two arms of an A/A history") {
			t.Errorf("not read as an A/A pair: %s", fromCH)
		}
		// one arm alone: its replicas split in two, as from its file
		_, files, _ = runCLI(t, nil, "persistence", "--baseline", b, "--format", format)
		code, fromCH, errs = runCLI(t, nil, "persistence", "--clickhouse", srv.URL, "--table", "hist", "--baseline-where", "arm = 'baseline'", "--format", format, window[0], window[1], window[2], window[3])
		if code != 0 || fromCH != files {
			t.Errorf("%s, one arm: exit %d, ClickHouse and the file read differently:\n%s\nagainst\n%s%s", format, code, fromCH, files, errs)
		}
		if format == "text" && !strings.Contains(fromCH, "4 replicas split in two halves") {
			t.Errorf("one arm not split by replicas: %s", fromCH)
		}
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"an hour of history", ch("--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T01:00:00Z"), 4,
			[]string{"the baseline's rows in ClickHouse (--baseline-where)", "2 windows of 30m0s", "longer history"}},
		{"a condition no row meets", ch(append(window, "--canary-where", "arm = 'nobody'")...), 4,
			[]string{"the canary's rows in ClickHouse (--canary-where): no records"}},
		{"the same rows twice", ch(append(window, "--canary-where", "(arm = 'baseline')")...), 4,
			[]string{"(--baseline-where) and the canary's rows in ClickHouse (--canary-where) count the same", "each arm's own records"}},
		{"files beside it", ch(append(window, "--baseline", b)...), 2, []string{"not both"}},
		{"no window", ch(), 2, []string{"--clickhouse needs a window"}},
		{"only the other arm's condition", []string{"persistence", "--clickhouse", srv.URL, "--table", "hist", "--canary-where", "arm = 'canary'", "--last", "24h"}, 2,
			[]string{"--clickhouse needs --baseline-where"}},
		{"a window without ClickHouse", []string{"persistence", "--baseline", b, "--last", "24h"}, 2, []string{"--last only apply with --clickhouse"}},
		{"a condition that is not one", ch(append(window, "--canary-where", "1) OR (1")...), 2, []string{"--canary-where"}},
	} {
		code, out, errs := runCLI(t, nil, tc.args...)
		if code != tc.code || out != "" {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q", tc.name, code, tc.code, out, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: %q lacks %q", tc.name, errs, w)
			}
		}
	}
}
