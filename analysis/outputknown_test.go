package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// TestOutputLengthsMissing: a completion that gives no output length
// counted as 0 tokens in output_tokens_mean, so a canary whose log gives
// output_tokens for only half its answers (a logging change) failed,
// "−50.1%: the canary is worse by more than the 5% margin", with no word
// of the missing field. The mean is now over the completions that give
// their length; arms that give it for unlike shares of their completions
// leave the gate inconclusive, saying why, and each arm with lengths
// missing is warned of, on both paths. A few lengths missing at random in
// both arms change nothing but the warnings.
func TestOutputLengthsMissing(t *testing.T) {
	// both paths' reports on the fleet A/A at seed 17 with output lengths
	// dropped from shares b and c of the arms' completions
	judged := func(t *testing.T, b, c float64) map[string]*Report {
		bd, cd := fleetArms(aaFleet(17), aaFleet(17), 17)
		for k, a := range []struct {
			ds    *sources.Dataset
			share float64
		}{{bd, b}, {cd, c}} {
			rng := rand.New(rand.NewPCG(uint64(k+1), 3))
			for i := range a.ds.Requests {
				if r := &a.ds.Requests[i]; r.Status == sources.StatusOK && rng.Float64() < a.share {
					r.OutputTokens = -1
				}
			}
		}
		exact, agg := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 300})
		return map[string]*Report{"request path": exact, "aggregate": agg}
	}
	t.Run("half the canary's lengths missing", func(t *testing.T) {
		for path, r := range judged(t, 0, 0.5) {
			m := metric(t, r, "output_tokens_mean")
			if m.Verdict != Inconclusive || !strings.Contains(m.Reason, "over the completions that give their length, not decided") ||
				!strings.Contains(m.Reason, "the baseline gives an output length (output_tokens) for 100.0%") || !strings.Contains(m.Reason, "log output_tokens for every completion") {
				t.Errorf("%s: output_tokens_mean %s: %s", path, m.Verdict, m.Reason)
			}
			// the mean over the lengths given is the canary's own, not half
			if d := float64(m.Delta); d < -0.05 || d > 0.05 {
				t.Errorf("%s: output_tokens_mean delta %+.3f, want near 0 over the lengths given", path, d)
			}
			if !hasWarning(r, "canary: ", "completed requests (", "give no output length (output_tokens)") || hasWarning(r, "baseline: ", "give no output length") {
				t.Errorf("%s: warnings %q", path, r.Warnings)
			}
			if r.Verdict == Fail || r.Verdict == Pass {
				t.Errorf("%s: verdict %s with half the canary's output lengths missing: %q", path, r.Verdict, r.Reasons)
			}
		}
	})
	t.Run("a few missing in both arms", func(t *testing.T) {
		for path, r := range judged(t, 0.02, 0.02) {
			if m := metric(t, r, "output_tokens_mean"); m.Verdict != Pass {
				t.Errorf("%s: output_tokens_mean %s: %s", path, m.Verdict, m.Reason)
			}
			if !hasWarning(r, "baseline: ", "give no output length") || !hasWarning(r, "canary: ", "give no output length") {
				t.Errorf("%s: warnings %q", path, r.Warnings)
			}
		}
	})
	t.Run("none given by the canary", func(t *testing.T) {
		for path, r := range judged(t, 0, 1) {
			m := metric(t, r, "output_tokens_mean")
			if m.Verdict != Inconclusive || m.Reason != "no completed requests with a known output length in the canary" {
				t.Errorf("%s: output_tokens_mean %s: %s", path, m.Verdict, m.Reason)
			}
			if !hasWarning(r, "canary: none of its ", "gives an output length (output_tokens)") {
				t.Errorf("%s: warnings %q", path, r.Warnings)
			}
		}
	})
}

