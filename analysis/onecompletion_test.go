package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestOneCompletionSway: the mean with the longest completion over the
// mean without it, less 1.
func TestOneCompletionSway(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    outputTop
		want float64
	}{
		{"none known", outputTop{}, 0},
		{"one completion", outputTop{tokens: 500, n: 1, max: 500}, 0},
		{"all alike", outputTop{tokens: 1000, n: 10, max: 100}, 0},
		// mean 110 with it, 100 without
		{"one of 10 twice the rest", outputTop{tokens: 1100, n: 10, max: 200}, 0.1},
		{"one holds every token", outputTop{tokens: 4096, n: 50, max: 4096}, math.Inf(1)},
		// mean (99·200 + 2^31−1)/100 over 200
		{"an overflowed count", outputTop{tokens: 99*200 + math.MaxInt32, n: 100, max: math.MaxInt32}, (99*200+math.MaxInt32)/100.0/200 - 1},
	} {
		if got := tc.o.sway(); math.Abs(got-tc.want) > 1e-12 && got != tc.want {
			t.Errorf("%s: sway %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHeldByOneCompletion: a record whose output length is absurd (an
// overflowed count) failed identical arms on output_tokens_mean with an
// interval of [+31,719%, +1,793,817%]; an arm's mean that one completion
// moves by more than half the gate's margin now decides nothing, on both
// judging paths and in either arm, and the reason names the record's
// value. An answer that ran on to the fleet's 1,024-token cap among 36,000
// moves nothing, and a run of 300 completions where one legitimate answer
// gave 8,000 tokens is held too (the rule asks how far one record moves
// the mean, not whether it is corrupt).
func TestHeldByOneCompletion(t *testing.T) {
	const seed = 11
	edit := func(ds *sources.Dataset, tokens int64) {
		for i := len(ds.Requests) / 2; i < len(ds.Requests); i++ {
			if r := &ds.Requests[i]; r.Status == sources.StatusOK && r.OutputTokens > 1 {
				r.OutputTokens = tokens
				return
			}
		}
		t.Fatal("no completion to edit")
	}
	short := aaFleet(seed)
	short.secs, short.rate = 300, 1
	for _, tc := range []struct {
		name     string
		b, c     fleet
		arm      sources.Arm // the arm whose record is edited
		tokens   int64
		held     string // "" when the gate is not held; else the arm named
		heldText string
	}{
		{"an overflowed count in the canary", aaFleet(seed), aaFleet(seed), sources.Canary, math.MaxInt32, "canary", "2,147,483,647 output tokens"},
		{"an overflowed count in the baseline", aaFleet(seed), aaFleet(seed), sources.Baseline, math.MaxInt32, "baseline", "2,147,483,647 output tokens"},
		{"one answer at the cap", aaFleet(seed), aaFleet(seed), sources.Canary, 1024, "", ""},
		{"one long answer in a short run", short, short, sources.Canary, 8000, "canary", "8,000 output tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := fleetArms(tc.b, tc.c, seed)
			if tc.arm == sources.Baseline {
				edit(b, tc.tokens)
			} else {
				edit(c, tc.tokens)
			}
			exact, agg := judgedBothWays(t, b, c, Config{Policy: chat(t), Resamples: 400, Seed: seed})
			for k, r := range []*Report{exact, agg} {
				path := [2]string{"request path", "aggregate"}[k]
				m := metric(t, r, "output_tokens_mean")
				held := strings.Contains(m.Reason, "one completion sets")
				if held != (tc.held != "") {
					t.Fatalf("%s: held %v, want %v: %s %s", path, held, tc.held != "", m.Verdict, m.Reason)
				}
				if !held {
					continue
				}
				if m.Verdict != Inconclusive || r.Verdict != Inconclusive {
					t.Errorf("%s: gate %s, run %s: one record decided a verdict", path, m.Verdict, r.Verdict)
				}
				if !strings.Contains(m.Reason, "the "+tc.held+"'s mean output length") || !strings.Contains(m.Reason, tc.heldText) {
					t.Errorf("%s: the reason does not name the %s's record (%s): %s", path, tc.held, tc.heldText, m.Reason)
				}
			}
		})
	}
}
