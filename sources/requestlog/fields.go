package requestlog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

// field identifies a column of the native request log (DESIGN.md §3).
type field uint8

const (
	fUnknown field = iota
	fTS
	fStatus
	fTTFT
	fTPOT
	fE2E
	fMaxITL
	fPromptTokens
	fOutputTokens
	fCachedTokens
	fClass
	fReplica
	fAttempt
	fQualityOK
	fCanceledBy
	fUser
	nFields
)

// String returns the contract's spelling of f ("" for fUnknown).
func (f field) String() string {
	switch f {
	case fTS:
		return "ts"
	case fStatus:
		return "status"
	case fTTFT:
		return "ttft_s"
	case fTPOT:
		return "tpot_s"
	case fE2E:
		return "e2e_s"
	case fMaxITL:
		return "max_itl_s"
	case fPromptTokens:
		return "prompt_tokens"
	case fOutputTokens:
		return "output_tokens"
	case fCachedTokens:
		return "cached_tokens"
	case fClass:
		return "class"
	case fReplica:
		return "replica"
	case fAttempt:
		return "attempt"
	case fQualityOK:
		return "quality_ok"
	case fCanceledBy:
		return "canceled_by"
	case fUser:
		return "user"
	}
	return ""
}

// lookupField maps a key to its field; fUnknown for anything else. Keys are
// case-sensitive, as in the contract.
func lookupField(k []byte) field {
	switch string(k) {
	case "ts":
		return fTS
	case "status":
		return fStatus
	case "ttft_s":
		return fTTFT
	case "tpot_s":
		return fTPOT
	case "e2e_s":
		return fE2E
	case "max_itl_s":
		return fMaxITL
	case "prompt_tokens":
		return fPromptTokens
	case "output_tokens":
		return fOutputTokens
	case "cached_tokens":
		return fCachedTokens
	case "class":
		return fClass
	case "replica":
		return fReplica
	case "attempt":
		return fAttempt
	case "quality_ok":
		return fQualityOK
	case "canceled_by":
		return fCanceledBy
	case "user":
		return fUser
	}
	return fUnknown
}

// want describes the values a field accepts, for error messages.
func (f field) want() string {
	switch f {
	case fTS:
		return "an RFC 3339 time such as \"2026-11-29T15:06:14.25Z\" or unix seconds such as 1795965974.25"
	case fStatus:
		return "one of \"ok\", \"error\", \"timeout\", \"canceled\", \"rejected\""
	case fTTFT, fTPOT, fE2E, fMaxITL:
		return "a number of seconds ≥ 0, e.g. 0.25"
	case fPromptTokens, fOutputTokens, fCachedTokens:
		return "a whole number of tokens ≥ 0"
	case fAttempt:
		return "a whole number ≥ 1 (1 = first try, 2 = first retry)"
	case fClass, fReplica:
		return "a string (quote it)"
	case fUser:
		return "a string or a number naming the end user, tenant or session the request came for"
	case fQualityOK:
		return "true or false"
	case fCanceledBy:
		return "\"client\" (the client gave up or disconnected, e.g. HTTP 499) or \"server\" (the engine or gateway aborted a request it had admitted), on canceled requests only; leave it out when unknown"
	}
	return "a value"
}

// kind is the type of a value as it appears in the input.
type kind uint8

const (
	kString kind = iota
	kNumber
	kTrue
	kFalse
	kNull
	kObject
	kArray
	kNonFinite // Python's NaN, Infinity, -Infinity
	kText      // a CSV cell: typed by the field
)

func (k kind) String() string {
	return [...]string{"a string", "a number", "true", "false", "null", "an object", "an array",
		"a non-finite number", "text"}[k]
}

// lineErr is a problem on one line; the line number and path are added by
// the caller, which knows where the line sits in the file.
type lineErr struct {
	col   int   // 1-based byte column; 0 when the whole line or a field is meant
	field field // fUnknown when not about one field
	msg   string
}

func fieldErr(f field, format string, args ...any) *lineErr {
	return &lineErr{field: f, msg: fmt.Sprintf(format, args...)}
}

