package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// TestStrataNotMadeByOutcomes: a stratum must be fixed before a request
// reaches either arm. Unlabelled requests were banded by prompt and output
// length, and a failed request, which logs no output length, fell in an
// "output unknown" band of its own; standardized to the baseline's share,
// that band took the canary's extra failures out of every gate (error_rate
// 0.19% against 0.19%, PASS, for a canary failing 3% more requests), and
// the output bands took most of a 10% cut in answer length out of
// output_tokens_mean (−3.1%, PASS). The same held for labelled logs that
// name the class of what completed but not of what failed, and for
// rejected requests logged without their prompt, and for labelled logs
// that leave the label off the requests their clients canceled
// (canceled_share −0.00 pp and PASS for 2.8 pp more) or off their retries
// (retry_share +0.00 pp and PASS for 4.8 pp more). Bands are by prompt length
// only now, and strata made by failures or by unknown prompt lengths are
// kept at each arm's own share. Counted in the largest stratum both arms
// served, failures without a prompt length weighed that stratum's
// reference share in place of the canary's own, and a standardized gate
// carried about three quarters of their harm; where a case says whole,
// the standardized difference of its gate and of slo_attainment must be
// the counted one within a tenth. Each case on both judging paths.
func TestStrataNotMadeByOutcomes(t *testing.T) {
	const seed = 5
	// failEvery turns every nth completed request into a failure with
	// status st, logged as gateways log them: no latencies, no output
	// length, and (as set) no prompt length or class label
	failEvery := func(ds *sources.Dataset, n int, st sources.Status, dropPrompt, dropClass bool) {
		k := 0
		for i := range ds.Requests {
			r := &ds.Requests[i]
			if r.Status != sources.StatusOK {
				continue
			}
			if k++; k%n != 0 {
				continue
			}
			r.Status = st
			r.TTFT, r.TPOT, r.E2E, r.MaxITL = math.NaN(), math.NaN(), math.NaN(), math.NaN()
			r.OutputTokens, r.CachedTokens = -1, -1
			if dropPrompt {
				r.PromptTokens = -1
			}
			if dropClass {
				r.Class = ""
			}
		}
	}
	unlabelled := aaFleet(seed)
	unlabelled.unlabelled = true
	for _, tc := range []struct {
		name  string
		arms  fleet
		edit  func(b, c *sources.Dataset)
		gate  string
		fails bool
		whole bool
	}{
		{"unlabelled: the canary fails 3% more, logged without an output length", unlabelled, func(b, c *sources.Dataset) {
			failEvery(b, 500, sources.StatusError, false, false)
			failEvery(c, 33, sources.StatusError, false, false)
		}, "error_rate", true, false},
		{"unlabelled: the canary fails 3% more, logged without a prompt length", unlabelled, func(b, c *sources.Dataset) {
			failEvery(b, 500, sources.StatusError, true, false)
			failEvery(c, 33, sources.StatusError, true, false)
		}, "error_rate", true, true},
		{"labelled: failures logged without their class", aaFleet(seed), func(b, c *sources.Dataset) {
			failEvery(b, 500, sources.StatusError, false, true)
			failEvery(c, 33, sources.StatusError, false, true)
		}, "error_rate", true, true},
		{"labelled: client cancels logged without their class", aaFleet(seed), func(b, c *sources.Dataset) {
			failEvery(b, 500, sources.StatusCanceled, false, true)
			failEvery(c, 33, sources.StatusCanceled, false, true)
		}, "canceled_share", true, true},
		{"labelled: retries logged without their class", aaFleet(seed), func(b, c *sources.Dataset) {
			retryEvery := func(ds *sources.Dataset, n int) {
				for i := range ds.Requests {
					if r := &ds.Requests[i]; (i+1)%n == 0 {
						r.Attempt, r.Class = 2, ""
					}
				}
			}
			retryEvery(b, 500)
			retryEvery(c, 20)
		}, "retry_share", true, true},
		{"unlabelled: rejected without a prompt length", unlabelled, func(b, c *sources.Dataset) {
			failEvery(b, 500, sources.StatusRejected, true, false)
			failEvery(c, 33, sources.StatusRejected, true, false)
		}, "rejected_share", true, true},
		{"unlabelled: answers 10% shorter", unlabelled, func(_, c *sources.Dataset) {
			for i := range c.Requests {
				if r := &c.Requests[i]; r.OutputTokens > 2 {
					r.OutputTokens = max(2, int64(math.Round(float64(r.OutputTokens)*0.9)))
				}
			}
		}, "output_tokens_mean", true, false},
		{"unlabelled: the same failures in both arms", unlabelled, func(b, c *sources.Dataset) {
			failEvery(b, 100, sources.StatusError, true, false)
			failEvery(c, 100, sources.StatusError, true, false)
		}, "error_rate", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := fleetArms(tc.arms, tc.arms, seed)
			tc.edit(b, c)
			exact, agg := judgedBothWays(t, b, c, Config{Policy: chat(t), Resamples: 400, Seed: seed})
			for k, r := range []*Report{exact, agg} {
				path := [2]string{"request path", "aggregate"}[k]
				m := metric(t, r, tc.gate)
				if got := m.Verdict == Fail; got != tc.fails {
					t.Errorf("%s: %s %s %+.4g [%+.4g, %+.4g] (%s); want fail %v", path, tc.gate, m.Verdict,
						float64(m.Delta), float64(m.Interval[0]), float64(m.Interval[1]), m.Reason, tc.fails)
				}
				if tc.fails && r.Verdict != Fail {
					t.Errorf("%s: verdict %s, want fail", path, r.Verdict)
				}
				for _, name := range []string{tc.gate, "slo_attainment"} {
					if m := metric(t, r, name); tc.whole && (m.Naive == nil || !(math.Abs(float64(m.Delta)-float64(m.Naive.Delta)) <= 0.1*math.Abs(float64(m.Naive.Delta)))) {
						t.Errorf("%s: %s standardized %+.4g against %v counted: not the whole harm", path, name, float64(m.Delta), m.Naive)
					}
				}
			}
		})
	}
}

