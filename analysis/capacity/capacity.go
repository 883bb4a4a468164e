// Package capacity compares two rate sweeps by their capacity at SLO: the
// highest request rate at which SLO attainment (good / offered requests)
// stays at or above a target, such as 99% of requests with TTFT ≤ 1 s.
//
// Each arm's runs become points on an attainment-vs-rate curve. Attainment
// is exact where a point has per-request records and bounded where it has
// only percentile lists; a Wilson interval adds the sampling uncertainty of
// the point's request count. The curve is fitted monotone non-increasing
// (weighted pool-adjacent-violators), and its pointwise band is the monotone
// envelope of the points' intervals. Capacity is where the fit crosses the
// target; its interval runs from the highest rate confidently at or above
// the target to the lowest rate confidently below it. The verdict compares
// canary capacity / baseline capacity with the policy's capacity margin,
// deciding a pass on the unfavourable end of that ratio's interval and a
// fail on the favourable end.
//
// The package is pure: no I/O, no clock.
package capacity

import (
	"fmt"
	"math"
	"sort"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// DefaultTarget is the attainment target when neither the policy nor the
// caller gives one (0.99).
const DefaultTarget = 0.99

// DefaultMargin is the relative capacity margin when the policy has no
// capacity gate (0.05: the canary may lose up to 5% of capacity).
const DefaultMargin = 0.05

// DefaultSaturationTolerance is how far the achieved arrival rate may fall
// short of the requested one before a point counts as saturated (0.05).
const DefaultSaturationTolerance = 0.05

// ArmConfig describes one arm's deployment where the files do not.
type ArmConfig struct {
	// Replicas and GPUs serving the arm (0 = as the files state, else unknown).
	Replicas, GPUs int
	// USDPerHour is the arm's cost rate in USD per hour (0 = from the
	// policy's cost rates × replicas when both are known, else unknown).
	USDPerHour float64
}

// Config sets up a comparison.
type Config struct {
	Policy *policies.Policy
	// Target is the attainment target in (0, 1); 0 = the policy's capacity
	// gate target, else DefaultTarget.
	Target float64
	// SaturationTolerance in [0, 1); 0 = DefaultSaturationTolerance.
	SaturationTolerance float64
	Baseline, Canary    ArmConfig
}

// Point is one load level of an arm with its attainment.
type Point struct {
	Source        string  // path, with "#label" for a point within a file
	Rate          float64 // the rate on the curve, req/s: requested, or achieved when saturated
	RequestedRate float64 // req/s; NaN (null) unknown, +Inf (null, as_fast_as_possible) for a throughput run
	AchievedRate  float64 // req/s; NaN (null) when unknown
	Saturated     bool    // achieved fell short of requested beyond the tolerance
	Offered       int64
	Completed     int64
	// GoodLo and GoodHi bound the number of good requests (equal when exact).
	GoodLo int64
	GoodHi int64
	Exact  bool // from per-request records
	// Attainment is the point estimate (the middle of the bounds); Bounds
	// the attainment the file's figures allow; CI adds sampling (Wilson).
	Attainment float64
	Bounds     stats.Interval
	CI         stats.Interval
	Goodput    float64 // Rate × Attainment
	Notes      []string
	point      sources.RatePoint
}

// Fit is the monotone fit at an arm's points (sorted by rate).
type Fit struct {
	Rates    []float64
	Estimate []float64 // isotonic (non-increasing) fit of the point estimates
	Lower    []float64 // monotone envelope of the points' lower limits
	Upper    []float64 // monotone envelope of the points' upper limits
}

// At interpolates the fitted attainment linearly at rate x (req/s); false
// outside the fit's rate range.
func (f Fit) At(x float64) (float64, bool) {
	n := len(f.Rates)
	if n == 0 || len(f.Estimate) != n || x < f.Rates[0] || x > f.Rates[n-1] {
		return 0, false
	}
	for i := 0; i+1 < n; i++ {
		if x <= f.Rates[i+1] {
			if f.Rates[i+1] == f.Rates[i] {
				return f.Estimate[i+1], true
			}
			t := (x - f.Rates[i]) / (f.Rates[i+1] - f.Rates[i])
			return f.Estimate[i] + t*(f.Estimate[i+1]-f.Estimate[i]), true
		}
	}
	return f.Estimate[n-1], true
}

// Capacity is an arm's capacity at the target.
type Capacity struct {
	// Identifiable is true when a point is confidently at or above the
	// target and another confidently below it.
	Identifiable bool
	// Estimate is where the fit crosses the target, req/s (NaN when the fit
	// does not cross between two points).
	Estimate float64
	// Lo is the highest rate confidently at or above the target (0 when
	// none); Hi the lowest rate confidently below it (+Inf when none).
	Lo float64
	Hi float64
	// Reason says why the capacity is not identifiable; Identify says which
	// rates a new sweep should cover to identify it.
	Reason   string
	Identify string
}

// Arm is one arm's points, fit and capacity.
type Arm struct {
	Points   []Point
	Fit      Fit
	Capacity Capacity
	Replicas int
	GPUs     int
	// USDPerHour is the arm's cost rate (0 unknown).
	USDPerHour float64
	// PerReplica, PerGPU: capacity (estimate, lo, hi) per replica and per
	// GPU; GoodPerUSD: good requests per dollar at capacity. Nil when unknown.
	PerReplica *[3]float64
	PerGPU     *[3]float64
	GoodPerUSD *[3]float64
	Inputs     []sources.Input
}

// Common is the goodput of both arms at one rate inside both sweeps.
type Common struct {
	Rate float64
	// Attainment and goodput of each arm from its fit (estimate, and the
	// band the monotone envelope allows between the bracketing points).
	Baseline, Canary         float64
	BaselineBand, CanaryBand stats.Interval
}

// Result is the comparison.
type Result struct {
	Target     float64
	Margin     float64
	MarginText string
	Confidence float64
	// Scale is "arm" (capacities compared as measured) or "replica"
	// (divided by each arm's replicas).
	Scale               string
	SaturationTolerance float64
	Baseline, Canary    Arm
	// Ratio is canary / baseline capacity (NaN when not both estimated) and
	// RatioCI its interval from the capacity intervals (lo may be 0, hi +Inf).
	Ratio   float64
	RatioCI stats.Interval
	Verdict analysis.Verdict
	Reasons []string
	Common  []Common
	// GateFromPolicy is true when the policy declares the capacity gate
	// (false: the defaults were used).
	GateFromPolicy bool
	Warnings       []string
}

// DataError is a problem with the inputs that prevents a comparison (exit 4).
type DataError struct{ Msg string }

func (e *DataError) Error() string { return e.Msg }

// Compare judges the canary's sweep against the baseline's.
func Compare(base, can []sources.RatePoint, cfg Config) (*Result, error) {
	if cfg.Policy == nil {
		return nil, &DataError{"no policy"}
	}
	res := &Result{Confidence: cfg.Policy.Confidence, Margin: DefaultMargin, MarginText: "5%", Target: DefaultTarget,
		SaturationTolerance: cfg.SaturationTolerance}
	if res.SaturationTolerance == 0 {
		res.SaturationTolerance = DefaultSaturationTolerance
	}
	if g, ok := Gate(cfg.Policy); ok {
		res.GateFromPolicy = true
		res.Margin, res.MarginText = g.Margin.Value, g.Margin.Text
		if g.Target > 0 {
			res.Target = float64(g.Target)
		}
	}
	if cfg.Target > 0 {
		res.Target = cfg.Target
	}
	if !(res.Target > 0 && res.Target < 1) {
		return nil, &DataError{fmt.Sprintf("target %v is outside (0, 1)", res.Target)}
	}
	// Each arm's capacity interval is built from two one-sided limits, and
	// the ratio from both arms' intervals: every point interval is taken at
	// 1 − α two-sided (α/2 per side), so that the ratio's unfavourable end
	// rests on two one-sided α/2 limits and a pass errs with probability ≤ α.
	conf := 1 - cfg.Policy.Alpha()
	if len(cfg.Policy.Classes) > 0 && hasSummary(base, can) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("policy %s has request classes: summary-only points are judged on the default SLO only (their requests cannot be classed)", cfg.Policy.Name))
	}
	if err := sameInputs(base, can); err != nil {
		return nil, err
	}
	var err error
	if res.Baseline, err = buildArm("baseline", base, cfg.Policy, res.Target, res.SaturationTolerance, conf, cfg.Baseline); err != nil {
		return nil, err
	}
	if res.Canary, err = buildArm("canary", can, cfg.Policy, res.Target, res.SaturationTolerance, conf, cfg.Canary); err != nil {
		return nil, err
	}
	for _, a := range []*Arm{&res.Baseline, &res.Canary} {
		for _, w := range monotoneWarnings(a) {
			res.Warnings = append(res.Warnings, w)
		}
	}
	res.decide()
	res.Common = commonRates(&res.Baseline, &res.Canary)
	return res, nil
}

