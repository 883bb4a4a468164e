package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/sources"
)

// ReplicaCut is one replica's own warm-up found on an arm's aggregate: the
// requests replica Replica received in slices FromSlice up to (not
// including) UntilSlice, slice numbers floor(t/step) on the aggregate's
// grid, are to be left out of the judged counts (Aggregator.Exclude).
// Detail says what was cut, for the report.
type ReplicaCut struct {
	Replica               string
	FromSlice, UntilSlice int64
	Detail                string
}

// ReplicaWarmupPlan is what ReplicaWarmupCuts found for one arm: the
// replicas' cuts, and the arm's own warm-up decision, to be kept when the
// records are counted again without the cut requests (Aggregator.Exclude).
type ReplicaWarmupPlan struct {
	Cuts   []ReplicaCut
	Warmup sources.AggWarmup
}

// ReplicaWarmupCuts finds, on both arms' aggregates of per-request records,
// the replicas that entered service after the arm's analysed window starts
// (joining late, or serving again after a gap: a restart) and were slow at
// first, by the request path's rule (replicaWarmups): each such entry's
// per-slice TTFT medians (ReplicaTrack.TTFTMedian) go through the arm's
// warm-up rule (normalize.ReplicaStarts), and a confirmed slow start is
// cut. The arms' own warm-up cuts are taken first, as the judge takes them
// (aggArms), since a replica entering within the arm's cut is covered by
// it; they are returned with the cuts, so that the arm counted again
// keeps them (the request path, too, decides the arm's cut first). Nothing is found under a fixed or no warm-up (window.warmup other
// than auto), from metrics, or without TTFT medians (a source that keeps
// none). The cuts are applied by aggregating the records again with
// Aggregator.Exclude; the judge then reports them (Aggregate.ReplicaWarmups).
func ReplicaWarmupCuts(baseline, canary *sources.Dataset, cfg Config) ([2]ReplicaWarmupPlan, error) {
	var out [2]ReplicaWarmupPlan
	if cfg.Policy.Window.Warmup != "auto" || baseline.Agg == nil || canary.Agg == nil {
		return out, nil
	}
	// the arms' own cuts are needed only when a replica enters after
	// the start: most runs have none, and cutting costs a pass over
	// every bin
	var ent [2]replicaEntries
	found := false
	for i, ds := range []*sources.Dataset{baseline, canary} {
		ent[i] = entriesOf(ds.Agg)
		found = found || len(ent[i].late)+len(ent[i].gaps) > 0
	}
	if !found {
		return out, nil
	}
	j, err := aggArms(baseline, canary, cfg)
	if err != nil {
		return out, err
	}
	for i, a := range []*aggArm{j.b, j.c} {
		st := j.steps[j.warmStep[i]]
		out[i] = ReplicaWarmupPlan{Cuts: replicaCutsOf(a, ent[i]),
			Warmup: sources.AggWarmup{From: a.slices[0].start, Detail: st.Detail, Applied: st.Applied, DriftAt: a.driftAt}}
	}
	return out, nil
}

// replicaEntries are an arm's replicas entering service after its first
// slice: late[name] is the slice index (into the tracks) of a replica's
// first, gaps[name] those where it serves again after a gap.
type replicaEntries struct {
	names      []string // the tracks' replica names, unquoted
	late, gaps map[string][]int
}

// entriesOf finds the entries of an aggregate of records whose tracks
// have TTFT medians; none otherwise.
func entriesOf(agg *sources.Aggregate) replicaEntries {
	e := replicaEntries{late: map[string][]int{}, gaps: map[string][]int{}}
	if agg == nil || !agg.Exact || len(agg.Replicas) < 2 {
		return e
	}
	e.names = make([]string, len(agg.Replicas))
	acts := make([]normalize.ReplicaActivity, len(agg.Replicas))
	for k, tr := range agg.Replicas {
		name, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(tr.Name, "{replica="), "}"))
		if err != nil || tr.TTFTMedian == nil {
			return replicaEntries{}
		}
		e.names[k] = name
		acts[k] = normalize.ReplicaActivity{Name: name, Requests: make([]float64, len(tr.Finished))}
		for b, v := range tr.Finished {
			acts[k].Requests[b] = nan0(v)
		}
		for b, v := range tr.Finished {
			if !math.IsNaN(v) {
				if b > 0 {
					e.late[name] = append(e.late[name], b)
				}
				break
			}
		}
	}
	for _, ev := range normalize.ReplicaLoss(acts, normalize.LossOptions{BucketSecs: agg.Step}) {
		if ev.Kind == normalize.EventGap && ev.To < len(agg.Replicas[0].Finished) {
			e.gaps[ev.Replica] = append(e.gaps[ev.Replica], ev.To)
		}
	}
	return e
}

// replicaCutsOf finds one arm's replica warm-ups (see ReplicaWarmupCuts)
// among its entries: a late first entry counts only after the arm's own
// cut, which covers the replicas entering within it.
func replicaCutsOf(a *aggArm, e replicaEntries) []ReplicaCut {
	agg := a.ds.Agg
	if len(e.names) == 0 || len(a.slices) == 0 || len(a.allStarts) == 0 {
		return nil
	}
	step := agg.Step
	lo := int64(math.Round(a.allStarts[0] / step))
	firstKept := int(math.Round((a.slices[0].start - a.allStarts[0]) / step))
	names := e.names
	entries := map[string][]int{}
	for _, n := range names {
		for _, b := range e.late[n] {
			if b > firstKept {
				entries[n] = append(entries[n], b)
			}
		}
		entries[n] = append(entries[n], e.gaps[n]...)
	}
	var series []normalize.ReplicaSeries
	for k, tr := range agg.Replicas {
		for _, f := range entries[names[k]] {
			series = append(series, normalize.ReplicaSeries{Name: names[k], First: f, Medians: tr.TTFTMedian})
		}
	}
	var cuts []ReplicaCut
	for _, w := range normalize.ReplicaStarts(series, normalize.WarmupOptions{}) {
		if w.Result.Cut == 0 || !(w.Result.MeanBefore > w.Result.MeanAfter) {
			continue
		}
		cuts = append(cuts, ReplicaCut{Replica: w.Name, FromSlice: lo + int64(w.First), UntilSlice: lo + int64(w.Until),
			Detail: fmt.Sprintf("replica %q entered at %gs: cut its first %gs (median TTFT %.4gs, then %.4gs)",
				w.Name, float64(w.First)*step, float64(w.Until-w.First)*step, w.Result.MeanBefore, w.Result.MeanAfter)})
	}
	return cuts
}
