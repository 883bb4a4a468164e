package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// aaScenario generates one arm of an unchanged (A/A) canary: b consecutive
// 10 s buckets whose SLO attainment follows an AR(1) with coefficient phi
// around p0 (marginal standard deviation sd), e.g. load waves that slow every
// request in a bucket, with Poisson(lambda) requests per bucket and
// Binomial(requests, attainment) good requests.
type aaScenario struct {
	buckets        int
	phi, sd, p0    float64
	requestsPerBkt float64
}

func (s aaScenario) arm(rng *rand.Rand) Ratio {
	r := Ratio{Num: make([]float64, s.buckets), Den: make([]float64, s.buckets)}
	a := rng.NormFloat64() // stationary start
	for t := range s.buckets {
		if t > 0 {
			a = s.phi*a + math.Sqrt(1-s.phi*s.phi)*rng.NormFloat64()
		}
		p := math.Min(1, math.Max(0, s.p0+s.sd*a))
		n := distuv.Poisson{Lambda: s.requestsPerBkt, Src: rng}.Rand()
		var k float64
		if n > 0 {
			k = distuv.Binomial{N: n, P: p, Src: rng}.Rand()
		}
		r.Num[t], r.Den[t] = k, n
	}
	return r
}

// TestCalibrationAttainmentAA is the false-fail rate of the attainment
// non-inferiority gate (margin 0, one-sided α = 0.05 from the 90% interval) on
// simulated A/A runs with AR(1) φ = 0.8 between 10 s buckets: the default
// method must stay within α plus two Monte Carlo standard errors, while the
// per-request binomial variance (what an iid per-request bootstrap estimates)
// and bucket-level iid variance must both inflate it well beyond, so a
// regression to either would be caught.
func TestCalibrationAttainmentAA(t *testing.T) {
	const (
		alpha = 0.05
		reps  = 600
	)
	sc := aaScenario{buckets: 360, phi: 0.8, sd: 0.02, p0: 0.95, requestsPerBkt: 50}
	rng := rand.New(rand.NewPCG(20261129, 1))
	var robust, proportions, binomial, bucketIID int
	for range reps {
		x, y := sc.arm(rng), sc.arm(rng) // canary, baseline
		// harm of attainment = baseline − canary
		harmOf := func(ci Interval) Interval { return Interval{-ci.Hi, -ci.Lo} }
		if NonInferiority(harmOf(DiffOfRatios(x, y, 1-2*alpha).CI), 0) == Fail {
			robust++
		}
		if NonInferiority(harmOf(DiffOfProportions(x, y, 1-2*alpha).CI), 0) == Fail {
			proportions++
		}
		if NonInferiority(harmOf(diffOfRatios(x, y, 1-2*alpha, sc.buckets).CI), 0) == Fail {
			bucketIID++
		}
		kx, nx := sum(x.Num), sum(x.Den)
		ky, ny := sum(y.Num), sum(y.Den)
		if NonInferiority(harmOf(NewcombeDiff(kx, nx, ky, ny, 1-2*alpha)), 0) == Fail {
			binomial++
		}
	}
	mcse := math.Sqrt(alpha * (1 - alpha) / reps)
	bound := alpha + 2*mcse
	rate := func(n int) float64 { return float64(n) / reps }
	t.Logf("A/A false-fail rate over %d runs (bound %.4f): DiffOfRatios %.4f, DiffOfProportions %.4f, bucket-iid delta %.4f, per-request binomial %.4f",
		reps, bound, rate(robust), rate(proportions), rate(bucketIID), rate(binomial))
	for name, n := range map[string]int{"DiffOfRatios": robust, "DiffOfProportions": proportions} {
		if rate(n) > bound {
			t.Errorf("%s fails %.4f of A/A runs, above α + 2·MCSE = %.4f", name, rate(n), bound)
		}
	}
	for name, n := range map[string]int{"per-request binomial": binomial, "bucket-iid": bucketIID} {
		if rate(n) < 2*alpha {
			t.Errorf("%s variance fails only %.4f of A/A runs; the scenario no longer shows the inflation (want ≥ %.2f)", name, rate(n), 2*alpha)
		}
	}
}

