package clickhouse

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goodput-dev/goodput/sources"
)

// QuoteIdent returns name as a backquoted ClickHouse identifier with every
// backquote and backslash escaped (and control bytes written as \xHH), so
// that no name can end the identifier early. Empty names are refused by the
// callers, not here.
func QuoteIdent(name string) string {
	return quote(name, '`')
}

// QuoteString returns s as a single-quoted ClickHouse string literal with
// quotes, backslashes and control bytes escaped.
func QuoteString(s string) string {
	return quote(s, '\'')
}

func quote(s string, q byte) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == q || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\x%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// QuoteTable returns a table name, "table" or "database.table", as escaped
// identifiers ("`database`.`table`"). A name with more than one dot, or an
// empty part, is refused: a table whose name holds a dot is not reachable
// this way.
func QuoteTable(name string) (string, error) {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		return "", fmt.Errorf("table %q: want table or database.table", sanitize(name, 120))
	}
	for _, p := range parts {
		if p == "" {
			return "", fmt.Errorf("table %q: empty database or table name; want table or database.table", sanitize(name, 120))
		}
		if !utf8.ValidString(p) {
			return "", fmt.Errorf("table %q: not valid UTF-8", sanitize(name, 120))
		}
	}
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = QuoteIdent(p)
	}
	return strings.Join(out, "."), nil
}

// CheckWhere accepts an operator's SQL condition for one arm (e.g.
// "deployment = 'canary' AND region = 'eu'") when it can be wrapped in
// parentheses and stay one condition: no `;`, no comment (which could hide
// the closing parenthesis), balanced parentheses that never close more than
// they opened, and closed string literals and quoted identifiers. The
// condition still runs with readonly=1, so even an accepted condition can
// only read. An empty condition is refused: an arm must be selected.
func CheckWhere(w string) error {
	if strings.TrimSpace(w) == "" {
		return errors.New("empty condition: give the SQL condition that selects the arm's rows, e.g. \"deployment = 'canary'\"")
	}
	if !utf8.ValidString(w) {
		return errors.New("the condition is not valid UTF-8")
	}
	depth := 0
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch c {
		case '\'', '"', '`':
			// a literal or quoted identifier: backslash escapes, and a
			// doubled quote is a quote
			j := i + 1
			for ; j < len(w); j++ {
				if w[j] == '\\' {
					j++
					continue
				}
				if w[j] == c {
					if j+1 < len(w) && w[j+1] == c {
						j++
						continue
					}
					break
				}
			}
			if j >= len(w) {
				return fmt.Errorf("unbalanced %c: a quoted string or name is not closed", c)
			}
			i = j
		case ';':
			return errors.New("`;` is not allowed: give one condition, not statements")
		case '-':
			if i+1 < len(w) && w[i+1] == '-' {
				return errors.New("comments (--) are not allowed in a condition")
			}
		case '/':
			if i+1 < len(w) && w[i+1] == '*' {
				return errors.New("comments (/* */) are not allowed in a condition")
			}
		case '#':
			return errors.New("`#` is not allowed in a condition (outside a string)")
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return errors.New("unbalanced ): it closes a parenthesis the condition did not open")
			}
		case 0:
			return errors.New("a NUL byte is not allowed in a condition")
		}
	}
	if depth != 0 {
		return fmt.Errorf("unbalanced (: %d parenthesis not closed", depth)
	}
	return nil
}

// Fields of the native request log (DESIGN.md §3) that the aggregate
// reads, in the order of Columns.
var fieldNames = []string{"ts", "status", "ttft_s", "tpot_s", "e2e_s", "max_itl_s",
	"prompt_tokens", "output_tokens", "cached_tokens", "class", "replica", "attempt", "quality_ok", "canceled_by", "user"}

// FieldNames lists the native-log fields a column mapping may name.
func FieldNames() []string { return append([]string(nil), fieldNames...) }

// Columns maps native-log fields (ts, status, ttft_s, …) to the table's
// column names. A field not in the map reads the column of its own name
// when the table has one and is unknown otherwise; a field mapped to ""
// is unknown whatever the table holds. ts and status are required.
type Columns map[string]string

