package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// A gateway that times a request out and drops its log line, or a
// collector that loses the lines of slow requests, leaves an arm whose
// latencies stop at a value the other arm's pass: its slowest requests
// are missing, and what is left looks better than the service was (the
// fleet model's canary-drops-slow: every completion whose first token
// took over 1 s unlogged, 1–2% of the records; identical arms passed
// 52.5% of runs, the missing share inside offered_load_ratio's
// tolerance). Up to the cut, such an arm served as the other did; a
// lighter tail, a faster or a slower arm did not. So an arm's TTFT is
// read as cut off at its largest value m when all hold:
//
//   - the other arm has many values above m: at least CutoffAbove when
//     scaled to the cut arm's count (identical arms give a few; arms
//     whose own slowdowns differ by minutes-long stretches up to 13 in
//     the fleet model's noisiest);
//   - in (m/CutoffBand, m] the arm has at least CutoffAbove/2 values and
//     at least CutoffMatch of the other's count there (scaled), and not
//     fewer beyond doubt (one-sided z below −2.58 on the split of the
//     band's values between the arms): the density runs on up to the cut
//     and stops, where a lighter tail has few values just below its
//     largest;
//   - below m the arms' values are distributed alike (sameBody): every
//     regression puts one arm's values above the other's largest, and an
//     arm a few per cent faster by its own slowdowns alone has fewer
//     values near its largest, but not few.
//
// A cut canary holds a pass: its missing requests would count against
// it (a fail or an inconclusive run gains the reason).
//
// End-to-end latency is read the same way, with one more condition: the
// other arm's values run on well past the cut — at least CutoffAbove of
// them (scaled) above m·CutoffBand. Its top runs up to a soft wall
// (answers capped in length), where an arm's own slowdown or a lost
// replica puts dozens of one arm's values just above the other's largest
// with as many just below it (a simulated baseline that lost a replica:
// 28 above, 3 of them a tenth past); a gateway's total timeout that
// drops long answers leaves hundreds past (the fleet model's
// canary-drops-long-e2e: every answer over 38 s unlogged, 1.5% of the
// records, 150–270 of the baseline's beyond 41.8 s; it passed 70% of
// runs before this was read).
//
// A cut baseline holds a fail, with one more condition. The cut's shape —
// the other arm's values running on past an arm's largest, alike below
// it — is also a canary that regressed on part of its requests (a slow
// replica, a slow path) beside a baseline whose TTFT has a sharp upper
// edge. What tells them apart is the count: a baseline whose log lost its
// requests past the cut logged fewer than it was offered, by the share f
// of the canary's requests that lie past it, so the arms' offered-load
// ratio reads about f/(1 − f) more for the canary; a canary half of whose
// requests slowed past the baseline's edge would need a ratio of +100%.
// So a baseline is read as cut (heldByCutBaseline) when cutTail (or
// cutTailE2E) reads it so against the canary and f/(1 − f) lies within
// offered_load_ratio's interval; then a fail that only attainment, the
// latency quantiles and offered_load_ratio give (cutBiased: what a log
// without its slowest requests biases against the canary over the whole
// run) is held, and any other fail stands with the reason added. Without
// offered_load_ratio (records that name no replica) the count cannot be
// read: the fail stands, and its reason says the baseline looks cut. The
// fleet model's
// baseline-drops-slow (the baseline's log loses every completion whose
// first token took over 1 s) failed an identical canary in every run
// before this was read (docs/EVIDENCE.md).
const (
	// CutoffAbove is the fewest values of the other arm above the cut
	// arm's largest, scaled to the cut arm's count.
	CutoffAbove = 20.0
	// CutoffBand is the width, as a factor, of the band below the cut
	// arm's largest value in which the arms' counts are compared.
	CutoffBand = 1.1
	// CutoffMatch is the least share of the other arm's count in the
	// band (scaled) the cut arm must hold there.
	CutoffMatch = 0.8
	// CutoffBody is how far apart (absolute) the arms' shares at or
	// below the cut arm's median and 90th percentile may lie, beyond
	// 2.58 binomial standard errors (sameBody).
	CutoffBody = 0.01
)

