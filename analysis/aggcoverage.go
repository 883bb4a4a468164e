package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/sources"
)

// aggCoverage is what the coverage checks of metrics-based arms found.
// Missing data decides, it does not only warn: any reason in missing or
// canaryLost keeps the verdict from passing.
type aggCoverage struct {
	// missing are reasons the data are incomplete (partial responses,
	// replicas with holes in their series): the verdict is inconclusive,
	// neither pass nor fail, since the missing part could hold either.
	missing []string
	// canaryLost are canary replica series that stopped reporting while
	// the others went on (metrics only): a crash the change may have
	// caused, or missing data. Never a pass; a fail on the remaining data
	// stands.
	canaryLost []string
	// events are replica changes reported: a baseline replica lost or
	// silent, not blamed on the change (goodput gates are per
	// replica-second, so its missing traffic counts against neither arm),
	// and a canary replica's outage, which canary_replica_loss decides.
	events []string
	// outages are each arm's replicas that served nothing while the
	// others served (normalize.ReplicaLoss on its tracks), baseline then
	// canary: the canary's that the baseline did not show at the time
	// decide the canary_replica_loss guardrail (replicaLossEval), as on
	// the request path.
	outages [2][]replicaOutage
}

// blocksPass reports whether the coverage checks forbid a pass.
func (c aggCoverage) blocksPass() bool { return len(c.missing)+len(c.canaryLost) > 0 }

// coverageOf checks both arms: warnings in the API's answers, and each
// replica's series over the window (read from Aggregate.Replicas): a
// replica whose series has no samples for some slices and then reports
// again (a hole: a partial answer, failed scrapes, or a restart that
// cannot be told apart from them), a replica that stops reporting before
// the window's end, and replicas that report but serve nothing while the
// others serve (normalize.ReplicaLoss, as on the request path).
func coverageOf(b, c *aggArm) aggCoverage {
	var cov aggCoverage
	for ai, a := range []*aggArm{b, c} {
		agg := a.ds.Agg
		for _, p := range agg.Partial {
			cov.missing = append(cov.missing, fmt.Sprintf("%s: %s", a.arm, p))
		}
		if len(agg.Replicas) == 0 {
			continue
		}
		starts := a.allStarts
		at := func(k int) string {
			if k >= len(starts) {
				return "the window's end"
			}
			return fmt.Sprintf("+%gs", starts[k]-starts[0])
		}
		acts := make([]normalize.ReplicaActivity, 0, len(agg.Replicas))
		stopped := map[string]bool{} // reported from the series' last samples
		// a series that stops while another starts within a few slices of
		// it (a pod replaced under a new name) is reported, not lost
		by := seriesTakeovers(agg)
		// the replica names records carry, by the name messages show, for
		// the outages' reasons, which quote them as the request path does
		recorded := map[string]string{}
		for ti, tr := range agg.Replicas {
			tr.Name = recordReplicaName(tr, agg.Exact)
			if name, ok := sources.RecordReplica(agg.Replicas[ti].Name); ok && agg.Exact && tr.Series == "" {
				recorded[tr.Name] = name
			}
			first, last := seriesBounds(tr)
			if first < 0 {
				continue
			}
			// holes: absent slices between present ones
			for k := first + 1; k < last; {
				if !math.IsNaN(tr.Finished[k]) {
					k++
					continue
				}
				from := k
				for k < last && math.IsNaN(tr.Finished[k]) {
					k++
				}
				cov.missing = append(cov.missing, fmt.Sprintf("%s: replica %s has no samples from %s to %s and reports again after: data are missing there (partial answer, failed scrapes or a restart)",
					a.arm, tr.Name, at(from), at(k)))
			}
			if last < len(tr.Finished)-1 && !agg.Exact {
				// records are complete: a replica of an exact aggregate
				// that stops serving is found below, as on the request path
				stopped[tr.Name] = true
				msg := fmt.Sprintf("%s: replica %s stopped reporting at %s (%d of %d slices without samples to the window's end)",
					a.arm, tr.Name, at(last+1), len(tr.Finished)-1-last, len(tr.Finished))
				if j, ok := by[ti]; ok {
					jFirst, _ := seriesBounds(agg.Replicas[j])
					cov.events = append(cov.events, fmt.Sprintf("%s; replica %s, first reporting at %s, took its place", msg, recordReplicaName(agg.Replicas[j], agg.Exact), at(jFirst)))
				} else if a.arm == sources.Canary {
					cov.canaryLost = append(cov.canaryLost, msg+": a crash the change may have caused, or missing data")
				} else {
					cov.events = append(cov.events, msg)
				}
			}
			if first > 0 && !agg.Exact {
				// (records: a replica that joined late is found below, as
				// on the request path; its first request may come a few
				// slices in at a low rate without its having joined late)
				cov.events = append(cov.events, fmt.Sprintf("%s: replica %s first reported at %s", a.arm, tr.Name, at(first)))
			}
			act := normalize.ReplicaActivity{Name: tr.Name, Requests: make([]float64, len(tr.Finished))}
			for k, v := range tr.Finished {
				act.Requests[k] = nan0(v)
			}
			acts = append(acts, act)
		}
		if len(acts) < 2 {
			continue
		}
		var evs []normalize.ReplicaEvent
		for _, ev := range normalize.ReplicaLoss(acts, normalize.LossOptions{BucketSecs: a.ds.Agg.Step}) {
			if ev.Kind == normalize.EventJoined && !agg.Exact || ev.Kind == normalize.EventLost && stopped[ev.Replica] {
				continue // reported above from the series' first or last samples
			}
			evs = append(evs, ev)
			cov.events = append(cov.events, fmt.Sprintf("%s: replica %s %s: %s", a.arm, ev.Replica, ev.Kind, ev.Reason))
		}
		clock := func(k int) float64 {
			if k < len(starts) {
				return starts[k]
			}
			return starts[len(starts)-1] + a.ds.Agg.Step
		}
		// track names are sanitised label sets, shown as they are; a
		// record's replica is quoted, as on the request path
		cov.outages[ai] = placeOutages(evs, clock, func(s string) string {
			if name, ok := recorded[s]; ok {
				return strconv.Quote(name)
			}
			return s
		})
	}
	return cov
}

