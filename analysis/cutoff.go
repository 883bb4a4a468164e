package analysis

import (
	"fmt"
	"math"
	"sort"

	"github.com/goodput-dev/goodput/sources"
)

// A gateway that times a request out and drops its log line, or a
// collector that loses the lines of slow requests, leaves an arm whose
// latencies stop at a value the other arm's pass: its slowest requests
// are missing, and what is left looks better than the service was (the
// fleet model's canary-drops-slow: every completion whose first token
// took over 1 s unlogged, 1–2% of the records; identical arms passed
// 52.5% of runs, the missing share inside offered_load_ratio's
// tolerance). A tail that thins is no such cut: an arm with a lighter
// tail than the other has few values just below its largest, while a cut
// one has as many there as the other arm (the density runs on up to the
// cut and stops). So an arm's latency is read as cut off at its largest
// value m when both hold:
//
//   - the other arm has many values above m: at least CutoffAbove when
//     scaled to the cut arm's count (from identical arms, about one);
//   - in (m/CutoffBand, m] the cut arm has at least CutoffDensity of the
//     other's count there, scaled the same way, and at least
//     CutoffAbove/2 values.
//
// Checked on TTFT and E2E (timeouts are set on them), each arm against
// the other. A cut canary holds a pass (its missing requests would count
// against it); a cut baseline holds a fail (its missing requests make it
// look better than it served), and needs the stronger match below
// (CutoffMatch) and bodies alike below the cut (sameBody): a canary
// whose tail regressed, or that slowed down altogether, has values above
// the baseline's largest too, and where an arm's latency runs up to a
// soft wall (end-to-end latency under an output-token cap) the
// baseline's values near its largest are not few. A fail with a cut canary stands
// with the reason added, even when only output_tokens_mean fails with
// the canary shorter: a log that lost the longest answers looks like
// answers capped shorter (a max_tokens change), which must fail. A pass
// with a cut baseline stands with the reason added.
const (
	// CutoffAbove is the fewest values of the other arm above the cut
	// arm's largest, scaled to the cut arm's count.
	CutoffAbove = 20.0
	// CutoffBand is the width, as a factor, of the band below the cut
	// arm's largest value in which the densities are compared.
	CutoffBand = 1.1
	// CutoffDensity is the least share of the other arm's count in the
	// band (scaled) a cut canary must hold there.
	CutoffDensity = 0.5
	// CutoffMatch is the least share of the canary's count in the band
	// (scaled) a cut baseline must hold there; nor may its count there
	// be lower than the canary's beyond doubt (one-sided z below −2.58
	// on the split of the band's values between the arms: at −1.645 one
	// true cut in six was refused on the fleet model, whose arms' own
	// slowdowns spread those counts beyond Poisson's).
	CutoffMatch = 0.8
	// CutoffBody is how far apart (absolute) the shares of a cut
	// baseline and of the canary below the cut may lie at the baseline's
	// median and 90th percentile (sameBody), beyond chance.
	CutoffBody = 0.01
)

