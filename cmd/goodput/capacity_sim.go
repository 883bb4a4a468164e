package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/sim"
)

// simSweep runs the simulator's scenario once per rate (requests/s offered
// to each arm) and returns both arms' points: the fleet simulator as a
// rate-sweep source. Each run uses seed+index, so the points are
// independent and the sweep is reproducible.
func simSweep(ctx context.Context, scenario string, rates []float64, window time.Duration, seed uint64, progress io.Writer) (base, can []sources.RatePoint, inputs []sources.Input, err error) {
	sc, err := loadScenario(scenario)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(sc.Traffic.Schedule) > 0 || len(sc.Traffic.Bursts) > 0 || sc.Traffic.Drift.Amplitude != 0 {
		return nil, nil, nil, fmt.Errorf("scenario %s varies its rate over time (schedule, bursts or drift): a sweep point needs a constant offered rate", sc.Name)
	}
	for i, r := range rates {
		s := sc
		s.Traffic.CanaryShare = 0.5
		s.Traffic.Rate = 2 * r // the scenario's rate is the total over both arms
		res, err := sim.Run(ctx, s, seed+uint64(i), window)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
			ds := res.Dataset(arm)
			in := ds.Inputs[0]
			in.Path = fmt.Sprintf("sim:%s?rate=%g&seed=%d&window=%s", sc.Name, r, seed+uint64(i), res.Scenario.Duration)
			p := sources.RatePoint{Path: in.Path, Format: "sim", SHA256: in.SHA256, RequestedRate: r,
				AchievedRate: float64(len(ds.Requests)) / res.Scenario.Duration.Seconds(), Duration: res.Scenario.Duration.Seconds(),
				Requests: ds.Requests, Replicas: armReplicas(s, arm)}
			for _, q := range ds.Requests {
				if q.Status == sources.StatusOK {
					p.Completed++
				} else {
					p.Failed++
				}
			}
			p.Offered = int64(len(ds.Requests))
			in.Note = "simulated by goodput's fleet simulator, one sweep point"
			inputs = append(inputs, in)
			if arm == sources.Baseline {
				base = append(base, p)
			} else {
				can = append(can, p)
			}
		}
	}
	fmt.Fprintf(progress, "simulated %s at %d rates, %s each\n", sc.Name, len(rates), window)
	return base, can, inputs, nil
}

func armReplicas(s sim.Scenario, arm sources.Arm) int {
	if arm == sources.Canary {
		return s.Canary.Replicas
	}
	return s.Baseline.Replicas
}

// parseRates parses "2,4,8" or a range "2:24:2" (from:to:step, inclusive).
func parseRates(s string) ([]float64, error) {
	bad := fmt.Errorf("--rates %q: want a list such as 2,4,8 or a range from:to:step such as 2:24:2 (requests/s per arm, > 0)", s)
	if parts := strings.Split(s, ":"); len(parts) == 3 {
		var v [3]float64
		for i, p := range parts {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || !(f > 0) || math.IsInf(f, 0) {
				return nil, bad
			}
			v[i] = f
		}
		if v[1] < v[0] || (v[1]-v[0])/v[2] > 200 {
			return nil, bad
		}
		var out []float64
		for k := 0; ; k++ {
			r := v[0] + float64(k)*v[2]
			if r > v[1]+1e-9 {
				break
			}
			out = append(out, math.Round(r*1e6)/1e6)
		}
		return out, nil
	}
	var out []float64
	for _, p := range strings.Split(s, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(f > 0) || math.IsInf(f, 0) {
			return nil, bad
		}
		out = append(out, f)
	}
	if len(out) > 200 {
		return nil, bad
	}
	return out, nil
}
