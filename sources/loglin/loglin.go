// Package loglin bins non-negative values (latencies in seconds, token
// counts) on log-linear bins: Prometheus native-histogram indexing at
// schema 8, 256 sub-bins per octave. Bin i holds the values in
// (2^((i−1)/256), 2^(i/256)], so neighbouring edges differ by a factor of
// 2^(1/256) ≈ 1.0027 (0.27%); a quantile read from the bins is known to
// within that factor, whatever the value's magnitude. Values ≤ 0 go to a
// zero bin whose upper edge is 0.
//
// The index is ⌈log2(v)·256⌉, computed the same way by every producer of
// bins (the request-log scan and the SQL a column store runs), so one
// value lands in one bin everywhere; a value within a rounding error of a
// bin edge (only exact powers of two are edges that decimal data can hit,
// and those are computed exactly) may fall either side of it.
//
// No I/O, no state beyond the Hist value.
package loglin

import (
	"cmp"
	"math"
	"slices"

	"github.com/goodput-dev/goodput/sources"
)

// Schema is the Prometheus native-histogram schema of the bins.
const Schema = 8

// PerOctave is the number of bins per doubling of the value (2^Schema).
const PerOctave = 1 << Schema

// Zero is the index of the zero bin (values ≤ 0). It sorts below every
// other index.
const Zero int32 = math.MinInt32

// Index is the bin of v: ⌈log2(v)·256⌉, or Zero for v ≤ 0. NaN has no bin
// (ok false). +Inf lands in the highest index.
func Index(v float64) (int32, bool) {
	switch {
	case math.IsNaN(v):
		return 0, false
	case v <= 0:
		return Zero, true
	case math.IsInf(v, 1):
		return math.MaxInt32, true
	}
	if i, ok := octaveIndex(v); ok {
		return i, true
	}
	x := math.Ceil(math.Log2(v) * PerOctave)
	if x >= math.MaxInt32 {
		return math.MaxInt32, true
	}
	if x <= math.MinInt32+1 {
		return math.MinInt32 + 1, true
	}
	return int32(x), true
}

// octaveIndex is ⌈log2(v)·256⌉ for a normal positive finite v, computed
// without a logarithm: v = f·2^e with f in [1, 2), and the bin within the
// octave is the first j with 2^(j/256) ≥ f, found from a table of the 257
// edges 1 … 2 (and a table over the top 12 bits of f, at most one edge in
// each of its 4096 slots). It declines (ok false) within 2^-30 of an edge
// (and for v a power of two, subnormal or not finite), where Index takes
// the logarithm: everywhere else ⌈log2(v)·256⌉ computed in float64 is more
// than 10^-7 from an integer, while its rounding error is below 10^-10
// (log2(v)·256 < 2^19 in magnitude), so both give the same bin —
// TestOctaveIndexIsLog2 checks it at every edge from 2^-1022 to 2^1023
// and at its float64 neighbours.
func octaveIndex(v float64) (int32, bool) {
	const (
		mantBits = 52
		slotBits = 12
		eps      = 1.0 / (1 << 30)
	)
	b := math.Float64bits(v)
	exp := int32(b>>mantBits) & 0x7ff
	if exp == 0 || exp == 0x7ff || b>>63 != 0 {
		return 0, false
	}
	mant := b & (1<<mantBits - 1)
	f := math.Float64frombits(mant | 1023<<mantBits)
	j := int32(octaveTable.slot[mant>>(mantBits-slotBits)])
	if f > octaveTable.edge[j] {
		j++
	}
	if j == 0 || f-octaveTable.edge[j-1] <= eps || octaveTable.edge[j]-f <= eps {
		return 0, false
	}
	return (exp-1023)*PerOctave + j, true
}

// octaveTable holds the edges 2^(j/256), j = 0 … 256, and for each of
// the 4096 slots [1 + t/4096, 1 + (t+1)/4096) of [1, 2) the first j whose
// edge is at or above the slot's start. Read-only after initialisation.
var octaveTable = func() (t struct {
	edge [PerOctave + 1]float64
	slot [4096]uint16
}) {
	for j := range t.edge {
		t.edge[j] = math.Exp2(float64(j) / PerOctave)
	}
	t.edge[0], t.edge[PerOctave] = 1, 2
	j := 0
	for s := range t.slot {
		start := 1 + float64(s)/4096
		for t.edge[j] < start {
			j++
		}
		t.slot[s] = uint16(j)
	}
	return t
}()

// Upper is bin i's upper edge, 2^(i/256); 0 for the zero bin.
func Upper(i int32) float64 {
	if i == Zero {
		return 0
	}
	if i == math.MaxInt32 {
		return math.Inf(1)
	}
	return math.Exp2(float64(i) / PerOctave)
}

