package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/sources"
)

// Replicas that differ for the whole run. A canary on four replicas is
// four GPUs, hosts and placements; when one of them is a few percent
// slower all run, the arm's attainment moves by its share of that, in
// every batch alike, so an interval from batches in time alone (the paired
// lag window) does not see it: on the fleet model with replicas whose
// speeds differ by 3% (σ of the log) the attainment interval held the
// identical arms' true difference in 52% of runs at nominal 90%. The
// slo_attainment gate's interval is widened by the between-replica
// variance estimated from both arms' replicas (stats.BetweenReplicas),
// on the degrees of freedom that few replicas give, whenever the records
// name their replicas (request logs, a column store). Metrics carry no
// per-replica good counts; where a source of metrics reads each
// replica's own latency histograms (sources.ReplicaTrack.TTFTHist,
// TPOTHist) its good requests are bounded from them (replicaBounded) and
// the interval is widened the same way.
//
// Under a least-loaded router a slow replica is not seen by that spread
// alone: it takes fewer requests, its peers more, and the whole arm is
// slower (the simulator's replicas 3–7% apart were covered in 78% of runs
// with the spread alone). stats.Capacity adds the variance of the arm's
// capacity: the replicas' speeds from the spread of their shares of the
// traffic, times the attainment the run loses per unit of load (92% in the
// same runs, the two parts added as standard deviations: see vars). A
// router that ignores load gives equal shares, and nothing is added.

// replicaCounts lays an arm's analysed requests out per replica on its
// bucket grid from the first kept bucket: offered and good per bucket.
// ok is false when an analysed request names no replica or the arm has
// no time grid.
func (a *armData) replicaCounts() ([]stats.ReplicaCounts, bool) {
	if a.pseudo || a.firstKept >= len(a.buckets) {
		return nil, false
	}
	nb := len(a.buckets) - a.firstKept
	byID := make([]*stats.ReplicaCounts, len(a.repNames))
	named := a.eachAnalysed(func(i, t int) {
		rc := byID[a.repID[i]]
		if rc == nil {
			rc = &stats.ReplicaCounts{Offered: make([]float64, nb), Good: make([]float64, nb)}
			byID[a.repID[i]] = rc
		}
		rc.Offered[t]++
		if a.good[i] {
			rc.Good[t]++
		}
	})
	if !named {
		return nil, false
	}
	names, out := seenReplicas(a.repNames, byID)
	return byName(names, out), len(out) > 0
}

// replicaInFlight is the request path's arm's replicas' requests in
// flight at the end of each analysed bucket (from firstKept, neither cut
// nor left out), counted from every record of the arm as the streaming
// aggregate counts them (Aggregator.flightEnd, sources.ReplicaSpans):
// a request its replica admitted is in flight from its arrival's bucket
// to that of arrival + E2E. ok is false without named replicas or a time
// grid, or when no record's end-to-end latency is known.
func (a *armData) replicaInFlight() ([][]float64, bool) {
	if a.pseudo || !a.replicasKnown || a.firstKept >= len(a.buckets) {
		return nil, false
	}
	w := a.bucketSecs
	spans := sources.ReplicaSpans{}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range a.ds.Requests {
		r := &a.ds.Requests[i]
		if !sources.Known(r.Time) || math.IsInf(r.Time, 0) {
			continue
		}
		sl := int64(math.Floor(r.Time / w))
		lo, hi = min(lo, sl), max(hi, sl)
		if r.Replica == "" {
			continue
		}
		spans.Add(r.Replica, sl, finished(r), 0, 0)
		if end := flightEnd(r, sl, w); end != noFlight {
			spans.AddFlights(r.Replica, sl, end, 1, 1)
		}
	}
	if lo > hi {
		return nil, false
	}
	_, tracks := spans.Tracks(lo, hi)
	at := make([]int, 0, len(a.buckets)-a.firstKept)
	for bi := a.firstKept; bi < len(a.buckets); bi++ {
		if b := &a.buckets[bi]; !b.cut && !b.leftOut {
			at = append(at, int(a.slice0+int64(bi)-lo))
		}
	}
	return inFlightAt(tracks, at)
}

// inFlightAt lays the replicas' tracks' requests in flight out at
// positions at (indexes into each track's per-slice series; NaN out of
// range), a replica down there left out (withoutIdle). ok is false
// without tracks or when any carries none.
func inFlightAt(tracks []sources.ReplicaTrack, at []int) ([][]float64, bool) {
	out := make([][]float64, 0, len(tracks))
	fins := make([][]float64, 0, len(tracks))
	for _, tr := range tracks {
		if tr.InFlight == nil {
			return nil, false
		}
		s, fin := make([]float64, len(at)), make([]float64, len(at))
		for i, k := range at {
			s[i], fin[i] = math.NaN(), math.NaN()
			if k >= 0 && k < len(tr.InFlight) {
				s[i] = tr.InFlight[k]
			}
			if k >= 0 && k < len(tr.Finished) {
				fin[i] = tr.Finished[k]
			}
		}
		out, fins = append(out, s), append(fins, fin)
	}
	withoutIdle(out, fins)
	return out, len(out) > 0
}

