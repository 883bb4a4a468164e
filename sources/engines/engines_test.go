package engines

import (
	"strings"
	"testing"
)

func TestParseSelector(t *testing.T) {
	tests := []struct {
		in      string
		want    string // rendered; "" when an error is expected
		errPart string
	}{
		{`deployment="baseline"`, `deployment="baseline"`, ""},
		{` deployment = "canary" , namespace=~"llm-.*", `, `deployment="canary",namespace=~"llm-.*"`, ""},
		{`pod!="x",app="a\"b"`, `pod!="x",app="a\"b"`, ""},
		{`team!~"a|b",app="vllm"`, `team!~"a|b",app="vllm"`, ""},
		{``, "", "empty selector"},
		{`{deployment="x"}`, "", "without braces"},
		{`deployment='x'`, "", "double-quoted"},
		{`deployment="x"} or vector(1)`, "", "expected ','"},
		{`deployment="x" or up`, "", "expected ','"},
		{`deployment`, "", "expected one of"},
		{`deployment=="x"`, "", "double-quoted"},
		{`deployment="x`, "", "unterminated"},
		{`__name__="up"`, "", "cannot be used"},
		{`le="1"`, "", "cannot be used"},
		{`pod=~"(("`, "", "bad regular expression"},
		{`pod=~".*"`, "", "non-empty"},
		{`pod!="a"`, "", "non-empty"},
		{`1pod="a"`, "", "label name"},
		{`pod="a",`, `pod="a"`, ""},
		{`pod="a",,`, "", "label name"},
	}
	for _, tt := range tests {
		sel, err := ParseSelector(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("ParseSelector(%q) = %v, want error containing %q", tt.in, sel, tt.errPart)
			} else if !strings.Contains(err.Error(), tt.errPart) {
				t.Errorf("ParseSelector(%q) error %q, want it to contain %q", tt.in, err, tt.errPart)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSelector(%q): %v", tt.in, err)
			continue
		}
		if got := sel.String(); got != tt.want {
			t.Errorf("ParseSelector(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestSelectorMatches(t *testing.T) {
	sel, err := ParseSelector(`deployment="canary",pod=~"c-[0-9]+",zone!="b"`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{"deployment": "canary", "pod": "c-1"}, true},
		{map[string]string{"deployment": "canary", "pod": "c-1", "zone": "a"}, true},
		{map[string]string{"deployment": "canary", "pod": "c-1", "zone": "b"}, false},
		{map[string]string{"deployment": "canary", "pod": "xc-1"}, false}, // anchored
		{map[string]string{"deployment": "baseline", "pod": "c-1"}, false},
		{map[string]string{"pod": "c-1"}, false},
	}
	for _, tt := range tests {
		if got := sel.Matches(tt.labels); got != tt.want {
			t.Errorf("Matches(%v) = %v, want %v", tt.labels, got, tt.want)
		}
	}
	if got, want := sel.With("vllm:x_bucket", map[string]string{"b": "2", "a": "1"}),
		`vllm:x_bucket{deployment="canary",pod=~"c-[0-9]+",zone!="b",a="1",b="2"}`; got != want {
		t.Errorf("With = %s, want %s", got, want)
	}
}

func TestDetect(t *testing.T) {
	v1 := []string{"vllm:request_success_total", "vllm:time_to_first_token_seconds_bucket",
		"vllm:inter_token_latency_seconds_bucket", "vllm:kv_cache_usage_perc"}
	v0 := []string{"vllm:request_success_total", "vllm:time_to_first_token_seconds_bucket",
		"vllm:time_per_output_token_seconds_bucket", "vllm:gpu_cache_usage_perc", "vllm:num_requests_swapped"}
	tests := []struct {
		names  []string
		engine string
		want   string
		err    bool
	}{
		{v1, "auto", "vllm-v1", false},
		{v0, "", "vllm-v0", false},
		{v0, "vllm", "vllm-v0", false},
		{v1, "sglang", "", true},
		{[]string{"sglang:num_requests_total", "sglang:time_to_first_token_seconds_bucket"}, "auto", "sglang", false},
		{[]string{"tgi_request_success", "tgi_request_failure", "tgi_request_duration_bucket"}, "", "tgi", false},
		{[]string{"nv_inference_request_success", "nv_inference_request_failure"}, "triton", "triton", false},
		{[]string{"trtllm_request_success_total", "trtllm_time_to_first_token_seconds_bucket"}, "triton", "trtllm-serve", false},
		{[]string{"DCGM_FI_DEV_GPU_UTIL"}, "", "", true},
		{nil, "", "", true},
	}
	for _, tt := range tests {
		p, err := Detect(tt.names, tt.engine)
		if tt.err {
			if err == nil {
				t.Errorf("Detect(%v, %q) = %s, want error", tt.names, tt.engine, p.Name)
			}
			continue
		}
		if err != nil || p.Name != tt.want {
			t.Errorf("Detect(%v, %q) = %s, %v; want %s", tt.names, tt.engine, p.Name, err, tt.want)
		}
	}
}

func TestResolveRenames(t *testing.T) {
	// vLLM ≈0.10 exports old and new names side by side: the newer wins.
	both := map[string]bool{"vllm:request_success_total": true, "vllm:kv_cache_usage_perc": true,
		"vllm:gpu_cache_usage_perc": true, "vllm:prefix_cache_hits_total": true, "vllm:gpu_prefix_cache_hits_total": true}
	p, _ := ByName("vllm-v1")
	r, err := Resolve(p, func(n string) bool { return both[n] })
	if err != nil {
		t.Fatal(err)
	}
	if r.Metrics[KVUsage].Name != "vllm:kv_cache_usage_perc" || r.Metrics[PrefixHits].Name != "vllm:prefix_cache_hits_total" {
		t.Errorf("newer names not preferred: %+v", r.Metrics)
	}
	// only the older names: read them and say so
	old := map[string]bool{"vllm:request_success_total": true, "vllm:gpu_cache_usage_perc": true}
	r, err = Resolve(p, func(n string) bool { return old[n] })
	if err != nil {
		t.Fatal(err)
	}
	if r.Metrics[KVUsage].Name != "vllm:gpu_cache_usage_perc" {
		t.Errorf("older KV name not used: %+v", r.Metrics)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "older name of vllm:kv_cache_usage_perc") {
		t.Errorf("rename not noted: %q", r.Notes)
	}
	if !r.Known(Completed) || !r.Known(Canceled) || r.Known(Rejected) {
		t.Errorf("known outcomes wrong")
	}
	if _, err := Resolve(p, func(string) bool { return false }); err == nil {
		t.Error("Resolve without request counters succeeded")
	}
}

func TestOutcomeClassify(t *testing.T) {
	p, _ := ByName("vllm-v1")
	oc := p.Outcomes[0]
	for reason, want := range map[string]Outcome{"stop": Completed, "length": Completed, "abort": Canceled,
		"error": Failed, "something-new": Failed} {
		if got := oc.Classify(reason); got != want {
			t.Errorf("Classify(%q) = %v, want %v", reason, got, want)
		}
	}
}

// Profiles follow the naming rules the sources rely on: histograms by
// family name, counters by exposed sample name, no duplicates.
func TestProfileNames(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range All() {
		if seen[p.Name] {
			t.Errorf("duplicate profile %s", p.Name)
		}
		seen[p.Name] = true
		if !contains(EngineNames(), p.Engine) {
			t.Errorf("%s: engine %q not selectable with --profile", p.Name, p.Engine)
		}
		if len(p.Outcomes) == 0 {
			t.Errorf("%s: no request counters", p.Name)
		}
		for q, cs := range p.Metrics {
			for _, c := range cs {
				switch KindOf(q) {
				case KindHistogram:
					if strings.HasSuffix(c.Name, "_bucket") || strings.HasSuffix(c.Name, "_count") {
						t.Errorf("%s %s: histogram %s must be a family name", p.Name, q, c.Name)
					}
				case KindCounter:
					if c.Combine != 0 {
						t.Errorf("%s %s: Combine set on a counter", p.Name, q)
					}
				}
				if c.Factor() <= 0 {
					t.Errorf("%s %s: bad scale %v", p.Name, q, c.Scale)
				}
			}
		}
	}
	names := AllNames()
	for i := 1; i < len(names); i++ {
		if names[i] <= names[i-1] {
			t.Fatalf("AllNames not sorted and unique at %q", names[i])
		}
	}
	for _, want := range []string{"vllm:request_success_total", "DCGM_FI_DEV_GPU_UTIL", "node_gpu_hourly_cost", "tgi_request_failure"} {
		if !contains(names, want) {
			t.Errorf("AllNames lacks %s", want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
