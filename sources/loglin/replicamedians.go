package loglin

import (
	"math"

	"github.com/goodput-dev/goodput/sources"
)

// ReplicaMedians holds, per replica and time slice, a histogram of coarse
// bins (Coarse) from which the replica tracks' per-slice medians of one
// latency are read (sources.ReplicaTrack.TTFTMedian, TPOTMedian): the streaming scan and the
// ClickHouse source fill it alike. Memory grows with replicas × slices
// and the distinct bins each holds (SliceBins), never with values. Make
// one with make(ReplicaMedians).
type ReplicaMedians map[replicaSlice]*SliceBins

type replicaSlice struct {
	name  string
	slice int64
}

// Hist returns replica name's bins of slice, made on first use.
func (m ReplicaMedians) Hist(name string, slice int64) *SliceBins {
	k := replicaSlice{name, slice}
	h := m[k]
	if h == nil {
		h = &SliceBins{}
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

// Fill sets, through setMedians, each track's per-slice medians over the
// slices lo, lo+1, … its Finished covers (SliceBins.Median; NaN where the
// replica completed none with a known value), e.g. into its TTFTMedian;
// and through setTail its share of its arm's tail (sources.ReplicaTail):
// the arm's q-quantile bin of every replica's values pooled (TailBin),
// and per slice each replica's values and those beyond it (as Beyond
// counts them), unless TailBin finds none. A track not named after
// records' replica (sources.RecordReplica) is left without. One pass over
// m, not a lookup per track and slice: hundreds of replicas over an hour
// are a few hundred thousand entries.
func (m ReplicaMedians) Fill(tracks []sources.ReplicaTrack, lo int64, q float64, setMedians func(tr *sources.ReplicaTrack, medians []float64), setTail func(tr *sources.ReplicaTrack, tail sources.ReplicaTail)) {
	c, edge, slope, tailOK := m.TailBin(q)
	idx := make(map[string]int, len(tracks))
	med := make([][]float64, len(tracks))
	tails := make([]sources.ReplicaTail, len(tracks))
	for t := range tracks {
		name, ok := sources.RecordReplica(tracks[t].Name)
		if !ok {
			continue
		}
		idx[name] = t
		n := len(tracks[t].Finished)
		med[t] = make([]float64, n)
		for k := range med[t] {
			med[t][k] = math.NaN()
		}
		if tailOK {
			tails[t] = sources.ReplicaTail{Edge: edge, LogSlope: slope, Known: make([]float64, n), Over: make([]float64, n)}
		}
	}
	var bins []bin // one replica's bins of one slice, listed once for both readings
	for key, h := range m {
		t, ok := idx[key.name]
		k := key.slice - lo
		if !ok || k < 0 || k >= int64(len(med[t])) {
			continue
		}
		bins = h.appendBins(bins[:0])
		known, over := beyondBins(bins, c)
		med[t][k] = medianOfBins(bins, known)
		if tailOK {
			tails[t].Known[k], tails[t].Over[k] = known, over
		}
	}
	for t := range tracks {
		if med[t] == nil {
			continue
		}
		setMedians(&tracks[t], med[t])
		if tailOK {
			setTail(&tracks[t], tails[t])
		}
	}
}

// setTTFT and setTPOT are Fill's setters of a track's TTFTMedian and
// TPOTMedian.
func setTTFT(tr *sources.ReplicaTrack, medians []float64) { tr.TTFTMedian = medians }

// setTPOT sets tr's TPOTMedian (see setTTFT).
func setTPOT(tr *sources.ReplicaTrack, medians []float64) { tr.TPOTMedian = medians }

// TailBin returns the coarse bin c holding the q-quantile (the ⌈q·n⌉-th
// smallest) of every value in m pooled, its upper edge (seconds) and the
// pooled values' d log(quantile)/d(probability) there, over the central
// 1% of probability around the share of values up to c (NaN when those
// ranks share a bin). ok is false when m holds fewer than 1/(1 − q)
// values.
func (m ReplicaMedians) TailBin(q float64) (c int32, edge, slope float64, ok bool) {
	bins := make([]*SliceBins, 0, len(m))
	for _, h := range m {
		bins = append(bins, h)
	}
	return TailBinOf(bins, q)
}

// TailBinOf is ReplicaMedians.TailBin of the values in bins, pooled (in
// any order: their counts add exactly).
func TailBinOf(bins []*SliceBins, q float64) (c int32, edge, slope float64, ok bool) {
	var pooled Hist
	var list []bin
	for _, h := range bins {
		list = h.appendBins(list[:0])
		for _, b := range list {
			pooled.AddBin(b.i, b.w)
		}
	}
	n := pooled.Total()
	if !(n*(1-q) >= 1) {
		return 0, 0, 0, false
	}
	if c, ok = pooled.Rank(math.Ceil(q*n - 1e-9)); !ok {
		return 0, 0, 0, false
	}
	var over float64
	pooled.each(func(i int32, w float64) {
		if i > c {
			over += w
		}
	})
	pT := (n - over) / n
	kLo, kHi := math.Max(1, math.Ceil((pT-0.005)*n-1e-9)), math.Min(n, math.Ceil((pT+0.005)*n-1e-9))
	bLo, _ := pooled.Rank(kLo)
	bHi, _ := pooled.Rank(kHi)
	slope = math.NaN()
	if lq, hq := coarseEdge(bLo), coarseEdge(bHi); kHi > kLo && lq > 0 && !math.IsInf(hq, 1) {
		slope = math.Log(hq/lq) / ((kHi - kLo) / n)
	}
	return c, coarseEdge(c), slope, true
}

// Beyond returns replica name's values in slice (known) and those in
// coarse bins above c (over).
func (m ReplicaMedians) Beyond(name string, slice int64, c int32) (known, over float64) {
	h := m[replicaSlice{name, slice}]
	if h == nil {
		return 0, 0
	}
	return h.Beyond(c)
}

// coarseEdge is the upper edge of coarse bin c (seconds), as
// SliceBins.Median reads it.
func coarseEdge(c int32) float64 {
	if c == Zero || c == math.MaxInt32 {
		return Upper(c)
	}
	return Upper(c<<2 + 3)
}

// setTTFTTail and setTPOTTail are Fill's setters of a track's TTFTTail and
// TPOTTail.
func setTTFTTail(tr *sources.ReplicaTrack, tail sources.ReplicaTail) { tr.TTFTTail = tail }

// setTPOTTail sets tr's TPOTTail (see setTTFTTail).
func setTPOTTail(tr *sources.ReplicaTrack, tail sources.ReplicaTail) { tr.TPOTTail = tail }

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

// ReplicaLatencies holds, per replica and time slice, the coarse bins of
// both latencies a replica track carries (TTFT and TPOT): what the
// streaming scan and the ClickHouse source keep per replica. Make one with
// NewReplicaLatencies.
type ReplicaLatencies struct{ TTFT, TPOT ReplicaMedians }

// NewReplicaLatencies returns an empty ReplicaLatencies.
func NewReplicaLatencies() ReplicaLatencies {
	return ReplicaLatencies{TTFT: ReplicaMedians{}, TPOT: ReplicaMedians{}}
}

// Merge adds o's bins into r.
func (r ReplicaLatencies) Merge(o ReplicaLatencies) {
	r.TTFT.Merge(o.TTFT)
	r.TPOT.Merge(o.TPOT)
}

// Widened returns r on the grid twice as wide (ReplicaMedians.Widened).
func (r ReplicaLatencies) Widened() ReplicaLatencies {
	return ReplicaLatencies{TTFT: r.TTFT.Widened(), TPOT: r.TPOT.Widened()}
}

// Fill sets each track's TTFT and TPOT medians and tail shares over the
// slices lo, lo+1, … (ReplicaMedians.Fill, the tail at
// sources.ReplicaTailQuantile).
func (r ReplicaLatencies) Fill(tracks []sources.ReplicaTrack, lo int64) {
	r.TTFT.Fill(tracks, lo, sources.ReplicaTailQuantile, setTTFT, setTTFTTail)
	r.TPOT.Fill(tracks, lo, sources.ReplicaTailQuantile, setTPOT, setTPOTTail)
}
