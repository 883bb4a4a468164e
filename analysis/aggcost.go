package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
)

// aggCost is an arm's cost breakdown over its analysed slices when it
// comes from cost records or the policy's rates (nil: OpenCost series or
// none), USD.
type aggCost struct {
	source                           string // records | policy-rates
	accelerator, host, network, idle float64
}

// priceAggArms prices both arms' analysed slices as the request path does
// (priceArms): cost records (--cost) spread uniformly over their
// intervals onto the slices, else the policy's rates (replicas × slice time
// at accelerator + host rates, plus the idle reserve per arm-hour), else
// the OpenCost series the metrics carry. A slice's price is kept as a rate
// (costPerHour) so every cost figure reads it the same way. Records that
// do not cover the analysed window are refused when the policy gates on
// cost (missing cost is cheaper cost: never a pass), else a warning.
func priceAggArms(p *policies.Policy, cfg Config, b, c *aggArm) (warns []string, err error) {
	warnf := func(format string, a ...any) { warns = append(warns, fmt.Sprintf(format, a...)) }
	if len(cfg.Cost) > 0 {
		for _, a := range []*aggArm{b, c} {
			var mine []int
			for i, r := range cfg.Cost {
				if r.Arm == a.arm {
					mine = append(mine, i)
				}
			}
			if len(mine) == 0 {
				return warns, &DataError{Arm: a.arm, Msg: fmt.Sprintf("the cost file has no records with arm %q: a cost per good request compares both arms' costs; give the %s's records (column arm), or leave --cost out", a.arm, a.arm)}
			}
			c := &aggCost{source: "records"}
			lo, hi := a.slices[0].from(), a.slices[len(a.slices)-1].end
			overlap := func(lo1, hi1, lo2, hi2 float64) float64 { return math.Max(0, math.Min(hi1, hi2)-math.Max(lo1, lo2)) }
			usd := make([]float64, len(a.slices))
			recs := cfg.Cost[:0:0]
			for _, k := range mine {
				r := cfg.Cost[k]
				recs = append(recs, r)
				d := r.End - r.Start
				// the record's share of the analysed window, less the
				// slices left out of both arms (priced nowhere)
				f := overlap(r.Start, r.End, lo, hi) / d
				for i, s := range a.slices {
					if ov := overlap(r.Start, r.End, s.from(), s.end); ov > 0 {
						if s.leftOut {
							f -= ov / d
							continue
						}
						usd[i] += r.Total() * ov / d
					}
				}
				c.accelerator += r.Accelerator * f
				c.host += r.Host * f
				c.network += r.Network * f
				c.idle += r.IdleReserve * f
			}
			for i := range a.slices {
				s := &a.slices[i]
				s.costPerHour = 0 // a slice of no seconds (a last arrival on its boundary) costs nothing
				if secs := s.secs(); secs > 0 {
					s.costPerHour = usd[i] / (secs / 3600)
				}
			}
			if cov := coverage(recs, lo, hi); cov < minCostCoverage {
				msg := fmt.Sprintf("cost records cover %.1f%% of the analysed window", cov*100)
				if gatesCost(p) {
					return warns, &DataError{Arm: a.arm, Msg: msg + ": the cost per good request would count the missing time as free; give every replica's cost records for the whole window"}
				}
				warnf("%s: %s: uncovered time is counted as free", a.arm, msg)
			}
			a.cost = c
		}
		if len(cfg.CostMissing) > 0 {
			warnf("cost file has no %s column: counted as 0", strings.Join(cfg.CostMissing, ", "))
		}
		return warns, nil
	}
	r := p.Cost
	if r == nil || (r.AcceleratorPerHour == 0 && r.HostPerHour == 0 && r.IdleReservePerHour == 0) {
		return warns, nil
	}
	for _, a := range []*aggArm{b, c} {
		for _, s := range a.slices {
			if !math.IsNaN(s.costPerHour) {
				return warns, nil // the metrics carry OpenCost's figures: they stand
			}
		}
	}
	if bN, cN := !replicasNamed(b), !replicasNamed(c); (r.AcceleratorPerHour != 0 || r.HostPerHour != 0) && (bN || cN) {
		warnf("%s", unpricedReplicas(bN, cN))
		return warns, nil
	}
	for _, a := range []*aggArm{b, c} {
		c := &aggCost{source: "policy-rates", network: math.NaN()}
		for i := range a.slices {
			s := &a.slices[i]
			if s.leftOut {
				s.costPerHour = 0 // left out of both arms: priced nowhere
				continue
			}
			s.costPerHour = s.replicas*(r.AcceleratorPerHour+r.HostPerHour) + r.IdleReservePerHour
			h := s.secs() / 3600
			c.accelerator += s.replicas * h * r.AcceleratorPerHour
			c.host += s.replicas * h * r.HostPerHour
			c.idle += h * r.IdleReservePerHour
		}
		a.cost = c
	}
	warnf("cost from the policy's rates (replicas × slice time × accelerator and host rates, plus idle reserve); network cost needs bytes and is not priced")
	return warns, nil
}

