package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

func benchPolicy(b *testing.B) *policies.Policy {
	b.Helper()
	p, err := policies.Builtin("chat")
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// benchAggArm streams n requests of an hour-long run (the shape goodput
// bench writes: 5% long prompts, eight replicas, a few failures, lognormal
// latencies, the canary's TTFT 3% slower) through an Aggregator and
// returns the arm's exact aggregate.
func benchAggArm(b *testing.B, arm sources.Arm, n int) *sources.Dataset {
	b.Helper()
	p := benchPolicy(b)
	stream, scale := uint64(1), 1.0
	if arm == sources.Canary {
		stream, scale = 2, 1.03
	}
	rng := rand.New(rand.NewPCG(7, stream))
	round6 := func(v float64) float64 { return math.Round(v*1e6) / 1e6 }
	a := NewAggregator(p)
	t, rate := 1.7e9, float64(n)/3600
	replicas := make([]string, 8)
	for i := range replicas {
		replicas[i] = fmt.Sprintf("replica-%d", i)
	}
	for range n {
		t += rng.ExpFloat64() / rate
		r := sources.NewRequest()
		r.Time = math.Round(t*1e6) / 1e6
		long := rng.Float64() < 0.05
		if long {
			r.PromptTokens = int64(8192 + rng.IntN(24000))
		} else {
			r.PromptTokens = int64(math.Max(16, math.Round(600*math.Exp(0.7*rng.NormFloat64()))))
		}
		r.CachedTokens = r.PromptTokens * int64(rng.IntN(4)) / 4
		r.Replica = replicas[rng.IntN(8)]
		r.Attempt = 1
		if rng.Float64() < 0.01 {
			r.Attempt = 2
		}
		switch u := rng.Float64(); {
		case u < 0.002:
			r.Status = sources.StatusRejected
		case u < 0.007:
			r.Status = sources.StatusError
		default:
			r.Status = sources.StatusOK
			ttft := 0.25 * scale * math.Exp(0.5*rng.NormFloat64())
			if long {
				ttft *= 4
			}
			r.OutputTokens = int64(math.Max(2, math.Round(180*math.Exp(0.6*rng.NormFloat64()))))
			tpot := 0.03 * math.Exp(0.3*rng.NormFloat64())
			r.TTFT, r.TPOT = round6(ttft), round6(tpot)
			r.E2E = round6(ttft + tpot*float64(r.OutputTokens-1))
			r.MaxITL = round6(tpot * (1.5 + rng.ExpFloat64()))
		}
		a.Add(&r)
	}
	agg, err := a.Aggregate(arm)
	if err != nil {
		b.Fatal(err)
	}
	return &sources.Dataset{Arm: arm, Agg: agg, Clock: sources.ClockEpoch, Location: "client"}
}

// BenchmarkJudgeAggregate times the aggregate judge (what `goodput judge
// --stream` does after the scan) on two arms of 1,000,000 requests over an
// hour (360 slices), with the default 2000 resamples.
func BenchmarkJudgeAggregate(b *testing.B) {
	bd, cd := benchAggArm(b, sources.Baseline, 1_000_000), benchAggArm(b, sources.Canary, 1_000_000)
	cfg := Config{Policy: benchPolicy(b), Resamples: 2000}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Judge(bd, cd, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
