package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// This file connects the user-visible request to the work behind it: the
// engine's scheduler gauges and the GPUs' utilisation, power and memory,
// per arm over the analysed window (ArmSummary.Internal), the work each good
// request cost (ArmSummary.Efficiency), a per-bucket timeline of both
// stories side by side (Report.Timeline), the efficiency gates
// (energy_per_good_request, gpu_seconds_per_good_request) and a finding when
// the stories diverge: internal work steady or up while goodput falls.

// Internal is an arm's internal work over the analysed window: time-weighted
// means of the gauges its metrics source exports, null when the source has
// no such series.
type Internal struct {
	// Source names where the figures come from, e.g. "prometheus (vllm-v1
	// + DCGM)", "scrapes (vllm-v1 + DCGM)".
	Source         string `json:"source"`
	GPUUtilization Num    `json:"gpu_utilization"`  // mean busy fraction of the arm's GPUs, 0..1
	GPUPowerW      Num    `json:"gpu_power_w"`      // mean power of all the arm's GPUs together, watts
	GPUMemoryBytes Num    `json:"gpu_memory_bytes"` // mean GPU memory used, all GPUs together, bytes
	KVUsage        Num    `json:"kv_usage"`         // mean KV-cache usage, 0..1, averaged over replicas
	QueueWaiting   Num    `json:"queue_waiting"`    // mean requests waiting, summed over replicas
	Running        Num    `json:"running"`          // mean requests in batches, summed over replicas
	Buckets        int    `json:"buckets"`          // analysed time slices the means are over
}

// Efficiency is the work an arm spent per good request over the analysed
// window. GPU-seconds are busy GPU time (utilisation × GPUs × seconds);
// GPU-hours in good_requests_per_gpu_hour are provisioned GPU time (GPUs ×
// hours). GPUs are counted as one per replica (DCGM and engine metrics do
// not say how many GPUs a replica spans); Note says so, and what was left
// out.
type Efficiency struct {
	GPUSecondsPerGoodRequest Num    `json:"gpu_seconds_per_good_request"` // busy GPU-seconds / good requests
	JoulesPerGoodRequest     Num    `json:"joules_per_good_request"`      // GPU energy (J) / good requests
	GoodTokensPerJoule       Num    `json:"good_tokens_per_joule"`        // output tokens of good requests / GPU energy (J); null from metrics alone
	GoodRequestsPerGPUHour   Num    `json:"good_requests_per_gpu_hour"`   // good requests / provisioned GPU-hours
	Note                     string `json:"note"`
}

// TimelineRow is one time slice of the timeline: both arms side by side.
// T is seconds from the start of the arm's first slice (both arms start
// their timeline at their own first slice; simultaneous arms share it).
type TimelineRow struct {
	T        Num          `json:"t"`
	Seconds  Num          `json:"seconds"` // the slice's width
	Baseline *TimelineArm `json:"baseline"`
	Canary   *TimelineArm `json:"canary"`
}

// TimelineArm is one arm in one timeline slice. Rates are per second of the
// slice; fractions 0..1; null when unknown (no metrics for that gauge, no
// offered requests).
type TimelineArm struct {
	OfferedRPS     Num  `json:"offered_rps"`
	GoodputRPS     Num  `json:"goodput_rps"`
	SLOAttainment  Num  `json:"slo_attainment"`
	RetryShare     Num  `json:"retry_share"` // offered requests with attempt > 1 / offered; null from metrics alone
	GPUUtilization Num  `json:"gpu_utilization"`
	KVUsage        Num  `json:"kv_usage"`
	QueueWaiting   Num  `json:"queue_waiting"` // requests waiting, summed over replicas
	Warmup         bool `json:"warmup,omitempty"`
	Diverging      bool `json:"diverging,omitempty"` // part of a divergence finding
}

// TimelineQuantity is one quantity a timeline row carries for each arm,
// as the renderers draw it: its name, whether it is a fraction 0..1 (drawn
// on a fixed 0–100% scale) or a level drawn from 0 to the largest value of
// both arms, its unit, and how to read it from an arm's slice.
type TimelineQuantity struct {
	Name     string
	Fraction bool
	Unit     string
	Get      func(*TimelineArm) Num
}

// TimelineQuantities lists the quantities of a timeline row in the order
// the renderers draw them.
func TimelineQuantities() []TimelineQuantity {
	return []TimelineQuantity{
		{"offered", false, "req/s", func(a *TimelineArm) Num { return a.OfferedRPS }},
		{"goodput", false, "req/s", func(a *TimelineArm) Num { return a.GoodputRPS }},
		{"SLO attainment", true, "", func(a *TimelineArm) Num { return a.SLOAttainment }},
		{"retry share", true, "", func(a *TimelineArm) Num { return a.RetryShare }},
		{"GPU utilization", true, "", func(a *TimelineArm) Num { return a.GPUUtilization }},
		{"KV-cache usage", true, "", func(a *TimelineArm) Num { return a.KVUsage }},
		{"queue waiting", false, "req", func(a *TimelineArm) Num { return a.QueueWaiting }},
	}
}

