package stats

import (
	"math"

	"gonum.org/v1/gonum/stat"
)

// WelchResult is Welch's unequal-variance t-test of mean(x) − mean(y).
type WelchResult struct {
	T    float64  // t statistic
	DF   float64  // Welch–Satterthwaite degrees of freedom
	P    float64  // two-sided p-value
	Diff float64  // mean(x) − mean(y)
	CI   Interval // Diff ± t_{DF, (1+conf)/2} · se
}

// Welch runs Welch's t-test of mean(x) − mean(y) with
// se² = s1²/n1 + s2²/n2 and ν = se⁴ / [s1⁴/(n1²(n1−1)) + s2⁴/(n2²(n2−1))].
// Use it on per-bucket values (e.g. mean TPOT per bucket), not on requests.
//
// Degenerate cases (deliberately differing from scipy, which returns NaN for
// all of them): a constant sample has variance exactly 0; if both samples are
// constant, se = 0, DF = NaN, and T = ±Inf with P = 0 when the means differ
// (the difference is certain) or T = NaN with P = 1 when they are equal; the
// CI is then [Diff, Diff]. Fewer than two values in an arm, NaN values or an
// invalid conf give NaN fields (with Diff still set when both arms are
// non-empty).
func Welch(x, y []float64, conf float64) WelchResult {
	nan := math.NaN()
	res := WelchResult{T: nan, DF: nan, P: nan, Diff: nan, CI: Interval{nan, nan}}
	if len(x) == 0 || len(y) == 0 {
		return res
	}
	m1, v1 := meanVar(x)
	m2, v2 := meanVar(y)
	res.Diff = m1 - m2
	if len(x) < 2 || len(y) < 2 || math.IsNaN(res.Diff) || !(conf > 0 && conf < 1) {
		return res
	}
	n1, n2 := float64(len(x)), float64(len(y))
	a, b := v1/n1, v2/n2
	se := math.Sqrt(a + b)
	if se == 0 {
		res.CI = Interval{res.Diff, res.Diff}
		if res.Diff == 0 {
			res.P = 1
		} else {
			res.T = math.Copysign(math.Inf(1), res.Diff)
			res.P = 0
		}
		return res
	}
	res.DF = (a + b) * (a + b) / (a*a/(n1-1) + b*b/(n2-1))
	res.T = res.Diff / se
	res.P = math.Min(1, 2*tSurvival(math.Abs(res.T), res.DF))
	q := tQuantile(0.5+conf/2, res.DF)
	res.CI = Interval{res.Diff - q*se, res.Diff + q*se}
	return res
}

// meanVar returns the mean and the unbiased variance of v, with the variance
// exactly 0 for a constant sample (a rounded mean can otherwise leave a
// residue of order 1e-34).
func meanVar(v []float64) (mean, variance float64) {
	mean, variance = stat.MeanVariance(v, nil)
	constant := true
	for _, f := range v[1:] {
		if f != v[0] {
			constant = false
			break
		}
	}
	if constant {
		return v[0], 0
	}
	return mean, variance
}
