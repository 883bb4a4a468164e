package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPersistenceWideningReference checks the closed-form batch moments,
// the widening and StretchDF against testdata/persistence.json (make_persistence.py:
// dense numpy matrices over the buckets, scipy's t quantiles).
func TestPersistenceWideningReference(t *testing.T) {
	var ref struct {
		Cases []struct {
			B      int     `json:"b"`
			Phi    float64 `json:"phi"`
			Conf   float64 `json:"conf"`
			R      float64 `json:"r"`
			Nu     float64 `json:"nu"`
			Factor float64 `json:"factor"`
		} `json:"cases"`
		Unpaired []struct {
			B      int     `json:"b"`
			Phi    float64 `json:"phi"`
			Conf   float64 `json:"conf"`
			Factor float64 `json:"factor"`
		} `json:"unpaired"`
		Stretches []struct {
			Q, M int
			Phi  float64 `json:"phi"`
			Nu   float64 `json:"nu"`
		} `json:"stretches"`
	}
	readTestdata(t, "persistence.json", &ref)
	if len(ref.Cases) < 80 {
		t.Fatalf("%d reference cases, want 90", len(ref.Cases))
	}
	widened := 0
	for _, c := range ref.Cases {
		q, lag := batchLayout(c.B)
		r, nu := batchMoments(c.B, q, lag, c.Phi)
		if math.Abs(r-c.R) > 1e-9*c.R || math.Abs(nu-c.Nu) > 1e-9*c.Nu {
			t.Errorf("b %d φ %g: r %.12g ν %.12g, want %.12g %.12g", c.B, c.Phi, r, nu, c.R, c.Nu)
		}
		// the t quantiles are this package's own (checked elsewhere to
		// 1e-6 against scipy)
		f := PersistenceWidening(c.B, c.Phi, c.Conf)
		if math.Abs(f-c.Factor) > 1e-6*c.Factor {
			t.Errorf("b %d φ %g conf %g: factor %.9g, want %.9g", c.B, c.Phi, c.Conf, f, c.Factor)
		}
		if c.Factor > 1.1 {
			widened++
		}
	}
	if widened < 30 {
		t.Errorf("only %d reference cases widen by more than 10%%: the reference checks little", widened)
	}
	if len(ref.Unpaired) < 15 {
		t.Fatalf("%d unpaired cases, want 15", len(ref.Unpaired))
	}
	for _, c := range ref.Unpaired {
		for _, method := range []string{"delta-batchmeans", "standardized-delta-batchmeans-log"} {
			if f := PersistenceWideningOf(method, c.B, c.Phi, c.Conf); math.Abs(f-c.Factor) > 1e-6*c.Factor {
				t.Errorf("%s b %d φ %g: %.9g, want %.9g", method, c.B, c.Phi, f, c.Factor)
			}
		}
	}
	// every other method takes the paired layout
	for _, method := range []string{"paired-delta-lagwindow", "paired-delta-batchmeans-log", "block-bootstrap+sectioning-hull"} {
		if a, b := PersistenceWideningOf(method, 180, 0.95, 0.9), PersistenceWidening(180, 0.95, 0.9); a != b {
			t.Errorf("%s: %g, want the paired layout's %g", method, a, b)
		}
	}
	if len(ref.Stretches) < 20 {
		t.Fatalf("%d stretch cases, want 20", len(ref.Stretches))
	}
	for _, c := range ref.Stretches {
		if nu := StretchDF(c.Q, c.M, c.Phi); math.Abs(nu-c.Nu) > 1e-9*c.Nu {
			t.Errorf("StretchDF(%d, %d, %g) = %.12g, want %.12g", c.Q, c.M, c.Phi, nu, c.Nu)
		}
	}
}

