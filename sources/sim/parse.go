package sim

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

//go:embed scenarios/*.yaml
var builtinFS embed.FS

// BuiltinNames lists the built-in scenarios in sorted order.
func BuiltinNames() []string {
	ents, err := builtinFS.ReadDir("scenarios")
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// Builtin returns the built-in scenario with the given name.
func Builtin(name string) (Scenario, error) {
	data, err := builtinFS.ReadFile(path.Join("scenarios", name+".yaml"))
	if err != nil || strings.ContainsAny(name, "/\\") {
		return Scenario{}, fmt.Errorf("no built-in scenario %q (built-in: %s)", name, strings.Join(BuiltinNames(), ", "))
	}
	sc, err := ParseScenario(name+".yaml", data)
	if err != nil {
		return Scenario{}, err
	}
	if sc.Name == "" {
		sc.Name = name
	}
	return sc, nil
}

// scenarioFile is the YAML shape of a scenario: the fleet and canary blocks
// are decoded separately so that the canary block overlays the fleet.
type scenarioFile struct {
	Name           string        `yaml:"name"`
	Description    string        `yaml:"description"`
	Start          time.Time     `yaml:"start"`
	Duration       time.Duration `yaml:"duration"`
	SampleInterval time.Duration `yaml:"sample_interval"`
	CostInterval   time.Duration `yaml:"cost_interval"`
	Model          string        `yaml:"model"`
	SLO            SLO           `yaml:"slo"`
	Traffic        Traffic       `yaml:"traffic"`
	Client         Client        `yaml:"client"`
	Fleet          yaml.Node     `yaml:"fleet"`
	Canary         yaml.Node     `yaml:"canary"`
	Failures       []Failure     `yaml:"failures"`
	Extends        string        `yaml:"extends"`
	Ranges         []Range       `yaml:"ranges"`
}

// ParseScenario parses a scenario file. Keys are strict: an unknown or
// duplicate key, a value of the wrong type or an invalid value is an error
// naming name:line:col and the key. Keys left out take the defaults
// documented on the Scenario types; the canary block overrides fleet keys
// for the canary arm only.
func ParseScenario(name string, data []byte) (Scenario, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return Scenario{}, fmt.Errorf("%s: empty scenario file", name)
		}
		return Scenario{}, fmt.Errorf("%s: %v", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return Scenario{}, fmt.Errorf("%s:%d:%d: more than one YAML document; a scenario file holds one", name, extra.Line, extra.Column)
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return Scenario{}, fmt.Errorf("%s:%d:%d: a scenario is a mapping of keys (name, traffic, fleet, …)", name, doc.Line, doc.Column)
	}
	pos := map[string][2]int{"": {doc.Line, doc.Column}}
	armType := reflect.TypeOf(ArmSpec{})
	if err := checkKeys(name, doc, reflect.TypeOf(scenarioFile{}), "", pos, map[string]reflect.Type{"fleet": armType, "canary": armType}); err != nil {
		return Scenario{}, err
	}
	doc, err := resolveExtends(name, doc, 0)
	if err != nil {
		return Scenario{}, err
	}

	def := defaultScenario()
	f := scenarioFile{Start: def.Start, Duration: def.Duration, SampleInterval: def.SampleInterval,
		CostInterval: def.CostInterval, Model: def.Model, SLO: def.SLO, Traffic: def.Traffic, Client: def.Client}
	if err := doc.Decode(&f); err != nil {
		return Scenario{}, decodeError(name, err)
	}
	sc := Scenario{Name: f.Name, Description: f.Description, Start: f.Start.UTC(), Duration: f.Duration,
		SampleInterval: f.SampleInterval, CostInterval: f.CostInterval, Model: f.Model, SLO: f.SLO,
		Traffic: f.Traffic, Client: f.Client, Failures: f.Failures, Ranges: f.Ranges, Baseline: defaultArm()}
	if f.Fleet.Kind != 0 {
		if err := f.Fleet.Decode(&sc.Baseline); err != nil {
			return Scenario{}, decodeError(name, err)
		}
	}
	sc.Canary = sc.Baseline
	sc.Canary.ClassWeights = maps.Clone(sc.Baseline.ClassWeights)
	sc.Canary.ClassLatency = maps.Clone(sc.Baseline.ClassLatency)
	if f.Canary.Kind != 0 {
		if err := f.Canary.Decode(&sc.Canary); err != nil {
			return Scenario{}, decodeError(name, err)
		}
	}
	errs := sc.validate()
	if len(errs) == 0 {
		errs = sc.checkRanges()
	}
	if len(errs) > 0 {
		e := errs[0]
		p := lookupPos(pos, e.path)
		return Scenario{}, fmt.Errorf("%s:%d:%d: %s: %s", name, p[0], p[1], e.path, e.msg)
	}
	return sc, nil
}

