package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/goodput-dev/goodput/sources"
)

// Duplicated or identical data is never a pass (DESIGN.md §5): the same file
// given twice, a copy of it, the same records in another format or every
// line written twice all double the sample without adding information, and
// identical arms compare a deployment with itself. These checks refuse such
// inputs with the reason, before any verdict.

// maxDuplicateShare is the share of an arm's records with a measured
// latency that may be exact duplicates of another record of the arm
// before the arm is refused. Real logs repeat such a record only by
// coincidence (same arrival time, status, latencies, lengths, class and
// replica); a file read twice repeats half. Records without a latency (a
// rejection, an error before the first token) are not counted: they carry
// little more than a time and a status, and a log with whole-second times,
// or a benchmark file without start times and one prompt length, repeats
// them by the dozen when requests fail together.
const maxDuplicateShare = 0.01

// samePathOrFile refuses an input named twice, by path or as the same file
// under another name (a hard link, a symlink, /dev/stdin beside "-"),
// before anything is read. stdin is the process's standard input.
func samePathOrFile(arms map[sources.Arm][]string, stdin any) error {
	type seen struct {
		arm  sources.Arm
		path string
		info os.FileInfo
	}
	// an input is matched with the first earlier one of the same path
	// (cleaned) or the same file, looked up by path and by size and
	// modification time rather than against every earlier one: an arm
	// may be thousands of files
	type statKey struct {
		size int64
		mod  int64
	}
	var all []seen
	byPath := map[string]int{}
	byStat := map[statKey][]int{}
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		for _, p := range arms[arm] {
			var info os.FileInfo
			key := "\x00stdin" // "-" is standard input, "./-" a file named -
			if p == stdinPath {
				if f, ok := stdin.(*os.File); ok {
					info, _ = f.Stat()
				}
			} else {
				info, _ = os.Stat(p) // a FIFO's Stat does not wait for a writer
				key = filepath.Clean(p)
			}
			first, ok := byPath[key]
			if !ok {
				first = -1
			}
			var sk statKey
			if info != nil {
				sk = statKey{info.Size(), info.ModTime().UnixNano()}
				for _, j := range byStat[sk] {
					if os.SameFile(info, all[j].info) {
						if first < 0 || j < first {
							first = j
						}
						break
					}
				}
			}
			if first >= 0 {
				s := all[first]
				return fmt.Errorf("%s (%s) and %s (%s) are the same input: each file may be given once, for one arm", s.path, s.arm, p, arm)
			}
			byPath[key] = len(all)
			if info != nil {
				byStat[sk] = append(byStat[sk], len(all))
			}
			all = append(all, seen{arm, p, info})
		}
	}
	return nil
}

// sameContent refuses two inputs with equal bytes (a copy under another
// name, or the same stream given twice).
func sameContent(ins []armInput) error {
	first := map[string]int{}
	for i := range ins {
		j, ok := first[ins[i].sha256]
		if !ok {
			first[ins[i].sha256] = i
			continue
		}
		what := "a copy of"
		if ins[i].arm != ins[j].arm {
			what = "identical to"
		}
		return fmt.Errorf("%s (%s) is %s %s (%s): both have sha256 %s; each arm needs its own data, given once",
			ins[i].path, ins[i].arm, what, ins[j].path, ins[j].arm, ins[i].sha256)
	}
	return nil
}

// fnvPrime is FNV-1a's 64-bit prime.
const fnvPrime = 1099511628211

// recordKey is a 64-bit FNV-1a digest of every field of a record,
// computed without allocating (it runs once per record).
func recordKey(r *sources.Request) uint64 {
	return withReplica(recordKeyNoReplica(r), r.Replica)
}

// withReplica adds the replica's name to a recordKeyNoReplica digest.
func withReplica(h uint64, replica string) uint64 {
	for i := 0; i < len(replica); i++ {
		h ^= uint64(replica[i])
		h *= fnvPrime
	}
	return h
}

// recordKeyNoReplica is recordKey before the replica's name: the digest
// overlapping arms share when one's records were relabelled.
func recordKeyNoReplica(r *sources.Request) uint64 {
	h := uint64(14695981039346656037)
	word := func(v uint64) {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= fnvPrime
			v >>= 8
		}
	}
	for _, v := range [...]float64{r.Time, r.TTFT, r.TPOT, r.E2E, r.MaxITL} {
		if math.IsNaN(v) {
			v = math.NaN() // one bit pattern for unknown
		}
		word(math.Float64bits(v))
	}
	for _, v := range [...]int64{r.PromptTokens, r.OutputTokens, r.CachedTokens, int64(r.Attempt), int64(r.Status), int64(r.Quality), int64(r.CanceledBy)} {
		word(uint64(v))
	}
	for i := 0; i < len(r.Class); i++ {
		h ^= uint64(r.Class[i])
		h *= fnvPrime
	}
	h ^= 0
	h *= fnvPrime
	return h
}

