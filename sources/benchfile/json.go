package benchfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// This file is the tolerant JSON front end shared by every reader in the
// package. Python's json module writes the bare tokens Infinity, -Infinity and
// NaN for non-finite floats; encoding/json rejects them. The scanner below is
// a small pull tokenizer over the whole file that accepts those tokens where a
// number may stand (never inside strings, where they are ordinary text) and
// otherwise follows RFC 8259 strictly, so genuinely malformed input is still
// rejected. Every error carries a byte offset that is turned into line:col
// only when reported. Readers walk the document with it and decode the keys
// they need straight into typed slices, skipping the rest without building a
// tree, which keeps 100 MB files cheap.

// ParseError is a problem in an input file, located by line and column.
// Line and Col are 1-based; Col counts bytes from the start of the line.
// Line is 0 when the problem concerns the whole file (e.g. a missing key).
type ParseError struct {
	Path string // file path as given to Read
	Line int    // 1-based line; 0 when not tied to a position
	Col  int    // 1-based byte column; 0 when not tied to a position
	Msg  string // what is wrong and, where possible, what to do
}

// Error formats the problem as path:line:col: msg (or path: msg).
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Line, e.Col, e.Msg)
}

// lineCol converts a byte offset in buf into a 1-based line and byte column.
func lineCol(buf []byte, off int) (line, col int) {
	if off > len(buf) {
		off = len(buf)
	}
	if off < 0 {
		off = 0
	}
	line = 1 + bytes.Count(buf[:off], []byte{'\n'})
	start := bytes.LastIndexByte(buf[:off], '\n') + 1
	return line, off - start + 1
}

// kind is the type of the next JSON value.
type kind uint8

const (
	kindInvalid kind = iota
	kindObject
	kindArray
	kindString
	kindNumber // includes Infinity, -Infinity, NaN
	kindBool
	kindNull
)

func (k kind) String() string {
	return [...]string{"invalid", "an object", "an array", "a string", "a number", "a boolean", "null"}[k]
}

// scanner walks one JSON (or JSON Lines) buffer.
type scanner struct {
	buf  []byte
	pos  int
	path string
	// hint is appended to type errors: which layout was expected and how
	// to choose another reader.
	hint string
}

// errAt builds a ParseError at byte offset off.
func (s *scanner) errAt(off int, format string, args ...any) *ParseError {
	l, c := lineCol(s.buf, off)
	return &ParseError{Path: s.path, Line: l, Col: c, Msg: fmt.Sprintf(format, args...)}
}

func (s *scanner) ws() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// atEOF reports whether only whitespace remains.
func (s *scanner) atEOF() bool {
	s.ws()
	return s.pos >= len(s.buf)
}

// peek returns the kind of the next value without consuming it.
func (s *scanner) peek() kind {
	s.ws()
	if s.pos >= len(s.buf) {
		return kindInvalid
	}
	switch c := s.buf[s.pos]; {
	case c == '{':
		return kindObject
	case c == '[':
		return kindArray
	case c == '"':
		return kindString
	case c == '-' || (c >= '0' && c <= '9') || c == 'I' || c == 'N':
		return kindNumber
	case c == 't' || c == 'f':
		return kindBool
	case c == 'n':
		return kindNull
	}
	return kindInvalid
}

// unexpected reports what was found at the current position.
func (s *scanner) unexpected(want string) *ParseError {
	s.ws()
	if s.pos >= len(s.buf) {
		return s.errAt(s.pos, "unexpected end of file, want %s (the file is truncated: was the benchmark interrupted while writing it?)", want)
	}
	c := s.buf[s.pos]
	if c < 0x20 || c >= 0x7f {
		return s.errAt(s.pos, "invalid character 0x%02x, want %s", c, want)
	}
	return s.errAt(s.pos, "invalid character %q, want %s", c, want)
}

// expect consumes byte c (after whitespace).
func (s *scanner) expect(c byte, want string) error {
	s.ws()
	if s.pos < len(s.buf) && s.buf[s.pos] == c {
		s.pos++
		return nil
	}
	return s.unexpected(want)
}

// literal consumes the exact word w.
func (s *scanner) literal(w string) bool {
	if len(s.buf)-s.pos >= len(w) && string(s.buf[s.pos:s.pos+len(w)]) == w {
		s.pos += len(w)
		return true
	}
	return false
}

