package analysis

import (
	"fmt"
	"math"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// Replicas of their own speeds and the tail gates. A replica 12% slower
// all run scales its latencies, and its arm's p99 moves by its share of
// that in every batch alike: an interval from batches in time does not see
// it. On the fleet model with replicas whose speeds differ by 12% (σ of
// the log) identical arms failed 6 of 100 runs, 5 of them on a tail gate,
// whose intervals held the true ratio in 25–35% of runs at nominal 90%.
// The TTFT and TPOT quantile gates (pooled and per class) are widened by
// the between-replica variance of the replicas' typical latency
// (stats.BetweenReplicaLevelsOfBaseline on the log of each replica's
// per-bucket median, on the coarse bins the aggregate keeps,
// loglin.SliceBins.Median), whenever the records name their replicas. How far
// replicas differ by chance is told by the baseline's replicas alone: a
// canary replica unlike them is the canary's to answer for (one canary
// replica ×1.5 slower fails every run on the fleet model; pooled with
// the canary's replicas, that replica widened the interval over itself
// and 93% of those runs were inconclusive). E2E and metrics are not
// widened.

// levelLatency reports whether a latency has per-replica medians on every
// path that names replicas (TTFT and TPOT; not E2E).
func levelLatency(latency string) bool { return latency == "ttft" || latency == "tpot" }

// replicaLevels lays an arm's analysed requests out per replica on its
// bucket grid from the first kept bucket: the log of the coarse median of
// latency over its completed requests per bucket (NaN where none), and
// the requests it was sent (Count). ok is false when an analysed request
// names no replica, the arm has no time grid, or latency has no levels.
func (a *armData) replicaLevels(latency string) ([]stats.ReplicaLevels, bool) {
	if a.pseudo || a.firstKept >= len(a.buckets) || !levelLatency(latency) {
		return nil, false
	}
	nb := len(a.buckets) - a.firstKept
	// per replica seen: the requests it was sent per bucket and the
	// coarse bins of its latencies
	type rep struct {
		count []float64
		hists []loglin.SliceBins
	}
	byID := make([]*rep, len(a.repNames))
	named := a.eachAnalysed(func(i, t int) {
		r := &a.ds.Requests[i]
		x := byID[a.repID[i]]
		if x == nil {
			x = &rep{count: make([]float64, nb), hists: make([]loglin.SliceBins, nb)}
			byID[a.repID[i]] = x
		}
		x.count[t]++
		if latencyOf(r, latency) {
			if bin, ok := loglin.Index(latencyValue(r, latency)); ok {
				x.hists[t].AddBin(loglin.Coarse(bin), 1)
			}
		}
	})
	names, reps := seenReplicas(a.repNames, byID)
	if !named || len(names) == 0 {
		return nil, false
	}
	out := make([]stats.ReplicaLevels, len(names))
	for k, x := range reps {
		lv := make([]float64, nb)
		for t := range lv {
			lv[t] = logLevel(x.hists[t].Median())
		}
		out[k] = stats.ReplicaLevels{Level: lv, Count: x.count}
	}
	return byName(names, out), true
}

// logLevel is the log of a median, NaN where there is none (or it is not
// a positive, finite number of seconds).
func logLevel(m float64) float64 {
	if !(m > 0) || math.IsInf(m, 1) {
		return math.NaN()
	}
	return math.Log(m)
}

// replicaLevels lays an aggregated arm's replicas out on its analysed
// slices from the aggregate's replica tracks: the log of each one's
// median latency per slice, and its requests judged there (Count). ok is
// false when the aggregate was not built from records that name their
// replicas, its tracks carry no medians, or latency has none.
func (a *aggArm) replicaLevels(latency string) ([]stats.ReplicaLevels, bool) {
	counts, ok := a.replicaCounts()
	if !ok || !levelLatency(latency) {
		return nil, false
	}
	slots, _ := a.replicaSlots()
	out := make([]stats.ReplicaLevels, len(a.ds.Agg.Replicas))
	for r, tr := range a.ds.Agg.Replicas {
		med := tr.TTFTMedian
		if latency == "tpot" {
			med = tr.TPOTMedian
		}
		if med == nil {
			return nil, false
		}
		lv := make([]float64, len(slots))
		for i, k := range slots {
			lv[i] = math.NaN()
			if k >= 0 && k < len(med) {
				lv[i] = logLevel(med[k])
			}
		}
		out[r] = stats.ReplicaLevels{Level: lv, Count: counts[r].Offered}
	}
	return out, true
}

// replicaLevelSpread is the widening of a latency's quantile gates from
// the arms' replicas (b and c, nil when the records do not name them).
func replicaLevelSpread(b, c []stats.ReplicaLevels) stats.LevelSpread {
	if b == nil || c == nil {
		return stats.LevelSpread{}
	}
	ls, _ := stats.BetweenReplicaLevelsOfBaseline(b, c, stats.LagWindowBatches)
	return ls
}

// replicaArm is an arm whose replicas' levels and tail shares can be
// laid out on its analysed grid: the request path's armData and the
// aggregate's aggArm.
type replicaArm interface {
	replicaLevels(latency string) ([]stats.ReplicaLevels, bool)
	replicaTails(latency string) (counts []stats.ReplicaCounts, edge, slope float64, ok bool)
}

// latencySpreads is latencySpread for every latency that gates's
// quantile gates read and that has per-replica levels (TTFT, TPOT), keyed
// by latency: computed once before the gates are evaluated side by side
// (a pooled gate and its per-class gates share it; on the request path
// each one walks every request), then only read.
func latencySpreads(b, c replicaArm, gates []policies.Gate) map[string]latencyWidening {
	out := map[string]latencyWidening{}
	for _, g := range gates {
		info, _ := policies.Metric(g.Metric)
		if _, done := out[info.Latency]; done || info.Quantile == 0 || !levelLatency(info.Latency) {
			continue
		}
		out[info.Latency] = latencySpread(b, c, info.Latency)
	}
	return out
}

// latencySpread is the replica widening of latency's quantile gates from
// both arms' replicas (b the baseline, c the canary's analysed requests
// as counted, not reweighted).
func latencySpread(b, c replicaArm, latency string) latencyWidening {
	var w latencyWidening
	lb, okb := b.replicaLevels(latency)
	lc, okc := c.replicaLevels(latency)
	if okb && okc {
		w.levels = replicaLevelSpread(lb, lc)
		w.levelCap, _ = stats.LevelCapacityOfBaseline(lb, lc, stats.LagWindowBatches)
	}
	tb, eb, sb, okb := b.replicaTails(latency)
	tc, ec, sc, okc := c.replicaTails(latency)
	if okb && okc {
		w.tail = tailSpread(tb, tc, [2]float64{eb, ec}, [2]float64{sb, sc})
	}
	return w
}

// withReplicaLevels widens a latency quantile's log ratio interval by the
// replicas' widening w (the larger of its parts) and says so in notes; est
// is returned as it was when w adds nothing.
func withReplicaLevels(est stats.Estimate, conf float64, w latencyWidening, latency string, notes *[]string) stats.Estimate {
	v, df := w.vars()
	if !(v > 0) {
		return est
	}
	wide := stats.WithExtraVariance(est, conf, v, df)
	if old := est.CI.Hi - est.CI.Lo; old > 0 && !math.IsInf(old, 0) && wide.CI != est.CI {
		wide.Method += "+replica-levels"
		ls, ts := w.levels, w.tail
		tv, _ := ts.vars()
		msg := fmt.Sprintf("interval widened ×%.2f for replicas of their own speeds: median %s %.1f%% apart between the baseline's %d replicas (σ of the log, %g degrees of freedom)",
			(wide.CI.Hi-wide.CI.Lo)/old, fmtLatency(latency), 100*math.Sqrt(ls.Tau2), ls.Replicas[0], ls.DF)
		if c := w.levelCap; c.Var > 0 {
			msg += fmt.Sprintf(", and through the arm's capacity (replica shares of traffic %.1f%% apart, σ): its median %+.2f%% per 1%% of load", 100*math.Sqrt(c.Speed2), c.Slope)
		}
		msg += fmt.Sprintf("; their shares beyond the arm's p%g (%.4g s; the canary's %.4g s) %.2f pp apart (σ, %g degrees of freedom)",
			100*sources.ReplicaTailQuantile, ts.edges[0], ts.edges[1], 100*math.Sqrt(ts.share.Tau2), ts.share.DF)
		if c := ts.capacity; c.Var > 0 {
			msg += fmt.Sprintf(", and through the arm's capacity: replica shares of traffic %.1f%% apart (σ), %.2f pp more beyond it per 1%% of load", 100*math.Sqrt(c.Speed2), c.Slope)
		}
		*notes = append(*notes, msg+fmt.Sprintf(": %.1f%% of the quantile", 100*math.Sqrt(tv)))
	}
	return wide
}

// fmtLatency is a latency's name as the report writes it.
func fmtLatency(latency string) string {
	switch latency {
	case "ttft":
		return "TTFT"
	case "tpot":
		return "TPOT"
	}
	return latency
}

// A replica can be as fast as its peers at the median and slower in its
// tail alone (a noisy neighbour that stalls one request in fifty): on the
// fleet model with each replica's latency spread ×exp(N(0, 0.2)) the
// medians saw nothing, the TTFT p99 interval held identical arms' true
// ratio in 38% of runs, and 8% of them failed. So the tail is measured
// too: each replica's share of its arm's requests beyond the arm's p99
// (sources.ReplicaTail), whose between-replica variance
// (stats.BetweenReplicasOfBaseline on those counts) is turned into a variance of
// the log quantile by the arm's d log Q/dp there. The gate takes the
// larger of the two widenings: a replica slower throughout shows in both,
// a replica with a heavier tail only in the second. Each part counts the
// arm's capacity too (stats.LevelCapacityOfBaseline for the medians,
// stats.CapacityOfBaseline for the tail shares), added as standard
// deviations: under a least-loaded router a slow replica slows its whole
// arm (the simulator's tpot_p99 was covered in 82% of runs without the
// medians' part, 88% with it).

// tailWidening is the share part: the between-replica spread of the
// shares beyond the arms' p99 and the mean of the arms' squared log
// slopes there.
type tailWidening struct {
	share stats.ReplicaSpread
	// capacity is the arm's capacity part in share units (under a
	// router that weighs replicas by speed): the shares' fall with load
	// times the replicas' speeds (stats.CapacityOfBaseline)
	capacity stats.ReplicaCapacity
	slope2   float64
	edges    [2]float64
}

// vars returns the tail part's variance of the log quantile and its
// degrees of freedom: the spread and capacity parts added as standard
// deviations (sdSum, as the attainment gate's), times the
// squared slope.
func (t tailWidening) vars() (v, df float64) {
	v, df = sdSum([2]float64{t.share.Var, t.share.DF}, [2]float64{t.capacity.Var, t.capacity.DF})
	return v * t.slope2, df
}

// latencyWidening is what replicas of their own speeds add to a latency
// quantile's log ratio: the spread of their medians (with the arm's
// capacity read from them, levelCap) and of their tails.
type latencyWidening struct {
	levels   stats.LevelSpread
	levelCap stats.ReplicaCapacity
	tail     tailWidening
}

// vars returns the larger of the two parts' variances of the log ratio
// and its degrees of freedom.
func (w latencyWidening) vars() (v, df float64) {
	v, df = sdSum([2]float64{w.levels.Var, w.levels.DF}, [2]float64{w.levelCap.Var, w.levelCap.DF})
	if tv, tdf := w.tail.vars(); tv > v && tdf > 0 {
		v, df = tv, tdf
	}
	if !(v > 0) || math.IsInf(v, 1) {
		return 0, 0
	}
	return v, df
}

// replicaTails lays an arm's requests out per replica on its analysed
// buckets as counts: Offered its completed requests with a known value of
// latency, Good those up to its arm's ReplicaTailQuantile (found, as the
// aggregate finds it, on coarse bins from every bucket's values of every
// replica: loglin.ReplicaMedians.TailBin). ok is false when the records
// do not name their replicas or latency has no levels.
func (a *armData) replicaTails(latency string) (counts []stats.ReplicaCounts, edge, slope float64, ok bool) {
	if a.pseudo || a.firstKept >= len(a.buckets) || !levelLatency(latency) {
		return nil, 0, 0, false
	}
	// per replica seen: the coarse bins of its latencies per bucket (of
	// every bucket, cut ones too: the arm's tail is read from them all,
	// as the aggregate reads it)
	type rep struct{ hists []loglin.SliceBins }
	byID := make([]*rep, len(a.repNames))
	for i := range a.ds.Requests {
		r := &a.ds.Requests[i]
		bi := int(a.bidx[i])
		if bi < 0 || a.repID[i] < 0 || (a.exclude != nil && a.exclude[i]) {
			continue
		}
		x := byID[a.repID[i]]
		if x == nil {
			x = &rep{hists: make([]loglin.SliceBins, len(a.buckets))}
			byID[a.repID[i]] = x
		}
		if latencyOf(r, latency) {
			if bin, ok := loglin.Index(latencyValue(r, latency)); ok {
				x.hists[bi].AddBin(loglin.Coarse(bin), 1)
			}
		}
	}
	// the bins pooled for the arm's tail: every replica's every bucket
	// (an empty one adds nothing)
	var all []*loglin.SliceBins
	for _, x := range byID {
		if x != nil {
			for k := range x.hists {
				all = append(all, &x.hists[k])
			}
		}
	}
	c, edge, slope, ok := loglin.TailBinOf(all, sources.ReplicaTailQuantile)
	if !ok {
		return nil, 0, 0, false
	}
	nb := len(a.buckets) - a.firstKept
	names, reps := seenReplicas(a.repNames, byID)
	counts = make([]stats.ReplicaCounts, len(names))
	for k, x := range reps {
		rc := stats.ReplicaCounts{Offered: make([]float64, nb), Good: make([]float64, nb)}
		for t := range nb {
			if b := &a.buckets[a.firstKept+t]; b.cut || b.leftOut {
				continue
			}
			known, over := x.hists[a.firstKept+t].Beyond(c)
			rc.Offered[t], rc.Good[t] = known, known-over
		}
		counts[k] = rc
	}
	return byName(names, counts), edge, slope, true
}

// replicaTails lays an aggregated arm's replicas out on its analysed
// slices as the request path does (armData.replicaTails), from the
// aggregate's replica tracks (ReplicaTrack.TTFTTail, TPOTTail).
func (a *aggArm) replicaTails(latency string) (counts []stats.ReplicaCounts, edge, slope float64, ok bool) {
	slots, ok := a.replicaSlots()
	if !ok || !levelLatency(latency) {
		return nil, 0, 0, false
	}
	counts = make([]stats.ReplicaCounts, len(a.ds.Agg.Replicas))
	for r, tr := range a.ds.Agg.Replicas {
		tail := tr.TTFTTail
		if latency == "tpot" {
			tail = tr.TPOTTail
		}
		if tail.Known == nil {
			return nil, 0, 0, false
		}
		edge, slope = tail.Edge, tail.LogSlope
		rc := stats.ReplicaCounts{Offered: make([]float64, len(slots)), Good: make([]float64, len(slots))}
		for i, k := range slots {
			if k >= 0 && k < len(tail.Known) {
				rc.Offered[i], rc.Good[i] = tail.Known[k], tail.Known[k]-tail.Over[k]
			}
		}
		counts[r] = rc
	}
	return counts, edge, slope, true
}

// tailSpread is the tail part of the widening from both arms' counts
// beyond their p99s (nil when not known).
func tailSpread(b, c []stats.ReplicaCounts, edges, slopes [2]float64) tailWidening {
	if b == nil || c == nil || math.IsNaN(slopes[0]) || math.IsNaN(slopes[1]) {
		return tailWidening{}
	}
	rs, ok := stats.BetweenReplicasOfBaseline(b, c, stats.LagWindowBatches)
	if !ok {
		return tailWidening{}
	}
	rc, _ := stats.CapacityOfBaseline(b, c, stats.LagWindowBatches)
	return tailWidening{share: rs, capacity: rc, slope2: (slopes[0]*slopes[0] + slopes[1]*slopes[1]) / 2, edges: edges}
}