// seenReplicas lists the replicas a walk filled (non-nil in byID, indexed
// as repNames) with their names, in any order (byName orders them).
func seenReplicas[T any](repNames []string, byID []*T) (names []string, out []T) {
	for k, x := range byID {
		if x != nil {
			names, out = append(names, repNames[k]), append(out, *x)
		}
	}
	return names, out
}

// eachAnalysed calls fn for each of the arm's analysed requests (kept, in
// a bucket from firstKept that is neither cut nor left out) with its
// index and its bucket counted from firstKept, in order; it stops and
// returns false at one that names no replica.
func (a *armData) eachAnalysed(fn func(i, t int)) bool {
	for i := range a.ds.Requests {
		bi := int(a.bidx[i])
		if !a.keep[i] || bi < a.firstKept {
			continue
		}
		if b := &a.buckets[bi]; b.cut || b.leftOut {
			continue
		}
		if a.ds.Requests[i].Replica == "" {
			return false
		}
		fn(i, bi-a.firstKept)
	}
	return true
}

// byName orders replicas' series by their names (the order a map gave
// must not reach a float sum).
func byName[T any](names []string, xs []T) []T {
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Compare(names[x], names[y]) })
	out := make([]T, len(order))
	for i, k := range order {
		out[i] = xs[k]
	}
	return out
}

// replicaWidening is what replicas of their own speeds add to an
// attainment difference's variance: their spread (stats.BetweenReplicas)
// and, where a router spreads a slow replica's load over its peers, the
// arm's capacity (stats.Capacity).
type replicaWidening struct {
	spread   stats.ReplicaSpread
	capacity stats.ReplicaCapacity
}

// vars returns the variance both parts add and its degrees of freedom.
// Both come from the same replicas' speeds with the same sign (a slower
// replica misses more of its own requests and leaves its arm less
// capacity), so their standard deviations add: (√v₁ + √v₂)², not v₁ + v₂
// (on the fleet model with a router that weighs replicas by speed the
// variances' sum left the A/A difference's spread 1.28× wider than the
// interval allowed for). The degrees of freedom are the fewer of the two
// parts' (both are counted on the same replicas).
func (w replicaWidening) vars() (v, df float64) {
	return sdSum([2]float64{w.spread.Var, w.spread.DF}, [2]float64{w.capacity.Var, w.capacity.DF})
}

// sdSum adds parts (variance, degrees of freedom) that share a sign as
// standard deviations, (Σ√vᵢ)², on the fewest degrees of freedom; a part
// without a positive variance and degrees of freedom adds nothing, and
// none gives (0, 0).
func sdSum(parts ...[2]float64) (v, df float64) {
	var sd float64
	df = math.Inf(1)
	for _, p := range parts {
		if p[0] > 0 && p[1] > 0 {
			sd += math.Sqrt(p[0])
			df = min(df, p[1])
		}
	}
	if !(sd > 0) {
		return 0, 0
	}
	return sd * sd, df
}

// scaled is w with both parts' variances times f (the spread of a
// difference of shares carried to the log ratio of shares near v: f =
// 1/v²).
func (w replicaWidening) scaled(f float64) replicaWidening {
	w.spread.Var *= f
	w.capacity.Var *= f
	return w
}

// replicaSpread is the widening from the arms' replicas (b and c, nil
// when the records do not name them); it adds nothing when there is
// nothing to add. It does not depend on the confidence level: a gate
// computes it once and widens each of its intervals by it.
func replicaSpread(b, c []stats.ReplicaCounts) replicaWidening {
	if b == nil || c == nil {
		return replicaWidening{}
	}
	var w replicaWidening
	if rs, ok := stats.BetweenReplicas(b, c, stats.LagWindowBatches); ok {
		w.spread = rs
	}
	if rc, ok := stats.Capacity(b, c, stats.LagWindowBatches); ok {
		w.capacity = rc
	}
	return w
}

