// Package histo holds the pure functions the judge applies to metrics-based
// (histogram) data: the fraction of observations under a threshold — exact
// when the threshold is a bucket edge, otherwise an interval between the
// neighbouring edges —, Fréchet bounds for the joint attainment of two SLO
// criteria read from two marginal histograms, a mirror of PromQL's
// histogram_quantile, and per-bucket lower/upper bounds on good requests
// for a sources.Aggregate. No I/O, no clock.
//
// Histograms are sources.Histogram values: cumulative counts at ascending
// upper edges, the last edge +Inf.
package histo

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/goodput-dev/goodput/sources"
)

// edgeTol is the relative tolerance under which a threshold is taken to be
// a bucket edge: edges arrive as decimal strings ("0.1", "1.0") and SLOs as
// parsed floats, so equal decimals may differ in the last bit.
const edgeTol = 1e-9

// onEdge reports whether t equals e within edgeTol (relative).
func onEdge(t, e float64) bool {
	if t == e {
		return true
	}
	if math.IsInf(t, 0) || math.IsInf(e, 0) {
		return false
	}
	return math.Abs(t-e) <= edgeTol*math.Max(math.Abs(t), math.Abs(e))
}

// Attainment is the fraction of observations ≤ a threshold.
type Attainment struct {
	Lo, Hi float64 // bounds on the fraction, 0..1; NaN when the histogram is empty
	// Exact is true when the threshold is a bucket edge (Lo == Hi).
	Exact bool
	// Below and Above are the neighbouring edges when the threshold falls
	// inside a bucket (Below may be 0 for the first bucket, Above +Inf for
	// the last); both equal the threshold when Exact.
	Below, Above float64
}

// Fraction returns bounds on the fraction of a histogram's observations that
// are ≤ t. When t is an edge the count at that edge is exact; otherwise the
// true fraction lies between the cumulative counts at the edges below and
// above t (observations are assumed non-negative below the first edge, as
// PromQL does). Counts are made monotone first (running maximum), since
// extrapolated increases can be out of order by rounding.
func Fraction(h sources.Histogram, t float64) Attainment {
	nan := math.NaN()
	n := len(h.Edges)
	if n == 0 || len(h.Counts) != n || math.IsNaN(t) {
		return Attainment{Lo: nan, Hi: nan, Below: nan, Above: nan}
	}
	counts := monotone(h.Counts)
	total := counts[n-1]
	if !(total > 0) {
		return Attainment{Lo: nan, Hi: nan, Below: nan, Above: nan}
	}
	below, cBelow := math.Inf(-1), 0.0
	for i, e := range h.Edges {
		if onEdge(t, e) {
			f := counts[i] / total
			return Attainment{Lo: f, Hi: f, Exact: true, Below: e, Above: e}
		}
		if e > t {
			if math.IsInf(below, -1) {
				below = math.Min(0, e)
			}
			return Attainment{Lo: cBelow / total, Hi: counts[i] / total, Below: below, Above: e}
		}
		below, cBelow = e, counts[i]
	}
	// t above every edge, +Inf included: cannot happen for a well-formed
	// histogram (last edge +Inf); treat as all observations.
	return Attainment{Lo: 1, Hi: 1, Exact: true, Below: t, Above: t}
}

func monotone(c []float64) []float64 {
	out := make([]float64, len(c))
	m := math.Inf(-1)
	for i, v := range c {
		if v > m || math.IsNaN(m) {
			m = v
		}
		out[i] = m
	}
	return out
}

// Frechet returns the Fréchet (Boole) bounds on P(A ∧ B) given P(A) = a and
// P(B) = b: max(0, a + b − 1) ≤ P(A ∧ B) ≤ min(a, b). Inputs outside [0, 1]
// or NaN give NaN.
func Frechet(a, b float64) (lo, hi float64) {
	if !(a >= 0 && a <= 1 && b >= 0 && b <= 1) {
		return math.NaN(), math.NaN()
	}
	// a certain event leaves the other exact (a + 1 − 1 may round off a)
	if b == 1 {
		return a, a
	}
	if a == 1 {
		return b, b
	}
	return math.Max(0, a+b-1), math.Min(a, b)
}

