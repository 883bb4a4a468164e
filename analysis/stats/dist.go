package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// normSF is the standard-normal upper tail P(Z > x), accurate far into the
// tail (gonum's Normal.Survival computes 1 − erf and underflows to 0 near
// x = 8, where the true value is 6e-16).
func normSF(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }

// normCDF is P(Z ≤ x), accurate in the lower tail.
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// tQuantile is the p-quantile (p ≥ 0.5) of Student's t with nu degrees of
// freedom: gonum's inverse incomplete beta refined by two Newton steps on the
// (tail-accurate) survival function, which brings it from ~1e-9 to ~1e-15
// relative accuracy.
//
// Past TNormalDF degrees of freedom it is the standard normal's quantile.
func tQuantile(p, nu float64) float64 {
	if nu > TNormalDF {
		return distuv.UnitNormal.Quantile(p)
	}
	d := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}
	x := d.Quantile(p)
	for range 2 {
		pdf := d.Prob(x)
		if !(pdf > 0) || math.IsInf(x, 0) {
			break
		}
		x += (d.Survival(x) - (1 - p)) / pdf
	}
	return x
}

// TNormalDF is the degrees of freedom past which Student's t is read as
// the standard normal (tQuantile, tSurvival): at 1e7 their 95% quantiles
// differ by 1.5e-7, while gonum's StudentsT loses all accuracy past about
// 1e13 (its 95% quantile at 1e15 reads −0.14, at 1e20 105). A
// Satterthwaite combination with a negligible variance gives such degrees
// of freedom (WithExtraVariance: 1e38 for replicas that do not differ).
const TNormalDF = 1e7

// PoissonRateLower is the one-sided lower confidence bound, at level 1 −
// alpha (alpha in (0, 1)), on the rate of a Poisson process that gave k
// events (k ≥ 0) over exposure units of time or buckets (> 0): the alpha
// quantile of a Gamma(k, 1) over the exposure, the exact bound (Garwood);
// 0 when k is 0. It is in events per unit of exposure.
func PoissonRateLower(k, exposure, alpha float64) float64 {
	if !(k > 0) || !(exposure > 0) {
		return 0
	}
	return distuv.Gamma{Alpha: k, Beta: 1}.Quantile(alpha) / exposure
}
