package prometheus

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/engines"
	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
)

// TestNativeHistogramsFromScrapes: three deployments replay the same
// seeded vLLM traffic (two model_name classes), scraped by a real
// Prometheus with native histograms on: one exposes native histograms, one
// classic ones, one both (a native and a classic series with the same
// labels for every histogram). The reader picks native where present and
// never sums both forms: the arm with both forms reads exactly what the
// native-only arm reads; the classic arm's counts at the edges both forms
// share agree with the native ones; a native histogram's quantile is
// placed within one exponential bucket.
func TestNativeHistogramsFromScrapes(t *testing.T) {
	start := time.Now().Add(-40 * time.Minute).Truncate(time.Minute)
	classes := []string{"chat", "code"}
	f := promtest.ServeFleet(t, start, 5*time.Second, 120,
		promtest.FleetArm{Deployment: "both", Form: promtest.FormBoth, Classes: classes, Seed: 7},
		promtest.FleetArm{Deployment: "native", Form: promtest.FormNative, Classes: classes, Seed: 7},
		promtest.FleetArm{Deployment: "classic", Form: promtest.FormClassic, Classes: classes, Seed: 7})
	f.Wait(t, 50*time.Second)
	src, err := New(Config{URL: f.URL})
	if err != nil {
		t.Fatal(err)
	}
	read := func(dep string) (sources.Dataset, map[engines.Quantity]HistogramForm) {
		t.Helper()
		sel, err := engines.ParseSelector(`deployment="` + dep + `"`)
		if err != nil {
			t.Fatal(err)
		}
		arm := sources.Arm(dep)
		ds, err := src.Read(context.Background(), Query{Arm: arm, Selector: sel, Start: f.Start, End: f.End,
			Step: 30 * time.Second, ClassLabel: "model_name"})
		if err != nil {
			t.Fatalf("%s: %v", dep, err)
		}
		return ds, src.HistogramForms(arm)
	}
	both, bothForms := read("both")
	nat, natForms := read("native")
	cls, clsForms := read("classic")
	for _, hq := range engines.Histograms() {
		if bothForms[hq] != Native || natForms[hq] != Native || clsForms[hq] != Classic {
			t.Errorf("%s read as %s (both), %s (native), %s (classic); want native, native, classic", hq, bothForms[hq], natForms[hq], clsForms[hq])
		}
	}
	hasNote := func(ds sources.Dataset, want string) bool {
		return slices.ContainsFunc(ds.Agg.Notes, func(n string) bool { return strings.Contains(n, want) })
	}
	if !hasNote(both, "vllm:time_to_first_token_seconds: both classic (_bucket) and native series exist; the native ones were read") {
		t.Errorf("no note of the form chosen among both: %q", both.Agg.Notes)
	}
	if !hasNote(nat, "vllm:time_to_first_token_seconds: read from native histograms (exponential buckets, schema 3") {
		t.Errorf("no note of the native form: %q", nat.Agg.Notes)
	}
	if hasNote(cls, "native") {
		t.Errorf("classic arm notes a native form: %q", cls.Agg.Notes)
	}
	if len(both.Agg.Partial) > 0 || len(nat.Agg.Partial) > 0 {
		t.Errorf("partial: %q %q", both.Agg.Partial, nat.Agg.Partial)
	}

	// both forms present: exactly what native alone gives, nothing twice
	if len(both.Agg.Buckets) != len(nat.Agg.Buckets) || len(nat.Agg.Buckets) != len(cls.Agg.Buckets) {
		t.Fatalf("%d, %d and %d buckets", len(both.Agg.Buckets), len(nat.Agg.Buckets), len(cls.Agg.Buckets))
	}
	var completed, ttftTotal float64
	seen := map[string]bool{}
	for i, b := range both.Agg.Buckets {
		n := nat.Agg.Buckets[i]
		for _, pair := range [][2]sources.Histogram{{b.TTFT, n.TTFT}, {b.TPOT, n.TPOT}, {b.E2E, n.E2E}, {b.Queue, n.Queue}} {
			if !slices.Equal(pair[0].Edges, pair[1].Edges) || !slices.Equal(pair[0].Counts, pair[1].Counts) {
				t.Fatalf("bucket %d (%s): with both forms %v %v, native alone %v %v", i, b.Class, pair[0].Edges, pair[0].Counts, pair[1].Edges, pair[1].Counts)
			}
		}
		if b.Completed != n.Completed {
			t.Errorf("bucket %d: completed %v with both forms, %v native alone", i, b.Completed, n.Completed)
		}
		completed += b.Completed
		ttftTotal += b.TTFT.Total()
		if b.TTFT.Total() > 0 {
			seen[b.Class] = true
		}
	}
	if d := ttftTotal/completed - 1; math.Abs(d) > 0.01 {
		t.Errorf("TTFT histograms count %.0f requests, the request counter %.0f: differ by %.2f%%", ttftTotal, completed, 100*d)
	}
	if !seen["chat"] || !seen["code"] {
		t.Errorf("native histograms per model_name class: %v", seen)
	}

	// classic against native at the edges both have (1 s, 0.5 s, 0.25 s)
	var worst float64
	steps := 0
	for i, c := range cls.Agg.Buckets {
		n := nat.Agg.Buckets[i]
		for _, e := range []float64{0.25, 0.5, 1} {
			ac, an := histo.Fraction(c.TTFT, e), histo.Fraction(n.TTFT, e)
			if math.IsNaN(ac.Lo) || math.IsNaN(an.Lo) {
				continue
			}
			if !ac.Exact || !an.Exact {
				t.Fatalf("bucket %d: attainment at the %g s edge not exact: classic %+v, native %+v", i, e, ac, an)
			}
			worst = math.Max(worst, math.Abs(ac.Lo-an.Lo))
		}
		// a native quantile is placed within one exponential bucket
		if lo, hi := histo.QuantileBounds(0.5, n.TTFT); n.TTFT.Total() > 20 {
			steps++
			if !(hi/lo <= math.Exp2(1.0/8)*(1+1e-9)) {
				t.Errorf("bucket %d: median TTFT within (%g, %g]: wider than a schema-3 bucket", i, lo, hi)
			}
		}
	}
	if worst > 0.002 || steps == 0 {
		t.Errorf("classic and native attainment at shared edges differ by up to %.4f (steps checked %d)", worst, steps)
	}
	t.Logf("%d buckets; %.0f requests; TTFT histograms %.0f; classic vs native attainment at shared edges within %.2g", len(nat.Agg.Buckets), completed, ttftTotal, worst)
}