// Gate returns the policy's capacity gate, if it declares one.
func Gate(p *policies.Policy) (policies.Gate, bool) {
	for _, g := range p.Gates {
		if g.Metric == "capacity" {
			return g, true
		}
	}
	return policies.Gate{}, false
}

func hasSummary(arms ...[]sources.RatePoint) bool {
	for _, a := range arms {
		for _, p := range a {
			if p.Requests == nil {
				return true
			}
		}
	}
	return false
}

func sameInputs(base, can []sources.RatePoint) error {
	key := func(ps []sources.RatePoint) string {
		var ks []string
		for _, p := range ps {
			ks = append(ks, p.SHA256+"#"+p.Label)
		}
		sort.Strings(ks)
		return fmt.Sprint(ks)
	}
	if len(base) > 0 && key(base) == key(can) {
		return &DataError{"the baseline and the canary are the same data (identical files): there is nothing to compare; give each arm its own sweep"}
	}
	return nil
}

func buildArm(name string, pts []sources.RatePoint, pol *policies.Policy, target, tol, conf float64, ac ArmConfig) (Arm, error) {
	var a Arm
	if len(pts) == 0 {
		return a, &DataError{fmt.Sprintf("the %s has no sweep points", name)}
	}
	if err := checkWorkloads(name, pts); err != nil {
		return a, err
	}
	for _, sp := range pts {
		p, err := newPoint(sp, pol, target, tol, conf)
		if err != nil {
			return a, err
		}
		a.Points = append(a.Points, p)
	}
	sort.SliceStable(a.Points, func(i, j int) bool { return a.Points[i].Rate < a.Points[j].Rate })
	a.Fit = fit(a.Points)
	a.Capacity = crossing(a.Points, a.Fit, target)
	a.Replicas, a.GPUs, a.USDPerHour = ac.Replicas, ac.GPUs, ac.USDPerHour
	if a.Replicas == 0 {
		a.Replicas = pts[0].Replicas
	}
	if a.GPUs == 0 {
		a.GPUs = pts[0].GPUs
	}
	if a.USDPerHour == 0 && pol.Cost != nil && a.Replicas > 0 {
		a.USDPerHour = float64(a.Replicas)*(pol.Cost.AcceleratorPerHour+pol.Cost.HostPerHour) + pol.Cost.IdleReservePerHour
	}
	c := a.Capacity
	per := func(d float64) *[3]float64 {
		return &[3]float64{c.Estimate / d, c.Lo / d, c.Hi / d}
	}
	if a.Replicas > 0 {
		a.PerReplica = per(float64(a.Replicas))
	}
	if a.GPUs > 0 {
		a.PerGPU = per(float64(a.GPUs))
	}
	if a.USDPerHour > 0 {
		a.GoodPerUSD = per(a.USDPerHour / 3600)
	}
	return a, nil
}

