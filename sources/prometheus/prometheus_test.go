package prometheus

import (
	"context"
	"fmt"
	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/engines"
	"github.com/goodput-dev/goodput/sources/exposition"
)

func mustSel(t testing.TB, s string) engines.Selector {
	t.Helper()
	sel, err := engines.ParseSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

func smallQuery(arm sources.Arm, t testing.TB) Query {
	start := time.Unix(smallRecipe.Start, 0)
	return Query{Arm: arm, Selector: mustSel(t, fmt.Sprintf("deployment=%q", arm)), Start: start,
		End: start.Add(time.Duration(smallRecipe.Samples-1) * 15 * time.Second), Step: 15 * time.Second}
}

// smallProm starts a Prometheus on the committed fixture for one test.
func smallProm(t *testing.T) string {
	t.Helper()
	return promtest.Start(t, filepath.Join("testdata", "small.om"))
}

func TestReadAgainstPrometheus(t *testing.T) {
	base := smallProm(t)
	ctx := context.Background()
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		t.Run(string(arm), func(t *testing.T) {
			src, err := New(Config{URL: base, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			q := smallQuery(arm, t)
			ds, err := src.Read(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			agg := ds.Agg
			steps := smallRecipe.Samples - 1
			if agg.Profile != "vllm-v1" || agg.Step != 15 || len(agg.Buckets) != steps*len(smallRecipe.Classes) {
				t.Fatalf("profile %s step %v buckets %d", agg.Profile, agg.Step, len(agg.Buckets))
			}
			if ds.Clock != sources.ClockEpoch || ds.Location != "server" || ds.Duration != float64(steps*15) {
				t.Errorf("clock %s location %s duration %v", ds.Clock, ds.Location, ds.Duration)
			}
			if len(ds.Inputs) != 4 || len(ds.Inputs[0].SHA256) != 64 || !strings.Contains(ds.Inputs[2].Path, `deployment="`+string(arm)+`"`) {
				t.Errorf("inputs = %+v", ds.Inputs)
			}
			if got := src.Queries(); got != 4 {
				t.Errorf("queries = %d, want 4 (names, layouts, increases, gauges)", got)
			}
			for i, b := range agg.Buckets {
				k := i / len(smallRecipe.Classes)
				class := smallRecipe.Classes[i%len(smallRecipe.Classes)]
				e := smallRecipe.expected(arm, k)
				wantStart := float64(smallRecipe.Start + int64(k)*15)
				if b.Class != class || b.Start != wantStart || b.End != wantStart+15 {
					t.Fatalf("bucket %d: class %q [%v, %v]", i, b.Class, b.Start, b.End)
				}
				checks := []struct {
					name      string
					got, want float64
				}{
					{"completed", b.Completed, e.completed}, {"failed", b.Failed, e.failed},
					{"canceled", b.Canceled, e.canceled}, {"rejected", b.Rejected, math.NaN()},
					{"good", b.Good, math.NaN()},
					{"prompt", b.PromptTokens, e.prompt}, {"output", b.OutputTokens, e.output},
					{"hits", b.PrefixHits, e.hits}, {"queries", b.PrefixQueries, e.qs},
					{"running", b.Running, e.running}, {"kv", b.KVUsage, e.kv}, {"replicas", b.Replicas, e.replicas},
					{"gpu util", b.GPUUtil, e.gpuUtil}, {"gpu memory", b.GPUMemBytes, e.gpuMem},
					{"gpu power", b.GPUPowerW, math.NaN()}, {"cost", b.CostPerHour, e.cost},
				}
				for _, c := range checks {
					if !near(c.got, c.want) {
						t.Errorf("bucket %d (step %d, %s): %s = %v, want %v", i, k, class, c.name, c.got, c.want)
					}
				}
				for j := range e.ttft {
					if len(b.TTFT.Counts) != len(e.ttft) || !near(b.TTFT.Counts[j], e.ttft[j]) || b.TTFT.Edges[j] != ttftEdges[j] {
						t.Fatalf("bucket %d: TTFT %+v, want counts %v", i, b.TTFT, e.ttft)
					}
				}
				for j := range e.tpot {
					if len(b.TPOT.Counts) != len(e.tpot) || !near(b.TPOT.Counts[j], e.tpot[j]) {
						t.Fatalf("bucket %d: TPOT %+v, want counts %v", i, b.TPOT, e.tpot)
					}
				}
			}
		})
	}
}

// The same OpenMetrics file read through Prometheus and read directly as a
// scrape file gives the same buckets.
func TestPrometheusAgreesWithScrapeFile(t *testing.T) {
	base := smallProm(t)
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		src, _ := New(Config{URL: base})
		fromProm, err := src.Read(context.Background(), smallQuery(arm, t))
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join("testdata", "small.om"))
		if err != nil {
			t.Fatal(err)
		}
		fromFile, err := exposition.Read(context.Background(), "small.om", f, arm)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		a, b := fromProm.Agg.Buckets, fromFile.Agg.Buckets
		if len(a) != len(b) {
			t.Fatalf("%s: %d buckets from Prometheus, %d from the file", arm, len(a), len(b))
		}
		for i := range a {
			x, y := a[i], b[i]
			if x.Start != y.Start || x.Class != y.Class || !near(x.Completed, y.Completed) || !near(x.Failed, y.Failed) ||
				!near(x.Canceled, y.Canceled) || !near(x.OutputTokens, y.OutputTokens) || !near(x.PrefixHits, y.PrefixHits) ||
				!near(x.Running, y.Running) || !near(x.KVUsage, y.KVUsage) || !near(x.Replicas, y.Replicas) ||
				!near(x.GPUUtil, y.GPUUtil) || !near(x.GPUMemBytes, y.GPUMemBytes) || !near(x.CostPerHour, y.CostPerHour) ||
				fmt.Sprint(x.TTFT) != fmt.Sprint(y.TTFT) || fmt.Sprint(x.TPOT) != fmt.Sprint(y.TPOT) || fmt.Sprint(x.E2E) != fmt.Sprint(y.E2E) {
				t.Fatalf("%s bucket %d differs:\nprometheus %+v\nfile       %+v", arm, i, x, y)
			}
		}
	}
}

// histo.Quantile mirrors PromQL's histogram_quantile: compare them on the
// real server for several quantiles and steps.
func TestQuantileMirrorsPromQL(t *testing.T) {
	base := smallProm(t)
	src, _ := New(Config{URL: base})
	q := smallQuery(sources.Canary, t)
	ds, err := src.Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{3, 18, 19, 20, 39} {
		// merge the classes of step k
		var hs []sources.Histogram
		for _, b := range ds.Agg.Buckets {
			if b.Start == float64(smallRecipe.Start+int64(k)*15) {
				hs = append(hs, b.TTFT)
			}
		}
		merged, _ := histo.Merge(hs...)
		at := time.Unix(smallRecipe.Start+int64(k+1)*15, 0)
		for _, phi := range []float64{0.1, 0.5, 0.6, 0.9, 0.99, 1} {
			query := fmt.Sprintf(`histogram_quantile(%g, sum by (le) (increase(vllm:time_to_first_token_seconds_bucket{deployment="canary"}[15s])))`, phi)
			vec, _, err := src.api.Query(context.Background(), query, at, nil)
			if err != nil || len(vec) != 1 {
				t.Fatalf("%s: %v %v", query, vec, err)
			}
			if got, want := histo.Quantile(phi, merged), float64(vec[0].Value); !near(got, want) {
				t.Errorf("step %d q=%g: histo.Quantile %v, PromQL %v", k, phi, got, want)
			}
		}
	}
}

// A range longer than MaxPoints is split and gives the same buckets.
func TestSplitRange(t *testing.T) {
	base := smallProm(t)
	whole, _ := New(Config{URL: base})
	split, _ := New(Config{URL: base, MaxPoints: 7})
	q := smallQuery(sources.Baseline, t)
	a, err := whole.Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	b, err := split.Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	// 40 steps in chunks of 7: 6 chunks × 2 queries + names + layouts
	if got := split.Queries(); got != 2+2*6 {
		t.Errorf("split queries = %d, want %d", got, 2+2*6)
	}
	if fmt.Sprint(a.Agg.Buckets) != fmt.Sprint(b.Agg.Buckets) {
		t.Error("split read differs from whole read")
	}
	if got := chunks(time.Unix(0, 0), 11001, time.Second, MaxPoints); len(got) != 2 ||
		got[0].End.Sub(got[0].Start) != 10999*time.Second || !got[1].Start.Equal(time.Unix(11000, 0)) || !got[1].End.Equal(got[1].Start) {
		t.Errorf("chunks(11001) = %+v", got)
	}
}

func TestNoSeriesForOneArm(t *testing.T) {
	base := smallProm(t)
	src, _ := New(Config{URL: base})
	q := smallQuery(sources.Canary, t)
	q.Selector = mustSel(t, `deployment="canary-typo"`)
	_, err := src.Read(context.Background(), q)
	if err == nil || !strings.Contains(err.Error(), "no series match") || !strings.Contains(err.Error(), `deployment="canary-typo"`) {
		t.Errorf("error = %v", err)
	}
	// a window with no data at all
	q = smallQuery(sources.Canary, t)
	q.Start, q.End = q.Start.Add(-48*time.Hour), q.Start.Add(-47*time.Hour)
	if _, err := src.Read(context.Background(), q); err == nil || !strings.Contains(err.Error(), "no series match") {
		t.Errorf("empty window error = %v", err)
	}
}

// A transient 503 before the real server answers is retried.
func TestRetryThenSuccess(t *testing.T) {
	base := smallProm(t)
	target, _ := url.Parse(base)
	var calls atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, `{"status":"error","errorType":"timeout","error":"query timed out"}`, http.StatusServiceUnavailable)
			return
		}
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, target.String()+r.URL.RequestURI(), r.Body)
		out.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			w.Write(buf[:n])
			if err != nil {
				break
			}
		}
	}))
	defer proxy.Close()
	var slept []time.Duration
	src, _ := New(Config{URL: proxy.URL, Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }})
	ds, err := src.Read(context.Background(), smallQuery(sources.Baseline, t))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Agg.Buckets) == 0 || len(slept) != 2 || slept[1] != 2*slept[0] {
		t.Errorf("buckets %d, backoffs %v", len(ds.Agg.Buckets), slept)
	}
}
