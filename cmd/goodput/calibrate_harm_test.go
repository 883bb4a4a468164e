package main

import (
	"context"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/sim"
)

// trueAttainmentHarm is the attainment harm a latency-regression replicate
// carries: the canary judged against its own twin without the regression,
// simulated with the same seed and the same drawn parameters. The
// simulator applies class_latency to the client-visible TTFT and TPOT
// only, after the engine has run, so the twin's requests are the canary's
// own (same arrivals, same batches, same noise path) and the difference is
// the regression's alone, in attainment units (a fraction; negative is
// worse). The replicate's seed is calibrate's (replicateSeed). judged is
// the same canary's attainment difference against the run's own baseline,
// as calibrate judges it.
func trueAttainmentHarm(t *testing.T, sc sim.Scenario, seed uint64, pol *policies.Policy) (harm, judged float64) {
	t.Helper()
	d, _, err := sc.Draw(seed)
	if err != nil {
		t.Fatal(err)
	}
	run := func(s sim.Scenario) *sim.Result {
		res, err := sim.Run(context.Background(), s, seed, 0)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(d)
	reg := res.Canary
	twin := d
	twin.Canary.ClassLatency = nil
	base := run(twin).Canary
	if len(base) != len(reg) {
		t.Fatalf("seed %d: the twin has %d records, the canary %d: class_latency moved the engine", seed, len(base), len(reg))
	}
	for i := range base {
		if base[i].Time != reg[i].Time || base[i].Status != reg[i].Status || base[i].OutputTokens != reg[i].OutputTokens {
			t.Fatalf("seed %d: record %d differs beyond its latencies: %+v vs %+v", seed, i, base[i], reg[i])
		}
	}
	ds := func(arm sources.Arm, reqs []sources.Request) *sources.Dataset {
		return &sources.Dataset{Arm: arm, Requests: reqs, Clock: sources.ClockEpoch, Location: "client", Duration: d.Duration.Seconds()}
	}
	attainment := func(b, c []sources.Request) float64 {
		rep, err := analysis.Judge(ds(sources.Baseline, b), ds(sources.Canary, c), analysis.Config{Policy: pol, Seed: seed, Resamples: 200})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rep.Metrics {
			if m.Name == "slo_attainment" {
				return float64(m.Delta)
			}
		}
		t.Fatal("no slo_attainment gate")
		return math.NaN()
	}
	return attainment(base, reg), attainment(res.Baseline, reg)
}

// TestRegressionTrueHarm measures the true attainment harm of the latency
// regression scenarios over calibrate's replicate seeds (--seed 1):
// GOODPUT_HARM_REPS replicates (default 2) of each scenario in
// GOODPUT_HARM_SCENARIOS (default regress-latency-10 and
// regress-latency-10-edge), logging mean, SD and range in pp. The mean of
// each default scenario must lie in its band (wide enough for 2
// replicates): regress-latency-10 draws its 8–12% from a range (2.20 pp
// over 30 replicates), regress-latency-10-edge is the verdicts issue's
// statement (exactly 10%, about 2.9 pp against the 1 pp margin).
func TestRegressionTrueHarm(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 30-minute runs")
	}
	reps := 2
	if v, err := strconv.Atoi(os.Getenv("GOODPUT_HARM_REPS")); err == nil && v > 0 {
		reps = v
	}
	bands := map[string][2]float64{"regress-latency-10": {1.4, 3.0}, "regress-latency-10-edge": {2.3, 3.5}}
	names := []string{"regress-latency-10", "regress-latency-10-edge"}
	if v := os.Getenv("GOODPUT_HARM_SCENARIOS"); v != "" {
		names = strings.Split(v, ",")
	}
	pol, err := policies.Load("chat")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		sc, err := loadScenario(name)
		if err != nil {
			t.Fatal(err)
		}
		harm, judged := make([]float64, reps), make([]float64, reps)
		for i := range harm {
			h, j := trueAttainmentHarm(t, sc, replicateSeed(1, name, i), pol)
			harm[i], judged[i] = -100*h, -100*j
		}
		jm, jsd := stat.MeanStdDev(judged, nil)
		mean, sd := stat.MeanStdDev(harm, nil)
		lo, hi := harm[0], harm[0]
		for _, h := range harm {
			lo, hi = math.Min(lo, h), math.Max(hi, h)
		}
		t.Logf("%s: true attainment harm %.2f pp ± %.2f (MC SE), SD %.2f pp across %d replicates, range %.2f–%.2f pp",
			name, mean, sd/math.Sqrt(float64(reps)), sd, reps, lo, hi)
		t.Logf("%s: judged against the baseline %.2f pp ± %.2f (MC SE), SD %.2f pp", name, jm, jsd/math.Sqrt(float64(reps)), jsd)
		if b, ok := bands[name]; ok && (mean < b[0] || mean > b[1]) {
			t.Errorf("%s: mean true harm %.2f pp, want %.1f–%.1f pp", name, mean, b[0], b[1])
		}
	}
}
