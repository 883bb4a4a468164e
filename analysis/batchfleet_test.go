package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// batchFleet is a third model of an inference fleet, built unlike the
// simulator and the fleet model (fleet_test.go), whose latencies are drawn
// around a median: here they come out of a queue. Each replica runs
// continuous batching, one decode iteration at a time: an iteration takes
// stepBase plus stepPerSeq for every sequence in the batch plus
// prefillPerTok for every uncached prompt token of the sequences it
// admits, each admitted sequence gets its first token at the iteration's
// end and every other one token, and a request waits in its replica's
// queue while all slots are taken. So TTFT is the wait for a slot plus a
// prefill, TPOT the iteration time a sequence saw, and both follow the
// replica's own load: a burst of arrivals on one arm fills its batches
// and queues for as long as its sequences take to finish (tens of
// seconds), which neither arm's other requests nor the other arm share.
// The arms share the traffic wave (offered rate × (1 + waveAmp·sin)) and
// nothing else. A build change is a factor on every iteration's time.
type batchFleet struct {
	secs     float64 // window length, s
	rate     float64 // mean offered requests per second of the arm
	replicas int
	slots    int // sequences a replica's batch holds
	// iteration time: stepBase + stepPerSeq·batch + prefillPerTok·prompt
	// tokens admitted uncached, all × speed (the build) × the replica's
	// own factor
	stepBase, stepPerSeq, prefillPerTok float64
	speed                               float64
	// prefillX (0 = 1) scales the prefill term alone (a change to the
	// prefill kernel)
	prefillX float64
	// replicaSigma gives each replica a persistent log speed factor
	replicaSigma float64
	longShare    float64
	waveAmp      float64
	wavePhase    float64
	seed         uint64
	// from burstAt for burstSecs seconds a share burstErr of the arm's
	// arrivals fail at once (an error burst: never queued or served)
	burstAt, burstSecs, burstErr float64
	// router "least" sends each request to the replica with the fewest
	// sequences waiting or running; "" picks one at random
	router string
	// for its first coldSecs seconds the arm starts cold: every iteration
	// takes coldX times as long (graphs compiled, memory paged in) and no
	// request finds its prompt prefix cached
	coldSecs, coldX float64
	// repSpeed multiplies each replica's iteration time (nil: 1); a
	// shared pool's canary replicas (sharedPool)
	repSpeed []float64
	// poolSplit > 0 makes the fleet one pool behind one router for
	// both arms (sharedPool): its first poolSplit replicas the
	// baseline's, the rest the canary's, whose iterations take
	// poolCanaryX times as long (0 = 1)
	poolSplit   int
	poolCanaryX float64
}

func aaBatchFleet() batchFleet {
	return batchFleet{secs: 1800, rate: 5, replicas: 4, slots: 32, stepBase: 0.025, stepPerSeq: 0.0008,
		prefillPerTok: 0.00004, speed: 1, longShare: 0.35, waveAmp: 0.3}
}

// batchArms returns one replicate's baseline and canary, sharing the
// wave's phase and nothing else.
func batchArms(b, c batchFleet, seed uint64) (*sources.Dataset, *sources.Dataset) {
	phase := 2 * math.Pi * rand.New(rand.NewPCG(seed, 99)).Float64()
	b.wavePhase, c.wavePhase = phase, phase
	b.seed, c.seed = seed*2+1, seed*2+2
	return b.dataset(sources.Baseline), c.dataset(sources.Canary)
}

// batchReq is one request as a replica's scheduler sees it.
type batchReq struct {
	arrive                 float64
	failed                 bool // failed at once (an error burst)
	prompt, cached, output int64
	long                   bool
	first                  float64 // first token, s
	left                   int64   // output tokens still to come
	tpot                   float64 // (last token − first token)/(output − 1), s
	rep                    int
}

func (f batchFleet) dataset(arm sources.Arm) *sources.Dataset {
	return f.records(arm, f.simulate(), func(int) bool { return true })
}

