package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// tailHists holds both arms' histograms of one latency per analysed slice,
// laid on one edge grid (histo.Align: the common edges of classic
// histograms, the union of an exact aggregate's log-linear edges), with
// prefix sums over the slices so that a block of consecutive slices adds in
// one step: a bootstrap resample costs O(blocks × edges), whatever the
// number of requests.
type tailHists struct {
	edges []float64
	// increasing is set when the edges are strictly increasing and end
	// with +Inf (histo.Increasing): a resample's quantile is then read
	// without sorting its histogram
	increasing bool
	b, c       tailRows
}

type tailRows struct {
	n      int         // slices
	prefix [][]float64 // prefix[k] = Σ rows[:k], cumulative counts at the edges
	// whole is set when every row holds whole counts and n times their
	// total is below 2^53: every sum of rows is then exact, so a
	// resample's cumulative counts are non-decreasing and each can be
	// read on its own (tailRows.quantile)
	whole bool
}

// maxWhole bounds sums of whole counts that float64 holds exactly (2^53).
const maxWhole = 1 << 53

func newTailHists(hb, hc []sources.Histogram) tailHists {
	all := append(append(make([]sources.Histogram, 0, len(hb)+len(hc)), hb...), hc...)
	edges, rows := histo.Align(all)
	mk := func(rs [][]float64) tailRows {
		r := tailRows{n: len(rs), prefix: make([][]float64, len(rs)+1), whole: true}
		r.prefix[0] = make([]float64, len(edges))
		total := 0.0
		for k, row := range rs {
			p := make([]float64, len(edges))
			for i, v := range row {
				p[i] = r.prefix[k][i] + v
				if !(v >= 0 && v < maxWhole && v == math.Trunc(v)) {
					r.whole = false
				}
			}
			if len(row) > 0 {
				total += row[len(row)-1]
			}
			r.prefix[k+1] = p
		}
		r.whole = r.whole && float64(len(rs))*total < maxWhole
		return r
	}
	return tailHists{edges: edges, increasing: histo.Increasing(edges), b: mk(rows[:len(hb)]), c: mk(rows[len(hb):])}
}

// sum adds the rows of the slices idx (repeats allowed), run by run.
func (r tailRows) sum(idx []int) []float64 {
	return r.addRuns(make([]float64, len(r.prefix[0])), r.runs(nil, idx))
}

// addRuns adds to out, run by run, the rows of each run of slices.
func (r tailRows) addRuns(out []float64, runs [][2]int) []float64 {
	for _, run := range runs {
		lo, hi := r.prefix[run[0]], r.prefix[run[1]]
		for i := range out {
			out[i] += hi[i] - lo[i]
		}
	}
	return out
}

func (r tailRows) all() []float64 { return r.prefix[r.n] }

// runs appends to dst the runs of consecutive slices in idx, as sum adds
// them: prefix[lo] and prefix[hi] bound each run.
func (r tailRows) runs(dst [][2]int, idx []int) [][2]int {
	dst = dst[:0]
	for k := 0; k < len(idx); {
		e := k + 1
		for e < len(idx) && idx[e] == idx[e-1]+1 {
			e++
		}
		dst = append(dst, [2]int{idx[k], idx[e-1] + 1})
		k = e
	}
	return dst
}

// tailScratch holds one arm's buffers for the resamples of a tail gate.
type tailScratch struct {
	runs   [][2]int
	counts []float64
}

// quantile is histo.Quantile(q, t.hist(r.sum(idx))), bit for bit, without
// allocating: with whole counts each cumulative count the quantile needs
// is added up on its own, run by run as sum adds it (the counts are
// exact, hence non-decreasing, so O(log edges) of them are read);
// otherwise the counts are summed into the scratch buffer and read in
// place.
func (r tailRows) quantile(q float64, t *tailHists, idx []int, sc *tailScratch) float64 {
	if !t.increasing {
		return histo.Quantile(q, t.hist(r.sum(idx)))
	}
	sc.runs = r.runs(sc.runs, idx)
	if r.whole {
		return histo.QuantileMonotone(q, t.edges, func(i int) float64 {
			v := 0.0
			for _, run := range sc.runs {
				v += r.prefix[run[1]][i] - r.prefix[run[0]][i]
			}
			return v
		})
	}
	if cap(sc.counts) < len(t.edges) {
		sc.counts = make([]float64, len(t.edges))
	}
	out := sc.counts[:len(t.edges)]
	clear(out)
	return histo.QuantileSorted(q, t.edges, r.addRuns(out, sc.runs))
}

