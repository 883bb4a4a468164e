package prometheus

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/engines"
)

// builder turns query results into aggregate buckets: one per step and
// class.
type builder struct {
	first time.Time // evaluation time of step 0 (window start + step)
	step  time.Duration
	steps int
	res   engines.Resolved
	keep  map[engines.Quantity]map[float64]bool
	note  func(string, ...any)

	cells       map[cellKey]*cell
	outcomeSeen []bool
	// classesSeen records, per query tag, the class label values seen.
	classesSeen map[string]map[string]bool
	gauges      []map[string]float64
	// replicas holds, per replica name, the first request counter's
	// increase per step (NaN where the replica had no samples).
	replicas map[string][]float64
	// replicaHist holds, per latency (engines.TTFT, engines.TPOT) and
	// replica name, the replica's bucket increases per step and edge.
	replicaHist map[engines.Quantity]map[string][]map[float64]float64
	// inFlight holds, per replica name and gauge (engines.Running,
	// engines.Waiting), the last sample of each step (NaN where none).
	inFlight map[string]map[engines.Quantity][]float64
	// own are the labels the selector fixes by equality: left out of
	// replica names.
	own        map[string]bool
	fullName   map[string]string
	classLabel string
}

type cellKey struct {
	k     int
	class string
}

type cell struct {
	outcomes map[engines.Outcome]float64
	counters map[engines.Quantity]float64
	hist     map[engines.Quantity]map[float64]float64
	// native holds the histograms read in native form.
	native map[engines.Quantity]nativeSample
}

func newBuilder(q Query, steps int, res engines.Resolved, keep map[engines.Quantity]map[float64]bool, note func(string, ...any)) *builder {
	b := &builder{first: q.Start.Add(q.Step), step: q.Step, steps: steps, res: res, keep: keep, note: note,
		cells: map[cellKey]*cell{}, outcomeSeen: make([]bool, steps), classesSeen: map[string]map[string]bool{},
		gauges: make([]map[string]float64, steps), replicas: map[string][]float64{}, replicaHist: map[engines.Quantity]map[string][]map[float64]float64{}, inFlight: map[string]map[engines.Quantity][]float64{}, fullName: map[string]string{}, classLabel: q.classLabel(), own: map[string]bool{queryLabel: true}}
	for _, m := range q.Selector {
		if m.Op == engines.OpEqual {
			b.own[m.Name] = true
		}
	}
	return b
}

// index maps an evaluation timestamp to its step, or -1 when it is off the grid.
func (b *builder) index(ts model.Time) int {
	d := ts.Time().Sub(b.first)
	k := int(math.Round(float64(d) / float64(b.step)))
	if k < 0 || k >= b.steps {
		return -1
	}
	return k
}

func (b *builder) cell(k int, class string) *cell {
	ck := cellKey{k, class}
	c := b.cells[ck]
	if c == nil {
		c = &cell{outcomes: map[engines.Outcome]float64{}, counters: map[engines.Quantity]float64{},
			hist: map[engines.Quantity]map[float64]float64{}, native: map[engines.Quantity]nativeSample{}}
		b.cells[ck] = c
	}
	return c
}

// replicaName renders a per-replica series' labels, less the selector's
// own and the query tag, sorted and sanitised.
// The second result is the full label set, the selector's labels included.
func (b *builder) replicaName(m model.Metric) (name, full string) {
	var parts, all []string
	for k, v := range m {
		if k == queryLabel || k == model.MetricNameLabel {
			continue
		}
		p := string(k) + "=" + strconv.Quote(sanitize(string(v), 80))
		all = append(all, p)
		if !b.own[string(k)] {
			parts = append(parts, p)
		}
	}
	sort.Strings(parts)
	sort.Strings(all)
	return "{" + strings.Join(parts, ",") + "}", "{" + strings.Join(all, ",") + "}"
}

