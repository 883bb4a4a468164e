package analysis

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/sim"
)

// TestArmsOfDifferentSizes: a canary of one replica beside a baseline of
// four at the same load per replica, near capacity (batching model, 6
// requests per second over the baseline's four). Behind a
// least-outstanding router the baseline's replicas pool their queues and
// the lone canary queues more on the same build: before the check it
// failed 23 of 40 identical runs. Now no such run fails, on either
// judging path, and the reason says why; a canary of four beside a lone
// baseline is not passed; behind a router that picks replicas at random
// nothing is held (the arms' queues compare) and a regression still
// fails; an error burst of the lone canary still fails behind the pooling
// router, errors being no queue's doing.
func TestArmsOfDifferentSizes(t *testing.T) {
	p := chat(t)
	cfg := Config{Policy: p, Resamples: 200, Seed: 1}
	least := func(f *batchFleet) { f.rate, f.router = 6, "least" }
	random := func(f *batchFleet) { f.rate = 6 }
	lone := func(speed float64) func(*batchFleet) {
		return func(f *batchFleet) { f.rate, f.replicas, f.speed = 1.5, 1, speed }
	}
	burst := func(f *batchFleet) {
		lone(1)(f)
		f.burstAt, f.burstSecs, f.burstErr = 900, 120, 0.5
	}
	arms := func(b, c func(*batchFleet), seed uint64) (*Report, *Report) {
		return batchJudgedBothWays(t, cfg, b, c, seed)
	}
	warned := func(r *Report, want string) bool {
		for _, w := range r.Warnings {
			if strings.Contains(w, "the arms differ in size") && strings.Contains(w, want) {
				return true
			}
		}
		return false
	}
	held, fails := 0, 0
	for i := range 8 {
		seed := uint64(7000 + i)
		ex, ag := arms(least, lone(1), seed)
		for _, r := range []*Report{ex, ag} {
			if r.Verdict == Fail {
				t.Errorf("seed %d, lone canary beside four pooled replicas: FAIL %v", seed, r.Reasons)
			}
			if !warned(r, "more evenly than at random") {
				t.Errorf("seed %d: no warning of the pooled baseline: %q", seed, r.Warnings)
			}
			if len(r.Reasons) > 0 && strings.HasPrefix(r.Reasons[0], "the gates give FAIL") {
				held++
			}
		}
		ex, ag = arms(lone(1), least, seed)
		for _, r := range []*Report{ex, ag} {
			if r.Verdict == Pass {
				t.Errorf("seed %d, four pooled canary replicas beside a lone baseline: PASS %v", seed, r.Reasons)
			}
		}
		ex, ag = arms(random, lone(1.1), seed)
		for _, r := range []*Report{ex, ag} {
			if !warned(r, "about at random") || strings.HasPrefix(r.Reasons[0], "the gates give") {
				t.Errorf("seed %d, random routing: warnings %q, reasons %q; want the arms compared as they are", seed, r.Warnings, r.Reasons)
			}
			if r.Verdict == Fail {
				fails++
			}
		}
	}
	if held == 0 {
		t.Error("no run of the lone canary beside pooled replicas was held: the test does not reach the hold")
	}
	if fails == 0 {
		t.Error("a 10% slower lone canary behind random routing never failed: the hold reached it")
	}
	ex, ag := arms(least, burst, 7000)
	for _, r := range []*Report{ex, ag} {
		if r.Verdict != Fail {
			t.Errorf("the lone canary's error burst: %s %v, want FAIL", r.Verdict, r.Reasons)
		}
	}
	// arms of one size: no word of it
	ex, ag = arms(least, least, 7000)
	for _, r := range []*Report{ex, ag} {
		if warned(r, "") {
			t.Errorf("arms of one size warned: %q", r.Warnings)
		}
	}
}

// TestRoutersOfTwoKinds: on the batching model, one arm's replicas
// behind a least-outstanding router, the other's picked at random, at
// the same load per replica (1.5 req/s each): two pooled replicas beside
// eight, and four beside four. The pooled arm queues less on the same
// build: as the canary it passed identical builds (two of eight: 15 of 40
// runs; four of four: 24 of 40) and 5% slower ones (6 and 7 of 40), where
// arms behind one kind of router pass none; as the baseline it failed
// identical builds (12 and 29 of 40). Such a PASS and such a
// lateness-only FAIL are held, both paths, with both routers named.
func TestRoutersOfTwoKinds(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 200, Seed: 1}
	for _, c := range []struct {
		name           string
		pooled, random func(*batchFleet)
	}{
		{"two pooled beside eight at random", func(f *batchFleet) { f.rate, f.replicas, f.router = 3, 2, "least" }, func(f *batchFleet) { f.rate, f.replicas = 12, 8 }},
		{"four pooled beside four at random", func(f *batchFleet) { f.rate, f.router = 6, "least" }, func(f *batchFleet) { f.rate = 6 }},
	} {
		heldPass, heldFail := 0, 0
		for i := range 6 {
			seed := uint64(7100 + i)
			ex, ag := batchJudgedBothWays(t, cfg, c.random, c.pooled, seed)
			for _, r := range []*Report{ex, ag} {
				if r.Verdict == Pass {
					t.Errorf("%s, seed %d, the canary pooled: PASS %v", c.name, seed, r.Reasons)
				}
				w := strings.Join(r.Warnings, "\n")
				if !strings.Contains(w, "the canary's router spread its requests over its replicas more evenly than at random") ||
					!strings.Contains(w, "while the baseline's picked replicas about at random") {
					t.Errorf("%s, seed %d: the routers are not named: %q", c.name, seed, r.Warnings)
				}
				if len(r.Reasons) > 0 && strings.HasPrefix(r.Reasons[0], "the gates give PASS") {
					heldPass++
				}
			}
			ex, ag = batchJudgedBothWays(t, cfg, c.pooled, c.random, seed)
			for _, r := range []*Report{ex, ag} {
				if r.Verdict == Fail {
					t.Errorf("%s, seed %d, the baseline pooled: FAIL %v", c.name, seed, r.Reasons)
				}
				if len(r.Reasons) > 0 && strings.HasPrefix(r.Reasons[0], "the gates give FAIL") {
					heldFail++
				}
			}
		}
		if heldPass == 0 || heldFail == 0 {
			t.Errorf("%s: held %d passes and %d fails: the test does not reach the hold both ways", c.name, heldPass, heldFail)
		}
	}
	// one kind of router in both arms: nothing said, nothing held
	least := func(f *batchFleet) { f.rate, f.router = 6, "least" }
	ex, ag := batchJudgedBothWays(t, cfg, least, least, 7100)
	for _, r := range []*Report{ex, ag} {
		if len(r.Reasons) > 0 && strings.HasPrefix(r.Reasons[0], "the gates give") || strings.Contains(strings.Join(r.Warnings, "\n"), "router") {
			t.Errorf("both arms pooled: %q, %q", r.Reasons, r.Warnings)
		}
	}
}

// TestArmsAtDifferentLoads: a split of traffic declared (40% to the
// canary) while both arms run four replicas leaves the canary at a third
// less load per replica; on the batching model near capacity (6 requests
// per second to the baseline) its queues fill less, and a 10% slower build
// passed 18 of 20 runs, the load step saying it was "compared on buckets
// of matched load" (only the internal-work gates were). Now no such run
// passes on either path, and the reason says why; a split in proportion to
// the replicas is judged as before.
func TestArmsAtDifferentLoads(t *testing.T) {
	p := *chat(t)
	p.Traffic = &policies.TrafficSpec{CanaryShare: 0.4}
	cfg := Config{Policy: &p, Resamples: 200, Seed: 1}
	held := 0
	for i := range 6 {
		ex, ag := batchJudgedBothWays(t, cfg, func(f *batchFleet) { f.rate = 6 }, func(f *batchFleet) { f.rate, f.speed = 4, 1.1 }, uint64(7000+i))
		for _, r := range []*Report{ex, ag} {
			if r.Verdict == Pass {
				t.Errorf("seed %d, a 10%% slower canary at a third less load per replica: PASS %v", i, r.Reasons)
			}
			if len(r.Reasons) > 0 && strings.HasPrefix(r.Reasons[0], "the gates give PASS, but the canary ran at") {
				held++
			}
		}
	}
	if held == 0 {
		t.Error("no pass of the lighter canary was held: the test does not reach the hold")
	}
	// four replicas beside six at 40% of the traffic: the same load per
	// replica, nothing held
	for i := range 3 {
		ex, ag := batchJudgedBothWays(t, cfg, func(f *batchFleet) { f.rate, f.replicas = 7.5, 6 }, func(f *batchFleet) { f.rate = 5 }, uint64(7000+i))
		for _, r := range []*Report{ex, ag} {
			if len(r.Reasons) > 0 && strings.HasPrefix(r.Reasons[0], "the gates give") {
				t.Errorf("seed %d, the same load per replica: held %q", i, r.Reasons[0])
			}
		}
	}
}

// TestPoolMoves lists which gates measure lateness, which a deeper queue
// moves, and which count failures or what was written, which it does not.
func TestPoolMoves(t *testing.T) {
	for _, c := range []struct {
		m    Metric
		want bool
	}{
		{Metric{Name: "slo_attainment"}, true},
		{Metric{Name: "slo_attainment_trend"}, true},
		{Metric{Name: "ttft_p99"}, true},
		{Metric{Name: "ttft_p99:chat"}, true},
		{Metric{Name: "tpot_p99_trend"}, true},
		{Metric{Name: "e2e_p50"}, true},
		{Metric{Name: "goodput_per_replica"}, true},
		{Metric{Name: "cost_per_good_request"}, true},
		{Metric{Name: dipName, Method: "window-scan-newcombe-bonferroni-673"}, true},
		{Metric{Name: dipName, Method: "window-scan-served-newcombe-bonferroni-673"}, false},
		{Metric{Name: "error_rate"}, false},
		{Metric{Name: "rejected_share"}, false},
		{Metric{Name: "canceled_share"}, false},
		{Metric{Name: "retry_share"}, false},
		{Metric{Name: "output_tokens_mean"}, false},
		{Metric{Name: "offered_load_ratio"}, false},
	} {
		if got := poolMoves(c.m); got != c.want {
			t.Errorf("%s (%s): %v, want %v", c.m.Name, c.m.Method, got, c.want)
		}
	}
}

// TestArmSizeReading: arms count as of different sizes from 1.5 times;
// the larger arm's router pools only when its evenness is both low and
// beyond chance; and the warning says which of the three it read.
func TestArmSizeReading(t *testing.T) {
	even := func(ratio, p float64) stats.Routing { return stats.Routing{Ratio: ratio, PEven: p} }
	for _, c := range []struct {
		s              armSize
		differ, pooled bool
		says           string
	}{
		{armSize{b: 4, c: 3}, false, false, ""},
		{armSize{b: 3, c: 2}, true, false, "could not be read"},
		{armSize{b: 4, c: 1, rb: router{even: even(0.4, 1e-30), known: true}}, true, true, "more evenly than at random"},
		{armSize{b: 1, c: 4, rc: router{even: even(0.4, 1e-30), known: true}}, true, true, "the canary's router spread"},
		{armSize{b: 4, c: 1, rb: router{even: even(0.6, 0.01), known: true}}, true, false, "somewhat more evenly than at random, not enough to count as pooling its queues (their counts per bucket vary 0.60 times as much as random routing's, p 0.01; pooling reads below 0.7 at p < 0.001)"},
		{armSize{b: 4, c: 1, rb: router{even: even(0.95, 0.3), known: true}}, true, false, "about at random"},
		{armSize{b: 0, c: 1}, false, false, ""},
		// read from metrics: the replicas' requests in flight
		{armSize{b: 4, c: 1, rb: router{even: stats.Routing{Ratio: 0.01, PEven: 1e-150, Buckets: 40}, known: true, inFlight: true}}, true, true, "requests in flight at each bucket's end vary 0.01 times as much as independent queues' would, over 40 buckets"},
		{armSize{b: 4, c: 1, rb: router{even: stats.Routing{Ratio: 1.9, PEven: 1, Buckets: 40}, known: true, inFlight: true}}, true, false, "about at random (their requests in flight at each bucket's end vary 1.90"},
		{armSize{b: 4, c: 1}, true, false, "neither per-replica counts nor per-replica requests running and waiting"},
	} {
		if c.s.differ() != c.differ || c.s.pooled() != c.pooled {
			t.Errorf("%+v: differ %v pooled %v, want %v %v", c.s, c.s.differ(), c.s.pooled(), c.differ, c.pooled)
		}
		if c.says != "" && !strings.Contains(c.s.text(), c.says) {
			t.Errorf("%+v: %q does not say %q", c.s, c.s.text(), c.says)
		}
	}
	// routers of two kinds: one arm's pools, the other's picks at
	// random; the pooled arm queues less, whatever the sizes. Otherwise
	// the larger arm's pool, when the smaller pools too or has one
	// replica
	pools := router{even: stats.Routing{Ratio: 0.1, PEven: 1e-40, Buckets: 60}, known: true, inFlight: true}
	random := router{even: stats.Routing{Ratio: 1.3, PEven: 0.99, Buckets: 60}, known: true, inFlight: true}
	for _, c := range []struct {
		s      armSize
		easier string
		says   string
	}{
		{armSize{b: 8, c: 2, rb: random, rc: pools}, "canary", "the arms differ in size: the baseline ran 8.0 replicas on average, the canary 2.0; the canary's router spread its requests over its replicas more evenly than at random (their requests in flight at each bucket's end vary 0.10 times as much as independent queues' would, over 60 buckets, p 1e-40), which pools its queues, while the baseline's picked replicas about at random (their requests in flight at each bucket's end vary 1.30"},
		{armSize{b: 2, c: 8, rb: pools, rc: random}, "baseline", "the baseline queues less on the same build"},
		{armSize{b: 8, c: 2, rb: pools, rc: random}, "baseline", "the baseline queues less on the same build"},
		{armSize{b: 8, c: 2, rb: pools, rc: pools}, "baseline", "the smaller arm queues more"},
		{armSize{b: 8, c: 2, rb: router{}, rc: pools}, "", "could not be read"},
		{armSize{b: 8, c: 1, rb: random}, "", "about at random"},
		{armSize{b: 4, c: 4, rb: pools, rc: random}, "baseline", "the arms' routers differ (the baseline ran 4.0 replicas on average, the canary 4.0); the baseline's router spread"},
		{armSize{b: 4, c: 4, rb: random, rc: pools}, "canary", "the canary queues less on the same build"},
		{armSize{b: 4, c: 4, rb: pools, rc: pools}, "", ""},
		{armSize{b: 4, c: 4, rb: random, rc: random}, "", ""},
		{armSize{b: 4, c: 4, rb: pools}, "", ""},
		// a reading between the two counts as neither
		{armSize{b: 4, c: 4, rb: pools, rc: router{even: stats.Routing{Ratio: 0.75, PEven: 0.2}, known: true}}, "", ""},
		{armSize{b: 8, c: 2, rb: router{even: stats.Routing{Ratio: 0.75, PEven: 0.2}, known: true}, rc: pools}, "", "not enough to count as pooling"},
	} {
		if got := c.s.easier(); got != c.easier {
			t.Errorf("%+v: easier %q, want %q", c.s, got, c.easier)
		}
		if c.says == "" && c.s.text() != "" {
			t.Errorf("%+v: warned %q, want nothing", c.s, c.s.text())
		}
		if c.says != "" && !strings.Contains(c.s.text(), c.says) {
			t.Errorf("%+v: %q does not say %q", c.s, c.s.text(), c.says)
		}
	}
}

