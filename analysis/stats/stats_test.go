package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestWilsonCheckValues(t *testing.T) {
	tests := []struct {
		name      string
		k, n      float64
		conf      float64
		lo, hi    float64 // to 4 decimals
		exactEnds bool
	}{
		{"Newcombe 1998a 81/263", 81, 263, 0.95, 0.2553, 0.3662, false},
		{"none good", 0, 50, 0.90, 0, 0.0513, true},
		{"all good", 50, 50, 0.90, 0.9487, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ci := Wilson(tt.k, tt.n, tt.conf)
			if math.Abs(ci.Lo-tt.lo) > 5e-5 || math.Abs(ci.Hi-tt.hi) > 5e-5 {
				t.Errorf("Wilson(%v, %v) = [%.4f, %.4f], want [%.4f, %.4f]", tt.k, tt.n, ci.Lo, ci.Hi, tt.lo, tt.hi)
			}
			if tt.exactEnds && tt.k == 0 && ci.Lo != 0 || tt.exactEnds && tt.k == tt.n && ci.Hi != 1 {
				t.Errorf("boundary not exact: %+v", ci)
			}
		})
	}
	if ci := Wilson(0, 0, 0.9); ci != (Interval{0, 1}) {
		t.Errorf("n = 0: %+v, want [0, 1]", ci)
	}
	if ci := Wilson(3, 2, 0.9); !math.IsNaN(ci.Lo) {
		t.Errorf("k > n: %+v, want NaN", ci)
	}
}

func TestNewcombeCheckValue(t *testing.T) {
	ci := NewcombeDiff(56, 70, 48, 80, 0.95)
	if math.Abs(ci.Lo-0.0524) > 5e-5 || math.Abs(ci.Hi-0.3339) > 5e-5 {
		t.Errorf("56/70 − 48/80 = [%.4f, %.4f], want [0.0524, 0.3339] (Newcombe 1998b)", ci.Lo, ci.Hi)
	}
	// k = n in both arms: still an interval around 0
	ci = NewcombeDiff(100, 100, 200, 200, 0.9)
	if !(ci.Lo < 0 && ci.Hi > 0) {
		t.Errorf("100/100 vs 200/200: %+v, want an interval around 0", ci)
	}
}

func TestFisherLargeTableConsistency(t *testing.T) {
	// tails overlap in exactly the observed table
	r := FisherExact(30, 999970, 12, 999988)
	if r.PLess+r.PGreater <= 1 || r.PTwoSided > 2*math.Min(r.PLess, r.PGreater)+1e-12 {
		t.Errorf("inconsistent tails: %+v", r)
	}
	if r.PGreater > 0.01 || r.PGreater < 1e-4 {
		t.Errorf("30 vs 12 failures in 1e6 each: PGreater %g, want ≈ 0.004", r.PGreater)
	}
	if r := FisherExact(-1, 2, 3, 4); !math.IsNaN(r.PTwoSided) {
		t.Errorf("negative count: %+v, want NaN", r)
	}
}

// bruteExact enumerates all assignments of the pooled values to x.
func bruteExact(x, y []float64) (pLess, pGreater float64) {
	pooled := append(slices.Clone(x), y...)
	n := len(pooled)
	obs := MannWhitney(x, y).U
	var le, ge, tot float64
	for mask := 0; mask < 1<<n; mask++ {
		if popcount(mask) != len(x) {
			continue
		}
		var xs, ys []float64
		for i := range n {
			if mask&(1<<i) != 0 {
				xs = append(xs, pooled[i])
			} else {
				ys = append(ys, pooled[i])
			}
		}
		var u float64
		for _, a := range xs {
			for _, b := range ys {
				switch {
				case a > b:
					u++
				case a == b:
					u += 0.5
				}
			}
		}
		tot++
		if u <= obs {
			le++
		}
		if u >= obs {
			ge++
		}
	}
	return le / tot, ge / tot
}

func popcount(v int) int {
	c := 0
	for ; v != 0; v &= v - 1 {
		c++
	}
	return c
}

func TestMannWhitneyExactMatchesEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 40 {
		n1, n2 := 1+rng.IntN(7), 1+rng.IntN(7)
		levels := 2 + rng.IntN(6) // heavy ties
		x, y := make([]float64, n1), make([]float64, n2)
		for i := range x {
			x[i] = float64(rng.IntN(levels))
		}
		for i := range y {
			y[i] = float64(rng.IntN(levels))
		}
		r := MannWhitney(x, y)
		pl, pg := bruteExact(x, y)
		if !r.Exact || math.Abs(r.PLess-pl) > 1e-12 || math.Abs(r.PGreater-pg) > 1e-12 {
			t.Fatalf("trial %d x=%v y=%v: got less %g greater %g, enumeration %g %g", trial, x, y, r.PLess, r.PGreater, pl, pg)
		}
	}
}

func TestMannWhitneyEdges(t *testing.T) {
	if r := MannWhitney(nil, []float64{1}); !math.IsNaN(r.P) {
		t.Errorf("empty x: %+v", r)
	}
	if r := MannWhitney([]float64{math.NaN(), 1}, []float64{1}); !math.IsNaN(r.P) {
		t.Errorf("NaN value: %+v", r)
	}
	// large all-tied samples: normal path with σ = 0
	same := make([]float64, 200)
	if r := MannWhitney(same, same); r.P != 1 || r.Z != 0 || r.Exact {
		t.Errorf("all tied, N = 400: %+v, want P = 1, Z = 0, not exact", r)
	}
	// direction of Z: x larger → positive
	x := []float64{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55}
	y := make([]float64, 60)
	for i := range y {
		y[i] = float64(i) / 2
	}
	if r := MannWhitney(x, y); !(r.Z > 0 && r.PGreater < r.PLess) {
		t.Errorf("x larger: %+v, want Z > 0", r)
	}
}

func TestHodgesLehmannSelectionMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 150 {
		n1, n2 := 1+rng.IntN(200), 1+rng.IntN(200)
		x, y := make([]float64, n1), make([]float64, n2)
		quant := []float64{0, 0.5, 0.001}[trial%3] // exact-tie-heavy, coarse, fine
		for i := range x {
			x[i] = roundTo(rng.ExpFloat64()-0.3, quant)
		}
		for i := range y {
			y[i] = roundTo(rng.ExpFloat64(), quant)
		}
		var d []float64
		for _, a := range x {
			for _, b := range y {
				d = append(d, a-b)
			}
		}
		slices.Sort(d)
		sel := newDiffSelector(sortedCopy(x), sortedCopy(y))
		for _, k := range []int64{1, int64(len(d)), int64(len(d)+1) / 2, 1 + rng.Int64N(int64(len(d)))} {
			if got := sel.kth(k); got != d[k-1] {
				t.Fatalf("trial %d (%d×%d, quantum %g): kth(%d) = %g, want %g", trial, n1, n2, quant, k, got, d[k-1])
			}
		}
	}
}

func roundTo(v, q float64) float64 {
	if q == 0 {
		return math.Floor(v) // few distinct values
	}
	return math.Round(v/q) * q
}

// TestHodgesLehmannAllEqual: when every pairwise difference is the same d,
// the interval is [d, d], also for samples too small for a rank interval.
func TestHodgesLehmannAllEqual(t *testing.T) {
	for _, tc := range []struct{ x, y []float64 }{
		{[]float64{0.5, 0.5, 0.5}, []float64{0.2, 0.2}},
		{[]float64{1}, []float64{1}},
		{[]float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 2}, []float64{3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}},
	} {
		d := tc.x[0] - tc.y[0]
		est, ci := HodgesLehmann(tc.x, tc.y, 0.95)
		if est != d || ci.Lo != d || ci.Hi != d {
			t.Errorf("x %v y %v: %g [%g, %g], want %g [%g, %g]", tc.x, tc.y, est, ci.Lo, ci.Hi, d, d, d)
		}
	}
}