// resolveExtends merges a scenario that names a built-in under `extends:`
// over that built-in: mappings merge key by key (the extending file wins),
// lists and values are replaced, except ranges, which are appended (a later
// range on the same key wins). The base's name and description are not
// inherited.
func resolveExtends(file string, doc *yaml.Node, depth int) (*yaml.Node, error) {
	var base string
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "extends" {
			base = doc.Content[i+1].Value
			if base == "" || strings.ContainsAny(base, "/\\") || !slices.Contains(BuiltinNames(), base) {
				return nil, fmt.Errorf("%s:%d:%d: extends: no built-in scenario %q (built-in: %s)", file,
					doc.Content[i+1].Line, doc.Content[i+1].Column, base, strings.Join(BuiltinNames(), ", "))
			}
		}
	}
	if base == "" {
		return doc, nil
	}
	if depth > 8 {
		return nil, fmt.Errorf("%s: extends: more than 8 levels (a cycle?)", file)
	}
	data, err := builtinFS.ReadFile(path.Join("scenarios", base+".yaml"))
	if err != nil {
		return nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s.yaml: %v", base, err)
	}
	bdoc := root.Content[0]
	bdoc, err = resolveExtends(base+".yaml", bdoc, depth+1)
	if err != nil {
		return nil, err
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: bdoc.Tag, Line: doc.Line, Column: doc.Column}
	for i := 0; i+1 < len(bdoc.Content); i += 2 {
		switch bdoc.Content[i].Value {
		case "name", "description", "extends":
			continue
		}
		out.Content = append(out.Content, bdoc.Content[i], bdoc.Content[i+1])
	}
	mergeNodes(out, doc, true)
	return out, nil
}

// mergeNodes merges the mapping over into dst (see resolveExtends).
func mergeNodes(dst, over *yaml.Node, top bool) {
	for i := 0; i+1 < len(over.Content); i += 2 {
		k, v := over.Content[i], over.Content[i+1]
		if top && k.Value == "extends" {
			continue
		}
		j := -1
		for x := 0; x+1 < len(dst.Content); x += 2 {
			if dst.Content[x].Value == k.Value {
				j = x
				break
			}
		}
		switch {
		case j < 0:
			dst.Content = append(dst.Content, k, v)
		case v.Kind == yaml.MappingNode && dst.Content[j+1].Kind == yaml.MappingNode:
			m := &yaml.Node{Kind: yaml.MappingNode, Tag: v.Tag, Line: v.Line, Column: v.Column,
				Content: slices.Clone(dst.Content[j+1].Content)}
			mergeNodes(m, v, false)
			dst.Content[j+1] = m
		case top && k.Value == "ranges" && v.Kind == yaml.SequenceNode && dst.Content[j+1].Kind == yaml.SequenceNode:
			dst.Content[j+1] = &yaml.Node{Kind: yaml.SequenceNode, Tag: v.Tag, Line: v.Line, Column: v.Column,
				Content: append(slices.Clone(dst.Content[j+1].Content), v.Content...)}
		default:
			dst.Content[j], dst.Content[j+1] = k, v
		}
	}
}

