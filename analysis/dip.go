package analysis

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
)

// Dip check parameters (pre-declared).
const (
	// DipMargin is how far (absolute, 0.10 = 10 pp) the canary's share of
	// good requests in one stretch of the run must fall below the
	// baseline's over the same stretch, beyond the two arms' difference
	// over the whole run, before the attainment_dip guardrail can fail.
	// Per-arm slowdowns move a stretch's attainment by a few points on
	// the fleet model and the simulator, an outage or an error burst by
	// tens; in noisier fleets a slowdown near the SLO edge can move it by
	// tens too, which dipEval's spread and isolation conditions answer.
	DipMargin = 0.10
	// MinDipStretches is the fewest stretches of one length that must fit
	// side by side past the warm-up cap for that length to be scanned:
	// their spread is what a stretch is set against.
	MinDipStretches = 5
	// DipIsolation is how many times deeper a stretch must be than any
	// stretch of its length (not overlapping it) in which the baseline is
	// the worse arm. Per-arm slowdowns deep enough to matter are rare
	// events, a few per run, so one arm often has one the other lacks, and
	// near the SLO edge their cost in good requests is heavy-tailed: the
	// share of identical runs in which one arm's deepest stretch is r times
	// the other's falls only as about r^−1.4. In the noisiest fleet model
	// (σ 0.05, φ 0.9) the check failed 11–15 of 200 identical-arm runs at
	// 4, 6–8 at 6 and 1–5 at 8 (two sets of 200 seeds). Outages in the
	// default fleet lie 7.9–177 times deeper than the baseline's deepest
	// stretch (the least of 100 runs each: a two-minute burst of 50%
	// errors 7.9, two of them 8.5, a one-minute stall 14.4, a 10-minute
	// slow start 16.1); inside the noisiest fleet a one-minute stall is
	// caught in 87 of 200 runs at 8 (171 at 4), the rest inconclusive. A
	// missed outage leaves the run inconclusive (the attainment interval
	// widens with it), a false dip fails an identical canary.
	// Errors, rejections and cancels are also scanned on the arms' shares
	// of requests served, where slowdowns do not reach (dipEval).
	DipIsolation = 8
	// OutageIsolation is DipIsolation for the baseline_outage step, which
	// leaves a stretch out rather than failing the run, and asks for
	// OutageSpreads spreads on top: it keeps the factor the dip had when
	// the step was built.
	OutageIsolation = 4
	// dipName names the guardrail's row.
	dipName = "attainment_dip"
)

// dipCell is one position of the arms' shared bucket grid: an arm's
// offered requests there and its good requests, known within [goodLo,
// goodHi] (equal when counted; bounded by histograms from metrics). A
// position the arm did not analyse (cut as warm-up, or outside its run)
// has offered 0.
type dipCell struct {
	start          float64 // seconds on the arms' shared clock
	offered        float64
	goodLo, goodHi float64
	served         float64 // completed requests, good or not (servedCells)
}

