package analysis

import (
	"fmt"
	"math"
	"sort"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/loglin"
	"gonum.org/v1/gonum/stat/distuv"
)

// Diagnostics of an exact aggregate (Aggregate.Exact): the request path's
// Mann-Whitney U and Hodges-Lehmann shift (diagnostics.go), computed from
// each arm's latency bins pooled over the analysed slices instead of the
// values. Every value is known only within its log-linear bin (sources/
// loglin: Prometheus schema 8, 256 bins per octave, a factor 2^(1/256) ≈
// 1.0027 wide); both arms share the grid, so two values in different bins
// are ordered exactly and two in one bin are not. The figures are made
// never less cautious than the request path's on the same requests:
//
//   - U counts the pairs in one bin as ties (½ each), so it lies within
//     ±½·Σ_bins n_canary·n_baseline of the exact U; the p-value is taken at
//     the end of that range nearest to no difference (n1·n2/2) with the
//     variance without tie correction (the largest any values in those bins
//     give) and the ½ continuity correction, so it is never below the
//     request path's normal-approximation p-value, and the
//     Benjamini-Hochberg q-values, monotone in every p, never below its
//     q-values;
//   - the Hodges-Lehmann shift (median of the n1·n2 pairwise differences)
//     is the median with every value spread evenly over its bin, so that
//     two values in one bin differ by a small symmetric amount rather than
//     by exactly 0 (with every value at its bin's midpoint, the many
//     same-bin pairs at exactly 0 pull the median to 0 when the shift is
//     below a bin's width: the E2E bins near 2.6 s are 7 ms wide); the
//     exact shift lies between the medians with every canary value at its
//     bin's lower edge and every baseline value at its upper edge, and the
//     other way round (the note gives both, and the estimate is kept
//     inside them); its 95% interval's ends are the request path's order
//     statistics taken at those two outer ends, so the interval holds the
//     request path's interval.
//
// With at most stats.ExactMaxN requests in both arms the request path uses
// the exact permutation distribution, which needs the values: no
// diagnostic is computed then (nor from metrics histograms, whose buckets
// are not one shared fine grid).

// latBin is one non-empty bin of an arm's pooled latency histogram: n
// values in (lo, hi], seconds; lo == hi for the zero bin (values ≤ 0).
type latBin struct{ lo, hi, n float64 }

// pooledBins is an arm's histogram of latency (ttft, tpot or e2e) over its
// analysed slices as ascending bins; ok is false when a slice's histogram is
// not a log-linear (sparse) one.
func pooledBins(a *aggArm, latency string) (bins []latBin, ok bool) {
	for i := range a.slices {
		if s := latencyOfSlice(&a.slices[i], latency); len(s.Edges) > 0 && !s.Sparse {
			return nil, false
		}
	}
	return binsOf(pooledHist(a, latency)), true
}

// binsOf lists a cumulative histogram's non-empty bins in ascending order.
func binsOf(h sources.Histogram) (bins []latBin) {
	prevEdge, prevCum := 0.0, 0.0
	for i, e := range h.Edges {
		c := h.Counts[i]
		if d := c - prevCum; d > 0 {
			lo := prevEdge
			if i == 0 {
				// only the zero bin has no lower edge listed
				lo = math.Min(e, 0)
			}
			bins = append(bins, latBin{lo: lo, hi: e, n: d})
		}
		prevEdge, prevCum = e, math.Max(prevCum, c)
	}
	return bins
}

// binGroup is one bin of the two arms' shared grid with each arm's count.
type binGroup struct {
	lo, hi float64
	nc, nb float64
}

// alignBins lays the canary's and the baseline's bins on one ascending
// list; ok is false when two bins overlap without being the same bin (not
// one grid).
func alignBins(c, b []latBin) ([]binGroup, bool) {
	out := make([]binGroup, 0, max(len(c), len(b)))
	i, k := 0, 0
	for i < len(c) || k < len(b) {
		switch {
		case i < len(c) && k < len(b) && c[i].lo == b[k].lo && c[i].hi == b[k].hi:
			out = append(out, binGroup{lo: c[i].lo, hi: c[i].hi, nc: c[i].n, nb: b[k].n})
			i++
			k++
		case k == len(b) || i < len(c) && c[i].hi <= b[k].lo:
			out = append(out, binGroup{lo: c[i].lo, hi: c[i].hi, nc: c[i].n})
			i++
		case i == len(c) || b[k].hi <= c[i].lo:
			out = append(out, binGroup{lo: b[k].lo, hi: b[k].hi, nb: b[k].n})
			k++
		default:
			return nil, false
		}
	}
	return out, true
}

