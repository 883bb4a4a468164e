package analysis

import (
	"github.com/goodput-dev/goodput/policies"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/normalize"
)

// classBandFolds folds, within each class, the prefix-cache bands only one
// arm has requests in into the class's most common band both arms have
// (of all its bands when none is shared), and never folds a band both
// arms have.
func TestClassBandFolds(t *testing.T) {
	type counts = map[string]map[string]float64
	for _, tc := range []struct {
		name     string
		b, c     counts
		dominant map[string]string
		fold     map[string]map[string]string
		said     []string
	}{
		{
			name:     "every band in both arms: nothing folded",
			b:        counts{"chat": {"cache 0": 5, "cache <50%": 100}},
			c:        counts{"chat": {"cache 0": 3, "cache <50%": 90}},
			dominant: map[string]string{"chat": "cache <50%"},
			fold:     map[string]map[string]string{},
		},
		{
			name:     "a stray baseline band",
			b:        counts{"chat": {"cache 0": 1, "cache <50%": 100, "cache >=50%": 80}, "long": {"cache 0": 40}},
			c:        counts{"chat": {"cache <50%": 90, "cache >=50%": 85}, "long": {"cache 0": 42}},
			dominant: map[string]string{"chat": "cache <50%", "long": "cache 0"},
			fold:     map[string]map[string]string{"chat": {"cache 0": "cache <50%"}},
			said:     []string{`in "chat" band "cache 0" counted in "cache <50%" (only the baseline has requests there: 1)`},
		},
		{
			name:     "the largest band is the canary's alone: the shared one wins",
			b:        counts{"chat": {"cache <50%": 10}},
			c:        counts{"chat": {"cache 0": 500, "cache <50%": 12}},
			dominant: map[string]string{"chat": "cache <50%"},
			fold:     map[string]map[string]string{"chat": {"cache 0": "cache <50%"}},
			said:     []string{`in "chat" band "cache 0" counted in "cache <50%" (only the canary has requests there: 500)`},
		},
		{
			name:     "no band shared: all in the largest",
			b:        counts{"chat": {"cache 0": 7}},
			c:        counts{"chat": {"cache >=50%": 9}},
			dominant: map[string]string{"chat": "cache >=50%"},
			fold:     map[string]map[string]string{"chat": {"cache 0": "cache >=50%"}},
			said:     []string{`in "chat" band "cache 0" counted in "cache >=50%" (only the baseline has requests there: 7)`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, f, s := classBandFolds(tc.b, tc.c)
			if !reflect.DeepEqual(d, tc.dominant) || !reflect.DeepEqual(f, tc.fold) || strings.Join(s, "\n") != strings.Join(tc.said, "\n") {
				t.Errorf("got %v %v %q\nwant %v %v %q", d, f, s, tc.dominant, tc.fold, tc.said)
			}
		})
	}
}

