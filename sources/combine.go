package sources

import (
	"fmt"
	"math"
	"sort"
)

// Combine merges the files of one arm into one dataset, deciding whether
// they are replicas (served at the same time: their requests are summed
// over one window) or repeated runs (one after another: their windows add
// up). Files with wall-clock (epoch) times whose time ranges overlap are
// replicas; files whose ranges do not overlap are runs, placed back to back
// so the idle time between them is not counted as serving time. Files
// without wall-clock times (per-file perf_counter clocks, or no arrival
// times at all) cannot be aligned: they are taken as runs, since a
// benchmark file is one run of one client. The dataset's Warnings say
// which was chosen.
func Combine(files []Dataset) Dataset {
	var ds Dataset
	switch {
	case len(files) == 0:
		return ds
	case len(files) == 1:
		return files[0]
	}
	clock := files[0].Clock
	for _, f := range files[1:] {
		if f.Clock != clock {
			clock = "" // mixed clocks: merged as before, the weakest clock wins
		}
	}
	if clock == "" || clock == ClockEpoch && overlapping(files) {
		for _, f := range files {
			if clock == "" && f.Clock == ClockRelative {
				// per-file monotonic clocks cannot be aligned: start each at 0
				lo, _ := span(&f)
				f.Requests = shifted(f.Requests, -lo)
			}
			ds.Append(f)
		}
		if clock == ClockEpoch {
			ds.Warnings = append(ds.Warnings, fmt.Sprintf("%d files whose time ranges overlap are replicas serving at the same time: their requests are summed over one window", len(files)))
		}
		return ds
	}
	// runs: sorted by start when the clock allows it, else in the order given
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	if clock == ClockEpoch {
		sort.SliceStable(order, func(a, b int) bool {
			la, _ := span(&files[order[a]])
			lb, _ := span(&files[order[b]])
			return la < lb
		})
	}
	join := 0.0
	if clock == ClockEpoch {
		join = joinGap(files)
	}
	total, gaps := 0.0, 0.0
	known, joined := true, 0
	end := math.NaN() // where the previous run ended, on the combined clock
	for _, i := range order {
		f := files[i]
		lo, hi := span(&f)
		if clock != ClockNone && !math.IsNaN(lo) {
			shift := 0.0
			switch {
			case clock == ClockRelative && math.IsNaN(end):
				shift = -lo
			case !math.IsNaN(end) && clock == ClockEpoch && lo-end <= join:
				// the next part of one recording (a log rotated): its
				// time runs on
				joined++
			case !math.IsNaN(end):
				shift = end - lo
				gaps += lo - end
			}
			if shift != 0 {
				f.Requests = shifted(f.Requests, shift)
			}
			end = hi + shift
		}
		if f.Duration > 0 {
			total += f.Duration
		} else {
			known = false
		}
		ds.Append(f)
	}
	ds.Duration = 0
	if known {
		ds.Duration = total
	}
	if joined == len(files)-1 {
		ds.Warnings = append(ds.Warnings, fmt.Sprintf("%d files are consecutive parts of one recording (each begins within %.3g s of the previous one's end, ten times the requests' usual spacing): they are analysed on their own time line, one after another", len(files), join))
		return ds
	}
	msg := fmt.Sprintf("%d files are repeated runs, one after another, not replicas serving at the same time: they are analysed back to back", len(files))
	switch {
	case clock == ClockEpoch && gaps > 0:
		msg += fmt.Sprintf(" (their time ranges do not overlap; the %.0f s between runs are left out, so window times after the first run's are shifted)", gaps)
	case clock == ClockEpoch:
		msg += " (their time ranges do not overlap)"
	default:
		msg += " (files without wall-clock times cannot be aligned; replicas need wall-clock arrival times, as in the native request log)"
	}
	if known {
		msg += fmt.Sprintf(" and goodput is over their summed duration, %.1f s", total)
	}
	ds.Warnings = append(ds.Warnings, msg)
	return ds
}

// joinGap is the longest pause (seconds) between one wall-clock file's
// last arrival and the next one's first that is taken as the same
// recording going on (a log rotated) rather than another run whose idle
// time before it is left out: ten times the median over the files of
// their mean time between arrivals; 0 when no file has two. Without it
// files rotated every few seconds lost a request spacing each from the
// window (300 files of ten requests: goodput 11.1 req/s for 10).
func joinGap(files []Dataset) float64 {
	var spacing []float64
	for i := range files {
		lo, hi := span(&files[i])
		n := 0
		for _, r := range files[i].Requests {
			if Known(r.Time) {
				n++
			}
		}
		if n >= 2 && hi > lo {
			spacing = append(spacing, (hi-lo)/float64(n-1))
		}
	}
	if len(spacing) == 0 {
		return 0
	}
	sort.Float64s(spacing)
	m := spacing[len(spacing)/2]
	if len(spacing)%2 == 0 {
		m = (m + spacing[len(spacing)/2-1]) / 2
	}
	return 10 * m
}

// shifted returns a copy of rs with every arrival time moved by dt.
func shifted(rs []Request, dt float64) []Request {
	if math.IsNaN(dt) || dt == 0 {
		return rs
	}
	out := make([]Request, len(rs))
	copy(out, rs)
	for k := range out {
		out[k].Time += dt
	}
	return out
}

// span is the first arrival and the end of a file's run: the last arrival,
// or first + Duration when that is later; NaN when no time is known.
func span(d *Dataset) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := range d.Requests {
		if t := d.Requests[i].Time; Known(t) {
			lo, hi = math.Min(lo, t), math.Max(hi, t)
		}
	}
	if math.IsInf(lo, 1) {
		return math.NaN(), math.NaN()
	}
	if d.Duration > 0 && lo+d.Duration > hi {
		hi = lo + d.Duration
	}
	return lo, hi
}

// overlapping reports whether any two files' time ranges overlap.
func overlapping(files []Dataset) bool {
	type iv struct{ lo, hi float64 }
	ivs := make([]iv, 0, len(files))
	for i := range files {
		lo, hi := span(&files[i])
		if math.IsNaN(lo) {
			return true // no times: cannot tell, keep the replica reading
		}
		ivs = append(ivs, iv{lo, hi})
	}
	sort.Slice(ivs, func(a, b int) bool { return ivs[a].lo < ivs[b].lo })
	for i := 1; i < len(ivs); i++ {
		if ivs[i].lo < ivs[i-1].hi {
			return true
		}
	}
	return false
}