// Arm returns arm i of the row: 0 the baseline, 1 the canary (nil when
// that arm has no slice here).
func (r *TimelineRow) Arm(i int) *TimelineArm {
	if i == 0 {
		return r.Baseline
	}
	return r.Canary
}

// Finding is a fact the report names beside the verdict; it never gates.
type Finding struct {
	Kind string      `json:"kind"` // "divergence"
	Arm  sources.Arm `json:"arm"`
	// Rows are the timeline rows it covers (indexes into Report.Timeline);
	// From and To bound them in seconds on the timeline.
	Rows   []int    `json:"rows"`
	From   Num      `json:"from_s"`
	To     Num      `json:"to_s"`
	Causes []string `json:"causes"` // overload | retry_amplification | queue_growth
	Detail string   `json:"detail"`
}

// Divergence thresholds (DivergenceOptions' defaults).
const (
	// DefaultAttainmentDrop is how far below the arm's healthy SLO
	// attainment a slice must fall to count as goodput falling: 20 pp.
	DefaultAttainmentDrop = 0.20
	// DefaultWorkSteady is the fraction of the healthy work level (GPU
	// utilisation, else running requests) a slice must keep to count as
	// steady: 0.9.
	DefaultWorkSteady = 0.90
	// DefaultRetryAmplification is the retry amplification (offered / first
	// attempts) named as a cause: 1.2.
	DefaultRetryAmplification = 1.2
	// DefaultOverload is offered load over the healthy level named as
	// overload: ×1.2.
	DefaultOverload = 1.2
	// DefaultQueueGrowth is queue length over the healthy level named as
	// queue growth: ×4, and at least 1 request waiting per replica.
	DefaultQueueGrowth = 4.0
	// minDivergentRows is the shortest run of diverging slices reported,
	// minDivergentRequests the fewest offered requests in it.
	minDivergentRows     = 2
	minDivergentRequests = 30
	// maxTimelineRows bounds the timeline: longer windows are grouped into
	// whole minutes.
	maxTimelineRows = 60
)

// workArm is one arm's per-slice view of requests and internal work.
type workArm struct {
	arm    sources.Arm
	source string // names the metrics source; "" when the arm has none
	slices []workSlice
}

// workSlice is one time slice of one arm.
type workSlice struct {
	start, secs   float64
	offered       float64
	good, goodHi  float64 // good requests (metrics: lower and upper bound)
	retries       float64 // NaN when unknown
	goodTokens    float64 // NaN when unknown
	replicas      float64 // mean replicas present; NaN when unknown
	util, power   float64 // GPU busy fraction (mean), watts (sum)
	mem, kv       float64 // bytes (sum), KV usage fraction (mean)
	waiting, runn float64 // requests (sums)
	cut           bool    // warm-up, not analysed
	leftOut       bool    // left out of both arms (baseline_outage), not analysed
}

func (s *workSlice) gauge(name string) float64 {
	switch name {
	case "gpu_utilization":
		return s.util
	case "gpu_power_w":
		return s.power
	case "gpu_memory_bytes":
		return s.mem
	case "kv_usage":
		return s.kv
	case "queue_waiting":
		return s.waiting
	case "running":
		return s.runn
	}
	return math.NaN()
}

func (w *workArm) analysed() []workSlice {
	out := make([]workSlice, 0, len(w.slices))
	for _, s := range w.slices {
		if !s.cut && !s.leftOut {
			out = append(out, s)
		}
	}
	return out
}

// hasWork reports whether any slice of the arm carries an internal gauge.
func (w *workArm) hasWork() bool {
	for i := range w.slices {
		s := &w.slices[i]
		for _, v := range []float64{s.util, s.power, s.mem, s.kv, s.waiting, s.runn} {
			if !math.IsNaN(v) {
				return true
			}
		}
	}
	return false
}

// internalOf is the arm's internal-work summary.
func internalOf(w *workArm) *Internal {
	in := &Internal{Source: w.source}
	ks := w.analysed()
	in.Buckets = len(ks)
	mean := func(name string) Num {
		var s, t float64
		for i := range ks {
			if v := ks[i].gauge(name); !math.IsNaN(v) {
				s += v * ks[i].secs
				t += ks[i].secs
			}
		}
		if t == 0 {
			return Num(math.NaN())
		}
		return Num(s / t)
	}
	in.GPUUtilization, in.GPUPowerW, in.GPUMemoryBytes = mean("gpu_utilization"), mean("gpu_power_w"), mean("gpu_memory_bytes")
	in.KVUsage, in.QueueWaiting, in.Running = mean("kv_usage"), mean("queue_waiting"), mean("running")
	return in
}

