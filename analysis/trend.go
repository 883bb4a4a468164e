package analysis

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// Trend check parameters (pre-declared).
const (
	// TrendSegments is the most contiguous segments of the shared bucket
	// grid the trend check fits a line through (fewer when the run has
	// fewer than TrendSegments × MinTrendBuckets buckets).
	TrendSegments = 8
	// MinTrendSegments is the fewest segments the check runs on (3 degrees
	// of freedom for the slope).
	MinTrendSegments = 5
	// MinTrendBuckets is the fewest buckets in one segment.
	MinTrendBuckets = 6
	// minTailPerSegment is how many values per arm and segment must lie
	// above a latency quantile for that segment's quantile to count:
	// n·(1 − q) ≥ 5.
	minTailPerSegment = 5
	// trendSuffix names a gated metric's trend row: "<metric>_trend".
	trendSuffix = "_trend"
)

// trendChecks look for a canary that gets worse through the window: for
// every count, share, mean and latency-quantile gate of the policy, the
// paired difference canary − baseline (on the gate's harm scale: a
// difference for absolute metrics, a log ratio for relative ones, positive
// = canary worse) is computed per contiguous segment of the shared bucket
// grid, and a least-squares line is fitted through the segments against
// time (Student t, segments − 2 degrees of freedom; the traffic wave both
// arms ride cancels in the difference, and the variance is inflated where
// each arm's own slowdowns outlast a segment, trendEvals). A check adds a
// "<gate>_trend" guardrail only when the slope is positive with one-sided
// p < α/m (m the gates checked, Bonferroni):
//
//   - fail when the line's value at the end of the window is beyond the
//     gate's margin with confidence (lower (1 − α) bound above it): a leak;
//   - inconclusive when the end value's point is beyond the margin but its
//     bound is not: a leak beyond the margin is not ruled out;
//   - pass, named, when the end value's point is within the margin.
//
// A window average can hide a leak that starts at zero and ends beyond the
// margin; this keeps it from being averaged away. It needs paired arms
// (one clock, overlapping runs). levels (trendLevels) recentres a gate's
// series on the level its gate compares after adjustment.
func (j *judgement) trendChecks(levels map[string]float64) []gateEval {
	if !j.paired {
		return nil
	}
	from, nb := j.grid()
	at := func(a *armData, t int) *bucket {
		if i := from + t; i >= a.firstKept && i < len(a.buckets) {
			return &a.buckets[i]
		}
		return nil
	}
	// a last bucket shorter than half the width (the run ended just past
	// a bucket boundary) is not a step of the time axis: its requests
	// join the last segment, as an aggregate's whole slices hold them
	grid := nb
	if nb > 1 {
		last := 0.0
		for _, a := range []*armData{j.b, j.c} {
			if b := at(a, nb-1); b != nil {
				last = math.Max(last, b.secs)
			}
		}
		if last < j.b.bucketSecs/2 {
			grid = nb - 1
		}
	}
	// count, share and mean gates standardized to the reference mix are
	// standardized segment by segment (trendStrata); their level needs no
	// recentring
	strata := map[string]*trendStrata{}
	if j.mix != nil {
		levels = maps.Clone(levels)
		for _, g := range j.p.Gates {
			num, den := trendRequestCounts(g.Metric)
			if num == nil {
				continue
			}
			bind := func(a *armData, f func(*armData, int) float64) func(int) float64 {
				return func(i int) float64 { return f(a, i) }
			}
			xb := j.mix.strataOn(j.b, j.mix.b, bind(j.b, num), bind(j.b, den), from, nb)
			xc := j.mix.strataOn(j.c, j.mix.c, bind(j.c, num), bind(j.c, den), from, nb)
			if w, err := normalize.Weights(j.mix.mode, xc, xb, j.p.Normalize.Weights); err == nil {
				strata[g.Metric] = &trendStrata{b: xb, c: xc, w: w}
				delete(levels, g.Metric)
			}
		}
	}
	segment := func(metric string, info policies.MetricInfo, lo, hi int) (trendPoint, bool) {
		if hi == grid {
			hi = nb
		}
		if s, ok := strata[metric]; ok {
			return s.segment(lo, hi)
		}
		if info.Latency != "" {
			var xb, xc []float64
			for t := lo; t < hi; t++ {
				if b := at(j.b, t); b != nil {
					xb = append(xb, samplesOf(b, info.Latency)...)
				}
				if c := at(j.c, t); c != nil {
					xc = append(xc, samplesOf(c, info.Latency)...)
				}
			}
			need := int(math.Ceil(minTailPerSegment / (1 - info.Quantile)))
			if len(xb) < need || len(xc) < need {
				return trendPoint{}, false
			}
			slices.Sort(xb)
			slices.Sort(xc)
			return exactTrendPoint(quantile(xb, info.Quantile), quantile(xc, info.Quantile), float64(len(xb)), float64(len(xc))), true
		}
		num, den := trendBucketCounts(metric)
		var nbs, dbs, ncs, dcs float64
		for t := lo; t < hi; t++ {
			if b := at(j.b, t); b != nil {
				nbs, dbs = nbs+num(b), dbs+den(b)
			}
			if c := at(j.c, t); c != nil {
				ncs, dcs = ncs+num(c), dcs+den(c)
			}
		}
		if !(dbs > 0 && dcs > 0) {
			return trendPoint{}, false
		}
		return exactTrendPoint(nbs/dbs, ncs/dcs, dbs, dcs), true
	}
	// a count's buckets on the grid, the short last bucket in the last
	// position, for the inflation of the line's variance; for a latency
	// quantile, its values past the arm's quantile (pastQuantile)
	buckets := func(metric string, info policies.MetricInfo) (c, b stats.Ratio, ok bool) {
		// the counting functions of an arm's buckets on the grid
		counts := func([]*bucket) (num, den func(*bucket) float64) { return trendBucketCounts(metric) }
		if info.Latency != "" {
			counts = func(kept []*bucket) (num, den func(*bucket) float64) { return pastQuantile(kept, info) }
		} else if num, _ := trendBucketCounts(metric); num == nil {
			return stats.Ratio{}, stats.Ratio{}, false
		}
		arm := func(a *armData) stats.Ratio {
			kept := make([]*bucket, nb)
			for t := range kept {
				kept[t] = at(a, t)
			}
			num, den := counts(kept)
			r := stats.Ratio{Num: make([]float64, grid), Den: make([]float64, grid)}
			for t, bk := range kept {
				if bk != nil {
					p := min(t, grid-1)
					r.Num[p] += num(bk)
					r.Den[p] += den(bk)
				}
			}
			return r
		}
		return arm(j.c), arm(j.b), true
	}
	skip := func(metric string) bool { return j.unreported(metric) != "" }
	out, _ := trendEvals(j.p, grid, j.b.bucketSecs, skip, levels, segment, buckets)
	return out
}

