package requestlog

import (
	"bytes"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// refString is the byte-at-a-time reference for scanString's fast path:
// the end of the plain ASCII run after the opening quote at b[0], and
// whether a closing quote ends it.
func refString(b []byte) (end int, closed bool) {
	for j := 1; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			return j, true
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return j, false
		}
	}
	return len(b), false
}

// TestScanStringWordAtATime checks the eight-bytes-at-a-time scan against
// the reference on random strings rich in the bytes it must stop at.
func TestScanStringWordAtATime(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []byte("abcXYZ019 _-:\"\\\x00\x1f\x20\x7f\x80\xc3\xa9\xff")
	var scratch []byte
	for range 200_000 {
		n := rng.IntN(40)
		b := make([]byte, 1, n+1)
		b[0] = '"'
		for range n {
			if rng.IntN(6) == 0 {
				b = append(b, alphabet[rng.IntN(len(alphabet))])
			} else {
				b = append(b, 'a'+byte(rng.IntN(26)))
			}
		}
		end, closed := refString(b)
		v, next, err := scanString(b, 0, &scratch)
		if closed {
			if err != nil || next != end+1 || !bytes.Equal(v, b[1:end]) {
				t.Fatalf("%q: got %q, %d, %v; want %q, %d", b, v, next, err, b[1:end], end+1)
			}
			continue
		}
		// the slow path decides; it must agree on the plain prefix
		if err == nil && !bytes.HasPrefix(v, b[1:end]) {
			t.Fatalf("%q: decoded %q lost the prefix %q", b, v, b[1:end])
		}
	}
}

// TestSpecialBytes places every byte value at every position of a plain
// word and checks the lowest flag.
func TestSpecialBytes(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			w := []byte("abcdefgh")
			w[pos] = byte(c)
			special := c == '"' || c == '\\' || c < 0x20 || c >= 0x80
			m := specialBytes(uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
				uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56)
			switch {
			case special && (m == 0 || bits.TrailingZeros64(m)/8 != pos):
				t.Errorf("byte 0x%02x at %d: mask %016x", c, pos, m)
			case !special && m != 0:
				t.Errorf("plain byte 0x%02x at %d flagged: mask %016x", c, pos, m)
			}
		}
	}
}