// FrechetInterval widens Frechet to marginals known only as intervals
// [aLo, aHi] and [bLo, bHi]: the joint lies in
// [max(0, aLo + bLo − 1), min(aHi, bHi)].
func FrechetInterval(aLo, aHi, bLo, bHi float64) (lo, hi float64) {
	lo, _ = Frechet(aLo, bLo)
	_, hi = Frechet(aHi, bHi)
	return lo, hi
}

// Quantile mirrors PromQL's histogram_quantile (Prometheus 2.x classic
// histograms): q < 0 gives −Inf, q > 1 +Inf, NaN q NaN; a histogram whose
// last edge is not +Inf, with fewer than two buckets, or with no
// observations gives NaN. Counts are made monotone; the rank q·total is
// located in the first bucket whose cumulative count reaches it, and the
// value is interpolated linearly inside that bucket, the lowest bucket
// starting at 0 (or returning its edge when that edge is ≤ 0). A rank in the
// +Inf bucket returns the highest finite edge.
func Quantile(q float64, h sources.Histogram) float64 {
	if v, out := outsideUnit(q); out {
		return v
	}
	n := len(h.Edges)
	if n == 0 || len(h.Counts) != n {
		return math.NaN()
	}
	if Increasing(h.Edges) {
		// already sorted, nothing to coalesce: read in place when the
		// counts are monotone, else from a monotone copy
		if !nonDecreasing(h.Counts) {
			return QuantileSorted(q, h.Edges, slices.Clone(h.Counts))
		}
		return quantileAt(q, h.Edges, func(i int) float64 { return h.Counts[i] })
	}
	type bkt struct{ ub, c float64 }
	bs := make([]bkt, n)
	for i := range h.Edges {
		bs[i] = bkt{h.Edges[i], h.Counts[i]}
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].ub < bs[j].ub })
	if !math.IsInf(bs[n-1].ub, 1) {
		return math.NaN()
	}
	// coalesce equal edges (summing counts), as PromQL does
	co := bs[:0:0]
	for _, b := range bs {
		if len(co) > 0 && co[len(co)-1].ub == b.ub {
			co[len(co)-1].c += b.c
			continue
		}
		co = append(co, b)
	}
	bs = co
	for i := 1; i < len(bs); i++ {
		if bs[i].c < bs[i-1].c {
			bs[i].c = bs[i-1].c
		}
	}
	if len(bs) < 2 {
		return math.NaN()
	}
	obs := bs[len(bs)-1].c
	if obs == 0 {
		return math.NaN()
	}
	rank := q * obs
	b := sort.Search(len(bs)-1, func(i int) bool { return bs[i].c >= rank })
	if b == len(bs)-1 {
		return bs[len(bs)-2].ub
	}
	if b == 0 && bs[0].ub <= 0 {
		return bs[0].ub
	}
	start, end, count := 0.0, bs[b].ub, bs[b].c
	if b > 0 {
		start = bs[b-1].ub
		count -= bs[b-1].c
		rank -= bs[b-1].c
	}
	return start + (end-start)*(rank/count)
}

// Merge adds histograms that share edges. Edges present in only some
// inputs are dropped (their cumulative count is unknown for the others);
// dropped reports whether any were. When every non-empty input is Sparse
// the merge is over the union of their edges (see mergeSparse).
func Merge(hs ...sources.Histogram) (out sources.Histogram, dropped bool) {
	if allSparse(hs) {
		return mergeSparse(hs)
	}
	var common []float64
	first := true
	for _, h := range hs {
		if len(h.Edges) == 0 {
			continue
		}
		if first {
			common = append([]float64(nil), h.Edges...)
			first = false
			continue
		}
		var keep []float64
		for _, e := range common {
			if hasEdge(h.Edges, e) {
				keep = append(keep, e)
			} else {
				dropped = true
			}
		}
		if len(keep) != len(h.Edges) {
			dropped = true
		}
		common = keep
	}
	out.Edges = common
	out.Counts = make([]float64, len(common))
	for _, h := range hs {
		for i, e := range common {
			for j, he := range h.Edges {
				if he == e {
					out.Counts[i] += h.Counts[j]
					break
				}
			}
		}
	}
	return out, dropped
}