// trendStrata is a count, share or mean gate's per-stratum totals of both
// arms on the trend check's grid (Num and Den per stratum and position)
// with the reference weights of its standardization. Each segment is then
// standardized on its own (segment): a canary whose mix drifts through the
// run (35% long requests at the start, 5% at the end) has a counted mean
// output length that falls through the run, which the window's
// standardized gate does not see but a trend through counted segments
// read as a leak (the fleet model's mix-drift case failed
// output_tokens_mean_trend in 39 of 40 runs).
type trendStrata struct {
	b, c normalize.Strata
	w    []float64
}

// segment is the segment [lo, hi) standardized: per stratum the arm's
// summed numerator over its summed denominator, weighted by the reference
// weights renormalised over the strata both arms have in the segment, and
// strata each arm keeps at its own share (Strata.Own) at the arm's share
// of the segment, as the gate takes them; the sample sizes are the arms'
// denominators there. False when no weighted stratum has both.
func (s *trendStrata) segment(lo, hi int) (trendPoint, bool) {
	var vb, vc, w, nb, nc float64
	// the arms' totals in their own strata (num, den) and the others' den
	var ob, odb, oc, odc, kb, kc float64
	for k := range s.w {
		var b, db, c, dc float64
		for t := lo; t < hi; t++ {
			b, db = b+s.b.Num[k][t], db+s.b.Den[k][t]
			c, dc = c+s.c.Num[k][t], dc+s.c.Den[k][t]
		}
		nb, nc = nb+db, nc+dc
		if k < len(s.b.Own) && s.b.Own[k] {
			ob, odb, oc, odc = ob+b, odb+db, oc+c, odc+dc
			continue
		}
		kb, kc = kb+db, kc+dc
		if db > 0 && dc > 0 && s.w[k] > 0 {
			vb, vc, w = vb+s.w[k]*b/db, vc+s.w[k]*c/dc, w+s.w[k]
		}
	}
	if !(w > 0) {
		return trendPoint{}, false
	}
	lb, lc := vb/w, vc/w
	if odb > 0 || odc > 0 {
		lb, lc = (ob+kb*lb)/(kb+odb), (oc+kc*lc)/(kc+odc)
	}
	pt := exactTrendPoint(lb, lc, nb, nc)
	pt.standardized = true
	return pt, true
}

