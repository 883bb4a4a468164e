package analysis

import (
	"math"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/sources"
)

// aggSeries is the aggregate's per-slice figures for the time view, as the
// request path's (seriesOf): every slice of each arm as measured
// (the canary before any mix reweighting), the slices of the warm-up cut
// included and marked, T in seconds from the arm's first slice. Good
// requests are counted (an exact aggregate) or their lower bound
// (metrics); the TTFT quantiles are interpolated inside the slice's bins.
// b is the baseline, c the canary as counted.
func aggSeries(b, c *aggArm) Series {
	s := Series{BucketSeconds: Num(b.ds.Agg.Step)}
	pts := func(a *aggArm) []Point {
		out := make([]Point, 0, len(a.precut)+len(a.slices))
		all := append(append(make([]aggSlice, 0, len(a.precut)+len(a.slices)), a.precut...), a.slices...)
		t0 := all[0].start
		for i, sl := range all {
			out = append(out, Point{T: Num(sl.start - t0), Offered: int64(math.Round(sl.offered())), Good: int64(math.Round(sl.goodLo)),
				GoodputRPS: Num(sl.goodLo / sl.secs()), TTFTP50: Num(histo.Quantile(0.5, sl.ttft)), TTFTP99: Num(histo.Quantile(0.99, sl.ttft)),
				Cut: i < len(a.precut), LeftOut: sl.leftOut})
		}
		return out
	}
	s.Baseline, s.Canary = pts(b), pts(c)
	return s
}

// aggDistributions is the aggregate's latency quantile curves for the CDF
// view, as the request path's (distributionsOf): completed
// requests of the analysed slices, the canary as measured. A quantile is
// interpolated inside the bin that holds it, so it lies in the same bin
// as the request path's (an observed value, the ⌈q·n⌉-th smallest): for
// an exact aggregate within a factor 2^(1/256) of it. The curve starts
// (probability 0) at the lower edge of the lowest non-empty bin and ends
// (probability 1) at the upper edge of the highest.
// b is the baseline, c the canary as counted.
func aggDistributions(b, c *aggArm) Distributions {
	ps := distributionProbs()
	d := Distributions{Probs: make([]Num, len(ps))}
	for i, q := range ps {
		d.Probs[i] = Num(q)
	}
	curve := func(a *aggArm, latency string) []Num {
		h := pooledHist(a, latency)
		out := make([]Num, len(ps))
		for i, q := range ps {
			out[i] = Num(histo.Quantile(q, h))
		}
		if ps[0] == 0 {
			// the minimum: histo.Quantile has no rank inside a bin for it
			out[0] = Num(lowestEdge(h))
		}
		return out
	}
	d.TTFT = ArmQuantCurve{Baseline: curve(b, "ttft"), Canary: curve(c, "ttft")}
	d.TPOT = ArmQuantCurve{Baseline: curve(b, "tpot"), Canary: curve(c, "tpot")}
	return d
}

// pooledHist is an arm's histogram of a latency (ttft, tpot or e2e) over
// its analysed slices.
func pooledHist(a *aggArm, latency string) sources.Histogram {
	var sum histo.Sum
	for i := range a.slices {
		sum.Add(latencyOfSlice(&a.slices[i], latency))
	}
	return sum.Histogram()
}

// lowestEdge is the lower edge of a histogram's lowest non-empty bucket,
// where its quantile curve starts (0 for a first bucket starting at 0, as
// histo.Quantile takes it); NaN when the histogram is empty.
func lowestEdge(h sources.Histogram) float64 {
	for i, c := range h.Counts {
		if c > 0 {
			if i == 0 {
				return math.Min(h.Edges[0], 0)
			}
			return h.Edges[i-1]
		}
	}
	return math.NaN()
}
