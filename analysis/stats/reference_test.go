package stats

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// jf is a JSON number that may also be "NaN", "+Inf" or "-Inf".
type jf float64

func (v *jf) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		f, err := strconv.ParseFloat(s, 64)
		*v = jf(f)
		return err
	}
	var f float64
	err := json.Unmarshal(b, &f)
	*v = jf(f)
	return err
}

type refCase struct {
	Name string                     `json:"name"`
	Kind string                     `json:"kind"`
	In   map[string]json.RawMessage `json:"in"`
	Want map[string]json.RawMessage `json:"want"`
	Tol  float64                    `json:"tol"`
	Note string                     `json:"note"`
}

type refFile struct {
	Generator string    `json:"generator"`
	Scipy     string    `json:"scipy"`
	Cases     []refCase `json:"cases"`
}

func loadReference(t *testing.T) refFile {
	t.Helper()
	var rf refFile
	readTestdata(t, "reference.json", &rf)
	return rf
}

// readTestdata decodes testdata/name (reference values written by
// testdata/make_<name>.py with scipy) into v, failing the test with how to
// regenerate it when it cannot.
func readTestdata(t *testing.T, name string, v any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading reference values: %v (regenerate with /usr/bin/python3 testdata/make_%s.py)", err, strings.TrimSuffix(name, ".json"))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("testdata/%s: %v", name, err)
	}
}

func get[T any](t *testing.T, m map[string]json.RawMessage, key string) T {
	t.Helper()
	var v T
	raw, ok := m[key]
	if !ok {
		t.Fatalf("reference case lacks %q", key)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("reference key %q: %v", key, err)
	}
	return v
}

// close reports whether got agrees with want to relative tolerance tol (NaN
// matches NaN, infinities match by sign, values below 1e-300 in magnitude
// count as 0).
func closeTo(got, want, tol float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0):
		return got == want
	case math.Abs(got) < 1e-300 && math.Abs(want) < 1e-300:
		return true
	}
	return math.Abs(got-want) <= tol*math.Max(math.Abs(want), math.Abs(got))
}

func floats(v []jf) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = float64(f)
	}
	return out
}

// TestReference checks every function against the values that
// testdata/make_reference.py computed with scipy/numpy (never called from
// here). Tolerance 1e-9 relative unless a case states its own.
func TestReference(t *testing.T) {
	rf := loadReference(t)
	if len(rf.Cases) < 40 {
		t.Fatalf("reference.json has %d cases, want ≥ 40", len(rf.Cases))
	}
	kinds := map[string]int{}
	for _, c := range rf.Cases {
		kinds[c.Kind]++
		t.Run(c.Name, func(t *testing.T) {
			tol := 1e-9
			if c.Tol > 0 {
				tol = c.Tol
			}
			check := func(what string, got float64, key string) {
				t.Helper()
				want := float64(get[jf](t, c.Want, key))
				if !closeTo(got, want, tol) {
					t.Errorf("%s = %.17g, reference %.17g (rel err %.3g) [%s]", what, got, want, math.Abs(got-want)/math.Abs(want), c.Note)
				}
			}
			switch c.Kind {
			case "mannwhitney":
				x, y := floats(get[[]jf](t, c.In, "x")), floats(get[[]jf](t, c.In, "y"))
				r := MannWhitney(x, y)
				check("U", r.U, "u")
				check("P", r.P, "p")
				check("PLess", r.PLess, "p_less")
				check("PGreater", r.PGreater, "p_greater")
				if want := get[bool](t, c.Want, "exact"); r.Exact != want {
					t.Errorf("Exact = %v, want %v", r.Exact, want)
				}
			case "hodgeslehmann":
				x, y := floats(get[[]jf](t, c.In, "x")), floats(get[[]jf](t, c.In, "y"))
				conf := float64(get[jf](t, c.In, "conf"))
				est, ci := HodgesLehmann(x, y, conf)
				check("estimate", est, "est")
				check("Lo", ci.Lo, "lo")
				check("Hi", ci.Hi, "hi")
				n1, n2 := int64(len(x)), int64(len(y))
				if got, want := hlRank(n1, n2, conf, zTwoSided(conf)), get[int64](t, c.Want, "k"); got != want {
					t.Errorf("rank k = %d, want %d", got, want)
				}
			case "wilson":
				ci := Wilson(float64(get[jf](t, c.In, "k")), float64(get[jf](t, c.In, "n")), float64(get[jf](t, c.In, "conf")))
				check("Lo", ci.Lo, "lo")
				check("Hi", ci.Hi, "hi")
			case "newcombe":
				ci := NewcombeDiff(float64(get[jf](t, c.In, "k1")), float64(get[jf](t, c.In, "n1")),
					float64(get[jf](t, c.In, "k2")), float64(get[jf](t, c.In, "n2")), float64(get[jf](t, c.In, "conf")))
				check("Lo", ci.Lo, "lo")
				check("Hi", ci.Hi, "hi")
			case "fisher":
				r := FisherExact(get[int64](t, c.In, "a"), get[int64](t, c.In, "b"), get[int64](t, c.In, "c"), get[int64](t, c.In, "d"))
				check("PTwoSided", r.PTwoSided, "p_two")
				check("PLess", r.PLess, "p_less")
				check("PGreater", r.PGreater, "p_greater")
				check("OddsRatio", r.OddsRatio, "odds_ratio")
			case "welch":
				x, y := floats(get[[]jf](t, c.In, "x")), floats(get[[]jf](t, c.In, "y"))
				r := Welch(x, y, float64(get[jf](t, c.In, "conf")))
				check("T", r.T, "t")
				check("P", r.P, "p")
				check("DF", r.DF, "df")
				check("Diff", r.Diff, "diff")
				check("CI.Lo", r.CI.Lo, "lo")
				check("CI.Hi", r.CI.Hi, "hi")
			case "srm":
				chi2, p := SRM(floats(get[[]jf](t, c.In, "observed")), floats(get[[]jf](t, c.In, "share")))
				check("chi2", chi2, "chi2")
				check("p", p, "p")
			case "failp":
				check("p", FailPValue(float64(get[jf](t, c.In, "point")), float64(get[jf](t, c.In, "se")), float64(get[jf](t, c.In, "threshold"))), "p")
			case "multiplicity":
				p := floats(get[[]jf](t, c.In, "p"))
				holm, bh := Holm(p), BH(p)
				wantH, wantB := floats(get[[]jf](t, c.Want, "holm")), floats(get[[]jf](t, c.Want, "bh"))
				for i := range p {
					if !closeTo(holm[i], wantH[i], tol) || !closeTo(bh[i], wantB[i], tol) {
						t.Errorf("p[%d]=%g: Holm %g (want %g), BH %g (want %g)", i, p[i], holm[i], wantH[i], bh[i], wantB[i])
					}
				}
			case "quantile_point":
				var x, y [][]float64
				for _, b := range get[[][]jf](t, c.In, "x") {
					x = append(x, floats(b))
				}
				for _, b := range get[[][]jf](t, c.In, "y") {
					y = append(y, floats(b))
				}
				e := QuantileLogRatio(x, y, float64(get[jf](t, c.In, "q")), 0.9, 200, 1)
				check("Point", e.Point, "point")
			case "poisson_rate_lower":
				check("PoissonRateLower", PoissonRateLower(float64(get[jf](t, c.In, "k")), float64(get[jf](t, c.In, "exposure")), float64(get[jf](t, c.In, "alpha"))), "lower")
			default:
				t.Fatalf("unknown reference kind %q", c.Kind)
			}
		})
	}
	t.Logf("%d reference cases from %s (scipy %s): %v", len(rf.Cases), rf.Generator, rf.Scipy, kinds)
}