// workNum is the numerator of an efficiency figure in one slice: joules
// (power × seconds) or busy GPU-seconds (utilisation × GPUs × seconds);
// NaN when the slice lacks the gauge.
func workNum(metric string, s *workSlice) float64 {
	switch metric {
	case "energy_per_good_request":
		return s.power * s.secs
	case "gpu_seconds_per_good_request":
		return s.util * s.replicas * s.secs
	}
	return math.NaN()
}

// efficiencyOf is the arm's work per good request over the analysed slices
// that carry the gauge each figure needs.
func efficiencyOf(w *workArm) *Efficiency {
	ks := w.analysed()
	e := &Efficiency{}
	var notes []string
	over := func(metric string) (num, good, tokens float64, n int) {
		for i := range ks {
			v := workNum(metric, &ks[i])
			if math.IsNaN(v) {
				continue
			}
			num += v
			good += ks[i].good
			tokens += ks[i].goodTokens
			n++
		}
		return
	}
	j, gj, tj, nj := over("energy_per_good_request")
	e.JoulesPerGoodRequest, e.GoodTokensPerJoule = Num(math.NaN()), Num(math.NaN())
	if nj > 0 {
		e.JoulesPerGoodRequest = Num(j / gj)
		e.GoodTokensPerJoule = Num(tj / j) // NaN when good tokens are unknown
		if nj < len(ks) {
			notes = append(notes, fmt.Sprintf("GPU power known in %d of %d slices; energy figures are over those", nj, len(ks)))
		}
	} else {
		notes = append(notes, "no GPU power series (DCGM_FI_DEV_POWER_USAGE): energy figures unknown")
	}
	if nj > 0 && math.IsNaN(tj) {
		notes = append(notes, "good tokens per joule needs per-request output tokens")
	}
	u, gu, _, nu := over("gpu_seconds_per_good_request")
	e.GPUSecondsPerGoodRequest = Num(math.NaN())
	if nu > 0 {
		e.GPUSecondsPerGoodRequest = Num(u / gu)
		if nu < len(ks) {
			notes = append(notes, fmt.Sprintf("GPU utilisation known in %d of %d slices; GPU-seconds are over those", nu, len(ks)))
		}
	} else {
		notes = append(notes, "no GPU utilisation series (DCGM_FI_DEV_GPU_UTIL): GPU-seconds unknown")
	}
	var good, gpuSecs float64
	for i := range ks {
		if !math.IsNaN(ks[i].replicas) {
			good += ks[i].good
			gpuSecs += ks[i].replicas * ks[i].secs
		}
	}
	e.GoodRequestsPerGPUHour = Num(math.NaN())
	if gpuSecs > 0 {
		e.GoodRequestsPerGPUHour = Num(good / (gpuSecs / 3600))
	}
	notes = append(notes, "GPUs counted as one per replica")
	e.Note = strings.Join(notes, "; ")
	return e
}

// isEfficiencyMetric reports whether a gate is one of the efficiency gates.
func isEfficiencyMetric(m string) bool {
	return m == "energy_per_good_request" || m == "gpu_seconds_per_good_request"
}

