package report

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/capacity"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/benchfile"
)

func readArm(t *testing.T, arm string) []sources.RatePoint {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "realdata", "inference-perf", arm, "stage_*_lifecycle_metrics.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no stage files for %s: %v", arm, err)
	}
	sort.Strings(paths)
	var pts []sources.RatePoint
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := benchfile.ReadSweep(context.Background(), p, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		pts = append(pts, got...)
	}
	return pts
}

// compareRealSweeps compares the real inference-perf sweeps (vLLM against
// vLLM with quantization) under the chat policy.
func compareRealSweeps(t *testing.T) (*policies.Policy, *capacity.Result) {
	t.Helper()
	pol, err := policies.Load("chat")
	if err != nil {
		t.Fatal(err)
	}
	res, err := capacity.Compare(readArm(t, "vllm"), readArm(t, "vllm+quantization"),
		capacity.Config{Policy: pol, SaturationTolerance: capacity.DefaultSaturationTolerance})
	if err != nil {
		t.Fatal(err)
	}
	return pol, res
}

// TestCapacityJSONRoundTrip: a capacity report read back with
// ReadCapacityJSON and written again is byte-identical, for the real
// inference-perf pair and for one whose canary capacity is not
// identifiable with an unbounded ratio interval (null upper ends).
func TestCapacityJSONRoundTrip(t *testing.T) {
	pol, res := compareRealSweeps(t)
	unbounded := *res
	unbounded.Canary.Capacity = capacity.Capacity{Estimate: math.NaN(), Lo: 170, Hi: math.Inf(1), Reason: "every point is above the target", Identify: "sweep beyond 177 req/s"}
	unbounded.RatioCI.Hi = math.Inf(1)
	unbounded.Verdict = analysis.Inconclusive
	for name, r := range map[string]*capacity.Result{"real": res, "unbounded": &unbounded} {
		doc := &CapacityDoc{Result: r, SLO: "TTFT ≤ 1s", Policy: analysis.PolicyRef{Name: pol.Name, SHA256: pol.SHA256, Source: pol.Source}, ToolVersion: "test"}
		var first bytes.Buffer
		if err := CapacityJSON(&first, doc); err != nil {
			t.Fatal(err)
		}
		back, err := ReadCapacityJSON(first.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var second bytes.Buffer
		if err := CapacityJSON(&second, back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Errorf("%s: the report read back differs:\n%s\nwant\n%s", name, second.String(), first.String())
		}
		if name == "unbounded" && (!math.IsInf(back.Result.Canary.Capacity.Hi, 1) || !math.IsInf(back.Result.RatioCI.Hi, 1)) {
			t.Errorf("a null upper end did not read back as unbounded: %+v", back.Result.Canary.Capacity)
		}
	}
}

func TestReadCapacityJSONRefuses(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"schema_version":1,"verdict":"pass","metrics":[]}`, "not a capacity report"},
		{`{"verdict":"pass","capacity":{}}`, "no schema_version"},
		{`{"schema_version":99,"verdict":"pass","capacity":{}}`, "upgrade goodput"},
		{`{"schema_version":1,"verdict":"ok\u001b[2J","capacity":{}}`, `verdict "ok\x1b[2J"`},
		{`{"schema_version":1,"verdict":"pass","capacity":{"baseline":{"points":[{}],"fit":{"rates":[]}}}}`, "fit has 0 values for 1 points"},
		{`{"schema_version":1,`, "unexpected end"},
	} {
		if _, err := ReadCapacityJSON([]byte(tc.raw)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.raw, err, tc.want)
		}
	}
}

// TestCapacityUntrustedText: a warning and a point's source file name carry
// a terminal escape, a bidi override, an HTML tag, a mention and a table
// pipe; the text report shows the controls as \xNN and the Markdown report
// escapes them as the judge's Markdown does (EscapeMarkdown).
func TestCapacityUntrustedText(t *testing.T) {
	pol, res := compareRealSweeps(t)
	const hostile = "x\x1b[2J\u202e|<b>@org/team</b>"
	res.Warnings = append(res.Warnings, hostile)
	res.Baseline.Points[0].Source = hostile
	doc := &CapacityDoc{Result: res, SLO: "TTFT ≤ 1s", Policy: analysis.PolicyRef{Name: pol.Name, SHA256: pol.SHA256, Source: pol.Source}, ToolVersion: "test"}
	var text, md bytes.Buffer
	if err := CapacityText(&text, doc); err != nil {
		t.Fatal(err)
	}
	if err := CapacityMarkdown(&md, doc); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"text": text.String(), "markdown": md.String()} {
		if strings.ContainsAny(out, "\x1b\u202e") {
			t.Errorf("%s: a control character reached the output", name)
		}
	}
	if !strings.Contains(text.String(), `x\x1b[2J\x202e|<b>@org/team</b>`) {
		t.Errorf("text: the warning is not shown with its controls escaped:\n%s", text.String())
	}
	if strings.Contains(md.String(), "<b>") || strings.Contains(md.String(), "@org") || !strings.Contains(md.String(), EscapeMarkdown(hostile)) {
		t.Errorf("markdown: the warning is not escaped as EscapeMarkdown does:\n%s", md.String())
	}
}