// ParseError is a problem in a request log. Line is 1-based (0 for problems
// with the whole file); Col is a 1-based byte column, 0 when the problem is
// about a field's value or a whole line rather than a position.
type ParseError struct {
	Path  string // file path as given to Read
	Line  int    // 1-based line; 0 when not tied to a line
	Col   int    // 1-based byte column; 0 when not tied to a position
	Field string // the field concerned, "" when none
	Msg   string // what is wrong and what to do about it
}

// Error formats the problem as path:line[:col]: [field "f": ]msg.
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// quoteVal renders untrusted input for an error message: quoted, escaped,
// and cut to a readable length.
func quoteVal(v []byte) string {
	const max = 40
	if len(v) > max {
		return fmt.Sprintf("%q…", v[:max])
	}
	return fmt.Sprintf("%q", v)
}

// decoder turns field values into a Request. It holds the per-Read state
// that makes decoding allocation-free: the string intern table, the
// unknown-field tally and a scratch buffer. One decoder is used by one
// goroutine at a time.
type decoder struct {
	intern  map[string]string
	unknown map[string]*unknownField
	// lineUnknown lists the unknown keys of the current line (interned), so
	// that a missing-field error can point at a likely misspelling.
	lineUnknown []string
	scratch     []byte
	// next[f] is the field whose key followed field f's on the last line
	// that had f (next[objectStart]: the first key); fUnknown when it was
	// an unknown key. names are the fields' spellings.
	next  [nFields + 1]field
	names [nFields]string
	// quoted[f] is f's key with its quotes ("ttft_s") as the first 16
	// bytes of a line would hold it, little-endian in two words, and
	// quotedMask[f] the bits of those words that it covers (every key of
	// the contract is at most 14 bytes long: 16 with its quotes)
	quoted, quotedMask [nFields][2]uint64
	// recent caches interned strings for internStr.
	recent [64]string
}

// predictKey tries the key that followed field prev on the last line
// (next[prev]) against the quoted key opening at b[i], by a plain
// comparison: writers emit keys in a fixed order, and a key without
// escapes that matches is that key. It returns the field and the index of
// the key's closing quote, or fUnknown and 0 when the prediction does not
// hold.
func (d *decoder) predictKey(b []byte, i int, prev field) (field, int) {
	pf := d.next[prev]
	if pf == fUnknown {
		return fUnknown, 0
	}
	name := d.names[pf]
	if len(b)-i >= 16 && len(name) <= 14 {
		// the quoted key compared a word at a time, the bytes after it
		// masked out
		lo := binary.LittleEndian.Uint64(b[i:])
		hi := binary.LittleEndian.Uint64(b[i+8:])
		if lo&d.quotedMask[pf][0] == d.quoted[pf][0] && hi&d.quotedMask[pf][1] == d.quoted[pf][1] {
			return pf, i + 1 + len(name)
		}
		return fUnknown, 0
	}
	if end := i + 1 + len(name); end < len(b) && b[end] == '"' && string(b[i+1:end]) == name {
		return pf, end
	}
	return fUnknown, 0
}

// objectStart indexes decoder.next for the first key of an object.
const objectStart = nFields

// unknownField tallies one unrecognised field name.
type unknownField struct {
	name  string
	lines int
}

func newDecoder() *decoder {
	d := &decoder{intern: make(map[string]string), unknown: make(map[string]*unknownField)}
	for f := range nFields {
		d.names[f] = f.String()
		var q, m [16]byte
		k := copy(q[:], `"`+d.names[f]+`"`)
		for j := range k {
			m[j] = 0xff
		}
		for w := range 2 {
			d.quoted[f][w] = binary.LittleEndian.Uint64(q[8*w:])
			d.quotedMask[f][w] = binary.LittleEndian.Uint64(m[8*w:])
		}
	}
	return d
}

// internStr returns a shared string equal to v. A log names a few
// replicas and classes over and over, so a small table indexed by the
// value's length and last byte answers most calls with one comparison
// before the map is asked.
func (d *decoder) internStr(v []byte) string {
	slot := 0
	if len(v) > 0 {
		slot = (len(v)*31 + int(v[len(v)-1])) % len(d.recent)
		if s := d.recent[slot]; s == string(v) {
			return s
		}
	}
	s, ok := d.intern[string(v)]
	if !ok {
		s = string(v)
		d.intern[s] = s
	}
	d.recent[slot] = s
	return s
}

