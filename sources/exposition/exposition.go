// Package exposition reads Prometheus text-format and OpenMetrics scrape
// files — what `curl http://server/metrics` prints — into per-arm
// metrics-based datasets (sources.Aggregate), with the engine name mappings
// shared with the Prometheus source (package engines). Parsing uses
// github.com/prometheus/common/expfmt.
//
// A count in a scrape is cumulative since the server started, so one run is
// measured by two scrapes of the same servers, one before and one after:
// the dataset holds their increases. Accepted shapes:
//
//   - a pair of files (ReadPair): the before scrape and the after scrape;
//   - one file holding both scrapes (Read), separated by a line "# EOF"
//     (concatenated OpenMetrics scrapes have one already; for text-format
//     scrapes add it: `curl -s $URL >> f; echo '# EOF' >> f; … curl -s $URL >> f`),
//     or as two Markdown code fences;
//   - one file whose samples all carry timestamps, several per series (an
//     OpenMetrics backfill file such as the simulator's metrics.om): each
//     scrape round is a snapshot and consecutive snapshots give one bucket;
//   - a single scrape: counts since each server started, read as increases
//     from zero, with a warning on the dataset.
//
// Scrapes inside Markdown code fences are accepted: only fenced blocks with
// "# TYPE" or "# HELP" lines are read. Between two snapshots a counter that
// went down, or whose _created time changed, was reset (a restart): its
// increase is its new value. A series that appears only in the later
// snapshot (a new replica, or a label value seen for the first time) counts
// from zero; one that disappears contributes nothing after its last scrape.
//
// Which arm a file belongs to is given by the caller. When a file's series
// carry a label deployment (or arm) whose values include "baseline" or
// "canary", only the series of the requested arm are read.
package exposition

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/engines"
)

// Format names used in sources.Input.Format.
const (
	FormatText        = "prometheus-text"
	FormatOpenMetrics = "openmetrics"
)

// maxBytes bounds one scrape file (256 MiB): a larger file is refused
// rather than read into memory.
const maxBytes = 256 << 20

var sampleLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})?[ \t]+[-+]?([0-9.]+([eE][-+]?[0-9]+)?|Inf|NaN|inf|nan)([ \t]+[0-9.eE+-]+)?[ \t]*$`)

// Detect reports whether head (the first bytes of a file; 8 KiB or more
// is best, since a Markdown document may put prose before the scrape)
// looks like a Prometheus text or OpenMetrics scrape: a line
// "# TYPE name type" with a known type, or a first non-comment line that is
// a sample line (name, optional labels, a number).
func Detect(head []byte) bool {
	lines := strings.Split(strings.ReplaceAll(string(head), "\r\n", "\n"), "\n")
	firstContent := true
	for i, l := range lines {
		if i == len(lines)-1 && len(lines) > 1 {
			break // possibly cut mid-line
		}
		t := strings.TrimSpace(l)
		if f := strings.Fields(t); len(f) >= 4 && f[0] == "#" && f[1] == "TYPE" && sampleLine.MatchString(f[2]+" 0") {
			switch strings.ToLower(f[3]) {
			case "counter", "gauge", "histogram", "summary", "untyped", "unknown", "info", "stateset", "gaugehistogram":
				return true
			}
		}
		if t == "" || strings.HasPrefix(t, "#") || isFence(t) {
			continue
		}
		if firstContent && sampleLine.MatchString(t) {
			return true
		}
		firstContent = false
	}
	return false
}

// Options refine a read.
type Options struct {
	// Selector, when set, picks the arm's series (PromQL matcher
	// semantics); it replaces the deployment/arm label rule.
	Selector engines.Selector
	// Engine restricts profile detection: "" or "auto", or one of
	// engines.EngineNames().
	Engine string
}

// Read reads one file holding one or more scrapes (see the package doc)
// for arm.
func Read(ctx context.Context, path string, r io.Reader, arm sources.Arm) (sources.Dataset, error) {
	return ReadWith(ctx, []File{{Path: path, R: r}}, arm, Options{})
}

// ReadPair reads a before scrape and an after scrape of the same servers
// for arm. Each file may itself hold several scrapes; all snapshots are
// used in order, before's first.
func ReadPair(ctx context.Context, beforePath string, before io.Reader, afterPath string, after io.Reader, arm sources.Arm) (sources.Dataset, error) {
	return ReadWith(ctx, []File{{Path: beforePath, R: before}, {Path: afterPath, R: after}}, arm, Options{})
}

// File is one input file.
type File struct {
	Path string
	R    io.Reader
}

// ReadWith reads files in order as consecutive snapshots for arm.
func ReadWith(ctx context.Context, files []File, arm sources.Arm, opt Options) (sources.Dataset, error) {
	ds := sources.Dataset{Arm: arm, Location: "server"}
	var snaps []snapshot
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return ds, err
		}
		data, err := io.ReadAll(io.LimitReader(f.R, maxBytes+1))
		if err != nil {
			return ds, fmt.Errorf("%s: %w", f.Path, err)
		}
		if len(data) > maxBytes {
			return ds, fmt.Errorf("%s: larger than %d MiB: not a scrape file", f.Path, maxBytes>>20)
		}
		sum := sha256.Sum256(data)
		segs := splitSegments(data)
		if len(segs) == 0 {
			return ds, fmt.Errorf("%s: no Prometheus samples found (expected text exposition or OpenMetrics, possibly inside Markdown fences)", f.Path)
		}
		format := FormatText
		if bytes.Contains(data, []byte("# EOF")) || bytes.Contains(data, []byte("# UNIT ")) {
			format = FormatOpenMetrics
		}
		n, nsnap := 0, 0
		for _, seg := range segs {
			if err := ctx.Err(); err != nil {
				return ds, err
			}
			lines, err := lexSegment(f.Path, seg)
			if err != nil {
				return ds, err
			}
			ss, err := parseSegment(f.Path, lines)
			if err != nil {
				return ds, err
			}
			for _, s := range ss {
				n += len(s.samples)
			}
			nsnap += len(ss)
			snaps = append(snaps, ss...)
		}
		ds.Inputs = append(ds.Inputs, sources.Input{Path: f.Path, SHA256: hex.EncodeToString(sum[:]),
			Format: format, Arm: arm, Count: n,
			Note: fmt.Sprintf("%d scrape(s), %d samples", nsnap, n)})
	}
	// snapshots must be in time order where times are known
	for i := 1; i < len(snaps); i++ {
		if snaps[i].time < snaps[i-1].time {
			return ds, fmt.Errorf("%s:%d: the scrape starting here (%s) is older than the one before it (%s, %s:%d): give the before scrape first",
				snaps[i].path, snaps[i].line, fmtTime(snaps[i].time), fmtTime(snaps[i-1].time), snaps[i-1].path, snaps[i-1].line)
		}
	}
	// arm selection
	filter, filterNote, err := armFilter(snaps, arm, opt.Selector)
	if err != nil {
		return ds, fmt.Errorf("%s (arm %s): %w", filePaths(files), arm, err)
	}
	// node prices carry no arm label: they are kept and joined on node
	price := engines.DefaultOpenCost().GPUPrice
	for i := range snaps {
		deleted := false
		for k, s := range snaps[i].samples {
			if !filter(s.labels) && s.name != price {
				delete(snaps[i].samples, k)
				deleted = true
			}
		}
		if deleted {
			snaps[i].index()
		}
	}
	if filterNote != "" {
		for i := range ds.Inputs {
			ds.Inputs[i].Note += "; " + filterNote
		}
	}
	agg, warnings, err := aggregate(snaps, opt.Engine)
	if err != nil {
		return ds, fmt.Errorf("%s (arm %s): %w", filePaths(files), arm, err)
	}
	ds.Agg = agg
	ds.Warnings = append(ds.Warnings, warnings...)
	timed := true
	for _, s := range snaps {
		timed = timed && !math.IsNaN(s.time)
	}
	switch {
	case timed && len(snaps) > 1:
		ds.Clock = sources.ClockEpoch
		ds.Duration = snaps[len(snaps)-1].time - snaps[0].time
	case timed:
		ds.Clock = sources.ClockEpoch
	default:
		ds.Clock = sources.ClockNone
		ds.Warnings = append(ds.Warnings, "scrapes carry no timestamps: the run's duration is unknown, so per-second rates need it from elsewhere")
	}
	return ds, nil
}

// filePaths lists the files' paths, comma-separated, for an error about
// all of them.
func filePaths(files []File) string {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	return strings.Join(paths, ", ")
}

func fmtTime(t float64) string {
	if math.IsNaN(t) {
		return "no time"
	}
	return fmt.Sprintf("%.3f", t)
}

// armFilter returns the predicate that keeps the arm's series.
func armFilter(snaps []snapshot, arm sources.Arm, sel engines.Selector) (func(map[string]string) bool, string, error) {
	if len(sel) > 0 {
		return sel.Matches, "series selected by " + sel.String(), nil
	}
	for _, lbl := range engines.ArmLabels() {
		values := map[string]bool{}
		for _, s := range snaps {
			for _, smp := range s.samples {
				if v, ok := smp.labels[lbl]; ok {
					values[v] = true
				}
			}
		}
		if values[string(sources.Baseline)] || values[string(sources.Canary)] {
			if !values[string(arm)] {
				return nil, "", fmt.Errorf("series carry %s=\"baseline\"/\"canary\" labels but none with %s=%q", lbl, lbl, arm)
			}
			return func(l map[string]string) bool { return l[lbl] == string(arm) },
				fmt.Sprintf("series with %s=%q", lbl, arm), nil
		}
	}
	return func(map[string]string) bool { return true }, "", nil
}

// errNoCounters is returned when no request counter of any engine is found.
var errNoCounters = errors.New("no request counters found")

// aggregate turns consecutive snapshots into buckets.
func aggregate(snaps []snapshot, engine string) (*sources.Aggregate, []string, error) {
	nameSet := map[string]bool{}
	for _, s := range snaps {
		for _, smp := range s.samples {
			nameSet[smp.name] = true
		}
	}
	names := make([]string, 0, len(nameSet))
	for n := range nameSet {
		names = append(names, n)
	}
	sort.Strings(names)
	prof, err := engines.Detect(names, engine)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errNoCounters, err)
	}
	res, err := engines.Resolve(prof, func(n string) bool { return nameSet[n] })
	if err != nil {
		return nil, nil, err
	}
	agg := &sources.Aggregate{Profile: prof.Name}
	agg.Notes = append(agg.Notes, res.Notes...)
	var warnings []string
	note := newNoter(&agg.Notes)

	// pairs of snapshots: (prev, cur); a single snapshot is paired with an
	// empty one (increases from zero).
	// Counters are compared with each series' last value seen in any
	// earlier snapshot (last), so a scrape that missed a series does not
	// make its whole count look new; gauges use the previous snapshot.
	type pair struct{ prev, cur *snapshot }
	var pairs []pair
	var last *snapshot
	if len(snaps) == 1 {
		pairs = []pair{{nil, &snaps[0]}}
		warnings = append(warnings, "only one scrape: counts are cumulative since each server started (read as increases from zero); give a before and an after scrape to measure one run")
	} else {
		last = &snapshot{samples: make(map[string]sample, len(snaps[0].samples))}
		for k, v := range snaps[0].samples {
			last.samples[k] = v
		}
		for i := 1; i < len(snaps); i++ {
			pairs = append(pairs, pair{&snaps[i-1], &snaps[i]})
		}
	}
	outcomeNames := map[string]bool{}
	for _, oc := range res.Outcomes {
		outcomeNames[oc.Name] = true
	}
	classes := classValues(snaps, outcomeNames)
	classed := classedNames(snaps)
	tracks := newReplicaTracks(len(pairs))
	var widths []float64
	for pi, p := range pairs {
		start, end := math.NaN(), p.cur.time
		if p.prev != nil {
			start = p.prev.time
			if !math.IsNaN(end - start) {
				widths = append(widths, end-start)
			}
		}
		if p.prev != nil {
			for _, oc := range res.Outcomes {
				gone := 0
				for _, k := range p.prev.byName[oc.Name] {
					if _, ok := p.cur.samples[k]; !ok {
						gone++
					}
				}
				if gone > 0 {
					note("%s: series present in one scrape are missing from the next (a replica went away, or a scrape failed): their counts stop there", oc.Name)
				}
			}
		}
		for _, class := range classes {
			b := newBucket(start, end, class)
			inClass := func(l map[string]string) bool { return class == "" || l[engines.ClassLabel] == class }
			// outcomes
			for _, o := range engines.Outcomes() {
				if res.Known(o) {
					setOutcome(&b, o, 0)
				}
			}
			for _, oc := range res.Outcomes {
				for _, inc := range increases(last, p.cur, oc.Name, inClass, note) {
					o := oc.Default
					if oc.Label != "" {
						o = oc.Classify(inc.labels[oc.Label])
					}
					addOutcome(&b, o, inc.v)
					if oc.Minus != 0 {
						addOutcome(&b, oc.Minus, -inc.v)
					}
				}
			}
			// counters
			for _, q := range engines.Counters() {
				c, ok := res.Metrics[q]
				if !ok {
					continue
				}
				if class != "" && !classed[c.Name] {
					note("%s has no %s label: not split by class (unknown per class)", c.Name, engines.ClassLabel)
					continue
				}
				total := 0.0
				for _, inc := range increases(last, p.cur, c.Name, inClass, note) {
					if matchFixed(inc.labels, c.Match) {
						total += inc.v * c.Factor()
					}
				}
				engines.SetCounter(&b, q, total)
			}
			// histograms
			for _, q := range engines.Histograms() {
				c, ok := res.Metrics[q]
				if !ok {
					continue
				}
				if class != "" && !classed[c.Name+"_bucket"] {
					note("%s has no %s label: not split by class (unknown per class)", c.Name, engines.ClassLabel)
					continue
				}
				h, dropped := histogram(last, p.cur, c, inClass, note)
				if dropped {
					note("%s: replicas export different bucket edges; only the edges all share are kept", c.Name)
				}
				engines.SetHistogram(&b, q, h)
			}
			// gauges and replicas: mean of the two ends
			for _, q := range engines.Gauges() {
				c, ok := res.Metrics[q]
				if !ok {
					continue
				}
				engines.SetGauge(&b, q, gaugeMean(p.prev, p.cur, c))
			}
			b.Replicas = replicaMean(p.prev, p.cur, res.Outcomes)
			b.CostPerHour = costMean(p.prev, p.cur)
			agg.Buckets = append(agg.Buckets, b)
		}
		tracks.add(pi, last, p.cur, res, note)
		if last != nil {
			for k, v := range p.cur.samples {
				last.samples[k] = v
			}
		}
	}
	if len(widths) > 0 {
		sort.Float64s(widths)
		agg.Step = widths[len(widths)/2]
	}
	agg.Replicas = tracks.list()
	if len(snaps) > 1 && len(snaps) <= 2 {
		note("gauges are the mean of the before and after scrapes")
	}
	return agg, warnings, nil
}

func newBucket(start, end float64, class string) sources.AggBucket {
	nan := math.NaN()
	return sources.AggBucket{Start: start, End: end, Class: class,
		Completed: nan, Failed: nan, Canceled: nan, Rejected: nan, Good: nan, Retried: nan, ShortOutputs: nan,
		PromptTokens: nan, OutputTokens: nan, PrefixHits: nan, PrefixQueries: nan,
		Replicas: nan, Running: nan, Waiting: nan, KVUsage: nan, GPUUtil: nan, GPUPowerW: nan,
		GPUMemBytes: nan, CostPerHour: nan}
}

func setOutcome(b *sources.AggBucket, o engines.Outcome, v float64) {
	if p := engines.OutcomeField(b, o); p != nil {
		*p = v
	}
}

func addOutcome(b *sources.AggBucket, o engines.Outcome, v float64) {
	if p := engines.OutcomeField(b, o); p != nil {
		if math.IsNaN(*p) {
			*p = 0
		}
		*p += v
	}
}

// newNoter returns a function that appends a formatted note once.
func newNoter(notes *[]string) func(string, ...any) {
	seen := map[string]bool{}
	for _, n := range *notes {
		seen[n] = true
	}
	return func(format string, a ...any) {
		s := fmt.Sprintf(format, a...)
		if !seen[s] {
			seen[s] = true
			*notes = append(*notes, s)
		}
	}
}

// classValues lists the class label values present on the request
// counters ("" alone when they carry none: the arm is not split by class).
func classValues(snaps []snapshot, outcomeNames map[string]bool) []string {
	set := map[string]bool{}
	for _, s := range snaps {
		for _, smp := range s.samples {
			if v, ok := smp.labels[engines.ClassLabel]; ok && outcomeNames[smp.name] {
				set[v] = true
			}
		}
	}
	if len(set) == 0 {
		return []string{""}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// classedNames lists the sample names that carry the class label.
func classedNames(snaps []snapshot) map[string]bool {
	out := map[string]bool{}
	for _, s := range snaps {
		for _, smp := range s.samples {
			if _, ok := smp.labels[engines.ClassLabel]; ok {
				out[smp.name] = true
			}
		}
	}
	return out
}

func matchFixed(labels, fixed map[string]string) bool {
	for k, v := range fixed {
		if labels[k] != v {
			return false
		}
	}
	return true
}

type increase struct {
	labels map[string]string
	le     float64
	v      float64
}

// createdKey returns the key of the _created sample that dates a counter or
// histogram series.
func createdKey(s sample) string {
	base := s.name
	for _, suf := range []string{"_total", "_bucket", "_count", "_sum"} {
		if strings.HasSuffix(base, suf) {
			base = strings.TrimSuffix(base, suf)
			break
		}
	}
	return key(base+"_created", s.labels, math.NaN())
}

// increases returns, for each series of sample name in cur that passes
// keep, its increase since prev (reset-aware).
func increases(prev, cur *snapshot, name string, keep func(map[string]string) bool, note func(string, ...any)) []increase {
	var out []increase
	for _, k := range cur.byName[name] {
		s := cur.samples[k]
		if !keep(s.labels) {
			continue
		}
		v := s.value
		if prev != nil {
			if p, ok := prev.samples[k]; ok {
				ck := createdKey(s)
				pc, okp := prev.samples[ck]
				cc, okc := cur.samples[ck]
				restarted := okp && okc && pc.value != cc.value
				if v >= p.value && !restarted {
					v -= p.value
				} else {
					note("%s: counter reset between scrapes (server restart): the increase counts from zero", name)
				}
			}
		}
		out = append(out, increase{labels: s.labels, le: s.le, v: v})
	}
	return out
}

// histogram sums one histogram family's bucket increases over the series
// that pass keep, keeping only the edges every series has.
func histogram(prev, cur *snapshot, c engines.Candidate, keep func(map[string]string) bool, note func(string, ...any)) (sources.Histogram, bool) {
	incs := increases(prev, cur, c.Name+"_bucket", func(l map[string]string) bool { return keep(l) && matchFixed(l, c.Match) }, note)
	type series struct {
		edges  []float64
		counts map[float64]float64
	}
	bySeries := map[string]*series{}
	var order []string
	for _, inc := range incs {
		k := key("", inc.labels, math.NaN())
		s := bySeries[k]
		if s == nil {
			s = &series{counts: map[float64]float64{}}
			bySeries[k] = s
			order = append(order, k)
		}
		e := scaledEdge(inc.le, c)
		s.edges = append(s.edges, e)
		s.counts[e] += inc.v
	}
	if len(order) == 0 {
		return sources.Histogram{}, false
	}
	sort.Strings(order)
	// common edges
	common := map[float64]int{}
	for _, k := range order {
		for e := range bySeries[k].counts {
			common[e]++
		}
	}
	var edges []float64
	dropped := false
	for e, n := range common {
		if n == len(order) {
			edges = append(edges, e)
		} else {
			dropped = true
		}
	}
	sort.Float64s(edges)
	h := sources.Histogram{Edges: edges, Counts: make([]float64, len(edges))}
	for _, k := range order {
		s := bySeries[k]
		for i, e := range edges {
			h.Counts[i] += s.counts[e]
		}
	}
	if len(edges) == 0 || !math.IsInf(edges[len(edges)-1], 1) {
		note("%s: no +Inf bucket common to all series: histogram dropped", c.Name)
		return sources.Histogram{}, dropped
	}
	return h, dropped
}

// scaledEdge is a bucket edge of c's histogram in seconds (its unit's
// factor applied; +Inf left).
func scaledEdge(le float64, c engines.Candidate) float64 {
	if math.IsInf(le, 1) {
		return le
	}
	return le * c.Factor()
}

// gaugeAt combines a gauge's series in one snapshot (NaN when absent).
func gaugeAt(s *snapshot, c engines.Candidate) float64 {
	if s == nil {
		return math.NaN()
	}
	sum, n := 0.0, 0
	for _, smp := range s.named(c.Name) {
		if matchFixed(smp.labels, c.Match) && !math.IsNaN(smp.value) {
			sum += smp.value * c.Factor()
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	if c.Combine == engines.CombineAvg {
		return sum / float64(n)
	}
	return sum
}

func meanKnown(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return (a + b) / 2
}

func gaugeMean(prev, cur *snapshot, c engines.Candidate) float64 {
	return meanKnown(gaugeAt(prev, c), gaugeAt(cur, c))
}

// replicasAt counts the distinct label sets of the outcome counters once
// the outcome and class labels are removed: one per server (or engine).
func replicasAt(s *snapshot, ocs []engines.OutcomeCounter) float64 {
	if s == nil {
		return math.NaN()
	}
	set := map[string]bool{}
	for _, oc := range ocs {
		for _, smp := range s.named(oc.Name) {
			set[replicaKey(smp.labels, oc.Label, engines.ClassLabel)] = true
		}
	}
	return float64(len(set))
}

func replicaMean(prev, cur *snapshot, ocs []engines.OutcomeCounter) float64 {
	return meanKnown(replicasAt(prev, ocs), replicasAt(cur, ocs))
}

// costAt is Σ over GPU allocations of allocated GPUs × the hourly price of
// one GPU on the allocation's node (OpenCost), NaN when absent.
func costAt(s *snapshot) float64 {
	if s == nil {
		return math.NaN()
	}
	oc := engines.DefaultOpenCost()
	price := map[string]float64{}
	for _, smp := range s.named(oc.GPUPrice) {
		price[smp.labels[oc.Join]] = smp.value
	}
	total, n := 0.0, 0
	for _, smp := range s.named(oc.Allocation) {
		p, ok := price[smp.labels[oc.Join]]
		if !ok {
			continue
		}
		total += smp.value * p
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return total
}

func costMean(prev, cur *snapshot) float64 { return meanKnown(costAt(prev), costAt(cur)) }

// replicaTracks collects each replica's activity per pair of snapshots
// (one time slice), as the Prometheus source reads it: the first request
// counter's increase with its outcome and class labels summed away, and
// the replica's own TTFT and TPOT histograms. A replica is the label set
// that is left.
type replicaTracks struct {
	slices   int
	finished map[string][]float64
	hist     map[engines.Quantity]map[string][]sources.Histogram
}

func newReplicaTracks(slices int) *replicaTracks {
	return &replicaTracks{slices: slices, finished: map[string][]float64{},
		hist: map[engines.Quantity]map[string][]sources.Histogram{engines.TTFT: {}, engines.TPOT: {}}}
}

// replicaKey names the replica of a series: its labels less those given.
func replicaKey(labels map[string]string, drop ...string) string {
	l := make(map[string]string, len(labels))
	for k, v := range labels {
		if !slices.Contains(drop, k) {
			l[k] = v
		}
	}
	// {k="v",…}, as the Prometheus source names a replica
	k := key("", l, math.NaN())
	if strings.HasSuffix(k, ",}") {
		k = k[:len(k)-2] + "}"
	}
	return k
}

// add reads slice k from the snapshots prev (each series' last value
// seen, nil for none) and cur.
func (t *replicaTracks) add(k int, prev, cur *snapshot, res engines.Resolved, note func(string, ...any)) {
	if len(res.Outcomes) == 0 {
		return
	}
	all := func(map[string]string) bool { return true }
	oc := res.Outcomes[0]
	for _, inc := range increases(prev, cur, oc.Name, all, note) {
		name := replicaKey(inc.labels, oc.Label, engines.ClassLabel)
		f := t.finished[name]
		if f == nil {
			f = make([]float64, t.slices)
			for i := range f {
				f[i] = math.NaN()
			}
			t.finished[name] = f
		}
		if math.IsNaN(f[k]) {
			f[k] = 0
		}
		f[k] += inc.v
	}
	for q, byName := range t.hist {
		c, ok := res.Metrics[q]
		if !ok {
			continue
		}
		counts := map[string]map[float64]float64{}
		for _, inc := range increases(prev, cur, c.Name+"_bucket", func(l map[string]string) bool { return matchFixed(l, c.Match) }, note) {
			name := replicaKey(inc.labels, engines.ClassLabel)
			if counts[name] == nil {
				counts[name] = map[float64]float64{}
			}
			counts[name][scaledEdge(inc.le, c)] += inc.v
		}
		for name, m := range counts {
			hs := byName[name]
			if hs == nil {
				hs = make([]sources.Histogram, t.slices)
				byName[name] = hs
			}
			hs[k] = sources.HistogramOf(m)
		}
	}
}

// list returns the tracks in name order; nil when no replica was read.
// A replica's histograms are nil when it exported none of a quantity, and
// for every replica past sources.MaxReplicas of them (as the Prometheus
// source leaves them out).
func (t *replicaTracks) list() []sources.ReplicaTrack {
	names := make([]string, 0, len(t.finished))
	for n := range t.finished {
		names = append(names, n)
	}
	sort.Strings(names)
	hists := len(names) <= sources.MaxReplicas
	var out []sources.ReplicaTrack
	for _, n := range names {
		tr := sources.ReplicaTrack{Name: n, Series: n, Finished: t.finished[n]}
		if hists {
			tr.TTFTHist, tr.TPOTHist = t.hist[engines.TTFT][n], t.hist[engines.TPOT][n]
		}
		out = append(out, tr)
	}
	return out
}
