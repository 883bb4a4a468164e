package report

import (
	"bytes"
	"flag"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/sources"
)

// The golden files are rewritten with `go test ./analysis/report -update`.
// Other renderers' tests in this package may declare the same flag, so it
// is registered only when no one has yet (package variables, including a
// `var update = flag.Bool("update", …)` elsewhere, are initialised before
// any init function runs).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata/")
	}
}

func mdUpdating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

func mdGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	checkGolden(t, "markdown", name, got)
}

// mdLineDiff lists the first differing lines of two texts.
func mdLineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(w), len(g)) && shown < 10; i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			shown++
			b.WriteString("line " + itoa(i+1) + ":\n- " + wl + "\n+ " + gl + "\n")
		}
	}
	return b.String()
}

func itoa(i int) string { return mdInt(int64(i)) }

func num(v float64) analysis.Num { return analysis.Num(v) }

func numPtr(v float64) *analysis.Num { n := analysis.Num(v); return &n }

// mdFixture builds a complete report with realistic figures. The verdict
// decides the tpot_p99 gate (the gate the first line is about).
func mdFixture(verdict analysis.Verdict) *analysis.Report {
	nan := num(math.NaN())
	series := func(n, cut int, level float64) []analysis.Point {
		ps := make([]analysis.Point, n)
		for i := range ps {
			g := level + float64(i%7)*0.1 - float64(i%3)*0.05
			if i < cut {
				g = level * float64(i+1) / float64(cut+1)
			}
			ps[i] = analysis.Point{T: num(float64(i) * 10), Offered: int64(g*10) + 5, Good: int64(g * 10),
				GoodputRPS: num(g), TTFTP50: num(0.21), TTFTP99: num(0.84), Cut: i < cut}
		}
		return ps
	}
	arm := func(offered, rejected, canceled, failed, good int64, rps, att float64, lat analysis.Latency, cost float64) analysis.ArmSummary {
		completed := offered - rejected - canceled - failed
		return analysis.ArmSummary{
			Accounting: analysis.Accounting{Offered: offered, Admitted: offered - rejected, Rejected: rejected,
				Canceled: canceled, Failed: failed, Completed: completed, Good: good, Retries: 42},
			GoodputRPS: num(rps), SLOAttainment: num(att), TokenGoodputTPS: num(rps * 212), ThroughputRPS: num(float64(completed) / 900),
			OutputTokensPS: num(float64(completed) / 900 * 230), RetryAmplification: num(1.0035), WindowSeconds: num(900),
			Window:           analysis.Window{Start: "2026-11-28T10:01:00Z", End: "2026-11-28T10:16:00Z", Seconds: num(900)},
			WarmupCutSeconds: num(60), Replicas: 4, ReplicaSeconds: num(3600), GoodputPerReplica: num(rps / 4),
			CacheHitRate: num(0.412), Latency: lat, CostPerGoodRequest: numPtr(cost), GPUUtilization: nan,
			Cost: &analysis.ArmCost{Source: "records", AcceleratorUSD: num(cost * float64(good) * 0.8), HostUSD: num(cost * float64(good) * 0.15),
				NetworkUSD: num(cost * float64(good) * 0.01), IdleReserveUSD: num(cost * float64(good) * 0.04), TotalUSD: num(cost * float64(good)),
				PerGoodRequest: num(cost), PerMillionGoodTokens: num(cost / 212 * 1e6), GoodRequestsPerDollar: num(1 / cost)},
		}
	}
	q := func(n int64, mean, p50, p90, p95, p99 float64) analysis.Quantiles {
		return analysis.Quantiles{N: n, Mean: num(mean), P50: num(p50), P90: num(p90), P95: num(p95), P99: num(p99)}
	}
	tpot := analysis.Metric{Name: "tpot_p99", Direction: "lower_is_better", Scale: "relative", Unit: "s",
		Baseline: num(0.061), Margin: num(0.10), NBaseline: 11880, NCanary: 11760, Buckets: [2]int{90, 88},
		Method: "cluster bootstrap of log ratio, 2000 resamples", Adjusted: []string{"warmup"}}
	canaryTPOT := 0.061
	switch verdict {
	case analysis.Fail:
		tpot.Verdict, tpot.Canary, tpot.Delta = analysis.Fail, num(0.0751), num(0.231)
		tpot.Interval = [2]analysis.Num{num(0.18), num(0.284)}
		tpot.PFail = num(0.0004)
		tpot.Reason = "harm +23.1% is above the 10% margin with confidence"
		canaryTPOT = 0.0751
	case analysis.Inconclusive:
		tpot.Verdict, tpot.Canary, tpot.Delta = analysis.Inconclusive, num(0.0647), num(0.06)
		tpot.Interval = [2]analysis.Num{num(0.012), num(0.118)}
		tpot.PFail = num(0.31)
		tpot.Reason = "the interval [+1.2%, +11.8%] contains the 10% margin"
		tpot.MoreData = &analysis.MoreData{Factor: num(2.4), Requests: num(16614.2), Minutes: num(21)}
		canaryTPOT = 0.0647
	default:
		tpot.Verdict, tpot.Canary, tpot.Delta = analysis.Pass, num(0.0622), num(0.018)
		tpot.Interval = [2]analysis.Num{num(-0.021), num(0.052)}
		tpot.PFail = num(0.9)
		tpot.Reason = "harm is below the 10% margin with confidence"
	}
	r := &analysis.Report{
		SchemaVersion: analysis.SchemaVersion,
		Verdict:       verdict,
		Measurement: analysis.Measurement{
			Population: "all offered requests, all classes", Location: "client",
			CompletionCondition: "status ok (response finished)",
			Window:              analysis.Window{Start: "2026-11-28T10:01:00Z", End: "2026-11-28T10:16:00Z", Seconds: num(900)},
			BucketSeconds:       10, Clock: "epoch", Confidence: 0.95,
			SLO: []analysis.ClassSLO{
				{Class: "chat-long", TTFT: num(2), TPOT: num(0.08)},
				{Class: "chat-short", TTFT: num(1), TPOT: num(0.08), QualityNeeded: true},
			},
		},
		Arms: analysis.Arms{
			Baseline: arm(12000, 60, 20, 40, 11520, 12.8, 0.96,
				analysis.Latency{TTFT: q(11880, 0.31, 0.21, 0.52, 0.66, 0.84), TPOT: q(11880, 0.032, 0.029, 0.045, 0.051, 0.061),
					E2E: q(11880, 7.4, 6.9, 11.2, 13.0, 17.5)}, 0.000412),
			Canary: arm(11950, 70, 25, 95, 11410, 12.68, 0.9548,
				analysis.Latency{TTFT: q(11760, 0.33, 0.22, 0.55, 0.7, 0.9), TPOT: q(11760, 0.034, 0.03, 0.047, 0.055, canaryTPOT),
					E2E: q(11760, 7.7, 7.1, 11.9, 13.8, 18.4)}, 0.000419),
		},
		Metrics: []analysis.Metric{
			{Name: "slo_attainment", Verdict: analysis.Pass, Direction: "higher_is_better", Scale: "absolute", Unit: "fraction",
				Baseline: num(0.96), Canary: num(0.9548), Delta: num(-0.0052), Interval: [2]analysis.Num{num(-0.0091), num(-0.0013)},
				Margin: num(0.01), PFail: num(0.97), NBaseline: 12000, NCanary: 11950, Buckets: [2]int{90, 88},
				Method: "post-stratified difference, cluster bootstrap", Reason: "harm is below the 1 pp margin with confidence",
				Adjusted: []string{"mix", "warmup"},
				Naive: &analysis.NaiveComparison{Baseline: num(0.962), Canary: num(0.951), Delta: num(-0.011),
					Interval: [2]analysis.Num{num(-0.015), num(-0.007)}}},
			{Name: "goodput_per_replica", Verdict: analysis.Pass, Direction: "higher_is_better", Scale: "relative", Unit: "req/s/replica",
				Baseline: num(3.2), Canary: num(3.17), Delta: num(-0.0094), Interval: [2]analysis.Num{num(-0.031), num(0.012)},
				Margin: num(0.05), PFail: num(0.99), NBaseline: 12000, NCanary: 11950, Buckets: [2]int{90, 88},
				Method: "delta method on bucket totals", Reason: "harm is below the 5% margin with confidence", Adjusted: []string{"warmup"}},
			tpot,
			{Name: "cost_per_good_request", Verdict: analysis.Pass, Direction: "lower_is_better", Scale: "relative", Unit: "USD",
				Baseline: num(0.000412), Canary: num(0.000419), Delta: num(0.017), Interval: [2]analysis.Num{num(0.004), num(0.026)},
				Margin: num(0.03), PFail: num(0.95), NBaseline: 11520, NCanary: 11410, Buckets: [2]int{90, 88},
				Method: "cluster bootstrap of log ratio", Reason: "harm is below the 3% margin with confidence"},
			{Name: "error_rate", Verdict: analysis.Pass, Guardrail: true, Direction: "lower_is_better", Scale: "absolute", Unit: "fraction",
				Baseline: num(0.0033), Canary: num(0.0079), Delta: num(0.0046), Interval: [2]analysis.Num{num(-0.0004), num(0.0049)},
				Margin: num(0.005), PFail: num(0.07), NBaseline: 11940, NCanary: 11880, Buckets: [2]int{90, 88},
				Method: "Newcombe interval", Reason: "no confident harm"},
			// a per-class check that neither failed nor passed on its own
			{Name: "ttft_p99:chat-long", Class: "chat-long", Verdict: analysis.Pass, NotFailed: true, Direction: "lower_is_better", Scale: "relative", Unit: "s",
				Baseline: num(1.6), Canary: num(1.7), Delta: num(0.0625), Interval: [2]analysis.Num{num(-0.041), num(0.172)},
				Margin: num(0.10), PFail: num(0.21), NBaseline: 3000, NCanary: 3100, Buckets: [2]int{90, 88}, Method: "block-bootstrap",
				Reason:   "+6.2% [-4.1%, +17.2%] for class chat-long: not failed, not passed either: the interval reaches past the 10% margin, so a regression of that size is not ruled out for this class (a per-class check fails the comparison only when the class is worse beyond the margin with confidence; the pooled gate decides a pass)",
				Adjusted: []string{"class chat-long only"}},
		},
		Diagnostics: []analysis.Diagnostic{
			{Metric: "ttft", Method: "mann-whitney", Statistic: num(6.81e7), PValue: num(0.0021), QValue: num(0.0042),
				Estimate: num(0.012), Interval: [2]analysis.Num{num(0.004), num(0.02)}, NBaseline: 11880, NCanary: 11760,
				Note: "Hodges-Lehmann shift"},
			{Metric: "tpot", Method: "mann-whitney", Statistic: num(7.0e7), PValue: num(0.00001), QValue: num(0.00002),
				Estimate: num(0.0011), Interval: [2]analysis.Num{num(0.0008), num(0.0014)}, NBaseline: 11880, NCanary: 11760},
		},
		Classes: []analysis.ClassRow{
			{Class: "chat-long",
				Baseline: analysis.ClassArm{Offered: 3000, Good: 2790, Share: num(0.25), SLOAttainment: num(0.93), TTFTP99: num(1.6), TPOTP99: num(0.066)},
				Canary:   analysis.ClassArm{Offered: 3100, Good: 2852, Share: num(0.2594), SLOAttainment: num(0.92), TTFTP99: num(1.7), TPOTP99: num(0.081)}},
			{Class: "chat-short",
				Baseline: analysis.ClassArm{Offered: 9000, Good: 8730, Share: num(0.75), SLOAttainment: num(0.97), TTFTP99: num(0.61), TPOTP99: num(0.058)},
				Canary:   analysis.ClassArm{Offered: 8850, Good: 8558, Share: num(0.7406), SLOAttainment: num(0.967), TTFTP99: num(0.64), TPOTP99: num(0.07)}},
		},
		Normalization: analysis.Normalization{Steps: []analysis.NormalizationStep{
			{Name: "warmup", Setting: "60s", Applied: true, Detail: "cut the first 60 s of each arm (720 / 705 requests)"},
			{Name: "mix", Setting: "reference: baseline", Applied: true, Detail: "reweighted canary classes to 25% / 75%; attainment delta -1.1 pp → -0.52 pp"},
			{Name: "cache", Setting: "off", Applied: false, Detail: ""},
		}},
		Series: analysis.Series{BucketSeconds: num(10), Baseline: series(96, 6, 12.8), Canary: series(95, 6, 12.6)},
		Warnings: []string{
			"canary: 95 failed requests (0.79%) against 40 (0.33%) in baseline",
		},
		Inputs: []sources.Input{
			{Path: "runs/baseline.jsonl.gz", SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Format: "native-jsonl", Arm: sources.Baseline, Count: 12720},
			{Path: "runs/canary.jsonl.gz", SHA256: "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752", Format: "native-jsonl", Arm: sources.Canary, Count: 12655},
		},
		Policy:      analysis.PolicyRef{Name: "chat", SHA256: "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae", Source: "builtin"},
		ToolVersion: "0.1.0-test",
		Judge:       "goodput",
	}
	switch verdict {
	case analysis.Fail:
		r.Reasons = []string{"tpot_p99 +23.1% [+18.0%, +28.4%] exceeds the 10% margin"}
	case analysis.Inconclusive:
		r.Reasons = []string{"tpot_p99 +6.0% [+1.2%, +11.8%]: the interval contains the 10% margin"}
	default:
		r.Reasons = []string{"5 gates pass; 1 fail-only check did not fail (it can fail the comparison but does not hold up a pass; see its row)"}
	}
	if verdict == analysis.Inconclusive {
		// a baseline outage left out of both arms (baseline_outage)
		r.Arms.Baseline.LeftOut = &analysis.LeftOut{Seconds: num(120), Accounting: analysis.Accounting{Offered: 1610, Admitted: 1610,
			Failed: 803, Completed: 807, Good: 771}}
		r.Arms.Canary.LeftOut = &analysis.LeftOut{Seconds: num(120), Accounting: analysis.Accounting{Offered: 1598, Admitted: 1598,
			Failed: 2, Completed: 1596, Good: 1540, Retries: 3}}
	}
	return r
}