// number reads a JSON number or one of Python's Infinity, -Infinity, NaN.
func (s *scanner) number() (float64, error) {
	s.ws()
	start := s.pos
	b := s.buf
	i := s.pos
	if i < len(b) && b[i] == 'N' {
		if s.literal("NaN") {
			return math.NaN(), nil
		}
		return 0, s.unexpected("a number")
	}
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	if i < len(b) && b[i] == 'I' {
		s.pos = i
		if s.literal("Infinity") {
			if neg {
				return math.Inf(-1), nil
			}
			return math.Inf(1), nil
		}
		s.pos = start
		return 0, s.unexpected("a number")
	}
	// Scan the syntax, accumulating up to 19 significant digits. When the
	// digits fit in 53 bits and the decimal exponent is within ±22, the value
	// is float64(mantissa) scaled by an exact power of ten, which is
	// correctly rounded (Clinger's fast path); otherwise strconv decides.
	var mant uint64
	nd, exp10, trunc := 0, 0, false
	digit := func(c byte) {
		if nd < 19 {
			mant = mant*10 + uint64(c-'0')
			if mant != 0 {
				nd++
			}
		} else {
			trunc = true
		}
	}
	digits := i
	if i < len(b) && b[i] == '0' {
		i++
	} else {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if nd >= 19 {
				exp10++
			}
			digit(b[i])
			i++
		}
	}
	if i == digits {
		s.pos = start
		return 0, s.unexpected("a number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		f := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if nd < 19 {
				exp10--
			}
			digit(b[i])
			i++
		}
		if i == f {
			return 0, s.errAt(i, "malformed number %q: digits must follow the decimal point", b[start:i])
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		f := i
		e := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			if e < 100000 {
				e = e*10 + int(b[i]-'0')
			}
			i++
		}
		if i == f {
			return 0, s.errAt(i, "malformed number %q: digits must follow the exponent", b[start:i])
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	if !trunc && mant < 1<<53 && exp10 >= -22 && exp10 <= 22 {
		s.pos = i
		v := float64(mant)
		if exp10 < 0 {
			v /= math.Pow10(-exp10)
		} else {
			v *= math.Pow10(exp10)
		}
		if neg {
			v = -v
		}
		return v, nil
	}
	s.pos = i
	v, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		// Only range errors are possible here; ±Inf is what Python would
		// have meant, but an overflowing literal is suspicious: say so.
		return 0, s.errAt(start, "number %s is out of range for a 64-bit float", b[start:i])
	}
	return v, nil
}

// str reads a JSON string. Strings without escapes are returned without a
// second pass; escaped strings are decoded by encoding/json for exactness.
func (s *scanner) str() (string, error) {
	raw, err := s.rawString()
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var out string
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", s.errAt(s.pos-len(raw), "malformed string escape: %v", err)
	}
	return out, nil
}

// rawString consumes a string and returns it with its quotes.
func (s *scanner) rawString() ([]byte, error) {
	s.ws()
	if s.pos >= len(s.buf) || s.buf[s.pos] != '"' {
		return nil, s.unexpected("a string")
	}
	start := s.pos
	i := s.pos + 1
	b := s.buf
	for {
		j := bytes.IndexAny(b[i:], "\"\\\n\r\t\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f")
		if j < 0 {
			return nil, s.errAt(start, "unterminated string (the file is truncated or a quote is missing)")
		}
		i += j
		switch c := b[i]; c {
		case '"':
			s.pos = i + 1
			if !utf8.Valid(b[start:s.pos]) {
				return nil, s.errAt(start, "string is not valid UTF-8")
			}
			return b[start:s.pos], nil
		case '\\':
			if i+1 >= len(b) {
				return nil, s.errAt(start, "unterminated string (the file is truncated or a quote is missing)")
			}
			i += 2
		default:
			return nil, s.errAt(i, "control character 0x%02x inside a string (strings must not span lines; is a quote missing?)", c)
		}
	}
}

// skipString consumes a string without validating UTF-8 (used for skipped
// values, e.g. generated texts, which are the bulk of large files).
func (s *scanner) skipString() error {
	s.ws()
	if s.pos >= len(s.buf) || s.buf[s.pos] != '"' {
		return s.unexpected("a string")
	}
	start := s.pos
	i := s.pos + 1
	b := s.buf
	for {
		j := bytes.IndexAny(b[i:], "\"\\\n")
		if j < 0 {
			return s.errAt(start, "unterminated string (the file is truncated or a quote is missing)")
		}
		i += j
		switch b[i] {
		case '"':
			s.pos = i + 1
			return nil
		case '\\':
			if i+1 >= len(b) {
				return s.errAt(start, "unterminated string (the file is truncated or a quote is missing)")
			}
			i += 2
		default:
			return s.errAt(i, "newline inside a string (is a closing quote missing?)")
		}
	}
}

// skip consumes one value of any kind, validating its syntax.
func (s *scanner) skip() error {
	switch s.peek() {
	case kindObject:
		return s.object(func(string, int) error { return s.skip() })
	case kindArray:
		return s.array(func(int) error { return s.skip() })
	case kindString:
		return s.skipString()
	case kindNumber:
		_, err := s.number()
		return err
	case kindBool:
		if s.literal("true") || s.literal("false") {
			return nil
		}
	case kindNull:
		if s.literal("null") {
			return nil
		}
	}
	return s.unexpected("a value")
}

