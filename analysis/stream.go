package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/aggcell"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// Aggregator builds one arm's sources.Aggregate from per-request records
// while they are read, keeping no request: memory grows with the number of
// (time slice, stratum) cells and latency bins, not with the number of
// requests, and the slices are at most sources.MaxStreamSlices (360). Use
// one Aggregator per arm (or one per file, combined with Merge); it is not
// safe for concurrent use.
//
// # Grid
//
// Requests are bucketed by arrival time on one absolute grid of the
// policy's window.bucket width w (default 10 s): a request arriving at unix
// time t belongs to the slice starting at floor(t/w)·w and ending w
// seconds later, whatever arm or file it comes from, so the two arms'
// slices pair by Start. Every slice from the arm's first to its last is
// present (a slice without requests holds one empty bucket with Class "").
// An arm whose arrivals span more than sources.MaxStreamSlices slices is
// counted on slices of 2w, 4w, … (floor(t/2w)·2w: still one absolute
// grid), widened while it is read, so that memory follows at most that
// many slices however long the run (exactly: the aggregate is the one
// counted on the wider grid from the start); WidenTo brings the other arm
// (and Merge another file's aggregate) to the same width, and the judge
// says so.
// Records must carry unix arrival times: Aggregate refuses records without
// one, and an arm whose arrivals span more slices than its records can fill
// (a stray ts 0), with the request path's messages.
//
// # Strata
//
// Each slice holds one AggBucket per stratum, ordered by Class. The
// stratum key (AggBucket.Class) is the request path's mix stratum (see
// planMix) without prefix-cache bands, built from the request's own class
// label L (sources.Request.Class), its token-length band B
// (normalize.Band, e.g. "prompt <1k": prompt length only) and the name C of the
// policy class that sets its SLO (the first policy class whose `when`
// holds, else "default"):
//
//	policy declares classes, label given:  L + " × " + C   e.g. "chat × interactive"
//	policy declares classes, no label:     B + " × " + C   e.g. "prompt <1k × default"
//	no policy classes, label given:        L               (judged with the policy SLO)
//	no policy classes, no label:           B
//
// The separator is " × " (space, U+00D7, space); with policy classes the
// policy class is the text after the last separator. StratumClass reads it
// back.
//
// # What is exact and what is bounded
//
// Exact (Aggregate.Exact is true): the counts of completed, failed
// (error, timeout or canceled by the server: sources.CountsFailed), canceled and rejected requests; Good, each completed
// request checked at scan time against every criterion of its class's SLO
// (ttft, tpot, e2e, max_itl, quality, slo.min_output_tokens) by the
// request path's own rule (isGood), so joint attainment is counted, not
// bounded; Retried (attempt > 1, of all offered); ShortOutputs
// (completions with a known output count below the class's
// slo.min_output_tokens); OutputTokens (summed over completions, as the
// request path's throughput); GoodTokens (summed over good requests, token
// goodput's numerator; Aggregate.GoodTokensCounted); PromptTokens (summed over admitted requests
// with a known prompt length); PrefixHits and PrefixQueries (cached and
// prompt tokens of requests that report both; NaN in every bucket when no
// record of the arm reports cached tokens); Replicas (replicas serving in
// the slice, a replica serving from the slice of its first request to that
// of its last, extended to the arm's edges when within one slice of them;
// 1 when no record names a replica). Aggregate.Replicas holds one track per
// named replica (Name {replica="…"}, quoted; Series empty, since a log's
// replica names are not series two arms' selectors could share): the
// requests it finished (completed, failed or canceled) per slice by
// arrival, NaN outside its serving span.
//
// Bounded by bin width: TTFT, TPOT and E2E of completed requests are
// counted on log-linear bins (sources/loglin, Prometheus schema 8) and
// stored in cumulative form with both edges of every non-empty bin, so a
// count at a bin edge is exact and a quantile is known to within one bin,
// a factor 2^(1/256) ≈ 1.0027 of its value. Their sums (TTFTSum, TPOTSum,
// E2ESum, for the arm's means) are exact to the nanosecond
// (Aggregate.LatencySums).
//
// Prefix-cache bands: under a policy whose normalize.cache is not none,
// each stratum's counts and token sums are also split by the request's
// prefix-cache band (AggBucket.Cache, normalize.CacheBand), so that the
// judge can stratify count gates by class and band as the request path
// does; the latency histograms stay per stratum (one bucket with Cache ""
// per stratum and slice holds them), which keeps memory where it was: a
// histogram per band measured 664 MiB at 10M requests per arm against
// 404 MiB this way.
//
// Not available from the aggregate: anything needing the requests
// themselves in order (the Mann-Whitney and Hodges-Lehmann diagnostics
// come from the pooled bins, see aggdiag.go), and latency quantiles
// standardized by cache band (they are standardized by class).
//
// # Replica warm-ups: a second look
//
// A replica that joins late, or serves again after a gap (a restart), may
// need its own warm-up cut. Each track keeps the replica's per-slice TTFT
// median (ReplicaTrack.TTFTMedian, on bins 2^(4/256) wide) from which
// ReplicaWarmupCuts finds the cut by the request path's rule; leaving the
// cut requests out needs a second look at the records, which for files
// means reading them again into an Aggregator told what to leave out
// (Exclude). An input that cannot be read twice (a pipe) keeps them.
type Aggregator struct {
	p             *policies.Policy
	cls           *classifier
	step          float64 // slice width, seconds: base·2^k (see widen)
	base          float64 // the policy's window.bucket, seconds
	policyClasses bool

	// defaultClass is the class of unlabelled requests under a policy
	// without classes (−1 until first needed)
	defaultClass int32
	strata       []string // stratum id → key
	cacheOf      []string // stratum id → prefix-cache band ("" when not split)
	// carrier maps a stratum id to the id of the same stratum with cache
	// band "", whose cells hold the latency histograms (AggBucket.Cache)
	carrier []int32
	byKey   map[stratumKey]int32 // label, band, class, cache band → stratum id
	byName  map[nameKey]int32    // key and cache band → stratum id (Merge)
	// splitCache: each stratum is split by prefix-cache band
	// (AggBucket.Cache), for a judge that may stratify by it
	splitCache bool
	// labelBands: a labelled record's stratum is its label and prompt
	// band (normalize.prompt_bands: all), not its label alone
	labelBands bool
	cells      map[cellKey]*aggcell.Cell
	// row caches the cells of the slice last added to, by stratum id
	row      []*aggcell.Cell
	rowSlice int64
	// shape holds, by stratum id, the cell last created for it: a new
	// cell's histograms start at its bins' range (Hist.ReserveLike), so
	// they rarely grow and copy while the slice fills
	shape []*aggcell.Cell
	// unlabeled[class+1][band] caches the stratum id of unlabelled
	// requests (−1: not seen yet)
	unlabeled [][]int32
	reps      sources.ReplicaSpans
	// repPend holds, per replica seen, the requests it finished in the
	// last slice it served in, not yet added to reps (see flushReplicas);
	// repIdx finds a replica's entry past the first few
	repPend []replicaRun
	repIdx  map[string]int32
	// tooManyReplicas is set once the records named more than
	// sources.MaxReplicas replicas: the per-replica state is dropped and
	// the arm counted as naming none
	tooManyReplicas bool
	// repLat holds each replica's completed requests' TTFT and TPOT per
	// slice, for the TTFT median a replica's own warm-up is found from
	// and how far the replicas' speeds differ all run (the tail gates'
	// replica widening): bounded by replicas × slices, never by requests
	repLat loglin.ReplicaLatencies
	// exclude, when set (Exclude), lists per replica the slices
	// [from, until) whose requests are left out of the counts
	exclude map[string][][2]int64
	plan    ReplicaWarmupPlan
	untimed int64
	records int64
	lo, hi  int64 // slice numbers of the first and last arrival
	// earliest and last are the earliest and latest timed arrivals (NaN
	// before one), duration the arm's declared duration (0: none, see
	// DeclareDuration): an arm whose records all carry one time
	// (earliest = last) is refused (oneInstantError); the last slice ends
	// at the later of last and earliest + duration, as the request path's
	// last bucket does (sources.EndLastSliceAt)
	earliest, last, duration float64
	// unverified counts completed requests lacking a field an SLO
	// criterion needs (counted not good)
	unverified map[string]int64
	cacheKnown bool
	// attemptKnown is set once a record gives its attempt
	// (sources.Aggregate.AttemptKnown)
	attemptKnown bool
	// qualityChecked and qualityFailed count completed requests giving
	// quality_ok and those failing it (sources.Aggregate.QualityChecked)
	qualityChecked, qualityFailed int64
	// users tallies the count gates per group of users (users.go)
	users sources.UserTally
	// aggregated is set once Aggregate has handed the bins over
	aggregated bool
	// first record without a usable arrival time, for the message
	badTime float64
}

