package sim

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

// Result is the output of one simulation run.
type Result struct {
	Scenario Scenario // as run (Duration is the window simulated)
	Seed     uint64
	// Baseline and Canary are the client-side request records of each arm
	// (every offered attempt, including rejected ones), in arrival order.
	Baseline, Canary []sources.Request
	// Metrics holds one scrape series per replica, baseline replicas first.
	Metrics []ReplicaSeries
	// Cost holds one record per replica and cost interval, in time order.
	Cost    []CostRecord
	Summary Summary
}

// Dataset returns one arm's records as a dataset for the analysis:
// client-side measurements on the epoch clock over the simulated window.
// The input's SHA-256 is that of the arm's native request log as
// WriteRequestLog renders it.
func (r *Result) Dataset(a sources.Arm) sources.Dataset {
	reqs := r.Requests(a)
	h := sha256.New()
	_ = WriteRequestLog(h, reqs) // a hash never fails to write
	return sources.Dataset{
		Arm:      a,
		Requests: reqs,
		Clock:    sources.ClockEpoch,
		Location: "client",
		Duration: r.Scenario.Duration.Seconds(),
		Inputs: []sources.Input{{
			Path:   fmt.Sprintf("sim:%s?seed=%d&duration=%s", r.Scenario.Name, r.Seed, r.Scenario.Duration),
			SHA256: hex.EncodeToString(h.Sum(nil)),
			Format: "sim",
			Arm:    a,
			Count:  len(reqs),
			Note:   "simulated by goodput's fleet simulator",
		}},
	}
}

// Requests returns the records of one arm.
func (r *Result) Requests(a sources.Arm) []sources.Request {
	if a == sources.Canary {
		return r.Canary
	}
	return r.Baseline
}

// Summary is the simulator's own account of a run.
type Summary struct {
	Scenario string
	Seed     uint64
	Start    time.Time
	Duration time.Duration
	SLO      SLO
	Baseline ArmSummary
	Canary   ArmSummary
}

// ArmSummary is one arm's request accounting (DESIGN.md §1), utilisation
// and goodput over the window. Counts are of offered attempts whose arrival
// is in the window.
type ArmSummary struct {
	Replicas      int
	Offered       int
	Admitted      int
	Rejected      int
	Canceled      int
	Failed        int // error or timeout
	Completed     int
	Good          int // completed and within the summary SLO
	FirstAttempts int
	// RetryAmplification is offered / first attempts (1 = no retries).
	RetryAmplification float64
	// MeanGPUUtil is the mean GPU utilisation (0..1) over all scrapes of
	// live replicas after the window start.
	MeanGPUUtil float64
	// TokensPerSecond is the output tokens generated per second of window,
	// including tokens of requests that were later canceled.
	TokensPerSecond float64
	// GoodputRPS is good requests per second of window.
	GoodputRPS float64
	Minutes    []MinuteSummary
	// StepNoise is the arm's batch-noise step-time factor in each noise
	// interval (default 10 s) that starts in the window; nil when the arm
	// has no batch noise.
	StepNoise []float64
}

// MinuteSummary is one minute of the window (the last may be partial).
type MinuteSummary struct {
	Start      float64 // offset from the window start, seconds
	OfferedRPS float64 // offered attempts per second (by arrival)
	GoodputRPS float64 // good requests per second (by arrival)
	TokensPS   float64 // output tokens per second
	GPUUtil    float64 // mean GPU utilisation of live replicas, 0..1
	// TTFTP50 is the median TTFT (seconds) of the minute's completed
	// requests (by arrival); NaN when none completed.
	TTFTP50 float64
	// Waiting is the mean number of requests queued per live replica at
	// the minute's scrapes (the gateway queue per replica with a shared
	// queue).
	Waiting float64
}

// maxRequests bounds the first attempts of one run (both arms), so that a
// mistyped rate fails fast instead of exhausting memory.
const maxRequests = 5e7

// Run simulates sc with the given seed over duration (0 = the scenario's
// default window). The same scenario, seed and duration give identical
// results. It returns an error for an invalid scenario or when ctx ends.
func Run(ctx context.Context, sc Scenario, seed uint64, duration time.Duration) (*Result, error) {
	if duration < 0 {
		return nil, fmt.Errorf("duration %v is negative", duration)
	}
	if duration > 0 {
		sc.Duration = duration
	}
	if sc.Duration > 7*24*time.Hour {
		return nil, fmt.Errorf("duration %v is longer than the 168h the simulator allows", sc.Duration)
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %q: %w", sc.Name, err)
	}
	sc.Failures = slices.Clone(sc.Failures)
	dur := sc.Duration.Seconds()
	grid := rateGrid(&sc, seed, dur)
	expected := 0.0
	for _, g := range grid {
		expected += g
	}
	if expected > maxRequests {
		return nil, fmt.Errorf("scenario %q would offer about %.3g requests; the simulator allows %.0g per run (lower traffic.rate or the duration)",
			sc.Name, expected, float64(maxRequests))
	}
	arms := []sources.Arm{sources.Baseline, sources.Canary}
	sims := make([]*armSim, len(arms))
	errs := make([]error, len(arms))
	var wg sync.WaitGroup
	for i, a := range arms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newArmSim(&sc, a, seed, dur, arrivals(&sc, seed, a, grid, dur))
			errs[i] = s.run(ctx)
			sims[i] = s
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	res := &Result{Scenario: sc, Seed: seed}
	res.Summary = Summary{Scenario: sc.Name, Seed: seed, Start: sc.Start, Duration: sc.Duration, SLO: sc.SLO}
	for i, s := range sims {
		reqs := s.sorted()
		sum := s.summarize(reqs)
		reqs = dropSlowRecords(reqs, sc.Arm(arms[i]).LogDropSlow)
		if arms[i] == sources.Canary {
			res.Canary, res.Summary.Canary = reqs, sum
		} else {
			res.Baseline, res.Summary.Baseline = reqs, sum
		}
		for _, r := range s.reps {
			res.Metrics = append(res.Metrics, r.series)
		}
		res.Cost = append(res.Cost, s.costs()...)
	}
	slices.SortStableFunc(res.Cost, func(a, b CostRecord) int { return cmp.Compare(a.Start, b.Start) })
	return res, nil
}