// block is the bootstrap block length of an arm's slices for its
// q-quantile qhat (stats.QuantileBlockOf): per slice, the count at the
// first edge at or above qhat and the slice's total.
func (r tailRows) block(q, qhat float64, t *tailHists) int {
	at := min(sort.SearchFloat64s(t.edges, qhat), len(t.edges)-1)
	last := len(t.edges) - 1
	below, n := make([]float64, r.n), make([]float64, r.n)
	for k := range r.n {
		below[k] = r.prefix[k+1][at] - r.prefix[k][at]
		n[k] = r.prefix[k+1][last] - r.prefix[k][last]
	}
	return stats.QuantileBlockOf(below, n, q)
}

// sectioned is the request path's sectioning interval of the log ratio of
// the canary's and the baseline's q-quantiles (qc, qb: the whole runs'):
// each arm's slices cut into stats.Sections contiguous sections, a
// section's quantile read from its summed histogram; not formed (an
// infinite interval) when a section holds fewer than ⌈5/(1−q)⌉ values in
// either arm.
func (t tailHists) sectioned(q, qc, qb, conf float64) stats.Estimate {
	est := stats.Estimate{Point: math.Log(qc / qb), SE: math.NaN(), CI: stats.Interval{Lo: math.Inf(-1), Hi: math.Inf(1)}, Method: "sectioning-t"}
	k := stats.Sections(t.c.n, t.b.n)
	if k < 2 {
		return est
	}
	minValues := math.Ceil(5 / (1 - q))
	var sc tailScratch
	section := func(r tailRows, g int) (float64, bool) {
		lo, hi := g*r.n/k, (g+1)*r.n/k
		if last := len(t.edges) - 1; r.prefix[hi][last]-r.prefix[lo][last] < minValues {
			return 0, false
		}
		idx := make([]int, 0, hi-lo)
		for i := lo; i < hi; i++ {
			idx = append(idx, i)
		}
		v := r.quantile(q, &t, idx, &sc)
		return v, v > 0
	}
	d := make([]float64, k)
	for g := range k {
		a, oka := section(t.c, g)
		b, okb := section(t.b, g)
		if !oka || !okb {
			return est
		}
		d[g] = math.Log(a / b)
	}
	return stats.SectioningInterval(est, d, conf)
}

func (t tailHists) hist(counts []float64) sources.Histogram {
	return sources.Histogram{Edges: t.edges, Counts: counts}
}

// latencyOfSlice picks a slice's histogram of a latency.
func latencyOfSlice(s *aggSlice, latency string) sources.Histogram {
	switch latency {
	case "ttft":
		return s.ttft
	case "tpot":
		return s.tpot
	}
	return s.e2e
}

// sliceHists is an arm's histograms of a latency per analysed slice.
func sliceHists(a *aggArm, latency string) []sources.Histogram {
	out := make([]sources.Histogram, len(a.slices))
	for i := range a.slices {
		out[i] = latencyOfSlice(&a.slices[i], latency)
	}
	return out
}

// latencyGate compares a quantile of the arms' merged histograms, with a
// block bootstrap over time slices for the interval (seeded by idx).
// Quantiles interpolate within a histogram bucket, so a quantile is only
// known within its bucket:
//   - an exact aggregate's log-linear bins are a factor 2^(1/256) wide:
//     the comparison is made at both ends of the bins holding the two
//     quantiles, a pass decided at the canary-unfavourable end (canary at
//     its bin's upper edge, baseline at its lower), a fail at the
//     favourable end (decideBounds);
//   - a metrics histogram's buckets are often wider than the margin: the
//     interval is widened to every ratio the two buckets allow, and when
//     that leaves the gate undecided it is judged in its exceedance form
//     at a bucket edge (exceedanceGate).
func (j *aggJudgement) latencyGate(e gateEval, idx int, info policies.MetricInfo, g policies.Gate, conf float64) gateEval {
	e.m.Adjusted = []string{}
	if cut := math.Max(j.b.cutSecs, j.c.cutSecs); cut > 0 {
		e.m.Adjusted = append(e.m.Adjusted, fmt.Sprintf("warm-up cut %gs", cut))
	}
	e.m.Adjusted = append(e.m.Adjusted, outageAdjusted(sources.ClockEpoch, j.outages)...)
	// arms that did not run side by side get the sectioning hull, as on
	// the request path (judgement.evalGate)
	ev := j.tailGate(e, idx, info, g, conf, newTailHists(sliceHists(j.b, info.Latency), sliceHists(j.c, info.Latency)), !j.paired)
	if j.cRaw != j.c {
		// the sample size is the canary's values as counted, not the
		// total of its histograms reweighted to the baseline's mix
		var n float64
		for i := range j.cRaw.slices {
			n += latencyOfSlice(&j.cRaw.slices[i], info.Latency).Total()
		}
		ev.m.NCanary = int64(math.Round(n))
	}
	return ev
}