// binnedMW is the Mann-Whitney U of the canary from aligned bins: uLo and
// uHi bound the exact U (pairs in one bin ordered all one way or all the
// other), uMid counts them as ties; p is the cautious two-sided p-value
// and z its signed statistic (see the comment at the top of the file).
type binnedMW struct {
	uLo, uMid, uHi float64
	z, p           float64
}

func mannWhitneyBins(g []binGroup) binnedMW {
	var r binnedMW
	var below, n1, n2 float64
	for _, x := range g {
		r.uLo += x.nc * below
		r.uMid += x.nc * (below + x.nb/2)
		r.uHi += x.nc * (below + x.nb)
		below += x.nb
		n1 += x.nc
		n2 += x.nb
	}
	mu := n1 * n2 / 2
	d := 0.0 // distance from mu to the nearest U the bins allow
	switch {
	case r.uLo > mu:
		d = r.uLo - mu
	case r.uHi < mu:
		d = mu - r.uHi
	}
	sd := math.Sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
	r.p = 1
	if sd > 0 && d > 0.5 {
		zAbs := (d - 0.5) / sd
		r.p = math.Min(1, math.Erfc(zAbs/math.Sqrt2)) // 2·Φ(−z), accurate far in the tail
		r.z = math.Copysign(zAbs, r.uMid-mu)
	}
	return r
}

// diffOrder finds order statistics of the n1·n2 pairwise differences
// x − y, x from xs (weights xw), y from ys (weights yw), both ascending,
// each value standing for as many values as its weight. The differences
// are never listed: a count of pairs with x − y ≤ t costs one pass over
// both lists, and kth bisects over the float64 values.
type diffOrder struct {
	xs, xw, ys []float64
	suffix     []float64 // suffix[j] = Σ yw[j:]
	total      float64
}

func newDiffOrder(xs, xw, ys, yw []float64) *diffOrder {
	d := &diffOrder{xs: xs, xw: xw, ys: ys, suffix: make([]float64, len(ys)+1)}
	for j := len(ys) - 1; j >= 0; j-- {
		d.suffix[j] = d.suffix[j+1] + yw[j]
	}
	for _, w := range xw {
		d.total += w
	}
	d.total *= d.suffix[0]
	return d
}

// atMost is the number of pairs with fl(x − y) ≤ t. fl(x − y) falls as y
// grows and rises with x, so the qualifying y of each x are a suffix of ys
// that starts no earlier for a larger x.
func (d *diffOrder) atMost(t float64) float64 {
	var c float64
	j := 0
	for i, x := range d.xs {
		for j < len(d.ys) && x-d.ys[j] > t {
			j++
		}
		c += d.xw[i] * d.suffix[j]
	}
	return c
}

// kth is the k-th smallest difference (1 ≤ k ≤ total): the smallest
// float64 t with atMost(t) ≥ k, which is a difference itself.
func (d *diffOrder) kth(k float64) float64 {
	lo := orderKey(d.xs[0]-d.ys[len(d.ys)-1]) - 1 // atMost < k
	hi := orderKey(d.xs[len(d.xs)-1] - d.ys[0])   // atMost = total ≥ k
	// the keys' span may pass MaxInt64: compare it unsigned
	for uint64(hi-lo) > 1 {
		mid := lo + int64(uint64(hi-lo)/2)
		if d.atMost(fromOrderKey(mid)) >= k {
			hi = mid
		} else {
			lo = mid
		}
	}
	return fromOrderKey(hi)
}

// median is the median of the differences, the mean of the two middle
// ones when their number is even (as stats.HodgesLehmann).
func (d *diffOrder) median() float64 {
	if math.Mod(d.total, 2) == 1 {
		return d.kth((d.total + 1) / 2)
	}
	return d.kth(d.total/2)/2 + d.kth(d.total/2+1)/2
}

// orderKey maps float64 values (not NaN) onto int64 keys in the same
// order, consecutive floats to consecutive keys.
func orderKey(f float64) int64 {
	b := int64(math.Float64bits(f))
	if b < 0 {
		return math.MinInt64 - b
	}
	return b
}

