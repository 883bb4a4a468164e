package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// schema is the subset of OpenAPI v3 that CRD structural schemas use and
// testdata/rollouts/schemas.json keeps (see make_schemas.py there).
type schema struct {
	Type        string             `json:"type"`
	Required    []string           `json:"required"`
	Enum        []any              `json:"enum"`
	IntOrString bool               `json:"x-kubernetes-int-or-string"`
	AnyOf       []schema           `json:"anyOf"`
	Properties  map[string]*schema `json:"properties"`
	Items       *schema            `json:"items"`
	Additional  json.RawMessage    `json:"additionalProperties"`
	Pruned      bool               `json:"x-pruned"`
}

// validate checks v against s like a strict API server does: types,
// required fields, enums, and no unknown fields.
func (s *schema) validate(path string, v any) []string {
	var errs []string
	bad := func(f string, a ...any) { errs = append(errs, path+": "+fmt.Sprintf(f, a...)) }
	if s.IntOrString {
		switch v.(type) {
		case int, string:
			return nil
		}
		bad("want an integer or a string, got %T", v)
		return errs
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, v) {
		bad("%v is not one of %v", v, s.Enum)
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			bad("want an object, got %T", v)
			return errs
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				bad("required field %q missing", r)
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := s.Properties[k]; ok {
				errs = append(errs, p.validate(path+"."+k, m[k])...)
				continue
			}
			switch {
			case len(s.Additional) > 0 && string(s.Additional) != "false":
				var ap schema
				if string(s.Additional) != "true" {
					if err := json.Unmarshal(s.Additional, &ap); err != nil {
						bad("schema: %v", err)
						continue
					}
					errs = append(errs, ap.validate(path+"."+k, m[k])...)
				}
			case s.Properties == nil && !s.Pruned:
				// a free-form object (e.g. metadata): any keys
			default:
				bad("unknown field %q", k)
			}
		}
		if s.Pruned && len(m) > 0 {
			bad("the vendored schema was cut here: re-run testdata/rollouts/make_schemas.py")
		}
	case "array":
		l, ok := v.([]any)
		if !ok {
			bad("want an array, got %T", v)
			return errs
		}
		if s.Pruned && len(l) > 0 {
			bad("the vendored schema was cut here: re-run testdata/rollouts/make_schemas.py")
		}
		for i, x := range l {
			if s.Items != nil {
				errs = append(errs, s.Items.validate(fmt.Sprintf("%s[%d]", path, i), x)...)
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			bad("want a string, got %T", v)
		}
	case "integer":
		if _, ok := v.(int); !ok {
			bad("want an integer, got %T", v)
		}
	case "number":
		switch v.(type) {
		case int, float64:
		default:
			bad("want a number, got %T", v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("want a boolean, got %T", v)
		}
	}
	return errs
}

// rolloutManifests returns the YAML blocks of docs/rollouts.md, decoded.
func rolloutManifests(t *testing.T) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "rollouts.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		var v map[string]any
		if err := yaml.Unmarshal([]byte(m[1]), &v); err != nil {
			t.Fatalf("docs/rollouts.md: %v\n%s", err, m[1])
		}
		out = append(out, v)
	}
	return out
}

func loadRolloutSchemas(t *testing.T) map[string]*schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rollouts", "schemas.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]*schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// TestRolloutManifests validates every manifest of docs/rollouts.md
// against the controllers' CRD schemas, and checks that what they ask of
// goodput is what goodput answers: the web provider's URL, jsonPath and
// conditions, the webhooks' endpoints and metadata, the Job's arguments.
func TestRolloutManifests(t *testing.T) {
	schemas := loadRolloutSchemas(t)
	ms := rolloutManifests(t)
	kinds := map[string]int{}
	for _, m := range ms {
		key := fmt.Sprint(m["apiVersion"], " ", m["kind"])
		s, ok := schemas[key]
		if !ok {
			t.Errorf("no schema for %s", key)
			continue
		}
		kinds[key]++
		for _, e := range s.validate(key, m) {
			t.Error(e)
		}
	}
	if kinds["argoproj.io/v1alpha1 AnalysisTemplate"] != 2 || kinds["flagger.app/v1beta1 Canary"] != 1 {
		t.Errorf("manifests found: %v; want two AnalysisTemplates and a Canary", kinds)
	}
	args := strings.NewReplacer("{{args.service}}", "llm", "{{args.stable-hash}}", "abc123", "{{args.canary-hash}}", "def456", "{{args.goodput-token}}", "t")
	for _, m := range ms {
		metric := get(m, "spec", "metrics", 0)
		if web := get(metric, "provider", "web"); web != nil {
			if get(web, "jsonPath") != "{$.verdict}" || get(metric, "successCondition") != `result == "pass"` || get(metric, "failureCondition") != `result == "fail"` {
				t.Errorf("web provider: jsonPath %v, conditions %v / %v", get(web, "jsonPath"), get(metric, "successCondition"), get(metric, "failureCondition"))
			}
			u, err := url.Parse(args.Replace(get(web, "url").(string)))
			if err != nil || u.Path != "/v1/analysis" {
				t.Fatalf("web provider URL %v: %v", u, err)
			}
			checkParams(t, "web provider URL", func(k string) string { return u.Query().Get(k) }, keysOf(u.Query()))
		}
		if job := get(metric, "provider", "job"); job != nil {
			c := get(job, "spec", "template", "spec", "containers", 0)
			var argv []string
			for _, a := range get(c, "args").([]any) {
				argv = append(argv, args.Replace(a.(string)))
			}
			a := &app{io: &IOStreams{Out: io.Discard, ErrOut: io.Discard}, env: func(string) string { return "" }}
			cmd := a.newWatchCmd()
			if argv[0] != "watch" {
				t.Fatalf("job args %v: want goodput watch", argv)
			}
			if err := cmd.ParseFlags(argv[1:]); err != nil {
				t.Errorf("job args %v: %v", argv, err)
			}
		}
		for i := 0; get(m, "spec", "analysis", "webhooks", i) != nil; i++ {
			h := get(m, "spec", "analysis", "webhooks", i)
			want := map[string]string{"rollout": "/v1/flagger/rollout", "confirm-promotion": "/v1/flagger/confirm-promotion"}[get(h, "type").(string)]
			u, _ := url.Parse(get(h, "url").(string))
			if want == "" || u.Path != want {
				t.Errorf("webhook %v: type %v posts to %s", get(h, "name"), get(h, "type"), u.Path)
			}
			md := map[string]string{}
			for k, v := range get(h, "metadata").(map[string]any) {
				md[k] = v.(string)
			}
			checkParams(t, fmt.Sprint("webhook ", get(h, "name")), func(k string) string { return md[k] }, keysOfMap(md))
		}
	}
}