// noteUnknown counts one occurrence of an unknown field.
func (d *decoder) noteUnknown(k []byte) {
	u, ok := d.unknown[string(k)]
	if !ok {
		s := string(k)
		u = &unknownField{name: s}
		d.unknown[s] = u
	}
	u.lines++
	d.lineUnknown = append(d.lineUnknown, u.name)
}

// set stores value v of kind k in field f of r.
func (d *decoder) set(r *sources.Request, f field, k kind, v []byte) *lineErr {
	if k == kNull || (k == kText && len(v) == 0) {
		if f == fTS || f == fStatus {
			return fieldErr(f, "required field is %s; want %s", emptyName(k), f.want())
		}
		return nil // unknown, as if absent
	}
	switch f {
	case fTS:
		return d.setTS(r, k, v)
	case fStatus:
		if k != kString && k != kText {
			return wrongType(f, k)
		}
		s, ok := fastStatus(v)
		if !ok {
			if _, lower := fastStatus(bytes.ToLower(trimSpace(v))); lower {
				return fieldErr(f, "unknown status %s; statuses are lower case: want %s", quoteVal(v), f.want())
			}
			return fieldErr(f, "unknown status %s; want %s", quoteVal(v), f.want())
		}
		r.Status = s
	case fTTFT, fTPOT, fE2E, fMaxITL:
		x, e := latency(f, k, v)
		if e != nil {
			return e
		}
		setLatency(r, f, x)
	case fPromptTokens, fOutputTokens, fCachedTokens, fAttempt:
		t, e := numberText(f, k, v)
		if e != nil {
			return e
		}
		n, whole := parseCount(t)
		return storeCount(r, f, n, whole, t)
	case fClass, fReplica:
		if k != kString && k != kText {
			return wrongType(f, k)
		}
		if f == fClass {
			r.Class = d.internStr(v)
		} else {
			r.Replica = d.internStr(v)
		}
	case fQualityOK:
		switch {
		case k == kTrue:
			r.Quality = sources.QualityOK
		case k == kFalse:
			r.Quality = sources.QualityBad
		case k == kText:
			switch string(v) {
			case "true", "True", "TRUE", "1":
				r.Quality = sources.QualityOK
			case "false", "False", "FALSE", "0":
				r.Quality = sources.QualityBad
			default:
				return fieldErr(f, "cannot read %s as a boolean; want true, false, 1 or 0 (or leave the cell empty when unknown)", quoteVal(v))
			}
		default:
			return wrongType(f, k)
		}
	case fCanceledBy:
		if k != kString && k != kText {
			return wrongType(f, k)
		}
		if len(v) == 0 {
			return nil // "" is unknown, as if absent
		}
		by, e := canceledBy(v)
		if e != nil {
			return e
		}
		r.CanceledBy = by
	case fUser:
		if k != kString && k != kText && k != kNumber {
			return wrongType(f, k)
		}
		if len(v) > 0 { // "" names no one, as if absent
			r.User = sources.UserOf(v)
		}
	}
	return nil
}

// canceledBy reads the canceled_by field: "client" or "server". Other
// tools' words for the two sides are named in the error with the value to
// write instead.
func canceledBy(v []byte) (sources.CanceledBy, *lineErr) {
	switch string(v) {
	case "client":
		return sources.CanceledByClient, nil
	case "server":
		return sources.CanceledByServer, nil
	}
	hint := ""
	switch strings.ToLower(string(trimSpace(v))) {
	case "client":
		hint = "values are lower case: write \"client\""
	case "server":
		hint = "values are lower case: write \"server\""
	case "user", "downstream", "caller", "499":
		hint = "a cancel by the caller is the client's: write \"client\""
	case "upstream", "engine", "gateway", "proxy", "backend", "scheduler", "abort", "aborted":
		hint = "an abort by the engine or a proxy is the server's: write \"server\""
	}
	if hint != "" {
		return 0, fieldErr(fCanceledBy, "unknown value %s; %s", quoteVal(v), hint)
	}
	return 0, fieldErr(fCanceledBy, "unknown value %s; want %s", quoteVal(v), fCanceledBy.want())
}

