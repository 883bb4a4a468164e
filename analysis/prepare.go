// Package analysis turns two arms' data and a policy into a Report: request
// accounting, SLO attainment and goodput per arm and per class, tail
// quantiles, the policy's gates with the non-inferiority rule of DESIGN.md §5,
// and diagnostics. It is pure: no I/O, no clock, no flags.
package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// armData is one arm prepared for comparison: requests classified and
// judged good or not, grouped into time buckets.
type armData struct {
	arm   sources.Arm
	ds    *sources.Dataset
	clock sources.Clock

	// per request, parallel to ds.Requests
	class []int32 // index into classNames
	good  []bool
	keep  []bool  // false when cut as warm-up
	bidx  []int32 // bucket of each request, −1 when in no analysed bucket

	t0          float64 // first arrival (clock units), NaN when no clock
	windowStart float64 // after the warm-up cut
	windowEnd   float64
	windowSecs  float64
	cutSecs     float64
	bucketSecs  float64
	pseudo      bool // buckets are runs of consecutive requests, not time slices

	buckets   []bucket // all buckets, including cut ones
	firstKept int      // index of the first bucket after the warm-up cut
	slice0    int64    // bucket 0's slice on the absolute grid, floor(t/bucketSecs)

	replicas      int
	replicasKnown bool
	// repID is each request's replica (an index into repNames, −1 when it
	// names none), so the per-replica walks (replicaCounts, replicaLevels,
	// replicaTails) index arrays instead of hashing a name per request
	repID      []int32
	repNames   []string
	cost       *armCost         // nil when cost is unknown
	unverified map[string]int64 // SLO criterion → completed requests lacking the field
	// qualityChecked and qualityFailed count the completed requests that
	// give quality_ok and those that fail it (qualityGap)
	qualityChecked, qualityFailed int64
	// attemptKnown is true when some record of the arm gives its attempt
	// (judgement.retriesUnreported reads both arms')
	attemptKnown bool
	// completedAll counts the arm's completed requests and outUnknownAll
	// those of them that give no output length, unlabelledAll those that
	// give no class label, every record before any cut (the output-length
	// warning and the missing-field rules)
	completedAll, outUnknownAll, unlabelledAll float64
	// sorted caches pooled latency samples by latency name
	sorted map[string][]float64
	// warmup is the automatic warm-up decision (window.warmup: auto)
	warmup *normalize.WarmupResult
	// exclude marks requests in a late-entering replica's own warm-up;
	// replicaCuts says what was cut, for the report
	exclude     []bool
	replicaCuts []string
	// users is userTally's, once computed
	users *sources.UserTally
	// leftOut are the stretches [from, to) left out of both arms
	// (leaveOut), whole buckets of the grid; leftOutTotals counts their
	// requests (latencies not kept)
	leftOut       [][2]float64
	leftOutTotals bucket
	// policy is the policy the arm is judged under; warmupCapped is true
	// when the automatic warm-up cut was held to the policy's cap
	policy       *policies.Policy
	warmupCapped bool
	// origin is the start of bucket 0 when the arms share one grid (NaN:
	// the arm's first arrival)
	origin float64
}

// replicasUnnamed reports whether the arm's request logs name no replica,
// so its replica count is unknown (a benchmark run's arm, without arrival
// times, is one server and not counted here).
func (a *armData) replicasUnnamed() bool { return !a.pseudo && !a.replicasKnown }

// acceptMSER takes MSER's own cut when truncating there halves the
// standard error of the mean (SE(cut)/SE(0) < MSERAcceptRatio; missed ramps
// 0.19–0.28, stationary arms ≥ 0.52) and the start is slower than the rest:
// when the changepoint check found no cut (it rejects gradual ramps), and
// when it cut earlier than MSER (it locates the steepest part of a ramp,
// not its end: on the simulator's cold starts, steps up to 2.4× slower
// easing over 2–4 minutes, a cut at the changepoint left the last half
// minute of the ramp and the queue it built in the window, and the
// canary's attainment interval came out up to three times as wide as
// with the cut at MSER's point). series holds the median TTFT per time
// step, unit names the steps in the reason ("buckets" on the request path,
// "slices" on the aggregate). Both paths call it, so they cut the same
// way; the cap (window.max_warmup) applies after it.
func acceptMSER(res normalize.WarmupResult, series []float64, unit, metric string) normalize.WarmupResult {
	if !(res.MSERCut > res.Cut && res.MSERSE0 > 0 && res.MSERSE/res.MSERSE0 < MSERAcceptRatio) {
		return res
	}
	before, after := meanOf(series[:res.MSERCut]), meanOf(series[res.MSERCut:])
	if !(before > after) {
		return res
	}
	if res.Cut == 0 {
		res.Reason = fmt.Sprintf("cut %d %s: MSER truncation lowers the standard error of the mean to %.2f× (< %g) and the start is slower (median %s %.4gs, then %.4gs)",
			res.MSERCut, unit, res.MSERSE/res.MSERSE0, MSERAcceptRatio, metric, before, after)
	} else {
		res.Reason += fmt.Sprintf("; extended to MSER's %d %s: its truncation lowers the standard error of the mean to %.2f× (< %g), so the slow start outlasts the changepoint (median %s %.4gs, then %.4gs)",
			res.MSERCut, unit, res.MSERSE/res.MSERSE0, MSERAcceptRatio, metric, before, after)
	}
	res.Cut, res.MeanBefore, res.MeanAfter = res.MSERCut, before, after
	return res
}

