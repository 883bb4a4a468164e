package analysis

import (
	"cmp"
	"fmt"
	"gonum.org/v1/gonum/stat"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/sources"
)

// fmtTime renders a window bound: RFC 3339 (UTC, ms) for epoch clocks,
// decimal seconds on the input's own clock otherwise.
func fmtTime(c sources.Clock, t float64) string {
	if math.IsNaN(t) {
		return ""
	}
	if c == sources.ClockEpoch {
		sec, frac := math.Modf(t)
		return time.Unix(int64(sec), int64(math.Round(frac*1e3))*1e6).UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return strconv.FormatFloat(t, 'f', 3, 64)
}

// quantile is the Hyndman-Fan type 1 quantile (the inverted empirical CDF:
// the smallest sample with at least ⌈q·n⌉ samples at or below it) of sorted
// xs, 0 ≤ q ≤ 1; NaN if empty. It is the definition the bootstrap of the
// quantile gates uses, so a gate's values and its delta agree. A rank
// tolerance of 1e-9 keeps q·n = 57.000000000000007 at rank 57.
func quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(q*float64(n) - 1e-9))
	k = min(max(k, 1), n)
	return sorted[k-1]
}

func quantiles(sorted []float64) Quantiles {
	return Quantiles{N: int64(len(sorted)), Mean: Num(stat.Mean(sorted, nil)), P50: Num(quantile(sorted, 0.5)),
		P90: Num(quantile(sorted, 0.9)), P95: Num(quantile(sorted, 0.95)), P99: Num(quantile(sorted, 0.99))}
}

// sortPooled sorts both arms' pooled latencies, one arm per goroutine,
// before anything reads them side by side: pooled fills its cache on
// first use, which concurrent readers must not race on. Every report
// reads all three (the diagnostics do), so nothing is sorted in vain.
func sortPooled(b, c *armData) {
	arms := [2]*armData{b, c}
	eachSideBySide(len(arms), func(k int) {
		for _, l := range []string{"ttft", "tpot", "e2e"} {
			arms[k].pooled(l)
		}
	})
}

// pooled returns the sorted latency samples of the analysed buckets,
// computed once per latency. Callers must not modify the slice; once
// sortPooled ran, calls are safe from several goroutines.
func (a *armData) pooled(which string) []float64 {
	if out, ok := a.sorted[which]; ok {
		return out
	}
	n := 0
	kept := a.kept()
	for i := range kept {
		n += len(samplesOf(&kept[i], which))
	}
	out := make([]float64, 0, n)
	for i := range kept {
		out = append(out, samplesOf(&kept[i], which)...)
	}
	stats.SortFloat64s(out)
	if a.sorted == nil {
		a.sorted = map[string][]float64{}
	}
	a.sorted[which] = out
	return out
}

func samplesOf(b *bucket, which string) []float64 {
	switch which {
	case "ttft":
		return b.ttft
	case "tpot":
		return b.tpot
	case "e2e":
		return b.e2e
	}
	return nil
}

// totals sums the analysed buckets.
func (a *armData) totals() bucket {
	var t bucket
	for _, b := range a.kept() {
		t.offered += b.offered
		t.good += b.good
		t.completed += b.completed
		t.failed += b.failed
		t.rejected += b.rejected
		t.canceled += b.canceled
		t.retries += b.retries
		t.goodTokens += b.goodTokens
		t.outTokens += b.outTokens
		t.outUnknown += b.outUnknown
		t.outMax = max(t.outMax, b.outMax)
		t.replicaSecs += b.replicaSecs
	}
	return t
}

// accountingOf is a bucket's (or a sum of buckets') request accounting.
func accountingOf(t bucket) Accounting {
	acc := Accounting{Offered: int64(t.offered), Rejected: int64(t.rejected), Canceled: int64(t.canceled),
		Failed: int64(t.failed), Completed: int64(t.completed), Good: int64(t.good), Retries: int64(t.retries)}
	acc.Admitted = acc.Offered - acc.Rejected
	return acc
}

// leftOutOf is the arm's left_out summary, nil when nothing was left out.
func leftOutOf(a *armData) *LeftOut {
	if len(a.leftOut) == 0 {
		return nil
	}
	var secs float64
	for _, b := range a.kept() {
		if b.leftOut {
			secs += b.secs
		}
	}
	return &LeftOut{Seconds: Num(secs), Accounting: accountingOf(a.leftOutTotals)}
}

