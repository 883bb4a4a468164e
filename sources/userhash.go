package sources

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

// sipHash64 is SipHash-2-4 with a key of zeros over b: ClickHouse's
// sipHash64 of a String, and of an unsigned integer's eight bytes, so that
// a column store groups users and records as the files' reader does.
func sipHash64(b []byte) uint64 {
	v0, v1, v2, v3 := uint64(0x736f6d6570736575), uint64(0x646f72616e646f6d), uint64(0x6c7967656e657261), uint64(0x7465646279746573)
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13) ^ v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16) ^ v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21) ^ v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17) ^ v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	n := len(b)
	for ; len(b) >= 8; b = b[8:] {
		m := binary.LittleEndian.Uint64(b)
		v3 ^= m
		round()
		round()
		v0 ^= m
	}
	var last [8]byte
	copy(last[:], b)
	last[7] = byte(n)
	m := binary.LittleEndian.Uint64(last[:])
	v3 ^= m
	round()
	round()
	v0 ^= m
	v2 ^= 0xff
	round()
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}

// UserOf is Request.User for a user's name: 1 + sipHash64(name) modulo
// UserGroups (ClickHouse: 1 + sipHash64(user) % 64). The same name gives
// the same group on every path and in every run.
func UserOf(name []byte) uint8 {
	return uint8(1 + sipHash64(name)%UserGroups)
}

// unnamedGroup places a record that names no user in a group of its own
// choosing: sipHash64 of its arrival in whole microseconds, as eight bytes
// (ClickHouse: sipHash64(toUInt64(ts * 1000000)) % 64); a record without
// an arrival time by its TTFT's bits.
func unnamedGroup(r *Request) int {
	var b [8]byte
	if Known(r.Time) && r.Time >= 0 {
		binary.LittleEndian.PutUint64(b[:], uint64(r.Time*1e6))
	} else {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(r.TTFT))
	}
	return int(sipHash64(b[:]) % UserGroups)
}

// UserNames gives each group of users (index: Request.User − 1) a name
// that hashes to it: the first "user-<k>" that does. A writer holding only
// a request's group (the simulator's logs, tests) names its user so that
// the group reads back the same.
func UserNames() [UserGroups]string {
	var out [UserGroups]string
	for k, left := 0, UserGroups; left > 0; k++ {
		name := "user-" + strconv.Itoa(k)
		if g := UserOf([]byte(name)) - 1; out[g] == "" {
			out[g] = name
			left--
		}
	}
	return out
}
