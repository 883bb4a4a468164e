package sim

import (
	"math"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/goodput-dev/goodput/sources"
)

// armStats are the per-arm facts the blind-spot checks look at.
type armStats struct {
	offered, ok, canceled, rejected, failed, retried, shortOK float64
	meanOut                                                   float64
	capped                                                    float64 // ok completions with ≥ 1024 output tokens
	// canceled requests by who the log says canceled them
	byServer, byClient            float64
	ttftChat, tpotEarly, tpotLate float64 // medians, seconds
	maxTTFT                       float64 // seconds, over ok completions
	byReplica                     map[string]float64
}

func statsOf(res *Result, arm sources.Arm) armStats {
	var s armStats
	s.byReplica = map[string]float64{}
	start := float64(res.Scenario.Start.Unix())
	dur := res.Scenario.Duration.Seconds()
	var out, ttft, early, late []float64
	for _, r := range res.Requests(arm) {
		s.offered++
		if r.Attempt > 1 {
			s.retried++
		}
		s.byReplica[r.Replica]++
		switch r.Status {
		case sources.StatusOK:
			s.ok++
			out = append(out, float64(r.OutputTokens))
			if r.OutputTokens < 2 {
				s.shortOK++
			}
			if r.OutputTokens >= 1024 {
				s.capped++
			}
			if r.Class == "chat" {
				ttft = append(ttft, r.TTFT)
			}
			s.maxTTFT = math.Max(s.maxTTFT, r.TTFT)
			if sources.Known(r.TPOT) {
				switch off := r.Time - start; {
				case off < dur/6:
					early = append(early, r.TPOT)
				case off > dur*5/6:
					late = append(late, r.TPOT)
				}
			}
		case sources.StatusCanceled:
			s.canceled++
			switch r.CanceledBy {
			case sources.CanceledByServer:
				s.byServer++
			case sources.CanceledByClient:
				s.byClient++
			}
		case sources.StatusRejected:
			s.rejected++
		default:
			s.failed++
		}
	}
	s.meanOut = stat.Mean(out, nil)
	med := func(x []float64) float64 {
		if len(x) == 0 {
			return math.NaN()
		}
		return quantile(x, 0.5)
	}
	s.ttftChat, s.tpotEarly, s.tpotLate = med(ttft), med(early), med(late)
	return s
}

