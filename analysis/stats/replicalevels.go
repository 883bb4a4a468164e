package stats

import "math"

// ReplicaLevels is one replica's typical latency per bucket of its arm's
// grid: Level the log of a typical value (the median TTFT or TPOT of the
// bucket's requests, log seconds; NaN where it has none) and Count the
// requests behind it (≥ 0, the weight of the bucket in its batch and of
// the replica in its arm). Level and Count have the arm's bucket count.
type ReplicaLevels struct {
	Level, Count []float64
}

// LevelSpread is the part of a latency quantile's log ratio variance that
// comes from replicas of their own speeds: a replica a few percent slower
// all run scales its latencies, the arm's quantile moves by its share of
// that in every batch alike, and an interval from batches in time does not
// see it.
type LevelSpread struct {
	// Tau2 is the between-replica variance of the log latency level (log
	// units², ≥ 0), pooled over both arms' replicas.
	Tau2 float64
	// Var is the variance it adds to the log ratio of the arms'
	// quantiles: Tau2·(Σw_b² + Σw_c²), w a replica's share of its arm's
	// Count.
	Var float64
	// DF is the degrees of freedom of Tau2: Σ over the arms with two or
	// more replicas in two or more batches of (those replicas − 1).
	DF float64
	// Replicas counts each arm's replicas in the estimate (baseline,
	// canary).
	Replicas [2]int
}

// BetweenReplicaLevels estimates the between-replica variance of the log
// latency level from both arms' replicas (b the baseline's, c the
// canary's), batches the contiguous batches of each arm's grid
// (min(batches, buckets/4)). Within an arm, y_rg is replica r's
// Count-weighted mean Level over batch g; M_g the plain mean of y_rg over
// the replicas present in g, so D_rg = y_rg − M_g removes what the arm's
// replicas share in time (the traffic wave, the arm's own slowdowns and
// the change itself). It is a two-way analysis of variance with replicas
// as a random effect: with S_r the mean of D_rg over r's G_r batches,
//
//	MSE = Σ_r Σ_g (D_rg − S_r)² / ((R−1)/R · Σ_r (G_r − 1))
//	τ²_arm·(R−1) = Σ_r (S_r − S̄)² − (R−1)·MSE·mean_r(1/G_r),
//
// R the replicas present in two or more batches, and both arms' sums
// pooled over Σ(R − 1) degrees of freedom (floored at 0). It assumes a
// replica's speed scales its quantiles as it scales its typical value;
// a replica whose tail alone is heavier is not seen. ok is false when no
// arm has two such replicas, or when the levels are mismatched or not
// finite where counted.
func BetweenReplicaLevels(b, c []ReplicaLevels, batches int) (LevelSpread, bool) {
	return betweenLevels(b, c, batches, 2)
}

// BetweenReplicaLevelsOfBaseline is BetweenReplicaLevels with Tau2 and DF
// from the baseline's replicas alone (Var still counts both arms'
// shares): a canary replica slower than the baseline's is then judged
// as the canary's, not taken for the spread replicas have by chance.
func BetweenReplicaLevelsOfBaseline(b, c []ReplicaLevels, batches int) (LevelSpread, bool) {
	return betweenLevels(b, c, batches, 1)
}

// betweenLevels pools the first `from` arms' moment terms (1: the
// baseline's, 2: both).
func betweenLevels(b, c []ReplicaLevels, batches, from int) (LevelSpread, bool) {
	var out LevelSpread
	var num, den float64
	var shares [2]float64
	for ai, reps := range [2][]ReplicaLevels{b, c} {
		n, t, sw, ok := levelTerms(reps, batches)
		if !ok {
			return LevelSpread{}, false
		}
		out.Replicas[ai], shares[ai] = n, sw
		if n >= 2 && ai < from {
			num, den = num+t.num, den+t.den
		}
	}
	if !(den > 0) {
		return LevelSpread{}, false
	}
	out.Tau2 = max(0, num/den)
	out.DF = den
	out.Var = out.Tau2 * (shares[0] + shares[1])
	return out, true
}

