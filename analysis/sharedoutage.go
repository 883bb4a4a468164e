package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// Shared outage parameters (pre-declared).
const (
	// SharedTailQuantile is the quantile of each arm's TTFT and TPOT over
	// a shared stretch that findSharedOutage compares: 0.9, far enough
	// into the tail to see an arm that collapsed harder in the incident,
	// with enough requests in a 30 s stretch (about 60 of 600 above it at
	// 20 req/s) to be read steadily.
	SharedTailQuantile = 0.9
	// SharedTailMargin is how much higher (relative, 0.10 = 10%) the
	// canary's SharedTailQuantile in the stretch may lie than the
	// baseline's when the policy gates no p99 of that latency with a
	// percent margin; with such a gate, its margin.
	SharedTailMargin = 0.10
	// SharedLoadRatio is the most requests (both arms') a shared stretch
	// may carry against the median of the run's stretches of its length
	// for findSharedOutage to leave it out: a slowdown both arms show at
	// a peak of their shared load is the load's, which the change must be
	// judged on, not an incident. On the fleet model (a ±30% traffic wave
	// of 10 minutes), identical arms that slow down at its peaks showed
	// both-arm stretches at 1.25–1.54 times the median load; one-minute
	// stalls and two-minute error bursts at random times, 0.72–1.30
	// (15–25% of them above 1.2, which are kept in every gate).
	SharedLoadRatio = 1.2
	// sharedName names the normalization step.
	sharedName = "shared_outage"
)

// sharedFound is the stretch worstShared found: both arms' shares of good
// requests in it (vb, vc, at the middle of their bounds), each arm's
// median share over the run's stretches of that length and its MAD
// spread, the good requests each arm lost there against its median (at
// the cautious bound), and the canary's share less the baseline's there
// (diff), with its Newcombe interval [lo, hi] at level 1 − 2α (at the
// bounds' unfavourable and favourable ends), and the arms' difference
// over the run (runPt); the same for their shares served.
type sharedFound struct {
	stretch                    dipStretch
	vb, vc                     float64
	medB, medC                 float64
	spreadB, spreadC           float64
	lostB, lostC               float64
	diff, lo, hi, runPt        float64
	served, servedLo, servedHi float64 // the same for the shares served
	runServed                  float64
	// load is both arms' offered requests in the stretch over the
	// median of the run's stretches of its length
	load float64
}

