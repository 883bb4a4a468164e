package clickhouse

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/aggcell"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// Query says what to read for one arm.
type Query struct {
	Arm sources.Arm
	// Where is the operator's SQL condition selecting the arm's rows
	// (checked with CheckWhere, wrapped in parentheses).
	Where string
	// Start and End bound the window: rows with Start ≤ ts < End.
	Start, End time.Time
	// Plan is the policy's classes, SLOs, strata and bucket width.
	Plan *Plan
	// Exclude leaves replicas' own warm-ups out of the counts (the
	// replicas still count as serving there); nil: every row.
	Exclude []Exclusion
	// AllowEmpty makes a window without rows no counts instead of an
	// error in ReadCounts (a gap in a long history read a piece at a
	// time); Read refuses such a window whatever it says.
	AllowEmpty bool
}

// Exclusion is one replica's warm-up to leave out: its rows in slices
// FromSlice up to (not including) UntilSlice, slice numbers floor(ts/step).
type Exclusion struct {
	Replica               string
	FromSlice, UntilSlice int64
}

// maxSlices bounds the slices an arm may span, as the request path does:
// beyond it, and beyond four slices per request, the span is refused.
const maxSlices = 1 << 20

// count is an integer the server may write quoted (64-bit integers in
// JSON).
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	b = []byte(strings.Trim(string(b), `"`))
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return fmt.Errorf("not an integer: %.40q", b)
		}
		v = int64(f)
	}
	*c = count(v)
	return nil
}

// row is one group of the aggregation query (see buildQuery).
type row struct {
	S, M, PB, PC, CB                                      count
	Label, Rep                                            string
	N, Completed, Failed, Canceled, Rejected, Good        count
	Retried, Short, OutputUnknown, PromptUnknown          count
	AttemptKnown                                          count
	PromptTokens, OutputTokens, Hits, Queries, CacheKnown count
	GoodTokens, Admitted, Judged, JudgedGood              count
	Started                                               count // requests in flight that arrived in the slice (rowReplica)
	OutputMax                                             count // the most output tokens of one completion (0: none)
	UnvTTFT, UnvTPOT, UnvE2E, UnvMaxITL, UnvQuality       count
	UnvClass                                              count
	QualityChecked, QualityFailed                         count
	BadStatus, BadTTFT, BadLatency, BadE2E, BadCount      count
	BadCanceledBy                                         count
	UG, Named, OutputSq, PromptSq                         count // rowUsers: the group, its records naming a user, Σ output tokens², Σ prompt tokens²
	// SumTTFT, SumTPOT and SumE2E sum the histograms' latencies, each
	// rounded to the nanosecond (sources.LatencyNanos)
	SumTTFT, SumTPOT, SumE2E count
	// TTFT, TPOT and E2E histograms: bins ascending and their counts
	Hist [3]binCounts
	// TFirst and TLast are the group's first and last arrival, unix
	// seconds
	TFirst, TLast float64
}

// seconds is a time the server may write quoted.
type seconds float64

func (t *seconds) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseFloat(strings.Trim(string(b), `"`), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("not a time: %.40q", b)
	}
	*t = seconds(v)
	return nil
}

// binCounts is sumMap's answer: [[bin, …], [count, …]].
type binCounts struct {
	Bins   []int32
	Counts []float64
}

func (h *binCounts) UnmarshalJSON(b []byte) error {
	var pair [2]json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if err := json.Unmarshal(pair[0], &h.Bins); err != nil {
		return err
	}
	if err := json.Unmarshal(pair[1], &h.Counts); err != nil {
		return err
	}
	if len(h.Bins) != len(h.Counts) {
		return fmt.Errorf("%d bins, %d counts", len(h.Bins), len(h.Counts))
	}
	return nil
}

