package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// persistenceWidened widens est about its point for a declared
// window.persistence (stats.PersistenceWideningOf its method on a run of
// buckets buckets of bucketSecs seconds each, at confidence conf), its method
// gaining "+persistence" and adjusted a line saying by how much; est is
// returned unchanged when the policy declares none, the factor is 1 or est
// has no interval. Both judging paths call it last, after every other
// widening, on each gate's estimate.
func persistenceWidened(est stats.Estimate, w policies.WindowSpec, buckets int, bucketSecs, conf float64, adjusted *[]string) stats.Estimate {
	tau := time.Duration(w.Persistence)
	if tau <= 0 || math.IsNaN(est.Point) || math.IsNaN(est.CI.Lo) || math.IsNaN(est.CI.Hi) {
		return est
	}
	phi := declaredPhi(w, bucketSecs)
	f := stats.PersistenceWideningOf(est.Method, buckets, phi, conf)
	if !(f > 1) {
		return est
	}
	est.CI.Lo = est.Point - (est.Point-est.CI.Lo)*f
	est.CI.Hi = est.Point + (est.CI.Hi-est.Point)*f
	est.SE *= f
	est.Method += "+persistence"
	*adjusted = append(*adjusted, fmt.Sprintf("widened for declared persistence: the policy says the fleet's own slowdowns last %v (φ %.3f per %gs bucket), which %d buckets' batch sums cannot see: the interval is %.0f%% wider",
		tau, phi, bucketSecs, buckets, 100*(f-1)))
	return est
}

// persistenceWidenedBoth is persistenceWidened on both ends of a gate read
// within bounds (the pessimistic and optimistic estimates), alike, its
// adjusted line said once.
func persistenceWidenedBoth(pess, opt stats.Estimate, w policies.WindowSpec, buckets int, bucketSecs, conf float64, adjusted *[]string) (stats.Estimate, stats.Estimate) {
	return persistenceWidened(pess, w, buckets, bucketSecs, conf, adjusted), persistenceWidened(opt, w, buckets, bucketSecs, conf, new([]string))
}

// persistenceShrink is, under a declared window.persistence, by how much
// the widening of a run of buckets buckets (of bucketSecs seconds, at the
// gates' two-sided level 2·confidence − 1) shrinks when the run is k times
// as long, for a gate whose estimate method names: given method and
// buckets, a function of k, PersistenceWideningOf at k·buckets over it at
// buckets (computed once), at most 1; nil when none is declared. More
// data projects its minutes with it (moreDataFor): a longer run holds
// more of the slowdowns.
func persistenceShrink(p *policies.Policy, bucketSecs float64) func(method string, buckets int) func(k float64) float64 {
	if p.Window.Persistence <= 0 {
		return nil
	}
	phi, conf := declaredPhi(p.Window, bucketSecs), 2*p.Confidence-1
	return func(method string, buckets int) func(k float64) float64 {
		f0 := stats.PersistenceWideningOf(method, buckets, phi, conf)
		return func(k float64) float64 {
			return math.Min(1, stats.PersistenceWideningOf(method, int(math.Round(k*float64(buckets))), phi, conf)/f0)
		}
	}
}

// declaredPhi is the per-bucket AR(1) coefficient of w's declared
// persistence on buckets of secs seconds (0 when none is declared).
func declaredPhi(w policies.WindowSpec, secs float64) float64 {
	return stats.PersistencePhi(secs, time.Duration(w.Persistence).Seconds())
}

// trendFloor is the trend check's inflation floor for the segments segs
// of buckets of bucketSecs seconds under a declared window.persistence
// (stats.SegmentInflationAt); 1 when none is declared.
func trendFloor(w policies.WindowSpec, segs [][2]int, bucketSecs float64) float64 {
	return stats.SegmentInflationAt(segs, declaredPhi(w, bucketSecs))
}

// HistoryPersistence is what a long history says about the policy's
// window.persistence: stats.FitPersistence on SLO attainment per bucket of
// two halves — the two arms of an A/A history (identical builds side by
// side, as the judge pairs them), or else one arm's replicas split in two
// when it names two or more (what they share, the load of the hour and any
// slowdown every replica of the arm has at once, cancels: only what
// differs between replicas is read), or else the one arm alone (its own
// load cycle then counts as persistence: an upper bound).
type HistoryPersistence struct {
	stats.PersistenceFit
	// Source says which of the three the halves were: "arms",
	// "replicas" or "arm".
	Source string
	// Replicas is how many replica names one arm's history holds (0: none
	// or an A/A pair).
	Replicas int
	// Requests is how many records were read; Span the seconds from the
	// first arrival's bucket to the last's; BucketSecs the bucket.
	Requests         int
	Span, BucketSecs float64
	// Tau, TauLo and TauHi are the correlation times (seconds) −bucket/ln φ
	// of Phi, PhiLo and PhiHi; 0 where φ is 0.
	Tau, TauLo, TauHi float64
}

