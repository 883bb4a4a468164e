package benchfile

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestNumberMatchesStrconv checks the scanner's fast decimal path against
// strconv.ParseFloat, bit for bit, on seeded random numbers in many shapes.
func TestNumberMatchesStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var inputs []string
	for range 20000 {
		v := math.Float64frombits(rng.Uint64())
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		inputs = append(inputs, strconv.FormatFloat(v, 'g', -1, 64))
		u := rng.Float64() * math.Pow10(rng.IntN(12)-6)
		inputs = append(inputs,
			strconv.FormatFloat(u, 'g', -1, 64),
			strconv.FormatFloat(u, 'f', rng.IntN(20), 64),
			strconv.FormatFloat(u, 'e', rng.IntN(25), 64),
			strconv.Itoa(rng.IntN(1<<30)),
		)
		var d strings.Builder
		for range 1 + rng.IntN(25) {
			d.WriteByte(byte('0' + rng.IntN(10)))
		}
		digits := strings.TrimLeft(d.String(), "0")
		if digits == "" {
			digits = "0"
		}
		inputs = append(inputs, digits, "0."+d.String(), "-"+digits+"e-"+strconv.Itoa(rng.IntN(30)), digits+"E+"+strconv.Itoa(rng.IntN(30)))
	}
	inputs = append(inputs, "0", "-0", "0.0", "1e22", "1e23", "9007199254740993", "9007199254740992", "123456789012345678901234567890",
		"0.1", "0.30000000000000004", "1.7976931348623157e308", "5e-324", "2.2250738585072014e-308", "1e-400", "4.9e-324")
	for _, in := range inputs {
		want, err := strconv.ParseFloat(in, 64)
		if err != nil {
			continue
		}
		sc := &scanner{buf: []byte(in)}
		got, err := sc.number()
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%s: got %v (%x), want %v (%x)", in, got, math.Float64bits(got), want, math.Float64bits(want))
		}
		if sc.pos != len(in) {
			t.Fatalf("%s: consumed %d bytes", in, sc.pos)
		}
	}
}

// TestTolerantTokens covers Python's non-finite tokens and their look-alikes.
func TestTolerantTokens(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		bad  bool
	}{
		{in: "Infinity", want: math.Inf(1)},
		{in: "-Infinity", want: math.Inf(-1)},
		{in: "NaN", want: math.NaN()},
		{in: "Inf", bad: true},
		{in: "-NaN", bad: true},
		{in: "nan", bad: true},
		{in: "+1", bad: true},
		{in: ".5", bad: true},
		{in: "1.", bad: true},
		{in: "1e", bad: true},
		{in: "Infinit", bad: true},
	}
	for _, tt := range tests {
		sc := &scanner{buf: []byte(tt.in), path: "x"}
		got, err := sc.number()
		if err == nil && sc.pos != len(tt.in) {
			err = sc.end()
		}
		if tt.bad {
			if err == nil {
				t.Errorf("%q: accepted as %v", tt.in, got)
			}
			continue
		}
		if err != nil || math.Float64bits(got) != math.Float64bits(tt.want) && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("%q: got %v, %v", tt.in, got, err)
		}
	}
	// Inside strings the tokens are text.
	sc := &scanner{buf: []byte(`{"a": "NaN Infinity", "b": [NaN, -Infinity]}`), path: "x"}
	v, err := sc.value()
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["a"] != "NaN Infinity" || !math.IsNaN(m["b"].([]any)[0].(float64)) || !math.IsInf(m["b"].([]any)[1].(float64), -1) {
		t.Errorf("decoded %v", m)
	}
}

// TestLineCol checks byte offsets → line:col.
func TestLineCol(t *testing.T) {
	buf := []byte("ab\ncd\n\nx")
	for _, tt := range []struct{ off, line, col int }{{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {6, 3, 1}, {7, 4, 1}, {8, 4, 2}} {
		if l, c := lineCol(buf, tt.off); l != tt.line || c != tt.col {
			t.Errorf("offset %d: %d:%d, want %d:%d", tt.off, l, c, tt.line, tt.col)
		}
	}
}