func (r *row) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	ints := map[string]*count{"s": &r.S, "m": &r.M, "pb": &r.PB, "pc": &r.PC, "cb": &r.CB,
		"n": &r.N, "completed": &r.Completed, "failed": &r.Failed, "canceled": &r.Canceled, "rejected": &r.Rejected,
		"good": &r.Good, "retried": &r.Retried, "short": &r.Short, "prompt_tokens": &r.PromptTokens,
		"output_tokens": &r.OutputTokens, "attempt_known": &r.AttemptKnown, "output_unknown": &r.OutputUnknown, "output_max": &r.OutputMax, "prompt_unknown": &r.PromptUnknown, "good_tokens": &r.GoodTokens, "hits": &r.Hits, "queries": &r.Queries, "cache_known": &r.CacheKnown,
		"admitted": &r.Admitted, "judged": &r.Judged, "judged_good": &r.JudgedGood, "started": &r.Started, "unv_ttft": &r.UnvTTFT, "unv_tpot": &r.UnvTPOT, "unv_e2e": &r.UnvE2E,
		"unv_max_itl": &r.UnvMaxITL, "unv_quality": &r.UnvQuality, "unv_class": &r.UnvClass, "quality_checked": &r.QualityChecked, "quality_failed": &r.QualityFailed, "bad_status": &r.BadStatus, "bad_ttft": &r.BadTTFT,
		"bad_latency": &r.BadLatency, "bad_e2e": &r.BadE2E, "bad_count": &r.BadCount, "bad_canceled_by": &r.BadCanceledBy,
		"sum_ttft": &r.SumTTFT, "sum_tpot": &r.SumTPOT, "sum_e2e": &r.SumE2E,
		"ug": &r.UG, "named": &r.Named, "output_sq": &r.OutputSq, "prompt_sq": &r.PromptSq}
	for k, p := range ints {
		v, ok := m[k]
		if !ok {
			return fmt.Errorf("answer row lacks column %s", k)
		}
		if err := json.Unmarshal(v, p); err != nil {
			return fmt.Errorf("column %s: %v", k, err)
		}
	}
	for k, p := range map[string]*binCounts{"h_ttft": &r.Hist[0], "h_tpot": &r.Hist[1], "h_e2e": &r.Hist[2]} {
		v, ok := m[k]
		if !ok {
			return fmt.Errorf("answer row lacks column %s", k)
		}
		if err := json.Unmarshal(v, p); err != nil {
			return fmt.Errorf("column %s: %v", k, err)
		}
	}
	for k, p := range map[string]*float64{"t_first": &r.TFirst, "t_last": &r.TLast} {
		v, ok := m[k]
		if !ok {
			return fmt.Errorf("answer row lacks column %s", k)
		}
		if err := json.Unmarshal(v, (*seconds)(p)); err != nil {
			return fmt.Errorf("column %s: %v", k, err)
		}
	}
	for k, p := range map[string]*string{"label": &r.Label, "rep": &r.Rep} {
		v, ok := m[k]
		if !ok {
			return fmt.Errorf("answer row lacks column %s", k)
		}
		if err := json.Unmarshal(v, p); err != nil {
			return fmt.Errorf("column %s: %v", k, err)
		}
	}
	return nil
}

type cellKey struct {
	slice   int64
	stratum string
	cache   string // prefix-cache band (Plan.Cache); "" when not split
}

// Read runs the arm's aggregation query and returns its dataset: an Exact
// aggregate (see the package comment), ClockEpoch, one Input naming the
// query. Errors name the query; none holds credentials.
func (s *Source) Read(ctx context.Context, q Query) (sources.Dataset, error) {
	ds := sources.Dataset{Arm: q.Arm, Clock: sources.ClockEpoch, Location: s.cfg.Location}
	name := string(q.Arm) + " aggregate"
	cols, start, end, err := s.prepare(ctx, name, q)
	if err != nil {
		return ds, err
	}
	query := buildQuery(q.Plan, s.table, cols, q.Where, start, end, q.Exclude)
	as := newAssembler(q.Plan)
	err = s.run(ctx, name, query, func(line []byte) error {
		var r row
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("unexpected answer row: %v", err)
		}
		return as.add(&r)
	}, func() { as = newAssembler(q.Plan) })
	if err != nil {
		return ds, err
	}
	agg, records, canon, err := as.finish()
	if err != nil {
		return ds, &QueryError{name, err.Error()}
	}
	ds.Agg = agg
	ds.Inputs = []sources.Input{{
		Path:   fmt.Sprintf("clickhouse %s table %s where (%s), ts in [%s, %s)", redact(s.cfg.URL), s.table, sanitize(q.Where, 500), q.Start.UTC().Format(time.RFC3339Nano), q.End.UTC().Format(time.RFC3339Nano)),
		SHA256: digest(query, canon),
		Format: Format,
		Arm:    q.Arm,
		Count:  int(records),
		Note:   "aggregated by the server; sha256 of the query text and its answer's rows in sorted order",
	}}
	if c := s.cfg.Columns; len(c) > 0 {
		ds.Inputs[0].Note += "; columns " + sanitize(c.String(), 300)
	}
	return ds, nil
}