// withReplicaSpread widens an attainment difference's interval by the
// replicas' widening w (replicaSpread) and says so in notes (a gate's
// Adjusted); est is returned as it was when w adds nothing.
func withReplicaSpread(est stats.Estimate, conf float64, w replicaWidening, notes *[]string) stats.Estimate {
	v, df := w.vars()
	if !(v > 0) {
		return est
	}
	wide := stats.WithExtraVariance(est, conf, v, df)
	wide.Method += "+replica-spread"
	if old := est.CI.Hi - est.CI.Lo; old > 0 && !math.IsInf(old, 0) {
		rs := w.spread
		msg := fmt.Sprintf("interval widened ×%.2f for replicas that differ all run: %.2f pp between replicas (σ, from the arms' %d + %d replicas, %g degrees of freedom)",
			(wide.CI.Hi-wide.CI.Lo)/old, 100*math.Sqrt(rs.Tau2), rs.Replicas[0], rs.Replicas[1], rs.DF)
		if c := w.capacity; c.Var > 0 {
			msg += fmt.Sprintf(", and their speeds through the arm's capacity: replica shares of traffic %.1f%% apart (σ), attainment %.2f pp per 1%% of load", 100*math.Sqrt(c.Speed2), c.Slope)
		}
		*notes = append(*notes, msg)
	}
	return wide
}

// replicaCounts lays an aggregated arm's replicas out on its analysed
// slices (after its warm-up cut, stretches left out of both arms
// skipped) from the aggregate's replica tracks: offered and good per
// slice. ok is false when the aggregate was not built from records that
// name their replicas, or its tracks carry no counts (metrics).
func (a *aggArm) replicaCounts() ([]stats.ReplicaCounts, bool) {
	slots, ok := a.replicaSlots()
	if !ok {
		return nil, false
	}
	return layReplicas(a.ds.Agg.Replicas, slots,
		func(tr sources.ReplicaTrack) bool { return tr.Offered != nil && tr.Good != nil },
		func(tr sources.ReplicaTrack, k int) (float64, float64, bool) {
			if k >= len(tr.Offered) {
				return 0, 0, false
			}
			return nan0(tr.Offered[k]), nan0(tr.Good[k]), true
		})
}

// layReplicas lays tracks out on slots (a track's slice per analysed
// slice, −1 for none): per slice at(track, slice) gives a replica's
// offered and good requests (false: none counted). ok is false when a
// track is not usable (usable false for it).
func layReplicas(tracks []sources.ReplicaTrack, slots []int, usable func(sources.ReplicaTrack) bool,
	at func(tr sources.ReplicaTrack, k int) (offered, good float64, ok bool)) ([]stats.ReplicaCounts, bool) {
	out := make([]stats.ReplicaCounts, 0, len(tracks))
	for _, tr := range tracks {
		if !usable(tr) {
			return nil, false
		}
		rc := stats.ReplicaCounts{Offered: make([]float64, len(slots)), Good: make([]float64, len(slots))}
		for i, k := range slots {
			if k < 0 {
				continue
			}
			if o, g, ok := at(tr, k); ok {
				rc.Offered[i], rc.Good[i] = o, g
			}
		}
		out = append(out, rc)
	}
	return out, true
}

// replicaBounded is replicaCounts for an arm read from metrics whose
// replica tracks carry each replica's TTFT and TPOT histograms: per
// analysed slice, a replica's offered requests are those it finished and
// its good ones that count's share at slo, the middle of the bounds its
// histograms give (histo.GoodShare, the arm's own construction; the
// spread asks how far replicas differ, which the same reading of each
// measures). ok is false for an exact aggregate, or when any replica's
// track carries no histograms.
func (a *aggArm) replicaBounded(slo histo.SLO) ([]stats.ReplicaCounts, bool) {
	return a.replicaShares(func(tr sources.ReplicaTrack, k int) (float64, float64, bool) {
		ttft, tpot := histAt(tr.TTFTHist, k), histAt(tr.TPOTHist, k)
		if (!math.IsNaN(slo.TTFT) && !(ttft.Total() > 0)) || (!math.IsNaN(slo.TPOT) && !(tpot.Total() > 0)) {
			return 0, 0, false // nothing to bound its good requests by
		}
		lo, hi := histo.GoodShare(ttft, tpot, slo)
		return tr.Finished[k], tr.Finished[k] * (lo + hi) / 2, true
	})
}

// replicaAtOrBelow is replicaBounded for the exceedance form of a
// latency's tail gate (exceedanceGate): per analysed slice, a replica's
// requests with a value of latency ("ttft", "tpot") and those of them at
// or below edge, seconds.
func (a *aggArm) replicaAtOrBelow(latency string, edge float64) ([]stats.ReplicaCounts, bool) {
	return a.replicaShares(func(tr sources.ReplicaTrack, k int) (float64, float64, bool) {
		hs := tr.TTFTHist
		if latency == "tpot" {
			hs = tr.TPOTHist
		}
		h := histAt(hs, k)
		f := histo.Fraction(h, edge)
		if !(h.Total() > 0) || math.IsNaN(f.Lo) {
			return 0, 0, false
		}
		return h.Total(), h.Total() * (f.Lo + f.Hi) / 2, true
	})
}

