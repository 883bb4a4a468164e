package main

import (
	"fmt"
	"math"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

// fileWindow reads --start and --end given with request files: the
// [start, end) of arrival times (unix seconds) the judge keeps, an end
// left open when its flag is not given; nil when neither is.
func fileWindow(start, end string) (*[2]float64, error) {
	if start == "" && end == "" {
		return nil, nil
	}
	w := [2]float64{math.Inf(-1), math.Inf(1)}
	for i, f := range []struct{ name, v string }{{"start", start}, {"end", end}} {
		if f.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, f.v)
		if err != nil {
			return nil, usageError("--%s %q: want an RFC 3339 time such as 2026-11-29T14:00:00Z", f.name, f.v)
		}
		w[i] = float64(t.UnixNano()) / 1e9
	}
	if !(w[1] > w[0]) {
		return nil, usageError("the window ends (%s) before it starts (%s)", end, start)
	}
	return &w, nil
}

// inWindow reports whether a request arriving at t (unix seconds) lies
// in w (nil: every one does).
func inWindow(w *[2]float64, t float64) bool {
	return w == nil || t >= w[0] && t < w[1]
}

// windowText names w for messages: "2026-01-01T00:10:00Z – 2026-01-01T00:20:00Z",
// an open end as "…".
func windowText(w *[2]float64) string {
	end := func(v float64) string {
		if math.IsInf(v, 0) {
			return "…"
		}
		sec, frac := math.Modf(v)
		return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC().Format(time.RFC3339Nano)
	}
	return end(w[0]) + " – " + end(w[1])
}

// windowLeftOut is what --start/--end leaving out n of an arm's total
// requests means for it, on both paths: an error when it left out every
// one, else the arm's warning ("" when none were).
func windowLeftOut(arm sources.Arm, w *[2]float64, n, total int) (note string, err error) {
	switch {
	case w == nil || n == 0:
		return "", nil
	case n == total:
		return "", fmt.Errorf("%s: none of its %d requests arrived within --start/--end (%s): check the window against the files' times", arm, total, windowText(w))
	}
	return fmt.Sprintf("%d of the arm's %d requests arrived outside --start/--end (%s) and were left out", n, total, windowText(w)), nil
}

// narrowToWindow keeps an arm's requests that arrived within w, refusing
// arrival times not on the wall clock (a benchmark's perf_counter) and an
// arm left with none.
func narrowToWindow(ds *sources.Dataset, w *[2]float64) error {
	if w == nil {
		return nil
	}
	if ds.Agg != nil {
		return fmt.Errorf("%s: --start/--end select requests by arrival time, and scrape files hold counters, not requests: leave the flags out", ds.Arm)
	}
	if ds.Clock != sources.ClockEpoch {
		return fmt.Errorf("%s: --start/--end select requests by wall-clock arrival time, and this arm's files have none (a benchmark's own clock, or no arrival times): leave the flags out", ds.Arm)
	}
	kept := ds.Requests[:0:0]
	for i := range ds.Requests {
		if inWindow(w, ds.Requests[i].Time) {
			kept = append(kept, ds.Requests[i])
		}
	}
	note, err := windowLeftOut(ds.Arm, w, len(ds.Requests)-len(kept), len(ds.Requests))
	if err != nil {
		return err
	}
	if note != "" {
		ds.Warnings = append(ds.Warnings, note)
	}
	ds.Requests = kept
	return nil
}