// prepare checks q, reads the table's columns and returns them with the
// window in unix seconds; errors are QueryErrors naming name.
func (s *Source) prepare(ctx context.Context, name string, q Query) (cols resolved, start, end float64, err error) {
	if q.Plan == nil {
		return cols, 0, 0, &QueryError{name, "no plan"}
	}
	if err := q.Plan.check(); err != nil {
		return cols, 0, 0, &QueryError{name, err.Error()}
	}
	if err := CheckWhere(q.Where); err != nil {
		return cols, 0, 0, &QueryError{name, "condition " + strconv.Quote(sanitize(q.Where, 200)) + ": " + err.Error()}
	}
	if !q.End.After(q.Start) {
		return cols, 0, 0, &QueryError{name, "the window ends before it starts"}
	}
	info, err := s.describe(ctx)
	if err != nil {
		return cols, 0, 0, err
	}
	if cols, err = resolve(info, s.cfg.Columns); err != nil {
		return cols, 0, 0, &QueryError{"describe " + sanitize(s.cfg.Table, 120), err.Error()}
	}
	start = float64(q.Start.UnixNano()) / 1e9
	end = float64(q.End.UnixNano()) / 1e9
	if q.Start.Nanosecond() == 0 && q.End.Nanosecond() == 0 {
		start, end = float64(q.Start.Unix()), float64(q.End.Unix())
	}
	return cols, start, end, nil
}

// SliceCount is one slice of one replica's requests: the slice's number
// (floor(ts / Plan.Step)), the replica's name ("" for rows naming none),
// the requests that arrived in it and the good ones among them by the
// plan's SLOs.
type SliceCount struct {
	Slice         int64
	Replica       string
	Offered, Good int64
}