// TestRoutingReadingsOnTheBatchingModel reads the router of the batching
// model's four replicas (analysis/batchfleet_test.go, a model of queues
// built apart from the simulator) both ways, on the request path as both
// judging paths read it (routingOf). Random routing reads about 1 by
// counts and above 1 in flight (a queue varies more than a Poisson
// count, the more the hotter and the more the replicas' speeds differ),
// never even; the least-outstanding router reads a few tenths both ways
// (measured over 10 seeds: counts 0.34–0.46, in flight 0.13–0.46 from 4
// to 7 req/s), always even.
func TestRoutingReadingsOnTheBatchingModel(t *testing.T) {
	p, _ := policies.Load("chat")
	for _, c := range []struct {
		name   string
		set    func(*batchFleet)
		pooled bool
	}{
		{"random, 4 req/s", func(f *batchFleet) { f.rate = 4 }, false},
		{"random, 7 req/s", func(f *batchFleet) { f.rate = 7 }, false},
		{"random, replicas of their own speeds", func(f *batchFleet) { f.rate, f.replicaSigma = 6, 0.05 }, false},
		{"least-outstanding, 4 req/s", func(f *batchFleet) { f.rate, f.router = 4, "least" }, true},
		{"least-outstanding, 7 req/s", func(f *batchFleet) { f.rate, f.router = 7, "least" }, true},
	} {
		for seed := uint64(1); seed <= 4; seed++ {
			f := aaBatchFleet()
			c.set(&f)
			ds, _ := batchArms(f, f, seed)
			a, err := prepare(ds, p, newClassifier(p), math.NaN())
			if err != nil {
				t.Fatal(err)
			}
			counts, ok := a.replicaCounts()
			if !ok {
				t.Fatalf("%s, seed %d: no replica counts", c.name, seed)
			}
			byCount, ok1 := stats.RoutingEvenness(counts)
			series, ok := a.replicaInFlight()
			if !ok {
				t.Fatalf("%s, seed %d: no requests in flight", c.name, seed)
			}
			byFlight, ok2 := stats.InFlightEvenness(series)
			r, fromFlight, ok3 := routingOf(a)
			s := armSize{b: 4, c: 1, rb: router{even: r, known: ok3, inFlight: fromFlight}}
			if !ok1 || !ok2 || s.pooled() != c.pooled {
				t.Errorf("%s, seed %d: by counts %.2f, in flight %.2f (read %v, %v): pooled %v from in flight %v, want pooled %v", c.name, seed, byCount.Ratio, byFlight.Ratio, ok1, ok2, s.pooled(), fromFlight, c.pooled)
			}
			if !c.pooled && (byFlight.Ratio < 1 || byCount.Ratio < 0.8 || byCount.Ratio > 1.25) {
				t.Errorf("%s, seed %d: by counts %.2f, in flight %.2f: want about 1 by counts and above 1 in flight", c.name, seed, byCount.Ratio, byFlight.Ratio)
			}
			if c.pooled && (byFlight.Ratio > 0.5 || byCount.Ratio > 0.5) {
				t.Errorf("%s, seed %d: by counts %.2f, in flight %.2f: want a few tenths both ways", c.name, seed, byCount.Ratio, byFlight.Ratio)
			}
		}
	}
}

// TestReplicaDownIsNotARouter: a canary replica that crashes and comes
// back two minutes later (the simulator's bs-replica-restart, both arms
// behind its least-loaded router) finished nothing and held nothing in
// flight while its peers were busy; those buckets are left out of its
// router's reading (withoutIdle), which read 2.59, as random, with them
// in — the arms' routers then read as of two kinds. Neither path says so
// now. withoutIdle leaves a replica out only beside busy peers.
func TestReplicaDownIsNotARouter(t *testing.T) {
	sc, err := sim.Builtin("bs-replica-restart")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	bd := &sources.Dataset{Arm: sources.Baseline, Requests: res.Baseline, Clock: sources.ClockEpoch}
	cd := &sources.Dataset{Arm: sources.Canary, Requests: res.Canary, Clock: sources.ClockEpoch}
	ex, ag := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 200, Seed: 1})
	for _, r := range []*Report{ex, ag} {
		for _, w := range r.Warnings {
			if strings.Contains(w, "router") {
				t.Errorf("a replica down read as a router: %s", w)
			}
		}
	}
	nan := math.NaN()
	for _, c := range []struct {
		name               string
		inFlight, finished [][]float64
		want               string
	}{
		{"down beside busy peers", [][]float64{{0, 3}, {6, 4}, {7, 5}}, [][]float64{{0, 2}, {9, 6}, {8, 7}}, "[[NaN 3] [6 4] [7 5]]"},
		{"idle at a light load", [][]float64{{0, 1}, {1, 0}, {0, 1}}, [][]float64{{0, 1}, {2, 0}, {1, 1}}, "[[0 1] [1 0] [0 1]]"},
		{"no value, no peers counted", [][]float64{{nan, 0}, {0, 2}}, [][]float64{{nan, 0}, {9, 9}}, "[[NaN NaN] [0 2]]"},
	} {
		withoutIdle(c.inFlight, c.finished)
		if got := fmt.Sprint(c.inFlight); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
