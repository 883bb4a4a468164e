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
	var out ReplicaSpread
	var num, den, df float64
	var shares [2]float64
	for ai, reps := range [2][]ReplicaCounts{b, c} {
		n, terms, sw, ok := replicaResiduals(reps, batches)
		if !ok || n == 0 {
			return ReplicaSpread{}, false
		}
		out.Replicas[ai], shares[ai] = n, sw
		if n >= 2 {
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
	var off, good float64
	rowOff := make([]float64, len(reps))
	for r, x := range reps {
		if len(x.Offered) != nb || len(x.Good) != nb {
			return 0, terms, 0, false
		}
		for t := range nb {
			o, g := x.Offered[t], x.Good[t]
			if math.IsNaN(o) || math.IsInf(o, 0) || math.IsNaN(g) || math.IsInf(g, 0) || o < 0 || g < 0 || g > o {
				return 0, terms, 0, false
			}
			rowOff[r] += o
		}
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
