package stats

import "math"

// ReplicaCounts is one replica's requests per bucket of its arm's grid:
// offered (every request it was sent) and good (those that met the SLO).
// Offered and Good have the arm's bucket count; a bucket the replica did
// not serve holds zeros.
type ReplicaCounts struct {
	Offered, Good []float64
}

// ReplicaSpread is the part of an attainment difference's variance that
// comes from replicas that differ for the whole run (a slower GPU, a host
// with a noisy neighbour, a placement): what batches in time cannot see,
// since such a replica is as slow in every batch.
type ReplicaSpread struct {
	// Tau2 is the between-replica variance of attainment (fraction²,
	// ≥ 0), estimated from both arms' replicas pooled.
	Tau2 float64
	// Var is the variance it adds to the difference of the arms'
	// attainments: Tau2·(Σw_b² + Σw_c²), w a replica's share of its
	// arm's offered requests.
	Var float64
	// DF is the degrees of freedom of Tau2: Σ over the arms of
	// (replicas − 1).
	DF float64
	// Replicas counts each arm's replicas (baseline, canary).
	Replicas [2]int
}

// BetweenReplicas estimates the variance of attainment between replicas
// from the replicas of both arms (b the baseline's, c the canary's; each
// replica's buckets on its arm's grid), batches the contiguous batches of
// each arm's grid (min(batches, buckets/4)). Within an arm, in batch g,
// replica r's residual e_rg = Σ(good − R·offered)/N (R and N the arm's
// attainment and offered requests) less its share of the arm's residual
// in that batch, D_rg, removes whatever the arm's replicas share in time
// (the traffic wave, the arm's own slowdowns, and the change itself,
// which moves all of an arm's replicas); S_r = Σ_g D_rg then carries the
// replica's own offset δ_r times its share w_r, and Σ_g D_rg² its noise
// within the run. Under δ_r ~ (0, τ²),
//
//	E Σ_r (S_r² − Σ_g D_rg²)·G/(G−1) = τ²·Σ_r w_r²(1 − 2w_r + Σ_j w_j²),
//
// summed over both arms, which gives Tau2 (floored at 0) on Σ(replicas −
// 1) degrees of freedom. The canary's replicas count too: estimated from
// the baseline's alone (3 degrees of freedom on four replicas) the
// variance was too often small by chance, and identical arms failed 4 of
// 100 runs on the fleet model with replica speeds 6% apart (0 pooled). A
// canary replica slower than its peers then widens the interval instead
// of failing it: the latency gates see such a replica. ok is false when
// no arm has two replicas with offered requests, or when the counts are
// empty, mismatched or not finite.
func BetweenReplicas(b, c []ReplicaCounts, batches int) (ReplicaSpread, bool) {
	return betweenReplicas(b, c, batches, 2)
}

// BetweenReplicasOfBaseline is BetweenReplicas with Tau2 and DF from the
// baseline's replicas alone (Var still counts both arms' shares): how far
// replicas differ by chance, told by the arm that is not judged, so that
// a canary replica unlike the baseline's is judged, not taken for chance.
func BetweenReplicasOfBaseline(b, c []ReplicaCounts, batches int) (ReplicaSpread, bool) {
	return betweenReplicas(b, c, batches, 1)
}

// betweenReplicas pools the first `from` arms' moment terms (1: the
// baseline's, 2: both).
func betweenReplicas(b, c []ReplicaCounts, batches, from int) (ReplicaSpread, bool) {
	var out ReplicaSpread
	var num, den, df float64
	var shares [2]float64
	for ai, reps := range [2][]ReplicaCounts{b, c} {
		n, terms, sw, ok := replicaResiduals(reps, batches)
		if !ok || n == 0 {
			return ReplicaSpread{}, false
		}
		out.Replicas[ai], shares[ai] = n, sw
		if n >= 2 && ai < from {
			num, den, df = num+terms.num, den+terms.den, df+float64(n-1)
		}
	}
	if df == 0 || !(den > 0) {
		return ReplicaSpread{}, false
	}
	out.Tau2 = max(0, num/den)
	out.DF = df
	out.Var = out.Tau2 * (shares[0] + shares[1])
	return out, true
}

// replicaTerms are one arm's contributions to BetweenReplicas' moment
// estimator: Σ_r (S_r² − Σ_g D_rg²)·G/(G−1) and Σ_r w_r²(1 − 2w_r + Σw²).
type replicaTerms struct{ num, den float64 }