// worstShared scans the stretches of dipEval's lengths (30 s, 1, 2 and
// 5 min, of positions both arms analysed, from warmupCap past the
// canary's start) for the one in which both arms at once lost the most
// good requests against their own level: in each arm, the stretch's share
// of good requests (at its upper bound) lies below the median of the
// arm's stretches of that length by more than DipMargin, by more than
// minSpreads MAD spreads of them and by more than their Student t bound
// (at α over the stretches that fit side by side and the lengths, as
// worstDip), and the good requests so lost exceed the attainment margin
// of the arm's requests in the run. The deepest such stretch is the one
// where the lesser of the arms' losses is largest, a longer one taken over
// a shorter only when it loses a tenth more (a one-minute stall lies in
// two-minute stretches too, with the same loss); false when none is.
func worstShared(margin, alpha, minSpreads float64, b, c []dipCell, secs, canaryStart, warmupCap float64) (sharedFound, bool) {
	if len(b) != len(c) || len(b) == 0 || !(secs > 0) {
		return sharedFound{}, false
	}
	run, ok := dipSum(b, c, dipWindow{0, len(b)})
	if !ok {
		return sharedFound{}, false
	}
	lengths := dipLengths(b, c, secs, canaryStart, warmupCap)
	var best sharedFound
	bestLost := 0.0
	for _, l := range lengths {
		shB, shC, load := make([]float64, len(l.st)), make([]float64, len(l.st)), make([]float64, len(l.st))
		for i, s := range l.st {
			shB[i], shC[i], load[i] = (s.gbLo+s.gbHi)/2/s.ob, (s.gcLo+s.gcHi)/2/s.oc, s.ob+s.oc
		}
		medB, spreadB := medianMAD(shB)
		medC, spreadC := medianMAD(shC)
		medLoad, _ := medianMAD(load)
		t := stats.TQuantile(1-alpha/float64(l.disjoint*len(lengths)), float64(l.disjoint-1))
		deep := func(dev, spread, o, oRun float64) bool {
			return dev > DipMargin && dev > minSpreads*spread && dev > t*spread && dev*o > margin*oRun
		}
		for i, s := range l.st {
			devB, devC := medB-s.gbHi/s.ob, medC-s.gcHi/s.oc
			if !deep(devB, spreadB, s.ob, run.ob) || !deep(devC, spreadC, s.oc, run.oc) {
				continue
			}
			// a longer stretch around a shorter one holds the same
			// loss and more of the run: it must lose a tenth more
			lost := math.Min(devB*s.ob, devC*s.oc)
			if lost <= bestLost || l.n > best.stretch.n && best.stretch.n > 0 && lost <= 1.1*bestLost {
				continue
			}
			bestLost = lost
			best = sharedFound{stretch: s, vb: shB[i], vc: shC[i], medB: medB, medC: medC,
				spreadB: spreadB, spreadC: spreadC, lostB: devB * s.ob, lostC: devC * s.oc, load: load[i] / medLoad}
		}
	}
	if bestLost == 0 {
		return sharedFound{}, false
	}
	// the canary's shares in the stretch against the baseline's at the
	// same time, good and served, with the arms' differences over the run
	s := best.stretch
	conf := 1 - 2*alpha
	best.runPt = (run.gcLo+run.gcHi)/2/run.oc - (run.gbLo+run.gbHi)/2/run.ob
	best.diff = best.vc - best.vb
	best.lo = stats.NewcombeDiff(s.gcLo, s.oc, s.gbHi, s.ob, conf).Lo
	best.hi = stats.NewcombeDiff(s.gcHi, s.oc, s.gbLo, s.ob, conf).Hi
	iv := stats.NewcombeDiff(s.sc, s.oc, s.sb, s.ob, conf)
	best.runServed = run.sc/run.oc - run.sb/run.ob
	best.served = s.sc/s.oc - s.sb/s.ob
	best.servedLo, best.servedHi = iv.Lo, iv.Hi
	return best, true
}

// stretchTails reads an arm's latencies over a stretch of the shared grid:
// its latency ("ttft", "tpot") over the positions starting in [from, to)
// seconds on the shared clock (the canary as counted).
type stretchTails interface {
	// quantile is the q-quantile, known within [lo, hi] (equal from
	// requests; a histogram bin's edges from an aggregate; NaN when its
	// histograms cannot be read); ok false when the arm completed no
	// request with that latency there.
	quantile(canary bool, latency string, q, from, to float64) (lo, hi float64, ok bool)
	// above is how many of those values lie above edge (k) of how many
	// (n): exact from requests and at a histogram edge; from a histogram
	// whose edges miss it, the count above the edge below it (the
	// larger); ok false when none or unreadable.
	above(canary bool, latency string, edge, from, to float64) (k, n float64, exact, ok bool)
}

