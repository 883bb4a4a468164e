package engines

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// MatchOp is a PromQL label-matching operator.
type MatchOp string

// The four PromQL matching operators.
const (
	OpEqual     MatchOp = "="
	OpNotEqual  MatchOp = "!="
	OpRegex     MatchOp = "=~"
	OpNotRegexp MatchOp = "!~"
)

// Matcher is one validated label matcher.
type Matcher struct {
	Name  string
	Op    MatchOp
	Value string // unquoted
	re    *regexp.Regexp
}

// Matches reports whether a label value (empty when the label is absent)
// satisfies the matcher, with PromQL semantics (regexes are fully anchored).
func (m Matcher) Matches(v string) bool {
	switch m.Op {
	case OpEqual:
		return v == m.Value
	case OpNotEqual:
		return v != m.Value
	case OpRegex:
		return m.re.MatchString(v)
	case OpNotRegexp:
		return !m.re.MatchString(v)
	}
	return false
}

// String renders the matcher as PromQL, with the value re-quoted so that no
// input text reaches a query unescaped.
func (m Matcher) String() string { return m.Name + string(m.Op) + strconv.Quote(m.Value) }

// Selector is a validated list of label matchers that picks one arm's
// series, e.g. deployment="canary",namespace="llm".
type Selector []Matcher

// String renders the matchers comma-separated, without braces.
func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, m := range s {
		parts[i] = m.String()
	}
	return strings.Join(parts, ",")
}

// With returns the selector's matchers followed by extra equality matchers
// (sorted by label name) rendered inside braces with a metric name:
// name{a="b",c="d"}.
func (s Selector) With(name string, extra map[string]string) string {
	parts := []string{}
	if len(s) > 0 {
		parts = append(parts, s.String())
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+strconv.Quote(extra[k]))
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// Matches reports whether a label set satisfies every matcher.
func (s Selector) Matches(labels map[string]string) bool {
	for _, m := range s {
		if !m.Matches(labels[m.Name]) {
			return false
		}
	}
	return true
}

// ParseSelector parses PromQL label matchers without braces:
//
//	name op "value" [, name op "value" …]
//
// with op one of = != =~ !~ and values in double quotes (Go/PromQL escapes).
// Anything else — braces, metric names, functions, single quotes, label
// names __name__ or le — is rejected with the column of the problem, so no
// unvalidated text is ever put into PromQL. At least one matcher must not
// match the empty string (Prometheus requires it, and an arm must be
// selected by something).
func ParseSelector(s string) (Selector, error) {
	p := selParser{s: s}
	var out Selector
	p.space()
	if p.eof() {
		return nil, fmt.Errorf("empty selector: give label matchers such as deployment=\"canary\"")
	}
	for {
		m, err := p.matcher()
		if err != nil {
			return nil, fmt.Errorf("selector %q: %w", s, err)
		}
		out = append(out, m)
		p.space()
		if p.eof() {
			break
		}
		if p.s[p.i] != ',' {
			return nil, fmt.Errorf("selector %q: column %d: expected ',' between matchers, found %q", s, p.i+1, p.s[p.i])
		}
		p.i++
		p.space()
		if p.eof() { // trailing comma, as PromQL allows
			break
		}
	}
	nonEmpty := false
	for _, m := range out {
		nonEmpty = nonEmpty || !m.Matches("")
	}
	if !nonEmpty {
		return nil, fmt.Errorf("selector %q matches series without any of its labels: at least one matcher must require a non-empty value", s)
	}
	return out, nil
}

type selParser struct {
	s string
	i int
}

func (p *selParser) eof() bool { return p.i >= len(p.s) }

func (p *selParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *selParser) matcher() (Matcher, error) {
	start := p.i
	for p.i < len(p.s) && isLabelChar(p.s[p.i], p.i == start) {
		p.i++
	}
	if p.i == start {
		if !p.eof() && (p.s[p.i] == '{' || p.s[p.i] == '}') {
			return Matcher{}, fmt.Errorf("column %d: give the matchers without braces", p.i+1)
		}
		return Matcher{}, fmt.Errorf("column %d: expected a label name", p.i+1)
	}
	name := p.s[start:p.i]
	if name == "__name__" || name == "le" {
		return Matcher{}, fmt.Errorf("column %d: label %q cannot be used in an arm selector", start+1, name)
	}
	p.space()
	var op MatchOp
	switch {
	case strings.HasPrefix(p.s[p.i:], "=~"):
		op = OpRegex
	case strings.HasPrefix(p.s[p.i:], "!~"):
		op = OpNotRegexp
	case strings.HasPrefix(p.s[p.i:], "!="):
		op = OpNotEqual
	case strings.HasPrefix(p.s[p.i:], "="):
		op = OpEqual
	default:
		return Matcher{}, fmt.Errorf("column %d: expected one of = != =~ !~ after %s", p.i+1, name)
	}
	p.i += len(op)
	p.space()
	if p.eof() || p.s[p.i] != '"' {
		return Matcher{}, fmt.Errorf("column %d: expected a double-quoted value after %s%s", p.i+1, name, op)
	}
	qs := p.i
	p.i++
	for {
		if p.eof() {
			return Matcher{}, fmt.Errorf("column %d: unterminated string", qs+1)
		}
		c := p.s[p.i]
		if c == '\\' {
			p.i += 2
			continue
		}
		if c == '\n' {
			return Matcher{}, fmt.Errorf("column %d: newline in string", p.i+1)
		}
		p.i++
		if c == '"' {
			break
		}
	}
	if p.i > len(p.s) {
		return Matcher{}, fmt.Errorf("column %d: unterminated string", qs+1)
	}
	val, err := strconv.Unquote(p.s[qs:p.i])
	if err != nil {
		return Matcher{}, fmt.Errorf("column %d: bad string %s: %v", qs+1, p.s[qs:p.i], err)
	}
	m := Matcher{Name: name, Op: op, Value: val}
	if op == OpRegex || op == OpNotRegexp {
		re, err := regexp.Compile("^(?:" + val + ")$")
		if err != nil {
			return Matcher{}, fmt.Errorf("column %d: bad regular expression: %v", qs+1, err)
		}
		m.re = re
	}
	return m, nil
}

func isLabelChar(c byte, first bool) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9')
}