// replicaRun is a replica's requests finished in one slice, counted
// before they are added to the arm's ReplicaSpans (one map update per
// replica and slice instead of one per request).
type replicaRun struct {
	name           string
	slice          int64
	fin, off, good float64
	// started counts the slice's requests of known end-to-end latency;
	// endNear[d] those of them that end d slices later (further ends go
	// to the spans at once)
	started float64
	endNear [8]float64
	ttft    *loglin.SliceBins // repLat.TTFT's entry for (name, slice), once needed
	tpot    *loglin.SliceBins // repLat.TPOT's entry, alike
	// lastTTFT and lastTPOT are the entries of the replica's slice before,
	// whose shape a new entry takes (SliceBins.ReserveLike)
	lastTTFT, lastTPOT *loglin.SliceBins
}

type stratumKey struct {
	label string
	band  uint8 // prompt band (normalize.BandIndex); 255 for a label without its band
	class int32
	cache uint8 // cacheIndex
}

// nameKey is a stratum's key and prefix-cache band.
type nameKey struct{ name, cache string }

// cacheBandCount is the number of cacheIndex values.
const cacheBandCount = 5

// cacheBandName names a cacheIndex value: "" for 0 (not split), else
// normalize.CacheBandAt.
func cacheBandName(i uint8) string { return normalize.CacheBandAt(int(i)) }

