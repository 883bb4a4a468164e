package exposition

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// Before/after scrape pairs in each engine's own names: request accounting,
// token counters and histogram units come out in canonical form.
func TestEngineProfilesThroughScrapes(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name, profile string
		before, after string
		completed     float64
		failed        float64
		canceled      float64
		rejected      float64
		output        float64
		ttftEdges     []float64 // nil: no TTFT histogram
		ttftCounts    []float64
		running       float64
	}{
		{
			name: "SGLang: completed = finished − aborted", profile: "sglang",
			before: `# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="m"} 100
# TYPE sglang:num_aborted_requests_total counter
sglang:num_aborted_requests_total{model_name="m"} 2
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} 5000
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.8",model_name="m"} 90
sglang:time_to_first_token_seconds_bucket{le="1.0",model_name="m"} 95
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 100
sglang:time_to_first_token_seconds_sum{model_name="m"} 40
sglang:time_to_first_token_seconds_count{model_name="m"} 100
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",tp_rank="0"} 4
`,
			after: `# TYPE sglang:num_requests_total counter
sglang:num_requests_total{model_name="m"} 150
# TYPE sglang:num_aborted_requests_total counter
sglang:num_aborted_requests_total{model_name="m"} 5
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="m"} 9000
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.8",model_name="m"} 130
sglang:time_to_first_token_seconds_bucket{le="1.0",model_name="m"} 142
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 150
sglang:time_to_first_token_seconds_sum{model_name="m"} 60
sglang:time_to_first_token_seconds_count{model_name="m"} 150
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",tp_rank="0"} 0
`,
			completed: 50 - 3, failed: nan, canceled: 3, rejected: nan, output: 4000,
			ttftEdges: []float64{0.8, 1, math.Inf(1)}, ttftCounts: []float64{40, 47, 50}, running: 2,
		},
		{
			name: "TGI: overloaded is rejected, tokens from histogram sums", profile: "tgi",
			before: `# TYPE tgi_request_success counter
tgi_request_success 10
# TYPE tgi_request_failure counter
tgi_request_failure{err="overloaded"} 1
tgi_request_failure{err="generation"} 1
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="100"} 10
tgi_request_generated_tokens_bucket{le="+Inf"} 10
tgi_request_generated_tokens_sum 700
tgi_request_generated_tokens_count 10
`,
			after: `# TYPE tgi_request_success counter
tgi_request_success 30
# TYPE tgi_request_failure counter
tgi_request_failure{err="overloaded"} 4
tgi_request_failure{err="generation"} 2
tgi_request_failure{err="validation"} 1
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="100"} 30
tgi_request_generated_tokens_bucket{le="+Inf"} 30
tgi_request_generated_tokens_sum 2100
tgi_request_generated_tokens_count 30
`,
			completed: 20, failed: 1, canceled: nan, rejected: 3 + 1, output: 1400, running: nan,
		},
		{
			name: "Triton: first-response histogram in milliseconds", profile: "triton",
			before: `# TYPE nv_inference_request_success counter
nv_inference_request_success{model="llama",version="1"} 10
# TYPE nv_inference_request_failure counter
nv_inference_request_failure{model="llama",reason="REJECTED",version="1"} 0
nv_inference_request_failure{model="llama",reason="BACKEND",version="1"} 0
# TYPE nv_inference_first_response_histogram_ms histogram
nv_inference_first_response_histogram_ms_bucket{le="100",model="llama",version="1"} 5
nv_inference_first_response_histogram_ms_bucket{le="500",model="llama",version="1"} 9
nv_inference_first_response_histogram_ms_bucket{le="+Inf",model="llama",version="1"} 10
nv_inference_first_response_histogram_ms_sum{model="llama",version="1"} 2000
nv_inference_first_response_histogram_ms_count{model="llama",version="1"} 10
`,
			after: `# TYPE nv_inference_request_success counter
nv_inference_request_success{model="llama",version="1"} 20
# TYPE nv_inference_request_failure counter
nv_inference_request_failure{model="llama",reason="REJECTED",version="1"} 2
nv_inference_request_failure{model="llama",reason="BACKEND",version="1"} 1
# TYPE nv_inference_first_response_histogram_ms histogram
nv_inference_first_response_histogram_ms_bucket{le="100",model="llama",version="1"} 8
nv_inference_first_response_histogram_ms_bucket{le="500",model="llama",version="1"} 18
nv_inference_first_response_histogram_ms_bucket{le="+Inf",model="llama",version="1"} 20
nv_inference_first_response_histogram_ms_sum{model="llama",version="1"} 4500
nv_inference_first_response_histogram_ms_count{model="llama",version="1"} 20
`,
			completed: 10, failed: 1, canceled: 0, rejected: 2, output: nan,
			ttftEdges: []float64{0.1, 0.5, math.Inf(1)}, ttftCounts: []float64{3, 9, 10}, running: nan,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := ReadPair(context.Background(), "before.prom", strings.NewReader(tt.before),
				"after.prom", strings.NewReader(tt.after), sources.Canary)
			if err != nil {
				t.Fatal(err)
			}
			if ds.Agg.Profile != tt.profile {
				t.Errorf("profile %s, want %s", ds.Agg.Profile, tt.profile)
			}
			b := ds.Agg.Buckets[0]
			for _, c := range []struct {
				name      string
				got, want float64
			}{
				{"completed", b.Completed, tt.completed}, {"failed", b.Failed, tt.failed},
				{"canceled", b.Canceled, tt.canceled}, {"rejected", b.Rejected, tt.rejected},
				{"output tokens", b.OutputTokens, tt.output}, {"running", b.Running, tt.running},
			} {
				if !near(c.got, c.want) {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
			if tt.ttftEdges == nil {
				if len(b.TTFT.Edges) != 0 {
					t.Errorf("TTFT = %+v, want none", b.TTFT)
				}
			} else if !sameHist(b.TTFT, hist(tt.ttftEdges, tt.ttftCounts)) {
				t.Errorf("TTFT = %+v, want edges %v counts %v", b.TTFT, tt.ttftEdges, tt.ttftCounts)
			}
			if len(ds.Agg.Notes) == 0 {
				t.Error("no profile caveats in the notes")
			}
		})
	}
}
