package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// labelBandsChat is the built-in chat policy with normalize.prompt_bands:
// all (a label's prompt bands are strata too).
func labelBandsChat(t *testing.T) *policies.Policy {
	t.Helper()
	p := chat(t)
	p.Normalize.PromptBands = "all"
	return p
}

// TestPromptBandsWithinLabels: identical builds whose canary is sent
// longer prompts under the same labels (the fleet model's prompts drawn
// as U^0.5 over each label's range, TTFT growing with the prompt) differ
// in mix only. Standardized by label alone (the default) the canary read
// about 1.7 pp worse on attainment (seeds 1–4: −1.72, −1.64, −1.33, −2.12
// pp); with normalize.prompt_bands: all, by label and prompt band, about
// 0.4 pp (−0.58, −0.36, +0.03, −0.84). Both paths give the same figure,
// and name the label's bands as strata; by default the strata stay the
// labels.
func TestPromptBandsWithinLabels(t *testing.T) {
	cfg := Config{Policy: labelBandsChat(t), Resamples: 200, Seed: 1}
	var sum float64
	const seeds = 4
	for seed := uint64(1); seed <= seeds; seed++ {
		b, c := aaFleet(seed), aaFleet(seed)
		b.prefill, c.prefill, c.promptSkew = 1, 1, 0.5
		bd, cd := fleetArms(b, c, seed)
		exact, agg := judgedBothWays(t, bd, cd, cfg)
		me, _ := metricNamed(exact, "slo_attainment")
		ma, _ := metricNamed(agg, "slo_attainment")
		if d := math.Abs(float64(me.Delta - ma.Delta)); d > 1e-9 {
			t.Errorf("seed %d: attainment %+.5f on the requests, %+.5f on the aggregate", seed, float64(me.Delta), float64(ma.Delta))
		}
		if exact.Verdict == Fail || agg.Verdict == Fail {
			t.Errorf("seed %d: a mix shift within the labels failed (%s, %s): %q", seed, exact.Verdict, agg.Verdict, exact.Reasons)
		}
		if d := step(exact, "mix").Detail; !strings.Contains(d, `"chat, prompt 1k-2k × default`) {
			t.Errorf("seed %d: the label's prompt bands are not strata: %s", seed, d)
		}
		sum += float64(me.Delta)
		def, err := Judge(bd, cd, Config{Policy: chat(t), Resamples: 200, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d := step(def, "mix").Detail; strings.Contains(d, `"chat, prompt`) || !strings.Contains(d, `"chat × default`) {
			t.Errorf("seed %d: by default the strata are the labels: %s", seed, d)
		}
	}
	if mean := sum / seeds; mean < -0.0075 {
		t.Errorf("standardized attainment %+.2f pp on average over %d seeds: the prompt shift within the labels is not standardized", 100*mean, seeds)
	}
}

// TestOneArmPromptBandFolded: the canary's prompts 10% longer under the
// same labels put about 3% of its requests in a band of the chat label
// ("chat, prompt 2k-4k") the baseline has none in. The label is one both
// arms served, so that band is counted in the label's nearest band both
// have, on both paths, and does not hold the run as traffic of another
// kind (unmatched_strata), which a label only one arm served still does
// (TestUnmatchedStrataBothPaths).
func TestOneArmPromptBandFolded(t *testing.T) {
	const seed = 11
	b, c := aaFleet(seed), aaFleet(seed)
	b.prefill, c.prefill, c.promptX = 1, 1, 1.1
	bd, cd := fleetArms(b, c, seed)
	exact, agg := judgedBothWays(t, bd, cd, Config{Policy: labelBandsChat(t), Resamples: 200, Seed: 1})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if m, ok := metricNamed(r, "unmatched_strata"); ok {
			t.Errorf("%s: unmatched_strata %s: %s", path, m.Verdict, m.Reason)
		}
		d := step(r, "mix").Detail
		if !strings.Contains(d, `prompt band "chat, prompt 2k-4k × default"`) || !strings.Contains(d, `only in the canary`) ||
			!strings.Contains(d, `counted in "chat, prompt 1k-2k × default", the label's nearest band both arms served`) {
			t.Errorf("%s: the one-arm band is not folded into its label's nearest: %s", path, d)
		}
	}
}

// TestLabelWithoutPromptLengths: under normalize.prompt_bands: all, a
// canary whose log gives no prompt length for its chat requests has them
// all in the label's stratum without a band ("chat × default") while the
// baseline's are in the label's prompt bands. Each arm's strata were then
// of one arm only: unmatched_strata held identical builds, naming "chat ×
// default" as never served by either arm. The label is now counted whole
// in both arms, as by default, and the mix step says why; a label split
// by band in both arms stays split. The aggregate no longer holds the run
// for the canary's mean prompt length, which it read over the long
// requests alone (+101%).
func TestLabelWithoutPromptLengths(t *testing.T) {
	const seed = 3
	bd, cd := fleetArms(aaFleet(seed), aaFleet(seed), seed)
	for i := range cd.Requests {
		if r := &cd.Requests[i]; r.Class == "chat" {
			r.PromptTokens = -1
		}
	}
	// by default (strata by label) too, the aggregate held the run
	de, da := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 200, Seed: 1})
	for path, r := range map[string]*Report{"request path, by label": de, "aggregate, by label": da} {
		if rs := strings.Join(r.Reasons, "; "); r.Verdict == Fail || strings.Contains(rs, "sent different traffic") {
			t.Errorf("%s: %s: %s", path, r.Verdict, rs)
		}
	}
	exact, agg := judgedBothWays(t, bd, cd, Config{Policy: labelBandsChat(t), Resamples: 200, Seed: 1})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if m, ok := metricNamed(r, "unmatched_strata"); ok {
			t.Errorf("%s: unmatched_strata %s: %s", path, m.Verdict, m.Reason)
		}
		if r.Verdict == Fail {
			t.Errorf("%s: identical builds failed: %q", path, r.Reasons)
		}
		// the canary's mean prompt over its long requests alone is not
		// the baseline's over all of them
		if rs := strings.Join(r.Reasons, "; "); strings.Contains(rs, "sent different traffic") {
			t.Errorf("%s: held by prompts one arm does not give: %s", path, rs)
		}
		d := step(r, "mix")
		if !d.Applied || !strings.Contains(d.Detail, `label "chat × default" not split by prompt band: the canary's log gives no prompt length for`) {
			t.Errorf("%s: the label without prompt lengths is not counted whole: %s", path, d.Detail)
		}
		if !strings.Contains(d.Detail, `long, prompt 4k-8k × default`) {
			t.Errorf("%s: the label with prompt lengths in both arms is not split by band: %s", path, d.Detail)
		}
	}
}

