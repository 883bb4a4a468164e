package loglin

import (
	"math"

	"github.com/goodput-dev/goodput/sources"
)

// ReplicaMedians holds, per replica and time slice, a histogram of coarse
// bins (Coarse) from which the replica tracks' per-slice TTFT medians are
// read (sources.ReplicaTrack.TTFTMedian): the streaming scan and the
// ClickHouse source fill it alike. Memory grows with replicas × slices
// (512 bytes per non-empty pair at least), never with values. Make one
// with make(ReplicaMedians).
type ReplicaMedians map[replicaSlice]*Hist

type replicaSlice struct {
	name  string
	slice int64
}

// Hist returns replica name's histogram of slice, made on first use.
func (m ReplicaMedians) Hist(name string, slice int64) *Hist {
	k := replicaSlice{name, slice}
	h := m[k]
	if h == nil {
		h = &Hist{}
		m[k] = h
	}
	return h
}

// Merge adds o's counts into m.
func (m ReplicaMedians) Merge(o ReplicaMedians) {
	for k, h := range o {
		m.Hist(k.name, k.slice).Merge(h)
	}
}

// Fill sets each track's TTFTMedian over the slices lo, lo+1, … its
// Finished covers (CoarseMedian; NaN where the replica completed none with
// a known TTFT). A track not named after records' replica
// (sources.RecordReplica) is left without.
func (m ReplicaMedians) Fill(tracks []sources.ReplicaTrack, lo int64) {
	for t := range tracks {
		tr := &tracks[t]
		name, ok := sources.RecordReplica(tr.Name)
		if !ok {
			continue
		}
		tr.TTFTMedian = make([]float64, len(tr.Finished))
		for k := range tr.TTFTMedian {
			tr.TTFTMedian[k] = math.NaN()
			if h := m[replicaSlice{name, lo + int64(k)}]; h != nil {
				tr.TTFTMedian[k] = CoarseMedian(h)
			}
		}
	}
}

// Widened returns m on the grid twice as wide: each replica's histograms
// of slices 2k and 2k+1 added up as slice k's. m's histograms are reused.
func (m ReplicaMedians) Widened() ReplicaMedians {
	out := make(ReplicaMedians, len(m)/2+1)
	for k, h := range m {
		k.slice >>= 1
		if d := out[k]; d != nil {
			d.Merge(h)
		} else {
			out[k] = h
		}
	}
	return out
}