// latencyCounts is what the cut-off check reads of one arm's latency:
// the request path's sorted values or an exact aggregate's log-linear
// histogram.
type latencyCounts interface {
	total() float64
	// top is the largest value (a histogram: its bin's upper edge);
	// topFloor the least it can be (a histogram: that bin's lower edge)
	top() float64
	topFloor() float64
	// above counts the values greater than v (a histogram: those above
	// the bin edge at or below v, counting the bin that holds v);
	// aboveUp those above the bin edge at or above v (not counting it)
	above(v float64) float64
	aboveUp(v float64) float64
	// at is a value at or just above the q-quantile: the order
	// statistic (a histogram: its bin's upper edge)
	at(q float64) float64
}

// sortedCounts is an arm's sorted latency values.
type sortedCounts []float64

func (s sortedCounts) total() float64 { return float64(len(s)) }
func (s sortedCounts) top() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	return s[len(s)-1]
}
func (s sortedCounts) topFloor() float64         { return s.top() }
func (s sortedCounts) aboveUp(v float64) float64 { return s.above(v) }
func (s sortedCounts) above(v float64) float64 {
	return float64(len(s) - sort.Search(len(s), func(i int) bool { return s[i] > v }))
}
func (s sortedCounts) at(q float64) float64 {
	return s[min(max(int(math.Ceil(q*float64(len(s))))-1, 0), len(s)-1)]
}

// histCounts is an arm's merged histogram in cumulative form.
type histCounts sources.Histogram

func (h histCounts) total() float64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// topBin is the index of the edge that closes the highest non-empty bin
// (−1 when the histogram is empty).
func (h histCounts) topBin() int {
	n := h.total()
	if !(n > 0) {
		return -1
	}
	return sort.Search(len(h.Counts), func(i int) bool { return h.Counts[i] >= n })
}

func (h histCounts) top() float64 {
	if i := h.topBin(); i >= 0 {
		return h.Edges[i]
	}
	return math.NaN()
}

func (h histCounts) topFloor() float64 {
	switch i := h.topBin(); {
	case i < 0:
		return math.NaN()
	case i == 0:
		return math.Inf(-1)
	default:
		return h.Edges[i-1]
	}
}

func (h histCounts) aboveUp(v float64) float64 {
	i := sort.SearchFloat64s(h.Edges, v)
	if i >= len(h.Edges) {
		return 0
	}
	return h.total() - h.Counts[i]
}

func (h histCounts) at(q float64) float64 {
	n := h.total()
	i := sort.Search(len(h.Counts), func(i int) bool { return h.Counts[i] >= q*n })
	return h.Edges[min(i, len(h.Edges)-1)]
}

// above counts the values above the largest listed edge at or below v
// (a sparse histogram's count at an unlisted edge is that of the listed
// edge below it), all of them when there is none.
func (h histCounts) above(v float64) float64 {
	i := sort.Search(len(h.Edges), func(i int) bool { return h.Edges[i] > v }) - 1
	if i < 0 {
		return h.total()
	}
	return h.total() - h.Counts[i]
}

// tailCut is the canary's TTFT or end-to-end latency found cut off
// (cutTail, cutTailE2E).
type tailCut struct {
	// latency names what was cut in the reason: "TTFT" or "end-to-end
	// latency"
	latency string
	at      float64 // the canary's largest value, seconds
	// above is the other arm's count above at, expected that scaled to
	// the cut arm's count; band and bandOther the arms' counts in
	// (at/CutoffBand, at], bandOther scaled
	above, expected, band, bandOther float64
	// far is the other arm's count above at·CutoffBand, scaled (read by
	// cutTailE2E only)
	far float64
}

// cutTail reports whether arm x's latency is cut off below arm y's (the
// rule above).
func cutTail(x, y latencyCounts) (tailCut, bool) {
	nx, ny := x.total(), y.total()
	m := x.top()
	if !(nx > 0 && ny > 0) || math.IsNaN(m) {
		return tailCut{}, false
	}
	scale := nx / ny
	// from bins, every count is read the way that holds more readily
	// (the arm's largest anywhere in its top bin, the band's lower end
	// anywhere in its bin), so that bins never hold less often than the
	// values would: the other arm's values above the top bin's lower
	// edge; the arm's band with the bin holding its lower end, the other
	// arm's without it and without the top bin
	floor := x.topFloor()
	above := y.above(floor)
	c := tailCut{latency: "TTFT", at: m, above: above, expected: above * scale}
	lo := m / CutoffBand
	c.band = x.above(lo) // nothing of x lies above m
	byRaw := max(y.aboveUp(lo)-above, 0)
	c.bandOther = byRaw * scale
	if !(c.expected >= CutoffAbove && c.band >= CutoffAbove/2 && c.band >= CutoffMatch*c.bandOther) {
		return c, false
	}
	share := nx / (nx + ny)
	all := c.band + byRaw
	z := (c.band - share*all) / math.Sqrt(all*share*(1-share))
	return c, z > -2.58 && sameBody(x, y, m)
}

