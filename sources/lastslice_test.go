package sources

import (
	"math"
	"testing"
)

// TestEndLastSliceAt: the last slice of an aggregate of records ends at the
// run's end, every cell of it alike, never before its start; a later end
// (a declared duration) takes the fragment past the boundary into it.
func TestEndLastSliceAt(t *testing.T) {
	// two cells in the last slice (100–110), one before it
	mk := func() []AggBucket {
		return []AggBucket{{Start: 90, End: 100}, {Start: 100, End: 110, Class: "a"}, {Start: 100, End: 110, Class: "b"}}
	}
	for _, tc := range []struct {
		name string
		end  float64
		want [3]float64 // each bucket's End
	}{
		{"the last arrival inside the last slice", 104.5, [3]float64{100, 104.5, 104.5}},
		{"on the slice's start: no seconds", 100, [3]float64{100, 100, 100}},
		{"before the slice's start is held at it", 99, [3]float64{100, 100, 100}},
		{"a declared duration past the grid's boundary: the fragment joins the slice", 113, [3]float64{100, 113, 113}},
		{"unknown", math.NaN(), [3]float64{100, 110, 110}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mk()
			EndLastSliceAt(b, tc.end)
			for i := range b {
				if b[i].End != tc.want[i] || b[i].Start != mk()[i].Start {
					t.Errorf("bucket %d: [%g, %g), want [%g, %g)", i, b[i].Start, b[i].End, mk()[i].Start, tc.want[i])
				}
			}
		})
	}
	EndLastSliceAt(nil, 5) // no buckets: nothing to do, no panic
}