// object iterates the members of an object, calling f with each key and the
// byte offset of the key; f must consume the member's value.
func (s *scanner) object(f func(key string, off int) error) error {
	if err := s.expect('{', "an object"); err != nil {
		return err
	}
	s.ws()
	if s.pos < len(s.buf) && s.buf[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		s.ws()
		off := s.pos
		key, err := s.str()
		if err != nil {
			if s.pos < len(s.buf) && s.buf[s.pos] != '"' {
				return s.unexpected("a quoted key")
			}
			return err
		}
		if err := s.expect(':', "':' after object key"); err != nil {
			return err
		}
		if err := f(key, off); err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.buf) {
			return s.unexpected("',' or '}'")
		}
		switch s.buf[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.unexpected("',' or '}' after object member")
		}
	}
}

// array iterates the elements of an array, calling f with each index; f must
// consume the element.
func (s *scanner) array(f func(i int) error) error {
	if err := s.expect('[', "an array"); err != nil {
		return err
	}
	s.ws()
	if s.pos < len(s.buf) && s.buf[s.pos] == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := f(i); err != nil {
			return err
		}
		s.ws()
		if s.pos >= len(s.buf) {
			return s.unexpected("',' or ']'")
		}
		switch s.buf[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.unexpected("',' or ']' after array element")
		}
	}
}

// typeErr reports a value of the wrong kind for key.
func (s *scanner) typeErr(key string, want string) error {
	k := s.peek()
	if k == kindInvalid {
		return s.unexpected("a value")
	}
	return s.errAt(s.pos, "%s: want %s, found %s%s", key, want, k, s.hint)
}

// numOrNull reads a number, returning NaN for null (ok=false).
func (s *scanner) numOrNull(key string) (v float64, isNull bool, err error) {
	switch s.peek() {
	case kindNumber:
		v, err = s.number()
		return v, false, err
	case kindNull:
		s.literal("null")
		return math.NaN(), true, nil
	}
	return 0, false, s.typeErr(key, "a number")
}

// num reads a number (Infinity and NaN included).
func (s *scanner) num(key string) (float64, error) {
	if s.peek() != kindNumber {
		return 0, s.typeErr(key, "a number")
	}
	return s.number()
}

// strOrNull reads a string; null yields "".
func (s *scanner) strOrNull(key string) (string, error) {
	switch s.peek() {
	case kindString:
		return s.str()
	case kindNull:
		s.literal("null")
		return "", nil
	}
	return "", s.typeErr(key, "a string")
}

// floats reads an array of numbers, recording each element's offset when
// offs is non-nil.
func (s *scanner) floats(key string, offs *[]int32) ([]float64, error) {
	if s.peek() != kindArray {
		return nil, s.typeErr(key, "an array of numbers")
	}
	var out []float64
	err := s.array(func(int) error {
		s.ws()
		if offs != nil {
			*offs = append(*offs, int32(min(s.pos, math.MaxInt32)))
		}
		v, null, err := s.numOrNull(key + " element")
		if err != nil {
			return err
		}
		_ = null // null becomes NaN; callers decide whether that is allowed
		out = append(out, v)
		return nil
	})
	return out, err
}

// strs reads an array of strings (null elements become "").
func (s *scanner) strs(key string) ([]string, error) {
	if s.peek() != kindArray {
		return nil, s.typeErr(key, "an array of strings")
	}
	var out []string
	err := s.array(func(int) error {
		v, err := s.strOrNull(key + " element")
		out = append(out, v)
		return err
	})
	return out, err
}

// value decodes any value into Go's generic form (map[string]any, []any,
// string, float64, bool, nil). Used for small nested records only.
func (s *scanner) value() (any, error) {
	switch s.peek() {
	case kindObject:
		m := map[string]any{}
		err := s.object(func(k string, _ int) error {
			v, err := s.value()
			m[k] = v
			return err
		})
		return m, err
	case kindArray:
		var a []any
		err := s.array(func(int) error {
			v, err := s.value()
			a = append(a, v)
			return err
		})
		return a, err
	case kindString:
		return s.str()
	case kindNumber:
		return s.number()
	case kindBool:
		if s.literal("true") {
			return true, nil
		}
		if s.literal("false") {
			return false, nil
		}
	case kindNull:
		if s.literal("null") {
			return nil, nil
		}
	}
	return nil, s.unexpected("a value")
}

// document decodes a whole small document with value and checks that
// nothing follows it; the map is nil when the document is not an object.
func (s *scanner) document() (map[string]any, error) {
	v, err := s.value()
	if err != nil {
		return nil, err
	}
	if err := s.end(); err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	return m, nil
}

// end checks that nothing but whitespace follows the document.
func (s *scanner) end() error {
	if s.atEOF() {
		return nil
	}
	return s.errAt(s.pos, "unexpected data after the end of the JSON document")
}
