package sim

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
)

// WriteOpenMetrics writes the replicas' scrapes as OpenMetrics text that
// `promtool tsdb create-blocks-from openmetrics` loads: vLLM V1 engine
// metrics and DCGM GPU metrics, one series set per replica with labels
// deployment (the arm) and pod, every sample timestamped in unix seconds,
// each family contiguous and each series in time order, counters declared
// without and sampled with the _total suffix, no _created series, no blank
// lines, ending in "# EOF".
func WriteOpenMetrics(w io.Writer, series []ReplicaSeries) error {
	ow := &omWriter{w: bufio.NewWriterSize(w, 1<<16)}
	type counter struct {
		name, help string
		get        func(*EngineCounters) float64
	}
	counters := []counter{
		{"vllm:prompt_tokens", "Number of prefill tokens processed.", func(c *EngineCounters) float64 { return c.PromptTokens }},
		{"vllm:generation_tokens", "Number of generation tokens processed.", func(c *EngineCounters) float64 { return c.GenerationTokens }},
		{"vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", func(c *EngineCounters) float64 { return c.PrefixQueries }},
		{"vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", func(c *EngineCounters) float64 { return c.PrefixHits }},
		{"vllm:num_preemptions", "Cumulative number of preemption from the engine.", func(c *EngineCounters) float64 { return c.Preemptions }},
	}
	// request_success by finished_reason
	ow.header("vllm:request_success", "counter", "Count of successfully processed requests.")
	reasons := []struct {
		name string
		get  func(*EngineCounters) float64
	}{
		{"abort", func(c *EngineCounters) float64 { return c.FinishedAbort }},
		{"error", func(c *EngineCounters) float64 { return c.FinishedError }},
		{"length", func(c *EngineCounters) float64 { return c.FinishedLength }},
		{"stop", func(c *EngineCounters) float64 { return c.FinishedStop }},
	}
	for _, s := range series {
		for _, rs := range reasons {
			labels := engineLabels(s) + `,finished_reason="` + rs.name + `"`
			for i := range s.Samples {
				ow.sample("vllm:request_success_total", labels, rs.get(&s.Samples[i].Counters), s.Samples[i].Time)
			}
		}
	}
	for _, c := range counters {
		ow.header(c.name, "counter", c.help)
		for _, s := range series {
			labels := engineLabels(s)
			for i := range s.Samples {
				ow.sample(c.name+"_total", labels, c.get(&s.Samples[i].Counters), s.Samples[i].Time)
			}
		}
	}
	type gauge struct {
		name, help string
		get        func(*ReplicaSample) float64
	}
	gauges := []gauge{
		{"vllm:num_requests_running", "Number of requests in model execution batches.", func(x *ReplicaSample) float64 { return float64(x.Running) }},
		{"vllm:num_requests_waiting", "Number of requests waiting to be processed.", func(x *ReplicaSample) float64 { return float64(x.Waiting) }},
		{"vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", func(x *ReplicaSample) float64 { return x.KVUsage }},
	}
	for _, g := range gauges {
		ow.header(g.name, "gauge", g.help)
		for _, s := range series {
			labels := engineLabels(s)
			for i := range s.Samples {
				ow.sample(g.name, labels, g.get(&s.Samples[i]), s.Samples[i].Time)
			}
		}
	}
	type histFam struct {
		name, help string
		edges      []float64
		get        func(*EngineCounters) HistCounts
	}
	hists := []histFam{
		{"vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFTBuckets(), func(c *EngineCounters) HistCounts { return c.TTFT }},
		{"vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", TPOTBuckets(), func(c *EngineCounters) HistCounts { return c.TPOT }},
		{"vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", E2EBuckets(), func(c *EngineCounters) HistCounts { return c.E2E }},
		{"vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", E2EBuckets(), func(c *EngineCounters) HistCounts { return c.QueueTime }},
	}
	for _, h := range hists {
		ow.header(h.name, "histogram", h.help)
		ow.line("# UNIT " + h.name + " seconds")
		les := make([]string, len(h.edges)+1)
		for i, e := range h.edges {
			les[i] = pyFloat(e)
		}
		les[len(h.edges)] = "+Inf"
		for _, s := range series {
			labels := engineLabels(s)
			for i := range s.Samples {
				smp := &s.Samples[i]
				hc := h.get(&smp.Counters)
				cum := 0.0
				for b, le := range les {
					if b < len(hc.Counts) {
						cum += hc.Counts[b]
					}
					ow.sample(h.name+"_bucket", labels+`,le="`+le+`"`, cum, smp.Time)
				}
				ow.sample(h.name+"_sum", labels, hc.Sum, smp.Time)
				ow.sample(h.name+"_count", labels, cum, smp.Time)
			}
		}
	}
	ow.header("vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig.")
	for _, s := range series {
		labels := engineLabels(s) + `,block_size="` + strconv.Itoa(s.BlockSize) + `",enable_prefix_caching="` +
			strconv.FormatBool(s.PrefixCaching) + `",num_gpu_blocks="` + strconv.Itoa(s.KVBlocks) + `"`
		for i := range s.Samples {
			ow.sample("vllm:cache_config_info", labels, 1, s.Samples[i].Time)
		}
	}
	dcgm := []gauge{
		{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", func(x *ReplicaSample) float64 { return math.Round(100 * x.GPUUtil) }},
		{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", func(x *ReplicaSample) float64 { return x.PowerW }},
		{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", func(x *ReplicaSample) float64 { return x.FBUsedMiB }},
	}
	for _, g := range dcgm {
		ow.header(g.name, "gauge", g.help)
		for _, s := range series {
			labels := gpuLabels(s)
			for i := range s.Samples {
				ow.sample(g.name, labels, g.get(&s.Samples[i]), s.Samples[i].Time)
			}
		}
	}
	ow.line("# EOF")
	if ow.err != nil {
		return ow.err
	}
	return ow.w.Flush()
}

type omWriter struct {
	w   *bufio.Writer
	buf []byte
	err error
}

func (o *omWriter) line(s string) {
	if o.err != nil {
		return
	}
	if _, err := o.w.WriteString(s + "\n"); err != nil {
		o.err = err
	}
}

func (o *omWriter) header(name, typ, help string) {
	o.line("# HELP " + name + " " + help)
	o.line("# TYPE " + name + " " + typ)
}

func (o *omWriter) sample(name, labels string, v, ts float64) {
	if o.err != nil {
		return
	}
	b := append(o.buf[:0], name...)
	b = append(b, '{')
	b = append(b, labels...)
	b = append(b, "} "...)
	b = appendValue(b, v)
	b = append(b, ' ')
	b = strconv.AppendFloat(b, math.Round(ts*1000)/1000, 'f', -1, 64)
	b = append(b, '\n')
	o.buf = b
	if _, err := o.w.Write(b); err != nil {
		o.err = err
	}
}

// appendValue writes v rounded to 6 decimals, without trailing zeros.
func appendValue(b []byte, v float64) []byte {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// pyFloat spells a bucket bound as Python's prometheus_client does
// ("1.0", "0.25", "2560.0"), one spelling per le value.
func pyFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func labelValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func engineLabels(s ReplicaSeries) string {
	return "deployment=" + labelValue(string(s.Arm)) + ",pod=" + labelValue(s.Pod) +
		`,engine="0",model_name=` + labelValue(s.Model)
}

func gpuLabels(s ReplicaSeries) string {
	return "deployment=" + labelValue(string(s.Arm)) + ",pod=" + labelValue(s.Pod) + `,gpu="0"`
}
