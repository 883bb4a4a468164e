package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
)

// Arms of different sizes. A canary is often one replica beside a
// baseline of several. Each request's queue is its replica's, so at the
// same load per replica a router that picks replicas at random gives both
// arms the same queues. A router that spreads requests evenly
// (round-robin, least-outstanding, join-the-shortest-queue) pools its
// replicas: a request waits only when all of them are busy, and the
// larger the pool, the rarer that is. Near capacity a lone canary replica
// then queues more than a pool of four running the same build — on the
// batching model (analysis/batchfleet_test.go) identical builds at 6
// requests per second per four replicas, the canary one replica at 1.5,
// the baseline's four behind a least-outstanding router: attainment 92%
// against 99%, FAIL in 23 of 40 runs. The difference is the deployments'
// sizes, not the change, and nothing in the arms' data separates the two
// (the advice of the peers' guides: a baseline of the canary's size).
const (
	// ArmSizeRatio is how many times one arm's mean replicas must be the
	// other's for the arms to count as of different sizes (1.5: a canary
	// of 2 beside 3 replicas does not count, 2 beside 4 does).
	ArmSizeRatio = 1.5
	// EvenRoutingRatio is the stats.RoutingEvenness ratio of the larger
	// arm below which its router counts as spreading requests evenly, so
	// pooling its replicas' queues, when routing at random is also ruled
	// out at EvenRoutingP: random routing reads about 1 (0.87–1.11 over
	// 30-minute runs of four replicas on the batching model), round-robin
	// about 0.06, join-the-shortest-queue 0.16, the batching model's
	// least-outstanding router (which estimates its replicas' outstanding
	// requests) 0.34–0.46.
	EvenRoutingRatio = 0.7
	// EvenRoutingP is the one-sided p-value (stats.Routing.PEven) below
	// which routing at random is ruled out: with few replicas and a short
	// run the ratio alone wanders below EvenRoutingRatio by chance.
	EvenRoutingP = 0.001
	// RandomRoutingRatio is the reading at or above which a router counts
	// as picking replicas at random when arms behind routers of two kinds
	// are compared (armSize.routersDiffer): random routing reads about 1
	// by counts (0.85–1.19 on the batching model) and above 1 in flight
	// (1.18–4.18); a reading between this and EvenRoutingRatio, or below
	// it without EvenRoutingP (a pooling router at a load too light to
	// show it), counts as neither.
	RandomRoutingRatio = 0.8
)

// armSize is what the arm-size check reads: each arm's mean deployed
// replicas over its analysed window (deployed replica-seconds over
// seconds; 0 when the arm names no replica or has no time grid) and how
// each arm's router spread its requests.
type armSize struct {
	b, c float64
	// rb and rc are the baseline's and the canary's routers (unknown
	// for an arm of one replica).
	rb, rc router
}

// router is one arm's routing evenness as read (routingOf): known false
// when it cannot be read (metrics without both in-flight gauges per
// replica, an arm whose replicas come and go too much, a single replica);
// inFlight when read from the replicas' requests in flight
// (stats.InFlightEvenness), not their counts per bucket.
type router struct {
	even            stats.Routing
	known, inFlight bool
}

// pools reports whether the router was read as spreading requests evenly
// enough to pool its replicas' queues (evenRouting).
func (r router) pools() bool { return r.known && evenRouting(r.even) }

// random reports whether the router was read as picking replicas at
// random (RandomRoutingRatio).
func (r router) random() bool { return r.known && r.even.Ratio >= RandomRoutingRatio }

// spread says how much an arm's replicas varied against random routing,
// in the terms the router was read in.
func (r router) spread() string {
	if r.inFlight {
		return fmt.Sprintf("their requests in flight at each bucket's end vary %.2f times as much as independent queues' would, over %d buckets", r.even.Ratio, r.even.Buckets)
	}
	return fmt.Sprintf("their counts per bucket vary %.2f times as much as random routing's", r.even.Ratio)
}

// differ reports whether both arms' sizes are known and one is at least
// ArmSizeRatio times the other.
func (s armSize) differ() bool {
	return s.b > 0 && s.c > 0 && (s.b >= ArmSizeRatio*s.c || s.c >= ArmSizeRatio*s.b)
}