// cutTailE2E reports whether arm x's end-to-end latency is cut off below
// arm y's: cutTail's rule, and at least CutoffAbove of y's values (scaled)
// above m·CutoffBand (from bins, above the top bin's lower edge times
// CutoffBand, counting the bin that holds it: the way that holds more
// readily, as cutTail reads its counts).
func cutTailE2E(x, y latencyCounts) (tailCut, bool) {
	c, ok := cutTail(x, y)
	c.latency = "end-to-end latency"
	if !ok {
		return c, false
	}
	c.far = y.above(x.topFloor()*CutoffBand) * x.total() / y.total()
	return c, c.far >= CutoffAbove
}

// sameBody reports whether y's values at or below m are distributed as
// x's (all of which are): at x's median and 90th percentile, the shares
// of both at or below agree within CutoffBody plus 2.58 standard errors.
// An arm whose log was cut served as the other did up to the cut; an arm
// faster or slower by its own slowdowns, or by a change, did not.
func sameBody(x, y latencyCounts, m float64) bool {
	nx, ny := x.total(), y.total()-y.above(m)
	if !(nx > 0 && ny > 0) {
		return false
	}
	for _, q := range []float64{0.5, 0.9} {
		v := x.at(q)
		px, py := (nx-x.above(v))/nx, (ny-(y.above(v)-y.above(m)))/ny
		p := (px + py) / 2
		if math.Abs(px-py) > CutoffBody+2.58*math.Sqrt(p*(1-p)*(1/nx+1/ny)) {
			return false
		}
	}
	return true
}

// why is the cut's reason.
func (c tailCut) why() string {
	far := ""
	if c.far > 0 {
		far = fmt.Sprintf(", %.0f of them past %.4g s", c.far, c.at*CutoffBand)
	}
	return fmt.Sprintf("the canary's %s stops at %.4g s while the baseline has %s values above it (%.0f at the canary's count%s; identical arms give a few), and just below it, in (%.4g, %.4g] s, the canary has %.0f values against the baseline's %.0f: a tail cut off there, as when a gateway or collector drops the records of requests that ran that long, so the canary's slowest requests are missing from its log",
		c.latency, c.at, fmtCount(c.above), c.expected, far, c.at/CutoffBand, c.at, c.band, c.bandOther)
}

// cutBiased reports whether a failing gate is one a baseline log without
// its slowest requests biases against the canary over the whole run:
// attainment, the latency quantiles (pooled and per class), and
// offered_load_ratio (heldByCutBaseline reads the cut only when the
// ratio's interval holds the excess the missing records make). Not
// attainment_dip or a trend: the cut lowers the baseline's level all
// run, which both measure the canary against, so a stretch or a slope
// they find is the canary's (at 2 requests a second, holding them held a
// 10-minute slow start and an early stall that only attainment_dip
// failed).
func cutBiased(name string) bool {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	switch name {
	case "slo_attainment", "offered_load_ratio":
		return true
	}
	info, ok := policies.Metric(name)
	return ok && info.Latency != "" && info.Quantile > 0
}

