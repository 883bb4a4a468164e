package requestlog

import (
	"math"

	"github.com/goodput-dev/goodput/sources"
)

// This file is the fast path of the JSON Lines front end: fastLine decodes
// the shape request logs nearly always have — one flat object on the line,
// only the contract's fields, each once, numbers for numbers, strings of
// plain printable ASCII without escapes, true/false for quality_ok, at most
// one space after ':' and ',' — in one pass with no lookahead or
// bookkeeping, and gives up on anything else (whitespace elsewhere, null,
// escapes, non-ASCII, unknown or repeated keys, nested values, a value
// the contract refuses). A line it gives up on is decoded
// by parseLine, the strict parser, from the start: every error and warning
// comes from parseLine alone, so messages are the same whichever path a
// line takes, and a line fastLine accepts decodes to the Request parseLine
// gives it (FuzzFastLine checks both).

// fastLine decodes b, one line without its '\n', into r, which must hold
// sources.NewRequest()'s defaults, and reports whether it could. When it
// reports false, r holds garbage and the line must be decoded by
// parseLine with a fresh r.
func (d *decoder) fastLine(b []byte, r *sources.Request) bool {
	end := d.fastRecord(b, r)
	return end > 0 && end == len(b) && b[end-1] != '\n'
}

// fastRecord is fastLine on the line that starts b (the rest of a chunk),
// found as it is decoded rather than first: it returns the length of the
// line with its '\n' (or "\r\n", or up to the end of b), or 0 when
// fastLine would decline the line. No token the fast path takes can hold
// a '\n' (strings and keys refuse control bytes, numbers and words end at
// any other byte), so the object it reads lies within the line, and the
// line is the object, an optional '\r' and the '\n'.
func (d *decoder) fastRecord(b []byte, r *sources.Request) int {
	if len(b) < 2 || b[0] != '{' {
		return 0
	}
	n := len(b)
	d.lineUnknown = d.lineUnknown[:0]
	var seen uint32
	prev := objectStart
	i := 1
	for {
		// "key": the key that followed the previous one last time is
		// tried first, by a plain comparison, as parseLine does
		if i >= n || b[i] != '"' {
			return 0
		}
		f, j := d.predictKey(b, i, prev)
		if j == 0 {
			j = i + 1
			for j < n && b[j] != '"' {
				if c := b[j]; c == '\\' || c < 0x20 || c >= 0x7f {
					return 0
				}
				j++
			}
			if j >= n {
				return 0
			}
			f = lookupField(b[i+1 : j])
			if f == fUnknown {
				return 0
			}
			d.next[prev] = f
		}
		if j+1 >= n || b[j+1] != ':' || seen&(1<<f) != 0 {
			return 0
		}
		seen |= 1 << f
		prev = f
		i = j + 2
		if i < n && b[i] == ' ' {
			i++
		}
		if i >= n {
			return 0
		}
		// the value, up to the next ',' or the closing '}'
		switch f {
		case fTS, fTTFT, fTPOT, fE2E, fMaxITL:
			if f == fTS && b[i] == '"' {
				// an RFC 3339 time
				v, end, ok := plainString(b, i)
				if !ok || d.setTS(r, kString, v) != nil {
					return 0
				}
				i = end
				break
			}
			end, x, ok := scanFloat(b, i)
			if !ok || d.setFloat(r, f, x, b[i:end]) != nil {
				return 0
			}
			i = end
		case fPromptTokens, fOutputTokens, fCachedTokens, fAttempt:
			end, x, ok := scanFloat(b, i)
			if !ok || !(x > -maxExactInt && x < maxExactInt) || storeCount(r, f, int64(x), x == math.Trunc(x), b[i:end]) != nil {
				return 0
			}
			i = end
		case fStatus, fClass, fReplica, fCanceledBy, fUser:
			v, end, ok := plainString(b, i)
			if !ok {
				return 0
			}
			switch f {
			case fStatus:
				s, ok := fastStatus(v)
				if !ok {
					return 0
				}
				r.Status = s
			case fClass:
				r.Class = d.internStr(v)
			case fUser:
				if len(v) > 0 { // "" names no one, as if absent
					r.User = sources.UserOf(v)
				}
			case fCanceledBy:
				if len(v) > 0 { // "" is unknown, as if absent
					by, e := canceledBy(v)
					if e != nil {
						return 0
					}
					r.CanceledBy = by
				}
			default:
				r.Replica = d.internStr(v)
			}
			i = end
		case fQualityOK:
			switch {
			case hasWord(b, i, "true"):
				r.Quality = sources.QualityOK
				i += 4
			case hasWord(b, i, "false"):
				r.Quality = sources.QualityBad
				i += 5
			default:
				return 0
			}
		default:
			return 0
		}
		if i >= n {
			return 0
		}
		if b[i] == '}' {
			break
		}
		if b[i] != ',' {
			return 0
		}
		i++
		if i < n && b[i] == ' ' {
			i++
		}
	}
	// the line ends after the '}': at a '\n', "\r\n", or the end of b
	// (then after one '\r' at most)
	end := i + 1
	switch {
	case end == n:
	case b[end] == '\n':
		end++
	case b[end] == '\r' && (end+1 == n || b[end+1] == '\n'):
		end = min(end+2, n)
	default:
		return 0
	}
	if d.finish(r, seen) != nil {
		return 0
	}
	return end
}

// plainString reads the string whose opening quote is at b[i] when it
// holds only printable ASCII without escapes; ok is false otherwise.
func plainString(b []byte, i int) (v []byte, end int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x7f:
			return nil, j, false
		}
	}
	return nil, len(b), false
}
