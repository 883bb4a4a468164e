package promtest

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Form is how a simulated arm exposes its latency histograms.
type Form string

// Histogram forms of a FleetArm.
const (
	// FormNative serves protobuf: Prometheus (with native histograms on)
	// stores native histograms under the family name and, in 2.42, no
	// _bucket series.
	FormNative Form = "native"
	// FormClassic serves the text format: classic _bucket series only.
	FormClassic Form = "classic"
	// FormBoth adds a second scrape of the same replicas, relabelled to the
	// same job, whose text exposition holds only the histograms: the arm
	// then has both a native and a classic series with the same labels
	// for every histogram, as Prometheus 2.45+ stores with
	// scrape_classic_histograms (an option 2.42 lacks).
	FormBoth Form = "both"
	// FormSplit exposes the even replicas' histograms as native ones
	// (protobuf) and the odd replicas' as classic ones (text): each form
	// then has series the other lacks.
	FormSplit Form = "split"
	// FormSomeNative exposes both forms for the even replicas (as
	// FormBoth) and only classic histograms (text) for the odd ones: the
	// native series then cover only some of the classic ones.
	FormSomeNative Form = "some-native"
)

// FleetArm is one simulated vLLM V1 deployment.
type FleetArm struct {
	Deployment string  // value of the deployment label, [a-z0-9-]
	Replicas   int     // pods <deployment>-0 …; default 2
	Rate       float64 // requests per second per replica; default 5
	// TTFTScale multiplies every time to first token; default 1. The
	// reference TTFT is log-normal with median 0.3 s and σ 0.45 (p99
	// ≈ 0.85 s); TPOT log-normal with median 25 ms and σ 0.2; output
	// tokens uniform in [50, 300).
	TTFTScale float64
	// Classes are the values of the model_name label, drawn uniformly per
	// request; default ["m"].
	Classes []string
	Form    Form // default FormNative
	// BucketFactor is client_golang's NativeHistogramBucketFactor: the
	// largest schema whose bucket growth is at most it is used (1.1 →
	// schema 3, 1.05 → schema 4). Default 1.1.
	BucketFactor float64
	Seed         uint64
}

// Fleet is a running simulated fleet scraped by a real Prometheus.
type Fleet struct {
	// URL is the Prometheus base URL.
	URL string
	// Start and End bound the simulated traffic: samples are stamped
	// Start, Start + Tick, …, End (and later, idle, until the test ends).
	Start, End time.Time

	ticks int
	mu    sync.Mutex
	eps   []*endpoint
	// logs holds, per deployment, the simulated requests as request-log
	// lines (JSON), in the order drawn.
	logs map[string]*[]string
}

// RequestLog returns the arm's simulated requests in the native
// request-log format (JSON lines: ts, status, ttft_s, tpot_s, e2e_s,
// prompt_tokens, output_tokens, class (the model_name), replica), the
// same requests its metrics count. Call after Wait.
func (f *Fleet) RequestLog(deployment string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.logs[deployment]
	if l == nil {
		return nil
	}
	return []byte(strings.Join(*l, ""))
}

// ServeFleet starts a loopback exporter for the arms and a Prometheus 2.x
// (native histograms on) scraping it every scrapeEvery (400 ms) with honor_timestamps:
// each scrape of an endpoint advances that endpoint's simulated clock by
// tick and stamps its samples with it, so ticks steps of simulated traffic
// from start on reach the TSDB in ticks × 400 ms of real time. Every
// endpoint of an arm replays the same seeded traffic, so the native and the
// classic exposition of a FormBoth arm count the same requests. start
// must lie within the hour before now (the TSDB head's appendable range).
// Call Wait before querying.
func ServeFleet(tb testing.TB, start time.Time, tick time.Duration, ticks int, arms ...FleetArm) *Fleet {
	tb.Helper()
	need(tb, "prometheus")
	f := &Fleet{Start: start, End: start.Add(time.Duration(ticks) * tick), ticks: ticks, logs: map[string]*[]string{}}
	mux := http.NewServeMux()
	var jobs []string
	for _, a := range arms {
		a = a.withDefaults()
		add := func(kind string, histOnly, text bool) string {
			ep := newEndpoint(a, start, tick, ticks, histOnly)
			if f.logs[a.Deployment] == nil { // the arm's first endpoint writes its log
				ep.log = &[]string{}
				f.logs[a.Deployment] = ep.log
			}
			switch {
			case a.Form == FormSplit || a.Form == FormSomeNative && kind == "text":
				odd := text // a full text endpoint serves the odd replicas
				ep.pods = func(i int) bool { return (i%2 == 1) == odd }
			case a.Form == FormSomeNative:
				ep.pods = func(i int) bool { return i%2 == 0 }
			}
			f.eps = append(f.eps, ep)
			path := "/" + kind + "/" + a.Deployment
			mux.Handle(path, f.handler(ep, text))
			return path
		}
		job := "engine-" + a.Deployment
		switch a.Form {
		case FormClassic:
			jobs = append(jobs, scrapeJob(job, add("text", false, true), ""))
		case FormSplit:
			jobs = append(jobs, scrapeJob(job, add("native", false, false), ""),
				scrapeJob(job+"-classic", add("text", false, true), job))
		case FormSomeNative:
			jobs = append(jobs, scrapeJob(job, add("native", false, false), ""),
				scrapeJob(job+"-classic", add("classic", true, true), job),
				scrapeJob(job+"-text", add("text", false, true), job))
		case FormBoth:
			jobs = append(jobs, scrapeJob(job, add("native", false, false), ""),
				scrapeJob(job+"-classic", add("classic", true, true), job))
		default:
			jobs = append(jobs, scrapeJob(job, add("native", false, false), ""))
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	tb.Cleanup(func() { _ = srv.Close() })
	cfg := fmt.Sprintf("global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n", scrapeEvery, scrapeEvery) +
		strings.ReplaceAll(strings.Join(jobs, ""), "ADDR", ln.Addr().String())
	f.URL = Serve(tb, cfg, filepath.Join(tb.TempDir(), "data"), "--enable-feature=native-histograms")
	return f
}

// scrapeEvery is the fleet's scrape interval and timeout. Each scrape
// advances simulated time by one tick, so a test's wall time is ticks ×
// scrapeEvery; 400 ms leaves a loaded machine twice the headroom 200 ms
// did before a scrape times out and its sample is lost.
const scrapeEvery = 400 * time.Millisecond

// ServeCompleteFleet is ServeFleet followed by Wait, retried with a fresh
// Prometheus (up to three attempts) while Prometheus reports failed
// scrapes: a loaded machine can starve it past the 400 ms scrape timeout,
// and the samples it then drops are gaps no verdict may pass over. Fails
// the test, naming the failed scrapes, when every attempt lost some.
func ServeCompleteFleet(tb testing.TB, start time.Time, tick time.Duration, ticks int, arms ...FleetArm) *Fleet {
	tb.Helper()
	const attempts = 3
	failed := 0
	for range attempts {
		f := ServeFleet(tb, start, tick, ticks, arms...)
		f.Wait(tb, time.Duration(ticks)*scrapeEvery*3/2+30*time.Second)
		if failed = f.FailedScrapes(tb); failed == 0 {
			return f
		}
		tb.Logf("Prometheus failed %d scrapes (the machine is loaded): collecting again", failed)
	}
	tb.Fatalf("Prometheus failed scrapes in each of %d attempts (%d in the last): the machine is too loaded to deliver every sample", attempts, failed)
	return nil
}

// scrapeJob renders one scrape job; relabel, when set, rewrites the job
// label to it (so two jobs' series carry the same labels).
func scrapeJob(name, path, relabel string) string {
	s := fmt.Sprintf("  - job_name: %s\n    honor_timestamps: true\n    metrics_path: %s\n    static_configs:\n      - targets: ['ADDR']\n", name, path)
	if relabel != "" {
		s += fmt.Sprintf("    relabel_configs:\n      - target_label: job\n        replacement: %s\n", relabel)
	}
	return s
}

// Wait blocks until every endpoint has been scraped past the end of the
// traffic (so the last samples are in the TSDB), at most timeout.
func (f *Fleet) Wait(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		done := true
		f.mu.Lock()
		for _, ep := range f.eps {
			done = done && ep.n >= f.ticks+3
		}
		f.mu.Unlock()
		if done {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var got []string
	for _, ep := range f.eps {
		got = append(got, fmt.Sprintf("%s %d", ep.arm.Deployment, ep.n))
	}
	tb.Fatalf("the fleet was not scraped through its %d ticks within %v (scrapes per endpoint: %s)", f.ticks, timeout, strings.Join(got, ", "))
}

// FailedScrapes returns how many scrapes of the fleet Prometheus reports
// as failed so far (up == 0): each one is a simulated tick whose samples
// are missing, which the judge rightly treats as a gap. A loaded machine
// (Prometheus starved past the 400 ms scrape timeout) causes them; tests
// name the count when a verdict they expect does not come.
func (f *Fleet) FailedScrapes(tb testing.TB) int {
	tb.Helper()
	q := url.Values{"query": {`sum(count_over_time(up[1h]) - sum_over_time(up[1h]))`}}
	resp, err := http.Get(f.URL + "/api/v1/query?" + q.Encode())
	if err != nil {
		tb.Fatalf("query failed scrapes: %v", err)
	}
	defer resp.Body.Close()
	var ans struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		tb.Fatalf("query failed scrapes: %v", err)
	}
	if len(ans.Data.Result) == 0 {
		return 0
	}
	v, _ := ans.Data.Result[0].Value[1].(string)
	n, _ := strconv.ParseFloat(v, 64)
	return int(n)
}

// handler advances ep by one tick per request and serves its metrics
// stamped with the simulated time: protobuf (or whatever the scraper
// asks for) unless text forces the text format, which has no native
// histograms.
func (f *Fleet) handler(ep *endpoint, text bool) http.Handler {
	g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return ep.scrape()
	})
	if !text {
		return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mfs, err := g.Gather()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		format := expfmt.NewFormat(expfmt.TypeTextPlain)
		w.Header().Set("Content-Type", string(format))
		enc := expfmt.NewEncoder(w, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				return
			}
		}
	})
}