// TestPersistenceWideningShape: no declared persistence gives 1; the
// factor grows with φ and shrinks as the run grows; a 30-minute run under
// a five-minute correlation time needs more than half again the width.
func TestPersistenceWideningShape(t *testing.T) {
	for _, c := range []struct {
		b         int
		phi, conf float64
	}{{180, 0, 0.95}, {180, -0.3, 0.95}, {180, 1, 0.95}, {1, 0.9, 0.95}, {180, 0.9, 1}, {180, math.NaN(), 0.95}} {
		if f := PersistenceWidening(c.b, c.phi, c.conf); f != 1 {
			t.Errorf("b %d φ %g conf %g: %g, want 1", c.b, c.phi, c.conf, f)
		}
	}
	prev := 1.0
	for _, phi := range []float64{0.9, 0.95, 0.98, 0.99} {
		f := PersistenceWidening(180, phi, 0.95)
		if !(f > prev) {
			t.Errorf("φ %g: %g not above %g", phi, f, prev)
		}
		prev = f
	}
	if a, b := PersistenceWidening(180, 0.95, 0.95), PersistenceWidening(720, 0.95, 0.95); !(a > b) {
		t.Errorf("30 min %g not wider than 2 h %g", a, b)
	}
	if f := PersistenceWidening(180, PersistencePhi(10, 300), 0.95); !(f > 1.5) {
		t.Errorf("τ 5 min on 30 min: %g, want > 1.5", f)
	}
	if p := PersistencePhi(10, 0); p != 0 {
		t.Errorf("PersistencePhi(10, 0) = %g", p)
	}
	// PersistenceTau inverts it
	for _, tau := range []float64{45, 195, 495} {
		if got := PersistenceTau(10, PersistencePhi(10, tau)); math.Abs(got-tau) > 1e-9*tau {
			t.Errorf("PersistenceTau(PersistencePhi(%g)) = %g", tau, got)
		}
	}
	if PersistenceTau(10, 0) != 0 || !math.IsInf(PersistenceTau(10, 1), 1) {
		t.Errorf("PersistenceTau at φ 0 and 1: %g, %g", PersistenceTau(10, 0), PersistenceTau(10, 1))
	}
}

// TestSegmentInflationAt: the declared floor is the fitted factor's own
// formula at a = 1, 1 where nothing is declared.
func TestSegmentInflationAt(t *testing.T) {
	segs := [][2]int{{0, 22}, {22, 44}, {44, 66}, {66, 88}, {88, 110}, {110, 132}, {132, 154}, {154, 176}}
	if k := SegmentInflationAt(segs, 0); k != 1 {
		t.Errorf("φ 0: %g", k)
	}
	if k := SegmentInflationAt(segs[:2], 0.95); k != 1 {
		t.Errorf("2 segments: %g", k)
	}
	if a, b := SegmentInflationAt(segs, 0.95), segmentInflation(segs, 0.95, 1); a != b || !(a > 2) {
		t.Errorf("φ 0.95: %g against %g (want > 2)", a, b)
	}
}

// TestStretchDF: q − 1 without persistence (and by the moments at φ 0, as
// for iid batch sums), fewer the longer slowdowns last against the
// stretch, at least 1.
func TestStretchDF(t *testing.T) {
	if nu := StretchDF(6, 30, 0); nu != 5 {
		t.Errorf("φ 0: %g, want 5", nu)
	}
	if _, nu := batchMoments(6*30, 6, false, 0); math.Abs(nu-5) > 1e-12 {
		t.Errorf("moments at φ 0: ν %g, want 5", nu)
	}
	prev := 5.0
	for _, phi := range []float64{0.5, 0.8, 0.95, 0.98} {
		nu := StretchDF(6, 30, phi)
		if !(nu < prev) || nu < 1 {
			t.Errorf("φ %g: ν %g, want in [1, %g)", phi, nu, prev)
		}
		prev = nu
	}
	if a, b := StretchDF(60, 3, 0.95), StretchDF(6, 30, 0.95); !(a < 59) || !(b < 5) {
		t.Errorf("φ 0.95: 60 stretches of 3 ν %g, 6 of 30 ν %g", a, b)
	}
	if !math.IsNaN(StretchDF(1, 30, 0.9)) {
		t.Error("one stretch has no spread")
	}
}

// arHalves is two halves of one arm over n buckets: den requests a
// bucket, good share 0.9 plus each half's own AR(1) of coefficient phi
// (stationary sd sd) plus the share both halves see (a wave that
// cancels), plus binomial-like white noise of sd white.
func arHalves(rng *rand.Rand, n int, phi, sd, white float64) (x, y Ratio) {
	mk := func() Ratio {
		return Ratio{Num: make([]float64, n), Den: make([]float64, n)}
	}
	x, y = mk(), mk()
	var ex, ey float64
	innov := sd * math.Sqrt(1-phi*phi)
	ex, ey = sd*rng.NormFloat64(), sd*rng.NormFloat64()
	for t := range n {
		wave := 0.03 * math.Sin(float64(t)/500)
		ex = phi*ex + innov*rng.NormFloat64()
		ey = phi*ey + innov*rng.NormFloat64()
		x.Den[t], y.Den[t] = 200, 200
		x.Num[t] = 200 * (0.9 + wave + ex + white*rng.NormFloat64())
		y.Num[t] = 200 * (0.9 + wave + ey + white*rng.NormFloat64())
	}
	return x, y
}

