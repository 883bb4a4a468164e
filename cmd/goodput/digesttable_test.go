package main

import (
	"math/rand/v2"
	"testing"
)

// TestDigestTable: the table holds the same counts as a map through
// growth, keep and repeated keys, with keys that share their low bits
// (long probe runs) as well as random ones.
func TestDigestTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		key  func(r *rand.Rand, i int) uint64
	}{
		{"random", func(r *rand.Rand, i int) uint64 { return r.Uint64() >> 3 << 3 }},
		{"same low bits", func(r *rand.Rand, i int) uint64 { return uint64(r.IntN(5000)) << 40 }},
		{"zero key", func(r *rand.Rand, i int) uint64 { return uint64(r.IntN(3)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var tab digestTable
			want := map[uint64]uint32{}
			for i := range 20000 {
				k := tc.key(r, i)
				c := uint32(1 + r.IntN(3))
				tab.add(k, c)
				want[k] += c
			}
			check := func(stage string) {
				t.Helper()
				if tab.len() != len(want) {
					t.Fatalf("%s: %d digests, want %d", stage, tab.len(), len(want))
				}
				got := map[uint64]uint32{}
				tab.each(func(k uint64, c uint32) { got[k] = c })
				for k, c := range want {
					if got[k] != c || tab.get(k) != c {
						t.Fatalf("%s: digest %#x counted %d (get %d), want %d", stage, k, got[k], tab.get(k), c)
					}
				}
				if tab.get(0xdeadbeefcafe) != want[0xdeadbeefcafe] {
					t.Fatalf("%s: an absent digest has a count", stage)
				}
			}
			check("filled")
			odd := func(k uint64) bool { return k>>40%2 == 1 || k%2 == 1 }
			tab.keep(odd)
			for k := range want {
				if !odd(k) {
					delete(want, k)
				}
			}
			check("kept")
		})
	}
}