// dipEval is the attainment_dip guardrail of paired arms, whatever holds
// them (requests or their aggregate): b and c are the arms' cells on the
// shared grid (equal length, secs seconds each), canaryStart the start of
// the canary's first bucket before any warm-up cut, and warmupCap the
// automatic warm-up cap (seconds): no stretch that starts within the cap of
// the canary's start is scanned on good shares, so a cold start the
// warm-up rule left in the window is judged by the gates, not failed here.
//
// A burst of errors or a stall of a minute or two costs the canary many
// good requests in one stretch; averaged over the run it is a few points
// of attainment, and the batch-means interval, whose variance is measured
// from the run's stretches, widens with the burst itself, so the
// attainment gate stays inconclusive on an outage it should fail. The check
// scans every stretch of 30 s, 1, 2 and 5 min (in whole buckets) of the
// positions both arms analysed, and fails when in one stretch
//
//   - the canary's share of good requests is below the baseline's over the
//     same stretch by more than DipMargin beyond the arms' difference over
//     the run (canary − baseline), at the upper end of a Newcombe interval
//     at one-sided level α/K, K the stretches scanned (Bonferroni); and
//   - the stretch's difference (at the canary-favourable ends) lies below
//     the median of the run's stretches of its length by more than a
//     Student t quantile times their MAD spread, t on one less than the
//     stretches of that length that fit side by side (fewer under a
//     declared window.persistence: stats.StretchDF), at α over those
//     stretches and the lengths scanned: per-arm slowdowns that last
//     minutes move a stretch by more than its binomial noise, and a
//     noisier fleet must show a larger dip (lengths with fewer than
//     MinDipStretches side by side are not scanned);
//   - no stretch of its length that does not overlap it has the baseline
//     worse by more than 1/DipIsolation (an eighth) of its depth: under identical arms
//     the baseline's stretches are as likely to be the worse ones, so the
//     baseline's deepest shows how deep the fleet's own slowdowns go (the
//     canary's other deep stretches, a second outage, excuse nothing); and
//   - the good requests so lost, at that bound, exceed the slo_attainment
//     gate's margin over the canary's requests in the run: the stretch
//     alone costs more than the margin allows.
//
// Where no stretch fails so, the same scan runs on the arms' shares of
// requests served (completed, whatever their latency) in place of their
// good shares: an arm's own slowdowns move its good share, near the SLO
// edge by tens of points in a noisy fleet, but not the share it serves,
// so a burst of errors, rejections or cancels stands out there even
// where DipIsolation hides it among the slowdowns (the reason then says
// "served"). That scan starts at the canary's first analysed position,
// not past the warm-up cap: a cold start slows requests rather than
// failing them, and past the cap of a short run (8 minutes) a two-minute
// burst is most of what is left, the median its stretches are set
// against.
//
// Being relative to the run's difference, a persistent change (a
// regression, a mix shift) is left to the attainment gate; sharing the
// grid, a burst both arms see cancels. With good requests known only
// within bounds, the canary's stretch is taken at its upper bound and the
// baseline's at its lower one, the run's difference the other way round:
// it fails only when every value within the bounds fails. It needs a
// slo_attainment gate with a margin in pp (or in percent, taken of the
// baseline's attainment); the row appears only when it fails, or with
// normalize.canary_dip: excuse as a pass that says what it excused.
func dipEval(p *policies.Policy, b, c []dipCell, secs, canaryStart, warmupCap float64) (gateEval, bool) {
	margin, ok := dipAttainmentMargin(p, b)
	if !ok {
		return gateEval{}, false
	}
	phi := declaredPhi(p.Window, secs)
	d, served, ok := scanDip(margin, p.Alpha(), 0, DipIsolation, phi, b, c, secs, canaryStart, warmupCap)
	if !ok {
		return gateEval{}, false
	}
	heldBack, depth := false, 0.0
	if !served {
		if depth, heldBack = slowdownCovers(b, c, d, phi, secs, p.Alpha()); heldBack {
			// a slowdown's stretch is held back, not failed; a burst of
			// failures on the served shares still fails
			if ds, ok := scanServed(margin, p.Alpha(), 0, DipIsolation, b, c, secs, canaryStart); ok {
				d, served, heldBack = ds, true, false
			}
		}
	}
	held, lostWhat, method := "held %.1f%% good requests", "good requests", "window-scan-newcombe-bonferroni-%d"
	if served {
		held, lostWhat, method = "served %.1f%% of its requests (completed, whatever their latency; the rest failed, were rejected or canceled)", "served requests", "window-scan-served-newcombe-bonferroni-%d"
	}
	s, vb, vc := d.stretch, d.vb, d.vc
	lo, hi := d.lo, d.hi
	m := Metric{Name: dipName, Guardrail: true, Direction: "higher_is_better", Scale: "absolute", Unit: "fraction",
		Baseline: Num(vb), Canary: Num(vc), Delta: Num(vc - vb - d.runPt), Interval: [2]Num{Num(lo), Num(hi)},
		Margin: Num(DipMargin), PFail: Num(math.NaN()), NBaseline: int64(math.Round(s.ob)), NCanary: int64(math.Round(s.oc)),
		Buckets: [2]int{s.n, s.n}, Method: fmt.Sprintf(method, d.k), Adjusted: []string{}, Verdict: Fail}
	from := b[s.from].start - canaryStart
	blame := "an outage or a burst of errors that the run's average and its batch-means interval absorb; set normalize.canary_dip: excuse when such stretches are known not to be the change's"
	switch {
	case p.Normalize.CanaryDip == "excuse":
		m.Verdict = Pass
		blame = "excused by the policy (normalize.canary_dip: excuse): the stretch is still judged in every gate"
	case heldBack:
		// a stretch no longer than twice the declared persistence is what
		// one of the fleet's own slowdowns does to an arm's good share: not
		// failed, not passed either
		m.Verdict = Inconclusive
		blame = fmt.Sprintf("not failed: the policy says the fleet's own slowdowns last %v (window.persistence), and a stretch no longer than twice that, no deeper than such a slowdown can go on this run's spread (%s), is what one of them does to an arm's good share, so it cannot be told from an outage; not passed either — a longer window or the served shares (errors, rejections, cancels) would tell",
			time.Duration(p.Window.Persistence), fmtDelta(m, -depth))
	}
	m.Reason = fmt.Sprintf("the canary's worst stretch, %s to %s after its start (%s), %s against the baseline's %.1f%% at the same time: %s [%s, %s] beyond the arms' difference over the run (%s), below the −%s margin at one-sided level α/%d (Bonferroni over the stretches scanned), and %s; it lost at least about %s %s, more than the %s attainment margin of the canary's %s requests in the run allows (%s)",
		fmtClock(from), fmtClock(from+float64(s.n)*secs), fmtSpan(float64(s.n)*secs), fmt.Sprintf(held, 100*vc), 100*vb,
		fmtDelta(m, float64(m.Delta)), fmtDelta(m, lo), fmtDelta(m, hi), fmtDelta(m, d.runPt), fmtMargin(m), d.k,
		dipSpreadText(vc-vb-d.runPt, d.spread, func(v float64) string { return fmtDelta(m, v) }, d.crit),
		fmtCount(math.Round(d.lost)), lostWhat, fmtMargin(Metric{Scale: "absolute", Margin: Num(margin)}), fmtCount(math.Round(d.ocRun)), blame)
	return gateEval{m: m}, true
}

