package analysis

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// armCost is an arm's cost over its analysed window, by component, USD.
type armCost struct {
	source                                    string // records | policy-rates
	accelerator, host, network, idle, covered float64
}

func (c armCost) total() float64 { return c.accelerator + c.host + c.network + c.idle }

// prorate spreads an arm's cost records uniformly over their intervals onto
// the arm's buckets (bucket.cost) and sums the components over the analysed
// window. Records need wall-clock arrival times to be placed.
func (a *armData) prorate(recs []sources.CostRecord) (armCost, error) {
	c := armCost{source: "records"}
	var mine []sources.CostRecord
	for _, r := range recs {
		if r.Arm == a.arm {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return c, &DataError{Arm: a.arm, Msg: fmt.Sprintf("the cost file has no records with arm %q: a cost per good request compares both arms' costs; give the %s's records (column arm), or leave --cost out", a.arm, a.arm)}
	}
	if a.clock != sources.ClockEpoch {
		return c, &DataError{Arm: a.arm, Msg: "cost records are placed by wall-clock time, and this arm's data has no unix-time arrivals"}
	}
	overlap := func(lo1, hi1, lo2, hi2 float64) float64 { return math.Max(0, math.Min(hi1, hi2)-math.Max(lo1, lo2)) }
	for _, r := range mine {
		d := r.End - r.Start
		// the record's share of the analysed window, less the stretches
		// left out of both arms (their time is priced nowhere)
		f := overlap(r.Start, r.End, a.windowStart, a.windowEnd) / d
		for i := range a.buckets {
			b := &a.buckets[i]
			if ov := overlap(r.Start, r.End, b.start, b.start+b.secs); ov > 0 {
				if b.leftOut {
					f -= ov / d
					continue
				}
				b.cost += r.Total() * ov / d
			}
		}
		c.accelerator += r.Accelerator * f
		c.host += r.Host * f
		c.network += r.Network * f
		c.idle += r.IdleReserve * f
	}
	c.covered = coverage(mine, a.windowStart, a.windowEnd)
	return c, nil
}

// coverage is the share of [lo, hi) covered by at least one record.
func coverage(recs []sources.CostRecord, lo, hi float64) float64 {
	if hi <= lo {
		return 0
	}
	iv := make([][2]float64, 0, len(recs))
	for _, r := range recs {
		s, e := math.Max(r.Start, lo), math.Min(r.End, hi)
		if e > s {
			iv = append(iv, [2]float64{s, e})
		}
	}
	sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
	covered, end := 0.0, lo
	for _, x := range iv {
		if x[1] <= end {
			continue
		}
		covered += x[1] - math.Max(x[0], end)
		end = x[1]
	}
	return covered / (hi - lo)
}

// minCostCoverage is the share of the window (and of each replica's
// serving time) that cost records must cover.
const minCostCoverage = 0.99

// gatesCost reports whether the policy gates on cost per good request.
func gatesCost(p *policies.Policy) bool {
	for _, g := range p.Gates {
		if g.Metric == "cost_per_good_request" {
			return true
		}
	}
	return false
}

// replicaCoverage checks, when the arm's cost records name replicas, that
// every replica serving requests in the analysed window has records
// covering the span from its first to its last request there. It returns
// one line per replica that falls short.
func (a *armData) replicaCoverage(recs []sources.CostRecord) []string {
	byReplica := map[string][]sources.CostRecord{}
	for _, r := range recs {
		if r.Arm == a.arm && r.Replica != "" {
			byReplica[r.Replica] = append(byReplica[r.Replica], r)
		}
	}
	if len(byReplica) == 0 {
		return nil // arm-wide records: the window coverage says it all
	}
	type span struct {
		lo, hi float64
		n      int
	}
	serving := map[string]*span{}
	for i := range a.ds.Requests {
		r := &a.ds.Requests[i]
		if !a.keep[i] || r.Replica == "" {
			continue
		}
		s := serving[r.Replica]
		if s == nil {
			s = &span{lo: r.Time, hi: r.Time}
			serving[r.Replica] = s
		}
		s.lo, s.hi, s.n = math.Min(s.lo, r.Time), math.Max(s.hi, r.Time), s.n+1
	}
	names := make([]string, 0, len(serving))
	for n := range serving {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		s := serving[n]
		mine := byReplica[n]
		if len(mine) == 0 {
			out = append(out, fmt.Sprintf("replica %q served %d requests but has no cost records", n, s.n))
			continue
		}
		hi := s.hi
		if hi <= s.lo {
			hi = s.lo + a.bucketSecs // a single request: its bucket
		}
		if cov := coverage(mine, s.lo, hi); cov < minCostCoverage {
			out = append(out, fmt.Sprintf("replica %q's cost records cover %.1f%% of its serving time (%d requests)", n, cov*100, s.n))
		}
	}
	return out
}

// rateCost prices the arm's analysed window from the policy's rates c:
// replica time at accelerator + host rates, the idle reserve per arm-hour.
func rateCost(c *policies.CostRates, a *armData) (armCost, bool) {
	if c == nil || (c.AcceleratorPerHour == 0 && c.HostPerHour == 0 && c.IdleReservePerHour == 0) {
		return armCost{}, false
	}
	var rs, secs float64
	for i := range a.buckets {
		b := &a.buckets[i]
		if b.leftOut {
			continue // left out of both arms: priced nowhere
		}
		b.cost = b.replicaSecs/3600*(c.AcceleratorPerHour+c.HostPerHour) + b.secs/3600*c.IdleReservePerHour
		if !b.cut {
			rs += b.replicaSecs
			secs += b.secs
		}
	}
	return armCost{source: "policy-rates", accelerator: rs / 3600 * c.AcceleratorPerHour, host: rs / 3600 * c.HostPerHour,
		idle: secs / 3600 * c.IdleReservePerHour, network: math.NaN(), covered: 1}, true
}

// priceArms fills the per-bucket cost and the arm cost of both arms from
// the cost records (cfg.Cost) or else the policy's rates, and returns the
// warnings to show; arms stay unpriced (cost nil) when neither prices them.
// Records that do not cover an arm's window are an error when p gates on
// cost (missing cost is cheaper cost: never a pass).
func priceArms(p *policies.Policy, cfg Config, b, c *armData) (warns []string, err error) {
	warnf := func(format string, a ...any) { warns = append(warns, fmt.Sprintf(format, a...)) }
	if len(cfg.Cost) > 0 {
		for _, a := range []*armData{b, c} {
			c, err := a.prorate(cfg.Cost)
			if err != nil {
				return warns, err
			}
			problems := a.replicaCoverage(cfg.Cost)
			if c.covered < minCostCoverage {
				problems = append([]string{fmt.Sprintf("cost records cover %.1f%% of the analysed window", c.covered*100)}, problems...)
			}
			if len(problems) > 0 {
				if gatesCost(p) {
					// missing cost is cheaper cost: never a pass
					return warns, &DataError{Arm: a.arm, Msg: strings.Join(problems, "; ") +
						": the cost per good request would count the missing time as free; give every replica's cost records for the whole window"}
				}
				warnf("%s: %s: uncovered time is counted as free", a.arm, strings.Join(problems, "; "))
			}
			a.cost = &c
		}
		if len(cfg.CostMissing) > 0 {
			warnf("cost file has no %s column: counted as 0", strings.Join(cfg.CostMissing, ", "))
		}
		return warns, nil
	}
	if r := p.Cost; r != nil && (r.AcceleratorPerHour != 0 || r.HostPerHour != 0) {
		if bN, cN := b.replicasUnnamed(), c.replicasUnnamed(); bN || cN {
			warnf("%s", unpricedReplicas(bN, cN))
			return warns, nil
		}
	}
	for _, a := range []*armData{b, c} {
		ac, ok := rateCost(p.Cost, a)
		if !ok {
			return warns, nil
		}
		a.cost = &ac
	}
	warnf("cost from the policy's rates (replica time × accelerator and host rates, plus idle reserve); network cost needs bytes and is not priced")
	return warns, nil
}

// unpricedReplicas is the warning for policy rates that cannot price an
// arm: its request logs name no replica, so its replica time is unknown
// (counted as one replica, a 10% canary would cost as much per hour as a
// baseline nine times its size).
func unpricedReplicas(bNone, cNone bool) string {
	return "cost is not priced from the policy's rates: " + unnamedReplicas(bNone, cNone) + ", so each arm's replica time is unknown; give cost records (--cost) or log the replica"
}

// costSummary renders an arm's cost for the report.
func costSummary(a *armData, good, goodTokens float64) (*ArmCost, *Num) {
	if a.cost == nil {
		return nil, nil
	}
	c := a.cost
	tot := c.total()
	if math.IsNaN(c.network) {
		tot = c.accelerator + c.host + c.idle
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