// trendBucketCounts gives a trended count, share or mean gate's
// numerator and denominator per bucket (nil for the others): countFuncs',
// and for output_tokens_mean the output tokens over the completions whose
// output length is known.
func trendBucketCounts(metric string) (num, den func(*bucket) float64) {
	if metric == "output_tokens_mean" {
		return func(b *bucket) float64 { return b.outTokens }, outputKnown
	}
	return countFuncs(metric)
}

// pastQuantile gives a latency quantile's per-bucket numerator and
// denominator for the trend's inflation: a bucket's values in or above the
// log-linear bin (sources/loglin) that holds the arm's quantile over
// buckets (nil: none), and all its values — the quantile's influence
// series, counted as the aggregate counts it from its bins.
func pastQuantile(buckets []*bucket, info policies.MetricInfo) (num, den func(*bucket) float64) {
	var all []float64
	for _, b := range buckets {
		if b != nil {
			all = append(all, samplesOf(b, info.Latency)...)
		}
	}
	slices.Sort(all)
	qi, ok := loglin.Index(quantile(all, info.Quantile))
	num = func(b *bucket) float64 {
		var n float64
		if !ok {
			return n
		}
		for _, v := range samplesOf(b, info.Latency) {
			if i, vok := loglin.Index(v); vok && i >= qi {
				n++
			}
		}
		return n
	}
	den = func(b *bucket) float64 { return float64(len(samplesOf(b, info.Latency))) }
	return num, den
}

// trendRequestCounts gives a trended count, share or mean gate's
// per-request numerator and denominator (nil for the others).
func trendRequestCounts(metric string) (num, den func(*armData, int) float64) {
	if metric == "output_tokens_mean" {
		return requestOutputTokens, requestOutputKnown
	}
	if num := perRequestNum(metric); num != nil {
		return num, requestOne
	}
	return nil, nil
}

// trendLevels reads, from the pooled gate rows, how far each gate's
// adjustment (the canary reweighted to the reference mix, CUPED) moved its
// window difference, on the trend's harm scale (positive = canary worse):
// the counted (naive) harm less the adjusted one. A trend row lowers its
// segments by it, so the line's level is the level its gate compares: a
// canary whose traffic holds fewer long requests has a lower mean output
// length and p99 TTFT as counted, which the gates standardize away; left
// in the trend row, that level failed it whenever the slope came out
// significant by chance (a pure mix shift failed output_tokens_mean_trend in
// 2–3 of 40 runs of the fleet model). The slope itself stays the counted
// arms', so a mix that drifts in one arm alone still reads in a recentred
// trend: count, share and mean trends are standardized segment by segment
// instead where the gate is (trendStrata), and only latency-quantile
// trends, and attainment's CUPED, are recentred.
func trendLevels(evals []gateEval) map[string]float64 {
	out := map[string]float64{}
	for _, e := range evals {
		m := e.m
		info, ok := policies.Metric(m.Name)
		if !ok || m.Naive == nil || !trendMetric(m.Name, info) {
			continue
		}
		harm := func(d float64) float64 {
			if info.Scale == "relative" {
				d = math.Log1p(d)
			}
			if info.HigherIsBetter {
				d = -d
			}
			return d
		}
		if v := harm(float64(m.Naive.Delta)) - harm(float64(m.Delta)); !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[m.Name] = v
		}
	}
	return out
}

// trendPoint is one segment of one gate's trend series: both arms' values
// over the segment and the requests behind them (a count gate's
// denominators), and the intervals in which the values are known to lie
// (a quantile read from histogram bins: the bin holding it; a counted
// value: the value itself).
type trendPoint struct {
	b, c           float64
	nb, nc         float64
	bLo, bHi       float64
	cLo, cHi       float64
	fromHistograms bool
	// standardized: each arm's value is its strata's, weighted to the
	// reference mix (trendStrata)
	standardized bool
}

