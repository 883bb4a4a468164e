package loglin

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

func TestIndexEdges(t *testing.T) {
	cases := []struct {
		v    float64
		want int32
	}{
		{1, 0},
		{2, 256},
		{0.5, -256},
		{0.25, -512},
		{math.Nextafter(1, 2), 1},
		{math.Nextafter(1, 0), 0},
		{0, Zero},
		{-3, Zero},
	}
	for _, c := range cases {
		got, ok := Index(c.v)
		if !ok || got != c.want {
			t.Errorf("Index(%v) = %d, %v; want %d", c.v, got, ok, c.want)
		}
	}
	if _, ok := Index(math.NaN()); ok {
		t.Error("NaN has a bin")
	}
}

// Every value lies in (Lower, Upper] of its bin, and the bin is at most a
// factor 2^(1/256) wide.
func TestBinContainsValue(t *testing.T) {
	for _, v := range []float64{1e-6, 0.0031, 0.0123, 0.08, 0.080001, 0.999, 1.001, 2.5, 37.2, 1e4} {
		i, _ := Index(v)
		lo, hi := Lower(i), Upper(i)
		if !(lo < v && v <= hi*(1+1e-15)) {
			t.Errorf("%v not in bin %d (%v, %v]", v, i, lo, hi)
		}
		if r := hi / lo; math.Abs(r-math.Exp2(1.0/256)) > 1e-12 {
			t.Errorf("bin %d width ratio %v", i, r)
		}
	}
}

func TestCumulative(t *testing.T) {
	var h Hist
	for _, v := range []float64{0, 0.1, 0.1, 0.2, 1, 1} {
		h.Add(v, 1)
	}
	if h.Add(math.NaN(), 1) {
		t.Error("NaN added")
	}
	c := h.Cumulative()
	if n := len(c.Edges); n == 0 || !math.IsInf(c.Edges[n-1], 1) || c.Counts[n-1] != 6 {
		t.Fatalf("last edge %v", c)
	}
	// counts at edges are exact: ≤ 0 is 1, ≤ upper(bin of 0.1) is 3, ≤ 1 is 6
	at := func(e float64) float64 {
		for k, x := range c.Edges {
			if x == e {
				return c.Counts[k]
			}
		}
		t.Fatalf("edge %v missing from %v", e, c.Edges)
		return 0
	}
	i01, _ := Index(0.1)
	if at(0) != 1 || at(Lower(i01)) != 1 || at(Upper(i01)) != 3 || at(1) != 6 {
		t.Errorf("cumulative %v", c)
	}
	for k := 1; k < len(c.Edges); k++ {
		if c.Edges[k] <= c.Edges[k-1] || c.Counts[k] < c.Counts[k-1] {
			t.Fatalf("not ascending at %d: %v", k, c)
		}
	}
	var o Hist
	o.Add(0.1, 2)
	h.Merge(&o)
	if h.Total() != 8 || h.Count(i01) != 4 || h.Len() != 4 {
		t.Errorf("merge: total %v count %v len %d", h.Total(), h.Count(i01), h.Len())
	}
}

// refHist is the plain map form of Hist, the reference the array form
// must agree with.
type refHist map[int32]float64