// TestOutputMeanSparseBands: with 800 labels (the fleet model's two
// classes split into 400 each) a label's prompt and prefix-cache bands
// hold a few requests, and one arm can have requests but no completion in
// one of them, so the mean output length per completion is undefined
// there: output_tokens_mean was left undecided ("cannot standardise") in
// 3 of 10 identical runs on the request path. It is now standardized over
// each label's bands taken together, and says so; the aggregate decides
// it too.
func TestOutputMeanSparseBands(t *testing.T) {
	const seed = 1
	b, c := aaFleet(seed), aaFleet(seed)
	b.labels, c.labels = 400, 400
	bd, cd := fleetArms(b, c, seed)
	exact, agg := judgedBothWays(t, bd, cd, Config{Policy: labelBandsChat(t), Resamples: 200, Seed: 1})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		m, _ := metricNamed(r, "output_tokens_mean")
		if m.Verdict != Pass {
			t.Errorf("%s: output_tokens_mean %s: %s", path, m.Verdict, m.Reason)
		}
	}
	m, _ := metricNamed(exact, "output_tokens_mean")
	if a := strings.Join(m.Adjusted, "; "); !strings.Contains(a, "over each label's prompt and prefix-cache bands taken together: by band, the canary has no requests in") {
		t.Errorf("the merge is not said: %s", a)
	}
}

