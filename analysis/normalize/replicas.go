package normalize

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/goodput-dev/goodput/analysis/stats"
)

// Replica-loss defaults (pre-declared; see ReplicaLoss).
const (
	// DefaultGapBuckets is the longest silence (buckets with no arrivals)
	// that is still normal at 10 s buckets: a replica silent for more
	// than 3 buckets (30 s) while others serve is lost or paused. It is
	// also how far apart, in buckets, a replica's stop and a newcomer's
	// start may lie for the newcomer to have taken its place (Takeovers).
	DefaultGapBuckets = 3
	// DefaultGapSecs is the longest normal silence in seconds, whatever
	// the bucket: ReplicaLoss counts a silence of more than
	// ⌊DefaultGapSecs / bucket⌋ buckets (3 at 10 s, 1 at 30 s, 0 at 60 s:
	// any empty bucket). As a count of buckets it grew with the bucket: a
	// canary replica out for two minutes left 3 empty 30 s buckets, no
	// more than the 3 allowed, and passed.
	DefaultGapSecs = 30.0
	// silenceAlpha bounds the chance that a healthy replica's Poisson
	// arrivals produce a silence this long anywhere in the run.
	silenceAlpha = 0.001
	// rateAlpha is the one-sided level of the lower bound on a replica's
	// own arrival rate that a silence is set against (ReplicaLoss).
	rateAlpha = 0.05
)

// ReplicaActivity is one replica's arrivals per bucket on its arm's bucket
// grid (index 0 = the arm's first bucket; every replica of an arm has the
// same number of buckets).
type ReplicaActivity struct {
	Name     string
	Requests []float64 // requests arriving in each bucket, ≥ 0
}

// Kinds of ReplicaEvent.
const (
	EventLost   = "lost"   // silent from From to the end of the window
	EventGap    = "gap"    // silent from From to To, then served again
	EventJoined = "joined" // first arrival at To, after the others served
)

// ReplicaEvent is a change in an arm's replica set.
type ReplicaEvent struct {
	Replica string
	// Kind is EventLost, EventGap or EventJoined.
	Kind string
	// From and To are bucket indices on the arm grid, To exclusive: the
	// replica was out of service in buckets [From, To).
	From, To int
	// FromSec and ToSec are the same bounds in seconds from the arm's
	// first bucket (index × bucket width).
	FromSec, ToSec float64
	// Others is how many other replicas had arrivals during the silence.
	Others int
	Reason string
}

// LossOptions are the pre-declared parameters of ReplicaLoss.
type LossOptions struct {
	// GapBuckets is the longest normal silence in buckets (default:
	// ⌊DefaultGapSecs / BucketSecs⌋, and DefaultGapBuckets for Takeovers).
	GapBuckets int
	// BucketSecs is the bucket width in seconds (default 10), for the
	// times in the events.
	BucketSecs float64
}

