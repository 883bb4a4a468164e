package prometheus

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
)

// TestNativeHistogramFromRealPrometheus: a loopback exporter (client_golang
// with native-histogram options) is scraped every second by Debian's
// Prometheus with native histograms on; the answer to an instant query
// decodes into the cumulative form whose count at every bucket edge is
// exactly the number of observations at or below it, so attainment at an
// edge is exact and between edges bounded.
func TestNativeHistogramFromRealPrometheus(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ttft_seconds", Help: "time to first token",
		NativeHistogramBucketFactor: 1.1, NativeHistogramZeroThreshold: 1e-6, NativeHistogramMaxBucketNumber: 1000})
	reg.MustRegister(h)
	rng := rand.New(rand.NewPCG(15, 2))
	obs := make([]float64, 5000)
	for i := range obs {
		obs[i] = 0.3 * math.Exp(0.6*rng.NormFloat64())
		h.Observe(obs[i])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	base := promtest.Serve(t, fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: engine\n    static_configs:\n      - targets: ['%s']\n", ln.Addr()),
		filepath.Join(t.TempDir(), "data"), "--enable-feature=native-histograms")
	// bounded wait (≤ 30 s) for the first scrape to be queryable
	var sample *model.SampleHistogram
	deadline := time.Now().Add(30 * time.Second)
	for sample == nil && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		resp, err := http.Get(base + "/api/v1/query?" + url.Values{"query": {"ttft_seconds"}}.Encode())
		if err != nil {
			continue
		}
		var ans struct {
			Data struct {
				Result model.Vector `json:"result"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&ans)
		resp.Body.Close()
		if err == nil && len(ans.Data.Result) == 1 && ans.Data.Result[0].Histogram != nil {
			sample = ans.Data.Result[0].Histogram
		}
	}
	if sample == nil {
		t.Fatal("no native histogram answered within 30 s")
	}
	got, err := nativeHistogram(sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Edges) < 20 || !math.IsInf(got.Edges[len(got.Edges)-1], 1) || got.Counts[len(got.Counts)-1] != float64(len(obs)) {
		t.Fatalf("decoded %d edges, total %v; want exponential buckets holding %d", len(got.Edges), got.Counts[len(got.Counts)-1], len(obs))
	}
	below := func(e float64) float64 {
		n := 0.0
		for _, v := range obs {
			if v <= e {
				n++
			}
		}
		return n
	}
	for i, e := range got.Edges[:len(got.Edges)-1] {
		if got.Counts[i] != below(e) {
			t.Errorf("edge %g: %v observations at or below, want %v", e, got.Counts[i], below(e))
		}
		// attainment at an edge is exact
		if a := histo.Fraction(got, e); !a.Exact || math.Abs(a.Lo-below(e)/float64(len(obs))) > 1e-12 {
			t.Errorf("attainment at edge %g: %+v, want exact %v", e, a, below(e)/float64(len(obs)))
		}
	}
	// a threshold between edges is bounded by the edges around it
	thr := 0.75 // 1 s is an edge of every exponential schema; 0.75 s is not
	a := histo.Fraction(got, thr)
	truth := below(thr) / float64(len(obs))
	if a.Exact || !(a.Lo <= truth && truth <= a.Hi) || a.Hi-a.Lo > 0.05 {
		t.Errorf("attainment at %g s: [%v, %v] exact %v; true %v", thr, a.Lo, a.Hi, a.Exact, truth)
	}
	lo, hi := histo.QuantileBounds(0.99, got)
	t.Logf("%d exponential buckets; attainment at 0.75 s in [%.4f, %.4f] (true %.4f, edges %g and %g); p99 in [%.4f, %.4f] s",
		len(got.Edges)-1, a.Lo, a.Hi, truth, a.Below, a.Above, lo, hi)
}

func TestNativeHistogramRejectsBadBuckets(t *testing.T) {
	for name, raw := range map[string]string{
		"negative observations": `{"count":"3","sum":"1","buckets":[[1,"-0.5","-0.4","1"],[0,"0.4","0.5","2"]]}`,
		"count below buckets":   `{"count":"1","sum":"1","buckets":[[0,"0.4","0.5","2"]]}`,
		"negative count":        `{"count":"1","sum":"1","buckets":[[0,"0.4","0.5","-2"]]}`,
	} {
		var h model.SampleHistogram
		if err := json.Unmarshal([]byte(raw), &h); err != nil {
			t.Fatal(err)
		}
		if _, err := nativeHistogram(&h); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	var h model.SampleHistogram
	if err := json.Unmarshal([]byte(`{"count":"6","sum":"2","buckets":[[3,"-1e-6","1e-6","1"],[0,"0.5","0.6","2"],[0,"0.4","0.5","3"]]}`), &h); err != nil {
		t.Fatal(err)
	}
	got, err := nativeHistogram(&h)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Edges, got.Counts) != "[1e-06 0.4 0.5 0.6 +Inf] [1 1 4 6 6]" {
		t.Errorf("decoded %v %v", got.Edges, got.Counts)
	}
}

// TestUnifyNative: samples of one histogram over many steps share one edge
// set, the union of their bucket boundaries, less a boundary inside a
// coarser step's non-empty bucket; the cumulative form at those edges is
// exact and sparse.
func TestUnifyNative(t *testing.T) {
	r := math.Exp2(1.0 / 8) // schema 3
	fine1 := nativeSample{buckets: []nativeBucket{{1, r, 2}}, total: 2}
	fine2 := nativeSample{buckets: []nativeBucket{{r * r, r * r * r, 3}}, total: 3}
	coarse := nativeSample{buckets: []nativeBucket{{1, r * r, 4}}, total: 4} // schema 2: r is inside
	empty := nativeSample{}
	tests := []struct {
		name    string
		samples []nativeSample
		edges   []float64
		dropped int
	}{
		{"same schema: union", []nativeSample{fine1, fine2, empty}, []float64{1, r, r * r, r * r * r}, 0},
		{"a coarser step drops the edge inside its bucket", []nativeSample{fine1, fine2, coarse}, []float64{1, r * r, r * r * r}, 1},
		{"nothing observed", []nativeSample{empty}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edges, dropped := unifyNative(tt.samples)
			if !slices.Equal(edges, tt.edges) || dropped != tt.dropped {
				t.Fatalf("edges %v dropped %d, want %v dropped %d", edges, dropped, tt.edges, tt.dropped)
			}
			for _, s := range tt.samples {
				h := s.cumulative(edges)
				if !h.Sparse || !math.IsInf(h.Edges[len(h.Edges)-1], 1) || h.Total() != s.total {
					t.Errorf("cumulative %v %v sparse %v", h.Edges, h.Counts, h.Sparse)
				}
			}
		})
	}
	h := fine2.cumulative([]float64{1, r, r * r, r * r * r})
	if fmt.Sprint(h.Counts) != "[0 0 0 3 3]" {
		t.Errorf("counts %v, want [0 0 0 3 3]", h.Counts)
	}
	merged, dropped := histo.Merge(fine1.cumulative([]float64{1, r}), fine2.cumulative([]float64{r * r, r * r * r}))
	if dropped || fmt.Sprint(merged.Counts) != "[0 2 2 5 5]" {
		t.Errorf("merged %v %v dropped %v, want counts [0 2 2 5 5]", merged.Edges, merged.Counts, dropped)
	}
}

func TestNativeSchema(t *testing.T) {
	for _, tt := range []struct {
		name    string
		buckets []nativeBucket
		schema  int
		ok      bool
	}{
		{"schema 3", []nativeBucket{{0, 1e-6, 1}, {1, math.Exp2(1.0 / 8), 1}}, 3, true},
		{"finest of 0 and 4", []nativeBucket{{1, 2, 1}, {4, 4 * math.Exp2(1.0/16), 1}}, 4, true},
		{"custom edges (1 → 2.5 s)", []nativeBucket{{1, 2.5, 1}}, 0, false},
		{"zero bucket only", []nativeBucket{{0, 1e-6, 1}}, 0, false},
	} {
		s, ok := nativeSchema([]nativeSample{{buckets: tt.buckets}})
		if s != tt.schema || ok != tt.ok {
			t.Errorf("%s: schema %d ok %v, want %d %v", tt.name, s, ok, tt.schema, tt.ok)
		}
	}
}

// TestDecodeNativeJoinsOverlaps: buckets that overlap (never one
// histogram's, possible for a sum across schemas gone wrong) are joined,
// so no edge inside either is claimed exact; a unit factor scales edges.
func TestDecodeNativeJoinsOverlaps(t *testing.T) {
	var h model.SampleHistogram
	if err := json.Unmarshal([]byte(`{"count":"7","sum":"2","buckets":[[0,"400","600","3"],[0,"500","750","2"],[0,"800","900","1"]]}`), &h); err != nil {
		t.Fatal(err)
	}
	s, err := decodeNative(&h, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.buckets) != "[{200 375 5} {400 450 1}]" || s.total != 7 {
		t.Errorf("decoded %v total %v", s.buckets, s.total)
	}
}
