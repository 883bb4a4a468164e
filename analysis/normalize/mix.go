package normalize

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/analysis/stats"
)

// Strata holds one arm's per-stratum, per-bucket totals of a ratio metric:
// for SLO attainment Num = good and Den = offered requests. Num[s][t] and
// Den[s][t] are stratum s (named Names[s]) in bucket t; every stratum has the
// same number of buckets, in time order (a bucket without requests of that
// stratum holds 0 and 0). Both arms of a comparison must list the same Names
// in the same order.
//
// Own, when not nil (one flag per stratum, the same in both arms), marks
// strata the outcome made rather than the traffic — requests a log gives
// no prompt length for, a stratum most of whose requests failed: each arm
// keeps its own share of them, and only the other strata are standardized
// (see Standardize). Weights gives them weight 0.
type Strata struct {
	Names    []string
	Num, Den [][]float64
	Own      []bool
}

// Merge returns s with the strata that group maps to one name added up,
// bucket by bucket, named by that name and listed in the order of their
// first member; a stratum kept at each arm's own share is kept as it is
// (group is not asked). Both arms merged by one group list the same names.
func (s Strata) Merge(group func(name string) string) Strata {
	out := Strata{}
	at := map[string]int{}
	for i, name := range s.Names {
		g := name
		if !s.own(i) {
			g = group(name)
		}
		k, ok := at[g]
		if !ok {
			k = len(out.Names)
			at[g] = k
			out.Names = append(out.Names, g)
			out.Num = append(out.Num, make([]float64, len(s.Num[i])))
			out.Den = append(out.Den, make([]float64, len(s.Den[i])))
			out.Own = append(out.Own, s.own(i))
		}
		for t := range s.Num[i] {
			out.Num[k][t] += s.Num[i][t]
			out.Den[k][t] += s.Den[i][t]
		}
	}
	return out
}

// own reports whether stratum i is kept at each arm's own share.
func (s Strata) own(i int) bool { return i < len(s.Own) && s.Own[i] }

// ArmWeights returns the weights by which an arm's strata enter its
// standardized figure, given the reference weights w (Weights), the
// strata kept at each arm's own share (Strata.Own; nil when none) and the
// arm's count per stratum (ΣDen, or the latency values a quantile
// mixes): w_s·(1 − u) for a standardized stratum and n_s/Σn for one of
// its own share, where u is the arm's share of Σn in those; summing to 1.
// Without own strata it is w.
func ArmWeights(w []float64, own []bool, n []float64) []float64 {
	isOwn := func(i int) bool { return i < len(own) && own[i] }
	var total, u float64
	for i, d := range n {
		total += d
		if isOwn(i) {
			u += d
		}
	}
	out := make([]float64, len(w))
	for i := range w {
		switch {
		case isOwn(i) && total > 0:
			out[i] = n[i] / total
		case isOwn(i):
		case total > 0:
			out[i] = w[i] * (1 - u/total)
		default:
			out[i] = w[i]
		}
	}
	return out
}

// buckets returns the number of buckets, or an error naming the problem.
func (s Strata) buckets(arm string) (int, error) {
	if len(s.Num) != len(s.Names) || len(s.Den) != len(s.Names) {
		return 0, fmt.Errorf("%s strata: %d names but %d numerator and %d denominator rows", arm, len(s.Names), len(s.Num), len(s.Den))
	}
	if len(s.Names) == 0 {
		return 0, fmt.Errorf("%s strata: no strata", arm)
	}
	b := len(s.Num[0])
	for i := range s.Names {
		if len(s.Num[i]) != b || len(s.Den[i]) != b {
			return 0, fmt.Errorf("%s strata: stratum %q has %d/%d buckets, stratum %q has %d", arm, s.Names[i], len(s.Num[i]), len(s.Den[i]), s.Names[0], b)
		}
		for t := range b {
			n, d := s.Num[i][t], s.Den[i][t]
			if math.IsNaN(n) || math.IsInf(n, 0) || math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
				return 0, fmt.Errorf("%s strata: stratum %q bucket %d has numerator %g, denominator %g (want finite, denominator ≥ 0)", arm, s.Names[i], t, n, d)
			}
		}
	}
	return b, nil
}