// efficiencyGate compares work per good request (a relative metric, lower
// is better) on bucket totals: Σ work / Σ good per arm with the batch-means
// delta interval of the log ratio (stats.LogRatioOfRatios, as for cost per
// good request), never narrower than two independent Poisson counts of
// good requests. Under normalize.load: matched it is compared at matched
// offered load per replica-second (normalize.CompareLoad): on every slice
// when the arms' loads agree, on the load-matched slices when they differ,
// and not at all (inconclusive) when no match exists. With bounds on good
// requests (histograms) the canary's fewest and the baseline's most good
// requests decide, as for the count gates.
func efficiencyGate(e gateEval, g policies.Gate, info policies.MetricInfo, p *policies.Policy, b, c *workArm, conf float64) gateEval {
	inconclusive := func(why string) gateEval { e.m.Verdict = Inconclusive; e.m.Reason = why; return e }
	what := "GPU power"
	if g.Metric == "gpu_seconds_per_good_request" {
		what = "GPU utilisation"
	}
	kb, kc := b.analysed(), c.analysed()
	known := func(ks []workSlice) []workSlice {
		out := ks[:0:0]
		for i := range ks {
			if v := workNum(g.Metric, &ks[i]); !math.IsNaN(v) {
				out = append(out, ks[i])
			}
		}
		return out
	}
	fb, fc := known(kb), known(kc)
	if len(fb) == 0 || len(fc) == 0 {
		return inconclusive(fmt.Sprintf("no %s series for %s: give a metrics source with DCGM (or engine GPU) gauges; a declared efficiency gate is never passed without them", what, armsMissing(len(fb), len(fc))))
	}
	for _, x := range []struct {
		arm       sources.Arm
		all, have int
	}{{b.arm, len(kb), len(fb)}, {c.arm, len(kc), len(fc)}} {
		if x.have < x.all {
			e.m.Adjusted = append(e.m.Adjusted, fmt.Sprintf("%s: %s known in %d of %d slices; compared over those", x.arm, what, x.have, x.all))
		}
	}
	if p.Normalize.Load == "matched" {
		load := func(ks []workSlice) normalize.Load {
			l := normalize.Load{Offered: make([]float64, len(ks)), ReplicaSecs: make([]float64, len(ks))}
			for i := range ks {
				l.Offered[i] = ks[i].offered
				l.ReplicaSecs[i] = nan0(ks[i].replicas) * ks[i].secs
			}
			return l
		}
		res, err := normalize.CompareLoad(load(fc), load(fb), 0)
		switch {
		case err != nil:
			return inconclusive("matched load could not be checked: " + err.Error())
		case !res.LikeForLike:
			return inconclusive("not compared at matched load: " + res.Reason)
		case res.Matched:
			fb, fc = keepWhere(fb, res.KeepBaseline), keepWhere(fc, res.KeepCanary)
			e.m.Adjusted = append(e.m.Adjusted, "matched offered load: "+res.Reason)
		default:
			e.m.Adjusted = append(e.m.Adjusted, "matched offered load: "+res.Reason)
		}
	}
	ratio := func(ks []workSlice, hi bool) stats.Ratio {
		r := stats.Ratio{Num: make([]float64, len(ks)), Den: make([]float64, len(ks))}
		for i := range ks {
			r.Num[i] = workNum(g.Metric, &ks[i])
			r.Den[i] = ks[i].good
			if hi {
				r.Den[i] = ks[i].goodHi
			}
		}
		return r
	}
	// the canary at its fewest good requests (most work per good
	// request), the baseline at its most
	cWorst, bBest := ratio(fc, false), ratio(fb, true)
	cBest, bWorst := ratio(fc, true), ratio(fb, false)
	est := func(x, y stats.Ratio) stats.Estimate {
		return poissonFloor(stats.LogRatioOfRatios(x, y, conf), sum(y.Den), sum(x.Den), conf)
	}
	pess, opt := est(cWorst, bBest), est(cBest, bWorst)
	e.m.Baseline = Num(sum(bBest.Num) / sum(bBest.Den))
	e.m.Canary = Num(sum(cWorst.Num) / sum(cWorst.Den))
	e.m.NBaseline, e.m.NCanary = int64(math.Round(sum(bBest.Den))), int64(math.Round(sum(cWorst.Den)))
	e.m.Buckets = [2]int{len(fb), len(fc)}
	e.m.Method = pess.Method
	if len(fb) < MinBuckets || len(fc) < MinBuckets {
		return inconclusive(fmt.Sprintf("too little data: %d and %d slices with %s (need ≥ %d per arm)", len(fb), len(fc), what, MinBuckets))
	}
	if math.IsNaN(pess.Point) || math.IsNaN(opt.Point) || math.IsInf(pess.CI.Lo, 0) || math.IsInf(opt.CI.Hi, 0) {
		return inconclusive("the interval could not be computed (no good requests or no variation in an arm)")
	}
	if w := fb[0].secs; w > 0 {
		pess, opt = persistenceWidenedBoth(pess, opt, p.Window, min(len(fb), len(fc)), w, conf, &e.m.Adjusted)
		e.m.Method = pess.Method
	}
	lo, hi := math.Min(pess.CI.Lo, opt.CI.Lo), math.Max(pess.CI.Hi, opt.CI.Hi)
	return decide(e, g, info, stats.Estimate{Point: pess.Point, CI: stats.Interval{Lo: lo, Hi: hi}, SE: math.Max(pess.SE, opt.SE), Method: pess.Method})
}

func keepWhere(ks []workSlice, keep []bool) []workSlice {
	var out []workSlice
	for i := range ks {
		if keep[i] {
			out = append(out, ks[i])
		}
	}
	return out
}

// timelineWidth is the timeline's slice width: the bucket, or whole minutes
// when the window would need more than maxTimelineRows rows.
func timelineWidth(bucket float64, spanSecs float64) float64 {
	if bucket <= 0 || spanSecs/bucket <= maxTimelineRows {
		return bucket
	}
	w := math.Max(60, bucket)
	for spanSecs/w > maxTimelineRows {
		w += 60
	}
	return w
}

// rowAgg accumulates an arm's slices falling into one timeline row.
type rowAgg struct {
	secs, offered, good, retries  float64
	retriesKnown                  bool
	util, kv, waiting             float64
	utilSecs, kvSecs, waitingSecs float64
	cut, any                      bool
}