// cacheIndex is the index (see cacheBandName) of r's prefix-cache band
// (normalize.CacheBand), 0 when the aggregator does not split by it.
func (a *Aggregator) cacheIndex(r *sources.Request) uint8 {
	switch {
	case !a.splitCache:
		return 0
	case r.CachedTokens < 0 || r.PromptTokens <= 0:
		return 4
	case r.CachedTokens == 0:
		return 1
	case float64(r.CachedTokens)/float64(r.PromptTokens) < normalize.CacheHighEdge:
		return 2
	}
	return 3
}

type cellKey struct {
	slice   int64
	stratum int32
}

// NewAggregator returns an empty aggregator for one arm judged under p
// (validated, so window.bucket is set).
func NewAggregator(p *policies.Policy) *Aggregator {
	step := p.Window.Bucket.Seconds()
	if !(step > 0) {
		step = 10
	}
	return &Aggregator{p: p, cls: newClassifier(p), step: step, base: step, policyClasses: len(p.Classes) > 0, defaultClass: -1,
		splitCache: p.Normalize.Cache != "" && p.Normalize.Cache != "none", labelBands: p.Normalize.LabelBands(),
		byKey: map[stratumKey]int32{}, byName: map[nameKey]int32{}, cells: map[cellKey]*aggcell.Cell{},
		reps: sources.ReplicaSpans{}, repIdx: map[string]int32{}, repLat: loglin.NewReplicaLatencies(), unverified: map[string]int64{}, lo: math.MaxInt64, hi: math.MinInt64, badTime: math.NaN(), earliest: math.NaN(), last: math.NaN(), rowSlice: math.MinInt64}
}

// stratumSep separates a stratum key's label or band from its policy
// class.
const stratumSep = " × "

// StratumClass returns the name of the policy class that sets the SLO of
// an Aggregator stratum key under p: the text after the last " × " when p
// declares classes, else the key itself when it is a label the classifier
// would take as a class, else "default" (see Aggregator).
func StratumClass(p *policies.Policy, key string) string {
	if len(p.Classes) > 0 {
		if c, ok := afterLastSep(key); ok {
			return c
		}
		return "default"
	}
	if isBandKey(key) {
		return "default"
	}
	return stratumLabel(p, key)
}

// stratumLabel is a stratum's class label from its label-and-band part
// (head): under normalize.prompt_bands: all without the prompt band
// (normalize.SplitLabelBand), else head as it is.
func stratumLabel(p *policies.Policy, head string) string {
	if !p.Normalize.LabelBands() {
		return head
	}
	label, _ := normalize.SplitLabelBand(head)
	return label
}

// recordLabel is a labelled record's stratum name before its policy
// class: its label, with its prompt band when bands (normalize.LabelBand;
// normalize.prompt_bands: all). The request path's mix plan and the
// Aggregator name strata by it.
func recordLabel(bands bool, r *sources.Request) string {
	if bands {
		return normalize.LabelBand(r.Class, r.PromptTokens)
	}
	return r.Class
}

// isBandKey reports whether a stratum key's label-or-band part (see
// stratumHead) is a token-length band, or empty, rather than a class label.
func isBandKey(s string) bool {
	return s == "" || slices.Contains(normalize.Bands(), s) || isUnknownBand(s)
}

// stratumHead is an Aggregator stratum key's label-or-band part: the key
// itself when p declares no classes, else the text before its last
// stratumSep ("" when it has none).
func stratumHead(p *policies.Policy, key string) string {
	if len(p.Classes) == 0 {
		return key
	}
	if i := strings.LastIndex(key, stratumSep); i >= 0 {
		return key[:i]
	}
	return ""
}

// afterLastSep returns the text of a stratum key after its last
// stratumSep (the policy class, when the policy declares classes) and
// whether the key has one.
func afterLastSep(key string) (string, bool) {
	i := strings.LastIndex(key, stratumSep)
	if i < 0 {
		return "", false
	}
	return key[i+len(stratumSep):], true
}

func isUnknownBand(key string) bool { return key == normalize.Band(-1) }

