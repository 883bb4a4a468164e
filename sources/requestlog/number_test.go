package requestlog

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// floatCorpus holds decimals around the fast path's edges.
var floatCorpus = []string{
	"0", "-0", "1", "0.1", "0.2", "0.3", "0.25", "1.5", "123.456", "0.000001", "0.0000000000000000000001",
	"9007199254740991", "9007199254740992", "9007199254740993", "18446744073709551615", "18446744073709551616",
	"1234567890123456789", "12345678901234567890", "0.1234567890123456789", "3.141592653589793238462643383279",
	"1e22", "1e23", "1e-22", "1e-23", "1e308", "1e309", "1e-400", "2.2250738585072011e-308", "4.9e-324",
	"1795964400.125", "1795964400.123456789", "0.00000000000000000000000000000000000001", "100000000000000000000000",
	"9999999999999999999", "0.9999999999999999999", "-123.456e-7", "7E+2", "1.7976931348623157e308",
	// fractions read eight bytes at a time: 1 to 8 digits, int parts
	// of 11 digits (the most that allows it) and 12
	"0.1", "0.1234567", "0.12345678", "0.123456789", "0.0000001", "9.9999999", "1.0000000", "-0.0000000",
	"12345678901.1234567", "99999999999.9999999", "123456789012.1234567", "1767225600.001764",
}

func TestParseFloatMatchesStrconv(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if !isNumber([]byte(s)) {
			t.Fatalf("%q is not a JSON number", s)
		}
		want, _ := strconv.ParseFloat(s, 64)
		if got := parseFloat([]byte(s)); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("parseFloat(%q) = %v, strconv gives %v", s, got, want)
		}
		checkScanFloat(t, []byte(s+","))
		checkScanFloat(t, []byte(s+`,"tpot_s":0.25}`)) // as it sits in a line
	}
	for _, s := range floatCorpus {
		check(s)
	}
	for _, s := range []string{"", "-", "01", "1.", "1.e5", ".5", "1e", "1e+", "-x", "--1", "1.5e+3}", "0x10", "1_0"} {
		checkScanFloat(t, []byte(s))
		checkScanFloat(t, []byte(s+"/:0123456789"))
	}
	// a run ends at the bytes next to the digits: '/' and ':' to '?',
	// and bytes of 0x80 or more
	for _, s := range []string{"1:2345678901", "12.5;67890123", "0.1>2345678", "123456789?01234", "9/876543210", "1234567.1=2345678", "12345678901234567890:1",
		"0.123\xff\xff\xff\xff\xff", "0.1234567\x80\x80", "5.1\xb9\xb9\xb9\xb9\xb9\xb9\xb9", "0.12/45678", "0.1234567:", "0.123456/8", "0.12:45678", "1.5:::::::::", "0.9?9999999", "0.12:4,5678", "0.1:,,,,,,,,"} {
		checkScanFloat(t, []byte(s))
	}
	// random decimals in the shapes logs use: latencies, timestamps, long
	// fractions from float formatting
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		var s string
		switch rng.IntN(4) {
		case 0:
			s = strconv.FormatFloat(rng.Float64()*rng.ExpFloat64(), 'f', rng.IntN(12), 64)
		case 1:
			s = strconv.FormatFloat(1.7e9+rng.Float64()*1e8, 'f', rng.IntN(10), 64)
		case 2:
			s = strconv.FormatFloat(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20)), 'g', -1, 64)
		default:
			s = strconv.FormatUint(rng.Uint64()>>rng.IntN(64), 10) + "." + strconv.FormatUint(rng.Uint64()>>rng.IntN(64), 10)
		}
		check(s)
	}
}

func FuzzParseFloat(f *testing.F) {
	for _, s := range floatCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkScanFloat(t, []byte(s))
		if !isNumber([]byte(s)) {
			return
		}
		want, _ := strconv.ParseFloat(s, 64)
		if got := parseFloat([]byte(s)); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("parseFloat(%q) = %v, strconv gives %v", s, got, want)
		}
	})
}

// checkScanFloat compares the one-pass scanFloat with scanNumber followed
// by strconv.ParseFloat on the bytes at the start of b.
func checkScanFloat(t *testing.T, b []byte) {
	t.Helper()
	end, x, ok := scanFloat(b, 0)
	wantEnd, wantOK := scanNumber(b, 0)
	if ok != wantOK || (ok && end != wantEnd) {
		t.Fatalf("scanFloat(%q) = %d, %v; scanNumber gives %d, %v", b, end, ok, wantEnd, wantOK)
	}
	if !ok {
		return
	}
	want, _ := strconv.ParseFloat(string(b[:end]), 64)
	if math.Float64bits(x) != math.Float64bits(want) {
		t.Errorf("scanFloat(%q) = %v, strconv gives %v", b, x, want)
	}
}