func (r refHist) cumulative() ([]float64, []float64) {
	var idx []int32
	for i, w := range r {
		if w != 0 {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	var edges, counts []float64
	push := func(e, c float64) {
		if n := len(edges); n > 0 && edges[n-1] == e {
			counts[n-1] = c
			return
		}
		edges, counts = append(edges, e), append(counts, c)
	}
	cum := 0.0
	for _, i := range idx {
		if i != Zero {
			push(Lower(i), cum)
		}
		cum += r[i]
		push(Upper(i), cum)
	}
	if len(edges) > 0 && !math.IsInf(edges[len(edges)-1], 1) {
		push(math.Inf(1), cum)
	}
	return edges, counts
}

// The array form gives the same bins, totals and cumulative form as a map
// of bins, whatever the spread of the values (outliers far from the bulk,
// zeros, extremes) and however histograms are merged.
func TestHistAgreesWithMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(kind int) float64 {
		switch kind {
		case 0: // a lognormal bulk
			return 0.25 * math.Exp(0.5*rng.NormFloat64())
		case 1: // anything from 1e-9 to 1e6, zeros and extremes
			switch rng.IntN(12) {
			case 0:
				return 0
			case 1:
				return math.Inf(1)
			case 2:
				return math.SmallestNonzeroFloat64
			case 3:
				return math.MaxFloat64
			}
			return math.Pow(10, -9+15*rng.Float64())
		default: // a bulk with rare far outliers
			if rng.IntN(50) == 0 {
				return math.Pow(10, -6+10*rng.Float64())
			}
			return 0.03 * math.Exp(0.3*rng.NormFloat64())
		}
	}
	weight := func(trial int) float64 {
		switch trial % 4 {
		case 1: // counts past 16 bits
			return float64(rng.IntN(70000))
		case 2: // fractions (dyadic: every order of summing is exact)
			return float64(rng.IntN(8)) / 4
		}
		return float64(1 + rng.IntN(3))
	}
	var prev Hist
	for trial := range 400 {
		kind := trial % 3
		n := rng.IntN(3000)
		// r takes every value into an array reserved like the previous
		// trial's histogram (another distribution, often)
		var h, o, r Hist
		r.ReserveLike(&prev)
		ref := refHist{}
		for k := range n {
			v, w := draw(kind), weight(trial/3)
			if k%2 == 0 {
				h.Add(v, w)
			} else {
				o.Add(v, w)
			}
			r.Add(v, w)
			i, _ := Index(v)
			ref[i] += w
		}
		h.Merge(&o)
		got := h.Cumulative()
		we, wc := ref.cumulative()
		if !slices.Equal(got.Edges, we) || !slices.Equal(got.Counts, wc) {
			t.Fatalf("trial %d (kind %d, %d values): cumulative differs:\n got %v %v\nwant %v %v", trial, kind, n, got.Edges, got.Counts, we, wc)
		}
		if rc := r.Cumulative(); !slices.Equal(rc.Edges, we) || !slices.Equal(rc.Counts, wc) || r.Len() != h.Len() {
			t.Fatalf("trial %d: reserved like the last trial's, cumulative differs:\n got %v %v\nwant %v %v", trial, rc.Edges, rc.Counts, we, wc)
		}
		prev = h
		if len(we) > 0 && !got.Sparse {
			t.Fatalf("trial %d: not marked sparse", trial)
		}
		want := 0
		for i, w := range ref {
			if h.Count(i) != w {
				t.Fatalf("trial %d: bin %d holds %v, want %v", trial, i, h.Count(i), w)
			}
			if w != 0 {
				want++
			}
		}
		if h.Len() != want || len(h.Indexes()) != want {
			t.Fatalf("trial %d: %d bins (%d indexes), want %d", trial, h.Len(), len(h.Indexes()), want)
		}
		// the array never holds more than its bound relative to its bins
		// (a bin may be counted twice: in the array and, for its excess
		// or fractions, in the map)
		if limit := max(minDense, denseSlack*(2*want+1)); len(h.dense) > limit {
			t.Fatalf("trial %d: array of %d bins for %d non-empty bins (bound %d)", trial, len(h.dense), want, limit)
		}
	}
}

// TestOctaveIndexIsLog2: the bin Index gives without a logarithm is the
// bin ⌈log2(v)·256⌉ computed with math.Log2, for every float64 tried: the
// 256 edges of every octave from 2^-1022 to 2^1023 (2^(k/256) as
// math.Exp2 gives it, exact powers of two included) and their three
// float64 neighbours either side, values 10^-9 and 10^-12 (relative) off
// the edges, subnormals, the extremes, microsecond-rounded latencies and
// random bit patterns. The table path must also take nearly all the
// latencies (it is the point of it).
func TestOctaveIndexIsLog2(t *testing.T) {
	ref := func(v float64) int32 {
		x := math.Ceil(math.Log2(v) * PerOctave)
		switch {
		case x >= math.MaxInt32:
			return math.MaxInt32
		case x <= math.MinInt32+1:
			return math.MinInt32 + 1
		}
		return int32(x)
	}
	checked := 0
	check := func(v float64) {
		if !(v > 0) || math.IsInf(v, 1) {
			return
		}
		checked++
		got, ok := Index(v)
		if want := ref(v); !ok || got != want {
			t.Fatalf("Index(%v) (bits %#x) = %d, want ⌈log2·256⌉ = %d", v, math.Float64bits(v), got, want)
		}
	}
	for k := -1022 * PerOctave; k <= 1023*PerOctave; k++ {
		e := math.Exp2(float64(k) / PerOctave)
		check(e)
		check(e * (1 + 1e-9))
		check(e * (1 - 1e-9))
		check(e * (1 + 1e-12))
		check(e * (1 - 1e-12))
		lo, hi := e, e
		for range 3 {
			lo, hi = math.Nextafter(lo, 0), math.Nextafter(hi, math.Inf(1))
			check(lo)
			check(hi)
		}
	}
	for _, v := range []float64{math.SmallestNonzeroFloat64, 1e-310, 2.2250738585072014e-308, math.MaxFloat64, 0.5, 1, 2, 1024} {
		check(v)
		check(math.Nextafter(v, 0))
		check(math.Nextafter(v, math.Inf(1)))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	fast := 0
	const n = 1_000_000
	for range n {
		v := math.Round(rng.ExpFloat64()*1e6) / 1e6
		check(v)
		if _, ok := octaveIndex(v); ok {
			fast++
		}
		check(math.Float64frombits(rng.Uint64() >> 1))
	}
	if fast < n*99/100 {
		t.Fatalf("the table path took %d of %d latencies", fast, n)
	}
	t.Logf("%d values; the table path took %d of %d latencies", checked, fast, n)
}

// BenchmarkIndex bins microsecond-rounded latencies around 250 ms.
func BenchmarkIndex(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	vs := make([]float64, 4096)
	for i := range vs {
		vs[i] = math.Round(0.25*math.Exp(0.5*rng.NormFloat64())*1e6) / 1e6
	}
	var sum int64
	for i := 0; b.Loop(); i++ {
		x, _ := Index(vs[i%len(vs)])
		sum += int64(x)
	}
	if sum == 0 {
		b.Fatal("no bins")
	}
}

// TestCumulativeWithEdges: histograms built with one shared Edges are
// Cumulative's, bit for bit, whether their bins lie inside the remembered
// range, extend it either way, or lie too far out for it (the zero bin,
// +Inf and bins 2^20 apart included).
func TestCumulativeWithEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	var e Edges
	for trial := range 200 {
		var h Hist
		centre := 0.3 * math.Exp(3*rng.NormFloat64())
		for range 1 + rng.IntN(300) {
			h.Add(centre*math.Exp(0.5*rng.NormFloat64()), 1)
		}
		switch trial % 10 {
		case 0:
			h.Add(0, 1)
		case 1:
			h.Add(math.Inf(1), 2)
		case 2:
			h.AddBin(1<<20, 1)
			h.AddBin(-1<<20, 3)
		case 3:
			h.AddBin(math.MinInt32+1, 1)
		}
		want, got := h.Cumulative(), h.CumulativeWith(&e)
		if want.Sparse != got.Sparse || !slices.Equal(want.Counts, got.Counts) || len(want.Edges) != len(got.Edges) {
			t.Fatalf("trial %d: CumulativeWith %+v, Cumulative %+v", trial, got, want)
		}
		for i := range want.Edges {
			if math.Float64bits(want.Edges[i]) != math.Float64bits(got.Edges[i]) {
				t.Fatalf("trial %d: edge %d is %v, Cumulative's %v", trial, i, got.Edges[i], want.Edges[i])
			}
		}
	}
	if len(e.v) == 0 || len(e.v) > maxEdges {
		t.Fatalf("remembered %d edges", len(e.v))
	}
}

// TestCumulativeBinsIsEach: CumulativeWith gives cumulativeEach's edges
// and counts bit for bit, with and without remembered edges, for
// histograms of one to a few hundred values with and without map bins,
// the zero bin, +Inf, the lowest ordinary bin and fractional weights
// included.
func TestCumulativeBinsIsEach(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	var e Edges
	withMap := 0
	for trial := range 400 {
		var h Hist
		centre := 0.3 * math.Exp(3*rng.NormFloat64())
		spread := 0.5
		if trial%2 == 1 {
			spread = 0.05 // within the array's reach
		}
		for range 1 + rng.IntN(300) {
			h.Add(centre*math.Exp(spread*rng.NormFloat64()), 1)
		}
		switch trial % 8 {
		case 0:
			h.Add(0, 1)
		case 1:
			h.Add(math.Inf(1), 2)
		case 2:
			h.AddBin(math.MinInt32+1, 1)
		case 3:
			h.Add(0, 3)
			h.AddBin(h.lo, 1) // the array's first bin
		case 4:
			h.Add(centre, 0.25) // a fractional weight: a map bin
			h.AddBin(h.lo+3, 0.5)
		case 5:
			h.AddBin(1<<20, 1)
			h.AddBin(-1<<20, 3)
		}
		if len(h.far) != 0 {
			withMap++
		}
		for _, ep := range []*Edges{nil, &e} {
			want, got := h.cumulativeEach(ep), h.CumulativeWith(ep)
			if want.Sparse != got.Sparse || !slices.Equal(want.Counts, got.Counts) || len(want.Edges) != len(got.Edges) ||
				cap(want.Edges) != cap(got.Edges) {
				t.Fatalf("trial %d: CumulativeWith %+v, each %+v", trial, got, want)
			}
			for i := range want.Edges {
				if math.Float64bits(want.Edges[i]) != math.Float64bits(got.Edges[i]) {
					t.Fatalf("trial %d: edge %d is %v, each's %v", trial, i, got.Edges[i], want.Edges[i])
				}
			}
		}
	}
	if withMap < 100 || withMap > 300 {
		t.Fatalf("%d of 400 histograms had map bins, want both kinds", withMap)
	}
	var h Hist
	if c := h.CumulativeWith(&e); c.Edges != nil || c.Counts != nil || c.Sparse {
		t.Fatalf("empty histogram: %+v", c)
	}
}

// cumulativeEach is CumulativeWith as it was before appendBins: the
// bins read through each, twice. The reference for TestCumulativeBinsIsEach.
func (h *Hist) cumulativeEach(e *Edges) sources.Histogram {
	// an upper bound of the edges, so the slices are allocated once: one
	// per bin whose lower edge is its neighbour's upper, two for others,
	// and +Inf
	n, last := 0, int32(0)
	h.each(func(i int32, _ float64) {
		if i == Zero || (n > 0 && last == i-1) {
			n++
		} else {
			n += 2
		}
		last = i
	})
	if n == 0 {
		return sources.Histogram{}
	}
	out := sources.Histogram{Sparse: true, Edges: make([]float64, 0, n+1), Counts: make([]float64, 0, n+1)}
	push := func(edge, cum float64) {
		if k := len(out.Edges); k > 0 && out.Edges[k-1] == edge {
			out.Counts[k-1] = cum
			return
		}
		out.Edges = append(out.Edges, edge)
		out.Counts = append(out.Counts, cum)
	}
	cum, upper, prev := 0.0, 0.0, false
	h.each(func(i int32, w float64) {
		if i != Zero {
			if prev && last == i-1 {
				push(upper, cum) // Lower(i) is the previous bin's upper edge
			} else {
				push(e.lower(i), cum)
			}
		}
		cum += w
		upper = e.Upper(i)
		push(upper, cum)
		last, prev = i, true
	})
	if !math.IsInf(out.Edges[len(out.Edges)-1], 1) {
		push(math.Inf(1), cum)
	}
	return out
}

// Rank finds the bin of the k-th smallest value, as sorting the values
// and binning the k-th does, through the zero bin, the array, the map
// (values far apart) and fractional weights summed past k.
func TestRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		var h Hist
		var xs []float64
		for n := 1 + rng.IntN(60); n > 0; n-- {
			v := math.Exp2(rng.Float64()*40 - 20)
			if rng.IntN(15) == 0 {
				v = 0
			}
			xs = append(xs, v)
			h.Add(v, 1)
		}
		slices.Sort(xs)
		for k := 1; k <= len(xs); k++ {
			want, _ := Index(xs[k-1])
			if got, ok := h.Rank(float64(k)); !ok || got != want {
				t.Fatalf("trial %d: rank %d of %v: bin %d (%v), want %d", trial, k, xs, got, ok, want)
			}
		}
		if _, ok := h.Rank(0); ok {
			t.Fatal("rank 0 found")
		}
		if _, ok := h.Rank(float64(len(xs) + 1)); ok {
			t.Fatal("a rank past the total found")
		}
	}
	var h Hist
	h.AddBin(10, 0.5)
	h.AddBin(20, 0.75)
	if i, ok := h.Rank(1); !ok || i != 20 {
		t.Errorf("fractional weights: rank 1 in bin %d (%v), want 20", i, ok)
	}
}

