package analysis

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// longRun is n requests over hours hours from t0, in random order, with
// labels, statuses, cache tokens and three replicas, one joining late.
func longRun(seed uint64, n int, hours float64) []sources.Request {
	rng := rand.New(rand.NewPCG(seed, 7))
	const t0 = 1_700_000_000
	span := hours * 3600
	recs := make([]sources.Request, n)
	for i := range recs {
		ts := t0 + rng.Float64()*span
		r := rec(ts, 0.05+rng.ExpFloat64()*0.2, 0.02+rng.Float64()*0.05, int64(20+rng.IntN(9000)), int64(1+rng.IntN(600)))
		r.Class = []string{"chat", "code", ""}[rng.IntN(3)]
		r.CachedTokens = int64(rng.IntN(int(r.PromptTokens)))
		r.Replica = fmt.Sprintf("r%d", rng.IntN(2))
		if ts > t0+span/3 && rng.IntN(3) == 0 {
			r.Replica = "late"
		}
		switch rng.IntN(40) {
		case 0:
			r.Status = sources.StatusError
		case 1:
			r.Status = sources.StatusRejected
		case 2:
			r.Attempt = 2
		}
		recs[i] = r
	}
	return recs
}

// aggString prints an aggregate whole (NaNs print alike, unlike
// reflect.DeepEqual's comparison), WarmupKept by value.
func aggString(a *sources.Aggregate) string {
	x := *a
	kept, users := x.WarmupKept, x.Users
	x.WarmupKept, x.Users = nil, nil
	out := fmt.Sprintf("%+v", x)
	if kept != nil {
		out += fmt.Sprintf(" kept %+v", *kept)
	}
	if users != nil {
		out += fmt.Sprintf(" users %+v", *users)
	}
	return out
}

// An arm spanning more than sources.MaxStreamSlices slices is counted on slices
// twice as wide, as often as needed, and the aggregate is the one counted
// on that grid from the start: in one pass, in two merged halves (one
// widened, one not), and with replica cuts found on the wider grid.
func TestAggregatorWidens(t *testing.T) {
	pol := func(bucket string) string {
		return "name: x\nslo: {ttft: 1s, tpot: 80ms}\nnormalize: {cache: auto}\nwindow: {warmup: auto, bucket: " + bucket + "}\n" +
			"classes:\n  - name: long\n    when: {prompt_tokens: {min: 8192}}\n    slo: {ttft: 4s}\n" + streamGates
	}
	p10, p40 := streamPolicy(t, pol("10s")), streamPolicy(t, pol("40s"))
	recs := longRun(1, 20_000, 3) // 1,080 slices of 10 s: widened twice
	one, early, late, direct := NewAggregator(p10), NewAggregator(p10), NewAggregator(p10), NewAggregator(p40)
	for i := range recs {
		one.Add(&recs[i])
		direct.Add(&recs[i])
		// the first 40 minutes in one part (not widened), the rest in the other
		if recs[i].Time < 1_700_000_000+2400 {
			early.Add(&recs[i])
		} else {
			late.Add(&recs[i])
		}
	}
	if one.Step() != 40 || early.Step() != 10 || late.Step() != 40 || direct.Step() != 40 {
		t.Fatalf("steps %g, %g, %g, %g; want 40, 10, 40, 40", one.Step(), early.Step(), late.Step(), direct.Step())
	}
	early.Merge(late)
	want, err := direct.Aggregate(sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	for name, ag := range map[string]*Aggregator{"one pass": one, "merged": early} {
		got, err := ag.Aggregate(sources.Baseline)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Buckets) == 0 || got.Step != 40 || len(got.Replicas) != 3 {
			t.Fatalf("%s: %d buckets of %gs, %d replica tracks", name, len(got.Buckets), got.Step, len(got.Replicas))
		}
		if aggString(got) != aggString(want) {
			t.Errorf("%s: widened aggregate differs from the one counted on 40 s slices", name)
		}
	}

	// a plan found on 40 s slices: counted on them from the start
	plan := ReplicaWarmupPlan{Step: 40, Cuts: []ReplicaCut{{Replica: "late", FromSlice: 1_700_000_000/40 + 90, UntilSlice: 1_700_000_000/40 + 93, Detail: "late: cut"}}}
	cut, cutDirect := NewAggregator(p10), NewAggregator(p40)
	cut.Exclude(plan)
	cutDirect.Exclude(plan)
	for i := range recs {
		cut.Add(&recs[i])
		cutDirect.Add(&recs[i])
	}
	a, err := cut.Aggregate(sources.Canary)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cutDirect.Aggregate(sources.Canary)
	if err != nil {
		t.Fatal(err)
	}
	if aggString(a) != aggString(b) || aggString(a) == aggString(want) {
		t.Errorf("the cut arm on 10 s policy slices differs from the one on 40 s, or nothing was cut")
	}
}

// Two arms of different lengths are judged on one grid, and the report
// says the buckets are wider than the policy's.
func TestStreamedArmsWidenAlike(t *testing.T) {
	p := streamPolicy(t, "name: x\nslo: {ttft: 1s, tpot: 80ms}\ngates:\n  - {metric: slo_attainment, margin: 1pp}\n")
	b := &sources.Dataset{Arm: sources.Baseline, Clock: sources.ClockEpoch, Requests: longRun(2, 20_000, 3)}
	c := &sources.Dataset{Arm: sources.Canary, Clock: sources.ClockEpoch, Requests: longRun(3, 10_000, 1.5)}
	ab, ac, err := StreamedArms(b, c, Config{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	if ab.Agg.Step != 40 || ac.Agg.Step != 40 {
		t.Fatalf("steps %g and %g, want both 40", ab.Agg.Step, ac.Agg.Step)
	}
	rep, err := Judge(ab, ac, Config{Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range rep.Warnings {
		if strings.Contains(w, "buckets of 40s, not the policy's window.bucket 10s") && strings.Contains(w, "the baseline's arrivals span 3.0 h") {
			found = true
		}
	}
	if !found {
		t.Errorf("no warning of the wider buckets in %q", rep.Warnings)
	}
}
