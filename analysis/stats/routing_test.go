package stats

import "testing"

// TestRoutingEvennessReference checks RoutingEvenness against
// testdata/routing.json (make_routing.py: each bucket's chi-square from
// scipy.stats.chisquare) on routers of four kinds and a replica that joins
// late, and that the ratio tells them apart: about 1 at random, well
// below 1 for round-robin and join-the-shortest-queue, above 1 for sticky
// clumps.
func TestRoutingEvennessReference(t *testing.T) {
	type refCase struct {
		Name    string
		Offered [][]float64
		Ratio   float64
		PEven   float64 `json:"p_even"`
		Buckets int
	}
	var ref struct {
		Cases []refCase
		Short refCase
	}
	readTestdata(t, "routing.json", &ref)
	if len(ref.Cases) == 0 {
		t.Fatal("no reference cases")
	}
	counts := func(o [][]float64) []ReplicaCounts {
		out := make([]ReplicaCounts, len(o))
		for r := range o {
			out[r] = ReplicaCounts{Offered: o[r]}
		}
		return out
	}
	band := map[string][2]float64{
		"random-4": {0.8, 1.2}, "random-2-unequal": {0.8, 1.2}, "late-joiner-4": {0.8, 1.2},
		"round-robin-4": {0, 0.2}, "shortest-queue-4": {0, 0.4}, "sticky-3": {2, 10},
	}
	for _, c := range ref.Cases {
		r, ok := RoutingEvenness(counts(c.Offered))
		got := r.Ratio
		if !ok || r.Buckets != c.Buckets || !within(got, c.Ratio, 1e-9, 1e-15) || !within(r.PEven, c.PEven, 1e-6, 1e-300) {
			t.Errorf("%s: ratio %g, p %g over %d buckets (ok %v), want %g, %g over %d", c.Name, got, r.PEven, r.Buckets, ok, c.Ratio, c.PEven, c.Buckets)
		}
		if b, found := band[c.Name]; !found || got < b[0] || got > b[1] {
			t.Errorf("%s: ratio %g outside the band %v its router should give", c.Name, got, b)
		}
	}
	if r, ok := RoutingEvenness(counts(ref.Short.Offered)); ok || r.Buckets != ref.Short.Buckets {
		t.Errorf("%d buckets: read a router (%d buckets counted), want no answer below %d", ref.Short.Buckets, r.Buckets, MinRoutingBuckets)
	}
	if _, ok := RoutingEvenness(counts(ref.Cases[0].Offered[:1])); ok {
		t.Error("one replica: read a router")
	}
}