// scanDip is the scan attainment_dip and the baseline_outage step share:
// worstDip on the arms' good shares, past goodCap of the canary's start,
// and where it finds no stretch, on their shares of requests served
// (served true), from the canary's first analysed position. The arms' own
// slowdowns move their good shares, not the shares they serve: a burst of
// errors, rejections or cancels stands out against the noise of served
// shares even where a fleet's slowdowns hide it among the good shares, and
// a cold start slows requests rather than failing them, so the served
// scan need not keep clear of the cap.
func scanDip(margin, alpha, minSpreads, isolation, phi float64, b, c []dipCell, secs, canaryStart, goodCap float64) (d dipFound, served, ok bool) {
	if d, ok = worstDip(margin, alpha, minSpreads, isolation, phi, b, c, secs, canaryStart, goodCap, true); ok {
		return d, false, true
	}
	d, ok = scanServed(margin, alpha, minSpreads, isolation, b, c, secs, canaryStart)
	return d, true, ok
}

// scanServed is scanDip's scan of the arms' shares of requests served,
// from the canary's first analysed position. Slowdowns do not move the
// shares served, so a declared persistence does not reach it.
func scanServed(margin, alpha, minSpreads, isolation float64, b, c []dipCell, secs, canaryStart float64) (dipFound, bool) {
	return worstDip(margin, alpha, minSpreads, isolation, 0, servedCells(b), servedCells(c), secs, canaryStart, 0, false)
}

