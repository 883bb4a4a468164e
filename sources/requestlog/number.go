package requestlog

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"time"
)

// Number and time conversions for the hot path. Each function works on the
// value's bytes as they sit in the line buffer, allocates nothing on the
// common path, and falls back to the standard library (strconv, time) for
// every input the fast path does not cover, so results are exactly those of
// strconv.ParseFloat and time.Parse(time.RFC3339Nano, …).

// scanNumber returns the end of the JSON number starting at b[i]
// (RFC 8259 grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?), or
// ok=false with the offset of the first offending byte.
func scanNumber(b []byte, i int) (end int, ok bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return i, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, true
}

// isNumber reports whether all of s is one JSON number.
func isNumber(s []byte) bool {
	end, ok := scanNumber(s, 0)
	return ok && end == len(s)
}

// exactPow10 returns 10^n for 0 ≤ n ≤ 22, the powers of ten that are exact
// in float64.
func exactPow10(n int) float64 {
	switch n {
	case 0:
		return 1e0
	case 1:
		return 1e1
	case 2:
		return 1e2
	case 3:
		return 1e3
	case 4:
		return 1e4
	case 5:
		return 1e5
	case 6:
		return 1e6
	case 7:
		return 1e7
	case 8:
		return 1e8
	case 9:
		return 1e9
	case 10:
		return 1e10
	case 11:
		return 1e11
	case 12:
		return 1e12
	case 13:
		return 1e13
	case 14:
		return 1e14
	case 15:
		return 1e15
	case 16:
		return 1e16
	case 17:
		return 1e17
	case 18:
		return 1e18
	case 19:
		return 1e19
	case 20:
		return 1e20
	case 21:
		return 1e21
	}
	return 1e22
}

// parseFloat converts a valid JSON number (see isNumber) to float64 with the
// exact result of strconv.ParseFloat(s, 64). Decimals whose digits fit in 53
// bits and whose decimal exponent is at most 22 in magnitude are computed
// with one correctly rounded multiplication or division of two exact values
// (Clinger's fast path); everything else goes to strconv. An out-of-range
// value gives ±Inf, which callers reject.
func parseFloat(s []byte) float64 {
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	}
	var mant uint64
	digits := 0
	exp := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if digits < 19 {
			mant = mant*10 + uint64(s[i]-'0')
			if mant != 0 {
				digits++
			}
		} else {
			return slowFloat(s)
		}
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if digits >= 19 {
				return slowFloat(s)
			}
			mant = mant*10 + uint64(s[i]-'0')
			if mant != 0 {
				digits++
			}
			exp--
		}
	}
	if i < len(s) {
		// an exponent: rare in request logs
		return slowFloat(s)
	}
	if mant>>53 != 0 {
		return slowFloat(s)
	}
	f := float64(mant)
	switch {
	case exp == 0:
	case exp < 0 && exp >= -22:
		f /= exactPow10(-exp)
	default:
		return slowFloat(s)
	}
	if neg {
		f = -f
	}
	return f
}

// scanFloat scans the JSON number at b[i] and converts it in the same pass,
// with the result of scanNumber followed by parseFloat. ok is false when
// b[i:] does not start with a valid number; callers then rescan with
// scanScalar, which also knows the non-finite tokens, to report it.
func scanFloat(b []byte, i int) (end int, x float64, ok bool) {
	start := i
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	if i >= len(b) {
		return i, 0, false
	}
	var mant uint64
	digits, exp := 0, 0
	slow := false
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		for ; i < len(b) && b[i]-'0' <= 9; i++ {
			if digits < 19 {
				mant = mant*10 + uint64(b[i]-'0')
				digits++
			} else {
				slow = true
			}
		}
	default:
		return i, 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i]-'0' > 9 {
			return i, 0, false
		}
		if len(b)-i >= 8 && digits <= 11 {
			// the fraction's digits, up to 7, eight bytes at a time
			// (fewer than 8 digits followed by a non-digit: a
			// latency's 6); at most 18 digits in all, so none is
			// skipped and mant stays exact
			v := binary.LittleEndian.Uint64(b[i:])
			if n := fracDigits(v); n < 8 {
				mant = mant*pow10(n) + eightDigits((v^0x3030303030303030)<<(64-8*n))
				if mant != 0 {
					digits += n // an upper bound: leading zeros counted too
				}
				exp -= n
				i += n
			}
		}
		for ; i < len(b) && b[i]-'0' <= 9; i++ {
			if digits < 19 {
				mant = mant*10 + uint64(b[i]-'0')
				if mant != 0 {
					digits++
				}
				exp--
			} else {
				slow = true
			}
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i]-'0' > 9 {
			return i, 0, false
		}
		for i < len(b) && b[i]-'0' <= 9 {
			i++
		}
		slow = true
	}
	if slow || mant>>53 != 0 || exp < -22 {
		return i, slowFloat(b[start:i]), true
	}
	x = float64(mant)
	if exp < 0 {
		x /= exactPow10(-exp)
	}
	if neg {
		x = -x
	}
	return i, x, true
}

// fracDigits is the number of decimal digits the eight bytes of v (the
// first in its lowest byte) start with. Each byte less '0' is 0 … 9 for a
// digit; 0x76 added to a byte of 10 or more sets its high bit, as does a
// byte of 0x80 or more. A carry out of a non-digit byte reaches only the
// bytes after it, so the lowest high bit marks the first non-digit.
func fracDigits(v uint64) int {
	a := v ^ 0x3030303030303030
	m := ((a + 0x7676767676767676) | a) & 0x8080808080808080
	return bits.TrailingZeros64(m) >> 3 // 8 when there is none
}

