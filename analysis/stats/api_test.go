package stats_test

import "github.com/goodput-dev/goodput/analysis/stats"

// The judge depends on these exact signatures; changing one must be a
// deliberate, compile-breaking decision.
var (
	_ func(k, n, conf float64) stats.Interval                                              = stats.Wilson
	_ func(k1, n1, k2, n2, conf float64) stats.Interval                                    = stats.NewcombeDiff
	_ func(a, b, c, d int64) stats.FisherResult                                            = stats.FisherExact
	_ func(x, y []float64) stats.MWResult                                                  = stats.MannWhitney
	_ func(x, y []float64, conf float64) (float64, stats.Interval)                         = stats.HodgesLehmann
	_ func(x, y []float64, conf float64) stats.WelchResult                                 = stats.Welch
	_ func(x, y stats.Ratio, conf float64) stats.Estimate                                  = stats.DiffOfRatios
	_ func(x, y stats.Ratio, conf float64) stats.Estimate                                  = stats.LogRatioOfRatios
	_ func(x, y [][]float64, q, conf float64, B int, seed uint64) stats.Estimate           = stats.QuantileLogRatio
	_ func(harm stats.Interval, margin float64) stats.Decision                             = stats.NonInferiority
	_ func(harm stats.Interval, margin float64) stats.Decision                             = stats.Guardrail
	_ func(harmPoint, se, threshold float64) float64                                       = stats.FailPValue
	_ func(p []float64) []float64                                                          = stats.Holm
	_ func(p []float64) []float64                                                          = stats.BH
	_ func(harmPoint, se, margin, z float64) float64                                       = stats.MoreData
	_ func(observed, expectedShare []float64) (float64, float64)                           = stats.SRM
	_ func(buckets, block []int, B int, seed uint64, stat func([][]int) float64) []float64 = stats.BlockBootstrap

	_ = stats.FisherResult{PTwoSided: 0, PLess: 0, PGreater: 0, OddsRatio: 0}
	_ = stats.MWResult{U: 0, Z: 0, P: 0, Exact: false}
	_ = stats.WelchResult{T: 0, DF: 0, P: 0, Diff: 0, CI: stats.Interval{Lo: 0, Hi: 0}}
	_ = stats.Estimate{Point: 0, CI: stats.Interval{}, SE: 0, Method: ""}
	_ = []stats.Decision{stats.Pass, stats.Fail, stats.Inconclusive}
)