// heldByCutBaseline applies the cut-baseline check (see the rule above)
// to a failed run, given both arms' TTFT and end-to-end latency: when the
// baseline reads as cut off below the canary and the share of the
// canary's values past the cut agrees with offered_load_ratio's interval,
// a fail every failing gate of which is cutBiased is held (inconclusive,
// the reason first); another fail gains the reason. Without
// offered_load_ratio (records that name no replica) a fail whose baseline
// reads as cut stands, gaining a reason that says so (baselineCutUnread).
// A pass or an
// inconclusive run is left alone: a baseline that looks better than it
// served only makes the canary's gates harder to pass. heldByCutTail
// applies it after the canary's check.
func heldByCutBaseline(r *Report, canaryTTFT, baselineTTFT, canaryE2E, baselineE2E latencyCounts) {
	if r.Verdict != Fail {
		return
	}
	var load *Metric
	for i := range r.Metrics {
		if r.Metrics[i].Name == "offered_load_ratio" {
			load = &r.Metrics[i]
			break
		}
	}
	for _, rule := range []struct {
		cut  func(x, y latencyCounts) (tailCut, bool)
		b, c latencyCounts
	}{{cutTail, baselineTTFT, canaryTTFT}, {cutTailE2E, baselineE2E, canaryE2E}} {
		c, ok := rule.cut(rule.b, rule.c)
		if !ok {
			continue
		}
		if load == nil {
			// no replica-seconds, no ratio: the count cannot tell a cut
			// log from a canary that regressed on part of its requests,
			// so the fail stands, saying what the baseline's log looks
			// like
			r.Reasons = append(r.Reasons, baselineCutUnread(c, rule.c))
			return
		}
		lo, hi := float64(load.Interval[0]), float64(load.Interval[1])
		past, n := rule.c.above(c.at), rule.c.total()
		f := past / n
		want := f / (1 - f)
		if !(n > 0 && f < 1 && want >= lo && want <= hi) {
			continue
		}
		why := fmt.Sprintf("the baseline's %s stops at %.4g s while the canary has %s values above it (%.0f at the baseline's count; identical arms give a few), and just below it, in (%.4g, %.4g] s, the baseline has %.0f values against the canary's %.0f, alike below it: a tail cut off there, as when a gateway or collector drops the records of requests that ran that long; the canary's %.2f%% of its values past the cut would leave the baseline's log that many short, and offered_load_ratio, %s [%s, %s], agrees (a canary that regressed on part of its requests would not be offered more)",
			c.latency, c.at, fmtCount(past), c.expected, c.at/CutoffBand, c.at, c.band, c.bandOther, 100*f,
			fmtDelta(*load, float64(load.Delta)), fmtDelta(*load, lo), fmtDelta(*load, hi))
		biased := true
		for _, m := range r.Metrics {
			if m.Verdict == Fail && !cutBiased(m.Name) {
				biased = false
			}
		}
		if !biased {
			r.Reasons = append(r.Reasons, why)
			return
		}
		r.Reasons = append([]string{fmt.Sprintf("the gates give FAIL, but %s: the baseline's attainment and tails look better than it served, so the fail cannot be blamed on the change; give the baseline's complete log (or its dropped requests as timeouts) and judge again", why)}, r.Reasons...)
		r.Verdict = Inconclusive
		return
	}
}

// baselineCutUnread is the reason a fail gains when the baseline reads as
// cut against the canary c but the records name no replicas, so that
// offered_load_ratio, which would tell a cut log from a regression, is
// not measured.
func baselineCutUnread(cut tailCut, c latencyCounts) string {
	past, n := c.above(cut.at), c.total()
	return fmt.Sprintf("the baseline's %s stops at %.4g s while the canary has %s values above it (%.0f at the baseline's count), alike below it: the shape of a tail cut off in the baseline's log (a gateway or collector dropping the records of requests that ran that long), or of a canary that regressed on %.2f%% of its requests; the records name no replica, so the offered load per replica-second that tells the two apart is not measured and the fail stands — if the baseline's log dropped records, give its complete log (or its dropped requests as timeouts), or a replica field in both logs, and judge again",
		cut.latency, cut.at, fmtCount(past), cut.expected, 100*past/n)
}

// heldByCutTail applies the cut-off checks to the verdict, given both
// arms' TTFT and end-to-end latency: a cut canary holds a pass
// (inconclusive, the reason first), a fail or an inconclusive run gaining
// the reason (TTFT is read first; its cut is the one named when both are
// cut); then a cut baseline may hold a fail (heldByCutBaseline). Both
// judging paths call it.
func heldByCutTail(r *Report, canaryTTFT, baselineTTFT, canaryE2E, baselineE2E latencyCounts) {
	if c, ok := cutTail(canaryTTFT, baselineTTFT); ok {
		holdForCut(r, c)
	} else if c, ok := cutTailE2E(canaryE2E, baselineE2E); ok {
		holdForCut(r, c)
	}
	heldByCutBaseline(r, canaryTTFT, baselineTTFT, canaryE2E, baselineE2E)
}

// holdForCut applies one cut found to the verdict (heldByCutTail).
func holdForCut(r *Report, c tailCut) {
	if r.Verdict != Pass {
		r.Reasons = append(r.Reasons, c.why())
		return
	}
	r.Reasons = append([]string{fmt.Sprintf("the gates give PASS, but %s: the canary's attainment and tails look better than it served, so the pass cannot be trusted; give the complete log (or the dropped requests as timeouts) and judge again", c.why())}, r.Reasons...)
	r.Verdict = Inconclusive
}
