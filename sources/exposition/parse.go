package exposition

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// sample is one flattened sample: a counter, gauge or untyped value, or a
// histogram's _bucket (with le), _sum or _count.
type sample struct {
	name   string
	labels map[string]string // without le
	le     float64           // bucket edge for *_bucket samples; NaN otherwise
	value  float64
}

// snapshot is one scrape of one or more servers at one moment.
type snapshot struct {
	time    float64 // unix seconds; NaN when the scrape carries no timestamps
	line    int     // first line of the scrape in the file (1-based)
	path    string  // the file
	samples map[string]sample
	byName  map[string][]string // sample name → sorted keys; built by index
}

// index (re)builds byName from samples.
func (s *snapshot) index() {
	s.byName = map[string][]string{}
	for k, smp := range s.samples {
		s.byName[smp.name] = append(s.byName[smp.name], k)
	}
	for _, ks := range s.byName {
		sort.Strings(ks)
	}
}

// named returns the samples with a given name, in key order.
func (s *snapshot) named(name string) []sample {
	ks := s.byName[name]
	out := make([]sample, len(ks))
	for i, k := range ks {
		out[i] = s.samples[k]
	}
	return out
}

// rawLine is one line of a scrape segment after lexing.
type rawLine struct {
	no     int     // line number in the file
	typ    string  // for # TYPE lines: the family name
	text   string  // the line as fed to the text parser (timestamps and exemplars removed)
	series string  // name{labels} text, for sample lines
	ts     float64 // sample timestamp in seconds; NaN when absent
}

// segment is one run of lines that forms one scrape or one time series
// file: a Markdown fence's content or the part of a file between # EOF
// lines.
type segment struct {
	lines []string
	first int // line number of lines[0]
}

// splitSegments cuts a file into segments. A file with Markdown code
// fences contributes only fenced blocks that hold "# TYPE" or "# HELP"
// lines (command output around them is ignored). Within a block, a "# EOF"
// line followed by more samples starts a new segment: concatenated
// OpenMetrics scrapes (or text scrapes separated by a "# EOF" line) are
// consecutive scrapes.
func splitSegments(data []byte) []segment {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	fenced := false
	for _, l := range lines {
		if isFence(l) {
			fenced = true
			break
		}
	}
	var blocks []segment
	if !fenced {
		blocks = []segment{{lines: lines, first: 1}}
	} else {
		in, start := false, 0
		for i, l := range lines {
			if !isFence(l) {
				continue
			}
			if !in {
				in, start = true, i+1
				continue
			}
			in = false
			b := segment{lines: lines[start:i], first: start + 1}
			if hasMeta(b.lines) {
				blocks = append(blocks, b)
			}
		}
	}
	var out []segment
	for _, b := range blocks {
		cur := segment{first: b.first}
		for i, l := range b.lines {
			if strings.TrimSpace(l) == "# EOF" {
				if hasSamples(cur.lines) {
					out = append(out, cur)
				}
				cur = segment{first: b.first + i + 1}
				continue
			}
			cur.lines = append(cur.lines, l)
		}
		if hasSamples(cur.lines) {
			out = append(out, cur)
		}
	}
	return out
}

func isFence(l string) bool {
	t := strings.TrimSpace(l)
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

func hasMeta(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, "# TYPE ") || strings.HasPrefix(l, "# HELP ") {
			return true
		}
	}
	return false
}

func hasSamples(lines []string) bool {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}

// omType maps OpenMetrics-only family types to what the text parser
// accepts.
func omType(typ string) (string, bool) {
	switch typ {
	case "unknown", "gaugehistogram":
		return "untyped", true
	case "info", "stateset":
		return "gauge", true
	}
	return "", false
}

