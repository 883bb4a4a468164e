package analysis

import (
	"math"
	"strings"
	"testing"
)

// TestCommonWarmupCut: arms paired in time are compared over one span. A
// canary that starts cold is cut by the automatic warm-up rule; the
// baseline, warm from the start, is cut to the same instant, and the
// warm-up step says so. Arms run hours apart are not paired and keep their
// own cuts.
func TestCommonWarmupCut(t *testing.T) {
	const seed = 6
	c := aaFleet(seed)
	c.coldSecs, c.coldX = 240, 2.5
	b, cd := fleetArms(aaFleet(seed), c, seed)
	r, err := Judge(b, cd, Config{Policy: chat(t), Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	cb, cc := float64(r.Arms.Baseline.WarmupCutSeconds), float64(r.Arms.Canary.WarmupCutSeconds)
	if !(cc > 0) {
		t.Fatalf("the cold canary was not cut: %q", step(r, "warmup").Detail)
	}
	// both arms start within a second of each other on the shared grid
	if d := cb - cc; d < -1 || d > 1 {
		t.Errorf("paired arms cut at %gs and %gs", cb, cc)
	}
	if !strings.Contains(step(r, "warmup").Detail, "both arms are compared over the same span") {
		t.Errorf("warm-up step does not name the common cut: %q", step(r, "warmup").Detail)
	}
	// the arm cut to the other's instant is re-bucketed: its
	// replica-seconds must be too
	for name, a := range map[string]ArmSummary{"baseline": r.Arms.Baseline, "canary": r.Arms.Canary} {
		if rs, gpr := float64(a.ReplicaSeconds), float64(a.GoodputPerReplica); !(rs > 0) || !(gpr > 0) {
			t.Errorf("%s: replica-seconds %v, goodput per replica %v after the common cut", name, rs, gpr)
		}
	}
	for i := range cd.Requests {
		cd.Requests[i].Time += 3 * 3600
	}
	r2, err := Judge(b, cd, Config{Policy: chat(t), Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(step(r2, "warmup").Detail, "same span") {
		t.Errorf("arms 3 h apart were given one cut: %q", step(r2, "warmup").Detail)
	}
}

// TestCommonWarmupCutAtTheCap: a canary whose slow start outlasts the cap
// is cut at the cap (window.max_warmup, 5 min here), measured from its own
// first request. Its baseline, whose first request came half a second
// earlier, is cut to the same instant although that is 0.5 s past the cap
// from its own start: left uncut, its first five minutes were compared
// with nothing.
func TestCommonWarmupCutAtTheCap(t *testing.T) {
	const seed = 6
	c := aaFleet(seed)
	c.coldSecs, c.coldX = 420, 2.5
	b, cd := fleetArms(aaFleet(seed), c, seed)
	for i := range cd.Requests {
		cd.Requests[i].Time += 0.5
	}
	r, err := Judge(b, cd, Config{Policy: chat(t), Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	cb, cc := float64(r.Arms.Baseline.WarmupCutSeconds), float64(r.Arms.Canary.WarmupCutSeconds)
	if cc != 300 {
		t.Fatalf("the canary's 7-minute slow start was cut at %gs, want the 300 s cap: %q", cc, step(r, "warmup").Detail)
	}
	if d := cb - cc; d < -1 || d > 1 {
		t.Errorf("paired arms cut at %gs (baseline) and %gs (canary): %q", cb, cc, step(r, "warmup").Detail)
	}
}

// TestCommonWarmupCutAggregate: the streaming aggregate gives paired arms
// one analysed span as the request path does — the warm baseline is cut
// where the cold canary's cut ends, on both paths, to the same slice.
func TestCommonWarmupCutAggregate(t *testing.T) {
	const seed = 6
	c := aaFleet(seed)
	c.coldSecs, c.coldX = 240, 2.5
	b, cd := fleetArms(aaFleet(seed), c, seed)
	exact, agg := judgedBothWays(t, b, cd, Config{Policy: chat(t), Resamples: 300})
	cb, cc := float64(agg.Arms.Baseline.WarmupCutSeconds), float64(agg.Arms.Canary.WarmupCutSeconds)
	if !(cc > 0) {
		t.Fatalf("the cold canary was not cut on the aggregate: %q", step(agg, "warmup").Detail)
	}
	if d := cb - cc; d < -10 || d > 10 {
		t.Errorf("aggregate: paired arms cut at %gs and %gs: %q", cb, cc, stepsNamed(agg, "warmup"))
	}
	if !strings.Contains(stepsNamed(agg, "warmup"), "both arms are compared over the same span") {
		t.Errorf("aggregate warm-up steps do not name the common cut: %q", stepsNamed(agg, "warmup"))
	}
	if e := float64(exact.Arms.Canary.WarmupCutSeconds); math.Abs(e-cc) > 10 {
		t.Errorf("canary cut %gs exactly, %gs on the aggregate", e, cc)
	}
}

// stepsNamed joins the details of every normalization step called name.
func stepsNamed(r *Report, name string) string {
	var out []string
	for _, s := range r.Normalization.Steps {
		if s.Name == name {
			out = append(out, s.Detail)
		}
	}
	return strings.Join(out, " | ")
}
