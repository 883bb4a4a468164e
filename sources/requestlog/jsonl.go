package requestlog

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/goodput-dev/goodput/sources"
)

// This file is the JSON Lines front end: a scanner for one flat JSON object
// per line that decodes the contract's fields straight into a Request. It
// follows RFC 8259 strictly (strings with escapes and valid UTF-8, numbers,
// true, false, null; nested objects and arrays are skipped when they belong
// to unknown fields) and recognises Python's bare NaN / Infinity tokens only
// to reject them with a clear message. Keys and values are slices of the line
// buffer; only escaped strings are copied, into a reused scratch buffer.

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

func syntaxErr(i int, format string, args ...any) *lineErr {
	return &lineErr{col: i + 1, msg: fmt.Sprintf(format, args...)}
}

// unexpected describes the byte at b[i] (or the end of the line).
func unexpected(b []byte, i int, want string) *lineErr {
	if i >= len(b) {
		return syntaxErr(i, "malformed JSON: the line ends inside the object, want %s (is the line truncated, or does one object span several lines? each request must be one line)", want)
	}
	c := b[i]
	if c < 0x20 || c >= 0x7f {
		return syntaxErr(i, "malformed JSON: invalid character 0x%02x, want %s", c, want)
	}
	return syntaxErr(i, "malformed JSON: invalid character %q, want %s", c, want)
}

// scanString reads the JSON string whose opening quote is at b[i]. It
// returns the decoded contents (a slice of b when there are no escapes,
// otherwise of *scratch) and the offset after the closing quote.
func scanString(b []byte, i int, scratch *[]byte) ([]byte, int, *lineErr) {
	start := i + 1
	j := start
	// eight bytes at a time while none of them needs a closer look
	for ; j+8 <= len(b); j += 8 {
		if m := specialBytes(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			j += bits.TrailingZeros64(m) / 8
			break
		}
	}
	for ; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			return b[start:j], j + 1, nil
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return slowString(b, start, j, scratch)
		}
	}
	return nil, len(b), syntaxErr(i, "malformed JSON: unterminated string (the line ends before the closing quote)")
}

// specialBytes flags, in the high bit of each byte, the bytes of x (eight
// string bytes, little-endian) that end the plain part of a JSON string: a
// quote, a backslash, a control character or a non-ASCII byte. Bytes above
// the lowest flagged one may be flagged spuriously (borrows propagate), so
// only the lowest flag is meaningful.
func specialBytes(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	zeroIn := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	quote := zeroIn(x ^ ('"' * ones))
	bslash := zeroIn(x ^ ('\\' * ones))
	ctrl := (x - 0x20*ones) & ^x & highs
	return quote | bslash | ctrl | x&highs
}

// slowString decodes a string with escapes or non-ASCII bytes; b[start:j] is
// plain ASCII already checked.
func slowString(b []byte, start, j int, scratch *[]byte) ([]byte, int, *lineErr) {
	out := append((*scratch)[:0], b[start:j]...)
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			*scratch = out
			return out, j + 1, nil
		case c < 0x20:
			return nil, j, syntaxErr(j, "malformed JSON: control character 0x%02x inside a string (escape it as \\u%04x)", c, c)
		case c < 0x80:
			if c != '\\' {
				out = append(out, c)
				j++
				continue
			}
			if j+1 >= len(b) {
				return nil, j, syntaxErr(j, "malformed JSON: unterminated escape in string")
			}
			e := b[j+1]
			j += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, n, ok := hex4(b, j)
				if !ok {
					return nil, j, syntaxErr(j-2, "malformed JSON: \\u must be followed by four hex digits")
				}
				j += n
				if utf16.IsSurrogate(r) {
					// a pair gives one code point; a lone surrogate is
					// replaced, as encoding/json does
					r2, n2, ok2 := rune(0), 0, false
					if j+1 < len(b) && b[j] == '\\' && b[j+1] == 'u' {
						r2, n2, ok2 = hex4(b, j+2)
					}
					if d := utf16.DecodeRune(r, r2); ok2 && d != utf8.RuneError {
						r = d
						j += 2 + n2
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				return nil, j - 2, syntaxErr(j-2, "malformed JSON: invalid escape \\%c in string", e)
			}
		default:
			r, n := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && n <= 1 {
				return nil, j, syntaxErr(j, "invalid UTF-8 in string (byte 0x%02x); the log must be UTF-8 encoded", c)
			}
			out = append(out, b[j:j+n]...)
			j += n
		}
	}
	return nil, len(b), syntaxErr(start-1, "malformed JSON: unterminated string (the line ends before the closing quote)")
}