// stratum returns r's stratum id, interning its key on first sight.
func (a *Aggregator) stratum(r *sources.Request, ci int32) int32 {
	if r.Class == "" {
		c := int(ci) + 1
		if !a.policyClasses {
			c = 0
		}
		for len(a.unlabeled) <= c {
			a.unlabeled = append(a.unlabeled, nil)
		}
		row := a.unlabeled[c]
		if row == nil {
			row = make([]int32, (len(normalize.PromptEdges())+2)*cacheBandCount)
			for k := range row {
				row[k] = -1
			}
			a.unlabeled[c] = row
		}
		b := normalize.BandIndex(r.PromptTokens)*cacheBandCount + int(a.cacheIndex(r))
		if id := row[b]; id >= 0 {
			return id
		}
		id := a.stratumSlow(r, ci)
		row[b] = id
		return id
	}
	return a.stratumSlow(r, ci)
}

func (a *Aggregator) stratumSlow(r *sources.Request, ci int32) int32 {
	k := stratumKey{label: r.Class, band: 255, class: ci, cache: a.cacheIndex(r)}
	if r.Class == "" || a.labelBands {
		k.band = uint8(normalize.BandIndex(r.PromptTokens))
	}
	if !a.policyClasses {
		// without policy classes the class follows from the label
		k.class = -1
	}
	if id, ok := a.byKey[k]; ok {
		return id
	}
	var name string
	switch {
	case r.Class != "" && a.policyClasses:
		name = recordLabel(a.labelBands, r) + stratumSep + a.cls.names[ci]
	case r.Class != "":
		name = recordLabel(a.labelBands, r)
	case a.policyClasses:
		name = normalize.Band(r.PromptTokens) + stratumSep + a.cls.names[ci]
	default:
		name = normalize.Band(r.PromptTokens)
	}
	id := a.intern(nameKey{name, cacheBandName(k.cache)})
	a.byKey[k] = id
	return id
}

func (a *Aggregator) intern(k nameKey) int32 {
	if id, ok := a.byName[k]; ok {
		return id
	}
	id := int32(len(a.strata))
	a.strata = append(a.strata, k.name)
	a.cacheOf = append(a.cacheOf, k.cache)
	a.carrier = append(a.carrier, id)
	a.byName[k] = id
	if k.cache != "" {
		a.carrier[id] = a.intern(nameKey{k.name, ""})
	}
	return id
}

// cell returns the cell of (slice, sid), creating it on first sight; the
// slice last added to is looked up without the map.
func (a *Aggregator) cell(slice int64, sid int32) *aggcell.Cell {
	var c *aggcell.Cell
	if slice == a.rowSlice && int(sid) < len(a.row) {
		c = a.row[sid]
	}
	if c != nil {
		return c
	}
	ck := cellKey{slice: slice, stratum: sid}
	c = a.cells[ck]
	if c == nil {
		c = &aggcell.Cell{}
		a.cells[ck] = c
		for len(a.shape) <= int(sid) {
			a.shape = append(a.shape, nil)
		}
		if p := a.shape[sid]; p != nil {
			c.TTFT.ReserveLike(&p.TTFT)
			c.TPOT.ReserveLike(&p.TPOT)
			c.E2E.ReserveLike(&p.E2E)
		}
		a.shape[sid] = c
	}
	if slice != a.rowSlice {
		clear(a.row)
		a.rowSlice = slice
	}
	for len(a.row) <= int(sid) {
		a.row = append(a.row, nil)
	}
	a.row[sid] = c
	return c
}

// DeclareDuration gives the arm's run duration in seconds as its input
// states it (sources.Dataset.Duration; 0 or less: none): the last slice
// then ends no earlier than the earliest arrival plus it, as the request
// path's last bucket does.
func (a *Aggregator) DeclareDuration(secs float64) {
	if secs > 0 {
		a.duration = secs
	}
}