// routersDiffer reports whether one arm's router pools its replicas'
// queues while the other's picks replicas at random, each queueing
// alone: the pooled arm then queues less on the same build, whatever the
// arms' sizes (a pool of two serves sooner than two queues of their own).
// On the batching model, four replicas each, at 6 req/s: the baseline's
// behind a least-outstanding router failed identical builds in 29 of 40
// runs, the canary's behind it passed a 5% slower build in 7 of 40; two
// pooled canary replicas beside eight at random passed a 5% slower build
// in 6 of 40.
func (s armSize) routersDiffer() bool {
	return s.b > 0 && s.c > 0 && (s.rb.pools() && s.rc.random() || s.rc.pools() && s.rb.random())
}

// pooled reports whether the arms differ in size and the larger arm's
// router pools its queues (EvenRoutingRatio), the smaller's pooling too
// or unread (one replica): the smaller arm queues more on the same build.
func (s armSize) pooled() bool {
	if !s.differ() || s.routersDiffer() {
		return false
	}
	if s.c > s.b {
		return s.rc.pools()
	}
	return s.rb.pools()
}

// easier names the arm whose queues had it easier on the same build
// (routersDiffer: the pooled one; pooled: the larger), "" when neither.
func (s armSize) easier() string {
	switch {
	case s.routersDiffer() && s.rb.pools(), s.pooled() && s.b > s.c:
		return "baseline"
	case s.routersDiffer(), s.pooled():
		return "canary"
	}
	return ""
}

// evenRouting reports whether reading r finds a router more even than
// random: its ratio below EvenRoutingRatio and random routing ruled out
// at EvenRoutingP.
func evenRouting(r stats.Routing) bool {
	return r.Ratio < EvenRoutingRatio && r.PEven < EvenRoutingP
}

// text says how the arms differ in size and what their routers did, for
// the warning and the hold; "" for arms of one size whose routers do not
// differ.
func (s armSize) text() string {
	if !s.differ() && !s.routersDiffer() {
		return ""
	}
	t := fmt.Sprintf("the arms differ in size: the baseline ran %.1f replicas on average, the canary %.1f", s.b, s.c)
	if !s.differ() {
		t = fmt.Sprintf("the arms' routers differ (the baseline ran %.1f replicas on average, the canary %.1f)", s.b, s.c)
	}
	larger, lr := "baseline", s.rb
	if s.c > s.b {
		larger, lr = "canary", s.rc
	}
	switch {
	case s.routersDiffer():
		pooled, pr, other, or := "baseline", s.rb, "canary", s.rc
		if s.rc.pools() {
			pooled, pr, other, or = "canary", s.rc, "baseline", s.rb
		}
		return t + fmt.Sprintf("; the %s's router spread its requests over its replicas more evenly than at random (%s, p %.2g), which pools its queues, while the %s's picked replicas about at random (%s), each queueing alone: at the same load per replica the %s queues less on the same build; arms behind routers of one kind tell the change from the routing", pooled, pr.spread(), pr.even.PEven, other, or.spread(), pooled)
	case !lr.known:
		return t + fmt.Sprintf("; how the %s's router spread its requests could not be read (neither per-replica counts nor per-replica requests running and waiting, or fewer than %d buckets in which all its replicas served), and a router that spreads them evenly (round-robin, least-outstanding) pools a larger fleet's queues, so near capacity the smaller arm queues more on the same build; a baseline of the canary's size tells the change from the size", larger, stats.MinRoutingBuckets)
	case s.pooled():
		return t + fmt.Sprintf("; the %s's router spread its requests over its replicas more evenly than at random (%s, p %.2g), which pools its queues: at the same load per replica the smaller arm queues more on the same build, so its lateness is not blamed on the change; a baseline of the canary's size, or both arms behind one router, tells them apart", larger, lr.spread(), lr.even.PEven)
	}
	if !lr.random() {
		return t + fmt.Sprintf("; the %s's router spread its requests somewhat more evenly than at random, not enough to count as pooling its queues (%s, p %.2g; pooling reads below %.1f at p < %g), so the arms' queues are compared as they are", larger, lr.spread(), lr.even.PEven, EvenRoutingRatio, EvenRoutingP)
	}
	return t + fmt.Sprintf("; the %s's router picked replicas about at random (%s), so each replica queues as it would alone and the arms' queues compare at the same load per replica", larger, lr.spread())
}

