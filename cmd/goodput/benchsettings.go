package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// sameBenchmark refuses two arms whose benchmark results state different
// load or workload settings (sources.StatedSettings: the request rate,
// burstiness, concurrency cap, dataset and lengths). A benchmark compares
// two builds under one load on one workload; latencies at twice the rate,
// or on other prompts, say nothing about the build, and the judge cannot
// normalize load it has no arrival times for. A setting only one arm
// states, or that an arm's files state differently (that arm's own
// warning), is not compared. Arms naming different models are judged,
// with a warning on the canary: a quantized build may name its model
// apart.
func sameBenchmark(base, can *sources.Dataset) error {
	var diffs []string
	for _, k := range sources.StatedSettings() {
		b, okb := base.Stated[k]
		c, okc := can.Stated[k]
		if okb && okc && !sameSetting(b, c) {
			diffs = append(diffs, fmt.Sprintf("%s %s in the baseline against %s in the canary", k, strconv.Quote(b), strconv.Quote(c)))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the arms were benchmarked differently: %s (baseline %s, canary %s); a benchmark compares two builds under one load on one workload, and latencies at another rate or on other prompts say nothing about the build: rerun one arm with the other's settings (to compare capacity across rates, give each arm's rate sweep to goodput capacity)",
			strings.Join(diffs, ", "), inputPaths(base), inputPaths(can))
	}
	if b, c := base.Stated["model_id"], can.Stated["model_id"]; b != "" && c != "" && b != c {
		can.Warnings = append(can.Warnings, fmt.Sprintf("the arms name different models (model_id %s in the baseline, %s in the canary): judged as two builds of one service (a quantized build may name its model apart); if they are different models, the verdict is about the models, not a build",
			strconv.Quote(b), strconv.Quote(c)))
	}
	return nil
}

// sameSetting compares two stated settings as numbers when both are
// numbers (4 and 4.0 are one rate), else as text.
func sameSetting(a, b string) bool {
	x, errx := strconv.ParseFloat(a, 64)
	y, erry := strconv.ParseFloat(b, 64)
	if errx == nil && erry == nil {
		return x == y
	}
	return a == b
}

// inputPaths names an arm's inputs for a message: the first two paths
// and how many more, quoted.
func inputPaths(d *sources.Dataset) string {
	var names []string
	for i, in := range d.Inputs {
		if i == 2 {
			names = append(names, fmt.Sprintf("and %d more", len(d.Inputs)-2))
			break
		}
		names = append(names, strconv.Quote(in.Path))
	}
	return strings.Join(names, ", ")
}