// ReplicaLoss finds replicas that stop serving while the others go on: a
// replica-loss or restart that must not be blamed on the change. A silence
// of replica r is a run of L consecutive buckets with no arrivals, after its
// first arrival, that counts when
//
//   - L > GapBuckets (⌊DefaultGapSecs / BucketSecs⌋ by default), and
//   - the run is unlikely for r's own traffic: with λ the one-sided 95%
//     lower bound (Garwood) on its arrivals per bucket between its first
//     and last arrival, exp(−λL) < 0.001/b over b buckets (so a replica
//     with little traffic, or seen for a request or two, is not declared
//     lost for a quiet stretch), and
//   - the other replicas together kept receiving at least half their
//     average arrivals per bucket during the run (when every replica is
//     silent the load stopped, not a replica), and
//   - for a silence running to the window's end, it is unlikely for the
//     replica's own arrivals placed anywhere in its time in the window:
//     its N arrivals fall in the first S−L of its S buckets from its
//     first, which, were they spread evenly over the S (a constant rate,
//     whatever it is), has chance (1 − L/S)^N < 0.001/b. A rate read off
//     the replica's own arrivals alone is read off the buckets before the
//     silence: one request in one bucket reads as one a bucket, its lower
//     bound 0.05, and 250 quiet buckets of a long run called it lost.
//
// A silence running to the end of the window is "lost"; one followed by
// arrivals is a "gap". A replica whose first arrival comes after such a
// silence from the arm's first bucket has "joined" late (scale-up or
// restart; give it its own warm-up with ReplicaStarts). Events are sorted by From, then replica name.
func ReplicaLoss(reps []ReplicaActivity, opt LossOptions) []ReplicaEvent {
	if !(opt.BucketSecs > 0) {
		opt.BucketSecs = 10
	}
	quiet, takeover := opt.GapBuckets, opt.GapBuckets
	if opt.GapBuckets <= 0 {
		quiet, takeover = int(math.Floor(DefaultGapSecs/opt.BucketSecs+1e-9)), DefaultGapBuckets
	}
	b := 0
	for _, r := range reps {
		b = max(b, len(r.Requests))
	}
	served := func(i, t int) bool { return t < len(reps[i].Requests) && reps[i].Requests[t] > 0 }
	// othersTotal[i] is the other replicas' arrivals over the whole window
	all := 0.0
	own := make([]float64, len(reps))
	for i, r := range reps {
		for _, n := range r.Requests {
			own[i] += n
		}
		all += own[i]
	}
	// othersServing returns how many other replicas had arrivals in
	// [from, to), or 0 when the others together received less than half
	// their average rate there (the load stopped, not the replica).
	othersServing := func(i, from, to int) int {
		var inRun float64
		n := 0
		for j := range reps {
			if j == i {
				continue
			}
			got := 0.0
			for t := from; t < min(to, len(reps[j].Requests)); t++ {
				got += reps[j].Requests[t]
			}
			if got > 0 {
				n++
			}
			inRun += got
		}
		if others := all - own[i]; !(inRun > 0) || inRun/float64(to-from) < 0.5*others/float64(b) {
			return 0
		}
		return n
	}
	var out []ReplicaEvent
	// each replica's first bucket with requests, the first of its silence
	// to the window's end, and that lost event's place in out (−1: none),
	// for the handovers (Takeovers)
	firsts, stops, lostAt := make([]int, len(reps)), make([]int, len(reps)), make([]int, len(reps))
	ev := func(i int, kind string, from, to, others int, why string) {
		if kind == EventLost {
			stops[i], lostAt[i] = from, len(out)
		}
		out = append(out, ReplicaEvent{Replica: reps[i].Name, Kind: kind, From: from, To: to,
			FromSec: float64(from) * opt.BucketSecs, ToSec: float64(to) * opt.BucketSecs, Others: others, Reason: why})
	}
	for i, r := range reps {
		stops[i], lostAt[i] = -1, -1
		first, last := -1, -1
		total := 0.0
		for t, n := range r.Requests {
			if n > 0 {
				if first < 0 {
					first = t
				}
				last = t
				total += n
			}
		}
		firsts[i] = first
		if first < 0 {
			continue // never served: nothing to lose
		}
		lambda := total / float64(last-first+1)
		minRun := quiet + 1
		// the silence is set against the lowest rate the replica's own
		// arrivals make plausible (one-sided 95%), not their mean: a
		// replica seen in one bucket for one request (a stray record,
		// a name typed once) shows a rate of one per bucket, and its
		// silence for the rest of the run would call it lost
		if lo := stats.PoissonRateLower(total, float64(last-first+1), rateAlpha); lo > 0 {
			// exp(−λL) < α/b  ⇔  L > ln(b/α)/λ
			minRun = max(minRun, int(math.Min(math.Floor(math.Log(float64(b)/silenceAlpha)/lo), float64(b)))+1)
		} else {
			minRun = b + 1
		}
		if first >= minRun {
			if o := othersServing(i, 0, first); o > 0 {
				ev(i, EventJoined, 0, first, o, fmt.Sprintf("replica %q first served at %gs, %d buckets after the arm's start, while %d other replica(s) served",
					r.Name, float64(first)*opt.BucketSecs, first, o))
			}
		}
		for t := first + 1; t < b; {
			if served(i, t) {
				t++
				continue
			}
			from := t
			for t < b && !served(i, t) {
				t++
			}
			to := t
			if to-from < minRun {
				continue
			}
			if to == b && total*math.Log1p(-float64(to-from)/float64(b-first)) >= math.Log(silenceAlpha/float64(b)) {
				continue // as likely as not for so few arrivals spread over its time
			}
			o := othersServing(i, from, to)
			if o == 0 {
				continue
			}
			kind := EventGap
			what := fmt.Sprintf("served nothing from %gs to %gs (%d buckets) and then resumed", float64(from)*opt.BucketSecs, float64(to)*opt.BucketSecs, to-from)
			if to == b {
				kind = EventLost
				what = fmt.Sprintf("served nothing from %gs to the end of the window at %gs (%d buckets)", float64(from)*opt.BucketSecs, float64(to)*opt.BucketSecs, to-from)
			}
			ev(i, kind, from, to, o, fmt.Sprintf("replica %q %s while %d other replica(s) served; it averaged %.3g requests per bucket before",
				r.Name, what, o, lambda))
		}
	}
	// a replica whose place another took (a pod replaced under a new
	// name, one for one) leaves the serving count as it was: not lost;
	// the newcomer keeps its own joined event (its warm-up is its own). A
	// replica that arrives later than that does not excuse the silence.
	if by := Takeovers(firsts, stops, takeover); len(by) > 0 {
		drop := make(map[int]bool, len(by))
		for i := range by {
			drop[lostAt[i]] = true
		}
		kept := out[:0:0]
		for k, e := range out {
			if !drop[k] {
				kept = append(kept, e)
			}
		}
		out = kept
	}
	slices.SortStableFunc(out, func(a, c ReplicaEvent) int {
		return cmp.Or(cmp.Compare(a.From, c.From), cmp.Compare(a.Replica, c.Replica))
	})
	return out
}