// addIncreases adds one range query's increases. An increase that is NaN,
// infinite or negative (counters that went backwards without a reset, or
// hold non-finite values) is an error naming the series: such data cannot
// be counted.
func (b *builder) addIncreases(m model.Matrix, query string) error {
	for _, ss := range m {
		for _, v := range ss.Values {
			if x := float64(v.Value); math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return fmt.Errorf("query %s: series %s has increase %g at %s: a counter's increase is finite and never negative; fix the exporter or narrow the selector",
					shorten(query, 160), sanitize(ss.Metric.String(), 200), x, v.Timestamp.Time().UTC().Format(time.RFC3339))
			}
		}
	}
	for _, ss := range m {
		tagv := string(ss.Metric[queryLabel])
		if q, ok := strings.CutPrefix(tagv, replicaTag+" "); ok {
			b.addReplicaHist(engines.Quantity(q), ss)
			continue
		}
		if tagv == replicaTag {
			name, full := b.replicaName(ss.Metric)
			b.fullName[name] = full
			tr := b.replicas[name]
			if tr == nil {
				tr = b.unknownSteps()
				b.replicas[name] = tr
			}
			for _, v := range ss.Values {
				if k := b.index(v.Timestamp); k >= 0 {
					tr[k] = nan0(tr[k]) + float64(v.Value)
				}
			}
			continue
		}
		class := string(ss.Metric[model.LabelName(b.classLabel)])
		if b.classesSeen[tagv] == nil {
			b.classesSeen[tagv] = map[string]bool{}
		}
		b.classesSeen[tagv][class] = true
		switch {
		case strings.HasPrefix(tagv, "outcome"):
			i, err := strconv.Atoi(strings.TrimPrefix(tagv, "outcome"))
			if err != nil || i < 0 || i >= len(b.res.Outcomes) {
				continue
			}
			oc := b.res.Outcomes[i]
			o := oc.Default
			if oc.Label != "" {
				o = oc.Classify(string(ss.Metric[model.LabelName(oc.Label)]))
			}
			for _, v := range ss.Values {
				k := b.index(v.Timestamp)
				if k < 0 || math.IsNaN(float64(v.Value)) {
					continue
				}
				b.outcomeSeen[k] = true
				c := b.cell(k, class)
				c.outcomes[o] += float64(v.Value)
				if oc.Minus != 0 {
					c.outcomes[oc.Minus] -= float64(v.Value)
				}
			}
		case engines.KindOf(engines.Quantity(tagv)) == engines.KindCounter:
			q := engines.Quantity(tagv)
			f := b.res.Metrics[q].Factor()
			for _, v := range ss.Values {
				if k := b.index(v.Timestamp); k >= 0 {
					b.cell(k, class).counters[q] += float64(v.Value) * f
				}
			}
		case engines.KindOf(engines.Quantity(tagv)) == engines.KindHistogram:
			q := engines.Quantity(tagv)
			le, ok := b.edge(q, ss.Metric)
			if !ok {
				continue
			}
			for _, v := range ss.Values {
				if k := b.index(v.Timestamp); k >= 0 {
					c := b.cell(k, class)
					if c.hist[q] == nil {
						c.hist[q] = map[float64]float64{}
					}
					c.hist[q][le] += float64(v.Value)
				}
			}
		}
	}
	return nil
}

// edge is a bucket series' le label of histogram q, in seconds; false
// when it does not parse or is not among the edges every series of the
// arm has (b.keep).
func (b *builder) edge(q engines.Quantity, m model.Metric) (float64, bool) {
	le, err := strconv.ParseFloat(string(m["le"]), 64)
	if err != nil {
		return 0, false
	}
	if keep := b.keep[q]; keep != nil && !keep[le] {
		return 0, false
	}
	if !math.IsInf(le, 1) {
		le *= b.res.Metrics[q].Factor()
	}
	return le, true
}

// addReplicaHist adds one replica's bucket series of latency q (its le
// label read and left out of the replica's name).
func (b *builder) addReplicaHist(q engines.Quantity, ss *model.SampleStream) {
	le, ok := b.edge(q, ss.Metric)
	if !ok {
		return
	}
	m := ss.Metric.Clone()
	delete(m, "le")
	name, _ := b.replicaName(m)
	if b.replicaHist[q] == nil {
		b.replicaHist[q] = map[string][]map[float64]float64{}
	}
	steps := b.replicaHist[q][name]
	if steps == nil {
		steps = make([]map[float64]float64, b.steps)
		b.replicaHist[q][name] = steps
	}
	for _, v := range ss.Values {
		if k := b.index(v.Timestamp); k >= 0 {
			if steps[k] == nil {
				steps[k] = map[float64]float64{}
			}
			steps[k][le] += float64(v.Value)
		}
	}
}

// replicaHistOf is replica name's histograms of latency q per step (nil
// when none was read; an empty histogram in a step without samples).
func (b *builder) replicaHistOf(q engines.Quantity, name string) []sources.Histogram {
	steps := b.replicaHist[q][name]
	if steps == nil {
		return nil
	}
	out := make([]sources.Histogram, len(steps))
	for k, m := range steps {
		out[k] = sources.HistogramOf(m)
	}
	return out
}

