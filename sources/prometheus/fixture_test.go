package prometheus

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

var update = flag.Bool("update", false, "rewrite testdata/*.om from the recipe")

// recipe describes a deterministic baseline/canary pair in OpenMetrics
// backfill form: vLLM V1 names, labels deployment, pod and class, one sample
// per series every Interval seconds. Every step each pod and class finishes
// 4 requests with reason stop and 1 with length; on the canary, one request
// is aborted every 4th sample and one fails every 8th. Canary pod c-1
// restarts at sample Restart (its counters start again from zero). Latency
// observations are constant per arm, so every figure is exact.
type recipe struct {
	Start    int64 // unix seconds of sample 0
	Samples  int   // samples per series (steps + 1)
	Interval int64 // seconds
	Classes  []string
	Restart  int // sample index at which canary pod c-1 restarts; 0 = never
}

var (
	ttftEdges = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, math.Inf(1)}
	tpotEdges = []float64{0.025, 0.05, 0.075, 0.1, 0.15, math.Inf(1)}
	e2eEdges  = []float64{0.3, 0.5, 1, 2.5, 5, math.Inf(1)}
)

// per-step observations of one pod and class (5 finished requests)
type armShape struct {
	pods          []string
	ttft, tpot    []float64 // 5 values each
	e2e           float64
	hits          float64 // prefix-cache hit tokens per step (of 1000 queried)
	running, kv   float64
	price         float64 // USD per GPU-hour on the arm's nodes
	abort, errors bool
}

var shapes = map[sources.Arm]armShape{
	sources.Baseline: {pods: []string{"b-0", "b-1", "b-2"},
		ttft: []float64{0.08, 0.08, 0.08, 0.08, 0.3}, tpot: []float64{0.06, 0.06, 0.06, 0.06, 0.06},
		e2e: 2, hits: 400, running: 3, kv: 0.5, price: 2.5},
	sources.Canary: {pods: []string{"c-0", "c-1"},
		ttft: []float64{0.08, 0.08, 0.08, 0.8, 0.8}, tpot: []float64{0.06, 0.06, 0.06, 0.06, 0.09},
		e2e: 3, hits: 500, running: 4, kv: 0.6, price: 3, abort: true, errors: true},
}

// increments at sample i (i ≥ 1) for one pod and class
func (a armShape) increments(i int) (stop, length, abort, errs float64) {
	stop, length = 4, 1
	if a.abort && i%4 == 0 {
		abort = 1
	}
	if a.errors && i%8 == 0 {
		errs = 1
	}
	return
}

// cumulative returns the counter total at sample i of a pod: the sum of
// increments since the pod's last (re)start.
func (r recipe) from(arm sources.Arm, pod string) int {
	if arm == sources.Canary && pod == "c-1" && r.Restart > 0 {
		return r.Restart
	}
	return 1
}