// TestOutputClassesMakeNoStrata: a policy class decided by output length
// sets an SLO but is not a stratum. Strata were label × policy class, so a
// canary whose long answers failed (a quarter of the completions with 400
// tokens or more, logged as errors without an output length) moved them
// from its "long_answer" strata to "default", and standardized to the
// baseline's shares they weighed less: here slo_attainment −2.51 pp where
// the same policy without the class gives −2.66 pp (on another draw of
// the failures, −2.44 pp [−3.90, −0.98], INCONCLUSIVE, against −2.56 pp
// [−4.01, −1.11], FAIL). The strata are now the labels alone there, the
// estimate is the classless policy's and the mix step says why, on both
// paths.
func TestOutputClassesMakeNoStrata(t *testing.T) {
	pol := func(classes string) *policies.Policy {
		return streamPolicy(t, `name: outcome
slo: {ttft: 1s, tpot: 80ms}
`+classes+`normalize: {mix: baseline}
gates:
  - {metric: slo_attainment, margin: 1pp}
`)
	}
	withClass := pol("classes:\n  - name: long_answer\n    when: {output_tokens: {min: 400}}\n    slo: {tpot: 90ms}\n")
	without := pol("")
	b, c := simArms(t, "aa-quiet-30m", 1)
	rng := rand.New(rand.NewPCG(5, 5))
	failed := 0
	for i := range c.Requests {
		r := &c.Requests[i]
		if r.Status == sources.StatusOK && r.OutputTokens >= 400 && rng.Float64() < 0.25 {
			f := sources.NewRequest()
			f.Time, f.Status, f.PromptTokens, f.Class, f.Replica, f.Attempt = r.Time, sources.StatusError, r.PromptTokens, r.Class, r.Replica, 1
			*r = f
			failed++
		}
	}
	if failed < 500 {
		t.Fatalf("only %d failures made", failed)
	}
	ref, _ := judgedBothWays(t, b, c, Config{Policy: without, Resamples: 100, Seed: 1})
	want, ok := metricNamed(ref, "slo_attainment")
	if !ok || want.Verdict != Fail {
		t.Fatalf("without the class: %+v", want)
	}
	exact, agg := judgedBothWays(t, b, c, Config{Policy: withClass, Resamples: 100, Seed: 1})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		m, _ := metricNamed(r, "slo_attainment")
		if m.Verdict != Fail || math.Abs(float64(m.Delta-want.Delta)) > 1e-4 {
			t.Errorf("%s: slo_attainment %s %+.4f pp, want FAIL %+.4f pp as without the class", path, m.Verdict, 100*float64(m.Delta), 100*float64(want.Delta))
		}
		said := false
		for _, s := range r.Normalization.Steps {
			said = said || strings.Contains(s.Detail, `not by policy class: class "long_answer" is decided by output length`)
		}
		if !said {
			t.Errorf("%s: the mix step does not say why the policy class is not a stratum: %+v", path, r.Normalization.Steps)
		}
	}
}