// HistoryCounter counts a history for PersistenceOfHistory one record at
// a time and keeps no record: good and offered requests per arm, replica
// and bucket of the policy's width, so its memory follows the history's
// length and replicas, not its requests (a day of 10 s buckets on eight
// replicas is about 70,000 cells). Add records of the history (arm 0) and,
// for an A/A pair, of its other arm (arm 1), then Fit.
type HistoryCounter struct {
	secs     float64
	good     func(*sources.Request) bool
	replicas map[string]int32 // arm 0's replica names, by first sight
	cells    map[historyCell]*[2]float64
	requests [2]int
	untimed  [2]int
	lo, hi   int64
}

type historyCell struct {
	arm     uint8
	replica int32
	bucket  int64
}

// NewHistoryCounter counts at p's bucket, good requests by p's SLO.
func NewHistoryCounter(p *policies.Policy) *HistoryCounter {
	return &HistoryCounter{secs: p.Window.Bucket.Seconds(), good: GoodFunc(p), replicas: map[string]int32{},
		cells: map[historyCell]*[2]float64{}, lo: math.MaxInt64, hi: math.MinInt64}
}

// Add counts r for arm 0 (the history, or an A/A pair's baseline) or 1 (the
// pair's other arm).
func (h *HistoryCounter) Add(arm int, r *sources.Request) {
	if math.IsNaN(r.Time) || math.IsInf(r.Time, 0) {
		a := min(max(arm, 0), 1)
		h.requests[a]++
		h.untimed[a]++
		return
	}
	good := 0.0
	if h.good(r) {
		good = 1
	}
	h.AddCounts(arm, r.Replica, int64(math.Floor(r.Time/h.secs)), good, 1)
}

// AddCounts counts, for arm 0 or 1 (as Add), offered requests of which
// good were good, all served by replica (its name; "" for none) and
// arrived in bucket number slice (floor(arrival / the policy's bucket)),
// as a store that counts per bucket returns them
// (clickhouse.Source.ReadCounts); Add counts a record through it.
func (h *HistoryCounter) AddCounts(arm int, replica string, slice int64, good, offered float64) {
	if !(offered > 0) {
		return
	}
	a := uint8(min(max(arm, 0), 1))
	h.requests[a] += int(offered)
	h.lo, h.hi = min(h.lo, slice), max(h.hi, slice)
	c := h.cell(a, replica, slice)
	c[0] += good
	c[1] += offered
}

// cell is arm a's cell of bucket t, for arm 0 of its replica (arm 1's
// replicas are not told apart: only an A/A pair reads it).
func (h *HistoryCounter) cell(a uint8, replica string, t int64) *[2]float64 {
	var rep int32
	if a == 0 {
		var ok bool
		if rep, ok = h.replicas[replica]; !ok {
			rep = int32(len(h.replicas))
			h.replicas[replica] = rep
		}
	}
	k := historyCell{arm: a, replica: rep, bucket: t}
	c := h.cells[k]
	if c == nil {
		c = new([2]float64)
		h.cells[k] = c
	}
	return c
}

// PersistenceOfHistory fits the persistence of the history a (and b, the
// other arm of an A/A history on the same clock, or nil) on windows as
// long as window (the runs to be judged), at the policy's bucket, good
// requests by the policy's SLO (GoodFunc), its interval at the policy's
// two-sided level (2·confidence − 1); HistoryCounter.Fit on the records.
func PersistenceOfHistory(a, b *sources.Dataset, p *policies.Policy, window time.Duration) (HistoryPersistence, error) {
	h := NewHistoryCounter(p)
	for arm, ds := range []*sources.Dataset{a, b} {
		if ds == nil {
			continue
		}
		for i := range ds.Requests {
			h.Add(arm, &ds.Requests[i])
		}
	}
	names := [2]string{historyName(a), ""}
	if b != nil {
		names[1] = historyName(b)
	}
	return h.Fit(p, window, b != nil, names)
}

// historyName names a dataset's files for an error message.
func historyName(ds *sources.Dataset) string {
	if len(ds.Inputs) == 0 {
		return "the history"
	}
	paths := make([]string, len(ds.Inputs))
	for i, in := range ds.Inputs {
		paths[i] = in.Path
	}
	return strings.Join(paths, ", ")
}

