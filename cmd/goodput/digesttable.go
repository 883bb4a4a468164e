package main

// digestTable counts 64-bit record digests: an open-addressed table with
// linear probing, keyed by the digest's low bits (digests are hashes, so
// the low bits are uniform whatever the sampling keeps of the high ones).
// Filling a Go map with a digest per record was 7% of judge --stream's
// CPU time; a probe here is one cache line. The zero value is an empty
// table ready to use.
type digestTable struct {
	slots []digestSlot
	n     int // slots in use
	// spare holds the digests keep moves, between thinnings of one table
	spare []digestSlot
}

// digestSlot is one entry; count 0 marks an empty slot.
type digestSlot struct {
	key   uint64
	count uint32
}

// minDigestSlots is the table's first size (a power of two).
const minDigestSlots = 1 << 10

func (t *digestTable) len() int { return t.n }

// add adds c to k's count (c > 0). The table doubles when more than half
// its slots are in use before the addition: a sketch holding its limit of
// 2^16 digests, one over it before it thins, stays in 2^17 slots (2 MiB,
// not 4).
func (t *digestTable) add(k uint64, c uint32) {
	if len(t.slots) == 0 || 2*t.n > len(t.slots) {
		t.resize(max(minDigestSlots, 2*len(t.slots)))
	}
	mask := uint64(len(t.slots) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.count == 0 {
			s.key, s.count = k, c
			t.n++
			return
		}
		if s.key == k {
			s.count += c
			return
		}
	}
}

// get returns k's count (0 when absent).
func (t *digestTable) get(k uint64) uint32 {
	if t.n == 0 {
		return 0
	}
	mask := uint64(len(t.slots) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.count == 0 {
			return 0
		}
		if s.key == k {
			return s.count
		}
	}
}

// each calls fn for every digest held, in slot order.
func (t *digestTable) each(fn func(k uint64, c uint32)) {
	for _, s := range t.slots {
		if s.count != 0 {
			fn(s.key, s.count)
		}
	}
}

// keep drops the digests for which keep is false, in place: the kept
// ones are set aside, the slots cleared and the kept ones put back (a
// sketch thins its table several times over a large file, and fresh
// slots each time were a tenth of the sketch's cost).
func (t *digestTable) keep(keep func(k uint64) bool) {
	t.spare = t.spare[:0]
	for _, s := range t.slots {
		if s.count != 0 && keep(s.key) {
			t.spare = append(t.spare, s)
		}
	}
	clear(t.slots)
	t.n = 0
	for _, s := range t.spare {
		t.add(s.key, s.count)
	}
}

// resize moves the digests into size new slots.
func (t *digestTable) resize(size int) {
	old := t.slots
	t.slots, t.n = newDigestSlots(size), 0
	for _, s := range old {
		if s.count != 0 {
			t.add(s.key, s.count)
		}
	}
}

// newDigestSlots returns n empty slots, written once: a probe reads a slot
// before writing it, and memory fresh from the system that is read first
// faults twice (see loglin's newDense).
func newDigestSlots(n int) []digestSlot {
	s := make([]digestSlot, n)
	clear(s)
	return s
}