// recordKeys returns the sorted record digests of a dataset (recordKey)
// and, of its records with a measured latency, the sorted digests (dups,
// for the repeats within the arm) and those without the replica's name
// (measured: the records two arms can share only by mistake). Records
// without one (a rejection, an error before the first token) carry little
// more than a time and a status, and two arms hit by one outage share many
// such by chance, as one arm repeats them. Each record is hashed once.
func recordKeys(d *sources.Dataset) (all, dups, measured []uint64) {
	all = make([]uint64, len(d.Requests))
	measured = make([]uint64, 0, len(d.Requests))
	dups = make([]uint64, 0, len(d.Requests))
	for i := range d.Requests {
		r := &d.Requests[i]
		h := recordKeyNoReplica(r)
		all[i] = withReplica(h, r.Replica)
		if measuredLatency(r) {
			measured = append(measured, h)
			dups = append(dups, all[i])
		}
	}
	slices.Sort(all)
	slices.Sort(dups)
	slices.Sort(measured)
	return all, dups, measured
}

// measuredLatency reports whether r carries a measured latency (TTFT or
// end-to-end): the records the overlap check compares, on both paths.
func measuredLatency(r *sources.Request) bool { return r.TTFT == r.TTFT || r.E2E == r.E2E }

// duplicateRecords checks one arm for records repeated beyond chance
// (keys: the sorted digests of its records with a measured latency) and
// returns an error over maxDuplicateShare, a warning below it (or "").
func duplicateRecords(d *sources.Dataset, keys []uint64) (string, error) {
	dup := 0
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			dup++
		}
	}
	return duplicateMessage(d, dup, len(keys), true)
}

// duplicateMessage judges dup repeated records among n: an error over
// maxDuplicateShare, a warning below it, "" for none. exact is false when
// dup is estimated from a sample of the records' digests.
func duplicateMessage(d *sources.Dataset, dup, n int, exact bool) (string, error) {
	if dup == 0 {
		return "", nil
	}
	about := ""
	if !exact {
		about = "about "
	}
	files := ""
	for i, in := range d.Inputs {
		if i > 0 {
			files += ", "
		}
		files += in.Path
	}
	share := float64(dup) / float64(n)
	if share > maxDuplicateShare {
		return "", fmt.Errorf("%s: %s%d of %d records with a latency (%.1f%%) repeat another record exactly (same time, status, latencies, lengths, class, replica) in %s: the same data given twice (a file appended to itself, or the same requests in two formats)? Give each request once",
			d.Arm, about, dup, n, 100*share, files)
	}
	// a dataset's warnings are shown under its arm's name (no prefix here)
	return fmt.Sprintf("%s%d of %d records with a latency repeat another record exactly (same time, status, latencies, lengths, class, replica); kept, as coincidences below %.0f%% are", about, dup, n, 100*maxDuplicateShare), nil
}

// distinctArms refuses arms with the same records (in any order, from any
// file formats), and arms that repeat their own records.
func distinctArms(base, can *sources.Dataset) error {
	if base.Agg != nil || can.Agg != nil {
		return nil // metrics inputs: their files' digests were compared
	}
	bk, bd, bm := recordKeys(base)
	ck, cd, cm := recordKeys(can)
	for _, a := range []struct {
		d    *sources.Dataset
		keys []uint64
	}{{base, bd}, {can, cd}} {
		w, err := duplicateRecords(a.d, a.keys)
		if err != nil {
			return err
		}
		if w != "" {
			a.d.Warnings = append(a.d.Warnings, w)
		}
	}
	if len(bk) > 0 && slices.Equal(bk, ck) {
		return fmt.Errorf("the baseline and the canary hold the same %d records: a deployment compared with itself says nothing; give each arm its own data", len(bk))
	}
	return overlapError(sharedCount(bm, cm), len(bm), len(cm), true)
}

// sharedCount counts the digests two sorted lists share, each as often as
// the list holding it fewer times.
func sharedCount(a, b []uint64) int {
	n := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n
}

// maxOverlapShare is the share of the smaller arm's measured records that
// may also appear in the other arm (the replica's name aside) before the
// arms are refused. Two deployments measured apart share a record only by
// coincidence (the same arrival time, latencies, lengths, status and
// class); arms whose files were cut from one stream with a filter that let
// one arm's requests into the other's file share many.
const maxOverlapShare = 0.01

// overlapError refuses arms that share more than maxOverlapShare of the
// smaller arm's nb or nc measured records (shared of them, exactly or
// estimated from a sample), and at least 3.
func overlapError(shared, nb, nc int, exact bool) error {
	n := min(nb, nc)
	shared = min(shared, n) // an estimate can overshoot
	if shared < 3 || float64(shared) <= maxOverlapShare*float64(n) {
		return nil
	}
	about := ""
	if !exact {
		about = "about "
	}
	return fmt.Errorf("the baseline and the canary share %s%d records (%.1f%% of the %d measured records of the smaller arm: same arrival time, status, latencies, lengths and class, whatever the replica's name): one arm's requests are in the other's data (a filter that let them in, or a copy relabelled); give each arm only its own requests",
		about, shared, 100*float64(shared)/float64(n), n)
}