// armSummary is an arm's line of the report from its records;
// retriesUnreported (neither arm gives attempt) leaves its retry
// amplification unknown.
func armSummary(a *armData, retriesUnreported bool) ArmSummary {
	t := a.totals()
	acc := accountingOf(t)
	secs := a.windowSecs
	s := ArmSummary{
		Accounting:        acc,
		SLOAttainment:     Num(t.good / t.offered),
		GoodputRPS:        Num(t.good / secs),
		TokenGoodputTPS:   Num(t.goodTokens / secs),
		ThroughputRPS:     Num(t.completed / secs),
		OutputTokensPS:    Num(t.outTokens / secs),
		WindowSeconds:     Num(secs),
		WarmupCutSeconds:  Num(a.cutSecs),
		Replicas:          a.replicas,
		ReplicaSeconds:    Num(math.NaN()),
		GoodputPerReplica: Num(math.NaN()),
		CacheHitRate:      Num(cacheHitRate(a)),
		GPUUtilization:    Num(math.NaN()),
	}
	first := t.offered - t.retries
	s.RetryAmplification = Num(t.offered / first)
	if retriesUnreported {
		s.RetryAmplification = Num(math.NaN()) // retries not reported
	}
	if a.replicasKnown && !a.pseudo {
		s.ReplicaSeconds = Num(t.replicaSecs)
		s.GoodputPerReplica = Num(t.good / t.replicaSecs)
	}
	s.Cost, s.CostPerGoodRequest = costSummary(a, t.good, t.goodTokens)
	if a.pseudo {
		s.Window = Window{Seconds: Num(secs)}
	} else {
		s.Window = makeWindow(a.clock, a.windowStart, a.windowEnd)
	}
	s.Latency = Latency{TTFT: quantiles(a.pooled("ttft")), TPOT: quantiles(a.pooled("tpot")), E2E: quantiles(a.pooled("e2e"))}
	s.LeftOut = leftOutOf(a)
	return s
}

// CacheShiftPP is how far apart (in percentage points) the arms'
// prefix-cache hit rates over the later half of the run must be before
// the cache counts as moved by the change: closer than that, stratifying
// by hit band only narrows the intervals (the estimand is the same);
// farther, normalize.cache auto does not stratify, and an explicit
// stratify or adjust warns the mediator caveat. The later half, so that a
// canary whose cache merely starts cold and fills (a difference at the
// start that is gone by mid-run) does not count as moved.
const CacheShiftPP = 2

// cacheMovedReason returns the cache step's reason when normalize.cache
// auto leaves the bands out because the hit rates moved (hb and hc: the
// baseline's and the canary's over the later half of the run). A change
// to KV eviction, batch scheduling or prefix routing moves the hit rate,
// and the latency it costs is part of its effect: strata by hit band would
// compare the arms at equal cache state and explain that regression away.
// Cache state the change cannot alter is a design matter (a canary on a
// smaller share of traffic), or the warm-up's (a cold start), and
// normalize.cache: stratify declares the bands strata.
func cacheMovedReason(hb, hc float64) string {
	return fmt.Sprintf("not stratified: over the later half of the run the arms' prefix-cache hit rates differ by more than %d pp (baseline %s, canary %s), "+
		"so the change may have moved caching and hit bands would be a mediator, not strata: the total effect is gated "+
		"(normalize.cache: stratify compares the arms at equal cache state, for a change that cannot alter caching)", CacheShiftPP, pctOrNA(hb), pctOrNA(hc))
}

// cacheShifted reports whether the arms' hit rates over the later half of
// their runs differ by more than CacheShiftPP, or are unknown; it also
// returns both rates (baseline, canary).
func cacheShifted(b, c *armData) (bool, float64, float64) {
	hb, hc := cacheHitRateLate(b), cacheHitRateLate(c)
	return hitRatesShifted(hb, hc), hb, hc
}

// hitRatesShifted reports whether two hit rates (in [0, 1]) differ by more
// than CacheShiftPP, or are unknown (NaN).
func hitRatesShifted(hb, hc float64) bool {
	return !(math.Abs(hb-hc)*100 <= CacheShiftPP)
}

// hitRatesNote is said in the cache step when the mediator caveat is not
// warned; hb and hc are the arms' hit rates over the later half of the run.
func hitRatesNote(hb, hc float64) string {
	if hitRatesShifted(hb, hc) {
		return ""
	}
	return fmt.Sprintf(" (within %d pp of each other over the later half of the run: the change did not move caching, so adjusting for it hides no effect)", CacheShiftPP)
}

// laterHalfRate is Σhits / Σqueries over the n items (at time t, in
// seconds) from the midpoint of their time span on; item returns ok false
// for an item without a known hit count. NaN when no queries are known.
func laterHalfRate(n int, item func(i int) (t, hits, queries float64, ok bool)) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range n {
		if t, _, _, ok := item(i); ok {
			lo, hi = min(lo, t), max(hi, t)
		}
	}
	mid := lo + (hi-lo)/2
	var h, q float64
	for i := range n {
		if t, hits, queries, ok := item(i); ok && t >= mid {
			h += hits
			q += queries
		}
	}
	if !(q > 0) {
		return math.NaN()
	}
	return h / q
}

// cacheHitRateLate is the arm's prefix-cache hit rate (cached over prompt
// tokens) over the later half of its kept requests' arrivals.
func cacheHitRateLate(a *armData) float64 {
	return laterHalfRate(len(a.ds.Requests), func(i int) (float64, float64, float64, bool) {
		r := &a.ds.Requests[i]
		if !a.keep[i] || r.CachedTokens < 0 || r.PromptTokens <= 0 {
			return 0, 0, 0, false
		}
		return r.Time, float64(r.CachedTokens), float64(r.PromptTokens), true
	})
}

