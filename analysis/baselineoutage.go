package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// MaxBaselineOutages is the most stretches the baseline_outage step leaves
// out of one run: each is found on the run without the ones before it.
const MaxBaselineOutages = 3

// OutageSpreads is how many MAD spreads of the run's stretches of its
// length a stretch must lie below their median for the baseline_outage
// step to leave it out, on top of the attainment_dip conditions. Leaving
// a stretch out is not free: on identical arms it takes away one arm's
// worst stretch and moves the difference toward the canary's harm. On the
// fleet model's noisiest A/A case (per-arm slowdowns σ 0.05, φ 0.9, where
// one arm alone loses 12–41 pp for a minute or two) the t bound alone left
// a stretch out in 11 of 100 runs and attainment's coverage fell from 85
// to 82%; at 12 spreads it leaves one out in 4, none of them moving the
// interval off zero on the harmful side. A two-minute burst of errors at
// half the requests lies 23–94 spreads out: an outage is an order of
// magnitude beyond what the fleet's own noise does. For the same reason a
// canary stretch that deep in which its requests failed (served share
// down by half the depth or more) does not keep the baseline's outage
// from being left out (it is the canary's own outage, which
// attainment_dip then judges on the run without the baseline's): with
// both, each arm's outage otherwise showed the other's as the fleet's
// noise and the run stayed inconclusive however bad the canary's. A
// canary stretch that deep in which its requests only came late does keep
// it in: near its capacity a fleet queues either arm's requests for a
// minute or two on its own (analysis/batchfleet_test.go), and taking out
// only the baseline's queues moved identical arms' attainment 1.5 pp
// toward the canary's harm (5.8 pp with one replica past its knee).
const OutageSpreads = 12

// baselineOutage is a stretch of the arms' shared grid in which the
// baseline alone lost many good requests: [from, to) in seconds on the
// shared clock, whole grid steps, and what the report says of it.
type baselineOutage struct {
	from, to float64
	detail   string
	// shared marks a stretch both arms lost at once (findSharedOutage,
	// the shared_outage step) rather than the baseline alone
	shared bool
}

// holds reports whether the grid step starting at start (seconds on the
// shared clock) lies in the outage.
func (o baselineOutage) holds(start float64) bool {
	return start >= o.from-1e-9 && start < o.to-1e-9
}

// findBaselineOutage is the mirror of the attainment_dip guardrail: the same
// scan (worstDip, with its Newcombe bound at α over the stretches, its
// spread and isolation conditions and its margin's worth of lost
// requests, and at least OutageSpreads spreads deep) with the arms the
// other way round, so that it finds a stretch in which the baseline's
// share of good requests lies far below the canary's at the same time,
// beyond the arms' difference over the run. Such a stretch is the
// baseline's own outage; left in, it is the stretch most
// favourable to the canary and, since the paired intervals take their
// variance from the run's stretches, it keeps every count gate
// inconclusive however sound the canary (on the fleet model a two-minute
// burst of baseline errors left 40 of 40 identical-canary runs
// inconclusive). Leaving it out of both arms moves every count gate's
// point toward the canary's harm: a canary that is worse elsewhere is
// seen worse. False under normalize.baseline_dip: keep.
func findBaselineOutage(p *policies.Policy, g dipGrid, clock sources.Clock) (baselineOutage, bool) {
	if p.Normalize.BaselineDip != "exclude" {
		return baselineOutage{}, false
	}
	margin, ok := dipAttainmentMargin(p, g.b)
	if !ok {
		return baselineOutage{}, false
	}
	// as attainment_dip's scan (inside the warm-up cap a baseline outage
	// otherwise stayed in both arms and left every count gate
	// inconclusive: the served scan looks there)
	phi := declaredPhi(p.Window, g.secs)
	d, served, ok := scanDip(margin, p.Alpha(), OutageSpreads, OutageIsolation, phi, g.c, g.b, g.secs, g.start, g.goodCap(g.lateB))
	if ok && !served {
		if _, covered := slowdownCovers(g.c, g.b, d, phi, g.secs, p.Alpha()); covered {
			// what one of the baseline's own declared slowdowns does: not
			// an outage to leave out; its served shares may still show one
			d, ok = scanServed(margin, p.Alpha(), OutageSpreads, OutageIsolation, g.c, g.b, g.secs, g.start)
			served = true
		}
	}
	if !ok {
		return baselineOutage{}, false
	}
	held, lostWhat := "held %.1f%% good requests against the canary's %.1f%%", "good requests"
	if served {
		held, lostWhat = "served %.1f%% of its requests against the canary's %.1f%% (completed, whatever their latency; the rest failed, were rejected or canceled)", "served requests"
	}
	s := d.stretch
	o := baselineOutage{from: g.b[s.from].start, to: g.b[s.from].start + float64(s.n)*g.secs}
	pp := func(v float64) string { return fmt.Sprintf("%+.1f pp", 100*v) }
	// roles swapped: vb is the canary's share, vc the baseline's; oc
	// the baseline's requests in the stretch
	o.detail = fmt.Sprintf("left out %s to %s (%s, from %s to %s after the canary's start) of both arms: the baseline alone %s, %s [%s, %s] beyond the arms' difference over the run (%s), %s, losing at least about %s %s, more than the attainment margin of the baseline's %s requests in the run allows; %s baseline and %s canary requests left out of every gate (normalize.baseline_dip: keep judges them)",
		fmtTime(clock, o.from), fmtTime(clock, o.to), fmtSpan(o.to-o.from), fmtClock(o.from-g.start), fmtClock(o.to-g.start),
		fmt.Sprintf(held, 100*d.vc, 100*d.vb), pp(d.vc-d.vb-d.runPt), pp(d.lo), pp(d.hi), pp(d.runPt),
		dipSpreadText(d.vc-d.vb-d.runPt, d.spread, nil, 0), fmtCount(math.Round(d.lost)), lostWhat, fmtCount(math.Round(d.ocRun)), fmtCount(math.Round(s.oc)), fmtCount(math.Round(s.ob)))
	return o, true
}