// TestOutputMeanCacheBandMerged: with the default strata (label × policy
// class × prefix-cache band), a canary that fails every long request
// without a cached prefix has requests but no completion in that band, so
// the mean output length per completion is undefined there and
// output_tokens_mean was left undecided ("cannot standardise") on the
// request path. It is now taken over the label's cache bands together
// and decided (the canary's answers are as long as the baseline's in
// every label), while the errors fail error_rate.
func TestOutputMeanCacheBandMerged(t *testing.T) {
	const seed = 5
	p := chat(t)
	p.Normalize.Cache = "stratify"
	bd, cd := fleetArms(aaFleet(seed), aaFleet(seed), seed)
	for i := range cd.Requests {
		if r := &cd.Requests[i]; r.Class == "long" && r.CachedTokens == 0 {
			r.Status, r.TTFT, r.TPOT, r.E2E, r.OutputTokens = sources.StatusError, math.NaN(), math.NaN(), math.NaN(), -1
		}
	}
	r, agg := judgedBothWays(t, bd, cd, Config{Policy: p, Resamples: 200, Seed: 1})
	m, _ := metricNamed(r, "output_tokens_mean")
	if math.IsNaN(float64(m.Delta)) || strings.Contains(m.Reason, "cannot standardise") {
		t.Errorf("output_tokens_mean undecided: %s", m.Reason)
	}
	// the aggregate reweights the canary per class and band and has no
	// completion to weigh in that band: as counted there, the canary's
	// long answers are fewer and its mean output shorter (-5.4%,
	// inconclusive at the margin); it may be more cautious than the
	// request path, never less
	if ma, _ := metricNamed(agg, "output_tokens_mean"); ma.Verdict == Pass && m.Verdict != Pass {
		t.Errorf("output_tokens_mean %s on the requests, %s on the aggregate: %s", m.Verdict, ma.Verdict, ma.Reason)
	}
	if a := strings.Join(m.Adjusted, "; "); !strings.Contains(a, "taken together") {
		t.Errorf("the merge is not said: %s", a)
	}
	if e, _ := metricNamed(r, "error_rate"); e.Verdict != Fail {
		t.Errorf("error_rate %s: %s", e.Verdict, e.Reason)
	}
}

// TestPromptShiftHoldsBothPaths: with the default strata, identical
// builds whose canary is sent longer prompts under the same labels (seeds
// 8 and 10 of the fleet model's skewed prompts, where the gates fail on
// attainment) are held inconclusive on both paths, the reason giving both
// arms' mean prompt and the way to standardize it. On 26134a9 only the
// aggregate held them (mixShift); the request path failed. Under
// normalize.prompt_bands: all the shift is standardized, and nothing is
// held for it.
func TestPromptShiftHoldsBothPaths(t *testing.T) {
	for _, seed := range []uint64{8, 10} {
		b, c := aaFleet(seed), aaFleet(seed)
		b.prefill, c.prefill, c.promptSkew = 1, 1, 0.5
		bd, cd := fleetArms(b, c, seed)
		exact, agg := judgedBothWays(t, bd, cd, Config{Policy: chat(t), Resamples: 200, Seed: 1})
		for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
			why := strings.Join(r.Reasons, " ")
			if r.Verdict != Inconclusive || !strings.Contains(why, "the gates give FAIL, but the arms were sent different traffic: mean prompt tokens per request baseline") {
				t.Errorf("seed %d, %s: %s: %s", seed, path, r.Verdict, why)
			}
			if w := strings.Join(r.Warnings, " "); !strings.Contains(w, "normalize.prompt_bands: all standardizes") {
				t.Errorf("seed %d, %s: no advice in the warnings: %s", seed, path, w)
			}
		}
		bands, err := Judge(bd, cd, Config{Policy: labelBandsChat(t), Resamples: 200, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if why := strings.Join(bands.Reasons, " "); strings.Contains(why, "sent different traffic") {
			t.Errorf("seed %d, prompt_bands all: held for the shift the bands standardize: %s", seed, why)
		}
	}
}