// seriesTakeovers maps each replica series of a metrics aggregate that
// stops reporting before the window's end to the series that took its
// place (normalize.Takeovers, on the series' first and last slices with
// samples): a pod replaced under a new name stops one series and starts
// another at once. Records (exact aggregates) are left to
// normalize.ReplicaLoss.
func seriesTakeovers(agg *sources.Aggregate) map[int]int {
	if agg.Exact {
		return nil
	}
	firsts, stops := make([]int, len(agg.Replicas)), make([]int, len(agg.Replicas))
	for i, tr := range agg.Replicas {
		first, last := seriesBounds(tr)
		firsts[i], stops[i] = first, -1
		if last >= 0 && last < len(tr.Finished)-1 {
			stops[i] = last + 1
		}
	}
	return normalize.Takeovers(firsts, stops, normalize.DefaultGapBuckets)
}

// seriesBounds is the first and last slice in which a replica series has
// samples (−1, −1: none).
func seriesBounds(tr sources.ReplicaTrack) (first, last int) {
	first, last = -1, -1
	for k, v := range tr.Finished {
		if !math.IsNaN(v) {
			if first < 0 {
				first = k
			}
			last = k
		}
	}
	return first, last
}

// sliceStarts returns the arm's distinct slice starts in time order.
func (a *aggArm) sliceStarts() []float64 {
	out := make([]float64, len(a.slices))
	for i, s := range a.slices {
		out[i] = s.start
	}
	return out
}

// applyCoverage turns the coverage checks into the verdict: missing data
// make it inconclusive, a lost canary replica keeps it from passing; the
// reasons come first.
func applyCoverage(r *Report, cov aggCoverage) {
	if !cov.blocksPass() {
		return
	}
	var why []string
	switch {
	case len(cov.missing) > 0 && r.Verdict != Inconclusive:
		why = append(why, fmt.Sprintf("data incomplete, so the %s verdict of the gates is not given: %s", strings.ToUpper(string(r.Verdict)),
			strings.Join(cov.missing, "; ")))
		r.Verdict = Inconclusive
	case len(cov.missing) > 0:
		why = append(why, "data incomplete: "+strings.Join(cov.missing, "; "))
	}
	if len(cov.canaryLost) > 0 {
		if r.Verdict == Pass {
			why = append(why, "the gates pass on the remaining data, but a canary replica went missing, so the verdict cannot pass: "+
				strings.Join(cov.canaryLost, "; "))
			r.Verdict = Inconclusive
		} else {
			why = append(why, "a canary replica went missing: "+strings.Join(cov.canaryLost, "; "))
		}
	}
	r.Reasons = append(why, r.Reasons...)
}

// overlap refuses arms whose selectors pick the same series: the label
// sets the selectors returned are compared, not the selectors' text, so
// deployment=~"baseline" and deployment="baseline" (equivalent) or
// deployment=~"baseline|canary" (a superset) are caught.
// Aggregates built from request records are exempt: their replica names
// come from the records, where two arms may well reuse names.
func overlap(b, c *sources.Dataset) error {
	if b.Agg == nil || c.Agg == nil || b.Agg.Exact || c.Agg.Exact {
		return nil
	}
	seen := map[string]bool{}
	for _, tr := range b.Agg.Replicas {
		if tr.Series != "" {
			seen[tr.Series] = true
		}
	}
	var both []string
	for _, tr := range c.Agg.Replicas {
		if seen[tr.Series] {
			both = append(both, tr.Series)
		}
	}
	if len(both) == 0 {
		return nil
	}
	ex := both
	if len(ex) > 3 {
		ex = append(ex[:3:3], "…")
	}
	return &DataError{Msg: fmt.Sprintf("the arms' selectors pick the same series: %d of the canary's %d replica series are also the baseline's (%s); "+
		"give selectors that no series matches both (e.g. deployment=\"baseline\" and deployment=\"canary\")",
		len(both), len(c.Agg.Replicas), strings.Join(ex, ", "))}
}

// recordReplicaName is how a replica track is named in messages: a track
// an exact aggregate built from records (named {replica="…"}, no series)
// by the replica's own name, as the request path names it (unless the
// name needs quoting: control characters, quotes, backslashes); any
// other by its label set.
func recordReplicaName(tr sources.ReplicaTrack, exact bool) string {
	if !exact || tr.Series != "" {
		return tr.Name
	}
	name, ok := sources.RecordReplica(tr.Name)
	if !ok || name == "" || strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) || r == '"' || r == '\\' }) {
		return tr.Name // quoted, as the track names it
	}
	return name
}