// hex4 reads four hex digits at b[i].
func hex4(b []byte, i int) (rune, int, bool) {
	if i+4 > len(b) {
		return 0, 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, 4, true
}

// maxDepth bounds the nesting of skipped values.
const maxDepth = 1000

// skipNested skips the object or array opening at b[i], checking its
// syntax, and returns the offset after it.
func skipNested(b []byte, i int, scratch *[]byte) (int, *lineErr) {
	var stack [maxDepth]byte
	depth := 0
	for {
		// at a value
		i = skipWS(b, i)
		if i >= len(b) {
			return i, unexpected(b, i, "a value")
		}
		c := b[i]
		switch {
		case c == '{' || c == '[':
			if depth == maxDepth {
				return i, syntaxErr(i, "nested more than %d levels deep", maxDepth)
			}
			stack[depth] = c
			depth++
			i = skipWS(b, i+1)
			if i < len(b) && ((c == '{' && b[i] == '}') || (c == '[' && b[i] == ']')) {
				depth--
				i++
				break
			}
			if c == '{' {
				var e *lineErr
				if i, e = skipKey(b, i, scratch); e != nil {
					return i, e
				}
			}
			continue
		default:
			end, _, e := scanScalar(b, i, scratch)
			if e != nil {
				return end, e
			}
			i = end
		}
		// after a value
		for {
			if depth == 0 {
				return i, nil
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return i, unexpected(b, i, "',' or a closing bracket")
			}
			open := stack[depth-1]
			if b[i] == ',' {
				i++
				if open == '{' {
					var e *lineErr
					if i, e = skipKey(b, skipWS(b, i), scratch); e != nil {
						return i, e
					}
				}
				break
			}
			if (open == '{' && b[i] == '}') || (open == '[' && b[i] == ']') {
				depth--
				i++
				continue
			}
			return i, unexpected(b, i, "',' or a closing bracket")
		}
	}
}

// skipKey reads `"key":` inside a skipped object.
func skipKey(b []byte, i int, scratch *[]byte) (int, *lineErr) {
	if i >= len(b) || b[i] != '"' {
		return i, unexpected(b, i, "a quoted field name")
	}
	_, i, e := scanString(b, i, scratch)
	if e != nil {
		return i, e
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, unexpected(b, i, "':' after the field name")
	}
	return i + 1, nil
}

// scanScalar reads a string, number, literal or non-finite token at b[i].
func scanScalar(b []byte, i int, scratch *[]byte) (end int, k kind, e *lineErr) {
	c := b[i]
	switch {
	case c == '"':
		_, end, e = scanString(b, i, scratch)
		return end, kString, e
	case c == '-' || (c >= '0' && c <= '9'):
		if c == '-' && i+1 < len(b) && b[i+1] == 'I' {
			if hasWord(b, i+1, "Infinity") {
				return i + 9, kNonFinite, nil
			}
		}
		end, ok := scanNumber(b, i)
		if !ok {
			return end, kNumber, unexpected(b, end, "a digit (malformed number)")
		}
		return end, kNumber, nil
	case c == 't' && hasWord(b, i, "true"):
		return i + 4, kTrue, nil
	case c == 'f' && hasWord(b, i, "false"):
		return i + 5, kFalse, nil
	case c == 'n' && hasWord(b, i, "null"):
		return i + 4, kNull, nil
	case c == 'N' && hasWord(b, i, "NaN"):
		return i + 3, kNonFinite, nil
	case c == 'I' && hasWord(b, i, "Infinity"):
		return i + 8, kNonFinite, nil
	}
	return i, kNull, unexpected(b, i, "a value (string, number, true, false or null)")
}

func hasWord(b []byte, i int, w string) bool {
	return len(b)-i >= len(w) && string(b[i:i+len(w)]) == w
}

// parseLine decodes one line into r, which must hold sources.NewRequest()'s
// defaults. blank is true for lines with only whitespace.
func (d *decoder) parseLine(b []byte, r *sources.Request) (blank bool, err *lineErr) {
	i := skipWS(b, 0)
	if i == len(b) {
		return true, nil
	}
	if b[i] != '{' {
		if b[i] == '[' || b[i] == '"' || b[i] == '-' || (b[i] >= '0' && b[i] <= '9') || b[i] == 't' || b[i] == 'f' || b[i] == 'n' {
			return false, syntaxErr(i, "the line is not a JSON object (each line must be one {...} object with ts and status)")
		}
		return false, unexpected(b, i, "'{' (each line must be one JSON object)")
	}
	d.lineUnknown = d.lineUnknown[:0]
	var seen uint32
	prev := objectStart
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return false, unexpected(b, i, "a quoted field name")
			}
			// the key that followed the previous one last time first
			f, j := d.predictKey(b, i, prev)
			if j > 0 {
				j++ // past the closing quote
			} else {
				key, jj, e := scanString(b, i, &d.scratch)
				if e != nil {
					return false, e
				}
				j = jj
				f = lookupField(key)
				d.next[prev] = f
				if f == fUnknown {
					d.noteUnknown(key)
				}
			}
			prev = f
			if f != fUnknown && seen&(1<<f) != 0 {
				return false, &lineErr{col: i + 1, field: f, msg: "given twice in one object (keep one)"}
			}
			i = skipWS(b, j)
			if i >= len(b) || b[i] != ':' {
				return false, unexpected(b, i, "':' after the field name")
			}
			i = skipWS(b, i+1)
			if i >= len(b) {
				return false, unexpected(b, i, "a value")
			}
			vstart := i
			var k kind
			var v []byte
			var e *lineErr
			switch c := b[i]; c {
			case '"':
				if f == fUnknown {
					_, i, e = scanString(b, i, &d.scratch)
				} else {
					v, i, e = scanString(b, i, &d.scratch)
				}
				k = kString
			case '{', '[':
				i, e = skipNested(b, i, &d.scratch)
				k = kObject
				if c == '[' {
					k = kArray
				}
			default:
				switch f {
				case fTS, fTTFT, fTPOT, fE2E, fMaxITL:
					// the common case of a number for a float field: scan
					// and convert in one pass
					if end, x, ok := scanFloat(b, i); ok {
						seen |= 1 << f
						if e := d.setFloat(r, f, x, b[i:end]); e != nil {
							return false, e
						}
						i = end
						goto next
					}
				case fPromptTokens, fOutputTokens, fCachedTokens, fAttempt:
					// likewise for counts, while float64 holds them exactly
					if end, x, ok := scanFloat(b, i); ok && x > -maxExactInt && x < maxExactInt {
						seen |= 1 << f
						if e := storeCount(r, f, int64(x), x == math.Trunc(x), b[i:end]); e != nil {
							return false, e
						}
						i = end
						goto next
					}
				}
				i, k, e = scanScalar(b, i, &d.scratch)
				v = b[vstart:i]
			}
			if e != nil {
				return false, e
			}
			if f != fUnknown {
				if k != kNull {
					seen |= 1 << f
				}
				if e := d.set(r, f, k, v); e != nil {
					return false, e
				}
			}
		next:
			i = skipWS(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return false, unexpected(b, i, "',' or '}' after a value")
		}
	}
	if i = skipWS(b, i); i != len(b) {
		return false, syntaxErr(i, "unexpected data after the object (one object per line)")
	}
	return false, d.finish(r, seen)
}