// addNative adds one range query's per-step increases of the native
// histogram of quantity q, one series per class. A histogram that does not
// decode (negative or non-finite counts, negative observations) is an error
// naming the series; float samples (a series that is not a histogram
// under the family's name) are left out with a note.
func (b *builder) addNative(m model.Matrix, q engines.Quantity, query string) error {
	f := b.res.Metrics[q].Factor()
	for _, ss := range m {
		if len(ss.Values) > 0 {
			b.note("%s: %d float samples where native histograms were expected: left out", b.res.Metrics[q].Name, len(ss.Values))
		}
		class := string(ss.Metric[model.LabelName(b.classLabel)])
		if b.classesSeen[string(q)] == nil {
			b.classesSeen[string(q)] = map[string]bool{}
		}
		b.classesSeen[string(q)][class] = true
		for _, hp := range ss.Histograms {
			k := b.index(hp.Timestamp)
			if k < 0 {
				continue
			}
			ns, err := decodeNative(hp.Histogram, f)
			if err != nil {
				return fmt.Errorf("query %s: series %s at %s: %v; fix the exporter or narrow the selector",
					shorten(query, 160), sanitize(ss.Metric.String(), 200), hp.Timestamp.Time().UTC().Format(time.RFC3339), err)
			}
			c := b.cell(k, class)
			if prev, ok := c.native[q]; ok { // one series per class is expected; join any more
				ns = joinNative(prev, ns)
			}
			c.native[q] = ns
		}
	}
	return nil
}

// joinNative adds two samples (buckets overlapping across them are joined
// by decodeNative's rule).
func joinNative(a, b nativeSample) nativeSample {
	h := &model.SampleHistogram{Count: model.FloatString(a.total + b.total)}
	for _, s := range []nativeSample{a, b} {
		for _, x := range s.buckets {
			h.Buckets = append(h.Buckets, &model.HistogramBucket{Lower: model.FloatString(x.lower), Upper: model.FloatString(x.upper), Count: model.FloatString(x.count)})
		}
	}
	out, err := decodeNative(h, 1)
	if err != nil { // cannot happen: both inputs decoded
		return a
	}
	return out
}

// nativeEdges chooses per native histogram one edge set for all the arm's
// steps and classes (unifyNative), so that merging steps loses no edge.
func (b *builder) nativeEdges() map[engines.Quantity][]float64 {
	out := map[engines.Quantity][]float64{}
	for _, q := range engines.Histograms() {
		var samples []nativeSample
		for _, c := range b.cells {
			if s, ok := c.native[q]; ok {
				samples = append(samples, s)
			}
		}
		if len(samples) == 0 {
			continue
		}
		edges, dropped := unifyNative(samples)
		out[q] = edges
		name := b.res.Metrics[q].Name
		if schema, ok := nativeSchema(samples); ok {
			b.note("%s: read from native histograms (exponential buckets, schema %d: each bucket's upper edge %.4g× its lower), %d bucket edges with counts exact at each",
				name, schema, math.Exp2(math.Exp2(-float64(schema))), len(edges))
		} else {
			b.note("%s: read from native histograms (custom bucket edges), %d bucket edges with counts exact at each", name, len(edges))
		}
		if dropped > 0 {
			b.note("%s: %d native bucket edges dropped: some steps have coarser buckets (a lower schema) whose counts at those edges are unknown", name, dropped)
		}
	}
	return out
}

