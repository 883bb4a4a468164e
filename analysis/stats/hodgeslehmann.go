package stats

import (
	"math"
	"math/rand/v2"
	"slices"
)

// HodgesLehmann returns the Hodges–Lehmann estimate of the shift x − y (the
// median of all n1·n2 pairwise differences x_i − y_j; the mean of the two
// middle ones when n1·n2 is even) and its distribution-free interval
// [D(k), D(n1·n2+1−k)] over the sorted differences, at two-sided level conf.
//
// k is the rank that inverts the Mann–Whitney test: with n1 + n2 ≤ ExactMaxN,
// k = c + 1 with c the largest integer such that P0(U ≤ c) ≤ (1−conf)/2 under
// the exact no-ties null (as R's wilcox.test); otherwise
// k = ⌊n1n2/2 + ½ − z·√(n1n2(N+1)/12)⌋ (continuity-corrected normal, Bauer
// 1972). When every pairwise difference equals d (each sample constant) the
// interval is [d, d] at any size. Otherwise, when k < 1 the samples are too
// small for the level and the interval is [−Inf, +Inf]. With ties the coverage is approximate. Assumes a pure location
// shift and independent observations; on bucketed canary data prefer the
// bucket bootstrap for inference and keep this as a diagnostic.
//
// The differences are never materialised: order statistics of X − Y come from
// a sample-and-bracket selection over the implicit sorted matrix (in the
// spirit of Johnson & Mizoguchi 1978 and Monahan 1984) that counts pairs below
// a pivot in O(n1+n2) per pass, so 1M vs 1M needs O(n log n) time and O(n)
// memory. The result is exact (it equals the k-th smallest computed
// difference); the internal random pivots only affect speed. Empty input, NaN
// values or invalid conf give NaN.
func HodgesLehmann(x, y []float64, conf float64) (est float64, ci Interval) {
	nan := math.NaN()
	z := zTwoSided(conf)
	xs, ys := sortedCopy(x), sortedCopy(y)
	if len(x) == 0 || len(y) == 0 || xs == nil || ys == nil || math.IsNaN(z) {
		return nan, Interval{nan, nan}
	}
	sel := newDiffSelector(xs, ys)
	n1, n2 := int64(len(xs)), int64(len(ys))
	total := n1 * n2
	if total%2 == 1 {
		est = sel.kth((total + 1) / 2)
	} else {
		a := sel.kth(total / 2)
		est = a/2 + sel.after(a, total/2)/2
	}
	if d := xs[0] - ys[n2-1]; d == xs[n1-1]-ys[0] {
		// every pairwise difference is d: the shift is known exactly,
		// whatever the sample sizes
		return d, Interval{d, d}
	}
	k := hlRank(n1, n2, conf, z)
	if k < 1 {
		return est, Interval{math.Inf(-1), math.Inf(1)}
	}
	return est, Interval{sel.kth(k), sel.kth(total + 1 - k)}
}

// hlRank returns k for the Hodges–Lehmann interval (see HodgesLehmann).
func hlRank(n1, n2 int64, conf, z float64) int64 {
	alpha2 := (1 - conf) / 2
	if n1+n2 <= ExactMaxN {
		cdf := mwNullCDF(int(n1), int(n2))
		c := int64(-1)
		for u, p := range cdf {
			if p <= alpha2*(1+1e-12) {
				c = int64(u)
			} else {
				break
			}
		}
		return c + 1
	}
	f1, f2 := float64(n1), float64(n2)
	k := math.Floor(f1*f2/2 + 0.5 - z*math.Sqrt(f1*f2*(f1+f2+1)/12))
	return int64(k)
}

// mwNullCDF returns P(U ≤ u), u = 0 … n1·n2, for the Mann–Whitney statistic
// without ties, from the recurrence f(m, n, u) = f(m−1, n, u−n) + f(m, n−1, u)
// on frequencies normalised as probabilities.
func mwNullCDF(n1, n2 int) []float64 {
	if n1 > n2 {
		n1, n2 = n2, n1
	}
	maxU := n1 * n2
	// prev[m][u] for the current n (columns over n = 0..n2); roll over n.
	// f(m, n, ·) as probability: p(m,n,u) = m/(m+n)·p(m−1,n,u−n) + n/(m+n)·p(m,n−1,u)
	cur := make([][]float64, n1+1)
	for m := range cur {
		cur[m] = make([]float64, maxU+1)
	}
	for m := 0; m <= n1; m++ {
		cur[m][0] = 1 // n = 0: U = 0 surely
	}
	for n := 1; n <= n2; n++ {
		// update in place for increasing m: needs p(m−1, n, ·) (already updated)
		// and p(m, n−1, ·) (not yet updated)
		for m := 1; m <= n1; m++ {
			a := float64(m) / float64(m+n)
			b := float64(n) / float64(m+n)
			row, below := cur[m], cur[m-1]
			top := m * n
			for u := top; u >= 0; u-- {
				v := b * row[u]
				if u >= n {
					v += a * below[u-n]
				}
				row[u] = v
			}
		}
	}
	p := cur[n1]
	out := make([]float64, maxU+1)
	run := 0.0
	for u := 0; u <= maxU; u++ {
		run += p[u]
		out[u] = run
	}
	return out
}