// replicaResiduals returns one arm's replicas with offered requests, its
// moment terms and Σw_r² (ok false for malformed counts).
func replicaResiduals(reps []ReplicaCounts, batches int) (n int, terms replicaTerms, sumW2 float64, ok bool) {
	if len(reps) == 0 {
		return 0, terms, 0, true
	}
	nb := len(reps[0].Offered)
	rowOff, ok := replicaTotals(reps)
	if !ok {
		return 0, terms, 0, false
	}
	var off, good float64
	for r, x := range reps {
		off += rowOff[r]
		for _, g := range x.Good {
			good += g
		}
	}
	q := min(batches, nb/4)
	if !(off > 0) || q < 2 {
		return 0, terms, 0, true
	}
	R := good / off
	// per batch: each replica's residual and offered requests, the arm's
	e := make([][]float64, len(reps))
	o := make([][]float64, len(reps))
	eArm, oArm := make([]float64, q), make([]float64, q)
	for r, x := range reps {
		e[r], o[r] = make([]float64, q), make([]float64, q)
		for g := range q {
			for t := g * nb / q; t < (g+1)*nb/q; t++ {
				e[r][g] += (x.Good[t] - R*x.Offered[t]) / off
				o[r][g] += x.Offered[t]
			}
			eArm[g] += e[r][g]
			oArm[g] += o[r][g]
		}
	}
	G := float64(q)
	for r := range reps {
		if rowOff[r] == 0 {
			continue
		}
		n++
		w := rowOff[r] / off
		sumW2 += w * w
		var s, within float64
		for g := range q {
			d := e[r][g]
			if oArm[g] > 0 {
				d -= o[r][g] / oArm[g] * eArm[g]
			}
			s += d
			within += d * d
		}
		terms.num += (s*s - within) * G / (G - 1)
	}
	for r := range reps {
		if w := rowOff[r] / off; w > 0 {
			terms.den += w * w * (1 - 2*w + sumW2)
		}
	}
	return n, terms, sumW2, true
}

// replicaTotals checks one arm's counts (every series as long as the
// first replica's Offered, finite, 0 ≤ good ≤ offered) and returns each
// replica's offered requests; ok is false for counts that fail the check.
func replicaTotals(reps []ReplicaCounts) (rowOff []float64, ok bool) {
	nb := len(reps[0].Offered)
	rowOff = make([]float64, len(reps))
	for r, x := range reps {
		if len(x.Offered) != nb || len(x.Good) != nb {
			return nil, false
		}
		for t, o := range x.Offered {
			g := x.Good[t]
			if math.IsNaN(o) || math.IsInf(o, 0) || math.IsNaN(g) || math.IsInf(g, 0) || o < 0 || g < 0 || g > o {
				return nil, false
			}
			rowOff[r] += o
		}
	}
	return rowOff, true
}

// WithExtraVariance widens est, an interval Point ± t_DF·√v₀ (DF its
// degrees of freedom; 0 or +Inf: normal), by an independent variance v
// on df degrees of freedom: the half-width becomes t_ν·√(v₀ + v), ν by
// Welch–Satterthwaite. SE is the normal-equivalent half-width / z. est is
// returned unchanged when v is not > 0 or its interval is not finite.
func WithExtraVariance(est Estimate, conf, v, df float64) Estimate {
	z := zTwoSided(conf)
	half := (est.CI.Hi - est.CI.Lo) / 2
	if !(v > 0) || !(df > 0) || math.IsNaN(z) || math.IsNaN(half) || math.IsInf(half, 0) {
		return est
	}
	crit := func(nu float64) float64 {
		if nu == 0 || math.IsInf(nu, 1) {
			return z
		}
		return tQuantile(0.5+conf/2, nu)
	}
	v0 := sq(half / crit(est.DF))
	nu := math.Inf(1)
	if est.DF > 0 && !math.IsInf(est.DF, 1) {
		nu = sq(v0+v) / (sq(v0)/est.DF + sq(v)/df)
	} else {
		nu = sq(v0+v) / (sq(v) / df)
	}
	h := crit(nu) * math.Sqrt(v0+v)
	mid := (est.CI.Hi + est.CI.Lo) / 2
	est.CI = Interval{mid - h, mid + h}
	est.SE = h / z
	est.DF = nu
	return est
}