// servedDip reports whether dipEval's scan of the arms' shares of requests
// served finds a stretch on grid g, whatever the scan of good shares
// found: a burst of failures, rejections or cancels, which the arms'
// queues do not make (heldByQueues).
func servedDip(p *policies.Policy, g dipGrid) bool {
	margin, ok := dipAttainmentMargin(p, g.b)
	if !ok {
		return false
	}
	_, ok = scanServed(margin, p.Alpha(), 0, DipIsolation, g.b, g.c, g.secs, g.start)
	return ok
}

// servedCells is the arm's cells with its served requests (completed,
// whatever their latency) in place of its good ones: the scan of dipEval
// on the shares of requests served.
func servedCells(cells []dipCell) []dipCell {
	out := slices.Clone(cells)
	for i := range out {
		out[i].goodLo, out[i].goodHi = out[i].served, out[i].served
	}
	return out
}

// dipWindow is a stretch of whole positions of the shared grid.
type dipWindow struct{ from, n int }

// dipStretch is a stretch's sums over the positions both arms analysed:
// offered requests and good requests within their bounds, per arm.
type dipStretch struct {
	dipWindow
	ob, oc, gbLo, gbHi, gcLo, gcHi float64
	sb, sc                         float64 // requests served (completed, whatever their latency)
}

// dipSum is the stretch w's sums over the positions both arms analysed
// (false when there are none).
func dipSum(b, c []dipCell, w dipWindow) (s dipStretch, ok bool) {
	s.dipWindow = w
	for t := w.from; t < w.from+w.n; t++ {
		if b[t].offered > 0 && c[t].offered > 0 {
			s.ob, s.oc = s.ob+b[t].offered, s.oc+c[t].offered
			s.gbLo, s.gbHi = s.gbLo+b[t].goodLo, s.gbHi+b[t].goodHi
			s.gcLo, s.gcHi = s.gcLo+c[t].goodLo, s.gcHi+c[t].goodHi
			s.sb, s.sc = s.sb+b[t].served, s.sc+c[t].served
		}
	}
	return s, s.ob > 0 && s.oc > 0
}

// dipLength is the stretches of one length (whole positions of the
// shared grid) that a dip scan sets against each other, and how many of
// them fit side by side.
type dipLength struct {
	n        int
	st       []dipStretch
	disjoint int
}

// dipLengths is the stretches of 30 s, 1, 2 and 5 min (rounded to whole
// positions; repeats dropped) that start warmupCap or more past the
// canary's start and hold both arms, per length; a length with fewer than
// MinDipStretches stretches side by side is not scanned.
func dipLengths(b, c []dipCell, secs, canaryStart, warmupCap float64) []dipLength {
	// the first position past the warm-up cap, and how many from there on
	// both arms analysed
	first, eligible := len(b), 0
	for t := len(b) - 1; t >= 0 && b[t].start >= canaryStart+warmupCap-1e-9; t-- {
		first = t
		if b[t].offered > 0 && c[t].offered > 0 {
			eligible++
		}
	}
	var lengths []dipLength
	for _, w := range [...]float64{30, 60, 120, 300} {
		n := max(1, int(math.Round(w/secs)))
		if len(lengths) > 0 && lengths[len(lengths)-1].n == n || n > len(b) {
			continue
		}
		l := dipLength{n: n, disjoint: eligible / n}
		for from := first; from+n <= len(b); from++ {
			if s, ok := dipSum(b, c, dipWindow{from, n}); ok {
				l.st = append(l.st, s)
			}
		}
		if l.disjoint >= MinDipStretches {
			lengths = append(lengths, l)
		}
	}
	return lengths
}

