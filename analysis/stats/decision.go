package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a two-sided confidence interval [Lo, Hi]. An interval that says
// nothing is [−Inf, +Inf]; an undefined one has NaN bounds.
type Interval struct{ Lo, Hi float64 }

// Estimate is a point estimate with its interval and the method that made it.
type Estimate struct {
	Point  float64
	CI     Interval
	SE     float64 // standard error on the scale of Point (NaN if not defined)
	Method string  // short machine name, e.g. "delta-hac", "block-bootstrap", "newcombe", "wilson"
	// DF is the degrees of freedom of the interval's critical value, for
	// an interval Point ± t_DF·√v (the paired estimators); 0 when not
	// set, taken as normal.
	DF float64
}

// Decision is the three-way verdict of one gate.
type Decision string

// The three verdicts of a gate (DESIGN.md §5).
const (
	Pass         Decision = "pass"
	Fail         Decision = "fail"
	Inconclusive Decision = "inconclusive"
)

// zTwoSided returns the standard-normal quantile z with P(|Z| ≤ z) = conf, or
// NaN when conf is outside (0, 1).
func zTwoSided(conf float64) float64 {
	if !(conf > 0 && conf < 1) {
		return math.NaN()
	}
	return distuv.UnitNormal.Quantile(0.5 + conf/2)
}

// NonInferiority decides a non-inferiority gate from harm, an interval of the
// harm (positive = canary worse, in the metric's units) at level 1 − 2α, and
// the pre-registered margin in the same units: Pass if Hi < margin, Fail if
// Lo > margin, else Inconclusive. NaN bounds are Inconclusive.
func NonInferiority(harm Interval, margin float64) Decision {
	switch {
	case !(harm.Lo <= harm.Hi):
		// an interval out of order (or NaN) decides nothing
		return Inconclusive
	case harm.Hi < margin:
		return Pass
	case harm.Lo > margin:
		return Fail
	}
	return Inconclusive
}

// Guardrail decides a hard guardrail (error rate, rejected share, traffic
// split): Fail as soon as the canary is worse with confidence (Lo > 0), Pass if
// Hi < margin, else Inconclusive. A failure takes precedence, so a harm
// interval entirely above 0 fails even when it also lies below the margin.
func Guardrail(harm Interval, margin float64) Decision {
	switch {
	case !(harm.Lo <= harm.Hi):
		return Inconclusive
	case harm.Lo > 0:
		return Fail
	case harm.Hi < margin:
		return Pass
	}
	return Inconclusive
}

// FailPValue is the one-sided p-value of H0 "harm ≤ threshold" against
// "harm > threshold", from a normal approximation with point estimate
// harmPoint and standard error se (both in the metric's units). With se == 0
// it is 0 when harmPoint > threshold and 1 otherwise; NaN input gives NaN.
// Feed these to Holm to decide which gate fails call survive multiplicity.
func FailPValue(harmPoint, se, threshold float64) float64 {
	if math.IsNaN(harmPoint) || math.IsNaN(se) || math.IsNaN(threshold) || se < 0 {
		return math.NaN()
	}
	if se == 0 || math.IsInf(se, 1) {
		switch {
		case math.IsInf(se, 1):
			return 0.5
		case harmPoint > threshold:
			return 0
		}
		return 1
	}
	return normSF((harmPoint - threshold) / se)
}

// order returns the indices of p sorted by ascending p, NaN treated as 1 and
// ties kept in input order, so the adjustment is deterministic.
func order(p []float64) []int {
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
	}
	key := func(i int) float64 {
		if math.IsNaN(p[i]) {
			return 1
		}
		return p[i]
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		ka, kb := key(a), key(b)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return idx
}

// Holm returns Holm's step-down adjusted p-values, in the order of p: reject
// hypothesis i at family-wise level α when Holm(p)[i] ≤ α. Valid under any
// dependence between the tests. NaN inputs count as hypotheses (K includes
// them) and come back NaN.
func Holm(p []float64) []float64 {
	k := len(p)
	out := make([]float64, k)
	run := 0.0
	for rank, i := range order(p) {
		if math.IsNaN(p[i]) {
			out[i] = math.NaN()
			continue
		}
		v := math.Min(1, float64(k-rank)*p[i])
		run = math.Max(run, v)
		out[i] = run
	}
	return out
}

