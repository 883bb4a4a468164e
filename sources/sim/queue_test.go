package sim

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

// erlangC returns the probability that an arrival waits in an M/M/c queue
// with offered load a = λ/μ (Erlang C formula).
func erlangC(c int, a float64) float64 {
	sum, term := 0.0, 1.0
	for k := range c {
		if k > 0 {
			term *= a / float64(k)
		}
		sum += term
	}
	last := term * a / float64(c) * float64(c) / (float64(c) - a) // a^c/c! · c/(c−a)
	return last / (sum + last)
}

func TestErlangCFormula(t *testing.T) {
	// c=1 reduces to ρ; c=2, a=1 gives 1/3; others against the Erlang B
	// recursion B(k) = a·B(k−1)/(k + a·B(k−1)), C = c·B/(c − a(1 − B))
	for _, tc := range []struct {
		c    int
		a, p float64
	}{{1, 0.7, 0.7}, {2, 1, 1.0 / 3}, {4, 3.2, -1}, {10, 8.5, -1}} {
		want := tc.p
		if want < 0 {
			b := 1.0
			for k := 1; k <= tc.c; k++ {
				b = tc.a * b / (float64(k) + tc.a*b)
			}
			want = float64(tc.c) * b / (float64(tc.c) - tc.a*(1-b))
		}
		if got := erlangC(tc.c, tc.a); math.Abs(got-want) > 1e-12 {
			t.Errorf("erlangC(%d, %v) = %v, want %v", tc.c, tc.a, got, want)
		}
	}
}

// mmcScenario is a fleet of c single-slot servers behind one shared queue:
// batch size 1, one-token prompts with free prefill, and output lengths
// ceil(Exp(meanTokens)) at a fixed step time, so service times are
// geometric (≈ exponential) with mean step/(1 − e^(−1/meanTokens)).
func mmcScenario(t *testing.T, c int, perArmRate float64, dur time.Duration, queueLimit int) (Scenario, float64) {
	t.Helper()
	const step, meanTokens = 0.02, 50.0
	y := fmt.Sprintf(`name: mmc
duration: %s
traffic:
  rate: %g
  classes:
    - name: x
      weight: 1
      prompt_tokens: {dist: constant, value: 1}
      output_tokens: {dist: exponential, mean: %g, max: 100000}
fleet:
  replicas: %d
  router: shared-queue
  max_batch: 1
  queue_limit: %d
  kv: {blocks: 10000, block_size: 16}
  prefix_cache: {capacity_tokens: 0}
  step: {base: 20ms, decode_per_seq: 0s, per_context_token: 0s, prefill_per_token: 0s}
`, dur, 2*perArmRate, meanTokens, c, queueLimit)
	sc, err := ParseScenario("mmc.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return sc, step / (1 - math.Exp(-1/meanTokens))
}

// TestMMcWaitingTime checks the simulator against queueing theory: with
// batch size 1 and exponential service, the mean wait before service (TTFT
// minus the one step that produces the first token) matches the M/M/c
// Erlang C value λ⁻¹·C(c,a)·a/(c−a)… = C/(cμ − λ) within Monte Carlo error,
// estimated by batch means over both arms (independent replications).
func TestMMcWaitingTime(t *testing.T) {
	for _, tc := range []struct {
		c   int
		rho float64
		dur time.Duration
	}{
		{1, 0.7, 4 * time.Hour},
		{4, 0.8, 3 * time.Hour},
	} {
		t.Run(fmt.Sprintf("c=%d,rho=%.1f", tc.c, tc.rho), func(t *testing.T) {
			t.Parallel()
			meanS := 0.0
			_, meanS = mmcScenario(t, tc.c, 1, tc.dur, 0)
			lambda := tc.rho * float64(tc.c) / meanS
			sc, _ := mmcScenario(t, tc.c, lambda, tc.dur, 0)
			res, err := Run(context.Background(), sc, 7, 0)
			if err != nil {
				t.Fatal(err)
			}
			a := lambda * meanS
			want := erlangC(tc.c, a) / (float64(tc.c)/meanS - lambda)
			// batch means: 40 consecutive batches per arm
			const batches = 40
			var means []float64
			total, n := 0.0, 0
			for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
				reqs := res.Requests(arm)
				per := len(reqs) / batches
				for b := range batches {
					s := 0.0
					for _, r := range reqs[b*per : (b+1)*per] {
						if r.Status != sources.StatusOK {
							t.Fatalf("request ended %v", r.Status)
						}
						s += r.TTFT - 0.02
					}
					means = append(means, s/float64(per))
					total += s
					n += per
				}
			}
			got := total / float64(n)
			sd := 0.0
			for _, m := range means {
				sd += (m - got) * (m - got)
			}
			se := math.Sqrt(sd / float64(len(means)-1) / float64(len(means)))
			t.Logf("c=%d ρ=%.2f: mean wait %.4f s, Erlang C %.4f s, MC s.e. %.4f (n=%d)", tc.c, tc.rho, got, want, se, n)
			if math.Abs(got-want) > 4*se {
				t.Errorf("mean wait %.4f s differs from Erlang C %.4f s by more than 4 s.e. (%.4f)", got, want, se)
			}
		})
	}
}