func (r recipe) write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	arms := []sources.Arm{sources.Baseline, sources.Canary}
	ts := func(i int) string { return strconv.FormatInt(r.Start+int64(i)*r.Interval, 10) }
	// steps counted for sample i of a pod (since its start), for counters
	// that grow by a constant each step
	stepsAt := func(arm sources.Arm, pod string, i int) float64 {
		f := r.from(arm, pod)
		if r.Restart > 0 && f == r.Restart && i < r.Restart {
			f = 1
		}
		if i < f {
			return 0
		}
		return float64(i - f + 1)
	}
	countAt := func(arm sources.Arm, pod string, i int, pick func(stop, length, abort, errs float64) float64) float64 {
		f := r.from(arm, pod)
		if r.Restart > 0 && f == r.Restart && i < r.Restart {
			f = 1
		}
		total := 0.0
		for j := f; j <= i; j++ {
			total += pick(shapes[arm].increments(j))
		}
		return total
	}
	fmt.Fprintln(bw, "# HELP vllm:request_success Count of successfully processed requests.")
	fmt.Fprintln(bw, "# TYPE vllm:request_success counter")
	reasons := []struct {
		name string
		pick func(stop, length, abort, errs float64) float64
	}{
		{"stop", func(s, _, _, _ float64) float64 { return s }},
		{"length", func(_, l, _, _ float64) float64 { return l }},
		{"abort", func(_, _, a, _ float64) float64 { return a }},
		{"error", func(_, _, _, e float64) float64 { return e }},
	}
	for _, arm := range arms {
		for _, pod := range shapes[arm].pods {
			for _, class := range r.Classes {
				for _, rs := range reasons {
					for i := 0; i < r.Samples; i++ {
						fmt.Fprintf(bw, "vllm:request_success_total{class=%q,deployment=%q,finished_reason=%q,pod=%q} %s %s\n",
							class, arm, rs.name, pod, num(countAt(arm, pod, i, rs.pick)), ts(i))
					}
				}
			}
		}
	}
	counters := []struct {
		name string
		per  func(arm sources.Arm) float64
	}{
		{"vllm:prompt_tokens", func(sources.Arm) float64 { return 1000 }},
		{"vllm:generation_tokens", func(sources.Arm) float64 { return 500 }},
		{"vllm:prefix_cache_queries", func(sources.Arm) float64 { return 1000 }},
		{"vllm:prefix_cache_hits", func(a sources.Arm) float64 { return shapes[a].hits }},
	}
	for _, c := range counters {
		fmt.Fprintf(bw, "# TYPE %s counter\n", c.name)
		for _, arm := range arms {
			for _, pod := range shapes[arm].pods {
				for _, class := range r.Classes {
					for i := 0; i < r.Samples; i++ {
						fmt.Fprintf(bw, "%s_total{class=%q,deployment=%q,pod=%q} %s %s\n", c.name, class, arm, pod,
							num(stepsAt(arm, pod, i)*c.per(arm)), ts(i))
					}
				}
			}
		}
	}
	hists := []struct {
		name  string
		edges []float64
		obs   func(arm sources.Arm) []float64
	}{
		{"vllm:time_to_first_token_seconds", ttftEdges, func(a sources.Arm) []float64 { return shapes[a].ttft }},
		{"vllm:request_time_per_output_token_seconds", tpotEdges, func(a sources.Arm) []float64 { return shapes[a].tpot }},
		{"vllm:e2e_request_latency_seconds", e2eEdges, func(a sources.Arm) []float64 {
			e := shapes[a].e2e
			return []float64{e, e, e, e, e}
		}},
	}
	for _, h := range hists {
		fmt.Fprintf(bw, "# TYPE %s histogram\n# UNIT %s seconds\n", h.name, h.name)
		for _, arm := range arms {
			obs := h.obs(arm)
			sum := 0.0
			for _, o := range obs {
				sum += o
			}
			for _, pod := range shapes[arm].pods {
				for _, class := range r.Classes {
					for i := 0; i < r.Samples; i++ {
						n := stepsAt(arm, pod, i)
						for _, e := range h.edges {
							c := 0.0
							for _, o := range obs {
								if o <= e {
									c++
								}
							}
							fmt.Fprintf(bw, "%s_bucket{class=%q,deployment=%q,le=%q,pod=%q} %s %s\n", h.name, class, arm, le(e), pod, num(n*c), ts(i))
						}
						fmt.Fprintf(bw, "%s_sum{class=%q,deployment=%q,pod=%q} %s %s\n", h.name, class, arm, pod, num(n*sum), ts(i))
						fmt.Fprintf(bw, "%s_count{class=%q,deployment=%q,pod=%q} %s %s\n", h.name, class, arm, pod, num(n*float64(len(obs))), ts(i))
					}
				}
			}
		}
	}
	gauges := []struct {
		name string
		v    func(a sources.Arm) float64
	}{
		{"vllm:num_requests_running", func(a sources.Arm) float64 { return shapes[a].running }},
		{"vllm:kv_cache_usage_perc", func(a sources.Arm) float64 { return shapes[a].kv }},
		// DCGM exporter units: percent and MiB
		{"DCGM_FI_DEV_GPU_UTIL", func(a sources.Arm) float64 { return 100 * shapes[a].kv }},
		{"DCGM_FI_DEV_FB_USED", func(a sources.Arm) float64 { return 1000 * shapes[a].running }},
	}
	for _, g := range gauges {
		fmt.Fprintf(bw, "# TYPE %s gauge\n", g.name)
		for _, arm := range arms {
			for _, pod := range shapes[arm].pods {
				for i := 0; i < r.Samples; i++ {
					fmt.Fprintf(bw, "%s{deployment=%q,pod=%q} %s %s\n", g.name, arm, pod, num(g.v(arm)), ts(i))
				}
			}
		}
	}
	// OpenCost: one GPU per pod, each pod on its own node; node prices carry
	// no arm label (they are joined on node)
	fmt.Fprintln(bw, "# TYPE container_gpu_allocation gauge")
	for _, arm := range arms {
		for _, pod := range shapes[arm].pods {
			for i := 0; i < r.Samples; i++ {
				fmt.Fprintf(bw, "container_gpu_allocation{container=\"vllm\",deployment=%q,node=%q,pod=%q} 1 %s\n", arm, "n-"+pod, pod, ts(i))
			}
		}
	}
	fmt.Fprintln(bw, "# TYPE node_gpu_hourly_cost gauge")
	for _, arm := range arms {
		for _, pod := range shapes[arm].pods {
			for i := 0; i < r.Samples; i++ {
				fmt.Fprintf(bw, "node_gpu_hourly_cost{instance_type=\"g6.xlarge\",node=%q} %s %s\n", "n-"+pod, num(shapes[arm].price), ts(i))
			}
		}
	}
	fmt.Fprintln(bw, "# EOF")
	return bw.Flush()
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func le(e float64) string {
	if math.IsInf(e, 1) {
		return "+Inf"
	}
	s := strconv.FormatFloat(e, 'f', -1, 64)
	if !bytes.ContainsRune([]byte(s), '.') {
		s += ".0"
	}
	return s
}