// dipFound is the deepest stretch worstDip found, with what the reason
// line reports: the arms' shares of good requests in it at the middle of
// their bounds (vb, vc), the interval of its difference beyond the run's
// [lo, hi], the run's difference runPt, the stretches scanned k, the
// spread and t bound of its length, the good requests lost (at the
// bound) and the second arm's requests in the run (ocRun).
type dipFound struct {
	stretch                   dipStretch
	vb, vc, lo, hi, runPt     float64
	k                         int
	spread, crit, lost, ocRun float64
}

// worstDip is dipEval's scan (see there) with the attainment margin as an
// absolute fraction and α given: the deepest stretch in which arm c
// alone lost more good requests than the margin allows, set against arm b.
// A stretch must also lie at least minSpreads MAD spreads below the
// median of its length's stretches (0: the t bound alone); with
// minSpreads > 0 the isolation condition ignores every stretch that
// overlaps one of arm b's lying as far out the other way — an outage of
// arm b's own, judged on its own, not a measure of the fleet's noise.
// isolation is DipIsolation or OutageIsolation; good says the cells hold
// good requests (the good-share scan) rather than requests served. The
// baseline_outage step calls it with the arms the other way round.
func worstDip(margin, alpha, minSpreads, isolation, phi float64, b, c []dipCell, secs, canaryStart, warmupCap float64, good bool) (dipFound, bool) {
	if len(b) != len(c) || len(b) == 0 || !(secs > 0) {
		return dipFound{}, false
	}
	// the run's difference over the positions both arms analysed
	run, ok := dipSum(b, c, dipWindow{0, len(b)})
	if !ok {
		return dipFound{}, false
	}
	ocRun := run.oc
	runLo := run.gcLo/run.oc - run.gbHi/run.ob // the cautious end for a fail
	runPt := (run.gcLo+run.gcHi)/2/run.oc - (run.gbLo+run.gbHi)/2/run.ob
	// mid is a stretch's attainment per arm, at the middle of its bounds
	mid := func(s dipStretch) (vb, vc float64) {
		return (s.gbLo + s.gbHi) / 2 / s.ob, (s.gcLo + s.gcHi) / 2 / s.oc
	}
	lengths := dipLengths(b, c, secs, canaryStart, warmupCap)
	k := 0
	for _, l := range lengths {
		k += len(l.st)
	}
	if k == 0 {
		return dipFound{}, false
	}
	conf := 1 - 2*alpha/float64(k)
	var worst dipStretch
	var worstIv stats.Interval
	var worstSpread, worstCrit float64
	worstLost := 0.0
	for _, l := range lengths {
		// the stretches' own spread: per-arm slowdowns that last minutes
		// move a stretch's difference by more than its binomial noise,
		// so a stretch is set against the run's other stretches of its
		// length (median and MAD, robust to the stretch itself), at a
		// Student t level over the stretches that fit side by side
		// (Bonferroni over them and the lengths)
		d := make([]float64, len(l.st))
		for i, s := range l.st {
			vb, vc := mid(s)
			d[i] = vc - vb
		}
		med, spread := medianMAD(d)
		// slowdowns declared to last (window.persistence, phi > 0 on the
		// good-share scan) spread the stretches less than their number
		// says: fewer degrees of freedom
		df := stats.StretchDF(l.disjoint, l.n, phi)
		crit := stats.TQuantile(1-alpha/float64(l.disjoint*len(lengths)), df) * spread
		// with minSpreads > 0, arm b's own outages: its stretches that
		// far out the other way; no stretch overlapping one of them
		// measures the fleet's noise. On good shares, only where arm b
		// also served less by at least half that depth (its requests
		// failed, were rejected or canceled): a stretch in which arm b's
		// requests were only late is what a fleet near its capacity does
		// to either arm, each queue filling and draining on its own, and
		// it shows how deep the fleet's own noise goes
		var bOut []dipWindow
		if minSpreads > 0 {
			for j, s := range l.st {
				if dev := d[j] - med; dev > minSpreads*spread && (!good || s.sc/s.oc-s.sb/s.ob >= dev/2) {
					bOut = append(bOut, s.dipWindow)
				}
			}
		}
		overlaps := func(w dipWindow, ws []dipWindow) bool {
			for _, o := range ws {
				if w.from < o.from+o.n && o.from < w.from+w.n {
					return true
				}
			}
			return false
		}
		for _, s := range l.st {
			// canary − baseline in the stretch, at the canary-favourable ends
			iv := stats.NewcombeDiff(s.gcHi, s.oc, s.gbLo, s.ob, conf)
			hi := iv.Hi - runLo
			if !(hi < -DipMargin) {
				continue
			}
			dev := med - (s.gcHi/s.oc - s.gbLo/s.ob)
			if !(dev > crit && dev > minSpreads*spread) {
				continue
			}
			// the baseline shows how deep this fleet's own slowdowns go:
			// under identical arms its stretches are as likely to be the
			// worse as the canary's, so no stretch of the run (not
			// overlapping this one) may have the baseline worse by more
			// than 1/isolation of this depth; the canary's other deep
			// stretches (a second outage) do not excuse this one
			alone := true
			for j := range l.st {
				if l.st[j].from+l.n <= s.from || l.st[j].from >= s.from+l.n {
					if (d[j]-med)*isolation > dev && !overlaps(l.st[j].dipWindow, bOut) {
						alone = false
						break
					}
				}
			}
			if !alone {
				continue
			}
			if lost := -hi * s.oc; lost > margin*ocRun && lost > worstLost {
				worst, worstIv, worstLost = s, iv, lost
				worstSpread, worstCrit = spread, crit
			}
		}
	}
	if worstLost == 0 {
		return dipFound{}, false
	}
	s := worst
	vb, vc := mid(s)
	return dipFound{stretch: s, vb: vb, vc: vc,
		lo: stats.NewcombeDiff(s.gcLo, s.oc, s.gbHi, s.ob, conf).Lo - runPt, hi: worstIv.Hi - runLo,
		runPt: runPt, k: k, spread: worstSpread, crit: worstCrit, lost: worstLost, ocRun: ocRun}, true
}

