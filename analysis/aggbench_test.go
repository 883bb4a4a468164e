package analysis

import (
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/sim"
)

func benchPolicy(b *testing.B) *policies.Policy {
	b.Helper()
	p, err := policies.Builtin("chat")
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// benchAggArm streams n requests of an hour-long run (the records goodput
// bench writes, sim.BenchRequests) through an Aggregator and returns the
// arm's exact aggregate.
func benchAggArm(b *testing.B, arm sources.Arm, n int) *sources.Dataset {
	b.Helper()
	p := benchPolicy(b)
	a := NewAggregator(p)
	// the records goodput bench writes, over an hour, in chunks as it
	// makes them
	buf := make([]sources.Request, 1<<16)
	t, rate := 1.7e9, float64(n)/3600
	for first := 0; first < n; first += len(buf) {
		chunk := buf[:min(len(buf), n-first)]
		t = sim.BenchRequests(chunk, arm, first, t, rate)
		for i := range chunk {
			a.Add(&chunk[i])
		}
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
	benchJudge(b, benchAggArm(b, sources.Baseline, 1_000_000), benchAggArm(b, sources.Canary, 1_000_000))
}

// benchJudge times Judge on two arms with the chat policy and the default
// 2000 resamples.
func benchJudge(b *testing.B, bd, cd *sources.Dataset) {
	cfg := Config{Policy: benchPolicy(b), Resamples: 2000}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Judge(bd, cd, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAggregatorAdd times the scan's aggregation alone: 1,000,000
// requests of an hour-long run (sim.BenchRequests, made once) added to a
// new Aggregator and aggregated, per iteration.
func BenchmarkAggregatorAdd(b *testing.B) {
	p := benchPolicy(b)
	reqs := benchRequestArm(sources.Baseline, 1_000_000).Requests
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		a := NewAggregator(p)
		for i := range reqs {
			a.Add(&reqs[i])
		}
		if _, err := a.Aggregate(sources.Baseline); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRequestArm is n requests of an hour-long run (sim.BenchRequests)
// as the request path reads them.
func benchRequestArm(arm sources.Arm, n int) *sources.Dataset {
	reqs := make([]sources.Request, n)
	t, rate := 1.7e9, float64(n)/3600
	for first := 0; first < n; first += 1 << 16 {
		t = sim.BenchRequests(reqs[first:min(first+1<<16, n)], arm, first, t, rate)
	}
	return &sources.Dataset{Arm: arm, Requests: reqs, Clock: sources.ClockEpoch, Location: "client"}
}

// BenchmarkJudgeRequests times the request path's judge (what `goodput
// judge` does after reading, for inputs up to 256 MiB) on two arms of
// 500,000 requests over an hour, with the default 2000 resamples.
func BenchmarkJudgeRequests(b *testing.B) {
	benchJudge(b, benchRequestArm(sources.Baseline, 500_000), benchRequestArm(sources.Canary, 500_000))
}