func hasEdge(edges []float64, e float64) bool {
	for _, x := range edges {
		if x == e {
			return true
		}
	}
	return false
}

// SLO holds the per-request thresholds a good request must meet, in
// seconds; NaN means the criterion is not required.
type SLO struct {
	TTFT float64 // time to first token ≤ TTFT
	TPOT float64 // time per output token ≤ TPOT
}

// BucketBound bounds the good requests of one aggregate bucket.
type BucketBound struct {
	Start, End float64 // unix seconds, as in the bucket
	Class      string
	Completed  float64 // completed requests (NaN when unknown)
	// Lo and Hi bound the number of good requests (completed and meeting
	// every required criterion). Equal when the figure is exact (a good
	// counter, thresholds on edges of a single required criterion, or a
	// marginal at 0 or 1). NaN when unknown.
	Lo, Hi float64
	Exact  bool
}

// Bounds is the per-bucket and total good-request bounds of an aggregate.
type Bounds struct {
	Buckets   []BucketBound
	Completed float64 // Σ completed over buckets with a known count
	Lo, Hi    float64 // Σ of the known buckets' bounds: the totals' bounds
	// Unknown counts buckets whose completed count is unknown (NaN); they
	// are left out of the totals and a note says so.
	Unknown int
	// Exact is true when every known bucket's figure is exact.
	Exact bool
	// Notes say why figures are intervals (thresholds between edges,
	// joint attainment from marginals, missing histograms), once each.
	Notes []string
}

// GoodBounds turns an aggregate and SLO thresholds into per-bucket
// good-request bounds. A bucket's Good counter, when not NaN, is used as
// is (exact). Otherwise each required criterion's attainment fraction is
// read from its histogram (Fraction); a required criterion whose histogram
// is empty while requests completed is unknown ([0, 1]); two required
// criteria are combined with Fréchet bounds; the fractions are applied to
// the completed count. A histogram counts every request that produced the
// measured quantity, which for some engines includes aborted requests: the
// fraction is taken as the completed requests' fraction.
func GoodBounds(agg *sources.Aggregate, slo SLO) Bounds {
	out := Bounds{Exact: true}
	if agg == nil {
		out.Lo, out.Hi, out.Exact = math.NaN(), math.NaN(), false
		return out
	}
	noted := map[string]bool{}
	note := func(format string, a ...any) {
		s := fmt.Sprintf(format, a...)
		if !noted[s] {
			noted[s] = true
			out.Notes = append(out.Notes, s)
		}
	}
	for _, b := range agg.Buckets {
		bb := BucketBound{Start: b.Start, End: b.End, Class: b.Class, Completed: b.Completed}
		switch {
		case !math.IsNaN(b.Good):
			bb.Lo, bb.Hi, bb.Exact = b.Good, b.Good, true
		case math.IsNaN(b.Completed):
			bb.Lo, bb.Hi = math.NaN(), math.NaN()
		case b.Completed == 0:
			bb.Lo, bb.Hi, bb.Exact = 0, 0, true
		default:
			lo, hi := goodShare(b.TTFT, b.TPOT, slo, note)
			bb.Lo, bb.Hi = b.Completed*lo, b.Completed*hi
			bb.Exact = lo == hi
		}
		out.Buckets = append(out.Buckets, bb)
		if math.IsNaN(bb.Lo) || math.IsNaN(bb.Hi) {
			out.Unknown++
			continue
		}
		if !math.IsNaN(bb.Completed) {
			out.Completed += bb.Completed
		}
		out.Lo += bb.Lo
		out.Hi += bb.Hi
		out.Exact = out.Exact && bb.Exact
	}
	if out.Unknown > 0 {
		note("%d of %d buckets have no request counts (no data in those slices): left out of the totals", out.Unknown, len(out.Buckets))
	}
	return out
}