// TestBlindSpotScenarios runs every blind-spot built-in and checks that
// its canary carries the harm its description names, and that the
// baseline does not.
func TestBlindSpotScenarios(t *testing.T) {
	near := func(t *testing.T, what string, got, want, tol float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
		}
	}
	for _, tc := range []struct {
		name  string
		dur   time.Duration
		check func(t *testing.T, b, c armStats)
	}{
		{"bs-short-outputs", 10 * time.Minute, func(t *testing.T, b, c armStats) {
			near(t, "canary share of ok completions with < 2 output tokens", c.shortOK/c.ok, 0.08, 0.01)
			if b.shortOK/b.ok > 0.005 {
				t.Errorf("baseline short completions %.4f", b.shortOK/b.ok)
			}
		}},
		{"bs-half-outputs", 10 * time.Minute, func(t *testing.T, b, c armStats) {
			near(t, "canary/baseline mean output tokens", c.meanOut/b.meanOut, 0.5, 0.04)
		}},
		{"bs-answers-run-on", 10 * time.Minute, func(t *testing.T, b, c armStats) {
			near(t, "canary share of ok completions at the 1024-token cap", c.capped/c.ok-b.capped/b.ok, 0.05, 0.01)
			if r := c.meanOut / b.meanOut; r < 1.1 {
				t.Errorf("canary/baseline mean output tokens %.3f: answers that run on should lengthen the mean", r)
			}
		}},
		{"bs-log-drops-slow", 30 * time.Minute, func(t *testing.T, b, c armStats) {
			if c.maxTTFT > 1.7 || b.maxTTFT <= 1.7 {
				t.Errorf("largest TTFT %.3f s in the canary's log, %.3f s in the baseline's: the canary's should stop at 1.7 s, the baseline's run past it", c.maxTTFT, b.maxTTFT)
			}
			// the lost records are inside offered_load_ratio's 3% tolerance
			if r := c.offered / b.offered; r < 0.97 || r >= 1 {
				t.Errorf("canary/baseline records %.4f: want 1–2%% fewer", r)
			}
		}},
		{"bs-shed-8", 30 * time.Minute, func(t *testing.T, b, c armStats) {
			near(t, "canary/baseline offered", c.offered/b.offered, 0.92, 0.02)
		}},
		{"bs-retry-5", 10 * time.Minute, func(t *testing.T, b, c armStats) {
			near(t, "canary share of attempt > 1", c.retried/c.offered, 0.05, 0.008)
			if b.retried > 0 || c.failed+c.canceled+c.rejected > 0 {
				t.Errorf("retries must be the only sign: baseline retried %v, canary failed %v canceled %v rejected %v",
					b.retried, c.failed, c.canceled, c.rejected)
			}
		}},
		{"bs-errors-canceled", 10 * time.Minute, func(t *testing.T, b, c armStats) {
			near(t, "canary canceled share", c.canceled/c.offered, 0.03, 0.006)
			if c.failed > 0 || b.canceled > 0 {
				t.Errorf("errors must be logged as canceled only: canary failed %v, baseline canceled %v", c.failed, b.canceled)
			}
		}},
		{"bs-server-cancels", 10 * time.Minute, func(t *testing.T, b, c armStats) {
			near(t, "canary share canceled by the server", c.byServer/c.offered, 0.015, 0.004)
			if c.failed > 0 || b.byServer > 0 || b.canceled != b.byClient || c.canceled != c.byServer+c.byClient {
				t.Errorf("only the canary's server cancels are the harm, and every cancel says who: canary failed %v canceled %v (server %v, client %v), baseline canceled %v (server %v, client %v)",
					c.failed, c.canceled, c.byServer, c.byClient, b.canceled, b.byServer, b.byClient)
			}
		}},
		{"bs-errors-rejected", 10 * time.Minute, func(t *testing.T, b, c armStats) {
			near(t, "canary rejected share", c.rejected/c.offered, 0.03, 0.006)
			if c.failed > 0 || b.rejected > 0 || c.byReplica[""] != c.rejected {
				t.Errorf("rejected requests never reach a replica: failed %v, unrouted %v of %v", c.failed, c.byReplica[""], c.rejected)
			}
		}},
		{"bs-class-ttft-50", 10 * time.Minute, func(t *testing.T, b, c armStats) {
			near(t, "canary/baseline median chat TTFT", c.ttftChat/b.ttftChat, 1.5, 0.08)
		}},
		{"bs-tpot-leak", 30 * time.Minute, func(t *testing.T, b, c armStats) {
			lb, lc := b.tpotLate/b.tpotEarly, c.tpotLate/c.tpotEarly
			if lc < lb*1.15 {
				t.Errorf("median TPOT late/early: canary %.3f, baseline %.3f; the canary's must grow by ≥ 15%% more", lc, lb)
			}
		}},
		{"bs-replica-lost", 20 * time.Minute, func(t *testing.T, b, c armStats) {
			if c.byReplica["canary-1"] > 0.6*c.byReplica["canary-0"] || b.byReplica["baseline-1"] < 0.8*b.byReplica["baseline-0"] {
				t.Errorf("requests per replica: canary %v, baseline %v", c.byReplica, b.byReplica)
			}
		}},
		{"bs-replica-restart", 20 * time.Minute, func(t *testing.T, b, c armStats) {
			// out from 10 to 12 min: 2 of 20 minutes without requests
			if r := c.byReplica["canary-1"] / c.byReplica["canary-0"]; r < 0.8 || r > 0.95 || b.byReplica["baseline-1"] < 0.9*b.byReplica["baseline-0"] {
				t.Errorf("requests per replica: canary %v, baseline %v", c.byReplica, b.byReplica)
			}
		}},
		{"bs-slow-start-10m", 30 * time.Minute, func(t *testing.T, b, c armStats) {
			if c.tpotEarly < 1.2*b.tpotEarly || c.tpotLate > 1.05*b.tpotLate {
				t.Errorf("median TPOT early %.4f vs %.4f (want canary ≥ 1.2×), late %.4f vs %.4f (want alike)",
					c.tpotEarly, b.tpotEarly, c.tpotLate, b.tpotLate)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runBuiltin(t, tc.name, 3, tc.dur)
			tc.check(t, statsOf(res, sources.Baseline), statsOf(res, sources.Canary))
		})
	}
}