// findOutage is the next stretch to leave out of both paired arms: the
// baseline's own outage (findBaselineOutage), else one both arms shared
// (findSharedOutage), whose warning kept says why a shared stretch found
// was kept in. Both judging paths call it.
func findOutage(p *policies.Policy, g dipGrid, clock sources.Clock) (o baselineOutage, kept string, ok bool) {
	if o, ok := findBaselineOutage(p, g, clock); ok {
		return o, "", true
	}
	return findSharedOutage(p, g, clock)
}

// outageStep is the baseline_outage normalization step for the stretches
// left out (none: no step).
func outageStep(p *policies.Policy, outs []baselineOutage) []NormalizationStep {
	var steps []NormalizationStep
	for _, k := range []struct {
		shared        bool
		name, setting string
	}{{false, "baseline_outage", p.Normalize.BaselineDip}, {true, sharedName, p.Normalize.SharedDip}} {
		var parts []string
		for _, o := range outs {
			if o.shared == k.shared {
				parts = append(parts, o.detail)
			}
		}
		if len(parts) > 0 {
			steps = append(steps, NormalizationStep{Name: k.name, Setting: k.setting, Applied: true, Detail: strings.Join(parts, "; ")})
		}
	}
	return steps
}

// outageWarning is the warning a stretch left out gives (the step has the
// numbers).
func outageWarning(clock sources.Clock, o baselineOutage) string {
	if o.shared {
		return fmt.Sprintf("both arms: an incident they shared from %s to %s (%s) was left out of both arms (normalize.shared_dip: exclude); see the shared_outage step", fmtTime(clock, o.from), fmtTime(clock, o.to), fmtSpan(o.to-o.from))
	}
	return fmt.Sprintf("baseline: an outage of its own from %s to %s (%s) was left out of both arms (normalize.baseline_dip: exclude); see the baseline_outage step", fmtTime(clock, o.from), fmtTime(clock, o.to), fmtSpan(o.to-o.from))
}

// outageAdjusted is the note a gate's Adjusted list carries for the
// stretches left out (none: nil).
func outageAdjusted(clock sources.Clock, outs []baselineOutage) []string {
	var out []string
	for _, o := range outs {
		what := "baseline outage"
		if o.shared {
			what = "shared outage"
		}
		out = append(out, fmt.Sprintf("%s %s to %s left out of both arms", what, fmtTime(clock, o.from), fmtTime(clock, o.to)))
	}
	return out
}

// leaveOutBaselineOutages leaves out of both paired arms' buckets, one
// after the other, the stretches findBaselineOutage finds (at most
// MaxBaselineOutages): their requests are marked like a replica's own
// warm-up, outside every bucket, and the arms are bucketed again with
// their warm-up cuts as decided. The arms' replica activity still counts
// every arrival (armReplicaEvents), as the aggregate's replica tracks do.
func (j *judgement) leaveOutBaselineOutages() error {
	for range MaxBaselineOutages {
		g, ok := j.dipGrid()
		if !ok {
			return nil
		}
		o, kept, ok := findOutage(j.p, g, j.b.clock)
		if !ok {
			if kept != "" {
				j.warnf("%s", kept)
			}
			return nil
		}
		for _, a := range []*armData{j.b, j.c} {
			if err := a.leaveOut(o.from, o.to); err != nil {
				return err
			}
		}
		j.outages = append(j.outages, o)
		j.warnf("%s", outageWarning(j.b.clock, o))
	}
	return nil
}