// diffSelector finds order statistics of the multiset {fl(x_i − y_j)} for
// ascending xs, ys. fl(x − y) is non-decreasing in x and non-increasing in y,
// so for every threshold t the pairs with x_i − y_j ≤ t form, per row i, a
// suffix j ≥ J_t(i) of ys, and J_t(i) is non-decreasing in i: one merge-like
// pass finds all J_t(i) and the count.
//
// kth keeps a bracket lo < answer ≤ hi with the per-row candidate ranges
// [J_hi(i), J_lo(i)), draws a uniform sample of candidate pairs, takes two
// sample quantiles around the target's expected position as pivots (a
// Floyd–Rivest step), and counts both pivots in one pass; each pass shrinks
// the candidates about twentyfold, and once they are fewer than n1 + n2 they
// are listed and quick-selected.
type diffSelector struct {
	xs, ys []float64
	rng    *rand.Rand
	// per-row boundaries: from = J_hi, to = J_lo; a, b scratch for pivots
	from, to, a, b []int32
	cum            []int64
	sample         []float64
}

const selectorSample = 16384

func newDiffSelector(xs, ys []float64) *diffSelector {
	n := len(xs)
	return &diffSelector{
		xs: xs, ys: ys,
		rng:  rand.New(rand.NewPCG(0x9e3779b97f4a7c15, uint64(len(xs))<<32|uint64(len(ys)))),
		from: make([]int32, n), to: make([]int32, n), a: make([]int32, n), b: make([]int32, n),
		cum:    make([]int64, n+1),
		sample: make([]float64, 0, selectorSample),
	}
}

// split fills ja (and jb) with J_pa(i) (J_pb(i)), searching only inside the
// current candidate ranges, and returns the counts of pairs ≤ pa and ≤ pb.
func (s *diffSelector) split(pa, pb float64) (ca, cb int64) {
	xs, ys := s.xs, s.ys
	m := int32(len(ys))
	from, to, ja, jb := s.from, s.to, s.a, s.b
	var pA, pB int32
	for i, xv := range xs {
		f, t := from[i], to[i]
		j := max(pA, f)
		for j < t && xv-ys[j] > pa {
			j++
		}
		pA = j
		ja[i] = j
		ca += int64(m - j)
		j = max(pB, f)
		for j < t && xv-ys[j] > pb {
			j++
		}
		pB = j
		jb[i] = j
		cb += int64(m - j)
	}
	return ca, cb
}

func (s *diffSelector) prefix() int64 {
	var c int64
	for i := range s.from {
		c += int64(s.to[i] - s.from[i])
		s.cum[i+1] = c
	}
	return c
}

// kth returns the k-th smallest difference, 1 ≤ k ≤ n1·n2.
func (s *diffSelector) kth(k int64) float64 {
	xs, ys := s.xs, s.ys
	n, m := len(xs), len(ys)
	// invariant: cLo = count(≤ lo) < k ≤ cHi = count(≤ hi) for a lower
	// bound lo that only the boundaries s.to remember (initially below every
	// difference)
	hi := xs[n-1] - ys[0]
	cLo, cHi := int64(0), int64(n)*int64(m)
	for i := range s.from {
		s.from[i], s.to[i] = 0, int32(m)
	}
	enumLimit := int64(n+m) + 1024
	for {
		cand := s.prefix()
		if cand <= enumLimit {
			vals := make([]float64, 0, cand)
			for i, xv := range xs {
				for _, yv := range ys[s.from[i]:s.to[i]] {
					vals = append(vals, xv-yv)
				}
			}
			return selectKth(vals, int(k-cLo-1))
		}
		buf := s.sample[:0]
		for range selectorSample {
			r := s.rng.Int64N(cand)
			i, _ := slices.BinarySearch(s.cum[1:], r+1) // first row with cum[i+1] > r
			j := s.from[i] + int32(r-s.cum[i])
			buf = append(buf, xs[i]-ys[j])
		}
		slices.Sort(buf)
		f := float64(k-cLo) / float64(cand) * selectorSample
		d := 3 * math.Sqrt(selectorSample)
		pa := buf[min(max(int(f-d), 0), selectorSample-1)]
		pb := buf[min(max(int(math.Ceil(f+d)), 0), selectorSample-1)]
		ca, cb := s.split(pa, pb)
		switch {
		case ca >= k:
			hi, cHi = pa, ca
			s.from, s.a = s.a, s.from
		case cb >= k:
			cLo = ca
			hi, cHi = pb, cb
			s.to, s.a = s.a, s.to
			s.from, s.b = s.b, s.from
		default:
			cLo = cb
			s.to, s.b = s.b, s.to
		}
		if cHi-cLo == cand {
			// The sample saw only hi: either the answer is hi, or the block
			// of pairs tied at hi can be dropped from the candidates.
			below := math.Nextafter(hi, math.Inf(-1))
			c, _ := s.split(below, below)
			if c < k {
				return hi
			}
			hi, cHi = below, c
			s.from, s.a = s.a, s.from
		}
	}
}

// after returns the (k+1)-th smallest difference given v, the k-th: v itself
// if more than k pairs are ≤ v, else the smallest difference above v, which in
// row i sits just left of the first index with x_i − y_j ≤ v. One pass.
func (s *diffSelector) after(v float64, k int64) float64 {
	m := int32(len(s.ys))
	for i := range s.from {
		s.from[i], s.to[i] = 0, m
	}
	c, _ := s.split(v, v)
	if c > k {
		return v
	}
	next := math.Inf(1)
	for i, xv := range s.xs {
		if j := s.a[i]; j > 0 {
			next = math.Min(next, xv-s.ys[j-1])
		}
	}
	return next
}

// selectKth returns the k-th smallest (0-based) element of v, reordering v.
// Hoare-style quickselect with median-of-three pivots, falling back to a sort
// on small ranges.
func selectKth(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	for hi-lo > 32 {
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		p := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < p {
				i++
			}
			for v[j] > p {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	slices.Sort(v[lo : hi+1])
	return v[k]
}