// TestMixShiftPerClassIdentical checks the premise of mix-shift-labels:
// the canary's mix moves (35% → 10% long), but each labelled class is
// served as in the baseline (median TTFT and TPOT within 5%), while
// masked-regression's canary is ≥ 12% slower per token in every class.
func TestMixShiftPerClassIdentical(t *testing.T) {
	perClass := func(reqs []sources.Request, class string) (share, ttft, tpot float64) {
		var n, k float64
		var a, b []float64
		for _, r := range reqs {
			n++
			if r.Class != class {
				continue
			}
			k++
			if r.Status == sources.StatusOK && sources.Known(r.TPOT) {
				a, b = append(a, r.TTFT), append(b, r.TPOT)
			}
		}
		return k / n, quantile(a, 0.5), quantile(b, 0.5)
	}
	mix := runBuiltin(t, "mix-shift-labels", 4, 0)
	masked := runBuiltin(t, "masked-regression", 4, 0)
	for _, class := range []string{"chat", "long"} {
		sb, tb, pb := perClass(mix.Baseline, class)
		sc, tc, pc := perClass(mix.Canary, class)
		wantB, wantC := map[string]float64{"chat": 0.65, "long": 0.35}[class], map[string]float64{"chat": 0.90, "long": 0.10}[class]
		if math.Abs(sb-wantB) > 0.02 || math.Abs(sc-wantC) > 0.02 {
			t.Errorf("%s share %.3f → %.3f, want %.2f → %.2f", class, sb, sc, wantB, wantC)
		}
		if math.Abs(tc/tb-1) > 0.05 || math.Abs(pc/pb-1) > 0.05 {
			t.Errorf("%s: median TTFT %.3f vs %.3f, TPOT %.4f vs %.4f; per-class behaviour must be alike", class, tb, tc, pb, pc)
		}
		_, _, mb := perClass(masked.Baseline, class)
		_, _, mc := perClass(masked.Canary, class)
		if mc < 1.12*mb {
			t.Errorf("masked-regression %s: median TPOT %.4f vs %.4f, want ≥ 12%% worse", class, mc, mb)
		}
	}
}

// TestErrorBurst checks the premise of bs-error-burst: the canary fails
// about 45% of its requests from minute 15 to 17 and about as many as the
// baseline (almost none) before and after; the baseline never bursts.
func TestErrorBurst(t *testing.T) {
	res := runBuiltin(t, "bs-error-burst", 3, 20*time.Minute)
	start := float64(res.Scenario.Start.Unix())
	share := func(arm sources.Arm, in bool) float64 {
		var n, bad float64
		for _, r := range res.Requests(arm) {
			off := r.Time - start
			if (off >= 15*60+5 && off < 17*60-5) != in {
				continue
			}
			if in || off < 15*60-5 || off >= 17*60+60 {
				n++
				if r.Status == sources.StatusError {
					bad++
				}
			}
		}
		return bad / n
	}
	if c := share(sources.Canary, true); c < 0.38 || c > 0.52 {
		t.Errorf("canary's error share in the burst %.3f, want about 0.45", c)
	}
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		if s := share(arm, false); s > 0.01 {
			t.Errorf("%s error share outside the burst %.3f, want < 1%%", arm, s)
		}
	}
	if b := share(sources.Baseline, true); b > 0.01 {
		t.Errorf("baseline error share during the canary's burst %.3f", b)
	}
}