func emptyName(k kind) string {
	if k == kNull {
		return "null"
	}
	return "empty"
}

func wrongType(f field, k kind) *lineErr {
	return fieldErr(f, "got %s, want %s", k, f.want())
}

// fastStatus matches the contract's status spellings without allocating,
// falling back to sources.ParseStatus for the synonyms it accepts.
func fastStatus(v []byte) (sources.Status, bool) {
	switch string(v) {
	case "ok":
		return sources.StatusOK, true
	case "error":
		return sources.StatusError, true
	case "timeout":
		return sources.StatusTimeout, true
	case "canceled":
		return sources.StatusCanceled, true
	case "rejected":
		return sources.StatusRejected, true
	}
	s, err := sources.ParseStatus(string(v))
	return s, err == nil
}

// numberText returns the number's bytes or an error for values that are
// not numbers. CSV cells are trimmed and must follow the JSON grammar too.
func numberText(f field, k kind, v []byte) ([]byte, *lineErr) {
	switch k {
	case kNumber:
		return v, nil
	case kNonFinite:
		return nil, fieldErr(f, "%s is not a finite number; want %s (omit the field or write null when unknown)", v, f.want())
	case kText:
		t := trimSpace(v)
		if isNumber(t) {
			return t, nil
		}
		if isNonFinite(t) {
			return nil, fieldErr(f, "%s is not a finite number; want %s (leave the cell empty when unknown)", quoteVal(t), f.want())
		}
		return nil, fieldErr(f, "cannot read %s as a number; want %s", quoteVal(v), f.want())
	case kString:
		return nil, fieldErr(f, "got the string %s, want %s (write it without quotes)", quoteVal(v), f.want())
	}
	return nil, wrongType(f, k)
}

// isNonFinite recognises the spellings of NaN and infinity that spreadsheet
// and Python writers produce.
func isNonFinite(t []byte) bool {
	if len(t) < 3 || len(t) > 9 || !strings.ContainsRune("nNiI+-", rune(t[0])) {
		return false
	}
	switch strings.ToLower(string(t)) {
	case "nan", "-nan", "+nan", "inf", "-inf", "+inf", "infinity", "-infinity", "+infinity":
		return true
	}
	return false
}

func trimSpace(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t' || v[len(v)-1] == '\r') {
		v = v[:len(v)-1]
	}
	return v
}

// latency reads a duration in seconds: finite and ≥ 0.
func latency(f field, k kind, v []byte) (float64, *lineErr) {
	t, e := numberText(f, k, v)
	if e != nil {
		return 0, e
	}
	return checkLatency(f, parseFloat(t), t)
}

// checkLatency accepts x, the value of number text t, as a latency.
func checkLatency(f field, x float64, t []byte) (float64, *lineErr) {
	switch {
	case math.IsInf(x, 0) || math.IsNaN(x):
		return 0, fieldErr(f, "%s is out of range; want %s", t, f.want())
	case x < 0:
		return 0, fieldErr(f, "negative latency %s (latencies are seconds ≥ 0)", t)
	}
	return x + 0, nil // + 0 turns -0 into 0
}

// setFloat stores x, the value of the JSON number t, in the latency or ts
// field f; it is set's fast path for numbers scanned with scanFloat.
func (d *decoder) setFloat(r *sources.Request, f field, x float64, t []byte) *lineErr {
	if f == fTS {
		ts, e := checkTS(x, t)
		r.Time = ts
		return e
	}
	x, e := checkLatency(f, x, t)
	setLatency(r, f, x)
	return e
}

// setLatency stores x (seconds) in the request's latency field f (fTTFT,
// fTPOT, fE2E or fMaxITL).
func setLatency(r *sources.Request, f field, x float64) {
	switch f {
	case fTTFT:
		r.TTFT = x
	case fTPOT:
		r.TPOT = x
	case fE2E:
		r.E2E = x
	default:
		r.MaxITL = x
	}
}

