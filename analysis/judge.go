package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// DataError means the data cannot be judged at all (exit 4): an arm with no
// requests, no completed requests, a window cut to nothing.
type DataError struct {
	Arm sources.Arm
	Msg string
}

func (e *DataError) Error() string {
	if e.Arm == "" {
		return e.Msg
	}
	return fmt.Sprintf("%s: %s", e.Arm, e.Msg)
}

// Config sets how a comparison is run.
type Config struct {
	Policy *policies.Policy
	// Seed seeds every resampling step (default 1): the same inputs and
	// seed give a byte-identical report.
	Seed uint64
	// Resamples is the number of bootstrap resamples for quantile gates
	// (default 2000, minimum 200).
	Resamples   int
	ToolVersion string
	// Cost holds cost records for both arms (nil: use the policy's
	// rates, if any); CostMissing names components the file lacked.
	Cost        []sources.CostRecord
	CostMissing []string
}

// MinBuckets is the fewest analysed buckets per arm a gate needs before it
// may decide (two batches of four for the batch-means variance); with fewer
// the gate is inconclusive.
const MinBuckets = 8

// Judge compares canary with baseline under cfg.Policy.
func Judge(baseline, canary *sources.Dataset, cfg Config) (*Report, error) {
	p := cfg.Policy
	if p == nil {
		return nil, fmt.Errorf("analysis: no policy")
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Resamples < 200 {
		cfg.Resamples = 2000
	}
	if p = withoutCapacityGates(p); len(p.Gates) == 0 {
		return nil, &DataError{Msg: fmt.Sprintf("policy %s gates only capacity, which is judged on rate sweeps by goodput capacity, not by goodput judge", cfg.Policy.Name)}
	}
	cfg.Policy = p
	if baseline.Agg != nil || canary.Agg != nil {
		return judgeClassSLOs(baseline, canary, cfg)
	}
	cls := newClassifier(p)
	origin, paired, spans := pairing(baseline, canary)
	b, err := prepare(baseline, p, cls, origin)
	if err != nil {
		return nil, err
	}
	c, err := prepare(canary, p, cls, origin)
	if err != nil {
		return nil, err
	}
	if paired && p.Window.Warmup == "auto" {
		if err := commonCut(b, c); err != nil {
			return nil, err
		}
	}
	j := &judgement{p: p, cfg: cfg, b: b, c: c, cls: cls, paired: paired}
	if !paired && spans != nil {
		if w := nestedArmsWarning(spans[0], spans[1]); w != "" {
			j.warnf("%s", w)
		}
	}
	if err := j.leaveOutBaselineOutages(); err != nil {
		return nil, err
	}
	warns, err := priceArms(p, cfg, b, c)
	j.warns = append(j.warns, warns...)
	if err != nil {
		return nil, err
	}
	r := j.report()
	if err := latencyUnits(r); err != nil {
		return nil, err
	}
	if err := latencyParts(r); err != nil {
		return nil, err
	}
	return r, nil
}

type judgement struct {
	mix *mixPlan // nil when no mix standardisation applies
	// labels: whether the baseline's and the canary's records carry class
	// labels (hasLabels), read once for the mix plan and the per-class
	// tails, which go by policy class when one arm alone does (classKey)
	labels [2]bool
	// mixSkipped says why a requested mix standardisation was not applied
	// (planMix), for the report's mix step
	mixSkipped string
	// unmatched is the unmatched_strata guardrail when planMix found one
	// arm serving strata the other never served
	unmatched *gateEval
	// cache is the cache handling chosen (stratify | adjust | none) and why
	cache, cacheReason string
	// cacheLate holds the arms' prefix-cache hit rates (baseline, canary)
	// over the later half of the run, set by planMix when normalize.cache
	// is not none
	cacheLate [2]float64
	srm       normalize.SRMResult
	p         *policies.Policy
	cfg       Config
	b, c      *armData
	cls       *classifier
	warns     []string
	// paired is true when both arms ran at the same time on one clock and
	// share one bucket grid: count gates then take the paired variance
	paired bool
	// outages are the baseline's own outages left out of both arms
	// (leaveOutBaselineOutages), in the order found
	outages []baselineOutage
	// replicaSpreads holds the replica widening of each latency's
	// quantile gates (latencySpreads), set by gates before they are
	// evaluated; only read after
	replicaSpreads map[string]latencyWidening
}

// MinPairedOverlap is the least share of each arm's run that must overlap
// the other's for the arms to be paired in time.
const MinPairedOverlap = 0.5

// pairing decides whether the arms are analysed as paired in time: both on
// the epoch clock with every arrival known, and each arm's run overlapping
// the other's for at least MinPairedOverlap of its length. It returns the
// common grid origin (the earlier first arrival), or NaN when the arms are
// independent (benchmark files run one after the other, per-file clocks),
// and both arms' spans on the wall clock (epochSpan; nil when an arm is
// not on it), for the nested-arms warning.
func pairing(b, c *sources.Dataset) (origin float64, paired bool, spans *[2]armSpan) {
	lb, hb, okb := epochSpan(b)
	lc, hc, okc := epochSpan(c)
	if !okb || !okc {
		return math.NaN(), false, nil
	}
	spans = &[2]armSpan{{first: lb, last: hb}, {first: lc, last: hc}}
	ov := math.Min(hb, hc) - math.Max(lb, lc)
	if ov < MinPairedOverlap*(hb-lb) || ov < MinPairedOverlap*(hc-lc) {
		return math.NaN(), false, spans
	}
	return math.Min(lb, lc), true, spans
}

// epochSpan is an arm's first and last arrival (unix seconds, the last
// at least first + Duration); ok is false off the wall clock or with an
// arrival unknown.
func epochSpan(ds *sources.Dataset) (lo, hi float64, ok bool) {
	if ds.Clock != sources.ClockEpoch || len(ds.Requests) == 0 {
		return 0, 0, false
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for i := range ds.Requests {
		t := ds.Requests[i].Time
		if !sources.Known(t) {
			return 0, 0, false
		}
		lo, hi = math.Min(lo, t), math.Max(hi, t)
	}
	if ds.Duration > 0 && lo+ds.Duration > hi {
		hi = lo + ds.Duration
	}
	return lo, hi, hi > lo
}

// nestedArmsWarning says, for arms on one wall clock that are not paired
// in time (pairing), when one ran mostly within the other's longer run
// (nested): the arms are then compared as runs at different times, the
// longer arm's other minutes (another load, another hour of the day) in
// its figures, and --start/--end over the minutes they shared would pair
// them. "" otherwise. b and c are the arms' spans (unix seconds; offered
// unused).
func nestedArmsWarning(b, c armSpan) string {
	if !nested(b, c) {
		return ""
	}
	short, long := "canary", "baseline"
	ls, ll := c.last-c.first, b.last-b.first
	if ls > ll {
		short, long, ls, ll = long, short, ll, ls
	}
	lo, hi := math.Max(b.first, c.first), math.Min(b.last, c.last)
	at := func(t float64) string { return time.Unix(int64(t), 0).UTC().Format(time.RFC3339) }
	return fmt.Sprintf("the %s ran for %s within the %s's %s, and the arms were judged as runs at different times: the %s's other %s (their load, their hour of the day) are in its figures; to judge both over the %s they ran together, paired in time, give --start %s --end %s",
		short, fmtMinutes(ls/60), long, fmtMinutes(ll/60), long, fmtMinutes((ll-(hi-lo))/60), fmtMinutes((hi-lo)/60),
		at(math.Floor(lo)), at(math.Ceil(hi)))
}

// fork is a shallow copy of the judgement for a gate evaluated beside the
// others (eachSideBySide): the arms and the policy are only read once
// their pooled latencies are sorted (sortPooled); the warnings and the mix
// plan's notes, the things an evaluation writes, are the copy's own. join
// takes them back.
func (j *judgement) fork() *judgement {
	f := *j
	f.warns = nil
	if j.mix != nil {
		m := *j.mix
		m.notes, m.mixes = nil, ""
		f.mix = &m
	}
	return &f
}

// join appends a fork's warnings and mix notes to the judgement's, and
// takes its mix table if none was set; joining forks in gate order gives
// what one evaluation after the other gives.
func (j *judgement) join(f *judgement) {
	j.warns = append(j.warns, f.warns...)
	if j.mix != nil {
		j.mix.notes = append(j.mix.notes, f.mix.notes...)
		if j.mix.mixes == "" {
			j.mix.mixes = f.mix.mixes
		}
	}
}

func (j *judgement) warnf(format string, a ...any) {
	j.warns = append(j.warns, fmt.Sprintf(format, a...))
}

func (j *judgement) report() *Report {
	p := j.p
	r := &Report{
		SchemaVersion: SchemaVersion,
		Policy:        PolicyRef{Name: p.Name, SHA256: p.SHA256, Source: p.Source},
		ToolVersion:   j.cfg.ToolVersion,
		Judge:         "goodput",
	}
	for _, a := range []*armData{j.b, j.c} {
		for _, w := range a.ds.Warnings {
			j.warnf("%s: %s", a.arm, w)
		}
		r.Inputs = append(r.Inputs, a.ds.Inputs...)
		if a.pseudo && bucketSize(a) == 1 {
			j.warnf("%s: without arrival times, each request is its own unit (policy window.untimed: requests): intervals treat one run's requests as independent and leave run-to-run variance out; give several runs per arm to bring it in", a.arm)
		} else if a.pseudo {
			j.warnf("%s: without arrival times, buckets are runs of %d consecutive requests in file order, not time slices", a.arm, bucketSize(a))
		}
		for _, k := range sortedKeys(a.unverified) {
			j.warnf("%s: %s", a.arm, sources.UnverifiedNote(k, a.unverified[k]))
		}
		if w := outputUnknownWarning(a.outUnknownAll, a.completedAll); w != "" {
			j.warnf("%s: %s", a.arm, w)
		}
	}
	if j.b.clock != j.c.clock {
		j.warnf("the arms' clocks differ (baseline %s, canary %s): they are compared over their own windows", j.b.clock, j.c.clock)
	}
	r.Arms.Baseline = armSummary(j.b, j.retriesUnreported())
	r.Arms.Canary = armSummary(j.c, j.retriesUnreported())
	r.Measurement = j.measurement()
	j.labels = [2]bool{hasLabels(j.b), hasLabels(j.c)}
	j.mix = j.planMix()
	// the diagnostics read only the arms' pooled latencies (sorted
	// first, so that nothing fills that cache concurrently) and warn
	// nothing: they are computed beside the gates. The count gates,
	// evaluated side by side, read the arms' tallies per group of users:
	// filled here too, once, before any of them runs
	sortPooled(j.b, j.c)
	j.b.userTally()
	j.c.userTally()
	var diags []Diagnostic
	var wg sync.WaitGroup
	wg.Go(func() { diags = diagnostics(j.b, j.c) })
	r.Metrics = j.gates(r)
	r.Normalization = j.normalization(r.Metrics)
	wg.Wait()
	r.Diagnostics = diags
	r.Classes = classRows(j.b, j.c, j.cls.names, len(j.p.Classes) > 0)
	r.Series = seriesOf(j.b, j.c, j.p.Window.Bucket.Seconds())
	r.Distributions = distributionsOf(j.b, j.c)
	r.Verdict, r.Reasons = Overall(r.Metrics)
	gap, baselineMore := unverifiedGap(j.b.unverified, j.c.unverified, j.b.completedAll, j.c.completedAll)
	heldByUnverifiedGap(r, gap, baselineMore)
	heldByClassGap(r, classGap(j.p, j.b.unverified, j.c.unverified, j.b.completedAll, j.c.completedAll))
	heldByClassGap(r, labelClassGap(j.p, j.b.unlabelledAll, j.b.completedAll, j.c.unlabelledAll, j.c.completedAll))
	heldByQualityGap(r, qualityGap(j.p, j.b.qualityChecked, j.b.qualityFailed, j.c.qualityChecked, j.c.qualityFailed))
	heldByCutTail(r, sortedCounts(j.c.pooled("ttft")), sortedCounts(j.b.pooled("ttft")),
		sortedCounts(j.c.pooled("e2e")), sortedCounts(j.b.pooled("e2e")))
	if w := queueHold(r, j.p, j.b, j.c, j.dipGrid); w != "" {
		j.warnf("%s", w)
	}
	// prompts the strata did not standardize, as the aggregate holds them
	if ms := j.promptShift(1 - 2*j.p.Alpha()); ms != "" {
		j.warnf("traffic mix: %s", ms)
		heldDecided(r, ms)
	}
	heldDecided(r, fewUsersApart(j.b.userTally(), j.c.userTally()))
	j.warns = append(j.warns, metricsWarnings(j.b, j.c)...)
	internalView(r, armWork(j.b), armWork(j.c), j.p.Window.Bucket.Seconds())
	r.Warnings = onceForBothArms(j.warns, j.b.ds, j.c.ds)
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	return r
}

// resamplingUnit names the resampling unit of arms without arrival
// times ("" when both have them: time buckets of bucket seconds).
func resamplingUnit(b, c *armData, bucket float64) string {
	unit := func(a *armData) string {
		switch n := bucketSize(a); {
		case !a.pseudo:
			return fmt.Sprintf("buckets of %gs", bucket)
		case n <= 1:
			return "each request"
		default:
			return fmt.Sprintf("runs of %d consecutive requests in file order", n)
		}
	}
	switch ub, uc := unit(b), unit(c); {
	case !b.pseudo && !c.pseudo:
		return ""
	case ub == uc:
		return ub
	default:
		return "baseline " + ub + ", canary " + uc
	}
}

func bucketSize(a *armData) int {
	if len(a.buckets) == 0 {
		return 0
	}
	return int(math.Ceil(float64(len(a.ds.Requests)) / float64(len(a.buckets))))
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Overall combines gate verdicts (DESIGN.md §5): fail if any gate fails
// (after Holm), pass if every gate passes, else inconclusive; no gates at
// all is inconclusive. The reasons name the failing, then the undecided
// gates.
func Overall(ms []Metric) (Verdict, []string) {
	var fails, incs, reasons []string
	for _, m := range ms {
		switch m.Verdict {
		case Fail:
			fails = append(fails, m.Name+": "+m.Reason)
		case Inconclusive:
			incs = append(incs, m.Name+": "+m.Reason)
		}
	}
	switch {
	case len(ms) == 0:
		return Inconclusive, []string{"no gates were evaluated"}
	case len(fails) > 0:
		reasons = append(fails, incs...)
		return Fail, reasons
	case len(incs) > 0:
		return Inconclusive, incs
	}
	notFailed := 0
	for _, m := range ms {
		if m.DidNotFail() {
			notFailed++
		}
	}
	switch {
	case notFailed > 0:
		// fail-only checks that did not pass on their own
		return Pass, []string{fmt.Sprintf("%s pass; %s did not fail (it can fail the comparison but does not hold up a pass; see its row)",
			plural(len(ms)-notFailed, "gate", "gates"), plural(notFailed, "fail-only check", "fail-only checks"))}
	case len(ms) == 1:
		return Pass, []string{"the one gate passes"}
	}
	return Pass, []string{fmt.Sprintf("all %d gates pass", len(ms))}
}

func (j *judgement) measurement() Measurement {
	loc := j.b.ds.Location
	if j.c.ds.Location != loc {
		loc = "mixed (baseline " + j.b.ds.Location + ", canary " + j.c.ds.Location + ")"
	}
	if loc == "" {
		loc = "unknown"
	}
	clock := string(j.b.clock)
	if j.c.clock != j.b.clock {
		clock = "baseline " + string(j.b.clock) + ", canary " + string(j.c.clock)
	}
	m := Measurement{
		Population:          fmt.Sprintf("all offered requests of both arms (%d classes: %s)", len(j.cls.names), strings.Join(j.cls.names, ", ")),
		Location:            loc,
		CompletionCondition: "status ok (the response finished); good = completed and every SLO criterion of its class met",
		BucketSeconds:       j.p.Window.Bucket.Seconds(),
		Clock:               clock,
		Confidence:          j.p.Confidence,
		Method:              MethodRequests,
	}
	m.Window = unionWindow(j.b, j.c)
	m.ResamplingUnit = resamplingUnit(j.b, j.c, m.BucketSeconds)
	for i, name := range j.cls.names {
		s := j.cls.slos[i]
		m.SLO = append(m.SLO, ClassSLO{Class: name, TTFT: Num(s.TTFT.Seconds()), TPOT: Num(s.TPOT.Seconds()),
			E2E: Num(s.E2E.Seconds()), MaxITL: Num(s.MaxITL.Seconds()), QualityNeeded: s.Quality == "required"})
	}
	return m
}

func unionWindow(b, c *armData) Window {
	if b.clock != c.clock || b.pseudo || c.pseudo {
		return Window{Start: "", End: "", Seconds: Num(math.Max(nanTo0(b.windowSecs), nanTo0(c.windowSecs)))}
	}
	lo := math.Min(b.windowStart, c.windowStart)
	hi := math.Max(b.windowEnd, c.windowEnd)
	return makeWindow(b.clock, lo, hi)
}

func nanTo0(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func makeWindow(clock sources.Clock, lo, hi float64) Window {
	return Window{Start: fmtTime(clock, lo), End: fmtTime(clock, hi), Seconds: Num(hi - lo)}
}

// cacheDetail is the cache step's detail: the handling chosen and why,
// both arms' hit rates, and whether they moved over the later half.
func (j *judgement) cacheDetail(handling, why string) string {
	return fmt.Sprintf("%s: %s; hit rate baseline %s, canary %s%s", handling, why, pctOrNA(cacheHitRate(j.b)), pctOrNA(cacheHitRate(j.c)), hitRatesNote(j.cacheLate[0], j.cacheLate[1]))
}

// normalization lists the steps taken; gates are the report's gates,
// whose figures the mix step quotes.
func (j *judgement) normalization(gates []Metric) Normalization {
	p := j.p
	var steps []NormalizationStep
	w := NormalizationStep{Name: "warmup", Setting: p.Window.Warmup}
	switch {
	case p.Window.Warmup == "none":
		w.Detail = "no warm-up cut requested"
	case p.Window.Warmup == "auto":
		var parts []string
		for _, a := range []*armData{j.b, j.c} {
			switch {
			case a.pseudo:
				parts = append(parts, fmt.Sprintf("%s: no arrival times, nothing cut", a.arm))
			case a.warmup != nil:
				w.Applied = w.Applied || a.warmup.Cut > 0
				parts = append(parts, fmt.Sprintf("%s: cut %gs (%d requests): %s", a.arm, a.cutSecs, countCut(a), a.warmup.Reason))
				for _, c := range a.replicaCuts {
					w.Applied = true
					parts = append(parts, fmt.Sprintf("%s: %s", a.arm, c))
				}
				if a.warmup.Drift {
					j.warnf("%s: TTFT still shifts after the warm-up cut (at bucket %d): the run is not stationary; extend it or treat the verdict with care", a.arm, a.warmup.DriftAt)
				}
			}
		}
		w.Detail = strings.Join(parts, "; ")
	default:
		w.Applied = !j.b.pseudo || !j.c.pseudo
		w.Detail = fmt.Sprintf("cut the first %s of each arm: baseline %d requests, canary %d requests",
			p.Window.Warmup, countCut(j.b), countCut(j.c))
		if j.b.pseudo || j.c.pseudo {
			w.Detail += " (an arm without arrival times cannot be cut)"
		}
	}
	steps = append(steps, w)
	if p.Normalize.Load == "matched" {
		lb, lc := offeredLoad(j.b), offeredLoad(j.c)
		per := "replica-second"
		if !j.b.replicasKnown || !j.c.replicasKnown {
			per = "second"
		}
		detail := fmt.Sprintf("offered load per %s: baseline %.4g, canary %.4g (%+.1f%%); goodput gates compare good output per offered request, i.e. at the baseline's load",
			per, lb, lc, (lc/lb-1)*100)
		if math.IsNaN(lb) || math.IsNaN(lc) {
			// no run duration in an input: there is no load to match
			detail = "offered load unknown (an input has neither a run duration nor arrival times): nothing matched"
		}
		steps = append(steps, NormalizationStep{Name: "load", Setting: "matched", Applied: !math.IsNaN(lb) && !math.IsNaN(lc),
			Detail: detail + j.likeForLike()})
	}
	if p.Normalize.Load == "flag" {
		steps = append(steps, NormalizationStep{Name: "load", Setting: "flag", Applied: false,
			Detail: strings.TrimPrefix(j.likeForLike(), "; ")})
	}
	if m := j.mix; m != nil {
		detail := fmt.Sprintf("standardized to the %s mix over %s (%s); quantile gates take quantiles of that mixture, every value weighted by its stratum's reference share over the stratum's count", m.mode, plural(len(m.names), "stratum", "strata"), m.by)
		for _, f := range m.strataFolds {
			detail += "; " + f
		}
		if m.mixes != "" {
			detail += "; " + m.mixes
		}
		for _, n := range m.notes {
			detail += "; " + gateMixText(gates, n)
		}
		steps = append(steps, NormalizationStep{Name: "mix", Setting: p.Normalize.Mix, Applied: len(m.notes) > 0, Detail: detail})
		if p.Normalize.Cache != "none" {
			steps = append(steps, NormalizationStep{Name: "cache", Setting: p.Normalize.Cache, Applied: m.cache != "none",
				Detail: j.cacheDetail(m.cache, m.cacheReason)})
		}
	}
	for _, s := range []struct{ name, setting string }{{"mix", p.Normalize.Mix}, {"cache", p.Normalize.Cache}, {"load", p.Normalize.Load}} {
		if s.name == "load" && s.setting == "matched" || j.mix != nil && (s.name == "mix" || s.name == "cache") {
			continue
		}
		if s.name == "cache" && s.setting != "none" {
			steps = append(steps, NormalizationStep{Name: "cache", Setting: s.setting, Applied: j.cache == "adjust",
				Detail: j.cacheDetail(j.cache, j.cacheReason)})
			continue
		}
		st := NormalizationStep{Name: s.name, Setting: s.setting}
		switch {
		case s.setting == "none":
			st.Detail = "not requested"
		case s.name == "mix" && j.mixSkipped != "":
			st.Detail = j.mixSkipped
		default:
			st.Detail = "not applied: this normalization is not implemented yet"
			j.warnf("normalize.%s: %s was requested but not applied (not implemented yet); the comparison is unadjusted", s.name, s.setting)
		}
		steps = append(steps, st)
	}
	steps = append(steps, outageStep(p, j.outages)...)
	if rs := j.replicaEvents(); rs != "" {
		steps = append(steps, NormalizationStep{Name: "replicas", Setting: "detect", Applied: true, Detail: rs})
	}
	if t := p.Traffic; t != nil {
		st := NormalizationStep{Name: "srm", Setting: fmt.Sprintf("canary_share %g", t.CanaryShare), Applied: true}
		st.Detail = j.srm.Reason
		steps = append(steps, st)
	}
	if st, ok := usersStep(j.b.userTally(), j.c.userTally(), p.Gates); ok {
		steps = append(steps, st)
	}
	if st, ok := persistenceStep(p.Window, min(len(j.b.kept()), len(j.c.kept())), j.b.bucketSecs, 2*p.Confidence-1); ok {
		steps = append(steps, st)
	}
	return Normalization{Steps: steps}
}

// replicaEvents finds replicas lost or silent mid-window in each arm. A
// baseline loss is reported and not blamed on the change (goodput gates
// compare at matched offered load); a canary loss is the canary's own
// outcome, reported as counted against it: its requests stay in every gate,
// and unless the policy excuses it the canary_replica_loss guardrail fails
// (see replicaLossEval).
func (j *judgement) replicaEvents() string {
	var parts []string
	for _, a := range []*armData{j.b, j.c} {
		for _, ev := range armReplicaEvents(a) {
			msg := fmt.Sprintf("%s: replica %s %s: %s", a.arm, ev.Replica, ev.Kind, ev.Reason)
			parts = append(parts, msg)
			if a.arm == sources.Canary {
				// losing a replica under the change is the canary's own
				// outcome: its requests stay in every gate as served
				j.warnf("%s (counted against the canary: its requests on the remaining replicas are judged as served)", msg)
			} else {
				j.warnf("%s (not blamed on the change: goodput is compared at matched offered load)", msg)
			}
		}
	}
	return strings.Join(parts, "; ")
}

// armReplicaEvents finds an arm's replicas that were lost, silent for a
// while or joined late, from the requests they admitted per bucket (nil
// without replica labels).
func armReplicaEvents(a *armData) []normalize.ReplicaEvent {
	if !a.replicasKnown || a.pseudo {
		return nil
	}
	idx := map[string]int{}
	var acts []normalize.ReplicaActivity
	// the arm's own buckets on the absolute grid, from its first arrival's
	// (replicaGrid), as the aggregate's replica tracks run from the arm's
	// first slice
	k0, n := a.replicaGrid()
	for i := range a.ds.Requests {
		// every request the replica admitted counts here, a replica's
		// own warm-up included: it was serving; one it rejected it never
		// served (sources.Status.Admitted), as the aggregate's replica
		// tracks count what each replica finished
		r := &a.ds.Requests[i]
		bi := min(int(math.Floor(r.Time/a.bucketSecs)-k0), n-1)
		if r.Replica == "" || bi < 0 || !r.Status.Admitted() {
			continue
		}
		k, ok := idx[r.Replica]
		if !ok {
			k = len(acts)
			idx[r.Replica] = k
			acts = append(acts, normalize.ReplicaActivity{Name: r.Replica, Requests: make([]float64, n)})
		}
		acts[k].Requests[bi]++
	}
	sort.Slice(acts, func(x, y int) bool { return acts[x].Name < acts[y].Name })
	return normalize.ReplicaLoss(acts, normalize.LossOptions{BucketSecs: a.bucketSecs})
}

// replicaGrid returns the absolute grid index k0 of the bucket holding the
// arm's first arrival and the number n of buckets from it to the window's
// end: replica activity is counted per bucket [ (k0+k)·w, (k0+k+1)·w ),
// k < n, on the grid both judges bucket on.
func (a *armData) replicaGrid() (k0 float64, n int) {
	w := a.bucketSecs
	k0 = math.Floor(a.t0 / w)
	return k0, max(int(math.Floor(a.windowEnd/w)-k0)+1, 1)
}

// armOutages are an arm's replicas lost or silent mid-window
// (armReplicaEvents) on the arm's clock, names quoted.
func armOutages(a *armData) []replicaOutage {
	k0, _ := a.replicaGrid()
	at := func(k int) float64 { return (k0 + float64(k)) * a.bucketSecs }
	return placeOutages(armReplicaEvents(a), at, func(s string) string { return fmt.Sprintf("%q", s) })
}

// countCut counts the requests cut by the arm's warm-up (a replica's own
// warm-up is reported separately).
func countCut(a *armData) int {
	n := 0
	for i, k := range a.keep {
		if !k && (a.exclude == nil || !a.exclude[i]) {
			n++
		}
	}
	return n
}

// offeredLoad is offered requests per replica-second over the window.
func offeredLoad(a *armData) float64 {
	t := a.totals()
	return t.offered / t.replicaSecs
}

func pctOrNA(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", v*100)
}

// likeForLike checks that the arms ran at comparable offered load per
// replica-second (within normalize.DefaultLoadTolerance). Attainment and
// latency depend on load through queueing, which dividing out the load
// ratio does not undo, so an arm pair outside the tolerance is flagged as
// not like-for-like in the warnings; the returned text is for the load step.
func (j *judgement) likeForLike() string {
	if j.b.pseudo || j.c.pseudo {
		return "; load per bucket unknown (no arrival times): like-for-like not checked"
	}
	if !j.b.replicasKnown || !j.c.replicasKnown {
		return "; load per replica unknown (" + unnamedReplicas(!j.b.replicasKnown, !j.c.replicasKnown) + "): like-for-like not checked"
	}
	load := func(a *armData) normalize.Load {
		kept := a.kept()
		l := normalize.Load{Offered: make([]float64, len(kept)), ReplicaSecs: make([]float64, len(kept))}
		for i := range kept {
			l.Offered[i], l.ReplicaSecs[i] = kept[i].offered, kept[i].replicaSecs
		}
		return l
	}
	res, err := normalize.CompareLoad(load(j.c), load(j.b), 0)
	if err != nil {
		return "; like-for-like not checked: " + err.Error()
	}
	if !res.LikeForLike || res.Matched {
		j.warnf("offered load: %s", res.Reason)
	}
	return "; " + res.Reason + matchedOnlyWork(res)
}

// matchedOnlyWork is what the load step adds when the arms' loads differ
// but some of their buckets match (normalize.LoadResult.Matched): only the
// internal-work gates are restricted to those buckets; the other gates
// compare every bucket (heldByQueues holds what a load per deployed
// replica beyond the tolerance could have made of them).
func matchedOnlyWork(res normalize.LoadResult) string {
	if !res.Matched {
		return ""
	}
	return " (the internal-work gates only; the other gates compare every bucket)"
}

// withoutCapacityGates returns p without its capacity gates (a capacity gate
// is judged on rate sweeps by analysis/capacity); p itself when it has none.
func withoutCapacityGates(p *policies.Policy) *policies.Policy {
	keep := make([]policies.Gate, 0, len(p.Gates))
	for _, g := range p.Gates {
		if g.Metric != "capacity" {
			keep = append(keep, g)
		}
	}
	if len(keep) == len(p.Gates) {
		return p
	}
	q := *p
	q.Gates = keep
	return &q
}