// simulate draws the arm's arrivals, routes and serves them: every
// request with its replica, first-token time and TPOT. repSpeed, when
// set, multiplies each replica's iteration time (a shared pool's canary
// replicas).
func (f batchFleet) simulate() []*batchReq {
	rng := rand.New(rand.NewPCG(f.seed, 31))
	var reqs []*batchReq
	peak := f.rate * (1 + f.waveAmp)
	for t := rng.ExpFloat64() / peak; t < f.secs; t += rng.ExpFloat64() / peak {
		if rng.Float64() > (1+f.waveAmp*math.Sin(2*math.Pi*t/600+f.wavePhase))/(1+f.waveAmp) {
			continue
		}
		r := &batchReq{arrive: t, long: rng.Float64() < f.longShare}
		if r.long {
			r.prompt, r.output = 3000+int64(rng.IntN(4000)), 100+int64(rng.IntN(500))
		} else {
			r.prompt, r.output = 200+int64(rng.IntN(1800)), 60+int64(rng.IntN(300))
		}
		if rng.Float64() < 0.6 && t >= f.coldSecs {
			r.cached = int64(float64(r.prompt) * (0.5 + 0.4*rng.Float64()))
		}
		r.rep = rng.IntN(f.replicas)
		r.failed = f.burstSecs > 0 && t >= f.burstAt && t < f.burstAt+f.burstSecs && rng.Float64() < f.burstErr
		reqs = append(reqs, r)
	}
	repX := make([]float64, f.replicas)
	for i := range repX {
		repX[i] = math.Exp(f.replicaSigma * rng.NormFloat64())
		if i < len(f.repSpeed) {
			repX[i] *= f.repSpeed[i]
		}
	}
	if f.router == "least" {
		f.routeLeast(reqs, repX)
	}
	for rep := range f.replicas {
		var queue []*batchReq
		for _, r := range reqs {
			if r.rep == rep && !r.failed {
				queue = append(queue, r)
			}
		}
		f.serve(queue, repX[rep])
	}
	return reqs
}

// records writes the requests whose replica mine accepts as arm's
// gateway log, replicas named "<arm>-<index>".
func (f batchFleet) records(arm sources.Arm, reqs []*batchReq, mine func(rep int) bool) *sources.Dataset {
	ds := &sources.Dataset{Arm: arm, Clock: sources.ClockEpoch, Location: "gateway", Duration: f.secs}
	for _, q := range reqs {
		if !mine(q.rep) {
			continue
		}
		r := sources.NewRequest()
		r.Time = 1.75e9 + q.arrive
		r.Attempt = 1
		r.Status = sources.StatusOK
		r.Class = "chat"
		if q.long {
			r.Class = "long"
		}
		r.PromptTokens, r.CachedTokens, r.OutputTokens = q.prompt, q.cached, q.output
		r.Replica = fmt.Sprintf("%s-%d", arm, q.rep)
		if q.failed {
			r.Status = sources.StatusError
			ds.Requests = append(ds.Requests, r)
			continue
		}
		r.TTFT = q.first - q.arrive
		r.E2E = q.first - q.arrive + float64(q.output-1)*q.tpot
		r.TPOT = q.tpot
		ds.Requests = append(ds.Requests, r)
	}
	return ds
}

// sharedPool is one replicate of a canary and a baseline whose replicas
// sit behind one router (pool.poolSplit > 0): pool's arrivals (its rate
// the two arms' together) routed over its replicas, the first poolSplit
// the baseline's, the rest the canary's.
func sharedPool(pool batchFleet, seed uint64) (*sources.Dataset, *sources.Dataset) {
	pool.wavePhase = 2 * math.Pi * rand.New(rand.NewPCG(seed, 99)).Float64()
	pool.seed = seed*2 + 1
	pool.repSpeed = make([]float64, pool.replicas)
	for i := range pool.repSpeed {
		pool.repSpeed[i] = 1
		if i >= pool.poolSplit && pool.poolCanaryX > 0 {
			pool.repSpeed[i] = pool.poolCanaryX
		}
	}
	reqs := pool.simulate()
	return pool.records(sources.Baseline, reqs, func(rep int) bool { return rep < pool.poolSplit }),
		pool.records(sources.Canary, reqs, func(rep int) bool { return rep >= pool.poolSplit })
}

