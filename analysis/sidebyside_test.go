package analysis

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestSideBySideIsSequential: both judges evaluate their gates on several
// goroutines (eachSideBySide) and compute their diagnostics beside them;
// the aggregate judge also reads the arms, the as-measured comparisons and
// the class table so. The report must be the one a single goroutine
// gives, byte for byte: the same warnings in the same order, the same
// bootstrap draws. Fleet cases whose canary is reweighted to the
// baseline's mix (so the aggregate's canary is read twice and every gate
// has an as-measured twin), one of them with warnings, judged from the
// requests and from their aggregates, on one processor and four times on
// four; and a case whose records name their users, whose count gates read
// the arms' tallies per group of users side by side (the request path
// once filled a tally in place while another gate read it: a report that
// differed now and then).
func TestSideBySideIsSequential(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 200, Seed: 1}
	for _, name := range []string{"cold-start", "lost-replica", "aa-sticky-users-prompts"} {
		fc := fleetCaseNamed(t, name)
		b, c := fleetArms(fc.b(1), fc.c(1), 1)
		ab, ac, err := StreamedArms(b, c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		sideBySideCase(t, name+" from the requests", b, c, cfg)
		sideBySideCase(t, name+" from the aggregate", ab, ac, cfg)
	}
}

// sideBySideCase judges one pair of arms on one processor, then four
// times on four, and compares the JSON reports.
func sideBySideCase(t *testing.T, what string, b, c *sources.Dataset, cfg Config) {
	t.Helper()
	judged := func(procs int) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		rep, err := Judge(b, c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		out, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	one := judged(1)
	var rep Report
	if err := json.Unmarshal(one, &rep); err != nil {
		t.Fatal(err)
	}
	naive := 0
	for _, m := range rep.Metrics {
		if m.Naive != nil {
			naive++
		}
	}
	if naive == 0 || len(rep.Diagnostics) == 0 {
		t.Fatalf("%s: %d as-measured comparisons and %d diagnostics: the case no longer exercises what is computed side by side", what, naive, len(rep.Diagnostics))
	}
	t.Logf("%s: %d gates, %d warnings", what, len(rep.Metrics), len(rep.Warnings))
	for k := range 4 {
		if got := judged(4); !bytes.Equal(got, one) {
			t.Fatalf("%s, run %d: the report on four processors differs from the one on one (%d vs %d bytes)", what, k, len(got), len(one))
		}
	}
}
