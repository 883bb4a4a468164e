package analysis

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/loglin"
	"github.com/goodput-dev/goodput/sources/sim"
)

func streamPolicy(t *testing.T, yaml string) *policies.Policy {
	t.Helper()
	p, err := policies.Parse("p.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rec builds a completed request at unix time ts.
func rec(ts, ttft, tpot float64, prompt, output int64) sources.Request {
	r := sources.NewRequest()
	r.Time, r.TTFT, r.TPOT, r.Status, r.Attempt = ts, ttft, tpot, sources.StatusOK, 1
	r.E2E = ttft + tpot*float64(max(output-1, 0))
	r.PromptTokens, r.OutputTokens = prompt, output
	return r
}

func with(r sources.Request, f func(*sources.Request)) sources.Request { f(&r); return r }

const streamGates = "gates:\n  - {metric: slo_attainment, margin: 1pp}\n"

func TestAggregatorCounts(t *testing.T) {
	classes := streamPolicy(t, "name: x\nslo: {ttft: 1s, tpot: 80ms}\nclasses:\n  - name: long\n    when: {prompt_tokens: {min: 8192}}\n    slo: {ttft: 4s, min_output_tokens: 0}\n"+streamGates)
	plain := streamPolicy(t, "name: x\nslo: {ttft: 1s, tpot: 80ms, min_output_tokens: 3}\n"+streamGates)
	const t0 = 1_700_000_003.5 // slice 1_700_000_000
	type want struct {
		class                                 string
		completed, failed, canceled, rejected float64
		good, retried, short, prompt, output  float64
		start                                 float64
	}
	for _, tc := range []struct {
		name string
		p    *policies.Policy
		recs []sources.Request
		want []want
	}{
		{"per-class SLO", classes, []sources.Request{
			rec(t0, 0.5, 0.05, 100, 10), // good under default
			rec(t0, 2, 0.05, 100, 10),   // ttft over default's 1s
			rec(t0, 2, 0.05, 9000, 10),  // long: good within 4s
			rec(t0, 5, 0.05, 9000, 10),  // long: over 4s
			rec(t0, 0.5, 0.05, 9000, 0), // long: min_output_tokens 0 → good, not short
			rec(t0, 0.5, 0.05, 100, 1),  // default floor 2: short, not good
		}, []want{
			{class: "prompt 8k-16k × long", completed: 3, good: 2, prompt: 27000, output: 20, start: 1_700_000_000},
			{class: "prompt <512 × default", completed: 3, good: 1, short: 1, prompt: 300, output: 21, start: 1_700_000_000},
		}},
		{"labels, statuses, retries, slices", plain, []sources.Request{
			with(rec(t0, 0.5, 0.05, 100, 10), func(r *sources.Request) { r.Class = "chat" }),
			with(rec(t0, 0.5, 0.05, 100, 2), func(r *sources.Request) { r.Class = "chat"; r.Attempt = 2 }), // short under floor 3
			with(rec(t0+7, 0.5, 0.05, 100, 10), func(r *sources.Request) { r.Class = "chat"; r.Status = sources.StatusError }),
			with(rec(t0+7, 0.5, 0.05, 100, 10), func(r *sources.Request) { r.Class = "chat"; r.Status = sources.StatusTimeout }),
			with(rec(t0+8, 0.5, 0.05, 100, 10), func(r *sources.Request) { r.Class = "chat"; r.Status = sources.StatusCanceled }),
			with(rec(t0+8, 0.5, 0.05, 100, 10), func(r *sources.Request) {
				r.Class, r.Status, r.CanceledBy = "chat", sources.StatusCanceled, sources.CanceledByClient
			}),
			with(rec(t0+8, 0.5, 0.05, 100, 10), func(r *sources.Request) { // the server's cancel is a failure
				r.Class, r.Status, r.CanceledBy = "chat", sources.StatusCanceled, sources.CanceledByServer
			}),
			with(rec(t0+9, 0.5, 0.05, 100, 10), func(r *sources.Request) { r.Class = "chat"; r.Status = sources.StatusRejected; r.Attempt = 3 }),
			with(rec(t0+1, 0.5, math.NaN(), 100, 10), func(r *sources.Request) { r.Class = "batch" }), // tpot unknown: not good
			rec(t0+25, 0.9, 0.01, 50, 200), // slice +20, no label
		}, []want{
			{class: "batch", completed: 1, prompt: 100, output: 10, start: 1_700_000_000},
			{class: "chat", completed: 2, good: 1, retried: 1, short: 1, prompt: 200, output: 12, start: 1_700_000_000},
			{class: "chat", failed: 3, canceled: 2, rejected: 1, retried: 1, prompt: 500, start: 1_700_000_010},
			{class: "prompt <512", completed: 1, good: 1, prompt: 50, output: 200, start: 1_700_000_020},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ag := NewAggregator(tc.p)
			for i := range tc.recs {
				ag.Add(&tc.recs[i])
			}
			agg, err := ag.Aggregate(sources.Baseline)
			if err != nil {
				t.Fatal(err)
			}
			if !agg.Exact || agg.Step != 10 {
				t.Fatalf("Exact %v Step %g", agg.Exact, agg.Step)
			}
			if len(agg.Buckets) != len(tc.want) {
				for _, b := range agg.Buckets {
					t.Logf("%g %q", b.Start, b.Class)
				}
				t.Fatalf("%d buckets, want %d", len(agg.Buckets), len(tc.want))
			}
			for i, w := range tc.want {
				b := agg.Buckets[i]
				got := want{b.Class, b.Completed, b.Failed, b.Canceled, b.Rejected, b.Good, b.Retried, b.ShortOutputs, b.PromptTokens, b.OutputTokens, b.Start}
				if got != w {
					t.Errorf("bucket %d:\n got %+v\nwant %+v", i, got, w)
				}
				// the last slice ends at the last arrival, as the
				// request path's last bucket does; records all at one
				// instant keep a whole slice, as there
				end := b.Start + 10
				if tc.name == "labels, statuses, retries, slices" && b.Start == 1_700_000_020 {
					end = t0 + 25
				}
				if b.End != end || b.Replicas != 1 || !math.IsNaN(b.PrefixHits) {
					t.Errorf("bucket %d: end %g replicas %g prefix %g", i, b.End, b.Replicas, b.PrefixHits)
				}
				if b.TTFT.Total() != b.Completed {
					t.Errorf("bucket %d: %g TTFTs for %g completions", i, b.TTFT.Total(), b.Completed)
				}
			}
		})
	}
}

// Each latency lands in its loglin bin: the cumulative histogram counts
// it at the bin's upper edge and not at its lower one.
func TestAggregatorBins(t *testing.T) {
	p := streamPolicy(t, "name: x\nslo: {ttft: 1s}\n"+streamGates)
	ag := NewAggregator(p)
	vals := []float64{0.001, 0.25, 0.2501, 1, 1.0001, 3.7}
	for _, v := range vals {
		r := rec(1_700_000_000, v, 0.01, 10, 10)
		ag.Add(&r)
	}
	agg, err := ag.Aggregate(sources.Canary)
	if err != nil {
		t.Fatal(err)
	}
	h := agg.Buckets[0].TTFT
	for _, v := range vals {
		i, _ := loglin.Index(v)
		lo, hi := loglin.Lower(i), loglin.Upper(i)
		if !(lo < v && v <= hi) {
			t.Fatalf("%g not in its bin (%g, %g]", v, lo, hi)
		}
		at := func(e float64) float64 {
			k := slices.Index(h.Edges, e)
			if k < 0 {
				t.Fatalf("edge %g of %g missing from %v", e, v, h.Edges)
			}
			return h.Counts[k]
		}
		below := 0.0
		for _, u := range vals {
			if u <= lo {
				below++
			}
		}
		if at(lo) != below || at(hi) != below+1 {
			t.Errorf("%g: counts %g at %g, %g at %g; want %g, %g", v, at(lo), lo, at(hi), hi, below, below+1)
		}
	}
	// exact powers of two are edges: 0.25 and 1 sit at their bin's top
	if i, _ := loglin.Index(0.25); loglin.Upper(i) != 0.25 {
		t.Errorf("0.25 is not an upper edge")
	}
}

func TestAggregatorRefuses(t *testing.T) {
	p := streamPolicy(t, "name: x\nslo: {ttft: 1s}\n"+streamGates)
	for _, tc := range []struct {
		name string
		recs []sources.Request
		want string
	}{
		{"empty", nil, "no requests"},
		{"untimed", []sources.Request{rec(math.NaN(), 0.1, 0.01, 10, 10)}, "no usable arrival time"},
		{"stray", []sources.Request{rec(0, 0.1, 0.01, 10, 10), rec(1.7e9, 0.1, 0.01, 10, 10)}, "a record far from the rest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ag := NewAggregator(p)
			for i := range tc.recs {
				ag.Add(&tc.recs[i])
			}
			_, err := ag.Aggregate(sources.Canary)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "canary") {
				t.Fatalf("got %v, want %q naming the arm", err, tc.want)
			}
		})
	}
}