// tailGate compares the arms' q-quantiles of one latency from t. The
// interval is the request path's: its block bootstrap
// (stats.QuantileRatioBootstrap) and, for a class's tail or arms that are
// not paired in time (section true), its hull with the sectioning interval
// (judgement.evalClassTail, judgement.evalGate).
func (j *aggJudgement) tailGate(e gateEval, idx int, info policies.MetricInfo, g policies.Gate, conf float64, t tailHists, section bool) gateEval {
	q := info.Quantile
	hb, hc := t.hist(t.b.all()), t.hist(t.c.all())
	qb, qc := histo.Quantile(q, hb), histo.Quantile(q, hc)
	e.m.Baseline, e.m.Canary = Num(qb), Num(qc)
	e.m.NBaseline, e.m.NCanary = int64(math.Round(hb.Total())), int64(math.Round(hc.Total()))
	e.m.Buckets = [2]int{t.b.n, t.c.n}
	e.m.Method = "block-bootstrap of histogram quantiles (interpolated within buckets)"
	if j.exact() {
		e.m.Method = "block-bootstrap of log-linear histogram quantiles (bins a factor 2^(1/256) wide)"
	}
	if nb, nc := hb.Total(), hc.Total(); nb == 0 || nc == 0 {
		// the request path's words, an arm with no value at all
		e.m.Reason = fmt.Sprintf("no %s values in %s", info.Latency, armsMissing(int(nb), int(nc)))
		return e
	}
	if !(qb > 0 && qc > 0) || math.IsInf(qb, 0) || math.IsInf(qc, 0) {
		e.m.Reason = fmt.Sprintf("no %s histogram quantile for an arm (missing histogram, or the quantile lies in the +Inf bucket)", info.Latency)
		return e
	}
	if need := need(q); hb.Total() < float64(need) || hc.Total() < float64(need) {
		e.m.Reason = fmt.Sprintf("too little data for a p%g: %.0f and %.0f values (need ≥ %d per arm, 10 beyond the quantile)", q*100, hb.Total(), hc.Total(), need)
		return e
	}
	nb, nc := t.b.n, t.c.n
	if nb < MinBuckets || nc < MinBuckets {
		e.m.Reason = fmt.Sprintf("too little data: %d and %d buckets (need ≥ %d per arm)", nb, nc, MinBuckets)
		return e
	}
	// the request path's bootstrap (stats.QuantileLogRatio): the canary's
	// slices drawn first, blocks from the quantile's influence series, the
	// expanded percentile level, the same seed; on one bucket grid it
	// draws the same resamples, so only the bins differ
	point := math.Log(qc / qb)
	var sb, sc tailScratch
	boot := stats.QuantileRatioBootstrap(stats.Estimate{Point: point, Method: e.m.Method}, nc, nb, t.c.block(q, qc, &t), t.b.block(q, qb, &t), conf, j.cfg.Resamples, j.cfg.Seed+uint64(idx)*7919,
		func(ix [][]int) (float64, float64) {
			return t.c.quantile(q, &t, ix[0], &sc), t.b.quantile(q, &t, ix[1], &sb)
		})
	if section {
		boot = hullWith(boot, t.sectioned(q, qc, qb, conf))
	}
	// replicas of their own speeds, as on the request path
	boot = withReplicaLevels(boot, conf, j.replicaSpreads[info.Latency], info.Latency, &e.m.Adjusted)
	boot = persistenceWidened(boot, j.p.Window, min(nb, nc), j.b.ds.Agg.Step, conf, &e.m.Adjusted)
	e.m.Method = boot.Method
	ci, se := boot.CI, boot.SE
	lb, ub := histo.QuantileBounds(q, hb)
	lc, uc := histo.QuantileBounds(q, hc)
	if j.exact() {
		// the bootstrap interval moved to each end of the two bins: the
		// canary at its bin's upper edge over the baseline at its lower
		// (unfavourable), and the other way round (favourable)
		at := func(to float64) stats.Estimate {
			d := to - point
			return stats.Estimate{Point: to, CI: stats.Interval{Lo: ci.Lo + d, Hi: ci.Hi + d}, SE: se, Method: e.m.Method}
		}
		pess, opt := at(math.Log(uc/lb)), at(math.Log(lc/ub))
		e.m.Adjusted = append(e.m.Adjusted, fmt.Sprintf("p%g within bin (%.6g, %.6g] s in the baseline and (%.6g, %.6g] s in the canary: a pass is decided with the canary at its bin's upper edge and the baseline at its lower, a fail the other way round",
			q*100, lb, ub, lc, uc))
		out := decideBounds(e, g, info, pess, opt, [2]float64{lb, uc}, [2]float64{ub, lc})
		out.m.Baseline, out.m.Canary = Num(qb), Num(qc)
		return out
	}
	// a histogram only places a quantile within its bucket: the interval
	// covers every ratio the two buckets allow, whatever the interpolation
	res := stats.Interval{Lo: math.Log(lc / ub), Hi: math.Log(uc / lb)}
	widened := res.Lo < ci.Lo || res.Hi > ci.Hi
	if widened {
		ci = stats.Interval{Lo: math.Min(ci.Lo, res.Lo), Hi: math.Max(ci.Hi, res.Hi)}
		e.m.Method += "; widened to the histogram buckets' resolution"
		e.m.Adjusted = append(e.m.Adjusted, fmt.Sprintf("p%g within bucket (%g, %g] s in the baseline and (%g, %g] s in the canary",
			q*100, lb, ub, lc, uc))
	}
	est := stats.Estimate{Point: point, CI: ci, SE: se, Method: e.m.Method}
	qe := decide(e, g, info, est)
	if !widened || qe.decision != stats.Inconclusive {
		return qe
	}
	why := fmt.Sprintf("p%g cannot be resolved by the buckets (baseline in (%g, %g] s, canary in (%g, %g] s: they place the ratio only within [%s, %s], against a %s margin, and more data will not narrow that)",
		q*100, lb, ub, lc, uc, fmtDelta(qe.m, math.Expm1(res.Lo)), fmtDelta(qe.m, math.Expm1(res.Hi)), fmtMargin(qe.m))
	if ex, ok := j.exceedanceGate(e, g, info, conf, t, why, lb, ub); ok {
		return ex
	}
	qe.m.Reason += "; " + why + " and no bucket edge gives an exceedance share to judge instead: finer buckets would decide it"
	return qe
}

