package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/goodput-dev/goodput/sources"
)

// drainLimit is how long (seconds) requests offered in the window may keep
// running after it ends before the client is assumed to give up on them.
const drainLimit = 3600.0

type reqState uint8

const (
	stQueued reqState = iota + 1
	stInput           // admitted, in frontend input processing before the engine queue
	stRunning
	stDone
)

// simReq is one attempt of one request inside the simulation.
type simReq struct {
	id       int32
	class    int32
	group    int32 // prefix group, -1 none
	user     int32 // the user who sent it (Traffic.Users), -1 none
	prompt   int32
	output   int32
	attempt  int32
	replica  int32 // -1 until routed
	state    reqState
	doomed   bool  // ends with a server error instead of completing
	burst    bool  // doomed by an error burst under way at its arrival
	target   int32 // prefill tokens to compute (prompt + recomputed output)
	recomp   int32 // output tokens recomputed after a preemption
	computed int32 // prefill tokens done toward target (including cache hits)
	cached   int32 // prefix-cache hit tokens at first scheduling; -1 before
	gen      int32 // output tokens produced
	blocks   int32 // KV blocks held
	arrival  float64
	sched    float64 // first scheduled, NaN before
	firstTok float64 // NaN before the first token
	lastTok  float64
	maxITL   float64
	stallTok int32   // output token delayed by a request-scoped stall, 0 none
	emptyOut bool    // logged with 0 output tokens (an empty completion)
	jitter   float64 // per-request TPOT multiplier (tpot_jitter); 0 = none
	shift    float64 // client-visible delay added by request-scoped stalls, seconds
	// firstShift is shift when the first token was produced.
	firstShift float64
}

type evKind uint8

const (
	evStepEnd evKind = iota + 1
	evDeadline
	evRetry
	evFail
	evRestart
	evSample
	evInput
)

type event struct {
	t    float64
	seq  uint64
	kind evKind
	rep  int32
	gen  int32
	req  *simReq
}

// eventHeap is a binary min-heap of events ordered by time, then by push
// order (so simultaneous events run in a deterministic order).
type eventHeap []event

