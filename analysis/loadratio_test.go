package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
)

// TestLoadRatioTwoSidedLevel: offered_load_ratio fails in either direction,
// so a failure needs the interval at 1 − (1 − conf)/2 beyond the tolerance;
// an interval beyond it at the shown level only holds the check
// inconclusive. Without the split an even split failed up to twice as often
// as a one-sided gate (low-traffic A/A: 6.0 ± 1.7% fails over 200 runs).
func TestLoadRatioTwoSidedLevel(t *testing.T) {
	big := stats.Ratio{Num: []float64{1e6, 1e6}, Den: []float64{1e6, 1e6}}
	at := func(point float64, ivl map[float64][2]float64) func(float64) stats.Estimate {
		return func(conf float64) stats.Estimate {
			iv, ok := ivl[conf]
			if !ok {
				t.Fatalf("estimate asked at %v", conf)
			}
			return stats.Estimate{Point: point, SE: (iv[1] - iv[0]) / 4, CI: stats.Interval{Lo: iv[0], Hi: iv[1]}, Method: "test"}
		}
	}
	for _, tc := range []struct {
		name    string
		point   float64
		ivl     map[float64][2]float64
		verdict Verdict
		reason  string
	}{
		{"more, beyond at 95%", 0.10, map[float64][2]float64{0.90: {0.06, 0.14}, 0.95: {0.04, 0.16}}, Fail, "beyond ±3% at 95%"},
		{"more, beyond at 90% only", 0.10, map[float64][2]float64{0.90: {0.04, 0.16}, 0.95: {0.02, 0.18}}, Inconclusive, "but not at 95%"},
		{"less, beyond at 95%", -0.10, map[float64][2]float64{0.90: {-0.14, -0.06}, 0.95: {-0.16, -0.04}}, Fail, "offered less"},
		{"less, beyond at 90% only", -0.10, map[float64][2]float64{0.90: {-0.16, -0.04}, 0.95: {-0.18, -0.02}}, Inconclusive, "but not at 95%"},
		{"even", 0.0, map[float64][2]float64{0.90: {-0.01, 0.01}, 0.95: {-0.012, 0.012}}, Pass, "no sample-ratio mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := loadRatioEval(big, big, at(tc.point, tc.ivl), 0.90, "logged")
			if e.m.Verdict != tc.verdict || !strings.Contains(e.m.Reason, tc.reason) {
				t.Fatalf("verdict %s, reason %q; want %s with %q", e.m.Verdict, e.m.Reason, tc.verdict, tc.reason)
			}
			// the interval shown is the one at the report's level
			if got := math.Log1p(float64(e.m.Interval[0])); math.Abs(got-tc.ivl[0.90][0]) > 1e-12 {
				t.Fatalf("shown interval starts at %v, want the 90%% one %v", got, tc.ivl[0.90][0])
			}
		})
	}
}
