package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/sources"
)

// TestSlowStartByTPOT: the TPOT medians set the warm-up cut when a cold
// start shows in the token times and not in the first tokens, and only
// when the start is at least TPOTWarmupRatio slower; a shift of a few
// percent (a load wave) or a faster start cuts nothing.
func TestSlowStartByTPOT(t *testing.T) {
	const n = 120
	series := func(seed uint64, level func(i int) float64, noise float64) []float64 {
		rng := rand.New(rand.NewPCG(seed, 1))
		out := make([]float64, n)
		for i := range out {
			out[i] = level(i) * (1 + noise*rng.NormFloat64())
		}
		return out
	}
	flat := func(v float64) func(int) float64 { return func(int) float64 { return v } }
	for _, tc := range []struct {
		name    string
		tpot    func(i int) float64
		wantCut bool
	}{
		{"2x slower steps easing over 15 buckets", func(i int) float64 {
			if i < 15 {
				return 0.04 * (2 - float64(i)/15)
			}
			return 0.04
		}, true},
		{"a 4% step (a load wave)", func(i int) float64 {
			if i < 60 {
				return 0.0416
			}
			return 0.04
		}, false},
		{"a faster start", func(i int) float64 {
			if i < 15 {
				return 0.02
			}
			return 0.04
		}, false},
		{"steady", flat(0.04), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ttft := series(1, flat(0.3), 0.03)
			tpot := series(2, tc.tpot, 0.01)
			res := slowStart(ttft, tpot, normalize.WarmupOptions{}, "buckets")
			if got := res.Cut > 0; got != tc.wantCut {
				t.Fatalf("cut %d buckets, want a cut: %v (%s)", res.Cut, tc.wantCut, res.Reason)
			}
			if tc.wantCut && (res.Cut < 10 || !strings.Contains(res.Reason, "TPOT medians")) {
				t.Errorf("cut %d buckets: %s", res.Cut, res.Reason)
			}
		})
	}
}

// TestWarmupByTPOTBothPaths: a canary whose decode steps run twice as
// slow for its first 3 minutes, its first tokens unchanged, is cut by
// both judges (the TTFT medians alone showed nothing: before, neither cut
// it); a canary whose slower class (TTFT 2×, TPOT 1.75× the other's)
// stops sending halfway through is cut by neither: the series are the
// largest stratum's, and the pooled medians, which that mix change moves
// by a third, had both judges cut its first 5 minutes (and the
// baseline's with them) on TTFT as on TPOT.
func TestWarmupByTPOTBothPaths(t *testing.T) {
	p := chat(t)
	p.Window.Warmup = "auto"
	base := synth{n: 24000, rate: 20, ttftMed: 0.3, tpotMed: 0.04, replicas: 2, seed: 31}
	label := func(ds *sources.Dataset) {
		for i := range ds.Requests {
			ds.Requests[i].Class = "chat"
			if ds.Requests[i].PromptTokens >= 8192 {
				ds.Requests[i].Class = "long"
			}
		}
	}
	t.Run("slow decode at the start", func(t *testing.T) {
		c := base
		c.seed = 32
		bd, cd := base.dataset(sources.Baseline), c.dataset(sources.Canary)
		t0 := cd.Requests[0].Time
		for i := range cd.Requests {
			r := &cd.Requests[i]
			if age := r.Time - t0; age < 180 {
				f := 2 - age/180
				r.TPOT *= f
				if sources.Known(r.E2E) && sources.Known(r.TTFT) {
					r.E2E = r.TTFT + (r.E2E-r.TTFT)*f
				}
			}
		}
		rr, ra := judgedBothWays(t, bd, cd, Config{Policy: p, Resamples: 200})
		for _, r := range []*Report{rr, ra} {
			cut := float64(r.Arms.Canary.WarmupCutSeconds)
			if !(cut >= 120 && cut <= 300) {
				t.Errorf("canary cut %gs, want its slow first ~3 minutes: %s", cut, step(r, "warmup").Detail)
			}
		}
	})
	t.Run("a slower class stops halfway", func(t *testing.T) {
		b := base
		b.longShare, b.longTTFTMed, b.longTPOTMed = 0.5, 0.6, 0.07
		c := b
		c.seed = 33
		bd, cd := b.dataset(sources.Baseline), c.dataset(sources.Canary)
		label(bd)
		label(cd)
		mid := (cd.Requests[0].Time + cd.Requests[len(cd.Requests)-1].Time) / 2
		kept := cd.Requests[:0]
		for _, r := range cd.Requests {
			if r.Class == "long" && r.Time > mid {
				continue
			}
			kept = append(kept, r)
		}
		cd.Requests = kept
		rr, ra := judgedBothWays(t, bd, cd, Config{Policy: p, Resamples: 200})
		for _, r := range []*Report{rr, ra} {
			if cut := float64(r.Arms.Canary.WarmupCutSeconds); cut != 0 && !math.IsNaN(cut) {
				t.Errorf("canary cut %gs for a mix change: %s", cut, step(r, "warmup").Detail)
			}
		}
	})
}
