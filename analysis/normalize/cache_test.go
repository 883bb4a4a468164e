package normalize

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestCacheBand(t *testing.T) {
	for _, c := range []struct {
		cached, prompt int64
		want           string
	}{
		{0, 100, CacheNone},
		{1, 100, CachePartial},
		{49, 100, CachePartial},
		{50, 100, CacheMostly},
		{100, 100, CacheMostly},
		{150, 100, CacheMostly},
		{-1, 100, CacheUnknown},
		{10, 0, CacheUnknown},
		{0, -1, CacheUnknown},
	} {
		if got := CacheBand(c.cached, c.prompt); got != c.want {
			t.Errorf("CacheBand(%d, %d) = %q, want %q", c.cached, c.prompt, got, c.want)
		}
	}
}

// cacheArm generates per-bucket hit rates (AR(1) around mean h) and TTFT
// medians that fall with the hit rate: ttft = 0.4 − 0.3·hit + noise + shift.
func cacheArm(rng *rand.Rand, b int, h, shift float64) Covariate {
	c := Covariate{Outcome: make([]float64, b), Covariate: make([]float64, b)}
	a := rng.NormFloat64()
	for t := range b {
		if t > 0 {
			a = 0.5*a + math.Sqrt(0.75)*rng.NormFloat64()
		}
		hit := math.Min(1, math.Max(0, h+0.1*a))
		c.Covariate[t] = hit
		c.Outcome[t] = 0.4 - 0.3*hit + 0.01*rng.NormFloat64() + shift
	}
	return c
}

