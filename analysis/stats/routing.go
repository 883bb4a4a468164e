package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// MinRoutingBuckets is the fewest buckets in which every replica of an arm
// served for RoutingEvenness to read its router: fewer give no answer.
const MinRoutingBuckets = 30

// RoutingEvenness says how evenly an arm's router spread its requests over
// its replicas, bucket by bucket, against routing each request at random:
// the Pearson chi-square of each bucket's counts per replica against the
// replicas' shares over the run, summed over the buckets and divided by
// its expectation under random routing, (k − 1)(T − 1) for k replicas and
// T buckets (the shares estimated from the same counts).
//
// Near 1 (within about ±√(2/((k−1)T))) the router picked replicas at
// random, or by a hash of something random to it: each replica's requests
// arrive as a Poisson process of its own, and a fleet of k such replicas
// queues as each one alone does. Well below 1 the router spread requests
// more evenly than chance — round-robin gives about 0, a least-outstanding
// or join-the-shortest-queue router a few tenths — and such a router
// pools its replicas' queues: a larger fleet behind it queues less than a
// smaller one at the same load per replica. Above 1, requests come in
// clumps per replica (sticky sessions, affinity).
//
// counts are one arm's replicas, offered requests per bucket (equal
// lengths). Only buckets in which every replica lies within its span of
// service (from its first bucket with a request to its last) count, so a
// replica that joins late or leaves early does not read as uneven routing;
// ok is false with fewer than two replicas or fewer than MinRoutingBuckets
// such buckets.
func RoutingEvenness(counts []ReplicaCounts) (r Routing, ok bool) {
	k := len(counts)
	if k < 2 {
		return Routing{}, false
	}
	nb := len(counts[0].Offered)
	first, last := make([]int, k), make([]int, k)
	for r, rc := range counts {
		if len(rc.Offered) != nb {
			return Routing{}, false
		}
		first[r], last[r] = -1, -1
		for t, n := range rc.Offered {
			if n > 0 {
				if first[r] < 0 {
					first[r] = t
				}
				last[r] = t
			}
		}
		if first[r] < 0 {
			return Routing{}, false
		}
	}
	lo, hi := first[0], last[0]
	for r := range k {
		lo, hi = max(lo, first[r]), min(hi, last[r])
	}
	// the replicas' shares over the buckets counted
	share := make([]float64, k)
	total := 0.0
	var use []int
	for t := lo; t <= hi; t++ {
		n := 0.0
		for r := range k {
			n += counts[r].Offered[t]
		}
		if n > 0 {
			use = append(use, t)
			for r := range k {
				share[r] += counts[r].Offered[t]
			}
			total += n
		}
	}
	if len(use) < MinRoutingBuckets {
		return Routing{Buckets: len(use)}, false
	}
	for r := range share {
		share[r] /= total
	}
	chi := 0.0
	for _, t := range use {
		n := 0.0
		for r := range k {
			n += counts[r].Offered[t]
		}
		for r := range k {
			e := n * share[r]
			d := counts[r].Offered[t] - e
			chi += d * d / e
		}
	}
	df := float64((k - 1) * (len(use) - 1))
	return Routing{Ratio: chi / df, Buckets: len(use), DF: df, PEven: distuv.ChiSquared{K: df}.CDF(chi)}, true
}

// Routing is what RoutingEvenness reads of an arm's router.
type Routing struct {
	// Ratio is the summed chi-square over its expectation under random
	// routing (≥ 0; about 1 at random, below 1 more even, above clumped).
	Ratio float64
	// Buckets is how many buckets (InFlightEvenness: steps) counted.
	Buckets int
	// DF is the chi-square's degrees of freedom, (k − 1)(T − 1)
	// (InFlightEvenness: Σ(k_t − 1)).
	DF float64
	// PEven is the chi-square's lower tail on DF degrees of freedom: the
	// chance of routing at least this even had the router picked
	// replicas at random (the one-sided p-value of "more even than
	// chance").
	PEven float64
}

// InFlightEvenness says how evenly an arm's router spread its requests
// over its replicas when all that is known of each replica is how many
// requests it had in flight (running + waiting, an engine's gauges; or
// from a log, those arrived and not yet ended) at each step: at every
// step where k_t ≥ 2 replicas have a value and they hold n > 0 in flight
// between them, the Pearson chi-square of the values against n/k_t each,
// summed over the T such steps and divided by its expectation had the
// replicas' counts been independent Poisson draws of one mean,
// Σ(k_t − 1). A replica without a value at a step (not yet started, gone,
// a scrape missed) leaves that step to the others.
//
// A router that picks replicas at random leaves each replica a queue of
// its own, whose requests in flight vary at least as a Poisson count
// does (a queue that builds varies more, and so do replicas of unequal
// speeds): the ratio reads about 1 or above. A router that sends each
// request to the replica with the fewest in flight (least-outstanding,
// join-the-shortest-queue) keeps them within one or two of each other:
// a few tenths, and round-robin about a half (make_inflight.py). Samples
// taken at staggered instants (each replica scraped on its own offset)
// read a little higher than simultaneous ones, since the arm's total
// moves between them. The statistic only ever reads a router as more
// even than it was when the gauges are averaged over time or capped, so
// a wrong reading holds verdicts (armSize.pooled), never frees one.
//
// inFlight holds one series per replica, one value per step (equal
// lengths), NaN where the replica had no value. ok is false with fewer
// than two replicas or fewer than MinRoutingBuckets steps counted;
// Routing.Buckets is the steps counted and DF is Σ(k_t − 1).
func InFlightEvenness(inFlight [][]float64) (r Routing, ok bool) {
	if len(inFlight) < 2 {
		return Routing{}, false
	}
	steps := len(inFlight[0])
	for _, s := range inFlight {
		if len(s) != steps {
			return Routing{}, false
		}
	}
	usable := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 }
	chi, df, t := 0.0, 0, 0
	for j := range steps {
		n, k := 0.0, 0
		for _, s := range inFlight {
			if v := s[j]; usable(v) {
				n, k = n+v, k+1
			}
		}
		if k < 2 || !(n > 0) {
			continue
		}
		e := n / float64(k)
		for _, s := range inFlight {
			if v := s[j]; usable(v) {
				d := v - e
				chi += d * d / e
			}
		}
		df, t = df+k-1, t+1
	}
	if t < MinRoutingBuckets {
		return Routing{Buckets: t}, false
	}
	return Routing{Ratio: chi / float64(df), Buckets: t, DF: float64(df), PEven: distuv.ChiSquared{K: float64(df)}.CDF(chi)}, true
}