// Takeovers pairs the replicas of an arm that stopped for good with the
// newcomers that took their place, on the arm's bucket grid: first[i] is
// replica i's first bucket with requests (−1: none), stop[i] the first
// bucket of its silence to the end of the window (−1: it served to the
// end). Replica j takes over from replica i when j's first bucket lies
// within gap buckets of stop[i], either side, and more than gap buckets
// after the arm's start (not one of the replicas that served from the
// start); each newcomer takes over from one replica at most, the stops in
// time order, the nearest newcomer first (ties to the lower index). The
// answer maps i to j.
func Takeovers(first, stop []int, gap int) map[int]int {
	var stopped []int
	for i, s := range stop {
		if s >= 0 {
			stopped = append(stopped, i)
		}
	}
	slices.SortStableFunc(stopped, func(a, b int) int { return cmp.Compare(stop[a], stop[b]) })
	out := map[int]int{}
	taken := map[int]bool{}
	for _, i := range stopped {
		best, bestDist := -1, gap+1
		for j, f := range first {
			if j == i || taken[j] || f <= gap {
				continue
			}
			if d := abs(f - stop[i]); d < bestDist {
				best, bestDist = j, d
			}
		}
		if best >= 0 {
			taken[best] = true
			out[i] = best
		}
	}
	return out
}

// abs is |x| for an int.
func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// InService returns, per bucket, how many replicas of the arm were in
// service: a replica counts from its first to its last arrival, except in
// the buckets of its events (gap, lost, joined). b is the number of buckets.
func InService(reps []ReplicaActivity, events []ReplicaEvent) []int {
	b := 0
	for _, r := range reps {
		b = max(b, len(r.Requests))
	}
	out := make([]int, b)
	for _, r := range reps {
		first, last := -1, -1
		for t, n := range r.Requests {
			if n > 0 {
				if first < 0 {
					first = t
				}
				last = t
			}
		}
		if first < 0 {
			continue
		}
		for t := first; t <= last; t++ {
			out[t]++
		}
		// a replica serving until the last few buckets is still in service
		// at the end of the window (its last arrival may simply be early)
		lost := false
		for _, e := range events {
			if e.Replica == r.Name && e.Kind == EventLost {
				lost = true
			}
		}
		if !lost {
			for t := last + 1; t < b; t++ {
				out[t]++
			}
		}
		for _, e := range events {
			if e.Replica != r.Name || e.Kind != EventGap {
				continue
			}
			for t := max(e.From, first); t < min(e.To, last+1); t++ {
				out[t]--
			}
		}
	}
	return out
}

// MatchedPeriods marks the buckets where both arms had their full replica
// set, given each arm's InService counts on a common bucket grid (the caller
// aligns the arms: index t is the same time slice in both; pad a shorter arm
// with 0). An arm's full set is its largest count. The comparison can then
// be restricted to these buckets so a replica failure in one arm is not
// blamed on the change; a bucket beyond either slice is not matched.
func MatchedPeriods(canary, baseline []int) []bool {
	fx, fy := slices.Max(append([]int{0}, canary...)), slices.Max(append([]int{0}, baseline...))
	n := max(len(canary), len(baseline))
	out := make([]bool, n)
	for t := range n {
		out[t] = t < len(canary) && t < len(baseline) && fx > 0 && fy > 0 && canary[t] == fx && baseline[t] == fy
	}
	return out
}

// Load is one arm's per-bucket offered requests and replica-seconds (the
// sum over replicas of the seconds each was in service in the bucket).
type Load struct {
	Offered, ReplicaSecs []float64
}

// DefaultLoadTolerance is the relative difference of offered load per
// replica-second (10%) within which two arms count as like-for-like.
const DefaultLoadTolerance = 0.10

