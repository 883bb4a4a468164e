package policies

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestBuiltinsParse(t *testing.T) {
	names := Names()
	if len(names) < 2 {
		t.Fatalf("built-ins = %v, want chat and batch", names)
	}
	for _, n := range names {
		p, err := Builtin(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if p.Name != n || p.SHA256 == "" || p.Source != "builtin" {
			t.Errorf("%s: name %q sha %q source %q", n, p.Name, p.SHA256, p.Source)
		}
	}
	chat, _ := Builtin("chat")
	if time.Duration(chat.SLO.TTFT) != time.Second || time.Duration(chat.SLO.TPOT) != 80*time.Millisecond {
		t.Errorf("chat SLO = %+v", chat.SLO)
	}
	long := chat.ClassSLO("long")
	if time.Duration(long.TTFT) != 4*time.Second || time.Duration(long.TPOT) != 80*time.Millisecond {
		t.Errorf("long class must override ttft and inherit tpot: %+v", long)
	}
	if chat.Gates[0].Margin != (Margin{Kind: MarginPP, Value: 0.01, Text: "1pp"}) {
		t.Errorf("gate 0 margin = %+v", chat.Gates[0].Margin)
	}
	if chat.Alpha() < 0.0499 || chat.Alpha() > 0.0501 {
		t.Errorf("alpha = %v", chat.Alpha())
	}
}

func TestParseMargin(t *testing.T) {
	for _, tc := range []struct {
		in   string
		kind MarginKind
		v    float64
		bad  bool
	}{
		{"1pp", MarginPP, 0.01, false},
		{"0.5pp", MarginPP, 0.005, false},
		{"2%", MarginPercent, 0.02, false},
		{"50ms", MarginDuration, 0.05, false},
		{"-1pp", "", 0, true},
		{"abc", "", 0, true},
		{"100%", "", 0, true},
		{"NaN%", "", 0, true},
	} {
		m, err := ParseMargin(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: want error, got %+v", tc.in, m)
			}
			continue
		}
		if err != nil || m.Kind != tc.kind || m.Value < tc.v-1e-12 || m.Value > tc.v+1e-12 {
			t.Errorf("%q: got %+v, %v", tc.in, m, err)
		}
	}
}

// TestBadPolicies is the catalog of invalid policies: each must name the
// position (line:col) and the key at fault.
func TestBadPolicies(t *testing.T) {
	const gates = "gates:\n  - {metric: slo_attainment, margin: 1pp}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown top key", "name: x\nslo: {ttft: 1s}\nslos: {}\n" + gates, []string{"x.yaml:3:1", `unknown key "slos"`}},
		{"unknown nested key", "name: x\nslo: {ttft: 1s, tpto: 80ms}\n" + gates, []string{"x.yaml:2:17", `"slo.tpto"`}},
		{"bad duration", "name: x\nslo: {ttft: 1 sec}\n" + gates, []string{"x.yaml:2:13", `bad duration "1 sec"`}},
		{"negative duration", "name: x\nslo: {ttft: -1s}\n" + gates, []string{"x.yaml:2:13", "bad duration"}},
		{"tpot in ms without unit", "name: x\nslo: {ttft: 1s, tpot: 80}\n" + gates, []string{"x.yaml:2:23", "slo.tpot: 80 reads as 80 s a token", "80ms if that was meant"}},
		{"class ttft in ms without unit", "name: x\nslo: {ttft: 1s}\nclasses:\n  - name: long\n    slo: {ttft: 4000}\n" + gates, []string{"x.yaml:5:17", "classes[0].slo.ttft: 4000 reads as 4000 s to the first token", "4000ms"}},
		{"max_itl in ms without unit", "name: x\nslo: {max_itl: 250}\n" + gates, []string{"x.yaml:2:16", "slo.max_itl: 250 reads as 250 s between two tokens"}},
		{"bad margin", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: slo_attainment, margin: lots}\n", []string{"x.yaml:4:38", "bad margin"}},
		{"margin of 100% or more", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: ttft_p99, margin: 500%}\n", []string{"x.yaml:4:32", `bad margin "500%"`, "from 0 to below 100"}},
		{"margin wrong scale", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: ttft_p99, margin: 1pp}\n", []string{"x.yaml:4:32", "percent"}},
		{"unknown metric", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: gpu_util, margin: 1%}\n", []string{"x.yaml:4:14", `unknown metric "gpu_util" (known:`}},
		{"misspelt metric", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: slo_attainement, margin: 1pp}\n", []string{"x.yaml:4:14", `unknown metric "slo_attainement"; did you mean "slo_attainment"?`}},
		{"misspelt quantile", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: ttft_p999, margin: 10%}\n", []string{`unknown metric "ttft_p999"; did you mean "ttft_p99"?`}},
		{"no gates", "name: x\nslo: {ttft: 1s}\n", []string{"gates"}},
		{"no name", "slo: {ttft: 1s}\n" + gates, []string{"needs a name"}},
		{"empty slo", "name: x\nslo: {}\n" + gates, []string{"x.yaml:2:6", "slo"}},
		{"bad warmup", "name: x\nslo: {ttft: 1s}\nwindow: {warmup: soon}\n" + gates, []string{"x.yaml:3:18", "window.warmup"}},
		{"bucket too small", "name: x\nslo: {ttft: 1s}\nwindow: {bucket: 10ms}\n" + gates, []string{"x.yaml:3:18", "window.bucket"}},
		{"negative persistence", "name: x\nslo: {ttft: 1s}\nwindow: {persistence: -3m}\n" + gates, []string{"x.yaml:3:23", "bad duration", "non-negative"}},
		{"persistence past a day", "name: x\nslo: {ttft: 1s}\nwindow: {persistence: 25h}\n" + gates, []string{"x.yaml:3:23", "window.persistence", "correlation time"}},
		{"bad mix", "name: x\nslo: {ttft: 1s}\nnormalize: {mix: random}\n" + gates, []string{"x.yaml:3:18", "normalize.mix"}},
		{"bad canary_dip", "name: x\nslo: {ttft: 1s}\nnormalize: {canary_dip: ignore}\n" + gates, []string{"x.yaml:3", "normalize.canary_dip", "blame, excuse"}},
		{"bad baseline_dip", "name: x\nslo: {ttft: 1s}\nnormalize: {baseline_dip: drop}\n" + gates, []string{"x.yaml:3", "normalize.baseline_dip", "exclude, keep"}},
		{"bad shared_dip", "name: x\nslo: {ttft: 1s}\nnormalize: {shared_dip: drop}\n" + gates, []string{"x.yaml:3", "normalize.shared_dip", "exclude, keep"}},
		{"bad prompt_bands", "name: x\nslo: {ttft: 1s}\nnormalize: {prompt_bands: labelled}\n" + gates, []string{"x.yaml:3", "normalize.prompt_bands", "unlabelled, all"}},
		{"bad canary_replica_loss", "name: x\nslo: {ttft: 1s}\nnormalize: {canary_replica_loss: ignore}\n" + gates, []string{"x.yaml:3", "normalize.canary_replica_loss", "blame, excuse"}},
		{"bad confidence", "name: x\nslo: {ttft: 1s}\nconfidence: 95\n" + gates, []string{"x.yaml:3:13", "confidence"}},
		{"duplicate gate", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: slo_attainment, margin: 1pp}\n  - {metric: slo_attainment, margin: 2pp}\n", []string{"x.yaml:5:14", "gated twice"}},
		{"duplicate key", "name: x\nname: y\nslo: {ttft: 1s}\n" + gates, []string{"x.yaml:2:1", "duplicate key"}},
		{"not yaml", "name: [x\n", []string{"x.yaml", "YAML"}},
		{"list not mapping", "- a\n- b\n", []string{"x.yaml:1:1", "mapping"}},
		{"wrong type", "name: x\nslo: {ttft: 1s}\nconfidence: high\n" + gates, []string{"x.yaml:3"}},
		{"bad quality", "name: x\nslo: {ttft: 1s, quality: maybe}\n" + gates, []string{"x.yaml:2:26", "quality"}},
		{"class range", "name: x\nslo: {ttft: 1s}\nclasses:\n  - name: a\n    when: {prompt_tokens: {min: 10, max: 5}}\n" + gates, []string{"x.yaml:5:27", "max must be greater"}},
		{"negative cost", "name: x\nslo: {ttft: 1s}\ncost: {accelerator_per_hour: -2}\n" + gates, []string{"x.yaml:3:30", "cost.accelerator_per_hour"}},
		{"bad split", "name: x\nslo: {ttft: 1s}\ntraffic: {canary_share: 1.5}\n" + gates, []string{"x.yaml:3:25", "canary_share"}},
		{"negative output floor", "name: x\nslo: {ttft: 1s, min_output_tokens: -1}\n" + gates, []string{"x.yaml:2:36", "min_output_tokens"}},
		{"negative weight", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: slo_attainment, margin: 1pp, weight: -1}\n", []string{"x.yaml:4:51", "weight"}},
		{"opposite direction", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: output_tokens_mean, margin: 5%, direction: lower_is_better}\n", []string{"x.yaml:4:57", `"lower_is_better" is not a direction of output_tokens_mean`, "two_sided", "harm is higher is better"}},
		{"misspelt direction", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: error_rate, margin: 1pp, direction: both}\n", []string{"x.yaml:4:50", `"both" is not a direction`}},
		{"two-sided tail", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: ttft_p99, margin: 10%, direction: two_sided}\n", []string{"x.yaml:4:48", "ttft_p99 is judged in one direction (lower is better)"}},
		{"two-sided capacity", "name: x\nslo: {ttft: 1s}\ngates:\n  - {metric: capacity, margin: 5%, direction: two_sided}\n", []string{"x.yaml:4:47", "capacity is judged in one direction"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestBareSecondsAccepted: a bare number below its criterion's limit is
// seconds, and any value with its unit is taken as written.
func TestBareSecondsAccepted(t *testing.T) {
	const gates = "gates:\n  - {metric: slo_attainment, margin: 1pp}\n"
	for _, tc := range []struct {
		slo  string
		want SLO
	}{
		{"{ttft: 1, tpot: 0.08}", SLO{TTFT: Duration(time.Second), TPOT: Duration(80 * time.Millisecond)}},
		{"{ttft: 59, tpot: 9.5}", SLO{TTFT: Duration(59 * time.Second), TPOT: Duration(9500 * time.Millisecond)}},
		{"{ttft: 120s, tpot: 80s, max_itl: 30s}", SLO{TTFT: Duration(120 * time.Second), TPOT: Duration(80 * time.Second), MaxITL: Duration(30 * time.Second)}},
		{"{e2e: 36000}", SLO{E2E: Duration(10 * time.Hour)}},
	} {
		t.Run(tc.slo, func(t *testing.T) {
			p, err := Parse("x.yaml", []byte("name: x\nslo: "+tc.slo+"\n"+gates))
			if err != nil {
				t.Fatal(err)
			}
			got := p.SLO
			got.MinOutputTokens = nil
			if got != tc.want {
				t.Errorf("slo %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestGateDirection: a gate's direction is its metric's unless the policy
// says two_sided; writing the metric's own direction is the same as
// leaving it out.
func TestGateDirection(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"{metric: output_tokens_mean, margin: 5%}", ""},
		{"{metric: output_tokens_mean, margin: 5%, direction: higher_is_better}", ""},
		{"{metric: output_tokens_mean, margin: 5%, direction: two_sided}", TwoSided},
		{"{metric: error_rate, margin: 1pp, guardrail: true, direction: two_sided}", TwoSided},
	} {
		p, err := Parse("x.yaml", []byte("name: x\nslo: {ttft: 1s}\ngates:\n  - "+tc.line+"\n"))
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if got := p.Gates[0].Direction; got != tc.want {
			t.Errorf("%s: direction %q, want %q", tc.line, got, tc.want)
		}
	}
	chat, err := Builtin("chat")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range chat.Gates {
		if want := map[bool]string{true: TwoSided}[g.Metric == "output_tokens_mean"]; g.Direction != want {
			t.Errorf("chat's %s gate: direction %q, want %q", g.Metric, g.Direction, want)
		}
	}
}

func TestLoad(t *testing.T) {
	if _, err := Load("nosuch"); err == nil || !strings.Contains(err.Error(), "built-ins: batch, bench, chat") {
		t.Errorf("Load(nosuch) = %v", err)
	}
	p, err := Load("")
	if err != nil || p.Name != DefaultName {
		t.Fatalf("default: %v %v", p, err)
	}
}

// TestGateWeights: attainment gets most of α by default; explicit weights
// are normalised, unset ones weigh 1.
func TestGateWeights(t *testing.T) {
	g := func(metric string, w float64) Gate { return Gate{Metric: metric, Weight: w} }
	w := GateWeights([]Gate{g("ttft_p99", 0), g("slo_attainment", 0), g("error_rate", 0)})
	if math.Abs(w[1]-DefaultAttainmentWeight) > 1e-12 || math.Abs(w[0]-0.2) > 1e-12 || math.Abs(w[2]-0.2) > 1e-12 {
		t.Errorf("default weights %v", w)
	}
	w = GateWeights([]Gate{g("ttft_p99", 3), g("slo_attainment", 0)})
	if math.Abs(w[0]-0.75) > 1e-12 || math.Abs(w[1]-0.25) > 1e-12 {
		t.Errorf("explicit weights %v", w)
	}
	w = GateWeights([]Gate{g("ttft_p99", 0), g("tpot_p99", 0)})
	if w[0] != 0.5 || w[1] != 0.5 {
		t.Errorf("no attainment gate: %v", w)
	}
	p, err := Builtin("chat")
	if err != nil {
		t.Fatal(err)
	}
	if p.SLO.OutputFloor() != DefaultMinOutputTokens || p.Classes[0].SLO.OutputFloor() != DefaultMinOutputTokens {
		t.Errorf("chat output floor %d / %d", p.SLO.OutputFloor(), p.Classes[0].SLO.OutputFloor())
	}
}
