package normalize

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
	"gonum.org/v1/gonum/stat/distuv"
)

// mixArm generates one arm's bucket-level attainment data: b consecutive
// 10 s buckets, Poisson(rate) offered requests per bucket split across the
// classes by share, and Binomial(offered, p) good requests per class, where
// each class's attainment p moves with a load wave shared by all classes
// (AR(1) with coefficient phi, amplitude sd), so buckets are autocorrelated.
type mixArm struct {
	buckets  int
	rate     float64   // offered requests per bucket
	share    []float64 // class mix, sums to 1
	p        []float64 // per-class attainment
	phi, sd  float64
	classNms []string
}

func (m mixArm) gen(rng *rand.Rand) Strata {
	k := len(m.share)
	s := Strata{Names: m.classNms, Num: make([][]float64, k), Den: make([][]float64, k)}
	for c := range k {
		s.Num[c] = make([]float64, m.buckets)
		s.Den[c] = make([]float64, m.buckets)
	}
	a := rng.NormFloat64()
	for t := range m.buckets {
		if t > 0 {
			a = m.phi*a + math.Sqrt(1-m.phi*m.phi)*rng.NormFloat64()
		}
		for c := range k {
			n := distuv.Poisson{Lambda: m.rate * m.share[c], Src: rng}.Rand()
			p := math.Min(1, math.Max(0, m.p[c]+m.sd*a))
			g := 0.0
			if n > 0 {
				g = distuv.Binomial{N: n, P: p, Src: rng}.Rand()
			}
			s.Num[c][t], s.Den[c][t] = g, n
		}
	}
	return s
}

var twoClasses = []string{"short", "long"}

// harm of attainment (higher is better): baseline − canary.
func harm(e stats.Estimate) stats.Interval { return stats.Interval{Lo: -e.CI.Hi, Hi: -e.CI.Lo} }