func TestParseCount(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"812", 812, true}, {"-3", -3, true}, {"12.0", 12, true}, {"1e3", 1000, true},
		{"12.5", 0, false}, {"1e-1", 0, false}, {"123456789012345", 123456789012345, true},
		{"9007199254740993", 9007199254740993, true}, {"999999999999999999", 999999999999999999, true},
		{"9999999999999999999", 0, false}, {"9007199254740993.0", 0, false}, {"1e400", 0, false},
	} {
		got, ok := parseCount([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseCount(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

var tsCorpus = []string{
	"2026-11-29T15:00:00Z", "2026-11-29T15:00:00.5Z", "2026-11-29T15:00:00.123456789Z", "2026-11-29T15:00:00.1234567891Z",
	"2026-11-29T16:00:00+01:00", "2026-11-29T08:00:00-07:00", "2026-11-29T20:30:00.25+05:30", "0000-01-01T00:00:00Z",
	"1970-01-01T00:00:00Z", "2000-02-29T23:59:59Z", "1900-02-29T00:00:00Z", "2024-12-31T23:59:60Z", "2026-13-01T00:00:00Z",
	"2026-11-29T24:00:00Z", "2026-11-29t15:00:00z", "2026-11-29 15:00:00Z", "2026-11-29T15:00:00", "2026-11-29T15:00:00+24:00",
	"2026-11-29T15:00:00+23:59", "2026-11-29T15:00:00.Z", "2026-11-29T15:00:00,5Z", "9999-12-31T23:59:59.999999999-23:59",
}

// rfc3339Upper writes the forms RFC 3339 allows besides Go's layout as
// that layout: a space or a lower-case t between date and time, and a
// lower-case z. time.Parse of the result is parseRFC3339's reference.
func rfc3339Upper(s string) string {
	b := []byte(s)
	if len(b) > 10 && (b[10] == ' ' || b[10] == 't') {
		b[10] = 'T'
	}
	if n := len(b); n > 0 && b[n-1] == 'z' {
		b[n-1] = 'Z'
	}
	return string(b)
}

// TestRFC3339OtherForms: the forms RFC 3339 allows besides Go's layout
// name the instant the layout's form names; a time without a zone is still
// refused.
func TestRFC3339OtherForms(t *testing.T) {
	want, err := parseRFC3339([]byte("2026-11-29T15:00:00.25+02:00"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"2026-11-29 15:00:00.25+02:00", "2026-11-29t15:00:00.25+02:00", "2026-11-29 13:00:00.25Z", "2026-11-29t13:00:00.25z", "2026-11-29 13:00:00.25z"} {
		if got, err := parseRFC3339([]byte(s)); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"2026-11-29 15:00:00", "2026-11-29 15:00:00.25", "2026-11-29  15:00:00Z"} {
		if _, err := parseRFC3339([]byte(s)); err == nil {
			t.Errorf("%q: read, want an error", s)
		}
	}
}

// TestRFC3339MatchesTime checks the fast path against time.Parse on the
// corpus and on random valid timestamps.
func TestRFC3339MatchesTime(t *testing.T) {
	check := func(s string) {
		t.Helper()
		got, gerr := parseRFC3339([]byte(s))
		tm, werr := time.Parse(time.RFC3339Nano, rfc3339Upper(s))
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: error %v, time.Parse error %v", s, gerr, werr)
		}
		if werr == nil {
			want := float64(tm.Unix()) + float64(tm.Nanosecond())/1e9
			if got != want {
				t.Errorf("%q: %v, time.Parse gives %v", s, got, want)
			}
		}
	}
	for _, s := range tsCorpus {
		check(s)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		tm := time.Unix(rng.Int64N(253402300799), rng.Int64N(1e9)).UTC()
		layout := "2006-01-02T15:04:05"
		if n := rng.IntN(10); n > 0 {
			layout += "." + "000000000"[:n]
		}
		zone := time.FixedZone("", (rng.IntN(48*60)-24*60)*60)
		if rng.IntN(2) == 0 {
			zone = time.UTC
		}
		check(tm.In(zone).Format(layout + "Z07:00"))
	}
}

func FuzzRFC3339(f *testing.F) {
	for _, s := range tsCorpus {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, gerr := parseRFC3339([]byte(s))
		tm, werr := time.Parse(time.RFC3339Nano, rfc3339Upper(s))
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: error %v, time.Parse error %v", s, gerr, werr)
		}
		if werr == nil {
			if want := float64(tm.Unix()) + float64(tm.Nanosecond())/1e9; got != want {
				t.Errorf("%q: %v, time.Parse gives %v", s, got, want)
			}
		}
	})
}