// lexSegment lexes a segment's lines: # TYPE lines are kept (OpenMetrics
// types mapped), # HELP, # UNIT and other comments dropped, sample lines
// split into series, value and timestamp (exemplars dropped).
func lexSegment(path string, seg segment) ([]rawLine, error) {
	var out []rawLine
	for i, l := range seg.lines {
		no := seg.first + i
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "#") {
			f := strings.Fields(t)
			if len(f) >= 4 && f[1] == "TYPE" {
				typ := strings.ToLower(f[3])
				if m, ok := omType(typ); ok {
					typ = m
				}
				out = append(out, rawLine{no: no, typ: f[2], text: "# TYPE " + f[2] + " " + typ})
			}
			continue
		}
		end, err := seriesEnd(t)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, no, err)
		}
		rest := strings.Fields(t[end:])
		if len(rest) == 0 {
			return nil, fmt.Errorf("%s:%d: sample without a value", path, no)
		}
		rl := rawLine{no: no, series: t[:end], text: t[:end] + " " + rest[0], ts: math.NaN()}
		if len(rest) > 1 && rest[1] != "#" {
			ts, err := strconv.ParseFloat(rest[1], 64)
			if err != nil || math.IsNaN(ts) || math.IsInf(ts, 0) {
				return nil, fmt.Errorf("%s:%d: bad timestamp %q", path, no, rest[1])
			}
			if ts > 1e11 { // milliseconds (text format); seconds would be past the year 5000
				ts /= 1000
			}
			rl.ts = ts
		}
		out = append(out, rl)
	}
	return out, nil
}

// seriesEnd returns the index just past a sample line's name and label set.
func seriesEnd(l string) (int, error) {
	i := 0
	for i < len(l) && l[i] != '{' && l[i] != ' ' && l[i] != '\t' {
		i++
	}
	if i == 0 && (len(l) == 0 || l[0] != '{') {
		return 0, errors.New("expected a metric name")
	}
	if i == len(l) || l[i] != '{' {
		return i, nil
	}
	inQ := false
	for j := i + 1; j < len(l); j++ {
		switch c := l[j]; {
		case inQ && c == '\\':
			j++
		case c == '"':
			inQ = !inQ
		case !inQ && c == '}':
			return j + 1, nil
		}
	}
	return 0, errors.New("unterminated label set")
}

// parseSegment turns a lexed segment into snapshots. A segment without
// timestamps is one snapshot. A segment whose samples all carry timestamps
// is cut into scrape rounds: samples are ordered by time and a round ends
// where a series repeats, so both a backfill file (each series' samples in
// time order) and a scrape with per-sample timestamps work. A mix of timed
// and untimed samples is an error.
func parseSegment(path string, lines []rawLine) ([]snapshot, error) {
	timed, untimed := 0, 0
	firstUntimed, firstTimed := 0, 0
	for _, l := range lines {
		if l.series == "" {
			continue
		}
		if math.IsNaN(l.ts) {
			untimed++
			if firstUntimed == 0 {
				firstUntimed = l.no
			}
		} else {
			timed++
			if firstTimed == 0 {
				firstTimed = l.no
			}
		}
	}
	if timed > 0 && untimed > 0 {
		return nil, fmt.Errorf("%s:%d: sample without a timestamp in a scrape whose samples have timestamps (line %d has one): give every sample a timestamp or none",
			path, firstUntimed, firstTimed)
	}
	if timed == 0 {
		seen := map[string]int{}
		for _, l := range lines {
			if l.series == "" {
				continue
			}
			if prev, ok := seen[l.series]; ok {
				return nil, fmt.Errorf("%s:%d: %s repeats line %d in one scrape without timestamps: separate scrapes with a line \"# EOF\"",
					path, l.no, l.series, prev)
			}
			seen[l.series] = l.no
		}
		s, err := parseGroup(path, lines, math.NaN())
		if err != nil {
			return nil, err
		}
		return []snapshot{s}, nil
	}
	// Timed: remember each sample's family (the most recent # TYPE line
	// before it), then order by time.
	type item struct {
		rawLine
		typ rawLine
	}
	var items []item
	var cur rawLine
	for _, l := range lines {
		if l.series == "" {
			cur = l
			continue
		}
		items = append(items, item{l, cur})
	}
	// order by time, file order within a time (an index tiebreak instead of
	// a stable sort: the latter is O(n log² n))
	sort.Slice(items, func(i, j int) bool {
		if items[i].ts != items[j].ts {
			return items[i].ts < items[j].ts
		}
		return items[i].no < items[j].no
	})
	var out []snapshot
	var group []rawLine
	inGroup := map[string]bool{}
	typed := map[string]bool{}
	maxTS := math.Inf(-1)
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		s, err := parseGroup(path, group, maxTS)
		if err != nil {
			return err
		}
		out = append(out, s)
		group, inGroup, typed, maxTS = nil, map[string]bool{}, map[string]bool{}, math.Inf(-1)
		return nil
	}
	for _, it := range items {
		if inGroup[it.series] {
			if err := flush(); err != nil {
				return nil, err
			}
		}
		inGroup[it.series] = true
		if it.typ.typ != "" && !typed[it.typ.typ] {
			typed[it.typ.typ] = true
			group = append(group, it.typ)
		}
		group = append(group, it.rawLine)
		maxTS = math.Max(maxTS, it.ts)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseGroup parses one scrape's lines with the Prometheus text parser and
// flattens the families into samples.
//
// The text parser is third-party code fed untrusted bytes; a panic inside
// it (e.g. on "# TYPE x counter\n#0\n{}0\n") is turned into an error naming
// the scrape, so a bad file is "could not evaluate", never a crash.
func parseGroup(path string, lines []rawLine, ts float64) (s snapshot, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = snapshot{}, fmt.Errorf("%s:%d: the scrape starting here is malformed (the Prometheus text parser failed on it: %v); check that the file is a complete /metrics scrape", path, firstLine(lines), r)
		}
	}()
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString(l.text)
		buf.WriteByte('\n')
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(&buf)
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) && pe.Line >= 1 && pe.Line <= len(lines) {
			return snapshot{}, fmt.Errorf("%s:%d: %s", path, lines[pe.Line-1].no, pe.Msg)
		}
		return snapshot{}, fmt.Errorf("%s:%d: %v", path, lines[0].no, err)
	}
	s = snapshot{time: ts, line: lines[0].no, path: path, samples: map[string]sample{}}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		flatten(fams[n], s.samples)
	}
	s.index()
	return s, nil
}

