package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis"
)

func TestGateShortfall(t *testing.T) {
	for _, c := range []struct {
		name string
		m    analysis.Metric
		want float64
	}{
		// attainment, higher is better: the harmful end is the lower one
		{"attainment short of passing", analysis.Metric{Direction: "higher_is_better", Interval: [2]analysis.Num{-0.012, 0.004}, Margin: 0.01}, 0.002},
		{"attainment passing", analysis.Metric{Direction: "higher_is_better", Interval: [2]analysis.Num{-0.006, 0.004}, Margin: 0.01}, -0.004},
		// a p99 ratio, lower is better: the upper end
		{"tail short of passing", analysis.Metric{Direction: "lower_is_better", Scale: "relative", Interval: [2]analysis.Num{-0.02, 0.13}, Margin: 0.1}, 0.03},
		{"no interval", analysis.Metric{Direction: "lower_is_better", Interval: [2]analysis.Num{analysis.Num(math.Inf(-1)), analysis.Num(math.Inf(1))}, Margin: 0.1}, math.NaN()},
		// two-sided (output length either way): the end farther from 0
		{"two-sided, longer", analysis.Metric{Direction: "two_sided", Scale: "relative", Interval: [2]analysis.Num{0.01, 0.07}, Margin: 0.05}, 0.02},
		{"two-sided, shorter", analysis.Metric{Direction: "two_sided", Scale: "relative", Interval: [2]analysis.Num{-0.08, 0.02}, Margin: 0.05}, 0.03},
	} {
		got := gateShortfall(c.m)
		if math.IsNaN(c.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-c.want) > 1e-12) {
			t.Errorf("%s: %g, want %g", c.name, got, c.want)
		}
	}
}

func TestCalibrateGatesFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gates.md")
	_, stderr, err := runCalibrateCmd(t, "--scenarios", "steady,tail-regression", "--replicates", "2", "--duration", "10m", "--seed", "3",
		"--judges", "goodput", "--gates", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{"### `steady`", "### `tail-regression`", "| 1 | pass |", "| 2 | pass |"} {
		if !strings.Contains(md, want) {
			t.Errorf("gates file lacks %q:\n%s", want, md)
		}
	}
	// the regression's replicates fail, and the file names the gates that
	// did not pass with their interval and shortfall
	reg := md[strings.Index(md, "### `tail-regression`"):]
	if !strings.Contains(reg, "| 1 | fail | ") || !strings.Contains(reg, "beyond +") || !strings.Contains(reg, "| gate | replicates not passed |") {
		t.Errorf("the regression's breakdown names no failing gate:\n%s", reg)
	}
}