// slowStart decides an arm's automatic warm-up from its per-step medians
// of TTFT and of TPOT over its largest stratum (time order, NaN where a
// step has no completed request of it; see armData.dominantMedians), each by the same rule — normalize.Warmup with opts, MSER's own
// cut taken by acceptMSER, and a cut only when the start is slower than
// what follows — and keeps the later of the two cuts. A cold engine slows
// every decode step: with little queueing its first tokens come nearly as
// fast as later ones while its token times double, and a warm-up that the
// TTFT medians alone missed left the canary's p99 TPOT 35–50% worse in 5%
// of the simulator's cold starts. The TPOT cut is taken only when the
// token times before it are at least TPOTWarmupRatio times those after.
// Drift (a shift left after the cut) is the TTFT series', as before. unit
// names the steps in the reason.
func slowStart(ttft, tpot []float64, opts normalize.WarmupOptions, unit string) normalize.WarmupResult {
	decide := func(series []float64, metric string) normalize.WarmupResult {
		res := acceptMSER(normalize.Warmup(series, opts), series, unit, metric)
		if res.Cut > 0 && !(res.MeanBefore > res.MeanAfter) {
			// a warm-up is a slow start; a start faster than what follows
			// is a later slowdown (load, a lost replica), which must stay
			// in the window to be judged
			res.Reason = fmt.Sprintf("no cut: the level shifts at %s %d but the start is faster (median %s %.4gs before, %.4gs after), so it is not a warm-up",
				strings.TrimSuffix(unit, "s"), res.Cut, metric, res.MeanBefore, res.MeanAfter)
			res.Cut, res.Confirmed = 0, false
			return res
		}
		if res.Cut == 0 {
			return res
		}
		if before, after := meanOf(series[:res.Cut]), meanOf(series[res.Cut:]); before >= LateSlowdownRatio*after && !frontLoaded(series, res.Cut) {
			head := frontSteps(res.Cut)
			not := "not"
			if rose := risenAfterStart(series, res.Cut); rose > 0 {
				not = fmt.Sprintf("not %g× so (rising to %.4gs later)", RiseAfterStart, rose)
			}
			res.Reason = fmt.Sprintf("no cut: the start before %s %d is slower (median %s %.4gs, then %.4gs), but %s its first %d %s (%.4gs): a slowdown that begins after a normal start is not a warm-up and stays in the window to be judged",
				strings.TrimSuffix(unit, "s"), res.Cut, metric, before, after, not, head, unit, meanOf(series[:head]))
			res.Cut, res.Confirmed = 0, false
			res.LateSlowdown = true
		}
		return res
	}
	rt := decide(ttft, "TTFT")
	if len(tpot) == 0 {
		return rt
	}
	rp := decide(tpot, "TPOT")
	if rp.Cut <= rt.Cut || !(rp.MeanBefore >= TPOTWarmupRatio*rp.MeanAfter) {
		if rp.LateSlowdown && !rt.LateSlowdown {
			// a stall the token times alone show (decode slowed, first
			// tokens not) is not cut either, and is scanned for
			rt.LateSlowdown = true
			rt.Reason += fmt.Sprintf("; by the per-%s TPOT medians, %s", strings.TrimSuffix(unit, "s"), rp.Reason)
		}
		return rt
	}
	out := rp
	out.Drift, out.DriftAt = rt.Drift, rt.DriftAt
	out.LateSlowdown = rt.LateSlowdown
	out.Reason = fmt.Sprintf("by the per-%s TPOT medians, %s; by the TTFT medians alone, %s", strings.TrimSuffix(unit, "s"), rp.Reason, rt.Reason)
	return out
}

// frontLoaded reports whether a warm-up cut of cut steps removes a slow
// start rather than a slowdown that began after a normal one: the cut's
// first steps (frontSteps) must themselves be slow, either at least
// LateSlowdownRatio times the level after the cut or at least FrontLoad
// of the way from that level to the cut's own mean (medians per step,
// NaN steps skipped). A cold engine is slow from its first requests: it
// eases off from there, or, under load, builds a queue whose first tokens
// wait longest a minute or two in (the simulator's cold starts at 40
// req/s: 3.6 s in the first 30 s, 21 s at 1:30, 0.2 s after the cut). A
// stall one or two minutes into the run (TTFT ×5 for a minute or two on
// the fleet model) starts at the level after it, and was cut as a
// warm-up with the normal minute before it: the canary passed two runs in
// three. A start with no median in its first steps counts as slow (its
// requests did not complete).
//
// When the cut holds a stretch of as many steps at least RiseAfterStart
// times its first ones (the level rose after the start), the first steps
// must be at least RiseAfterStart times the level after the cut: an
// arm's own slowdowns made a normal start 1.36× that level in the
// noisiest fleet's canary before a stall ×4.5 at 2:00, which was cut as
// its warm-up, while a queue a cold engine builds rises from a start
// already far from the level after it (3.6 s against 0.2 s above).
func frontLoaded(series []float64, cut int) bool {
	if cut <= 0 || cut > len(series) {
		return true
	}
	h := frontSteps(cut)
	head := meanOf(series[:h])
	before, after := meanOf(series[:cut]), meanOf(series[cut:])
	if math.IsNaN(head) || math.IsNaN(before) || math.IsNaN(after) {
		return true
	}
	if !(head >= LateSlowdownRatio*after || head-after >= FrontLoad*(before-after)) {
		return false
	}
	if risenAfterStart(series, cut) > 0 {
		return head >= RiseAfterStart*after
	}
	return true
}

// risenAfterStart is the mean of the first stretch of frontSteps(cut)
// steps within a cut of cut steps that is at least RiseAfterStart times
// the cut's first steps (frontLoaded), or 0 when there is none.
func risenAfterStart(series []float64, cut int) float64 {
	h := frontSteps(cut)
	head := meanOf(series[:h])
	for i := h; i+h <= cut; i++ {
		if m := meanOf(series[i : i+h]); m >= RiseAfterStart*head {
			return m
		}
	}
	return 0
}

// RiseAfterStart is the rise within a warm-up cut, over its first steps,
// from which those steps must be this many times the level after the cut
// for the cut to be a slow start (frontLoaded): 2.
const RiseAfterStart = 2.0

