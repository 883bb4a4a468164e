package analysis

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// perMinute makes one accelerator-cost record per replica per minute over
// [t0, t0+mins) at accelPerHour USD per replica-hour.
func perMinute(arm sources.Arm, t0 float64, mins, replicas int, accelPerHour float64) []sources.CostRecord {
	var out []sources.CostRecord
	for m := 0; m < mins; m++ {
		for r := 0; r < replicas; r++ {
			out = append(out, sources.CostRecord{Start: t0 + float64(m)*60, End: t0 + float64(m+1)*60, Arm: arm,
				Replica: string(rune('a' + r)), Accelerator: accelPerHour / 60})
		}
	}
	return out
}

func costPolicy(t *testing.T) *policies.Policy {
	t.Helper()
	p, err := policies.Parse("cost.yaml", []byte(`name: cost
slo: {ttft: 1s, tpot: 80ms}
normalize: {load: matched}
gates:
  - {metric: slo_attainment, margin: 1pp}
  - {metric: cost_per_good_request, margin: 3%}
`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCostGate(t *testing.T) {
	p := costPolicy(t)
	const t0 = 1.7e9
	base := synth{n: 36000, rate: 30, ttftMed: 0.3, tpotMed: 0.04, replicas: 2, seed: 21}
	same := base
	same.seed = 22
	more := same
	more.rate = 33 // 10% more good requests served by the same fleet
	more.n = 39600
	for _, tc := range []struct {
		name   string
		c      synth
		cAccel float64
		want   Verdict
	}{
		{"8% higher accelerator cost fails a 3% cost gate", same, 2.0 * 1.08, Fail},
		{"equal cost passes", same, 2.0, Pass},
		// under load: matched the 10% more traffic the router sent the
		// canary is not credited to it (as for goodput): at the baseline's
		// offered load its cost per good request is 5% higher
		{"10% more traffic at 5% more cost fails at matched load", more, 2.0 * 1.05, Fail},
		{"10% more traffic at equal cost passes at matched load", more, 2.0, Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := append(perMinute(sources.Baseline, t0, 21, 2, 2.0), perMinute(sources.Canary, t0, 21, 2, tc.cAccel)...)
			r, err := Judge(base.dataset(sources.Baseline), tc.c.dataset(sources.Canary), Config{Policy: p, Cost: recs})
			if err != nil {
				t.Fatal(err)
			}
			m := metric(t, r, "cost_per_good_request")
			if m.Verdict != tc.want {
				t.Errorf("cost gate %s, want %s: %s", m.Verdict, tc.want, m.Reason)
			}
			if r.Arms.Canary.Cost == nil || r.Arms.Canary.CostPerGoodRequest == nil || r.Arms.Canary.Cost.Source != "records" {
				t.Fatalf("no canary cost breakdown: %+v", r.Arms.Canary.Cost)
			}
		})
	}
}

func TestCostUnknownIsInconclusive(t *testing.T) {
	p := costPolicy(t)
	b := synth{n: 20000, rate: 30, ttftMed: 0.3, tpotMed: 0.04, seed: 23}
	r := judge(t, p, b, b)
	m := metric(t, r, "cost_per_good_request")
	if m.Verdict != Inconclusive || !strings.Contains(m.Reason, "cost is unknown") {
		t.Errorf("cost gate without cost: %s %q", m.Verdict, m.Reason)
	}
	if r.Verdict == Pass {
		t.Error("a declared cost gate without cost data passed the comparison")
	}
}

// TestProration places records that straddle the warm-up cut and the end
// of the window: only the analysed part is charged.
func TestProration(t *testing.T) {
	p := costPolicy(t)
	p.Window.Warmup = "60s"
	const t0 = 1.7e9
	b := synth{n: 6000, rate: 10, ttftMed: 0.3, tpotMed: 0.04, seed: 24}
	bd, cd := b.dataset(sources.Baseline), b.dataset(sources.Canary)
	first, last := bd.Requests[0].Time, bd.Requests[len(bd.Requests)-1].Time
	// one record from 30 s before the first arrival to 30 s after the last:
	// $1 per second of record
	span := (last + 30) - (first - 30)
	recs := []sources.CostRecord{
		{Start: first - 30, End: last + 30, Arm: sources.Baseline, Accelerator: span},
		{Start: t0, End: t0 + 1e6, Arm: sources.Canary, Host: 1e6},
	}
	r, err := Judge(bd, cd, Config{Policy: p, Cost: recs})
	if err != nil {
		t.Fatal(err)
	}
	// analysed window: from the 10 s grid boundary 60 s after the first
	// arrival's bucket to the last arrival → charged that many dollars
	want := last - (math.Floor(first/10)*10 + 60)
	got := float64(r.Arms.Baseline.Cost.AcceleratorUSD)
	if math.Abs(got-want) > 1e-6*want {
		t.Errorf("baseline accelerator cost %v, want %v (the window's share only)", got, want)
	}
	if c := r.Arms.Canary.Cost; c == nil || float64(c.AcceleratorUSD) != 0 {
		t.Errorf("canary breakdown %+v", c)
	}
}

func TestCostErrors(t *testing.T) {
	p := costPolicy(t)
	b := synth{n: 2000, rate: 10, ttftMed: 0.3, tpotMed: 0.04, seed: 25}
	onlyBase := perMinute(sources.Baseline, 1.7e9, 5, 1, 2)
	if _, err := Judge(b.dataset(sources.Baseline), b.dataset(sources.Canary), Config{Policy: p, Cost: onlyBase}); err == nil ||
		!strings.Contains(err.Error(), `canary: the cost file has no records with arm "canary"`) || !strings.Contains(err.Error(), "or leave --cost out") {
		t.Errorf("records for one arm only: %v", err)
	}
	noClock := b.dataset(sources.Canary)
	noClock.Clock = sources.ClockNone
	all := append(onlyBase, perMinute(sources.Canary, 1.7e9, 5, 1, 2)...)
	if _, err := Judge(b.dataset(sources.Baseline), noClock, Config{Policy: p, Cost: all}); err == nil || !strings.Contains(err.Error(), "wall-clock") {
		t.Errorf("cost without wall clock: %v", err)
	}
}

// TestCostPerReplicaCoverage (hardening item 2): a canary 8% dearer fails
// the cost gate; with one replica's cost rows removed, or every other row,
// the same canary looked cheaper and passed. A replica with requests but no
// (or too few) cost records is now an error for a cost gate, and a warning
// naming the replica without one.
func TestCostPerReplicaCoverage(t *testing.T) {
	const t0 = 1.7e9
	base := synth{n: 36000, rate: 30, ttftMed: 0.3, tpotMed: 0.04, replicas: 2, seed: 21}
	can := base
	can.seed = 22
	full := append(perMinute(sources.Baseline, t0, 21, 2, 2.0), perMinute(sources.Canary, t0, 21, 2, 2.0*1.08)...)
	var noB, everyOther []sources.CostRecord
	for _, r := range full {
		if r.Arm == sources.Canary && r.Replica == "b" {
			continue
		}
		noB = append(noB, r)
	}
	for _, r := range full {
		// every other minute's rows (both replicas)
		if r.Arm == sources.Canary && int(r.Start-t0)/60%2 == 1 {
			continue
		}
		everyOther = append(everyOther, r)
	}
	r, err := Judge(base.dataset(sources.Baseline), can.dataset(sources.Canary), Config{Policy: costPolicy(t), Cost: full})
	if err != nil || metric(t, r, "cost_per_good_request").Verdict != Fail {
		t.Fatalf("complete records: %v; want the cost gate to fail", err)
	}
	for _, tc := range []struct {
		name string
		recs []sources.CostRecord
		want string
	}{
		{"one replica's rows removed", noB, `replica "b" served`},
		{"every other minute's rows removed", everyOther, `cost records cover 5`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Judge(base.dataset(sources.Baseline), can.dataset(sources.Canary), Config{Policy: costPolicy(t), Cost: tc.recs})
			var de *DataError
			if !errors.As(err, &de) || de.Arm != sources.Canary || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a canary DataError containing %q", err, tc.want)
			}
			// without a cost gate the report is made, with the warning
			r, err := Judge(base.dataset(sources.Baseline), can.dataset(sources.Canary), Config{Policy: chat(t), Cost: tc.recs})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(r.Warnings, "\n"), tc.want) {
				t.Errorf("warnings %q lack %q", r.Warnings, tc.want)
			}
		})
	}
}
