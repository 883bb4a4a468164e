package prometheus

import (
	"fmt"
	"math"
	"slices"

	"github.com/goodput-dev/goodput/sources"
	"github.com/prometheus/common/model"
)

// nativeHistogram turns a Prometheus native histogram as the HTTP API
// answers it (the "histogram" of a vector sample or the "histograms" of a
// matrix series: non-cumulative buckets [boundary rule, lower, upper,
// count] on exponential boundaries, with a zero bucket around 0) into the
// cumulative form classic histograms fill: Edges the buckets' upper
// boundaries ascending and +Inf, Counts the observations at or below each
// edge. Counts at the edges are exact, as a classic histogram's are at its
// le bounds: for the API's boundary rules 0 (open left, closed right) and
// 3 (closed both, the zero bucket) an edge's count is the observations ≤
// it; rules 1 and 2 (open right) give the observations < it, the same for
// a continuous latency. The +Inf edge holds the histogram's count.
// Latencies cannot be negative: a bucket whose upper boundary is below 0
// with a non-zero count, a negative or non-finite count, or a count below
// the buckets' sum is an error.
func nativeHistogram(h *model.SampleHistogram) (sources.Histogram, error) {
	if h == nil {
		return sources.Histogram{}, fmt.Errorf("native histogram: empty sample")
	}
	type b struct{ upper, count float64 }
	var bs []b
	for _, k := range h.Buckets {
		if k == nil {
			continue
		}
		up, c := float64(k.Upper), float64(k.Count)
		if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
			return sources.Histogram{}, fmt.Errorf("native histogram: bucket %s has count %g", k, c)
		}
		if c == 0 {
			continue
		}
		if math.IsNaN(up) || up < 0 {
			return sources.Histogram{}, fmt.Errorf("native histogram: bucket %s counts negative observations, which a latency cannot have", k)
		}
		bs = append(bs, b{up, c})
	}
	slices.SortFunc(bs, func(x, y b) int {
		switch {
		case x.upper < y.upper:
			return -1
		case x.upper > y.upper:
			return 1
		}
		return 0
	})
	out := sources.Histogram{}
	cum := 0.0
	for _, x := range bs {
		cum += x.count
		if n := len(out.Edges); n > 0 && out.Edges[n-1] == x.upper {
			out.Counts[n-1] = cum
			continue
		}
		out.Edges = append(out.Edges, x.upper)
		out.Counts = append(out.Counts, cum)
	}
	total := float64(h.Count)
	if math.IsNaN(total) || math.IsInf(total, 0) || total < cum*(1-1e-9)-1e-9 {
		return sources.Histogram{}, fmt.Errorf("native histogram: count %g is below the sum of its buckets %g", total, cum)
	}
	total = math.Max(total, cum)
	if n := len(out.Edges); n > 0 && math.IsInf(out.Edges[n-1], 1) {
		out.Counts[n-1] = total
		return out, nil
	}
	out.Edges = append(out.Edges, math.Inf(1))
	out.Counts = append(out.Counts, total)
	return out, nil
}