// ReadCounts runs the arm's count query over q's window: its requests and
// good requests per slice of the plan's step and replica, in slice and
// then replica order, good by the same rule as Read's aggregate (q.Exclude
// is not read). Rows a file's reader refuses fail it as they fail Read; a
// window without rows gives no slices, and an error only when
// q.AllowEmpty is false. Errors name the query ("<arm> counts"); none
// holds credentials.
func (s *Source) ReadCounts(ctx context.Context, q Query) ([]SliceCount, error) {
	name := string(q.Arm) + " counts"
	cols, start, end, err := s.prepare(ctx, name, q)
	if err != nil {
		return nil, err
	}
	var out []SliceCount
	var bad badRows
	err = s.run(ctx, name, buildCountQuery(q.Plan, s.table, cols, q.Where, start, end), func(line []byte) error {
		var r struct {
			S             count  `json:"s"`
			Rep           string `json:"rep"`
			N             count  `json:"n"`
			Good          count  `json:"good"`
			BadStatus     count  `json:"bad_status"`
			BadTTFT       count  `json:"bad_ttft"`
			BadLatency    count  `json:"bad_latency"`
			BadE2E        count  `json:"bad_e2e"`
			BadCount      count  `json:"bad_count"`
			BadCanceledBy count  `json:"bad_canceled_by"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("unexpected answer row: %v", err)
		}
		bad.add(int64(r.BadStatus), int64(r.BadTTFT), int64(r.BadLatency), int64(r.BadE2E), int64(r.BadCount), int64(r.BadCanceledBy))
		out = append(out, SliceCount{Slice: int64(r.S), Replica: r.Rep, Offered: int64(r.N), Good: int64(r.Good)})
		return nil
	}, func() { out, bad = nil, badRows{} })
	if err != nil {
		return nil, err
	}
	if err := bad.err(); err != nil {
		return nil, &QueryError{name, err.Error()}
	}
	if len(out) == 0 && !q.AllowEmpty {
		return nil, &QueryError{name, errNoRequests.Error()}
	}
	slices.SortFunc(out, func(x, y SliceCount) int {
		return cmp.Or(cmp.Compare(x.Slice, y.Slice), strings.Compare(x.Replica, y.Replica))
	})
	return out, nil
}

// badRows counts the rows a file's reader refuses, by reason.
type badRows struct{ status, ttft, latency, e2e, count, canceledBy int64 }

// add counts a row's bad rows of each reason.
func (b *badRows) add(status, ttft, latency, e2e, count, canceledBy int64) {
	b.status += status
	b.ttft += ttft
	b.latency += latency
	b.e2e += e2e
	b.count += count
	b.canceledBy += canceledBy
}

// err says what the rows hold that the native request log does not allow,
// nil when nothing.
func (b badRows) err() error {
	var problems []string
	for _, x := range []struct {
		n   int64
		msg string
	}{
		{b.status, "a status other than ok, error, timeout, canceled (cancelled) or rejected"},
		{b.ttft, "status ok but no ttft_s"},
		{b.latency, "a negative or infinite latency"},
		{b.e2e, "e2e_s smaller than ttft_s"},
		{b.count, "a negative or fractional token count, or attempt below 1"},
		{b.canceledBy, "a canceled_by other than client or server, or canceled_by on a row whose status is not canceled"},
	} {
		if x.n > 0 {
			problems = append(problems, fmt.Sprintf("%d with %s", x.n, x.msg))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("rows the native request log does not allow: %s; fix the rows, map other columns with --columns, or narrow the condition", strings.Join(problems, "; "))
}

// errNoRequests is a window without rows.
var errNoRequests = errors.New("no requests: no row satisfies the condition in the window; check the condition and the window (--start/--end or --last)")

// assembler turns the query's rows, as they arrive, into the aggregate in
// the form the streaming scan of the same records builds; it keeps the
// aggregate's cells, not the rows.
type assembler struct {
	p          *Plan
	records    int64
	bad        badRows
	unverified map[string]int64
	cells      map[cellKey]*aggcell.Cell
	reps       sources.ReplicaSpans
	// repLat holds each replica's TTFT and TPOT per slice on coarse bins
	// (loglin.Coarse), for its per-slice medians and tail shares
	repLat loglin.ReplicaLatencies
	// tooManyReplicas is set once the rows named more than
	// sources.MaxReplicas replicas: reps and repLat are dropped and the
	// arm counted as naming none, as analysis.Aggregator does
	tooManyReplicas bool
	cacheKnown      bool
	attemptKnown    bool // some record gave its attempt (Aggregate.AttemptKnown)
	// completed records giving quality_ok, and failing it
	// (Aggregate.QualityChecked, QualityFailed)
	qualityChecked, qualityFailed int64
	// labels holds the class labels seen (sources.MaxClassLabels at most)
	labels map[string]struct{}
	lo, hi int64 // slice numbers on the widened grid
	// first and last are the earliest and latest arrival of any row
	// (NaN before one): the last slice ends at last when they differ, as
	// the streaming scan ends it (sources.EndLastSliceAt)
	first, last float64
	// shift is how many times the slices were widened: a row's slice s
	// (of the plan's step) is slice s>>shift, of p.Step·2^shift seconds
	// (widen)
	shift uint
	// canon holds each row's digest, for the input's sha256
	canon []string
	// users tallies the count gates per group of users (rowUsers rows,
	// when the table names users); hasUsers is set by the first
	users    sources.UserTally
	hasUsers bool
}

// widen doubles the slice width when the arm's rows span
// sources.MaxStreamSlices slices or more, as analysis.Aggregator does
// with records: slices 2k and 2k+1 become slice k of the wider grid,
// their cells, replica spans and replica latency bins added up.
func (as *assembler) widen() {
	as.cells = aggcell.Widen(as.cells, func(k cellKey) cellKey { k.slice >>= 1; return k })
	as.reps.Widen()
	as.repLat = as.repLat.Widened()
	as.lo, as.hi = as.lo>>1, as.hi>>1
	as.shift++
}

func newAssembler(p *Plan) *assembler {
	return &assembler{p: p, unverified: map[string]int64{}, labels: map[string]struct{}{}, cells: map[cellKey]*aggcell.Cell{}, reps: sources.ReplicaSpans{}, repLat: loglin.NewReplicaLatencies(),
		lo: math.MaxInt64, hi: math.MinInt64, first: math.NaN(), last: math.NaN()}
}

func (as *assembler) stratum(r *row) string {
	class := "default"
	if r.PC >= 0 && int(r.PC) < len(as.p.Classes) {
		class = as.p.Classes[r.PC].Name
	}
	return as.p.Stratum(r.Label, int(r.PB), class)
}

// cache names the row's prefix-cache band ("" when the plan does not
// split by it).
func (as *assembler) cache(r *row) string {
	if as.p.Cache == nil || r.CB <= 0 {
		return ""
	}
	return as.p.Cache(int(r.CB))
}

func (as *assembler) get(k cellKey) *aggcell.Cell {
	c := as.cells[k]
	if c == nil {
		c = &aggcell.Cell{}
		as.cells[k] = c
	}
	return c
}

// add counts one row.
func (as *assembler) add(r *row) error {
	if !(r.TFirst >= as.first) {
		as.first = r.TFirst
	}
	if !(r.TLast <= as.last) {
		as.last = r.TLast
	}
	if r.M == rowUsers {
		// a group of users over the window: no slice
		as.canon = append(as.canon, rowDigest("u %d %d %d %d %d %d %d %d %d %d %d %d %d %d", r.UG, r.Named, r.N, r.Good, r.Failed, r.Rejected, r.Canceled, r.Retried,
			r.OutputTokens, r.Completed-r.OutputUnknown, r.OutputSq, r.PromptTokens, r.Admitted-r.PromptUnknown, r.PromptSq))
		return as.addUsers(r)
	}
	if r.M == rowEnded {
		// an end, not an arrival: it places nothing on the grid
		as.canon = append(as.canon, rowDigest("e %d %q %d", int64(r.S), r.Rep, r.N))
		if as.replicaRoom(r.Rep) {
			as.reps.AddFlights(r.Rep, int64(r.S)>>as.shift, int64(r.S)>>as.shift, 0, float64(r.N))
		}
		return nil
	}
	sl := int64(r.S) >> as.shift
	if sl < as.lo || sl > as.hi {
		as.lo, as.hi = min(as.lo, sl), max(as.hi, sl)
		for as.hi-as.lo >= sources.MaxStreamSlices {
			as.widen()
			sl >>= 1
		}
	}
	switch r.M {
	case rowCounts:
		as.records += int64(r.N)
		as.bad.add(int64(r.BadStatus), int64(r.BadTTFT), int64(r.BadLatency), int64(r.BadE2E), int64(r.BadCount), int64(r.BadCanceledBy))
		for k, v := range map[string]count{"ttft": r.UnvTTFT, "tpot": r.UnvTPOT, "e2e": r.UnvE2E, "max_itl": r.UnvMaxITL, "quality": r.UnvQuality, sources.ClassUnverified: r.UnvClass} {
			if v > 0 {
				as.unverified[k] += int64(v)
			}
		}
		if r.CacheKnown > 0 {
			as.cacheKnown = true
		}
		if r.AttemptKnown > 0 {
			as.attemptKnown = true
		}
		as.qualityChecked += int64(r.QualityChecked)
		as.qualityFailed += int64(r.QualityFailed)
		if _, ok := as.labels[r.Label]; !ok && r.Label != "" {
			if len(as.labels) == sources.MaxClassLabels {
				return fmt.Errorf("the rows hold more than %d distinct class labels: a class label names a kind of traffic (chat, batch, …) and each one is a stratum the arms are compared within, so a value per request (an id, a prompt) cannot be one; map another column to class with --columns class=COLUMN, leave it out with --columns class=, or narrow the condition", sources.MaxClassLabels)
			}
			as.labels[r.Label] = struct{}{}
		}
		st := as.stratum(r)
		c := as.get(cellKey{sl, st, as.cache(r)})
		// latencies: per stratum, not per band (AggBucket.Cache)
		h := c
		if as.p.Cache != nil {
			h = as.get(cellKey{sl, st, ""})
		}
		c.Completed += float64(r.Completed)
		c.Failed += float64(r.Failed)
		c.Canceled += float64(r.Canceled)
		c.Rejected += float64(r.Rejected)
		c.Good += float64(r.Good)
		c.Retried += float64(r.Retried)
		c.Short += float64(r.Short)
		c.OutUnknown += float64(r.OutputUnknown)
		c.PromptUnknown += float64(r.PromptUnknown)
		c.Prompt += float64(r.PromptTokens)
		c.Output += float64(r.OutputTokens)
		c.OutMax = max(c.OutMax, float64(r.OutputMax))
		c.GoodTokens += float64(r.GoodTokens)
		c.Hits += float64(r.Hits)
		c.Queries += float64(r.Queries)
		h.TTFTNs += int64(r.SumTTFT)
		h.TPOTNs += int64(r.SumTPOT)
		h.E2ENs += int64(r.SumE2E)
		as.canon = append(as.canon, rowDigest("c %d %q %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %v %d %d %d %d", sl, r.Label, r.PB, r.PC, r.CB, r.N,
			r.Completed, r.Failed, r.Canceled, r.Rejected, r.Good, r.Retried, r.Short, r.OutputUnknown, r.PromptUnknown, r.PromptTokens, r.OutputTokens, r.GoodTokens, r.Hits, r.Queries, r.Hist,
			r.SumTTFT, r.SumTPOT, r.SumE2E, r.OutputMax))
		for k, h := range []*loglin.Hist{&h.TTFT, &h.TPOT, &h.E2E} {
			for i, bin := range r.Hist[k].Bins {
				h.AddBin(bin, r.Hist[k].Counts[i])
			}
		}
	case rowReplica:
		as.canon = append(as.canon, rowDigest("r %d %q %d %d %d %d %v %v %d", sl, r.Rep, r.N, r.Admitted, r.Judged, r.JudgedGood, r.Hist[0], r.Hist[1], r.Started))
		if !as.replicaRoom(r.Rep) {
			break
		}
		as.reps.Add(r.Rep, sl, float64(r.Admitted), float64(r.Judged), float64(r.JudgedGood))
		as.reps.AddFlights(r.Rep, sl, sl, float64(r.Started), 0)
		for k, m := range []loglin.ReplicaMedians{as.repLat.TTFT, as.repLat.TPOT} {
			if len(r.Hist[k].Bins) > 0 {
				h := m.Hist(r.Rep, sl)
				for i, bin := range r.Hist[k].Bins {
					h.AddBin(loglin.Coarse(bin), r.Hist[k].Counts[i])
				}
			}
		}
	default:
		return fmt.Errorf("unexpected row kind %d", r.M)
	}
	return nil
}

// addUsers counts a rowUsers row into the arm's UserTally as
// sources.UserTally.Add counts its records.
func (as *assembler) addUsers(r *row) error {
	if r.UG < 0 || r.UG >= sources.UserGroups {
		return fmt.Errorf("a group of users %d outside 0 … %d", r.UG, sources.UserGroups-1)
	}
	as.hasUsers = true
	u, g := &as.users, int(r.UG)
	u.Named = u.Named || r.Named > 0
	for k, n := range []count{r.Good, r.Failed, r.Rejected, r.Canceled, r.Retried} {
		u.Num[k][g] += int64(n)
		u.Den[k][g] += int64(r.N)
		u.Sq[k] += int64(n) // a 0/1 numerator is its own square
	}
	u.Num[5][g] += int64(r.OutputTokens)
	u.Den[5][g] += int64(r.Completed - r.OutputUnknown)
	u.Sq[5] += int64(r.OutputSq)
	u.Num[6][g] += int64(r.PromptTokens)
	u.Den[6][g] += int64(r.Admitted - r.PromptUnknown)
	u.Sq[6] += int64(r.PromptSq)
	return nil
}

// replicaRoom reports whether replica rep's rows are counted: false once
// the rows have named more than sources.MaxReplicas replicas, when every
// replica's state is dropped (tooManyReplicas).
func (as *assembler) replicaRoom(rep string) bool {
	if as.tooManyReplicas {
		return false
	}
	if _, seen := as.reps[rep]; !seen && len(as.reps) == sources.MaxReplicas {
		as.tooManyReplicas = true
		as.reps, as.repLat = sources.ReplicaSpans{}, loglin.NewReplicaLatencies()
		return false
	}
	return true
}

// rowDigest is the hex SHA-256 of a row's canonical text.
func rowDigest(format string, a ...any) string {
	h := sha256.Sum256([]byte(fmt.Sprintf(format, a...)))
	return hex.EncodeToString(h[:])
}

// finish checks the rows' counts and builds the aggregate.
func (as *assembler) finish() (*sources.Aggregate, int64, []string, error) {
	p, records, bad, unverified, cells, reps, cacheKnown, lo, hi, canon := as.p, as.records, as.bad, as.unverified, as.cells, as.reps, as.cacheKnown, as.lo, as.hi, as.canon
	slices.Sort(canon)
	if err := bad.err(); err != nil {
		return nil, 0, nil, err
	}
	if records == 0 {
		return nil, 0, nil, errNoRequests
	}
	n := hi - lo + 1
	step := p.Step * float64(int64(1)<<as.shift)
	// the span in the plan's slices
	if span := float64(n) * float64(int64(1)<<as.shift); !(span <= float64(max(int64(maxSlices), 4*records))) {
		return nil, 0, nil, fmt.Errorf("arrival times span %.0f slices of %gs for %d requests: a row far from the rest? Narrow the window", span, p.Step, records)
	}
	// replicas serving per slice, as the streaming scan counts them
	serving, tracks := reps.Tracks(lo, hi)
	as.repLat.Fill(tracks, lo)
	per := make([][]cellKey, n)
	for k := range cells {
		per[k.slice-lo] = append(per[k.slice-lo], k)
	}
	nan := math.NaN()
	var edges loglin.Edges
	out := &sources.Aggregate{Profile: "requests", Exact: true, GoodTokensCounted: true, LatencySums: true, Step: step, Replicas: tracks, ReplicasUnnamed: tracks == nil,
		AttemptKnown: as.attemptKnown, QualityChecked: as.qualityChecked, QualityFailed: as.qualityFailed}
	if as.hasUsers {
		users := as.users
		out.Users = &users
	}
	if as.tooManyReplicas {
		out.Notes = append(out.Notes, sources.TooManyReplicas())
	}
	for k := range per {
		keys := per[k]
		slices.SortFunc(keys, func(x, y cellKey) int {
			if c := cmp.Compare(x.stratum, y.stratum); c != 0 {
				return c
			}
			return cmp.Compare(x.cache, y.cache)
		})
		start := float64(lo+int64(k)) * step
		base := sources.AggBucket{Start: start, End: start + step, Replicas: serving[k], PrefixHits: nan, PrefixQueries: nan,
			Running: nan, Waiting: nan, KVUsage: nan, GPUUtil: nan, GPUPowerW: nan, GPUMemBytes: nan, CostPerHour: nan}
		if cacheKnown {
			base.PrefixHits, base.PrefixQueries = 0, 0
		}
		if len(keys) == 0 {
			out.Buckets = append(out.Buckets, base)
			continue
		}
		for _, ck := range keys {
			c := cells[ck]
			b := base
			b.Class, b.Cache = ck.stratum, ck.cache
			c.Fill(&b, &edges, cacheKnown)
			out.Buckets = append(out.Buckets, b)
		}
	}
	if as.first < as.last {
		sources.EndLastSliceAt(out.Buckets, as.last)
	}
	out.FirstArrival = as.first
	keys := make([]string, 0, len(unverified))
	for k := range unverified {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out.Notes = append(out.Notes, sources.UnverifiedNote(k, unverified[k]))
		if out.Unverified == nil {
			out.Unverified = map[string]int64{}
		}
		out.Unverified[k] = unverified[k]
	}
	return out, records, canon, nil
}
