package requestlog

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

// A record whose arrival time lies far outside the rest of its file — ts 0,
// the year 4999, milliseconds written as seconds in one line, a clock one
// year off — is not a request of the run: judged, it would stretch the
// arm's window over its whole span (one time bucket per 10 s of it). Such a
// record is an error naming its line, or, when the caller asks, dropped and
// counted in a warning.

// plausibleMargin is how far outside the central 98% of a file's arrival
// times a record may lie: the larger of that core span and one day.
const plausibleMargin = 24 * time.Hour

// windowSample bounds how many arrival times estimate the core span.
const windowSample = 1 << 16

// lineIndex maps a record's index in its file to the file's line.
type lineIndex interface {
	line(k int) int
}

// jsonlLines locates records from the chunks they were parsed in: the line
// before each chunk, its record count and its blank lines.
type jsonlLines struct {
	first   []int
	records []int
	blank   [][]int32
}

func (j *jsonlLines) line(k int) int {
	for c, n := range j.records {
		if k >= n {
			k -= n
			continue
		}
		l := k + 1
		for _, b := range j.blank[c] {
			if int(b) <= l {
				l++
			} else {
				break
			}
		}
		return j.first[c] + l
	}
	return 0
}

// csvLines holds each row's first line.
type csvLines []int32

func (c csvLines) line(k int) int { return int(c[k]) }

// plausibleWindow returns the range of arrival times a file's records may
// have: the central 98% of its times (from an even sample of at most
// windowSample of them), widened on both sides by the larger of that span
// and plausibleMargin.
func plausibleWindow(reqs []sources.Request) (lo, hi float64) {
	step := max(1, len(reqs)/windowSample)
	ts := make([]float64, 0, len(reqs)/step+1)
	for i := 0; i < len(reqs); i += step {
		ts = append(ts, reqs[i].Time)
	}
	return windowOf(ts)
}

// windowOf is plausibleWindow over a sample of arrival times (sorted in
// place).
func windowOf(ts []float64) (lo, hi float64) {
	slices.Sort(ts)
	q := func(p float64) float64 { return ts[int(math.Round(p*float64(len(ts)-1)))] }
	a, b := q(0.01), q(0.99)
	m := math.Max(b-a, plausibleMargin.Seconds())
	return a - m, b + m
}

// checkWindow refuses (or, with drop, removes and counts) the records
// outside the file's plausible window. earliest is the earliest arrival
// kept (+Inf for none), for earlyClockWarning.
func checkWindow(path string, reqs []sources.Request, lines lineIndex, drop bool) (kept []sources.Request, dropped string, earliest float64, err error) {
	earliest = math.Inf(1)
	if len(reqs) == 0 {
		return reqs, "", earliest, nil
	}
	lo, hi := plausibleWindow(reqs)
	out := 0
	first := -1
	for i := range reqs {
		if t := reqs[i].Time; t < lo || t > hi {
			out++
			if first < 0 {
				first = i
			}
		} else {
			earliest = math.Min(earliest, t)
		}
	}
	if out == 0 {
		return reqs, "", earliest, nil
	}
	l := lines.line(first)
	if !drop {
		return nil, "", earliest, implausibleError(path, l, reqs[first].Time, lo, hi, out)
	}
	kept = reqs[:0]
	for i := range reqs {
		if t := reqs[i].Time; t >= lo && t <= hi {
			kept = append(kept, reqs[i])
		}
	}
	clear(reqs[len(kept):])
	return kept, droppedWarning(path, l, lo, hi, out), earliest, nil
}

func fmtT(t float64) string {
	sec, frac := math.Modf(t)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format(time.RFC3339Nano)
}

// implausibleError refuses a file with out records outside [lo, hi], the
// first at ts on line.
func implausibleError(path string, line int, ts, lo, hi float64, out int) error {
	return &ParseError{Path: path, Line: line, Field: fTS.String(), Msg: fmt.Sprintf(
		"ts %s lies outside the file's plausible window %s … %s (the central 98%% of its arrival times, widened by the larger of their span and %s); %d record(s) are outside it. Fix or remove them, or set window.implausible: drop in the policy to drop them with a count",
		fmtT(ts), fmtT(lo), fmtT(hi), plausibleMargin, out)}
}

// droppedWarning says that out records outside [lo, hi] were dropped, the
// first on line.
func droppedWarning(path string, line int, lo, hi float64, out int) string {
	return fmt.Sprintf("%s: dropped %d record(s) with arrival times outside the file's plausible window %s … %s (first on line %d); window.implausible is drop",
		path, out, fmtT(lo), fmtT(hi), line)
}

// EarliestPlausibleTS is 2000-01-01T00:00:00Z in unix seconds: a request
// log whose arrivals begin before it most likely counts seconds from its
// run's start (or the host's boot), not from 1970 (earlyClockWarning).
const EarliestPlausibleTS = 946684800

// earlyClockWarning is a file's warning when its earliest arrival, first
// (unix seconds; +Inf for none), lies before EarliestPlausibleTS ("" when
// not): such times are read as given, so the file is a run decades before
// any log of this century, never paired with it.
func earlyClockWarning(path string, first float64) string {
	if !(first < EarliestPlausibleTS) {
		return ""
	}
	return fmt.Sprintf("%s: arrival times begin %s (ts %g), long before any log of this century: seconds since the run's start rather than unix seconds? They are judged as given, as a run decades before another arm's; write unix seconds or RFC 3339 times",
		path, time.Unix(int64(math.Floor(first)), 0).UTC().Format(time.RFC3339), first)
}
