package sim

import (
	"strings"
	"testing"
	"time"
)

func TestParseScenarioErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"unknown top-level key", "name: x\ntrafic:\n  rate: 3\n",
			[]string{"s.yaml:2:1:", `unknown key "trafic"`, "traffic"}},
		{"unknown nested key", "traffic:\n  rate: 3\n  bursts:\n    - {start: 1m, duration: 1m, rat: 5}\n",
			[]string{"s.yaml:4:33:", `unknown key "rat"`, "traffic.bursts[0]"}},
		{"unknown canary key", "canary:\n  decode_sped: 1.1\n",
			[]string{"s.yaml:2:3:", `unknown key "decode_sped"`, "canary"}},
		{"duplicate key", "duration: 5m\nduration: 6m\n",
			[]string{"s.yaml:2:1:", `key "duration" given twice`}},
		{"duration without unit", "duration: 300\n",
			[]string{"s.yaml", "line 1", "durations need a unit"}},
		{"wrong type", "traffic:\n  rate: fast\n",
			[]string{"s.yaml", "line 2", "float64"}},
		{"list expected", "failures: {arm: baseline}\n",
			[]string{"s.yaml:1:11:", "failures: want a list"}},
		{"invalid value with position", "traffic:\n  canary_share: 1.5\n",
			[]string{"s.yaml:2:3:", "traffic.canary_share", "(0, 1)"}},
		{"invalid canary value", "canary:\n  decode_speed: 0\n",
			[]string{"s.yaml:2:3:", "canary.decode_speed", "> 0"}},
		{"inherited invalid value points at fleet", "fleet:\n  scheduler: lifo\n",
			[]string{"s.yaml:2:3:", "fleet.scheduler", "chunked or fcfs"}},
		{"failure on missing replica", "fleet: {replicas: 2}\nfailures:\n  - {arm: canary, replica: 2, at: 1m}\n",
			[]string{"s.yaml:3:19:", "failures[0].replica", "no replica 2"}},
		{"unknown class weight", "canary:\n  class_weights: {video: 1}\n",
			[]string{"s.yaml:2:19:", "no traffic class named \"video\""}},
		{"unknown distribution", "traffic:\n  classes:\n    - name: a\n      weight: 1\n      prompt_tokens: {dist: zipf, max: 10}\n      output_tokens: {dist: constant, value: 5}\n",
			[]string{"s.yaml:5:23:", "unknown distribution \"zipf\""}},
		{"request too long for KV", "fleet:\n  kv: {blocks: 10}\n",
			[]string{"fleet.kv.blocks", "cannot hold the longest request"}},
		{"two documents", "name: a\n---\nname: b\n",
			[]string{"s.yaml:2:1:", "more than one YAML document"}},
		{"not a mapping", "- a\n- b\n",
			[]string{"s.yaml:1:1:", "mapping"}},
		{"empty", "", []string{"s.yaml: empty scenario file"}},
		{"control characters in the name", "name: \"a\\x1b[31mred\"\n",
			[]string{"s.yaml:1:1:", "control characters"}},
		{"bad retry outcome", "client:\n  retry: {max_attempts: 2, on: [rejected, oops]}\n",
			[]string{"client.retry.on[1]", `unknown outcome "oops"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScenario("s.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("expected an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParseScenarioOverlay(t *testing.T) {
	sc, err := ParseScenario("s.yaml", []byte(`
name: overlay
duration: 7m
fleet:
  replicas: 3
  cost: {accelerator_per_hour: 2, host_per_hour: 1}
  class_weights: {chat: 1}
canary:
  replicas: 2
  cost: {accelerator_per_hour: 3}
  class_weights: {long: 2}
  stalls: {probability: 0.1, duration: 1s, scope: request}
`))
	if err != nil {
		t.Fatal(err)
	}
	b, c := sc.Baseline, sc.Canary
	if b.Replicas != 3 || c.Replicas != 2 {
		t.Errorf("replicas %d/%d", b.Replicas, c.Replicas)
	}
	if b.Cost.AcceleratorPerHour != 2 || c.Cost.AcceleratorPerHour != 3 || c.Cost.HostPerHour != 1 {
		t.Errorf("cost overlay: baseline %+v canary %+v", b.Cost, c.Cost)
	}
	if len(b.ClassWeights) != 1 || c.ClassWeights["chat"] != 1 || c.ClassWeights["long"] != 2 {
		t.Errorf("class weights: baseline %v canary %v", b.ClassWeights, c.ClassWeights)
	}
	if b.Stalls.Probability != 0 || c.Stalls.Scope != "request" {
		t.Errorf("stalls: baseline %+v canary %+v", b.Stalls, c.Stalls)
	}
	if sc.Duration != 7*time.Minute || !sc.Start.Equal(DefaultStart()) || sc.Baseline.Step.Base != 10*time.Millisecond {
		t.Errorf("defaults not applied: %v %v %v", sc.Duration, sc.Start, sc.Baseline.Step.Base)
	}
}

// FuzzParseScenario: no input makes the parser panic, and whatever it
// accepts passes validation.
func FuzzParseScenario(f *testing.F) {
	for _, n := range BuiltinNames() {
		data, err := builtinFS.ReadFile("scenarios/" + n + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("fleet: [1, 2]\ncanary: {kv: {blocks: -1}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario("f.yaml", data)
		if err != nil {
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("accepted an invalid scenario: %v", err)
		}
	})
}