func fromOrderKey(k int64) float64 {
	if k < 0 {
		return math.Float64frombits(uint64(math.MinInt64 - k))
	}
	return math.Float64frombits(uint64(k))
}

// smoothCDF is the canary's count of values ≤ s with its values spread
// evenly over their bins (the histogram's ogive), and its integral, for the
// smoothed pairwise-difference count (smoothDiff).
type smoothCDF struct {
	lo, hi []float64 // bins, ascending
	n      []float64
	// cumN[k], cumMid[k]: Σ n and Σ n·midpoint over bins before k
	cumN, cumMid []float64
}

func newSmoothCDF(lo, hi, n []float64) *smoothCDF {
	c := &smoothCDF{lo: lo, hi: hi, n: n, cumN: make([]float64, len(n)+1), cumMid: make([]float64, len(n)+1)}
	for k := range n {
		c.cumN[k+1] = c.cumN[k] + n[k]
		c.cumMid[k+1] = c.cumMid[k] + n[k]*(lo[k]/2+hi[k]/2)
	}
	return c
}

// integral is ∫_{−∞}^s F(u) du for the ogive F: a bin wholly below s adds
// n·(s − its midpoint), the bin holding s n·(s − lo)²/(2·width).
func (c *smoothCDF) integral(s float64) float64 {
	k := sort.Search(len(c.hi), func(i int) bool { return c.hi[i] > s }) // bins before k end at or below s
	g := s*c.cumN[k] - c.cumMid[k]
	if k < len(c.hi) && s > c.lo[k] {
		w := c.hi[k] - c.lo[k]
		g += c.n[k] * (s - c.lo[k]) * (s - c.lo[k]) / (2 * w)
	}
	return g
}

// at is F(s), the count of values ≤ s, interpolated inside a bin.
func (c *smoothCDF) at(s float64) float64 {
	k := sort.Search(len(c.hi), func(i int) bool { return c.hi[i] > s })
	f := c.cumN[k]
	if k < len(c.hi) && s > c.lo[k] {
		f += c.n[k] * (s - c.lo[k]) / (c.hi[k] - c.lo[k])
	}
	return f
}

// smoothDiff counts the pairs with canary − baseline ≤ t when every value
// is spread evenly over its bin: Σ_l n_l · mean over v in baseline bin l
// of F_canary(t + v). Two values in one bin then differ by a triangular
// amount around 0 rather than by exactly 0, so the median of the
// differences does not stick to 0 when the shift is smaller than a bin.
func smoothDiff(c *smoothCDF, bLo, bHi, bN []float64, t float64) float64 {
	var total float64
	for l := range bN {
		if w := bHi[l] - bLo[l]; w > 0 {
			total += bN[l] * (c.integral(t+bHi[l]) - c.integral(t+bLo[l])) / w
		} else {
			total += bN[l] * c.at(t+bLo[l])
		}
	}
	return total
}

// binnedHL is the Hodges-Lehmann shift canary − baseline from aligned
// bins (see the comment at the top of the file): est the median of the
// differences with every value spread evenly over its bin, [estLo, estHi]
// the range the exact estimate lies in (every difference at its smallest,
// and at its largest), ci the 95% interval taken at those outer ends.
type binnedHL struct {
	est, estLo, estHi float64
	ci                stats.Interval
}