// levelTerms returns one arm's replicas in the estimate (present in two
// or more batches), its moment terms (Σ(S_r − S̄)² − (R−1)·MSE·mean 1/G_r
// and R − 1) and Σw_r² over every replica with a count; ok is false for
// malformed levels.
func levelTerms(reps []ReplicaLevels, batches int) (n int, t replicaTerms, sumW2 float64, ok bool) {
	if len(reps) == 0 {
		return 0, t, 0, true
	}
	nb := len(reps[0].Level)
	rowN, ok := levelTotals(reps)
	if !ok {
		return 0, t, 0, false
	}
	var total float64
	for _, w := range rowN {
		total += w
	}
	if !(total > 0) {
		return 0, t, 0, true
	}
	for _, w := range rowN {
		sumW2 += (w / total) * (w / total)
	}
	q := min(batches, nb/4)
	if q < 2 {
		return 0, t, sumW2, true
	}
	// y[r][g], NaN where replica r has no level in batch g
	y := make([][]float64, len(reps))
	var kept []int
	for r, x := range reps {
		y[r] = make([]float64, q)
		present := 0
		for g := range q {
			var s, w float64
			for k := g * nb / q; k < (g+1)*nb/q; k++ {
				if c := x.Count[k]; c > 0 && !math.IsNaN(x.Level[k]) {
					s += c * x.Level[k]
					w += c
				}
			}
			y[r][g] = math.NaN()
			if w > 0 {
				y[r][g] = s / w
				present++
			}
		}
		if present >= 2 {
			kept = append(kept, r)
		}
	}
	R := len(kept)
	if R < 2 {
		return R, t, sumW2, true
	}
	// D_rg = y_rg − M_g over the kept replicas present in g
	d := make([][]float64, R)
	for i := range d {
		d[i] = make([]float64, q)
	}
	for g := range q {
		var m float64
		var k int
		for _, r := range kept {
			if !math.IsNaN(y[r][g]) {
				m += y[r][g]
				k++
			}
		}
		for i, r := range kept {
			d[i][g] = math.NaN()
			if k > 0 && !math.IsNaN(y[r][g]) {
				d[i][g] = y[r][g] - m/float64(k)
			}
		}
	}
	S := make([]float64, R)
	var sse, dfe, invG, sBar float64
	for i := range d {
		var s float64
		var gr int
		for _, v := range d[i] {
			if !math.IsNaN(v) {
				s += v
				gr++
			}
		}
		S[i] = s / float64(gr)
		for _, v := range d[i] {
			if !math.IsNaN(v) {
				sse += sq(v - S[i])
			}
		}
		dfe += float64(gr - 1)
		invG += 1 / float64(gr)
		sBar += S[i]
	}
	sBar /= float64(R)
	dfe *= float64(R-1) / float64(R)
	var between float64
	for _, s := range S {
		between += sq(s - sBar)
	}
	var mse float64
	if dfe > 0 {
		mse = sse / dfe
	}
	t.num = between - float64(R-1)*mse*invG/float64(R)
	t.den = float64(R - 1)
	return R, t, sumW2, true
}

// levelTotals checks one arm's levels (every series as long as the first
// replica's Level, counts finite and ≥ 0, a counted level finite or NaN)
// and returns each replica's count behind a level; ok is false for levels
// that fail the check.
func levelTotals(reps []ReplicaLevels) (rowN []float64, ok bool) {
	if len(reps) == 0 {
		return nil, true
	}
	nb := len(reps[0].Level)
	rowN = make([]float64, len(reps))
	for r, x := range reps {
		if len(x.Level) != nb || len(x.Count) != nb {
			return nil, false
		}
		for k, w := range x.Count {
			if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
				return nil, false
			}
			if w > 0 && !math.IsNaN(x.Level[k]) {
				if math.IsInf(x.Level[k], 0) {
					return nil, false
				}
				rowN[r] += w
			}
		}
	}
	return rowN, true
}

// LevelCapacityOfBaseline is the capacity part of a latency level's
// between-arm variance under a router that weighs replicas by speed (see
// ReplicaCapacity): Speed2 and DF from the spread of the baseline's
// replicas' shares of its Count (as CapacityOfBaseline), Slope the rise
// of the arm's log level per unit of log load (its Count-weighted mean
// Level per bucket on the log of its Count averaged over LoadSmoothing
// buckets, within each arm, weighted by the Count behind each level; a
// fall is used squared as well), Var = Slope²·Speed2·(Σw_b² + Σw_c²). ok
// is false when the baseline has fewer than two replicas with counts, the
// load never varies, or the levels are malformed.
func LevelCapacityOfBaseline(b, c []ReplicaLevels, batches int) (ReplicaCapacity, bool) {
	levels := [2][]ReplicaLevels{b, c}
	var arms [2][]ReplicaCounts
	for ai, reps := range levels {
		if _, ok := levelTotals(reps); !ok {
			return ReplicaCapacity{}, false
		}
		arms[ai] = make([]ReplicaCounts, len(reps))
		for r, x := range reps {
			arms[ai][r] = ReplicaCounts{Offered: x.Count, Good: make([]float64, len(x.Count))}
		}
	}
	return capacityWith(arms, batches, 1, 1, func(ai int) (xy, xx float64) { return levelLoadSlope(levels[ai]) })
}

// levelLoadSlope returns one arm's weighted sums for the slope of its
// Count-weighted mean Level per bucket on the log of its Count averaged
// over LoadSmoothing buckets (slopeOnLoad), weighted by the Count behind
// each bucket's levels.
func levelLoadSlope(reps []ReplicaLevels) (sxy, sxx float64) {
	if len(reps) == 0 {
		return 0, 0
	}
	nb := len(reps[0].Count)
	load, y, w := make([]float64, nb), make([]float64, nb), make([]float64, nb)
	for _, x := range reps {
		for t := range nb {
			load[t] += x.Count[t]
			if x.Count[t] > 0 && !math.IsNaN(x.Level[t]) {
				y[t] += x.Count[t] * x.Level[t]
				w[t] += x.Count[t]
			}
		}
	}
	for t := range nb {
		if w[t] > 0 {
			y[t] /= w[t]
		}
	}
	return slopeOnLoad(load, y, w)
}