// exceedanceGate judges a tail-latency gate in its exceedance form: the
// share of requests whose latency is above a bucket edge, which a histogram
// gives exactly (a quantile it only places within a bucket). The edge is
// one of the bucket holding the baseline's quantile:
//   - its lower edge lb, where the baseline's share above is ≥ 1 − q: the
//     canary's share may reach what a canary slower by the policy's
//     relative margin in every request would have there, the baseline's
//     share above lb/(1 + margin), read cautiously for a pass and
//     leniently for a fail (scaledShare, decideBounds); shares are per-slice
//     ratios (delta method over slices, paired on one grid when the arms
//     are, Newcombe floor);
//   - its upper edge ub when more than half the baseline lies above lb (a
//     test of the bulk, not the tail): the baseline's share above ub is at
//     most 1 − q, often 0, where a relative margin allows nothing. The
//     canary's share may then exceed the baseline's by the margin the gate
//     gives the tail at its quantile, margin × (1 − q) in absolute terms
//     (0.1 pp for a p99 with a 10% margin); a difference of shares (paired
//     when the arms are) with a Newcombe floor.
//
// A change of the quantile that stays inside the bucket is not seen; the
// reason says so, with the bucket's width.
func (j *aggJudgement) exceedanceGate(e gateEval, g policies.Gate, info policies.MetricInfo, conf float64,
	t tailHists, why string, lb, ub float64) (gateEval, bool) {
	if info.Scale != "relative" || info.HigherIsBetter || len(t.edges) == 0 {
		return e, false
	}
	last := len(t.edges) - 1
	at := func(edge float64) int {
		if !(edge > 0) || math.IsInf(edge, 0) {
			return -1
		}
		for i, x := range t.edges[:last] {
			if x == edge {
				return i
			}
		}
		return -1
	}
	hb := t.b.all()
	share := func(k int) float64 {
		if k < 0 || !(hb[last] > 0) {
			return math.NaN()
		}
		return (hb[last] - hb[k]) / hb[last]
	}
	tail := math.Round((1-info.Quantile)*1e9) / 1e9 // 0.01 for a p99, not 0.010000000000000009
	edge, k := lb, at(lb)
	upper := false
	if sl := share(k); math.IsNaN(sl) || sl > 0.5 {
		edge, k, upper = ub, at(ub), true
		if math.IsNaN(share(k)) {
			return e, false
		}
	}
	ratio := func(r tailRows) stats.Ratio {
		out := stats.Ratio{Num: make([]float64, r.n), Den: make([]float64, r.n)}
		for i := 0; i < r.n; i++ {
			out.Num[i], out.Den[i] = r.above(k, i), r.above(-1, i)
		}
		return out
	}
	rb, rc := ratio(t.b), ratio(t.c)
	if !(sum(rb.Den) > 0) || !(sum(rc.Den) > 0) {
		return e, false
	}
	vb, vc := sum(rb.Num)/sum(rb.Den), sum(rc.Num)/sum(rc.Den)
	// estFail and bvFail, set in the lower edge's form, are the
	// estimate and the baseline's share a fail is judged at
	var est, estFail stats.Estimate
	var bvFail float64
	gx, ix := g, info
	scaledMargin := ""
	// the shares paired on one grid when the arms are and every slice
	// of both is in the histograms
	paired := j.paired && t.b.n == len(j.b.slices) && t.c.n == len(j.c.slices)
	if upper {
		gx.Margin.Value = g.Margin.Value * tail
		ix.Scale = "absolute"
		est = stats.DiffOfRatios(rc, rb, conf)
		if paired {
			xa, ya := j.align(rc, rb)
			est = stats.PairedDiffOfRatios(xa, ya, conf)
		}
		est = binomialFloor(est, sum(rc.Num), sum(rc.Den), sum(rb.Num), sum(rb.Den), conf)
	} else {
		if !(sum(rb.Num) > 0) {
			return e, false
		}
		// the canary's share above the edge against the share a
		// canary slower by the margin in every request would have: the
		// baseline's share above edge/(1 + margin), read cautiously for
		// a pass and leniently for a fail
		pass, atP, okP := t.scaledShare(t.b, k, g.Margin.Value, false)
		fail, atF, okF := t.scaledShare(t.b, k, g.Margin.Value, true)
		if !okP || !okF {
			return e, false
		}
		vaP, vaF := sum(pass.Num)/sum(pass.Den), sum(fail.Num)/sum(fail.Den)
		against := func(allowed stats.Ratio) stats.Estimate {
			est := stats.LogRatioOfRatios(rc, allowed, conf)
			if paired {
				xa, ya := j.align(rc, allowed)
				est = stats.PairedLogRatioOfRatios(xa, ya, conf)
			}
			est = ratioFloor(est, sum(rc.Num), sum(rc.Den), sum(allowed.Num), sum(allowed.Den), conf)
			if sum(rc.Num) == 0 {
				// no canary request above the edge: the log ratio is
				// −∞; bound it by the Newcombe interval alone
				est = stats.Estimate{Point: math.Inf(-1), CI: stats.Interval{Lo: math.Inf(-1), Hi: math.Inf(-1)}, SE: math.NaN(), Method: "newcombe"}
				est = ratioFloor(est, 0, sum(rc.Den), sum(allowed.Num), sum(allowed.Den), conf)
				est.Point = est.CI.Lo
			}
			// onto the canary's share over the baseline's, whose
			// margin is then the cautious allowed share's excess over
			// the baseline's
			shift := math.Log(vaP / vb)
			est.Point += shift
			est.CI = stats.Interval{Lo: est.CI.Lo + shift, Hi: est.CI.Hi + shift}
			return est
		}
		est, estFail = against(pass), against(fail)
		// to 0.1% of the share, down: a margin read from data is shown
		// as the figure it is known to
		gx.Margin.Value = math.Floor((vaP/vb-1)*1000) / 1000
		bvFail = vb * vaF / vaP
		scaledMargin = fmt.Sprintf("%s (the baseline's share above %.4g s, %.3g%%: what a canary %s slower in every request would have above the edge, %s; a fail is judged against %.3g%%, %s)",
			fmtMargin(Metric{Scale: "relative", Margin: Num(gx.Margin.Value)}), atP.y, 100*vaP, fmtMargin(Metric{Scale: "relative", Margin: Num(g.Margin.Value)}), atP.how(), 100*vaF, atF.how())
	}
	e.m.Baseline, e.m.Canary = Num(vb), Num(vc)
	e.m.Unit = "fraction"
	e.m.Scale = ix.Scale
	e.m.Margin = Num(gx.Margin.Value)
	e.m.NBaseline, e.m.NCanary = int64(math.Round(sum(rb.Den))), int64(math.Round(sum(rc.Den)))
	e.m.Method = fmt.Sprintf("share of requests above the %g s bucket edge (exact from the histograms), %s", edge, est.Method)
	e.m.Adjusted = append(e.m.Adjusted, fmt.Sprintf("judged as the share of requests with %s above the %g s bucket edge instead of p%g", strings.ToUpper(info.Latency), edge, info.Quantile*100))
	var spread *replicaWidening
	if !j.exact() && !strings.Contains(e.m.Name, ":") {
		// replicas that differ all run, read from each replica's own
		// histogram at the edge as attainment reads them
		// (replicaBounded): the pooled tail only, the replicas'
		// histograms being pooled over classes
		repB, okB := j.b.replicaAtOrBelow(info.Latency, edge)
		repC, okC := j.c.replicaAtOrBelow(info.Latency, edge)
		if okB && okC {
			w := replicaSpread(repB, repC)
			if !upper {
				w = w.scaled(1 / (vb * vb)) // onto the log ratio of the shares above
			}
			spread = &w
		}
	}
	widen := func(est stats.Estimate, notes *[]string) stats.Estimate {
		if spread != nil {
			est = withReplicaSpread(est, conf, *spread, notes)
		}
		// as the quantile's interval was (its adjusted line already
		// says so)
		return persistenceWidened(est, j.p.Window, min(t.b.n, t.c.n), j.b.ds.Agg.Step, conf, new([]string))
	}
	est = widen(est, &e.m.Adjusted)
	var ex gateEval
	if upper {
		ex = decide(e, gx, ix, est)
	} else {
		ex = decideBounds(e, gx, ix, est, widen(estFail, new([]string)), [2]float64{vb, vc}, [2]float64{bvFail, vc})
	}
	allowed := fmt.Sprintf("may exceed the baseline's by at most %s", scaledMargin)
	if upper {
		allowed = fmt.Sprintf("may exceed the baseline's by at most %s (the %s margin on the %g%% tail beyond p%g)", fmtMargin(ex.m), fmtMargin(Metric{Scale: "relative", Margin: Num(g.Margin.Value)}), round6(100*tail), info.Quantile*100)
	}
	cost := fmt.Sprintf("a change of the p%g that keeps it inside the (%g, %g] s bucket is below the buckets' resolution and is not seen", info.Quantile*100, lb, ub)
	ex.m.Reason = fmt.Sprintf("%s; judged instead as the share of requests with %s above the %g s bucket edge, %.3g%% baseline vs %.3g%% canary (exact from the histograms), which %s: %s; %s (an SLO threshold or finer buckets near the p%g would)",
		why, strings.ToUpper(info.Latency), edge, 100*vb, 100*vc, allowed, ex.m.Reason, cost, info.Quantile*100)
	return ex, true
}