// TestCalibrationQuantileAA checks the p95 latency gate (log ratio, margin 0,
// 90% block-bootstrap interval) on A/A runs of 360 buckets whose latency level
// follows an AR(1) φ = 0.8 with a strong load signal. This is the hardest case
// for the block bootstrap: longer simulations put its false-fail rate at about
// 6–8% at nominal 5% (blocks of b/6 buckets still miss some of the
// correlation), so the bound here is 2α; resampling buckets as independent
// (block length 1) fails about 23% of the time and must stay far above it.
func TestCalibrationQuantileAA(t *testing.T) {
	reps, B := 300, 400
	if testing.Short() {
		reps = 100
	}
	const alpha = 0.05
	rng := rand.New(rand.NewPCG(7, 2026))
	arm := func() [][]float64 {
		out := make([][]float64, 360)
		a := rng.NormFloat64()
		for t := range out {
			if t > 0 {
				a = 0.8*a + 0.6*rng.NormFloat64()
			}
			n := int(distuv.Poisson{Lambda: 40, Src: rng}.Rand())
			for range n {
				out[t] = append(out[t], math.Exp(-1+0.2*a+0.5*rng.NormFloat64()))
			}
		}
		return out
	}
	var blocked, iid int
	for r := range reps {
		x, y := arm(), arm()
		if NonInferiority(QuantileLogRatio(x, y, 0.95, 1-2*alpha, B, uint64(r)).CI, 0) == Fail {
			blocked++
		}
		px, _ := newPooled(x)
		py, _ := newPooled(y)
		wx, wy := make([]int64, len(x)), make([]int64, len(y))
		reps := BlockBootstrap([]int{len(x), len(y)}, []int{1, 1}, B, uint64(r), func(idx [][]int) float64 {
			return math.Log(px.quantile(0.95, drawCounts(wx, idx[0])) / py.quantile(0.95, drawCounts(wy, idx[1])))
		})
		if NonInferiority(PercentileInterval(reps, 1-2*alpha), 0) == Fail {
			iid++
		}
	}
	rb, ri := float64(blocked)/float64(reps), float64(iid)/float64(reps)
	t.Logf("p95 A/A false-fail rate over %d runs: block bootstrap %.4f, bucket-iid bootstrap %.4f", reps, rb, ri)
	if rb > 2*alpha {
		t.Errorf("block bootstrap fails %.4f of A/A runs, want ≤ %.2f", rb, 2*alpha)
	}
	if ri < 2*alpha {
		t.Errorf("bucket-iid bootstrap fails only %.4f of A/A runs; the scenario no longer shows the inflation", ri)
	}
}

// TestPowerAttainment: the calibrated gate must still catch a real 2 pp drop
// in attainment on the same autocorrelated hour of data (standard error of
// the difference ≈ 0.5 pp there; a 1 pp drop is caught about 2 times in 3).
func TestPowerAttainment(t *testing.T) {
	const reps = 200
	base := aaScenario{buckets: 360, phi: 0.8, sd: 0.02, p0: 0.95, requestsPerBkt: 50}
	worse := base
	worse.p0 = 0.93
	rng := rand.New(rand.NewPCG(99, 1))
	fails := 0
	for range reps {
		x, y := worse.arm(rng), base.arm(rng)
		d := DiffOfRatios(x, y, 0.9)
		if Guardrail(Interval{-d.CI.Hi, -d.CI.Lo}, 0.005) == Fail {
			fails++
		}
	}
	rate := float64(fails) / reps
	t.Logf("2 pp drop: guardrail fails %.2f of %d runs", rate, reps)
	if rate < 0.8 {
		t.Errorf("2 pp attainment drop caught in %.2f of runs, want ≥ 0.8", rate)
	}
}

// TestDeltaMatchesBootstrapOnIndependentBuckets cross-checks the two engines:
// with independent buckets, the delta-method standard error of a difference
// of ratios (buckets as units) and the standard deviation of 2000 bucket
// bootstrap replicates (block length 1) must agree within a few percent
// (statistics.md §3.5 reports 0.00814 vs 0.00809).
func TestDeltaMatchesBootstrapOnIndependentBuckets(t *testing.T) {
	sc := aaScenario{buckets: 200, phi: 0, sd: 0.03, p0: 0.9, requestsPerBkt: 30}
	rng := rand.New(rand.NewPCG(3, 3))
	x, y := sc.arm(rng), sc.arm(rng)
	_, vx, _, _ := ratioVar(x, sc.buckets)
	_, vy, _, _ := ratioVar(y, sc.buckets)
	delta := math.Sqrt(vx + vy)
	ratio := func(r Ratio, idx []int) float64 {
		var n, d float64
		for _, i := range idx {
			n += r.Num[i]
			d += r.Den[i]
		}
		return n / d
	}
	reps := BlockBootstrap([]int{sc.buckets, sc.buckets}, []int{1, 1}, 2000, 17, func(idx [][]int) float64 {
		return ratio(x, idx[0]) - ratio(y, idx[1])
	})
	boot := SDFinite(reps)
	if math.Abs(boot/delta-1) > 0.06 {
		t.Errorf("delta SE %.5f vs bootstrap SE %.5f differ by more than 6%%", delta, boot)
	}
	t.Logf("delta SE %.5f, bootstrap SE %.5f", delta, boot)
}