// Totals returns each stratum's ΣNum and ΣDen over all buckets.
func (s Strata) Totals() (num, den []float64) {
	num, den = make([]float64, len(s.Names)), make([]float64, len(s.Names))
	for i := range s.Names {
		for t := range s.Num[i] {
			num[i] += s.Num[i][t]
			den[i] += s.Den[i][t]
		}
	}
	return num, den
}

// Shares returns each stratum's share of ΣDen (the arm's traffic mix), NaN
// when the arm has no traffic.
func (s Strata) Shares() []float64 {
	_, den := s.Totals()
	total := 0.0
	for _, d := range den {
		total += d
	}
	out := make([]float64, len(den))
	for i, d := range den {
		out[i] = d / total
	}
	return out
}

// Pooled sums the strata per bucket: the arm's unstratified ratio.
func (s Strata) Pooled() stats.Ratio {
	if len(s.Num) == 0 {
		return stats.Ratio{}
	}
	b := len(s.Num[0])
	r := stats.Ratio{Num: make([]float64, b), Den: make([]float64, b)}
	for i := range s.Num {
		for t := 0; t < b && t < len(s.Num[i]) && t < len(s.Den[i]); t++ {
			r.Num[t] += s.Num[i][t]
			r.Den[t] += s.Den[i][t]
		}
	}
	return r
}

// The reference mixes of Weights (policy key normalize.mix).
const (
	MixNone     = "none"     // no re-weighting
	MixBaseline = "baseline" // the baseline's mix (default reference in §3.7)
	MixCanary   = "canary"   // the canary's mix
	MixPooled   = "pooled"   // both arms' traffic together
	MixWeights  = "weights"  // explicit weights from the policy
)

// Weights returns the reference weights, one per stratum in x.Names order,
// summing to 1, for mode:
//
//   - "baseline": the baseline's (y) share of ΣDen per stratum;
//   - "canary": the canary's (x) share;
//   - "pooled": the share of both arms' ΣDen together;
//   - "weights": explicit (class name → weight ≥ 0, normalised to sum 1);
//     every stratum must be named (give 0 to exclude one deliberately) and
//     every name must be a stratum;
//   - "none": nil weights, nil error (no re-weighting).
//
// x is the canary and y the baseline; their Names must match. Whether every
// weighted stratum has data in both arms is checked by Standardize.
func Weights(mode string, x, y Strata, explicit map[string]float64) ([]float64, error) {
	if !slices.Equal(x.Names, y.Names) {
		return nil, fmt.Errorf("the arms' strata differ: canary %q, baseline %q", x.Names, y.Names)
	}
	if !slices.Equal(x.Own, y.Own) {
		return nil, fmt.Errorf("the arms' strata differ in which are kept at each arm's own share")
	}
	_, dx := x.Totals()
	_, dy := y.Totals()
	for i := range dx {
		if x.own(i) {
			// each arm keeps its own share of these (Strata.Own)
			dx[i], dy[i] = 0, 0
		}
	}
	w := make([]float64, len(x.Names))
	switch mode {
	case MixNone:
		return nil, nil
	case MixBaseline:
		copy(w, dy)
	case MixCanary:
		copy(w, dx)
	case MixPooled:
		for i := range w {
			w[i] = dx[i] + dy[i]
		}
	case MixWeights:
		known := map[string]bool{}
		var missing []string
		for i, n := range x.Names {
			known[n] = true
			if x.own(i) {
				continue
			}
			v, ok := explicit[n]
			if !ok {
				missing = append(missing, n)
				continue
			}
			if !(v >= 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("normalize.weights: weight %g for class %q: want a finite number ≥ 0", v, n)
			}
			w[i] = v
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("normalize.weights: no weight for class(es) %s present in the data: add them (0 excludes a class deliberately)", quoteList(missing))
		}
		var extra []string
		for n := range explicit {
			if !known[n] {
				extra = append(extra, n)
			}
		}
		if len(extra) > 0 {
			sort.Strings(extra)
			return nil, fmt.Errorf("normalize.weights: class(es) %s do not occur in either arm: remove them or fix the class names (the data has %s)",
				quoteList(extra), quoteList(x.Names))
		}
	default:
		return nil, fmt.Errorf("normalize.mix: unknown reference mix %q: want baseline, canary, pooled, weights or none", mode)
	}
	total := 0.0
	for _, v := range w {
		total += v
	}
	if !(total > 0) {
		return nil, fmt.Errorf("normalize.mix %s: the reference weights sum to 0 (no traffic or all weights 0)", mode)
	}
	for i := range w {
		w[i] /= total
	}
	return w, nil
}

