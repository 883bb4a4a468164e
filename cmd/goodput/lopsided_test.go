package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLopsidedIntervalNoProjection: the bundled example's canary stalls
// (TTFT and TPOT ×5) from 2:00 to 4:00; its p99 intervals reach far past
// the point on the harmful side only (+224% [−8%, +341%]), so the standard
// error alone says the data already decide them. Both paths used to print
// "about 0 more requests (1.0× the data) … would decide the 10% margin";
// now no projection is given (no more_data in the JSON) and the reason
// says why.
func TestLopsidedIntervalNoProjection(t *testing.T) {
	dir := t.TempDir()
	canary := filepath.Join(dir, "canary.jsonl")
	in, err := os.Open(filepath.Join("..", "..", "testdata", "example", "canary.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out strings.Builder
	sc := bufio.NewScanner(in)
	t0 := -1.0
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		ts := r["ts"].(float64)
		if t0 < 0 {
			t0 = ts
		}
		if ts-t0 >= 120 && ts-t0 < 240 && r["status"] == "ok" {
			for _, k := range []string{"ttft_s", "tpot_s", "max_itl_s"} {
				if v, ok := r[k].(float64); ok {
					r[k] = 5 * v
				}
			}
			r["e2e_s"] = r["ttft_s"].(float64) + r["tpot_s"].(float64)*max(0, r["output_tokens"].(float64)-1)
		}
		b, _ := json.Marshal(r)
		out.Write(append(b, '\n'))
	}
	if err := os.WriteFile(canary, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join("..", "..", "testdata", "example", "baseline.jsonl")
	for _, path := range []string{"--exact", "--stream"} {
		code, js, errs := runCLI(t, nil, "judge", path, "--format", "json", "--baseline", base, "--canary", canary)
		if code != 3 {
			t.Fatalf("%s: exit %d (%s)", path, code, errs)
		}
		var rep struct {
			Metrics []struct {
				Name     string          `json:"name"`
				Verdict  string          `json:"verdict"`
				Reason   string          `json:"reason"`
				MoreData json.RawMessage `json:"more_data"`
			} `json:"metrics"`
		}
		if err := json.Unmarshal([]byte(js), &rep); err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, m := range rep.Metrics {
			if m.Name != "ttft_p99" && m.Name != "tpot_p99" {
				continue
			}
			seen++
			if m.Verdict != "inconclusive" || !strings.Contains(m.Reason, "lopsided") || strings.Contains(m.Reason, "about 0 more") ||
				(len(m.MoreData) > 0 && string(m.MoreData) != "null") {
				t.Errorf("%s %s: %s, more_data %s: %s", path, m.Name, m.Verdict, m.MoreData, m.Reason)
			}
		}
		if seen != 2 {
			t.Errorf("%s: %d p99 gates", path, seen)
		}
	}
}