func (r *rowAgg) add(s *workSlice) {
	r.any = true
	r.secs += s.secs
	r.offered += s.offered
	r.good += s.good
	if !math.IsNaN(s.retries) {
		r.retries += s.retries
		r.retriesKnown = true
	}
	for _, g := range []struct {
		v      float64
		acc, t *float64
	}{{s.util, &r.util, &r.utilSecs}, {s.kv, &r.kv, &r.kvSecs}, {s.waiting, &r.waiting, &r.waitingSecs}} {
		if !math.IsNaN(g.v) {
			*g.acc += g.v * s.secs
			*g.t += s.secs
		}
	}
	r.cut = r.cut || s.cut
}

func (r *rowAgg) arm() *TimelineArm {
	if !r.any {
		return nil
	}
	div := func(a, b float64) Num {
		if b <= 0 {
			return Num(math.NaN())
		}
		return Num(a / b)
	}
	t := &TimelineArm{OfferedRPS: div(r.offered, r.secs), GoodputRPS: div(r.good, r.secs), SLOAttainment: div(r.good, r.offered),
		RetryShare: Num(math.NaN()), GPUUtilization: div(r.util, r.utilSecs), KVUsage: div(r.kv, r.kvSecs),
		QueueWaiting: div(r.waiting, r.waitingSecs), Warmup: r.cut}
	if r.retriesKnown {
		t.RetryShare = div(r.retries, r.offered)
	}
	return t
}

// timeline lays both arms on rows of width timelineWidth, each arm from its
// own first slice.
func timeline(b, c *workArm, bucket float64) []TimelineRow {
	span := func(w *workArm) float64 {
		if len(w.slices) == 0 {
			return 0
		}
		l := w.slices[len(w.slices)-1]
		return l.start + l.secs - w.slices[0].start
	}
	total := math.Max(span(b), span(c))
	width := timelineWidth(bucket, total)
	if width <= 0 || total <= 0 {
		return nil
	}
	n := int(math.Ceil(total/width - 1e-9))
	rows := make([]TimelineRow, n)
	aggs := [2][]rowAgg{make([]rowAgg, n), make([]rowAgg, n)}
	for ai, w := range []*workArm{b, c} {
		if len(w.slices) == 0 {
			continue
		}
		t0 := w.slices[0].start
		for i := range w.slices {
			k := min(int((w.slices[i].start-t0)/width+1e-9), n-1)
			aggs[ai][k].add(&w.slices[i])
		}
	}
	for k := range rows {
		rows[k] = TimelineRow{T: Num(float64(k) * width), Seconds: Num(width), Baseline: aggs[0][k].arm(), Canary: aggs[1][k].arm()}
	}
	return rows
}

// DivergenceOptions sets when a divergence finding is named; zero fields
// take the Default* constants.
type DivergenceOptions struct {
	AttainmentDrop, WorkSteady, RetryAmplification, Overload, QueueGrowth float64
}

func (o DivergenceOptions) withDefaults() DivergenceOptions {
	if o.AttainmentDrop <= 0 {
		o.AttainmentDrop = DefaultAttainmentDrop
	}
	if o.WorkSteady <= 0 {
		o.WorkSteady = DefaultWorkSteady
	}
	if o.RetryAmplification <= 0 {
		o.RetryAmplification = DefaultRetryAmplification
	}
	if o.Overload <= 0 {
		o.Overload = DefaultOverload
	}
	if o.QueueGrowth <= 0 {
		o.QueueGrowth = DefaultQueueGrowth
	}
	return o
}

