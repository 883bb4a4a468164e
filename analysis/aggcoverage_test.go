package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// withTracks gives an arm four replica tracks on its slice grid, editing
// replica 1's with edit (NaN = no samples).
func withTracks(ds *sources.Dataset, edit func(tr []float64)) *sources.Dataset {
	n := len(ds.Agg.Buckets)
	for r := 0; r < 4; r++ {
		tr := make([]float64, n)
		for k := range tr {
			tr[k] = 40
		}
		if r == 1 && edit != nil {
			edit(tr)
		}
		name := string(ds.Arm) + "-" + string(rune('0'+r))
		ds.Agg.Replicas = append(ds.Agg.Replicas, sources.ReplicaTrack{Name: `{pod="` + name + `"}`,
			Series: `{deployment="` + string(ds.Arm) + `",pod="` + name + `"}`, Finished: tr})
	}
	return ds
}

// TestCoverageDecides: with gates that pass on their own, partial answers,
// a hole in a replica's series and a canary replica that stops reporting
// are never a pass; a baseline replica lost mid-window is reported, not
// blamed; arms sharing a series are refused.
func TestCoverageDecides(t *testing.T) {
	p := chat(t)
	lost := func(tr []float64) {
		for k := len(tr) / 2; k < len(tr); k++ {
			tr[k] = math.NaN()
		}
	}
	hole := func(tr []float64) {
		for k := 30; k < 40; k++ {
			tr[k] = math.NaN()
		}
	}
	for _, tc := range []struct {
		name       string
		b, c       func(tr []float64)
		partial    string
		want       Verdict
		reason     string
		normalized string
	}{
		{"intact", nil, nil, "", Pass, "", ""},
		{"partial answer", nil, nil, "store eu-1 down", Inconclusive, "data incomplete", ""},
		{"hole in a baseline replica", hole, nil, "", Inconclusive, "has no samples from", ""},
		{"canary replica lost", nil, lost, "", Inconclusive, "a canary replica went missing", ""},
		{"baseline replica lost", lost, nil, "", Pass, "", "stopped reporting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := withTracks(aggArmData(sources.Baseline, 1, 120, 0.04, true), tc.b)
			c := withTracks(aggArmData(sources.Canary, 2, 120, 0.04, true), tc.c)
			if tc.partial != "" {
				c.Agg.Partial = []string{tc.partial}
			}
			r, err := Judge(b, c, Config{Policy: p, Resamples: 300})
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != tc.want || !strings.Contains(strings.Join(r.Reasons, "\n"), tc.reason) {
				t.Errorf("verdict %s, want %s with %q: %q", r.Verdict, tc.want, tc.reason, r.Reasons)
			}
			var steps []string
			for _, s := range r.Normalization.Steps {
				steps = append(steps, s.Detail)
			}
			if !strings.Contains(strings.Join(steps, "\n"), tc.normalized) {
				t.Errorf("normalization lacks %q: %q", tc.normalized, steps)
			}
		})
	}
	t.Run("overlapping series refused", func(t *testing.T) {
		b := withTracks(aggArmData(sources.Baseline, 1, 40, 0.04, true), nil)
		c := withTracks(aggArmData(sources.Canary, 2, 40, 0.04, true), nil)
		c.Agg.Replicas[2].Series = b.Agg.Replicas[0].Series
		if _, err := Judge(b, c, Config{Policy: p, Resamples: 300}); err == nil || !strings.Contains(err.Error(), "pick the same series") {
			t.Errorf("error = %v", err)
		}
	})
}