// ReplicaCapacity is the part of an attainment difference's variance that
// comes from replicas of their own speeds through the arm's capacity:
// where a router sends each request to the replica with the least
// outstanding work, a slower replica takes fewer requests and its peers
// more, so its slowness is spread over the arm as a whole (an arm of
// slower replicas is a smaller arm), not seen as one replica's deficit by
// BetweenReplicas. Such a router gives each replica traffic in proportion
// to its speed, so the spread of the replicas' shares of their arm's
// requests measures the spread of their speeds; the attainment an arm
// loses per unit of capacity is measured from the run itself, as its
// fall with the load the arm was offered.
type ReplicaCapacity struct {
	// Speed2 is the variance of a replica's relative speed (its share of
	// the arm's requests times the arm's replicas), beyond what its
	// batches' counts vary by, pooled over both arms (≥ 0). 0 under a
	// router that ignores load (uniform or random shares).
	Speed2 float64
	// Slope is the attainment lost per unit of log load (fraction per
	// log unit, ≥ 0 counted as harm; a negative fit is used squared as
	// well): the slope of the slices' attainment on the log of their
	// offered requests (smoothed over LoadSmoothing slices), within each
	// arm, weighted by offered requests.
	Slope float64
	// Var is the variance it adds to the difference of the arms'
	// attainments: Slope²·Speed2·(Σw_b² + Σw_c²), w a replica's share
	// of its arm's offered requests (an arm's capacity is the sum of its
	// replicas' speeds, whose relative variance is Speed2·Σw²).
	Var float64
	// DF is the degrees of freedom of Speed2: Σ over the arms of
	// (replicas − 1).
	DF float64
}

// LoadSmoothing is the number of slices (centred) the offered load is
// averaged over before its log is taken for ReplicaCapacity's slope: the
// load that congests an engine is the load of the last minute or so,
// and a slice's own Poisson count would bias the slope towards 0.
const LoadSmoothing = 7

// Capacity estimates ReplicaCapacity from both arms' replicas (as
// BetweenReplicas: each replica's buckets on its arm's grid, batches
// contiguous batches, min(batches, buckets/4)). In each batch where every
// replica of the arm served, replica r's relative share is
// k·o_rg/Σ_j o_jg (k replicas); Speed2 is the variance of the replicas'
// mean relative shares less the mean of their batch-to-batch variances
// over the batches counted, pooled over the arms on their k − 1 degrees
// of freedom and floored at 0. ok is false when neither arm has two
// replicas serving in two such batches, or when the counts are
// mismatched, negative, not finite or have more good than offered.
func Capacity(b, c []ReplicaCounts, batches int) (ReplicaCapacity, bool) {
	return capacity(b, c, batches, 2)
}

// CapacityOfBaseline is Capacity with Speed2 and DF from the baseline's
// replicas' shares alone (the slope from both arms, Var over both arms'
// shares): a canary replica that takes less traffic than the baseline's
// would is judged, not taken for the spread replicas have by chance.
func CapacityOfBaseline(b, c []ReplicaCounts, batches int) (ReplicaCapacity, bool) {
	return capacity(b, c, batches, 1)
}

// capacity pools the first `from` arms' share spreads (1: the
// baseline's, 2: both).
func capacity(b, c []ReplicaCounts, batches, from int) (ReplicaCapacity, bool) {
	arms := [2][]ReplicaCounts{b, c}
	return capacityWith(arms, batches, from, -1, func(ai int) (xy, xx float64) { return loadSlope(arms[ai]) })
}

// capacityWith is ReplicaCapacity from both arms' counts: Speed2 and DF
// from the share spreads (shareSpread) of the first `from` arms, Σw² over
// both, and Slope = sign·Σxy/Σxx from slope's regression sums for each
// arm, called once that arm's counts are checked. ok is false for counts
// that fail the check, no replicas' spread or a load that never varies.
func capacityWith(arms [2][]ReplicaCounts, batches, from int, sign float64, slope func(ai int) (xy, xx float64)) (ReplicaCapacity, bool) {
	var out ReplicaCapacity
	var num, df, sumW2 float64
	var sxy, sxx float64
	for ai, reps := range arms {
		n, s2, w2, ok := shareSpread(reps, batches)
		if !ok {
			return ReplicaCapacity{}, false
		}
		sumW2 += w2
		if n >= 2 && ai < from {
			num += float64(n-1) * s2
			df += float64(n - 1)
		}
		xy, xx := slope(ai)
		sxy, sxx = sxy+xy, sxx+xx
	}
	if df == 0 || !(sxx > 0) {
		return ReplicaCapacity{}, false
	}
	out.Speed2 = max(0, num/df)
	out.Slope = sign * sxy / sxx
	out.DF = df
	out.Var = out.Slope * out.Slope * out.Speed2 * sumW2
	return out, true
}

