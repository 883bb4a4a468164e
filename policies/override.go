package policies

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Overrides are quick changes to a policy from the command line, in the
// spirit of vLLM's --goodput: SLO criteria of the default class
// ("ttft=1s,tpot=80ms") and gate margins ("slo_attainment=2pp").
type Overrides struct {
	// SLO maps a criterion (ttft, tpot, e2e, max_itl) to a duration with
	// its unit ("1s", "80ms"). Classes that do not set the criterion
	// themselves inherit the new value.
	SLO map[string]string
	// Margins maps a gated metric of the policy to its new margin, in the
	// metric's own unit ("2pp", "15%").
	Margins map[string]string
}

// Empty reports whether o changes nothing.
func (o Overrides) Empty() bool { return len(o.SLO) == 0 && len(o.Margins) == 0 }

// String renders o as the flags that give it, sorted: "--slo ttft=1s --margin slo_attainment=2pp".
func (o Overrides) String() string {
	var parts []string
	if len(o.SLO) > 0 {
		parts = append(parts, "--slo "+joinPairs(o.SLO))
	}
	if len(o.Margins) > 0 {
		parts = append(parts, "--margin "+joinPairs(o.Margins))
	}
	return strings.Join(parts, " ")
}

func joinPairs(m map[string]string) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for i, k := range ks {
		ks[i] = k + "=" + m[k]
	}
	return strings.Join(ks, ",")
}

// ParsePairs parses "k=v,k2=v2" (spaces around items allowed). An empty
// string gives an empty map; a repeated key or an item without "=" is an
// error naming the flag.
func ParsePairs(flag, s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		k, v, ok := strings.Cut(item, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%s %q: want name=value pairs separated by commas, e.g. %s", flag, item, flagExample(flag))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s: %s is given twice", flag, k)
		}
		out[k] = v
	}
	return out, nil
}

func flagExample(flag string) string {
	if flag == "--margin" {
		return "slo_attainment=2pp,ttft_p90=15%"
	}
	return "ttft=1s,tpot=80ms"
}

// Override returns p with o applied. The policy's YAML is edited and parsed
// again, so the result is validated like a policy file, classes inherit a
// changed SLO criterion they do not set themselves, and the report's policy
// digest covers the policy that was applied; Source notes the flags.
func Override(p *Policy, o Overrides) (*Policy, error) {
	if o.Empty() {
		return p, nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(p.Text, &root); err != nil || len(root.Content) == 0 {
		return nil, fmt.Errorf("policy %s: cannot apply %s: %v", p.Name, o, err)
	}
	doc := root.Content[0]
	for k, v := range o.SLO {
		if _, ok := sloSchema()[k]; !ok || k == "quality" {
			return nil, fmt.Errorf("--slo %s: unknown criterion (known: ttft, tpot, e2e, max_itl)", k)
		}
		d, err := ParseDuration(v)
		if err != nil || strings.TrimLeft(v, "0123456789.") == "" {
			return nil, fmt.Errorf("--slo %s=%s: want a duration with its unit, such as 1s or 80ms", k, v)
		}
		if d <= 0 {
			return nil, fmt.Errorf("--slo %s=%s: want a bound above zero", k, v)
		}
		setKey(mapping(doc, "slo"), k, v)
	}
	gates := child(doc, "gates")
	for k, v := range o.Margins {
		var g *yaml.Node
		if gates != nil && gates.Kind == yaml.SequenceNode {
			for _, item := range gates.Content {
				if m := child(item, "metric"); m != nil && m.Value == k {
					g = item
				}
			}
		}
		if g == nil {
			var names []string
			for _, pg := range p.Gates {
				names = append(names, pg.Metric)
			}
			return nil, fmt.Errorf("--margin %s: policy %s does not gate %s (its gates: %s); add the gate in a policy file (goodput policy show %s > my.yaml)",
				k, p.Name, k, strings.Join(names, ", "), p.Name)
		}
		setKey(g, "margin", v)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, err
	}
	text := append([]byte("# "+p.Name+" ("+p.Source+") with "+o.String()+"\n"), buf.Bytes()...)
	q, err := Parse(p.Source, text)
	if err != nil {
		// name the flag, not a line of a document the user never saw
		if pe, ok := err.(*Error); ok {
			return nil, fmt.Errorf("%s: %s", o, pe.Msg)
		}
		return nil, err
	}
	q.Source = p.Source + " with " + o.String()
	return q, nil
}

// mapping returns the mapping under key in doc, creating it when absent.
func mapping(doc *yaml.Node, key string) *yaml.Node {
	if n := child(doc, key); n != nil && n.Kind == yaml.MappingNode {
		n.Style = 0
		return n
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	setNode(doc, key, n)
	return n
}

// child returns the value under key in a mapping, nil when absent.
func child(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setKey sets a scalar value under key in a mapping.
func setKey(m *yaml.Node, key, value string) {
	setNode(m, key, &yaml.Node{Kind: yaml.ScalarNode, Value: value})
}

func setNode(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
}
