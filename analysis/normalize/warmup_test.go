package normalize

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// ar1 returns b buckets of a stationary AR(1) series with coefficient phi,
// marginal standard deviation sd, around level mu (seconds): per-bucket
// medians of TTFT whose noise persists across buckets (load waves).
func ar1(rng *rand.Rand, b int, phi, mu, sd float64) []float64 {
	out := make([]float64, b)
	a := rng.NormFloat64()
	for t := range b {
		if t > 0 {
			a = phi*a + math.Sqrt(1-phi*phi)*rng.NormFloat64()
		}
		out[t] = mu + sd*a
	}
	return out
}

// coldStart is 20 minutes of 10 s buckets (120) of TTFT medians around
// 0.3 s (AR(1) φ = 0.5, sd 10%), slowed by factor slow in the first 18
// buckets (3 minutes), then identical to a warm arm.
func coldStart(rng *rand.Rand, slow float64) []float64 {
	s := ar1(rng, 120, 0.5, 0.3, 0.03)
	for i := range 18 {
		s[i] *= slow
	}
	return s
}

// TestWarmupColdStart: a canary slow for its first 3 minutes of 20 gets its
// warm-up cut within one batch (5 buckets) of the truth (18 buckets), and
// the baseline beside it is not cut.
func TestWarmupColdStart(t *testing.T) {
	const truth = 18
	rng := rand.New(rand.NewPCG(4, 1))
	canary := Warmup(coldStart(rng, 2), WarmupOptions{})
	baseline := Warmup(ar1(rng, 120, 0.5, 0.3, 0.03), WarmupOptions{})
	t.Logf("canary: %s", canary.Reason)
	t.Logf("baseline: %s", baseline.Reason)
	if !canary.Confirmed || canary.Cut < truth-DefaultBatch || canary.Cut > truth+DefaultBatch {
		t.Errorf("canary cut %d buckets (confirmed %v), want %d ± %d", canary.Cut, canary.Confirmed, truth, DefaultBatch)
	}
	if !(canary.MeanBefore > 1.5*canary.MeanAfter) || math.Abs(canary.MeanAfter-0.3) > 0.02 {
		t.Errorf("means before/after %.4g/%.4g, want ≈0.6 and ≈0.3", canary.MeanBefore, canary.MeanAfter)
	}
	if canary.Drift {
		t.Errorf("drift reported after the cut: %s", canary.Reason)
	}
	for _, want := range []string{"cut the first 20 buckets", "MSER-5", "CUSUM", "before"} {
		if !strings.Contains(canary.Reason, want) {
			t.Errorf("reason %q lacks %q", canary.Reason, want)
		}
	}
	if baseline.Cut != 0 || baseline.Confirmed {
		t.Errorf("baseline cut %d: %s", baseline.Cut, baseline.Reason)
	}

	// over many seeds, and for a milder 1.5× slowdown
	for _, slow := range []float64{2, 1.5} {
		const reps = 300
		hit := 0
		for range reps {
			w := Warmup(coldStart(rng, slow), WarmupOptions{})
			if w.Cut >= truth-DefaultBatch && w.Cut <= truth+DefaultBatch {
				hit++
			}
		}
		rate := float64(hit) / reps
		t.Logf("slowdown %.1f×: cut within ±1 batch of the truth in %.3f of %d runs", slow, rate, reps)
		if min := map[float64]float64{2: 0.95, 1.5: 0.80}[slow]; rate < min {
			t.Errorf("slowdown %.1f×: cut within ±1 batch in %.3f of runs, want ≥ %.2f", slow, rate, min)
		}
	}
}

// TestWarmupAAFalseCut: stationary series are cut in at most 5% of runs
// (α + 2 MCSE for the AR(1) φ = 0.5 case the rule is declared for; the
// other rows show where it holds).
func TestWarmupAAFalseCut(t *testing.T) {
	for _, c := range []struct {
		phi     float64
		buckets int
		reps    int
		max     float64
	}{
		{0.5, 120, 1000, 0.05},
		{0.5, 360, 300, 0.05},
		{0, 120, 300, 0.05},
		{0.8, 360, 300, 0.05},
	} {
		rng := rand.New(rand.NewPCG(7, uint64(c.buckets)))
		cut := 0
		for range c.reps {
			if w := Warmup(ar1(rng, c.buckets, c.phi, 0.3, 0.03), WarmupOptions{}); w.Cut > 0 {
				cut++
			}
		}
		rate := float64(cut) / float64(c.reps)
		t.Logf("AR(1) φ=%.1f, %d buckets: false cut rate %.4f over %d runs", c.phi, c.buckets, rate, c.reps)
		if rate > c.max {
			t.Errorf("AR(1) φ=%.1f, %d buckets: false cut rate %.4f > %.2f", c.phi, c.buckets, rate, c.max)
		}
	}
}