// storeCount checks n, the value of number text t (whole reports whether
// it is a whole number), and stores it in the token or attempt field f.
func storeCount(r *sources.Request, f field, n int64, whole bool, t []byte) *lineErr {
	switch {
	case !whole:
		return fieldErr(f, "%s is not a whole number; want %s", t, f.want())
	case f == fAttempt && (n < 1 || n > math.MaxInt32):
		return fieldErr(f, "attempt %d is out of range; want %s", n, f.want())
	case n < 0:
		return fieldErr(f, "negative token count %d; want %s", n, f.want())
	}
	switch f {
	case fPromptTokens:
		r.PromptTokens = n
	case fOutputTokens:
		r.OutputTokens = n
	case fCachedTokens:
		r.CachedTokens = n
	default:
		r.Attempt = int32(n)
	}
	return nil
}

// maxTS bounds numeric timestamps: 1e11 s is the year 5138, so anything
// larger is almost surely milliseconds or microseconds.
const maxTS = 1e11

func (d *decoder) setTS(r *sources.Request, k kind, v []byte) *lineErr {
	if k == kText {
		// a CSV cell holds either form
		if t := trimSpace(v); isNumber(t) || isNonFinite(t) {
			k, v = kNumber, t
			if isNonFinite(t) {
				k = kNonFinite
			}
		} else {
			k, v = kString, t
		}
	}
	var x float64
	switch k {
	case kString:
		t, err := parseRFC3339(v)
		if err != nil {
			if localTime(v) {
				// a local time: which instant it names depends on a zone
				// the record does not give
				return fieldErr(fTS, "%s has no time zone, so it names no one instant; append Z for UTC or the writer's offset (e.g. +02:00), or write unix seconds", quoteVal(v))
			}
			return fieldErr(fTS, "cannot parse %s as an RFC 3339 time or unix seconds; want %s", quoteVal(v), fTS.want())
		}
		if t >= maxTS {
			return fieldErr(fTS, "%s is after the year 5000; want %s", quoteVal(v), fTS.want())
		}
		x = t
	default:
		t, e := numberText(fTS, k, v)
		if e != nil {
			return e
		}
		ts, e := checkTS(parseFloat(t), t)
		if e != nil {
			return e
		}
		x = ts
	}
	if x < 0 {
		return fieldErr(fTS, "%s is before 1970; want %s", quoteVal(v), fTS.want())
	}
	r.Time = x + 0
	return nil
}

// checkTS accepts x, the value of number text t, as unix seconds.
func checkTS(x float64, t []byte) (float64, *lineErr) {
	switch {
	case math.IsInf(x, 0) || math.IsNaN(x) || x >= maxTS:
		return 0, fieldErr(fTS, "%s is too large for unix seconds (after the year 5000); write seconds, not milliseconds, or an RFC 3339 time", t)
	case x < 0:
		return 0, fieldErr(fTS, "%s is before 1970; want %s", quoteVal(t), fTS.want())
	}
	return x + 0, nil
}

// finish checks a decoded line's required fields and cross-field rules and
// derives TPOT. seen has bit f set for every field the line gave (non-null).
func (d *decoder) finish(r *sources.Request, seen uint32) *lineErr {
	if seen == 0 && len(d.lineUnknown) > 0 {
		names := make([]string, 0, 3)
		for _, u := range d.lineUnknown[:min(3, len(d.lineUnknown))] {
			names = append(names, quoteVal([]byte(u)))
		}
		more := ""
		if len(d.lineUnknown) > 3 {
			more = ", …"
		}
		return &lineErr{msg: fmt.Sprintf("not a request-log record: none of its fields (%s%s) is in the request-log contract, which needs ts and status on every line (is this another tool's result file? give its input format)",
			strings.Join(names, ", "), more)}
	}
	for _, f := range [...]field{fTS, fStatus} {
		if seen&(1<<f) == 0 {
			return fieldErr(f, "missing required field%s (every request needs ts and status)", d.hint(f))
		}
	}
	if r.Status == sources.StatusOK && !sources.Known(r.TTFT) {
		return fieldErr(fTTFT, "missing for a request with status \"ok\"%s (completed requests must give the time to first token in seconds — a response that is not streamed arrives whole, so its ttft_s is its e2e_s; use status error, timeout or canceled for requests that did not finish)", d.hint(fTTFT))
	}
	if r.CanceledBy != sources.CanceledByUnknown && r.Status != sources.StatusCanceled {
		return fieldErr(fCanceledBy, "%q on a request with status %q: only a canceled request says who canceled it; leave canceled_by out (or empty) for this status, or set status \"canceled\" if the request was canceled",
			r.CanceledBy.String(), r.Status.String())
	}
	if sources.Known(r.TTFT) && sources.Known(r.E2E) && r.E2E < r.TTFT {
		return fieldErr(fE2E, "end-to-end latency %g is smaller than ttft_s %g (e2e_s includes the time to first token; are the columns swapped?)", r.E2E, r.TTFT)
	}
	r.DeriveTPOT()
	return nil
}