func (h eventHeap) less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *eventHeap) pop() event {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = event{}
	a = a[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && a.less(r, l) {
			m = r
		}
		if !a.less(m, i) {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// reqQueue is a FIFO of waiting requests; canceled entries are skipped
// lazily and live counts the entries still waiting.
type reqQueue struct {
	items []*simReq
	head  int
	live  int
}

func (q *reqQueue) pushBack(r *simReq) { q.items = append(q.items, r); q.live++ }

func (q *reqQueue) pushFront(r *simReq) {
	if q.head > 0 {
		q.head--
		q.items[q.head] = r
	} else {
		q.items = slices.Insert(q.items, 0, r)
	}
	q.live++
}

// peek returns the first live entry, dropping dead ones.
func (q *reqQueue) peek() *simReq {
	for q.head < len(q.items) {
		r := q.items[q.head]
		if r.state == stQueued {
			return r
		}
		q.items[q.head] = nil
		q.head++
	}
	q.items, q.head = q.items[:0], 0
	return nil
}

func (q *reqQueue) pop() *simReq {
	r := q.peek()
	if r != nil {
		q.items[q.head] = nil
		q.head++
		q.live--
		if q.head > 1024 && q.head*2 > len(q.items) {
			n := copy(q.items, q.items[q.head:])
			clear(q.items[n:])
			q.items, q.head = q.items[:n], 0
		}
	}
	return r
}

// prefixLRU is a replica's prefix cache over groups, bounded in tokens.
type prefixLRU struct {
	capacity int
	used     int
	clock    uint64
	entries  map[int64]*lruEntry
}

type lruEntry struct {
	tokens int
	last   uint64
}

func newPrefixLRU(capacity int) *prefixLRU {
	return &prefixLRU{capacity: capacity, entries: map[int64]*lruEntry{}}
}

func (c *prefixLRU) has(key int64) bool { _, ok := c.entries[key]; return ok }

// touch marks key as just used, inserting it (and evicting the least
// recently used groups) when absent.
func (c *prefixLRU) touch(key int64, tokens int) {
	c.clock++
	if e, ok := c.entries[key]; ok {
		e.last = c.clock
		return
	}
	if tokens > c.capacity {
		return
	}
	for c.used+tokens > c.capacity {
		var victim int64
		var oldest uint64 = math.MaxUint64
		for k, e := range c.entries {
			if e.last < oldest || (e.last == oldest && k < victim) {
				victim, oldest = k, e.last
			}
		}
		c.used -= c.entries[victim].tokens
		delete(c.entries, victim)
	}
	c.entries[key] = &lruEntry{tokens: tokens, last: c.clock}
	c.used += tokens
}

type stepItem struct {
	r     *simReq
	chunk int32 // prefill tokens in this step; 0 = decode
}

// counters are a replica's engine counters since its last (re)start.
type counters struct {
	finished  [4]float64 // stop, length, abort, error
	prompt    float64
	gen       float64
	pqueries  float64
	phits     float64
	preempt   float64
	ttft      hist
	tpot      hist
	e2e       hist
	queueTime hist
}

const (
	reasonStop = iota
	reasonLength
	reasonAbort
	reasonError
)

type replica struct {
	idx         int32
	name        string
	up          bool
	provisioned bool
	lostAt      float64 // when deprovisioned for good; +Inf while provisioned
	gen         int32
	startedAt   float64 // warm-up reference; -Inf for replicas warm at the window start
	queue       *reqQueue
	running     []*simReq
	batch       []stepItem
	busy        bool
	stepStart   float64
	stepDur     float64
	stepPower   float64 // intensity in [0, 1] of the current step
	kvFree      int
	cache       *prefixLRU
	outstanding int // waiting + running requests routed here
	// speed multiplies every step time of the replica for the whole run
	// (ArmSpec.ReplicaSpread; 1 when the arm's replicas are alike)
	speed float64

	busyAcc, activeAcc   float64 // busy seconds, intensity-weighted busy seconds
	lastBusy, lastActive float64 // at the previous sample
	c                    counters
	series               ReplicaSeries
	bytesByInterval      []float64
}

// armSim simulates one arm.
type armSim struct {
	sc      *Scenario
	arm     sources.Arm
	spec    *ArmSpec
	end     float64 // window length, seconds
	arrs    []arrival
	next    int
	events  eventHeap
	seq     uint64
	reps    []*replica
	shared  *reqQueue  // shared-queue router
	pick    *rand.Rand // random router
	svc     *rand.Rand
	cli     *rand.Rand
	out     []sources.Request
	ids     []int32 // creation order of out, for stable sorting
	nextID  int32
	live    int // requests not yet ended
	retryOn [sources.StatusRejected + 1]bool
	lenCaps []int32

	tokensPerMinute []float64
	busyPerMinute   []float64

	noise    *rand.Rand // batch-noise path, drawn lazily in time order
	noiseLog []float64  // log step-time factor per noise interval
	noiseDt  float64    // noise interval, seconds
	fault    *rand.Rand // output changes and gateway retries
	jitter   *rand.Rand // per-request TPOT jitter
	errSt    sources.Status
	ttftMul  []float64 // per class
	tpotMul  []float64 // per class

	ttftE, tpotE, e2eE []float64 // histogram bucket bounds
	waitKV             bool      // KV on_exhaustion is "wait"
	blockSize          int32
}

func newArmSim(sc *Scenario, arm sources.Arm, seed uint64, dur float64, arrs []arrival) *armSim {
	spec := sc.Arm(arm)
	s := &armSim{sc: sc, arm: arm, spec: spec, end: dur, arrs: arrs,
		svc: newRand(seed, streamService+armIndex(arm)), cli: newRand(seed, streamClient+armIndex(arm)),
		ttftE: TTFTBuckets(), tpotE: TPOTBuckets(), e2eE: E2EBuckets(),
		waitKV: spec.KV.OnExhaustion == "wait", blockSize: int32(spec.KV.BlockSize)}
	for _, o := range sc.Client.Retry.On {
		st, _ := sources.ParseStatus(o)
		s.retryOn[st] = true
	}
	for _, c := range sc.Traffic.Classes {
		s.lenCaps = append(s.lenCaps, int32(c.OutputTokens.Max))
		m := spec.ClassLatency[c.Name]
		s.ttftMul = append(s.ttftMul, orOne(m.TTFT))
		s.tpotMul = append(s.tpotMul, orOne(m.TPOT))
	}
	s.errSt = sources.StatusError
	if spec.ErrorStatus != "" {
		s.errSt, _ = sources.ParseStatus(spec.ErrorStatus)
	}
	if spec.BatchNoise.Sigma > 0 {
		s.noise = newRand(seed, streamNoise+armIndex(arm))
		s.noiseDt = spec.BatchNoise.Interval.Seconds()
		if s.noiseDt <= 0 {
			s.noiseDt = 10
		}
	}
	s.fault = newRand(seed, streamFault+armIndex(arm))
	s.jitter = newRand(seed, streamJitter+armIndex(arm))
	// records: every arrival plus some room for retries
	s.out = make([]sources.Request, 0, len(arrs)+len(arrs)/8+16)
	s.ids = make([]int32, 0, cap(s.out))
	minutes := int(math.Ceil(dur / 60))
	s.tokensPerMinute = make([]float64, minutes)
	s.busyPerMinute = make([]float64, minutes)
	switch spec.Router {
	case "shared-queue":
		s.shared = &reqQueue{}
	case "random":
		s.pick = newRand(seed, streamRouter+armIndex(arm))
	}
	nCost := int(math.Ceil(dur / sc.CostInterval.Seconds()))
	var speeds *rand.Rand
	if spec.ReplicaSpread > 0 {
		speeds = newRand(seed, streamReplica+armIndex(arm))
	}
	for i := range spec.Replicas {
		speed := 1.0
		if speeds != nil {
			speed = math.Exp(spec.ReplicaSpread * speeds.NormFloat64())
		}
		r := &replica{idx: int32(i), name: string(arm) + "-" + itoa(i), up: true, provisioned: true, speed: speed,
			lostAt: math.Inf(1), startedAt: math.Inf(-1), kvFree: spec.KV.Blocks,
			cache: newPrefixLRU(spec.PrefixCache.CapacityTokens), bytesByInterval: make([]float64, nCost)}
		r.series = ReplicaSeries{Arm: arm, Pod: r.name, Model: sc.Model, KVBlocks: spec.KV.Blocks,
			BlockSize: spec.KV.BlockSize, PrefixCaching: spec.PrefixCache.CapacityTokens > 0}
		r.c = newCounters()
		if spec.ColdStart {
			r.startedAt = 0
		} else if !spec.PrefixCache.StartCold {
			s.prewarm(r)
		}
		if s.shared != nil {
			r.queue = s.shared
		} else {
			r.queue = &reqQueue{}
		}
		s.reps = append(s.reps, r)
	}
	for i, f := range sc.Failures {
		if slices.Contains(f.arms(), arm) {
			s.push(event{t: f.At.Seconds(), kind: evFail, rep: int32(f.Replica), gen: int32(i)})
		}
	}
	for k := 0; float64(k)*sc.SampleInterval.Seconds() <= dur+1e-9; k++ {
		s.push(event{t: float64(k) * sc.SampleInterval.Seconds(), kind: evSample})
	}
	return s
}

// orOne returns m, or 1 when m is 0 (unset).
func orOne(m float64) float64 {
	if m == 0 {
		return 1
	}
	return m
}

// noiseFactor returns the arm's batch-noise step-time factor at time t
// (seconds from the window start; 1 when the arm has no batch noise).
// The AR(1) path is extended lazily; the event loop asks in time order, and
// the path depends only on the seed and the arm.
func (s *armSim) noiseFactor(t float64) float64 {
	if s.noise == nil {
		return 1
	}
	k := max(int(t/s.noiseDt), 0)
	if k >= len(s.noiseLog) {
		s.noiseLog = extendAR1(s.noiseLog, s.noise, s.spec.BatchNoise.Sigma, s.spec.BatchNoise.Phi, k+1)
	}
	return math.Exp(s.noiseLog[k])
}

// extendAR1 extends a stationary AR(1) path x (standard deviation sigma,
// lag-1 autocorrelation phi) to n values, drawing from rng.
func extendAR1(x []float64, rng *rand.Rand, sigma, phi float64, n int) []float64 {
	innov := sigma * math.Sqrt(1-phi*phi)
	for len(x) < n {
		if len(x) == 0 {
			x = append(x, sigma*rng.NormFloat64())
			continue
		}
		x = append(x, phi*x[len(x)-1]+innov*rng.NormFloat64())
	}
	return x
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// prewarm fills a replica's prefix cache with the most popular groups of
// each class, as a long-running replica's cache would hold.
func (s *armSim) prewarm(r *replica) {
	if r.cache.capacity == 0 {
		return
	}
	classes := s.sc.Traffic.Classes
	for rank := 0; ; rank++ {
		added := false
		for ci := len(classes) - 1; ci >= 0; ci-- {
			c := classes[ci]
			if rank < c.Prefix.Groups {
				added = true
				tok := s.cacheable(c.Prefix.Tokens)
				if r.cache.used+tok <= r.cache.capacity {
					r.cache.touch(groupKey(int32(ci), int32(rank)), tok)
				}
			}
		}
		if !added {
			return
		}
	}
}

func groupKey(class, group int32) int64 { return int64(class)<<32 | int64(group) }

func (s *armSim) cacheable(tokens int) int {
	bs := s.spec.KV.BlockSize
	return tokens / bs * bs
}

func (s *armSim) push(e event) {
	s.seq++
	e.seq = s.seq
	s.events.push(e)
}

// run executes the event loop until every request offered in the window
// has ended.
func (s *armSim) run(ctx context.Context) error {
	for n := 0; ; n++ {
		if n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		haveArr := s.next < len(s.arrs)
		if len(s.events) == 0 && !haveArr {
			return nil
		}
		if haveArr && (len(s.events) == 0 || s.arrs[s.next].t < s.events[0].t) {
			a := s.arrs[s.next]
			s.next++
			r := &simReq{class: a.class, group: a.group, user: a.user, prompt: a.prompt, output: a.output, attempt: 1}
			s.live++
			s.changeOutput(r)
			if j := s.spec.TPOTJitter; j > 0 {
				r.jitter = math.Exp(j * s.jitter.NormFloat64())
			}
			if g := s.spec.GatewayRetry; g.Share > 0 && s.fault.Float64() < g.Share {
				// the first attempt fails at the gateway, unlogged; only its retry is seen
				r.attempt = 2
				if at := a.t + g.Delay.Seconds(); at < s.end {
					s.push(event{t: at, kind: evRetry, req: r})
				} else {
					s.live--
				}
				continue
			}
			s.offer(r, a.t)
			continue
		}
		e := s.events.pop()
		if e.t > s.end+drainLimit && s.live > 0 {
			s.abandon(s.end + drainLimit)
			continue
		}
		switch e.kind {
		case evStepEnd:
			r := s.reps[e.rep]
			if r.up && r.gen == e.gen && r.busy {
				s.stepEnd(r, e.t)
			}
		case evDeadline:
			s.deadline(e.req, e.t)
		case evRetry:
			s.offer(e.req, e.t)
		case evFail:
			s.fail(s.reps[e.rep], e.t, s.sc.Failures[e.gen].RestartAfter.Seconds())
		case evRestart:
			s.restart(s.reps[e.rep], e.t)
		case evSample:
			s.sample(e.t)
		case evInput:
			s.inputDone(e.req, e.t)
		}
	}
}

// changeOutput applies the arm's output-length change to a first attempt.
func (s *armSim) changeOutput(r *simReq) {
	o := s.spec.Output
	if o.Scale != 0 && o.Scale != 1 {
		r.output = int32(max(1, math.Round(float64(r.output)*o.Scale)))
	}
	if o.ShortShare > 0 && s.fault.Float64() < o.ShortShare {
		r.output = 1
		r.emptyOut = o.ShortTokens == 0
	}
	if o.RunOnShare > 0 && s.fault.Float64() < o.RunOnShare {
		to := int32(o.RunOnTokens)
		if to == 0 {
			to = 1024
		}
		r.output, r.emptyOut = max(r.output, to), false
	}
}

// abandon ends every request still in flight after the drain limit: the
// client gives up on them.
func (s *armSim) abandon(t float64) {
	for _, r := range s.reps {
		for _, q := range slices.Clone(r.running) {
			s.end1(q, t, sources.StatusCanceled, true)
		}
		for q := r.queue.peek(); q != nil; q = r.queue.peek() {
			s.end1(q, t, sources.StatusCanceled, true)
		}
	}
}

// offer handles one offered request (first attempt or retry) at time t.
// The caller has already counted it in s.live.
func (s *armSim) offer(q *simReq, t float64) {
	q.id = s.nextID
	s.nextID++
	q.arrival = t
	q.replica = -1
	q.cached = -1
	q.sched, q.firstTok, q.lastTok = math.NaN(), math.NaN(), math.NaN()
	q.target = q.prompt
	q.burst = false
	if len(s.spec.ErrorBursts) > 0 {
		if r := s.spec.burstRate(t); r > 0 {
			q.burst = s.svc.Float64() < r
		}
	}
	up := s.upCount()
	if up == 0 {
		s.end1(q, t, sources.StatusRejected, false)
		return
	}
	if s.spec.ErrorStatus == "rejected" && s.spec.ErrorRate > 0 && s.svc.Float64() < s.spec.ErrorRate {
		s.end1(q, t, sources.StatusRejected, false) // a doomed request the gateway turns away
		return
	}
	if s.shared != nil {
		if lim := s.spec.QueueLimit; lim > 0 && s.shared.live >= lim*up {
			s.end1(q, t, sources.StatusRejected, false)
			return
		}
		if s.enqueue(q, s.shared, t) {
			s.kickIdle(t)
		}
		return
	}
	r := s.route()
	if lim := s.spec.QueueLimit; lim > 0 && r.queue.live >= lim {
		s.end1(q, t, sources.StatusRejected, false)
		return
	}
	q.replica = r.idx
	r.outstanding++
	if s.enqueue(q, r.queue, t) && !r.busy {
		s.startStep(r, t)
	}
}

// enqueue admits q: after its frontend input processing it joins queue.
// It reports whether q is on the queue now.
func (s *armSim) enqueue(q *simReq, queue *reqQueue, t float64) bool {
	q.doomed = s.spec.ErrorRate > 0 && s.spec.ErrorStatus != "rejected" && s.svc.Float64() < s.spec.ErrorRate
	q.doomed = q.doomed || q.burst
	if st := s.spec.Stalls; st.Scope == "request" && st.Probability > 0 && s.svc.Float64() < st.Probability {
		if st.Token > 0 {
			q.stallTok = min(int32(st.Token), q.output)
		} else {
			q.stallTok = 1 + s.svc.Int32N(q.output)
		}
	}
	s.scheduleDeadline(q, t)
	if d := s.spec.InputPerToken.Seconds() * float64(q.prompt); d > 0 {
		q.state = stInput
		s.push(event{t: t + d, kind: evInput, req: q})
		return false
	}
	q.state = stQueued
	queue.pushBack(q)
	return true
}

// inputDone moves q from input processing onto its engine queue.
func (s *armSim) inputDone(q *simReq, t float64) {
	if q.state != stInput {
		return
	}
	q.state = stQueued
	if s.shared != nil {
		s.shared.pushBack(q)
		s.kickIdle(t)
		return
	}
	r := s.reps[q.replica]
	if !r.up { // the replica died while the request was being processed
		q.state = stQueued
		r.queue.pushBack(q)
		s.end1(q, t, sources.StatusError, false)
		return
	}
	r.queue.pushBack(q)
	if !r.busy {
		s.startStep(r, t)
	}
}

// kickIdle starts the first idle live replica (shared queue).
func (s *armSim) kickIdle(t float64) {
	for _, x := range s.reps {
		if x.up && !x.busy {
			s.startStep(x, t)
			return
		}
	}
}

func (s *armSim) upCount() int {
	n := 0
	for _, r := range s.reps {
		if r.up {
			n++
		}
	}
	return n
}

// route picks the replica for a new request: the live replica with the
// fewest outstanding (waiting + running) requests, lowest index on ties;
// under the random router any live replica, each as likely.
func (s *armSim) route() *replica {
	if s.pick != nil {
		if n := s.upCount(); n > 0 {
			i := s.pick.IntN(n)
			for _, r := range s.reps {
				if r.up {
					if i == 0 {
						return r
					}
					i--
				}
			}
		}
		return nil
	}
	var best *replica
	for _, r := range s.reps {
		if !r.up {
			continue
		}
		if best == nil || r.outstanding < best.outstanding {
			best = r
		}
	}
	return best
}

// scheduleDeadline pushes the earliest deadline still ahead of q.
func (s *armSim) scheduleDeadline(q *simReq, now float64) {
	d := math.Inf(1)
	c := s.sc.Client
	if c.TTFTTimeout > 0 && math.IsNaN(q.firstTok) {
		d = min(d, q.arrival+c.TTFTTimeout.Seconds())
	}
	if c.Timeout > 0 {
		d = min(d, q.arrival+c.Timeout.Seconds())
	}
	if rt := s.spec.RequestTimeout; rt > 0 {
		d = min(d, q.arrival+rt.Seconds())
	}
	if d > now && !math.IsInf(d, 1) {
		s.push(event{t: d, kind: evDeadline, req: q})
	}
}

func (s *armSim) deadline(q *simReq, t float64) {
	if q.state == stDone {
		return
	}
	c := s.sc.Client
	const eps = 1e-9
	switch {
	case c.Timeout > 0 && t >= q.arrival+c.Timeout.Seconds()-eps:
		s.end1(q, t, sources.StatusCanceled, true)
	case c.TTFTTimeout > 0 && math.IsNaN(q.firstTok) && t >= q.arrival+c.TTFTTimeout.Seconds()-eps:
		s.end1(q, t, sources.StatusCanceled, true)
	case s.spec.RequestTimeout > 0 && t >= q.arrival+s.spec.RequestTimeout.Seconds()-eps:
		s.end1(q, t, sources.StatusTimeout, true)
	default:
		s.scheduleDeadline(q, t)
	}
}

// end1 ends one attempt that is waiting or running (or not yet admitted)
// with status st at time t, records it, counts the abort on its replica when
// a live engine saw it (countAbort) and schedules a retry when the client
// policy says so.
func (s *armSim) end1(q *simReq, t float64, st sources.Status, countAbort bool) {
	switch q.state {
	case stQueued:
		if s.shared != nil {
			s.shared.live--
		} else {
			s.reps[q.replica].queue.live--
		}
	case stRunning:
		r := s.reps[q.replica]
		if i := slices.Index(r.running, q); i >= 0 {
			r.running = slices.Delete(r.running, i, i+1)
		}
		r.kvFree += int(q.blocks)
		q.blocks = 0
	}
	if q.replica >= 0 && (q.state == stQueued || q.state == stRunning || q.state == stInput) {
		r := s.reps[q.replica]
		r.outstanding--
		if countAbort && r.up {
			r.c.finished[reasonAbort]++
		}
		s.addBytes(r, q, t)
	}
	q.state = stDone
	s.live--
	s.record(q, t, st)
	s.maybeRetry(q, st, t)
}

func (s *armSim) addBytes(r *replica, q *simReq, t float64) {
	if t >= s.end || t < 0 {
		return
	}
	c := s.spec.Cost
	b := c.BytesPerRequest + c.BytesPerToken*float64(q.prompt+q.gen)
	k := int(t / s.sc.CostInterval.Seconds())
	if k < len(r.bytesByInterval) {
		r.bytesByInterval[k] += b
	}
}

// record appends the client-side record of an ended attempt.
func (s *armSim) record(q *simReq, t float64, st sources.Status) {
	rec := sources.NewRequest()
	start := float64(s.sc.Start.Unix())
	rec.Time = start + q.arrival
	rec.Status = st
	rec.PromptTokens = int64(q.prompt)
	rec.Class = s.sc.Traffic.Classes[q.class].Name
	rec.Attempt = q.attempt
	if q.user >= 0 {
		rec.User = sources.UserOf([]byte(userName(s.arm, q.user, s.sc.Traffic.Users.Shared)))
	}
	if st == sources.StatusCanceled && s.spec.LogCanceledBy {
		rec.CanceledBy = sources.CanceledByClient
	}
	if q.replica >= 0 {
		rec.Replica = s.reps[q.replica].name
	}
	if st != sources.StatusRejected {
		rec.E2E = t - q.arrival
		rec.OutputTokens = int64(q.gen)
		if q.emptyOut {
			rec.OutputTokens = 0
		}
		if q.cached >= 0 {
			rec.CachedTokens = int64(q.cached)
		}
		if !math.IsNaN(q.firstTok) {
			rec.TTFT = q.firstTok + q.firstShift - q.arrival
		}
		if q.gen > 1 {
			rec.MaxITL = q.maxITL
		}
	}
	if st == sources.StatusOK {
		if q.gen > 1 {
			rec.TPOT = (rec.E2E - rec.TTFT) / float64(q.gen-1)
		}
		if s.spec.Quality.Check {
			rec.Quality = sources.QualityOK
			if s.spec.Quality.ErrorRate > 0 && s.svc.Float64() < s.spec.Quality.ErrorRate {
				rec.Quality = sources.QualityBad
			}
		}
	}
	s.out = append(s.out, rec)
	s.ids = append(s.ids, q.id)
}

func (s *armSim) blocksFor(tokens int32) int {
	return int((tokens + s.blockSize - 1) / s.blockSize)
}

// warm returns the warm-up step-time multiplier of r at time t.
func (s *armSim) warm(r *replica, t float64) float64 {
	w := s.spec.Warmup
	if w.Slowdown <= 1 || w.Duration <= 0 || math.IsInf(r.startedAt, -1) {
		return 1
	}
	f := 1 - (t-r.startedAt)/w.Duration.Seconds()
	if f <= 0 {
		return 1
	}
	return 1 + (w.Slowdown-1)*f
}

// preempt evicts q from r: its blocks are freed, and it goes back to the
// front of the queue to recompute its prompt and output so far.
func (s *armSim) preempt(r *replica, q *simReq) {
	if i := slices.Index(r.running, q); i >= 0 {
		r.running = slices.Delete(r.running, i, i+1)
	}
	r.kvFree += int(q.blocks)
	q.blocks = 0
	q.recomp = q.gen
	q.target = q.prompt + q.recomp
	q.computed = 0
	q.state = stQueued
	if s.shared != nil {
		r.outstanding--
		q.replica = -1
	}
	r.queue.pushFront(q)
	r.c.preempt++
}

// kvNeed is the number of extra blocks q needs to hold its tokens after a
// step that processes chunk prefill tokens (or one decode token).
func (s *armSim) kvNeed(q *simReq, chunk int32) int {
	if s.waitKV {
		return 0
	}
	var tokens int32
	if chunk == 0 {
		tokens = q.prompt + q.gen + 1
	} else {
		tokens = q.computed + chunk + 1
	}
	if tokens <= q.blocks*s.blockSize {
		return 0
	}
	return s.blocksFor(tokens) - int(q.blocks)
}

// admitBlocks is the number of blocks a waiting request needs to be admitted.
func (s *armSim) admitBlocks(q *simReq) int {
	if s.spec.KV.OnExhaustion == "wait" {
		return s.blocksFor(q.prompt + q.output)
	}
	return s.blocksFor(q.target + 1)
}

// admit moves the head of r's queue into its running set.
func (s *armSim) admit(r *replica, q *simReq, t float64) {
	r.queue.pop()
	if q.replica != r.idx { // shared queue: the request is served here
		q.replica = r.idx
		r.outstanding++
	}
	q.state = stRunning
	if math.IsNaN(q.sched) {
		q.sched = t
	}
	q.computed = 0
	if q.group >= 0 && r.cache.capacity > 0 {
		key := groupKey(q.class, q.group)
		tok := int32(s.cacheable(s.sc.Traffic.Classes[q.class].Prefix.Tokens))
		if r.cache.has(key) {
			q.computed = min(tok, q.target-1)
		}
		r.cache.touch(key, int(tok))
	}
	if q.cached < 0 {
		q.cached = q.computed
	}
	r.c.pqueries += float64(q.target)
	r.c.phits += float64(q.computed)
	nb := s.admitBlocks(q)
	r.kvFree -= nb
	q.blocks = int32(nb)
	r.running = append(r.running, q)
}

// startStep builds and starts r's next engine step at time t, or leaves r
// idle when it has nothing to do.
func (s *armSim) startStep(r *replica, t float64) {
	spec := s.spec
	r.batch = r.batch[:0]
	budget := int32(spec.MaxBatchedTokens)
	// make room for this step's decode tokens, preempting the newest
	// running requests when blocks run out
	// (a decode needs at most one new block, so with as many free blocks as
	// running requests there is nothing to check)
	for r.kvFree < len(r.running) && spec.KV.OnExhaustion == "preempt" {
		need := 0
		for _, q := range r.running {
			if q.computed == q.target {
				need += s.kvNeed(q, 0)
			}
		}
		if need <= r.kvFree || len(r.running) <= 1 {
			break
		}
		s.preempt(r, r.running[len(r.running)-1])
	}
	var nDec, ctxTok, pre float64
	prefillStep := false
	if spec.Scheduler == "fcfs" {
		if h := r.queue.peek(); h != nil && len(r.running) < spec.MaxBatch && s.admitBlocks(h) <= r.kvFree {
			prefillStep = true
			used := int32(0)
			for h := r.queue.peek(); h != nil && len(r.running) < spec.MaxBatch && s.admitBlocks(h) <= r.kvFree; h = r.queue.peek() {
				if used > 0 && used+h.target > budget {
					break
				}
				s.admit(r, h, t)
				used += h.target - h.computed
				pre += float64(h.target - h.computed)
				r.batch = append(r.batch, stepItem{r: h, chunk: h.target - h.computed})
			}
		}
	}
	if !prefillStep {
		partial := false
		for _, q := range r.running {
			if q.computed != q.target {
				partial = true
				continue
			}
			if n := s.kvNeed(q, 0); n > 0 {
				r.kvFree -= n
				q.blocks += int32(n)
			}
			r.batch = append(r.batch, stepItem{r: q})
			nDec++
			ctxTok += float64(q.prompt + q.gen)
		}
		budget -= int32(nDec)
		if spec.Scheduler == "chunked" {
			for _, q := range r.running {
				if budget <= 0 || !partial {
					break
				}
				if q.computed < q.target {
					chunk := min(q.target-q.computed, budget)
					n := s.kvNeed(q, chunk)
					if n > r.kvFree {
						continue
					}
					r.kvFree -= n
					q.blocks += int32(n)
					r.batch = append(r.batch, stepItem{r: q, chunk: chunk})
					pre += float64(chunk)
					budget -= chunk
				}
			}
			for budget > 0 && len(r.running) < spec.MaxBatch {
				h := r.queue.peek()
				if h == nil || s.admitBlocks(h) > r.kvFree {
					break
				}
				s.admit(r, h, t)
				chunk := min(h.target-h.computed, budget)
				if n := s.kvNeed(h, chunk); n > 0 && n <= r.kvFree {
					r.kvFree -= n
					h.blocks += int32(n)
				}
				r.batch = append(r.batch, stepItem{r: h, chunk: chunk})
				pre += float64(chunk)
				budget -= chunk
			}
		}
	}
	if len(r.batch) == 0 {
		r.busy = false
		return
	}
	st := spec.Step
	dec := st.Base.Seconds() + st.DecodePerSeq.Seconds()*nDec + st.PerContextToken.Seconds()*ctxTok
	if spec.DecodeLeakPerHour > 0 {
		dec *= 1 + spec.DecodeLeakPerHour*t/3600
	}
	dt := dec/spec.DecodeSpeed + st.PrefillPerToken.Seconds()*pre/spec.PrefillSpeed
	dt *= s.warm(r, t) * s.noiseFactor(t) * r.speed
	if spec.Stalls.Probability > 0 && spec.Stalls.Scope != "request" && s.svc.Float64() < spec.Stalls.Probability {
		dt += spec.Stalls.Duration.Seconds()
	}
	if dt <= 0 {
		dt = 1e-6
	}
	r.busy = true
	r.stepStart = t
	r.stepDur = dt
	r.stepPower = 0.55 + 0.45*min(1, (pre+8*nDec)/float64(spec.MaxBatchedTokens))
	s.push(event{t: t + dt, kind: evStepEnd, rep: r.idx, gen: r.gen})
}

// stepEnd applies the results of r's step that ends at t and starts the next.
func (s *armSim) stepEnd(r *replica, t float64) {
	s.accountBusy(r, r.stepStart, t)
	r.busy = false
	finished := false
	tokens := 0.0
	for _, it := range r.batch {
		q := it.r
		if q.state != stRunning || q.replica != r.idx {
			continue
		}
		if it.chunk > 0 {
			q.computed += it.chunk
			if q.computed < q.target {
				continue
			}
		}
		stall := 0.0
		if q.gen+1 == q.stallTok {
			stall = s.spec.Stalls.Duration.Seconds()
		}
		if q.gen == 0 {
			q.firstTok = t
			q.shift += stall
			if m := s.ttftMul[q.class]; m != 1 {
				q.shift += (m - 1) * (t + q.shift - q.arrival)
			}
			q.firstShift = q.shift
			r.c.ttft.observe(s.ttftE, t+q.shift-q.arrival)
			r.c.prompt += float64(q.prompt)
		} else {
			gap := t - q.lastTok + stall
			m := s.tpotMul[q.class]
			if q.jitter > 0 {
				m *= q.jitter
			}
			if m != 1 {
				gap += (m - 1) * (t - q.lastTok)
			}
			q.maxITL = max(q.maxITL, gap)
			q.shift += gap - (t - q.lastTok)
		}
		q.gen++
		q.lastTok = t
		tokens++
		if q.gen >= q.output {
			s.finish(r, q, t)
			finished = true
		}
	}
	r.c.gen += tokens
	if t < s.end {
		s.tokensPerMinute[int(t/60)] += tokens
	}
	if finished {
		r.running = slices.DeleteFunc(r.running, func(q *simReq) bool { return q.state == stDone })
	}
	s.startStep(r, t)
	if s.shared != nil && s.shared.live > 0 {
		for _, x := range s.reps {
			if x.up && !x.busy {
				s.startStep(x, t)
			}
		}
	}
}

// finish completes q on r (status ok, or error for a doomed request).
func (s *armSim) finish(r *replica, q *simReq, t float64) {
	r.kvFree += int(q.blocks)
	q.blocks = 0
	q.state = stDone
	r.outstanding--
	s.live--
	st := sources.StatusOK
	reason := reasonStop
	if q.doomed {
		st, reason = s.errSt, reasonError
	} else if c := s.lenCaps[q.class]; c > 0 && q.output >= c {
		reason = reasonLength
	}
	r.c.finished[reason]++
	if st == sources.StatusOK {
		e2e := t + q.shift - q.arrival
		r.c.e2e.observe(s.e2eE, e2e)
		r.c.queueTime.observe(s.e2eE, q.sched-q.arrival)
		tpot := 0.0
		if q.gen > 1 {
			tpot = (t + q.shift - q.firstTok - q.firstShift) / float64(q.gen-1)
		}
		r.c.tpot.observe(s.tpotE, tpot)
	}
	s.addBytes(r, q, t)
	s.record(q, t+q.shift, st)
	if q.doomed && st == sources.StatusCanceled && s.spec.LogCanceledBy {
		s.out[len(s.out)-1].CanceledBy = sources.CanceledByServer // the server aborted it
	}
	s.maybeRetry(q, st, t+q.shift)
}

// maybeRetry schedules the next attempt of q after a backoff when its
// outcome is retried and attempts remain; retries that would arrive after
// the window are not offered.
func (s *armSim) maybeRetry(q *simReq, st sources.Status, t float64) {
	rt := s.sc.Client.Retry
	if st == sources.StatusOK || !s.retryOn[st] || int(q.attempt) >= rt.MaxAttempts {
		return
	}
	delay := rt.Backoff.Seconds() * math.Pow(rt.Multiplier, float64(q.attempt-1))
	if rt.Jitter > 0 {
		delay *= 1 + rt.Jitter*(2*s.cli.Float64()-1)
	}
	if at := t + delay; at < s.end {
		nq := &simReq{class: q.class, group: q.group, user: q.user, prompt: q.prompt, output: q.output, attempt: q.attempt + 1, emptyOut: q.emptyOut, jitter: q.jitter}
		s.live++
		s.push(event{t: at, kind: evRetry, req: nq})
	}
}

// accountBusy adds the busy interval [a, b) to r and the per-minute totals.
func (s *armSim) accountBusy(r *replica, a, b float64) {
	r.busyAcc += b - a
	r.activeAcc += (b - a) * r.stepPower
	for a < b && a < s.end {
		m := int(a / 60)
		e := min(b, float64(m+1)*60, s.end)
		s.busyPerMinute[m] += e - a
		a = e
	}
}

// fail kills replica r at t: queued and running requests fail with a
// server error, counters and cache are lost; it restarts after restartAfter
// seconds (0 = never).
func (s *armSim) fail(r *replica, t, restartAfter float64) {
	if !r.up {
		return
	}
	if r.busy {
		s.accountBusy(r, r.stepStart, t)
		r.busy = false
	}
	r.up = false
	r.gen++
	for _, q := range slices.Clone(r.running) {
		s.end1(q, t, sources.StatusError, false)
	}
	if s.shared == nil {
		for q := r.queue.peek(); q != nil; q = r.queue.peek() {
			s.end1(q, t, sources.StatusError, false)
		}
	}
	r.running = r.running[:0]
	r.kvFree = s.spec.KV.Blocks
	r.cache = newPrefixLRU(s.spec.PrefixCache.CapacityTokens)
	if restartAfter > 0 {
		s.push(event{t: t + restartAfter, kind: evRestart, rep: r.idx})
	} else {
		r.provisioned = false
		r.lostAt = t
	}
}

func (s *armSim) restart(r *replica, t float64) {
	r.up = true
	r.startedAt = t
	r.c = newCounters()
	if s.shared != nil && !r.busy {
		s.startStep(r, t)
	}
}