// Add counts one request. r is not retained.
func (a *Aggregator) Add(r *sources.Request) {
	a.records++
	if !sources.Known(r.Time) || math.IsInf(r.Time, 0) {
		a.untimed++
		return
	}
	fs := math.Floor(r.Time / a.step)
	if !(fs > -(1<<62) && fs < 1<<62) {
		a.untimed++
		a.badTime = r.Time
		return
	}
	if !(r.Time <= a.last) {
		a.last = r.Time
	}
	if !(r.Time >= a.earliest) {
		a.earliest = r.Time
	}
	slice := int64(fs)
	if slice < a.lo || slice > a.hi {
		a.lo, a.hi = min(a.lo, slice), max(a.hi, slice)
		for a.hi-a.lo >= sources.MaxStreamSlices {
			a.widen()
			slice >>= 1
		}
	}
	end := flightEnd(r, slice, a.step)
	if a.exclude != nil && r.Replica != "" && a.excluded(r.Replica, slice) {
		// a replica's own warm-up: it served, but its requests are not
		// judged
		a.addReplica(r.Replica, slice, finished(r), 0, 0, latencyBins{}, end)
		return
	}
	var ci int32
	undecided := false
	if r.Class == "" && !a.policyClasses {
		// no policy classes, no label: always the default class
		if a.defaultClass < 0 {
			a.defaultClass = a.cls.classOf(r)
		}
		ci = a.defaultClass
	} else {
		ci, undecided = a.cls.classify(r)
	}
	slo := &a.cls.slos[ci]
	sid := a.stratum(r, ci)
	c := a.cell(slice, sid)
	// the latency histograms: per stratum, not per cache band
	h := c
	if a.splitCache {
		h = a.cell(slice, a.carrier[sid])
	}
	var bins latencyBins
	good := 0.0
	if r.Attempt > 1 {
		c.Retried++
	}
	a.attemptKnown = a.attemptKnown || r.Attempt > 0
	switch {
	case r.Status == sources.StatusOK:
		c.Completed++
		// a bin is found once, for the cell and the replica's median
		bins.ttft, bins.ttftOK = loglin.Index(r.TTFT)
		if bins.ttftOK {
			if !h.TTFT.TryInc(bins.ttft) {
				h.TTFT.AddBin(bins.ttft, 1)
			}
			h.TTFTNs += sources.LatencyNanos(r.TTFT)
		}
		bins.tpot, bins.tpotOK = loglin.Index(r.TPOT)
		if bins.tpotOK {
			if !h.TPOT.TryInc(bins.tpot) {
				h.TPOT.AddBin(bins.tpot, 1)
			}
			h.TPOTNs += sources.LatencyNanos(r.TPOT)
		}
		if e2e, ok := loglin.Index(r.E2E); ok {
			if !h.E2E.TryInc(e2e) {
				h.E2E.AddBin(e2e, 1)
			}
			h.E2ENs += sources.LatencyNanos(r.E2E)
		}
		if r.OutputTokens > 0 {
			c.Output += float64(r.OutputTokens)
			c.OutMax = max(c.OutMax, float64(r.OutputTokens))
		} else if r.OutputTokens < 0 {
			c.OutUnknown++
		}
		if r.OutputTokens >= 0 && r.OutputTokens < slo.OutputFloor() {
			c.Short++
		}
		checked, failed := qualityTally(r.Quality)
		a.qualityChecked, a.qualityFailed = a.qualityChecked+checked, a.qualityFailed+failed
		if undecided {
			a.unverified[sources.ClassUnverified]++
		}
		if isGood(*slo, r, a.unverified) {
			good = 1
			c.Good++
			if r.OutputTokens > 0 {
				c.GoodTokens += float64(r.OutputTokens)
			}
		}
	case r.Failed():
		c.Failed++
	case r.Status == sources.StatusRejected:
		c.Rejected++
	case r.Canceled():
		c.Canceled++
	}
	a.users.Add(r, good == 1)
	if r.Status.Admitted() && r.PromptTokens >= 0 {
		c.Prompt += float64(r.PromptTokens)
	} else if r.Status.Admitted() {
		c.PromptUnknown++
	}
	if r.CachedTokens >= 0 && r.PromptTokens > 0 {
		a.cacheKnown = true
		c.Hits += float64(r.CachedTokens)
		c.Queries += float64(r.PromptTokens)
	}
	if r.Replica != "" {
		a.addReplica(r.Replica, slice, finished(r), 1, good, bins, end)
	}
}

// noFlight is flightEnd's answer for a request not counted in flight.
const noFlight = math.MinInt64

// flightEnd is the slice of a grid of step seconds in which request r,
// arrived in slice, ended (arrival + E2E), when its replica admitted it
// and its end-to-end latency is known; noFlight otherwise. Both judging
// paths count requests in flight by it.
func flightEnd(r *sources.Request, slice int64, step float64) int64 {
	if r.Replica == "" || !r.Status.Admitted() || !sources.Known(r.E2E) || !(r.E2E >= 0) || math.IsInf(r.E2E, 0) {
		return noFlight
	}
	fe := math.Floor((r.Time + r.E2E) / step)
	if !(fe < 1<<62) {
		return noFlight
	}
	return max(int64(fe), slice)
}

// finished is 1 for a request its replica admitted (and so finished), 0
// for one it rejected.
func finished(r *sources.Request) float64 {
	if r.Status.Admitted() {
		return 1
	}
	return 0
}

// excluded reports whether replica name's requests in slice are left out
// (Exclude).
func (a *Aggregator) excluded(name string, slice int64) bool {
	for _, iv := range a.exclude[name] {
		if slice >= iv[0] && slice < iv[1] {
			return true
		}
	}
	return false
}

