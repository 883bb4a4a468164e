package stats_test

import (
	"fmt"

	"github.com/goodput-dev/goodput/analysis/stats"
)

// A non-inferiority gate on SLO attainment: canary and baseline bucket totals
// (good and offered requests per 10 s bucket), a 1 pp margin at one-sided
// α = 0.05, so the 90% interval of the harm (baseline − canary) decides.
func ExampleDiffOfRatios() {
	canary := stats.Ratio{Num: make([]float64, 60), Den: make([]float64, 60)}
	baseline := stats.Ratio{Num: make([]float64, 60), Den: make([]float64, 60)}
	for t := range 60 {
		canary.Den[t], baseline.Den[t] = 50, 50
		canary.Num[t] = 48 - float64(t%4/3) // 94–96% good, 95.5% overall
		baseline.Num[t] = 48 - float64(t%2) // 94–96% good, 95% overall
	}
	d := stats.DiffOfRatios(canary, baseline, 0.90)
	harm := stats.Interval{Lo: -d.CI.Hi, Hi: -d.CI.Lo}
	fmt.Printf("canary − baseline = %+.4f, harm interval [%.4f, %.4f] (%s)\n", d.Point, harm.Lo, harm.Hi, d.Method)
	fmt.Println("gate:", stats.NonInferiority(harm, 0.01))
	fmt.Printf("fail p-value: %.3f\n", stats.FailPValue(-d.Point, d.SE, 0.01))
	// Output:
	// canary − baseline = +0.0050, harm interval [-0.0058, -0.0042] (delta-batchmeans)
	// gate: pass
	// fail p-value: 1.000
}

// An inconclusive gate: harm 0.4 pp ± 1.645·0.4 pp against a 1 pp margin.
// About 1.2× the current requests would exclude the margin if the estimate
// held.
func ExampleMoreData() {
	harm, se, margin, z := 0.004, 0.004, 0.01, 1.6448536269514722
	fmt.Println(stats.NonInferiority(stats.Interval{Lo: harm - z*se, Hi: harm + z*se}, margin))
	fmt.Printf("%.2f\n", stats.MoreData(harm, se, margin, z))
	// Output:
	// inconclusive
	// 1.20
}

// Mann-Whitney with Hodges-Lehmann as the latency diagnostic: small samples
// with ties use the exact conditional distribution.
func ExampleMannWhitney() {
	canary := []float64{0.21, 0.25, 0.25, 0.30, 0.34, 0.41}
	baseline := []float64{0.18, 0.20, 0.21, 0.25, 0.27}
	// canary slower, with ties at 0.21 and 0.25
	r := stats.MannWhitney(canary, baseline)
	est, ci := stats.HodgesLehmann(canary, baseline, 0.95)
	fmt.Printf("U = %.1f, p = %.4f, exact = %v\n", r.U, r.P, r.Exact)
	fmt.Printf("shift %.3f s, 95%% [%.3f, %.3f]\n", est, ci.Lo, ci.Hi)
	// Output:
	// U = 24.5, p = 0.0909, exact = true
	// shift 0.060 s, 95% [-0.020, 0.160]
}
