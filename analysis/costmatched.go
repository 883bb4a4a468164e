package analysis

import (
	"math"

	"github.com/goodput-dev/goodput/analysis/stats"
)

// costCells are one arm's per-bucket cost (USD), seconds, good and offered
// requests over the buckets a matched-load cost comparison reads: each
// arm's analysed buckets, or for arms paired in time the shared grid, with
// zeros where the arm has no bucket.
type costCells struct {
	cost, secs, good, offered []float64
}

func newCostCells(n int) costCells {
	return costCells{cost: make([]float64, n), secs: make([]float64, n), good: make([]float64, n), offered: make([]float64, n)}
}

// matchedCostEstimate compares cost per good request at matched offered
// load, the canary's over the baseline's, on the log scale (see
// judgement.costMatched): per arm, log((C/S)/(G/O)) linearised per bucket,
// r_t = (C_t − (C/S)·S_t)/C − (G_t − (G/O)·O_t)/G, compared by batch means,
// paired when the arms are paired in time (then both cell series lie on
// one grid). False when an arm has no cost, time, good or offered
// requests, or no interval can be computed. Both judging paths call it.
func matchedCostEstimate(b, c costCells, paired bool, conf float64) (stats.Estimate, bool) {
	arm := func(x costCells) (stats.Ratio, bool) {
		n := len(x.cost)
		C, S, G, O := sum(x.cost), sum(x.secs), sum(x.good), sum(x.offered)
		if !(C > 0 && S > 0 && G > 0 && O > 0) {
			return stats.Ratio{}, false
		}
		v := (C / S) / (G / O)
		r := stats.Ratio{Num: make([]float64, n), Den: make([]float64, n)}
		for t := 0; t < n; t++ {
			u := (x.cost[t]-C/S*x.secs[t])/C - (x.good[t]-G/O*x.offered[t])/G
			// ratio v, residuals v·u_t: the log-scale delta method sees u_t
			r.Num[t] = v*u + v/float64(n)
			r.Den[t] = 1 / float64(n)
		}
		return r, true
	}
	rb, okb := arm(b)
	rc, okc := arm(c)
	if !okb || !okc {
		return stats.Estimate{}, false
	}
	est := stats.LogRatioOfRatios(rc, rb, conf)
	if paired {
		est = stats.PairedLogRatioOfRatios(rc, rb, conf)
	}
	est.Method += "-matched-load"
	return est, !math.IsNaN(est.Point)
}
