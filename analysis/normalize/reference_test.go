package normalize

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
)

// reference is testdata/reference.json, written by testdata/make_reference.py
// with numpy and scipy from the estimators' definitions.
type reference struct {
	Standardize []struct {
		Name     string
		Conf     float64
		Names    []string
		Canary   struct{ Num, Den [][]float64 }
		Baseline struct{ Num, Den [][]float64 }
		Weights  map[string][]float64
		Explicit map[string]float64
		ThetaC   float64 `json:"theta_canary"`
		ThetaB   float64 `json:"theta_baseline"`
		Diff     refInterval
		Log      refInterval
		Naive    refInterval
	}
	CUPED []struct {
		Conf             float64
		Canary, Baseline struct{ Outcome, Covariate []float64 }
		Theta            float64
		CovariateMean    float64 `json:"covariate_mean"`
		Correlation      float64
		AdjMeanCanary    float64 `json:"adj_mean_canary"`
		AdjMeanBaseline  float64 `json:"adj_mean_baseline"`
		VarCanary        float64 `json:"var_canary"`
		AdjVarCanary     float64 `json:"adj_var_canary"`
		VarBaseline      float64 `json:"var_baseline"`
		AdjVarBaseline   float64 `json:"adj_var_baseline"`
		Unadjusted       refInterval
		Adjusted         refInterval
	}
	Warmup []struct {
		Series    []*float64
		MSERD     int     `json:"mser_d"`
		MSERSE2   float64 `json:"mser_se2"`
		MSERSE20  float64 `json:"mser_se2_0"`
		CUSUMK    int     `json:"cusum_k"`
		CUSUMStat float64 `json:"cusum_stat"`
	}
	SRM []struct {
		Canary, Baseline, Share, Chi2, P float64
	}
}

type refInterval struct{ Point, SE, Lo, Hi float64 }

func loadReference(t *testing.T) reference {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r reference
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

const refTol = 1e-9

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if d := math.Abs(got - want); !(d <= refTol*math.Max(1, math.Abs(want))) {
		t.Errorf("%s = %.15g, want %.15g (diff %.3g)", what, got, want, d)
	}
}

func nearEstimate(t *testing.T, what string, got stats.Estimate, want refInterval) {
	t.Helper()
	near(t, what+" point", got.Point, want.Point)
	near(t, what+" SE", got.SE, want.SE)
	near(t, what+" lo", got.CI.Lo, want.Lo)
	near(t, what+" hi", got.CI.Hi, want.Hi)
}

func TestReferenceStandardize(t *testing.T) {
	for _, c := range loadReference(t).Standardize {
		t.Run(c.Name, func(t *testing.T) {
			x := Strata{Names: c.Names, Num: c.Canary.Num, Den: c.Canary.Den}
			y := Strata{Names: c.Names, Num: c.Baseline.Num, Den: c.Baseline.Den}
			for _, mode := range []string{MixBaseline, MixCanary, MixPooled, MixWeights} {
				w, err := Weights(mode, x, y, c.Explicit)
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				for i := range w {
					near(t, mode+" weight "+c.Names[i], w[i], c.Weights[mode][i])
				}
			}
			w := c.Weights[MixBaseline]
			res, err := Standardize(x, y, w, c.Conf)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "θ canary", res.Canary, c.ThetaC)
			near(t, "θ baseline", res.Baseline, c.ThetaB)
			nearEstimate(t, "standardized difference", res.Adjusted, c.Diff)
			nearEstimate(t, "naive difference", res.Naive, c.Naive)
			lg, err := StandardizeLog(x, y, w, c.Conf)
			if err != nil {
				t.Fatal(err)
			}
			nearEstimate(t, "standardized log ratio", lg.Adjusted, c.Log)
		})
	}
}

func TestReferenceCUPED(t *testing.T) {
	for i, c := range loadReference(t).CUPED {
		res, err := CUPED(Covariate{c.Canary.Outcome, c.Canary.Covariate}, Covariate{c.Baseline.Outcome, c.Baseline.Covariate}, c.Conf)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		near(t, "θ", res.Theta, c.Theta)
		near(t, "X̄", res.CovariateMean, c.CovariateMean)
		near(t, "ρ", res.Correlation, c.Correlation)
		near(t, "adjusted mean canary", res.Canary.AdjustedMean, c.AdjMeanCanary)
		near(t, "adjusted mean baseline", res.Baseline.AdjustedMean, c.AdjMeanBaseline)
		near(t, "var canary", res.Canary.Var, c.VarCanary)
		near(t, "adjusted var canary", res.Canary.AdjustedVar, c.AdjVarCanary)
		near(t, "var baseline", res.Baseline.Var, c.VarBaseline)
		near(t, "adjusted var baseline", res.Baseline.AdjustedVar, c.AdjVarBaseline)
		nearEstimate(t, "unadjusted", res.Unadjusted, c.Unadjusted)
		nearEstimate(t, "adjusted", res.Adjusted, c.Adjusted)
	}
}

func TestReferenceWarmupStatistics(t *testing.T) {
	for i, c := range loadReference(t).Warmup {
		s := make([]float64, len(c.Series))
		for j, v := range c.Series {
			s[j] = math.NaN()
			if v != nil {
				s[j] = *v
			}
		}
		w := Warmup(s, WarmupOptions{})
		if w.MSERCut != c.MSERD*DefaultBatch {
			t.Errorf("case %d: MSER cut %d, want %d", i, w.MSERCut, c.MSERD*DefaultBatch)
		}
		near(t, "MSER SE²(d*)", w.MSERSE*w.MSERSE, c.MSERSE2)
		near(t, "MSER SE²(0)", w.MSERSE0*w.MSERSE0, c.MSERSE20)
		if w.Change != c.CUSUMK*DefaultBatch {
			t.Errorf("case %d: changepoint at bucket %d, want %d", i, w.Change, c.CUSUMK*DefaultBatch)
		}
		near(t, "CUSUM statistic", w.CUSUM, c.CUSUMStat)
	}
}

func TestReferenceSRM(t *testing.T) {
	for _, c := range loadReference(t).SRM {
		r := SRM(c.Canary, c.Baseline, c.Share)
		near(t, "χ²", r.Chi2, c.Chi2)
		near(t, "p", r.P, c.P)
		if r.Mismatch != (c.P < SRMThreshold) {
			t.Errorf("%v/%v at share %v: mismatch %v with p %g", c.Canary, c.Baseline, c.Share, r.Mismatch, c.P)
		}
	}
}