func TestHodgesLehmannLargeTies(t *testing.T) {
	// 3000 × 3000 with only a handful of distinct differences: the selection
	// must not stall on blocks of equal pairs.
	x, y := make([]float64, 3000), make([]float64, 3000)
	for i := range x {
		x[i] = float64(i % 3)
		y[i] = float64(i % 2)
	}
	est, ci := HodgesLehmann(x, y, 0.95)
	if est != 0.5 && est != 0 && est != 1 {
		t.Errorf("estimate %g not a pairwise difference", est)
	}
	if !(ci.Lo <= est && est <= ci.Hi) {
		t.Errorf("interval %+v does not contain %g", ci, est)
	}
}

func TestWelchDegenerate(t *testing.T) {
	tests := []struct {
		name  string
		x, y  []float64
		wantT float64
		wantP float64
	}{
		{"both constant, equal", []float64{2, 2, 2}, []float64{2, 2}, math.NaN(), 1},
		{"both constant, different", []float64{3, 3, 3}, []float64{2, 2}, math.Inf(1), 0},
		{"one value in an arm", []float64{3}, []float64{2, 4}, math.NaN(), math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Welch(tt.x, tt.y, 0.95)
			if !sameFloat(r.T, tt.wantT) || !sameFloat(r.P, tt.wantP) {
				t.Errorf("T = %g, P = %g; want %g, %g", r.T, r.P, tt.wantT, tt.wantP)
			}
		})
	}
	// constant 0.1s: the variance must be exactly 0, not a rounding residue
	if _, v := meanVar([]float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}); v != 0 {
		t.Errorf("variance of a constant sample = %g", v)
	}
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func TestDecisions(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		harm          Interval
		margin        float64
		ni, guardrail Decision
	}{
		{Interval{-0.02, -0.01}, 0.01, Pass, Pass},
		{Interval{-0.02, 0.005}, 0.01, Pass, Pass},
		{Interval{0.001, 0.005}, 0.01, Pass, Fail}, // confident harm below the margin
		{Interval{-0.01, 0.02}, 0.01, Inconclusive, Inconclusive},
		{Interval{0.02, 0.03}, 0.01, Fail, Fail},
		{Interval{0.01, 0.03}, 0.01, Inconclusive, Fail}, // Lo == margin is not > margin
		{Interval{-0.03, 0.01}, 0.01, Inconclusive, Inconclusive},
		{Interval{nan, nan}, 0.01, Inconclusive, Inconclusive},
		{Interval{math.Inf(-1), math.Inf(1)}, 0.01, Inconclusive, Inconclusive},
	}
	for _, tt := range tests {
		if got := NonInferiority(tt.harm, tt.margin); got != tt.ni {
			t.Errorf("NonInferiority(%+v, %g) = %s, want %s", tt.harm, tt.margin, got, tt.ni)
		}
		if got := Guardrail(tt.harm, tt.margin); got != tt.guardrail {
			t.Errorf("Guardrail(%+v, %g) = %s, want %s", tt.harm, tt.margin, got, tt.guardrail)
		}
	}
}

func TestMoreDataAndFailPValue(t *testing.T) {
	z := 1.6448536269514722
	tests := []struct {
		point, se, margin, want float64
	}{
		{0, 0.01, 0.01, z * z},          // need z·se/√k < 0.01 → k = z²
		{0.005, 0.01, 0.01, 4 * z * z},  // half the gap: 4× as much
		{0.02, 0.005, 0.01, 1},          // already decided
		{0.01, 0.01, 0.01, math.Inf(1)}, // on the margin
		{0.015, 0.01, 0.01, 4 * z * z},  // towards fail
		{math.NaN(), 0.01, 0.01, math.NaN()},
	}
	for _, tt := range tests {
		got := MoreData(tt.point, tt.se, tt.margin, z)
		if !(sameFloat(got, tt.want) || math.Abs(got-tt.want) < 1e-12*tt.want) {
			t.Errorf("MoreData(%g, %g, %g) = %g, want %g", tt.point, tt.se, tt.margin, got, tt.want)
		}
	}
	if p := FailPValue(0.01, 0, 0); p != 0 {
		t.Errorf("certain harm: p = %g", p)
	}
	if p := FailPValue(-0.01, 0, 0); p != 1 {
		t.Errorf("certain no harm: p = %g", p)
	}
	if p := FailPValue(0, 1, 0); p != 0.5 {
		t.Errorf("on the threshold: p = %g", p)
	}
}

