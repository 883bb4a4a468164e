package capacity

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/benchfile"
)

// reference holds the values of testdata/reference.py (numpy + scipy).
type reference struct {
	Sketches []struct {
		N      int64     `json:"n"`
		Probs  []float64 `json:"probs"`
		Values []float64 `json:"values"`
		Cases  []struct {
			X     float64 `json:"x"`
			Count int64   `json:"count"`
		} `json:"cases"`
	} `json:"sketches"`
	Fits []struct {
		Y, W, Fit []float64
	} `json:"fits"`
	Realdata struct {
		Baseline, Canary refArm
		Ratio            [2]float64 `json:"ratio"`
	} `json:"realdata"`
}

type refArm struct {
	Points []struct {
		Stage  int     `json:"stage"`
		Rate   float64 `json:"rate"`
		N      int64   `json:"n"`
		GoodLo int64   `json:"good_lo"`
		GoodHi int64   `json:"good_hi"`
		Lo, Hi float64
	} `json:"points"`
	Lower, Upper []float64
	Capacity     [2]float64 `json:"capacity"`
}

func loadReference(t *testing.T) reference {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref reference
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestCountBoundsContainExactCounts: from numpy's percentiles of seeded
// samples, the bounds on how many values are ≤ x always contain the exact
// count, and are exact when x falls on the extremes.
func TestCountBoundsContainExactCounts(t *testing.T) {
	ref := loadReference(t)
	checked, tight := 0, 0
	for _, s := range ref.Sketches {
		sk := sources.Sketch{Probs: s.Probs, Values: s.Values, Interpolation: "linear"}
		for _, c := range s.Cases {
			lo, hi := countBounds(sk, s.N, c.X)
			if c.Count < lo || c.Count > hi {
				t.Errorf("n=%d x=%v: exact count %d outside the bounds [%d, %d]", s.N, c.X, c.Count, lo, hi)
			}
			checked++
			if hi-lo <= int64(math.Ceil(0.25*float64(s.N)))+1 {
				tight++
			}
			// the looser reading for unknown interpolation must contain it too
			ul, uh := countBounds(sources.Sketch{Probs: s.Probs, Values: s.Values}, s.N, c.X)
			if c.Count < ul || c.Count > uh || ul > lo || uh < hi {
				t.Errorf("n=%d x=%v: unknown-interpolation bounds [%d, %d] do not contain [%d, %d] ∋ %d", s.N, c.X, ul, uh, lo, hi, c.Count)
			}
		}
	}
	if checked < 50 || tight == 0 {
		t.Fatalf("only %d cases checked (%d informative)", checked, tight)
	}
}

// TestPAVAMatchesConstrainedLeastSquares compares the pool-adjacent-violators
// fit with scipy's bounded least squares on the non-increasing cone.
func TestPAVAMatchesConstrainedLeastSquares(t *testing.T) {
	for i, f := range loadReference(t).Fits {
		got := PAVA(f.Y, f.W)
		for k := range got {
			if math.Abs(got[k]-f.Fit[k]) > 1e-7 {
				t.Errorf("fit %d: PAVA[%d] = %.10f, scipy %.10f", i, k, got[k], f.Fit[k])
			}
		}
	}
}

// TestRealSweepsMatchReference recomputes the real inference-perf
// comparison and checks bounds, Wilson limits, envelope, capacity intervals
// and the ratio interval against the independent script.
func TestRealSweepsMatchReference(t *testing.T) {
	ref := loadReference(t).Realdata
	read := func(arm string) []sources.RatePoint {
		dir := filepath.Join("..", "..", "testdata", "realdata", "inference-perf", arm)
		files, _ := filepath.Glob(filepath.Join(dir, "stage_*_lifecycle_metrics.json"))
		sort.Strings(files)
		var pts []sources.RatePoint
		for _, f := range files {
			r, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			p, err := benchfile.ReadSweep(context.Background(), f, r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			pts = append(pts, p...)
		}
		return pts
	}
	pol, err := policies.Load("chat")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compare(read("vllm"), read("vllm+quantization"), Config{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if got != want && math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %.12g, reference %.12g", what, got, want)
		}
	}
	for _, a := range []struct {
		name string
		got  *Arm
		want refArm
	}{{"baseline", &res.Baseline, ref.Baseline}, {"canary", &res.Canary, ref.Canary}} {
		if len(a.got.Points) != len(a.want.Points) {
			t.Fatalf("%s: %d points, reference %d", a.name, len(a.got.Points), len(a.want.Points))
		}
		for i, w := range a.want.Points {
			g := a.got.Points[i]
			near(a.name+" rate", g.Rate, w.Rate)
			if g.Offered != w.N || g.GoodLo != w.GoodLo || g.GoodHi != w.GoodHi {
				t.Errorf("%s stage %d: offered %d good [%d, %d], reference %d [%d, %d]", a.name, w.Stage, g.Offered, g.GoodLo, g.GoodHi, w.N, w.GoodLo, w.GoodHi)
			}
			near(a.name+" wilson lo", g.CI.Lo, w.Lo)
			near(a.name+" wilson hi", g.CI.Hi, w.Hi)
			near(a.name+" envelope lower", a.got.Fit.Lower[i], a.want.Lower[i])
			near(a.name+" envelope upper", a.got.Fit.Upper[i], a.want.Upper[i])
		}
		near(a.name+" capacity lo", a.got.Capacity.Lo, a.want.Capacity[0])
		near(a.name+" capacity hi", a.got.Capacity.Hi, a.want.Capacity[1])
	}
	near("ratio lo", res.RatioCI.Lo, ref.Ratio[0])
	near("ratio hi", res.RatioCI.Hi, ref.Ratio[1])
}