// dropSlowRecords is reqs without the completions whose first token took
// longer than after (ArmSpec.LogDropSlow; 0: reqs as they are).
func dropSlowRecords(reqs []sources.Request, after time.Duration) []sources.Request {
	if after <= 0 {
		return reqs
	}
	return slices.DeleteFunc(reqs, func(r sources.Request) bool {
		return r.Status == sources.StatusOK && r.TTFT > after.Seconds()
	})
}

// sorted returns the arm's records in arrival order (ties in offer order).
func (s *armSim) sorted() []sources.Request {
	idx := make([]int, len(s.out))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(s.out[a].Time, s.out[b].Time); c != 0 {
			return c
		}
		return cmp.Compare(s.ids[a], s.ids[b])
	})
	out := make([]sources.Request, len(idx))
	for i, j := range idx {
		out[i] = s.out[j]
	}
	return out
}

// Good reports whether a record is a good request under slo: completed,
// TTFT and TPOT (when defined) within the limits of its class, and quality
// not bad.
func (slo SLO) Good(r *sources.Request) bool {
	ttft, tpot := slo.TTFT, slo.TPOT
	if c, ok := slo.Classes[r.Class]; ok {
		if c.TTFT > 0 {
			ttft = c.TTFT
		}
		if c.TPOT > 0 {
			tpot = c.TPOT
		}
	}
	if r.Status != sources.StatusOK || !sources.Known(r.TTFT) || r.TTFT > ttft.Seconds() {
		return false
	}
	if sources.Known(r.TPOT) && r.TPOT > tpot.Seconds() {
		return false
	}
	return r.Quality != sources.QualityBad
}

func (s *armSim) summarize(reqs []sources.Request) ArmSummary {
	start := float64(s.sc.Start.Unix())
	slo := s.sc.SLO
	minutes := int(math.Ceil(s.end / 60))
	as := ArmSummary{Replicas: s.spec.Replicas, Minutes: make([]MinuteSummary, minutes)}
	good := make([]float64, minutes)
	offered := make([]float64, minutes)
	ttfts := make([][]float64, minutes)
	for i := range reqs {
		r := &reqs[i]
		as.Offered++
		m := min(int((r.Time-start)/60), minutes-1)
		offered[m]++
		if r.Attempt <= 1 {
			as.FirstAttempts++
		}
		switch {
		case r.Status == sources.StatusRejected:
			as.Rejected++
		case r.Status == sources.StatusCanceled:
			as.Canceled++
		case r.Status.Failed():
			as.Failed++
		case r.Status.Completed():
			as.Completed++
			ttfts[m] = append(ttfts[m], r.TTFT)
		}
		if slo.Good(r) {
			as.Good++
			good[m]++
		}
	}
	as.Admitted = as.Offered - as.Rejected
	if as.FirstAttempts > 0 {
		as.RetryAmplification = float64(as.Offered) / float64(as.FirstAttempts)
	}
	utilSum, utilN := make([]float64, minutes), make([]float64, minutes)
	waitSum := make([]float64, minutes)
	total, n := 0.0, 0.0
	for _, r := range s.reps {
		for _, smp := range r.series.Samples {
			off := smp.Time - start
			if off <= 0 {
				continue
			}
			total += smp.GPUUtil
			n++
			m := min(int(math.Ceil(off/60))-1, minutes-1)
			utilSum[m] += smp.GPUUtil
			waitSum[m] += float64(smp.Waiting)
			utilN[m]++
		}
	}
	if n > 0 {
		as.MeanGPUUtil = total / n
	}
	tokens := 0.0
	for m := range minutes {
		w := min(60, s.end-float64(m)*60)
		ms := &as.Minutes[m]
		ms.Start = float64(m) * 60
		ms.OfferedRPS = offered[m] / w
		ms.GoodputRPS = good[m] / w
		ms.TokensPS = s.tokensPerMinute[m] / w
		if utilN[m] > 0 {
			ms.GPUUtil = utilSum[m] / utilN[m]
			ms.Waiting = waitSum[m] / utilN[m]
		}
		ms.TTFTP50 = math.NaN()
		if n := len(ttfts[m]); n > 0 {
			slices.Sort(ttfts[m])
			ms.TTFTP50 = ttfts[m][n/2]
			if n%2 == 0 {
				ms.TTFTP50 = (ttfts[m][n/2-1] + ttfts[m][n/2]) / 2
			}
		}
		tokens += s.tokensPerMinute[m]
	}
	if s.noise != nil {
		n := int(math.Ceil(s.end / s.noiseDt))
		s.noiseFactor(float64(n-1) * s.noiseDt)
		for _, x := range s.noiseLog[:n] {
			as.StepNoise = append(as.StepNoise, math.Exp(x))
		}
	}
	as.TokensPerSecond = tokens / s.end
	as.GoodputRPS = float64(as.Good) / s.end
	return as
}