// findSharedOutage finds a stretch of arms paired in time in which both
// lost many good requests at once — an incident they shared (a network or
// storage fault, an upstream stall), not the change's — and which may be
// left out of both without hiding a difference between them. Left in, such
// a stretch sets both arms' p99s (a one-minute stall at 5× the latency is
// 3% of a 30-minute run), and since each arm's tail is resampled on its
// own, a resample that draws the stall twice in one arm and not in the
// other moves the p99 ratio severalfold: every tail gate of the fleet
// model's shared stall stayed inconclusive ("more data will not decide
// this"). The stretch is worstShared's (both arms at least OutageSpreads
// spreads below their own level, past the warm-up cap unless both arms'
// warm-up rules refused a late slowdown) and is left out only when, in
// it,
//
//   - the canary's shares of good requests and of requests served lie no
//     lower than the baseline's at one-sided level α (a Newcombe
//     interval of their difference whose upper end is ≥ 0), or than the
//     arms' difference over the run where the canary is the lower over
//     the run (a stretch where neither arm holds a good request does not
//     ask a canary better over the run to be better there too), and
//   - both arms together were offered at most SharedLoadRatio times the
//     median of the run's stretches of that length (a slowdown at a peak
//     of their shared load is the load's), and
//   - the canary's SharedTailQuantile of TTFT and of TPOT (at its upper
//     bound) lies no more than the policy's p99 margin for that latency
//     (SharedTailMargin without one) above the baseline's (at its lower
//     bound): a canary that collapsed harder in the incident keeps the
//     stretch in every gate. Where histogram bins wider than the margin
//     hold them and cannot tell them apart (Prometheus' classic
//     buckets), the canary's share of requests above the upper edge of
//     the baseline's bin must be no larger than the baseline's at
//     one-sided level α (Newcombe) instead: a canary slower by any factor
//     puts more of its requests above every edge. A latency the policy
//     does not judge is not compared; one it judges that the arms
//     completed requests without, or whose histograms cannot be read,
//     keeps the stretch too.
//
// False under normalize.shared_dip: keep, or without a slo_attainment
// gate with a margin. A stretch found but kept (for the load's sake or the
// canary's) is said in kept, a warning, since it is what leaves the tail
// gates undecided.
func findSharedOutage(p *policies.Policy, g dipGrid, clock sources.Clock) (o baselineOutage, kept string, ok bool) {
	if p.Normalize.SharedDip != "exclude" || g.tails == nil {
		return baselineOutage{}, "", false
	}
	margin, ok := dipAttainmentMargin(p, g.b)
	if !ok {
		return baselineOutage{}, "", false
	}
	d, ok := worstShared(margin, p.Alpha(), OutageSpreads, g.b, g.c, g.secs, g.start, g.goodCap(g.lateB && g.lateC))
	if !ok {
		return baselineOutage{}, "", false
	}
	pp := func(v float64) string { return fmt.Sprintf("%+.1f pp", 100*v) }
	s := d.stretch
	from, to := g.b[s.from].start, g.b[s.from].start+float64(s.n)*g.secs
	keep := func(why string) (baselineOutage, string, bool) {
		return baselineOutage{}, fmt.Sprintf("both arms: lost many good requests from %s to %s (%s, from %s to %s after the canary's start) at the same time; kept in every gate (normalize.shared_dip): %s", fmtTime(clock, from), fmtTime(clock, to), fmtSpan(to-from), fmtClock(from-g.start), fmtClock(to-g.start), why), false
	}
	switch {
	case d.load > SharedLoadRatio:
		return keep(fmt.Sprintf("it carried %.0f%% more requests than the run's typical stretch of that length (more than %.0f%%): a slowdown at a peak of the arms' shared load is for the gates to judge, not an incident to leave out", 100*(d.load-1), 100*(SharedLoadRatio-1)))
	case d.hi < min(0, d.runPt):
		return keep(fmt.Sprintf("the canary held fewer good requests there, %s [%s, %s] against the baseline's share at the same time (%s over the run)", pp(d.diff), pp(d.lo), pp(d.hi), pp(d.runPt)))
	case d.servedHi < min(0, d.runServed):
		return keep(fmt.Sprintf("the canary served fewer of its requests there, %s [%s, %s] against the baseline's share at the same time (%s over the run)", pp(d.served), pp(d.servedLo), pp(d.servedHi), pp(d.runServed)))
	}
	var tails []string
	for _, latency := range []string{"ttft", "tpot"} {
		if !policyReads(p, latency) {
			continue
		}
		name := fmtLatency(latency)
		bLo, bHi, okB := g.tails.quantile(false, latency, SharedTailQuantile, from, to)
		cLo, cHi, okC := g.tails.quantile(true, latency, SharedTailQuantile, from, to)
		if !okB && !okC {
			if s.sb > 0 || s.sc > 0 {
				// requests completed there, and no latency of them
				// was recorded: nothing shows the canary fared no worse
				return keep(fmt.Sprintf("the arms completed requests there but give no %s for them to compare", name))
			}
			continue
		}
		lim := sharedTailMargin(p, latency+"_p99")
		if okB != okC {
			return keep(fmt.Sprintf("only one arm completed requests with a %s there", name))
		}
		if !(bLo > 0) || math.IsNaN(cHi) {
			return keep(fmt.Sprintf("the arms' %s there cannot be read to compare", name))
		}
		if cLo > bHi*(1+lim) || cLo == cHi && bLo == bHi && !(cHi <= bLo*(1+lim)) {
			return keep(fmt.Sprintf("the canary collapsed harder there: its p%g %s %s against the baseline's %s (%+.1f%%, beyond %.0f%%)",
				100*SharedTailQuantile, name, fmtSeconds(cLo), fmtSeconds(bHi), 100*(cLo/bHi-1), 100*lim))
		}
		if cHi <= bLo*(1+lim) {
			tails = append(tails, fmt.Sprintf("the canary's p%g %s %s against the baseline's %s (%+.1f%%, within %.0f%%)",
				100*SharedTailQuantile, name, fmtSeconds(cHi), fmtSeconds(bLo), 100*(cHi/bLo-1), 100*lim))
			continue
		}
		// bounded by histogram bins too wide to tell the quantiles
		// apart (Prometheus' classic buckets): the shares above the
		// baseline's bin's upper edge instead, the canary's no larger
		// at one-sided level α (a canary slower by any factor puts
		// more of its requests above any edge)
		wide := fmt.Sprintf("the arms' p%g %s there are known only within their histogram bins, the canary's in [%s, %s], the baseline's in [%s, %s]",
			100*SharedTailQuantile, name, fmtSeconds(cLo), fmtSeconds(cHi), fmtSeconds(bLo), fmtSeconds(bHi))
		tooWide := wide + fmt.Sprintf(": too wide to show the canary's within %.0f%% of the baseline's (finer buckets or per-request records would)", 100*lim)
		// only bins wider than the margin: within finer ones the
		// quantiles decide, as from requests (a streaming aggregate
		// is never less cautious than the exact judge)
		if coarse := bHi > bLo*(1+lim) || cHi > cLo*(1+lim); !coarse || math.IsInf(bHi, 1) {
			return keep(tooWide)
		}
		kb, nb, exactB, okB := g.tails.above(false, latency, bHi, from, to)
		kc, nc, _, okC := g.tails.above(true, latency, bHi, from, to)
		if !okB || !okC || !exactB {
			return keep(tooWide)
		}
		iv := stats.NewcombeDiff(kc, nc, kb, nb, 1-2*p.Alpha())
		share := fmt.Sprintf("its share of requests above %s, %.2f%% against the baseline's %.2f%% (%s [%s, %s])",
			fmtSeconds(bHi), 100*kc/nc, 100*kb/nb, pp(kc/nc-kb/nb), pp(iv.Lo), pp(iv.Hi))
		if iv.Lo > 0 {
			return keep(wide + "; the canary collapsed harder there: " + share)
		}
		tails = append(tails, wide+"; "+share+", no larger at one-sided level α")
	}
	tailText := "neither arm completed a request there"
	if len(tails) > 0 {
		tailText = strings.Join(tails, " and ")
	}
	o = baselineOutage{from: from, to: to, shared: true}
	o.detail = fmt.Sprintf("left out %s to %s (%s, from %s to %s after the canary's start) of both arms: both lost good requests at the same time, an incident they shared — the baseline held %.1f%% against %.1f%% in its typical stretch of that length (%s), the canary %.1f%% against %.1f%% (%s), each losing at least about %s and %s good requests, more than the attainment margin of its requests in the run allows; the canary fared no worse there: its share of good requests %s [%s, %s] and of requests served %s [%s, %s] against the baseline's at the same time, no lower than the arms' differences over the run allow (%s good, %s served), %s; %s baseline and %s canary requests left out of every gate (normalize.shared_dip: keep judges them)",
		fmtTime(clock, from), fmtTime(clock, to), fmtSpan(to-from), fmtClock(from-g.start), fmtClock(to-g.start),
		100*d.vb, 100*d.medB, dipSpreadText(d.medB-d.vb, d.spreadB, nil, 0), 100*d.vc, 100*d.medC, dipSpreadText(d.medC-d.vc, d.spreadC, nil, 0),
		fmtCount(math.Round(d.lostB)), fmtCount(math.Round(d.lostC)),
		pp(d.diff), pp(d.lo), pp(d.hi), pp(d.served), pp(d.servedLo), pp(d.servedHi), pp(d.runPt), pp(d.runServed), tailText,
		fmtCount(math.Round(s.ob)), fmtCount(math.Round(s.oc)))
	return o, "", true
}

