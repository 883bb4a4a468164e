package sim

import (
	"context"
	"testing"
	"time"
)

// BenchmarkSimulateHour simulates one hour of a fleet of 10 replicas per
// arm, each arm offered 100 req/s (the steady scenario's fleet and traffic
// classes), both arms side by side.
func BenchmarkSimulateHour(b *testing.B) {
	sc, err := Builtin("steady")
	if err != nil {
		b.Fatal(err)
	}
	sc.Baseline.Replicas, sc.Canary.Replicas = 10, 10
	sc.Traffic.Rate = 200
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(context.Background(), sc, 1, time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(res.Baseline)+len(res.Canary)), "requests/op")
	}
}