// TestStrayCacheBandDoesNotBlockCounts: a baseline replica restarts cold
// (testdata/scenarios/baseline-restart-cold.yaml, seed 5), so one baseline
// request lands in the "cache 0" band of the chat class, where the canary
// has none. Before the band was folded, that one request made every count
// gate inconclusive ("cannot standardise to the reference mix"); now the
// cache step says where it was counted and the gates are decided.
func TestStrayCacheBandDoesNotBlockCounts(t *testing.T) {
	b, c := scenarioArms(t, "baseline-restart-cold.yaml", 5)
	r, err := Judge(b, c, Config{Policy: chat(t), Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	if d := step(r, "cache").Detail; !strings.Contains(d, `band "cache 0" counted in "cache <50%" (only the baseline has requests there: 1)`) {
		t.Errorf("the fold is not reported: %s", d)
	}
	for _, name := range []string{"slo_attainment", "error_rate", "retry_share"} {
		m := metric(t, r, name)
		if strings.Contains(m.Reason, "cannot standardise") || math.IsNaN(float64(m.Delta)) {
			t.Errorf("%s undecided: %s", name, m.Reason)
		}
	}
}

// strayStrataFolds counts a stratum only one arm has requests in, under
// StrayStratumShare of that arm, in the largest stratum both arms have of
// its policy class; a larger one-arm stratum, or one without such a
// stratum, stays (a real difference of mix). Strata the outcome made are
// kept at each arm's own share (own), or folded as strays are when
// explicit weights name the strata (noOwn).
func TestStrayStrataFolds(t *testing.T) {
	for _, tc := range []struct {
		name string
		b, c map[string]float64
		// bs, cs, when set, give failed counts too (b and c: none
		// failed)
		bs, cs strataCounts
		noOwn  bool
		fold   map[string]string
		own    map[string]bool
		said   []string
	}{
		{
			name: "one stray label in the baseline",
			b:    map[string]float64{"chat × default": 30000, "long × default": 9000, "typo × default": 1},
			c:    map[string]float64{"chat × default": 31000, "long × default": 8800},
			fold: map[string]string{"typo × default": "chat × default"},
			said: []string{`stray stratum "typo × default" (1 request, only in the baseline: 0.0026% of its requests) counted in "chat × default"`},
		},
		{
			// normalize.prompt_bands: all: a stray band of a label goes to
			// the label's nearest band both arms have, not to the largest
			// stratum, which is another label's
			name: "a stray prompt band of a label",
			b:    map[string]float64{"chat, prompt <512 × default": 30000, "long, prompt 2k-4k × default": 3000, "long, prompt 4k-8k × default": 6000},
			c:    map[string]float64{"chat, prompt <512 × default": 31000, "long, prompt 2k-4k × default": 2800, "long, prompt 4k-8k × default": 6100, "long, prompt 1k-2k × default": 2},
			fold: map[string]string{"long, prompt 1k-2k × default": "long, prompt 2k-4k × default"},
			said: []string{`stray stratum "long, prompt 1k-2k × default" (2 requests, only in the canary: 0.005% of its requests) counted in "long, prompt 2k-4k × default"`},
		},
		{
			// a band one arm has many requests in, of a label both
			// served: folded whatever its share, not left to stop the mix
			name: "a prompt band of a label one arm served",
			b:    map[string]float64{"chat, prompt <512 × default": 30000, "chat, prompt 512-1k × default": 9000},
			c:    map[string]float64{"chat, prompt <512 × default": 29000, "chat, prompt 512-1k × default": 9000, "chat, prompt 1k-2k × default": 2000},
			fold: map[string]string{"chat, prompt 1k-2k × default": "chat, prompt 512-1k × default"},
			said: []string{`prompt band "chat, prompt 1k-2k × default" (2000 requests, only in the canary: 5% of its requests) counted in "chat, prompt 512-1k × default", the label's nearest band both arms served`},
		},
		{
			name: "the same policy class only",
			b:    map[string]float64{"chat × default": 30000, "long × long": 9000},
			c:    map[string]float64{"chat × default": 31000, "long × long": 8800, "odd × long": 3},
			fold: map[string]string{"odd × long": "long × long"},
			said: []string{`stray stratum "odd × long" (3 requests, only in the canary: 0.0075% of its requests) counted in "long × long"`},
		},
		{
			name: "no shared stratum of that class: kept",
			b:    map[string]float64{"chat × default": 30000},
			c:    map[string]float64{"chat × default": 31000, "odd × long": 3},
			fold: map[string]string{},
		},
		{
			name: "a real class missing from the canary: kept",
			b:    map[string]float64{"chat": 30000, "long": 900},
			c:    map[string]float64{"chat": 31000},
			fold: map[string]string{},
		},
		{
			name: "without policy classes any shared stratum",
			b:    map[string]float64{"chat": 30000, "long": 9000, "typo": 2},
			c:    map[string]float64{"chat": 31000, "long": 8800},
			fold: map[string]string{"typo": "chat"},
			said: []string{`stray stratum "typo" (2 requests, only in the baseline: 0.0051% of its requests) counted in "chat"`},
		},
		{
			name: "unknown prompt length, any number, both arms",
			b:    map[string]float64{"prompt <1k × default": 20000, "prompt 1k-4k × default": 9000, "prompt unknown × default": 60},
			c:    map[string]float64{"prompt <1k × default": 20500, "prompt 1k-4k × default": 8800, "prompt unknown × default": 1100},
			fold: map[string]string{},
			own:  map[string]bool{"prompt unknown × default": true},
			said: []string{`requests of unknown prompt length "prompt unknown × default" (baseline 60, canary 1,100) kept at each arm's own share, not standardized: a band the log's gaps make, not the traffic`},
		},
		{
			name:  "unknown prompt length under explicit weights: folded",
			b:     map[string]float64{"prompt <1k × default": 20000, "prompt 1k-4k × default": 9000, "prompt unknown × default": 60},
			c:     map[string]float64{"prompt <1k × default": 20500, "prompt 1k-4k × default": 8800, "prompt unknown × default": 1100},
			noOwn: true,
			fold:  map[string]string{"prompt unknown × default": "prompt <1k × default"},
			said:  []string{`requests of unknown prompt length "prompt unknown × default" (baseline 60, canary 1,100) counted in "prompt <1k × default": a band the log's gaps make, not the traffic`},
		},
		{
			name: "only unknown prompt lengths: kept",
			b:    map[string]float64{"prompt unknown": 20000},
			c:    map[string]float64{"prompt unknown": 20500},
			fold: map[string]string{},
		},
		{
			// a log that labels what completed and not what failed: the
			// failures' band strata go to the largest labelled stratum
			name: "strata made by failures",
			bs: strataCounts{
				offered: map[string]float64{"chat × default": 30000, "long × long": 9000, "prompt <1k × default": 60, "prompt 4k-16k × long": 10},
				failed:  map[string]float64{"chat × default": 10, "long × long": 10, "prompt <1k × default": 60, "prompt 4k-16k × long": 10},
			},
			cs: strataCounts{
				offered: map[string]float64{"chat × default": 30000, "long × long": 9000, "prompt <1k × default": 900, "prompt 4k-16k × long": 200},
				failed:  map[string]float64{"chat × default": 10, "long × long": 10, "prompt <1k × default": 900, "prompt 4k-16k × long": 200},
			},
			fold: map[string]string{},
			own:  map[string]bool{"prompt <1k × default": true, "prompt 4k-16k × long": true},
			said: []string{
				`stratum "prompt 4k-16k × long" made by failures (failed or rejected: baseline 10 of 10, canary 200 of 200) kept at each arm's own share, not standardized`,
				`stratum "prompt <1k × default" made by failures (failed or rejected: baseline 60 of 60, canary 900 of 900) kept at each arm's own share, not standardized`,
			},
		},
		{
			// a class the canary broke (the baseline completes it): the
			// class stays, its failures judged within it
			name: "a class only the canary fails: kept",
			bs: strataCounts{
				offered: map[string]float64{"chat": 30000, "long": 9000},
				failed:  map[string]float64{"chat": 10, "long": 10},
			},
			cs: strataCounts{
				offered: map[string]float64{"chat": 30000, "long": 5000},
				failed:  map[string]float64{"chat": 10, "long": 4900},
			},
			fold: map[string]string{},
		},
		{
			// users who cancel most of one class's answers: cancels are
			// not failures, the class keeps its stratum
			name: "a class mostly canceled or retried by its clients: kept",
			bs: strataCounts{
				offered:  map[string]float64{"chat": 30000, "browse": 9000},
				failed:   map[string]float64{"chat": 10, "browse": 5},
				canceled: map[string]float64{"chat": 30, "browse": 6000},
			},
			cs: strataCounts{
				offered:  map[string]float64{"chat": 30000, "browse": 3000},
				failed:   map[string]float64{"chat": 10, "browse": 2},
				canceled: map[string]float64{"chat": 30, "browse": 2500},
				retried:  map[string]float64{"browse": 2600},
			},
			fold: map[string]string{},
		},
		{
			// labelled logs that leave the label off what the clients
			// gave up on: the band those fall in is their outcome's
			name: "labelled logs, a band of client cancels",
			bs: strataCounts{
				offered:  map[string]float64{"chat × default": 30000, "long × long": 9000, "prompt 1k-2k × default": 60},
				failed:   map[string]float64{"chat × default": 10, "long × long": 10},
				canceled: map[string]float64{"prompt 1k-2k × default": 55},
			},
			cs: strataCounts{
				offered:  map[string]float64{"chat × default": 30000, "long × long": 9000, "prompt 1k-2k × default": 900},
				failed:   map[string]float64{"chat × default": 10, "long × long": 10, "prompt 1k-2k × default": 5},
				canceled: map[string]float64{"prompt 1k-2k × default": 880},
			},
			fold: map[string]string{},
			own:  map[string]bool{"prompt 1k-2k × default": true},
			said: []string{`stratum "prompt 1k-2k × default" of records without a class label made by what they did not complete (failed, rejected or canceled: baseline 55 of 60, canary 885 of 900) kept at each arm's own share, not standardized`},
		},
		{
			// and off the retries
			name: "labelled logs, a band of retries",
			bs: strataCounts{
				offered: map[string]float64{"chat × default": 30000, "long × long": 9000, "prompt 1k-2k × default": 60},
				retried: map[string]float64{"chat × default": 10, "prompt 1k-2k × default": 60},
			},
			cs: strataCounts{
				offered: map[string]float64{"chat × default": 30000, "long × long": 9000, "prompt 1k-2k × default": 1500},
				retried: map[string]float64{"chat × default": 10, "prompt 1k-2k × default": 1500},
			},
			fold: map[string]string{},
			own:  map[string]bool{"prompt 1k-2k × default": true},
			said: []string{`stratum "prompt 1k-2k × default" of records without a class label made by retries (baseline 60 of 60, canary 1,500 of 1,500) kept at each arm's own share, not standardized`},
		},
		{
			// without labels a band is traffic, however its clients
			// treat its answers
			name: "unlabelled logs, a band mostly canceled: kept",
			bs: strataCounts{
				offered:  map[string]float64{"prompt <512": 30000, "prompt 1k-2k": 9000},
				failed:   map[string]float64{"prompt <512": 10, "prompt 1k-2k": 10},
				canceled: map[string]float64{"prompt 1k-2k": 6000},
			},
			cs: strataCounts{
				offered:  map[string]float64{"prompt <512": 30000, "prompt 1k-2k": 9000},
				failed:   map[string]float64{"prompt <512": 10, "prompt 1k-2k": 10},
				canceled: map[string]float64{"prompt 1k-2k": 6100},
				retried:  map[string]float64{"prompt 1k-2k": 5000},
			},
			fold: map[string]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := tc.bs, tc.cs
			if b.offered == nil {
				b, c = noneFailed(tc.b), noneFailed(tc.c)
			}
			f, own, s := strayStrataFolds(b, c, !tc.noOwn)
			if tc.own == nil {
				tc.own = map[string]bool{}
			}
			if !reflect.DeepEqual(f, tc.fold) || !reflect.DeepEqual(own, tc.own) || strings.Join(s, "\n") != strings.Join(tc.said, "\n") {
				t.Errorf("got %v %v %q\nwant %v %v %q", f, own, s, tc.fold, tc.own, tc.said)
			}
		})
	}
}

// TestLabelsInOneArm: a canary whose records carry class labels beside a
// baseline whose records carry none (a gateway upgrade that started
// logging them) shares no stratum with it by label; both judges say so in
// a warning. The request path stratifies both arms by token-length band
// and decides; the aggregate, which keeps no band for labelled records,
// does not apply its mix step (its prompt-length check keeps a traffic
// difference from passing or failing, as for metrics).
func TestLabelsInOneArm(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 100, Seed: 1}
	const seed = 1200
	b, c := fleetArms(aaFleet(seed), aaFleet(seed), seed)
	for i := range b.Requests {
		b.Requests[i].Class = ""
	}
	exact, agg := judgedBothWays(t, b, c, cfg)
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if !strings.Contains(strings.Join(r.Warnings, " "), "the canary's records carry class labels (class) and the baseline's none") {
			t.Errorf("%s: no warning naming the arms: %q", path, r.Warnings)
		}
	}
	if s := step(exact, "mix"); !s.Applied || !strings.Contains(s.Detail, "token-length bands") {
		t.Errorf("request path: mix step %v %q", s.Applied, s.Detail)
	}
	if m, ok := metricNamed(exact, "slo_attainment"); !ok || strings.Contains(m.Reason, "cannot standardise") {
		t.Errorf("request path: slo_attainment %s (%s)", m.Verdict, m.Reason)
	}
	if s := step(agg, "mix"); s.Applied || !strings.Contains(s.Detail, "only one arm") {
		t.Errorf("aggregate: mix step %v %q", s.Applied, s.Detail)
	}
	// the arms served the same traffic, labelled differently: neither path
	// holds the run as traffic of another kind (the aggregate did, in
	// every such run, against its own warning)
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if m, ok := metricNamed(r, "unmatched_strata"); ok {
			t.Errorf("%s: unmatched_strata %s: %s", path, m.Verdict, m.Reason)
		}
	}
	// the labelled arm the baseline: the per-class tails go by policy
	// class in both arms. By the baseline's labels they compared its
	// "long" label with the canary's "long" policy class (prompts of 8k
	// and more), and its "chat" label with nothing: the bench policy
	// failed identical simulator arms on ttft_p50:long (+29%)
	bs, cs := simArms(t, "aa-quiet-30m", 1)
	for i := range cs.Requests {
		cs.Requests[i].Class = ""
	}
	bench, err := policies.Load("bench")
	if err != nil {
		t.Fatal(err)
	}
	e3, a3 := judgedBothWays(t, bs, cs, Config{Policy: bench, Resamples: 100, Seed: 1})
	for path, r := range map[string]*Report{"request path": e3, "aggregate": a3} {
		for _, m := range r.Metrics {
			if m.Class != "" && m.Class != "default" && m.Class != "long" || m.Class != "" && m.Verdict == Fail {
				t.Errorf("%s: %s %s (%d/%d values): %s", path, m.Name, m.Verdict, m.NBaseline, m.NCanary, m.Reason)
			}
		}
	}
	// the unlabelled arm without prompt lengths too: nothing tells whether
	// the arms served the same traffic, and both paths hold the run
	for i := range b.Requests {
		b.Requests[i].PromptTokens = -1
	}
	exact, agg = judgedBothWays(t, b, c, cfg)
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if _, ok := metricNamed(r, "unmatched_strata"); !ok || r.Verdict == Pass {
			t.Errorf("%s: %s, unmatched_strata %v: the arms' traffic cannot be compared", path, r.Verdict, ok)
		}
	}
	// labelled alike: no warning
	b2, c2 := fleetArms(aaFleet(seed), aaFleet(seed), seed)
	e2, a2 := judgedBothWays(t, b2, c2, cfg)
	for _, r := range []*Report{e2, a2} {
		if strings.Contains(strings.Join(r.Warnings, " "), "carry class labels") {
			t.Errorf("warning on arms labelled alike: %q", r.Warnings)
		}
	}
}