// policyReads reports whether the policy judges latency ("ttft", "tpot")
// at all: in its SLO or a class's, or in a gate on one of its quantiles.
func policyReads(p *policies.Policy, latency string) bool {
	slo := func(s policies.SLO) bool {
		if latency == "tpot" {
			return s.TPOT > 0
		}
		return s.TTFT > 0
	}
	if slo(p.SLO) {
		return true
	}
	for _, c := range p.Classes {
		if slo(c.SLO) {
			return true
		}
	}
	for _, g := range p.Gates {
		if info, ok := policies.Metric(g.Metric); ok && info.Latency == latency {
			return true
		}
	}
	return false
}

// sharedTailMargin is the percent margin of the policy's gate on metric
// (ttft_p99, tpot_p99) as a fraction, SharedTailMargin without one.
func sharedTailMargin(p *policies.Policy, metric string) float64 {
	for _, g := range p.Gates {
		if g.Metric == metric && g.Margin.Kind == policies.MarginPercent && g.Margin.Value > 0 {
			return g.Margin.Value
		}
	}
	return SharedTailMargin
}

// fmtSeconds writes a latency in seconds as "1.23 s" or "45.6 ms".
func fmtSeconds(v float64) string {
	if math.Abs(v) < 1 {
		return fmt.Sprintf("%.3g ms", 1000*v)
	}
	return fmt.Sprintf("%.3g s", v)
}