func (a FleetArm) withDefaults() FleetArm {
	if a.Replicas <= 0 {
		a.Replicas = 2
	}
	if a.Rate <= 0 {
		a.Rate = 5
	}
	if a.TTFTScale <= 0 {
		a.TTFTScale = 1
	}
	if len(a.Classes) == 0 {
		a.Classes = []string{"m"}
	}
	if a.Form == "" {
		a.Form = FormNative
	}
	if a.BucketFactor <= 1 {
		a.BucketFactor = 1.1
	}
	return a
}

// endpoint is one exposition of an arm: its own registry fed by its own
// copy of the arm's seeded traffic.
type endpoint struct {
	arm       FleetArm
	start     time.Time
	tick      time.Duration
	ticks     int
	n         int // scrapes served
	rngs      []*rand.Rand
	reg       *prometheus.Registry
	success   *prometheus.CounterVec
	prompt    *prometheus.CounterVec
	generated *prometheus.CounterVec
	running   *prometheus.GaugeVec
	kv        *prometheus.GaugeVec
	ttft      *prometheus.HistogramVec
	tpot      *prometheus.HistogramVec
	e2e       *prometheus.HistogramVec
	queue     *prometheus.HistogramVec
	histOnly  bool
	// pods, when set, says which replicas (by index) this endpoint
	// exposes; the others are simulated but not served.
	pods func(i int) bool
	// log, when set, receives one request-log line per simulated request.
	log *[]string
}

func newEndpoint(a FleetArm, start time.Time, tick time.Duration, ticks int, histOnly bool) *endpoint {
	ep := &endpoint{arm: a, start: start, tick: tick, ticks: ticks, histOnly: histOnly, reg: prometheus.NewRegistry()}
	for i := range a.Replicas {
		ep.rngs = append(ep.rngs, rand.New(rand.NewPCG(a.Seed, uint64(i))))
	}
	reg := prometheus.WrapRegistererWith(prometheus.Labels{"deployment": a.Deployment}, ep.reg)
	lbl := []string{"model_name", "pod"}
	hist := func(name string, buckets []float64) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: name, Buckets: buckets,
			NativeHistogramBucketFactor: a.BucketFactor, NativeHistogramZeroThreshold: 1e-6}, lbl)
		reg.MustRegister(h)
		return h
	}
	// vLLM V1's classic bucket edges
	ep.ttft = hist("vllm:time_to_first_token_seconds", []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0})
	ep.tpot = hist("vllm:request_time_per_output_token_seconds", []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4,
		0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0})
	e2eBuckets := []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
		480.0, 960.0, 1920.0, 7680.0}
	ep.e2e = hist("vllm:e2e_request_latency_seconds", e2eBuckets)
	ep.queue = hist("vllm:request_queue_time_seconds", e2eBuckets)
	if !histOnly {
		ep.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total", Help: "finished requests"},
			append([]string{"finished_reason"}, lbl...))
		ep.prompt = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:prompt_tokens_total", Help: "prompt tokens"}, lbl)
		ep.generated = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:generation_tokens_total", Help: "output tokens"}, lbl)
		ep.running = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:num_requests_running", Help: "running"}, lbl)
		ep.kv = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vllm:kv_cache_usage_perc", Help: "KV cache usage"}, lbl)
		reg.MustRegister(ep.success, ep.prompt, ep.generated, ep.running, ep.kv)
	}
	// every series exists from the first scrape, at zero
	for i := range a.Replicas {
		pod := fmt.Sprintf("%s-%d", a.Deployment, i)
		for _, c := range a.Classes {
			for _, h := range []*prometheus.HistogramVec{ep.ttft, ep.tpot, ep.e2e, ep.queue} {
				h.WithLabelValues(c, pod)
			}
			if !histOnly {
				ep.success.WithLabelValues("stop", c, pod)
				ep.success.WithLabelValues("length", c, pod)
				ep.prompt.WithLabelValues(c, pod)
				ep.generated.WithLabelValues(c, pod)
				ep.running.WithLabelValues(c, pod).Set(2)
				ep.kv.WithLabelValues(c, pod).Set(0.3)
			}
		}
	}
	return ep
}