// replicaShares lays a metrics arm's replicas out on its analysed slices
// with at(track, slice) giving a replica's offered and good requests
// there (false: none counted). ok is false for an exact aggregate, or
// when any replica's track carries neither histogram.
func (a *aggArm) replicaShares(at func(tr sources.ReplicaTrack, k int) (offered, good float64, ok bool)) ([]stats.ReplicaCounts, bool) {
	agg := a.ds.Agg
	if agg == nil || agg.Exact || len(agg.Replicas) == 0 {
		return nil, false
	}
	slots, ok := a.sliceSlots()
	if !ok {
		return nil, false
	}
	return layReplicas(agg.Replicas, slots,
		func(tr sources.ReplicaTrack) bool { return tr.TTFTHist != nil || tr.TPOTHist != nil },
		func(tr sources.ReplicaTrack, k int) (float64, float64, bool) {
			if k >= len(tr.Finished) || !(tr.Finished[k] > 0) {
				return 0, 0, false
			}
			return at(tr, k)
		})
}

// histAt is hs[k], an empty histogram past its end.
func histAt(hs []sources.Histogram, k int) sources.Histogram {
	if k < len(hs) {
		return hs[k]
	}
	return sources.Histogram{}
}

// replicaInFlight lays an aggregated arm's replicas' requests in flight
// (sources.ReplicaTrack.InFlight, from metrics) out on its analysed
// slices, stretches left out of both arms skipped. ok is false when any
// replica's track carries none.
func (a *aggArm) replicaInFlight() ([][]float64, bool) {
	agg := a.ds.Agg
	if agg == nil || len(agg.Replicas) == 0 {
		return nil, false
	}
	slots, ok := a.sliceSlots()
	if !ok {
		return nil, false
	}
	at := make([]int, 0, len(slots))
	for _, k := range slots {
		if k >= 0 {
			at = append(at, k)
		}
	}
	return inFlightAt(agg.Replicas, at)
}

// idleFinished is the mean number of requests its peers finished in a
// bucket above which a replica that finished none and had none in flight
// there is taken for down (withoutIdle): at random routing a serving
// replica meets that by chance with probability below e⁻⁵ (0.7%).
const idleFinished = 5

// withoutIdle leaves a replica out of a bucket (NaN) where it finished no
// request and had none in flight while the others with a value there
// finished at least idleFinished each on average: a replica down for a
// stretch (crashed, restarting, drained) whose span of service runs on
// around the stretch, and whose zeros would read as uneven routing —
// a least-loaded router read 2.59, as random, over a canary replica's two
// minutes down. inFlight and finished are per replica, per bucket alike.
func withoutIdle(inFlight, finished [][]float64) {
	if len(inFlight) < 2 {
		return
	}
	for j := range inFlight[0] {
		sum, n := 0.0, 0
		for r := range inFlight {
			if !math.IsNaN(inFlight[r][j]) {
				sum, n = sum+nan0(finished[r][j]), n+1
			}
		}
		for r := range inFlight {
			if inFlight[r][j] == 0 && !(finished[r][j] > 0) && n > 1 && (sum-nan0(finished[r][j]))/float64(n-1) >= idleFinished {
				inFlight[r][j] = math.NaN()
			}
		}
	}
}

// replicaSlots maps the arm's analysed slices to the aggregate's replica
// tracks: per slice, the index into every track's per-slice series
// (counted from the arm's first slice), or −1 for a stretch left out of
// both arms. ok is false when the aggregate was not built from records
// that name their replicas.
func (a *aggArm) replicaSlots() ([]int, bool) {
	agg := a.ds.Agg
	if agg == nil || !agg.Exact || agg.ReplicasUnnamed || len(agg.Replicas) == 0 {
		return nil, false
	}
	return a.sliceSlots()
}

// sliceSlots is replicaSlots for any aggregate with a time grid, metrics
// included.
func (a *aggArm) sliceSlots() ([]int, bool) {
	agg := a.ds.Agg
	if agg == nil || len(a.allStarts) == 0 || len(a.slices) == 0 || !(agg.Step > 0) {
		return nil, false
	}
	lo := int64(math.Round(a.allStarts[0] / agg.Step))
	slots := make([]int, len(a.slices))
	for i, s := range a.slices {
		slots[i] = -1
		if !s.leftOut {
			slots[i] = int(int64(math.Round(s.start/agg.Step)) - lo)
		}
	}
	return slots, true
}
