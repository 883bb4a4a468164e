package sim

import (
	"math"
	"sort"

	"github.com/goodput-dev/goodput/sources"
)

// TTFTBuckets returns the upper bounds (seconds, without +Inf) of the
// time-to-first-token histogram: vLLM V1's defaults.
func TTFTBuckets() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10, 20, 40, 80, 160, 640, 2560}
}

// TPOTBuckets returns the upper bounds (seconds per token, without +Inf) of
// the request time-per-output-token histogram: vLLM V1's defaults.
func TPOTBuckets() []float64 {
	return []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
		2.5, 5.0, 7.5, 10, 20, 40, 80}
}

// E2EBuckets returns the upper bounds (seconds, without +Inf) of the
// end-to-end latency and queue-time histograms: vLLM V1's defaults.
func E2EBuckets() []float64 {
	return []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10, 15, 20, 30, 40, 50, 60,
		120, 240, 480, 960, 1920, 7680}
}

// HistCounts is a histogram snapshot: Counts[i] is the number of
// observations in bucket i (not cumulative), the last entry being the +Inf
// bucket; Sum is the sum of the observations. Bucket bounds are those of the
// family: TTFTBuckets, TPOTBuckets or E2EBuckets.
type HistCounts struct {
	Counts []float64
	Sum    float64
}

// Total is the number of observations.
func (h HistCounts) Total() float64 {
	t := 0.0
	for _, c := range h.Counts {
		t += c
	}
	return t
}

type hist struct {
	counts []float64
	sum    float64
}

func newHist(edges []float64) hist { return hist{counts: make([]float64, len(edges)+1)} }

func (h *hist) observe(edges []float64, v float64) {
	i := sort.SearchFloat64s(edges, v) // first edge ≥ v: le semantics
	h.counts[i]++
	h.sum += v
}

func (h *hist) snapshot() HistCounts {
	return HistCounts{Counts: append([]float64(nil), h.counts...), Sum: h.sum}
}

// EngineCounters are a replica's cumulative engine counters since its last
// (re)start, as a vLLM V1 /metrics scrape shows them.
type EngineCounters struct {
	// Finished by finished_reason: stop, length, abort, error.
	FinishedStop, FinishedLength, FinishedAbort, FinishedError float64
	PromptTokens                                               float64 // prompt tokens of requests that reached their first token
	GenerationTokens                                           float64 // output tokens produced
	PrefixQueries                                              float64 // prompt tokens looked up in the prefix cache
	PrefixHits                                                 float64 // of which found
	Preemptions                                                float64
	TTFT                                                       HistCounts // seconds
	TPOT                                                       HistCounts // request_time_per_output_token, seconds
	E2E                                                        HistCounts // seconds
	QueueTime                                                  HistCounts // seconds
}

// ReplicaSample is one scrape of one replica.
type ReplicaSample struct {
	Time         float64 // unix seconds
	Running      int     // requests in the batch
	Waiting      int     // requests queued at the replica (a shared gateway queue is spread over the live replicas)
	KVUsage      float64 // fraction of KV blocks in use, 0..1
	KVBlocksFree int
	GPUUtil      float64 // fraction of the preceding interval the GPU was busy, 0..1
	PowerW       float64 // mean power over the preceding interval, watts
	FBUsedMiB    float64 // framebuffer memory used, MiB
	Counters     EngineCounters
}

// ReplicaSeries is one replica's scrapes, in time order. A replica that is
// down is not scraped; its counters restart from 0 after a restart.
type ReplicaSeries struct {
	Arm           sources.Arm
	Pod           string
	Model         string
	KVBlocks      int  // KV blocks per replica (vllm:cache_config_info num_gpu_blocks)
	BlockSize     int  // tokens per KV block
	PrefixCaching bool // prefix cache enabled
	Samples       []ReplicaSample
}

func newCounters() counters {
	return counters{ttft: newHist(TTFTBuckets()), tpot: newHist(TPOTBuckets()),
		e2e: newHist(E2EBuckets()), queueTime: newHist(E2EBuckets())}
}

// sample scrapes every live replica at window offset t.
func (s *armSim) sample(t float64) {
	iv := s.sc.SampleInterval.Seconds()
	rank := 0 // among live replicas
	for _, r := range s.reps {
		busy, active := r.busyAcc, r.activeAcc
		if r.busy {
			busy += t - r.stepStart
			active += (t - r.stepStart) * r.stepPower
		}
		util := (busy - r.lastBusy) / iv
		act := (active - r.lastActive) / iv
		r.lastBusy, r.lastActive = busy, active
		if !r.up {
			continue
		}
		g := s.spec.GPU
		waiting := r.queue.live
		if s.shared != nil {
			// the gateway queue, shared out over the live replicas so that
			// the gauges sum to its length
			n := s.upCount()
			waiting = s.shared.live / n
			if rank < s.shared.live%n {
				waiting++
			}
		}
		rank++
		smp := ReplicaSample{
			Time:         float64(s.sc.Start.Unix()) + t,
			Running:      len(r.running),
			Waiting:      waiting,
			KVUsage:      1 - float64(r.kvFree)/float64(s.spec.KV.Blocks),
			KVBlocksFree: r.kvFree,
			GPUUtil:      clamp01(util),
			PowerW:       g.IdlePowerW + (g.MaxPowerW-g.IdlePowerW)*clamp01(act),
			FBUsedMiB:    math.Round(g.MemoryMiB*g.MemoryFraction + 512*float64(len(r.running))/float64(s.spec.MaxBatch)),
			Counters: EngineCounters{
				FinishedStop: r.c.finished[reasonStop], FinishedLength: r.c.finished[reasonLength],
				FinishedAbort: r.c.finished[reasonAbort], FinishedError: r.c.finished[reasonError],
				PromptTokens: r.c.prompt, GenerationTokens: r.c.gen,
				PrefixQueries: r.c.pqueries, PrefixHits: r.c.phits, Preemptions: r.c.preempt,
				TTFT: r.c.ttft.snapshot(), TPOT: r.c.tpot.snapshot(), E2E: r.c.e2e.snapshot(), QueueTime: r.c.queueTime.snapshot(),
			},
		}
		r.series.Samples = append(r.series.Samples, smp)
	}
}

func clamp01(x float64) float64 { return min(1, max(0, x)) }

// CostRecord is the cost of one replica over one interval, in USD, in the
// format of the judge's --cost input.
type CostRecord struct {
	Start, End     float64 // unix seconds
	Arm            sources.Arm
	Replica        string
	AcceleratorUSD float64
	HostUSD        float64
	NetworkUSD     float64
	IdleReserveUSD float64
}

// costs bills every replica per cost interval for the time it was
// provisioned, plus the network bytes of the requests that ended on it.
func (s *armSim) costs() []CostRecord {
	ci := s.sc.CostInterval.Seconds()
	start := float64(s.sc.Start.Unix())
	c := s.spec.Cost
	var out []CostRecord
	for k := 0; float64(k)*ci < s.end; k++ {
		a, b := float64(k)*ci, min(float64(k+1)*ci, s.end)
		for _, r := range s.reps {
			prov := max(0, min(b, r.lostAt)-a) / 3600
			out = append(out, CostRecord{Start: start + a, End: start + b, Arm: s.arm, Replica: r.name,
				AcceleratorUSD: c.AcceleratorPerHour * prov, HostUSD: c.HostPerHour * prov,
				IdleReserveUSD: c.IdleReservePerHour * prov,
				NetworkUSD:     c.NetworkPerGB * r.bytesByInterval[k] / 1e9})
		}
	}
	return out
}