// TestFitPersistence: on 1,000 windows of 30 minutes the fit finds an
// AR(1) slowdown's persistence, reads white noise as none,
// and its interval for κ holds the truth about as often as it says
// (200 seeded histories at φ 0.95; reported with its Monte Carlo error).
func TestFitPersistence(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const b = 180
	q, lag := batchLayout(b)
	r0, _ := batchMoments(b, q, lag, 0)
	r, _ := batchMoments(b, q, lag, 0.95)
	truth := r0 / r
	// a long history (1,000 windows: the log of κ within 5% at one SE)
	x, y := arHalves(rng, 1000*b, 0.95, 0.02, 0)
	fit, ok := FitPersistence(x, y, b, 0.9)
	if !ok || fit.Windows != 1000 {
		t.Fatalf("fit %+v ok %v", fit, ok)
	}
	if math.Abs(fit.Kappa/truth-1) > 0.15 || math.Abs(fit.Phi-0.95) > 0.01 || !(fit.PhiLo < fit.Phi && fit.Phi < fit.PhiHi) {
		t.Errorf("φ 0.95 (κ %.2f) read as %.3f [%.3f, %.3f] (κ %.2f [%.2f, %.2f])", truth, fit.Phi, fit.PhiLo, fit.PhiHi, fit.Kappa, fit.KappaLo, fit.KappaHi)
	}
	x, y = arHalves(rng, 100*b, 0.95, 0, 0.02)
	if fit, ok := FitPersistence(x, y, b, 0.9); !ok || fit.PhiLo > 0 || fit.KappaLo > 1 {
		t.Errorf("white noise read as φ %.3f [%.3f, %.3f], κ %.2f [%.2f, %.2f]", fit.Phi, fit.PhiLo, fit.PhiHi, fit.Kappa, fit.KappaLo, fit.KappaHi)
	}
	// one arm alone: its load wave counts as persistence
	x, _ = arHalves(rng, 100*b, 0.5, 0.01, 0.01)
	if fit, ok := FitPersistence(x, Ratio{}, b, 0.9); !ok || !(fit.Kappa > 2) {
		t.Errorf("one arm with its wave: κ %.2f, want it read as persistence", fit.Kappa)
	}
	// too short a history
	x, y = arHalves(rng, 7*b, 0.9, 0.02, 0)
	if _, ok := FitPersistence(x, y, b, 0.9); ok {
		t.Error("7 windows fitted")
	}
	// coverage of the κ interval
	held, below := 0, 0
	const reps = 200
	for range reps {
		x, y := arHalves(rng, 40*b, 0.95, 0.02, 0)
		fit, ok := FitPersistence(x, y, b, 0.9)
		if ok && fit.KappaLo <= truth && truth <= fit.KappaHi {
			held++
		}
		if fit.Kappa < truth {
			below++
		}
	}
	t.Logf("κ read below the truth in %d of %d histories", below, reps)
	c := float64(held) / reps
	t.Logf("κ %.3f held by %d of %d 90%% intervals on 40 windows (%.1f%% ± %.1f)", truth, held, reps, 100*c, 100*math.Sqrt(c*(1-c)/reps))
	if c < 0.8 {
		t.Errorf("κ interval holds the truth in %.0f%% of histories, nominal 90%%", 100*c)
	}
}

// TestARMeanVar: 1/m without persistence, the closed form against a direct
// double sum, near 1 when the correlation outlasts the values.
func TestARMeanVar(t *testing.T) {
	if v := ARMeanVar(6, 0); math.Abs(v-1.0/6) > 1e-15 {
		t.Errorf("φ 0: %g", v)
	}
	for _, phi := range []float64{0.5, 0.9, 0.98} {
		for _, m := range []int{1, 3, 30} {
			var s float64
			for i := range m {
				for j := range m {
					s += math.Pow(phi, math.Abs(float64(i-j)))
				}
			}
			if v := ARMeanVar(m, phi); math.Abs(v-s/float64(m*m)) > 1e-12 {
				t.Errorf("m %d φ %g: %g, want %g", m, phi, v, s/float64(m*m))
			}
		}
	}
	if v := ARMeanVar(6, 0.99); !(v > 0.95) {
		t.Errorf("six values of φ 0.99: %g", v)
	}
	if !math.IsNaN(ARMeanVar(0, 0.5)) || !math.IsNaN(ARMeanVar(3, 1)) {
		t.Error("bad input not NaN")
	}
}