// divergences finds, per arm, runs of at least minDivergentRows analysed
// timeline rows where SLO attainment fell by AttainmentDrop or more below
// the arm's healthy level while internal work (GPU utilisation, else
// KV-cache usage) stayed at WorkSteady of its healthy level
// or above. The healthy level of attainment is the upper quartile over the
// analysed rows; the healthy levels of work, offered load and queue are the
// medians over the rows within a quarter of the drop of that level. Causes are
// named from the run's means: overload (offered load ≥ Overload × healthy),
// retry_amplification (offered / first attempts ≥ RetryAmplification),
// queue_growth (waiting ≥ QueueGrowth × healthy and ≥ 1 per replica). A run
// whose pooled attainment could be that low by chance (Wilson 95% upper
// bound above healthy − drop/2, or fewer than 30 offered requests) is not
// named. It marks the rows' Diverging
// flags.
func divergences(rows []TimelineRow, b, c *workArm, o DivergenceOptions) []Finding {
	o = o.withDefaults()
	var out []Finding
	for ai, w := range []*workArm{b, c} {
		get := func(r *TimelineRow) *TimelineArm {
			if ai == 0 {
				return r.Baseline
			}
			return r.Canary
		}
		var idx []int
		var att []float64
		for k := range rows {
			if a := get(&rows[k]); a != nil && !a.Warmup && !math.IsNaN(float64(a.SLOAttainment)) {
				idx = append(idx, k)
				att = append(att, float64(a.SLOAttainment))
			}
		}
		if len(idx) < 2*minDivergentRows {
			continue
		}
		sorted := slices.Clone(att)
		slices.Sort(sorted)
		healthyAtt := quantile(sorted, 0.75)
		work := func(a *TimelineArm) (float64, string) {
			if v := float64(a.GPUUtilization); !math.IsNaN(v) {
				return v, "GPU utilization"
			}
			return float64(a.KVUsage), "KV-cache usage"
		}
		var hw, ho, hq []float64
		for _, k := range idx {
			a := get(&rows[k])
			if float64(a.SLOAttainment) >= healthyAtt-o.AttainmentDrop/4 {
				if v, _ := work(a); !math.IsNaN(v) {
					hw = append(hw, v)
				}
				ho = append(ho, float64(a.OfferedRPS))
				if v := float64(a.QueueWaiting); !math.IsNaN(v) {
					hq = append(hq, v)
				}
			}
		}
		if len(hw) == 0 {
			continue // no internal work known: nothing to contrast
		}
		med := func(v []float64) float64 {
			if len(v) == 0 {
				return math.NaN()
			}
			s := slices.Clone(v)
			slices.Sort(s)
			return quantile(s, 0.5)
		}
		healthyWork, healthyOff, healthyQ := med(hw), med(ho), med(hq)
		div := make([]bool, len(rows))
		for _, k := range idx {
			a := get(&rows[k])
			v, _ := work(a)
			div[k] = float64(a.SLOAttainment) <= healthyAtt-o.AttainmentDrop && !math.IsNaN(v) && v >= o.WorkSteady*healthyWork
		}
		replicas := meanReplicas(w)
		for k := 0; k < len(rows); {
			if !div[k] {
				k++
				continue
			}
			e := k
			for e < len(rows) && div[e] {
				e++
			}
			if e-k >= minDivergentRows && clearDrop(rows[k:e], get, healthyAtt-o.AttainmentDrop/2) {
				out = append(out, divergenceFinding(rows, k, e, w.arm, get, work, healthyAtt, healthyWork, healthyOff, healthyQ, replicas, o))
			}
			k = e
		}
	}
	return out
}

// clearDrop reports whether a run's attainment is below limit beyond
// sampling noise: it holds at least minDivergentRequests offered requests
// and the Wilson 95% upper bound of its pooled good / offered lies under
// limit (a few requests per slice at low traffic do not make a finding).
func clearDrop(rows []TimelineRow, get func(*TimelineRow) *TimelineArm, limit float64) bool {
	var good, offered float64
	for i := range rows {
		a := get(&rows[i])
		s := float64(rows[i].Seconds)
		good += float64(a.GoodputRPS) * s
		offered += float64(a.OfferedRPS) * s
	}
	if offered < minDivergentRequests {
		return false
	}
	return stats.Wilson(math.Round(good), math.Round(offered), 0.95).Hi < limit
}

func meanReplicas(w *workArm) float64 {
	var s, t float64
	for _, x := range w.analysed() {
		if !math.IsNaN(x.replicas) {
			s += x.replicas * x.secs
			t += x.secs
		}
	}
	if t == 0 {
		return math.NaN()
	}
	return s / t
}

func divergenceFinding(rows []TimelineRow, k, e int, arm sources.Arm, get func(*TimelineRow) *TimelineArm,
	work func(*TimelineArm) (float64, string), healthyAtt, healthyWork, healthyOff, healthyQ, replicas float64, o DivergenceOptions) Finding {
	f := Finding{Kind: "divergence", Arm: arm, From: rows[k].T, To: Num(float64(rows[e-1].T) + float64(rows[e-1].Seconds)), Causes: []string{}}
	var secs, offered, good, retries, workSum, q, qSecs float64
	retriesKnown := false
	workName := ""
	for r := k; r < e; r++ {
		f.Rows = append(f.Rows, r)
		a := get(&rows[r])
		a.Diverging = true
		s := float64(rows[r].Seconds)
		secs += s
		offered += float64(a.OfferedRPS) * s
		good += float64(a.GoodputRPS) * s
		if v := float64(a.RetryShare); !math.IsNaN(v) {
			retries += v * float64(a.OfferedRPS) * s
			retriesKnown = true
		}
		v, name := work(a)
		workSum += v * s
		workName = name
		if v := float64(a.QueueWaiting); !math.IsNaN(v) {
			q += v * s
			qSecs += s
		}
	}
	att, wk := good/offered, workSum/secs
	off := offered / secs
	var causes []string
	if healthyOff > 0 && off >= o.Overload*healthyOff {
		f.Causes = append(f.Causes, "overload")
		causes = append(causes, fmt.Sprintf("overload: offered %.3g req/s vs %.3g healthy (×%.2f)", off, healthyOff, off/healthyOff))
	}
	if retriesKnown && offered > retries {
		amp := offered / (offered - retries)
		if amp >= o.RetryAmplification {
			f.Causes = append(f.Causes, "retry_amplification")
			causes = append(causes, fmt.Sprintf("retry amplification %.2f× (%.0f%% of offered requests are retries; threshold %.2g×)", amp, 100*retries/offered, o.RetryAmplification))
		}
	}
	if qSecs > 0 {
		qm := q / qSecs
		perRep := 1.0
		if replicas > 0 {
			perRep = replicas
		}
		if qm >= perRep && (math.IsNaN(healthyQ) || qm >= o.QueueGrowth*math.Max(healthyQ, 0.25)) {
			f.Causes = append(f.Causes, "queue_growth")
			causes = append(causes, fmt.Sprintf("queue growth: %.3g requests waiting vs %.3g healthy", qm, healthyQ))
		}
	}
	f.Detail = fmt.Sprintf("%s: %s steady while goodput falls in timeline rows %d–%d (%s–%s s): %s %.0f%% (healthy %.0f%%) while SLO attainment fell to %.1f%% (healthy %.1f%%), goodput %.3g req/s",
		arm, workName, k+1, e, fmtG6(float64(f.From)), fmtG6(float64(f.To)), workName, 100*wk, 100*healthyWork, 100*att, 100*healthyAtt, good/secs)
	if len(causes) > 0 {
		f.Detail += "; " + strings.Join(causes, "; ")
	}
	return f
}