// TestTailBin: the p99 of replicas' values pooled, each replica's values
// beyond it per slice, and the log quantile's slope there: values e^(i/200)
// for i = 1…1000 spread over two replicas and three slices have their
// p99 at the 990th (e^4.95), ten beyond it, and d log Q/dp = 1000/200 = 5
// (within the coarse bins' 1.1%, read over ten ranks); fewer values than
// a p99 needs give none.
func TestTailBin(t *testing.T) {
	m := ReplicaMedians{}
	where := func(i int) (string, int64) { return []string{"a", "b"}[i%2], int64(i % 3) }
	for i := 1; i <= 1000; i++ {
		name, slice := where(i)
		bin, _ := Index(math.Exp(float64(i) / 200))
		m.Hist(name, slice).AddBin(Coarse(bin), 1)
	}
	c, edge, slope, ok := m.TailBin(0.99)
	if !ok {
		t.Fatal("no tail bin")
	}
	if q := math.Exp(990.0 / 200); !(edge >= q && edge <= q*math.Exp2(4.0/256)) {
		t.Errorf("edge %g, want the coarse bin's upper edge above %g", edge, q)
	}
	if math.Abs(slope-5) > 1.25 {
		t.Errorf("slope %g, want 5 within the bins' resolution", slope)
	}
	var known, over float64
	want := map[[2]int64]float64{}
	for i := 1; i <= 1000; i++ {
		if v := math.Exp(float64(i) / 200); v > edge {
			name, slice := where(i)
			want[[2]int64{int64(name[0]), slice}]++
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		for slice := int64(0); slice < 3; slice++ {
			k, o := m.Beyond(name, slice, c)
			known, over = known+k, over+o
			if w := want[[2]int64{int64(name[0]), slice}]; o != w {
				t.Errorf("replica %s slice %d: %g beyond, want %g", name, slice, o, w)
			}
		}
	}
	if known != 1000 || over < 8 || over > 10 {
		t.Errorf("%g known, %g beyond the p99, want 1000 and about 10", known, over)
	}
	small := ReplicaMedians{}
	for i := 1; i <= 99; i++ {
		bin, _ := Index(float64(i))
		small.Hist("a", 0).AddBin(Coarse(bin), 1)
	}
	if _, _, _, ok := small.TailBin(0.99); ok {
		t.Error("a tail bin from 99 values")
	}
}

// BenchmarkCumulativeWith turns histograms shaped like an aggregate's
// cells (a few hundred latencies spread over a few octaves) into their
// cumulative form with shared edges, as Aggregator.Aggregate does. ns/op
// is per histogram.
func BenchmarkCumulativeWith(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	hs := make([]Hist, 1000)
	for k := range hs {
		centre := 0.05 * math.Exp(2*rng.NormFloat64())
		for range 50 + rng.IntN(400) {
			hs[k].Add(centre*math.Exp(0.6*rng.NormFloat64()), 1)
		}
	}
	var e Edges
	b.ResetTimer()
	for i := range b.N {
		_ = hs[i%len(hs)].CumulativeWith(&e)
	}
}

// TestTryIncIsAddBin: counting values one at a time with TryInc, falling
// back to AddBin(i, 1) when it declines, gives the same bins as AddBin
// alone, for a Hist and a SliceBins: the zero bin, bins far outside the
// array and a bin counted past 16 bits included.
func TestTryIncIsAddBin(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	var h, want Hist
	var s, wantS SliceBins
	add := func(i int32) {
		if !h.TryInc(i) {
			h.AddBin(i, 1)
		}
		want.AddBin(i, 1)
		if c := Coarse(i); !s.TryInc(c) {
			s.AddBin(c, 1)
		}
		wantS.AddBin(Coarse(i), 1)
	}
	for k := range 200000 {
		switch {
		case k%1000 == 0:
			add(Zero)
		case k%997 == 0:
			add(int32(rng.IntN(1<<20)) - 1<<19)
		case k < 70000:
			add(-300) // past 16 bits
		default:
			i, _ := Index(0.25 * math.Exp(0.5*rng.NormFloat64()))
			add(i)
		}
	}
	if got, w := h.Cumulative(), want.Cumulative(); !slices.Equal(got.Edges, w.Edges) || !slices.Equal(got.Counts, w.Counts) {
		t.Fatalf("Hist: TryInc and AddBin differ")
	}
	if h.Count(-300) != want.Count(-300) || h.Count(-300) <= math.MaxUint16 {
		t.Fatalf("bin -300 holds %v, want %v (past 16 bits)", h.Count(-300), want.Count(-300))
	}
	var got, w []bin
	if got, w = s.appendBins(nil), wantS.appendBins(nil); !slices.Equal(got, w) {
		t.Fatalf("SliceBins: TryInc and AddBin differ")
	}
}
