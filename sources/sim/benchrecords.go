package sim

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/goodput-dev/goodput/sources"
)

// BenchRequests fills reqs with synthetic chat traffic of one arm, the
// records `goodput bench` writes and times the judges on: rate arrivals per
// second (Poisson), 8 replicas, 5% long prompts, lognormal TTFT (median
// 250 ms; long prompts 4×) and TPOT (median 30 ms), 98.8% ok, 0.5% errors,
// 0.2% timeouts, 0.3% canceled, 0.2% rejected, 1% retries; times and
// latencies rounded to the microsecond. The canary's TTFT is 3% higher.
// first is the index of reqs[0] in the arm and t the previous arrival
// (unix seconds); it returns the last arrival. The random stream depends
// only on the arm and first, so the same chunks give the same records.
func BenchRequests(reqs []sources.Request, arm sources.Arm, first int, t, rate float64) float64 {
	stream := uint64(1)
	scale := 1.0
	if arm == sources.Canary {
		stream, scale = 2, 1.03
	}
	rng := rand.New(rand.NewPCG(uint64(first)+1, stream))
	var replicas [8]string
	for i := range replicas {
		replicas[i] = "replica-" + strconv.Itoa(i)
	}
	for i := range reqs {
		t += rng.ExpFloat64() / rate
		r := sources.NewRequest()
		r.Time = math.Round(t*1e6) / 1e6
		long := rng.Float64() < 0.05
		if long {
			r.PromptTokens = int64(8192 + rng.IntN(24000))
		} else {
			r.PromptTokens = int64(math.Max(16, math.Round(600*math.Exp(0.7*rng.NormFloat64()))))
		}
		r.CachedTokens = r.PromptTokens * int64(rng.IntN(4)) / 4
		r.Replica = replicas[rng.IntN(8)]
		r.Attempt = 1
		if rng.Float64() < 0.01 {
			r.Attempt = 2
		}
		u := rng.Float64()
		switch {
		case u < 0.002:
			r.Status = sources.StatusRejected
		case u < 0.005:
			r.Status = sources.StatusCanceled
			r.TTFT = round6(0.25 * math.Exp(0.5*rng.NormFloat64()))
		case u < 0.007:
			r.Status = sources.StatusTimeout
		case u < 0.012:
			r.Status = sources.StatusError
		default:
			r.Status = sources.StatusOK
			ttft := 0.25 * scale * math.Exp(0.5*rng.NormFloat64())
			if long {
				ttft *= 4
			}
			r.OutputTokens = int64(math.Max(1, math.Round(180*math.Exp(0.6*rng.NormFloat64()))))
			tpot := 0.03 * math.Exp(0.3*rng.NormFloat64())
			r.TTFT = round6(ttft)
			if r.OutputTokens > 1 {
				r.TPOT = round6(tpot)
				r.E2E = round6(ttft + tpot*float64(r.OutputTokens-1))
				r.MaxITL = round6(tpot * (1.5 + rng.ExpFloat64()))
			} else {
				r.E2E = r.TTFT
			}
		}
		reqs[i] = r
	}
	return t
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }
