package analysis

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// binnedValues counts values on the aggregate's log-linear bins, as the
// request scan does.
func binnedValues(xs []float64) []latBin {
	var h loglin.Hist
	for _, x := range xs {
		h.Add(x, 1)
	}
	return binsOf(h.Cumulative())
}

// coarseBins counts values on log-linear bins of perOctave per doubling
// (⌈log2(v)·perOctave⌉), for comparing grids coarser than the aggregate's.
func coarseBins(xs []float64, perOctave float64) []latBin {
	counts := map[int]float64{}
	for _, x := range xs {
		counts[int(math.Ceil(math.Log2(x)*perOctave))]++
	}
	lo, hi := math.MaxInt, math.MinInt
	for i := range counts {
		lo, hi = min(lo, i), max(hi, i)
	}
	var out []latBin
	for i := lo; i <= hi; i++ {
		if n := counts[i]; n > 0 {
			out = append(out, latBin{lo: math.Exp2(float64(i-1) / perOctave), hi: math.Exp2(float64(i) / perOctave), n: n})
		}
	}
	return out
}

func logNormals(rng *rand.Rand, n int, median, sigma, shift float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = median*math.Exp(sigma*rng.NormFloat64()) + shift
	}
	return out
}

// TestBinnedDiagnosticsBoundTheExact checks the binned Mann-Whitney and
// Hodges-Lehmann against the request path's on the values themselves: the
// exact U lies in the bins' range and its p-value is never below the
// binned one's; the exact shift lies in the binned range and its interval
// inside the binned interval; the binned shift is within that range.
func TestBinnedDiagnosticsBoundTheExact(t *testing.T) {
	for _, tc := range []struct {
		name           string
		nb, nc         int
		median, sigma  float64
		shift, scale   float64 // canary = baseline·scale + shift
		identicalDraws bool
	}{
		{"A/A TTFT-like", 3000, 3200, 0.025, 0.6, 0, 1, false},
		{"TTFT +1.8 ms", 3800, 3943, 0.025, 0.6, 0.0018, 1, false},
		{"TTFT 10% slower", 5000, 5000, 0.3, 0.4, 0, 1.1, false},
		{"E2E +3.85 ms", 20000, 20000, 2.6, 0.5, 0.00385, 1, false},
		{"TPOT A/A, small", 70, 80, 0.013, 0.1, 0, 1, false},
		{"same values", 2000, 2000, 0.1, 0.3, 0, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 17))
			xb := logNormals(rng, tc.nb, tc.median, tc.sigma, 0)
			var xc []float64
			if tc.identicalDraws {
				xc = append([]float64(nil), xb...)
			} else {
				xc = logNormals(rng, tc.nc, tc.median*tc.scale, tc.sigma, tc.shift)
			}
			g, ok := alignBins(binnedValues(xc), binnedValues(xb))
			if !ok {
				t.Fatal("bins of one grid do not align")
			}
			mw := mannWhitneyBins(g)
			ex := stats.MannWhitney(xc, xb)
			if !(mw.uLo <= ex.U && ex.U <= mw.uHi) {
				t.Errorf("exact U %v outside the binned range [%v, %v]", ex.U, mw.uLo, mw.uHi)
			}
			if len(xb)+len(xc) > stats.ExactMaxN && !(mw.p >= ex.P) {
				t.Errorf("binned p %.6g below the exact %.6g: less cautious", mw.p, ex.P)
			}
			hl := hodgesLehmannBins(g, 0.95)
			est, ci := stats.HodgesLehmann(xc, xb, 0.95)
			if !(hl.estLo <= est && est <= hl.estHi) {
				t.Errorf("exact shift %.6g outside the binned range [%.6g, %.6g]", est, hl.estLo, hl.estHi)
			}
			if !(hl.estLo <= hl.est && hl.est <= hl.estHi) {
				t.Errorf("binned shift %.6g outside its own range [%.6g, %.6g]", hl.est, hl.estLo, hl.estHi)
			}
			if len(xb)+len(xc) > stats.ExactMaxN && !(hl.ci.Lo <= ci.Lo && ci.Hi <= hl.ci.Hi) {
				t.Errorf("exact interval [%.6g, %.6g] not inside the binned [%.6g, %.6g]", ci.Lo, ci.Hi, hl.ci.Lo, hl.ci.Hi)
			}
			t.Logf("U exact %.6g binned %.6g [%.6g, %.6g] (range %.3g σ); p exact %.3g binned %.3g; HL exact %.6g binned %.6g range [%.6g, %.6g]; CI exact [%.6g, %.6g] binned [%.6g, %.6g]",
				ex.U, mw.uMid, mw.uLo, mw.uHi, (mw.uHi-mw.uLo)/math.Sqrt(float64(len(xb)*len(xc))*float64(len(xb)+len(xc)+1)/12),
				ex.P, mw.p, est, hl.est, hl.estLo, hl.estHi, ci.Lo, ci.Hi, hl.ci.Lo, hl.ci.Hi)
		})
	}
}

// TestBinnedShiftResolution: a 3.85 ms shift of E2E around 2.6 s (bins
// there are about 7 ms wide at 256 per octave, 28 ms at 64) is estimated
// by the smoothed binned Hodges-Lehmann within 0.25 ms of the values' own
// on each of five seeds and on grids of 256, 128 and 64 bins per octave,
// and the exact estimate stays inside the binned range.
func TestBinnedShiftResolution(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		xb := logNormals(rng, 20000, 2.6, 0.5, 0)
		xc := logNormals(rng, 20000, 2.6, 0.5, 0.00385)
		est, _ := stats.HodgesLehmann(xc, xb, 0.95)
		for _, per := range []float64{loglin.PerOctave, 128, 64} {
			g, ok := alignBins(coarseBins(xc, per), coarseBins(xb, per))
			if !ok {
				t.Fatal("bins of one grid do not align")
			}
			hl := hodgesLehmannBins(g, 0.95)
			if !(hl.estLo <= est && est <= hl.estHi) {
				t.Errorf("seed %d, %g per octave: exact %.6g outside [%.6g, %.6g]", seed, per, est, hl.estLo, hl.estHi)
			}
			if !(math.Abs(hl.est-est) < 0.00025) {
				t.Errorf("seed %d, %g per octave: binned shift %.6g s, exact %.6g s: apart by 0.25 ms or more", seed, per, hl.est, est)
			}
			// for comparison: the median with every value at its bin's
			// midpoint, which sticks to 0 (the same-bin pairs)
			var cm, cw, bm, bw []float64
			for _, x := range g {
				if x.nc > 0 {
					cm, cw = append(cm, x.lo/2+x.hi/2), append(cw, x.nc)
				}
				if x.nb > 0 {
					bm, bw = append(bm, x.lo/2+x.hi/2), append(bw, x.nb)
				}
			}
			midpoint := newDiffOrder(cm, cw, bm, bw).median()
			t.Logf("seed %d, %3g per octave: exact %.3f ms, binned %.3f ms (at bin midpoints %.3f ms), range [%.3f, %.3f] ms",
				seed, per, 1e3*est, 1e3*hl.est, 1e3*midpoint, 1e3*hl.estLo, 1e3*hl.estHi)
		}
	}
}

// TestAlignBinsRefusesOverlap: bins that overlap without being one bin are
// not a shared grid.
func TestAlignBinsRefusesOverlap(t *testing.T) {
	if _, ok := alignBins([]latBin{{1, 2, 1}}, []latBin{{1.5, 2.5, 1}}); ok {
		t.Error("overlapping bins accepted")
	}
	g, ok := alignBins([]latBin{{0, 0, 2}, {1, 2, 1}}, []latBin{{1, 2, 3}, {2, 4, 1}})
	if !ok || len(g) != 3 || g[1].nc != 1 || g[1].nb != 3 || g[0].nc != 2 || g[2].nb != 1 {
		t.Errorf("aligned %+v (ok %v)", g, ok)
	}
	h := sources.Histogram{Edges: []float64{0, 1, 2, 4, math.Inf(1)}, Counts: []float64{2, 2, 5, 5, 5}, Sparse: true}
	if got := binsOf(h); len(got) != 2 || got[0] != (latBin{0, 0, 2}) || got[1] != (latBin{1, 2, 3}) {
		t.Errorf("binsOf %+v", got)
	}
}