// serve runs one replica's scheduler over its requests (in arrival
// order), filling each one's first-token time and TPOT; a request still
// queued or running when the window ends finishes after it (the window's
// records are what arrived within it, as a gateway logs them).
func (f batchFleet) serve(queue []*batchReq, x float64) {
	prefillX := f.prefillX
	if prefillX == 0 {
		prefillX = 1
	}
	var active []*batchReq
	t, next := 0.0, 0
	for next < len(queue) || len(active) > 0 {
		if len(active) == 0 && queue[next].arrive > t {
			t = queue[next].arrive
		}
		var admitted []*batchReq
		prefill := 0.0
		for next < len(queue) && queue[next].arrive <= t && len(active)+len(admitted) < f.slots {
			q := queue[next]
			admitted = append(admitted, q)
			prefill += float64(q.prompt - q.cached)
			next++
		}
		step := (f.stepBase + f.stepPerSeq*float64(len(active)+len(admitted)) + f.prefillPerTok*prefillX*prefill) * f.speed * x
		if t < f.coldSecs && f.coldX > 0 {
			step *= f.coldX
		}
		t += step
		kept := active[:0]
		for _, q := range active {
			q.left--
			if q.left == 0 {
				q.tpot = (t - q.first) / float64(q.output-1)
				continue
			}
			kept = append(kept, q)
		}
		active = kept
		for _, q := range admitted {
			q.first = t
			q.left = q.output - 1
			active = append(active, q)
		}
	}
}

// routeLeast sends each request to the replica with the fewest requests
// outstanding at its arrival, each request's departure estimated as it is
// routed, not simulated: it holds a slot for its output tokens'
// iterations at a half-full batch, after the queue ahead of it beyond
// the slots (an approximation of the counters a least-outstanding router
// reads).
func (f batchFleet) routeLeast(reqs []*batchReq, repX []float64) {
	// departure estimate: a replica's outstanding work in sequence
	// slots, drained at its slot rate
	busyUntil := make([][]float64, f.replicas)
	for i, r := range reqs {
		if r.failed {
			continue
		}
		best, bestN := 0, math.MaxInt
		for k := range f.replicas {
			// ties go to the first replica scanned: within one arm,
			// whose replicas are alike, always the lowest; in a pool
			// shared by both arms that would starve the canary's
			// replicas, last in the order, so there the scan starts
			// at each request's turn
			rep := k
			if f.poolSplit > 0 {
				rep = (k + i) % f.replicas
			}
			n := 0
			for _, d := range busyUntil[rep] {
				if d > r.arrive {
					n++
				}
			}
			if n < bestN {
				best, bestN = rep, n
			}
		}
		r.rep = best
		// a sequence holds its slot for about its output tokens'
		// iterations at a half-full batch, after the queue ahead of it
		iter := (f.stepBase + f.stepPerSeq*float64(f.slots)/2) * f.speed * repX[best]
		wait := 0.0
		if bestN >= f.slots {
			wait = iter * float64(r.output) * float64(bestN-f.slots+1) / float64(f.slots)
		}
		busyUntil[best] = append(busyUntil[best], r.arrive+wait+iter*float64(r.output))
		if len(busyUntil[best]) > 4*f.slots {
			k := busyUntil[best][:0]
			for _, d := range busyUntil[best] {
				if d > r.arrive {
					k = append(k, d)
				}
			}
			busyUntil[best] = k
		}
	}
}

// batchCase is one calibration scenario of the batching model.
type batchCase struct {
	name string
	want Verdict // Pass: fail is wrong; Fail: pass is wrong
	// b and c set each arm's fleet; a b that sets poolSplit sets one
	// pool for both arms (sharedPool), and c is nil
	b, c func(f *batchFleet)
}