// dipAttainmentMargin is the slo_attainment gate's margin as an absolute
// fraction (a percent margin taken of the baseline's attainment in the
// cells), false when the policy has no such gate.
func dipAttainmentMargin(p *policies.Policy, b []dipCell) (float64, bool) {
	for _, g := range p.Gates {
		if g.Metric != "slo_attainment" {
			continue
		}
		switch g.Margin.Kind {
		case policies.MarginPP:
			return g.Margin.Value, true
		case policies.MarginPercent:
			var o, good float64
			for _, x := range b {
				o, good = o+x.offered, good+x.goodLo
			}
			if o > 0 {
				return g.Margin.Value * good / o, true
			}
		}
	}
	return 0, false
}

// fmtClock writes seconds since a start as m:ss (or h:mm:ss).
func fmtClock(s float64) string {
	t := int(math.Round(s))
	if t >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", t/3600, t/60%60, t%60)
	}
	return fmt.Sprintf("%d:%02d", t/60, t%60)
}

// fmtSpan writes a stretch's length in seconds as "90 s" or "2 min".
func fmtSpan(s float64) string {
	if s >= 60 && math.Mod(s, 60) == 0 {
		return fmt.Sprintf("%g min", s/60)
	}
	return fmt.Sprintf("%g s", s)
}

// dipGuardrail is the attainment_dip check on the requests of paired arms
// (dipEval decides it, as on the aggregate path): the baseline and the
// canary as counted, on the shared grid.
func (j *judgement) dipGuardrail() (gateEval, bool) {
	g, ok := j.dipGrid()
	if !ok {
		return gateEval{}, false
	}
	return dipEval(j.p, g.b, g.c, g.secs, g.start, g.goodCap(g.lateC))
}