// LoadResult is CompareLoad's outcome.
type LoadResult struct {
	// Canary and Baseline are each arm's offered requests per
	// replica-second, ΣOffered/ΣReplicaSecs; RelDiff is Canary/Baseline − 1.
	Canary, Baseline, RelDiff float64
	Tolerance                 float64
	// LikeForLike is true when the comparison is fair on load: either the
	// whole window is within Tolerance, or Matched is.
	LikeForLike bool
	// Matched is true when the arms differed beyond Tolerance overall and
	// were restricted to buckets of matched load (KeepCanary, KeepBaseline),
	// within which they agree. MatchedCanary, MatchedBaseline and
	// MatchedRelDiff describe the kept buckets.
	Matched                                        bool
	KeepCanary, KeepBaseline                       []bool
	MatchedCanary, MatchedBaseline, MatchedRelDiff float64
	Reason                                         string
}

// CompareLoad checks that the arms ran at the same offered load per replica
// (normalize.load) with relative tolerance tol (≤ 0 takes
// DefaultLoadTolerance). When |RelDiff| ≤ tol every bucket with replica time
// is kept. Otherwise buckets are binned by their own load per replica-second
// on a log scale with bins of ratio 1 + tol (bin ⌊ln(load)/ln(1+tol)⌋; load 0
// is its own bin), and in every bin both arms occupy each arm keeps the same
// number of buckets, min(n_canary, n_baseline), spread evenly over its run
// (coarsened exact matching: the kept buckets have the same load
// distribution at bin resolution). When both keep at least
// MinCovariateBuckets buckets and the kept buckets agree within tol, the
// arms are compared on them (Matched), else the comparison is flagged as not
// like-for-like. Matching selects buckets on an exogenous covariate
// (offered load), so it does not bias the comparison; it leaves gaps
// between buckets, which the batch-means variance tolerates.
func CompareLoad(canary, baseline Load, tol float64) (LoadResult, error) {
	if !(tol > 0) {
		tol = DefaultLoadTolerance
	}
	res := LoadResult{Tolerance: tol}
	for _, a := range []struct {
		arm string
		l   Load
	}{{"canary", canary}, {"baseline", baseline}} {
		if len(a.l.Offered) != len(a.l.ReplicaSecs) {
			return res, fmt.Errorf("load: %s has %d offered counts but %d replica-second values", a.arm, len(a.l.Offered), len(a.l.ReplicaSecs))
		}
		for t := range a.l.Offered {
			if !(a.l.Offered[t] >= 0) || !(a.l.ReplicaSecs[t] >= 0) || math.IsInf(a.l.Offered[t], 0) || math.IsInf(a.l.ReplicaSecs[t], 0) {
				return res, fmt.Errorf("load: %s bucket %d has offered %g, replica-seconds %g (want finite, ≥ 0)", a.arm, t, a.l.Offered[t], a.l.ReplicaSecs[t])
			}
		}
	}
	rate := func(l Load, keep []bool) float64 {
		var o, s float64
		for t := range l.Offered {
			if keep[t] {
				o += l.Offered[t]
				s += l.ReplicaSecs[t]
			}
		}
		return o / s
	}
	all := func(l Load) []bool {
		k := make([]bool, len(l.Offered))
		for t := range k {
			k[t] = l.ReplicaSecs[t] > 0
		}
		return k
	}
	res.KeepCanary, res.KeepBaseline = all(canary), all(baseline)
	res.Canary, res.Baseline = rate(canary, res.KeepCanary), rate(baseline, res.KeepBaseline)
	res.RelDiff = res.Canary/res.Baseline - 1
	if math.IsNaN(res.RelDiff) || math.IsInf(res.RelDiff, 0) {
		res.Reason = fmt.Sprintf("offered load per replica-second is undefined (canary %.4g, baseline %.4g): an arm has no replica time or no requests",
			res.Canary, res.Baseline)
		return res, nil
	}
	if math.Abs(res.RelDiff) <= tol {
		res.LikeForLike = true
		res.MatchedCanary, res.MatchedBaseline, res.MatchedRelDiff = res.Canary, res.Baseline, res.RelDiff
		res.Reason = fmt.Sprintf("like-for-like load: %.4g vs %.4g requests per replica-second (%+.1f%%, tolerance ±%.0f%%)",
			res.Canary, res.Baseline, 100*res.RelDiff, 100*tol)
		return res, nil
	}
	width := math.Log1p(tol)
	bin := func(l Load, t int) (int, bool) {
		if !(l.ReplicaSecs[t] > 0) {
			return 0, false
		}
		r := l.Offered[t] / l.ReplicaSecs[t]
		if r == 0 {
			return math.MinInt, true
		}
		return int(math.Floor(math.Log(r) / width)), true
	}
	members := func(l Load) map[int][]int {
		m := map[int][]int{}
		for t := range l.Offered {
			if k, ok := bin(l, t); ok {
				m[k] = append(m[k], t)
			}
		}
		return m
	}
	mx, my := members(canary), members(baseline)
	kx, ky := make([]bool, len(canary.Offered)), make([]bool, len(baseline.Offered))
	nx, ny := 0, 0
	pick := func(keep []bool, idx []int, m int) {
		// m of len(idx) buckets, evenly spread over the arm's run
		for i := range m {
			keep[idx[(2*i+1)*len(idx)/(2*m)]] = true
		}
	}
	for k, ix := range mx {
		iy := my[k]
		m := min(len(ix), len(iy))
		if m == 0 {
			continue
		}
		pick(kx, ix, m)
		pick(ky, iy, m)
		nx += m
		ny += m
	}
	res.MatchedCanary, res.MatchedBaseline = rate(canary, kx), rate(baseline, ky)
	res.MatchedRelDiff = res.MatchedCanary/res.MatchedBaseline - 1
	head := fmt.Sprintf("offered load per replica-second differs: %.4g vs %.4g (%+.1f%%, tolerance ±%.0f%%)",
		res.Canary, res.Baseline, 100*res.RelDiff, 100*tol)
	if nx >= MinCovariateBuckets && ny >= MinCovariateBuckets && math.Abs(res.MatchedRelDiff) <= tol {
		res.Matched, res.LikeForLike = true, true
		res.KeepCanary, res.KeepBaseline = kx, ky
		res.Reason = fmt.Sprintf("%s; compared on %d canary and %d baseline buckets of matched load (%.4g vs %.4g, %+.1f%%)",
			head, nx, ny, res.MatchedCanary, res.MatchedBaseline, 100*res.MatchedRelDiff)
		return res, nil
	}
	res.Reason = fmt.Sprintf("%s; not like-for-like: only %d canary and %d baseline buckets share a load level (need ≥ %d each, within ±%.0f%%)",
		head, nx, ny, MinCovariateBuckets, 100*tol)
	return res, nil
}