// armLoad is each arm's offered requests per deployed replica-second over
// its analysed window (0 when unknown: an arm that names no replica, or
// has no time grid).
type armLoad struct{ b, c float64 }

// differ reports whether both loads are known and the canary's differs
// from the baseline's beyond normalize.DefaultLoadTolerance.
func (l armLoad) differ() bool {
	return l.b > 0 && l.c > 0 && math.Abs(l.c/l.b-1) > normalize.DefaultLoadTolerance
}

// text says how the arms' loads differ and what that does to their queues.
func (l armLoad) text() string {
	more := "less"
	if l.c > l.b {
		more = "more"
	}
	return fmt.Sprintf("the canary ran at %.1f%% %s offered load per deployed replica-second than the baseline (%.4g vs %.4g, beyond the ±%.0f%% tolerance): a fleet queues less the lighter it runs, so the arms' lateness does not compare; a split of traffic in proportion to the arms' replicas (traffic.canary_share and the canary's replica count) makes it compare",
		100*math.Abs(l.c/l.b-1), more, l.c, l.b, 100*normalize.DefaultLoadTolerance)
}

// heldByQueues holds a verdict that the arms' queues, not the change,
// could have made. The canary's queues had it easier when its router
// pools and the baseline's picks at random, when it is the larger arm
// behind a router that pools (armSize.easier), or when it ran at a
// lighter load per replica (armLoad.differ); harder the other way round.
// A PASS of a canary that had it easier, or a FAIL of one that had it
// harder whose failing gates all measure lateness (poolMoves), becomes
// INCONCLUSIVE with the reason first. A failure the
// queues cannot cause (errors, rejections, cancels, a burst of them,
// output length, retries, a broken traffic split) still fails: served
// says the attainment_dip scan of the shares of requests served finds a
// stretch (servedDip), where the row reports a stretch of good shares; it
// is asked only then.
func heldByQueues(r *Report, s armSize, l armLoad, served func() bool) {
	var easier, harder []string
	switch s.easier() {
	case "canary":
		easier = append(easier, s.text())
	case "baseline":
		harder = append(harder, s.text())
	}
	if l.differ() {
		if l.c < l.b {
			easier = append(easier, l.text())
		} else {
			harder = append(harder, l.text())
		}
	}
	switch {
	case r.Verdict == Fail && len(harder) > 0:
		var late []string
		for _, m := range r.Metrics {
			if m.Verdict != Fail {
				continue
			}
			if !poolMoves(m) || m.Name == dipName && served() {
				return
			}
			late = append(late, m.Name)
		}
		r.Reasons = append([]string{fmt.Sprintf("the gates give FAIL (%s), but %s", strings.Join(late, ", "), strings.Join(harder, "; and "))}, r.Reasons...)
	case r.Verdict == Pass && len(easier) > 0:
		r.Reasons = append([]string{"the gates give PASS, but " + strings.Join(easier, "; and ") + "; the canary's easier queues may hide a slower build"}, r.Reasons...)
	default:
		return
	}
	r.Verdict = Inconclusive
}

// poolMoves reports whether gate m measures how late requests were, which
// an arm's queueing moves: attainment, goodput and what is counted per
// good request, latency quantiles (per class too), their trend rows, and
// attainment_dip when it failed on good shares. Failed, rejected and
// canceled requests, output length and retries are not what a deeper queue
// makes of the same requests.
func poolMoves(m Metric) bool {
	if m.Name == dipName {
		return !strings.Contains(m.Method, "served")
	}
	base, _, _ := strings.Cut(m.Name, ":")
	base = strings.TrimSuffix(base, trendSuffix)
	switch base {
	case "slo_attainment", "goodput", "goodput_per_replica", "token_goodput",
		"cost_per_good_request", "energy_per_good_request", "gpu_seconds_per_good_request":
		return true
	}
	info, ok := policies.Metric(base)
	return ok && info.Latency != ""
}