// above is slice s's count of values above edge index e (all its values
// for e < 0).
func (r tailRows) above(e, s int) float64 {
	p, q := r.prefix[s], r.prefix[s+1]
	last := len(p) - 1
	tot := q[last] - p[last]
	if e < 0 {
		return tot
	}
	return tot - (q[e] - p[e])
}

// scaledAt is where scaledShare read the allowed share: y = edge/(1 + m),
// between the bucket edges lo < y ≤ hi (lo 0 below the first edge).
type scaledAt struct {
	y, lo, hi float64
	// w is the weight of the share above lo in the interpolation
	// (1 when y is on the edge lo itself, which is then exact)
	w       float64
	lenient bool
}

func (a scaledAt) how() string {
	switch {
	case a.w == 1:
		return "exact from the histograms: an edge"
	case a.lenient:
		return fmt.Sprintf("interpolated linearly between the edges %g and %g s, the most a tail thinning there allows", a.lo, a.hi)
	case a.lo == 0:
		return fmt.Sprintf("taken as the share above the first edge %g s, the least a tail below it allows", a.hi)
	}
	return fmt.Sprintf("interpolated between the edges %g and %g s as a power-law tail, cautious for any lighter one", a.lo, a.hi)
}

// scaledShare is the share of arm r's requests above y = edges[k]/(1 + m)
// per slice, as a ratio: what a canary whose every latency is (1 + m) times
// r's would have above edges[k], so that a tail gate with relative margin m
// judged in its exceedance form at edges[k] allows the canary that share. A
// relative margin on the share itself is far stricter than the same margin
// on the quantile: on the simulator a canary whose TTFT is 5% slower raises
// the share above 1 s by about 11%, one 8% slower by about 30%. When y lies
// between edges lo < y < hi the buckets do not give S(y), the share above
// y; it is bounded by two readings:
//   - cautious (lenient false, for a pass): a power-law (Pareto) tail, its
//     log linear in log latency, S(y) = S(lo)^w · S(hi)^(1−w) with
//     w = ln(hi/y)/ln(hi/lo): exact for a Pareto tail and below the truth
//     for any tail whose log share is concave in log latency (exponential,
//     log-normal). Below the first edge (lo = 0) no power law holds and
//     S(y) is taken as S(hi). The slice numerators are
//     S(y)·(w·a_lo,t/S(lo) + (1−w)·a_hi,t/S(hi)), a_e,t the slice's count
//     above e: their sum is S(y) times the total, and the delta method
//     linearises their log ratio as it does the interpolation, so the
//     interval carries the baseline's own noise in the allowed share;
//   - lenient (for a fail): linear in latency, S(y) = w·S(lo) + (1−w)·S(hi)
//     with w = (hi − y)/(hi − lo) and S(0) = 1, above the truth whenever
//     the density does not rise across the bucket (a tail's); the slice
//     numerators are w·a_lo,t + (1−w)·a_hi,t.
//
// ok is false when the edges do not increase, m < 0 or a share is 0.
func (t tailHists) scaledShare(r tailRows, k int, m float64, lenient bool) (stats.Ratio, scaledAt, bool) {
	at := scaledAt{y: t.edges[k] / (1 + m), hi: t.edges[k], lenient: lenient}
	if !t.increasing || !(m >= 0) {
		return stats.Ratio{}, at, false
	}
	// the last edge at or below y, −1 for none (lo = 0)
	i := sort.SearchFloat64s(t.edges, at.y) // first edge ≥ y
	lo := i - 1
	if i < len(t.edges) && t.edges[i] == at.y {
		lo = i
	}
	hi := lo + 1 // ≤ k when y < edges[k]
	if lo >= 0 {
		at.lo = t.edges[lo]
	}
	at.hi = t.edges[hi]
	switch {
	case at.lo == at.y:
		// on an edge (a zero margin: edges[k] itself): exact
		hi, at.hi, at.w = lo, at.lo, 1
	case lenient:
		at.w = (at.hi - at.y) / (at.hi - at.lo)
	case at.lo > 0:
		at.w = math.Log(at.hi/at.y) / math.Log(at.hi/at.lo)
	default:
		at.w = 0 // no power law reaches 0: the share above hi
	}
	var nLo, nHi, den float64
	for s := 0; s < r.n; s++ {
		nLo += r.above(lo, s)
		nHi += r.above(hi, s)
		den += r.above(-1, s)
	}
	if !(den > 0 && nLo > 0 && nHi > 0) {
		return stats.Ratio{}, at, false
	}
	sLo, sHi := nLo/den, nHi/den
	sy := math.Exp(at.w*math.Log(sLo) + (1-at.w)*math.Log(sHi))
	out := stats.Ratio{Num: make([]float64, r.n), Den: make([]float64, r.n)}
	for s := 0; s < r.n; s++ {
		out.Den[s] = r.above(-1, s)
		if lenient {
			out.Num[s] = at.w*r.above(lo, s) + (1-at.w)*r.above(hi, s)
			continue
		}
		out.Num[s] = sy * (at.w*r.above(lo, s)/sLo + (1-at.w)*r.above(hi, s)/sHi)
	}
	return out, at, true
}