func TestMarkdown_golden(t *testing.T) {
	approve := &analysis.ReviewRecord{Reviewer: "alice", At: "2026-11-28T11:02:03Z", Decision: "approve",
		ReportSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		Note:         "tpot regression is the known #812 change; accepted for the kernel win", ReportVerdict: analysis.Fail, Overrides: true}
	tests := []struct {
		name   string
		report *analysis.Report
		opt    MarkdownOptions
	}{
		{"pass.md", mdFixture(analysis.Pass), MarkdownOptions{}},
		{"fail.md", mdFixture(analysis.Fail), MarkdownOptions{Review: approve}},
		{"inconclusive.md", mdFixture(analysis.Inconclusive), MarkdownOptions{MaxBytes: 65536}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Markdown(&buf, tt.report, tt.opt); err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			if err := Markdown(&again, tt.report, tt.opt); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Fatal("two renderings of the same report differ")
			}
			mdGolden(t, tt.name, buf.Bytes())
		})
	}
}

func TestMarkdown_firstLine(t *testing.T) {
	tests := []struct {
		verdict analysis.Verdict
		want    string
	}{
		{analysis.Fail, "❌ **fail** — tpot_p99 +23.1% [+18.0%, +28.4%] exceeds the 10% margin (n = 11,880 / 11,760)"},
		{analysis.Inconclusive, "⚠️ **inconclusive** — tpot_p99 +6.0% [+1.2%, +11.8%] cannot be told apart from the 10% margin (n = 11,880 / 11,760)"},
		{analysis.Pass, "✅ **pass** — 5 of 5 gates within their margins; closest: error_rate +0.46 pp [-0.04 pp, +0.49 pp] vs the 0.5 pp margin (n = 11,940 / 11,880); 1 fail-only check did not fail"},
	}
	for _, tt := range tests {
		t.Run(string(tt.verdict), func(t *testing.T) {
			var buf bytes.Buffer
			if err := Markdown(&buf, mdFixture(tt.verdict), MarkdownOptions{}); err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(buf.String(), "\n")
			if first != tt.want {
				t.Errorf("first line\n got %q\nwant %q", first, tt.want)
			}
		})
	}
}