// frontSteps is how many of a cut's first steps frontLoaded reads: a
// third of the cut, at least one and at most FrontLoadSteps (30 s of
// 10 s buckets), so that a stall that starts half a minute in is not
// read as part of the start however long MSER's cut.
func frontSteps(cut int) int { return max(1, min(FrontLoadSteps, cut/3)) }

// LateSlowdownRatio is how much slower, at least, the steps a warm-up cut
// removes must be than those after it for frontLoaded to decide the cut
// (and how much slower its first steps, at least, make a slow start):
// a stall is several times slower (a minute of TTFT ×5 in a cut of 15
// steps: 2.6×), while an automatic cut in a steady arm's noise removes
// steps a few percent slower (1.05–1.10× on the simulator's identical
// arms), whose order within the cut says nothing, and taking such cuts
// or not moved A/A verdicts by as much as the noise does.
const LateSlowdownRatio = 1.25

// FrontLoad is how far, at least, from the level after a warm-up cut
// toward the cut's mean its first steps must lie (frontLoaded);
// FrontLoadSteps is the most steps read as the start (frontSteps).
const (
	FrontLoad      = 0.5
	FrontLoadSteps = 3
)

// TPOTWarmupRatio is how much slower, at least, an arm's token times must
// be before a cut than after it for the TPOT medians to set the warm-up
// cut: a cold engine's steps are 1.6–2.4× slower at first, while a load
// wave moves the median TPOT by a few percent, and CUSUM confirmed such a
// shift as a "warm-up" of a steady baseline (a 4% shift cut its first
// 5 minutes). Below it the TPOT medians cut nothing, and a slow start
// they alone show stays in the window to be judged.
const TPOTWarmupRatio = 1.15

// MSERAcceptRatio is the largest SE(cut)/SE(0) of MSER at which its cut is
// taken without CUSUM confirmation (window.warmup: auto), when the start is
// slower than the rest.
const MSERAcceptRatio = 0.5