// batchCases are the batching model's scenarios. The default fleet (4
// replicas of 32 slots, 5 requests per second, the wave ±30%) meets chat's
// SLO for 99.5% of requests; the load sets how often a replica's queue
// fills: 4 req/s 99.98%, 5.5 97.9%, 6 94%, 6.5 81%, 7 62% (past the knee
// at the wave's peaks); one replica at 1.25 req/s 99.75%, at 1.7 74%, at
// 2 31%, its queue the arm's whole state.
func batchCases() []batchCase {
	id := func(*batchFleet) {}
	rate := func(r float64) func(*batchFleet) { return func(f *batchFleet) { f.rate = r } }
	one := func(r float64) func(*batchFleet) { return func(f *batchFleet) { f.rate, f.replicas = r, 1 } }
	burst := func(f *batchFleet) { f.burstAt, f.burstSecs, f.burstErr = 900, 120, 0.5 }
	pool := func(canaryX float64) func(*batchFleet) {
		return func(f *batchFleet) {
			f.rate, f.replicas, f.router, f.poolSplit, f.poolCanaryX = 7.5, 5, "least", 4, canaryX
		}
	}
	return []batchCase{
		{"aa", Pass, id, id},
		{"aa-cool", Pass, rate(4), rate(4)},
		{"aa-warm", Pass, rate(5.5), rate(5.5)},
		{"aa-hot", Pass, rate(6), rate(6)},
		{"aa-past-knee", Pass, rate(6.5), rate(6.5)},
		{"aa-overloaded", Pass, rate(7), rate(7)},
		{"aa-1-replica", Pass, one(1.25), one(1.25)},
		{"aa-1-replica-past-knee", Pass, one(1.7), one(1.7)},
		{"aa-1-replica-overloaded", Pass, one(2), one(2)},
		// each replica its own speed all run (σ 5% of the log)
		{"aa-replica-speeds", Pass, func(f *batchFleet) { f.replicaSigma = 0.05 }, func(f *batchFleet) { f.replicaSigma = 0.05 }},
		{"aa-least", Pass, func(f *batchFleet) { f.router = "least" }, func(f *batchFleet) { f.router = "least" }},
		// fewer long prompts: less work, so less queueing for every class
		{"mix-shift", Pass, id, func(f *batchFleet) { f.longShare = 0.10 }},
		{"improve-10", Pass, id, func(f *batchFleet) { f.speed = 0.9 }},
		// every iteration slower: TPOT by the factor, and the queue more
		{"regress-5", Fail, id, func(f *batchFleet) { f.speed = 1.05 }},
		{"regress-10", Fail, id, func(f *batchFleet) { f.speed = 1.10 }},
		{"regress-20-cool", Fail, rate(4), func(f *batchFleet) { f.rate, f.speed = 4, 1.20 }},
		{"prefill-2x", Fail, id, func(f *batchFleet) { f.prefillX = 2 }},
		{"mix-shift-regress-15", Fail, id, func(f *batchFleet) { f.longShare, f.speed = 0.10, 1.15 }},
		// half of one arm's requests failing for two minutes
		{"baseline-burst", Pass, burst, id},
		{"error-burst", Fail, id, burst},
		// the canary starts cold: two minutes of iterations 1.5× as long
		// and no prefix-cache hits (a warm-up to cut); five minutes of
		// cold caches alone; ten minutes 1.3× slower (a slow start
		// beyond the warm-up cap, to be judged)
		{"cold-start", Pass, id, func(f *batchFleet) { f.coldSecs, f.coldX = 120, 1.5 }},
		{"cold-cache", Pass, id, func(f *batchFleet) { f.coldSecs = 300 }},
		{"slow-start-10min", Fail, id, func(f *batchFleet) { f.coldSecs, f.coldX = 600, 1.3 }},
		// a canary of one replica beside a baseline of four, at the same
		// load per replica: behind a router that picks replicas at
		// random each replica queues as it would alone; behind a
		// least-outstanding one the baseline's four pool their queues
		{"aa-canary-1-of-4", Pass, id, one(1.25)},
		{"aa-canary-1-of-4-hot", Pass, rate(6), one(1.5)},
		{"aa-canary-1-of-4-least-hot", Pass, func(f *batchFleet) { f.rate, f.router = 6, "least" }, one(1.5)},
		{"aa-baseline-1-of-4-least-hot", Pass, one(1.5), func(f *batchFleet) { f.rate, f.router = 6, "least" }},
		{"regress-10-canary-1-of-4-hot", Fail, rate(6), func(f *batchFleet) { f.rate, f.replicas, f.speed = 1.5, 1, 1.1 }},
		// one least-outstanding router over four baseline replicas and
		// one canary replica (7.5 req/s over the five): the lone canary
		// pools with the baseline's, and a slower one is sent less
		{"aa-shared-pool-1-of-5", Pass, pool(1), nil},
		{"regress-10-shared-pool-1-of-5", Fail, pool(1.1), nil},
		{"regress-10-canary-1-of-4-least-hot", Fail, func(f *batchFleet) { f.rate, f.router = 6, "least" }, func(f *batchFleet) { f.rate, f.replicas, f.speed = 1.5, 1, 1.1 }},
		// the smaller arm pools and the larger does not: a canary of two
		// replicas behind a least-outstanding router beside eight picked
		// at random, at the same load per replica
		// arms of one size behind routers of two kinds: the baseline's
		// four behind the least-outstanding router, the canary's four
		// picked at random (and the mirror), at 6 req/s each
		{"aa-baseline-least-canary-random-hot", Pass, func(f *batchFleet) { f.rate, f.router = 6, "least" }, rate(6)},
		{"aa-canary-least-baseline-random-hot", Pass, rate(6), func(f *batchFleet) { f.rate, f.router = 6, "least" }},
		{"regress-5-canary-least-baseline-random-hot", Fail, rate(6), func(f *batchFleet) { f.rate, f.router, f.speed = 6, "least", 1.05 }},
		{"aa-canary-2-least-of-8-hot", Pass, func(f *batchFleet) { f.rate, f.replicas = 12, 8 }, func(f *batchFleet) { f.rate, f.replicas, f.router = 3, 2, "least" }},
		{"aa-baseline-2-least-of-8-hot", Pass, func(f *batchFleet) { f.rate, f.replicas, f.router = 3, 2, "least" }, func(f *batchFleet) { f.rate, f.replicas = 12, 8 }},
		{"regress-5-canary-2-least-of-8-hot", Fail, func(f *batchFleet) { f.rate, f.replicas = 12, 8 }, func(f *batchFleet) { f.rate, f.replicas, f.router, f.speed = 3, 2, "least", 1.05 }},
		{"regress-10-canary-2-least-of-8-hot", Fail, func(f *batchFleet) { f.rate, f.replicas = 12, 8 }, func(f *batchFleet) { f.rate, f.replicas, f.router, f.speed = 3, 2, "least", 1.1 }},
	}
}

// TestBatchFleetCalibration measures verdict rates on the batching model:
// GOODPUT_BATCH_REPS replicates per case (unset: skipped),
// GOODPUT_FLEET_CASES a comma-separated subset, GOODPUT_BATCH_SHOW=1 every
// failing gate's row of every run. Each line: case, expected verdict,
// fail / pass / inconclusive rates with their Monte Carlo standard errors,
// the gates that failed and those left inconclusive (runs each), the
// baseline's attainment, the mean attainment difference as judged beside
// the raw one (good over offered, no adjustment: on identical arms both
// should be near 0), the mean width of its interval, and on identical
// arms each interval's coverage of 0. GOODPUT_BATCH_PERSISTENCE sets the
// policy's window.persistence (a duration, as `goodput persistence`
// prints it); GOODPUT_BATCH_MINUTES the window's length (default 30:
// every case's events keep their times).
func TestBatchFleetCalibration(t *testing.T) {
	reps, wanted := calibrationRun(t, "GOODPUT_BATCH_REPS", "run the batching model's calibration")
	show := os.Getenv("GOODPUT_BATCH_SHOW") != ""
	p := chat(t)
	declared := declarePersistence(t, "GOODPUT_BATCH_PERSISTENCE", p)
	secs := aaBatchFleet().secs
	if v := os.Getenv("GOODPUT_BATCH_MINUTES"); v != "" {
		m, err := strconv.ParseFloat(v, 64)
		if err != nil || m <= 0 {
			t.Fatalf("GOODPUT_BATCH_MINUTES=%s: want a positive number of minutes", v)
		}
		secs = 60 * m
		declared += "@" + v + "min"
	}
	// raw is an arm's share of requests good by chat's default SLO
	raw := func(ds *sources.Dataset) float64 {
		good := 0.0
		for _, r := range ds.Requests {
			if r.Status == sources.StatusOK && r.TTFT <= 1 && r.TPOT <= 0.08 {
				good++
			}
		}
		return good / float64(len(ds.Requests))
	}
	for _, bc := range batchCases() {
		if !wanted(bc.name) {
			continue
		}
		tally := newVerdictTally()
		var base, delta, rawDelta, width float64
		identical := strings.HasPrefix(bc.name, "aa")
		for i := range reps {
			seed := uint64(7000 + i)
			bf, cf := aaBatchFleet(), aaBatchFleet()
			bf.secs, cf.secs = secs, secs
			bc.b(&bf)
			var b, c *sources.Dataset
			if bf.poolSplit > 0 {
				b, c = sharedPool(bf, seed)
			} else {
				bc.c(&cf)
				b, c = batchArms(bf, cf, seed)
			}
			rawDelta += raw(c) - raw(b)
			r, err := Judge(b, c, Config{Policy: p, Resamples: 400, Seed: seed + 1})
			if err != nil {
				t.Fatalf("%s #%d: %v", bc.name, i, err)
			}
			tally.add(r, identical)
			for _, m := range r.Metrics {
				if m.Verdict == Fail && show {
					t.Logf("  seed %d %s: %s", seed, m.Name, m.Reason)
				}
				if m.Name == "slo_attainment" {
					base, delta, width = base+float64(m.Baseline), delta+float64(m.Delta), width+float64(m.Interval[1]-m.Interval[0])
				}
			}
		}
		n := float64(reps)
		t.Logf("%-20s want %-5s %s  baseline attainment %.2f%%, mean difference %+.2f pp judged, %+.2f pp raw, interval %.2f pp wide",
			bc.name+declared, bc.want, tally.rates(reps), 100*base/n, 100*delta/n, 100*rawDelta/n, 100*width/n)
		tally.logCoverage(t, fmt.Sprintf("%-20s", bc.name), p.Confidence)
	}
}