func cacheHitRate(a *armData) float64 {
	var cached, prompt float64
	for i := range a.ds.Requests {
		r := &a.ds.Requests[i]
		if !a.keep[i] || r.CachedTokens < 0 || r.PromptTokens <= 0 {
			continue
		}
		cached += float64(r.CachedTokens)
		prompt += float64(r.PromptTokens)
	}
	if prompt == 0 {
		return math.NaN()
	}
	return cached / prompt
}

// classRows is the class table: a row per policy class (names, indexed as
// armData.class), split by the input's own class label when split (the
// policy declares classes), both arms' figures side by side.
func classRows(b, c *armData, names []string, split bool) []ClassRow {
	type acc struct {
		offered, good int64
		ttft, tpot    []float64
	}
	// rows are policy classes, split by the input's own class label when
	// the policy declares classes (a label the policy does not name keeps
	// its row under the policy class that sets its SLO)
	type key struct {
		class int32
		label string
	}
	keyOf := func(a *armData, i int) key {
		k := key{class: a.class[i]}
		if split {
			k.label = a.ds.Requests[i].Class
		}
		return k
	}
	per := func(a *armData) map[key]*acc {
		out := map[key]*acc{}
		for i := range a.ds.Requests {
			if !a.keep[i] {
				continue
			}
			r := &a.ds.Requests[i]
			k := keyOf(a, i)
			c := out[k]
			if c == nil {
				c = &acc{}
				out[k] = c
			}
			c.offered++
			if a.good[i] {
				c.good++
			}
			if r.Status == sources.StatusOK {
				if sources.Known(r.TTFT) {
					c.ttft = append(c.ttft, r.TTFT)
				}
				if sources.Known(r.TPOT) {
					c.tpot = append(c.tpot, r.TPOT)
				}
			}
		}
		return out
	}
	bs, cs := per(b), per(c)
	tb, tc := b.totals().offered, c.totals().offered
	arm := func(x *acc, total float64) ClassArm {
		if x == nil {
			x = &acc{}
		}
		stats.SortFloat64s(x.ttft)
		stats.SortFloat64s(x.tpot)
		return ClassArm{Offered: x.offered, Good: x.good, Share: Num(float64(x.offered) / total),
			SLOAttainment: Num(float64(x.good) / float64(x.offered)), TTFTP99: Num(quantile(x.ttft, 0.99)), TPOTP99: Num(quantile(x.tpot, 0.99))}
	}
	keys := map[key]bool{}
	for k := range bs {
		keys[k] = true
	}
	for k := range cs {
		keys[k] = true
	}
	var rows []ClassRow
	for k := range keys {
		rows = append(rows, ClassRow{Class: names[k.class], Label: k.label, Baseline: arm(bs[k], tb), Canary: arm(cs[k], tc)})
	}
	slices.SortFunc(rows, func(x, y ClassRow) int {
		if c := cmp.Compare(x.Class, y.Class); c != 0 {
			return c
		}
		return cmp.Compare(x.Label, y.Label)
	})
	return rows
}

// seriesOf is both arms' per-bucket time series on buckets of bucketSecs.
func seriesOf(b, c *armData, bucketSecs float64) Series {
	s := Series{BucketSeconds: Num(bucketSecs)}
	pts := func(a *armData) []Point {
		out := []Point{}
		if a.pseudo {
			return out
		}
		for _, b := range a.buckets {
			xs := slices.Clone(b.ttft)
			slices.Sort(xs)
			out = append(out, Point{T: Num(b.start - a.t0), Offered: int64(b.offered), Good: int64(b.good),
				GoodputRPS: Num(b.good / b.secs), TTFTP50: Num(quantile(xs, 0.5)), TTFTP99: Num(quantile(xs, 0.99)), Cut: b.cut, LeftOut: b.leftOut})
		}
		return out
	}
	s.Baseline, s.Canary = pts(b), pts(c)
	return s
}

// distributionProbs are the probabilities of the CDF curves: 0, 0.01, …, 1.
func distributionProbs() []float64 {
	ps := make([]float64, 101)
	for i := range ps {
		ps[i] = float64(i) / 100
	}
	return ps
}

// distributionsOf is both arms' TTFT and TPOT quantile curves at
// distributionProbs.
func distributionsOf(b, c *armData) Distributions {
	ps := distributionProbs()
	curve := func(sorted []float64) []Num {
		out := make([]Num, len(ps))
		for i, q := range ps {
			out[i] = Num(quantile(sorted, q))
		}
		return out
	}
	d := Distributions{Probs: make([]Num, len(ps))}
	for i, q := range ps {
		d.Probs[i] = Num(q)
	}
	d.TTFT = ArmQuantCurve{Baseline: curve(b.pooled("ttft")), Canary: curve(c.pooled("ttft"))}
	d.TPOT = ArmQuantCurve{Baseline: curve(b.pooled("tpot")), Canary: curve(c.pooled("tpot"))}
	return d
}