// TestCUPEDVarianceReduction: with an exogenous hit rate (same
// distribution in both arms), CUPED keeps the estimate centred on the true
// effect and shrinks its interval.
func TestCUPEDVarianceReduction(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	x, y := cacheArm(rng, 120, 0.4, 0.01), cacheArm(rng, 120, 0.4, 0)
	res, err := CUPED(x, y, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("θ %.4f ρ %.3f; unadjusted %+.4f ± %.4f; adjusted %+.4f ± %.4f; variance reduction %.3f",
		res.Theta, res.Correlation, res.Unadjusted.Point, res.Unadjusted.SE, res.Adjusted.Point, res.Adjusted.SE, res.VarianceReduction)
	if math.Abs(res.Theta+0.3) > 0.03 {
		t.Errorf("θ = %.4f, want ≈ −0.3", res.Theta)
	}
	if !(res.VarianceReduction > 0.8) {
		t.Errorf("variance reduction %.3f, want > 0.8 (ρ = %.3f)", res.VarianceReduction, res.Correlation)
	}
	if !(res.Adjusted.CI.Lo < 0.01 && res.Adjusted.CI.Hi > 0.01) || !(res.Adjusted.CI.Lo > 0) {
		t.Errorf("adjusted interval [%.4f, %.4f] should cover the true +0.01 and exclude 0", res.Adjusted.CI.Lo, res.Adjusted.CI.Hi)
	}
	if res.Canary.Buckets != 120 || math.Abs(res.Canary.AdjustedMean-res.Baseline.AdjustedMean-res.Adjusted.Point) > 1e-12 {
		t.Errorf("arms %+v %+v vs %+v", res.Canary, res.Baseline, res.Adjusted)
	}
}

// TestCUPEDMediator documents the caveat: when the change itself lowers the
// hit rate (a new KV eviction policy) and that slows TTFT, the adjusted
// difference explains the slowdown away while the unadjusted one — the
// total effect to gate on — shows it.
func TestCUPEDMediator(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	x, y := cacheArm(rng, 120, 0.2, 0), cacheArm(rng, 120, 0.5, 0) // canary caches less
	res, err := CUPED(x, y, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unadjusted %+.4f [%+.4f, %+.4f]; adjusted %+.4f [%+.4f, %+.4f]",
		res.Unadjusted.Point, res.Unadjusted.CI.Lo, res.Unadjusted.CI.Hi, res.Adjusted.Point, res.Adjusted.CI.Lo, res.Adjusted.CI.Hi)
	if !(res.Unadjusted.CI.Lo > 0.05) {
		t.Errorf("unadjusted TTFT difference %+.4f should show the ≈ +0.09 s slowdown", res.Unadjusted.Point)
	}
	if !(res.Adjusted.CI.Lo < 0 && res.Adjusted.CI.Hi > 0) {
		t.Errorf("adjusted interval [%.4f, %.4f] should (wrongly) cover 0: that is the mediator caveat", res.Adjusted.CI.Lo, res.Adjusted.CI.Hi)
	}
}

func TestCUPEDErrors(t *testing.T) {
	good := Covariate{Outcome: []float64{1, 2, 3}, Covariate: []float64{1, 2, 4}}
	for _, c := range []struct {
		name string
		x, y Covariate
		want string
	}{
		{"lengths", Covariate{Outcome: []float64{1}, Covariate: []float64{1, 2}}, good, "canary has 1 outcomes but 2 covariate"},
		{"too few", good, Covariate{Outcome: []float64{1, math.NaN()}, Covariate: []float64{1, 2}}, "baseline has 1 buckets"},
		{"constant covariate", Covariate{Outcome: []float64{1, 2}, Covariate: []float64{3, 3}}, Covariate{Outcome: []float64{1, 5}, Covariate: []float64{1, 1}}, "does not vary"},
	} {
		if _, err := CUPED(c.x, c.y, 0.9); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
}

func TestAutoCache(t *testing.T) {
	for _, c := range []struct {
		name         string
		canary, base map[string]float64
		cov          [2]int
		mode, reason string
	}{
		{"no cache data", map[string]float64{CacheUnknown: 500}, map[string]float64{CacheUnknown: 400}, [2]int{0, 0}, CacheModeNone, "neither arm reports"},
		{"bands populated", map[string]float64{CacheNone: 300, CachePartial: 40, CacheMostly: 200}, map[string]float64{CacheNone: 280, CachePartial: 35, CacheMostly: 210}, [2]int{60, 60},
			CacheModeStratify, "every band has ≥ 30 requests in both arms"},
		{"thin band, enough buckets", map[string]float64{CacheNone: 300, CacheMostly: 5}, map[string]float64{CacheNone: 280, CacheMostly: 210}, [2]int{60, 60},
			CacheModeAdjust, `band(s) "cache >=50%" have fewer than 30`},
		{"thin band, few buckets", map[string]float64{CacheNone: 300, CacheMostly: 5}, map[string]float64{CacheNone: 280, CacheMostly: 210}, [2]int{60, 7},
			CacheModeNone, "only 60 (canary) and 7 (baseline) buckets"},
		{"unknown band counts as a band", map[string]float64{CacheNone: 300, CacheUnknown: 3}, map[string]float64{CacheNone: 280}, [2]int{60, 60},
			CacheModeAdjust, `"cache unknown"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := AutoCache(c.canary, c.base, c.cov)
			if got.Mode != c.mode || !strings.Contains(got.Reason, c.reason) {
				t.Errorf("got %q: %q; want %q containing %q", got.Mode, got.Reason, c.mode, c.reason)
			}
			if (got.Mode != CacheModeNone) != (got.Caveat == MediatorCaveat) {
				t.Errorf("caveat %q with mode %q", got.Caveat, got.Mode)
			}
		})
	}
}

// sharedWaveArms are two arms on one grid of b buckets whose attainment
// rides a traffic wave both share (AR(1), φ 0.9, 3 pp) and a persistent
// slowdown each has on its own (AR(1), φ 0.8, 0.5 pp), falling with a
// hit rate each draws on its own; the canary is shift better.
func sharedWaveArms(rng *rand.Rand, b int, shift float64) (x, y Covariate) {
	x = Covariate{Outcome: make([]float64, b), Covariate: make([]float64, b)}
	y = Covariate{Outcome: make([]float64, b), Covariate: make([]float64, b)}
	var wave, sx, sy, hx, hy float64
	for t := range b {
		wave = 0.9*wave + math.Sqrt(1-0.81)*0.03*rng.NormFloat64()
		sx = 0.8*sx + 0.6*0.005*rng.NormFloat64()
		sy = 0.8*sy + 0.6*0.005*rng.NormFloat64()
		hx = 0.5*hx + math.Sqrt(0.75)*0.1*rng.NormFloat64()
		hy = 0.5*hy + math.Sqrt(0.75)*0.1*rng.NormFloat64()
		x.Covariate[t], y.Covariate[t] = 0.4+hx, 0.4+hy
		x.Outcome[t] = 0.9 + wave + sx + 0.05*hx + 0.003*rng.NormFloat64() + shift
		y.Outcome[t] = 0.9 + wave + sy + 0.05*hy + 0.003*rng.NormFloat64()
	}
	return x, y
}

// TestPairedCUPED: on arms that share a traffic wave, the paired
// adjustment has CUPED's point estimate and θ, covers the true difference
// at its nominal level (its batch variance reads the per-bucket
// differences, where the wave cancels) and is far narrower than CUPED
// on each arm's own buckets, which counts the wave in both arms; a
// bucket one arm lacks leaves both paired; the arms need one grid.
func TestPairedCUPED(t *testing.T) {
	const reps, conf = 400, 0.9
	covered, narrower := 0, 0
	for i := range reps {
		rng := rand.New(rand.NewPCG(uint64(i), 21))
		x, y := sharedWaveArms(rng, 180, 0.01)
		if i%2 == 0 {
			x.Outcome[7], y.Covariate[100] = math.NaN(), math.NaN()
		}
		p, err := PairedCUPED(x, y, conf)
		if err != nil {
			t.Fatal(err)
		}
		u, err := CUPED(x, y, conf)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.Theta-u.Theta) > 1e-12 || (i%2 == 1 && math.Abs(p.Adjusted.Point-u.Adjusted.Point) > 1e-12) {
			t.Fatalf("replicate %d: paired θ %v point %v, unpaired θ %v point %v", i, p.Theta, p.Adjusted.Point, u.Theta, u.Adjusted.Point)
		}
		if p.Adjusted.CI.Lo <= 0.01 && 0.01 <= p.Adjusted.CI.Hi {
			covered++
		}
		if 3*(p.Adjusted.CI.Hi-p.Adjusted.CI.Lo) < u.Adjusted.CI.Hi-u.Adjusted.CI.Lo {
			narrower++
		}
		if i == 0 && !strings.HasPrefix(p.Adjusted.Method, "cuped-paired") {
			t.Errorf("method %q", p.Adjusted.Method)
		}
	}
	cov := float64(covered) / reps
	se := math.Sqrt(conf * (1 - conf) / reps)
	t.Logf("paired CUPED covers +0.01 in %d of %d (%.1f%% ± %.1f%%); a third as wide or less than unpaired in %d", covered, reps, 100*cov, 100*se, narrower)
	if cov < conf-3*se {
		t.Errorf("coverage %.3f below nominal %.2f by more than 3 Monte Carlo SE (%.3f)", cov, conf, se)
	}
	if narrower < reps*9/10 {
		t.Errorf("the paired interval was a third as wide as the unpaired one in %d of %d replicates", narrower, reps)
	}
	if _, err := PairedCUPED(Covariate{Outcome: []float64{1, 2}, Covariate: []float64{1, 2}}, Covariate{Outcome: []float64{1}, Covariate: []float64{1}}, conf); err == nil || !strings.Contains(err.Error(), "one grid") {
		t.Errorf("unequal grids: %v", err)
	}
}