// latencyCounts is what the cut-off check reads of one arm's latency:
// the request path's sorted values or an exact aggregate's log-linear
// histogram.
type latencyCounts interface {
	total() float64
	// top is the largest value (a histogram: its bin's upper edge)
	top() float64
	// above counts the values greater than v
	above(v float64) float64
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

func (h histCounts) top() float64 {
	n := h.total()
	if !(n > 0) {
		return math.NaN()
	}
	i := sort.Search(len(h.Counts), func(i int) bool { return h.Counts[i] >= n })
	return h.Edges[i]
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

// tailCut is one arm's latency found cut off (cutTail).
type tailCut struct {
	latency  string
	baseline bool    // the cut arm is the baseline
	at       float64 // the cut arm's largest value, seconds
	// above is the other arm's count above at, expected that scaled to
	// the cut arm's count; band and bandOther the arms' counts in
	// (at/CutoffBand, at], bandOther scaled
	above, expected, band, bandOther float64
}

// cutTail reports whether arm x's latency is cut off below arm y's
// (the rule above); xBaseline says which arm x is.
func cutTail(latency string, x, y latencyCounts, xBaseline bool) (tailCut, bool) {
	nx, ny := x.total(), y.total()
	m := x.top()
	if !(nx > 0 && ny > 0) || math.IsNaN(m) {
		return tailCut{}, false
	}
	scale := nx / ny
	above := y.above(m)
	c := tailCut{latency: latency, baseline: xBaseline, at: m, above: above, expected: above * scale}
	lo := m / CutoffBand
	c.band = x.above(lo) - x.above(m)
	byRaw := y.above(lo) - above
	c.bandOther = byRaw * scale
	ok := c.expected >= CutoffAbove && c.band >= CutoffAbove/2 && c.band >= CutoffDensity*c.bandOther
	if ok && xBaseline {
		// holding a fail: the densities must match, not merely compare,
		// and so must the arms' bodies below the cut
		share := nx / (nx + ny)
		all := c.band + byRaw
		z := (c.band - share*all) / math.Sqrt(all*share*(1-share))
		ok = c.band >= CutoffMatch*c.bandOther && z > -2.58 && sameBody(x, y, m)
	}
	return c, ok
}

// sameBody reports whether y's values at or below m are distributed as
// x's (all of which are): at x's median and 90th percentile, the shares
// of both at or below agree within CutoffBody plus 2.58 standard errors.
// A baseline whose log was cut serves as the canary did up to the cut; a
// canary that regressed (its body slower, as when its tail outruns the
// baseline's) does not.
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

// cutTails checks TTFT and E2E each way; counts gives an arm's counts of
// a latency (nil when the arm has none to read).
func cutTails(counts func(baseline bool, latency string) latencyCounts) []tailCut {
	var out []tailCut
	for _, l := range []string{"ttft", "e2e"} {
		b, c := counts(true, l), counts(false, l)
		if b == nil || c == nil {
			continue
		}
		if cut, ok := cutTail(l, c, b, false); ok {
			out = append(out, cut)
		}
		if cut, ok := cutTail(l, b, c, true); ok {
			out = append(out, cut)
		}
	}
	return out
}

// why is the cut's reason.
func (c tailCut) why() string {
	arm, other := "canary", "baseline"
	if c.baseline {
		arm, other = other, arm
	}
	return fmt.Sprintf("the %s's %s stops at %.4g s while the %s has %s values above it (%.0f at the %s's count; identical arms give about 1), and just below it, in (%.4g, %.4g] s, the %s has %.0f values against the %s's %.0f: a tail cut off there, as when a gateway or collector drops the records of requests that ran that long, so the %s's slowest requests are missing from its log",
		arm, ttftName(c.latency), c.at, other, fmtCount(c.above), c.expected, arm, c.at/CutoffBand, c.at, arm, c.band, other, c.bandOther, arm)
}

func ttftName(latency string) string {
	if latency == "e2e" {
		return "end-to-end latency"
	}
	return "TTFT"
}

// heldByCutTails applies the cut-off check to the verdict: a cut canary
// holds a pass, a cut baseline a fail (inconclusive, the reason first);
// otherwise the reason is added.
func heldByCutTails(r *Report, cuts []tailCut) {
	for _, c := range cuts {
		hold := c.baseline && r.Verdict == Fail || !c.baseline && r.Verdict == Pass
		if !hold {
			r.Reasons = append(r.Reasons, c.why())
			continue
		}
		effect := "the canary's attainment and tails look better than it served"
		if c.baseline {
			effect = "the baseline's attainment and tails look better than it served, and the canary worse beside it"
		}
		r.Reasons = append([]string{fmt.Sprintf("the gates give %s, but %s: %s, so the verdict cannot be trusted; give the complete log (or the dropped requests as timeouts) and judge again",
			map[Verdict]string{Pass: "PASS", Fail: "FAIL"}[r.Verdict], c.why(), effect)}, r.Reasons...)
		r.Verdict = Inconclusive
	}
}

// sortedOrNil is a's sorted values of a latency, nil when it has none.
func sortedOrNil(a *armData, latency string) latencyCounts {
	if v := a.pooled(latency); len(v) > 0 {
		return sortedCounts(v)
	}
	return nil
}
