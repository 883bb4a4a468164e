package sources

import (
	"fmt"
	"math"
	"testing"
)

// TestReplicaSpansInFlight: a replica's requests in flight at each
// slice's end are those started up to it less those ended up to it, NaN
// outside its span of service; a replica that only ever had requests of
// unknown end-to-end latency reads 0; the grid twice as wide (Widen) and
// two halves merged (Merge) count as the whole built at once.
func TestReplicaSpansInFlight(t *testing.T) {
	type req struct {
		rep        string
		start, end int64 // end < 0: end-to-end latency unknown
	}
	reqs := []req{
		{"a", 0, 0}, {"a", 0, 2}, {"a", 1, 5}, {"a", 3, 3}, {"a", 5, 9},
		{"b", 2, 3}, {"b", 2, -1}, {"b", 4, 4},
		{"c", 1, -1}, {"c", 5, -1},
	}
	build := func(rs []req) ReplicaSpans {
		s := ReplicaSpans{}
		for _, r := range rs {
			s.Add(r.rep, r.start, 1, 1, 0)
			if r.end >= 0 {
				s.AddFlights(r.rep, r.start, r.end, 1, 1)
			}
		}
		return s
	}
	nan := math.NaN()
	want := map[string][]float64{
		// a: slice 0 starts 2 ends 1 → 1; 1: +1 → 2; 2: −1 → 1; 3: +1 −1 → 1;
		// 4: 1; 5: +1 −1 → 1 (the request to slice 9 is still in flight)
		`{replica="a"}`: {1, 2, 1, 1, 1, 1},
		// b serves slices 2..4 (its first slice is not within one of the
		// edge): 2: +1 → 1; 3: −1 → 0; 4: +1 −1 → 0
		`{replica="b"}`: {nan, nan, 1, 0, 0, 0},
		`{replica="c"}`: {0, 0, 0, 0, 0, 0},
	}
	check := func(what string, s ReplicaSpans, lo, hi int64, want map[string][]float64) {
		t.Helper()
		_, tracks := s.Tracks(lo, hi)
		if len(tracks) != len(want) {
			t.Fatalf("%s: %d tracks, want %d", what, len(tracks), len(want))
		}
		for _, tr := range tracks {
			if got, w := fmt.Sprint(tr.InFlight), fmt.Sprint(want[tr.Name]); got != w {
				t.Errorf("%s: %s in flight %s, want %s", what, tr.Name, got, w)
			}
		}
	}
	check("built at once", build(reqs), 0, 5, want)
	half := build(reqs[:4])
	half.Merge(build(reqs[4:]))
	check("merged", half, 0, 5, want)
	wide := build(reqs)
	wide.Widen()
	check("widened", wide, 0, 2, map[string][]float64{
		// slices 0–1, 2–3, 4–5 of the fine grid; b's first slice is
		// now within one of the edge, so its span reaches it
		`{replica="a"}`: {2, 1, 1},
		`{replica="b"}`: {0, 0, 0},
		`{replica="c"}`: {0, 0, 0},
	})
	// without any flight every track's InFlight is nil
	none := ReplicaSpans{}
	none.Add("a", 0, 1, 1, 1)
	none.Add("a", 3, 1, 1, 1)
	if _, tracks := none.Tracks(0, 3); tracks[0].InFlight != nil {
		t.Errorf("no end-to-end latency known: in flight %v, want none", tracks[0].InFlight)
	}
	// flights of a replica Add never placed make no track
	ghost := build(reqs)
	ghost.AddFlights("ghost", 1, 2, 1, 1)
	if _, tracks := ghost.Tracks(0, 5); len(tracks) != 3 {
		t.Errorf("%d tracks with a replica only flights name, want 3", len(tracks))
	}
}