// majorClasses lists, sorted, the classes (tailClass of AggBucket.Class: a
// metrics class label; an exact aggregate's label, else policy class) holding at least
// MajorClassShare of the baseline's offered requests over the analysed
// slices; none when no bucket carries a class.
func (j *aggJudgement) majorClasses() []string {
	kept := map[float64]bool{}
	for _, s := range j.b.slices {
		kept[s.start] = true
	}
	n := map[string]float64{}
	total := 0.0
	for _, bk := range j.b.ds.Agg.Buckets {
		if !kept[bk.Start] {
			continue
		}
		if bk.Class == "" {
			continue
		}
		off := nan0(bk.Completed) + nan0(bk.Failed) + nan0(bk.Canceled) + nan0(bk.Rejected)
		n[j.tailClass(bk.Class)] += off
		total += off
	}
	var out []string
	for _, k := range sortedKeys(n) {
		if total > 0 && n[k]/total >= MajorClassShare {
			out = append(out, k)
		}
	}
	return out
}

// classHists is an arm's histograms of a latency per analysed slice, of
// one class's buckets only.
func (j *aggJudgement) classHists(a *aggArm, latency, class string) []sources.Histogram {
	at := a.sliceIndex()
	// each slice's histograms of the class, in bucket order
	per := make([][]sources.Histogram, len(a.slices))
	for k := range a.ds.Agg.Buckets {
		bk := &a.ds.Agg.Buckets[k]
		i, ok := at[bk.Start]
		if !ok || bk.Class == "" || j.tailClass(bk.Class) != class {
			continue
		}
		var h sources.Histogram
		switch latency {
		case "ttft":
			h = bk.TTFT
		case "tpot":
			h = bk.TPOT
		default:
			h = bk.E2E
		}
		per[i] = append(per[i], h)
	}
	out := make([]sources.Histogram, len(a.slices))
	var sum histo.Sum
	for i, hs := range per {
		sum.Reset()
		for _, h := range hs {
			sum.Add(h)
		}
		out[i] = sum.Histogram()
	}
	return out
}

