package sim

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

func runBuiltin(t *testing.T, name string, seed uint64, dur time.Duration) *Result {
	t.Helper()
	sc, err := Builtin(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sc, seed, dur)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestBuiltinsListed(t *testing.T) {
	names := BuiltinNames()
	for _, want := range []string{"steady", "kernel-faster", "tail-regression", "mix-shift", "cold-start",
		"replica-loss", "seed-overload", "aa-autocorrelated", "cache-cold", "regress-5", "regress-10",
		"cost-up-5", "low-traffic"} {
		if !slices.Contains(names, want) {
			t.Errorf("built-in scenario %q missing (have %v)", want, names)
		}
	}
	for _, n := range names {
		sc, err := Builtin(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if sc.Name != n || sc.Describe() == "" {
			t.Errorf("%s: name %q, description %q", n, sc.Name, sc.Describe())
		}
		if sc.Duration < 10*time.Minute && n != "low-traffic" {
			t.Errorf("%s: default window %v is too short for a judge", n, sc.Duration)
		}
	}
	if _, err := Builtin("nope"); err == nil || !strings.Contains(err.Error(), "steady") {
		t.Errorf("unknown scenario error should list the built-ins, got %v", err)
	}
	if _, err := Builtin("../parse"); err == nil {
		t.Error("a path must not resolve to a built-in")
	}
}

// TestBuiltinsRunShort runs every built-in briefly and checks request
// accounting invariants.
func TestBuiltinsRunShort(t *testing.T) {
	for _, n := range BuiltinNames() {
		t.Run(n, func(t *testing.T) {
			res := runBuiltin(t, n, 11, 2*time.Minute)
			for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
				reqs := res.Requests(arm)
				sum := res.Summary.Baseline
				if arm == sources.Canary {
					sum = res.Summary.Canary
				}
				// the summary counts what the arm served; a log that drops
				// slow completions (log_drop_slow) holds fewer records
				logged := sum.Offered
				if drop := res.Scenario.Arm(arm).LogDropSlow; drop > 0 {
					logged = len(reqs)
					for _, r := range reqs {
						if r.Status == sources.StatusOK && r.TTFT > drop.Seconds() {
							t.Fatalf("%s: a completion with TTFT %v s is logged past log_drop_slow %v", arm, r.TTFT, drop)
						}
					}
				}
				if logged != len(reqs) || len(reqs) > sum.Offered || sum.Offered != sum.Admitted+sum.Rejected ||
					sum.Admitted != sum.Canceled+sum.Failed+sum.Completed {
					t.Errorf("%s accounting does not add up: %d records, %+v", arm, len(reqs), sum)
				}
				start := float64(res.Scenario.Start.Unix())
				minOut := int64(1) // an arm with empty completions logs 0 output tokens for them
				if o := res.Scenario.Arm(arm).Output; o.ShortShare > 0 && o.ShortTokens == 0 {
					minOut = 0
				}
				for i, r := range reqs {
					if r.Time < start || r.Time >= start+120 {
						t.Fatalf("%s record %d arrives at %v, outside the window", arm, i, r.Time)
					}
					if i > 0 && r.Time < reqs[i-1].Time {
						t.Fatalf("%s records out of order at %d", arm, i)
					}
					if r.Status == sources.StatusOK && (!(r.TTFT > 0) || !(r.E2E >= r.TTFT) || r.OutputTokens < minOut) {
						t.Fatalf("%s: completed record with bad latencies %+v", arm, r)
					}
				}
			}
			checkStepBounds(t, res)
		})
	}
}

func attainment(s ArmSummary) float64 { return float64(s.Good) / float64(s.Offered) }

func quantile(xs []float64, p float64) float64 {
	xs = slices.Clone(xs)
	sort.Float64s(xs)
	return xs[int(math.Round(p*float64(len(xs)-1)))]
}

func field(reqs []sources.Request, class string, f func(*sources.Request) float64) []float64 {
	var out []float64
	for i := range reqs {
		r := &reqs[i]
		if r.Status == sources.StatusOK && (class == "" || r.Class == class) {
			if v := f(r); sources.Known(v) {
				out = append(out, v)
			}
		}
	}
	return out
}

func tpot(r *sources.Request) float64 { return r.TPOT }
func ttft(r *sources.Request) float64 { return r.TTFT }

// TestSeedOverload is the story of the seed: 70 req/s on a fleet that can
// complete 95; a replica dies while a burst brings 110 req/s; queues grow,
// TTFT passes its limit, clients time out and retry, retries deepen the
// overload, and goodput collapses while the GPUs stay busy.
func TestSeedOverload(t *testing.T) {
	res := runBuiltin(t, "seed-overload", 1, 0)
	for _, s := range []ArmSummary{res.Summary.Baseline, res.Summary.Canary} {
		if s.Rejected == 0 || s.Canceled == 0 || s.Failed == 0 || s.Completed == 0 {
			t.Errorf("every outcome should occur: %+v", s)
		}
		if s.Offered != s.Admitted+s.Rejected || s.Admitted != s.Canceled+s.Failed+s.Completed {
			t.Errorf("accounting does not add up: %+v", s)
		}
		if s.RetryAmplification <= 1.1 {
			t.Errorf("retry amplification %.3f, want > 1.1", s.RetryAmplification)
		}
		pre := mean(s.Minutes[1:6], func(m MinuteSummary) float64 { return m.GoodputRPS })
		during := mean(s.Minutes[7:12], func(m MinuteSummary) float64 { return m.GoodputRPS })
		util := mean(s.Minutes[7:12], func(m MinuteSummary) float64 { return m.GPUUtil })
		tok := mean(s.Minutes[7:12], func(m MinuteSummary) float64 { return m.TokensPS })
		preTok := mean(s.Minutes[1:6], func(m MinuteSummary) float64 { return m.TokensPS })
		t.Logf("goodput %.1f → %.1f req/s, GPU %.0f%%, tokens/s %.0f → %.0f, amplification %.2f",
			pre, during, 100*util, preTok, tok, s.RetryAmplification)
		if pre < 60 {
			t.Errorf("pre-burst goodput %.1f req/s, want about 70", pre)
		}
		if during > 0.5*pre {
			t.Errorf("goodput during the overload %.1f req/s did not collapse below half of %.1f", during, pre)
		}
		if util < 0.9 || s.MeanGPUUtil < 0.9 {
			t.Errorf("mean GPU utilisation %.2f during overload (%.2f overall), want ≥ 0.9", util, s.MeanGPUUtil)
		}
		ttftDuring := mean(s.Minutes[7:12], func(m MinuteSummary) float64 { return m.TTFTP50 })
		queueDuring := mean(s.Minutes[7:12], func(m MinuteSummary) float64 { return m.Waiting })
		queueBefore := mean(s.Minutes[1:6], func(m MinuteSummary) float64 { return m.Waiting })
		if !(ttftDuring > res.Scenario.SLO.TTFT.Seconds()) || queueDuring < 10*max(queueBefore, 1) {
			t.Errorf("median TTFT %.2f s (want past the %v limit), queue %.1f → %.1f per replica (want it to grow)",
				ttftDuring, res.Scenario.SLO.TTFT, queueBefore, queueDuring)
		}
		if tok < preTok {
			t.Errorf("tokens/s fell from %.0f to %.0f; the story needs them to stay high", preTok, tok)
		}
	}
}

// TestSeedOverloadCapacity checks the fleet of the seed story completes
// about 95 req/s when saturated (no failure, no client timeouts).
func TestSeedOverloadCapacity(t *testing.T) {
	sc, err := Builtin("seed-overload")
	if err != nil {
		t.Fatal(err)
	}
	sc.Failures = nil
	sc.Traffic.Bursts = nil
	sc.Traffic.Rate = 2 * 130
	sc.Client = Client{Retry: Retry{MaxAttempts: 1, Multiplier: 2}}
	res, err := Run(context.Background(), sc, 5, 4*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	end := float64(sc.Start.Unix()) + 240
	n := 0
	for _, r := range res.Baseline {
		if r.Status == sources.StatusOK && r.Time+r.E2E >= end-180 && r.Time+r.E2E < end {
			n++
		}
	}
	rate := float64(n) / 180
	t.Logf("saturated seed fleet completes %.1f req/s", rate)
	if rate < 90 || rate > 100 {
		t.Errorf("saturated completion rate %.1f req/s, want about 95", rate)
	}
}

func mean[T any](xs []T, f func(T) float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += f(x)
	}
	return s / float64(len(xs))
}

// TestScenarioEffects checks that each built-in shows the effect it is
// named after, with the chat SLO (TTFT ≤ 1 s, TPOT ≤ 80 ms).
func TestScenarioEffects(t *testing.T) {
	t.Run("steady", func(t *testing.T) {
		res := runBuiltin(t, "steady", 1, 0)
		b, c := res.Summary.Baseline, res.Summary.Canary
		if attainment(b) < 0.97 || attainment(c) < 0.97 || b.Offered < 20000 {
			t.Errorf("steady: attainment %.3f / %.3f with %d requests; want ≥ 0.97 and plenty of data", attainment(b), attainment(c), b.Offered)
		}
		for _, f := range []func(*sources.Request) float64{ttft, tpot} {
			pb, pc := quantile(field(res.Baseline, "", f), 0.99), quantile(field(res.Canary, "", f), 0.99)
			if math.Abs(pc/pb-1) > 0.05 {
				t.Errorf("steady: p99 %.4f vs %.4f differ by more than 5%%", pb, pc)
			}
		}
	})
	t.Run("tail-regression", func(t *testing.T) {
		res := runBuiltin(t, "tail-regression", 1, 0)
		b, c := field(res.Baseline, "", tpot), field(res.Canary, "", tpot)
		p99 := quantile(c, 0.99) / quantile(b, 0.99)
		p50 := quantile(c, 0.5) / quantile(b, 0.5)
		t.Logf("TPOT p99 ratio %.3f, p50 ratio %.3f", p99, p50)
		if p99 < 1.25 {
			t.Errorf("canary p99 TPOT only %.3f× baseline; a 10%% margin gate must fail clearly", p99)
		}
		if math.Abs(p50-1) > 0.03 {
			t.Errorf("median TPOT ratio %.3f: the regression should be in the tail only", p50)
		}
	})
	t.Run("mix-shift", func(t *testing.T) {
		res := runBuiltin(t, "mix-shift", 1, 0)
		naive := attainment(res.Summary.Baseline) - attainment(res.Summary.Canary)
		if naive < 0.03 {
			t.Errorf("naive attainment difference %.3f, want > 3pp", naive)
		}
		for _, cl := range []string{"chat", "long"} {
			ab, ac := classAttainment(res.Baseline, cl, res.Scenario.SLO), classAttainment(res.Canary, cl, res.Scenario.SLO)
			t.Logf("%s attainment %.3f vs %.3f", cl, ab, ac)
			if math.Abs(ab-ac) > 0.02 {
				t.Errorf("%s attainment %.3f vs %.3f: per-class behaviour should be the same", cl, ab, ac)
			}
		}
		if share(res.Canary, "long") < 1.7*share(res.Baseline, "long") {
			t.Errorf("long share %.3f vs %.3f, want about twice", share(res.Canary, "long"), share(res.Baseline, "long"))
		}
	})
	t.Run("kernel-faster", func(t *testing.T) {
		res := runBuiltin(t, "kernel-faster", 1, 0)
		if r := quantile(field(res.Canary, "", tpot), 0.5) / quantile(field(res.Baseline, "", tpot), 0.5); r > 0.92 {
			t.Errorf("median TPOT ratio %.3f, want the canary clearly faster", r)
		}
	})
	t.Run("regress-10", func(t *testing.T) {
		res := runBuiltin(t, "regress-10", 1, 0)
		r := res.Summary.Canary.GoodputRPS / res.Summary.Baseline.GoodputRPS
		if r < 0.86 || r > 0.94 {
			t.Errorf("goodput ratio %.3f, want about 0.90", r)
		}
	})
	t.Run("regress-5", func(t *testing.T) {
		res := runBuiltin(t, "regress-5", 1, 0)
		r := res.Summary.Canary.GoodputRPS / res.Summary.Baseline.GoodputRPS
		if r < 0.92 || r > 0.98 {
			t.Errorf("goodput ratio %.3f, want about 0.95", r)
		}
	})
	t.Run("cost-up-5", func(t *testing.T) {
		res := runBuiltin(t, "cost-up-5", 1, 0)
		acc := map[sources.Arm]float64{}
		for _, c := range res.Cost {
			acc[c.Arm] += c.AcceleratorUSD
		}
		if r := acc[sources.Canary] / acc[sources.Baseline]; math.Abs(r-1.05) > 1e-9 {
			t.Errorf("accelerator cost ratio %v, want 1.05", r)
		}
	})
	t.Run("replica-loss", func(t *testing.T) {
		res := runBuiltin(t, "replica-loss", 1, 0)
		if res.Summary.Baseline.Failed == 0 || res.Summary.Canary.Failed != 0 {
			t.Errorf("failed: baseline %d canary %d; want only the baseline to lose requests", res.Summary.Baseline.Failed, res.Summary.Canary.Failed)
		}
		for _, s := range res.Metrics {
			last := s.Samples[len(s.Samples)-1].Time - float64(res.Scenario.Start.Unix())
			if s.Pod == "baseline-1" && last > 7*60 {
				t.Errorf("baseline-1 scraped at %v s after it failed at 420 s", last)
			}
		}
	})
	t.Run("cold-start", func(t *testing.T) {
		res := runBuiltin(t, "cold-start", 1, 0)
		early := func(reqs []sources.Request, from, to float64) []float64 {
			start := float64(res.Scenario.Start.Unix())
			var out []float64
			for _, r := range reqs {
				if r.Status == sources.StatusOK && r.Time-start >= from && r.Time-start < to && sources.Known(r.TPOT) {
					out = append(out, r.TPOT)
				}
			}
			return out
		}
		first := quantile(early(res.Canary, 0, 60), 0.5) / quantile(early(res.Baseline, 0, 60), 0.5)
		late := quantile(early(res.Canary, 600, 1200), 0.5) / quantile(early(res.Baseline, 600, 1200), 0.5)
		if first < 1.5 || math.Abs(late-1) > 0.03 {
			t.Errorf("canary/baseline median TPOT: first minute %.2f (want slow), after warm-up %.3f (want ≈ 1)", first, late)
		}
	})
	t.Run("cache-cold", func(t *testing.T) {
		res := runBuiltin(t, "cache-cold", 1, 0)
		start := float64(res.Scenario.Start.Unix())
		hit := func(reqs []sources.Request, from, to float64) float64 {
			var h, n float64
			for _, r := range reqs {
				if r.Class == "rag" && r.CachedTokens >= 0 && r.Time-start >= from && r.Time-start < to {
					h += float64(r.CachedTokens)
					n += float64(r.PromptTokens)
				}
			}
			return h / n
		}
		eb, ec := hit(res.Baseline, 0, 90), hit(res.Canary, 0, 90)
		lb, lc := hit(res.Baseline, 600, 900), hit(res.Canary, 600, 900)
		if ec > eb-0.2 || math.Abs(lc-lb) > 0.05 {
			t.Errorf("prefix hit rate: first 90 s %.2f vs %.2f (want the canary well below), last 5 min %.2f vs %.2f (want equal)", eb, ec, lb, lc)
		}
	})
	t.Run("low-traffic", func(t *testing.T) {
		res := runBuiltin(t, "low-traffic", 1, 0)
		if n := len(res.Canary); n < 20 || n > 120 {
			t.Errorf("low-traffic canary has %d requests", n)
		}
	})
}

func classAttainment(reqs []sources.Request, class string, slo SLO) float64 {
	good, n := 0, 0
	for i := range reqs {
		if reqs[i].Class == class {
			n++
			if slo.Good(&reqs[i]) {
				good++
			}
		}
	}
	return float64(good) / float64(n)
}

func share(reqs []sources.Request, class string) float64 {
	n := 0
	for _, r := range reqs {
		if r.Class == class {
			n++
		}
	}
	return float64(n) / float64(len(reqs))
}
