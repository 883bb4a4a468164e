package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestPairedReference checks the paired estimators against
// testdata/paired.json (make_paired.py: numpy batch sums, scipy's t
// quantile).
func TestPairedReference(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "paired.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			NumX []float64 `json:"num_x"`
			DenX []float64 `json:"den_x"`
			NumY []float64 `json:"num_y"`
			DenY []float64 `json:"den_y"`
			Conf float64   `json:"conf"`
			Want map[string][3]float64
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	for i, c := range ref.Cases {
		x, y := Ratio{c.NumX, c.DenX}, Ratio{c.NumY, c.DenY}
		for name, est := range map[string]Estimate{"diff": PairedDiffOfRatios(x, y, c.Conf), "log": PairedLogRatioOfRatios(x, y, c.Conf)} {
			w := c.Want[name]
			for k, got := range []float64{est.Point, est.CI.Lo, est.CI.Hi} {
				if math.Abs(got-w[k]) > 1e-10*math.Max(1, math.Abs(w[k])) {
					t.Errorf("case %d %s: got %g %v, want %v", i, name, est.Point, est.CI, w)
					break
				}
			}
		}
	}
}

// TestPairedCancelsSharedWave: two arms that share a strong wave in time
// and differ only by binomial noise. Pairing gives an interval much
// narrower than the independent-arms one, and still covers 0 at about the
// nominal rate (2000 replicates, 6 batches with t on 5 df).
func TestPairedCancelsSharedWave(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const reps, b = 2000, 180
	miss, narrower := 0, 0
	for r := 0; r < reps; r++ {
		phase := rng.Float64() * 6
		x, y := Ratio{make([]float64, b), make([]float64, b)}, Ratio{make([]float64, b), make([]float64, b)}
		for i := 0; i < b; i++ {
			p := 0.93 + 0.05*math.Sin(float64(i)/20+phase)
			for _, a := range []*Ratio{&x, &y} {
				n := 150 + rng.IntN(100)
				k := 0
				for range n {
					if rng.Float64() < p {
						k++
					}
				}
				a.Num[i], a.Den[i] = float64(k), float64(n)
			}
		}
		pe := PairedDiffOfRatios(x, y, 0.9)
		ie := DiffOfRatios(x, y, 0.9)
		if pe.CI.Lo > 0 || pe.CI.Hi < 0 {
			miss++
		}
		if pe.CI.Hi-pe.CI.Lo < 0.7*(ie.CI.Hi-ie.CI.Lo) {
			narrower++
		}
	}
	cover := 1 - float64(miss)/reps
	if cover < 0.88 || cover > 0.95 {
		t.Errorf("paired coverage %.3f at nominal 0.90", cover)
	}
	if narrower < reps*9/10 {
		t.Errorf("pairing narrowed the interval in only %d of %d replicates", narrower, reps)
	}
}