// summary is an arm's cost summary from records or rates, given its total
// good requests and their output tokens (NaN when unknown).
func (c *aggCost) summary(good, goodTokens float64) (*ArmCost, *Num) {
	tot := c.accelerator + c.host + c.idle
	if !math.IsNaN(c.network) {
		tot += c.network
	}
	per := Num(tot / good)
	out := &ArmCost{Source: c.source, AcceleratorUSD: Num(c.accelerator), HostUSD: Num(c.host), NetworkUSD: Num(c.network),
		IdleReserveUSD: Num(c.idle), TotalUSD: Num(tot), PerGoodRequest: per, PerMillionGoodTokens: Num(tot / goodTokens * 1e6),
		GoodRequestsPerDollar: Num(good / tot)}
	if math.IsNaN(c.network) {
		out.MissingComponents = []string{"network_usd"}
	}
	return out, &per
}

// priceLike gives a's slices the prices o's slices of the same start
// carry (the counted canary priced like its reweighted copy).
func (a *aggArm) priceLike(o *aggArm) {
	if a == o {
		return
	}
	price := make(map[float64]float64, len(o.slices))
	for _, s := range o.slices {
		price[s.start] = s.costPerHour
	}
	for i := range a.slices {
		if v, ok := price[a.slices[i].start]; ok {
			a.slices[i].costPerHour = v
		}
	}
}

// matchedCost compares cost per good request at matched offered load on
// the slices, as the request path does (judgement.costMatched, through
// matchedCostEstimate): the baseline and the canary as counted (cRaw), on
// the shared grid when the arms are paired. Good requests bounded by
// histograms are taken at one end: favourable = the canary at its upper
// bound and the baseline at its lower (an exact aggregate's ends
// coincide). False when an arm's slices carry no price.
func (j *aggJudgement) matchedCost(favourable bool, conf float64) (stats.Estimate, bool) {
	cells := func(a *aggArm, hi bool) (stats.Ratio, stats.Ratio, bool) {
		n := len(a.slices)
		cs := stats.Ratio{Num: make([]float64, n), Den: make([]float64, n)}
		gr := stats.Ratio{Num: make([]float64, n), Den: make([]float64, n)}
		for i, s := range a.slices {
			if math.IsNaN(s.costPerHour) {
				return cs, gr, false
			}
			secs := s.secs()
			good := s.goodLo
			if hi {
				good = s.goodHi
			}
			cs.Num[i], cs.Den[i] = s.costPerHour*secs/3600, secs
			gr.Num[i], gr.Den[i] = good, s.offered()
		}
		return cs, gr, true
	}
	csB, goB, okb := cells(j.b, !favourable)
	csC, goC, okc := cells(j.cRaw, favourable)
	if !okb || !okc {
		return stats.Estimate{}, false
	}
	if j.paired {
		csC, csB = j.align(csC, csB)
		goC, goB = j.align(goC, goB)
	}
	return matchedCostEstimate(costCells{cost: csB.Num, secs: csB.Den, good: goB.Num, offered: goB.Den},
		costCells{cost: csC.Num, secs: csC.Den, good: goC.Num, offered: goC.Den}, j.paired, conf)
}