func TestMarkdown_noGates(t *testing.T) {
	r := &analysis.Report{SchemaVersion: 1, Verdict: analysis.Inconclusive, Reasons: []string{"no data for the canary arm"}}
	var buf bytes.Buffer
	if err := Markdown(&buf, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.SplitN(buf.String(), "\n", 2)[0], "⚠️ **inconclusive** — no data for the canary arm"; got != want {
		t.Errorf("first line %q, want %q", got, want)
	}
	if strings.Contains(buf.String(), "mermaid") {
		t.Error("chart rendered without series")
	}
	if err := Markdown(&buf, nil, MarkdownOptions{}); err == nil {
		t.Error("nil report: want an error")
	}
}

func TestEscapeMarkdown(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text 42", "plain text 42"},
		{"<img src=x onerror=alert(1)> @org/team | x", "&lt;img src=x onerror=alert(1)&gt; @\u200dorg/team \\| x"},
		{"a & b", "a &amp; b"},
		{"fixes #123 and GH-7 and gh-8", "fixes \\#\u200d123 and GH\u200d-7 and gh\u200d-8"},
		{"owner/repo#9", "owner/repo\\#\u200d9"},
		{"ping @alice", "ping @\u200dalice"},
		{"line1\nline2\r\nline3\tx", "line1 line2  line3 x"},
		{"`code` *bold* _it_ [link](http://x) ![i](y) ~~s~~ $x$ {a}", "\\`code\\` \\*bold\\* \\_it\\_ \\[link\\](http://x) !\\[i\\](y) \\~\\~s\\~\\~ \\$x\\$ {a}"},
		{`back\slash`, `back\\slash`},
		{"- item", "\\- item"},
		{"+ item", "\\+ item"},
		{"-0.2% [-15.4%, +17.6%]", "-0.2% \\[-15.4%, +17.6%\\]"},
		{"+0.00 pp", "+0.00 pp"},
		{"-", "\\-"},
		{"=== x", "=== x"},
		{"12. item", "12\\. item"},
		{"3) item", "3\\) item"},
		{"1.5 s", "1.5 s"},
		{"snake_case_name _lead trail_ a_*b", "snake_case_name \\_lead trail\\_ a\\_\\*b"},
		{"# heading", "\\# heading"},
		{"bell\x07 esc\x1b[31m", "bell esc\\[31m"},
		{"rtl\u202etxt.exe", "rtltxt.exe"},
		{"bad \xff utf8", "bad \ufffd utf8"},
		{"<!-- goodput:default -->", "&lt;!-- goodput:default --&gt;"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := EscapeMarkdown(tt.in); got != tt.want {
			t.Errorf("EscapeMarkdown(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// TestMarkdown_injection renders hostile class names, file names and
// strings and checks they come out inert.
func TestMarkdown_injection(t *testing.T) {
	const hostile = "<img src=x onerror=alert(1)> @org/team | x"
	r := mdFixture(analysis.Fail)
	r.Classes[0].Class = hostile
	r.Inputs[0].Path = "runs/`rm -rf`/x.jsonl"
	r.Inputs[0].Note = "see #4 <script>"
	r.Warnings = append(r.Warnings, "class "+hostile+"\n| injected | row |")
	r.Metrics[2].Reason = "**boom** [click](javascript:alert(1))"
	r.Policy.Name = "chat @security"
	r.Policy.SHA256 = "not-hex `x`"
	var buf bytes.Buffer
	if err := Markdown(&buf, r, MarkdownOptions{Review: &analysis.ReviewRecord{Reviewer: "@admin", Decision: "<b>approve</b>", Note: "ok\n# big"}}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	wantSubs := []string{
		"| &lt;img src=x onerror=alert(1)&gt; @\u200dorg/team \\| x | 3,000 / 3,100 |",
		"| baseline | runs/\\`rm -rf\\`/x.jsonl — see \\#\u200d4 &lt;script&gt; | native-jsonl |",
		"- class &lt;img src=x onerror=alert(1)&gt; @\u200dorg/team \\| x \\| injected \\| row \\|\n",
		"\\*\\*boom\\*\\* \\[click\\](javascript:alert(1))",
		"- **policy:** chat @\u200dsecurity (builtin)\n",
		"❔ **&lt;b&gt;approve&lt;/b&gt;** by @\u200dadmin",
		"> ok \\# big\n",
	}
	for _, s := range wantSubs {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	for _, bad := range []string{"<img", "<script", "<b>", "@org", "@admin", "@security", "#4", "not-hex `x`", "/`rm"} {
		if strings.Contains(out, bad) {
			t.Errorf("output contains raw %q", bad)
		}
	}
	// every table row keeps its column count
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| &lt;img") {
			if got := mdCells(line); got != 7 {
				t.Errorf("class row has %d cells, want 7: %s", got, line)
			}
		}
	}
}

// mdCells counts table cells, ignoring escaped pipes.
func mdCells(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' {
			i++
			continue
		}
		if line[i] == '|' {
			n++
		}
	}
	return n - 1
}

func TestMarkdown_trim(t *testing.T) {
	const limit = 65536 - len("<!-- goodput:default -->\n")
	big := mdFixture(analysis.Fail)
	for i := 0; i < 3000; i++ {
		big.Classes = append(big.Classes, analysis.ClassRow{Class: "tenant-" + itoa(i) + "-with-a-rather-long-class-name"})
	}
	for i := 0; i < 40; i++ {
		big.Warnings = append(big.Warnings, "input line "+itoa(i)+" ignored: unknown field")
	}
	huge := mdFixture(analysis.Fail)
	for i := 0; i < 20000; i++ {
		huge.Reasons = append(huge.Reasons, "reason number "+itoa(i)+" of a very chatty judge")
	}
	tests := []struct {
		name      string
		r         *analysis.Report
		max       int
		want      []string
		wantNot   []string
		truncated bool
	}{
		{name: "fits", r: mdFixture(analysis.Fail), max: limit, wantNot: []string{"Trimmed"}},
		{name: "classes dropped first", r: big, max: limit,
			want:    []string{"left out: per-class breakdown.", "<summary>Warnings (41)</summary>", "#### Request accounting", "```mermaid"},
			wantNot: []string{"tenant-0-with"}, truncated: true},
		{name: "summary cut", r: huge, max: limit,
			want:    []string{"the end of the summary", "reason number 1 of"},
			wantNot: []string{"reason number 19999", "#### Request accounting"}, truncated: true},
		{name: "tiny", r: mdFixture(analysis.Pass), max: 300, truncated: true},
		{name: "smaller than the note", r: mdFixture(analysis.Pass), max: 40, truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Markdown(&buf, tt.r, MarkdownOptions{MaxBytes: tt.max}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if len(out) > tt.max {
				t.Errorf("body is %d bytes, over the %d limit", len(out), tt.max)
			}
			if !utf8.ValidString(out) {
				t.Error("body is not valid UTF-8 (a character was split)")
			}
			if tt.truncated && tt.max >= 300 && !strings.Contains(out, "Trimmed to fit GitHub's 65,536-character comment limit") {
				t.Error("no trim note")
			}
			if tt.max >= limit && !strings.HasPrefix(out, "❌ **fail** — tpot_p99") {
				t.Errorf("first line lost: %.80q", out)
			}
			if strings.Count(out, "<details>") != strings.Count(out, "</details>") {
				t.Error("unbalanced <details>")
			}
			if strings.Count(out, "```")%2 != 0 {
				t.Error("unbalanced code fence")
			}
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("lacks %q", s)
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(out, s) {
					t.Errorf("contains %q", s)
				}
			}
		})
	}
	if err := Markdown(&bytes.Buffer{}, mdFixture(analysis.Pass), MarkdownOptions{MaxBytes: -1}); err == nil {
		t.Error("negative MaxBytes: want an error")
	}
}

func TestMarkdown_chart(t *testing.T) {
	tests := []struct {
		name       string
		nb, nc     int
		wantPoints int
		wantNote   string
	}{
		{"short", 12, 12, 12, "10 s buckets."},
		{"exactly 60", 60, 60, 60, "10 s buckets."},
		{"downsampled", 150, 140, 47, "10 s buckets averaged 3 at a time; only the first 140 buckets"},
		{"long", 1000, 1000, 59, "averaged 17 at a time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mdFixture(analysis.Pass)
			r.Series.Baseline = r.Series.Baseline[:0]
			r.Series.Canary = r.Series.Canary[:0]
			for i := 0; i < tt.nb; i++ {
				r.Series.Baseline = append(r.Series.Baseline, analysis.Point{T: num(float64(10 * i)), GoodputRPS: num(float64(i % 5))})
			}
			for i := 0; i < tt.nc; i++ {
				r.Series.Canary = append(r.Series.Canary, analysis.Point{T: num(float64(10 * i)), GoodputRPS: num(2)})
			}
			var buf bytes.Buffer
			if err := Markdown(&buf, r, MarkdownOptions{}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "    line [") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 2 {
				t.Fatalf("want 2 chart lines, got %d", len(lines))
			}
			for _, l := range lines {
				if got := strings.Count(l, ",") + 1; got != tt.wantPoints || got > mdMaxChartPoints {
					t.Errorf("line has %d points, want %d (≤ %d)", got, tt.wantPoints, mdMaxChartPoints)
				}
			}
			if !strings.Contains(out, tt.wantNote) {
				t.Errorf("chart note lacks %q", tt.wantNote)
			}
		})
	}
}

func TestMarkdown_numbers(t *testing.T) {
	rel := &analysis.Metric{Scale: "relative", Unit: "s"}
	pp := &analysis.Metric{Scale: "absolute", Unit: "fraction"}
	sec := &analysis.Metric{Scale: "absolute", Unit: "s"}
	usd := &analysis.Metric{Scale: "absolute", Unit: "USD"}
	rps := &analysis.Metric{Scale: "absolute", Unit: "req/s"}
	tests := []struct {
		got, want string
	}{
		{mdDelta(rel, 0.231), "+23.1%"},
		{mdDelta(rel, -0.0094), "-0.94%"},
		{mdDelta(rel, -0.00001), "0.00%"},
		{mdDelta(pp, -0.0052), "-0.52 pp"},
		{mdDelta(pp, 0.021), "+2.1 pp"},
		{mdDelta(sec, 0.0141), "+14.1 ms"},
		{mdDelta(sec, -1.5), "-1.50 s"},
		{mdDelta(usd, 0.000015), "+$0.0000150"},
		{mdDelta(rps, 1.25), "+1.25 req/s"},
		{mdDelta(rel, math.NaN()), "—"},
		{mdMargin(&analysis.Metric{Scale: "relative", Margin: 0.1}), "10%"},
		{mdMargin(&analysis.Metric{Scale: "relative", Margin: 0.025}), "2.5%"},
		{mdMargin(&analysis.Metric{Scale: "absolute", Unit: "fraction", Margin: 0.01}), "1 pp"},
		{mdMargin(&analysis.Metric{Scale: "absolute", Unit: "s", Margin: 0.05}), "50 ms"},
		{mdThreshold(1), "1 s"},
		{mdThreshold(0.08), "80 ms"},
		{mdThreshold(0), "—"},
		{mdDurSetting(1.5), "1.5 s"},
		{mdValue(0.96, "fraction"), "96.0%"},
		{mdValue(0.9995, "fraction"), "99.95%"},
		{mdValue(0.004, "fraction"), "0.40%"},
		{mdValue(0.061, "s"), "61.0 ms"},
		{mdValue(0.00085, "s"), "850 µs"},
		{mdValue(17.5, "s"), "17.5 s"},
		{mdValue(0.000412, "USD"), "$0.000412"},
		{mdValue(12.345, "USD"), "$12.35"},
		{mdValue(12.8, "req/s"), "12.8 req/s"},
		{mdValue(2713.6, "tok/s"), "2,714 tok/s"},
		{mdValue(math.Inf(1), "req/s"), "—"},
		{mdInt(12000), "12,000"},
		{mdInt(-1234567), "-1,234,567"},
		{mdInt(999), "999"},
		{mdP(0.034), "0.034"},
		{mdP(0.5), "0.50"},
		{mdP(0.00002), "< 0.0001"},
		{mdP(math.NaN()), "—"},
		{mdSig(0.000123), "0.000123"},
		{mdSig(0), "0"},
		{mdChartNum(mdNiceCeil(14.08)), "20"},
		{mdChartNum(mdNiceCeil(0.9)), "1"},
		{mdChartNum(mdNiceCeil(230)), "250"},
		{mdChartNum(mdNiceCeil(0)), "1"},
		{mdChartNum(12.3456), "12.346"},
		{mdChartNum(-0.0001), "0"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("case %d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}

func TestGateSummary(t *testing.T) {
	r := mdFixture(analysis.Fail)
	want := []string{
		"slo_attainment pass: -0.52 pp [-0.91 pp, -0.13 pp] against the 1 pp margin (n = 12,000 / 11,950): harm is below the 1 pp margin with confidence",
		"tpot_p99 fail: +23.1% [+18.0%, +28.4%] against the 10% margin (n = 11,880 / 11,760): harm +23.1% is above the 10% margin with confidence",
		"error_rate pass: +0.46 pp [-0.04 pp, +0.49 pp] against the 0.5 pp guardrail margin (n = 11,940 / 11,880): no confident harm",
	}
	for i, idx := range []int{0, 2, 4} {
		if got := GateSummary(&r.Metrics[idx]); got != want[i] {
			t.Errorf("GateSummary\n got %q\nwant %q", got, want[i])
		}
	}
}

// A gate's reason already listed among the report's reasons is not
// repeated under the gate table; more-data estimates are added only when
// the reason does not give them.
func TestMarkdown_notesNotRepeated(t *testing.T) {
	r := mdFixture(analysis.Inconclusive)
	var buf bytes.Buffer
	if err := Markdown(&buf, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "- **tpot_p99** (inconclusive): the interval \\[+1.2%, +11.8%\\] contains the 10% margin — about 2.40× the data would decide it (16,615 more requests, ~21.0 min at the current rate)\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("lacks the gate note %q", want)
	}
	r.Reasons = []string{"tpot_p99: " + r.Metrics[2].Reason}
	buf.Reset()
	if err := Markdown(&buf, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "- **tpot_p99** (inconclusive)") {
		t.Error("the gate note repeats a listed reason")
	}
}

// BenchmarkMarkdown renders the fail fixture, and a report that must be
// trimmed (3,000 classes) to the PR comment limit.
func BenchmarkMarkdown(b *testing.B) {
	big := mdFixture(analysis.Fail)
	for i := 0; i < 3000; i++ {
		big.Classes = append(big.Classes, analysis.ClassRow{Class: "tenant-" + itoa(i)})
	}
	for _, bc := range []struct {
		name string
		r    *analysis.Report
		opt  MarkdownOptions
	}{
		{"fixture", mdFixture(analysis.Fail), MarkdownOptions{}},
		{"trimmed", big, MarkdownOptions{MaxBytes: 65536 - 25}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := Markdown(&buf, bc.r, bc.opt); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}

func TestMarkdown_trimNoteNamesTheLimit(t *testing.T) {
	big := mdFixture(analysis.Fail)
	for i := 0; i < 40000; i++ {
		big.Classes = append(big.Classes, analysis.ClassRow{Class: "tenant-" + itoa(i)})
	}
	var buf bytes.Buffer
	if err := Markdown(&buf, big, MarkdownOptions{MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Trimmed to fit the 1,048,576-byte limit; left out: per-class breakdown.") || buf.Len() > 1<<20 {
		t.Errorf("%d bytes; trim note: %q", buf.Len(), buf.String()[max(0, buf.Len()-200):])
	}
}

// TestMarkdown_firstLineTooLittleData: when the deciding gate could not be
// estimated, the headline gives its reason instead of empty numbers; one
// passing gate is not "1 of 1 gates".
func TestMarkdown_firstLineTooLittleData(t *testing.T) {
	nan := num(math.NaN())
	r := &analysis.Report{SchemaVersion: 1, Verdict: analysis.Inconclusive, Metrics: []analysis.Metric{{
		Name: "slo_attainment", Scale: "absolute", Unit: "fraction", Direction: "higher_is_better", Margin: 0.01,
		Baseline: 1, Canary: 1, Delta: nan, Interval: [2]analysis.Num{nan, nan}, Verdict: analysis.Inconclusive,
		Reason: "too little data: 1 and 1 buckets of 10s (need ≥ 8 per arm)", NBaseline: 40, NCanary: 40,
	}}}
	var buf bytes.Buffer
	if err := Markdown(&buf, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "⚠️ **inconclusive** — slo_attainment could not be estimated: too little data: 1 and 1 buckets of 10s (need ≥ 8 per arm)"
	if got, _, _ := strings.Cut(buf.String(), "\n"); got != want {
		t.Errorf("first line\n got %q\nwant %q", got, want)
	}
	r.Verdict = analysis.Pass
	r.Metrics[0].Verdict = analysis.Pass
	r.Metrics[0].Delta, r.Metrics[0].Interval = 0, [2]analysis.Num{-0.005, 0.005}
	buf.Reset()
	if err := Markdown(&buf, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := strings.Cut(buf.String(), "\n"); !strings.HasPrefix(got, "✅ **pass** — the gate is within its margin: slo_attainment") {
		t.Errorf("first line %q", got)
	}
}

// TestClassRowsFromMetrics: class rows read from histograms show their
// attainment as bounds and each p99 with its bucket's edges, in text and
// Markdown; a label from the metrics is escaped.
func TestClassRowsFromMetrics(t *testing.T) {
	b := func(lo, hi float64) *[2]analysis.Num { return &[2]analysis.Num{analysis.Num(lo), analysis.Num(hi)} }
	arm := analysis.ClassArm{Offered: 1000, Good: 980, Share: 0.5, SLOAttainment: 0.98, SLOAttainmentBounds: b(0.98, 0.99),
		TTFTP99: 0.8, TTFTP99Bounds: b(0.5, 1), TPOTP99: 0.3, TPOTP99Bounds: b(0.2, math.Inf(1))}
	r := &analysis.Report{SchemaVersion: 1, Verdict: analysis.Pass, Classes: []analysis.ClassRow{
		{Class: "chat", Baseline: arm, Canary: arm}, {Class: "lora_*x*", Baseline: arm, Canary: arm}}}
	var md, txt bytes.Buffer
	if err := Markdown(&md, r, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Text(&txt, r, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"98.0%–99.0%", "800 ms (500 ms–1.00 s)", "+Inf)", `lora\_\*x\*`, "attainment is bounded by the histograms"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	for _, want := range []string{"98.00–99.00%", "800.0ms (500.0ms–1.000s)", "300.0ms (200.0ms–+Inf)"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
}

// TestMarkdown_firstLineHeldByGuardrail: a guardrail that holds the run
// was headlined as a gate whose interval "cannot be told apart from the
// margin" (offered_rate_ratio, its interval wholly beyond its tolerance)
// or as one that "could not be estimated" (window_end, which has no
// interval); each now says it holds the run.
func TestMarkdown_firstLineHeldByGuardrail(t *testing.T) {
	nan := num(math.NaN())
	for _, tc := range []struct {
		m    analysis.Metric
		want string
	}{
		{analysis.Metric{Name: "offered_rate_ratio", Guardrail: true, Scale: "relative", Unit: "req/s", Direction: "two_sided", Margin: 0.10,
			Baseline: 7.927, Canary: 4.11, Delta: -0.482, Interval: [2]analysis.Num{-0.509, -0.453}, NBaseline: 3800, NCanary: 1972},
			"⚠️ **inconclusive** — offered_rate_ratio -48.2% [-50.9%, -45.3%] lies beyond its ±10% tolerance, which holds the run (guardrail) (n = 3,800 / 1,972)"},
		{analysis.Metric{Name: "window_end", Guardrail: true, Scale: "absolute", Unit: "seconds", Direction: "lower_is_better", Margin: 60,
			Baseline: 480, Canary: 310, Delta: -170, Interval: [2]analysis.Num{nan, nan}, Reason: "the canary's records end at 5:10 into the run"},
			"⚠️ **inconclusive** — window_end holds the run: the canary's records end at 5:10 into the run"},
		{analysis.Metric{Name: "offered_rate_ratio", Guardrail: true, Scale: "relative", Unit: "req/s", Direction: "two_sided", Margin: 0.10,
			Baseline: 8, Canary: 7.6, Delta: -0.05, Interval: [2]analysis.Num{-0.12, 0.02}, NBaseline: 100, NCanary: 95},
			"⚠️ **inconclusive** — offered_rate_ratio -5.0% [-12.0%, +2.0%] cannot be told apart from the 10% margin (n = 100 / 95)"},
	} {
		tc.m.Verdict = analysis.Inconclusive
		r := &analysis.Report{SchemaVersion: 1, Verdict: analysis.Inconclusive, Metrics: []analysis.Metric{tc.m}}
		var buf bytes.Buffer
		if err := Markdown(&buf, r, MarkdownOptions{}); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := strings.Cut(buf.String(), "\n"); got != tc.want {
			t.Errorf("first line\n got %q\nwant %q", got, tc.want)
		}
	}
}

// TestMdWorstHarm: the harmful end of a gate's interval (Metric.WorstHarm,
// which the headline reads), the farther end
// from no change for a two-sided gate, so a pass's headline names the
// gate that came closest to its margin on either side.
func TestMdWorstHarm(t *testing.T) {
	for _, c := range []struct {
		dir    string
		lo, hi float64
		want   float64
	}{
		{"higher_is_better", -0.012, 0.004, 0.012},
		{"lower_is_better", -0.02, 0.13, 0.13},
		{"two_sided", -0.01, 0.045, 0.045},
		{"two_sided", -0.048, 0.01, 0.048},
	} {
		m := &analysis.Metric{Direction: c.dir, Interval: [2]analysis.Num{analysis.Num(c.lo), analysis.Num(c.hi)}}
		if got := m.WorstHarm(); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%s [%g, %g]: %g, want %g", c.dir, c.lo, c.hi, got, c.want)
		}
	}
	r := &analysis.Report{Verdict: analysis.Pass, Metrics: []analysis.Metric{
		{Name: "slo_attainment", Verdict: analysis.Pass, Direction: "higher_is_better", Interval: [2]analysis.Num{-0.005, 0.004}, Margin: 0.01},
		{Name: "output_tokens_mean", Verdict: analysis.Pass, Direction: "two_sided", Scale: "relative", Interval: [2]analysis.Num{-0.01, 0.045}, Margin: 0.05},
	}}
	if m := mdDecisive(r); m == nil || m.Name != "output_tokens_mean" {
		t.Errorf("decisive gate %v, want output_tokens_mean (90%% of its margin used, on its upper side)", m)
	}
}
