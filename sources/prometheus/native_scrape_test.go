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
// never sums both forms: the arm with both forms reads what the
// native-only arm reads; the classic arm's counts at the edges both forms
// share agree with the native ones; a native histogram's quantile is
// placed within one exponential bucket. An arm whose replicas differ in
// form (each form has series the other lacks) is read as partial; one
// whose native series cover only some of its classic ones is read classic.
func TestNativeHistogramsFromScrapes(t *testing.T) {
	start := time.Now().Add(-40 * time.Minute).Truncate(time.Minute)
	classes := []string{"chat", "code"}
	f := promtest.ServeCompleteFleet(t, start, 10*time.Second, 60,
		promtest.FleetArm{Deployment: "both", Form: promtest.FormBoth, Classes: classes, Seed: 7},
		promtest.FleetArm{Deployment: "native", Form: promtest.FormNative, Classes: classes, Seed: 7},
		promtest.FleetArm{Deployment: "classic", Form: promtest.FormClassic, Classes: classes, Seed: 7},
		promtest.FleetArm{Deployment: "split", Form: promtest.FormSplit, Classes: classes, Seed: 7},
		promtest.FleetArm{Deployment: "some", Form: promtest.FormSomeNative, Classes: classes, Seed: 7})
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
	// native series for only some replicas that all have classic ones:
	// the classic form is read, every request counted once
	some, someForms := read("some")
	if someForms[engines.TTFT] != Classic || len(some.Agg.Partial) > 0 ||
		!hasNote(some, "vllm:time_to_first_token_seconds: both classic (_bucket) and native series exist, but 2 classic series have no native counterpart: the classic series were read") {
		t.Errorf("some native: TTFT read as %s, partial %q, notes %q", someForms[engines.TTFT], some.Agg.Partial, some.Agg.Notes)
	}
	var someTTFT, someDone float64
	for _, b := range some.Agg.Buckets {
		someTTFT += b.TTFT.Total()
		someDone += b.Completed
	}
	if d := someTTFT/someDone - 1; math.Abs(d) > 0.01 {
		t.Errorf("some native: TTFT histograms count %.0f requests, the request counter %.0f", someTTFT, someDone)
	}
	// replicas that differ in form: native read, the rest missing, partial
	split, splitForms := read("split")
	if splitForms[engines.TTFT] != Native || !slices.ContainsFunc(split.Agg.Partial, func(p string) bool {
		return strings.Contains(p, "vllm:time_to_first_token_seconds: 2 series export it only as a classic histogram (_bucket) and 2 only as a native one")
	}) {
		t.Errorf("split forms: TTFT read as %s, partial %q", splitForms[engines.TTFT], split.Agg.Partial)
	}

	// both forms present: what native alone gives, nothing twice (every
	// scrape kept, the two arms' samples are the same)
	if len(both.Agg.Buckets) != len(nat.Agg.Buckets) || len(nat.Agg.Buckets) != len(cls.Agg.Buckets) {
		t.Fatalf("%d, %d and %d buckets", len(both.Agg.Buckets), len(nat.Agg.Buckets), len(cls.Agg.Buckets))
	}
	window := func(ds sources.Dataset, pick func(sources.AggBucket) sources.Histogram) (h sources.Histogram, completed float64) {
		for _, b := range ds.Agg.Buckets {
			if x := pick(b); len(x.Edges) > 0 {
				h, _ = histo.Merge(append([]sources.Histogram{h}, x)...)
			}
			completed += b.Completed
		}
		return h, completed
	}
	picks := map[string]func(sources.AggBucket) sources.Histogram{
		"TTFT": func(b sources.AggBucket) sources.Histogram { return b.TTFT },
		"TPOT": func(b sources.AggBucket) sources.Histogram { return b.TPOT },
		"E2E":  func(b sources.AggBucket) sources.Histogram { return b.E2E },
	}
	for name, pick := range picks {
		hb, cb := window(both, pick)
		hn, cn := window(nat, pick)
		if !hb.Sparse || !slices.Equal(hb.Edges, hn.Edges) {
			t.Fatalf("%s: with both forms edges %v, native alone %v", name, hb.Edges, hn.Edges)
		}
		for i := range hb.Counts {
			if math.Abs(hb.Counts[i]-hn.Counts[i]) > 1e-9*hn.Total() {
				t.Errorf("%s at %g: %v with both forms, %v native alone", name, hb.Edges[i], hb.Counts[i], hn.Counts[i])
			}
		}
		for arm, x := range map[string][2]float64{"both": {hb.Total(), cb}, "native": {hn.Total(), cn}} {
			if d := x[0]/x[1] - 1; math.Abs(d) > 0.01 {
				t.Errorf("%s: %s histograms count %.0f requests, the request counter %.0f", arm, name, x[0], x[1])
			}
		}
	}
	seen := map[string]bool{}
	for _, b := range nat.Agg.Buckets {
		if b.TTFT.Total() > 0 {
			seen[b.Class] = true
		}
	}
	if !seen["chat"] || !seen["code"] {
		t.Errorf("native histograms per model_name class: %v", seen)
	}

	// classic against native at the edges both have (1 s, 0.5 s, 0.25 s)
	hc, completed := window(cls, picks["TTFT"])
	hn, _ := window(nat, picks["TTFT"])
	var worst float64
	for _, e := range []float64{0.25, 0.5, 1} {
		ac, an := histo.Fraction(hc, e), histo.Fraction(hn, e)
		if !ac.Exact || !an.Exact {
			t.Fatalf("attainment at the %g s edge not exact: classic %+v, native %+v", e, ac, an)
		}
		worst = math.Max(worst, math.Abs(ac.Lo-an.Lo))
	}
	if worst > 1e-9 {
		t.Errorf("classic and native attainment at shared edges differ by up to %.4f", worst)
	}
	// a native quantile is placed within one exponential bucket
	steps := 0
	for i, b := range nat.Agg.Buckets {
		if lo, hi := histo.QuantileBounds(0.5, b.TTFT); b.TTFT.Total() > 20 {
			steps++
			if !(hi/lo <= math.Exp2(1.0/8)*(1+1e-9)) {
				t.Errorf("bucket %d: median TTFT within (%g, %g]: wider than a schema-3 bucket", i, lo, hi)
			}
		}
	}
	if steps == 0 {
		t.Error("no step with a TTFT median to place")
	}
	ttftTotal := hn.Total()
	t.Logf("%d buckets; %.0f requests; TTFT histograms %.0f; classic vs native attainment at shared edges within %.2g", len(nat.Agg.Buckets), completed, ttftTotal, worst)
}