func nan0(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func (b *builder) addGauges(m model.Matrix) {
	for _, ss := range m {
		tagv := string(ss.Metric[queryLabel])
		for _, v := range ss.Values {
			k := b.index(v.Timestamp)
			if k < 0 {
				continue
			}
			if b.gauges[k] == nil {
				b.gauges[k] = map[string]float64{}
			}
			if g, ok := strings.CutPrefix(tagv, inFlightTag); ok {
				b.addInFlight(ss.Metric, engines.Quantity(g), k, float64(v.Value))
				continue
			}
			if strings.HasPrefix(tagv, "replicas") { // several request counters: the most series
				b.gauges[k]["replicas"] = math.Max(b.gauges[k]["replicas"], float64(v.Value))
				continue
			}
			f := 1.0
			if c, ok := b.res.Metrics[engines.Quantity(tagv)]; ok {
				f = c.Factor()
			}
			b.gauges[k][tagv] = float64(v.Value) * f
		}
	}
}

// addInFlight records replica m's gauge g (requests running or waiting)
// at step k.
func (b *builder) addInFlight(m model.Metric, g engines.Quantity, k int, v float64) {
	name, _ := b.replicaName(m)
	byGauge := b.inFlight[name]
	if byGauge == nil {
		byGauge = map[engines.Quantity][]float64{}
		b.inFlight[name] = byGauge
	}
	s := byGauge[g]
	if s == nil {
		s = b.unknownSteps()
		byGauge[g] = s
	}
	s[k] = v
}

// unknownSteps is a per-step series with every step unknown (NaN).
func (b *builder) unknownSteps() []float64 {
	s := make([]float64, b.steps)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// inFlightOf is replica name's requests running + waiting per step, NaN
// where either gauge has no sample; nil when it has no series of both.
func (b *builder) inFlightOf(name string) []float64 {
	run, wait := b.inFlight[name][engines.Running], b.inFlight[name][engines.Waiting]
	if run == nil || wait == nil {
		return nil
	}
	out := make([]float64, b.steps)
	for k := range out {
		out[k] = run[k] + wait[k]
	}
	return out
}

// errNoRequests means no request counter returned data in the window.
var errNoRequests = errors.New("the request counters returned no data in the window (increase() needs two samples per step: is the step at least twice the scrape interval?)")

func (b *builder) finish(agg *sources.Aggregate) error {
	anySeen := false
	for _, s := range b.outcomeSeen {
		anySeen = anySeen || s
	}
	if !anySeen {
		return errNoRequests
	}
	// classes come from the request counters
	classSet := map[string]bool{}
	for i := range b.res.Outcomes {
		for c := range b.classesSeen["outcome"+strconv.Itoa(i)] {
			classSet[c] = true
		}
	}
	classes := make([]string, 0, len(classSet))
	for c := range classSet {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	classed := len(classes) > 1 || (len(classes) == 1 && classes[0] != "")
	splitOK := func(tagv string) bool {
		seen := b.classesSeen[tagv]
		if !classed {
			return true
		}
		for c := range seen {
			if c != "" {
				return true
			}
		}
		return false
	}
	nativeEdges := b.nativeEdges()
	gaps := 0
	nan := math.NaN()
	for k := 0; k < b.steps; k++ {
		end := b.first.Add(time.Duration(k) * b.step)
		start := end.Add(-b.step)
		g := b.gauges[k]
		gauge := func(tagv string) float64 {
			if v, ok := g[tagv]; ok {
				return v
			}
			return nan
		}
		if !b.outcomeSeen[k] {
			gaps++
		}
		for _, class := range classes {
			bk := sources.AggBucket{Start: float64(start.UnixMilli()) / 1000, End: float64(end.UnixMilli()) / 1000, Class: class,
				Completed: nan, Failed: nan, Canceled: nan, Rejected: nan, Good: nan, Retried: nan, ShortOutputs: nan,
				PromptTokens: nan, OutputTokens: nan, PrefixHits: nan, PrefixQueries: nan,
				Replicas: gauge("replicas"), Running: gauge(string(engines.Running)), Waiting: gauge(string(engines.Waiting)),
				KVUsage: gauge(string(engines.KVUsage)), GPUUtil: gauge(string(engines.GPUUtil)),
				GPUPowerW: gauge(string(engines.GPUPowerW)), GPUMemBytes: gauge(string(engines.GPUMemBytes)),
				CostPerHour: gauge("cost")}
			c := b.cells[cellKey{k, class}]
			if c == nil {
				c = &cell{}
			}
			if b.outcomeSeen[k] {
				for _, o := range engines.Outcomes() {
					if !b.res.Known(o) {
						continue
					}
					if f := engines.OutcomeField(&bk, o); f != nil {
						*f = c.outcomes[o]
					}
				}
				for _, q := range engines.Counters() {
					if _, ok := b.res.Metrics[q]; !ok {
						continue
					}
					if _, seen := b.classesSeen[string(q)]; !seen {
						continue
					}
					if !splitOK(string(q)) {
						b.note("%s has no %s label: not split by class (unknown per class)", b.res.Metrics[q].Name, b.classLabel)
						continue
					}
					engines.SetCounter(&bk, q, c.counters[q])
				}
				for _, q := range engines.Histograms() {
					if _, ok := b.res.Metrics[q]; !ok {
						continue
					}
					if _, seen := b.classesSeen[string(q)]; seen && !splitOK(string(q)) {
						b.note("%s has no %s label: not split by class (unknown per class)", b.res.Metrics[q].Name, b.classLabel)
						continue
					}
					if ns, ok := c.native[q]; ok {
						engines.SetHistogram(&bk, q, ns.cumulative(nativeEdges[q]))
						continue
					}
					engines.SetHistogram(&bk, q, sources.HistogramOf(c.hist[q]))
				}
			}
			agg.Buckets = append(agg.Buckets, bk)
		}
	}
	if gaps > 0 {
		b.note("%d of %d steps have no request-counter data (counts are unknown there)", gaps, b.steps)
	}
	names := make([]string, 0, len(b.replicas))
	for n := range b.replicas {
		names = append(names, n)
	}
	sort.Strings(names)
	// each replica's histograms bound its good requests for the
	// replica widening; past sources.MaxReplicas replicas (as records past
	// that many names) they are left out
	hists := len(names) <= sources.MaxReplicas
	for _, n := range names {
		tr := sources.ReplicaTrack{Name: n, Series: b.fullName[n], Finished: b.replicas[n], InFlight: b.inFlightOf(n)}
		if hists {
			tr.TTFTHist, tr.TPOTHist = b.replicaHistOf(engines.TTFT, n), b.replicaHistOf(engines.TPOT, n)
		}
		agg.Replicas = append(agg.Replicas, tr)
	}
	return nil
}
