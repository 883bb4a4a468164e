package sources

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

// ReplicaSpans collects, for an aggregate built from per-request records
// (request logs scanned, a column store's rows), each named replica's
// activity on the arm's slice grid: the first and last slice it served a
// request in, the requests it finished (completed, failed or canceled)
// per slice, those of its requests the aggregate judges and the good
// ones among them, and the requests of known end-to-end latency that
// started (arrived) and ended (arrival + E2E) in each slice, whose
// difference summed up to a slice is what it had in flight at the
// slice's end. Slices are integer indexes, floor(t/step). The zero value
// is not ready: make one with make(ReplicaSpans).
type ReplicaSpans map[string]*replicaSpan

type replicaSpan struct {
	first, last int64
	counts      map[int64]spanCounts
}

// spanCounts are a replica's requests in one slice: finished, and judged
// (offered) and good among them; and of known end-to-end latency, those
// that started and those that ended in the slice.
type spanCounts struct{ finished, offered, good, started, ended float64 }

func (c spanCounts) add(o spanCounts) spanCounts {
	return spanCounts{c.finished + o.finished, c.offered + o.offered, c.good + o.good, c.started + o.started, c.ended + o.ended}
}

func newReplicaSpan(first, last int64) *replicaSpan {
	return &replicaSpan{first: first, last: last, counts: map[int64]spanCounts{}}
}

// Add records that replica name served in slice, finishing finished
// requests there (0 for a rejected request, which it never admitted), of
// which offered are judged (0 in its own warm-up) and good met their SLO.
func (r ReplicaSpans) Add(name string, slice int64, finished, offered, good float64) {
	s := r[name]
	if s == nil {
		s = newReplicaSpan(slice, slice)
		r[name] = s
	}
	s.first, s.last = min(s.first, slice), max(s.last, slice)
	if finished != 0 || offered != 0 || good != 0 {
		s.counts[slice] = s.counts[slice].add(spanCounts{finished: finished, offered: offered, good: good})
	}
}

// AddFlights records that replica name had started requests of known
// end-to-end latency arrive in slice start and ended of them end in slice
// end (the slice of arrival + E2E; any slice at or after start, beyond
// the arm's last one too). Call Add for the same requests as well: only
// Add decides where the replica served.
func (r ReplicaSpans) AddFlights(name string, start, end int64, started, ended float64) {
	s := r[name]
	if s == nil {
		// an empty span until Add places it
		s = newReplicaSpan(math.MaxInt64, math.MinInt64)
		r[name] = s
	}
	if started != 0 {
		c := s.counts[start]
		c.started += started
		s.counts[start] = c
	}
	if ended != 0 {
		c := s.counts[end]
		c.ended += ended
		s.counts[end] = c
	}
}

// Merge adds o's spans and counts into r.
func (r ReplicaSpans) Merge(o ReplicaSpans) {
	for name, os := range o {
		s := r[name]
		if s == nil {
			s = newReplicaSpan(os.first, os.last)
			r[name] = s
		}
		s.first, s.last = min(s.first, os.first), max(s.last, os.last)
		for k, v := range os.counts {
			s.counts[k] = s.counts[k].add(v)
		}
	}
}

// Tracks returns, for the arm's slices lo..hi, the replicas serving in
// each slice and one ReplicaTrack per replica (named {replica="…"}, in
// name order). A replica serves from the slice of its first request to
// that of its last, extended to the arm's edges when within one slice of
// them; its track is NaN outside that span. Without any named replica
// every slice has 1 replica serving and tracks is nil. Tracks leave Series
// empty: replica names in records are not selected series, and two arms'
// records may reuse names. When AddFlights counted any request, each
// track's InFlight is the replica's requests in flight at each slice's
// end (started up to it less ended up to it); else it is nil.
func (r ReplicaSpans) Tracks(lo, hi int64) (serving []float64, tracks []ReplicaTrack) {
	n := hi - lo + 1
	serving = make([]float64, n)
	if len(r) == 0 {
		for k := range serving {
			serving[k] = 1
		}
		return serving, nil
	}
	names := make([]string, 0, len(r))
	for name := range r {
		names = append(names, name)
	}
	slices.Sort(names)
	flights := false
	for _, s := range r {
		for _, c := range s.counts {
			flights = flights || c.started != 0
		}
	}
	tracks = make([]ReplicaTrack, 0, len(names))
	for _, name := range names {
		s := r[name]
		if s.first > s.last {
			continue // flights only: never placed by Add
		}
		first, last := s.first, s.last
		if first <= lo+1 {
			first = lo
		}
		if last >= hi-1 {
			last = hi
		}
		fin, off, good := make([]float64, n), make([]float64, n), make([]float64, n)
		for k := range fin {
			sl := lo + int64(k)
			if sl < first || sl > last {
				fin[k], off[k], good[k] = math.NaN(), math.NaN(), math.NaN()
				continue
			}
			serving[k]++
			c := s.counts[sl]
			fin[k], off[k], good[k] = c.finished, c.offered, c.good
		}
		tr := ReplicaTrack{Name: replicaTrackPrefix + strconv.Quote(name) + replicaTrackSuffix, Finished: fin, Offered: off, Good: good}
		if flights {
			tr.InFlight = s.inFlight(lo, hi, first, last)
		}
		tracks = append(tracks, tr)
	}
	return serving, tracks
}

// inFlight is the span's requests in flight at the end of each slice
// lo..hi: those started in any slice up to it less those ended, NaN
// outside first..last.
func (s *replicaSpan) inFlight(lo, hi, first, last int64) []float64 {
	out := make([]float64, hi-lo+1)
	cur := 0.0
	for k, c := range s.counts {
		if k < lo {
			cur += c.started - c.ended
		}
	}
	for k := range out {
		c := s.counts[lo+int64(k)]
		cur += c.started - c.ended
		out[k] = cur
		if sl := lo + int64(k); sl < first || sl > last {
			out[k] = math.NaN()
		}
	}
	return out
}

// A track of records is named {replica="…"}, the record's replica quoted.
const replicaTrackPrefix, replicaTrackSuffix = "{replica=", "}"

// RecordReplica returns the replica name of the records a track built by
// Tracks was named after ({replica="…"}, unquoted); ok is false for any
// other name (a metrics series' label set).
func RecordReplica(trackName string) (name string, ok bool) {
	if !strings.HasPrefix(trackName, replicaTrackPrefix) || !strings.HasSuffix(trackName, replicaTrackSuffix) {
		return "", false
	}
	name, err := strconv.Unquote(trackName[len(replicaTrackPrefix) : len(trackName)-len(replicaTrackSuffix)])
	return name, err == nil
}

// Widen halves every slice index (floor(s/2)): the spans and counts of
// the grid twice as wide, as Add would have built them on it.
func (r ReplicaSpans) Widen() {
	for _, s := range r {
		s.first, s.last = s.first>>1, s.last>>1
		counts := make(map[int64]spanCounts, len(s.counts)/2+1)
		for k, v := range s.counts {
			counts[k>>1] = counts[k>>1].add(v)
		}
		s.counts = counts
	}
}