// TestMixShiftAlone: the canary gets twice the baseline's share of long
// prompts (which meet the SLO less often) with identical per-class
// attainment. The naive attainment difference is beyond the 1 pp margin and
// would fail the gate; standardised to the baseline's mix the interval covers
// 0 and the gate passes.
func TestMixShiftAlone(t *testing.T) {
	const conf, margin = 0.90, 0.01
	rng := rand.New(rand.NewPCG(2026, 11))
	base := mixArm{buckets: 180, rate: 60, share: []float64{0.8, 0.2}, p: []float64{0.97, 0.80}, phi: 0.8, sd: 0.01, classNms: twoClasses}
	can := base
	can.share = []float64{0.6, 0.4}
	x, y := can.gen(rng), base.gen(rng)
	w, err := Weights(MixBaseline, x, y, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Standardize(x, y, w, conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("mix canary %.3f baseline %.3f; naive %+.4f [%+.4f, %+.4f]; standardized %+.4f [%+.4f, %+.4f]",
		res.CanaryMix, res.BaselineMix, res.Naive.Point, res.Naive.CI.Lo, res.Naive.CI.Hi,
		res.Adjusted.Point, res.Adjusted.CI.Lo, res.Adjusted.CI.Hi)
	if !(res.Naive.Point < -margin) || stats.NonInferiority(harm(res.Naive), margin) != stats.Fail {
		t.Errorf("naive difference %+.4f [%+.4f, %+.4f] should be beyond the −1 pp margin and fail", res.Naive.Point, res.Naive.CI.Lo, res.Naive.CI.Hi)
	}
	if !(res.Adjusted.CI.Lo < 0 && res.Adjusted.CI.Hi > 0) {
		t.Errorf("standardized interval [%+.4f, %+.4f] should cover 0", res.Adjusted.CI.Lo, res.Adjusted.CI.Hi)
	}
	if d := stats.NonInferiority(harm(res.Adjusted), margin); d != stats.Pass {
		t.Errorf("standardized gate %s, want pass", d)
	}
	if math.Abs(res.CanaryMix[1]-0.4) > 0.03 || math.Abs(res.BaselineMix[1]-0.2) > 0.03 {
		t.Errorf("mixes %v / %v, want long share ≈0.4 / ≈0.2", res.CanaryMix, res.BaselineMix)
	}
	if res.Adjusted.Method != "standardized-delta-batchmeans" || res.Naive.Method != "delta-batchmeans" {
		t.Errorf("methods %q / %q", res.Adjusted.Method, res.Naive.Method)
	}
}

// TestMixCoverageAA: with the mix shift and identical per-class
// attainment, the standardized 90% interval covers the true difference (0)
// in at least 1 − 2α − 2·MCSE of runs, for every reference mix, with
// bucket-correlated data (AR(1) φ = 0.8); the naive interval does not.
func TestMixCoverageAA(t *testing.T) {
	const (
		conf = 0.90
		reps = 400
	)
	rng := rand.New(rand.NewPCG(99, 5))
	base := mixArm{buckets: 120, rate: 50, share: []float64{0.8, 0.2}, p: []float64{0.96, 0.85}, phi: 0.8, sd: 0.015, classNms: twoClasses}
	can := base
	can.share = []float64{0.6, 0.4}
	modes := []string{MixBaseline, MixCanary, MixPooled}
	covered := map[string]int{}
	naive := 0
	for range reps {
		x, y := can.gen(rng), base.gen(rng)
		for _, m := range modes {
			w, err := Weights(m, x, y, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Standardize(x, y, w, conf)
			if err != nil {
				t.Fatal(err)
			}
			if res.Adjusted.CI.Lo <= 0 && res.Adjusted.CI.Hi >= 0 {
				covered[m]++
			}
			if m == MixBaseline && res.Naive.CI.Lo <= 0 && res.Naive.CI.Hi >= 0 {
				naive++
			}
		}
	}
	bound := conf - 2*math.Sqrt(conf*(1-conf)/reps)
	for _, m := range modes {
		c := float64(covered[m]) / reps
		t.Logf("%s mix: standardized coverage %.4f over %d runs (bound %.4f)", m, c, reps, bound)
		if c < bound {
			t.Errorf("%s mix: coverage %.4f < %.4f", m, c, bound)
		}
	}
	t.Logf("naive coverage of 0: %.4f", float64(naive)/reps)
	if float64(naive)/reps > 0.5 {
		t.Errorf("naive interval covers 0 in %.3f of runs; the mix shift should bias it", float64(naive)/reps)
	}
}

// lognormalCDF is P(X ≤ v) for X lognormal with median m and log-sd s.
func lognormalCDF(v, m, s float64) float64 {
	return 0.5 * math.Erfc(-math.Log(v/m)/(s*math.Sqrt2))
}

// TestMaskedRegression: the canary's TPOT is 15% worse in every class, but
// it receives far more short prompts, whose requests meet the 80 ms TPOT SLO
// more often. The naive attainment difference looks harmless; standardized
// to the baseline's mix it shows the harm and fails the 1 pp margin.
func TestMaskedRegression(t *testing.T) {
	const conf, margin, slo = 0.90, 0.01, 0.080
	// per-class TPOT: lognormal, median 50 ms (short) and 65 ms (long), log-sd 0.3
	medians := []float64{0.050, 0.065}
	pBase := []float64{lognormalCDF(slo, medians[0], 0.3), lognormalCDF(slo, medians[1], 0.3)}
	pCan := []float64{lognormalCDF(slo, medians[0]*1.15, 0.3), lognormalCDF(slo, medians[1]*1.15, 0.3)}
	rng := rand.New(rand.NewPCG(15, 15))
	base := mixArm{buckets: 180, rate: 60, share: []float64{0.5, 0.5}, p: pBase, phi: 0.8, sd: 0.01, classNms: twoClasses}
	can := base
	can.share, can.p = []float64{0.95, 0.05}, pCan
	x, y := can.gen(rng), base.gen(rng)
	w, err := Weights(MixBaseline, x, y, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Standardize(x, y, w, conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("per-class attainment baseline %.3f, canary %.3f", pBase, pCan)
	t.Logf("naive %+.4f [%+.4f, %+.4f] → %s; standardized %+.4f [%+.4f, %+.4f] → %s",
		res.Naive.Point, res.Naive.CI.Lo, res.Naive.CI.Hi, stats.NonInferiority(harm(res.Naive), margin),
		res.Adjusted.Point, res.Adjusted.CI.Lo, res.Adjusted.CI.Hi, stats.NonInferiority(harm(res.Adjusted), margin))
	if d := stats.NonInferiority(harm(res.Naive), margin); d == stats.Fail {
		t.Errorf("naive gate %s: the favourable mix should mask the regression", d)
	}
	if d := stats.NonInferiority(harm(res.Adjusted), margin); d != stats.Fail {
		t.Errorf("standardized gate %s, want fail", d)
	}
	for i := range res.CanaryRatio {
		if !(res.CanaryRatio[i] < res.BaselineRatio[i]) {
			t.Errorf("class %s: canary attainment %.3f not below baseline %.3f", res.Names[i], res.CanaryRatio[i], res.BaselineRatio[i])
		}
	}
}

// TestStandardizeOneStratum: with a single stratum the standardized
// comparison is stats.DiffOfRatios (and LogRatioOfRatios).
func TestStandardizeOneStratum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	m := mixArm{buckets: 50, rate: 30, share: []float64{1}, p: []float64{0.9}, phi: 0.5, sd: 0.02, classNms: []string{"all"}}
	x, y := m.gen(rng), m.gen(rng)
	res, err := Standardize(x, y, []float64{1}, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	want := stats.DiffOfRatios(x.Pooled(), y.Pooled(), 0.9)
	for _, p := range [][2]float64{{res.Adjusted.Point, want.Point}, {res.Adjusted.SE, want.SE}, {res.Adjusted.CI.Lo, want.CI.Lo}, {res.Adjusted.CI.Hi, want.CI.Hi}} {
		if math.Abs(p[0]-p[1]) > 1e-12 {
			t.Errorf("standardized %v, DiffOfRatios %v", res.Adjusted, want)
		}
	}
	lg, err := StandardizeLog(x, y, []float64{1}, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	wl := stats.LogRatioOfRatios(x.Pooled(), y.Pooled(), 0.9)
	if math.Abs(lg.Adjusted.Point-wl.Point) > 1e-12 || math.Abs(lg.Adjusted.SE-wl.SE) > 1e-12 {
		t.Errorf("log: standardized %v, LogRatioOfRatios %v", lg.Adjusted, wl)
	}
}

func TestStandardizeMissingAndSmallStrata(t *testing.T) {
	names := []string{"short", "medium", "long"}
	mk := func(good, offered [3]float64) Strata {
		s := Strata{Names: names}
		for c := range 3 {
			num, den := make([]float64, 10), make([]float64, 10)
			for b := range 10 {
				num[b], den[b] = good[c]/10, offered[c]/10
			}
			s.Num, s.Den = append(s.Num, num), append(s.Den, den)
		}
		return s
	}
	x := mk([3]float64{90, 40, 0}, [3]float64{100, 50, 0})  // canary: no long prompts
	y := mk([3]float64{180, 40, 5}, [3]float64{200, 50, 6}) // baseline: 6 long prompts

	w, err := Weights(MixBaseline, x, y, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Standardize(x, y, w, 0.9)
	var miss *MissingStrataError
	if !errors.As(err, &miss) || len(miss.Canary) != 1 || miss.Canary[0].Name != "long" || len(miss.Baseline) != 0 {
		t.Fatalf("err = %v, want the canary missing \"long\"", err)
	}
	if !strings.Contains(err.Error(), `the canary has no requests in "long" (weight 0.0234)`) || !strings.Contains(err.Error(), "collapse") {
		t.Errorf("message %q", err.Error())
	}

	// the canary's own mix gives "long" weight 0: allowed, and the
	// baseline's long requests are reported as dropped
	w, err = Weights(MixCanary, x, y, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Standardize(x, y, w, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Dropped, []string{"long"}) || len(res.Small) != 0 {
		t.Errorf("dropped %v small %v", res.Dropped, res.Small)
	}
	if !math.IsNaN(res.CanaryRatio[2]) || math.Abs(res.BaselineRatio[2]-5.0/6) > 1e-12 {
		t.Errorf("per-stratum ratios %v / %v", res.CanaryRatio, res.BaselineRatio)
	}
	// 10 buckets: enough for a variance (≥ 8)
	if math.IsInf(res.Adjusted.CI.Hi, 0) {
		t.Errorf("interval %v", res.Adjusted.CI)
	}

	// explicit weights that include long: small stratum flagged, missing in canary
	_, err = Standardize(x, y, []float64{0.5, 0.3, 0.2}, 0.9)
	if !errors.As(err, &miss) {
		t.Errorf("err = %v", err)
	}
	x2 := mk([3]float64{90, 40, 3}, [3]float64{100, 50, 4})
	res, err = Standardize(x2, y, []float64{0.5, 0.3, 0.2}, 0.9)
	if err != nil || !slices.Equal(res.Small, []string{"long"}) {
		t.Errorf("small %v, err %v", res.Small, err)
	}
}

func TestStandardizeInputErrors(t *testing.T) {
	ok := Strata{Names: []string{"a", "b"}, Num: [][]float64{{1, 2}, {1, 1}}, Den: [][]float64{{2, 2}, {1, 1}}}
	for _, c := range []struct {
		name string
		x, y Strata
		w    []float64
		want string
	}{
		{"names differ", ok, Strata{Names: []string{"a", "c"}, Num: ok.Num, Den: ok.Den}, []float64{0.5, 0.5}, "strata differ"},
		{"ragged", Strata{Names: ok.Names, Num: [][]float64{{1}, {1, 1}}, Den: ok.Den}, ok, []float64{0.5, 0.5}, `stratum "a" has 1/2 buckets`},
		{"rows", Strata{Names: ok.Names, Num: ok.Num[:1], Den: ok.Den}, ok, []float64{0.5, 0.5}, "2 names but 1 numerator"},
		{"NaN", Strata{Names: ok.Names, Num: [][]float64{{math.NaN(), 2}, {1, 1}}, Den: ok.Den}, ok, []float64{0.5, 0.5}, "bucket 0 has numerator NaN"},
		{"negative", ok, Strata{Names: ok.Names, Num: ok.Num, Den: [][]float64{{-2, 2}, {1, 1}}}, []float64{0.5, 0.5}, "baseline strata"},
		{"weight count", ok, ok, []float64{1}, "1 weights for 2 strata"},
		{"weight sum", ok, ok, []float64{0.5, 0.6}, "sum to 1.1"},
		{"negative weight", ok, ok, []float64{1.5, -0.5}, "weight -0.5"},
		{"no strata", Strata{}, ok, nil, "no strata"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Standardize(c.x, c.y, c.w, 0.9)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	// too few buckets: an estimate but no interval
	res, err := Standardize(ok, ok, []float64{0.5, 0.5}, 0.9)
	if err != nil || res.Adjusted.Point != 0 || !math.IsInf(res.Adjusted.CI.Hi, 1) || !math.IsInf(res.Adjusted.CI.Lo, -1) {
		t.Errorf("2 buckets: %+v, %v", res.Adjusted, err)
	}
}

func TestWeights(t *testing.T) {
	x := Strata{Names: []string{"a", "b"}, Num: [][]float64{{1}, {1}}, Den: [][]float64{{3}, {1}}}
	y := Strata{Names: []string{"a", "b"}, Num: [][]float64{{1}, {1}}, Den: [][]float64{{1}, {1}}}
	for _, c := range []struct {
		mode     string
		explicit map[string]float64
		want     []float64
		err      string
	}{
		{MixBaseline, nil, []float64{0.5, 0.5}, ""},
		{MixCanary, nil, []float64{0.75, 0.25}, ""},
		{MixPooled, nil, []float64{4.0 / 6, 2.0 / 6}, ""},
		{MixWeights, map[string]float64{"a": 1, "b": 3}, []float64{0.25, 0.75}, ""},
		{MixWeights, map[string]float64{"a": 1, "b": 0}, []float64{1, 0}, ""},
		{MixNone, nil, nil, ""},
		{MixWeights, map[string]float64{"a": 1}, nil, `no weight for class(es) "b"`},
		{MixWeights, map[string]float64{"a": 1, "b": 1, "zz": 1}, nil, `class(es) "zz" do not occur`},
		{MixWeights, map[string]float64{"a": 0, "b": 0}, nil, "sum to 0"},
		{MixWeights, map[string]float64{"a": -1, "b": 0}, nil, "want a finite number ≥ 0"},
		{"median", nil, nil, `unknown reference mix "median"`},
	} {
		w, err := Weights(c.mode, x, y, c.explicit)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %v: err %v, want %q", c.mode, c.explicit, err, c.err)
			}
			continue
		}
		if err != nil || len(w) != len(c.want) {
			t.Errorf("%s %v: %v, %v", c.mode, c.explicit, w, err)
			continue
		}
		for i := range w {
			if math.Abs(w[i]-c.want[i]) > 1e-15 {
				t.Errorf("%s %v: %v, want %v", c.mode, c.explicit, w, c.want)
			}
		}
	}
	if _, err := Weights(MixPooled, x, Strata{Names: []string{"b", "a"}}, nil); err == nil {
		t.Error("differently ordered strata accepted")
	}
}

func TestBand(t *testing.T) {
	for _, c := range []struct {
		p    int64
		want string
		i    int
	}{
		{0, "prompt <512", 1},
		{511, "prompt <512", 1},
		{512, "prompt 512-1k", 2},
		{1023, "prompt 512-1k", 2},
		{1024, "prompt 1k-2k", 3},
		{2048, "prompt 2k-4k", 4},
		{4095, "prompt 2k-4k", 4},
		{4096, "prompt 4k-8k", 5},
		{8192, "prompt 8k-16k", 6},
		{16383, "prompt 8k-16k", 6},
		{16384, "prompt >=16k", 7},
		{1 << 40, "prompt >=16k", 7},
		{-1, "prompt unknown", 0},
	} {
		if got, i := Band(c.p), BandIndex(c.p); got != c.want || i != c.i {
			t.Errorf("Band(%d) = %q (index %d), want %q (%d)", c.p, got, i, c.want, c.i)
		}
	}
	want := []string{"prompt <512", "prompt 512-1k", "prompt 1k-2k", "prompt 2k-4k", "prompt 4k-8k", "prompt 8k-16k", "prompt >=16k"}
	if bs := Bands(); !slices.Equal(bs, want) {
		t.Errorf("Bands() = %q, want %q", bs, want)
	}
}

// TestStandardizeOwnStrata checks strata kept at each arm's own share
// (Strata.Own): the standardized figure is (ΣNum_o + K·A)/D, computed here
// from the totals; an arm's extra failures in such a stratum count in full
// (folded into a standardized stratum they would count at its reference
// weight only); the influences are the numerical derivatives of θ with
// respect to each bucket's totals; and with no own traffic the result is
// that of the strata without the flag.
func TestStandardizeOwnStrata(t *testing.T) {
	names := []string{"chat", "long", "prompt unknown"}
	own := []bool{false, false, true}
	rng := rand.New(rand.NewPCG(3, 9))
	const nb = 60
	arm := func(shares []float64, good []float64) Strata {
		s := Strata{Names: names, Own: own, Num: make([][]float64, 3), Den: make([][]float64, 3)}
		for i := range names {
			s.Num[i], s.Den[i] = make([]float64, nb), make([]float64, nb)
			for t := range nb {
				n := math.Round(shares[i] * (150 + 30*rng.NormFloat64()))
				n = math.Max(n, 0)
				s.Den[i][t] = n
				s.Num[i][t] = math.Round(n * math.Min(1, math.Max(0, good[i]+0.03*rng.NormFloat64())))
			}
		}
		return s
	}
	// the baseline's requests without a prompt length are 1% and mostly
	// good; the canary's are 4%, its extra 3% all failed
	y := arm([]float64{0.7, 0.29, 0.01}, []float64{0.95, 0.85, 0.9})
	x := arm([]float64{0.68, 0.28, 0.04}, []float64{0.95, 0.85, 0.225})
	w, err := Weights(MixBaseline, x, y, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w[2] != 0 || math.Abs(w[0]+w[1]-1) > 1e-12 {
		t.Fatalf("weights %v: want 0 for the own stratum, the others summing to 1", w)
	}
	theta := func(s Strata) float64 {
		num, den := s.Totals()
		k := den[0] + den[1]
		a := w[0]*num[0]/den[0] + w[1]*num[1]/den[1]
		return (num[2] + k*a) / (k + den[2])
	}
	res, err := Standardize(x, y, w, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Canary - theta(x); math.Abs(d) > 1e-12 {
		t.Errorf("canary θ %v, want %v", res.Canary, theta(x))
	}
	if d := res.Adjusted.Point - (theta(x) - theta(y)); math.Abs(d) > 1e-12 {
		t.Errorf("difference %v, want %v", res.Adjusted.Point, theta(x)-theta(y))
	}
	// the harm is the canary's extra failed share (3% of its traffic,
	// less what its own 1% would have lost), not a fraction of it
	if res.Adjusted.Point > -0.025 {
		t.Errorf("difference %+.4f: the canary's extra 3%% failures are not counted in full", res.Adjusted.Point)
	}
	num, den := x.Totals()
	aw := ArmWeights(w, x.Own, den)
	sum, viaW := 0.0, 0.0
	for i := range aw {
		sum += aw[i]
		viaW += aw[i] * num[i] / den[i]
	}
	if math.Abs(sum-1) > 1e-12 || math.Abs(viaW-theta(x)) > 1e-12 {
		t.Errorf("ArmWeights %v: sum %v, Σ weight·ratio %v against θ %v", aw, sum, viaW, theta(x))
	}
	// the influence of bucket t is ∂θ/∂Num_{s,t}·(Num_{s,t}) summed the
	// linear way: θ(totals + h·bucket t) − θ(totals) over h, as h → 0
	num, den = x.Totals()
	ix, tx := influence(x, w, num, den)
	for _, tb := range []int{0, 17, 59} {
		const h = 1e-6
		bumped := Strata{Names: names, Own: own, Num: make([][]float64, 3), Den: make([][]float64, 3)}
		for i := range names {
			bumped.Num[i], bumped.Den[i] = slices.Clone(x.Num[i]), slices.Clone(x.Den[i])
			for t := range nb {
				scale := 1.0
				if t == tb {
					scale = 1 + h
				}
				bumped.Num[i][t] *= scale
				bumped.Den[i][t] *= scale
			}
		}
		want := (theta(bumped) - tx) / h
		got := ix.Num[tb] - tx/float64(nb)
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("bucket %d: influence %.9f, numerical derivative %.9f", tb, got, want)
		}
	}
	// without own traffic the flag changes nothing
	for _, s := range []*Strata{&x, &y} {
		for t := range nb {
			s.Num[2][t], s.Den[2][t] = 0, 0
		}
	}
	plain := func(s Strata) Strata {
		return Strata{Names: names[:2], Num: s.Num[:2], Den: s.Den[:2]}
	}
	w2, err := Weights(MixBaseline, plain(x), plain(y), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := StandardizePaired(x, y, w, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	b, err := StandardizePaired(plain(x), plain(y), w2, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(a.Adjusted.Point-b.Adjusted.Point) > 1e-12 || math.Abs(a.Adjusted.SE-b.Adjusted.SE) > 1e-12 {
		t.Errorf("no own traffic: %v, without the flag %v", a.Adjusted, b.Adjusted)
	}
}
