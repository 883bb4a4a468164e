package sources

import (
	"encoding/binary"
	"testing"
)

// sipHash64 gives what ClickHouse 18.16's sipHash64 gives, read from the
// server: sipHash64('alice'), sipHash64(toUInt64(12345)) and
// sipHash64(toUInt64(1767225600.001764 * 1000000)); a record naming no
// user is placed by the last (unnamedGroup).
func TestSipHash64(t *testing.T) {
	le := func(v uint64) []byte {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		return b[:]
	}
	for _, c := range []struct {
		in   []byte
		want uint64
	}{
		{[]byte("alice"), 8512114763159807471},
		{le(12345), 15471894867938797610},
		{le(1767225600001764), 3816236281368415751},
	} {
		if got := sipHash64(c.in); got != c.want {
			t.Errorf("sipHash64(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	r := NewRequest()
	r.Time = 1767225600.001764
	if g := unnamedGroup(&r); g != int(3816236281368415751%UserGroups) {
		t.Errorf("unnamed group %d", g)
	}
	if g := UserOf([]byte("alice")); g != uint8(1+8512114763159807471%UserGroups) {
		t.Errorf("UserOf(alice) = %d", g)
	}
}