func TestMultiplicityNaNAndOrder(t *testing.T) {
	p := []float64{0.01, math.NaN(), 0.04, 0.03}
	h, b := Holm(p), BH(p)
	if !math.IsNaN(h[1]) || !math.IsNaN(b[1]) {
		t.Errorf("NaN not kept: %v %v", h, b)
	}
	// K = 4 includes the NaN
	if h[0] != 0.04 || b[0] != 0.04 {
		t.Errorf("smallest p adjusted to %g (Holm), %g (BH); want 0.04, 0.04", h[0], b[0])
	}
	if len(Holm(nil)) != 0 || len(BH(nil)) != 0 {
		t.Error("empty input")
	}
}

// TestWeightedHolm: equal weights give Holm; unequal weights follow the
// step-down by hand: p = (0.03, 0.01, 0.04), w = (0.6, 0.2, 0.2) → order by
// p/w (0.05, 0.05, 0.2): 0.03·1/0.6 = 0.05, then 0.01·0.4/0.2 = 0.02 → 0.05
// (monotone), then 0.04·0.2/0.2 = 0.04 → 0.05. A NaN keeps its weight in
// every sum and comes back NaN.
func TestWeightedHolm(t *testing.T) {
	p := []float64{0.01, math.NaN(), 0.04, 0.03, 0.2}
	eq := WeightedHolm(p, []float64{1, 1, 1, 1, 1})
	h := Holm(p)
	for i := range p {
		if !(eq[i] == h[i] || math.IsNaN(eq[i]) && math.IsNaN(h[i])) && math.Abs(eq[i]-h[i]) > 1e-15 {
			t.Errorf("equal weights: %v, Holm %v", eq, h)
		}
	}
	got := WeightedHolm([]float64{0.03, 0.01, 0.04}, []float64{0.6, 0.2, 0.2})
	for i, want := range []float64{0.05, 0.05, 0.05} {
		if math.Abs(got[i]-want) > 1e-12 {
			t.Errorf("weighted: %v, want [0.05 0.05 0.05]", got)
		}
	}
	// the heavy gate alone at p = 0.04 is rejected at α = 0.05 when it
	// carries 0.8 of the weight (0.04/0.8 = 0.05 ≤ 0.05) but not by Holm
	// over 3 (0.12)
	got = WeightedHolm([]float64{0.04, math.NaN(), 0.5}, []float64{0.8, 0.1, 0.1})
	if math.Abs(got[0]-0.05) > 1e-12 || !math.IsNaN(got[1]) {
		t.Errorf("heavy gate: %v", got)
	}
	if len(WeightedHolm(nil, nil)) != 0 {
		t.Error("empty input")
	}
}

func TestSRMEdges(t *testing.T) {
	if c, p := SRM([]float64{10, 5}, []float64{1, 0}); !math.IsInf(c, 1) || p != 0 {
		t.Errorf("traffic in an arm with share 0: %g, %g", c, p)
	}
	for _, obs := range [][]float64{{10}, {10, -1}, {0, 0}} {
		if c, _ := SRM(obs, []float64{1, 1}[:len(obs)]); !math.IsNaN(c) {
			t.Errorf("SRM(%v) = %g, want NaN", obs, c)
		}
	}
	if _, p := SRM([]float64{5000, 5000}, []float64{0.5, 0.5}); p != 1 {
		t.Errorf("perfect split: p = %g", p)
	}
}