// Fit fits what was counted: the two arms when pair is true, else arm 0's
// replicas split in two halves (sorted by name, alternately) when it names
// two or more, else arm 0 alone. names name each arm's files for errors.
// An error names what is missing: records without arrival times, no
// records, or a history shorter than eight windows.
func (h *HistoryCounter) Fit(p *policies.Policy, window time.Duration, pair bool, names [2]string) (HistoryPersistence, error) {
	secs := h.secs
	out := HistoryPersistence{BucketSecs: secs, Source: "arms", Requests: h.requests[0] + h.requests[1]}
	wb := int(math.Round(window.Seconds() / secs))
	if wb < 8 {
		return out, fmt.Errorf("--window %v is under 8 buckets of %gs: give the length of the runs to be judged, e.g. 30m", window, secs)
	}
	arms := 1
	if pair {
		arms = 2
	}
	for a := range arms {
		if h.requests[a] == 0 {
			return out, fmt.Errorf("%s: no records", names[a])
		}
		if h.untimed[a] > 0 {
			return out, fmt.Errorf("%s: %d of %d records have no arrival time: the persistence is read over time, so every record needs one (ts)", names[a], h.untimed[a], h.requests[a])
		}
	}
	n := int(h.hi-h.lo) + 1
	out.Span = float64(n) * secs
	if n/wb < 8 {
		return out, fmt.Errorf("%s: %s of history holds %s of %v; the fit needs at least 8 (%s): give a longer history",
			names[0], fmtSpan(out.Span), plural(n/wb, "window", "windows"), window, fmtSpan(8*window.Seconds()))
	}
	// which half each of arm 0's replicas counts in
	half := make([]int, len(h.replicas))
	if !pair {
		out.Replicas = len(h.replicas)
		if _, unnamed := h.replicas[""]; unnamed {
			out.Replicas--
		}
		out.Source = "arm"
		if out.Replicas >= 2 {
			out.Source = "replicas"
			for i, k := range slices.Sorted(maps.Keys(h.replicas)) {
				// records without a replica name among named ones count
				// as one more replica
				half[h.replicas[k]] = i % 2
			}
		}
	}
	mk := func() stats.Ratio { return stats.Ratio{Num: make([]float64, n), Den: make([]float64, n)} }
	halves := [2]stats.Ratio{mk(), mk()}
	for k, c := range h.cells {
		x := int(k.arm)
		if !pair {
			x = half[k.replica]
		}
		t := int(k.bucket - h.lo)
		halves[x].Num[t] += c[0]
		halves[x].Den[t] += c[1]
	}
	if pair && slices.Equal(halves[0].Num, halves[1].Num) && slices.Equal(halves[0].Den, halves[1].Den) {
		return out, fmt.Errorf("%s and %s count the same good and offered requests in every bucket: an A/A history needs each arm's own records (do both select the same rows?)", names[0], names[1])
	}
	y := halves[1]
	if out.Source == "arm" {
		y = stats.Ratio{}
	}
	fit, ok := stats.FitPersistence(halves[0], y, wb, 2*p.Confidence-1)
	out.PersistenceFit = fit
	if !ok {
		return out, fmt.Errorf("%s: the persistence could not be fitted: a window of %v holds no request in one of the halves compared", names[0], window)
	}
	out.Tau, out.TauLo, out.TauHi = stats.PersistenceTau(secs, fit.Phi), stats.PersistenceTau(secs, fit.PhiLo), stats.PersistenceTau(secs, fit.PhiHi)
	return out, nil
}

// persistenceStep is the report's "persistence" normalization step: what a
// declared window.persistence did to a run of buckets buckets of
// bucketSecs seconds whose gates' intervals are at two-sided level conf;
// false when none is declared. Both judging paths add it.
func persistenceStep(w policies.WindowSpec, buckets int, bucketSecs, conf float64) (NormalizationStep, bool) {
	tau := time.Duration(w.Persistence)
	if tau <= 0 {
		return NormalizationStep{}, false
	}
	phi := declaredPhi(w, bucketSecs)
	f := stats.PersistenceWidening(buckets, phi, conf)
	st := NormalizationStep{Name: "persistence", Setting: tau.String(), Applied: f > 1}
	widened := fmt.Sprintf("every gate's interval widened ×%.2f for what %d buckets' batch sums cannot see (a gate of arms read apart a little more)", f, buckets)
	if !(f > 1) {
		widened = fmt.Sprintf("over %d buckets slowdowns that short need no wider intervals", buckets)
	}
	st.Detail = fmt.Sprintf("the policy says the fleet's own slowdowns last %v (φ %.3f per %gs bucket): %s; the trend check's factor floored at what such slowdowns call for; a stretch of lost good requests no longer than %v, and no deeper than such a slowdown can go on this run's spread, is held inconclusive, not failed, as one of them may cover it",
		tau, phi, bucketSecs, widened, 2*tau)
	return st, true
}

// Merge adds what o counted (at the same bucket and SLO) to h, o's replicas
// matched to h's by name.
func (h *HistoryCounter) Merge(o *HistoryCounter) {
	names := make([]string, len(o.replicas))
	for name, i := range o.replicas {
		names[i] = name
	}
	for k, c := range o.cells {
		name := ""
		if k.arm == 0 {
			name = names[k.replica]
		}
		d := h.cell(k.arm, name, k.bucket)
		d[0], d[1] = d[0]+c[0], d[1]+c[1]
	}
	for a := range 2 {
		h.requests[a] += o.requests[a]
		h.untimed[a] += o.untimed[a]
	}
	h.lo, h.hi = min(h.lo, o.lo), max(h.hi, o.hi)
}
