package analysis

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"
)

// TestSideBySideIsSequential: the aggregate judge reads the arms, the
// gates, their as-measured comparisons, the diagnostics and the class
// table on several goroutines (sideBySide, aggArms, report). The report
// must be the one a single goroutine gives, byte for byte: the same
// warnings in the same order, the same bootstrap draws. Fleet cases whose
// canary is reweighted to the baseline's mix (so the canary is read twice
// and every gate has an as-measured twin), one of them with warnings,
// judged on one processor and on four, several times.
func TestSideBySideIsSequential(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 200, Seed: 1}
	for _, name := range []string{"cold-start", "lost-replica"} {
		fc := fleetCaseNamed(t, name)
		b, c := fleetArms(fc.b(1), fc.c(1), 1)
		ab, ac, err := StreamedArms(b, c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		judged := func(procs int) []byte {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			rep, err := Judge(ab, ac, cfg)
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
		if naive == 0 || (name == "lost-replica") != (len(rep.Warnings) > 0) {
			t.Fatalf("%s: %d as-measured comparisons and %d warnings: the case no longer exercises what is read side by side", name, naive, len(rep.Warnings))
		}
		for k := range 4 {
			if got := judged(4); !bytes.Equal(got, one) {
				t.Fatalf("%s, run %d: the report on four processors differs from the one on one (%d vs %d bytes)", name, k, len(got), len(one))
			}
		}
	}
}