func TestDiffOfRatiosIndependentBuckets(t *testing.T) {
	// 16 buckets per arm → 4 batches of 4; check against a direct computation.
	x := Ratio{Num: make([]float64, 16), Den: make([]float64, 16)}
	y := Ratio{Num: make([]float64, 16), Den: make([]float64, 16)}
	for i := range 16 {
		x.Den[i], y.Den[i] = float64(40+i%5), float64(50-i%7)
		x.Num[i], y.Num[i] = x.Den[i]-float64(i%3), y.Den[i]-float64((i*7)%4)
	}
	e := DiffOfRatios(x, y, 0.9)
	var want float64
	var dfs []float64
	var vs []float64
	for _, r := range []Ratio{x, y} {
		var sn, sd float64
		for i := range r.Num {
			sn += r.Num[i]
			sd += r.Den[i]
		}
		R := sn / sd
		var ss float64
		for g := range 4 {
			var s float64
			for i := 4 * g; i < 4*g+4; i++ {
				s += r.Num[i] - R*r.Den[i]
			}
			ss += s * s
		}
		v := 4.0 / 3.0 * ss / (sd * sd)
		vs = append(vs, v)
		dfs = append(dfs, 3)
		if want == 0 {
			want = R
		} else {
			want -= R
		}
	}
	if math.Abs(e.Point-want) > 1e-15 {
		t.Errorf("Point %g, want %g", e.Point, want)
	}
	nu := math.Pow(vs[0]+vs[1], 2) / (vs[0]*vs[0]/dfs[0] + vs[1]*vs[1]/dfs[1])
	half := tQuantile(0.95, nu) * math.Sqrt(vs[0]+vs[1])
	if math.Abs((e.CI.Hi-e.CI.Lo)/2-half) > 1e-12 {
		t.Errorf("half-width %g, want %g", (e.CI.Hi-e.CI.Lo)/2, half)
	}
	if math.Abs(e.SE*zTwoSided(0.9)-half) > 1e-12 {
		t.Errorf("SE %g is not the normal-equivalent of the half-width %g", e.SE, half)
	}
	l := LogRatioOfRatios(x, y, 0.9)
	if l.CI.Lo > l.Point || l.CI.Hi < l.Point || l.Method != "delta-batchmeans-log" {
		t.Errorf("log ratio %+v", l)
	}
}

func TestRatioDegenerate(t *testing.T) {
	few := Ratio{Num: []float64{1, 2, 3}, Den: []float64{2, 2, 4}}
	ok := Ratio{Num: make([]float64, 20), Den: make([]float64, 20)}
	for i := range ok.Num {
		ok.Num[i], ok.Den[i] = float64(i%4), 4
	}
	zero := Ratio{Num: make([]float64, 20), Den: make([]float64, 20)}
	tests := []struct {
		name      string
		x, y      Ratio
		pointNaN  bool
		unbounded bool
	}{
		{"too few buckets", few, ok, false, true},
		{"no denominator", zero, ok, true, true},
		{"mismatched lengths", Ratio{Num: []float64{1}, Den: []float64{1, 2}}, ok, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, e := range []Estimate{DiffOfRatios(tt.x, tt.y, 0.9), LogRatioOfRatios(tt.x, tt.y, 0.9)} {
				if math.IsNaN(e.Point) != tt.pointNaN || tt.unbounded && !math.IsInf(e.CI.Hi, 1) {
					t.Errorf("%s: %+v", e.Method, e)
				}
				if NonInferiority(e.CI, 0.01) != Inconclusive {
					t.Errorf("%s: degenerate data decided a gate", e.Method)
				}
			}
		})
	}
}