func hodgesLehmannBins(g []binGroup, conf float64) binnedHL {
	var cLo, cHi, cw, bLo, bHi, bw []float64
	for _, x := range g {
		if x.nc > 0 {
			cLo, cHi, cw = append(cLo, x.lo), append(cHi, x.hi), append(cw, x.nc)
		}
		if x.nb > 0 {
			bLo, bHi, bw = append(bLo, x.lo), append(bHi, x.hi), append(bw, x.nb)
		}
	}
	low := newDiffOrder(cLo, cw, bHi, bw)  // every difference at its smallest
	high := newDiffOrder(cHi, cw, bLo, bw) // and at its largest
	r := binnedHL{estLo: low.median(), estHi: high.median()}
	// the smoothed median, by bisection inside the exact estimate's range
	sc := newSmoothCDF(cLo, cHi, cw)
	half := low.total / 2
	lo, hi := orderKey(r.estLo)-1, orderKey(r.estHi)
	for uint64(hi-lo) > 1 {
		mid := lo + int64(uint64(hi-lo)/2)
		if smoothDiff(sc, bLo, bHi, bw, fromOrderKey(mid)) >= half {
			hi = mid
		} else {
			lo = mid
		}
	}
	r.est = fromOrderKey(hi)
	// the request path's rank for n1 + n2 > stats.ExactMaxN (Bauer 1972)
	n1, n2 := sum(cw), sum(bw)
	z := distuv.UnitNormal.Quantile(0.5 + conf/2)
	k := math.Floor(n1*n2/2 + 0.5 - z*math.Sqrt(n1*n2*(n1+n2+1)/12))
	if k < 1 {
		r.ci = stats.Interval{Lo: math.Inf(-1), Hi: math.Inf(1)}
		return r
	}
	r.ci = stats.Interval{Lo: low.kth(k), Hi: high.kth(n1*n2 + 1 - k)}
	return r
}

// binnedDiagnostics are the aggregate's Mann-Whitney / Hodges-Lehmann
// diagnostics of TTFT, TPOT and E2E, baseline b against the canary c as
// counted (before any mix reweighting, as the request path pools the
// requests), with Benjamini-Hochberg q-values across them. A latency is
// left out, with a warning, when the bins cannot give it.
func binnedDiagnostics(b, c *aggArm) (out []Diagnostic, warns []string) {
	warnf := func(format string, a ...any) { warns = append(warns, fmt.Sprintf(format, a...)) }
	out = []Diagnostic{}
	if !b.exact || !c.exact {
		warnf("diagnostics (Mann-Whitney, Hodges-Lehmann) need per-request data and are not computed from metrics")
		return out, warns
	}
	var ps []float64
	for _, lat := range []string{"ttft", "tpot", "e2e"} {
		bb, okb := pooledBins(b, lat)
		bc, okc := pooledBins(c, lat)
		if !okb || !okc {
			warnf("%s diagnostics are not computed: the aggregate's histograms are not log-linear bins", lat)
			continue
		}
		if len(bb) == 0 || len(bc) == 0 {
			continue
		}
		g, ok := alignBins(bc, bb)
		if !ok {
			warnf("%s diagnostics are not computed: the arms' histograms are not on one bin grid", lat)
			continue
		}
		var n1, n2, same float64
		inf := false
		for _, x := range g {
			n1 += x.nc
			n2 += x.nb
			same += x.nc * x.nb
			inf = inf || math.IsInf(x.hi, 1)
		}
		if n1+n2 <= stats.ExactMaxN {
			warnf("%s diagnostics are not computed: with %d requests the Mann-Whitney test takes the exact permutation distribution, which needs the values; judge with --exact",
				lat, int64(n1+n2))
			continue
		}
		if inf {
			warnf("%s diagnostics are not computed: a value lies beyond the highest bin", lat)
			continue
		}
		mw := mannWhitneyBins(g)
		hl := hodgesLehmannBins(g, 0.95)
		d := Diagnostic{Metric: lat, Method: "mann-whitney", Statistic: Num(mw.uMid), PValue: Num(mw.p),
			Estimate: Num(hl.est), Interval: [2]Num{Num(hl.ci.Lo), Num(hl.ci.Hi)},
			NBaseline: int64(math.Round(n2)), NCanary: int64(math.Round(n1)),
			Note: fmt.Sprintf("U of the canary; Hodges-Lehmann shift canary − baseline in seconds with its 95%% interval; requests treated as independent; "+
				"from the pooled log-linear bins (%d per octave, %.2f%% wide): the values' U is in [%.6g, %.6g] (the %.2g%% of pairs sharing a bin counted as ties), "+
				"p taken at its end nearest to no difference without tie correction; shift with values spread over their bins, the values' own in [%.4g, %.4g]; interval at the bins' outer edges",
				loglin.PerOctave, 100*(math.Exp2(1.0/loglin.PerOctave)-1), mw.uLo, mw.uHi, 100*same/(n1*n2), hl.estLo, hl.estHi)}
		out = append(out, d)
		ps = append(ps, mw.p)
	}
	q := stats.BH(ps)
	for i := range out {
		out[i].QValue = Num(q[i])
	}
	return out, warns
}