func TestWarmupEdgeCases(t *testing.T) {
	nan := math.NaN()
	step := func(n, k int, hi, lo float64) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = lo
			if i < k {
				s[i] = hi
			}
		}
		return s
	}
	withNaN := step(100, 20, 1, 0.3)
	for i := 0; i < 100; i += 7 {
		withNaN[i] = nan
	}
	leadingEmpty := step(100, 25, 1, 0.3)
	for i := range 10 {
		leadingEmpty[i] = nan
	}
	rng := rand.New(rand.NewPCG(3, 3))
	late := ar1(rng, 120, 0.5, 0.3, 0.01)
	for i := 80; i < 120; i++ {
		late[i] += 0.2
	}
	for _, c := range []struct {
		name   string
		series []float64
		cut    int
		drift  bool
		reason string
	}{
		{"empty", nil, 0, false, "0 complete batches"},
		{"too short", step(35, 10, 1, 0.3), 0, false, "fewer than the 8 needed"},
		{"all NaN", step(100, 0, nan, nan), 0, false, "0 complete batches"},
		{"constant", step(100, 0, 0, 0.3), 0, false, "MSER finds no transient"},
		{"noise-free step", step(100, 20, 1, 0.3), 20, false, "cut the first 20 buckets"},
		{"step with empty buckets", withNaN, 20, false, "cut the first 20 buckets"},
		{"empty leading buckets are cut with the transient", leadingEmpty, 25, false, "cut the first 25 buckets"},
		{"faster start is also a transient", step(100, 20, 0.1, 0.3), 20, false, "cut the first 20"},
		{"late shift is drift, not warm-up", late, 0, true, "not stationary"},
		{"two-step transient is cut entirely", append(append(step(10, 10, 10, 10), step(30, 30, 0.5, 0.5)...), step(80, 0, 0, 0.3)...), 40, false, "extended by 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := Warmup(c.series, WarmupOptions{})
			if w.Cut != c.cut || w.Drift != c.drift || w.Confirmed != (c.cut > 0) {
				t.Errorf("cut %d drift %v confirmed %v, want cut %d drift %v: %s", w.Cut, w.Drift, w.Confirmed, c.cut, c.drift, w.Reason)
			}
			if !strings.Contains(w.Reason, c.reason) {
				t.Errorf("reason %q lacks %q", w.Reason, c.reason)
			}
		})
	}
}

// TestReplicaStarts: a replica joining at bucket 40 with its own 15-bucket
// warm-up is cut from its own start, the others are not cut.
func TestReplicaStarts(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 2))
	early := ar1(rng, 120, 0.5, 0.3, 0.03)
	joined := ar1(rng, 120, 0.5, 0.3, 0.03)
	for i := range 40 {
		joined[i] = math.NaN()
	}
	for i := 40; i < 55; i++ {
		joined[i] *= 2.5
	}
	got := ReplicaStarts([]ReplicaSeries{{Name: "r0", First: 0, Medians: early}, {Name: "r1", First: 40, Medians: joined}, {Name: "r2", First: 500, Medians: early}}, WarmupOptions{})
	if len(got) != 3 || got[0].Name != "r0" || got[1].Name != "r1" {
		t.Fatalf("got %+v", got)
	}
	if got[0].Until != 0 {
		t.Errorf("r0 cut until %d: %s", got[0].Until, got[0].Result.Reason)
	}
	if got[1].First != 40 || got[1].Until < 50 || got[1].Until > 60 {
		t.Errorf("r1 first %d until %d, want 40 and 55 ± 5: %s", got[1].First, got[1].Until, got[1].Result.Reason)
	}
	if got[2].First != 120 || got[2].Until != 120 || got[2].Result.Cut != 0 {
		t.Errorf("r2 (first beyond the series) = %+v", got[2])
	}
}
