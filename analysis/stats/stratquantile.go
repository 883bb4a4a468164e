package stats

import "math"

// stratPooled is one arm's samples sorted ascending, each tagged with its
// bucket and stratum.
type stratPooled struct {
	vals    []float64
	bucket  []int32
	stratum []int32
	counts  [][]int64 // [bucket][stratum] samples
	nStrata int
}

func newStratPooled(buckets [][]float64, strata [][]int32, nStrata int) (*stratPooled, bool) {
	p := &stratPooled{counts: make([][]int64, len(buckets)), nStrata: nStrata}
	var keys []uint64
	var ids []int32
	for b, s := range buckets {
		if len(strata[b]) != len(s) {
			return nil, false
		}
		p.counts[b] = make([]int64, nStrata)
		for k, v := range s {
			st := strata[b][k]
			if math.IsNaN(v) || st < 0 || int(st) >= nStrata {
				return nil, false
			}
			p.counts[b][st]++
			keys = append(keys, orderedBits(v))
			ids = append(ids, int32(len(ids)))
		}
	}
	// remember each sample's bucket and stratum by its input position
	bk := make([]int32, 0, len(keys))
	sk := make([]int32, 0, len(keys))
	for b, s := range buckets {
		for k := range s {
			bk = append(bk, int32(b))
			sk = append(sk, strata[b][k])
		}
	}
	radixSort(keys, ids)
	p.vals = make([]float64, len(keys))
	p.bucket = make([]int32, len(keys))
	p.stratum = make([]int32, len(keys))
	for i, k := range keys {
		p.vals[i] = fromOrderedBits(k)
		p.bucket[i], p.stratum[i] = bk[ids[i]], sk[ids[i]]
	}
	return p, len(keys) > 0
}

// quantile returns the q-quantile of the mixture Σ_s w_s·F_s of the
// arm's per-stratum empirical distributions, with bucket b's samples
// counted weight[b] times (nil = once each): each sample of stratum s
// weighs w_s/n_s. Strata with no samples drop out and the remaining
// weights are renormalised. Type 1: the smallest value whose cumulative
// weight reaches q.
func (p *stratPooled) quantile(q float64, w []float64, weight []int64) float64 {
	n := make([]float64, p.nStrata)
	for b, c := range p.counts {
		m := int64(1)
		if weight != nil {
			m = weight[b]
		}
		for s, k := range c {
			n[s] += float64(m * k)
		}
	}
	per := make([]float64, p.nStrata)
	W := 0.0
	for s := range per {
		if n[s] > 0 && w[s] > 0 {
			per[s] = w[s] / n[s]
			W += w[s]
		}
	}
	if !(W > 0) {
		return math.NaN()
	}
	wt := func(i int) float64 {
		m := 1.0
		if weight != nil {
			m = float64(weight[p.bucket[i]])
		}
		return m * per[p.stratum[i]]
	}
	if q <= 0.5 {
		need := q * W * (1 - 1e-12)
		acc := 0.0
		for i := range p.vals {
			if acc += wt(i); acc >= need && wt(i) > 0 {
				return p.vals[i]
			}
		}
		return math.NaN()
	}
	// from the top: the smallest i whose tail weight above it is ≤ (1−q)·W
	limit := (1 - q) * W * (1 + 1e-12)
	acc := 0.0
	for i := len(p.vals) - 1; i >= 0; i-- {
		wi := wt(i)
		if wi > 0 && acc+wi > limit {
			return p.vals[i]
		}
		acc += wi
	}
	return math.NaN()
}

// StratifiedQuantile is the q-quantile of the mixture Σ_s w_s·F_s of the
// per-stratum empirical distributions of bucketed samples x, stratum ids
// sx parallel to x (0 ≤ id < len(w)). NaN when no weighted stratum has a
// sample.
func StratifiedQuantile(x [][]float64, sx [][]int32, w []float64, q float64) float64 {
	p, ok := newStratPooled(x, sx, len(w))
	if !ok {
		return math.NaN()
	}
	return p.quantile(q, w, nil)
}

// StratifiedQuantileLogRatio is QuantileLogRatio for quantiles standardised
// to a reference mix: each arm's q-quantile is that of the mixture
// Σ_s w_s·F_s of its per-stratum empirical distributions (every sample of
// stratum s weighs w_s/n_s in its arm), so a shift of the arms' mixes
// between strata with different latencies does not move the comparison,
// and no sample is discarded. x, y are the canary's and baseline's samples
// per time bucket; sx, sy their stratum ids (parallel slices); wx, wy each
// arm's weights, summing to 1 — the reference weights, or an arm's own
// share for strata each arm keeps at its own (normalize.ArmWeights),
// held fixed in the resamples. The interval is the same circular block
// bootstrap with the expanded percentile level as QuantileLogRatio; each
// replicate recomputes the per-stratum counts n_s of its resample (Method
// "block-bootstrap-stratified").
func StratifiedQuantileLogRatio(x, y [][]float64, sx, sy [][]int32, wx, wy []float64, q, conf float64, B int, seed uint64) Estimate {
	est := Estimate{Point: math.NaN(), SE: math.NaN(), CI: Interval{math.Inf(-1), math.Inf(1)}, Method: "block-bootstrap-stratified"}
	if !(q > 0 && q < 1) || !(conf > 0 && conf < 1) || B < 1 || len(x) != len(sx) || len(y) != len(sy) || len(wx) != len(wy) {
		return est
	}
	px, okx := newStratPooled(x, sx, len(wx))
	py, oky := newStratPooled(y, sy, len(wy))
	if !okx || !oky {
		return est
	}
	qx, qy := px.quantile(q, wx, nil), py.quantile(q, wy, nil)
	if !(qx > 0 && qy > 0) {
		return est
	}
	est.Point = math.Log(qx / qy)
	if len(x) < minBuckets || len(y) < minBuckets {
		return est
	}
	return quantileRatioInterval(est, x, y, qx, qy, q, conf, B, seed,
		func(counts []int64) float64 { return px.quantile(q, wx, counts) },
		func(counts []int64) float64 { return py.quantile(q, wy, counts) })
}