// TestGoodputStandardizedBothPaths: a `goodput` gate without matched load
// was compared raw on the request path ("not mix-standardized: raw goodput
// depends on offered load") while the aggregate reweighted the canary's
// counts to the baseline's mix, so the simulator's masked regression
// (35% → 10% long prompts, the canary's decode 15% slower) read −10.2%,
// INCONCLUSIVE, on the request path under this test's policy and −24.3%,
// FAIL, from its aggregate (under another, with policy classes, it PASSED
// on the request path at +4.7% [−0.3%, +10.0%]). Both now reweight each
// arm's good requests by stratum, its offered total kept, and agree; and
// token_goodput and goodput_per_replica with them.
func TestGoodputStandardizedBothPaths(t *testing.T) {
	p := streamPolicy(t, `name: goodput
slo: {e2e: 5s, max_itl: 100ms}
normalize: {mix: baseline, cache: none, load: none}
gates:
  - {metric: goodput, margin: 3%}
  - {metric: token_goodput, margin: 3%}
  - {metric: goodput_per_replica, margin: 3%}
`)
	b, c := simArms(t, "masked-regression", 2)
	exact, agg := judgedBothWays(t, b, c, Config{Policy: p, Resamples: 100, Seed: 1})
	for _, name := range []string{"goodput", "token_goodput", "goodput_per_replica"} {
		me, _ := metricNamed(exact, name)
		ma, _ := metricNamed(agg, name)
		if me.Verdict != Fail || ma.Verdict != Fail {
			t.Errorf("%s: request path %s %+.1f%%, aggregate %s %+.1f%%; want both FAIL", name, me.Verdict, 100*float64(me.Delta), ma.Verdict, 100*float64(ma.Delta))
		}
		if d := math.Abs(float64(me.Delta - ma.Delta)); d > 0.005 {
			t.Errorf("%s: request path %+.2f%% against the aggregate's %+.2f%%", name, 100*float64(me.Delta), 100*float64(ma.Delta))
		}
		if !strings.Contains(strings.Join(me.Adjusted, "; "), "standardized to the baseline mix") {
			t.Errorf("%s: the request path does not say it standardized: %v", name, me.Adjusted)
		}
	}
	// identical arms stay passed: the reweighting keeps each arm's total
	b, c = simArms(t, "aa-quiet-30m", 1)
	exact, agg = judgedBothWays(t, b, c, Config{Policy: p, Resamples: 100, Seed: 1})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if m, _ := metricNamed(r, "goodput"); m.Verdict == Fail {
			t.Errorf("A/A, %s: goodput %s %+.2f%%", path, m.Verdict, 100*float64(m.Delta))
		}
	}
}