// requestTails is stretchTails on the requests' buckets (g0 the shared
// grid's first bucket start): the arm's completed requests' latencies in
// the buckets starting in [from, to).
type requestTails struct {
	b, c *armData
	g0   float64
}

func (r requestTails) values(canary bool, latency string, from, to float64) []float64 {
	a := r.b
	if canary {
		a = r.c
	}
	var xs []float64
	for i := a.firstKept; i < len(a.buckets); i++ {
		st := r.g0 + float64(i)*a.bucketSecs
		if st < from-1e-9 || st >= to-1e-9 {
			continue
		}
		xs = append(xs, samplesOf(&a.buckets[i], latency)...)
	}
	return xs
}

// quantile is the value at rank ⌈q·n⌉.
func (r requestTails) quantile(canary bool, latency string, q, from, to float64) (float64, float64, bool) {
	xs := r.values(canary, latency, from, to)
	if len(xs) == 0 {
		return 0, 0, false
	}
	slices.Sort(xs)
	v := quantile(xs, q)
	return v, v, true
}

func (r requestTails) above(canary bool, latency string, edge, from, to float64) (float64, float64, bool, bool) {
	xs := r.values(canary, latency, from, to)
	k := 0.0
	for _, v := range xs {
		if v > edge {
			k++
		}
	}
	return k, float64(len(xs)), true, len(xs) > 0
}

// aggTails is stretchTails on aggregated arms: the arm's slices (the
// canary as counted) starting in [from, to), their histograms merged.
type aggTails struct{ b, c *aggArm }

// hist is the merged histogram; dropped when they do not merge.
func (r aggTails) hist(canary bool, latency string, from, to float64) (h sources.Histogram, dropped bool) {
	a := r.b
	if canary {
		a = r.c
	}
	var hs []sources.Histogram
	for i := range a.slices {
		s := &a.slices[i]
		if s.start < from-1e-9 || s.start >= to-1e-9 {
			continue
		}
		hs = append(hs, latencyOfSlice(s, latency))
	}
	if len(hs) == 0 {
		return sources.Histogram{}, false
	}
	return histo.Merge(hs...)
}

// quantile is the quantile within the edges of the bin holding its rank.
func (r aggTails) quantile(canary bool, latency string, q, from, to float64) (float64, float64, bool) {
	h, dropped := r.hist(canary, latency, from, to)
	if dropped {
		// histograms that do not merge: unreadable, not empty
		return math.NaN(), math.NaN(), true
	}
	if !(h.Total() > 0) {
		return 0, 0, false
	}
	lo, hi := histo.QuantileBounds(q, h)
	return lo, hi, true
}

func (r aggTails) above(canary bool, latency string, edge, from, to float64) (float64, float64, bool, bool) {
	h, dropped := r.hist(canary, latency, from, to)
	if dropped || !(h.Total() > 0) {
		return 0, 0, false, false
	}
	k, exact := histo.Above(h, edge)
	return k, h.Total(), exact, !math.IsNaN(k)
}
