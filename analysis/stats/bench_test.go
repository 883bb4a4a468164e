package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Run: go test -run '^$' -bench . -benchtime 3x ./analysis/stats/

func benchSamples(n int, seed uint64, scale float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	v := make([]float64, n)
	for i := range v {
		// millisecond-quantised lognormal latencies: realistic ties
		v[i] = math.Round(scale*math.Exp(-1+0.5*rng.NormFloat64())*1000) / 1000
	}
	return v
}

// BenchmarkMannWhitney: 1M canary vs 1M baseline latencies.
func BenchmarkMannWhitney(b *testing.B) {
	x, y := benchSamples(1_000_000, 1, 1.01), benchSamples(1_000_000, 2, 1)
	b.ResetTimer()
	for range b.N {
		if r := MannWhitney(x, y); math.IsNaN(r.P) {
			b.Fatal("NaN")
		}
	}
}

// BenchmarkHodgesLehmann: estimate and 95% interval, 1M vs 1M (10^12 pairs,
// never materialised).
func BenchmarkHodgesLehmann(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	x, y := make([]float64, 1_000_000), make([]float64, 1_000_000)
	for i := range x {
		x[i] = math.Exp(-1 + 0.5*rng.NormFloat64())
		y[i] = math.Exp(-1.01 + 0.5*rng.NormFloat64())
	}
	b.ResetTimer()
	for range b.N {
		if est, _ := HodgesLehmann(x, y, 0.95); math.IsNaN(est) {
			b.Fatal("NaN")
		}
	}
}

// BenchmarkBlockBootstrap: 2,000 circular block resamples of two arms of
// 10,000 buckets each, statistic = log ratio of ratios (cost per good request).
func BenchmarkBlockBootstrap(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	mk := func() Ratio {
		r := Ratio{Num: make([]float64, 10_000), Den: make([]float64, 10_000)}
		for i := range r.Num {
			r.Den[i] = 40 + float64(rng.IntN(20))
			r.Num[i] = r.Den[i] * (0.1 + 0.01*rng.NormFloat64())
		}
		return r
	}
	x, y := mk(), mk()
	stat := func(idx [][]int) float64 {
		var xn, xd, yn, yd float64
		for _, t := range idx[0] {
			xn += x.Num[t]
			xd += x.Den[t]
		}
		for _, t := range idx[1] {
			yn += y.Num[t]
			yd += y.Den[t]
		}
		return math.Log(xn / xd * yd / yn)
	}
	b.ResetTimer()
	for range b.N {
		lx, ly := BlockLength(x.Num), BlockLength(y.Num)
		reps := BlockBootstrap([]int{10_000, 10_000}, []int{lx, ly}, 2000, 1, stat)
		if len(reps) != 2000 {
			b.Fatal("short")
		}
	}
}

// BenchmarkQuantileLogRatio: p99 log ratio, 10,000 buckets × 20 requests per
// arm (200k samples each), 2,000 resamples.
func BenchmarkQuantileLogRatio(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	mk := func() [][]float64 {
		out := make([][]float64, 10_000)
		for t := range out {
			out[t] = make([]float64, 20)
			for i := range out[t] {
				out[t][i] = math.Exp(-1 + 0.5*rng.NormFloat64())
			}
		}
		return out
	}
	x, y := mk(), mk()
	b.ResetTimer()
	for range b.N {
		if e := QuantileLogRatio(x, y, 0.99, 0.9, 2000, 1); math.IsNaN(e.Point) {
			b.Fatal("NaN")
		}
	}
}