// evalClassTail runs a tail gate on one class's histograms in both arms,
// as the request path does (judgement.evalClassTail): it fails the
// comparison when the class is worse beyond the margin with confidence,
// and otherwise passes, leaving a pass to the pooled gate; a class with
// too little data is not checked.
func (j *aggJudgement) evalClassTail(idx int, g policies.Gate, info policies.MetricInfo, class string, conf float64) gateEval {
	nan := Num(math.NaN())
	e := gateEval{m: Metric{Name: g.Metric + ":" + class, Class: class, Guardrail: g.Guardrail, Direction: "lower_is_better", Scale: info.Scale, Unit: info.Unit,
		Margin: Num(g.Margin.Value), Adjusted: []string{"class " + class + " only"},
		Baseline: nan, Canary: nan, Delta: nan, Interval: [2]Num{nan, nan}, PFail: nan, Verdict: Inconclusive}}
	t := newTailHists(j.classHists(j.b, info.Latency, class), j.classHists(j.c, info.Latency, class))
	ev := j.tailGate(e, idx, info, g, conf, t, true)
	if !ev.decidable {
		ev.m.Verdict, ev.m.NotFailed = Pass, true
		ev.m.Reason = fmt.Sprintf("not checked for class %s: %s; the pooled gate decides", class, ev.m.Reason)
		return ev
	}
	if ev.decision != stats.Fail && ev.unfavourableFails {
		// a fail within the bins' resolution: the request path, between
		// the two ends, may fail it; not passed
		ev.decision = stats.Inconclusive
		ev.m.Reason = fmt.Sprintf("%s; for class %s a fail at the canary-unfavourable end of the bins is not ruled out, so this per-class check does not pass", ev.m.Reason, class)
		return ev
	}
	if ev.decision != stats.Fail {
		ev.m.NotFailed = ev.decision != stats.Pass
		ev.decision = stats.Pass
		ev.m.Reason = classCheckReason(ev.m, class)
	}
	return ev
}