func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func flatten(f *dto.MetricFamily, into map[string]sample) {
	name := f.GetName()
	add := func(n string, labels map[string]string, le, v float64) {
		s := sample{name: n, labels: labels, le: le, value: v}
		into[key(n, labels, le)] = s
	}
	for _, m := range f.GetMetric() {
		labels := labelMap(m)
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			add(name, labels, math.NaN(), m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			add(name, labels, math.NaN(), m.GetGauge().GetValue())
		case dto.MetricType_HISTOGRAM:
			h := m.GetHistogram()
			for _, b := range h.GetBucket() {
				add(name+"_bucket", labels, b.GetUpperBound(), float64(b.GetCumulativeCount()))
			}
			add(name+"_sum", labels, math.NaN(), h.GetSampleSum())
			add(name+"_count", labels, math.NaN(), float64(h.GetSampleCount()))
		case dto.MetricType_SUMMARY:
			sm := m.GetSummary()
			add(name+"_sum", labels, math.NaN(), sm.GetSampleSum())
			add(name+"_count", labels, math.NaN(), float64(sm.GetSampleCount()))
		default: // untyped: a bucket line without a histogram TYPE still carries le
			le := math.NaN()
			if v, ok := labels["le"]; ok && strings.HasSuffix(name, "_bucket") {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					le = f
					delete(labels, "le")
				}
			}
			add(name, labels, le, m.GetUntyped().GetValue())
		}
	}
}

// key identifies a sample: name, sorted labels, and le for buckets.
func key(name string, labels map[string]string, le float64) string {
	ks := make([]string, 0, len(labels))
	for k := range labels {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for _, k := range ks {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(labels[k]))
		b.WriteByte(',')
	}
	b.WriteByte('}')
	if !math.IsNaN(le) {
		b.WriteString(strconv.FormatFloat(le, 'g', -1, 64))
	}
	return b.String()
}

// firstLine is the file line of a scrape's first line (0 when empty).
func firstLine(lines []rawLine) int {
	if len(lines) == 0 {
		return 0
	}
	return lines[0].no
}
