package analysis

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestLatencyUnits: a canary whose log wrote milliseconds where seconds
// are expected failed with "ttft_p99 +95150.0%" (the example arms); it is
// refused as input, naming the arm, every latency's medians and a jq line
// that converts the log, on both paths; so is an arm whose own latencies
// disagree by a unit step (one field in milliseconds). A real slowdown —
// all latencies ×2, or a queue that multiplies TTFT a thousandfold but
// not TPOT or E2E — is judged as before.
func TestLatencyUnits(t *testing.T) {
	scaled := func(ds *sources.Dataset, ttft, tpot, e2e float64) {
		for i := range ds.Requests {
			r := &ds.Requests[i]
			r.TTFT *= ttft
			r.TPOT *= tpot
			r.E2E *= e2e
			r.MaxITL *= tpot
		}
	}
	for _, tc := range []struct {
		name            string
		arm             sources.Arm
		ttft, tpot, e2e float64
		want            []string // in the error; none: judged
	}{
		{"canary in milliseconds", sources.Canary, 1000, 1000, 1000, []string{"canary: every latency is about 1000× the baseline's", "TTFT p50 ", "TPOT p50 ", "E2E p50 ", "writes milliseconds where seconds are expected", ".value /= 1000"}},
		{"baseline in microseconds", sources.Baseline, 1e6, 1e6, 1e6, []string{"baseline: every latency is about 1000000× the canary's", "microseconds", ".value /= 1000000"}},
		{"canary at 400× (within the slack of 1000)", sources.Canary, 400, 400, 400, []string{"about 1000×"}},
		{"canary at 250×", sources.Canary, 250, 250, 250, nil},
		{"canary twice as slow", sources.Canary, 2, 2, 2, nil},
		{"canary's queue: TTFT ×1000 alone", sources.Canary, 1000, 1, 1, nil},
		// one field in milliseconds: the arm's own latencies disagree
		// (latencyParts); TPOT's read 63 s a token and failed identical
		// builds by −95 pp
		{"TPOT ×1000 alone", sources.Canary, 1, 1000, 1, []string{"canary: its latencies disagree by about 1000×", "tpot_s in milliseconds"}},
		{"E2E ×1000 alone", sources.Baseline, 1, 1, 1000, []string{"baseline: its latencies disagree by about 1000×", "e2e_s in milliseconds"}},
		{"TTFT and TPOT ×1000, E2E as written", sources.Canary, 1000, 1000, 1, []string{"its latencies disagree by about 1000×"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd, cd := fleetArms(aaFleet(17), aaFleet(17), 17)
			ds := cd
			if tc.arm == sources.Baseline {
				ds = bd
			}
			scaled(ds, tc.ttft, tc.tpot, tc.e2e)
			cfg := Config{Policy: chat(t), Resamples: 200}
			ab, ac, err := StreamedArms(bd, cd, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for path, arms := range map[string][2]*sources.Dataset{"request path": {bd, cd}, "aggregate": {ab, ac}} {
				r, err := Judge(arms[0], arms[1], cfg)
				if tc.want == nil {
					if err != nil {
						t.Errorf("%s: %v", path, err)
					} else if r.Verdict == Pass && tc.ttft > 1 {
						t.Errorf("%s: a slower canary passed", path)
					}
					continue
				}
				var de *DataError
				if !errors.As(err, &de) || de.Arm != tc.arm {
					t.Fatalf("%s: error %v, want a DataError for the %s", path, err, tc.arm)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error lacks %q: %v", path, w, err)
					}
				}
			}
		})
	}
	if math.Abs(math.Log10(400)-3) > unitSlack || math.Abs(math.Log10(250)-3) <= unitSlack {
		t.Errorf("the cases above sit on the wrong sides of unitSlack %g", unitSlack)
	}
}