// WeightedHolm returns the adjusted p-values of Holm's weighted step-down
// procedure (Holm 1979), in the order of p: reject hypothesis i at
// family-wise level α when WeightedHolm(p, w)[i] ≤ α. w are the weights
// (> 0; any scale): hypotheses are taken in increasing p_i/w_i, and at each
// step the next one is rejected when p_i ≤ α·w_i/Σ w over the hypotheses not
// yet rejected, so a heavy hypothesis keeps most of α and the light ones
// share the rest. Equal weights give Holm. Valid under any dependence. NaN
// p-values count as hypotheses that are never rejected (their weight stays
// in every sum) and come back NaN; a weight ≤ 0 or NaN counts as the
// smallest positive weight given.
func WeightedHolm(p, w []float64) []float64 {
	k := len(p)
	out := make([]float64, k)
	ww := make([]float64, k)
	minW := math.Inf(1)
	for _, v := range w {
		if v > 0 && v < minW {
			minW = v
		}
	}
	if math.IsInf(minW, 1) {
		minW = 1
	}
	total := 0.0
	for i := range ww {
		ww[i] = minW
		if i < len(w) && w[i] > 0 {
			ww[i] = w[i]
		}
		total += ww[i]
	}
	ratio := make([]float64, k)
	for i := range p {
		ratio[i] = p[i] / ww[i]
		if math.IsNaN(p[i]) {
			ratio[i] = math.Inf(1)
		}
	}
	idx := order(ratio)
	run := 0.0
	remaining := total
	for _, i := range idx {
		if math.IsNaN(p[i]) {
			out[i] = math.NaN()
			continue
		}
		v := math.Min(1, p[i]*remaining/ww[i])
		run = math.Max(run, v)
		out[i] = run
		remaining -= ww[i]
	}
	return out
}

// BH returns Benjamini–Hochberg adjusted p-values (q-values), in the order of
// p: declare discoveries where BH(p)[i] ≤ q. It controls the false discovery
// rate under independence or positive dependence (latency metrics of one run).
// NaN inputs count towards K and come back NaN.
func BH(p []float64) []float64 {
	k := len(p)
	out := make([]float64, k)
	idx := order(p)
	run := 1.0
	for rank := k - 1; rank >= 0; rank-- {
		i := idx[rank]
		if math.IsNaN(p[i]) {
			out[i] = math.NaN()
			continue
		}
		run = math.Min(run, math.Min(1, float64(k)*p[i]/float64(rank+1)))
		out[i] = run
	}
	return out
}

// MoreData returns, for an inconclusive gate, the multiplier k ≥ 1 of the
// current sample size at which the interval harmPoint ± z·se/√k would exclude
// the margin, assuming the point estimate stays and the standard error scales
// as 1/√n: k = max(1, (z·se / |margin − harmPoint|)²). It decides pass when
// harmPoint < margin and fail when harmPoint > margin; +Inf when they are
// equal, NaN on NaN input. Requests still needed ≈ (k − 1) × current requests.
// The projection treats the estimate as the truth, so it is optimistic.
func MoreData(harmPoint, se, margin, z float64) float64 {
	if math.IsNaN(harmPoint) || math.IsNaN(se) || math.IsNaN(margin) || math.IsNaN(z) {
		return math.NaN()
	}
	gap := math.Abs(margin - harmPoint)
	if gap == 0 {
		return math.Inf(1)
	}
	r := math.Abs(z) * se / gap
	return math.Max(1, r*r)
}

// SRM is the sample-ratio-mismatch test: Pearson's chi-square goodness of fit
// of the observed counts (e.g. offered requests per arm) against the
// configured traffic shares (any positive scale; they are normalised), with
// k − 1 degrees of freedom. A small p (the reference uses p < 0.001) means
// routing, retries or shedding differ between arms and the comparison is
// biased. A zero expected share with a non-zero count gives chi2 = +Inf, p = 0.
// Mismatched lengths, fewer than two arms, negative or NaN input, or no
// observations give NaN, NaN.
func SRM(observed []float64, expectedShare []float64) (chi2, p float64) {
	k := len(observed)
	if k < 2 || len(expectedShare) != k {
		return math.NaN(), math.NaN()
	}
	var total, shares float64
	for i := range observed {
		if !(observed[i] >= 0) || !(expectedShare[i] >= 0) || math.IsInf(observed[i], 0) || math.IsInf(expectedShare[i], 0) {
			return math.NaN(), math.NaN()
		}
		total += observed[i]
		shares += expectedShare[i]
	}
	if total == 0 || shares == 0 {
		return math.NaN(), math.NaN()
	}
	for i := range observed {
		e := total * expectedShare[i] / shares
		d := observed[i] - e
		if e == 0 {
			if observed[i] > 0 {
				return math.Inf(1), 0
			}
			continue
		}
		chi2 += d * d / e
	}
	return chi2, distuv.ChiSquared{K: float64(k - 1)}.Survival(chi2)
}

// MinDetectableEffect returns the smallest true harm (in the units of se)
// that a one-sided level-alpha test with standard error se detects with
// probability power: (z_{1−α} + z_{power})·se. For a non-inferiority gate it
// is how far below the margin the true harm must lie for the gate to pass
// with that probability. Multiply se by √(n/N) to plan for N instead of the
// current n. alpha and power must lie in (0, 1); otherwise NaN.
func MinDetectableEffect(se, alpha, power float64) float64 {
	if !(alpha > 0 && alpha < 1) || !(power > 0 && power < 1) || !(se >= 0) {
		return math.NaN()
	}
	return (distuv.UnitNormal.Quantile(1-alpha) + distuv.UnitNormal.Quantile(power)) * se
}