// alias maps names that other tools use to the contract's fields; it feeds
// the "did you mean" hints.
func alias(name string) field {
	switch name {
	case "timestamp", "time", "start_time", "arrival", "arrival_time":
		return fTS
	case "state", "outcome", "result":
		return fStatus
	case "ttft", "ttft_ms", "time_to_first_token":
		return fTTFT
	case "tpot", "tpot_ms":
		return fTPOT
	case "e2e", "e2e_ms", "latency", "latency_s":
		return fE2E
	case "max_itl", "max_itl_ms":
		return fMaxITL
	case "input_tokens", "prompt_len":
		return fPromptTokens
	case "completion_tokens", "output_len":
		return fOutputTokens
	case "cached":
		return fCachedTokens
	case "retry":
		return fAttempt
	case "pod":
		return fReplica
	case "user_id", "userid", "tenant", "tenant_id", "session", "session_id", "customer", "customer_id":
		return fUser
	case "quality":
		return fQualityOK
	case "cancelled_by", "cancel_by", "canceler", "canceller", "cancel_source":
		return fCanceledBy
	}
	return fUnknown
}

// suggest returns the contract field an unknown name probably means.
func suggest(name string) field {
	if f := lookupField([]byte(strings.ToLower(name))); f != fUnknown {
		return f
	}
	if f := lookupField([]byte(name + "_s")); f != fUnknown {
		return f
	}
	return alias(strings.ToLower(name))
}

// hint points at an unknown key on the current line that probably meant f.
func (d *decoder) hint(f field) string {
	for _, u := range d.lineUnknown {
		if suggest(u) == f {
			msg := fmt.Sprintf("; the line has the unknown field %q: rename it to %q", u, f.String())
			if strings.HasSuffix(u, "_ms") {
				msg += " and convert milliseconds to seconds"
			}
			return msg
		}
	}
	return ""
}

// unknownWarning summarises the unknown fields of a file in one warning,
// names sorted, or "" when there were none.
func unknownWarning(path string, tallies map[string]*unknownField) string {
	if len(tallies) == 0 {
		return ""
	}
	names := make([]string, 0, len(tallies))
	for n := range tallies {
		names = append(names, n)
	}
	sort.Strings(names)
	const maxList = 20
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ignored %d unknown field", path, len(names))
	if len(names) != 1 {
		b.WriteString("s")
	}
	b.WriteString(" (not in the request-log contract):")
	for i, n := range names {
		if i == maxList {
			fmt.Fprintf(&b, " and %d more", len(names)-maxList)
			break
		}
		if i > 0 {
			b.WriteString(",")
		}
		u := tallies[n]
		fmt.Fprintf(&b, " %s (%d line", quoteVal([]byte(n)), u.lines)
		if u.lines != 1 {
			b.WriteString("s")
		}
		if f := suggest(n); f != fUnknown {
			fmt.Fprintf(&b, "; did you mean %q?", f.String())
		}
		b.WriteString(")")
	}
	return b.String()
}

// mergeUnknown adds the tallies of src into dst.
func mergeUnknown(dst, src map[string]*unknownField) {
	for n, u := range src {
		if v, ok := dst[n]; ok {
			v.lines += u.lines
		} else {
			dst[n] = &unknownField{name: n, lines: u.lines}
		}
	}
}

// localTime reports whether v is a date and time of day without a zone
// ("2026-11-29T15:06:14.25", or with a space for the T).
func localTime(v []byte) bool {
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
		if _, err := time.Parse(layout, string(v)); err == nil {
			return true
		}
	}
	return false
}