// shareSpread returns one arm's replicas counted (those with offered
// requests), the between-replica variance of their relative shares less
// its batch noise (may be negative), and Σw² (w the replicas' shares of
// the arm's requests). n < 2 when fewer than two replicas served, or
// fewer than two batches had every replica serving.
func shareSpread(reps []ReplicaCounts, batches int) (n int, s2, sumW2 float64, ok bool) {
	if len(reps) == 0 {
		return 0, 0, 0, true
	}
	nb := len(reps[0].Offered)
	rowOff, ok := replicaTotals(reps)
	if !ok {
		return 0, 0, 0, false
	}
	var live []int
	var total float64
	for r := range reps {
		if rowOff[r] > 0 {
			live = append(live, r)
			total += rowOff[r]
		}
	}
	for _, r := range live {
		w := rowOff[r] / total
		sumW2 += w * w
	}
	q := min(batches, nb/4)
	k := len(live)
	if k < 2 || q < 2 {
		return min(k, 1), 0, sumW2, true
	}
	// relative shares per batch in which every replica served
	var rel [][]float64
	for g := range q {
		row := make([]float64, k)
		var sum float64
		full := true
		for i, r := range live {
			for t := g * nb / q; t < (g+1)*nb/q; t++ {
				row[i] += reps[r].Offered[t]
			}
			full = full && row[i] > 0
			sum += row[i]
		}
		if !full {
			continue
		}
		for i := range row {
			row[i] *= float64(k) / sum
		}
		rel = append(rel, row)
	}
	G := len(rel)
	if G < 2 {
		return 1, 0, sumW2, true
	}
	mean := make([]float64, k)
	for _, row := range rel {
		for i, v := range row {
			mean[i] += v / float64(G)
		}
	}
	var grand, between, noise float64
	for _, m := range mean {
		grand += m / float64(k)
	}
	for i, m := range mean {
		between += sq(m-grand) / float64(k-1)
		var v float64
		for _, row := range rel {
			v += sq(row[i]-m) / float64(G-1)
		}
		noise += v / float64(G) / float64(k)
	}
	return k, between - noise, sumW2, true
}

// loadSlope returns one arm's weighted sums for the slope of its slices'
// attainment y on x, the log of their offered requests averaged over
// LoadSmoothing slices: Σw(x−x̄)(y−ȳ) and Σw(x−x̄)², w the slice's
// offered requests, slices without requests skipped.
func loadSlope(reps []ReplicaCounts) (sxy, sxx float64) {
	if len(reps) == 0 {
		return 0, 0
	}
	nb := len(reps[0].Offered)
	off, good := make([]float64, nb), make([]float64, nb)
	for _, x := range reps {
		for t := range nb {
			off[t] += x.Offered[t]
			good[t] += x.Good[t]
		}
	}
	ys := make([]float64, nb)
	for t := range nb {
		if off[t] > 0 {
			ys[t] = good[t] / off[t]
		}
	}
	return slopeOnLoad(off, ys, off)
}

// slopeOnLoad returns the weighted regression sums (Σw(x−x̄)(y−ȳ),
// Σw(x−x̄)²) of y on x, the log of the arm's load off averaged over the
// LoadSmoothing slices around each (fewer at the edges), over the slices
// with w > 0, means weighted by w.
func slopeOnLoad(off, y, w []float64) (sxy, sxx float64) {
	nb := len(off)
	h := LoadSmoothing / 2
	xs, ys, ws := make([]float64, 0, nb), make([]float64, 0, nb), make([]float64, 0, nb)
	for t := range nb {
		if !(w[t] > 0) || !(off[t] > 0) {
			continue
		}
		var s float64
		var m int
		for u := max(0, t-h); u <= min(nb-1, t+h); u++ {
			s += off[u]
			m++
		}
		xs = append(xs, math.Log(s/float64(m)))
		ys = append(ys, y[t])
		ws = append(ws, w[t])
	}
	var sw, mx, my float64
	for i := range xs {
		sw += ws[i]
		mx += ws[i] * xs[i]
		my += ws[i] * ys[i]
	}
	if !(sw > 0) {
		return 0, 0
	}
	mx, my = mx/sw, my/sw
	for i := range xs {
		sxy += ws[i] * (xs[i] - mx) * (ys[i] - my)
		sxx += ws[i] * sq(xs[i]-mx)
	}
	return sxy, sxx
}