func keysOf(q url.Values) []string {
	var ks []string
	for k := range q {
		ks = append(ks, k)
	}
	return ks
}

func keysOfMap(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// checkParams validates a manifest's analysis options as the service does
// (up to reading Prometheus).
func checkParams(t *testing.T, what string, get func(string) string, keys []string) {
	t.Helper()
	for _, k := range keys {
		if !slices.Contains(analysisParams(), k) {
			t.Errorf("%s: parameter %q is not one the service reads", what, k)
		}
	}
	po := promOptions{URL: "http://prometheus.monitoring:9090", BaselineSelector: get("baseline_selector"), CanarySelector: get("canary_selector"),
		Start: get("start"), End: get("end"), Step: defaultPromStep, Profile: "auto", Timeout: defaultPromTimeout, ClassLabel: "class"}
	if v := get("last"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Errorf("%s: last %q: %v", what, v, err)
		}
		po.Last = d
	}
	now := func() time.Time { return time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) }
	if _, err := po.plan(func(string) string { return "" }, now); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// TestRolloutSchemaCatches: the validator rejects what a strict API server
// rejects: a misspelt key, a wrong type, a missing required field, a
// webhook type Flagger does not know.
func TestRolloutSchemaCatches(t *testing.T) {
	schemas := loadRolloutSchemas(t)
	ms := rolloutManifests(t)
	mutate := func(i int, f func(m map[string]any)) []string {
		b, _ := json.Marshal(ms[i])
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		// json numbers come back as float64: restore ints
		fixInts(m)
		f(m)
		return schemas[fmt.Sprint(m["apiVersion"], " ", m["kind"])].validate("m", m)
	}
	for _, tc := range []struct {
		name string
		i    int
		f    func(m map[string]any)
		want string
	}{
		{"misspelt", 0, func(m map[string]any) { get(m, "spec", "metrics", 0).(map[string]any)["sucessCondition"] = "x" }, `unknown field "sucessCondition"`},
		{"wrong type", 0, func(m map[string]any) {
			get(m, "spec", "metrics", 0, "provider", "web").(map[string]any)["timeoutSeconds"] = "120"
		}, "want an integer"},
		{"missing url", 0, func(m map[string]any) {
			delete(get(m, "spec", "metrics", 0, "provider", "web").(map[string]any), "url")
		}, `required field "url"`},
		{"bad webhook type", 2, func(m map[string]any) {
			get(m, "spec", "analysis", "webhooks", 0).(map[string]any)["type"] = "promotion"
		}, "is not one of"},
		{"job without template", 1, func(m map[string]any) {
			delete(get(m, "spec", "metrics", 0, "provider", "job", "spec").(map[string]any), "template")
		}, `required field "template"`},
	} {
		errs := mutate(tc.i, tc.f)
		if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
			t.Errorf("%s: errors %q; want one naming %q", tc.name, errs, tc.want)
		}
	}
}

func fixInts(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if f, ok := e.(float64); ok && f == float64(int(f)) {
				x[k] = int(f)
			} else {
				fixInts(e)
			}
		}
	case []any:
		for i, e := range x {
			if f, ok := e.(float64); ok && f == float64(int(f)) {
				x[i] = int(f)
			} else {
				fixInts(e)
			}
		}
	}
}
