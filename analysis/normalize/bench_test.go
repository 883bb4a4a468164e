package normalize

import (
	"math/rand/v2"
	"testing"
)

// Sizes are an hour of 10 s buckets (360) per arm.

func BenchmarkWarmup(b *testing.B) {
	s := ar1(rand.New(rand.NewPCG(1, 1)), 360, 0.5, 0.3, 0.03)
	for b.Loop() {
		Warmup(s, WarmupOptions{})
	}
}

func BenchmarkStandardize12Strata(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	share := make([]float64, 12)
	p := make([]float64, 12)
	for i := range share {
		share[i], p[i] = 1.0/12, 0.9
	}
	m := mixArm{buckets: 360, rate: 120, share: share, p: p, phi: 0.8, sd: 0.01, classNms: Bands()}
	x, y := m.gen(rng), m.gen(rng)
	w, err := Weights(MixPooled, x, y, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Standardize(x, y, w, 0.9); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReplicaLoss16(b *testing.B) {
	up := make([]func(int) bool, 16)
	for i := range up {
		up[i] = always
	}
	up[3] = func(t int) bool { return t < 200 }
	reps := fleet(rand.New(rand.NewPCG(1, 3)), 360, 5, up)
	for b.Loop() {
		ReplicaLoss(reps, LossOptions{})
	}
}