// Exclude leaves out of the counts every request replica r.Replica
// received in a slice of one of plan's cuts, as found by
// ReplicaWarmupCuts on an earlier aggregate of the same records: the
// replica still counts as serving there. Call it before the first Add;
// the aggregate then lists the cuts' details in ReplicaWarmups and keeps
// the arm's warm-up decision (WarmupKept). A plan without cuts changes
// nothing.
func (a *Aggregator) Exclude(plan ReplicaWarmupPlan) {
	if len(plan.Cuts) == 0 {
		return
	}
	// the cuts' slice numbers are on the grid of the aggregate they were
	// found on: count on it from the start
	a.WidenTo(plan.Step)
	a.exclude, a.plan = map[string][][2]int64{}, plan
	for _, c := range plan.Cuts {
		a.exclude[c.Replica] = append(a.exclude[c.Replica], [2]int64{c.FromSlice, c.UntilSlice})
	}
}

// latencyBins are a completed request's TTFT and TPOT log-linear bins
// (loglin.Index), each where known (ok).
type latencyBins struct {
	ttft, tpot     int32
	ttftOK, tpotOK bool
}

// addReplica counts fin requests finished by replica name in slice, and
// one completed request's TTFT and TPOT in their bins where known;
// judged and good count the request among those judged (0 in its
// replica's own warm-up) and those that met their SLO.
func (a *Aggregator) addReplica(name string, slice int64, fin, judged, good float64, bins latencyBins, end int64) {
	if a.tooManyReplicas {
		return
	}
	var run *replicaRun
	// a log names a few replicas: look among them before the map
	for k := range a.repPend[:min(len(a.repPend), 16)] {
		if a.repPend[k].name == name {
			run = &a.repPend[k]
			break
		}
	}
	if run == nil {
		if k, ok := a.repIdx[name]; ok {
			run = &a.repPend[k]
		} else if len(a.repIdx) == sources.MaxReplicas {
			a.dropReplicas()
			return
		} else {
			a.repIdx[name] = int32(len(a.repPend))
			a.repPend = append(a.repPend, replicaRun{name: name, slice: slice})
			run = &a.repPend[len(a.repPend)-1]
		}
	}
	if run.slice != slice {
		a.flushRun(run)
		run.lastTTFT, run.lastTPOT = cmp.Or(run.ttft, run.lastTTFT), cmp.Or(run.tpot, run.lastTPOT)
		run.slice, run.ttft, run.tpot = slice, nil, nil
	}
	run.fin, run.off, run.good = run.fin+fin, run.off+judged, run.good+good
	if end != noFlight {
		run.started++
		if d := end - slice; d < int64(len(run.endNear)) {
			run.endNear[d]++
		} else {
			a.reps.AddFlights(name, slice, end, 0, 1)
		}
	}
	if bins.ttftOK {
		if run.ttft == nil {
			run.ttft = a.repLat.TTFT.Hist(name, slice)
			run.ttft.ReserveLike(run.lastTTFT)
		}
		if c := loglin.Coarse(bins.ttft); !run.ttft.TryInc(c) {
			run.ttft.AddBin(c, 1)
		}
	}
	if bins.tpotOK {
		if run.tpot == nil {
			run.tpot = a.repLat.TPOT.Hist(name, slice)
			run.tpot.ReserveLike(run.lastTPOT)
		}
		if c := loglin.Coarse(bins.tpot); !run.tpot.TryInc(c) {
			run.tpot.AddBin(c, 1)
		}
	}
}

// dropReplicas forgets every replica once the records named more than
// sources.MaxReplicas: the arm is then counted as naming none
// (Aggregate.ReplicasUnnamed), with the warning sources.TooManyReplicas,
// as the request path does (sources.WithoutTooManyReplicas). The requests
// already counted stay counted; only the per-replica state goes.
func (a *Aggregator) dropReplicas() {
	a.tooManyReplicas = true
	a.reps, a.repPend, a.repIdx, a.repLat = sources.ReplicaSpans{}, nil, map[string]int32{}, loglin.NewReplicaLatencies()
}

// flushReplicas adds the replicas' pending counts to reps.
func (a *Aggregator) flushReplicas() {
	for k := range a.repPend {
		a.flushRun(&a.repPend[k])
	}
}

// flushRun adds one replica's pending counts to reps and zeroes them.
func (a *Aggregator) flushRun(run *replicaRun) {
	a.reps.Add(run.name, run.slice, run.fin, run.off, run.good)
	if run.started != 0 {
		a.reps.AddFlights(run.name, run.slice, run.slice, run.started, 0)
	}
	for d, n := range run.endNear {
		if n != 0 {
			a.reps.AddFlights(run.name, run.slice, run.slice+int64(d), 0, n)
		}
	}
	run.fin, run.off, run.good, run.started, run.endNear = 0, 0, 0, 0, [8]float64{}
}