func quoteList(v []string) string {
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// MissingStrataError reports strata with a positive reference weight that an
// arm has no traffic in: their ratio is undefined there, so that arm cannot
// be standardised to the reference mix. Dropping them would silently change
// the mix, so the caller must report the comparison as not standardisable
// (or collapse strata, or choose a mix that gives them weight 0).
type MissingStrataError struct {
	// Canary and Baseline list, per arm, the strata with weight > 0 and no
	// traffic (ΣDen = 0), with their weights, in stratum order.
	Canary, Baseline []WeightedStratum
}

// WeightedStratum is a stratum name with its reference weight.
type WeightedStratum struct {
	Name   string
	Weight float64
}

func (e *MissingStrataError) Error() string {
	var parts []string
	for _, a := range []struct {
		arm string
		s   []WeightedStratum
	}{{"canary", e.Canary}, {"baseline", e.Baseline}} {
		if len(a.s) == 0 {
			continue
		}
		var names []string
		for _, s := range a.s {
			names = append(names, fmt.Sprintf("%q (weight %.3g)", s.Name, s.Weight))
		}
		parts = append(parts, fmt.Sprintf("the %s has no requests in %s", a.arm, strings.Join(names, ", ")))
	}
	return "cannot standardise to the reference mix: " + strings.Join(parts, "; ") +
		": collapse these classes, or choose a reference mix that gives them weight 0"
}

// MinStratumRequests is the per-arm stratum size (ΣDen) below which a
// stratum is listed in MixResult.Small: its ratio is unstable and
// post-stratification may add variance (statistics.md §3.7).
const MinStratumRequests = 10

// MixResult is a standardised comparison with its naive counterpart.
type MixResult struct {
	// Naive is the unstratified comparison of the pooled buckets
	// (stats.DiffOfRatios or stats.LogRatioOfRatios); Adjusted is the same
	// comparison standardised to Weights.
	Naive, Adjusted stats.Estimate
	// Canary and Baseline are each arm's standardised ratio
	// Σ_s w_s·ΣNum_s/ΣDen_s; NaiveCanary and NaiveBaseline the pooled
	// ratios ΣNum/ΣDen.
	Canary, Baseline           float64
	NaiveCanary, NaiveBaseline float64
	// Names, Weights and each arm's mix (share of ΣDen per stratum), in
	// stratum order.
	Names                      []string
	Weights                    []float64
	CanaryMix, BaselineMix     []float64
	CanaryRatio, BaselineRatio []float64 // per-stratum ΣNum/ΣDen (NaN when empty)
	// Dropped lists strata with weight 0 that hold traffic in an arm (their
	// requests do not count); Small lists weighted strata with fewer than
	// MinStratumRequests in an arm.
	Dropped, Small []string
	// Own marks the strata each arm keeps at its own share (Strata.Own;
	// nil when none): their Weights entry is 0.
	Own []bool
	// LogScale is true for StandardizeLog (estimates are log ratios).
	LogScale bool
}

// Summary renders the naive and adjusted comparison side by side with each
// arm's mix, in one line of plain text (stratum names are printed with %q,
// so untrusted class labels cannot inject control characters). Differences
// are shown in percentage points, log ratios as percent changes.
func (r MixResult) Summary() string {
	f := func(e stats.Estimate) string {
		conv := func(v float64) float64 { return 100 * v }
		unit := " pp"
		if r.LogScale {
			conv = func(v float64) float64 { return 100 * math.Expm1(v) }
			unit = "%"
		}
		return fmt.Sprintf("%+.2f%s [%+.2f, %+.2f]", conv(e.Point), unit, conv(e.CI.Lo), conv(e.CI.Hi))
	}
	mix := func(shares []float64) string {
		parts := make([]string, len(r.Names))
		for i, n := range r.Names {
			parts[i] = fmt.Sprintf("%q %.1f%%", n, 100*shares[i])
		}
		return strings.Join(parts, ", ")
	}
	s := fmt.Sprintf("naive %s, standardized %s; reference mix %s; canary mix %s; baseline mix %s",
		f(r.Naive), f(r.Adjusted), mix(r.Weights), mix(r.CanaryMix), mix(r.BaselineMix))
	if len(r.Dropped) > 0 {
		s += "; weight 0 (not compared): " + quoteList(r.Dropped)
	}
	if len(r.Small) > 0 {
		s += fmt.Sprintf("; fewer than %d requests in an arm (unstable): %s", MinStratumRequests, quoteList(r.Small))
	}
	return s
}

// Standardize compares the canary x with the baseline y after direct
// standardisation of both arms to the reference weights w (one per stratum,
// from Weights): each arm's standardised ratio is
//
//	θ = Σ_s w_s · (Σ_t Num_{s,t} / Σ_t Den_{s,t})
//
// (for attainment: the arm's SLO attainment had it received the reference
// mix of classes) — with strata of the arm's own share (Strata.Own) the
// others' standardized ratio A is carried at their share of the arm's
// traffic and those at their own, θ = (ΣNum_own + K·A)/(K + ΣDen_own), K
// the others' ΣDen, so what one arm lost there counts in full — and Adjusted estimates θ_x − θ_y, in the ratio's units
// (a fraction for attainment: 0.01 = 1 pp), with an interval at two-sided
// level conf (e.g. 0.90 for a gate at α = 0.05).
//
// Variance: the delta method on bucket totals with batch means, exactly as
// stats.DiffOfRatios. The linearised influence of bucket t is
// u_t = Σ_s w_s (Num_{s,t} − R_s Den_{s,t}) / ΣDen_s with R_s the stratum's
// ratio; its batch sums over up to 8 contiguous batches give the arm's
// variance, the arms' variances add, and the interval uses Student t with
// Welch–Satterthwaite degrees of freedom. (Internally the arm is passed to
// stats.DiffOfRatios as the ratio Σ(u_t + θ/b)/Σ(1/b), whose residuals are
// u_t, so the two can never drift apart.) With one stratum it reduces to
// stats.DiffOfRatios. Fewer than 8 buckets in an arm give an [−Inf, +Inf]
// interval. Method "standardized-delta-batchmeans".
//
// Errors: mismatched strata or bucket counts, non-finite or negative input,
// weights that are not one per stratum or not ≥ 0 summing to 1 (within
// 1e-9), and *MissingStrataError when a weighted stratum has no traffic in
// an arm.
func Standardize(x, y Strata, w []float64, conf float64) (MixResult, error) {
	return standardize(x, y, w, conf, false, false)
}

// StandardizeLog is Standardize on the log-ratio scale, for metrics with a
// relative margin whose per-stratum value is a ratio of sums (e.g. good
// tokens per offered token, or cost per good request per class): Adjusted
// estimates log(θ_x/θ_y) with the variance of Standardize carried to the log
// scale (Var(θ̂)/θ² per arm), as stats.LogRatioOfRatios does; Naive is
// stats.LogRatioOfRatios on the pooled buckets. Method
// "standardized-delta-batchmeans-log".
func StandardizeLog(x, y Strata, w []float64, conf float64) (MixResult, error) {
	return standardize(x, y, w, conf, true, false)
}

// StandardizePaired is Standardize for arms observed at the same time on
// one bucket grid (x and y hold the same number of buckets, bucket t of
// both covering the same seconds; zeros where an arm has no data): the
// adjusted interval comes from the paired batch-means variance of the
// per-bucket influence differences (stats.PairedDiffOfRatios), so what the
// arms share in time cancels. Method "standardized-" followed by that
// estimator's ("standardized-paired-delta-lagwindow" from 60 buckets on,
// "standardized-paired-delta-batchmeans" below).
func StandardizePaired(x, y Strata, w []float64, conf float64) (MixResult, error) {
	return standardize(x, y, w, conf, false, true)
}

// StandardizeLogPaired is StandardizeLog with the paired variance of
// StandardizePaired.
func StandardizeLogPaired(x, y Strata, w []float64, conf float64) (MixResult, error) {
	return standardize(x, y, w, conf, true, true)
}

func standardize(x, y Strata, w []float64, conf float64, logScale, paired bool) (MixResult, error) {
	res := MixResult{LogScale: logScale}
	if _, err := x.buckets("canary"); err != nil {
		return res, err
	}
	if _, err := y.buckets("baseline"); err != nil {
		return res, err
	}
	if !slices.Equal(x.Names, y.Names) {
		return res, fmt.Errorf("the arms' strata differ: canary %q, baseline %q", x.Names, y.Names)
	}
	if !slices.Equal(x.Own, y.Own) {
		return res, fmt.Errorf("the arms' strata differ in which are kept at each arm's own share")
	}
	if len(w) != len(x.Names) {
		return res, fmt.Errorf("%d weights for %d strata", len(w), len(x.Names))
	}
	sum := 0.0
	for i, v := range w {
		if !(v >= 0) || math.IsInf(v, 0) {
			return res, fmt.Errorf("weight %g of stratum %q: want a finite number ≥ 0", v, x.Names[i])
		}
		sum += v
	}
	if math.Abs(sum-1) > 1e-9 {
		return res, fmt.Errorf("weights sum to %.12g, want 1", sum)
	}
	nx, dx := x.Totals()
	ny, dy := y.Totals()
	res.Names = slices.Clone(x.Names)
	res.Weights = slices.Clone(w)
	res.Own = slices.Clone(x.Own)
	res.CanaryMix, res.BaselineMix = x.Shares(), y.Shares()
	res.CanaryRatio, res.BaselineRatio = make([]float64, len(w)), make([]float64, len(w))
	var miss MissingStrataError
	for i, name := range x.Names {
		res.CanaryRatio[i], res.BaselineRatio[i] = nx[i]/dx[i], ny[i]/dy[i]
		if dx[i] == 0 {
			res.CanaryRatio[i] = math.NaN()
		}
		if dy[i] == 0 {
			res.BaselineRatio[i] = math.NaN()
		}
		if x.own(i) {
			continue
		}
		if w[i] > 0 {
			if dx[i] == 0 {
				miss.Canary = append(miss.Canary, WeightedStratum{name, w[i]})
			}
			if dy[i] == 0 {
				miss.Baseline = append(miss.Baseline, WeightedStratum{name, w[i]})
			}
			if (dx[i] > 0 && dx[i] < MinStratumRequests) || (dy[i] > 0 && dy[i] < MinStratumRequests) {
				res.Small = append(res.Small, name)
			}
		} else if dx[i] > 0 || dy[i] > 0 {
			res.Dropped = append(res.Dropped, name)
		}
	}
	px, py := x.Pooled(), y.Pooled()
	res.NaiveCanary, res.NaiveBaseline = sumOf(px.Num)/sumOf(px.Den), sumOf(py.Num)/sumOf(py.Den)
	switch {
	case paired && len(px.Num) == len(py.Num) && logScale:
		res.Naive = stats.PairedLogRatioOfRatios(px, py, conf)
	case paired && len(px.Num) == len(py.Num):
		res.Naive = stats.PairedDiffOfRatios(px, py, conf)
	case logScale:
		res.Naive = stats.LogRatioOfRatios(px, py, conf)
	default:
		res.Naive = stats.DiffOfRatios(px, py, conf)
	}
	if len(miss.Canary) > 0 || len(miss.Baseline) > 0 {
		res.Canary, res.Baseline = math.NaN(), math.NaN()
		res.Adjusted = stats.Estimate{Point: math.NaN(), SE: math.NaN(), CI: stats.Interval{Lo: math.NaN(), Hi: math.NaN()}, Method: "standardized-delta-batchmeans"}
		return res, &miss
	}
	ix, tx := influence(x, w, nx, dx)
	iy, ty := influence(y, w, ny, dy)
	res.Canary, res.Baseline = tx, ty
	if paired && len(ix.Num) != len(iy.Num) {
		return res, fmt.Errorf("paired arms on different bucket grids: %d and %d buckets", len(ix.Num), len(iy.Num))
	}
	switch {
	case paired && logScale:
		res.Adjusted = stats.PairedLogRatioOfRatios(ix, iy, conf)
		res.Adjusted.Method = "standardized-" + res.Adjusted.Method
		if tx > 0 && ty > 0 {
			shift := math.Log(tx/ty) - res.Adjusted.Point
			res.Adjusted.Point += shift
			res.Adjusted.CI.Lo += shift
			res.Adjusted.CI.Hi += shift
		}
	case paired:
		res.Adjusted = stats.PairedDiffOfRatios(ix, iy, conf)
		res.Adjusted.Method = "standardized-" + res.Adjusted.Method
		shift := (tx - ty) - res.Adjusted.Point
		res.Adjusted.Point += shift
		res.Adjusted.CI.Lo += shift
		res.Adjusted.CI.Hi += shift
	case logScale:
		res.Adjusted = stats.LogRatioOfRatios(ix, iy, conf)
		res.Adjusted.Method = "standardized-delta-batchmeans-log"
		// θ is carried exactly, not through Σ(u_t + θ/b)
		if tx > 0 && ty > 0 {
			shift := math.Log(tx/ty) - res.Adjusted.Point
			res.Adjusted.Point += shift
			res.Adjusted.CI.Lo += shift
			res.Adjusted.CI.Hi += shift
		}
	default:
		res.Adjusted = stats.DiffOfRatios(ix, iy, conf)
		res.Adjusted.Method = "standardized-delta-batchmeans"
		shift := (tx - ty) - res.Adjusted.Point
		res.Adjusted.Point += shift
		res.Adjusted.CI.Lo += shift
		res.Adjusted.CI.Hi += shift
	}
	return res, nil
}

// influence returns the arm as a stats.Ratio whose ratio is the standardised
// θ and whose linearised residuals are the per-bucket influences u_t (see
// Standardize), and θ itself. With strata of the arm's own share (Own:
// ΣNum_o, ΣDen_o pooled over them; K = ΣDen of the others, D = K + ΣDen_o)
// θ = (ΣNum_o + K·A)/D, A the standardized ratio of the others, and
//
//	u_t = (Num_o,t − θ·Den_o,t)/D + (A − θ)·K_t/D + (K/D)·u^A_t
//
// with u^A_t the influence of A; without them u_t = u^A_t.
func influence(s Strata, w, num, den []float64) (stats.Ratio, float64) {
	b := len(s.Num[0])
	a := 0.0
	var no, do, k float64
	for i := range w {
		switch {
		case s.own(i):
			no, do = no+num[i], do+den[i]
		case w[i] > 0:
			a += w[i] * num[i] / den[i]
			k += den[i]
		default:
			k += den[i]
		}
	}
	d := k + do
	theta := a
	if do > 0 {
		theta = (no + k*a) / d
	}
	r := stats.Ratio{Num: make([]float64, b), Den: make([]float64, b)}
	for t := range b {
		u, nt, dt, kt := 0.0, 0.0, 0.0, 0.0
		for i := range w {
			switch {
			case s.own(i):
				nt, dt = nt+s.Num[i][t], dt+s.Den[i][t]
			case w[i] == 0:
				kt += s.Den[i][t]
			default:
				u += w[i] * (s.Num[i][t] - num[i]/den[i]*s.Den[i][t]) / den[i]
				kt += s.Den[i][t]
			}
		}
		if do > 0 {
			u = (nt-theta*dt)/d + (a-theta)*kt/d + k/d*u
		}
		r.Num[t] = u + theta/float64(b)
		r.Den[t] = 1 / float64(b)
	}
	return r, theta
}

func sumOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

// PromptEdges are the prompt-length band edges of Band in tokens, an
// octave apart from 512 to 16384 (a band includes its lower edge): fine
// enough that the classes a fleet serves, whose prompts differ in length,
// fall in bands of their own more often than not.
func PromptEdges() []int64 { return []int64{512, 1024, 2048, 4096, 8192, 16384} }

// BandIndex numbers Band's bands: 0 for an unknown (negative) length, then
// 1 to len(PromptEdges())+1 in increasing prompt length.
func BandIndex(promptTokens int64) int {
	if promptTokens < 0 {
		return 0
	}
	edges := PromptEdges()
	i := 0
	for i < len(edges) && promptTokens >= edges[i] {
		i++
	}
	return i + 1
}

// Band returns the token-length stratum of a request whose records carry
// no class label: its prompt length in tokens banded at PromptEdges, e.g.
// "prompt 1k-2k"; a negative (unknown) length gives "prompt unknown". The
// prompt is set before a request reaches either arm; the output length is
// not: it is what the arm did (a failed request has none, an answer cut
// short a shorter one), so a stratum by output length would standardize
// away the very harm the gates are there to see (a canary failing 3% more
// requests, logged without output_tokens, passed error_rate at 0.19%
// against 0.19% when output bands were strata). Bands lists the bands of
// known lengths in increasing length.
func Band(promptTokens int64) string {
	i := BandIndex(promptTokens)
	if i == 0 {
		return "prompt unknown"
	}
	edges := PromptEdges()
	switch {
	case i == 1:
		return "prompt <" + tokenCount(edges[0])
	case i > len(edges):
		return "prompt >=" + tokenCount(edges[len(edges)-1])
	}
	return "prompt " + tokenCount(edges[i-2]) + "-" + tokenCount(edges[i-1])
}

// LabelBandSep separates a class label from its prompt-length band in a
// stratum's name (LabelBand).
const LabelBandSep = ", "

// LabelBand is the stratum, under normalize.prompt_bands: all, of a
// request whose record carries class label label: the label and its
// prompt length's Band ("chat, prompt 1k-2k"), or the label alone when
// the prompt length is unknown (negative). A label names a kind of
// traffic, but the prompts under one label still differ in length, and
// TTFT grows with the prompt: a canary sent longer prompts under the same
// labels (a mix shift within a label) was judged slower for serving them
// (identical builds in the fleet model, prompts drawn longer within each
// label, prefill time growing with the prompt: 45 fails in 100 runs by
// label alone, 1 with the bands). The prompt is set before a request reaches
// either arm, so its band is a stratum like the label.
func LabelBand(label string, promptTokens int64) string {
	if promptTokens < 0 {
		return label
	}
	return label + LabelBandSep + Band(promptTokens)
}

// SplitLabelBand undoes LabelBand: the label and the band of a stratum's
// label-and-band part ("" band when it has none, as for a label of a
// request of unknown prompt length). Only a known band after the last
// LabelBandSep is split off, so a label that itself holds ", " stays
// whole.
func SplitLabelBand(head string) (label, band string) {
	i := strings.LastIndex(head, LabelBandSep)
	if i < 0 {
		return head, ""
	}
	b := head[i+len(LabelBandSep):]
	if slices.Contains(Bands(), b) {
		return head[:i], b
	}
	return head, ""
}

// WithoutLabelBand is a stratum key ("chat, prompt 1k-2k × default", or
// without policy classes "chat, prompt 1k-2k") with its label's band left
// out ("chat × default", "chat"): the label's stratum as a whole, for the
// series that follow one kind of traffic through the run (the warm-up's
// per-bucket medians), where the bands would only thin it. A key without
// a label band is returned as it is.
func WithoutLabelBand(key string) string {
	if i := strings.LastIndex(key, " × "); i >= 0 {
		if l, b := SplitLabelBand(key[:i]); b != "" {
			return l + key[i:]
		}
	}
	if l, b := SplitLabelBand(key); b != "" {
		return l
	}
	return key
}

// tokenCount writes a band edge: "512", or "2k" for a multiple of 1024.
func tokenCount(n int64) string {
	if n >= 1024 && n%1024 == 0 {
		return strconv.FormatInt(n/1024, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// Bands lists Band's bands of known lengths, in increasing length.
func Bands() []string {
	edges := PromptEdges()
	out := []string{Band(0)}
	for _, e := range edges {
		out = append(out, Band(e))
	}
	return out
}