func TestBlockBootstrapDeterministicAndCircular(t *testing.T) {
	stat := func(idx [][]int) float64 {
		var s float64
		for _, v := range idx[0] {
			s += float64(v)
		}
		return s + 1000*float64(idx[1][0])
	}
	a := BlockBootstrap([]int{10, 7}, []int{3, 2}, 50, 42, stat)
	b := BlockBootstrap([]int{10, 7}, []int{3, 2}, 50, 42, stat)
	c := BlockBootstrap([]int{10, 7}, []int{3, 2}, 50, 43, stat)
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Error("same seed must repeat and another seed must differ")
	}
	// block = n: every resample is a rotation, so the sum of indices is fixed
	BlockBootstrap([]int{10}, []int{10}, 20, 1, func(idx [][]int) float64 {
		s := 0
		for i, v := range idx[0] {
			if i > 0 && v != (idx[0][i-1]+1)%10 {
				t.Fatalf("not a circular block: %v", idx[0])
			}
			s += v
		}
		if s != 45 {
			t.Fatalf("rotation sum %d", s)
		}
		return 0
	})
	if BlockBootstrap([]int{0}, []int{1}, 10, 1, stat) != nil {
		t.Error("empty arm must give nil")
	}
}

func TestBlockLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	white := make([]float64, 500)
	ar := make([]float64, 500)
	a := 0.0
	for i := range white {
		white[i] = rng.NormFloat64()
		a = 0.9*a + rng.NormFloat64()
		ar[i] = a
	}
	lw, la := BlockLength(white), BlockLength(ar)
	if lw > 3 || la < 8 || la > int(math.Ceil(3*math.Sqrt(500))) {
		t.Errorf("block length: white noise %d (want ≤ 3), AR(1) 0.9 %d (want ≥ 8)", lw, la)
	}
	if BlockLength([]float64{1, 2, 3}) != 1 || BlockLength(make([]float64, 50)) != 1 {
		t.Error("short or constant series must give 1")
	}
}

func TestQuantileRankTolerance(t *testing.T) {
	// 0.99·100 must give rank 99, not 100, whatever the rounding of the product.
	for _, tt := range []struct {
		q    float64
		w    int64
		want int64
	}{{0.99, 100, 99}, {0.95, 20, 19}, {0.5, 10, 5}, {0.5, 11, 6}, {0.999, 1, 1}, {0.001, 5, 1}, {0.7, 10, 7}} {
		if got := rankOf(tt.q, tt.w); got != tt.want {
			t.Errorf("rankOf(%g, %d) = %d, want %d", tt.q, tt.w, got, tt.want)
		}
	}
}

func TestQuantileLogRatio(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	mk := func(scale float64) [][]float64 {
		out := make([][]float64, 60)
		for b := range out {
			for range 40 {
				out[b] = append(out[b], scale*math.Exp(0.5*rng.NormFloat64()))
			}
		}
		out[7] = nil // an empty bucket
		return out
	}
	x, y := mk(1.2), mk(1)
	e := QuantileLogRatio(x, y, 0.95, 0.9, 500, 7)
	e2 := QuantileLogRatio(x, y, 0.95, 0.9, 500, 7)
	if e != e2 {
		t.Error("not deterministic")
	}
	if !(e.CI.Lo < math.Log(1.2) && math.Log(1.2) < e.CI.Hi) || e.CI.Lo <= 0 || e.Method != "block-bootstrap" {
		t.Errorf("20%% slower canary: %+v, want an interval above 0 around %.3f", e, math.Log(1.2))
	}
	for name, bad := range map[string]Estimate{
		"q = 1":        QuantileLogRatio(x, y, 1, 0.9, 100, 1),
		"empty arm":    QuantileLogRatio(nil, y, 0.5, 0.9, 100, 1),
		"non-positive": QuantileLogRatio([][]float64{{-1, -2}}, y, 0.5, 0.9, 100, 1),
	} {
		if !math.IsNaN(bad.Point) || NonInferiority(bad.CI, 0.05) != Inconclusive {
			t.Errorf("%s: %+v", name, bad)
		}
	}
	few := QuantileLogRatio(x[:5], y[:5], 0.5, 0.9, 100, 1)
	if math.IsNaN(few.Point) || !math.IsInf(few.CI.Hi, 1) {
		t.Errorf("5 buckets: %+v, want a point and an unbounded interval", few)
	}
}