// goodCap is the warm-up cap a good-share scan keeps clear of the
// canary's start: the grid's, or none when the scanned arm's automatic
// warm-up rule refused a cut because its slow part began after a normal
// start (late: a stall, which the cap would otherwise hide from both the
// warm-up cut and the scan). attainment_dip passes the canary's, the
// baseline_outage step the baseline's.
func (g dipGrid) goodCap(late bool) float64 {
	if late {
		return 0
	}
	return g.warmupCap
}

// dipGrid is what the dip scans read of paired arms: both arms' cells on
// the shared grid (dipCell), the grid's step (seconds), the start of the
// canary's first bucket, the automatic warm-up cap (seconds), and whether
// each arm's warm-up rule refused to cut a slowdown that began after a
// normal start (normalize.WarmupResult.LateSlowdown; goodCap).
type dipGrid struct {
	b, c                   []dipCell
	secs, start, warmupCap float64
	lateB, lateC           bool
	// tails reads the arms' latencies over a stretch (the
	// shared_outage step's tail condition)
	tails stretchTails
}

// dipGrid reads the requests' buckets as dipGrid cells; false when the
// arms are not paired in time.
func (j *judgement) dipGrid() (dipGrid, bool) {
	if !j.paired || j.b.pseudo || j.c.pseudo {
		return dipGrid{}, false
	}
	from, nb := j.grid()
	secs := j.b.bucketSecs
	// the shared grid's first bucket (the origin is the earlier first
	// arrival, inside it)
	g0 := math.Floor(j.b.origin/secs) * secs
	cells := func(a *armData) []dipCell {
		out := make([]dipCell, nb)
		for t := range out {
			i := from + t
			out[t].start = g0 + float64(i)*secs
			if i >= a.firstKept && i < len(a.buckets) {
				b := &a.buckets[i]
				out[t].offered, out[t].goodLo, out[t].goodHi, out[t].served = b.offered, b.good, b.good, b.completed
			}
		}
		return out
	}
	start := math.NaN()
	for i := range j.c.buckets {
		if j.c.buckets[i].offered > 0 {
			start = g0 + float64(i)*secs
			break
		}
	}
	if math.IsNaN(start) || math.IsNaN(j.b.origin) {
		return dipGrid{}, false
	}
	late := func(a *armData) bool { return a.warmup != nil && a.warmup.LateSlowdown }
	return dipGrid{b: cells(j.b), c: cells(j.c), secs: secs, start: start, warmupCap: j.p.Window.WarmupCap(j.c.windowEnd - j.c.t0),
		lateB: late(j.b), lateC: late(j.c), tails: requestTails{j.b, j.c, g0}}, true
}

// dipGuardrail is the attainment_dip check on paired aggregated arms: the
// baseline and the canary as counted (cRaw), slice by slice on the shared
// grid, good requests within their bounds.
func (j *aggJudgement) dipGuardrail() (gateEval, bool) {
	g, ok := j.dipGrid()
	if !ok {
		return gateEval{}, false
	}
	return dipEval(j.p, g.b, g.c, g.secs, g.start, g.goodCap(g.lateC))
}

// dipGrid reads the aggregated arms' slices (the canary as counted) as
// dipGrid cells; false when the arms are not paired in time.
func (j *aggJudgement) dipGrid() (dipGrid, bool) {
	if !j.paired || len(j.b.slices) == 0 || len(j.cRaw.slices) == 0 || len(j.c.allStarts) == 0 {
		return dipGrid{}, false
	}
	step := j.b.ds.Agg.Step
	lo, nb, atB, atC := j.rawGrid()
	cells := func(a *aggArm, at []int) []dipCell {
		out := make([]dipCell, nb)
		for t := range out {
			out[t].start = lo + float64(t)*step
			if i := at[t]; i >= 0 {
				s := &a.slices[i]
				out[t].offered, out[t].goodLo, out[t].goodHi, out[t].served = s.offered(), s.goodLo, s.goodHi, s.completed
			}
		}
		return out
	}
	run := j.c.slices[len(j.c.slices)-1].end - j.c.allStarts[0]
	return dipGrid{b: cells(j.b, atB), c: cells(j.cRaw, atC), secs: step, start: j.c.allStarts[0], warmupCap: j.p.Window.WarmupCap(run),
		lateB: j.b.lateSlowdown, lateC: j.c.lateSlowdown, tails: aggTails{j.b, j.cRaw}}, true
}

