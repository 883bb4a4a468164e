package tui

import (
	"math"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/analysis"
)

const na = "n/a"

func bad(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }

// fmtG formats f with about sig significant digits and no exponent for the
// magnitudes a report holds.
func fmtG(f float64, sig int) string {
	if bad(f) {
		return na
	}
	a := math.Abs(f)
	switch {
	case a == 0:
		return "0"
	case a >= 1e6 || a < 1e-4:
		return strconv.FormatFloat(f, 'g', sig, 64)
	}
	digits := sig - 1 - int(math.Floor(math.Log10(a)))
	if digits < 0 {
		digits = 0
	}
	out := strconv.FormatFloat(f, 'f', digits, 64)
	if strings.Contains(out, ".") {
		out = strings.TrimRight(strings.TrimRight(out, "0"), ".")
	}
	if out == "-0" {
		out = "0"
	}
	return out
}

// fmtSeconds prints a duration given in seconds: ms below one second.
func fmtSeconds(s float64) string {
	if bad(s) {
		return na
	}
	if math.Abs(s) < 1 {
		return fmtG(s*1000, 3) + " ms"
	}
	return fmtG(s, 3) + " s"
}

// fmtInt prints n with thousands separators.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtPct prints a fraction (0..1) as a percentage.
func fmtPct(f float64) string {
	if bad(f) {
		return na
	}
	return strconv.FormatFloat(f*100, 'f', 2, 64) + " %"
}

// fmtValue prints a gate's arm value in its unit.
func fmtValue(v analysis.Num, unit string) string {
	f := float64(v)
	if bad(f) {
		return na
	}
	switch unit {
	case "fraction":
		return fmtPct(f)
	case "s":
		return fmtSeconds(f)
	case "USD":
		return "$" + fmtG(f, 4)
	case "":
		return fmtG(f, 4)
	}
	return fmtG(f, 4) + " " + unit
}

// fmtCompact prints a gate's arm value for a table whose header names the
// unit: units other than fraction, seconds and USD are left out.
func fmtCompact(v analysis.Num, unit string) string {
	switch unit {
	case "fraction", "s", "USD", "":
		return fmtValue(v, unit)
	}
	return fmtValue(v, "")
}

// deltaUnit is the unit suffix of a gate's Delta, Interval and Margin.
func deltaUnit(g *analysis.Metric) (scale float64, suffix string) {
	if g.Scale == "relative" {
		return 100, "%"
	}
	switch g.Unit {
	case "fraction":
		return 100, "pp"
	case "s":
		return 1000, "ms"
	case "USD":
		return 1, "USD"
	}
	return 1, g.Unit
}

func signed(f float64, sig int) string {
	if bad(f) {
		return na
	}
	s := fmtG(f, sig)
	if f > 0 {
		return "+" + s
	}
	return s
}

// fmtDelta prints a gate's Delta (canary − baseline, or the relative change).
func fmtDelta(g *analysis.Metric, d analysis.Num) string {
	k, u := deltaUnit(g)
	if bad(float64(d)) {
		return na
	}
	return strings.TrimSpace(signed(float64(d)*k, 3) + " " + u)
}

// fmtInterval prints a gate's interval on the Delta scale.
func fmtInterval(g *analysis.Metric, iv [2]analysis.Num) string {
	k, u := deltaUnit(g)
	if bad(float64(iv[0])) && bad(float64(iv[1])) {
		return na
	}
	return strings.TrimSpace("[" + signed(float64(iv[0])*k, 3) + ", " + signed(float64(iv[1])*k, 3) + "] " + u)
}

// fmtMargin prints a gate's margin on the Delta scale.
func fmtMargin(g *analysis.Metric) string {
	k, u := deltaUnit(g)
	if bad(float64(g.Margin)) {
		return na
	}
	return strings.TrimSpace(fmtG(float64(g.Margin)*k, 3) + " " + u)
}

// fmtAxis prints a tick value already on the display scale.
func fmtAxis(f float64) string {
	return fmtG(f, 3)
}
