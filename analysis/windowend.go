package analysis

import (
	"fmt"
	"math"

	"github.com/goodput-dev/goodput/sources"
)

// WindowEndSlack is the least gap, in seconds, between the ends of paired
// arms' records that the window_end guardrail reports: a log shipped a
// little later than the other arm's, or a last quiet bucket, is not
// reported. The gap must also exceed WindowEndShare of the shared span and
// 20 mean inter-arrival times of the arm that ended first.
const (
	WindowEndSlack = 60.0
	WindowEndShare = 0.05
)

// armSpan is where one arm's records lie on the shared bucket grid of
// paired arms: from the start of its first bucket to the end of its last
// bucket holding an offered request (seconds on the arms' clock), and the
// offered requests in between.
type armSpan struct {
	first, last float64
	offered     float64
}

// windowEndEval decides the window_end guardrail of paired arms (the same
// on the request path and the aggregate): when one arm's records stop
// well before the other's, the comparison covers only the time both
// served, and what the other arm's records show after that cannot be
// compared. For the canary that is an outage (every replica stopped: a
// crash, a rollback) or a log cut short; for the baseline a log cut short.
// Neither is a pass: the guardrail is inconclusive, naming the arm, the
// gap and the fix. It is absent when the ends lie within the slack (the
// larger of WindowEndSlack, WindowEndShare of the span, and 20 mean
// inter-arrival times of the arm that ended first). A late start is not
// reported: a canary is often deployed after the baseline's window began.
func windowEndEval(b, c armSpan, paired bool) (gateEval, bool) {
	if !paired && !(math.Min(b.last, c.last) > math.Max(b.first, c.first)) {
		return gateEval{}, false // runs one after the other: no shared time
	}
	start := math.Min(b.first, c.first)
	span := math.Max(b.last, c.last) - start
	gap := c.last - b.last // canary − baseline: negative when the canary ended first
	early, other := c, "baseline"
	who := "canary"
	if gap > 0 {
		early, other, who = b, "canary", "baseline"
	}
	rate := early.offered / math.Max(early.last-early.first, 1)
	slack := math.Max(WindowEndSlack, WindowEndShare*span)
	if rate > 0 {
		slack = math.Max(slack, 20/rate)
	}
	if !(span > 0) || !(math.Abs(gap) > slack) {
		return gateEval{}, false
	}
	m := Metric{Name: "window_end", Guardrail: true, Direction: "higher_is_better", Scale: "absolute", Unit: "seconds",
		Baseline: Num(b.last - start), Canary: Num(c.last - start), Delta: Num(gap),
		Interval: [2]Num{Num(math.NaN()), Num(math.NaN())}, Margin: Num(slack), PFail: Num(math.NaN()),
		NBaseline: int64(math.Round(b.offered)), NCanary: int64(math.Round(c.offered)),
		Method: "records-end", Adjusted: []string{}, Verdict: Inconclusive}
	why := "its log was cut short (shipped late, rotated, a lost file?)"
	if who == "canary" {
		why = "it stopped serving (every replica at once: a crash, a rollback) or its log was cut short"
	}
	compared := fmt.Sprintf("the arms are compared over the time both served, and what the %s's records show after %s is not compared", other, fmtClock(early.last-start))
	if !paired {
		// one arm mostly within the other's longer run: compared whole,
		// as runs at different times
		compared = fmt.Sprintf("the arms, one run mostly within the other's, are compared as runs at different times, the %s's minutes after %s in its figures with nothing of the %s's beside them", other, fmtClock(early.last-start), who)
	}
	m.Reason = fmt.Sprintf("the %s's records end at %s into the run, %s before the %s's (%s): %s; %s, so this cannot pass: give the %s's whole log, or judge the time both arms cover (--start/--end)",
		who, fmtClock(early.last-start), fmtSpan(math.Round(math.Abs(gap))), other, fmtClock(math.Max(b.last, c.last)-start), why, compared, who)
	return gateEval{m: m}, true
}

// windowEndGuardrail is the window_end check on the requests of arms on
// the wall clock (windowEndEval decides it, as on the aggregate path):
// each arm's buckets, warm-up included — on the shared grid when paired;
// unpaired, when one ran mostly within the other's longer run (a log cut
// short, a canary that stopped, judged whole beside the other's would
// otherwise pass).
func (j *judgement) windowEndGuardrail() (gateEval, bool) {
	if j.b.pseudo || j.c.pseudo || j.b.clock != sources.ClockEpoch || j.c.clock != sources.ClockEpoch {
		return gateEval{}, false
	}
	span := func(a *armData) armSpan {
		s := armSpan{first: math.NaN()}
		for i := range a.buckets {
			bk := &a.buckets[i]
			if bk.offered == 0 {
				continue
			}
			if math.IsNaN(s.first) {
				s.first = bk.start
			}
			s.last = bk.start + a.bucketSecs
			s.offered += bk.offered
		}
		return s
	}
	b, c := span(j.b), span(j.c)
	if math.IsNaN(b.first) || math.IsNaN(c.first) {
		return gateEval{}, false
	}
	return windowEndEval(b, c, j.paired)
}

// windowEndGuardrail is the aggregate's window_end check: each arm's
// slices as counted, warm-up included.
func (j *aggJudgement) windowEndGuardrail() (gateEval, bool) {
	if !(j.b.ds.Agg.Step > 0) || j.b.ds.Agg.Step != j.c.ds.Agg.Step {
		return gateEval{}, false
	}
	step := j.b.ds.Agg.Step
	span := func(a *aggArm) (armSpan, bool) {
		s := armSpan{first: math.NaN()}
		for _, sl := range append(append([]aggSlice{}, a.precut...), a.slices...) {
			if sl.offered() == 0 {
				continue
			}
			if math.IsNaN(s.first) {
				s.first = sl.start
			}
			s.last = sl.start + step
			s.offered += sl.offered()
		}
		return s, !math.IsNaN(s.first)
	}
	b, okb := span(j.b)
	c, okc := span(j.cRaw)
	if !okb || !okc {
		return gateEval{}, false
	}
	return windowEndEval(b, c, j.paired)
}