// ParseColumns reads a --columns value: comma-separated field=column pairs,
// e.g. "ttft_s=first_token_latency,ts=arrival". A column may be empty
// (field=) to mark the field unknown. Unknown fields and fields given twice
// are errors.
func ParseColumns(s string) (Columns, error) {
	out := Columns{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, pair := range strings.Split(s, ",") {
		f, c, ok := strings.Cut(pair, "=")
		f, c = strings.TrimSpace(f), strings.TrimSpace(c)
		if !ok || f == "" {
			return nil, fmt.Errorf("%q: want field=column, e.g. ttft_s=first_token_latency", sanitize(pair, 80))
		}
		if !knownField(f) {
			return nil, fmt.Errorf("unknown field %q; want one of %s", sanitize(f, 40), strings.Join(fieldNames, ", "))
		}
		if _, dup := out[f]; dup {
			return nil, fmt.Errorf("field %s mapped twice", f)
		}
		if (f == "ts" || f == "status") && c == "" {
			return nil, fmt.Errorf("field %s is required: map it to a column", f)
		}
		if strings.HasPrefix(c, aliasPrefix) {
			return nil, fmt.Errorf("column %q: names starting with %s are reserved for the generated query", sanitize(c, 80), aliasPrefix)
		}
		if !utf8.ValidString(c) {
			return nil, fmt.Errorf("column for %s is not valid UTF-8", f)
		}
		out[f] = c
	}
	return out, nil
}

func knownField(f string) bool {
	for _, n := range fieldNames {
		if n == f {
			return true
		}
	}
	return false
}

// String writes the mapping back in --columns form, sorted by field.
func (c Columns) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + c[k]
	}
	return strings.Join(parts, ",")
}

// SLO is one class's service-level objective, as the request path judges
// a request good (see Plan).
type SLO struct {
	// Upper bounds in seconds; 0 means the criterion is not judged.
	TTFT, TPOT, E2E, MaxITL float64
	// QualityRequired makes a request good only when quality_ok is true.
	QualityRequired bool
	// MinOutputTokens is the fewest output tokens of a good completion
	// (a completion with a known, smaller count is not good).
	MinOutputTokens int64
}

// Range is a half-open token range [Min, Max); nil bounds are open.
type Range struct {
	Min, Max *int64
}

// Class is one policy class: the requests it takes and its SLO.
type Class struct {
	Name string
	// Labels: the request's class label is one of these (none: any).
	Labels []string
	// PromptTokens and OutputTokens: the request's known count lies in
	// the range (nil: any, including unknown).
	PromptTokens, OutputTokens *Range
	SLO                        SLO
}

// Plan is what the aggregation query needs from the policy: the bucket
// width, the classes with their SLOs and the strata. It is built from a
// policy by the caller (sources do not read policies), and must say what
// the request path says: a request belongs to the first class whose
// conditions hold, else to "default" (or, when Classes is empty, is judged
// with SLO under its own label); it is good when its status is ok, its
// output has at least MinOutputTokens tokens when known, and each judged
// latency is known and within its bound — except TPOT and max ITL, which
// an output of 0 or 1 tokens does not have and so does not need —, and,
// when QualityRequired, quality_ok is true.
type Plan struct {
	// Step is the bucket width in seconds (> 0): a request arriving at unix
	// time t is counted in the slice starting at floor(t/Step)·Step.
	Step    float64
	Classes []Class
	// SLO judges requests no class takes.
	SLO SLO
	// PromptEdges split prompt token counts into bands: band 0 is
	// unknown, band k ≥ 1 holds counts with k−1 edges at or below them.
	// Bands are read for requests without a class label, and for
	// labelled ones too when LabelBands.
	PromptEdges []int64
	// LabelBands groups labelled requests by prompt band too
	// (normalize.prompt_bands: all).
	LabelBands bool
	// Stratum names the stratum (AggBucket.Class) of requests with class
	// label label ("" when absent), prompt band promptBand (as above; 0
	// when the request has a label and not LabelBands) and policy class
	// class (a Classes name, or "default").
	Stratum func(label string, promptBand int, class string) string
	// Cache, when not nil, splits each stratum by prefix-cache band and
	// names band k (AggBucket.Cache): 1 no cached tokens, 2 cached/prompt
	// below 0.5, 3 at or above it (cached > prompt included), 4 cached or
	// prompt tokens not known (cached < 0 or prompt ≤ 0), the request
	// path's normalize.CacheBand. nil: strata are not split.
	Cache func(band int) string
}

// check validates p.
func (p *Plan) check() error {
	if !(p.Step > 0) || math.IsInf(p.Step, 0) {
		return fmt.Errorf("plan: bucket width %v s; want a positive number of seconds", p.Step)
	}
	if p.Stratum == nil {
		return errors.New("plan: no stratum naming")
	}
	for _, c := range p.Classes {
		if c.Name == "" || c.Name == "default" {
			return fmt.Errorf("plan: class name %q", c.Name)
		}
	}
	return nil
}