func fmtG6(v float64) string { return fmt.Sprintf("%g", round6(v)) }

// internalView fills the internal-work parts of a report: per-arm internal
// means and efficiency (for arms with a metrics source), the timeline and
// the divergence findings, which are named in the reasons.
func internalView(r *Report, b, c *workArm, bucket float64) {
	if !b.hasWork() && !c.hasWork() {
		return
	}
	for _, x := range []struct {
		w *workArm
		s *ArmSummary
	}{{b, &r.Arms.Baseline}, {c, &r.Arms.Canary}} {
		if x.w.source == "" {
			continue
		}
		x.s.Internal = internalOf(x.w)
		x.s.Efficiency = efficiencyOf(x.w)
	}
	r.Timeline = timeline(b, c, bucket)
	r.Findings = divergences(r.Timeline, b, c, DivergenceOptions{})
	for _, f := range r.Findings {
		r.Reasons = append(r.Reasons, "finding (not a gate): "+f.Detail)
	}
}

// gaugesOf keeps the internal-work gauges of a metrics bucket.
func gaugesOf(bk sources.AggBucket) sources.AggBucket {
	return sources.AggBucket{Running: bk.Running, Waiting: bk.Waiting, KVUsage: bk.KVUsage, GPUUtil: bk.GPUUtil,
		GPUPowerW: bk.GPUPowerW, GPUMemBytes: bk.GPUMemBytes}
}

// aggWork is an aggregated arm's per-slice view. Retries are not read here,
// and good tokens are unknown from engine metrics.
func aggWork(a *aggArm) *workArm {
	w := &workArm{arm: a.arm, source: metricsSource(a.ds.Inputs, a.ds.Agg)}
	for i := range a.slices {
		s := &a.slices[i]
		g := s.gauges
		goodTokens := s.goodTokens
		if a.unknown[goodTokensCount] {
			goodTokens = math.NaN()
		}
		w.slices = append(w.slices, workSlice{start: s.start, secs: s.secs(), offered: s.offered(),
			good: s.goodLo, goodHi: s.goodHi, retries: math.NaN(), goodTokens: goodTokens, replicas: s.replicas,
			util: s.gpuUtil, power: g.GPUPowerW, mem: g.GPUMemBytes, kv: g.KVUsage, waiting: g.Waiting, runn: g.Running, leftOut: s.leftOut})
	}
	return w
}

// metricsSource names a metrics source for the report: the input kind
// (prometheus, openmetrics, prometheus-text) and the engine profile, with
// "+ GPU gauges" when the GPUs' series were found.
func metricsSource(inputs []sources.Input, agg *sources.Aggregate) string {
	kinds := []string{}
	for _, in := range inputs {
		if in.Format != "" && !slices.Contains(kinds, in.Format) {
			kinds = append(kinds, in.Format)
		}
	}
	s := strings.Join(kinds, ", ")
	if s == "" {
		s = "metrics"
	}
	if agg == nil {
		return s
	}
	s += " (" + agg.Profile
	for _, b := range agg.Buckets {
		if !math.IsNaN(b.GPUUtil) || !math.IsNaN(b.GPUPowerW) {
			s += " + GPU gauges"
			break
		}
	}
	return s + ")"
}