// lookupPos finds the position of a key path, or of its nearest parent
// present in the file (a canary value inherited from the fleet block is
// reported at the fleet key).
func lookupPos(pos map[string][2]int, p string) [2]int {
	for cand := p; ; {
		if v, ok := pos[cand]; ok {
			if cand == "" && strings.HasPrefix(p, "canary") {
				return lookupPos(pos, "fleet"+strings.TrimPrefix(p, "canary"))
			}
			return v
		}
		i := strings.LastIndexAny(cand, ".[")
		if i < 0 {
			cand = ""
			continue
		}
		cand = cand[:i]
	}
}

func decodeError(name string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		return fmt.Errorf("%s: %s (durations need a unit, e.g. 30s or 250ms)", name, te.Errors[0])
	}
	return fmt.Errorf("%s: %v", name, err)
}

// checkKeys walks a YAML node against the Go type it will be decoded into,
// rejecting unknown and duplicate keys with line:col, and records the
// position of every key path for later validation messages. overrides maps
// top-level keys held as raw nodes to the type they stand for.
func checkKeys(file string, n *yaml.Node, t reflect.Type, p string, pos map[string][2]int, overrides map[string]reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		return fmt.Errorf("%s:%d:%d: %s: YAML aliases are not supported in scenarios", file, n.Line, n.Column, orRoot(p))
	}
	switch {
	case t == reflect.TypeFor[time.Duration]() || t == reflect.TypeFor[time.Time]():
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s:%d:%d: %s: want a single value", file, n.Line, n.Column, orRoot(p))
		}
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
				return nil
			}
			return fmt.Errorf("%s:%d:%d: %s: want a mapping of keys", file, n.Line, n.Column, orRoot(p))
		}
		fields := map[string]reflect.Type{}
		var known []string
		for i := 0; i < t.NumField(); i++ {
			fld := t.Field(i)
			tag := strings.Split(fld.Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = fld.Type
			known = append(known, tag)
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			kp := join(p, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				return fmt.Errorf("%s:%d:%d: unknown key %q in %s (known keys: %s)", file, k.Line, k.Column, k.Value, orRoot(p), strings.Join(known, ", "))
			}
			if prev, dup := seen[k.Value]; dup {
				return fmt.Errorf("%s:%d:%d: key %q given twice in %s (first at line %d)", file, k.Line, k.Column, k.Value, orRoot(p), prev)
			}
			seen[k.Value] = k.Line
			pos[kp] = [2]int{k.Line, k.Column}
			if ot, ok := overrides[kp]; ok && ft == reflect.TypeFor[yaml.Node]() {
				ft = ot
			}
			if err := checkKeys(file, val, ft, kp, pos, overrides); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s:%d:%d: %s: want a mapping", file, n.Line, n.Column, orRoot(p))
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if prev, dup := seen[k.Value]; dup {
				return fmt.Errorf("%s:%d:%d: key %q given twice in %s (first at line %d)", file, k.Line, k.Column, k.Value, orRoot(p), prev)
			}
			seen[k.Value] = k.Line
			kp := join(p, k.Value)
			pos[kp] = [2]int{k.Line, k.Column}
			if err := checkKeys(file, val, t.Elem(), kp, pos, overrides); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s:%d:%d: %s: want a list", file, n.Line, n.Column, orRoot(p))
		}
		for i, item := range n.Content {
			ip := fmt.Sprintf("%s[%d]", p, i)
			pos[ip] = [2]int{item.Line, item.Column}
			if err := checkKeys(file, item, t.Elem(), ip, pos, overrides); err != nil {
				return err
			}
		}
	default:
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%s:%d:%d: %s: want a single value", file, n.Line, n.Column, orRoot(p))
		}
	}
	return nil
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

func orRoot(p string) string {
	if p == "" {
		return "the scenario"
	}
	return p
}

// Describe returns the scenario's one-line description.
func (sc *Scenario) Describe() string {
	d := strings.TrimSpace(sc.Description)
	if i := strings.IndexByte(d, '\n'); i >= 0 {
		d = d[:i]
	}
	return d
}