// GoodShare bounds the share of requests that met slo from their TTFT and
// TPOT histograms, as GoodBounds bounds a bucket's: each required
// criterion's fraction at its threshold, two combined with Fréchet bounds;
// [0, 1] for a required criterion whose histogram is empty, [1, 1] when
// none is required. Shares in [0, 1].
func GoodShare(ttft, tpot sources.Histogram, slo SLO) (lo, hi float64) {
	return goodShare(ttft, tpot, slo, func(string, ...any) {})
}

func goodShare(ttft, tpot sources.Histogram, slo SLO, note func(string, ...any)) (lo, hi float64) {
	var parts [][2]float64
	if !math.IsNaN(slo.TTFT) {
		parts = append(parts, criterion(ttft, slo.TTFT, "TTFT", note))
	}
	if !math.IsNaN(slo.TPOT) {
		parts = append(parts, criterion(tpot, slo.TPOT, "TPOT", note))
	}
	switch len(parts) {
	case 1:
		return parts[0][0], parts[0][1]
	case 2:
		lo, hi = FrechetInterval(parts[0][0], parts[0][1], parts[1][0], parts[1][1])
		if lo != hi {
			note("joint TTFT and TPOT attainment is bounded from the two marginal histograms (Fréchet bounds): no per-request good counter")
		}
		return lo, hi
	}
	return 1, 1
}

// criterion returns the attainment interval of one criterion in a bucket.
func criterion(h sources.Histogram, thr float64, name string, note func(string, ...any)) [2]float64 {
	a := Fraction(h, thr)
	if math.IsNaN(a.Lo) {
		note("%s histogram missing or empty where requests completed: %s attainment unknown there", name, name)
		return [2]float64{0, 1}
	}
	// off an edge but with no observation between the edges around it
	// (a native histogram's empty buckets), the fraction is still exact
	if !a.Exact && a.Lo != a.Hi {
		note("%s", edgeNote(name, thr, a))
	}
	return [2]float64{a.Lo, a.Hi}
}

