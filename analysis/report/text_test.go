package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis"
)

// checkGolden compares got with testdata/<dir>/<name>, rewriting it under
// -update.
func checkGolden(t *testing.T, dir, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", dir, name)
	if mdUpdating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run `go test ./analysis/report -update` to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the rendering (rerun with -update if the change is intended):\n%s", path, mdLineDiff(string(want), string(got)))
	}
}

func TestTextGolden(t *testing.T) {
	for _, v := range []analysis.Verdict{analysis.Pass, analysis.Fail, analysis.Inconclusive} {
		for _, color := range []bool{false, true} {
			var buf bytes.Buffer
			if err := Text(&buf, mdFixture(v), TextOptions{Color: color}); err != nil {
				t.Fatal(err)
			}
			name := string(v) + ".txt"
			if color {
				name = string(v) + ".color.txt"
			}
			checkGolden(t, "text", name, buf.Bytes())
			if !color && strings.Contains(buf.String(), "\x1b") {
				t.Errorf("%s: escape sequences without colour", name)
			}
		}
	}
}

func TestJSONGoldenAndRoundTrip(t *testing.T) {
	for _, v := range []analysis.Verdict{analysis.Pass, analysis.Fail, analysis.Inconclusive} {
		var buf bytes.Buffer
		if err := JSON(&buf, mdFixture(v)); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "json", string(v)+".json", buf.Bytes())
		var back analysis.Report
		if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
			t.Fatalf("%s: the report does not decode: %v", v, err)
		}
		var again bytes.Buffer
		if err := JSON(&again, &back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), again.Bytes()) {
			t.Errorf("%s: decode and re-encode changed the report", v)
		}
	}
}

// TestJSONContract checks the fields DESIGN.md §6 names, by their JSON
// names, so a renamed Go field cannot silently break scripts.
func TestJSONContract(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, mdFixture(analysis.Fail)); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema_version", "verdict", "reasons", "measurement", "arms", "metrics", "diagnostics",
		"normalization", "warnings", "inputs", "policy", "tool_version"} {
		if _, ok := m[k]; !ok {
			t.Errorf("top-level field %q missing", k)
		}
	}
	meas := m["measurement"].(map[string]any)
	for _, k := range []string{"population", "window", "location", "completion_condition"} {
		if _, ok := meas[k]; !ok {
			t.Errorf("measurement.%s missing", k)
		}
	}
	w := meas["window"].(map[string]any)
	for _, k := range []string{"start", "end"} {
		if _, ok := w[k]; !ok {
			t.Errorf("measurement.window.%s missing", k)
		}
	}
	arms := m["arms"].(map[string]any)
	for _, arm := range []string{"baseline", "canary"} {
		a := arms[arm].(map[string]any)
		for _, k := range []string{"accounting", "goodput_rps", "slo_attainment", "token_goodput_tps"} {
			if _, ok := a[k]; !ok {
				t.Errorf("arms.%s.%s missing", arm, k)
			}
		}
		acc := a["accounting"].(map[string]any)
		for _, k := range []string{"offered", "admitted", "rejected", "canceled", "failed", "completed", "good"} {
			if _, ok := acc[k]; !ok {
				t.Errorf("arms.%s.accounting.%s missing", arm, k)
			}
		}
	}
	for i, x := range m["metrics"].([]any) {
		mm := x.(map[string]any)
		for _, k := range []string{"name", "verdict", "baseline", "canary", "delta", "interval", "margin", "n_baseline", "n_canary", "reason"} {
			if _, ok := mm[k]; !ok {
				t.Errorf("metrics[%d].%s missing", i, k)
			}
		}
		if iv, ok := mm["interval"].([]any); !ok || len(iv) != 2 {
			t.Errorf("metrics[%d].interval is not [lo, hi]: %v", i, mm["interval"])
		}
	}
	pol := m["policy"].(map[string]any)
	for _, k := range []string{"name", "sha256"} {
		if _, ok := pol[k]; !ok {
			t.Errorf("policy.%s missing", k)
		}
	}
}

func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"plain":         "plain",
		"a\x1b[31mred":  `a\x1b[31mred`,
		"line\nbreak":   `line\x0abreak`,
		"bell\a":        `bell\x07`,
		"bad\xffutf8":   "bad\uFFFDutf8",
		"rtl\u202eevil": `rtl\x202eevil`,
		"ünïcödé ok":    "ünïcödé ok",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestResamplingUnitShown: a report whose arms had no arrival times names
// its resampling unit, not a time bucket, in text and Markdown.
func TestResamplingUnitShown(t *testing.T) {
	r := mdFixture(analysis.Pass)
	r.Measurement.Clock, r.Measurement.ResamplingUnit = "none", "runs of 25 consecutive requests in file order"
	var text, md bytes.Buffer
	if err := Text(&text, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		if !strings.Contains(out, "runs of 25 consecutive requests in file order") || strings.Contains(out, "buckets of 10s") {
			t.Errorf("%s does not name the resampling unit:\n%s", name, out)
		}
	}
}
