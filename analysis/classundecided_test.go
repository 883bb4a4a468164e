package analysis

import (
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// TestClassUndecided: a completed request's class is one a missing
// length may have decided when a rule before the one its known fields
// match reads a length it lacks, and its label and known lengths meet
// that rule.
func TestClassUndecided(t *testing.T) {
	p, err := policies.Parse("classes.yaml", []byte(`name: classes
slo: {ttft: 1s}
classes:
  - name: code-long
    when: {label: [code], prompt_tokens: {min: 8192}}
    slo: {ttft: 4s}
  - name: long
    when: {prompt_tokens: {min: 8192}}
    slo: {ttft: 3s}
  - name: short-answers
    when: {output_tokens: {max: 16}}
gates:
  - {metric: slo_attainment, margin: 1pp}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		label          string
		prompt, output int64
		status         sources.Status
		want           bool
	}{
		{"every length given", "chat", 9000, 200, sources.StatusOK, false},
		{"no prompt length, a rule reads it", "chat", -1, 200, sources.StatusOK, true},
		{"no prompt length, a label rule for another label only", "code", 9000, 200, sources.StatusOK, false},
		{"no prompt length in a label the first rule names", "code", -1, 200, sources.StatusOK, true},
		{"no output length, a rule reads it", "chat", 100, -1, sources.StatusOK, true},
		{"an earlier rule matched on known lengths", "chat", 9000, -1, sources.StatusOK, false},
		{"a known length the rule rejects, the other missing", "chat", 100, -1, sources.StatusOK, true},
		{"failed: judged not good under any class", "chat", -1, -1, sources.StatusError, false},
	} {
		r := sources.Request{Class: tc.label, PromptTokens: tc.prompt, OutputTokens: tc.output, Status: tc.status}
		if _, got := newClassifier(p).classify(&r); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestClassGapHoldsBothPaths: a canary whose log gives no prompt length
// had its long-prompt requests judged under chat's default SLO (TTFT 1 s),
// not its long class's, and identical builds FAILED on attainment on both
// paths. The arms' shares of requests whose class a missing length
// decided now hold the run, naming the field; arms logged alike are
// judged as before.
func TestClassGapHoldsBothPaths(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 100, Seed: 1}
	// the simulator's labelled long prompts reach chat's 8192-token class
	b, c := simArms(t, "aa-quiet-30m", 1)
	for i := range c.Requests {
		c.Requests[i].PromptTokens = -1
	}
	exact, agg := judgedBothWays(t, b, c, cfg)
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		rs := strings.Join(r.Reasons, "; ")
		if r.Verdict != Inconclusive || !strings.Contains(rs, `lack the prompt_tokens that the policy's class rules ("long") read in 0.0%`) {
			t.Errorf("%s: %s: %s", path, r.Verdict, rs)
		}
	}
	// the baseline without them: its long prompts judged by the 1 s
	// default lowered its attainment; the run (held by unmatched_strata
	// too) says why
	bb, cc := simArms(t, "aa-quiet-30m", 1)
	for i := range bb.Requests {
		bb.Requests[i].PromptTokens = -1
	}
	exact, agg = judgedBothWays(t, bb, cc, cfg)
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		rs := strings.Join(r.Reasons, "; ")
		if r.Verdict != Inconclusive || !strings.Contains(rs, `read in 100.0%`) {
			t.Errorf("baseline without prompt lengths, %s: %s: %s", path, r.Verdict, rs)
		}
	}
	// both arms without: one rule for both, decided as before
	for i := range b.Requests {
		b.Requests[i].PromptTokens = -1
	}
	exact, agg = judgedBothWays(t, b, c, cfg)
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if rs := strings.Join(r.Reasons, "; "); strings.Contains(rs, "class rules") {
			t.Errorf("%s: held with both arms logged alike: %s", path, rs)
		}
	}
}

// TestLabelClassGapHoldsBothPaths: under a policy whose class rule reads
// the label, a canary logged without class labels had every request
// judged by the looser default SLO (TTFT 10 s, TPOT 500 ms) while the
// baseline's were judged by their class's (1 s, 80 ms): on the fleet
// model a canary 10% slower PASSED from its aggregate. Labels missing
// from shares of the arms' requests that differ now hold the run on both
// paths, naming the field; a policy whose rules read no label, or arms
// labelled alike, are judged as before.
func TestLabelClassGapHoldsBothPaths(t *testing.T) {
	lab := streamPolicy(t, `name: lab
slo: {ttft: 10s, tpot: 500ms}
classes:
  - name: interactive
    when: {label: [chat, long]}
    slo: {ttft: 1s, tpot: 80ms}
window: {warmup: auto, bucket: 10s}
normalize: {mix: baseline, cache: auto, load: matched}
gates:
  - {metric: slo_attainment, margin: 1pp}
  - {metric: error_rate, margin: 0.5pp, guardrail: true}
confidence: 0.95
`)
	for _, name := range []string{"canary-unlabelled", "canary-unlabelled-regress-10", "regress-10"} {
		fc := fleetCaseNamed(t, name)
		seed := uint64(1000*len(fc.name) + 1)
		b, c := fleetArms(fc.b(seed), fc.c(seed), seed)
		if name == "regress-10" {
			// a third of the canary's records logged without their label
			for i := range c.Requests {
				if i%3 == 0 {
					c.Requests[i].Class = ""
				}
			}
		}
		exact, agg := judgedBothWays(t, b, c, Config{Policy: lab, Resamples: 100, Seed: 1})
		for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
			rs := strings.Join(r.Reasons, "; ")
			if r.Verdict != Inconclusive || !strings.Contains(rs, `the baseline's completed requests lack the class label (class) that the policy's class rules ("interactive") read in 0.0%`) {
				t.Errorf("%s, %s: %s: %s", fc.name, path, r.Verdict, rs)
			}
		}
		// chat's classes read prompt lengths only: not held for labels
		exact, agg = judgedBothWays(t, b, c, Config{Policy: chat(t), Resamples: 100, Seed: 1})
		for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
			if rs := strings.Join(r.Reasons, "; "); strings.Contains(rs, "lack the class label") {
				t.Errorf("%s, %s under chat: %s", fc.name, path, rs)
			}
		}
	}
	// labelled alike: judged as before (the regression fails)
	exact, agg := fleetBothWays(t, "regress-10", 1000*uint64(len("regress-10"))+1, Config{Policy: lab, Resamples: 100, Seed: 1})
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if rs := strings.Join(r.Reasons, "; "); r.Verdict != Fail || strings.Contains(rs, "lack the class label") {
			t.Errorf("regress-10 labelled alike, %s: %s: %s", path, r.Verdict, rs)
		}
	}
	if got := labelClassGap(chat(t), 0, 1000, 1000, 1000); got != "" {
		t.Errorf("chat: %q", got)
	}
}