// noneFailed is counts of strata none of whose requests failed.
func noneFailed(m map[string]float64) strataCounts {
	return strataCounts{offered: m, failed: map[string]float64{}}
}

// TestAggregateMixReferenceWarned: the streaming aggregate reweights the
// canary alone, to the baseline's mix; under another reference
// (normalize.mix canary, pooled) it says so in a warning rather than
// standardizing to a mix the policy did not ask for in silence. The
// request path, which applies the policy's reference, does not warn, and
// neither path warns under the baseline's.
func TestAggregateMixReferenceWarned(t *testing.T) {
	const seed = 7
	b, c := fleetArms(aaFleet(seed), aaFleet(seed), seed)
	for _, mix := range []string{normalize.MixBaseline, normalize.MixCanary, normalize.MixPooled} {
		p := chat(t)
		p.Normalize.Mix = mix
		exact, agg := judgedBothWays(t, b, c, Config{Policy: p, Resamples: 100, Seed: seed})
		warned := func(r *Report) bool {
			return strings.Contains(strings.Join(r.Warnings, " "), "normalize.mix "+mix+" is applied by the exact judge (--exact) only")
		}
		if warned(exact) {
			t.Errorf("%s: the request path warns: %q", mix, exact.Warnings)
		}
		if got, want := warned(agg), mix != normalize.MixBaseline; got != want {
			t.Errorf("%s: the aggregate warns %v, want %v: %q", mix, got, want, agg.Warnings)
		}
	}
}

// TestWeightsWithoutCacheStrata: explicit weights name policy classes; with
// the default cache: auto the prefix-cache bands made strata ("default ·
// cache 0") that no weight names, and every standardized gate was
// inconclusive asking for their weights. The cache is not stratified
// under explicit weights, and the cache step says why.
func TestWeightsWithoutCacheStrata(t *testing.T) {
	const seed = 7
	b, c := fleetArms(aaFleet(seed), aaFleet(seed), seed)
	p := chat(t)
	p.Normalize.Mix, p.Normalize.Weights = normalize.MixWeights, map[string]float64{"default": 1}
	r, err := Judge(b, c, Config{Policy: p, Resamples: 100, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"slo_attainment", "error_rate", "ttft_p99"} {
		if m := metric(t, r, name); strings.Contains(m.Reason, "no weight for class") || math.IsNaN(float64(m.Delta)) {
			t.Errorf("%s undecided: %s", name, m.Reason)
		}
	}
	if s := step(r, "cache"); s.Applied || !strings.Contains(s.Detail, "normalize.mix weights names classes") {
		t.Errorf("cache step %v %q", s.Applied, s.Detail)
	}
}