// scrape advances one tick (until the traffic ends) and gathers, stamping
// every sample with the simulated time. The caller holds the fleet's lock.
func (ep *endpoint) scrape() ([]*dto.MetricFamily, error) {
	if ep.n > 0 && ep.n <= ep.ticks {
		ep.simulate()
	}
	ts := ep.start.Add(time.Duration(ep.n) * ep.tick).UnixMilli()
	ep.n++
	mfs, err := ep.reg.Gather()
	for _, mf := range mfs {
		kept := mf.Metric[:0]
		for _, m := range mf.Metric {
			if ep.pods != nil && !ep.pods(podIndex(m, ep.arm.Deployment)) {
				continue
			}
			m.TimestampMs = &ts
			kept = append(kept, m)
		}
		mf.Metric = kept
	}
	return mfs, err
}

// simulate draws one tick of requests per replica.
func (ep *endpoint) simulate() {
	a := ep.arm
	for i, rng := range ep.rngs {
		pod := fmt.Sprintf("%s-%d", a.Deployment, i)
		n := poisson(rng, a.Rate*ep.tick.Seconds())
		for range n {
			class := a.Classes[rng.IntN(len(a.Classes))]
			ttft := a.TTFTScale * 0.3 * math.Exp(0.45*rng.NormFloat64())
			tpot := 0.025 * math.Exp(0.2*rng.NormFloat64())
			out := 50 + rng.IntN(250)
			prompt := 200 + rng.IntN(1800)
			queue := 0.01 * math.Exp(0.5*rng.NormFloat64())
			reason := "stop"
			if rng.Float64() < 0.1 {
				reason = "length"
			}
			at := ep.start.Add(time.Duration(ep.n-1)*ep.tick + time.Duration(rng.Float64()*float64(ep.tick)))
			if ep.log != nil {
				*ep.log = append(*ep.log, fmt.Sprintf(`{"ts":%q,"status":"ok","ttft_s":%g,"tpot_s":%g,"e2e_s":%g,"prompt_tokens":%d,"output_tokens":%d,"class":%q,"replica":%q}`+"\n",
					at.UTC().Format(time.RFC3339Nano), ttft, tpot, ttft+tpot*float64(out), prompt, out, class, pod))
			}
			ep.ttft.WithLabelValues(class, pod).Observe(ttft)
			ep.tpot.WithLabelValues(class, pod).Observe(tpot)
			ep.e2e.WithLabelValues(class, pod).Observe(ttft + tpot*float64(out))
			ep.queue.WithLabelValues(class, pod).Observe(queue)
			if !ep.histOnly {
				ep.success.WithLabelValues(reason, class, pod).Inc()
				ep.prompt.WithLabelValues(class, pod).Add(float64(prompt))
				ep.generated.WithLabelValues(class, pod).Add(float64(out))
			}
		}
	}
}

// podIndex returns the replica index of a metric's pod label
// (<deployment>-<i>), or -1.
func podIndex(m *dto.Metric, deployment string) int {
	for _, l := range m.GetLabel() {
		if l.GetName() == "pod" {
			var i int
			if _, err := fmt.Sscanf(strings.TrimPrefix(l.GetValue(), deployment+"-"), "%d", &i); err == nil {
				return i
			}
		}
	}
	return -1
}

// poisson draws a Poisson count with mean lambda (Knuth; lambda ≤ ~500).
func poisson(rng *rand.Rand, lambda float64) int {
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}