// Lower is bin i's lower edge (exclusive), 2^((i−1)/256); 0 for the zero
// bin and for the lowest ordinary bin.
func Lower(i int32) float64 {
	if i == Zero || i == math.MinInt32+1 {
		return 0
	}
	return Upper(i - 1)
}

// Hist counts values per bin. The zero value is an empty histogram ready
// to use; it is not safe for concurrent use.
//
// Bins are held in an array of 16-bit counts over a range of consecutive
// indexes (2 bytes per bin of the range), one octave (minDense bins, 512
// bytes) around the first bin at first, that grows to take in new bins
// while it stays at most denseSlack times as long as the number of
// non-empty bins (or minDense long). A bin further out, the part of a
// count past 16 bits, and a weight that is not a whole number go to a map
// of float64 weights; a bin's weight is the sum of both. Memory is thus
// linear in the number of non-empty bins (512 bytes at least once one
// is), whatever the number of values. Whole weights (counts of requests) are summed exactly; a bin
// given fractional weights holds their float64 sum.
type Hist struct {
	lo    int32    // index of dense[0]
	dense []uint16 // whole weights of bins lo … lo+len(dense)−1
	zero  float64  // weight of the zero bin
	far   map[int32]float64
	n     int // bins of dense with a non-zero count
}

const (
	// minDense is the length the array may reach whatever the number of
	// non-empty bins (256 bins: one octave, 512 bytes).
	minDense = PerOctave
	// denseSlack bounds the array's length relative to its non-empty bins.
	denseSlack = 8
)

// Add counts v with weight w (1 for one request). NaN values are ignored
// and reported as not added.
func (h *Hist) Add(v, w float64) bool {
	i, ok := Index(v)
	if !ok {
		return false
	}
	h.AddBin(i, w)
	return true
}

// AddBin adds weight w to bin i (as read from a store that binned already).
func (h *Hist) AddBin(i int32, w float64) {
	if w == 0 {
		return
	}
	if i == Zero {
		h.zero += w
		return
	}
	if w == 1 {
		// the common case: one request
		if k := int64(i) - int64(h.lo); k >= 0 && k < int64(len(h.dense)) && h.dense[k] != 0 && h.dense[k] < math.MaxUint16 {
			h.dense[k]++
			return
		}
	}
	if !(w >= 0 && w <= math.MaxUint16 && w == math.Trunc(w)) {
		h.addFar(i, w)
		return
	}
	k := int64(i) - int64(h.lo)
	if k < 0 || k >= int64(len(h.dense)) {
		if !h.grow(i) {
			h.addFar(i, w)
			return
		}
		k = int64(i) - int64(h.lo)
	}
	c := uint32(h.dense[k]) + uint32(w)
	if h.dense[k] == 0 && c != 0 {
		h.n++
	}
	if c > math.MaxUint16 {
		// the count outgrows 16 bits: the map holds the excess
		h.addFar(i, float64(c-math.MaxUint16))
		c = math.MaxUint16
	}
	h.dense[k] = uint16(c)
}

// TryInc adds one to bin i when the bin already holds a count below 16
// bits in the array, the common case of counting requests one at a time,
// and reports whether it did; small enough to be inlined. When it did
// not, AddBin(i, 1) counts the value.
func (h *Hist) TryInc(i int32) bool {
	if k := int64(i) - int64(h.lo); k >= 0 && k < int64(len(h.dense)) && h.dense[k]-1 < math.MaxUint16-1 {
		h.dense[k]++
		return true
	}
	return false
}

func (h *Hist) addFar(i int32, w float64) {
	if h.far == nil {
		h.far = make(map[int32]float64)
	}
	h.far[i] += w
}