// Aggregate hands the bins over: a second call is refused rather than
// answered with empty histograms.
func TestAggregatorOnce(t *testing.T) {
	p := streamPolicy(t, "name: x\nslo: {ttft: 1s}\n"+streamGates)
	ag := NewAggregator(p)
	r := rec(1.7e9, 0.1, 0.01, 10, 10)
	ag.Add(&r)
	agg, err := ag.Aggregate(sources.Baseline)
	if err != nil || agg.Buckets[0].TTFT.Total() != 1 {
		t.Fatalf("first call: %v, %+v", err, agg)
	}
	if _, err := ag.Aggregate(sources.Baseline); err == nil || !strings.Contains(err.Error(), "taken already") {
		t.Fatalf("second call: got %v, want a refusal", err)
	}
}

func TestAggregatorReplicasAndMerge(t *testing.T) {
	p := streamPolicy(t, "name: x\nslo: {ttft: 1s}\n"+streamGates)
	var recs []sources.Request
	// a serves slices 0..5, b joins at slice 3; nothing at all in slice 4
	for s := 0; s < 6; s++ {
		if s == 4 {
			continue
		}
		r := rec(1_700_000_000+float64(10*s)+1, 0.1, 0.01, 10, 10)
		r.Replica, r.CachedTokens = "a", 5
		recs = append(recs, r)
		if s >= 3 {
			r.Replica = "b\x1b"
			recs = append(recs, r)
		}
	}
	one, left, right := NewAggregator(p), NewAggregator(p), NewAggregator(p)
	for i := range recs {
		one.Add(&recs[i])
		if i%2 == 0 {
			left.Add(&recs[i])
		} else {
			right.Add(&recs[i])
		}
	}
	left.Merge(right)
	a1, err := one.Aggregate(sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := left.Aggregate(sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	if len(a1.Buckets) != 6 || a1.Buckets[4].Class != "" || a1.Buckets[4].Completed != 0 {
		t.Fatalf("want 6 slices with an empty 5th: %+v", a1.Buckets)
	}
	var reps []float64
	for _, b := range a1.Buckets {
		reps = append(reps, b.Replicas)
		if b.Completed > 0 && b.PrefixHits != 5*b.Completed {
			t.Errorf("prefix hits %g for %g completions", b.PrefixHits, b.Completed)
		}
	}
	if !slices.Equal(reps, []float64{1, 1, 1, 2, 2, 2}) {
		t.Errorf("replicas per slice %v", reps)
	}
	if len(a1.Replicas) != 2 || a1.Replicas[1].Name != `{replica="b\x1b"}` || !math.IsNaN(a1.Replicas[1].Finished[2]) || a1.Replicas[1].Finished[4] != 0 || a1.Replicas[1].Finished[5] != 1 {
		t.Errorf("tracks %+v", a1.Replicas)
	}
	if !aggEqual(a1, a2) {
		t.Errorf("merged halves differ from one pass")
	}
}

func aggEqual(a, b *sources.Aggregate) bool {
	if len(a.Buckets) != len(b.Buckets) || len(a.Replicas) != len(b.Replicas) {
		return false
	}
	feq := func(x, y []float64) bool {
		return slices.EqualFunc(x, y, func(p, q float64) bool { return p == q || math.IsNaN(p) && math.IsNaN(q) })
	}
	for i := range a.Buckets {
		x, y := a.Buckets[i], b.Buckets[i]
		if x.Class != y.Class || x.Start != y.Start || x.Completed != y.Completed || x.Good != y.Good || x.Replicas != y.Replicas ||
			!feq(x.TTFT.Edges, y.TTFT.Edges) || !feq(x.TTFT.Counts, y.TTFT.Counts) || !feq([]float64{x.PrefixHits}, []float64{y.PrefixHits}) {
			return false
		}
	}
	for i := range a.Replicas {
		if a.Replicas[i].Name != b.Replicas[i].Name || !feq(a.Replicas[i].Finished, b.Replicas[i].Finished) {
			return false
		}
	}
	return true
}

func TestStratumClass(t *testing.T) {
	classes := streamPolicy(t, "name: x\nslo: {ttft: 1s}\nclasses:\n  - name: long\n    when: {prompt_tokens: {min: 8192}}\n    slo: {ttft: 4s}\n"+streamGates)
	plain := streamPolicy(t, "name: x\nslo: {ttft: 1s}\n"+streamGates)
	for _, tc := range []struct {
		p         *policies.Policy
		key, want string
	}{
		{classes, "a × b × long", "long"},
		{classes, "prompt <512 × default", "default"},
		{plain, "chat", "chat"},
		{plain, "prompt unknown", "default"},
		{plain, "prompt >=16k", "default"},
	} {
		if got := StratumClass(tc.p, tc.key); got != tc.want {
			t.Errorf("StratumClass(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

// The aggregate of a simulated run counts what the request path counts:
// per arm and per policy class, offered, completed, failed, canceled,
// rejected, good and retried requests are equal, and the pooled TTFT,
// TPOT and E2E quantiles of the request path lie in the histogram's bin
// for the same rank, one bin (a factor 2^(1/256)) wide.
func TestAggregatorMatchesRequestPath(t *testing.T) {
	sc, err := sim.Builtin("seed-overload")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := loadPolicy(t, "chat")
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		ds := res.Dataset(arm)
		ag := NewAggregator(p)
		for i := range ds.Requests {
			ag.Add(&ds.Requests[i])
		}
		agg, err := ag.Aggregate(arm)
		if err != nil {
			t.Fatal(err)
		}
		// the request path, on the same records, without a warm-up cut
		cls := newClassifier(p)
		type tot struct{ offered, completed, failed, canceled, rejected, good, retried, short float64 }
		want, got := map[string]*tot{}, map[string]*tot{}
		var ttft, tpot, e2e []float64
		unverified := map[string]int64{}
		for i := range ds.Requests {
			r := &ds.Requests[i]
			ci := cls.classOf(r)
			name := cls.names[ci]
			if want[name] == nil {
				want[name] = &tot{}
			}
			w := want[name]
			w.offered++
			switch {
			case r.Status == sources.StatusOK:
				w.completed++
				if r.OutputTokens >= 0 && r.OutputTokens < cls.slos[ci].OutputFloor() {
					w.short++
				}
				for _, x := range []struct {
					v  float64
					to *[]float64
				}{{r.TTFT, &ttft}, {r.TPOT, &tpot}, {r.E2E, &e2e}} {
					if sources.Known(x.v) {
						*x.to = append(*x.to, x.v)
					}
				}
			case r.Status.Failed():
				w.failed++
			case r.Status == sources.StatusCanceled:
				w.canceled++
			case r.Status == sources.StatusRejected:
				w.rejected++
			}
			if r.Attempt > 1 {
				w.retried++
			}
			if isGood(cls.slos[ci], r, unverified) {
				w.good++
			}
		}
		var ht, hp, he sources.Histogram
		for _, b := range agg.Buckets {
			if b.Class == "" {
				continue
			}
			name := StratumClass(p, b.Class)
			if got[name] == nil {
				got[name] = &tot{}
			}
			g := got[name]
			g.offered += b.Completed + b.Failed + b.Canceled + b.Rejected
			g.completed += b.Completed
			g.failed += b.Failed
			g.canceled += b.Canceled
			g.rejected += b.Rejected
			g.good += b.Good
			g.retried += b.Retried
			g.short += b.ShortOutputs
			ht, hp, he = addHist(ht, b.TTFT), addHist(hp, b.TPOT), addHist(he, b.E2E)
		}
		if len(want) < 1 || want["default"] == nil || want["default"].retried == 0 || want["default"].rejected == 0 {
			t.Fatalf("%s: the scenario should have retries and rejections: %+v", arm, want["default"])
		}
		for name, w := range want {
			if got[name] == nil || *got[name] != *w {
				t.Errorf("%s class %s: aggregate %+v, request path %+v", arm, name, got[name], w)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: classes %d, want %d", arm, len(got), len(want))
		}
		width := math.Exp2(1.0 / loglin.PerOctave)
		for _, l := range []struct {
			name string
			xs   []float64
			h    sources.Histogram
		}{{"ttft", ttft, ht}, {"tpot", tpot, hp}, {"e2e", e2e, he}} {
			slices.Sort(l.xs)
			if l.h.Total() != float64(len(l.xs)) {
				t.Errorf("%s %s: %g in histograms, %d values", arm, l.name, l.h.Total(), len(l.xs))
			}
			for _, q := range []float64{0.5, 0.9, 0.99} {
				exact := quantile(l.xs, q)
				lo, hi := histo.QuantileBounds(q, l.h)
				if !(lo < exact && exact <= hi) || hi/lo > width*(1+1e-12) {
					t.Errorf("%s %s p%g: exact %g, bin (%g, %g] (ratio %g, one bin %g)", arm, l.name, 100*q, exact, lo, hi, hi/lo, width)
				}
			}
		}
	}
}

// Replica counts batched per slice give the tracks that counting request
// by request gives, for a few replicas and for many (past the ones looked
// up without the map), in any arrival order: their requests in flight
// too, ending up to 20 slices on.
func TestAggregatorReplicaTracks(t *testing.T) {
	p := streamPolicy(t, "name: x\nslo: {ttft: 1s}\n"+streamGates)
	for _, nrep := range []int{3, 40} {
		rng := rand.New(rand.NewPCG(uint64(nrep), 9))
		ag := NewAggregator(p)
		want := sources.ReplicaSpans{}
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for k := 0; k < 3000; k++ {
			r := rec(1_700_000_000+float64(rng.IntN(600)), 0.1, 0.01, 10, 10)
			if rng.IntN(10) == 0 {
				r.Status = sources.StatusRejected
			}
			r.Replica = fmt.Sprintf("r%d", rng.IntN(nrep))
			// in flight up to 200 s: ends in the arrival's slice, in the
			// next few (kept pending) and further on (counted at once)
			r.E2E = 0.1 + 200*rng.Float64()*rng.Float64()
			ag.Add(&r)
			s := int64(math.Floor(r.Time / 10))
			lo, hi = min(lo, s), max(hi, s)
			if end := flightEnd(&r, s, 10); end != noFlight {
				want.AddFlights(r.Replica, s, end, 1, 1)
			}
			// every request judged; good unless rejected (TTFT 0.1 s
			// against a 1 s SLO)
			fin, good := 1.0, 1.0
			if r.Status == sources.StatusRejected {
				fin, good = 0, 0
			}
			want.Add(r.Replica, s, fin, 1, good)
		}
		agg, err := ag.Aggregate(sources.Baseline)
		if err != nil {
			t.Fatal(err)
		}
		// every completed request has TTFT 0.1 s and TPOT 0.01 s: each
		// slice a replica completed any in has those bins' upper edges as
		// its medians
		ttftBin, _ := loglin.Index(0.1)
		tpotBin, _ := loglin.Index(0.01)
		for k := range agg.Replicas {
			tr := &agg.Replicas[k]
			for b, f := range tr.Finished {
				for _, c := range []struct {
					name string
					med  []float64
					bin  int32
				}{{"TTFT", tr.TTFTMedian, ttftBin}, {"TPOT", tr.TPOTMedian, tpotBin}} {
					if m := c.med[b]; f > 0 && m != loglin.Upper(loglin.Coarse(c.bin)<<2+3) || !(f > 0) && !math.IsNaN(m) {
						t.Fatalf("%s slice %d: %g completed, median %s %g", tr.Name, b, f, c.name, m)
					}
				}
			}
			// no value beyond the p99's bin, which holds them all; every
			// request finished is one known value (none outside its span)
			finished := make([]float64, len(tr.Finished))
			for b, f := range tr.Finished {
				finished[b] = nan0(f)
			}
			for _, c := range []struct {
				name string
				tail sources.ReplicaTail
				bin  int32
			}{{"TTFT", tr.TTFTTail, ttftBin}, {"TPOT", tr.TPOTTail, tpotBin}} {
				if c.tail.Edge != loglin.Upper(loglin.Coarse(c.bin)<<2+3) || c.tail.LogSlope != 0 || fmt.Sprint(c.tail.Known) != fmt.Sprint(finished) || slices.Max(c.tail.Over) != 0 {
					t.Fatalf("%s: %s tail %+v, finished %v", tr.Name, c.name, c.tail, tr.Finished)
				}
			}
			tr.TTFTMedian, tr.TPOTMedian, tr.TTFTTail, tr.TPOTTail = nil, nil, sources.ReplicaTail{}, sources.ReplicaTail{}
		}
		_, tracks := want.Tracks(lo, hi)
		if len(tracks) != nrep || !reflect.DeepEqual(fmt.Sprint(agg.Replicas), fmt.Sprint(tracks)) {
			t.Fatalf("%d replicas: tracks differ:\n got %v\nwant %v", nrep, agg.Replicas, tracks)
		}
	}
}