// EdgeNotes lists, for an aggregate, the SLO thresholds that fall between
// bucket edges of its histograms (once per quantity and edge pair).
func EdgeNotes(agg *sources.Aggregate, slo SLO) []string {
	if agg == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	check := func(h sources.Histogram, thr float64, name string) {
		if math.IsNaN(thr) || len(h.Edges) == 0 {
			return
		}
		a := Fraction(sources.Histogram{Edges: h.Edges, Counts: ones(len(h.Edges))}, thr)
		if a.Exact {
			return
		}
		s := edgeNote(name, thr, a)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, b := range agg.Buckets {
		check(b.TTFT, slo.TTFT, "TTFT")
		check(b.TPOT, slo.TPOT, "TPOT")
	}
	return out
}

func ones(n int) []float64 {
	o := make([]float64, n)
	for i := range o {
		o[i] = 1
	}
	return o
}

// QuantileBounds returns the edges of the bucket that holds the q-quantile
// rank (0 < q < 1): the true quantile of the observations lies in
// [lo, hi], whatever the interpolation says. The lowest bucket starts at 0;
// a rank in the +Inf bucket gives hi = +Inf. NaN bounds as for Quantile.
func QuantileBounds(q float64, h sources.Histogram) (lo, hi float64) {
	nan := math.NaN()
	if !(q > 0 && q < 1) || len(h.Edges) < 2 || len(h.Counts) != len(h.Edges) {
		return nan, nan
	}
	edges := append([]float64(nil), h.Edges...)
	counts := monotone(h.Counts)
	if !sort.Float64sAreSorted(edges) || !math.IsInf(edges[len(edges)-1], 1) {
		return nan, nan
	}
	total := counts[len(counts)-1]
	if total == 0 {
		return nan, nan
	}
	rank := q * total
	b := sort.Search(len(edges), func(i int) bool { return counts[i] >= rank })
	if b >= len(edges) {
		b = len(edges) - 1
	}
	lo = 0
	if b > 0 {
		lo = edges[b-1]
	}
	return lo, edges[b]
}

// Above returns the number of observations above t and whether that count
// is exact (t is a bucket edge of h). When t falls inside a bucket the
// count returned is the upper one (observations above the edge below t).
// NaN for an empty or malformed histogram.
func Above(h sources.Histogram, t float64) (float64, bool) {
	a := Fraction(h, t)
	if math.IsNaN(a.Lo) {
		return math.NaN(), false
	}
	total := monotone(h.Counts)[len(h.Counts)-1]
	return total * (1 - a.Lo), a.Exact
}

// edgeNote says that a threshold is not a bucket edge and which edges
// would make the attainment exact.
func edgeNote(name string, thr float64, a Attainment) string {
	fix := fmt.Sprintf("a threshold of %g s or %g s would make it exact", a.Below, a.Above)
	if !(a.Below > 0) {
		fix = fmt.Sprintf("a threshold of %g s would make it exact", a.Above)
	} else if math.IsInf(a.Above, 1) {
		fix = fmt.Sprintf("a threshold of %g s would make it exact", a.Below)
	}
	return fmt.Sprintf("%s threshold %g s is not a bucket edge (between %g and %g): %s attainment is an interval; %s",
		name, thr, a.Below, a.Above, name, fix)
}

// Align lays histograms on one edge grid, so that they add index by index
// (a block of time slices is then the sum of their rows). The grid is the
// edges Merge keeps for them: the edges every non-empty classic histogram
// has (an edge only some have splits a bucket of the others, whose count
// at it is unknown), or for Sparse histograms the union of their edges
// less any inside another's occupied interval. A histogram's count at a
// grid edge it does not list is its count at its highest listed edge
// below (0 below the first), exact for both kinds. Rows hold the
// cumulative counts at the grid's edges (made monotone); an empty
// histogram gives a row of zeros.
func Align(hs []sources.Histogram) (edges []float64, rows [][]float64) {
	var nonEmpty []sources.Histogram
	for _, h := range hs {
		if len(h.Edges) > 0 && len(h.Counts) == len(h.Edges) {
			nonEmpty = append(nonEmpty, h)
		}
	}
	if len(nonEmpty) > 0 {
		m, _ := Merge(nonEmpty...)
		edges = m.Edges
	}
	rows = make([][]float64, len(hs))
	for k, h := range hs {
		row := make([]float64, len(edges))
		rows[k] = row
		if len(h.Edges) == 0 || len(h.Counts) != len(h.Edges) {
			continue
		}
		counts := monotone(h.Counts)
		if increasing(h.Edges) {
			// the usual case: no index to sort
			j, cum := 0, 0.0
			for i, e := range edges {
				for j < len(h.Edges) && h.Edges[j] <= e {
					cum = math.Max(cum, counts[j])
					j++
				}
				row[i] = cum
			}
			continue
		}
		// h's edges may be unsorted only in malformed input; sort an index
		idx := make([]int, len(h.Edges))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return h.Edges[idx[a]] < h.Edges[idx[b]] })
		j, cum := 0, 0.0
		for i, e := range edges {
			for j < len(idx) && h.Edges[idx[j]] <= e {
				cum = math.Max(cum, counts[idx[j]])
				j++
			}
			row[i] = cum
		}
	}
	return edges, rows
}

// outsideUnit answers a quantile level q that is not in [0, 1]: NaN for
// NaN, −Inf below 0, +Inf above 1 (out true); out is false for q in
// [0, 1].
func outsideUnit(q float64) (v float64, out bool) {
	switch {
	case math.IsNaN(q):
		return math.NaN(), true
	case q < 0:
		return math.Inf(-1), true
	case q > 1:
		return math.Inf(1), true
	}
	return 0, false
}
