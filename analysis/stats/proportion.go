package stats

import "math"

// Wilson returns the Wilson score interval for a binomial proportion k/n at
// two-sided confidence conf:
//
//	(p̂ + z²/2n ± z·√(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)
//
// k and n are counts (float64 so that post-stratified or weighted totals can
// be passed); 0 ≤ k ≤ n. The bounds are exactly 0 at k = 0 and exactly 1 at
// k = n, and the interval never collapses there (unlike the Wald interval).
// n == 0 gives [0, 1] (no information); invalid input or conf gives NaN bounds.
func Wilson(k, n float64, conf float64) Interval {
	z := zTwoSided(conf)
	if math.IsNaN(z) || !(n >= 0) || !(k >= 0) || k > n || math.IsInf(n, 0) {
		return Interval{math.NaN(), math.NaN()}
	}
	if n == 0 {
		return Interval{0, 1}
	}
	p := k / n
	z2 := z * z
	den := 1 + z2/n
	centre := (p + z2/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / den
	iv := Interval{math.Max(0, centre-half), math.Min(1, centre+half)}
	if k == 0 {
		iv.Lo = 0
	}
	if k == n {
		iv.Hi = 1
	}
	return iv
}

// NewcombeDiff returns the interval of p1 − p2 (p_i = k_i/n_i) by Newcombe's
// hybrid score method (method 10 of Newcombe 1998), built from the Wilson
// limits (l_i, u_i) of each arm:
//
//	[d − √((p̂1−l1)² + (u2−p̂2)²),  d + √((u1−p̂1)² + (p̂2−l2)²)]
//
// It stays non-degenerate at 0 and 1 (k = n in both arms gives an interval
// around 0). It assumes independent Bernoulli trials: on request-level data
// that share time buckets it is the naive method and undercovers, so gates use
// DiffOfRatios on bucket totals and keep this for small, unclustered counts.
// An empty arm gives [−1, 1]; invalid input gives NaN bounds.
func NewcombeDiff(k1, n1, k2, n2 float64, conf float64) Interval {
	w1, w2 := Wilson(k1, n1, conf), Wilson(k2, n2, conf)
	if math.IsNaN(w1.Lo) || math.IsNaN(w2.Lo) {
		return Interval{math.NaN(), math.NaN()}
	}
	if n1 == 0 || n2 == 0 {
		return Interval{-1, 1}
	}
	p1, p2 := k1/n1, k2/n2
	d := p1 - p2
	return Interval{
		Lo: d - math.Sqrt(sq(p1-w1.Lo)+sq(w2.Hi-p2)),
		Hi: d + math.Sqrt(sq(w1.Hi-p1)+sq(p2-w2.Lo)),
	}
}

func sq(v float64) float64 { return v * v }

// FisherResult holds Fisher's exact test of a 2×2 table [[a b] [c d]].
type FisherResult struct {
	// PTwoSided sums the probabilities of all tables (same margins) that are no
	// more likely than the observed one, with relative tolerance 1e-7.
	PTwoSided float64
	// PLess is P(A ≤ a) (odds ratio < 1); PGreater is P(A ≥ a) (odds ratio > 1).
	PLess, PGreater float64
	// OddsRatio is the sample odds ratio a·d/(b·c): +Inf when b·c = 0, NaN
	// when a row or column is empty (then all p-values are 1).
	OddsRatio float64
}

// FisherExact is Fisher's exact test on the 2×2 table [[a b] [c d]], e.g.
// [[failed_canary, ok_canary] [failed_baseline, ok_baseline]]. Conditional on
// the margins, a follows the hypergeometric distribution (which gonum lacks);
// the probabilities are computed by the ratio recurrence outward from the mode
// and normalised, which keeps full relative precision in both tails and works
// for tables with millions of entries in O(min(row, column) total) time.
//
// The two-sided p-value counts tables with P ≤ P(observed)·(1 + 1e-7), R's
// fisher.test tolerance; scipy 1.10 uses 1e-14, which only differs when
// rounding makes mathematically equal probabilities unequal. Negative counts
// give NaN everywhere.
func FisherExact(a, b, c, d int64) FisherResult {
	nan := math.NaN()
	if a < 0 || b < 0 || c < 0 || d < 0 {
		return FisherResult{nan, nan, nan, nan}
	}
	if a+b == 0 || c+d == 0 || a+c == 0 || b+d == 0 {
		return FisherResult{1, 1, 1, nan}
	}
	or := math.Inf(1)
	if b > 0 && c > 0 {
		or = float64(a) * float64(d) / (float64(b) * float64(c))
	}
	// A ~ Hypergeometric: population N, K = a+c successes (first column),
	// draws n = a+b (first row).
	n := a + b
	K := a + c
	N := a + b + c + d
	lo := max(0, n-(N-K))
	hi := min(n, K)
	size := hi - lo + 1
	w := make([]float64, size)
	// mode of the hypergeometric distribution
	mode := int64(math.Floor(float64(n+1) * float64(K+1) / float64(N+2)))
	mode = min(max(mode, lo), hi)
	w[mode-lo] = 1
	// ratio P(k+1)/P(k) = (K−k)(n−k) / ((k+1)(N−K−n+k+1))
	for k := mode; k < hi; k++ {
		r := float64(K-k) * float64(n-k) / (float64(k+1) * float64(N-K-n+k+1))
		w[k+1-lo] = w[k-lo] * r
	}
	for k := mode; k > lo; k-- {
		// P(k−1)/P(k) = k(N−K−n+k) / ((K−k+1)(n−k+1))
		r := float64(k) * float64(N-K-n+k) / (float64(K-k+1) * float64(n-k+1))
		w[k-1-lo] = w[k-lo] * r
	}
	// Sum from the smallest terms upward for accuracy.
	var total float64
	for i := 0; i < int(mode-lo); i++ {
		total += w[i]
	}
	var upper float64
	for i := int(size) - 1; i >= int(mode-lo); i-- {
		upper += w[i]
	}
	total += upper
	obs := w[a-lo]
	var less, greater, two float64
	for i := 0; i <= int(a-lo); i++ {
		less += w[i]
	}
	for i := int(size) - 1; i >= int(a-lo); i-- {
		greater += w[i]
	}
	limit := obs * (1 + 1e-7)
	// accumulate the two tails separately, smallest first
	for i := 0; i < int(mode-lo); i++ {
		if w[i] <= limit {
			two += w[i]
		}
	}
	for i := int(size) - 1; i >= int(mode-lo); i-- {
		if w[i] <= limit {
			two += w[i]
		}
	}
	return FisherResult{
		PTwoSided: math.Min(1, two/total),
		PLess:     math.Min(1, less/total),
		PGreater:  math.Min(1, greater/total),
		OddsRatio: or,
	}
}
