package analysis

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestReplicaRestartWarmupAggregate: the canary replica of
// TestReplicaRestartWarmup fails at 5 min and comes back cold a minute
// later. From the arms' aggregates ReplicaWarmupCuts finds that replica's
// own warm-up, at the slice and of the length the request path cuts, and
// nothing in the baseline; counted again without it, the canary loses
// exactly those requests and the judge reports the cut as the request
// path does. Without the second count the aggregate keeps the slow
// restart in the window.
func TestReplicaRestartWarmupAggregate(t *testing.T) {
	b, c := restartArms(t)
	cfg := Config{Policy: chat(t), Resamples: 300}

	ab, ac := aggregated(t, b, cfg.Policy), aggregated(t, c, cfg.Policy)
	cuts, err := ReplicaWarmupCuts(ab, ac, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(cuts[0].Cuts) != 0 {
		t.Errorf("baseline replicas cut, none restarted: %+v", cuts[0].Cuts)
	}
	if len(cuts[1].Cuts) != 1 || cuts[1].Cuts[0].Replica != "canary-1" || cuts[1].Cuts[0].UntilSlice <= cuts[1].Cuts[0].FromSlice {
		t.Fatalf("canary cuts %+v, want one of canary-1", cuts[1].Cuts)
	}
	cut := cuts[1].Cuts[0]

	// the request path's cut of the same replica: the same entry and
	// length, within the one bucket by which the grids differ (the
	// request path's starts at the arm's first arrival, the aggregate's
	// at a multiple of the bucket width)
	exact, err := Judge(b, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	entered := regexp.MustCompile(`replica "canary-1" entered at ([0-9.]+)s: cut its first ([0-9.]+)s`)
	want := entered.FindStringSubmatch(step(exact, "warmup").Detail)
	if want == nil {
		t.Fatalf("the request path does not cut the restart: %s", step(exact, "warmup").Detail)
	}
	got := entered.FindStringSubmatch(cut.Detail)
	if got == nil {
		t.Fatalf("aggregate cut %q", cut.Detail)
	}
	for k, what := range []string{"", "entry", "length"} {
		if k == 0 {
			continue
		}
		g, _ := strconv.ParseFloat(got[k], 64)
		w, _ := strconv.ParseFloat(want[k], 64)
		if math.Abs(g-w) > 10 {
			t.Errorf("%s: aggregate %q, request path %q", what, got[0], want[0])
		}
	}

	// the requests left out are exactly canary-1's in the cut slices
	step := cfg.Policy.Window.Bucket.Seconds()
	var out float64
	for _, r := range c.Requests {
		s := int64(math.Floor(r.Time / step))
		if r.Replica == "canary-1" && s >= cut.FromSlice && s < cut.UntilSlice && r.Status == sources.StatusOK {
			out++
		}
	}
	if out == 0 {
		t.Fatal("the cut holds no completed request")
	}
	x := NewAggregator(cfg.Policy)
	x.Exclude(cuts[1])
	for i := range c.Requests {
		x.Add(&c.Requests[i])
	}
	agg, err := x.Aggregate(sources.Canary)
	if err != nil {
		t.Fatal(err)
	}
	completed := func(a *sources.Aggregate) (n float64) {
		for _, bk := range a.Buckets {
			n += bk.Completed
		}
		return n
	}
	if got, all := completed(agg), completed(ac.Agg); all-got != out {
		t.Errorf("the second count left out %g completed requests, want %g", all-got, out)
	}
	if len(agg.ReplicaWarmups) != 1 || agg.ReplicaWarmups[0] != cut.Detail {
		t.Errorf("ReplicaWarmups %q, want the cut's detail", agg.ReplicaWarmups)
	}

	ab2, ac2, err := StreamedArms(b, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Judge(ab2, ac2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := stepsNamed(r, "warmup"); !strings.Contains(d, cut.Detail) {
		t.Errorf("the judge does not report the replica cut: %s", d)
	}
	plain, err := Judge(ab, ac, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := stepsNamed(plain, "warmup"); strings.Contains(d, "canary-1") {
		t.Errorf("an aggregate counted once reports a replica cut: %s", d)
	}
}

// TestReplicaMedianIsLowerMedian: a replica's per-slice TTFT median on the
// aggregate is the upper edge of the (coarse) bin holding the request
// path's lower median, for odd and even counts.
func TestReplicaMedianIsLowerMedian(t *testing.T) {
	for _, tc := range []struct {
		ttfts []float64
		want  float64 // the lower median
	}{
		{[]float64{0.3}, 0.3},
		{[]float64{0.3, 0.9}, 0.3},
		{[]float64{0.9, 0.1, 0.5}, 0.5},
		{[]float64{2, 0.4, 0.6, 1.5}, 0.6},
	} {
		a := NewAggregator(chat(t))
		for i, v := range tc.ttfts {
			for _, rep := range []string{"r0", "r1"} {
				a.Add(&sources.Request{Time: 1000 + float64(i)*0.01, Status: sources.StatusOK, TTFT: v, TPOT: 0.01, E2E: v + 1,
					PromptTokens: 100, OutputTokens: 10, CachedTokens: -1, Replica: rep, Attempt: 1})
			}
		}
		agg, err := a.Aggregate(sources.Canary)
		if err != nil {
			t.Fatal(err)
		}
		got := agg.Replicas[0].TTFTMedian[0]
		if !(got >= tc.want && got <= tc.want*math.Exp2(4.0/256)) {
			t.Errorf("%v: median %g, want the bin above %g", tc.ttfts, got, tc.want)
		}
	}
}

// TestWarmupKeptOnRecount: an aggregate counted again without a replica's
// warm-up keeps the arm's own warm-up as first decided (the request path
// decides it before the replicas'), whatever the recounted slices would
// say: the judge cuts where WarmupKept says and reports its detail, and
// the recount of the restart scenario reports the first count's steps
// with the replica's cut added.
func TestWarmupKeptOnRecount(t *testing.T) {
	b, c := restartArms(t)
	cfg := Config{Policy: chat(t), Resamples: 300}
	ab, ac := aggregated(t, b, cfg.Policy), aggregated(t, c, cfg.Policy)
	first := ac.Agg.Buckets[0].Start
	ac.Agg.WarmupKept = &sources.AggWarmup{From: first + 120, Detail: "canary: decided before", Applied: true, DriftAt: -1}
	r, err := Judge(ab, ac, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(r.Arms.Canary.WarmupCutSeconds); got != 120 {
		t.Errorf("canary cut %gs, want the kept 120 s", got)
	}
	if d := stepsNamed(r, "warmup"); !strings.Contains(d, "canary: decided before") {
		t.Errorf("the kept decision is not reported: %s", d)
	}

	ab, ac = aggregated(t, b, cfg.Policy), aggregated(t, c, cfg.Policy)
	plain, err := Judge(ab, ac, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cuts, err := ReplicaWarmupCuts(ab, ac, cfg)
	if err != nil || len(cuts[1].Cuts) != 1 {
		t.Fatalf("cuts %+v, %v", cuts, err)
	}
	rb, rc, err := StreamedArms(b, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Agg.WarmupKept == nil || rb.Agg.WarmupKept != nil {
		t.Fatalf("WarmupKept: baseline %+v, canary %+v; want the canary's only", rb.Agg.WarmupKept, rc.Agg.WarmupKept)
	}
	re, err := Judge(rb, rc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Replace(stepsNamed(re, "warmup"), "; "+cuts[1].Cuts[0].Detail, "", 1), stepsNamed(plain, "warmup"); got != want {
		t.Errorf("recount's warm-up steps, the replica's cut taken out:\n%s\nfirst count's:\n%s", got, want)
	}
	if re.Arms.Canary.WarmupCutSeconds != plain.Arms.Canary.WarmupCutSeconds || re.Arms.Baseline.WarmupCutSeconds != plain.Arms.Baseline.WarmupCutSeconds {
		t.Errorf("arm cuts moved on the recount: %v/%v, first %v/%v", re.Arms.Baseline.WarmupCutSeconds, re.Arms.Canary.WarmupCutSeconds,
			plain.Arms.Baseline.WarmupCutSeconds, plain.Arms.Canary.WarmupCutSeconds)
	}
}