// lengthTolerance is how far (relative) mean prompt or output lengths may
// differ between the points of one arm before they count as different
// workloads (0.25).
const lengthTolerance = 0.25

// checkWorkloads refuses an arm whose points were sent different workloads:
// different stated workloads, or mean prompt or output lengths more than
// lengthTolerance apart.
func checkWorkloads(name string, pts []sources.RatePoint) error {
	first := -1
	for i, p := range pts {
		if p.Workload == "" {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		if p.Workload != pts[first].Workload {
			return &DataError{fmt.Sprintf("the %s mixes workloads: %s ran %q but %s ran %q; a capacity curve needs one workload at every rate (give each workload its own comparison)",
				name, pointName(pts[first]), pts[first].Workload, pointName(p), p.Workload)}
		}
	}
	for _, prompt := range []bool{true, false} {
		what := "output"
		if prompt {
			what = "prompt"
		}
		lo, hi := -1, -1
		var m, se []float64
		for i := range pts {
			v, e := meanLen(&pts[i], prompt)
			m, se = append(m, v), append(se, e)
			if !(v > 0) {
				continue
			}
			if lo < 0 || v < m[lo] {
				lo = i
			}
			if hi < 0 || v > m[hi] {
				hi = i
			}
		}
		// apart by more than the tolerance, and by more than sampling noise
		// (6 standard errors of the difference: prompt lengths are heavy-tailed) where the points have requests
		if lo >= 0 && m[hi] > m[lo]*(1+lengthTolerance) && m[hi]-m[lo] > 6*math.Hypot(se[lo], se[hi]) {
			return &DataError{fmt.Sprintf("the %s mixes workloads: mean %s length %.0f tokens in %s but %.0f in %s (more than %.0f%% apart); a capacity curve needs one workload at every rate",
				name, what, m[lo], pointName(pts[lo]), m[hi], pointName(pts[hi]), 100*lengthTolerance)}
		}
	}
	return nil
}

// meanLen is a point's mean prompt (or output) length over completed
// requests and its standard error (0 for summary points, whose spread is
// unknown); NaN when unknown.
func meanLen(p *sources.RatePoint, prompt bool) (mean, se float64) {
	if p.Requests == nil {
		if prompt {
			return p.MeanPromptTokens, 0
		}
		return p.MeanOutputTokens, 0
	}
	var s, s2, n float64
	for i := range p.Requests {
		r := &p.Requests[i]
		v := r.OutputTokens
		if prompt {
			v = r.PromptTokens
		}
		if r.Status == sources.StatusOK && v >= 0 {
			s, s2, n = s+float64(v), s2+float64(v)*float64(v), n+1
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	mean = s / n
	if n > 1 {
		se = math.Sqrt(math.Max(0, (s2-n*mean*mean)/(n-1)) / n)
	}
	return mean, se
}

func pointName(p sources.RatePoint) string {
	if p.Label == "" {
		return p.Path
	}
	return p.Path + "#" + p.Label
}

func newPoint(sp sources.RatePoint, pol *policies.Policy, target, tol, conf float64) (Point, error) {
	p := Point{Source: pointName(sp), RequestedRate: sp.RequestedRate, AchievedRate: sp.AchievedRate, point: sp}
	p.Notes = append(p.Notes, sp.Notes...)
	req, ach := sp.RequestedRate, sp.AchievedRate
	switch {
	case math.IsInf(req, 1):
		if !(ach > 0) || math.IsInf(ach, 0) {
			return p, &DataError{fmt.Sprintf("%s: a run at an unlimited request rate without its achieved rate has no place on a rate curve", p.Source)}
		}
		p.Rate, p.Saturated = ach, true
		p.Notes = append(p.Notes, "run at an unlimited request rate: counted at its achieved rate as a saturated point")
	case req > 0 && !math.IsInf(req, 0):
		p.Rate = req
		// a shortfall within Poisson noise of the expected count (3 sd) is
		// not saturation: open-loop clients draw their arrivals at random
		noise := false
		if d := sp.Duration; d > 0 && !math.IsInf(d, 0) {
			exp := req * d
			noise = ach*d >= exp-3*math.Sqrt(exp)
		}
		if ach > 0 && ach < req*(1-tol) && !noise {
			p.Rate, p.Saturated = ach, true
			p.Notes = append(p.Notes, fmt.Sprintf("saturated: achieved %.4g req/s of the %.4g requested (short by %.1f%%, tolerance %.1f%%): counted at its achieved rate",
				ach, req, 100*(1-ach/req), 100*tol))
		}
	case ach > 0 && !math.IsInf(ach, 0):
		p.Rate = ach
		p.Notes = append(p.Notes, "requested rate unknown: counted at its achieved rate")
	default:
		return p, &DataError{fmt.Sprintf("%s: the file states neither the requested nor the achieved request rate, so the point has no place on a rate curve", p.Source)}
	}
	lo, hi, off, comp, exact, notes := attainment(&sp, pol, target)
	p.Notes = append(p.Notes, notes...)
	if off <= 0 {
		return p, &DataError{fmt.Sprintf("%s: no requests at this rate", p.Source)}
	}
	p.GoodLo, p.GoodHi, p.Offered, p.Completed, p.Exact = lo, hi, off, comp, exact
	n := float64(off)
	p.Bounds = stats.Interval{Lo: float64(lo) / n, Hi: float64(hi) / n}
	p.Attainment = (p.Bounds.Lo + p.Bounds.Hi) / 2
	p.CI = stats.Interval{Lo: stats.Wilson(float64(lo), n, conf).Lo, Hi: stats.Wilson(float64(hi), n, conf).Hi}
	p.Goodput = p.Rate * p.Attainment
	return p, nil
}

// fit is the weighted isotonic (non-increasing) regression of the points'
// estimates by the pool-adjacent-violators algorithm, weights = offered
// requests, and the monotone envelope of their intervals: since attainment
// cannot rise with load, a(r_i) ≤ min_{j≤i} U_j and a(r_i) ≥ max_{j≥i} L_j.
func fit(pts []Point) Fit {
	n := len(pts)
	f := Fit{Rates: make([]float64, n), Estimate: make([]float64, n), Lower: make([]float64, n), Upper: make([]float64, n)}
	y := make([]float64, n)
	w := make([]float64, n)
	for i, p := range pts {
		f.Rates[i], y[i], w[i] = p.Rate, p.Attainment, float64(p.Offered)
	}
	copy(f.Estimate, PAVA(y, w))
	up := math.Inf(1)
	for i := 0; i < n; i++ {
		up = math.Min(up, pts[i].CI.Hi)
		f.Upper[i] = up
	}
	lo := math.Inf(-1)
	for i := n - 1; i >= 0; i-- {
		lo = math.Max(lo, pts[i].CI.Lo)
		f.Lower[i] = lo
	}
	return f
}

// PAVA returns the weighted least-squares non-increasing fit to y with
// weights w (> 0) by pool-adjacent-violators.
func PAVA(y, w []float64) []float64 {
	type block struct {
		sum, wt float64
		n       int
	}
	var bs []block
	for i := range y {
		bs = append(bs, block{y[i] * w[i], w[i], 1})
		for len(bs) > 1 {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			if a.sum/a.wt >= b.sum/b.wt {
				break
			}
			bs = append(bs[:len(bs)-2], block{a.sum + b.sum, a.wt + b.wt, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(y))
	for _, b := range bs {
		for k := 0; k < b.n; k++ {
			out = append(out, b.sum/b.wt)
		}
	}
	return out
}

// crossing finds the capacity and its interval.
func crossing(pts []Point, f Fit, target float64) Capacity {
	c := Capacity{Estimate: math.NaN(), Hi: math.Inf(1)}
	n := len(pts)
	for i := 0; i < n; i++ {
		if f.Lower[i] >= target {
			c.Lo = f.Rates[i]
		}
	}
	for i := n - 1; i >= 0; i-- {
		if f.Upper[i] < target {
			c.Hi = f.Rates[i]
		}
	}
	// the fit's crossing, interpolated linearly in rate between the last
	// point at or above the target and the next one
	for i := 0; i+1 < n; i++ {
		if f.Estimate[i] >= target && f.Estimate[i+1] < target {
			r0, r1, a0, a1 := f.Rates[i], f.Rates[i+1], f.Estimate[i], f.Estimate[i+1]
			c.Estimate = r0
			if r1 > r0 {
				c.Estimate = r0 + (a0-target)/(a0-a1)*(r1-r0)
			}
			break
		}
	}
	rmin, rmax := f.Rates[0], f.Rates[n-1]
	switch {
	case c.Lo > 0 && !math.IsInf(c.Hi, 1):
		c.Identifiable = true
		if math.IsNaN(c.Estimate) {
			c.Estimate = (c.Lo + c.Hi) / 2
		}
		c.Estimate = math.Min(math.Max(c.Estimate, c.Lo), c.Hi)
	case c.Lo == 0 && !math.IsInf(c.Hi, 1) && f.Upper[0] < target:
		c.Reason = fmt.Sprintf("attainment is below the %s target already at the lowest rate, %s req/s (upper limit %s)", pct(target), num(rmin), pct(f.Upper[0]))
		c.Identify = fmt.Sprintf("add rates below %s req/s (e.g. %s … %s req/s)", num(rmin), num(rmin/8), num(rmin/2))
	case c.Lo == 0:
		c.Reason = fmt.Sprintf("no rate is confidently at or above the %s target", pct(target))
		if n == 1 {
			c.Reason = fmt.Sprintf("one rate only (%s req/s): a capacity needs a rate confidently at or above the %s target and one below it; here none is confidently at or above it", num(rmin), pct(target))
		}
		if f.Lower[0] < target {
			c.Reason += fmt.Sprintf(" (the best lower limit, at %s req/s, is %s", num(rmin), pct(f.Lower[0]))
			if pts[0].Exact {
				c.Reason += fmt.Sprintf(" from %d requests", pts[0].Offered)
			}
			c.Reason += ")"
		}
		if math.IsInf(c.Hi, 1) {
			c.Reason += fmt.Sprintf(", and none confidently below it (%d point(s) up to %s req/s)", n, num(rmax))
			c.Identify = fmt.Sprintf("run more requests per rate (to show %s needs ≳ %d requests with none bad) and add rates above %s req/s until attainment falls below the target (e.g. up to %s req/s)",
				pct(target), minRequests(target), num(rmax), num(2*rmax))
		} else {
			c.Identify = fmt.Sprintf("run more requests at rates below %s req/s (to show %s needs ≳ %d requests with none bad)", num(c.Hi), pct(target), minRequests(target))
		}
	default: // Lo > 0, Hi = +Inf
		c.Reason = ""
		if n == 1 {
			c.Reason = fmt.Sprintf("one rate only (%s req/s); ", num(rmin))
		}
		c.Reason += fmt.Sprintf("no rate is confidently below the %s target: attainment holds at every rate swept, up to %s req/s, so capacity is at least %s req/s", pct(target), num(rmax), num(c.Lo))
		c.Identify = fmt.Sprintf("add rates above %s req/s until attainment falls below the target (e.g. %s … %s req/s)", num(rmax), num(1.25*rmax), num(2*rmax))
		if math.IsNaN(c.Estimate) {
			c.Estimate = math.NaN()
		}
	}
	if !c.Identifiable {
		c.Estimate = math.NaN()
	}
	return c
}

// minRequests is the smallest n whose Wilson 95% lower limit at n of n good
// reaches the target: n/(n+z²) ≥ target ⇔ n ≥ z²·target/(1−target).
func minRequests(target float64) int {
	z := 1.959963984540054
	return int(math.Ceil(z * z * target / (1 - target)))
}

// monotoneWarnings flags sweeps whose attainment rises with load beyond
// sampling noise (crossed envelope).
func monotoneWarnings(a *Arm) []string {
	var out []string
	for i := range a.Fit.Rates {
		// past saturation attainment depends on how long the queue grew,
		// not on the rate: crossings among saturated points are expected
		if a.Fit.Lower[i] > a.Fit.Upper[i]+1e-12 && !a.Points[i].Saturated {
			out = append(out, fmt.Sprintf("attainment rises with load beyond sampling noise near %s req/s (%s): the sweep may mix warm-up, cache state or workloads; the capacity interval assumes attainment cannot rise with load",
				num(a.Fit.Rates[i]), a.Points[i].Source))
			break
		}
	}
	return out
}

// decide sets the ratio, its interval and the verdict.
func (r *Result) decide() {
	b, c := r.Baseline.Capacity, r.Canary.Capacity
	scaleB, scaleC := 1.0, 1.0
	r.Scale = "arm"
	if r.Baseline.Replicas > 0 && r.Canary.Replicas > 0 && r.Baseline.Replicas != r.Canary.Replicas {
		r.Scale = "replica"
		scaleB, scaleC = float64(r.Baseline.Replicas), float64(r.Canary.Replicas)
	}
	r.Ratio = (c.Estimate / scaleC) / (b.Estimate / scaleB)
	lo := (c.Lo / scaleC) / (b.Hi / scaleB) // 0 when either end is open
	hi := math.Inf(1)
	if b.Lo > 0 {
		hi = (c.Hi / scaleC) / (b.Lo / scaleB)
	}
	r.RatioCI = stats.Interval{Lo: lo, Hi: hi}
	floor := 1 - r.Margin
	what := "canary / baseline capacity"
	if r.Scale == "replica" {
		what = "canary / baseline capacity per replica"
	}
	switch {
	case hi < floor:
		r.Verdict = analysis.Fail
		r.Reasons = append(r.Reasons, fmt.Sprintf("%s is at most %s (interval %s): below the %s floor of 1 − margin %s, so the canary loses capacity beyond the margin",
			what, num(hi), ivl(r.RatioCI), num(floor), r.MarginText))
	case lo > floor:
		r.Verdict = analysis.Pass
		r.Reasons = append(r.Reasons, fmt.Sprintf("%s is at least %s (interval %s): above the %s floor of 1 − margin %s",
			what, num(lo), ivl(r.RatioCI), num(floor), r.MarginText))
	default:
		r.Verdict = analysis.Inconclusive
		msg := fmt.Sprintf("%s interval %s straddles the floor %s (1 − margin %s)", what, ivl(r.RatioCI), num(floor), r.MarginText)
		r.Reasons = append(r.Reasons, msg)
		for _, a := range []struct {
			name string
			c    Capacity
		}{{"baseline", b}, {"canary", c}} {
			if !a.c.Identifiable {
				r.Reasons = append(r.Reasons, fmt.Sprintf("%s capacity not identifiable: %s; to identify it: %s", a.name, a.c.Reason, a.c.Identify))
			}
		}
	}
}

// commonRates evaluates both fits at every point rate inside both sweeps.
func commonRates(b, c *Arm) []Common {
	lo := math.Max(b.Fit.Rates[0], c.Fit.Rates[0])
	hi := math.Min(b.Fit.Rates[len(b.Fit.Rates)-1], c.Fit.Rates[len(c.Fit.Rates)-1])
	if lo > hi {
		return nil
	}
	var rates []float64
	for _, a := range []*Arm{b, c} {
		for _, r := range a.Fit.Rates {
			if r >= lo && r <= hi {
				rates = append(rates, r)
			}
		}
	}
	sort.Float64s(rates)
	var out []Common
	for i, r := range rates {
		if i > 0 && r == rates[i-1] {
			continue
		}
		be, bb := evalFit(b.Fit, r)
		ce, cb := evalFit(c.Fit, r)
		out = append(out, Common{Rate: r, Baseline: be, Canary: ce, BaselineBand: bb, CanaryBand: cb})
	}
	return out
}

// evalFit returns the fit's attainment at rate r (linear between points)
// and the band monotonicity allows: [Lower at the next point at or above r,
// Upper at the last point at or below r].
func evalFit(f Fit, r float64) (float64, stats.Interval) {
	n := len(f.Rates)
	j := sort.SearchFloat64s(f.Rates, r) // first index with rate ≥ r
	if j < n && f.Rates[j] == r {
		// the last point at exactly r carries the pooled fit
		k := j
		for k+1 < n && f.Rates[k+1] == r {
			k++
		}
		b := ordered(f.Lower[k], f.Upper[j])
		return clamp(f.Estimate[k], b), b
	}
	i := j - 1
	t := (r - f.Rates[i]) / (f.Rates[j] - f.Rates[i])
	b := ordered(f.Lower[j], f.Upper[i])
	return clamp(f.Estimate[i]+t*(f.Estimate[j]-f.Estimate[i]), b), b
}

// clamp keeps the fit's estimate inside the band the envelope allows (they
// disagree only where saturated points break monotonicity).
func clamp(v float64, b stats.Interval) float64 { return math.Min(math.Max(v, b.Lo), b.Hi) }

// ordered returns [min, max] of a and b: where the envelope crossed
// (attainment rising with load beyond noise) the band spans both limits.
func ordered(a, b float64) stats.Interval {
	return stats.Interval{Lo: math.Min(a, b), Hi: math.Max(a, b)}
}

// num formats a rate or ratio with 4 significant digits; ∞ for +Inf.
func num(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "∞"
	case math.IsNaN(v):
		return "n/a"
	}
	return fmt.Sprintf("%.4g", v)
}

func ivl(iv stats.Interval) string { return "[" + num(iv.Lo) + ", " + num(iv.Hi) + "]" }