// hasWarning reports whether one of r's warnings starts with prefix and
// contains every one of parts.
func hasWarning(r *Report, prefix string, parts ...string) bool {
	for _, w := range r.Warnings {
		ok := strings.HasPrefix(w, prefix)
		for _, p := range parts {
			ok = ok && strings.Contains(w, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestUnverifiedShares: a completion that lacks the field an SLO
// criterion needs is counted as not good (missing data is never good), so
// a baseline whose log dropped tpot_s and e2e_s for 30% of its answers
// passed any canary. When the arms' shares of such completions differ
// beyond 1 pp and chance, a pass with the baseline lacking more is
// inconclusive; a canary lacking more still fails (an empty answer written
// without its lengths looks the same as a logging change), its reasons
// saying that part of the fail may be how it was logged; a few missing at
// random in both arms change nothing. Both paths.
func TestUnverifiedShares(t *testing.T) {
	strip := func(ds *sources.Dataset, share float64, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 5))
		for i := range ds.Requests {
			if r := &ds.Requests[i]; r.Status == sources.StatusOK && rng.Float64() < share {
				r.TPOT, r.E2E = math.NaN(), math.NaN()
			}
		}
	}
	const seed = 19
	for _, tc := range []struct {
		name    string
		b, c    float64 // shares stripped
		verdict Verdict
		reason  string // in the first reason ("" : no reason names the gap)
		last    string // in the last reason
	}{
		{"30% of the baseline's", 0.3, 0, Inconclusive, "the gates give PASS, but the baseline's completed requests lack the field the tpot criterion needs in 30.", ""},
		{"30% of the canary's", 0, 0.3, Fail, "", "lack the field the tpot criterion needs in 0.0% of 36k and the canary's in 29."},
		{"0.5% of each, at random", 0.005, 0.005, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd, cd := fleetArms(aaFleet(seed), aaFleet(seed), seed)
			strip(bd, tc.b, 1)
			strip(cd, tc.c, 2)
			exact, agg := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 300})
			for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
				named := strings.Contains(strings.Join(r.Reasons, "\n"), "log the field for every completion (tpot_s, or e2e_s with ttft_s and output_tokens)")
				switch {
				case tc.verdict != "" && r.Verdict != tc.verdict,
					tc.reason != "" && !strings.Contains(r.Reasons[0], tc.reason),
					tc.last != "" && !strings.Contains(r.Reasons[len(r.Reasons)-1], tc.last+"") || tc.last != "" && !strings.HasSuffix(r.Reasons[len(r.Reasons)-1], "part of the fail may be how the canary was logged rather than how it served"),
					(tc.reason != "" || tc.last != "") != named:
					t.Errorf("%s: verdict %s: %q", path, r.Verdict, r.Reasons)
				}
			}
			if exact.Verdict != agg.Verdict {
				t.Errorf("verdicts differ: %s, %s", exact.Verdict, agg.Verdict)
			}
		})
	}
}

// TestPromptLengthsMissing: the aggregate's check that the arms were sent
// the same traffic (mixShift: mean prompt tokens per request within 10%)
// counted a request that gives no prompt length as 0 tokens, so a canary
// whose log dropped prompt_tokens from 30% of its lines was "sent
// different traffic" (−19%) and held inconclusive on the streaming path
// while the request path passed it. The mean is now over the requests
// that give their length, and both paths judge alike.
func TestPromptLengthsMissing(t *testing.T) {
	const seed = 23
	bd, cd := fleetArms(aaFleet(seed), aaFleet(seed), seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range cd.Requests {
		if rng.Float64() < 0.3 {
			cd.Requests[i].PromptTokens = -1
		}
	}
	exact, agg := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 300})
	for _, w := range agg.Warnings {
		if strings.Contains(w, "were sent different traffic") {
			t.Errorf("aggregate: %s", w)
		}
	}
	if exact.Verdict != agg.Verdict {
		t.Errorf("verdicts differ: request path %s %q, aggregate %s %q", exact.Verdict, exact.Reasons, agg.Verdict, agg.Reasons)
	}
}