// SRMThreshold is the p-value below which the observed split is a sample
// ratio mismatch (statistics.md §2).
const SRMThreshold = 0.001

// SRMResult is the traffic-split check.
type SRMResult struct {
	Canary, Baseline float64 // offered requests per arm
	// ExpectedShare is the declared canary share; ObservedShare is
	// Canary/(Canary+Baseline).
	ExpectedShare, ObservedShare float64
	Chi2, P                      float64
	// Mismatch is P < SRMThreshold: routing, retries or shedding differ
	// between arms and the experiment is broken (a guardrail failure).
	Mismatch bool
	Reason   string
}

// SRM tests the observed offered requests per arm against the declared
// canary share in (0, 1) (policy traffic.canary_share) with Pearson's
// chi-square (1 degree of freedom, stats.SRM). Counts are first attempts or
// all offered requests, whichever the caller declares; note that the test
// treats requests as independent, which is why the threshold is the strict
// p < 0.001. Invalid input (share outside (0, 1), negative or no counts)
// gives NaN statistics and no mismatch, with the reason.
func SRM(canary, baseline, canaryShare float64) SRMResult {
	res := SRMResult{Canary: canary, Baseline: baseline, ExpectedShare: canaryShare,
		ObservedShare: canary / (canary + baseline), Chi2: math.NaN(), P: math.NaN()}
	if !(canaryShare > 0 && canaryShare < 1) {
		res.Reason = fmt.Sprintf("no traffic-split check: declared canary share %g is not in (0, 1)", canaryShare)
		return res
	}
	res.Chi2, res.P = stats.SRM([]float64{canary, baseline}, []float64{canaryShare, 1 - canaryShare})
	if math.IsNaN(res.P) {
		res.Reason = fmt.Sprintf("no traffic-split check: counts canary %g, baseline %g are not usable", canary, baseline)
		return res
	}
	res.Mismatch = res.P < SRMThreshold
	verdict := "consistent with"
	if res.Mismatch {
		verdict = "sample ratio mismatch against"
	}
	res.Reason = fmt.Sprintf("traffic split %.0f/%.0f (canary share %.2f%%) %s the declared %.2f%%: χ² = %.4g, p = %.3g (mismatch below %g)",
		canary, baseline, 100*res.ObservedShare, verdict, 100*canaryShare, res.Chi2, res.P, SRMThreshold)
	return res
}
