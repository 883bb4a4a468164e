package analysis

import (
	"math"

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
	// Step is the slice width (seconds) of the aggregate the cuts were
	// found on, whose slice numbers they give (Aggregator.Exclude counts
	// on that grid)
	Step float64
}

// Mark records on agg, the arm counted again without the plan's cuts,
// which replicas' warm-ups were left out (ReplicaWarmups) and the arm's
// own warm-up decision to keep (WarmupKept). A plan without cuts marks
// nothing.
func (p ReplicaWarmupPlan) Mark(agg *sources.Aggregate) {
	if len(p.Cuts) == 0 {
		return
	}
	agg.ReplicaWarmups = nil
	for _, c := range p.Cuts {
		agg.ReplicaWarmups = append(agg.ReplicaWarmups, c.Detail)
	}
	w := p.Warmup
	agg.WarmupKept = &w
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
	var acts [2]trackActivity
	found := false
	for i, ds := range []*sources.Dataset{baseline, canary} {
		acts[i] = trackActivityOf(ds.Agg)
		found = found || len(replicaEntries(acts[i].acts, acts[i].first, 0, ds.Agg.Step)) > 0
	}
	if !found {
		return out, nil
	}
	j, err := aggArms(baseline, canary, cfg, false)
	if err != nil {
		return out, err
	}
	for i, a := range []*aggArm{j.b, j.c} {
		st := j.steps[j.warmStep[i]]
		out[i] = ReplicaWarmupPlan{Cuts: replicaCutsOf(a, acts[i]), Step: a.ds.Agg.Step,
			Warmup: sources.AggWarmup{From: a.slices[0].start, Detail: st.Detail, Applied: st.Applied, DriftAt: a.driftAt, LateSlowdown: a.lateSlowdown}}
	}
	return out, nil
}

// trackActivity is an aggregate's replica tracks as replicaEntries and
// replicaStarts read them: per replica (in the tracks' name order) its
// requests per slice, its first slice with a sample, and its TTFT medians.
type trackActivity struct {
	acts    []normalize.ReplicaActivity
	first   []int
	medians [][]float64
}

// trackActivityOf reads the tracks of an aggregate of records whose
// tracks have TTFT medians; it is empty otherwise.
func trackActivityOf(agg *sources.Aggregate) trackActivity {
	var t trackActivity
	if agg == nil || !agg.Exact {
		return t
	}
	for _, tr := range agg.Replicas {
		name, ok := sources.RecordReplica(tr.Name)
		if !ok || tr.TTFTMedian == nil {
			return trackActivity{}
		}
		act := normalize.ReplicaActivity{Name: name, Requests: make([]float64, len(tr.Finished))}
		first := -1 // never entered: no sample at all
		for b, v := range tr.Finished {
			act.Requests[b] = nan0(v)
			if first < 0 && !math.IsNaN(v) {
				first = b
			}
		}
		t.acts, t.first, t.medians = append(t.acts, act), append(t.first, first), append(t.medians, tr.TTFTMedian)
	}
	return t
}

// replicaCutsOf finds one arm's replica warm-ups (see ReplicaWarmupCuts)
// after its own cut, on the aggregate's slice numbers.
func replicaCutsOf(a *aggArm, t trackActivity) []ReplicaCut {
	if len(t.acts) == 0 || len(a.slices) == 0 || len(a.allStarts) == 0 {
		return nil
	}
	step := a.ds.Agg.Step
	lo := int64(math.Round(a.allStarts[0] / step))
	firstKept := int(math.Round((a.slices[0].start - a.allStarts[0]) / step))
	entries := replicaEntries(t.acts, t.first, firstKept, step)
	var cuts []ReplicaCut
	for _, w := range replicaStarts(t.acts, entries, func(k int) []float64 { return t.medians[k] }, step) {
		cuts = append(cuts, ReplicaCut{Replica: w.name, FromSlice: lo + int64(w.first), UntilSlice: lo + int64(w.until), Detail: w.detail})
	}
	return cuts
}

// StreamedArms counts two arms' records in memory as judge --stream counts
// them from files: each into an Aggregator, then an arm with a replica
// warm-up (ReplicaWarmupCuts) again without it. The datasets returned
// carry the aggregates, with the Clock, Location and Inputs given, and no
// requests. An error in the arms that ReplicaWarmupCuts meets is left for
// the judge to report.
func StreamedArms(b, c *sources.Dataset, cfg Config) (*sources.Dataset, *sources.Dataset, error) {
	ds := [2]*sources.Dataset{b, c}
	// count the arms with the plans given, on one grid (the wider of the
	// two: see Aggregator.WidenTo)
	count := func(plans [2]ReplicaWarmupPlan, out *[2]*sources.Dataset) error {
		var ags [2]*Aggregator
		for k, d := range ds {
			if out[k] != nil && len(plans[k].Cuts) == 0 {
				continue // counted already, and not to be cut
			}
			ags[k] = NewAggregator(cfg.Policy)
			ags[k].Exclude(plans[k])
			ags[k].DeclareDuration(d.Duration)
			for i := range d.Requests {
				ags[k].Add(&d.Requests[i])
			}
		}
		step := 0.0
		for k := range ags {
			if ags[k] != nil {
				step = max(step, ags[k].Step())
			} else {
				step = max(step, out[k].Agg.Step)
			}
		}
		for k, ag := range ags {
			if ag == nil {
				continue
			}
			ag.WidenTo(step)
			agg, err := ag.Aggregate(ds[k].Arm)
			if err != nil {
				return err
			}
			d := ds[k]
			out[k] = &sources.Dataset{Arm: d.Arm, Agg: agg, Clock: d.Clock, Location: d.Location, Inputs: d.Inputs}
		}
		return nil
	}
	var arms [2]*sources.Dataset
	if err := count([2]ReplicaWarmupPlan{}, &arms); err != nil {
		return nil, nil, err
	}
	plans, err := ReplicaWarmupCuts(arms[0], arms[1], cfg)
	if err != nil {
		return arms[0], arms[1], nil
	}
	if len(plans[0].Cuts)+len(plans[1].Cuts) > 0 {
		if err := count(plans, &arms); err != nil {
			return nil, nil, err
		}
	}
	return arms[0], arms[1], nil
}
