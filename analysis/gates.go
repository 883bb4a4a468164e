package analysis

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"gonum.org/v1/gonum/stat/distuv"
)

// gateEval is one gate before the Holm step.
type gateEval struct {
	m        Metric
	decision stats.Decision
	// harm space: positive = canary worse, on the estimate's scale (a
	// fraction for absolute metrics, a log ratio for relative ones)
	harmPoint, se  float64
	passAt, failAt float64
	decidable      bool
	// unfavourableFails is set by decideBounds when the gate fails at the
	// canary-unfavourable end of its histogram bins (whatever it decided)
	unfavourableFails bool
	// twoSided is set by decide for a gate whose harm is a change either
	// way: its fail p-value counts both sides (failP)
	twoSided bool
}

// failP is the gate's one-sided fail p-value for the weighted Holm step,
// on the side its estimate lies; doubled (at most 1) for a two-sided gate,
// which could fail on either side: with an interval wide against the
// margin each side alone would fail identical arms at the gate's full
// share of α.
func (e gateEval) failP() float64 {
	p := stats.FailPValue(e.harmPoint, e.se, e.failAt)
	if e.twoSided {
		p = math.Min(1, 2*p)
	}
	return p
}

// failPs is every gate's failP for the weighted Holm step, NaN for a gate
// that could not be decided (Holm leaves it out).
func failPs(evals []gateEval) []float64 {
	ps := make([]float64, len(evals))
	for i, e := range evals {
		ps[i] = math.NaN()
		if e.decidable {
			ps[i] = e.failP()
		}
	}
	return ps
}

func (j *judgement) gates(r *Report) []Metric {
	alpha := j.p.Alpha()
	conf := 1 - 2*alpha
	// the gates are evaluated side by side, each on a fork whose warnings
	// and mix notes are joined back in gate order; the arms are only read
	// once their pooled latencies are sorted
	sortPooled(j.b, j.c)
	gates := checkedGates(j.p.Gates, j.unreported, j.warnf)
	j.replicaSpreads = latencySpreads(j.b, j.c, gates)
	evals, forks := sideBySide(j, len(gates), func(f *judgement, i int) gateEval {
		return f.evalGate(i, gates[i], conf, r)
	})
	for _, f := range forks {
		j.join(f)
	}
	ps := failPs(evals)
	weights := policies.GateWeights(gates)
	// per-class tail gates: every class with ≥ MajorClassShare of the
	// baseline's traffic gets each tail gate of the policy on its own
	// requests, so a tail regression of a large class cannot hide behind
	// a pooled quantile set by another class; the pooled gate and its class
	// gates share the pooled gate's weight
	evals, ps, weights = withClassTails(gates, j.majorClasses(), evals, ps, weights,
		func(idx int, g policies.Gate, info policies.MetricInfo, class string) gateEval {
			return j.evalClassTail(idx, g, info, class, conf)
		})
	family := len(evals)
	if t := j.p.Traffic; t != nil {
		// the declared traffic split is a guardrail: a mismatch means
		// routing, retries or shedding differ and the comparison is biased
		srm := normalize.SRM(j.c.totals().offered, j.b.totals().offered, t.CanaryShare)
		j.srm = srm
		e := gateEval{m: Metric{Name: "traffic_split", Guardrail: true, Direction: "lower_is_better", Scale: "absolute", Unit: "fraction",
			Baseline: Num(1 - t.CanaryShare), Canary: Num(srm.ObservedShare), Delta: Num(srm.ObservedShare - t.CanaryShare),
			Interval: [2]Num{Num(math.NaN()), Num(math.NaN())}, Margin: 0, NBaseline: int64(srm.Baseline), NCanary: int64(srm.Canary),
			Method: "srm-chi-square", Reason: srm.Reason, Adjusted: []string{}, PFail: Num(srm.P)}}
		e.m.Baseline = Num(t.CanaryShare)
		e.m.Verdict = Pass
		if srm.Mismatch {
			e.m.Verdict = Fail
		} else if math.IsNaN(srm.P) {
			e.m.Verdict = Inconclusive
		}
		evals = append(evals, e)
		ps = append(ps, math.NaN())
	}
	rec := recordsOf(j)
	if j.p.Traffic == nil {
		if e, ok := j.loadRatioGuardrail(conf); ok {
			evals = append(evals, e)
			ps = append(ps, math.NaN())
		} else if w := unloggedShedWarning(j.b.replicasUnnamed(), j.c.replicasUnnamed()); w != "" {
			j.warnf("%s", w)
		}
		if e, ok := j.offeredRateGuardrail(conf, rec); ok {
			evals = append(evals, e)
			ps = append(ps, math.NaN())
		}
	}
	if e, ok := j.warmupGuardrail(conf); ok {
		evals = append(evals, e)
		ps = append(ps, math.NaN())
	}
	if e, ok := j.replicaLossGuardrail(); ok {
		evals = append(evals, e)
		ps = append(ps, math.NaN())
	}
	if e, ok := j.dipGuardrail(); ok {
		evals = append(evals, e)
		ps = append(ps, math.NaN())
	}
	if e, ok := windowEndOf(rec); ok {
		evals = append(evals, e)
		ps = append(ps, math.NaN())
	}
	if e, ok := recordsGapOf(rec); ok {
		evals = append(evals, e)
		ps = append(ps, math.NaN())
	}
	if j.unmatched != nil {
		evals = append(evals, *j.unmatched)
		ps = append(ps, math.NaN())
	}
	for _, e := range j.trendChecks(trendLevels(evals[:family])) {
		evals = append(evals, e)
		ps = append(ps, math.NaN())
	}
	// the traffic split is decided on its own; weighted Holm runs over the
	// policy's gates, most of α on attainment
	adj := append(stats.WeightedHolm(ps[:family], weights), ps[family:]...)
	out := make([]Metric, len(evals))
	z := distuv.UnitNormal.Quantile(1 - alpha)
	for i := range evals {
		e := &evals[i]
		m := e.m
		if i < family {
			m.PFail = Num(adj[i])
		}
		if e.decidable {
			m.Verdict = Verdict(e.decision)
			if m.Verdict == Fail && !(adj[i] < alpha) {
				m.Verdict = Inconclusive
				m.Reason = fmt.Sprintf("%s; it fails alone but not after the weighted Holm correction across %d gates (this gate's share of α %.0f%%, adjusted p = %.3g ≥ α = %.3g)",
					m.Reason, family, 100*weights[i], adj[i], alpha)
			}
			if m.Verdict == Inconclusive {
				switch md, lopsided := moreDataFor(e, m, z, j.offeredRate(), persistenceShrink(j.p, j.b.bucketSecs)); {
				case widenedByUsers(m):
					m.Reason += "; " + usersAdvice
				case lopsided:
					m.Reason += "; " + lopsidedAdvice
				case md != nil:
					m.MoreData = md
					m.Reason += "; " + moreDataAdvice(benchFormat(j.b, j.c), math.Max(j.b.totals().offered, j.c.totals().offered), md, m)
				}
			}
		}
		if a := tooLittleAdvice(j.p, j.b, j.c, m); a != "" {
			m.Reason += "; " + a
		}
		out[i] = m
	}
	return out
}

// offeredRate is both arms' offered requests per second together, or 0.
func (j *judgement) offeredRate() float64 {
	r := 0.0
	for _, a := range []*armData{j.b, j.c} {
		if math.IsNaN(a.windowSecs) || a.windowSecs <= 0 {
			return 0
		}
		r += a.totals().offered / a.windowSecs
	}
	return r
}

// withClassTails appends the per-class tail gates to a family of gate
// evaluations (evals, their fail p-values ps and Holm weights, indexed
// like gates): when at least two classes are major (≥ MajorClassShare of
// the baseline's traffic), every non-guardrail latency gate gets one gate
// per class, evaluated by eval, and the pooled gate's weight is split
// evenly between it and its class gates. Both judging paths call it.
func withClassTails(gates []policies.Gate, classes []string, evals []gateEval, ps, weights []float64,
	eval func(idx int, g policies.Gate, info policies.MetricInfo, class string) gateEval) ([]gateEval, []float64, []float64) {
	if len(classes) < 2 {
		return evals, ps, weights
	}
	for gi, g := range gates {
		info, _ := policies.Metric(g.Metric)
		if info.Latency == "" || g.Guardrail {
			continue
		}
		share := weights[gi] / float64(len(classes)+1)
		weights[gi] = share
		for _, cl := range classes {
			e := eval(len(evals), g, info, cl)
			p := math.NaN()
			if e.decidable {
				p = e.failP()
			}
			evals, ps, weights = append(evals, e), append(ps, p), append(weights, share)
		}
	}
	return evals, ps, weights
}

// moreDataFor projects how much more data of the same kind would decide
// the inconclusive gate e, reported as m, with z the one-sided critical
// value and rate the arms' offered requests per second together (≤ 0 or
// NaN: unknown, no minutes). Both judging paths call it. md is nil when
// it cannot tell; lopsided is true when the standard error says the
// current data already decide (lopsidedAdvice), and md is then nil too.
func moreDataFor(e *gateEval, m Metric, z, rate float64, shrink func(method string, buckets int) func(k float64) float64) (md *MoreData, lopsided bool) {
	target := e.passAt
	if e.harmPoint > e.passAt {
		target = e.failAt
	}
	k := stats.MoreData(e.harmPoint, e.se, target, z)
	if k <= 1 {
		return nil, true
	}
	if math.IsNaN(k) || math.IsInf(k, 0) {
		return nil, false
	}
	if b := min(m.Buckets[0], m.Buckets[1]); shrink != nil && strings.Contains(m.Method, "+persistence") && b > 0 {
		// a declared persistence widens a longer run less: the least k'
		// whose standard error se·s(k')/√k' decides, where k'/s(k')² ≥ k
		// and grows with k' (s ≤ 1 the widening's shrink)
		lo, hi, at := 1.0, k, shrink(m.Method, b)
		for range 60 {
			mid := (lo + hi) / 2
			if s := at(mid); mid/(s*s) >= k {
				hi = mid
			} else {
				lo = mid
			}
		}
		k = hi
	}
	n := float64(m.NBaseline + m.NCanary)
	md = &MoreData{Factor: Num(k), Requests: Num(math.Ceil((k - 1) * n)), Minutes: Num(math.NaN())}
	if rate > 0 {
		md.Minutes = Num((k - 1) * n / rate / 60)
	}
	return md, false
}

// lopsidedAdvice is what an inconclusive gate says in place of a
// projection when its standard error says the current data would decide
// it: the interval reaches much further on one side than the standard
// error allows (a bootstrap of a tail that a stall or a burst fills), and
// "about 0 more requests" would be false.
const lopsidedAdvice = "the interval is lopsided (its resamples reach far on one side), so no standard error projects how much more data would decide it; a longer run narrows it"

func moreDataText(md *MoreData, m Metric) string {
	s := fmt.Sprintf("about %s more requests (%.1f× the data)", fmtCount(float64(md.Requests)), float64(md.Factor))
	if !math.IsNaN(float64(md.Minutes)) {
		s += fmt.Sprintf(" ≈ %s more at the current rate", fmtMinutes(float64(md.Minutes)))
	}
	return s + fmt.Sprintf(" would decide the %s margin", fmtMargin(m))
}