// Merge adds o's counts into a (both built under the same policy), so
// that files read in parallel can be aggregated apart and combined.
func (a *Aggregator) Merge(o *Aggregator) {
	a.records += o.records
	a.untimed += o.untimed
	if math.IsNaN(a.badTime) {
		a.badTime = o.badTime
	}
	if !(o.last <= a.last) && !math.IsNaN(o.last) {
		a.last = o.last
	}
	if !(o.earliest >= a.earliest) && !math.IsNaN(o.earliest) {
		a.earliest = o.earliest
	}
	a.duration = max(a.duration, o.duration)
	// one grid: the finer of the two widened to the other's width, then
	// both as wide as their joint span needs
	a.WidenTo(o.step)
	o.WidenTo(a.step)
	a.lo, a.hi = min(a.lo, o.lo), max(a.hi, o.hi)
	a.cacheKnown = a.cacheKnown || o.cacheKnown
	a.attemptKnown = a.attemptKnown || o.attemptKnown
	a.qualityChecked += o.qualityChecked
	a.qualityFailed += o.qualityFailed
	a.users.Merge(&o.users)
	for k, v := range o.unverified {
		a.unverified[k] += v
	}
	for k, oc := range o.cells {
		k.stratum = a.intern(nameKey{o.strata[k.stratum], o.cacheOf[k.stratum]})
		c := a.cells[k]
		if c == nil {
			c = &aggcell.Cell{}
			a.cells[k] = c
		}
		c.Add(oc)
	}
	a.row, a.rowSlice = a.row[:0], math.MinInt64
	a.flushReplicas()
	o.flushReplicas()
	a.reps.Merge(o.reps)
	a.repLat.Merge(o.repLat)
	if a.tooManyReplicas || o.tooManyReplicas || len(a.reps) > sources.MaxReplicas {
		a.dropReplicas()
	}
	for a.lo <= a.hi && a.hi-a.lo >= sources.MaxStreamSlices {
		a.widen()
	}
}

// widen doubles the slice width: slices 2k and 2k+1 of the grid become
// slice k of the one twice as wide (floor(s/2), so the grid stays
// absolute and two arms widened alike still pair), their cells, replica
// spans and replica latency bins added up.
func (a *Aggregator) widen() {
	a.flushReplicas()
	a.cells = aggcell.Widen(a.cells, func(k cellKey) cellKey { k.slice >>= 1; return k })
	a.row, a.rowSlice = a.row[:0], math.MinInt64
	a.reps.Widen()
	a.repLat = a.repLat.Widened()
	for k := range a.repPend {
		a.repPend[k].slice >>= 1
		a.repPend[k].ttft, a.repPend[k].tpot = nil, nil
		a.repPend[k].lastTTFT, a.repPend[k].lastTPOT = nil, nil
	}
	if a.lo <= a.hi {
		a.lo, a.hi = a.lo>>1, a.hi>>1
	}
	a.step *= 2
}

// Step is the width of the aggregator's slices, seconds: the policy's
// window.bucket, or a power-of-two multiple of it once the arrivals
// spanned more than sources.MaxStreamSlices slices (see widen).
func (a *Aggregator) Step() float64 { return a.step }

// WidenTo widens the slices (see widen) until they are at least step
// seconds wide; a step that is not the policy's bucket times a power of
// two is rounded up to the next that is. Two arms' aggregators are
// widened to the wider of their steps before Aggregate, so that their
// slices pair.
func (a *Aggregator) WidenTo(step float64) {
	for a.step < step {
		a.widen()
	}
}

// Records is the number of requests added (Merge included).
func (a *Aggregator) Records() int64 { return a.records }