func meanOf(xs []float64) float64 {
	s, n := 0.0, 0.0
	for _, x := range xs {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / n
}

// bucket holds one time slice's totals for one arm.
type bucket struct {
	start, secs                float64
	offered, good, completed   float64
	failed, rejected, canceled float64
	retries                    float64
	goodTokens, outTokens      float64
	promptTokens               float64 // prompt tokens of admitted requests that give their length
	outUnknown                 float64 // completions without an output length (not in outTokens)
	outMax                     float64 // the most output tokens of one completion (0: none known)
	replicaSecs                float64
	cost                       float64   // USD prorated onto the bucket
	ttft, tpot, e2e            []float64 // completed requests
	cut                        bool
	// leftOut marks a bucket of a stretch left out of both arms (a
	// baseline outage, baseline_outage): it holds no requests, and its
	// time, replica-seconds and cost count nowhere
	leftOut bool
}

// classifier assigns policy classes to requests.
type classifier struct {
	p     *policies.Policy
	names []string // index → class name; "default" last when used
	slos  []policies.SLO
	byKey map[string]int32
	// def is the index of "default" once added (−1 before): most requests
	// fall to it, and a map lookup per request was a visible share of the
	// scan
	def int32
}

// outcomeClasses names, in policy order, the policy classes whose rule
// reads output_tokens: which of them a request falls in is what the arm
// did, not what was asked of it, so they set SLOs but make no strata
// (output length is never a stratum; see planMix and classMix).
func outcomeClasses(p *policies.Policy) []string {
	var out []string
	for _, c := range p.Classes {
		if c.When.OutputTokens != nil {
			out = append(out, c.Name)
		}
	}
	return out
}

// outcomeClassesNote is the mix step's word on strata made without the
// policy classes; names are the outcomeClasses.
func outcomeClassesNote(names []string) string {
	what := "class " + quotedList(names) + " is"
	if len(names) > 1 {
		what = "classes " + quotedList(names) + " are"
	}
	return "not by policy class: " + what + " decided by output length, which the arm's outcome sets"
}

// quotedList renders names as "a", "b" and "c".
func quotedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

func newClassifier(p *policies.Policy) *classifier {
	c := &classifier{p: p, byKey: map[string]int32{}, def: -1}
	for _, cl := range p.Classes {
		c.add(cl.Name, cl.SLO)
	}
	return c
}

func (c *classifier) add(name string, slo policies.SLO) int32 {
	if i, ok := c.byKey[name]; ok {
		return i
	}
	i := int32(len(c.names))
	c.names = append(c.names, name)
	c.slos = append(c.slos, slo)
	c.byKey[name] = i
	return i
}

// classOf returns the class index of r: the first policy class whose
// conditions hold; else, when the policy declares no classes, the input's
// own class label (judged with the policy SLO); else "default".
func (c *classifier) classOf(r *sources.Request) int32 {
	ci, _ := c.classify(r)
	return ci
}

// classify is classOf, and whether r, a completed request, has a class a
// length its record does not give may have decided: some class rule,
// before the one its known fields match, whose label condition it meets
// and whose token conditions it meets where its lengths are known, reads
// a prompt or output length it lacks. Its SLO is then not known: a canary
// logged without prompt_tokens had its long-prompt requests judged under
// the default SLO (TTFT 1 s, not the long class's) and failed identical
// builds on attainment (−7.3 pp). Both come from one pass over the rules.
func (c *classifier) classify(r *sources.Request) (ci int32, undecided bool) {
	for i := range c.p.Classes {
		w := &c.p.Classes[i].When
		if len(w.Label) > 0 && !slices.Contains(w.Label, r.Class) {
			continue
		}
		missing, holds := false, true
		for _, t := range []struct {
			rg *policies.Range
			v  int64
		}{{w.PromptTokens, r.PromptTokens}, {w.OutputTokens, r.OutputTokens}} {
			switch {
			case t.rg == nil:
			case t.v < 0:
				missing = true
			case !t.rg.Contains(t.v):
				holds = false
			}
		}
		switch {
		case !holds:
		case missing:
			undecided = r.Status == sources.StatusOK
		default:
			return int32(i), undecided
		}
	}
	if len(c.p.Classes) == 0 && r.Class != "" {
		return c.add(r.Class, c.p.SLO), undecided
	}
	if c.def < 0 {
		c.def = c.add("default", c.p.SLO)
	}
	return c.def, undecided
}

// isGood applies an SLO to a request. A criterion the request cannot be
// checked against (field unknown) counts as not met, and is tallied in
// unverified so the report can say so: missing data is never good. A
// request that already fails a criterion it can be checked against (or
// the output floor) is not good whatever the missing field says, and is
// not tallied: the tally counts the requests the missing field decided
// (unverifiedGap compares the arms' shares of them).
func isGood(slo policies.SLO, r *sources.Request, unverified map[string]int64) bool {
	if r.Status != sources.StatusOK {
		return false
	}
	ok := true
	var missing [5]string
	nm := 0
	check := func(name string, limit policies.Duration, v float64, undefinedOK bool) {
		if limit == 0 {
			return
		}
		if !sources.Known(v) {
			if !undefinedOK {
				missing[nm] = name
				nm++
			}
			return
		}
		if v > limit.Seconds() {
			ok = false
		}
	}
	// an empty or one-token answer streams nothing to time: it is good
	// only if the policy lowers slo.min_output_tokens
	if r.OutputTokens >= 0 && r.OutputTokens < slo.OutputFloor() {
		ok = false
	}
	check("ttft", slo.TTFT, r.TTFT, false)
	// TPOT is undefined for a single output token: nothing to stream.
	check("tpot", slo.TPOT, r.TPOT, r.OutputTokens >= 0 && r.OutputTokens <= 1)
	check("e2e", slo.E2E, r.E2E, false)
	check("max_itl", slo.MaxITL, r.MaxITL, r.OutputTokens >= 0 && r.OutputTokens <= 1)
	if slo.Quality == "required" {
		switch r.Quality {
		case sources.QualityBad:
			ok = false
		case sources.QualityUnknown:
			missing[nm] = "quality"
			nm++
		}
	}
	if !ok {
		return false
	}
	for _, name := range missing[:nm] {
		unverified[name]++
	}
	return nm == 0
}

// canonicalOrder sorts an arm's records by arrival time, ties broken by
// every other field, so that nothing downstream (bucket membership order,
// resampling, thinning) depends on the order of lines in a file or of files
// on the command line: the same records give the same report. Records
// without arrival times keep their order, which is the only trace of
// submission order they have (the reader orders such files by content).
func canonicalOrder(ds *sources.Dataset) {
	if ds.Clock == sources.ClockNone {
		return
	}
	for i := range ds.Requests {
		if !sources.Known(ds.Requests[i].Time) {
			return
		}
	}
	if slices.IsSortedFunc(ds.Requests, compareRequests) {
		return
	}
	slices.SortFunc(ds.Requests, compareRequests)
}

// compareRequests orders records by time, then by every other field.
func compareRequests(a, b sources.Request) int {
	if c := cmp.Compare(a.Time, b.Time); c != 0 {
		return c
	}
	for _, p := range [][2]float64{{a.TTFT, b.TTFT}, {a.TPOT, b.TPOT}, {a.E2E, b.E2E}, {a.MaxITL, b.MaxITL}} {
		if c := cmp.Compare(p[0], p[1]); c != 0 {
			return c
		}
	}
	for _, p := range [][2]int64{{a.PromptTokens, b.PromptTokens}, {a.OutputTokens, b.OutputTokens}, {a.CachedTokens, b.CachedTokens},
		{int64(a.Attempt), int64(b.Attempt)}, {int64(a.Status), int64(b.Status)}, {int64(a.Quality), int64(b.Quality)}} {
		if c := cmp.Compare(p[0], p[1]); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(a.Class, b.Class); c != 0 {
		return c
	}
	return cmp.Compare(a.Replica, b.Replica)
}

// userTally tallies the arm's count gates per group of users over every
// request counted (timed, or the arm untimed; not a replica's own
// warm-up), as the streaming Aggregator does; computed once.
func (a *armData) userTally() *sources.UserTally {
	if a.users == nil {
		// filled whole before it is kept: a tally kept empty and filled
		// in place could be read half-filled
		t := &sources.UserTally{}
		for i := range a.ds.Requests {
			r := &a.ds.Requests[i]
			if (a.pseudo || sources.Known(r.Time)) && (a.exclude == nil || !a.exclude[i]) {
				t.Add(r, a.good[i])
			}
		}
		a.users = t
	}
	return a.users
}

// prepare classifies, judges and buckets one arm.
// origin is the common bucket-grid origin of paired arms (NaN: the arm's
// own first arrival).
func prepare(ds *sources.Dataset, p *policies.Policy, cls *classifier, origin float64) (*armData, error) {
	n := len(ds.Requests)
	if n == 0 {
		return nil, &DataError{Arm: ds.Arm, Msg: "no requests: the input holds no request records"}
	}
	// a replica field with ids in it: judged as naming none, as the
	// streaming Aggregator does (sources.MaxReplicas)
	ds = sources.WithoutTooManyReplicas(ds)
	canonicalOrder(ds)
	a := &armData{arm: ds.Arm, ds: ds, clock: ds.Clock, policy: p, origin: origin, class: make([]int32, n), good: make([]bool, n),
		keep: make([]bool, n), bucketSecs: p.Window.Bucket.Seconds(), unverified: map[string]int64{}}
	for i := range ds.Requests {
		r := &ds.Requests[i]
		ci, undecided := cls.classify(r)
		a.class[i] = ci
		a.good[i] = isGood(cls.slos[ci], r, a.unverified)
		if undecided {
			a.unverified[sources.ClassUnverified]++
		}
		if r.Status == sources.StatusOK {
			a.completedAll++
			if r.OutputTokens < 0 {
				a.outUnknownAll++
			}
			if r.Class == "" {
				a.unlabelledAll++
			}
			checked, failed := qualityTally(r.Quality)
			a.qualityChecked, a.qualityFailed = a.qualityChecked+checked, a.qualityFailed+failed
		}
		a.attemptKnown = a.attemptKnown || r.Attempt > 0
	}
	// a canary that completed nothing is judged (its guardrails and
	// attainment fail, its latency gates have nothing to read); a
	// baseline that completed nothing leaves nothing to judge it against
	if a.completedAll == 0 && ds.Arm != sources.Canary {
		return nil, &DataError{Arm: ds.Arm, Msg: fmt.Sprintf("no completed requests among %d offered (%s): there is nothing to compare the canary with — check that the client reached the endpoint", n, statusCounts(ds.Requests))}
	}
	if a.clock == "" {
		a.clock = sources.ClockNone
	}
	if a.clock != sources.ClockNone {
		for i := range ds.Requests {
			if !sources.Known(ds.Requests[i].Time) {
				a.clock = sources.ClockNone
				break
			}
		}
	}
	if a.clock == sources.ClockNone {
		a.bucketPseudo(p)
	} else {
		cut := 0.0
		if d := p.Window.WarmupDuration(); d > 0 {
			cut = d.Seconds()
		}
		if err := a.bucketTime(cut); err != nil {
			return nil, err
		}
		if p.Window.Warmup == "auto" {
			if err := a.autoWarmup(); err != nil {
				return nil, err
			}
		}
	}
	a.replicaTime()
	return a, nil
}

func statusCounts(rs []sources.Request) string {
	m := map[sources.Status]int{}
	for i := range rs {
		m[rs[i].Status]++
	}
	var keys []int
	for s := range m {
		keys = append(keys, int(s))
	}
	sort.Ints(keys)
	out := ""
	for _, k := range keys {
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%d %s", m[sources.Status(k)], sources.Status(k))
	}
	return out
}

// oneInstantMin is the fewest records that, all at one arrival time,
// are refused (oneInstantError): a handful of requests within one tick of
// a coarse clock (whole seconds) is a short run that the gates call too
// little data; a hundred is a log that stamps one time on every record.
const oneInstantMin = 100

// oneInstantError refuses an arm of n ≥ oneInstantMin requests that all
// arrived at time t (unix seconds), on both judges: ts is each request's
// own arrival, and one time on every record (when the run started, or when
// the file was written) leaves nothing to bucket, pair or rate.
func oneInstantError(arm sources.Arm, n int64, t float64) error {
	return &DataError{Arm: arm, Msg: fmt.Sprintf("all %d requests arrive at one instant (ts %s on every record): ts is each request's own arrival time, and one time stamped on every record (when the run started, or when the file was written) leaves nothing to bucket, pair in time or turn into a rate; write each request's arrival time",
		n, strconv.FormatFloat(t, 'f', -1, 64))}
}

// maxBuckets is the number of time buckets an arm may span whatever its
// request count (at 10 s, about four months); beyond it, and beyond four
// buckets per request, the span is refused.
const maxBuckets = 1 << 20

// bucketTime groups requests by arrival time into buckets of the policy's
// width w on the absolute grid the streaming aggregate uses (bucket k of
// the grid covers [k·w, (k+1)·w) on the arm's clock; paired arms start
// from the bucket of the earlier first arrival, one arm alone from its
// own), and cuts the first cut seconds after the arm's first arrival as
// warm-up, rounded down to a bucket boundary so that only whole buckets
// are cut, as the aggregate cuts whole slices (cutSecs, the reported cut,
// runs from the start of the arm's first bucket: a 60 s warm-up reads
// 60 s and cuts the arrivals of the first six 10 s buckets). Both judges
// then put every request in the same bucket and cut the same ones.
func (a *armData) bucketTime(cut float64) error {
	rs := a.ds.Requests
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range rs {
		lo = math.Min(lo, rs[i].Time)
		hi = math.Max(hi, rs[i].Time)
	}
	a.t0 = lo
	end := hi
	if a.ds.Duration > 0 && lo+a.ds.Duration > end {
		end = lo + a.ds.Duration
	}
	if hi == lo && !(a.ds.Duration > 0) {
		if len(rs) >= oneInstantMin {
			return oneInstantError(a.arm, int64(len(rs)), lo)
		}
		// a handful of requests within one tick (a single request, or a
		// few in one second of a coarse clock) span no time: the arm is
		// the one bucket that holds them, as the streaming aggregate
		// counts it one slice, and the gates call it too little data
		end = math.Floor(lo/a.bucketSecs)*a.bucketSecs + a.bucketSecs
	}
	if cut >= end-lo {
		return &DataError{Arm: a.arm, Msg: fmt.Sprintf("the warm-up cut of %gs removes the whole run (%.1fs of arrivals); shorten window.warmup", cut, end-lo)}
	}
	w := a.bucketSecs
	// a span far beyond what the requests can fill is a stray record (ts 0,
	// a clock years off), not a run: refuse it rather than allocate it
	if span := (end - lo) / w; !(span <= float64(max(maxBuckets, 4*len(rs)))) {
		return &DataError{Arm: a.arm, Msg: fmt.Sprintf("arrival times span %.6g s (%.6g … %.6g) for %d requests, %.3g buckets of %gs: "+
			"a record far from the rest (ts 0, a clock a year off, perf_counter beside unix times)? Check the earliest and latest records", end-lo, lo, end, len(rs), span, w)}
	}
	// paired arms share one grid from the bucket of the earlier first
	// arrival; buckets before this arm's own start are cut below
	first := lo
	if !math.IsNaN(a.origin) && a.origin <= lo {
		first = a.origin
	}
	orgK := math.Floor(first / w)
	a.slice0 = int64(orgK)
	nb := int(math.Floor(end/w)-orgK) + 1
	a.buckets = make([]bucket, nb)
	for i := range a.buckets {
		a.buckets[i].start = (orgK + float64(i)) * w
		a.buckets[i].secs = w
	}
	// the last bucket is partial: it runs to the end of the run
	last := &a.buckets[nb-1]
	last.secs = math.Max(end-last.start, 0)
	if nb > 1 && last.secs < w && hi < last.start {
		// a fragment without arrivals past the last boundary (the stated
		// duration ends a moment after it, or exactly on it): its seconds
		// go to the bucket before it. The streaming aggregate ends with
		// the last slice that has an arrival; a bucket of nothing but a
		// fraction of a second would add one zero to every per-bucket
		// series and widen the variance estimated from them
		a.buckets[nb-2].secs += last.secs
		a.buckets = a.buckets[:nb-1]
		nb--
	}
	a.windowStart, a.cutSecs = lo, 0
	if cut > 0 {
		// whole buckets: the boundary at or before lo+cut (1e-9 absorbs
		// the rounding of a cut computed as boundary − lo); the cut is
		// counted from the start of the arm's first bucket, as the
		// aggregate counts it from its first slice
		a.windowStart = math.Floor((lo+cut)/w+1e-9) * w
		a.cutSecs = a.windowStart - math.Floor(lo/w)*w
	}
	a.windowEnd = end
	a.windowSecs = end - a.windowStart
	a.firstKept = nb
	for i := range a.buckets {
		b := &a.buckets[i]
		if b.start+b.secs <= a.windowStart+1e-9 {
			b.cut = true
		} else if a.firstKept == nb {
			a.firstKept = i
			// a bucket straddling the cut keeps only its analysed part
			if b.start < a.windowStart {
				b.secs -= a.windowStart - b.start
				b.start = a.windowStart
			}
		}
		if !b.cut && a.leftOutAt(math.Floor(b.start/a.bucketSecs+1e-9)) {
			b.leftOut = true
			a.windowSecs -= b.secs
		}
	}
	a.bidx = make([]int32, len(rs))
	for i := range rs {
		a.bidx[i] = -1
		r := &rs[i]
		bi := int(math.Floor(r.Time/w) - orgK)
		if bi >= len(a.buckets) {
			bi = len(a.buckets) - 1
		}
		a.keep[i] = r.Time >= a.windowStart && (a.exclude == nil || !a.exclude[i])
		if a.exclude != nil && a.exclude[i] {
			continue // a replica's own warm-up
		}
		if b := &a.buckets[bi]; a.keep[i] || b.cut {
			// cut buckets are kept for charts; a bucket straddling the
			// cut holds only its analysed requests
			a.add(b, i)
			a.bidx[i] = int32(bi)
		}
	}
	return nil
}

// bucketPseudo groups requests without arrival times into runs of
// consecutive records (files list requests in submission order), sized to
// hold about one bucket's worth of requests at the run's mean rate.
func (a *armData) bucketPseudo(p *policies.Policy) {
	rs := a.ds.Requests
	n := len(rs)
	a.pseudo = true
	a.t0 = math.NaN()
	size := 10
	if a.ds.Duration > 0 {
		size = int(math.Round(float64(n) * a.bucketSecs / a.ds.Duration))
	}
	if p.Window.Untimed == "requests" {
		// the policy makes every request its own unit (bench)
		size = 1
	}
	size = max(size, 1)
	nb := (n + size - 1) / size
	a.buckets = make([]bucket, nb)
	secsPer := math.NaN()
	if a.ds.Duration > 0 {
		secsPer = a.ds.Duration / float64(nb)
	}
	for i := range a.buckets {
		a.buckets[i].start = float64(i) * secsPer
		a.buckets[i].secs = secsPer
	}
	a.bidx = make([]int32, len(rs))
	for i := range rs {
		a.keep[i] = true
		a.add(&a.buckets[i/size], i)
		a.bidx[i] = int32(i / size)
	}
	a.windowSecs = a.ds.Duration
	if a.ds.Duration <= 0 {
		a.windowSecs = math.NaN()
	}
	a.windowStart, a.windowEnd = 0, a.windowSecs
}

func (a *armData) add(b *bucket, i int) {
	r := &a.ds.Requests[i]
	b.offered++
	if r.Status.Admitted() && r.PromptTokens >= 0 {
		b.promptTokens += float64(r.PromptTokens)
	}
	if r.Attempt > 1 {
		b.retries++
	}
	switch {
	case r.Status == sources.StatusOK:
		b.completed++
		if sources.Known(r.TTFT) {
			b.ttft = append(b.ttft, r.TTFT)
		}
		if sources.Known(r.TPOT) {
			b.tpot = append(b.tpot, r.TPOT)
		}
		if sources.Known(r.E2E) {
			b.e2e = append(b.e2e, r.E2E)
		}
		if r.OutputTokens > 0 {
			b.outTokens += float64(r.OutputTokens)
			b.outMax = max(b.outMax, float64(r.OutputTokens))
		} else if r.OutputTokens < 0 {
			b.outUnknown++
		}
	case r.Failed():
		b.failed++
	case r.Status == sources.StatusRejected:
		b.rejected++
	case r.Canceled():
		b.canceled++
	}
	if a.good[i] {
		b.good++
		if r.OutputTokens > 0 {
			b.goodTokens += float64(r.OutputTokens)
		}
	}
}

// replicaTime computes each bucket's replica-seconds from the replicas seen
// in the data: a replica is present from the start of the bucket of its
// first request to the end of the bucket of its last, and from the arm's
// start (its first arrival), or to its end, when that bucket is within one
// of the arm's first or last — whole buckets, as the streaming aggregate
// counts a replica serving in whole slices (sources.ReplicaSpans.Tracks),
// so that both paths read the same load per replica-second (a replica
// placed by its requests' own times read an arm of five requests on three
// replicas at 0.076 requests per replica-second where its aggregate read
// 0.062).
// Without replica labels the arm counts as one replica throughout.
func (a *armData) replicaTime() {
	rs := a.ds.Requests
	type span struct {
		lo, hi float64
		id     int32
	}
	spans := map[string]*span{}
	a.repID, a.repNames = make([]int32, len(rs)), nil
	for i := range rs {
		a.repID[i] = -1
		if rs[i].Replica == "" {
			continue
		}
		s, ok := spans[rs[i].Replica]
		if !ok {
			s = &span{lo: math.Inf(1), hi: math.Inf(-1), id: int32(len(a.repNames))}
			spans[rs[i].Replica] = s
			a.repNames = append(a.repNames, rs[i].Replica)
		}
		a.repID[i] = s.id
		if !a.pseudo {
			s.lo = math.Min(s.lo, rs[i].Time)
			s.hi = math.Max(s.hi, rs[i].Time)
		}
	}
	a.replicas = len(spans)
	a.replicasKnown = len(spans) > 0
	// each replica's time in service, by id: from its first bucket's
	// start to its last bucket's end, or from the arm's start (its first
	// arrival, where its first bucket's seconds begin) and to its end
	served := make([][2]float64, len(spans))
	w := a.bucketSecs
	first, last := math.Floor(a.t0/w), math.Floor(a.windowEnd/w)
	for _, s := range spans {
		kl, kh := math.Floor(s.lo/w), math.Floor(s.hi/w)
		lo, hi := kl*w, math.Min((kh+1)*w, a.windowEnd)
		if kl <= first+1 {
			lo = a.t0
		}
		if kh >= last-1 {
			hi = a.windowEnd // still serving at the end
		}
		served[s.id] = [2]float64{lo, hi}
	}
	for bi := range a.buckets {
		b := &a.buckets[bi]
		if !a.replicasKnown || a.pseudo {
			b.replicaSecs = b.secs * float64(max(a.replicas, 1))
			continue
		}
		bEnd := b.start + b.secs
		for _, sv := range served {
			if ov := math.Min(sv[1], bEnd) - math.Max(sv[0], b.start); ov > 0 {
				b.replicaSecs += ov
			}
		}
	}
	for bi := range a.buckets {
		if a.buckets[bi].leftOut {
			a.buckets[bi].replicaSecs = 0
		}
	}
}

// leftOutAt reports whether grid bucket k (the bucket of the seconds
// [k·bucketSecs, (k+1)·bucketSecs) on the arm's clock) lies in a stretch
// left out of both arms.
func (a *armData) leftOutAt(k float64) bool {
	for _, o := range a.leftOut {
		if k >= math.Round(o[0]/a.bucketSecs) && k < math.Round(o[1]/a.bucketSecs) {
			return true
		}
	}
	return false
}

// kept returns the analysed buckets (after the warm-up cut).
func (a *armData) kept() []bucket { return a.buckets[a.firstKept:] }

// autoWarmup applies the pre-declared warm-up rule (MSER-5 on per-bucket
// TTFT medians, confirmed by a CUSUM changepoint; see normalize.Warmup) and
// re-buckets the arm with the detected cut.
func (a *armData) autoWarmup() error {
	ttft, tpot := a.dominantMedians()
	res := slowStart(ttft, tpot, normalize.WarmupOptions{}, "buckets")
	if capB := int(math.Floor(a.policy.Window.WarmupCap(a.windowEnd-a.t0)/a.bucketSecs + 1e-9)); res.Cut > capB {
		// a slow start longer than a warm-up is judged, not cut: the
		// rest of it stays in the window
		res.Reason += fmt.Sprintf("; capped at %d buckets (%gs: window.max_warmup, by default the longer of 5 min and %g%% of the run): the slow start beyond it is judged",
			capB, float64(capB)*a.bucketSecs, 100*policies.MaxWarmupShare)
		res.Cut = capB
		a.warmupCapped = true
	}
	a.warmup = &res
	if res.Cut > 0 {
		if err := a.bucketTime(float64(res.Cut) * a.bucketSecs); err != nil {
			return err
		}
	}
	return a.replicaWarmups()
}

// dominantMedians returns the arm's per-bucket medians of TTFT and of
// TPOT (NaN where a bucket has none) over its largest stratum alone — the
// one with the most completed requests, ties to the first by label or
// token-length band, then policy class — where a stratum is the request's
// class label, or its token-length band when it has none, with the policy
// class that sets its SLO (the aggregate's strata, keyed as the
// Aggregator keys them, a label's prompt bands taken together). A pooled
// median moves when the mix moves during the run: a canary whose slow-prompt class stopped sending halfway had
// its first 5 minutes cut as a "warm-up" (its median TTFT fell from
// 0.43 s to 0.30 s at the change), and both arms with it. One stratum's
// median does not move with the mix.
func (a *armData) dominantMedians() (ttft, tpot []float64) {
	rs := a.ds.Requests
	keyOf := func(i int) stratumKey {
		// a label's requests as one, whatever their prompt bands
		// (normalize.WithoutLabelBand)
		k := stratumKey{label: rs[i].Class, band: 255, class: a.class[i]}
		if rs[i].Class == "" {
			k.band = uint8(normalize.BandIndex(rs[i].PromptTokens))
		}
		return k
	}
	// name is the label or band of request i's stratum, to break ties
	name := func(i int) string {
		if rs[i].Class != "" {
			return rs[i].Class
		}
		return normalize.Band(rs[i].PromptTokens)
	}
	type tally struct{ n, first int }
	n := map[stratumKey]tally{}
	for i := range rs {
		if rs[i].Status == sources.StatusOK {
			k := keyOf(i)
			t, ok := n[k]
			if !ok {
				t.first = i
			}
			t.n++
			n[k] = t
		}
	}
	var best stratumKey
	var top tally
	for k, t := range n {
		if t.n > top.n || t.n == top.n && (cmp.Compare(name(t.first), name(top.first)) < 0 || name(t.first) == name(top.first) && k.class < best.class) {
			best, top = k, t
		}
	}
	vt, vp := make([][]float64, len(a.buckets)), make([][]float64, len(a.buckets))
	for i := range rs {
		r := &rs[i]
		if bi := a.bidx[i]; bi >= 0 && r.Status == sources.StatusOK && keyOf(i) == best {
			if sources.Known(r.TTFT) {
				vt[bi] = append(vt[bi], r.TTFT)
			}
			if sources.Known(r.TPOT) {
				vp[bi] = append(vp[bi], r.TPOT)
			}
		}
	}
	medians := func(vals [][]float64) []float64 {
		series := make([]float64, len(vals))
		for b, xs := range vals {
			series[b] = math.NaN()
			if len(xs) > 0 {
				slices.Sort(xs)
				series[b] = quantile(xs, 0.5)
			}
		}
		return series
	}
	return medians(vt), medians(vp)
}

// commonCut gives arms paired in time one analysed span: the arm whose
// automatic warm-up cut ends earlier is cut to where the other's ends (on
// the shared clock), within its own cap (window.max_warmup) plus one
// bucket: arms that run side by side start within a second of each other,
// and an arm cut at the cap must not leave the other uncut because its
// first request came 0.1 s earlier (a canary cut at 300 s once left its
// baseline's first 300 s in the window). Each arm cut
// on its own, a canary cut after 150 s was compared with a baseline cut
// after 300 s: the canary's 150–300 s, the tail of its warm-up, had no
// baseline buckets to pair with, and on the simulator's cold-start runs it
// made the canary's attainment look 0.5 pp worse than the baseline's over
// spans the two arms did not share. What the longer cut removes is still
// checked by the warmup_completed guardrail, which already spans the longer
// of the two cuts.
func commonCut(b, c *armData) error {
	if !(math.Max(b.cutSecs, c.cutSecs) > 0) {
		return nil // neither arm was cut: their first arrivals are their starts
	}
	end := math.Max(b.windowStart, c.windowStart)
	for _, a := range []*armData{b, c} {
		if a.pseudo || a.warmup == nil || !(a.windowStart < end-1e-9) {
			continue
		}
		cut := end - a.t0
		if capS := a.policy.Window.WarmupCap(a.windowEnd - a.t0); cut > capS+a.bucketSecs+1e-9 || cut >= a.windowEnd-a.t0 {
			continue
		}
		from := a.cutSecs
		a.exclude, a.replicaCuts = nil, nil
		if err := a.bucketTime(cut); err != nil {
			return err
		}
		if err := a.replicaWarmups(); err != nil {
			return err
		}
		// the buckets are new: their replica-seconds too (cost, goodput
		// per replica and the arm's replica-seconds read them)
		a.replicaTime()
		a.warmup.Cut = int(math.Round(cut / a.bucketSecs))
		a.warmup.Reason += fmt.Sprintf("; extended from %gs to %gs, where the other arm's warm-up cut ends, so that both arms are compared over the same span", from, cut)
	}
	return nil
}

// replicaWarmups gives each replica that enters service after the arm's
// window starts — joining late, or coming back after a gap (a restart) —
// its own warm-up, by the same rule as the arm's, from its own entry: its
// requests in that warm-up are left out of the analysed window, and the
// report says which. Replicas that start with the run are covered by the
// arm's cut.
func (a *armData) replicaWarmups() error {
	if a.pseudo {
		return nil
	}
	nb := len(a.buckets)
	type rep struct {
		first   int
		arrives []float64
		ttft    [][]float64
	}
	reps := map[string]*rep{}
	var names []string
	for i := range a.ds.Requests {
		r := &a.ds.Requests[i]
		bi := int(a.bidx[i])
		if r.Replica == "" || bi < 0 {
			continue
		}
		x, ok := reps[r.Replica]
		if !ok {
			x = &rep{first: bi, arrives: make([]float64, nb), ttft: make([][]float64, nb)}
			reps[r.Replica] = x
			names = append(names, r.Replica)
		}
		x.first = min(x.first, bi)
		if r.Status.Admitted() {
			// a request it rejected it never served, as the aggregate's
			// tracks count what a replica finished
			x.arrives[bi]++
		}
		if r.Status == sources.StatusOK && sources.Known(r.TTFT) {
			x.ttft[bi] = append(x.ttft[bi], r.TTFT)
		}
	}
	if len(names) < 2 {
		return nil
	}
	slices.Sort(names)
	acts := make([]normalize.ReplicaActivity, len(names))
	first := make([]int, len(names))
	for k, n := range names {
		acts[k] = normalize.ReplicaActivity{Name: n, Requests: reps[n].arrives}
		first[k] = reps[n].first
	}
	entries := replicaEntries(acts, first, a.firstKept, a.bucketSecs)
	median := func(k int) []float64 {
		med := make([]float64, nb)
		for b := range med {
			xs := slices.Clone(reps[names[k]].ttft[b])
			slices.Sort(xs)
			med[b] = quantile(xs, 0.5)
		}
		return med
	}
	cutUntil := map[string][][2]int{}
	for _, w := range replicaStarts(acts, entries, median, a.bucketSecs) {
		cutUntil[w.name] = append(cutUntil[w.name], [2]int{w.first, w.until})
		a.replicaCuts = append(a.replicaCuts, w.detail)
	}
	if len(cutUntil) == 0 {
		return nil
	}
	a.exclude = make([]bool, len(a.ds.Requests))
	for i := range a.ds.Requests {
		bi := int(a.bidx[i])
		for _, iv := range cutUntil[a.ds.Requests[i].Replica] {
			if bi >= iv[0] && bi < iv[1] {
				a.exclude[i] = true
			}
		}
	}
	return a.bucketTime(a.cutSecs)
}