// batchJudgedBothWays judges one replicate of the batching model, the
// baseline's and the canary's fleets set by b and c, on the request path
// and from its streaming aggregate (judgedBothWays).
func batchJudgedBothWays(t *testing.T, cfg Config, b, c func(*batchFleet), seed uint64) (exact, agg *Report) {
	t.Helper()
	bf, cf := aaBatchFleet(), aaBatchFleet()
	b(&bf)
	c(&cf)
	bd, cd := batchArms(bf, cf, seed)
	return judgedBothWays(t, bd, cd, cfg)
}

// TestQueuesAreNotBaselineOutages: in a fleet run near or past its
// capacity each arm's queue fills and drains on its own, so either arm
// holds its requests late for a minute or two at a time. The
// baseline_outage step took the baseline's such stretches for outages and
// left them out of both arms, while the canary's stayed in — a step that
// only ever removes the baseline's worst stretches moves every count
// gate toward the canary's harm (identical arms: attainment −1.5 pp on
// average near capacity, −5.8 pp past it, against raw differences of 0).
// Late requests are what such a fleet does to either arm; only a stretch
// in which an arm's requests failed is its own outage. On identical arms
// the step now leaves out a stretch in 2 of 24 runs (15 before, both
// paths), and a real error burst of the baseline (half its requests
// failing for two minutes) is still left out in every run.
func TestQueuesAreNotBaselineOutages(t *testing.T) {
	p := chat(t)
	cfg := Config{Policy: p, Resamples: 200, Seed: 1}
	left := 0
	for _, f := range []func(*batchFleet){
		func(f *batchFleet) { f.rate, f.replicas = 1.7, 1 }, // past the knee at the wave's peaks
		func(f *batchFleet) { f.rate = 6 },                  // near capacity
	} {
		for i := range 12 {
			ex, ag := batchJudgedBothWays(t, cfg, f, f, uint64(7000+i))
			if step(ex, "baseline_outage").Applied != step(ag, "baseline_outage").Applied {
				t.Errorf("seed %d: baseline_outage on the request path %v, on the aggregate %v", i, step(ex, "baseline_outage").Applied, step(ag, "baseline_outage").Applied)
			}
			if step(ex, "baseline_outage").Applied {
				left++
			}
		}
	}
	if left > 3 {
		t.Errorf("identical arms near capacity: a baseline stretch left out in %d of 24 runs, want at most 3", left)
	}
	burst := func(f *batchFleet) { f.burstAt, f.burstSecs, f.burstErr = 900, 120, 0.5 }
	for i := range 6 {
		ex, ag := batchJudgedBothWays(t, cfg, burst, func(*batchFleet) {}, uint64(7000+i))
		for _, r := range []*Report{ex, ag} {
			if s := step(r, "baseline_outage"); !s.Applied {
				t.Errorf("seed %d: the baseline's error burst was not left out: %+v", i, s)
			}
		}
	}
}