// TestThroughputNeverExceedsCapacity overloads c servers at twice their
// capacity: completions per second approach but never exceed c/E[S], and
// no replica ever runs more than max_batch requests or produces more tokens
// per scrape interval than max_batch per minimum step.
func TestThroughputNeverExceedsCapacity(t *testing.T) {
	const c = 3
	_, meanS := mmcScenario(t, c, 1, time.Hour, 0)
	capacity := c / meanS
	sc, _ := mmcScenario(t, c, 2*capacity, 30*time.Minute, 50)
	res, err := Run(context.Background(), sc, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		done := 0
		for _, r := range res.Requests(arm) {
			if r.Status == sources.StatusOK && r.Time+r.E2E < float64(sc.Start.Unix())+sc.Duration.Seconds() {
				done++
			}
		}
		rate := float64(done) / sc.Duration.Seconds()
		n := capacity * sc.Duration.Seconds()
		t.Logf("%s: %.3f completions/s, capacity %.3f", arm, rate, capacity)
		if rate > capacity*(1+3/math.Sqrt(n)) {
			t.Errorf("%s completed %.3f/s, above capacity %.3f/s", arm, rate, capacity)
		}
		if rate < 0.93*capacity {
			t.Errorf("%s completed %.3f/s: an overloaded fleet should run near capacity %.3f/s", arm, rate, capacity)
		}
	}
	checkStepBounds(t, res)
}

// checkStepBounds asserts the hard per-replica limits on every scrape.
func checkStepBounds(t *testing.T, res *Result) {
	t.Helper()
	for _, s := range res.Metrics {
		spec := res.Scenario.Arm(s.Arm)
		minStep := spec.Step.Base.Seconds() / spec.DecodeSpeed
		for i, smp := range s.Samples {
			if smp.Running > spec.MaxBatch {
				t.Fatalf("%s at %v: %d running > max_batch %d", s.Pod, smp.Time, smp.Running, spec.MaxBatch)
			}
			if i == 0 || smp.Counters.GenerationTokens < s.Samples[i-1].Counters.GenerationTokens {
				continue // first scrape or counter reset after a restart
			}
			dt := smp.Time - s.Samples[i-1].Time
			tokens := smp.Counters.GenerationTokens - s.Samples[i-1].Counters.GenerationTokens
			if limit := float64(spec.MaxBatch) * (dt/minStep + 1); tokens > limit {
				t.Fatalf("%s: %v tokens in %v s exceeds the engine bound %v", s.Pod, tokens, dt, limit)
			}
		}
	}
}
