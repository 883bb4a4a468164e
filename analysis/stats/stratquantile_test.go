package stats

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestStratifiedQuantileReference checks the mixture quantile against
// testdata/stratquantile.json (make_stratquantile.py: the mixture CDF
// evaluated at every value with numpy). The samples of each case are
// spread over 10 buckets in turn, so bucketing cannot matter.
func TestStratifiedQuantileReference(t *testing.T) {
	var ref struct {
		Cases []struct {
			Weights []float64          `json:"weights"`
			Strata  [][]float64        `json:"strata"`
			Want    map[string]float64 `json:"want"`
		} `json:"cases"`
	}
	readTestdata(t, "stratquantile.json", &ref)
	for ci, c := range ref.Cases {
		x, sx := make([][]float64, 10), make([][]int32, 10)
		k := 0
		for s, vs := range c.Strata {
			for _, v := range vs {
				x[k%10] = append(x[k%10], v)
				sx[k%10] = append(sx[k%10], int32(s))
				k++
			}
		}
		for qs, want := range c.Want {
			q, _ := strconv.ParseFloat(qs, 64)
			if got := StratifiedQuantile(x, sx, c.Weights, q); got != want {
				t.Errorf("case %d q %g: %g, want %g", ci, q, got, want)
			}
		}
	}
}

// TestStratifiedQuantileLogRatio: one stratum only gives the plain
// quantile comparison's point; a pure shift of the mix between strata of
// different latency moves the naive p90 but not the stratified one; and
// the interval holds the point.
func TestStratifiedQuantileLogRatio(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(slowShare float64) ([][]float64, [][]int32) {
		x, s := make([][]float64, 60), make([][]int32, 60)
		for b := range x {
			for range 80 {
				st := int32(0)
				v := 0.1 * math.Exp(0.3*rng.NormFloat64())
				if rng.Float64() < slowShare {
					st, v = 1, 0.5*math.Exp(0.3*rng.NormFloat64())
				}
				x[b], s[b] = append(x[b], v), append(s[b], st)
			}
		}
		return x, s
	}
	yb, sb := gen(0.35)
	xc, sc := gen(0.10)
	w := []float64{0.65, 0.35}
	naive := QuantileLogRatio(xc, yb, 0.9, 0.9, 400, 1)
	est := StratifiedQuantileLogRatio(xc, yb, sc, sb, w, w, 0.9, 0.9, 400, 1)
	if !(naive.Point < -0.5) {
		t.Errorf("the mix shift should move the naive p90 a lot: %+v", naive)
	}
	if math.Abs(est.Point) > 0.05 || !(est.CI.Lo <= est.Point && est.Point <= est.CI.Hi) || est.CI.Hi-est.CI.Lo > 0.2 {
		t.Errorf("stratified p90 ratio %+v, want ≈ 0 with a finite interval", est)
	}
	one := func(x [][]float64) [][]int32 {
		s := make([][]int32, len(x))
		for b := range x {
			s[b] = make([]int32, len(x[b]))
		}
		return s
	}
	plain := QuantileLogRatio(xc, yb, 0.99, 0.9, 200, 2)
	single := StratifiedQuantileLogRatio(xc, yb, one(xc), one(yb), []float64{1}, []float64{1}, 0.99, 0.9, 200, 2)
	if plain.Point != single.Point {
		t.Errorf("one stratum: %g, plain %g", single.Point, plain.Point)
	}
	if bad := StratifiedQuantileLogRatio(xc, yb, sc[:3], sb, w, w, 0.9, 0.9, 10, 1); !math.IsNaN(bad.Point) {
		t.Errorf("mismatched strata slices gave %+v", bad)
	}
}
