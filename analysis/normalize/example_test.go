package normalize_test

import (
	"fmt"

	"github.com/goodput-dev/goodput/analysis/normalize"
)

// Standardise SLO attainment to the baseline's class mix: per class and
// bucket, good requests (Num) and offered requests (Den).
func ExampleStandardize() {
	const b = 8 // buckets (8 is the fewest for an interval)
	rep := func(v float64) []float64 {
		out := make([]float64, b)
		for i := range out {
			out[i] = v * float64(1+i%2) // busier every other bucket
		}
		return out
	}
	names := []string{"short", "long"}
	canary := normalize.Strata{Names: names,
		Num: [][]float64{rep(57), rep(32)}, Den: [][]float64{rep(60), rep(40)}} // 40% long prompts
	baseline := normalize.Strata{Names: names,
		Num: [][]float64{rep(76), rep(16)}, Den: [][]float64{rep(80), rep(20)}} // 20% long prompts
	w, err := normalize.Weights(normalize.MixBaseline, canary, baseline, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := normalize.Standardize(canary, baseline, w, 0.90)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("naive %+.2f pp, standardized %+.2f pp\n", 100*res.Naive.Point, 100*res.Adjusted.Point)
	// Output:
	// naive -3.00 pp, standardized +0.00 pp
}

// Detect and cut a cold start from per-bucket TTFT medians (seconds).
func ExampleWarmup() {
	series := make([]float64, 120) // 20 minutes of 10 s buckets
	for i := range series {
		series[i] = 0.30 + 0.01*float64(i%3)
		if i < 18 { // slow for the first 3 minutes
			series[i] = 0.9
		}
	}
	w := normalize.Warmup(series, normalize.WarmupOptions{})
	fmt.Println(w.Cut, w.Confirmed)
	// Output:
	// 20 true
}

func ExampleSRM() {
	r := normalize.SRM(900, 1100, 0.5)
	fmt.Println(r.Mismatch)
	fmt.Println(r.Reason)
	// Output:
	// true
	// traffic split 900/1100 (canary share 45.00%) sample ratio mismatch against the declared 50.00%: χ² = 20, p = 7.74e-06 (mismatch below 0.001)
}