// grow extends the array to cover bin i when the bounds allow, taking in
// the map's whole counts that the new range covers; it reports whether i
// is covered.
func (h *Hist) grow(i int32) bool {
	if len(h.dense) == 0 {
		// the first bin: an octave around it at once (latencies of one
		// slice and stratum spread over a few octaves), within the
		// indexes an ordinary bin can have
		lo := max(int64(i)-minDense/2, int64(math.MinInt32)+1)
		lo = min(lo, int64(math.MaxInt32)-minDense+1)
		h.lo = int32(lo)
		h.dense = newDense(minDense)
		h.absorb()
		return true
	}
	lo, hi := int64(min(h.lo, i)), int64(max(h.lo+int32(len(h.dense))-1, i))
	span := hi - lo + 1
	limit := int64(max(minDense, denseSlack*(h.n+len(h.far)+1)))
	if span > limit {
		return false
	}
	if lo < int64(h.lo) {
		// extending downwards: leave room below for more, within the limit
		room := min(int64(len(h.dense)), limit-span)
		lo = max(lo-room, int64(math.MinInt32)+1)
		d := newDense(int(hi - lo + 1))
		copy(d[int64(h.lo)-lo:], h.dense)
		h.dense, h.lo = d, int32(lo)
	} else {
		// extending upwards: by half the length at least, within the limit
		want := min(max(span, int64(len(h.dense))*3/2), limit)
		want = min(want, int64(math.MaxInt32)-int64(h.lo)+1)
		if want > int64(cap(h.dense)) {
			d := newDense(int(want))
			copy(d, h.dense)
			h.dense = d
		} else {
			h.dense = h.dense[:want]
		}
	}
	if len(h.far) > 0 {
		h.absorb()
	}
	return true
}

// ReserveLike gives an empty h the array range of o, so that values
// spread like o's are counted without growing it. Counts are unchanged
// whatever the array's range; only the work of growing is saved. A
// non-empty h, or an o with no array, is left as it is.
func (h *Hist) ReserveLike(o *Hist) {
	if len(h.dense) != 0 || len(h.far) != 0 || len(o.dense) == 0 {
		return
	}
	h.lo = o.lo
	h.dense = newDense(len(o.dense))
}

// newDense returns n zero counts, written once: memory fresh from the
// system reads as a shared page of zeros until first written, and a count
// array is read before it is written (AddBin checks the bin), so without
// the write every page of it faulted twice, the second time flushing the
// other cores' address caches (a tenth of judge --stream's time was in
// such faults).
func newDense(n int) []uint16 {
	d := make([]uint16, n)
	clear(d)
	return d
}

// absorb moves the map's bins within the array's range into it when their
// weight is a whole number that fits.
func (h *Hist) absorb() {
	for i, w := range h.far {
		k := int64(i) - int64(h.lo)
		if k < 0 || k >= int64(len(h.dense)) || h.dense[k] != 0 || !(w > 0 && w <= math.MaxUint16 && w == math.Trunc(w)) {
			continue
		}
		delete(h.far, i)
		h.dense[k] = uint16(w)
		h.n++
	}
}

// Merge adds o's counts into h.
func (h *Hist) Merge(o *Hist) {
	o.each(func(i int32, w float64) { h.AddBin(i, w) })
}

// each calls fn for every non-empty bin in ascending index order.
func (h *Hist) each(fn func(i int32, w float64)) {
	if h.zero != 0 {
		fn(Zero, h.zero)
	}
	var far []int32
	for i := range h.far {
		far = append(far, i)
	}
	slices.Sort(far)
	f := 0
	for k, c := range h.dense {
		i := h.lo + int32(k)
		for ; f < len(far) && far[f] < i; f++ {
			if w := h.far[far[f]]; w != 0 {
				fn(far[f], w)
			}
		}
		w := float64(c)
		if f < len(far) && far[f] == i {
			w += h.far[i]
			f++
		}
		if w != 0 {
			fn(i, w)
		}
	}
	for ; f < len(far); f++ {
		if w := h.far[far[f]]; w != 0 {
			fn(far[f], w)
		}
	}
}

// Total is the summed weight of every bin.
func (h *Hist) Total() float64 {
	t := 0.0
	h.each(func(_ int32, w float64) { t += w })
	return t
}

// Len is the number of non-empty bins.
func (h *Hist) Len() int {
	n := 0
	h.each(func(int32, float64) { n++ })
	return n
}

// Indexes returns the non-empty bins' indexes in ascending order.
func (h *Hist) Indexes() []int32 {
	var out []int32
	h.each(func(i int32, _ float64) { out = append(out, i) })
	return out
}

// Rank returns the index of the bin that holds the k-th smallest value
// (k from 1 to Total), counting each bin's weight; ok is false for an
// empty histogram or k outside that range.
func (h *Hist) Rank(k float64) (i int32, ok bool) { return rank(h.each, k) }

// rank returns the bin holding the k-th smallest value of the bins each
// visits in ascending order (Hist.Rank, SliceBins.Rank).
func rank(each func(func(int32, float64)), k float64) (i int32, ok bool) {
	var seen float64
	each(func(j int32, w float64) {
		if !ok && seen+w >= k {
			i, ok = j, true
		}
		seen += w
	})
	return i, ok && k >= 1
}