// work is a per-request arm's per-slice view: requests from its buckets,
// internal work from the metrics read beside them (Dataset.Metrics),
// averaged over each bucket's overlap with the metrics' slices. Without
// metrics, or without an epoch clock to align them on, the gauges are
// unknown.
func armWork(a *armData) *workArm {
	w := &workArm{arm: a.arm}
	m := a.ds.Metrics
	aligned := m != nil && len(m.Buckets) > 0 && a.clock == sources.ClockEpoch && !a.pseudo
	if aligned {
		w.source = metricsSource(metricInputs(a.ds), m) + " beside " + requestKinds(a.ds)
	}
	var ms []sources.AggBucket
	if aligned {
		ms = sliceGauges(m)
	}
	for i := range a.buckets {
		b := &a.buckets[i]
		s := workSlice{start: b.start, secs: b.secs, offered: b.offered, good: b.good, goodHi: b.good, retries: b.retries,
			goodTokens: b.goodTokens, replicas: b.replicaSecs / b.secs, cut: b.cut, leftOut: b.leftOut}
		s.util, s.power, s.mem, s.kv, s.waiting, s.runn = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		if aligned {
			g := overlapMean(ms, b.start, b.start+b.secs)
			s.util, s.power, s.mem, s.kv, s.waiting, s.runn = g.GPUUtil, g.GPUPowerW, g.GPUMemBytes, g.KVUsage, g.Waiting, g.Running
			if !math.IsNaN(g.Replicas) && g.Replicas > 0 {
				s.replicas = g.Replicas // GPUs as the metrics count them
			}
		}
		w.slices = append(w.slices, s)
	}
	return w
}

// metricsWarnings says why metrics given beside request files could not be
// used, once per arm.
func metricsWarnings(b, c *armData) []string {
	var out []string
	for _, a := range []*armData{b, c} {
		m := a.ds.Metrics
		switch {
		case m == nil:
		case len(m.Buckets) == 0:
			out = append(out, fmt.Sprintf("%s: the metrics source has no slices in the requests' window: internal work unknown", a.arm))
		case a.clock != sources.ClockEpoch || a.pseudo:
			out = append(out, fmt.Sprintf("%s: the request files' times are not wall-clock (epoch) times, so the metrics cannot be aligned with them: internal work unknown", a.arm))
		}
	}
	return out
}

// metricInputs returns the inputs of a dataset that were read as metrics.
func metricInputs(ds *sources.Dataset) []sources.Input {
	var out []sources.Input
	for _, in := range ds.Inputs {
		switch in.Format {
		case "prometheus", "openmetrics", "prometheus-text":
			out = append(out, in)
		}
	}
	return out
}

func requestKinds(ds *sources.Dataset) string {
	var kinds []string
	for _, in := range ds.Inputs {
		switch in.Format {
		case "prometheus", "openmetrics", "prometheus-text":
			continue
		}
		if !slices.Contains(kinds, in.Format) {
			kinds = append(kinds, in.Format)
		}
	}
	if len(kinds) == 0 {
		return "request files"
	}
	return strings.Join(kinds, ", ") + " request files"
}

// sliceGauges keeps one bucket per time slice of a metrics aggregate (class
// buckets repeat the gauges), in time order.
func sliceGauges(m *sources.Aggregate) []sources.AggBucket {
	var out []sources.AggBucket
	seen := map[float64]bool{}
	for _, b := range m.Buckets {
		if seen[b.Start] {
			continue
		}
		seen[b.Start] = true
		g := gaugesOf(b)
		g.Start, g.End, g.Replicas = b.Start, b.End, b.Replicas
		out = append(out, g)
	}
	slices.SortFunc(out, func(x, y sources.AggBucket) int {
		switch {
		case x.Start < y.Start:
			return -1
		case x.Start > y.Start:
			return 1
		}
		return 0
	})
	return out
}

// overlapMean averages each gauge over the metrics slices overlapping
// [lo, hi), weighted by overlap; a gauge known over less than half of the
// interval is NaN.
func overlapMean(ms []sources.AggBucket, lo, hi float64) sources.AggBucket {
	nan := math.NaN()
	out := sources.AggBucket{GPUUtil: nan, GPUPowerW: nan, GPUMemBytes: nan, KVUsage: nan, Waiting: nan, Running: nan, Replicas: nan}
	fields := func(b *sources.AggBucket) []*float64 {
		return []*float64{&b.GPUUtil, &b.GPUPowerW, &b.GPUMemBytes, &b.KVUsage, &b.Waiting, &b.Running, &b.Replicas}
	}
	var acc, cov [7]float64
	i, _ := slices.BinarySearchFunc(ms, lo, func(b sources.AggBucket, t float64) int {
		if b.End <= t {
			return -1
		}
		return 1
	})
	for ; i < len(ms) && ms[i].Start < hi; i++ {
		ov := math.Min(hi, ms[i].End) - math.Max(lo, ms[i].Start)
		if ov <= 0 {
			continue
		}
		for k, p := range fields(&ms[i]) {
			if !math.IsNaN(*p) {
				acc[k] += *p * ov
				cov[k] += ov
			}
		}
	}
	for k, p := range fields(&out) {
		if cov[k] >= (hi-lo)/2 && cov[k] > 0 {
			*p = acc[k] / cov[k]
		}
	}
	return out
}
