package analysis

import (
	"errors"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestStrayTimeRefused (hardening item 3): one record at ts 0, in the year
// 4999 or a year off, or perf_counter seconds merged with unix times, made
// bucketTime allocate one bucket per 10 s of the whole span (out of memory,
// or minutes for a year). Whatever a source let through, the span is now
// refused with a DataError before anything is allocated for it.
func TestStrayTimeRefused(t *testing.T) {
	base := synth{n: 2000, rate: 20, ttftMed: 0.3, tpotMed: 0.04, seed: 1}
	for _, tc := range []struct {
		name string
		ts   float64
	}{
		{"ts 0", 0},
		{"year 4999", 95649120000},
		{"a year off", 1.7e9 - 365*86400},
		{"perf_counter beside unix", 81234.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			can := synth{n: 2000, rate: 20, ttftMed: 0.3, tpotMed: 0.04, seed: 2}.dataset(sources.Canary)
			can.Requests[700].Time = tc.ts
			_, err := Judge(base.dataset(sources.Baseline), can, Config{Policy: chat(t), Resamples: 400})
			var de *DataError
			if !errors.As(err, &de) || de.Arm != sources.Canary || !strings.Contains(err.Error(), "a record far from the rest") {
				t.Fatalf("got %v, want a DataError on the canary's span", err)
			}
		})
	}
}