// expected returns the exact figures of bucket k (samples k → k+1) for an
// arm and class.
type expect struct {
	completed, failed, canceled float64
	prompt, output, hits, qs    float64
	ttft, tpot                  []float64 // cumulative counts at the edges
	running, kv, replicas       float64
	gpuUtil, gpuMem             float64 // fraction, bytes
	cost                        float64 // USD per hour
}

func (r recipe) expected(arm sources.Arm, k int) expect {
	a := shapes[arm]
	i := k + 1
	stop, length, abort, errs := a.increments(i)
	pods := float64(len(a.pods))
	e := expect{completed: pods * (stop + length), failed: pods * errs, canceled: pods * abort,
		prompt: pods * 1000, output: pods * 500, hits: pods * a.hits, qs: pods * 1000,
		running: pods * a.running, kv: a.kv, replicas: pods,
		gpuUtil: a.kv, gpuMem: pods * 1000 * a.running * (1 << 20), cost: pods * a.price}
	cum := func(edges, obs []float64) []float64 {
		out := make([]float64, len(edges))
		for j, ed := range edges {
			for _, o := range obs {
				if o <= ed {
					out[j] += pods
				}
			}
		}
		return out
	}
	e.ttft, e.tpot = cum(ttftEdges, a.ttft), cum(tpotEdges, a.tpot)
	return e
}

// smallRecipe is the committed fixture: 10 min at 15 s, two classes, a
// canary pod restart at sample 20.
var smallRecipe = recipe{Start: 1704067200, Samples: 41, Interval: 15, Classes: []string{"batch", "chat"}, Restart: 20}

func TestFixtureIsCurrent(t *testing.T) {
	var buf bytes.Buffer
	if err := smallRecipe.write(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "small.om")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestFixtureIsCurrent -update)", err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Errorf("%s is not what the recipe writes: run go test -run TestFixtureIsCurrent -update", path)
	}
}