// TestTokenGoodputMatchedFloor: token goodput at matched load is good
// requests' output tokens per offered request; its interval is floored at
// the good requests' own (independent-requests) width. The floor was the
// hull with the good requests' ratio itself, so a canary whose answers
// were cut in half — attainment unchanged, token goodput −47.5% — read
// −47.5% [−62.2%, +0.9%], INCONCLUSIVE, from its aggregate (and on the
// request path without mix standardization). The floor is now a width
// around the estimate: FAIL on both paths, and identical arms as before.
func TestTokenGoodputMatchedFloor(t *testing.T) {
	for _, mix := range []string{"baseline", "none"} {
		p := streamPolicy(t, `name: tokens
slo: {ttft: 1s, tpot: 80ms}
normalize: {mix: `+mix+`, cache: none, load: matched}
gates:
  - {metric: token_goodput, margin: 3%}
`)
		b, c := simArms(t, "bs-half-outputs", 2)
		exact, agg := judgedBothWays(t, b, c, Config{Policy: p, Resamples: 100, Seed: 1})
		for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
			m, _ := metricNamed(r, "token_goodput")
			if m.Verdict != Fail || m.Interval[1] > -0.2 {
				t.Errorf("mix %s, %s: token_goodput %s %+.1f%% [%+.1f%%, %+.1f%%], want FAIL well below −3%%",
					mix, path, m.Verdict, 100*float64(m.Delta), 100*float64(m.Interval[0]), 100*float64(m.Interval[1]))
			}
		}
		b, c = simArms(t, "aa-quiet-30m", 6)
		exact, agg = judgedBothWays(t, b, c, Config{Policy: p, Resamples: 100, Seed: 1})
		for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
			if m, _ := metricNamed(r, "token_goodput"); m.Verdict != Pass || !(m.Interval[0] < 0 && m.Interval[1] > 0) {
				t.Errorf("A/A, mix %s, %s: token_goodput %s [%+.2f%%, %+.2f%%]", mix, path, m.Verdict, 100*float64(m.Interval[0]), 100*float64(m.Interval[1]))
			}
		}
	}
}

// TestMatchedLoadStandardizedWidth: goodput at matched load, standardized
// to a mix, takes on the request path at least the half-width of the
// standardized comparison's per-stratum variance; the aggregate took only
// the reweighted counts' and the as-counted comparison's, and on a canary
// whose decode slows through the run (`bs-tpot-leak`, seed 2; prefix-cache
// strata) read goodput_per_replica −40.1% [−55.7%, −19.1%] and FAILED where
// the request path's [−59.2%, −12.2%] left it to the Holm step
// (INCONCLUSIVE): less cautious than the requests it came from. It now
// takes that width too.
func TestMatchedLoadStandardizedWidth(t *testing.T) {
	p := streamPolicy(t, `name: matched
slo: {ttft: 5s, tpot: 80ms, e2e: 5s, max_itl: 1s}
window: {warmup: 60s, bucket: 30s}
normalize: {mix: none, cache: stratify, load: matched, prompt_bands: all}
gates:
  - {metric: error_rate, margin: 0.5pp, guardrail: true}
  - {metric: output_tokens_mean, margin: 5%, direction: two_sided}
  - {metric: goodput_per_replica, margin: 2%}
  - {metric: canceled_share, margin: 0.5pp, guardrail: true}
confidence: 0.9
`)
	b, c := simArms(t, "bs-tpot-leak", 2)
	exact, agg := judgedBothWays(t, b, c, Config{Policy: p, Resamples: 50, Seed: 1})
	me, _ := metricNamed(exact, "goodput_per_replica")
	ma, _ := metricNamed(agg, "goodput_per_replica")
	if ma.Interval[0] > me.Interval[0]+1e-3 || ma.Interval[1] < me.Interval[1]-1e-3 {
		t.Errorf("aggregate [%+.2f%%, %+.2f%%] narrower than the request path's [%+.2f%%, %+.2f%%]",
			100*float64(ma.Interval[0]), 100*float64(ma.Interval[1]), 100*float64(me.Interval[0]), 100*float64(me.Interval[1]))
	}
	if agg.Verdict == Fail && exact.Verdict != Fail {
		t.Errorf("aggregate FAIL where the request path is %s", exact.Verdict)
	}
}