// TestRetriesUnreported: records none of which gives its attempt say
// nothing about retries, yet retry_share compared 0% against 0% and
// passed, where metrics (which cannot tell retries either) leave the
// guardrail out with a warning. When neither arm's records give it, the
// guardrail is now not checked and said so, a retry_share gate is
// inconclusive and retry amplification unknown, on both paths. A log that
// writes attempt only on a retry gives it nowhere in an arm that retried
// nothing: with the other arm's retries logged, the comparison stands and
// 5% of the canary's requests succeeding on a retry still fails it.
func TestRetriesUnreported(t *testing.T) {
	const seed = 29
	bd, cd := fleetArms(aaFleet(seed), aaFleet(seed), seed)
	for _, ds := range []*sources.Dataset{bd, cd} {
		for i := range ds.Requests {
			ds.Requests[i].Attempt = 0
		}
	}
	exact, agg := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 300})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if _, ok := metricNamed(r, "retry_share"); ok {
			t.Errorf("%s: retry_share judged on records that never give their attempt", path)
		}
		if !hasWarning(r, "the retry_share guardrail is not checked on this data: the source of baseline (per-request records) and canary (per-request records) does not report retried requests") {
			t.Errorf("%s: warnings %q", path, r.Warnings)
		}
		if !math.IsNaN(float64(r.Arms.Canary.RetryAmplification)) || !math.IsNaN(float64(r.Arms.Baseline.RetryAmplification)) {
			t.Errorf("%s: retry amplification baseline %v canary %v", path, r.Arms.Baseline.RetryAmplification, r.Arms.Canary.RetryAmplification)
		}
	}
	if exact.Verdict != agg.Verdict {
		t.Errorf("verdicts differ: %s %q, %s %q", exact.Verdict, exact.Reasons, agg.Verdict, agg.Reasons)
	}
	// as a gate rather than a guardrail: inconclusive, never passed
	p := chat(t)
	q := *p
	q.Gates = append([]policies.Gate{}, p.Gates...)
	for i := range q.Gates {
		if q.Gates[i].Metric == "retry_share" {
			q.Gates[i].Guardrail = false
		}
	}
	exact, agg = judgedBothWays(t, bd, cd, Config{Policy: &q, Resamples: 300})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		m, ok := metricNamed(r, "retry_share")
		if !ok || m.Verdict != Inconclusive || !strings.Contains(m.Reason, "a gate is never passed on a count the source does not give") {
			t.Errorf("%s: retry_share gate %v %s: %s", path, ok, m.Verdict, m.Reason)
		}
	}
	// attempt written only on a retry: the baseline, which retried
	// nothing, gives it on no record
	c := aaFleet(seed)
	c.retryShare = 0.05
	bd, cd = fleetArms(aaFleet(seed), c, seed)
	for _, ds := range []*sources.Dataset{bd, cd} {
		for i := range ds.Requests {
			if r := &ds.Requests[i]; r.Attempt == 1 {
				r.Attempt = 0
			}
		}
	}
	exact, agg = judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 300})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if m, ok := metricNamed(r, "retry_share"); !ok || m.Verdict != Fail || r.Verdict != Fail {
			t.Errorf("%s: 5%% retries logged sparsely: retry_share %v %s, verdict %s", path, ok, m.Verdict, r.Verdict)
		}
	}
}

// TestUnverifiedOnlyWhereItDecides: a request that already fails a
// criterion it can be checked against is not good whatever a missing field
// says, so it is not tallied as unverified. A canary whose TTFT is 50%
// worse and whose log drops tpot_s and e2e_s on the requests past the TTFT
// limit (a gateway that stops timing a stream once it is late) fails, on
// both paths, and no warning counts those requests as unverified: the
// fields they lack decided nothing. (The same requests in the baseline
// would have held any pass as logged unlike.)
func TestUnverifiedOnlyWhereItDecides(t *testing.T) {
	const seed = 31
	c := aaFleet(seed)
	c.ttftX = 1.5
	bd, cd := fleetArms(aaFleet(seed), c, seed)
	stripped := 0
	for i := range cd.Requests {
		if r := &cd.Requests[i]; r.Status == sources.StatusOK && r.TTFT > 1 && r.PromptTokens < 8192 {
			r.TPOT, r.E2E = math.NaN(), math.NaN()
			stripped++
		}
	}
	if stripped < len(cd.Requests)/50 {
		t.Fatalf("only %d of %d requests past the TTFT limit: the case tests nothing", stripped, len(cd.Requests))
	}
	exact, agg := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 300})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if r.Verdict != Fail {
			t.Errorf("%s: verdict %s, want fail: %q", path, r.Verdict, r.Reasons)
		}
		if hasWarning(r, "canary: ", "lack the field needed to check the tpot criterion") {
			t.Errorf("%s: requests past the TTFT limit tallied as unverified: %q", path, r.Warnings)
		}
	}
}