// eightDigits is the value of eight decimal digits held one per byte
// (0 … 9, the first digit in the lowest byte): pairs, then fours, then all
// eight are combined by a multiply and a shift each.
func eightDigits(a uint64) uint64 {
	a = (a * (10<<8 + 1)) >> 8
	a = ((a & 0x00ff00ff00ff00ff) * (100<<16 + 1)) >> 16
	return ((a & 0x0000ffff0000ffff) * (10000<<32 + 1)) >> 32
}

// pow10 is 10^n for 0 ≤ n ≤ 7.
func pow10(n int) uint64 {
	switch n {
	case 0:
		return 1
	case 1:
		return 10
	case 2:
		return 100
	case 3:
		return 1000
	case 4:
		return 10000
	case 5:
		return 100000
	case 6:
		return 1000000
	}
	return 10000000
}

// slowFloat is the exact fallback. A range error yields ±Inf or 0 as
// strconv specifies, which the callers' range checks handle.
func slowFloat(s []byte) float64 {
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f
		}
		return math.NaN()
	}
	return f
}

// maxExactInt is the largest integer every smaller integer of which float64
// represents exactly (2^53).
const maxExactInt = 1 << 53

// parseCount converts a valid JSON number to a whole number. Plain digit
// strings of up to 18 digits are converted exactly; forms such as 12.0 or
// 1e3 are accepted when their value is a whole number below 2^53, where
// float64 is exact. integral is false for 12.5 and for anything larger.
func parseCount(s []byte) (n int64, integral bool) {
	i := 0
	neg := false
	if len(s) > 0 && s[0] == '-' {
		neg = true
		i = 1
	}
	if len(s)-i > 0 && len(s)-i <= 18 {
		var v int64
		j := i
		for ; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
			v = v*10 + int64(s[j]-'0')
		}
		if j == len(s) {
			if neg {
				v = -v
			}
			return v, true
		}
	}
	f := parseFloat(s)
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || math.Abs(f) >= maxExactInt {
		return 0, false
	}
	return int64(f), true
}

// parseRFC3339 parses an RFC 3339 timestamp to unix seconds with the result
// of time.Parse(time.RFC3339Nano, s). The common shape
// YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM) with 1–9 fraction digits and
// in-range fields is converted without allocating; anything else, including
// every invalid input, is handed to time.Parse, whose verdict stands. The
// forms RFC 3339 also allows are read as the one above: a space or a
// lower-case t between date and time (section 5.6's note; Python's
// str(datetime) writes "2026-01-01 00:00:00.25+00:00"), and a lower-case z.
func parseRFC3339(s []byte) (float64, error) {
	if n := len(s); n > 10 && (s[10] == ' ' || s[10] == 't') || n > 0 && s[n-1] == 'z' {
		c := make([]byte, n)
		copy(c, s)
		if n > 10 && (c[10] == ' ' || c[10] == 't') {
			c[10] = 'T'
		}
		if c[n-1] == 'z' {
			c[n-1] = 'Z'
		}
		s = c
	}
	if sec, nsec, ok := fastRFC3339(s); ok {
		return float64(sec) + float64(nsec)/1e9, nil
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil {
		return 0, err
	}
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9, nil
}

// num2 reads two ASCII digits.
func num2(s []byte) (int, bool) {
	a, b := s[0]-'0', s[1]-'0'
	if a > 9 || b > 9 {
		return 0, false
	}
	return int(a)*10 + int(b), true
}

func fastRFC3339(s []byte) (sec int64, nsec int, ok bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return 0, 0, false
	}
	yh, ok1 := num2(s[0:2])
	yl, ok2 := num2(s[2:4])
	mo, ok3 := num2(s[5:7])
	d, ok4 := num2(s[8:10])
	h, ok5 := num2(s[11:13])
	mi, ok6 := num2(s[14:16])
	se, ok7 := num2(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) {
		return 0, 0, false
	}
	y := yh*100 + yl
	if mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) || h > 23 || mi > 59 || se > 59 {
		return 0, 0, false
	}
	i := 19
	if s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			nsec = nsec*10 + int(s[i]-'0')
			i++
		}
		n := i - start
		if n == 0 || n > 9 {
			return 0, 0, false
		}
		for ; n < 9; n++ {
			nsec *= 10
		}
	}
	off := 0
	switch {
	case i == len(s)-1 && s[i] == 'Z':
	case i == len(s)-6 && (s[i] == '+' || s[i] == '-') && s[i+3] == ':':
		oh, ok1 := num2(s[i+1 : i+3])
		om, ok2 := num2(s[i+4 : i+6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, 0, false
		}
		off = (oh*60 + om) * 60
		if s[i] == '-' {
			off = -off
		}
	default:
		return 0, 0, false
	}
	sec = daysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+se) - int64(off)
	return sec, nsec, true
}

// daysIn is the length of month m (1–12) of year y in the proleptic
// Gregorian calendar.
func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil counts days from 1970-01-01 to y-m-d (Gregorian, y ≥ 0).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := (y + 400) / 400 // shifted so that y = -1 stays non-negative
	era--
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
