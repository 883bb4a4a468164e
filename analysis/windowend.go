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

// endSlack is how long (seconds) arm s's records may stop before the
// others' without window_end or records_gap reporting it, the arms' shared
// span being span seconds: the larger of WindowEndSlack, WindowEndShare of
// the span, and 20 of the arm's mean inter-arrival times.
func endSlack(s armSpan, span float64) float64 {
	slack := math.Max(WindowEndSlack, WindowEndShare*span)
	if rate := s.offered / math.Max(s.last-s.first, 1); rate > 0 {
		slack = math.Max(slack, 20/rate)
	}
	return slack
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
// reported: a canary is often deployed after the baseline's window began;
// but when the arm that ended first also started first by about as much
// (within 20 s or a tenth of the gap), the reason says the arms' clocks
// may differ by that much, and how to correct it.
func windowEndEval(b, c armSpan, paired bool) (gateEval, bool) {
	if !paired && !nested(b, c) {
		return gateEval{}, false // runs one after the other, or barely overlapping
	}
	start := math.Min(b.first, c.first)
	span := math.Max(b.last, c.last) - start
	gap := c.last - b.last // canary − baseline: negative when the canary ended first
	early, other := c, "baseline"
	who := "canary"
	if gap > 0 {
		early, other, who = b, "canary", "baseline"
	}
	slack := endSlack(early, span)
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
	fix := fmt.Sprintf("give the %s's whole log, or judge the time both arms cover (--start/--end)", who)
	if lead := c.first - b.first; lead*gap > 0 && math.Abs(lead-gap) <= math.Max(20, 0.1*math.Abs(gap)) {
		// the arm that ended first also started first, by about as
		// much: the arms' clocks may differ rather than a log be short
		late := "canary"
		if lead < 0 {
			late = "baseline"
		}
		why += fmt.Sprintf(" — or the arms' clocks differ: the %s's records also start %s after the other's, about as much as they end after them", late, fmtSpan(math.Round(math.Abs(lead))))
		fix = fmt.Sprintf("if a clock (a host's, or a time zone) is off by %s, correct the %s's timestamps; else give the %s's whole log, or judge the time both arms cover (--start/--end)", fmtSpan(math.Round(math.Abs(lead))), late, who)
	}
	compared := fmt.Sprintf("the arms are compared over the time both served, and what the %s's records show after %s is not compared", other, fmtClock(early.last-start))
	if !paired {
		// one arm mostly within the other's longer run: compared whole,
		// as runs at different times
		compared = fmt.Sprintf("the arms, one run mostly within the other's, are compared as runs at different times, the %s's minutes after %s in its figures with nothing of the %s's beside them", other, fmtClock(early.last-start), who)
	}
	m.Reason = fmt.Sprintf("the %s's records end at %s into the run, %s before the %s's (%s): %s; %s, so this cannot pass: %s",
		who, fmtClock(early.last-start), fmtSpan(math.Round(math.Abs(gap))), other, fmtClock(math.Max(b.last, c.last)-start), why, compared, fix)
	return gateEval{m: m}, true
}

// recordArms is what window_end and records_gap read of a judgement, on
// the request path and the aggregate alike: each arm's buckets holding
// requests, warm-up included, with their span and width (ok false when
// the arms are not on one wall-clock grid or an arm offered nothing), and
// whether the arms are paired in time.
type recordArms interface {
	recordSpans() (b, c armRecords, step float64, ok bool)
	pairedInTime() bool
}

// armsRecords is both arms' records as recordArms gives them, read once
// per judgement for window_end, records_gap and offered_rate_ratio: each
// arm's buckets and span, the bucket width (seconds), ok (false when the
// arms are not on one wall-clock grid or an arm offered nothing) and
// whether the arms are paired in time.
type armsRecords struct {
	b, c   armRecords
	step   float64
	ok     bool
	paired bool
}

// recordsOf reads r's arms' records (armsRecords).
func recordsOf(r recordArms) armsRecords {
	b, c, step, ok := r.recordSpans()
	return armsRecords{b: b, c: c, step: step, ok: ok, paired: r.pairedInTime()}
}

// ranWithin reports whether arms on the wall clock, not paired, ran one
// mostly within the other's run (nested): a canary's log beside the day's
// baseline log is a share of one fleet's traffic, not a run of its own.
func (rec armsRecords) ranWithin() bool {
	return rec.ok && !rec.paired && nested(rec.b.span, rec.c.span)
}

// windowEndOf is the window_end guardrail (windowEndEval) of the arms:
// paired, or unpaired with one run mostly within the other's longer run
// (a log cut short, a canary that stopped, judged whole beside the
// other's, would otherwise pass).
func windowEndOf(rec armsRecords) (gateEval, bool) {
	if !rec.ok {
		return gateEval{}, false
	}
	return windowEndEval(rec.b.span, rec.c.span, rec.paired)
}

// recordsGapOf is the records_gap guardrail (recordsGapEval) of the arms.
func recordsGapOf(rec armsRecords) (gateEval, bool) {
	if !rec.ok {
		return gateEval{}, false
	}
	return recordsGapEval(rec.b.cells, rec.c.cells, rec.step, rec.b.span, rec.c.span, rec.paired)
}

func (j *judgement) pairedInTime() bool    { return j.paired }
func (j *aggJudgement) pairedInTime() bool { return j.paired }

// armRecords is an arm's buckets holding requests, warm-up included, and
// their span, for window_end and records_gap.
type armRecords struct {
	cells []gapCell
	span  armSpan
}

// recordSpans is both arms' armRecords on the request path; ok is false
// off the wall clock or for an arm without a request.
func (j *judgement) recordSpans() (b, c armRecords, step float64, ok bool) {
	if j.b.pseudo || j.c.pseudo || j.b.clock != sources.ClockEpoch || j.c.clock != sources.ClockEpoch || j.b.bucketSecs != j.c.bucketSecs {
		return b, c, 0, false
	}
	of := func(a *armData) armRecords {
		r := armRecords{span: armSpan{first: math.NaN()}}
		for i := range a.buckets {
			bk := &a.buckets[i]
			if bk.offered == 0 {
				continue
			}
			r.cells = append(r.cells, gapCell{start: bk.start, offered: bk.offered})
			if math.IsNaN(r.span.first) {
				r.span.first = bk.start
			}
			r.span.last = bk.start + a.bucketSecs
			r.span.offered += bk.offered
		}
		return r
	}
	b, c = of(j.b), of(j.c)
	return b, c, j.b.bucketSecs, !math.IsNaN(b.span.first) && !math.IsNaN(c.span.first)
}

// recordSpans is both arms' armRecords from their slices as counted (the
// canary's before any reweighting), warm-up included; ok is false when
// the arms are not on one step or an arm offered nothing.
func (j *aggJudgement) recordSpans() (b, c armRecords, step float64, ok bool) {
	step = j.b.ds.Agg.Step
	if !(step > 0) || step != j.c.ds.Agg.Step {
		return b, c, 0, false
	}
	of := func(a *aggArm) armRecords {
		r := armRecords{span: armSpan{first: math.NaN()}}
		for _, sl := range append(append([]aggSlice{}, a.precut...), a.slices...) {
			if sl.offered() == 0 {
				continue
			}
			r.cells = append(r.cells, gapCell{start: sl.start, offered: sl.offered()})
			if math.IsNaN(r.span.first) {
				r.span.first = sl.start
			}
			r.span.last = sl.start + step
			r.span.offered += sl.offered()
		}
		return r
	}
	b, c = of(j.b), of(j.cRaw)
	return b, c, step, !math.IsNaN(b.span.first) && !math.IsNaN(c.span.first)
}

// nested reports whether arms not paired in time still ran one mostly
// within the other: the shorter for at least MinPairedOverlap of its run
// within the longer's. Runs one after the other, or overlapping by a few
// minutes (a second benchmark started before the first ended), are
// compared as the runs they are, and neither check applies.
func nested(b, c armSpan) bool {
	ov := math.Min(b.last, c.last) - math.Max(b.first, c.first)
	return ov > 0 && ov >= MinPairedOverlap*math.Min(b.last-b.first, c.last-c.first)
}

// gapCell is one bucket of an arm for records_gap: its start (seconds on
// the arms' clock) and the requests offered in it.
type gapCell struct {
	start, offered float64
}

// recordsGapEval decides the records_gap guardrail of two arms on the wall
// clock, paired or one run mostly within the other's (nested), from their
// buckets (secs seconds each, on one
// grid: starts whole multiples of secs) and spans: the longest stretch
// within an arm's span in which it offered nothing while the other arm
// offered in every bucket. A canary whose every replica stopped for ten
// minutes mid-run (a crash and restart), or whose log lost a part, left
// nothing in those minutes to compare and nothing for the other checks to
// see: a replica's loss is told against the replicas still serving, and
// without replica names the offered load is not compared at all. Such a
// stretch longer than the slack window_end allows (the larger of
// WindowEndSlack, WindowEndShare of the shared span and 20 mean
// inter-arrival times of the arm), with at least 20 of the other arm's
// requests in it, makes the run inconclusive, naming the arm and the
// stretch. A stretch both arms are quiet in breaks it: a quiet hour both
// rode is not a gap.
func recordsGapEval(b, c []gapCell, secs float64, bs, cs armSpan, paired bool) (gateEval, bool) {
	if !(secs > 0) || !(math.Min(bs.last, cs.last) > math.Max(bs.first, cs.first)) {
		return gateEval{}, false
	}
	if !paired && !nested(bs, cs) {
		return gateEval{}, false
	}
	key := func(t float64) int64 { return int64(math.Round(t / secs)) }
	offered := func(cells []gapCell) map[int64]float64 {
		m := make(map[int64]float64, len(cells))
		for _, x := range cells {
			m[key(x.start)] += x.offered
		}
		return m
	}
	ob, oc := offered(b), offered(c)
	start := math.Min(bs.first, cs.first)
	span := math.Max(bs.last, cs.last) - start
	type gap struct {
		from, to, other float64 // seconds on the clock; the other arm's requests in it
	}
	longest := func(a, o map[int64]float64, s armSpan) gap {
		var best, run gap
		for k := key(s.first); k < key(s.last); k++ {
			if a[k] == 0 && o[k] > 0 {
				if run.to == 0 {
					run = gap{from: float64(k) * secs}
				}
				run.to, run.other = float64(k+1)*secs, run.other+o[k]
				if run.to-run.from > best.to-best.from {
					best = run
				}
				continue
			}
			run = gap{}
		}
		return best
	}
	gb, gc := longest(ob, oc, bs), longest(oc, ob, cs)
	over := func(g gap, s armSpan) bool { return g.to-g.from > endSlack(s, span) && g.other >= 20 }
	who, other, g, s := "canary", "baseline", gc, cs
	switch {
	case over(gc, cs):
	case over(gb, bs):
		who, other, g, s = "baseline", "canary", gb, bs
	default:
		return gateEval{}, false
	}
	m := Metric{Name: "records_gap", Guardrail: true, Direction: "lower_is_better", Scale: "absolute", Unit: "seconds",
		Baseline: Num(gb.to - gb.from), Canary: Num(gc.to - gc.from), Delta: Num((gc.to - gc.from) - (gb.to - gb.from)),
		Interval: [2]Num{Num(math.NaN()), Num(math.NaN())}, Margin: Num(endSlack(s, span)), PFail: Num(math.NaN()),
		NBaseline: int64(math.Round(bs.offered)), NCanary: int64(math.Round(cs.offered)),
		Method: "records-gap", Adjusted: []string{}, Verdict: Inconclusive}
	why := "part of its log was lost (a file not shipped, a rotation)"
	if who == "canary" {
		why = "it stopped serving (every replica at once: a crash, a restart) or part of its log was lost"
	}
	m.Reason = fmt.Sprintf("the %s's records stop for %s, from %s to %s into the run, while the %s's go on (%s requests): %s; those minutes hold nothing of the %s's to compare, so this cannot pass: give the whole log, or judge the time both arms cover (--start/--end)",
		who, fmtSpan(g.to-g.from), fmtClock(g.from-start), fmtClock(g.to-start), other, fmtCount(g.other), why, who)
	return gateEval{m: m}, true
}