// Aggregate returns the arm's aggregate (see Aggregator). arm names the arm
// in errors. The latency bins are handed over to the result, cell by cell
// as it is built, so that they are not held twice: Aggregate may be called
// once (a second call is an error), and Merge must not be called after it. It refuses an arm without records, records without a unix
// arrival time, and arrivals spanning more slices than the request path
// accepts (a stray record far from the rest), with DataErrors.
func (a *Aggregator) Aggregate(arm sources.Arm) (*sources.Aggregate, error) {
	if a.aggregated {
		return nil, fmt.Errorf("the %s aggregate was taken already (Aggregate hands the bins over once)", arm)
	}
	if a.records == 0 {
		return nil, &DataError{Arm: arm, Msg: "no requests: the input holds no request records"}
	}
	if a.untimed > 0 {
		return nil, &DataError{Arm: arm, Msg: fmt.Sprintf("%d of %d records have no usable arrival time (ts): "+
			"the streaming judge buckets requests by unix arrival time; give records with ts, or judge with --exact (every request in memory)", a.untimed, a.records)}
	}
	apart := a.earliest < a.last
	if !apart && a.records-a.untimed >= oneInstantMin {
		return nil, oneInstantError(arm, a.records, a.earliest)
	}
	// the run ends at its last arrival, or its declared duration's end
	// when later; past the last arrival's slice, the seconds to that end
	// make slices without arrivals, the last of them ending there (a
	// fragment shorter than a slice joins the one before it), as the
	// request path's buckets run
	end := a.last
	if a.duration > 0 {
		end = max(end, a.earliest+a.duration)
		if k := int64(math.Floor(end/a.step)) - 1; k > a.hi {
			a.hi = k
			for a.hi-a.lo >= sources.MaxStreamSlices {
				a.widen()
			}
		}
	}
	n := a.hi - a.lo + 1
	// the span in the policy's buckets, as the request path counts it
	if span := float64(n) * a.step / a.base; !(span <= float64(max(int64(maxBuckets), 4*a.records))) {
		lo, hi := float64(a.lo)*a.step, float64(a.hi+1)*a.step
		return nil, &DataError{Arm: arm, Msg: fmt.Sprintf("arrival times span %.6g s (%.6g … %.6g) for %d requests, %.3g buckets of %gs: "+
			"a record far from the rest (ts 0, a clock a year off, perf_counter beside unix times)? Check the earliest and latest records", hi-lo, lo, hi, a.records, span, a.base)}
	}
	a.aggregated = true
	a.flushReplicas()
	// replicas serving per slice
	serving, tracks := a.reps.Tracks(a.lo, a.hi)
	// each replica's per-slice TTFT and TPOT medians (within 1.1% above
	// the request path's median, quantile(xs, 0.5)); the histograms go
	a.repLat.Fill(tracks, a.lo)
	a.repLat = loglin.ReplicaLatencies{}
	// cells per slice, ordered by stratum key: counted per slice, then
	// laid out in one array
	type keyed struct {
		k cellKey
		c *aggcell.Cell
	}
	at := make([]int, n+1)
	for k := range a.cells {
		at[k.slice-a.lo+1]++
	}
	for i := range n {
		at[i+1] += at[i]
	}
	all := make([]keyed, len(a.cells))
	per := make([][]keyed, n)
	for i := range per {
		per[i] = all[at[i]:at[i]:at[i+1]]
	}
	for k, c := range a.cells {
		i := k.slice - a.lo
		per[i] = append(per[i], keyed{k, c})
	}
	nan := math.NaN()
	var edges loglin.Edges
	out := &sources.Aggregate{Profile: "requests", Exact: true, GoodTokensCounted: true, LatencySums: true, Step: a.step, Replicas: tracks, ReplicasUnnamed: tracks == nil,
		AttemptKnown: a.attemptKnown, QualityChecked: a.qualityChecked, QualityFailed: a.qualityFailed}
	users := a.users
	out.Users = &users
	if a.tooManyReplicas {
		out.Notes = append(out.Notes, sources.TooManyReplicas())
	}
	// a bucket per cell, and one for each slice without any
	nb := len(a.cells)
	for _, keys := range per {
		if len(keys) == 0 {
			nb++
		}
	}
	out.Buckets = make([]sources.AggBucket, nb)
	// written at once (loglin's newDense says why): pages fresh from the
	// system that the collector reads before they are written fault twice
	clear(out.Buckets)
	out.Buckets = out.Buckets[:0]
	a.plan.Mark(out)
	for k := range per {
		keys := per[k]
		slices.SortFunc(keys, func(x, y keyed) int {
			if c := cmp.Compare(a.strata[x.k.stratum], a.strata[y.k.stratum]); c != 0 {
				return c
			}
			return cmp.Compare(a.cacheOf[x.k.stratum], a.cacheOf[y.k.stratum])
		})
		start := float64(a.lo+int64(k)) * a.step
		base := sources.AggBucket{Start: start, End: start + a.step, Replicas: serving[k], PrefixHits: nan, PrefixQueries: nan,
			Running: nan, Waiting: nan, KVUsage: nan, GPUUtil: nan, GPUPowerW: nan, GPUMemBytes: nan, CostPerHour: nan}
		if a.cacheKnown {
			base.PrefixHits, base.PrefixQueries = 0, 0
		}
		if len(keys) == 0 {
			out.Buckets = append(out.Buckets, base)
			continue
		}
		for _, kc := range keys {
			c, ck := kc.c, kc.k
			b := base
			b.Class, b.Cache = a.strata[ck.stratum], a.cacheOf[ck.stratum]
			// the bins handed over: they go while the rest is built
			c.Fill(&b, &edges, a.cacheKnown)
			out.Buckets = append(out.Buckets, b)
		}
	}
	if apart || a.duration > 0 {
		sources.EndLastSliceAt(out.Buckets, end)
	}
	out.FirstArrival = a.earliest
	for _, k := range sortedKeys(a.unverified) {
		out.Notes = append(out.Notes, sources.UnverifiedNote(k, a.unverified[k]))
		if out.Unverified == nil {
			out.Unverified = map[string]int64{}
		}
		out.Unverified[k] = a.unverified[k]
	}
	return out, nil
}