func exactTrendPoint(vb, vc, nb, nc float64) trendPoint {
	return trendPoint{b: vb, c: vc, nb: nb, nc: nc, bLo: vb, bHi: vb, cLo: vc, cHi: vc}
}

// trendMetric reports whether the trend check follows a gate's metric: the
// count and share gates, the mean output length and the latency
// quantiles.
func trendMetric(metric string, info policies.MetricInfo) bool {
	switch metric {
	case "slo_attainment", "error_rate", "rejected_share", "canceled_share", "retry_share", "output_tokens_mean":
		return true
	}
	return info.Latency != "" && info.Quantile > 0
}

// trendEvals is the trend check of paired arms, whatever holds them (the
// requests themselves or their aggregate): nb buckets of secs seconds on
// the shared grid are cut into contiguous segments, segment gives both
// arms' values of a gate's metric over the buckets [lo, hi) (false: too
// little data in the segment), and skip names metrics the data cannot
// follow (nil: none). When a value is only known within an interval, the
// line is bounded over every value in the intervals (stats.FitTrendWithin)
// and decided the cautious way: the row appears when some values in the
// intervals give a worsening slope, fails only when all of them fail, and
// passes only when none puts the end of the window beyond the margin. A
// metric whose intervals leave the end of the window undetermined over
// more than half its margin (coarse histogram buckets, wide bounds) is not
// followed: unresolved names it, for a warning. levels (trendLevels; nil:
// none) holds, per metric, the harm by which its segments are lowered.
//
// Segments minutes long are not independent when each arm's slowdowns
// last across their ends: buckets (nil: none) gives a gate's per-position
// numerator and denominator in both arms (canary first; false: not
// given) — for a count, share or mean its own count; for a latency
// quantile the arm's values in or above the log-linear bin of its
// quantile over the grid, among the bucket's values (the quantile's
// influence series: a segment's quantile moves with its share of values
// past the window's) — and the trend's variance is multiplied by
// stats.TrendInflation of their paired residuals (relative for a latency
// quantile, as its log ratio is). Without it such a trend was named 1.6
// to 2.6 times as often as α/m says in identical arms whose per-arm
// slowdowns follow an AR(1) of φ 0.8 to 0.9 per 10 s bucket
// (stats/testdata/trend_ar1.txt; with it,
// stats/testdata/trend_inflation.txt). A latency quantile's factor read
// from slo_attainment's residuals instead carried the canary's own change
// (a TPOT leak moves attainment unevenly: the fleet model's leak lost its
// trend fail in 3 of 10 runs); read from its own values past its
// quantile it did so in 1 of 10, the run failing on other gates.
func trendEvals(p *policies.Policy, nb int, secs float64, skip func(metric string) bool, levels map[string]float64,
	segment func(metric string, info policies.MetricInfo, lo, hi int) (trendPoint, bool),
	buckets func(metric string, info policies.MetricInfo) (c, b stats.Ratio, ok bool)) (out []gateEval, unresolved []string) {
	k := min(TrendSegments, nb/MinTrendBuckets)
	if k < MinTrendSegments {
		return nil, nil
	}
	type series struct {
		g            policies.Gate
		info         policies.MetricInfo
		x, h, lo, hi []float64
		segs         [][2]int
		lastB, lastC float64
		nb, nc       float64
		binned       bool
		standardized bool
	}
	var all []series
	seen := map[string]bool{}
	for _, g := range p.Gates {
		info, ok := policies.Metric(g.Metric)
		if !ok || seen[g.Metric] || !trendMetric(g.Metric, info) || (skip != nil && skip(g.Metric)) {
			continue
		}
		seen[g.Metric] = true
		s := series{g: g, info: info}
		// harm: positive = canary worse, a difference for absolute
		// metrics, a log ratio for relative ones
		harm := func(vb, vc float64) (float64, bool) {
			var d float64
			if info.Scale == "relative" {
				if !(vb > 0 && vc > 0) {
					return 0, false
				}
				d = math.Log(vc / vb)
			} else {
				d = vc - vb
			}
			if info.HigherIsBetter {
				d = -d
			}
			return d, true
		}
		for seg := 0; seg < k; seg++ {
			lo, hi := seg*nb/k, (seg+1)*nb/k
			pt, ok := segment(g.Metric, info, lo, hi)
			if !ok {
				continue
			}
			d, ok := harm(pt.b, pt.c)
			if !ok {
				continue
			}
			// harm is monotone in each value: its range is at the corners
			dLo, dHi := d, d
			cornersOK := true
			for _, vb := range []float64{pt.bLo, pt.bHi} {
				for _, vc := range []float64{pt.cLo, pt.cHi} {
					h, ok := harm(vb, vc)
					cornersOK = cornersOK && ok
					dLo, dHi = math.Min(dLo, h), math.Max(dHi, h)
				}
			}
			if !cornersOK {
				continue
			}
			shift := levels[g.Metric]
			d, dLo, dHi = d-shift, dLo-shift, dHi-shift
			s.x = append(s.x, float64(lo+hi)/2*secs/60)
			s.segs = append(s.segs, [2]int{lo, hi})
			s.h, s.lo, s.hi = append(s.h, d), append(s.lo, dLo), append(s.hi, dHi)
			s.lastB, s.lastC = pt.b, pt.c
			s.nb, s.nc = s.nb+pt.nb, s.nc+pt.nc
			s.binned = s.binned || pt.fromHistograms
			s.standardized = s.standardized || pt.standardized
		}
		if len(s.x) >= MinTrendSegments {
			all = append(all, s)
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	alpha := p.Alpha()
	level := alpha / float64(len(all))
	end := float64(nb) * secs / 60
	for _, s := range all {
		info, g := s.info, s.g
		passAt := g.Margin.Value
		if info.Scale == "relative" {
			passAt = math.Log1p(g.Margin.Value)
			if info.HigherIsBetter {
				passAt = -math.Log1p(-g.Margin.Value)
			}
		}
		tq := stats.TQuantile(1-alpha, float64(len(s.x)-2))
		f, fb := stats.FitTrendWithin(s.x, s.h, s.lo, s.hi, end, tq, 1)
		// the row appears when the slope is a worsening one (with values
		// known within intervals: at the point values, or for every value
		// within them), or when some values within them give one and the
		// end of the window may lie beyond the margin
		named := func() bool {
			return fb.PHi < level || f.PIncrease < level || (fb.PLo < level && fb.AtHi > passAt)
		}
		// the inflation only raises the p-values and widens the bounds, so
		// it is read only where a row would appear without it
		kappa, declared := 1.0, false
		if named() {
			// a declared window.persistence floors the fitted factor
			floor := trendFloor(p.Window, s.segs, secs)
			if buckets != nil {
				if c, b, ok := buckets(g.Metric, info); ok {
					if d := stats.PairedResiduals(c, b, info.Scale == "relative" || info.Latency != ""); d != nil {
						kappa = stats.TrendInflation(d, s.segs)
					}
				}
			}
			if floor > kappa {
				kappa, declared = floor, true
			}
			if kappa > 1 {
				f, fb = stats.FitTrendWithin(s.x, s.h, s.lo, s.hi, end, tq, kappa)
			}
		}
		// harm h back to the gate's delta (canary vs baseline)
		delta := func(h float64) float64 {
			if info.HigherIsBetter {
				h = -h
			}
			if info.Scale == "relative" {
				return math.Expm1(h)
			}
			if info.Unit == "fraction" {
				// a line through shares can run past ±100 pp
				return math.Max(-1, math.Min(1, h))
			}
			return h
		}
		if w := fb.AtHi - fb.AtLo; w > passAt/2 {
			m := Metric{Scale: info.Scale, Unit: info.Unit, Margin: Num(g.Margin.Value)}
			a, b := delta(fb.AtLo), delta(fb.AtHi)
			if a > b {
				a, b = b, a
			}
			unresolved = append(unresolved, fmt.Sprintf("the %s trend is not checked on this data: each segment's value is known only within its histogram buckets or bounds, which leave the end of the window anywhere within [%s, %s], too wide against the %s margin; finer buckets (native histograms) or per-request records would check it",
				g.Metric, fmtDelta(m, a), fmtDelta(m, b), fmtMargin(m)))
			continue
		}
		sure := fb.PHi < level
		if !named() {
			continue
		}
		lo, hi := fb.Lower, fb.Upper
		start := f.At - f.Slope*end
		dl, dh := delta(lo), delta(hi)
		if dl > dh {
			dl, dh = dh, dl
		}
		m := Metric{Name: g.Metric + trendSuffix, Guardrail: true, Direction: info.Direction(), Scale: info.Scale, Unit: info.Unit,
			Baseline: Num(s.lastB), Canary: Num(s.lastC), Delta: Num(delta(f.At)), Interval: [2]Num{Num(dl), Num(dh)},
			Margin: Num(g.Margin.Value), PFail: Num(math.NaN()), NBaseline: int64(s.nb), NCanary: int64(s.nc),
			Buckets: [2]int{nb, nb}, Method: fmt.Sprintf("segment-ols-trend-%d", len(s.x)), Adjusted: []string{}}
		iv := fmt.Sprintf("%s at the start to %s [%s, %s] at the end of the window (%d segments; a worsening trend at one-sided p = %.2g < α/%d)",
			fmtDelta(m, delta(start)), fmtDelta(m, delta(f.At)), fmtDelta(m, dl), fmtDelta(m, dh), len(s.x), f.PIncrease, len(all))
		if kappa > 1 && declared {
			m.Adjusted = append(m.Adjusted, fmt.Sprintf("the line's variance multiplied by %.2f: the policy says the fleet's own slowdowns last %v (window.persistence), so neighbouring segments are not independent and would otherwise read as a trend more often than α/%d",
				kappa, time.Duration(p.Window.Persistence), len(all)))
		} else if kappa > 1 {
			what := fmt.Sprintf("the paired %s residuals", g.Metric)
			if info.Latency != "" {
				what = fmt.Sprintf("the paired shares of each arm's %s values past its window's p%g", info.Latency, 100*info.Quantile)
			}
			m.Adjusted = append(m.Adjusted, fmt.Sprintf("the line's variance multiplied by %.2f: %s of adjacent buckets correlate (slowdowns lasting minutes), so neighbouring segments are not independent and would otherwise read as a trend more often than α/%d",
				kappa, what, len(all)))
		}
		if s.standardized {
			m.Adjusted = append(m.Adjusted, "each segment standardized to the reference mix on its own (the gate's strata and weights), so a mix that changes through the run is not read as a trend")
		}
		if shift := levels[g.Metric]; shift != 0 {
			m.Adjusted = append(m.Adjusted, fmt.Sprintf("recentred on the gate's adjusted level: every segment's difference moved by %s (the gate's adjusted window difference less its counted one), so a mix difference the gate standardizes away is not read as a level beyond the margin; the slope is the counted arms'",
				fmtDelta(m, delta(-shift))))
		}
		if s.binned {
			a, b := delta(fb.AtLo), delta(fb.AtHi)
			if a > b {
				a, b = b, a
			}
			p := fmt.Sprintf("between %.2g and %.2g", fb.PLo, fb.PHi)
			if !(fb.PHi < 0.5) {
				p = fmt.Sprintf("%.2g or more", fb.PLo)
			}
			iv = fmt.Sprintf("%s at the start to %s [%s, %s] at the end of the window (%d segments; each segment's values known only within their histogram bins or bounds put the end value within [%s, %s] and the slope's one-sided p %s, against α/%d)",
				fmtDelta(m, delta(start)), fmtDelta(m, delta(f.At)), fmtDelta(m, dl), fmtDelta(m, dh), len(s.x), fmtDelta(m, a), fmtDelta(m, b), p, len(all))
			m.Adjusted = append(m.Adjusted, "segment values within their histogram bins or bounds: a fail is decided where every value within them fails, a pass where none puts the end of the window beyond the margin")
		}
		switch {
		case sure && lo > passAt:
			m.Verdict = Fail
			m.Reason = fmt.Sprintf("the canary gets worse through the window (a leak?): %s goes from %s, beyond the %s margin with confidence by the end; the window average hides it", g.Metric, iv, fmtMargin(m))
		case fb.AtHi > passAt:
			m.Verdict = Inconclusive
			m.Reason = fmt.Sprintf("the canary gets worse through the window (a leak?): %s goes from %s; a difference beyond the %s margin by the end is not ruled out", g.Metric, iv, fmtMargin(m))
		default:
			m.Verdict = Pass
			m.Reason = fmt.Sprintf("the canary gets worse through the window: %s goes from %s, still within the %s margin at the end", g.Metric, iv, fmtMargin(m))
		}
		out = append(out, gateEval{m: m})
	}
	return out, unresolved
}
