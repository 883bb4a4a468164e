package analysis

import (
	"fmt"
	"math"
	"slices"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
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
)

// trendChecks look for a canary that gets worse through the window: for
// every count, share, mean and latency-quantile gate of the policy, the
// paired difference canary − baseline (on the gate's harm scale: a
// difference for absolute metrics, a log ratio for relative ones, positive
// = canary worse) is computed per contiguous segment of the shared bucket
// grid, and a least-squares line is fitted through the segments against
// time (Student t, segments − 2 degrees of freedom: segments minutes long
// are nearly independent once the traffic wave both arms ride cancels in
// the difference). A check adds a "<gate>_trend" guardrail only when the
// slope is positive with one-sided p < α/m (m the gates checked, Bonferroni):
//
//   - fail when the line's value at the end of the window is beyond the
//     gate's margin with confidence (lower (1 − α) bound above it): a leak;
//   - inconclusive when the end value's point is beyond the margin but its
//     bound is not: a leak beyond the margin is not ruled out;
//   - pass, named, when the end value's point is within the margin.
//
// A window average can hide a leak that starts at zero and ends beyond the
// margin; this keeps it from being averaged away. It needs paired arms
// (one clock, overlapping runs).
func (j *judgement) trendChecks() []gateEval {
	if !j.paired {
		return nil
	}
	from, nb := j.grid()
	k := min(TrendSegments, nb/MinTrendBuckets)
	if k < MinTrendSegments {
		return nil
	}
	secs := j.b.bucketSecs
	at := func(a *armData, t int) *bucket {
		if i := from + t; i >= a.firstKept && i < len(a.buckets) {
			return &a.buckets[i]
		}
		return nil
	}
	type series struct {
		g      policies.Gate
		info   policies.MetricInfo
		x, h   []float64
		lastB  float64
		lastC  float64
		nb, nc float64
	}
	var all []series
	seen := map[string]bool{}
	for _, g := range j.p.Gates {
		info, ok := policies.Metric(g.Metric)
		if !ok || seen[g.Metric] {
			continue
		}
		num, den := countFuncs(g.Metric)
		if g.Metric == "output_tokens_mean" {
			num, den = func(b *bucket) float64 { return b.outTokens }, func(b *bucket) float64 { return b.completed }
		}
		quant := info.Latency != "" && info.Quantile > 0
		if num == nil && !quant {
			continue
		}
		seen[g.Metric] = true
		s := series{g: g, info: info}
		for seg := 0; seg < k; seg++ {
			lo, hi := seg*nb/k, (seg+1)*nb/k
			var vb, vc float64
			if quant {
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
					continue
				}
				slices.Sort(xb)
				slices.Sort(xc)
				vb, vc = quantile(xb, info.Quantile), quantile(xc, info.Quantile)
				s.nb, s.nc = s.nb+float64(len(xb)), s.nc+float64(len(xc))
			} else {
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
					continue
				}
				vb, vc = nbs/dbs, ncs/dcs
				s.nb, s.nc = s.nb+dbs, s.nc+dcs
			}
			var d float64
			if info.Scale == "relative" {
				if !(vb > 0 && vc > 0) {
					continue
				}
				d = math.Log(vc / vb)
			} else {
				d = vc - vb
			}
			if info.HigherIsBetter {
				d = -d
			}
			s.x = append(s.x, float64(lo+hi)/2*secs/60)
			s.h = append(s.h, d)
			s.lastB, s.lastC = vb, vc
		}
		if len(s.x) >= MinTrendSegments {
			all = append(all, s)
		}
	}
	if len(all) == 0 {
		return nil
	}
	alpha := j.p.Alpha()
	level := alpha / float64(len(all))
	end := float64(nb) * secs / 60
	var out []gateEval
	for _, s := range all {
		f := stats.FitTrend(s.x, s.h, end)
		if !(f.PIncrease < level) {
			continue
		}
		info, g := s.info, s.g
		passAt := g.Margin.Value
		if info.Scale == "relative" {
			passAt = math.Log1p(g.Margin.Value)
			if info.HigherIsBetter {
				passAt = -math.Log1p(-g.Margin.Value)
			}
		}
		tq := stats.TQuantile(1-alpha, f.DF)
		lo, hi := f.At-tq*f.AtSE, f.At+tq*f.AtSE
		start := f.At - f.Slope*end
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
		dl, dh := delta(lo), delta(hi)
		if dl > dh {
			dl, dh = dh, dl
		}
		dir := "lower_is_better"
		if info.HigherIsBetter {
			dir = "higher_is_better"
		}
		m := Metric{Name: g.Metric + "_trend", Guardrail: true, Direction: dir, Scale: info.Scale, Unit: info.Unit,
			Baseline: Num(s.lastB), Canary: Num(s.lastC), Delta: Num(delta(f.At)), Interval: [2]Num{Num(dl), Num(dh)},
			Margin: Num(g.Margin.Value), PFail: Num(math.NaN()), NBaseline: int64(s.nb), NCanary: int64(s.nc),
			Buckets: [2]int{nb, nb}, Method: fmt.Sprintf("segment-ols-trend-%d", len(s.x)), Adjusted: []string{}}
		iv := fmt.Sprintf("%s at the start to %s [%s, %s] at the end of the window (%d segments; a worsening trend at one-sided p = %.2g < α/%d)",
			fmtDelta(m, delta(start)), fmtDelta(m, delta(f.At)), fmtDelta(m, dl), fmtDelta(m, dh), len(s.x), f.PIncrease, len(all))
		switch {
		case lo > passAt:
			m.Verdict = Fail
			m.Reason = fmt.Sprintf("the canary gets worse through the window (a leak?): %s goes from %s, beyond the %s margin with confidence by the end; the window average hides it", g.Metric, iv, fmtMargin(m))
		case f.At > passAt:
			m.Verdict = Inconclusive
			m.Reason = fmt.Sprintf("the canary gets worse through the window (a leak?): %s goes from %s; a difference beyond the %s margin by the end is not ruled out", g.Metric, iv, fmtMargin(m))
		default:
			m.Verdict = Pass
			m.Reason = fmt.Sprintf("the canary gets worse through the window: %s goes from %s, still within the %s margin at the end", g.Metric, iv, fmtMargin(m))
		}
		out = append(out, gateEval{m: m})
	}
	return out
}