// Coarse is bin i (256 per octave) at the 64 per octave a replica's
// per-slice TTFT and TPOT are kept on (SliceBins): a few hundred requests
// per replica and slice then fall within a Hist's first array (four
// octaves), which the full resolution would overflow into its map at a
// sixth more CPU time for a whole request-log scan. The zero and +Inf
// bins stay as they are.
func Coarse(i int32) int32 {
	if i == Zero || i == math.MaxInt32 {
		return i
	}
	return i >> 2
}

// Count is the weight in bin i.
func (h *Hist) Count(i int32) float64 {
	if i == Zero {
		return h.zero
	}
	w := h.far[i]
	if k := int64(i) - int64(h.lo); k >= 0 && k < int64(len(h.dense)) {
		w += float64(h.dense[k])
	}
	return w
}

// Cumulative returns h in the cumulative form classic histograms use
// (sources.Histogram): every non-empty bin contributes its lower and its
// upper edge, so the count at each edge is exact and the only uncertainty
// left about a value is its bin's width (a factor 2^(1/256)). The last
// edge is +Inf with the total. An empty histogram gives the zero value.
func (h *Hist) Cumulative() sources.Histogram { return h.CumulativeWith(nil) }

// CumulativeWith is Cumulative taking the bins' edges from e, which
// remembers them between histograms (nil: computed each time).
func (h *Hist) CumulativeWith(e *Edges) sources.Histogram {
	var scratch []bin
	if e != nil {
		scratch = e.bins
	}
	bins := h.appendBins(scratch[:0])
	if e != nil {
		e.bins = bins[:0]
	}
	// an upper bound of the edges, so the slices are allocated once: one
	// per bin whose lower edge is its neighbour's upper, two for others,
	// and +Inf
	n, last := 0, int32(0)
	for _, b := range bins {
		if b.i == Zero || (n > 0 && last == b.i-1) {
			n++
		} else {
			n += 2
		}
		last = b.i
	}
	if n == 0 {
		return sources.Histogram{}
	}
	var edges, counts []float64
	if e != nil {
		edges, counts = e.alloc(n+1), e.alloc(n+1)
	} else {
		edges, counts = make([]float64, 0, n+1), make([]float64, 0, n+1)
	}
	// written in place (m values so far): an edge equal to the last
	// written one updates its count instead
	edges, counts = edges[:n+1], counts[:n+1]
	m := 0
	cum, upper, prev := 0.0, 0.0, false
	for _, b := range bins {
		// the lower edge, unless it is the previous bin's upper edge,
		// written last with the same count
		if b.i != Zero && !(prev && last == b.i-1) {
			lo, ok := e.remembered(b.i - 1)
			if !ok {
				lo = e.lower(b.i)
			}
			m = putEdge(edges, counts, m, lo, cum)
		}
		cum += b.w
		if x, ok := e.remembered(b.i); ok {
			upper = x
		} else {
			upper = e.upper(b.i)
		}
		m = putEdge(edges, counts, m, upper, cum)
		last, prev = b.i, true
	}
	if !math.IsInf(edges[m-1], 1) {
		edges[m], counts[m] = math.Inf(1), cum
		m++
	}
	edges, counts = edges[:m], counts[:m]
	return sources.Histogram{Sparse: true, Edges: edges, Counts: counts}
}

// putEdge writes the edge x with cumulative count cum as the (m+1)th of
// edges and counts, or, when x equals the mth edge, updates that edge's
// count instead; it returns the edges written.
func putEdge(edges, counts []float64, m int, x, cum float64) int {
	if m > 0 && edges[m-1] == x {
		counts[m-1] = cum
		return m
	}
	edges[m], counts[m] = x, cum
	return m + 1
}

// bin is a non-empty bin's index and weight.
type bin struct {
	i int32
	w float64
}

// appendBins appends h's non-empty bins to buf in ascending index order
// with the weights each gives them, reading the array directly: walking
// the bins twice through each's callback (and the map twice per bin) was
// a tenth of judge --stream's CPU time.
func (h *Hist) appendBins(buf []bin) []bin {
	if h.zero != 0 {
		buf = append(buf, bin{Zero, h.zero})
	}
	if len(h.far) == 0 {
		// every count written, the next one over it unless it is
		// non-zero: no branch on the counts, which a histogram's sparse
		// bins made a coin toss
		m := len(buf)
		buf = slices.Grow(buf, len(h.dense))[:m+len(h.dense)]
		for k, c := range h.dense {
			buf[m] = bin{h.lo + int32(k), float64(c)}
			m += nonZero(c)
		}
		return buf[:m]
	}
	far := make([]bin, 0, len(h.far))
	for i, w := range h.far {
		far = append(far, bin{i, w})
	}
	slices.SortFunc(far, func(x, y bin) int { return cmp.Compare(x.i, y.i) })
	f := 0
	for k, c := range h.dense {
		i := h.lo + int32(k)
		for ; f < len(far) && far[f].i < i; f++ {
			if far[f].w != 0 {
				buf = append(buf, far[f])
			}
		}
		w := float64(c)
		if f < len(far) && far[f].i == i {
			w += far[f].w
			f++
		}
		if w != 0 {
			buf = append(buf, bin{i, w})
		}
	}
	for ; f < len(far); f++ {
		if far[f].w != 0 {
			buf = append(buf, far[f])
		}
	}
	return buf
}