// deployedTotals is the arm's offered requests, deployed replica-seconds
// (deployedReplicas: a replica lost mid-run still counts, as in
// offered_load_ratio, so a lost replica is neither a smaller arm nor a
// split of the load) and seconds over its analysed buckets; ok is false
// when the arm names no replica or has no time grid.
func (a *armData) deployedTotals() (offered, repSecs, secs float64, ok bool) {
	if a.pseudo || !a.replicasKnown {
		return 0, 0, 0, false
	}
	ks, deployed := a.deployedKept()
	for i, b := range ks {
		if !b.leftOut {
			offered, repSecs, secs = offered+b.offered, repSecs+deployed[i]*b.secs, secs+b.secs
		}
	}
	return offered, repSecs, secs, repSecs > 0
}

// deployedTotals is armData.deployedTotals over an aggregated arm's
// slices (stretches left out of both arms skipped); ok is false when its
// replicas are unknown (replicasNamed).
func (a *aggArm) deployedTotals() (offered, repSecs, secs float64, ok bool) {
	if !replicasNamed(a) {
		return 0, 0, 0, false
	}
	for i, d := range a.deployed() {
		if sl := &a.slices[i]; !sl.leftOut {
			offered, repSecs, secs = offered+sl.offered(), repSecs+d*sl.secs(), secs+sl.secs()
		}
	}
	return offered, repSecs, secs, repSecs > 0
}

// queueHold is heldByQueues as both judging paths apply it to report r:
// the arms' sizes and loads read from b and c (queuesOf; the aggregate
// path passes the canary as counted), the served scan on the dip grid
// only when the hold asks for it. It returns the warning to give when the
// arms differ in size or their routers are of two kinds (armSize.text;
// "" otherwise).
func queueHold(r *Report, p *policies.Policy, b, c queueArm, grid func() (dipGrid, bool)) string {
	s, l := queuesOf(b, c)
	w := s.text()
	if w == "" && !l.differ() {
		return ""
	}
	heldByQueues(r, s, l, func() bool {
		g, ok := grid()
		return ok && servedDip(p, g)
	})
	return w
}

// queueArm is what heldByQueues reads of an arm on either judging path:
// its deployed totals, and its replicas' requests per bucket and in
// flight at each bucket's end, from which routingOf reads its router.
type queueArm interface {
	deployedTotals() (offered, repSecs, secs float64, ok bool)
	replicaCounts() ([]stats.ReplicaCounts, bool)
	replicaInFlight() ([][]float64, bool)
}

// routingOf reads an arm's router two ways, each where its data is
// there: from its replicas' requests per bucket (stats.RoutingEvenness),
// which tells round-robin best (about 0.06, against 0.5 in flight), and
// from their requests in flight at each bucket's end
// (stats.InFlightEvenness), which tells a router that weighs load best
// (the simulator's least-loaded router 0.01 in flight and 0.58–0.70 by
// counts, the second not below EvenRoutingRatio). The router is read as
// even when either way finds it so (that reading is returned; when both
// do, the one that rules random routing out more surely, the smaller
// p-value); else the in-flight reading, else the counts'. Random routing
// reads about 1 or above both ways. ok is false when neither can be read.
func routingOf(a queueArm) (r stats.Routing, fromInFlight, ok bool) {
	var byCount, byFlight stats.Routing
	var countOK, flightOK bool
	if c, ok := a.replicaCounts(); ok {
		byCount, countOK = stats.RoutingEvenness(c)
	}
	if f, ok := a.replicaInFlight(); ok {
		byFlight, flightOK = stats.InFlightEvenness(f)
	}
	flightEven, countEven := flightOK && evenRouting(byFlight), countOK && evenRouting(byCount)
	switch {
	case flightEven && (!countEven || byFlight.PEven <= byCount.PEven):
		return byFlight, true, true
	case countEven:
		return byCount, false, true
	case flightOK:
		return byFlight, true, true
	}
	return byCount, false, countOK
}

// queuesOf reads both arms' sizes and loads from their deployed totals,
// and each arm's router (unknown when it cannot be read). The aggregate
// path passes the canary as counted.
func queuesOf(b, c queueArm) (armSize, armLoad) {
	ob, rb, sb, okB := b.deployedTotals()
	oc, rc, sc, okC := c.deployedTotals()
	if !okB || !okC {
		return armSize{}, armLoad{}
	}
	s, l := armSize{b: rb / sb, c: rc / sc}, armLoad{b: ob / rb, c: oc / rc}
	s.rb.even, s.rb.inFlight, s.rb.known = routingOf(b)
	s.rc.even, s.rc.inFlight, s.rc.known = routingOf(c)
	return s, l
}