func fmtCount(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// fmtTokens renders a token count or mean: whole numbers with thousands
// separators (2,147,483,647), others to one decimal.
func fmtTokens(v float64) string {
	if v != math.Trunc(v) || math.Abs(v) >= 1<<62 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return Thousands(int64(v))
}

// Thousands prints an integer with thousands separators: -12,000.
func Thousands(n int64) string {
	d := strconv.FormatInt(n, 10)
	var b strings.Builder
	if n < 0 {
		b.WriteByte('-')
		d = d[1:]
	}
	for i, r := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func fmtMinutes(m float64) string {
	switch {
	case m < 1:
		return fmt.Sprintf("%.0f s", m*60)
	case m < 120:
		return fmt.Sprintf("%.0f min", m)
	}
	return fmt.Sprintf("%.1f h", m/60)
}

func fmtMargin(m Metric) string {
	if m.Scale == "relative" {
		return fmt.Sprintf("%g%%", round6(float64(m.Margin)*100))
	}
	return fmt.Sprintf("%g pp", round6(float64(m.Margin)*100))
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// fmtDelta renders a delta on its metric's scale: pp for absolute fractions,
// % for relative changes.
func fmtDelta(m Metric, v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	if m.Scale == "relative" {
		return fmt.Sprintf("%+.1f%%", v*100)
	}
	return fmt.Sprintf("%+.2f pp", v*100)
}

// gateDirection is a gate row's direction: its metric's
// (MetricInfo.Direction), or "two_sided" when the policy makes a change
// either way harm.
func gateDirection(g policies.Gate, info policies.MetricInfo) string {
	if g.Direction == policies.TwoSided {
		return policies.TwoSided
	}
	return info.Direction()
}

func (j *judgement) evalGate(idx int, g policies.Gate, conf float64, r *Report) gateEval {
	info, _ := policies.Metric(g.Metric)
	dir := gateDirection(g, info)
	kb, kc := j.b.kept(), j.c.kept()
	m := Metric{Name: g.Metric, Guardrail: g.Guardrail, Direction: dir, Scale: info.Scale, Unit: info.Unit,
		Margin: Num(g.Margin.Value), Buckets: [2]int{len(kb), len(kc)}, Adjusted: j.adjustments(),
		NBaseline: int64(j.b.totals().offered), NCanary: int64(j.c.totals().offered),
		Baseline: Num(math.NaN()), Canary: Num(math.NaN()), Delta: Num(math.NaN()),
		Interval: [2]Num{Num(math.NaN()), Num(math.NaN())}, PFail: Num(math.NaN())}
	e := gateEval{m: m}
	inconclusive := func(reason string) gateEval {
		e.m.Verdict = Inconclusive
		e.m.Reason = reason
		return e
	}
	if why := j.unreported(g.Metric); why != "" {
		return inconclusive(why + ": the gate cannot be decided from this data, and a gate is never passed on a count the source does not give")
	}
	if tb, tc := j.b.totals(), j.c.totals(); g.Metric == "slo_attainment" && tb.good == 0 && tc.good == 0 && tb.offered > 0 && tc.offered > 0 {
		e.m.Baseline, e.m.Canary, e.m.Delta = 0, 0, 0
		return inconclusive(noneGood(tb.offered, tc.offered, j.shortShare()))
	}

	if isEfficiencyMetric(g.Metric) {
		e.m.Method = "delta-batchmeans"
		return efficiencyGate(e, g, info, j.p, armWork(j.b), armWork(j.c), conf)
	}
	var est stats.Estimate
	var vb, vc float64
	switch {
	case info.Latency != "":
		xb, xc := bySamples(kb, info.Latency), bySamples(kc, info.Latency)
		nb, nc := countSamples(xb), countSamples(xc)
		e.m.NBaseline, e.m.NCanary = int64(nb), int64(nc)
		pb, pc := j.b.pooled(info.Latency), j.c.pooled(info.Latency)
		vb, vc = quantile(pb, info.Quantile), quantile(pc, info.Quantile)
		e.m.Baseline, e.m.Canary = Num(vb), Num(vc)
		if nb == 0 || nc == 0 {
			return inconclusive(fmt.Sprintf("no %s values in %s", info.Latency, armsMissing(nb, nc)))
		}
		// a p99 needs enough samples beyond it to be estimated at all
		if need := need(info.Quantile); nb < need || nc < need {
			e.m.Method = "block-bootstrap"
			return inconclusive(fmt.Sprintf("too little data for a p%g: %d and %d values (need ≥ %d per arm, 10 beyond the quantile)",
				info.Quantile*100, nb, nc, need))
		}
		if j.mix != nil {
			naive := stats.QuantileLogRatio(xc, xb, info.Quantile, conf, j.cfg.Resamples, j.cfg.Seed+uint64(idx)*7919)
			sxb, sxc, sb, sc, wb, wc, err := j.mix.stratSamples(j, info.Latency)
			if err != nil {
				return inconclusive(err.Error())
			}
			est = stats.StratifiedQuantileLogRatio(sxc, sxb, sc, sb, wc, wb, info.Quantile, conf, j.cfg.Resamples, j.cfg.Seed+uint64(idx)*7919)
			e.m.Naive = &NaiveComparison{Baseline: Num(vb), Canary: Num(vc), Delta: Num(math.Exp(naive.Point) - 1),
				Interval: [2]Num{Num(math.Exp(naive.CI.Lo) - 1), Num(math.Exp(naive.CI.Hi) - 1)}}
			vb, vc = stats.StratifiedQuantile(sxb, sb, wb, info.Quantile), stats.StratifiedQuantile(sxc, sc, wc, info.Quantile)
			e.m.Adjusted = append(e.m.Adjusted, fmt.Sprintf("quantiles of the %s mix (%s): each value weighted by its stratum's reference share over the stratum's count, none dropped",
				j.mix.mode, j.mix.by))
		} else {
			est = stats.QuantileLogRatio(xc, xb, info.Quantile, conf, j.cfg.Resamples, j.cfg.Seed+uint64(idx)*7919)
		}
		if !j.paired && !j.b.pseudo && !j.c.pseudo {
			// arms that did not run side by side (benchmark runs one
			// after the other): each arm's own slow stretches set its
			// tail, which the bucket bootstrap under-covers (pooled
			// p99 83.7% at nominal 90% on the fleet model's sequential
			// A/A); the sectioning interval sees them, as for a class
			est = hullWith(est, recentred(stats.SectionedQuantileLogRatio(xc, xb, info.Quantile, conf, sectionMinValues(info.Quantile)), est.Point))
		}
		// replicas of their own speeds: what batches in time miss
		est = withReplicaLevels(est, conf, j.replicaSpreads[info.Latency], info.Latency, &e.m.Adjusted)
	case g.Metric == "cost_per_good_request":
		cb, cc, ok := j.costRatios(kb, kc)
		if !ok {
			e.m.Unit = "USD"
			return inconclusive("cost is unknown: give cost records (--cost) or cost rates in the policy's cost: block; a declared cost gate is never passed without cost data")
		}
		vb, vc = sum(cb.Num)/sum(cb.Den), sum(cc.Num)/sum(cc.Den)
		est = poissonFloor(stats.LogRatioOfRatios(cc, cb, conf), sum(cb.Den), sum(cc.Den), conf)
		if j.p.Normalize.Load == "matched" && !j.b.pseudo && !j.c.pseudo {
			if m, ok := j.costMatched(conf); ok {
				e.m.Naive = naiveOf(est, vb, vc)
				est = m
				vc = vb * math.Exp(est.Point)
				e.m.Adjusted = append(e.m.Adjusted, "matched offered load: cost per second over attainment, so the Poisson count of good requests routing sends each arm is not counted as cost noise")
			}
		}
	case g.Metric == "output_tokens_mean":
		rb, rc, why := j.ratios(g.Metric, kb, kc)
		if why != "" {
			return inconclusive(why)
		}
		if sum(rb.Den) == 0 || sum(rc.Den) == 0 || sum(rb.Num) == 0 {
			return inconclusive("no completed requests with a known output length in " + armsMissing(int(sum(rb.Num)), int(sum(rc.Num))))
		}
		vb, vc = sum(rb.Num)/sum(rb.Den), sum(rc.Num)/sum(rc.Den)
		est = stats.LogRatioOfRatios(rc, rb, conf)
		if j.mix != nil {
			adj, naive, sb, sc, err := j.standardized(g.Metric, requestOutputTokens, requestOutputKnown, true, conf)
			if err != nil {
				return inconclusive(err.Error())
			}
			e.m.Naive = naiveOf(naive, vb, vc)
			est, vb, vc = adj, sb, sc
			e.m.Adjusted = append(e.m.Adjusted, "standardized to the "+j.mix.mode+" mix ("+j.mix.by+")")
			if why := j.mix.merged[g.Metric]; why != "" {
				e.m.Adjusted = append(e.m.Adjusted, why)
			}
		}
	default:
		rb, rc, why := j.ratios(g.Metric, kb, kc)
		if why != "" {
			return inconclusive(why)
		}
		vb, vc = sum(rb.Num)/sum(rb.Den), sum(rc.Num)/sum(rc.Den)
		if info.Scale == "absolute" {
			est = stats.DiffOfRatios(rc, rb, conf)
			if num, den := countFuncs(g.Metric); j.paired && num != nil {
				pb, pc := j.alignedRatios(num, den)
				est = stats.PairedDiffOfRatios(pc, pb, conf)
			}
			// replicas that differ all run: what batches in time miss
			var spread replicaWidening
			if g.Metric == "slo_attainment" {
				repB, _ := j.b.replicaCounts()
				repC, _ := j.c.replicaCounts()
				spread = replicaSpread(repB, repC)
			}
			var repNote []string
			est = binomialFloor(withReplicaSpread(est, conf, spread, &repNote), sum(rc.Num), sum(rc.Den), sum(rb.Num), sum(rb.Den), conf)
			if num := perRequestNum(g.Metric); j.mix != nil && num != nil {
				adj, _, sb, sc, err := j.standardized(g.Metric, num, requestOne, false, conf)
				if err != nil {
					return inconclusive(err.Error())
				}
				e.m.Naive = &NaiveComparison{Baseline: Num(vb), Canary: Num(vc), Delta: Num(est.Point), Interval: [2]Num{Num(est.CI.Lo), Num(est.CI.Hi)}}
				repNote = nil
				adj = withReplicaSpread(adj, conf, spread, &repNote)
				est = binomialFloor(adj, sum(rc.Num), sum(rc.Den), sum(rb.Num), sum(rb.Den), conf)
				vb, vc = sb, sc
				e.m.Adjusted = append(e.m.Adjusted, "standardized to the "+j.mix.mode+" mix ("+j.mix.by+")")
			}
			e.m.Adjusted = append(e.m.Adjusted, repNote...)
			if g.Metric == "slo_attainment" && j.cache == "adjust" && e.m.Naive != nil {
				// CUPED compares mean bucket attainment over each arm's own
				// mix: it never replaces a standardized estimate
				e.m.Adjusted = append(e.m.Adjusted, "not CUPED-adjusted: CUPED would replace the mix-standardized comparison")
			} else if g.Metric == "slo_attainment" && j.cache == "adjust" {
				res, err := j.cuped(conf)
				if err != nil {
					e.m.Adjusted = append(e.m.Adjusted, "not CUPED-adjusted: "+err.Error())
				} else {
					if e.m.Naive == nil {
						e.m.Naive = &NaiveComparison{Baseline: Num(vb), Canary: Num(vc), Delta: Num(est.Point), Interval: [2]Num{Num(est.CI.Lo), Num(est.CI.Hi)}}
					}
					est = binomialFloor(withReplicaSpread(res.Adjusted, conf, spread, &e.m.Adjusted), sum(rc.Num), sum(rc.Den), sum(rb.Num), sum(rb.Den), conf)
					vb, vc = res.Baseline.AdjustedMean, res.Canary.AdjustedMean
					e.m.Adjusted = append(e.m.Adjusted, fmt.Sprintf("CUPED on the per-bucket prefix-cache hit rate: θ = %.3g, variance reduction %.0f%%, mean bucket attainment compared",
						res.Theta, 100*res.VarianceReduction))
				}
			}
		} else {
			gb, gc := j.b.totals().good, j.c.totals().good
			est = poissonFloor(stats.LogRatioOfRatios(rc, rb, conf), gb, gc, conf)
			if j.p.Normalize.Load == "matched" {
				naive := est
				var f float64
				est, f = j.matchedLoad(rb, rc, kb, kc, g.Metric == "token_goodput", conf)
				vc *= f
				e.m.Naive = naiveOf(naive, vb, vc/f)
				e.m.Adjusted = append(e.m.Adjusted, fmt.Sprintf("matched offered load: canary scaled ×%.4f to the baseline's offered load per unit of %s", f, denName(g.Metric)))
				if j.mix != nil {
					num := requestGood
					if g.Metric == "token_goodput" {
						num = requestGoodTokens
					}
					adj, _, sb, sc, err := j.standardized(g.Metric, num, requestOne, true, conf)
					if err != nil {
						return inconclusive(err.Error())
					}
					// keep the matched-load floor's width around the standardized point
					half := math.Max((est.CI.Hi-est.CI.Lo)/2, (adj.CI.Hi-adj.CI.Lo)/2)
					est = stats.Estimate{Point: adj.Point, CI: stats.Interval{Lo: adj.Point - half, Hi: adj.Point + half},
						SE: math.Max(nanTo0(est.SE), nanTo0(adj.SE)), Method: adj.Method + "-matched-load"}
					vc = vb * sc / sb
					e.m.Adjusted = append(e.m.Adjusted, "standardized to the "+j.mix.mode+" mix ("+j.mix.by+")")
				}
			} else if j.mix != nil {
				// each arm's good requests (or their tokens) reweighted to
				// the reference mix, its offered total kept, over its own
				// seconds: as the aggregate reweights the canary's counts
				num := requestGood
				if g.Metric == "token_goodput" {
					num = requestGoodTokens
				}
				sb2, sc2, err := j.mixReweighted(num, rb, rc, kb, kc)
				if err != nil {
					return inconclusive(err.Error())
				}
				naive := est
				est = poissonFloor(stats.LogRatioOfRatios(sc2, sb2, conf), gb, gc, conf)
				e.m.Naive = naiveOf(naive, vb, vc)
				vb, vc = sum(sb2.Num)/sum(sb2.Den), sum(sc2.Num)/sum(sc2.Den)
				e.m.Adjusted = append(e.m.Adjusted, "standardized to the "+j.mix.mode+" mix ("+j.mix.by+"): each arm's good requests reweighted by stratum, its offered total kept")
			}
		}
	}
	// users served by one arm: what batches in time miss, and what their
	// prompts do to the rest of their arm
	if w, ok := usersWideningOf(j.b.userTally(), j.c.userTally(), g.Metric, info.Scale == "relative",
		func() ([]loadBlock, []loadBlock) { return j.loadBlocks(j.b), j.loadBlocks(j.c) }); ok {
		est = w.widen(est, &e.m.Adjusted)
	}
	est = persistenceWidened(est, j.p.Window, min(len(kb), len(kc)), j.b.bucketSecs, conf, &e.m.Adjusted)
	e.m.Baseline, e.m.Canary = Num(vb), Num(vc)
	e.m.Method = est.Method
	if len(kb) < MinBuckets || len(kc) < MinBuckets {
		return inconclusive(fmt.Sprintf("too little data: %d and %d buckets of %gs (need ≥ %d per arm)",
			len(kb), len(kc), j.p.Window.Bucket.Seconds(), MinBuckets))
	}
	if math.IsNaN(est.Point) || math.IsNaN(est.CI.Lo) || math.IsNaN(est.CI.Hi) {
		return inconclusive("the interval could not be computed (no variation or no data in an arm)")
	}
	e = decide(e, g, info, est)
	if g.Metric == "output_tokens_mean" {
		tb, tc := j.b.totals(), j.c.totals()
		e = heldByOutputGap(e, outputKnownGap(tb.completed, tb.outUnknown, tc.completed, tc.outUnknown))
		e = heldByOneCompletion(e, tb.outputTop(), tc.outputTop())
	}
	return e
}

// decide applies the verdict rule of DESIGN.md §5 to an estimate on the
// metric's native scale (a difference, or a log ratio for relative
// metrics): it fills the reported delta and interval, the harm-space
// thresholds for Holm and MoreData, the decision and its reason.
func decide(e gateEval, g policies.Gate, info policies.MetricInfo, est stats.Estimate) gateEval {
	if math.IsNaN(est.CI.Lo) || math.IsNaN(est.CI.Hi) {
		e.m.Verdict = Inconclusive
		e.m.Reason = "the interval could not be computed"
		return e
	}
	var lo, hi, otherAt float64
	if info.Scale == "relative" {
		e.m.Delta = Num(math.Exp(est.Point) - 1)
		lo, hi = math.Exp(est.CI.Lo)-1, math.Exp(est.CI.Hi)-1
		if info.HigherIsBetter {
			e.passAt, otherAt = -math.Log1p(-g.Margin.Value), math.Log1p(g.Margin.Value)
		} else {
			e.passAt, otherAt = math.Log1p(g.Margin.Value), -math.Log1p(-g.Margin.Value)
		}
	} else {
		e.m.Delta = Num(est.Point)
		lo, hi = est.CI.Lo, est.CI.Hi
		e.passAt, otherAt = g.Margin.Value, g.Margin.Value
	}
	e.m.Interval = [2]Num{Num(lo), Num(hi)}
	harm := stats.Interval{Lo: est.CI.Lo, Hi: est.CI.Hi}
	e.harmPoint = est.Point
	if info.HigherIsBetter {
		harm = stats.Interval{Lo: -est.CI.Hi, Hi: -est.CI.Lo}
		e.harmPoint = -est.Point
	}
	e.se = est.SE
	rule := stats.NonInferiority
	if g.Guardrail {
		rule = stats.Guardrail
	}
	e.decision = rule(harm, e.passAt)
	if g.Direction == policies.TwoSided {
		e.twoSided = true
		// harm either way: the other side is the metric's own direction
		// reversed, with the margin on the delta's scale (±5% is a log
		// ratio of log 1.05 one way and −log 0.95 the other)
		other := stats.Interval{Lo: -harm.Hi, Hi: -harm.Lo}
		od := rule(other, otherAt)
		switch {
		case e.decision == stats.Fail:
		case od == stats.Fail || (e.decision == stats.Pass && od != stats.Pass) || (od == stats.Inconclusive && e.harmPoint < 0):
			// decided (and tested for Holm, and projected for more data)
			// on the side the estimate lies
			e.decision = od
			e.harmPoint, e.passAt = -e.harmPoint, otherAt
		}
	}
	e.failAt = e.passAt
	if g.Guardrail {
		e.failAt = 0
	}
	e.decidable = true
	e.m.Reason = gateReason(e.m, e.decision)
	return e
}

func gateReason(m Metric, d stats.Decision) string {
	iv := fmt.Sprintf("%s [%s, %s]", fmtDelta(m, float64(m.Delta)), fmtDelta(m, float64(m.Interval[0])), fmtDelta(m, float64(m.Interval[1])))
	if m.Direction == policies.TwoSided {
		return twoSidedReason(m, d, iv)
	}
	worse := "worse"
	switch {
	case d == stats.Pass:
		return fmt.Sprintf("%s: harm stays within the %s margin", iv, fmtMargin(m))
	case d == stats.Fail && m.Guardrail:
		return fmt.Sprintf("%s: the canary is %s with confidence (guardrail)", iv, worse)
	case d == stats.Fail:
		return fmt.Sprintf("%s: the canary is %s by more than the %s margin", iv, worse, fmtMargin(m))
	}
	return fmt.Sprintf("%s: the interval straddles the %s margin", iv, fmtMargin(m))
}

// twoSidedReason is gateReason for a gate whose harm is a change either
// way (direction two_sided).
func twoSidedReason(m Metric, d stats.Decision, iv string) string {
	way := "lower"
	if m.Delta > 0 {
		way = "higher"
	}
	switch {
	case d == stats.Pass:
		return fmt.Sprintf("%s: the change stays within the ±%s margin", iv, fmtMargin(m))
	case d == stats.Fail && m.Name == "output_tokens_mean" && m.Delta > 0:
		return fmt.Sprintf("%s: the canary's answers are longer by more than the %s margin: it generates more tokens per completion than the baseline (stop conditions, max_tokens or sampling changed?), each answer costing more GPU time and end-to-end latency (a two-sided gate)", iv, fmtMargin(m))
	case d == stats.Fail && m.Guardrail:
		return fmt.Sprintf("%s: the canary is %s with confidence (a two-sided guardrail)", iv, way)
	case d == stats.Fail:
		return fmt.Sprintf("%s: the canary is %s by more than the %s margin (a two-sided gate: a change either way beyond it fails)", iv, way, fmtMargin(m))
	}
	lo, hi, margin := float64(m.Interval[0]), float64(m.Interval[1]), float64(m.Margin)
	switch {
	case lo <= -margin && hi >= margin:
		return fmt.Sprintf("%s: the interval reaches past both ends of the ±%s margin", iv, fmtMargin(m))
	case lo <= -margin:
		return fmt.Sprintf("%s: the interval straddles the -%s end of the ±%s margin", iv, fmtMargin(m), fmtMargin(m))
	}
	return fmt.Sprintf("%s: the interval straddles the +%s end of the ±%s margin", iv, fmtMargin(m), fmtMargin(m))
}

// retriesUnreported is true when neither arm's records give their
// attempt: only then are retries not reported, as from metrics (a log
// that writes attempt only on a retry gives it nowhere in an arm that
// retried nothing, and its omitted attempts are first tries).
func (j *judgement) retriesUnreported() bool { return !j.b.attemptKnown && !j.c.attemptKnown }

// unreported is aggJudgement.unreported for per-request records:
// retry_share cannot be decided when retriesUnreported ("" otherwise).
func (j *judgement) unreported(metric string) string {
	if countOf(metric) != "retried" || !j.retriesUnreported() {
		return ""
	}
	return unreportedText([]string{fmt.Sprintf("%s (per-request records)", j.b.arm), fmt.Sprintf("%s (per-request records)", j.c.arm)}, "retried")
}

// unreportedText says which arms' sources do not report a count ("" for
// none): the reason both paths give a gate or guardrail left undecided.
func unreportedText(arms []string, count string) string {
	if len(arms) == 0 {
		return ""
	}
	return fmt.Sprintf("the source of %s does not report %s requests", strings.Join(arms, " and "), count)
}

// checkedGates returns gates without the guardrails on a count the data
// does not report (unreported names why, "" when it does), each left out
// with a warning: an engine never sees requests shed before it, and
// neither metrics nor records without attempt say which request is a
// retry. A gate on such a count is kept and stays inconclusive. Both
// judging paths call it.
func checkedGates(gates []policies.Gate, unreported func(metric string) string, warnf func(format string, a ...any)) []policies.Gate {
	var out []policies.Gate
	for _, g := range gates {
		if why := unreported(g.Metric); why != "" && g.Guardrail {
			warnf("the %s guardrail is not checked on this data: %s; a gateway's or the clients' records can check it", g.Metric, why)
			continue
		}
		out = append(out, g)
	}
	return out
}

// outputKnown is output_tokens_mean's per-bucket denominator: the
// completions that give their output length.
func outputKnown(b *bucket) float64 { return b.completed - b.outUnknown }

// MaxFieldShareGap is how far apart (absolute, 0.01 = 1 pp) the arms'
// shares of completions that lack a field may lie before the comparisons
// that read it say so (sharesApart): a log that gives output_tokens for
// half of one arm's answers compares unlike sets of requests, and counting
// the others as 0 tokens read a logging change as answers cut in half.
const MaxFieldShareGap = 0.01

// sharesApart reports whether the arms' shares xb/nb and xc/nc (of nb and
// nc completed requests) lie more than MaxFieldShareGap apart and beyond
// chance: a two-proportion z above 3, so that identical logging never
// trips it at any sample size.
func sharesApart(xb, nb, xc, nc float64) bool {
	if !(nb > 0 && nc > 0) {
		return false
	}
	d := math.Abs(xb/nb - xc/nc)
	if d <= MaxFieldShareGap {
		return false
	}
	se := pooledSE(xb, nb, xc, nc)
	return !(se > 0 && d/se <= 3)
}

// pooledSE is the standard error of the difference of two proportions
// xb/nb and xc/nc under their pooled share, the two-proportion z test's
// (sharesApart, qualityGap).
func pooledSE(xb, nb, xc, nc float64) float64 {
	p := (xb + xc) / (nb + nc)
	return math.Sqrt(p * (1 - p) * (1/nb + 1/nc))
}

// outputKnownGap returns why output_tokens_mean cannot be decided when the
// arms give an output length for shares of their completed requests
// (completed, of which unknown give none, per arm) that lie apart
// (sharesApart), "" otherwise. Both judging paths call it.
func outputKnownGap(completedB, unknownB, completedC, unknownC float64) string {
	if !sharesApart(unknownB, completedB, unknownC, completedC) {
		return ""
	}
	return fmt.Sprintf("the baseline gives an output length (output_tokens) for %.1f%% of its %s completed requests and the canary for %.1f%% of its %s: means over unlike sets of requests are not compared; log output_tokens for every completion",
		100*(1-unknownB/completedB), fmtCount(completedB), 100*(1-unknownC/completedC), fmtCount(completedC))
}

// unverifiedGap compares the arms' shares of completed requests that lack
// the field an SLO criterion needs (counted as not good: missing data is
// never good). When the shares lie apart (sharesApart) for some criterion,
// it returns the facts (gap) and whether the baseline lacks more
// (baselineMore): a baseline logged that way lowers its own attainment and
// lets any canary pass, while a canary that lacks more may be logged
// differently or may be answering differently (an empty answer written
// without its lengths), which the records cannot tell apart. unvB and unvC
// count per criterion, completedB and completedC the arms' completed
// requests; gap is "" when no criterion's shares differ. Both judging
// paths call it on every record of the arms.
func unverifiedGap(unvB, unvC map[string]int64, completedB, completedC float64) (gap string, baselineMore bool) {
	keys := map[string]bool{}
	for k := range unvB {
		keys[k] = true
	}
	for k := range unvC {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		ub, uc := float64(unvB[k]), float64(unvC[k])
		if k == sources.ClassUnverified || !sharesApart(ub, completedB, uc, completedC) {
			// a class a missing length decided: classGap
			continue
		}
		sb, sc := ub/completedB, uc/completedC
		return fmt.Sprintf("the baseline's completed requests lack the field the %s criterion needs in %.1f%% of %s and the canary's in %.1f%% of %s, counted as not good; log the field for every completion (%s)",
			k, 100*sb, fmtCount(completedB), 100*sc, fmtCount(completedC), criterionFields(k)), sb > sc
	}
	return "", false
}

// criterionFields names the request-log fields an SLO criterion reads.
func criterionFields(k string) string {
	switch k {
	case "ttft":
		return "ttft_s"
	case "tpot":
		return "tpot_s, or e2e_s with ttft_s and output_tokens"
	case "e2e":
		return "e2e_s"
	case "max_itl":
		return "max_itl_s"
	case "quality":
		return "quality_ok"
	}
	return k
}

// classGap compares the arms' shares of completed requests whose policy
// class a missing prompt or output length may have decided
// (sources.ClassUnverified in unvB and unvC; completedB and completedC the
// arms' completed requests): when they lie apart (sharesApart), the arms
// were judged by different SLOs for reasons of logging alone, and it
// returns the facts; "" otherwise. Unlike a missing latency, a missing
// prompt length says nothing of how the arm served (the client sets the
// prompt), so neither arm is blamed for it (heldByClassGap). Both judging
// paths call it on every record of the arms.
func classGap(p *policies.Policy, unvB, unvC map[string]int64, completedB, completedC float64) string {
	ub, uc := float64(unvB[sources.ClassUnverified]), float64(unvC[sources.ClassUnverified])
	if !sharesApart(ub, completedB, uc, completedC) {
		return ""
	}
	var rules, fields []string
	for _, c := range p.Classes {
		if w := c.When; w.PromptTokens != nil || w.OutputTokens != nil {
			rules = append(rules, strconv.Quote(c.Name))
			if w.PromptTokens != nil && !slices.Contains(fields, "prompt_tokens") {
				fields = append(fields, "prompt_tokens")
			}
			if w.OutputTokens != nil && !slices.Contains(fields, "output_tokens") {
				fields = append(fields, "output_tokens")
			}
		}
	}
	slices.Sort(fields)
	f := strings.Join(fields, " or ")
	return fmt.Sprintf("the baseline's completed requests lack the %s that the policy's class rules (%s) read in %.1f%% of %s and the canary's in %.1f%% of %s: their class, and so the SLO they were judged by, was decided without it, so the arms were judged by different rules; log %s for every request",
		f, strings.Join(rules, ", "), 100*ub/completedB, fmtCount(completedB), 100*uc/completedC, fmtCount(completedC), strings.Join(fields, " and "))
}

// labelClassGap returns why the arms were judged by different SLO rules
// when a policy class's rule reads the label and the arms' completed
// requests (completed, of which unlabelled give no class label, per arm)
// lack it in shares that lie apart (sharesApart): a request without a
// label is judged by the SLO the other rules (or the default) give it,
// whatever its traffic. A class stricter than the default let a 10%
// regression of a canary logged without labels PASS from its aggregate.
// "" when the shares agree or no rule reads the label. Both judging
// paths call it.
func labelClassGap(p *policies.Policy, unlabelledB, completedB, unlabelledC, completedC float64) string {
	if !sharesApart(unlabelledB, completedB, unlabelledC, completedC) {
		return ""
	}
	var rules []string
	for _, c := range p.Classes {
		if len(c.When.Label) > 0 {
			rules = append(rules, strconv.Quote(c.Name))
		}
	}
	if len(rules) == 0 {
		return ""
	}
	return fmt.Sprintf("the baseline's completed requests lack the class label (class) that the policy's class rules (%s) read in %.1f%% of %s and the canary's in %.1f%% of %s: a request without one was judged by the SLO the other rules give it, whatever its traffic, so the arms were judged by different rules; log class for every request of both arms",
		strings.Join(rules, ", "), 100*unlabelledB/completedB, fmtCount(completedB), 100*unlabelledC/completedC, fmtCount(completedC))
}

// heldByClassGap makes a decided run inconclusive when gap (classGap) says
// the arms' SLO classes were decided by what their logs give: a pass or a
// fail may be the logging's, not the change's. An inconclusive run gains
// the reason.
func heldByClassGap(r *Report, gap string) {
	if gap != "" && r.Verdict == Inconclusive {
		r.Reasons = append(r.Reasons, gap)
		return
	}
	heldDecided(r, gap)
}

// heldByUnverifiedGap applies unverifiedGap's finding to the verdict: a
// pass with the baseline lacking more is inconclusive (its attainment was
// lowered by how it was logged), and a fail with the canary lacking more
// says that part of it may be how the canary was logged (the fail stands:
// missing data is never good, and a canary answering with nothing to time
// must not pass). Nothing is done when gap is "".
func heldByUnverifiedGap(r *Report, gap string, baselineMore bool) {
	switch {
	case gap == "":
	case baselineMore && r.Verdict == Pass:
		r.Reasons = append([]string{fmt.Sprintf("the gates give PASS, but %s: the baseline's attainment is lowered by how it was logged, so the pass cannot be blamed on the change", gap)}, r.Reasons...)
		r.Verdict = Inconclusive
	case !baselineMore && r.Verdict == Fail:
		r.Reasons = append(r.Reasons, fmt.Sprintf("%s: part of the fail may be how the canary was logged rather than how it served", gap))
	}
}

// outputUnknownWarning is an arm's warning when unknown of its completed
// requests give no output length ("" for none). Both judging paths call it.
func outputUnknownWarning(unknown, completed float64) string {
	if !(unknown > 0 && completed > 0) {
		return ""
	}
	if unknown >= completed {
		return fmt.Sprintf("none of its %s completed requests gives an output length (output_tokens): output_tokens_mean cannot be taken, and token goodput counts no tokens", fmtCount(completed))
	}
	return fmt.Sprintf("%s of %s completed requests (%.1f%%) give no output length (output_tokens): output_tokens_mean is taken over the others, and token goodput counts no tokens for them",
		fmtCount(unknown), fmtCount(completed), 100*unknown/completed)
}

// heldByOutputGap leaves a decided output_tokens_mean gate inconclusive
// with gap's reason (outputKnownGap), its estimate still shown; e is
// returned unchanged when gap is "".
func heldByOutputGap(e gateEval, gap string) gateEval {
	if gap == "" {
		return e
	}
	e.decidable, e.m.Verdict = false, Inconclusive
	e.m.Reason = fmt.Sprintf("%s [%s, %s] over the completions that give their length, not decided: %s",
		fmtDelta(e.m, float64(e.m.Delta)), fmtDelta(e.m, float64(e.m.Interval[0])), fmtDelta(e.m, float64(e.m.Interval[1])), gap)
	return e
}

// OneCompletionSway is how far, as a share of output_tokens_mean's
// margin, leaving out an arm's longest completion may move that arm's
// mean output length before the gate is left undecided (½: with a 5%
// margin, a mean that one answer moves by more than 2.5%).
const OneCompletionSway = 0.5

// outputTop is what an arm's mean output length rests on: tokens summed
// over n completions that give their length, max the most one of them
// gave.
type outputTop struct{ tokens, n, max float64 }

// sway is how much larger the arm's mean output length is with its
// longest completion than without it (0.1 = 10%; +Inf when it holds
// every token): 0 when there is none or only one.
func (o outputTop) sway() float64 {
	if !(o.max > 0) || o.n < 2 {
		return 0
	}
	rest := o.tokens - o.max
	if !(rest > 0) {
		return math.Inf(1)
	}
	return (o.tokens/o.n)/(rest/(o.n-1)) - 1
}

// outputTop is what the mean output length of b (an arm's totals) rests
// on (heldByOneCompletion).
func (b *bucket) outputTop() outputTop {
	return outputTop{b.outTokens, b.completed - b.outUnknown, b.outMax}
}

// heldByOneCompletion leaves an output_tokens_mean gate inconclusive, its
// estimate still shown, when one completion sets an arm's mean: leaving
// the arm's longest completion out moves the mean by more than
// OneCompletionSway of the gate's margin. A batch-means interval then
// says nothing about how likely such an answer is (one record, an
// overflowed or sentinel token count, made a canary +238,815% with an
// interval of [+31,719%, +1,793,817%] and failed it); whether the record
// is corrupt or an answer that ran on, one record decides no verdict. b
// and c are the arms as counted; e is returned unchanged when neither is
// set by one completion.
func heldByOneCompletion(e gateEval, b, c outputTop) gateEval {
	margin := float64(e.m.Margin)
	sb, sc := b.sway(), c.sway()
	if !(margin > 0) || math.Max(sb, sc) <= OneCompletionSway*margin {
		return e
	}
	arm, top, sway := "canary", c, sc
	if sb > sc {
		arm, top, sway = "baseline", b, sb
	}
	without := "it holds every token"
	if rest := top.tokens - top.max; rest > 0 {
		without = fmt.Sprintf("without it the mean is %s instead of %s (%s with it)", fmtTokens((rest)/(top.n-1)), fmtTokens(top.tokens/top.n), fmtDelta(e.m, sway))
	}
	e.decidable, e.m.Verdict = false, Inconclusive
	e.m.Reason = fmt.Sprintf("%s [%s, %s], not decided: one completion sets the %s's mean output length: it gave %s output tokens of the %s's %s, and %s, more than half the %s margin. No verdict rests on one record: find it in the %s's log (output_tokens %s); if it is corrupt (an overflow, a sentinel), fix or remove it and judge again; if it is an answer that ran on, more data tells whether the change makes them",
		fmtDelta(e.m, float64(e.m.Delta)), fmtDelta(e.m, float64(e.m.Interval[0])), fmtDelta(e.m, float64(e.m.Interval[1])),
		arm, fmtTokens(top.max), arm, fmtTokens(top.tokens), without, fmtMargin(e.m), arm, strconv.FormatFloat(top.max, 'f', -1, 64))
	return e
}

func armsMissing(nb, nc int) string {
	switch {
	case nb == 0 && nc == 0:
		return "either arm"
	case nb == 0:
		return "the baseline"
	}
	return "the canary"
}

func bySamples(bs []bucket, which string) [][]float64 {
	out := make([][]float64, len(bs))
	for i := range bs {
		out[i] = samplesOf(&bs[i], which)
	}
	return out
}

func countSamples(x [][]float64) int {
	n := 0
	for _, v := range x {
		n += len(v)
	}
	return n
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

// ratios builds the per-bucket numerator and denominator of a count metric.
func (j *judgement) ratios(metric string, kb, kc []bucket) (rb, rc stats.Ratio, why string) {
	var num, den func(b *bucket) float64
	switch metric {
	case "slo_attainment":
		num, den = func(b *bucket) float64 { return b.good }, func(b *bucket) float64 { return b.offered }
	case "error_rate":
		num, den = func(b *bucket) float64 { return b.failed }, func(b *bucket) float64 { return b.offered }
	case "rejected_share":
		num, den = func(b *bucket) float64 { return b.rejected }, func(b *bucket) float64 { return b.offered }
	case "canceled_share":
		num, den = func(b *bucket) float64 { return b.canceled }, func(b *bucket) float64 { return b.offered }
	case "retry_share":
		num, den = func(b *bucket) float64 { return b.retries }, func(b *bucket) float64 { return b.offered }
	case "output_tokens_mean":
		num, den = func(b *bucket) float64 { return b.outTokens }, outputKnown
	case "goodput", "token_goodput", "goodput_per_replica":
		if math.IsNaN(j.b.windowSecs) || math.IsNaN(j.c.windowSecs) {
			return rb, rc, "goodput needs a run duration or arrival times, and an input has neither"
		}
		num = func(b *bucket) float64 { return b.good }
		if metric == "token_goodput" {
			num = func(b *bucket) float64 { return b.goodTokens }
		}
		den = func(b *bucket) float64 {
			if b.leftOut {
				return 0 // left out of both arms: no time to count
			}
			return b.secs
		}
		if metric == "goodput_per_replica" {
			den = func(b *bucket) float64 { return b.replicaSecs }
			for _, a := range []*armData{j.b, j.c} {
				if !a.replicasKnown {
					j.warnf("%s: no replica field in the data: goodput_per_replica counts the arm as one replica throughout", a.arm)
				}
			}
		}
	default:
		return rb, rc, fmt.Sprintf("metric %s is not computable from per-request data", metric)
	}
	build := func(bs []bucket) stats.Ratio {
		r := stats.Ratio{Num: make([]float64, len(bs)), Den: make([]float64, len(bs))}
		for i := range bs {
			r.Num[i], r.Den[i] = num(&bs[i]), den(&bs[i])
		}
		return r
	}
	return build(kb), build(kc), ""
}

// costRatios gives each bucket's cost (from records or the policy's rates,
// see costs) and good requests.
func (j *judgement) costRatios(kb, kc []bucket) (cb, cc stats.Ratio, ok bool) {
	if j.b.cost == nil || j.c.cost == nil {
		return cb, cc, false
	}
	build := func(bs []bucket) stats.Ratio {
		r := stats.Ratio{Num: make([]float64, len(bs)), Den: make([]float64, len(bs))}
		for i := range bs {
			r.Num[i], r.Den[i] = bs[i].cost, bs[i].good
		}
		return r
	}
	return build(kb), build(kc), true
}

// adjustments lists what was applied to every gate (warm-up cut, mix…).
func (j *judgement) adjustments() []string {
	out := []string{}
	if j.b.cutSecs > 0 || j.c.cutSecs > 0 {
		out = append(out, fmt.Sprintf("warm-up cut %gs", math.Max(j.b.cutSecs, j.c.cutSecs)))
	}
	return append(out, outageAdjusted(j.b.clock, j.outages)...)
}

// binomialFloor widens a cluster interval of a difference of proportions to
// at least Newcombe's interval on the pooled counts. Positive correlation
// within buckets can only widen the independent-requests interval, so a
// narrower cluster interval (few buckets, no visible variation — e.g. 200 of
// 200 good in both arms) reflects luck in the bucket variance, not
// certainty; the hull keeps "too little data" from passing.
func binomialFloor(est stats.Estimate, kx, nx, ky, ny, conf float64) stats.Estimate {
	if math.IsNaN(est.Point) || nx <= 0 || ny <= 0 {
		return est
	}
	nc := stats.NewcombeDiff(kx, nx, ky, ny, conf)
	// the floor's widths, around est's own point (which may be a
	// standardised difference rather than the pooled one)
	pooled := kx/nx - ky/ny
	nc = stats.Interval{Lo: est.Point - (pooled - nc.Lo), Hi: est.Point + (nc.Hi - pooled)}
	if nc.Lo < est.CI.Lo || nc.Hi > est.CI.Hi {
		est.CI = stats.Interval{Lo: math.Min(nc.Lo, est.CI.Lo), Hi: math.Max(nc.Hi, est.CI.Hi)}
		z := distuv.UnitNormal.Quantile(0.5 + conf/2)
		est.SE = math.Max(nanTo0(est.SE), (est.CI.Hi-est.CI.Lo)/(2*z))
		est.Method += "+newcombe-floor"
	}
	return est
}

// poissonFloor widens a log-ratio interval so its standard error is at least
// that of two independent Poisson counts of good requests, √(1/g_b + 1/g_c):
// the variation a repeat run would show even without correlation.
func poissonFloor(est stats.Estimate, gb, gc, conf float64) stats.Estimate {
	if math.IsNaN(est.Point) {
		return est
	}
	if gb <= 0 || gc <= 0 {
		est.CI = stats.Interval{Lo: math.Inf(-1), Hi: math.Inf(1)}
		est.SE = math.NaN()
		return est
	}
	floor := math.Sqrt(1/gb + 1/gc)
	if math.IsNaN(est.SE) || est.SE >= floor {
		return est
	}
	z := distuv.UnitNormal.Quantile(0.5 + conf/2)
	est.SE = floor
	est.CI = stats.Interval{Lo: math.Min(est.CI.Lo, est.Point-z*floor), Hi: math.Max(est.CI.Hi, est.Point+z*floor)}
	est.Method += "+poisson-floor"
	return est
}

func denName(metric string) string {
	if metric == "goodput_per_replica" {
		return "replica-second"
	}
	return "second"
}

func naiveOf(est stats.Estimate, vb, vc float64) *NaiveComparison {
	return &NaiveComparison{Baseline: Num(vb), Canary: Num(vc), Delta: Num(math.Exp(est.Point) - 1),
		Interval: [2]Num{Num(math.Exp(est.CI.Lo) - 1), Num(math.Exp(est.CI.Hi) - 1)}}
}

// matchedLoad compares a goodput-like ratio (numerator per unit of time or
// replica time) at matched offered load: how much the arms are offered is
// set by routing, not by the change under test, so the exogenous ratio of
// offered load is divided out and what remains is the ratio of good output
// per offered request. Rejections, failures and retries the canary causes
// stay in it (they are offered requests that were not good). f is the
// factor that scales the canary's figure to the baseline's offered load.
// tokens says the numerator is good requests' output tokens (token
// goodput), whose ratio the good requests' own floor only widens
// (tokenRatioFloor).
func (j *judgement) matchedLoad(rb, rc stats.Ratio, kb, kc []bucket, tokens bool, conf float64) (stats.Estimate, float64) {
	perOffered := func(r stats.Ratio, bs []bucket) stats.Ratio {
		out := stats.Ratio{Num: r.Num, Den: make([]float64, len(bs))}
		for i := range bs {
			out.Den[i] = bs[i].offered
		}
		return out
	}
	loadB := sum(perOffered(rb, kb).Den) / sum(rb.Den)
	loadC := sum(perOffered(rc, kc).Den) / sum(rc.Den)
	est := stats.LogRatioOfRatios(perOffered(rc, kc), perOffered(rb, kb), conf)
	est.Method += "-matched-load"
	tb, tc := j.b.totals(), j.c.totals()
	est = matchedFloor(tokens)(est, tc.good, tc.offered, tb.good, tb.offered, conf)
	return est, loadB / loadC
}

// matchedFloor is the count floor of a goodput ratio at matched offered
// load: ratioFloor when the ratio is the good requests' own, tokenRatioFloor
// when tokens (good requests' output tokens per offered request).
func matchedFloor(tokens bool) func(est stats.Estimate, kx, nx, ky, ny, conf float64) stats.Estimate {
	if tokens {
		return tokenRatioFloor
	}
	return ratioFloor
}

// perRequestNum gives the per-request numerator of a count gate, for
// standardisation; nil for other gates.
func perRequestNum(metric string) func(*armData, int) float64 {
	switch metric {
	case "slo_attainment":
		return requestGood
	case "error_rate":
		return requestFailed
	case "rejected_share":
		return requestRejected
	case "canceled_share":
		return requestCanceled
	case "retry_share":
		return requestRetry
	}
	return nil
}

// need is the fewest values per arm for a q-quantile gate: 10 beyond it.
func need(q float64) int { return int(math.Ceil(10 / (1 - q))) }

func sortedPool(x [][]float64) []float64 {
	var out []float64
	for _, v := range x {
		out = append(out, v...)
	}
	stats.SortFloat64s(out)
	return out
}

// ratioFloor widens a log-ratio interval of two proportions (kx/nx over
// ky/ny) to at least the independent-requests interval: Newcombe's interval
// of the difference, relative to the baseline proportion, on the log scale.
func ratioFloor(est stats.Estimate, kx, nx, ky, ny, conf float64) stats.Estimate {
	if nx <= 0 || ny <= 0 || ky <= 0 || math.IsNaN(est.Point) {
		return est
	}
	py := ky / ny
	nc := stats.NewcombeDiff(kx, nx, ky, ny, conf)
	return newcombeFloor(est, math.Log1p(math.Max(nc.Lo/py, -0.999999)), math.Log1p(nc.Hi/py), conf)
}

// newcombeFloor widens est's interval to cover [lo, hi] (log scale), its
// standard error then read from the widened interval at confidence conf.
func newcombeFloor(est stats.Estimate, lo, hi, conf float64) stats.Estimate {
	if lo < est.CI.Lo || hi > est.CI.Hi {
		est.CI = stats.Interval{Lo: math.Min(lo, est.CI.Lo), Hi: math.Max(hi, est.CI.Hi)}
		z := distuv.UnitNormal.Quantile(0.5 + conf/2)
		est.SE = math.Max(nanTo0(est.SE), (est.CI.Hi-est.CI.Lo)/(2*z))
		est.Method += "+newcombe-floor"
	}
	return est
}

// tokenRatioFloor is ratioFloor for a log ratio that is not kx/nx over
// ky/ny itself but counts what those proportions count (token goodput at
// matched load: good requests' output tokens per offered request, noisy at
// least as the good requests are): the floor's interval, taken relative to
// the proportions' own log ratio, is moved to the estimate's point, so it
// widens the interval to the independent-requests width on each side and
// never stretches it toward the proportions' ratio (answers cut in half
// leave attainment, and so that ratio, where it was: the hull read
// −47.5% [−62.2%, +0.9%] for token goodput halved).
func tokenRatioFloor(est stats.Estimate, kx, nx, ky, ny, conf float64) stats.Estimate {
	if nx <= 0 || ny <= 0 || ky <= 0 || kx <= 0 || math.IsNaN(est.Point) {
		return ratioFloor(est, kx, nx, ky, ny, conf)
	}
	py := ky / ny
	p0 := math.Log((kx / nx) / py)
	nc := stats.NewcombeDiff(kx, nx, ky, ny, conf)
	lo := est.Point + math.Log1p(math.Max(nc.Lo/py, -0.999999)) - p0
	hi := est.Point + math.Log1p(nc.Hi/py) - p0
	return newcombeFloor(est, lo, hi, conf)
}

// ColdStartMargin is the loose margin of the warmup_completed guardrail:
// over the span the warm-up cut removed, the canary's share of offered
// requests that complete may be lower than the baseline's by up to this
// much before it fails.
const ColdStartMargin = 0.05

// warmupGuardrail checks what the warm-up cut removed, automatic or of a
// declared duration (a canary whose requests failed in its first minutes
// PASSED under window.warmup: 5m: nothing read them). Latency
// is expected to be poor while a replica warms up, so what is checked is
// that the canary still served its requests: the share of offered requests
// that completed over the cut span (the longer arm's cut, in whole buckets
// from each arm's own first bucket), against the baseline's over the same
// span of its own. It is loose (fails only when the canary's share
// is lower by more than ColdStartMargin with confidence; inconclusive
// when it is lower by more at the estimate only; otherwise passes),
// decided outside the Holm family, and present only when something
// was cut; the cap on the cut (window.max_warmup) keeps a long slow start
// in the judged window.
func (j *judgement) warmupGuardrail(conf float64) (gateEval, bool) {
	cut := math.Max(j.b.cutSecs, j.c.cutSecs)
	if j.p.Window.Warmup == "none" || !(cut > 0) || j.b.pseudo || j.c.pseudo {
		return gateEval{}, false
	}
	span := func(a *armData) stats.Ratio {
		// the cut is whole buckets counted from the start of the arm's
		// own first bucket (cutSecs), as the aggregate counts it from its
		// first slice: from there, not from the first arrival (which
		// took in the first kept bucket too), and not from an earlier
		// arm's start on a shared grid (empty buckets)
		first := math.Floor(a.t0/a.bucketSecs) * a.bucketSecs
		var r stats.Ratio
		for _, b := range a.buckets {
			if b.start < first-1e-9 {
				continue
			}
			if b.start >= first+cut-1e-9 {
				break
			}
			r.Num, r.Den = append(r.Num, b.completed), append(r.Den, b.offered)
		}
		return r
	}
	rb, rc := span(j.b), span(j.c)
	return warmupCompletedEval(rb, rc, cut, conf, "buckets"), true
}

// warmupCompletedEval decides the warmup_completed guardrail from the
// arms' per-bucket completed and offered requests (rb, rc) over the first
// cut seconds, which the warm-up cut removed: it fails only when the
// canary's completed share is lower beyond the loose ColdStartMargin with
// confidence, and is inconclusive when it is lower beyond it at the
// point estimate only. unit names the buckets in messages ("buckets", "slices").
// Both judging paths call it.
func warmupCompletedEval(rb, rc stats.Ratio, cut, conf float64, unit string) gateEval {
	m := Metric{Name: "warmup_completed", Guardrail: true, Direction: "higher_is_better", Scale: "absolute", Unit: "fraction",
		Margin: Num(ColdStartMargin), Buckets: [2]int{len(rb.Num), len(rc.Num)}, Adjusted: []string{},
		NBaseline: int64(math.Round(sum(rb.Den))), NCanary: int64(math.Round(sum(rc.Den))),
		Baseline: Num(sum(rb.Num) / sum(rb.Den)), Canary: Num(sum(rc.Num) / sum(rc.Den)), Delta: Num(math.NaN()),
		Interval: [2]Num{Num(math.NaN()), Num(math.NaN())}, PFail: Num(math.NaN()), Verdict: Pass}
	e := gateEval{m: m}
	if len(rb.Num) < MinBuckets || len(rc.Num) < MinBuckets || sum(rb.Den) == 0 || sum(rc.Den) == 0 {
		e.m.Reason = fmt.Sprintf("the cut start (%gs) is too short to check (%d and %d %s); the judged window decides", cut, len(rb.Num), len(rc.Num), unit)
		return e
	}
	est := binomialFloor(stats.DiffOfRatios(rc, rb, conf), sum(rc.Num), sum(rc.Den), sum(rb.Num), sum(rb.Den), conf)
	e.m.Method = est.Method
	e.m.Delta = Num(est.Point)
	e.m.Interval = [2]Num{Num(est.CI.Lo), Num(est.CI.Hi)}
	iv := fmt.Sprintf("%s [%s, %s]", fmtDelta(e.m, est.Point), fmtDelta(e.m, est.CI.Lo), fmtDelta(e.m, est.CI.Hi))
	if -est.CI.Hi > ColdStartMargin {
		e.m.Verdict = Fail
		e.m.Reason = fmt.Sprintf("%s completed share over the first %gs, which the warm-up cut removed: the canary's start fails or drops requests beyond the loose %s cold-start margin", iv, cut, fmtMargin(e.m))
		return e
	}
	if -est.Point > ColdStartMargin {
		// the canary lost more than the margin at the estimate, not with
		// confidence: saying "within the margin" would pass a start that
		// most likely lost users' requests (clients that give up on slow
		// first tokens cost the fleet model's canary 15–30 pp here)
		e.m.Verdict = Inconclusive
		e.m.Reason = fmt.Sprintf("%s completed share over the first %gs, which the warm-up cut removed: beyond the loose %s cold-start margin at the estimate, but not with confidence; the cut start is what it is, so a longer run does not decide it: a rerun, or a shorter window.warmup (a fixed duration, or none) that judges the start in the gates, does", iv, cut, fmtMargin(e.m))
		return e
	}
	e.m.Reason = fmt.Sprintf("%s completed share over the first %gs, which the warm-up cut removed: within the loose %s cold-start margin (checked, not gated at α)", iv, cut, fmtMargin(e.m))
	return e
}

// MajorClassShare is the share of the baseline's analysed requests from
// which a class gets its own tail gates (DESIGN §7).
const MajorClassShare = 0.20

// classKey is a request's class for per-class gates: its own label, else
// the policy class that sets its SLO.
func (j *judgement) classKey(a *armData, i int) string {
	if l := a.ds.Requests[i].Class; l != "" && j.labels[0] == j.labels[1] {
		return l
	}
	return j.cls.names[a.class[i]]
}

// majorClasses lists, sorted, the classes holding at least
// MajorClassShare of the baseline's analysed requests.
func (j *judgement) majorClasses() []string {
	n := map[string]float64{}
	total := 0.0
	for i := range j.b.ds.Requests {
		if j.b.bidx[i] < int32(j.b.firstKept) {
			continue
		}
		n[j.classKey(j.b, i)]++
		total++
	}
	var out []string
	for _, k := range sortedKeys(n) {
		if total > 0 && n[k]/total >= MajorClassShare {
			out = append(out, k)
		}
	}
	return out
}

// evalClassTail runs a tail gate on one class's requests in both arms.
func (j *judgement) evalClassTail(idx int, g policies.Gate, info policies.MetricInfo, class string, conf float64) gateEval {
	samples := func(a *armData) [][]float64 {
		out := make([][]float64, len(a.buckets)-a.firstKept)
		for i := range a.ds.Requests {
			t := int(a.bidx[i]) - a.firstKept
			r := &a.ds.Requests[i]
			if t < 0 || !latencyOf(r, info.Latency) || j.classKey(a, i) != class {
				continue
			}
			out[t] = append(out[t], latencyValue(r, info.Latency))
		}
		return out
	}
	xb, xc := samples(j.b), samples(j.c)
	nb, nc := countSamples(xb), countSamples(xc)
	m := Metric{Name: g.Metric + ":" + class, Class: class, Guardrail: g.Guardrail, Direction: "lower_is_better", Scale: info.Scale, Unit: info.Unit,
		Margin: Num(g.Margin.Value), Buckets: [2]int{len(xb), len(xc)}, Adjusted: []string{"class " + class + " only"},
		NBaseline: int64(nb), NCanary: int64(nc), Baseline: Num(quantile(sortedPool(xb), info.Quantile)), Canary: Num(quantile(sortedPool(xc), info.Quantile)),
		Delta: Num(math.NaN()), Interval: [2]Num{Num(math.NaN()), Num(math.NaN())}, PFail: Num(math.NaN())}
	e := gateEval{m: m}
	if need := need(info.Quantile); nb < need || nc < need || len(xb) < MinBuckets || len(xc) < MinBuckets {
		// not checkable: the pooled gate decides
		e.m.Verdict, e.m.NotFailed = Pass, true
		e.m.Reason = fmt.Sprintf("not checked: too little data for a p%g of class %s (%d and %d values, need ≥ %d per arm); the pooled gate decides", info.Quantile*100, class, nb, nc, need)
		return e
	}
	est := stats.QuantileLogRatio(xc, xb, info.Quantile, conf, j.cfg.Resamples, j.cfg.Seed+uint64(idx)*7919)
	est = sectioningHull(est, xc, xb, info.Quantile, conf)
	est = withReplicaLevels(est, conf, j.replicaSpreads[info.Latency], info.Latency, &e.m.Adjusted)
	est = persistenceWidened(est, j.p.Window, min(len(xb), len(xc)), j.b.bucketSecs, conf, &e.m.Adjusted)
	e.m.Method = est.Method
	e = decide(e, g, info, est)
	if e.decidable && e.decision != stats.Fail {
		// a per-class check can fail the comparison but does not hold up
		// a pass: the pooled gate decides that
		e.m.NotFailed = e.decision != stats.Pass
		e.decision = stats.Pass
		e.m.Reason = classCheckReason(e.m, class)
	}
	return e
}

// classCheckReason explains a per-class tail check that did not fail
// (m.NotFailed set when its interval reaches past the margin).
func classCheckReason(m Metric, class string) string {
	head := fmt.Sprintf("%s [%s, %s] for class %s", fmtDelta(m, float64(m.Delta)), fmtDelta(m, float64(m.Interval[0])), fmtDelta(m, float64(m.Interval[1])), class)
	if m.NotFailed {
		return fmt.Sprintf("%s: not failed, not passed either: the interval reaches past the %s margin, so a regression of that size is not ruled out for this class (a per-class check fails the comparison only when the class is worse beyond the margin with confidence; the pooled gate decides a pass)", head, fmtMargin(m))
	}
	return fmt.Sprintf("%s: no regression beyond the %s margin (per-class check: it fails the comparison only when the class is worse beyond the margin with confidence)", head, fmtMargin(m))
}

// LoadRatioTolerance is the relative difference in offered load per
// replica-second between the arms beyond which the automatic sample-ratio
// check fails (when it is outside with confidence).
const LoadRatioTolerance = 0.03

// LoadRatioShedPoint is how much less a canary must be offered on the
// point estimate before an interval that does not rule out a shortfall
// beyond LoadRatioTolerance keeps the check from passing: a shed of the
// tolerance or more puts the estimate near or beyond it, while the Poisson
// scatter of an even split in a short run rarely reaches it.
const LoadRatioShedPoint = 0.02

// loadRatioGuardrail is the sample-ratio check used when the policy
// declares no traffic split: behind one router both arms should be offered
// the same load per deployed replica-second, so a canary that is offered less (load
// shed upstream and never logged, a router that avoids it) or more
// (retries it causes) is flagged. It is cluster-aware: the ratio of
// offered requests per replica-second is estimated from per-bucket totals
// with the batch-means variance, not by a per-request chi-square that
// treats requests as independent. It fails when the interval of the ratio
// lies entirely beyond ±LoadRatioTolerance; it is inconclusive when the
// canary is offered less by more than LoadRatioShedPoint on the point
// estimate and the interval does not rule out a shortfall beyond the
// tolerance (unlogged shedding is the harm it guards against), and passes
// otherwise; it needs arrival times and replica labels in both arms.
func (j *judgement) loadRatioGuardrail(conf float64) (gateEval, bool) {
	if j.b.pseudo || j.c.pseudo || !j.b.replicasKnown || !j.c.replicasKnown {
		return gateEval{}, false
	}
	// per deployed replica (deployedKept), bucket by bucket: a router
	// splits by the deployment, so a replica lost mid-run moves its load
	// to the others without changing the split; the deployment's size
	// at each bucket, by the bucket's start
	deployed := func(a *armData) map[float64]float64 {
		ks, d := a.deployedKept()
		at := make(map[float64]float64, len(d))
		for i, b := range ks {
			at[b.start] = d[i]
		}
		return at
	}
	db, dc := deployed(j.b), deployed(j.c)
	build := func(a *armData, d map[float64]float64) stats.Ratio {
		var r stats.Ratio
		for _, b := range a.kept() {
			if b.secs > 0 {
				r.Num, r.Den = append(r.Num, b.offered), append(r.Den, b.secs*d[b.start])
			}
		}
		return r
	}
	rb, rc := build(j.b, db), build(j.c, dc)
	if len(rb.Num) < MinBuckets || len(rc.Num) < MinBuckets {
		return gateEval{}, false
	}
	estimate := func(conf float64) stats.Estimate { return stats.LogRatioOfRatios(rc, rb, conf) }
	if j.paired {
		// a traffic wave both arms ride cancels in the paired difference
		pb, pc := j.alignedRatios(func(b *bucket) float64 { return b.offered }, func(b *bucket) float64 { return b.secs * db[b.start] })
		_, pc2 := j.alignedRatios(func(b *bucket) float64 { return b.offered }, func(b *bucket) float64 { return b.secs * dc[b.start] })
		pc.Den = pc2.Den
		bothAnalysed(pb, pc)
		estimate = func(conf float64) stats.Estimate { return stats.PairedLogRatioOfRatios(pc, pb, conf) }
	}
	return loadRatioEval(rb, rc, estimate, conf, "logged"), true
}

// noneGood is the attainment gate's reason when no request in either arm
// met the SLO: 0% against 0% is no evidence that the canary is no worse (a
// canary ten times slower is at 0% too), so the gate is not passed. short
// is the share of both arms' completions with fewer output tokens than
// their class's slo.min_output_tokens (NaN when unknown): when most are,
// that floor, not the latencies, is why none was good (an endpoint that
// returns one token or none: embeddings, classification), and the reason
// names it.
func noneGood(ob, oc, short float64) string {
	if short >= 0.5 {
		return fmt.Sprintf("no request met the SLO in either arm (0 of %s and 0 of %s): attainment cannot tell the arms apart, so it is not passed; %.0f%% of the completions have fewer output tokens than their class's slo.min_output_tokens (by default %d), and such a completion is not good: for an endpoint that returns one token or none (embeddings, classification) set slo.min_output_tokens: 0 in the policy",
			fmtCount(ob), fmtCount(oc), 100*short, policies.DefaultMinOutputTokens)
	}
	return fmt.Sprintf("no request met the SLO in either arm (0 of %s and 0 of %s): attainment cannot tell the arms apart, so it is not passed; check the SLO against the latencies shown (the request log's ttft_s, tpot_s and e2e_s are in seconds)",
		fmtCount(ob), fmtCount(oc))
}

// shortShare is the share of the arm's analysed completions (b and c
// together) with fewer output tokens than their class's
// slo.min_output_tokens: the request path's noneGood argument.
func (j *judgement) shortShare() float64 {
	var short, done float64
	for _, a := range []*armData{j.b, j.c} {
		for i := range a.ds.Requests {
			r := &a.ds.Requests[i]
			if !a.keep[i] || r.Status != sources.StatusOK {
				continue
			}
			done++
			if r.OutputTokens >= 0 && r.OutputTokens < j.cls.slos[a.class[i]].OutputFloor() {
				short++
			}
		}
	}
	if done == 0 {
		return math.NaN()
	}
	return short / done
}

// unloggedShedWarning says, when an arm's request logs name no replica
// (bNone, cNone), that the offered_load_ratio guardrail could not run and
// what it would have caught; "" when both arms name theirs.
func unloggedShedWarning(bNone, cNone bool) string {
	if !bNone && !cNone {
		return ""
	}
	return "offered_load_ratio is not checked: " + unnamedReplicas(bNone, cNone) + ", so the load each arm was offered per replica-second is unknown, and traffic shed before the logs (never logged) would go unseen; log the replica, or declare the split (traffic: {canary_share: …})"
}

// unnamedReplicas names the arms whose requests name no replica.
func unnamedReplicas(bNone, cNone bool) string {
	switch {
	case bNone && cNone:
		return "neither arm's requests name the replica that served them (replica)"
	case bNone:
		return "the baseline's requests do not name the replica that served them (replica)"
	}
	return "the canary's requests do not name the replica that served them (replica)"
}

// bothAnalysed empties, in both of two arms' series on their shared grid,
// every position where either arm has no denominator: for the paired
// offered_load_ratio only buckets both arms analysed count, since a
// bucket only one arm served (a warm-up cut, a canary deployed later)
// would add that arm's unpaired load to one batch. Both judging paths
// call it.
func bothAnalysed(x, y stats.Ratio) {
	for t := range x.Den {
		if x.Den[t] == 0 || y.Den[t] == 0 {
			x.Num[t], x.Den[t], y.Num[t], y.Den[t] = 0, 0, 0, 0
		}
	}
}

// deployedKept is the arm's kept buckets with a length and the arm's
// deployed size at each (deployedReplicas over the replicas serving in
// them; a stretch left out of both arms serves none and counts in the
// run of buckets, not in the size).
func (a *armData) deployedKept() (kept []bucket, deployed []float64) {
	serving := make([]float64, 0, len(a.kept()))
	for _, b := range a.kept() {
		if b.secs > 0 {
			kept, serving = append(kept, b), append(serving, b.replicaSecs/b.secs)
		}
	}
	return kept, deployedReplicas(serving, a.bucketSecs)
}

// deployed is the aggregated arm's deployed size at each of its slices
// (deployedReplicas over the replicas serving in them).
func (a *aggArm) deployed() []float64 {
	serving := make([]float64, len(a.slices))
	for i := range a.slices {
		serving[i] = a.slices[i].replicas
	}
	return deployedReplicas(serving, a.ds.Agg.Step)
}

// DeployedSecs is how long, in seconds, replicas must serve together to
// count toward an arm's deployed size (deployedReplicas): a minute.
const DeployedSecs = 60

// deployedReplicas is an arm's deployed size at each of its slices, the
// offered_load_ratio guardrail's denominator: at slice t the most replicas
// that served together through a whole DeployedSecs starting at or before
// t (over every run of that many slices, the fewest serving in one of
// them; at least two slices, all of them when the arm has fewer), from
// serving, the replicas in service per slice of secs seconds (fractional
// where one served part of a slice). It never falls: a replica lost
// mid-run still counts, having served with the others before. It rises
// when the deployment is scaled up (a rollout step that adds canary
// pods with their share of the traffic). A pod replaced by another under
// a new name, whose last and first requests share a slice, or a stray
// record naming another replica, does not count twice: counting every
// name seen, or the most in any slice, took a canary whose one pod was
// replaced halfway for two replicas offered half the baseline's load
// each, and failed it.
func deployedReplicas(serving []float64, secs float64) []float64 {
	if len(serving) == 0 {
		return nil
	}
	n := 2
	if secs > 0 {
		n = max(n, int(math.Ceil(DeployedSecs/secs-1e-9)))
	}
	n = min(n, len(serving))
	out := make([]float64, len(serving))
	best := 0.0
	for t := range serving {
		if i := min(t, len(serving)-n); t == i || t == 0 {
			low := math.Inf(1)
			for _, v := range serving[i : i+n] {
				if !(v > 0) {
					v = 0 // none in service (or unknown)
				}
				low = math.Min(low, v)
			}
			best = math.Max(best, low)
		}
		out[t] = best
	}
	// slices before the first minute any replica served through (a
	// stretch left out at the start) take the size first seen, so that
	// no slice is counted against no replica
	if first := slices.IndexFunc(out, func(v float64) bool { return v > 0 }); first > 0 {
		for t := range first {
			out[t] = out[first]
		}
	}
	return out
}

// loadRatioEval decides the offered_load_ratio guardrail from the arms'
// per-bucket offered requests per replica-second (rb, rc) and the
// estimate of their log ratio (paired or not; a Poisson floor is applied
// here). seen says where a shed request would have gone missing ("logged"
// for request records, "counted" for metrics). Both judging paths call it,
// so they decide the same way.
func loadRatioEval(rb, rc stats.Ratio, estimate func(conf float64) stats.Estimate, conf float64, seen string) gateEval {
	vb, vc := sum(rb.Num)/sum(rb.Den), sum(rc.Num)/sum(rc.Den)
	est := poissonFloor(estimate(conf), sum(rb.Num), sum(rc.Num), conf)
	// the check fails in either direction, so each direction is tested at
	// half the error rate of a one-sided gate: the interval that decides a
	// failure is the (1 − (1 − conf)/2) one (95% two-sided at the default
	// 90%), or an even split would fail up to twice as often as any other
	// gate when the tolerance is small against the interval (short runs)
	failConf := 1 - (1-conf)/2
	failEst := poissonFloor(estimate(failConf), sum(rb.Num), sum(rc.Num), failConf)
	m := Metric{Name: "offered_load_ratio", Guardrail: true, Direction: "two_sided", Scale: "relative", Unit: "req/s/replica",
		Margin: Num(LoadRatioTolerance), Buckets: [2]int{len(rb.Num), len(rc.Num)}, Adjusted: []string{},
		NBaseline: int64(math.Round(sum(rb.Num))), NCanary: int64(math.Round(sum(rc.Num))), Baseline: Num(vb), Canary: Num(vc),
		Delta: Num(math.Expm1(est.Point)), Interval: [2]Num{Num(math.Expm1(est.CI.Lo)), Num(math.Expm1(est.CI.Hi))},
		PFail: Num(math.NaN()), Method: est.Method, Verdict: Pass}
	e := gateEval{m: m}
	iv := fmt.Sprintf("%s [%s, %s]", fmtDelta(m, float64(m.Delta)), fmtDelta(m, float64(m.Interval[0])), fmtDelta(m, float64(m.Interval[1])))
	tol := math.Log1p(LoadRatioTolerance)
	switch {
	case math.IsNaN(est.CI.Lo) || math.IsNaN(est.CI.Hi):
		e.m.Verdict = Inconclusive
		e.m.Reason = "the offered-load ratio could not be estimated"
	case failEst.CI.Hi < -tol:
		e.m.Verdict = Fail
		e.m.Reason = fmt.Sprintf("%s offered requests per replica-second: the canary is offered less than the baseline beyond ±%s%s (sample-ratio mismatch: load shed or routed away before it was %s?); declare traffic.canary_share if the split is intended", iv, fmtMargin(m), failAt(conf, failConf), seen)
	case failEst.CI.Lo > tol:
		e.m.Verdict = Fail
		e.m.Reason = fmt.Sprintf("%s offered requests per replica-second: the canary is offered more than the baseline beyond ±%s%s (sample-ratio mismatch: retries or routing?); declare traffic.canary_share if the split is intended", iv, fmtMargin(m), failAt(conf, failConf))
	case est.CI.Hi < -tol || est.CI.Lo > tol:
		// beyond the tolerance at the shown level only: not a failure of a
		// two-sided check, but a shortfall is not ruled out either way
		e.m.Verdict = Inconclusive
		e.m.Reason = fmt.Sprintf("%s offered requests per replica-second: beyond ±%s at %s but not at %s, the level a check that fails in either direction needs; more data decides it; declare traffic.canary_share if the split is intended", iv, fmtMargin(m), pctLevel(conf), pctLevel(failConf))
	case est.CI.Lo < -tol && est.Point < -math.Log1p(LoadRatioShedPoint):
		// a shed is the blind spot: the canary serves less and looks no
		// worse, so "less by more than the tolerance" must be ruled out
		// before a pass, as every gate rules out harm beyond its margin
		e.m.Verdict = Inconclusive
		e.m.Reason = fmt.Sprintf("%s offered requests per replica-second: a canary offered less than the baseline by more than %s is not ruled out (load shed or routed away before it was %s?); more data narrows the interval; declare traffic.canary_share if the split is intended", iv, fmtMargin(m), seen)
	case est.Point > tol:
		// more load on the canary is not a blind spot: it only makes the
		// canary's latency and attainment gates harder to pass
		e.m.Reason = fmt.Sprintf("%s offered requests per replica-second: the canary was offered more than the baseline (retries or routing?), not shown beyond ±%s; more load only makes the canary's other gates harder to pass, so it does not hold up a pass", iv, fmtMargin(m))
	default:
		e.m.Reason = fmt.Sprintf("%s offered requests per replica-second: no sample-ratio mismatch beyond ±%s shown", iv, fmtMargin(m))
	}
	// a pass with the interval reaching past the tolerance only did not
	// fail: the check does not hold the comparison up there, by design
	e.m.NotFailed = e.m.Verdict == Pass && (est.CI.Lo < -tol || est.CI.Hi > tol)
	return e
}

// countFuncs gives the per-bucket numerator and denominator of a count
// gate (nil for other gates), for the paired comparison.
func countFuncs(metric string) (num, den func(b *bucket) float64) {
	offered := func(b *bucket) float64 { return b.offered }
	switch metric {
	case "slo_attainment":
		return func(b *bucket) float64 { return b.good }, offered
	case "error_rate":
		return func(b *bucket) float64 { return b.failed }, offered
	case "rejected_share":
		return func(b *bucket) float64 { return b.rejected }, offered
	case "canceled_share":
		return func(b *bucket) float64 { return b.canceled }, offered
	case "retry_share":
		return func(b *bucket) float64 { return b.retries }, offered
	}
	return nil, nil
}

// costMatched compares cost per good request at matched offered load: an
// arm's cost per good request at the baseline's offered rate is
// (cost per second) / (attainment × offered rate), so the ratio of the arms
// is (C_c/S_c)/(C_b/S_b) · A_b/A_c — the cost rates set by the deployment
// and the attainment set by the change, without the Poisson count of
// requests that routing happened to send each arm. Per arm, the log of
// (C/S)/(G/O) is linearised per bucket, r_t = (C_t − (C/S)·S_t)/C −
// (G_t − (G/O)·O_t)/G, and compared by batch means (paired when the arms
// are paired in time).
func (j *judgement) costMatched(conf float64) (stats.Estimate, bool) {
	from, nb := j.grid()
	arm := func(a *armData) costCells {
		lo, n := a.firstKept, len(a.buckets)-a.firstKept
		if j.paired {
			lo, n = from, nb
		}
		c := newCostCells(n)
		for t := 0; t < n; t++ {
			if i := lo + t; i >= a.firstKept && i < len(a.buckets) {
				b := &a.buckets[i]
				c.cost[t], c.secs[t], c.good[t], c.offered[t] = b.cost, b.secs, b.good, b.offered
			}
		}
		return c
	}
	return matchedCostEstimate(arm(j.b), arm(j.c), j.paired, conf)
}

// replicaLossGuardrail is present when a canary replica stopped serving
// mid-window, for good or for a while, while the baseline's did not at the
// time (replicaLossEval decides it, as on the aggregate path).
func (j *judgement) replicaLossGuardrail() (gateEval, bool) {
	outs := unsharedOutages(armOutages(j.c), armOutages(j.b))
	return replicaLossEval(outs, j.c.ds.Clock, j.p.Normalize.CanaryReplicaLoss, j.b.replicas, j.c.replicas)
}

// sectioningHull widens a class's tail interval to the hull of the block
// bootstrap and the sectioning interval (stats.SectionedQuantileLogRatio)
// when every section holds enough values for its quantile (n·(1 − q) ≥ 5):
// one class's p99 token time is set by a few slow stretches of its arm, and
// the bucket bootstrap under-covered it on A/A runs (tpot_p99:chat 75% at
// nominal 90%); the spread between sections sees that run-to-run variation.
func sectioningHull(est stats.Estimate, x, y [][]float64, q, conf float64) stats.Estimate {
	return hullWith(est, stats.SectionedQuantileLogRatio(x, y, q, conf, sectionMinValues(q)))
}

// sectionMinValues is the fewest values a section must hold in each arm
// for its q-quantile to enter a sectioning interval: ⌈5/(1 − q)⌉, five
// beyond the quantile (500 for a p99).
func sectionMinValues(q float64) int { return int(math.Ceil(5 / (1 - q))) }

// recentred moves the sectioning interval sec to centre on point, keeping
// its half-width: a stratified gate's point is its mix-standardized
// estimate, and the spread between sections is what its interval needs.
func recentred(sec stats.Estimate, point float64) stats.Estimate {
	if math.IsNaN(sec.Point) || math.IsNaN(point) || math.IsInf(sec.CI.Lo, 0) || math.IsInf(sec.CI.Hi, 0) {
		return sec
	}
	d := point - sec.Point
	sec.Point, sec.CI = point, stats.Interval{Lo: sec.CI.Lo + d, Hi: sec.CI.Hi + d}
	return sec
}

// hullWith widens est's interval to the hull of it and the sectioning
// interval sec when sec was formed (finite), keeping the larger SE and
// marking the method "+sectioning-hull" when sec widened it.
func hullWith(est, sec stats.Estimate) stats.Estimate {
	if math.IsNaN(est.Point) || math.IsNaN(sec.Point) || math.IsInf(sec.CI.Hi, 0) {
		return est
	}
	if sec.CI.Lo < est.CI.Lo || sec.CI.Hi > est.CI.Hi {
		est.CI = stats.Interval{Lo: math.Min(est.CI.Lo, sec.CI.Lo), Hi: math.Max(est.CI.Hi, sec.CI.Hi)}
		est.SE = math.Max(nanTo0(est.SE), sec.SE)
		est.Method += "+sectioning-hull"
	}
	return est
}

// pctLevel writes a two-sided confidence level such as 0.95 as "95%"
// (one decimal when it is not a whole percent, e.g. "97.5%").
func pctLevel(conf float64) string {
	return strconv.FormatFloat(math.Round(1000*conf)/10, 'f', -1, 64) + "%"
}

// failAt names the level a two-sided check's failure was shown at when it
// is not the level of the interval shown beside it.
func failAt(shown, fail float64) string {
	if fail == shown {
		return ""
	}
	return " at " + pctLevel(fail)
}
