package tui

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis"
)

func TestClean(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"red \x1b[31mword\x1b[0m", "red word"},
		{"title \x1b]0;pwned\x07after", "title after"},
		{"clear\x1b[2J\x1b[Hscreen", "clearscreen"},
		{"tab\tnew\nline\rcr", "tab new line cr"},
		{"bell\x07nul\x00del\x7f", "bellnuldel"},
		{"c1 \u009b31m csi", "c1 31m csi"},
		{"bidi \u202eevil\u202c \u2066x\u2069", "bidi evil x"},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"ünïcödé ✓ 漢字", "ünïcödé ✓ 漢字"},
		{"lone esc \x1b", "lone esc "},
	}
	for _, tt := range tests {
		if got := clean(tt.in); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSanitizeReportCopies(t *testing.T) {
	r := richReport()
	r.Metrics[0].Name = "gate\x1b[1m"
	r.Warnings[0] = "w\x1b[2J"
	r.Inputs[0].Path = "p\x07"
	c := sanitizeReport(r)
	if c.Metrics[0].Name != "gate" || c.Warnings[0] != "w" || c.Inputs[0].Path != "p" {
		t.Fatalf("not cleaned: %q %q %q", c.Metrics[0].Name, c.Warnings[0], c.Inputs[0].Path)
	}
	if r.Metrics[0].Name != "gate\x1b[1m" || r.Warnings[0] != "w\x1b[2J" {
		t.Fatal("sanitizeReport modified its input")
	}
}

func TestFormat(t *testing.T) {
	rel := &analysis.Metric{Scale: "relative", Unit: "s"}
	absFrac := &analysis.Metric{Scale: "absolute", Unit: "fraction", Margin: 0.01}
	absSec := &analysis.Metric{Scale: "absolute", Unit: "s", Margin: 0.05}
	nan := analysis.Num(math.NaN())
	tests := []struct{ got, want string }{
		{fmtG(0.123456, 3), "0.123"},
		{fmtG(10.0, 3), "10"},
		{fmtG(-0.00049, 3), "-0.00049"},
		{fmtG(1234567, 3), "1.23e+06"},
		{fmtG(math.Inf(1), 3), "n/a"},
		{fmtSeconds(0.0821), "82.1 ms"},
		{fmtSeconds(1.5), "1.5 s"},
		{fmtInt(1234567), "1,234,567"},
		{fmtInt(-1000), "-1,000"},
		{fmtInt(999), "999"},
		{fmtPct(0.95123), "95.12 %"},
		{fmtValue(0.9, "fraction"), "90.00 %"},
		{fmtValue(0.0021, "USD"), "$0.0021"},
		{fmtValue(4.755, "req/s/replica"), "4.755 req/s/replica"},
		{fmtCompact(4.755, "req/s/replica"), "4.755"},
		{fmtValue(nan, "s"), "n/a"},
		{fmtDelta(rel, 0.268), "+26.8 %"},
		{fmtDelta(absFrac, -0.0023), "-0.23 pp"},
		{fmtDelta(absSec, 0.012), "+12 ms"},
		{fmtDelta(rel, nan), "n/a"},
		{fmtInterval(absFrac, [2]analysis.Num{-0.0071, 0.0025}), "[-0.71, +0.25] pp"},
		{fmtMargin(absFrac), "1 pp"},
		{fmtInterval(rel, [2]analysis.Num{nan, nan}), "n/a"},
		{fmtInterval(rel, [2]analysis.Num{nan, 0.1}), "[n/a, +10] %"},
		{fmtMargin(absSec), "50 ms"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}

func TestCDFAt(t *testing.T) {
	p := []analysis.Num{0, 0.5, 1}
	q := []analysis.Num{1, 2, 4}
	tests := []struct{ x, want float64 }{{0.5, 0}, {1, 0}, {1.5, 0.25}, {2, 0.5}, {3, 0.75}, {4, 1}, {9, 1}}
	for _, tt := range tests {
		if got := cdfAt(q, p, tt.x); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("cdfAt(%v) = %v, want %v", tt.x, got, tt.want)
		}
	}
	// ties: a flat run of equal quantiles jumps to the highest probability
	if got := cdfAt([]analysis.Num{1, 1, 1, 2}, []analysis.Num{0, 0.3, 0.6, 1}, 1); got != 0.6 {
		t.Errorf("ties: %v", got)
	}
	if got := quantileAt(q, p, 0.99); !math.IsNaN(got) {
		t.Errorf("quantileAt off-grid = %v, want NaN", got)
	}
}

// runeIndex is the cell position of r in s (all glyphs here are one cell).
func runeIndex(s string, r rune) int {
	for i, c := range []rune(s) {
		if c == r {
			return i
		}
	}
	return -1
}

func TestNumberLineMarksMargin(t *testing.T) {
	st := newStyles(nil, true)
	// lower is better: harm is +delta, the fail zone lies right of +margin
	g := &analysis.Metric{Verdict: analysis.Fail, Direction: "lower_is_better", Scale: "relative", Delta: 0.27,
		Interval: [2]analysis.Num{0.18, 0.36}, Margin: 0.10}
	lines := numberLine(st, g, 80)
	zone, bar := lines[1], lines[2]
	bound := runeIndex(zone, '┊')
	lo := runeIndex(bar, '[')
	if bound < 0 || lo < 0 || lo <= bound {
		t.Fatalf("interval start %d should lie right of the margin %d:\n%s", lo, bound, strings.Join(lines, "\n"))
	}
	if z := []rune(zone); !strings.ContainsRune(string(z[bound:]), '░') || strings.ContainsRune(string(z[:bound]), '░') {
		t.Fatalf("fail zone on the wrong side:\n%s", zone)
	}
	// higher is better: the fail zone lies left of -margin
	g = &analysis.Metric{Verdict: analysis.Pass, Direction: "higher_is_better", Scale: "absolute", Unit: "fraction",
		Delta: -0.002, Interval: [2]analysis.Num{-0.007, 0.003}, Margin: 0.01}
	lines = numberLine(st, g, 80)
	zone, bar = lines[1], lines[2]
	bound = runeIndex(zone, '┊')
	if z := []rune(zone); !strings.ContainsRune(string(z[:bound]), '░') || strings.ContainsRune(string(z[bound:]), '░') || runeIndex(bar, '[') <= bound {
		t.Fatalf("higher-is-better line wrong:\n%s", strings.Join(lines, "\n"))
	}
	// two-sided: fail zones left of −margin and right of +margin, the
	// interval between them
	g = &analysis.Metric{Verdict: analysis.Pass, Direction: "two_sided", Scale: "relative", Unit: "tokens",
		Delta: 0.01, Interval: [2]analysis.Num{-0.02, 0.03}, Margin: 0.05}
	lines = numberLine(st, g, 80)
	zone, bar = lines[1], lines[2]
	z := []rune(zone)
	left, right := runeIndex(zone, '┊'), strings.LastIndex(zone, "┊")
	right = len([]rune(zone[:right]))
	lo, hi := runeIndex(bar, '['), runeIndex(bar, ']')
	if left < 0 || right <= left || !strings.ContainsRune(string(z[:left]), '░') || !strings.ContainsRune(string(z[right:]), '░') ||
		strings.ContainsRune(string(z[left:right]), '░') || lo <= left || hi >= right {
		t.Fatalf("two-sided line wrong (margins at %d and %d, interval %d–%d):\n%s", left, right, lo, hi, strings.Join(lines, "\n"))
	}
	if !strings.Contains(lines[len(lines)-1], "margin -5") || !strings.Contains(lines[len(lines)-1], "margin 5") {
		t.Errorf("axis labels lack both margins:\n%s", strings.Join(lines, "\n"))
	}
}