func TestMinDetectableEffect(t *testing.T) {
	// statistics.md §3.13: p = 0.99, 2000 requests per arm, α = 0.05,
	// power 0.8 → MDE ≈ 0.78 pp.
	se := math.Sqrt(2 * 0.99 * 0.01 / 2000)
	if got := MinDetectableEffect(se, 0.05, 0.8); math.Abs(got-0.0078) > 0.00005 {
		t.Errorf("MDE = %.5f, want ≈ 0.0078", got)
	}
	if !math.IsNaN(MinDetectableEffect(se, 0, 0.8)) {
		t.Error("alpha = 0 must give NaN")
	}
}

func TestHodgesLehmannAfter(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for trial := range 100 {
		x, y := make([]float64, 1+rng.IntN(40)), make([]float64, 1+rng.IntN(40))
		for i := range x {
			x[i] = math.Floor(rng.NormFloat64() * float64(1+trial%4))
		}
		for i := range y {
			y[i] = math.Floor(rng.NormFloat64() * 2)
		}
		var d []float64
		for _, a := range x {
			for _, b := range y {
				d = append(d, a-b)
			}
		}
		slices.Sort(d)
		sel := newDiffSelector(sortedCopy(x), sortedCopy(y))
		for k := int64(1); k < int64(len(d)); k++ {
			if got := sel.after(d[k-1], k); got != d[k] {
				t.Fatalf("trial %d: after(%g, %d) = %g, want %g", trial, d[k-1], k, got, d[k])
			}
		}
	}
}

func TestDiffOfProportionsFloor(t *testing.T) {
	perfect := Ratio{Num: make([]float64, 8), Den: make([]float64, 8)}
	for i := range perfect.Num {
		perfect.Num[i], perfect.Den[i] = 2, 2
	}
	if d := DiffOfRatios(perfect, perfect, 0.9); d.CI.Lo != 0 || d.CI.Hi != 0 {
		t.Fatalf("ratio of constant buckets: %+v, want a zero-width interval", d)
	}
	d := DiffOfProportions(perfect, perfect, 0.9)
	if NonInferiority(Interval{-d.CI.Hi, -d.CI.Lo}, 0.01) != Inconclusive || d.Method != "delta-batchmeans-wilsonfloor" {
		t.Errorf("16/16 vs 16/16 good: %+v, want an inconclusive 1 pp gate", d)
	}
	// with plenty of clustered variation the floor is inactive and the result
	// equals DiffOfRatios
	rng := rand.New(rand.NewPCG(1, 1))
	sc := aaScenario{buckets: 120, phi: 0.8, sd: 0.03, p0: 0.9, requestsPerBkt: 40}
	x, y := sc.arm(rng), sc.arm(rng)
	if a, b := DiffOfProportions(x, y, 0.9), DiffOfRatios(x, y, 0.9); a != b {
		t.Errorf("floor applied to clustered data: %+v vs %+v", a, b)
	}
}

// TestMannWhitneyCompleteSeparation reproduces benchstat's table of the
// smallest attainable two-sided p for n vs n (judges.md §2.2): 2/C(2n, n).
func TestMannWhitneyCompleteSeparation(t *testing.T) {
	want := map[int]float64{2: 0.3333, 3: 0.1, 4: 0.028571, 5: 0.0079365, 6: 0.0021645, 7: 0.00058275, 8: 0.0001554, 9: 4.1135e-5}
	for n, p := range want {
		x, y := make([]float64, n), make([]float64, n)
		for i := range n {
			x[i], y[i] = float64(100+i), float64(i)
		}
		r := MannWhitney(x, y)
		if math.Abs(r.P-p) > 2e-4*p || r.U != float64(n*n) { // table rounded to 4–5 digits
			t.Errorf("n = %d: U = %g, p = %.7g, want U = %d, p = %.7g", n, r.U, r.P, n*n, p)
		}
	}
}
