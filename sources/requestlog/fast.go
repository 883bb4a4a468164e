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

// fastLine decodes b into r, which must hold sources.NewRequest()'s
// defaults, and reports whether it could. When it reports false, r holds
// garbage and the line must be decoded by parseLine with a fresh r.
func (d *decoder) fastLine(b []byte, r *sources.Request) bool {
	n := len(b)
	if n > 0 && b[n-1] == '\r' {
		n--
	}
	if n < 2 || b[0] != '{' || b[n-1] != '}' {
		return false
	}
	b = b[:n]
	d.lineUnknown = d.lineUnknown[:0]
	var seen uint32
	prev := objectStart
	i := 1
	for {
		// "key": the key that followed the previous one last time is
		// tried first, by a plain comparison, as parseLine does
		if b[i] != '"' {
			return false
		}
		f, j := d.predictKey(b, i, prev)
		if j == 0 {
			j = i + 1
			for j < n && b[j] != '"' {
				if c := b[j]; c == '\\' || c < 0x20 || c >= 0x7f {
					return false
				}
				j++
			}
			if j >= n {
				return false
			}
			f = lookupField(b[i+1 : j])
			if f == fUnknown {
				return false
			}
			d.next[prev] = f
		}
		if j+1 >= n || b[j+1] != ':' || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		prev = f
		i = j + 2
		if b[i] == ' ' {
			i++
		}
		// the value, up to the next ',' or the closing '}'
		switch f {
		case fTS, fTTFT, fTPOT, fE2E, fMaxITL:
			if f == fTS && b[i] == '"' {
				// an RFC 3339 time
				v, end, ok := plainString(b, i)
				if !ok || d.setTS(r, kString, v) != nil {
					return false
				}
				i = end
				break
			}
			end, x, ok := scanFloat(b, i)
			if !ok || d.setFloat(r, f, x, b[i:end]) != nil {
				return false
			}
			i = end
		case fPromptTokens, fOutputTokens, fCachedTokens, fAttempt:
			end, x, ok := scanFloat(b, i)
			if !ok || !(x > -maxExactInt && x < maxExactInt) || storeCount(r, f, int64(x), x == math.Trunc(x), b[i:end]) != nil {
				return false
			}
			i = end
		case fStatus, fClass, fReplica, fCanceledBy:
			v, end, ok := plainString(b, i)
			if !ok {
				return false
			}
			switch f {
			case fStatus:
				s, ok := fastStatus(v)
				if !ok {
					return false
				}
				r.Status = s
			case fClass:
				r.Class = d.internStr(v)
			case fCanceledBy:
				if len(v) > 0 { // "" is unknown, as if absent
					by, e := canceledBy(v)
					if e != nil {
						return false
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
				return false
			}
		default:
			return false
		}
		if i >= n-1 {
			break // at the closing '}' (or past it: a malformed line)
		}
		if b[i] != ',' {
			return false
		}
		i++
		if b[i] == ' ' {
			i++
		}
	}
	if i != n-1 {
		return false
	}
	return d.finish(r, seen) == nil
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