// medianMAD returns the median of x and its median absolute deviation
// scaled to a normal standard deviation (× 1.4826).
func medianMAD(x []float64) (med, spread float64) {
	y := slices.Clone(x)
	slices.Sort(y)
	med = quantile(y, 0.5)
	for i, v := range x {
		y[i] = math.Abs(v - med)
	}
	slices.Sort(y)
	return med, 1.4826 * quantile(y, 0.5)
}

// dipSpreadText says how far a stretch's difference d lies out against
// the spread of the run's stretches of its length: "4.2 times the spread
// …", with the MAD spread and the t bound crit written by delta when delta
// is not nil. A spread of 0 (at least half the stretches at their median:
// the shares served where nearly every request is) is said as such, not
// as a ratio.
func dipSpreadText(d, spread float64, delta func(float64) string, crit float64) string {
	if !(spread > 0) {
		return "the run's stretches of that length show no spread (at least half of them at their median, MAD 0)"
	}
	t := fmt.Sprintf("%.1f times the spread of the run's stretches of that length", math.Abs(d)/spread)
	if delta != nil {
		t += fmt.Sprintf(" (MAD %s; t bound %s)", delta(spread), delta(crit))
	}
	return t
}

// slowdownDepth is how far below the run's difference one of the fleet's
// own declared slowdowns (per-bucket AR(1) phi) can take the good-share
// difference of d's stretch, at one-sided level alpha over the stretches
// scanned: a Student t quantile (on stats.StretchDF of the run's buckets)
// times the spread of the run's per-bucket differences (MAD, so that an
// outage does not set its own yardstick) times √stats.ARMeanVar of the
// stretch's length — all of a bucket's spread taken as persistent, the
// most a stretch's mean can keep of it. A stretch deeper than that is
// more than a slowdown, however long they last: a stall that holds back
// nearly every request. +Inf when too few buckets hold both arms.
func slowdownDepth(b, c []dipCell, d dipFound, phi, alpha float64) float64 {
	var diffs []float64
	for t := range b {
		if b[t].offered > 0 && c[t].offered > 0 {
			diffs = append(diffs, (c[t].goodLo+c[t].goodHi)/2/c[t].offered-(b[t].goodLo+b[t].goodHi)/2/b[t].offered)
		}
	}
	if len(diffs) < MinBuckets || d.k < 1 {
		return math.Inf(1)
	}
	_, spread := medianMAD(diffs)
	nu := stats.StretchDF(len(diffs), 1, phi)
	return stats.TQuantile(1-alpha/float64(d.k), nu) * spread * math.Sqrt(stats.ARMeanVar(d.stretch.n, phi))
}

// slowdownCovers says whether one of the fleet's own declared slowdowns
// (per-bucket AR(1) phi on buckets of secs seconds) can explain the
// good-share stretch of d: the stretch is no longer than twice their
// correlation time and its difference beyond the run's, at the
// canary-favourable end, no deeper than depth (slowdownDepth at level
// alpha). False without a declared persistence.
func slowdownCovers(b, c []dipCell, d dipFound, phi, secs, alpha float64) (depth float64, ok bool) {
	if !(phi > 0 && phi < 1) {
		return 0, false
	}
	if float64(d.stretch.n)*secs > 2*stats.PersistenceTau(secs, phi) {
		return 0, false
	}
	depth = slowdownDepth(b, c, d, phi, alpha)
	return depth, -d.hi <= depth
}