// leaveOut marks the arm's requests that arrived in [from, to) (whole
// buckets of the grid) as left out and buckets the arm again.
func (a *armData) leaveOut(from, to float64) error {
	a.leftOut = append(a.leftOut, [2]float64{from, to})
	if a.exclude == nil {
		a.exclude = make([]bool, len(a.ds.Requests))
	}
	// the stretches left out before this one were excluded already
	for i := range a.ds.Requests {
		if !a.exclude[i] && a.leftOutAt(math.Floor(a.ds.Requests[i].Time/a.bucketSecs)) {
			a.exclude[i] = true
			a.add(&a.leftOutTotals, i)
		}
	}
	t := &a.leftOutTotals
	t.ttft, t.tpot, t.e2e = nil, nil, nil
	if err := a.bucketTime(a.cutSecs); err != nil {
		return err
	}
	a.replicaTime()
	a.sorted = nil
	return nil
}

// leaveOutAgg returns ds with its aggregate's buckets in the outage o
// emptied (counts, histograms and sums 0; NaN counts stay unknown;
// replicas, gauges and cost kept, as the request path keeps the
// buckets' time), and the arm's warm-up decision a and its step st kept
// (Aggregate.WarmupKept) unless one was kept already, so that the emptied
// slices do not move it. ds itself is not changed.
func leaveOutAgg(ds *sources.Dataset, a *aggArm, st NormalizationStep, o baselineOutage) *sources.Dataset {
	out := *ds
	agg := *ds.Agg
	agg.Buckets = append([]sources.AggBucket(nil), ds.Agg.Buckets...)
	zero := func(v float64) float64 {
		if math.IsNaN(v) {
			return v
		}
		return 0
	}
	empty := func(h sources.Histogram) sources.Histogram {
		if h.Sparse {
			return sources.Histogram{Sparse: true}
		}
		return sources.Histogram{Edges: h.Edges, Counts: make([]float64, len(h.Counts))}
	}
	for i := range agg.Buckets {
		bk := &agg.Buckets[i]
		if !o.holds(bk.Start) {
			continue
		}
		bk.Completed, bk.Failed, bk.Canceled, bk.Rejected = zero(bk.Completed), zero(bk.Failed), zero(bk.Canceled), zero(bk.Rejected)
		bk.Good, bk.Retried, bk.ShortOutputs = zero(bk.Good), zero(bk.Retried), zero(bk.ShortOutputs)
		bk.TTFT, bk.TPOT, bk.E2E, bk.Queue = empty(bk.TTFT), empty(bk.TPOT), empty(bk.E2E), empty(bk.Queue)
		bk.TTFTSum, bk.TPOTSum, bk.E2ESum = 0, 0, 0
		bk.PromptTokens, bk.OutputTokens, bk.GoodTokens = zero(bk.PromptTokens), zero(bk.OutputTokens), zero(bk.GoodTokens)
		bk.OutputMax = 0
		bk.PrefixHits, bk.PrefixQueries = zero(bk.PrefixHits), zero(bk.PrefixQueries)
	}
	if agg.WarmupKept == nil && len(a.slices) > 0 {
		agg.WarmupKept = &sources.AggWarmup{From: a.slices[0].start, Detail: st.Detail, Applied: st.Applied, DriftAt: a.driftAt, LateSlowdown: a.lateSlowdown}
	}
	out.Agg = &agg
	return &out
}

// sliceAccounting is the accounting of a's slices in the outage o, as
// armSummary counts it.
func sliceAccounting(a *aggArm, o baselineOutage) Accounting {
	var t aggSlice
	for _, s := range a.slices {
		if o.holds(s.start) {
			t.addCounts(&s)
		}
	}
	return t.accounting()
}

// plus is the sum of two accountings.
func (a Accounting) plus(b Accounting) Accounting {
	return Accounting{Offered: a.Offered + b.Offered, Admitted: a.Admitted + b.Admitted, Rejected: a.Rejected + b.Rejected,
		Canceled: a.Canceled + b.Canceled, Failed: a.Failed + b.Failed, Completed: a.Completed + b.Completed,
		Good: a.Good + b.Good, Retries: a.Retries + b.Retries}
}

// markLeftOut marks a's slices in the outages (emptied by leaveOutAgg)
// as left out — no replicas, no cost, and their seconds out of a.secs, as
// the request path leaves out the buckets' time (bucket.leftOut) — and
// keeps for the arm summary the seconds and acc, the accounting of the
// requests that were in them. Nothing happens when outs is empty or a
// was marked already (the canary as counted may be the canary itself).
func (a *aggArm) markLeftOut(outs []baselineOutage, acc Accounting) {
	if len(outs) == 0 || a.left != nil {
		return
	}
	a.left = &LeftOut{Accounting: acc}
	for i := range a.slices {
		s := &a.slices[i]
		for _, o := range outs {
			if o.holds(s.start) {
				s.leftOut = true
				s.replicas = 0
				if !math.IsNaN(s.costPerHour) {
					s.costPerHour = 0
				}
				a.secs -= s.secs()
				a.left.Seconds += Num(s.secs())
				break
			}
		}
	}
}