// nonZero is 1 for a non-zero count, 0 for zero.
func nonZero(c uint16) int {
	n := 0
	if c != 0 {
		n = 1
	}
	return n
}

// Edges remembers bins' upper edges once computed, so that building the
// cumulative form of many histograms over the same bins (one per slice and
// stratum) takes math.Exp2 once per bin instead of once per histogram and
// bin. A nil *Edges computes every edge. The zero value is ready to use;
// it is not safe for concurrent use.
type Edges struct {
	lo int32     // index of v[0]
	v  []float64 // Upper(lo+k); 0 until computed (no edge of an ordinary bin is 0)
	// bins is CumulativeWith's scratch list of a histogram's bins
	bins []bin
	// block is where CumulativeWith carves the histograms' slices from:
	// one allocation per blockLen values instead of two per histogram
	// (tens of thousands of histograms per arm, each a few hundred values)
	block []float64
}

// blockLen is the length of Edges.block (64 Ki values, 512 KiB).
const blockLen = 1 << 16

// alloc returns an empty slice with room for n values carved from the
// current block (a new block when it has too little room left, or a slice
// of its own when n is more than a quarter of a block). Its capacity is n
// exactly, so an append past it copies instead of writing over the next
// histogram's values.
func (e *Edges) alloc(n int) []float64 {
	if n > blockLen/4 {
		return make([]float64, 0, n)
	}
	if len(e.block) < n {
		e.block = make([]float64, blockLen)
	}
	s := e.block[:0:n]
	e.block = e.block[n:]
	return s
}

// maxEdges bounds the remembered range (2^16 bins, 512 KiB; 256 octaves).
const maxEdges = 1 << 16

// Upper is Upper(i), remembered.
func (e *Edges) Upper(i int32) float64 {
	if x, ok := e.remembered(i); ok {
		return x
	}
	return e.upper(i)
}

// remembered is Upper(i) when e holds it (ok), small enough to be
// inlined; e may be nil.
func (e *Edges) remembered(i int32) (float64, bool) {
	if e == nil {
		return 0, false
	}
	if k := int(i) - int(e.lo); k >= 0 && k < len(e.v) && e.v[k] != 0 {
		return e.v[k], true
	}
	return 0, false
}

// upper is Upper for an edge not remembered yet.
func (e *Edges) upper(i int32) float64 {
	if e == nil || i == Zero || i == math.MaxInt32 {
		return Upper(i)
	}
	k := int64(i) - int64(e.lo)
	if k < 0 || k >= int64(len(e.v)) {
		if !e.cover(i) {
			return Upper(i)
		}
		k = int64(i) - int64(e.lo)
	}
	if x := e.v[k]; x != 0 {
		return x
	}
	x := Upper(i)
	e.v[k] = x
	return x
}

// lower is Lower(i), remembered.
func (e *Edges) lower(i int32) float64 {
	if i == Zero || i == math.MinInt32+1 {
		return 0
	}
	return e.Upper(i - 1)
}

// cover extends the remembered range to take in i, doubling it, when it
// stays within maxEdges; it reports whether i is covered.
func (e *Edges) cover(i int32) bool {
	if len(e.v) == 0 {
		e.lo, e.v = i, make([]float64, 1, 64)
		return true
	}
	lo, hi := min(int64(e.lo), int64(i)), max(int64(e.lo)+int64(len(e.v))-1, int64(i))
	if hi-lo+1 > maxEdges {
		return false
	}
	// grow by at least the current length on the side of i, within bounds
	if int64(i) < int64(e.lo) {
		lo = max(min(lo, int64(e.lo)-int64(len(e.v))), hi-maxEdges+1, int64(math.MinInt32)+1)
	} else {
		hi = min(max(hi, int64(e.lo)+2*int64(len(e.v))-1), lo+maxEdges-1, int64(math.MaxInt32)-1)
	}
	v := make([]float64, hi-lo+1)
	copy(v[int64(e.lo)-lo:], e.v)
	e.lo, e.v = int32(lo), v
	return true
}
