package stats

import (
	"math"
	"testing"
)

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
	cases, short := refCases[refCase](t, "routing.json")
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
	for _, c := range cases {
		r, ok := RoutingEvenness(counts(c.Offered))
		got := r.Ratio
		if !ok || r.Buckets != c.Buckets || !within(got, c.Ratio, 1e-9, 1e-15) || !within(r.PEven, c.PEven, 1e-6, 1e-300) {
			t.Errorf("%s: ratio %g, p %g over %d buckets (ok %v), want %g, %g over %d", c.Name, got, r.PEven, r.Buckets, ok, c.Ratio, c.PEven, c.Buckets)
		}
		if b, found := band[c.Name]; !found || got < b[0] || got > b[1] {
			t.Errorf("%s: ratio %g outside the band %v its router should give", c.Name, got, b)
		}
	}
	if r, ok := RoutingEvenness(counts(short.Offered)); ok || r.Buckets != short.Buckets {
		t.Errorf("%d buckets: read a router (%d buckets counted), want no answer below %d", short.Buckets, r.Buckets, MinRoutingBuckets)
	}
	if _, ok := RoutingEvenness(counts(cases[0].Offered[:1])); ok {
		t.Error("one replica: read a router")
	}
}

// TestInFlightEvennessReference checks InFlightEvenness against
// testdata/inflight.json (make_inflight.py: each step's chi-square from
// scipy.stats.chisquare against an even split) on queues simulated under
// five routers, and that the ratio tells them apart: about 1 or above
// when replicas are picked at random (of equal or unequal speeds, or with
// one that stops reporting half-way, whose steps then count the other
// three), well below 1 when each request goes
// to the replica with the fewest in flight (sampled at one instant or
// staggered), to the fewer of two picked at random (least-request in
// Envoy and Istio), or round-robin.
func TestInFlightEvennessReference(t *testing.T) {
	type refCase struct {
		Name     string
		InFlight [][]*float64 `json:"in_flight"`
		Ratio    float64
		PEven    float64 `json:"p_even"`
		Steps    int
		DF       float64
	}
	cases, short := refCases[refCase](t, "inflight.json")
	series := func(o [][]*float64) [][]float64 {
		out := make([][]float64, len(o))
		for r, row := range o {
			out[r] = make([]float64, len(row))
			for j, v := range row {
				out[r][j] = math.NaN()
				if v != nil {
					out[r][j] = *v
				}
			}
		}
		return out
	}
	band := map[string][2]float64{
		"random-4": {0.85, 1.5}, "random-3-unequal-speeds": {0.85, 2}, "random-4-one-stops": {0.85, 1.5},
		"round-robin-4": {0.3, 0.7}, "fewest-in-flight-4": {0, 0.3}, "fewest-in-flight-4-staggered": {0, 0.35},
		"two-choices-8": {0, 0.6},
	}
	for _, c := range cases {
		r, ok := InFlightEvenness(series(c.InFlight))
		if !ok || r.Buckets != c.Steps || r.DF != c.DF || !within(r.Ratio, c.Ratio, 1e-9, 1e-15) || !within(r.PEven, c.PEven, 1e-6, 1e-300) {
			t.Errorf("%s: ratio %g, p %g over %d steps, %g df (ok %v), want %g, %g over %d, %g df", c.Name, r.Ratio, r.PEven, r.Buckets, r.DF, ok, c.Ratio, c.PEven, c.Steps, c.DF)
		}
		if b, found := band[c.Name]; !found || r.Ratio < b[0] || r.Ratio > b[1] {
			t.Errorf("%s: ratio %g outside the band %v its router should give", c.Name, r.Ratio, b)
		}
	}
	if r, ok := InFlightEvenness(series(short.InFlight)); ok || r.Buckets != short.Steps {
		t.Errorf("%d steps: read a router (%d counted), want no answer below %d", short.Steps, r.Buckets, MinRoutingBuckets)
	}
	if _, ok := InFlightEvenness(series(cases[0].InFlight[:1])); ok {
		t.Error("one replica: read a router")
	}
	if _, ok := InFlightEvenness([][]float64{make([]float64, 40), make([]float64, 40)}); ok {
		t.Error("nothing ever in flight: read a router")
	}
}

// refCases reads a reference file holding {"cases": [...], "short": {...}}.
func refCases[C any](t *testing.T, name string) (cases []C, short C) {
	t.Helper()
	var ref struct {
		Cases []C
		Short C
	}
	readTestdata(t, name, &ref)
	if len(ref.Cases) == 0 {
		t.Fatalf("no reference cases in %s", name)
	}
	return ref.Cases, ref.Short
}