// aliasPrefix starts every name the generated query defines, so no table
// column is shadowed.
const aliasPrefix = "__gp_"

// num formats a float64 so that ClickHouse reads back the same double
// (shortest round-trip form).
// Fixed notation: no exponent for the server's parser to read.
func num(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func inum(v int64) string { return strconv.FormatInt(v, 10) }

// tableInfo is the column list of the table, by name, with ClickHouse type.
type tableInfo map[string]string

// resolved is the column each field reads ("" when unknown) with its type.
type resolved struct {
	col map[string]string
	typ map[string]string
}

// resolve maps fields to columns of t under the mapping c. Required fields
// must resolve; an explicitly mapped column must exist.
func resolve(t tableInfo, c Columns) (resolved, error) {
	r := resolved{col: map[string]string{}, typ: map[string]string{}}
	for _, f := range fieldNames {
		col, mapped := c[f]
		if !mapped {
			col = f
		}
		if col == "" {
			continue
		}
		typ, ok := t[col]
		if !ok {
			switch {
			case mapped:
				return r, fmt.Errorf("--columns %s=%s: the table has no column %s", f, sanitize(col, 80), QuoteIdent(sanitize(col, 80)))
			case f == "ts" || f == "status":
				return r, fmt.Errorf("the table has no column %s (the native log's %s): map it with --columns %s=COLUMN", f, f, f)
			}
			continue
		}
		base := baseType(typ)
		switch {
		case f == "ts" && !(isNumeric(base) || strings.HasPrefix(base, "DateTime") || base == "Date"):
			return r, fmt.Errorf("column %s (ts) has type %s: want unix seconds (Float64, UInt32, …) or DateTime", QuoteIdent(col), sanitize(typ, 60))
		case f == "status" && !(base == "String" || strings.HasPrefix(base, "FixedString") || strings.HasPrefix(base, "Enum")):
			return r, fmt.Errorf("column %s (status) has type %s: want String or Enum with ok, error, timeout, canceled, rejected", QuoteIdent(col), sanitize(typ, 60))
		case f == "canceled_by" && !(base == "String" || strings.HasPrefix(base, "FixedString") || strings.HasPrefix(base, "Enum")):
			return r, fmt.Errorf("column %s (canceled_by) has type %s: want String or Enum with client, server", QuoteIdent(col), sanitize(typ, 60))
		case f != "ts" && f != "status" && f != "class" && f != "replica" && f != "canceled_by" && f != "user" && !isNumeric(base):
			return r, fmt.Errorf("column %s (%s) has type %s: want a number", QuoteIdent(col), f, sanitize(typ, 60))
		case (f == "class" || f == "replica" || f == "user") && !(base == "String" || strings.HasPrefix(base, "FixedString") || strings.HasPrefix(base, "Enum") || isNumeric(base)):
			return r, fmt.Errorf("column %s (%s) has type %s: want String", QuoteIdent(col), f, sanitize(typ, 60))
		}
		r.col[f], r.typ[f] = col, typ
	}
	return r, nil
}

// baseType strips Nullable(…) and LowCardinality(…).
func baseType(t string) string {
	for {
		switch {
		case strings.HasPrefix(t, "Nullable(") && strings.HasSuffix(t, ")"):
			t = t[len("Nullable(") : len(t)-1]
		case strings.HasPrefix(t, "LowCardinality(") && strings.HasSuffix(t, ")"):
			t = t[len("LowCardinality(") : len(t)-1]
		default:
			return t
		}
	}
}

func isNumeric(t string) bool {
	for _, p := range []string{"Int", "UInt", "Float", "Decimal"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// Kinds of the rows the query returns (column m).
const (
	rowCounts  = 0 // counters and histograms of one slice × stratum
	rowReplica = 4 // one replica's requests in one slice
	rowEnded   = 5 // one replica's requests in flight that ended in one slice
	rowUsers   = 6 // one group of users' requests over the window (sources.UserTally)
)

// zeroBin is the bin of values ≤ 0 in the query's output (loglin.Zero).
const zeroBin = math.MinInt32

// buildQuery returns the aggregation query for one arm: the rows of table
// (escaped) that satisfy where (checked) and arrive in [start, end) unix
// seconds, grouped by time slice and stratum columns, each latency's
// histogram one column of bins and counts (sumMap), so the answer has one
// row per slice × stratum plus one per slice × replica.
func buildQuery(p *Plan, table string, cols resolved, where string, start, end float64, exclude []Exclusion) string {
	a, col := alias, cols.quoted
	level2 := buildRows(p, table, cols, where, start, end, exclude)
	ok := a("st") + " = 1"

	// third level: one row per request for the counters and histograms,
	// one per request naming a replica, and one more per request in
	// flight on a replica, counted in the slice it ended in
	m := a("m")
	kinds := "[0, 4, 5]"
	if col("user") != "" {
		// and one per request in its group of users, when the table
		// names users
		kinds = "[0, 4, 5, 6]"
	}
	level3 := "SELECT *, arrayJoin(" + kinds + ") AS " + m + " FROM (" + level2 + ")"
	keep := "(" + m + " = 0 AND NOT " + a("excl") + ") OR (" + m + " = 4 AND " + a("rep") + " != '') OR (" + m + " = 5 AND " + a("fl") + ") OR (" + m + " = 6 AND NOT " + a("excl") + ")"
	// a histogram is one column: sumMap's sorted bins and their counts;
	// a replica's row has its TTFT and TPOT histograms, for its per-slice
	// medians and tail shares, without its own warm-up (as the streaming
	// scan leaves a left-out request's latencies out of its replica's)
	hist := func(n string) string {
		rows := m + " = 0"
		if n == "ttft" || n == "tpot" {
			rows = "(" + m + " = 0 OR (" + m + " = 4 AND NOT " + a("excl") + "))"
		}
		return "sumMapIf([" + a("bin_"+n) + "], [toFloat64(1)], " + rows + " AND " + ok + " AND " + a(n+"_k") + ") AS h_" + n
	}
	// a latency's sum over the histogram's values, each rounded to the
	// nanosecond as sources.LatencyNanos rounds: integers, so the sum is
	// the same in any order
	latSum := func(n string) string {
		return "sumIf(toInt64(floor(" + a(n) + " * 1e9 + 0.5)), " + m + " = 0 AND " + ok + " AND " + a(n+"_k") + ") AS sum_" + n
	}
	sel := []string{
		"multiIf(" + m + " = 5, " + a("se") + ", " + m + " = 6, toInt64(0), " + a("s") + ") AS s",
		"if(" + m + " = 6, toUInt64(" + a("ug") + "), toUInt64(0)) AS ug",
		"countIf(" + a("named") + ") AS named",
		"sumIf(" + a("output") + " * " + a("output") + ", " + ok + " AND " + a("output") + " >= 0) AS output_sq",
		"sumIf(" + a("prompt") + " * " + a("prompt") + ", " + a("st") + " != 5 AND " + a("prompt") + " >= 0) AS prompt_sq",
		m + " AS m",
		"if(" + m + " >= 4, '', " + a("label") + ") AS label",
		"if(" + m + " >= 4, 0, " + a("pb") + ") AS pb",
		"if(" + m + " >= 4, toInt32(-1), " + a("pc") + ") AS pc",
		"if(" + m + " >= 4, 0, " + a("cb") + ") AS cb",
		"if(" + m + " >= 4, " + a("rep") + ", '') AS rep",
		hist("ttft"), hist("tpot"), hist("e2e"),
		latSum("ttft"), latSum("tpot"), latSum("e2e"),
		"count() AS n",
		"countIf(" + ok + ") AS completed",
		"countIf(" + a("failed") + ") AS failed",
		"countIf(" + a("canceled") + ") AS canceled",
		"countIf(" + a("st") + " = 5) AS rejected",
		"countIf(" + a("good") + ") AS good",
		"countIf(" + a("attempt") + " > 1) AS retried",
		"countIf(" + a("attempt") + " >= 1) AS attempt_known",
		"countIf(" + a("short") + ") AS short",
		"sumIf(" + a("prompt") + ", " + a("st") + " != 5 AND " + a("prompt") + " >= 0) AS prompt_tokens",
		"sumIf(" + a("output") + ", " + ok + " AND " + a("output") + " > 0) AS output_tokens",
		"countIf(" + ok + " AND " + a("output") + " < 0) AS output_unknown",
		// the longest completion, which a mean output length must not rest on
		"maxIf(" + a("output") + ", " + ok + " AND " + a("output") + " > 0) AS output_max",
		"countIf(" + a("st") + " != 5 AND " + a("prompt") + " < 0) AS prompt_unknown",
		"sumIf(" + a("output") + ", " + a("good") + " AND " + a("output") + " > 0) AS good_tokens",
		"sumIf(" + a("cached") + ", " + a("cached") + " >= 0 AND " + a("prompt") + " > 0) AS hits",
		"sumIf(" + a("prompt") + ", " + a("cached") + " >= 0 AND " + a("prompt") + " > 0) AS queries",
		"countIf(" + a("cached") + " >= 0 AND " + a("prompt") + " > 0) AS cache_known",
		"countIf(" + a("st") + " != 5) AS admitted",
		// a replica's judged requests and good ones (its own warm-up not
		// judged), for the spread of attainment between replicas
		"countIf(NOT " + a("excl") + ") AS judged",
		"countIf(" + a("good") + " AND NOT " + a("excl") + ") AS judged_good",
		// a replica's requests in flight that arrived in the slice (its
		// row m = 4); a row m = 5 counts (n) those that ended in it
		"countIf(" + m + " = 4 AND " + a("fl") + ") AS started",
		"countIf(" + a("unv_ttft") + ") AS unv_ttft",
		"countIf(" + a("unv_tpot") + ") AS unv_tpot",
		"countIf(" + a("unv_e2e") + ") AS unv_e2e",
		"countIf(" + a("unv_itl") + ") AS unv_max_itl",
		"countIf(" + a("unv_quality") + ") AS unv_quality",
		"countIf(" + a("unv_class") + ") AS unv_class",
		"countIf(" + a("q_checked") + ") AS quality_checked",
		"countIf(" + a("q_failed") + ") AS quality_failed",
		// the first and last arrival of the group's rows: the arm's last
		// slice ends at its last arrival (sources.EndLastSliceAt)
		"min(" + a("t2") + ") AS t_first",
		"max(" + a("t2") + ") AS t_last",
	}
	sel = append(sel, badRowColumns()...)
	return "SELECT " + strings.Join(sel, ", ") +
		" FROM (" + level3 + ") WHERE " + keep +
		" GROUP BY s, m, label, pb, pc, cb, rep, ug" +
		" FORMAT JSONEachRow"
}

// alias names a column the generated query defines (aliasPrefix).
func alias(n string) string { return aliasPrefix + n }

// quoted is field f's column, quoted; "" when the table lacks it.
func (c resolved) quoted(f string) string {
	if name, ok := c.col[f]; ok {
		return QuoteIdent(name)
	}
	return ""
}

// buildRows is the query's first two levels: one row per request of the
// arm in [start, end) with the native log's fields made total, its slice
// (alias "s"), status code ("st"), policy class, whether it is good
// ("good"), the checks a file's reader makes ("bad_…"), its latency bins
// and its user group, each named by alias.
func buildRows(p *Plan, table string, cols resolved, where string, start, end float64, exclude []Exclusion) string {
	a, col := alias, cols.quoted
	var l1 []string // first level: the table's columns, made total
	add := func(expr, name string) { l1 = append(l1, expr+" AS "+a(name)) }

	add("toFloat64("+col("ts")+")", "t")
	add("ifNull(toString("+col("status")+"), '')", "status")
	// latencies: known flag and value; NULL and NaN are unknown
	for _, f := range []struct{ field, name string }{{"ttft_s", "ttft"}, {"tpot_s", "tpot_raw"}, {"e2e_s", "e2e"}, {"max_itl_s", "itl"}} {
		c := col(f.field)
		if c == "" {
			add("0", f.name+"_k")
			add("toFloat64(0)", f.name)
			continue
		}
		v := "ifNull(toFloat64(" + c + "), 0)"
		add("isNotNull("+c+") AND NOT isNaN("+v+")", f.name+"_k")
		add(v, f.name)
	}
	// counts: -1 when unknown; attempt 0 when unknown
	var badTok []string
	for _, f := range []struct{ field, name string }{{"prompt_tokens", "prompt"}, {"output_tokens", "output"}, {"cached_tokens", "cached"}, {"attempt", "attempt"}} {
		c := col(f.field)
		unknown := "-1"
		if f.name == "attempt" {
			unknown = "0"
		}
		if c == "" {
			add("toInt64("+unknown+")", f.name)
			continue
		}
		add("ifNull(toInt64("+c+"), "+unknown+")", f.name)
		fv := "ifNull(toFloat64(" + c + "), 0)"
		lowest := "0"
		if f.name == "attempt" {
			lowest = "1"
		}
		badTok = append(badTok, "(isNotNull("+c+") AND ("+fv+" < "+lowest+" OR "+fv+" != floor("+fv+") OR isNaN("+fv+") OR isInfinite("+fv+")))")
	}
	if len(badTok) == 0 {
		badTok = []string{"0"}
	}
	add(strings.Join(badTok, " OR "), "bad_count")
	for _, f := range []struct{ field, name string }{{"class", "label"}, {"replica", "rep"}, {"canceled_by", "by"}} {
		if c := col(f.field); c != "" {
			add("ifNull(toString("+c+"), '')", f.name)
		} else {
			add("''", f.name)
		}
	}
	// the user a record names ("" or NULL: none), for the groups of
	// users (sources.UserOf)
	if c := col("user"); c != "" {
		add("ifNull(toString("+c+"), '')", "user")
	} else {
		add("''", "user")
	}
	if c := col("quality_ok"); c != "" {
		// 0 unknown, 1 ok, 2 bad
		add("multiIf(isNull("+c+"), 0, ifNull(toFloat64("+c+"), 0) != 0, 1, 2)", "quality")
	} else {
		add("0", "quality")
	}
	cond := "(" + where + ") AND " + "toFloat64(" + col("ts") + ") >= " + num(start) + " AND toFloat64(" + col("ts") + ") < " + num(end)
	level1 := "SELECT " + strings.Join(l1, ", ") + " FROM " + table + " WHERE " + cond

	// second level: status code, derived TPOT, slice, stratum, good
	var l2 []string
	add2 := func(expr, name string) { l2 = append(l2, expr+" AS "+a(name)) }
	add2(a("t"), "t2")
	// 1 ok, 2 error, 3 timeout, 4 canceled, 5 rejected, 0 unknown
	add2("multiIf("+a("status")+" = 'ok', 1, "+a("status")+" = 'error', 2, "+a("status")+" = 'timeout', 3, "+
		a("status")+" IN ('canceled', 'cancelled'), 4, "+a("status")+" = 'rejected', 5, 0)", "st")
	// request accounting (sources.CountsFailed): error, timeout and a
	// cancel by the server fail; other cancels are canceled
	add2(a("st")+" IN (2, 3) OR ("+a("st")+" = 4 AND "+a("by")+" = 'server')", "failed")
	add2(a("st")+" = 4 AND "+a("by")+" != 'server'", "canceled")
	// canceled_by: "", client or server, and set only on canceled rows
	add2(a("by")+" NOT IN ('', 'client', 'server') OR ("+a("by")+" != '' AND "+a("st")+" != 4)", "bad_by")
	// TPOT: given, else (e2e − ttft)/(output − 1) for outputs > 1 token
	derivable := a("output") + " > 1 AND " + a("e2e_k") + " AND " + a("ttft_k")
	add2(a("tpot_raw_k")+" OR ("+derivable+")", "tpot_k")
	add2("if("+a("tpot_raw_k")+", "+a("tpot_raw")+", if("+derivable+", ("+a("e2e")+" - "+a("ttft")+") / toFloat64("+a("output")+" - 1), toFloat64(0)))", "tpot")
	add2("toInt64(floor("+a("t")+" / "+num(p.Step)+"))", "s")
	// in flight on its replica from arrival to arrival + E2E, when the
	// replica admitted it and E2E is known (analysis.flightEnd): the
	// slice it ended in
	add2(a("rep")+" != '' AND "+a("st")+" != 5 AND "+a("e2e_k")+" AND "+a("e2e")+" >= 0", "fl")
	add2("greatest(toInt64(floor(("+a("t")+" + "+a("e2e")+") / "+num(p.Step)+")), "+a("s")+")", "se")
	// policy class: the first whose conditions hold; −1 none. And a class
	// a missing length may have decided (analysis classifier.classify): a rule
	// before the one the known fields match (pc) whose label the request
	// has and whose token conditions hold where its lengths are known,
	// one of them unknown
	var pc []string
	undecided := []string{"0"}
	for i, c := range p.Classes {
		var conds, maybe, missing []string
		if len(c.Labels) > 0 {
			lits := make([]string, len(c.Labels))
			for k, l := range c.Labels {
				lits[k] = QuoteString(l)
			}
			conds = append(conds, a("label")+" IN ("+strings.Join(lits, ", ")+")")
		}
		maybe = append(maybe, conds...)
		for _, r := range []struct {
			rg   *Range
			name string
		}{{c.PromptTokens, "prompt"}, {c.OutputTokens, "output"}} {
			if r.rg == nil {
				continue
			}
			in := []string{a(r.name) + " >= 0"}
			if r.rg.Min != nil {
				in = append(in, a(r.name)+" >= "+inum(*r.rg.Min))
			}
			if r.rg.Max != nil {
				in = append(in, a(r.name)+" < "+inum(*r.rg.Max))
			}
			conds = append(conds, in...)
			maybe = append(maybe, "("+a(r.name)+" < 0 OR ("+strings.Join(in, " AND ")+"))")
			missing = append(missing, a(r.name)+" < 0")
		}
		if len(conds) == 0 {
			conds = []string{"1"}
		}
		pc = append(pc, "("+strings.Join(conds, " AND ")+")", strconv.Itoa(i))
		if len(missing) > 0 {
			maybe = append(maybe, "("+strings.Join(missing, " OR ")+")", "("+a("pc")+" = -1 OR "+a("pc")+" > "+strconv.Itoa(i)+")")
			undecided = append(undecided, "("+strings.Join(maybe, " AND ")+")")
		}
	}
	if len(pc) == 0 {
		add2("toInt32(-1)", "pc")
	} else {
		add2("toInt32(multiIf("+strings.Join(pc, ", ")+", -1))", "pc")
	}
	band := func(name string, edges []int64) string {
		parts := []string{a(name) + " < 0", "0"}
		for k, e := range edges {
			parts = append(parts, a(name)+" < "+inum(e), strconv.Itoa(k+1))
		}
		return "multiIf(" + strings.Join(parts, ", ") + ", " + strconv.Itoa(len(edges)+1) + ")"
	}
	if p.Cache == nil {
		add2("toInt32(0)", "cb")
	} else {
		// float division, as CacheBand divides
		add2("multiIf("+a("cached")+" < 0 OR "+a("prompt")+" <= 0, 4, "+a("cached")+" = 0, 1, toFloat64("+a("cached")+") / toFloat64("+a("prompt")+") < 0.5, 2, 3)", "cb")
	}
	if p.LabelBands {
		add2(band("prompt", p.PromptEdges), "pb")
	} else {
		add2("if("+a("label")+" != '', 0, "+band("prompt", p.PromptEdges)+")", "pb")
	}
	// per class: good, short, unverified criteria
	bySLO := func(f func(SLO) string) string {
		if len(p.Classes) == 0 {
			return f(p.SLO)
		}
		parts := make([]string, 0, 2*len(p.Classes)+1)
		for i, c := range p.Classes {
			parts = append(parts, a("pc")+" = "+strconv.Itoa(i), f(c.SLO))
		}
		parts = append(parts, f(p.SLO))
		return "multiIf(" + strings.Join(parts, ", ") + ")"
	}
	ok := a("st") + " = 1"
	noStream := "(" + a("output") + " >= 0 AND " + a("output") + " <= 1)"
	within := func(limit float64, name string, undefinedOK bool) string {
		if limit == 0 {
			return "1"
		}
		known := "(" + a(name+"_k") + " AND " + a(name) + " <= " + num(limit) + ")"
		if undefinedOK {
			return "(" + known + " OR (NOT " + a(name+"_k") + " AND " + noStream + "))"
		}
		return known
	}
	// below the class's output floor (an answer too short to be good)
	below := func(s SLO) string {
		return "(" + a("output") + " >= 0 AND " + a("output") + " < " + inum(s.MinOutputTokens) + ")"
	}
	add2(bySLO(func(s SLO) string {
		conds := []string{ok, "NOT " + below(s),
			within(s.TTFT, "ttft", false), within(s.TPOT, "tpot", true), within(s.E2E, "e2e", false), within(s.MaxITL, "itl", true)}
		if s.QualityRequired {
			conds = append(conds, a("quality")+" = 1")
		}
		return "(" + strings.Join(conds, " AND ") + ")"
	}), "good")
	add2(ok+" AND "+a("output")+" >= 0 AND "+a("output")+" < "+bySLO(func(s SLO) string { return inum(s.MinOutputTokens) }), "short")
	// a request that fails a criterion it can be checked against (or
	// the output floor) is not good whatever a missing field says: it is
	// not counted as unverified (analysis.isGood)
	over := func(limit float64, name string) string {
		if limit == 0 {
			return "0"
		}
		return "(" + a(name+"_k") + " AND " + a(name) + " > " + num(limit) + ")"
	}
	fails := func(s SLO) string {
		parts := []string{below(s), over(s.TTFT, "ttft"), over(s.TPOT, "tpot"), over(s.E2E, "e2e"), over(s.MaxITL, "itl")}
		if s.QualityRequired {
			parts = append(parts, a("quality")+" = 2")
		}
		return "(" + strings.Join(parts, " OR ") + ")"
	}
	unverified := func(name string, get func(SLO) float64, undefinedOK bool) string {
		return bySLO(func(s SLO) string {
			if get(s) == 0 {
				return "0"
			}
			miss := "NOT " + a(name+"_k")
			if undefinedOK {
				miss += " AND NOT " + noStream
			}
			return "(" + miss + " AND NOT " + fails(s) + ")"
		})
	}
	add2(ok+" AND "+unverified("ttft", func(s SLO) float64 { return s.TTFT }, false), "unv_ttft")
	add2(ok+" AND "+unverified("tpot", func(s SLO) float64 { return s.TPOT }, true), "unv_tpot")
	add2(ok+" AND "+unverified("e2e", func(s SLO) float64 { return s.E2E }, false), "unv_e2e")
	add2(ok+" AND "+unverified("itl", func(s SLO) float64 { return s.MaxITL }, true), "unv_itl")
	add2(ok+" AND ("+strings.Join(undecided, " OR ")+")", "unv_class")
	add2(ok+" AND "+a("quality")+" = 0 AND "+bySLO(func(s SLO) string {
		if s.QualityRequired {
			return "NOT " + fails(s)
		}
		return "0"
	}), "unv_quality")
	// completed requests giving quality_ok, and failing it (whatever the
	// policy judges: Aggregate.QualityChecked, QualityFailed)
	add2(ok+" AND "+a("quality")+" > 0", "q_checked")
	add2(ok+" AND "+a("quality")+" = 2", "q_failed")
	// rows the file reader refuses
	lat := func(n string) string {
		return "(" + a(n+"_k") + " AND (" + a(n) + " < 0 OR isInfinite(" + a(n) + ")))"
	}
	add2(lat("ttft")+" OR "+lat("tpot_raw")+" OR "+lat("e2e")+" OR "+lat("itl"), "bad_latency")
	add2(a("e2e_k")+" AND "+a("ttft_k")+" AND "+a("e2e")+" < "+a("ttft"), "bad_e2e")
	add2(ok+" AND NOT "+a("ttft_k"), "bad_ttft")
	bin := func(n string) string {
		return "if(" + a(n) + " <= 0, toInt32(" + strconv.Itoa(zeroBin) + "), toInt32(ceil(log2(" + a(n) + ") * 256)))"
	}
	add2(bin("ttft"), "bin_ttft")
	add2(bin("tpot"), "bin_tpot")
	add2(bin("e2e"), "bin_e2e")
	// a replica's own warm-up, left out of the counts (Query.Exclude);
	// names are escaped, slices are integers
	excl := []string{"0"}
	for _, e := range exclude {
		excl = append(excl, "("+a("rep")+" = "+QuoteString(e.Replica)+" AND "+a("s")+" >= "+strconv.FormatInt(e.FromSlice, 10)+
			" AND "+a("s")+" < "+strconv.FormatInt(e.UntilSlice, 10)+")")
	}
	add2(strings.Join(excl, " OR "), "excl")
	// the group of users (sources.UserOf: 1 + sipHash64 of the name mod
	// 64), or of a record naming none (its arrival in microseconds:
	// sources.unnamedGroup), and whether it named one
	add2(a("user")+" != ''", "named")
	add2("if("+a("user")+" != '', sipHash64("+a("user")+") % "+strconv.Itoa(sources.UserGroups)+
		", sipHash64(toUInt64("+a("t")+" * 1000000)) % "+strconv.Itoa(sources.UserGroups)+")", "ug")
	for _, n := range []string{"label", "rep", "prompt", "output", "cached", "attempt", "bad_count", "ttft_k", "e2e_k", "ttft", "e2e"} {
		l2 = append(l2, a(n))
	}
	return "SELECT " + strings.Join(l2, ", ") + " FROM (" + level1 + ")"
}

// badRowColumns count, per group, the rows a file's reader refuses, by
// reason (badRows): bad_status, bad_ttft, bad_latency, bad_e2e,
// bad_count and bad_canceled_by.
func badRowColumns() []string {
	a := alias
	return []string{
		"countIf(" + a("st") + " = 0) AS bad_status",
		"countIf(" + a("bad_ttft") + ") AS bad_ttft",
		"countIf(" + a("bad_latency") + ") AS bad_latency",
		"countIf(" + a("bad_e2e") + ") AS bad_e2e",
		"countIf(" + a("bad_count") + ") AS bad_count",
		"countIf(" + a("bad_by") + ") AS bad_canceled_by",
	}
}

// buildCountQuery counts the arm's requests and its good ones per slice
// and replica, with the rows a file's reader refuses, from buildRows: what
// a history needs, without the aggregate's strata and latency bins.
func buildCountQuery(p *Plan, table string, cols resolved, where string, start, end float64) string {
	a := alias
	sel := []string{
		a("s") + " AS s",
		a("rep") + " AS rep",
		"count() AS n",
		"countIf(" + a("good") + ") AS good",
	}
	sel = append(sel, badRowColumns()...)
	return "SELECT " + strings.Join(sel, ", ") + " FROM (" + buildRows(p, table, cols, where, start, end, nil) + ") GROUP BY s, rep FORMAT JSONEachRow"
}
