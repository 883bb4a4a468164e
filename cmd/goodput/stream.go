package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/requestlog"
)

// The streaming judge (judge --stream): every request-log input of both
// arms is scanned at once, each record counted into its arm's aggregate
// (analysis.Aggregator) and into a sketch of record digests (keySketch)
// and then forgotten, so memory does not grow with the number of
// requests. The arms are judged from their aggregates.

// streamHeapLimit is the heap size (bytes) past which the streaming judge
// collects garbage eagerly (runtime/debug.SetMemoryLimit), unless a limit
// is set already (GOMEMLIMIT): 384 MiB. The live heap is the two arms'
// aggregates (their cumulative latency bins: about 210 MiB at 10M requests
// per arm over 360 buckets × 20 strata) and the aggregate judge's working
// rows on top; a limit below that (256 MiB was) keeps the collector running
// back to back for a quarter more CPU time, one well above it lets the heap
// double past 500 MB.
const streamHeapLimit = 384 << 20

// streamFilesAtOnce is how many input files the streaming judge scans
// or holds unmerged at once (each scan parses on every core as well).
const streamFilesAtOnce = 4

// streamFile is one input's scan.
type streamFile struct {
	arm  sources.Arm
	in   *input
	agg  *analysis.Aggregator
	keys *keySketch
	// measured sketches the digests without the replica's name of the
	// records with a measured latency, for overlapError
	measured *keySketch
	ds       sources.Dataset
	err      error
	sha256   string
	// window is the plausible window a second read kept, when the first
	// found records outside it (nil: every record)
	window *[2]float64
	// keep is --start/--end (nil: no such window); outside counts the
	// records the scan left out of the aggregate for it, of total
	keep           *[2]float64
	outside, total int
}

// readArmsStream reads both arms' request logs in parallel into
// aggregates, refusing what readArms refuses: an input named twice, a copy
// of another, the same records in both arms or repeated within one.
func (a *app) readArmsStream(ctx context.Context, o *judgeOptions, pol *policies.Policy, ro requestlog.Options, progress io.Writer) (base, can sources.Dataset, err error) {
	if err := samePathOrFile(map[sources.Arm][]string{sources.Baseline: o.Baseline, sources.Canary: o.Canary}, a.io.In); err != nil {
		return base, can, err
	}
	var files []*streamFile
	defer func() {
		for _, f := range files {
			f.in.Close()
		}
	}()
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		paths := o.Baseline
		if arm == sources.Canary {
			paths = o.Canary
		}
		for _, p := range paths {
			in, err := openInput(ctx, p, a.io.In, progress)
			if err != nil {
				var pe *os.PathError
				if errors.As(err, &pe) {
					return base, can, fmt.Errorf("%s input %s: %v (give a request log; - reads standard input)", arm, p, pe.Err)
				}
				return base, can, err
			}
			files = append(files, &streamFile{arm: arm, in: in, keep: o.window})
			format := o.InputFormat
			if format == "" || format == "auto" {
				if format, err = detectFormat(in); err != nil {
					return base, can, err
				}
			}
			if format != requestlog.Format && o.Stream {
				return base, can, fmt.Errorf("%s: --stream reads native request logs (JSONL or CSV), and this is %s: judge it without --stream", p, format)
			}
			if format != requestlog.Format {
				return base, can, fmt.Errorf("%s: its size is not known before it is read (a pipe or standard input), so it was to be judged from streaming aggregates, which read native request logs only, and this is %s: give --exact", p, format)
			}
			in.h = nil // the scan hashes on a goroutine of its own
			in.park()  // opened again when scanned: a few descriptors at a time
		}
	}
	var sk, sm [2]*keySketch
	var out [2]sources.Dataset
	var ags [2]*analysis.Aggregator
	for k, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		out[k] = sources.Dataset{Arm: arm, Clock: sources.ClockEpoch, Location: requestlog.Location}
	}
	// Files are scanned streamFilesAtOnce at a time, each into an
	// aggregate of its own, and merged into their arm's in command-line
	// order (the same sums in the same order whatever finished first),
	// each as soon as those before it are: the files scanned or waiting
	// to be merged are never more than streamFilesAtOnce, so an arm of
	// thousands of files holds as many aggregates and descriptors as an
	// arm of a few (6,002 small files scanned all at once took 1 GB).
	// The first failure in command-line order is the one reported.
	scanCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait() // no scan outlives the files' closing
	done := make([]chan struct{}, len(files))
	started := 0
	var outside, total [2]int // records --start/--end left out, of the arm's
	for i, f := range files {
		for ; started < len(files) && started < i+streamFilesAtOnce; started++ {
			g := files[started]
			done[started] = make(chan struct{})
			ch := done[started]
			wg.Go(func() {
				defer close(ch)
				g.err = scanStreamFile(scanCtx, g, pol, ro)
			})
		}
		<-done[i]
		if f.err != nil {
			cancel()
			return base, can, f.err
		}
		k := 0
		if f.arm == sources.Canary {
			k = 1
		}
		if ags[k] == nil {
			// the arm's first file: take its aggregate and sketch
			ags[k], sk[k], sm[k] = f.agg, f.keys, f.measured
		} else {
			ags[k].Merge(f.agg)
			sk[k].merge(f.keys)
			sm[k].merge(f.measured)
		}
		f.agg, f.keys, f.measured = nil, nil, nil // merged: its bins may go
		out[k].Inputs = append(out[k].Inputs, f.ds.Inputs...)
		out[k].Warnings = append(out[k].Warnings, f.ds.Warnings...)
		outside[k], total[k] = outside[k]+f.outside, total[k]+f.total
	}
	var ins []armInput
	for _, f := range files {
		ins = append(ins, armInput{arm: f.arm, path: f.in.path, info: f.in.info, sha256: f.sha256, format: requestlog.Format})
	}
	if err := sameContent(ins); err != nil {
		return base, can, err
	}
	for k := range out {
		note, err := windowLeftOut(out[k].Arm, o.window, outside[k], total[k])
		if err != nil {
			return base, can, err
		}
		if note != "" {
			out[k].Warnings = append(out[k].Warnings, note)
		}
	}
	// both arms on one grid (the wider of their slice widths:
	// Aggregator.WidenTo)
	step := max(ags[0].Step(), ags[1].Step())
	// the aggregates built side by side (building one from a million
	// records' bins takes a fifth of a second); errors in arm order,
	// whichever finished first
	var aggErr [2]error
	for k := range ags {
		wg.Go(func() {
			ags[k].WidenTo(step)
			out[k].Agg, aggErr[k] = ags[k].Aggregate(out[k].Arm)
		})
	}
	wg.Wait()
	for _, err := range aggErr {
		if err != nil {
			return base, can, err
		}
	}
	for k := range out {
		dup, n, exact := sk[k].duplicates()
		w, err := duplicateMessage(&out[k], dup, n, exact)
		if err != nil {
			return base, can, err
		}
		if w != "" {
			out[k].Warnings = append(out[k].Warnings, w)
		}
	}
	if sk[0].sameAs(sk[1]) {
		return base, can, fmt.Errorf("the baseline and the canary hold the same %d records: a deployment compared with itself says nothing; give each arm its own data", sk[0].n)
	}
	shared, exact := sm[0].shared(sm[1])
	if err := overlapError(shared, int(sm[0].n), int(sm[1].n), exact); err != nil {
		return base, can, err
	}
	if err := cutReplicaWarmups(ctx, files, &out, pol, ro, progress); err != nil {
		return base, can, err
	}
	return out[0], out[1], nil
}

// cutReplicaWarmups finds the replicas that entered service late and were
// slow at first (analysis.ReplicaWarmupCuts, on the aggregates just
// built) and, for an arm with any, reads its files a second time without
// those requests, replacing its aggregate. The aggregate keeps per-replica
// TTFT medians per slice, not the requests, so leaving a replica's warm-up
// out means reading the records again: inputs that cannot be read twice
// (standard input, a pipe) keep their aggregate and get a warning.
func cutReplicaWarmups(ctx context.Context, files []*streamFile, out *[2]sources.Dataset, pol *policies.Policy, ro requestlog.Options, progress io.Writer) error {
	cuts, err := analysis.ReplicaWarmupCuts(&out[0], &out[1], analysis.Config{Policy: pol})
	if err != nil {
		return nil // the judge reports what is wrong with the arms
	}
	for k, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		if len(cuts[k].Cuts) == 0 {
			continue
		}
		var which []string
		for _, c := range cuts[k].Cuts {
			which = append(which, strconv.Quote(c.Replica))
		}
		var armFiles []*streamFile
		for _, f := range files {
			if f.arm != arm {
				continue
			}
			if !f.rereadable() {
				out[k].Warnings = append(out[k].Warnings, fmt.Sprintf("replica %s entered late and was slow at first, but its warm-up was not cut: %s cannot be read a second time without it; give a file, or judge with --exact",
					strings.Join(which, ", "), f.in.path))
				armFiles = nil
				break
			}
			armFiles = append(armFiles, f)
		}
		if armFiles == nil {
			continue
		}
		fmt.Fprintf(progress, "%s: reading %d file(s) again without the warm-up of replica %s\n", arm, len(armFiles), strings.Join(which, ", "))
		var ag *analysis.Aggregator
		for _, f := range armFiles {
			a, err := rescanExcluding(ctx, f, pol, ro, cuts[k])
			if err != nil {
				return err
			}
			if ag == nil {
				ag = a
			} else {
				ag.Merge(a)
			}
		}
		if out[k].Agg, err = ag.Aggregate(arm); err != nil {
			return err
		}
	}
	return nil
}

// rescanExcluding reads f again into a new aggregate that leaves out the
// cut replicas' requests, refusing a file that changed since the first
// read.
func rescanExcluding(ctx context.Context, f *streamFile, pol *policies.Policy, ro requestlog.Options, plan analysis.ReplicaWarmupPlan) (*analysis.Aggregator, error) {
	ag := analysis.NewAggregator(pol)
	ag.Exclude(plan)
	_, err := f.readAgain(ctx, requestlog.ScanOptions{Options: ro, Window: f.window}, f.sha256, func(req *sources.Request) error {
		if inWindow(f.keep, req.Time) {
			ag.Add(req)
		}
		return nil
	})
	return ag, err
}

// scanStreamFile scans one input into its own aggregate and key sketch.
// When the plausible-window check needs a second look (records to drop),
// a regular file is read again, and must not have changed in between.
func scanStreamFile(ctx context.Context, f *streamFile, pol *policies.Policy, ro requestlog.Options) error {
	reset := func() {
		f.agg, f.keys, f.measured = analysis.NewAggregator(pol), newKeySketch(), newKeySketchOf(overlapKeys)
		f.outside, f.total = 0, 0
	}
	add := func(req *sources.Request) error {
		// the sketches see every record, as the request path's
		// duplicate checks do (repeats counted among the records with a
		// latency); --start/--end narrows what is judged
		full, measured, ok := streamKey(req)
		f.keys.addCounted(full, ok)
		if ok {
			f.measured.add(measured)
		}
		f.total++
		if !inWindow(f.keep, req.Time) {
			f.outside++
			return nil
		}
		f.agg.Add(req)
		return nil
	}
	reset()
	ds, err := f.scanRereading(ctx, requestlog.ScanOptions{Options: ro}, reset, add, "give a file, or judge with --exact")
	if err != nil {
		return err
	}
	f.sha256, f.ds = ds.Inputs[0].SHA256, ds
	return nil
}

// rereadable reports whether f is a regular file, which a second look
// can read again (a pipe cannot).
func (f *streamFile) rereadable() bool { return f.in.info != nil && f.in.info.Mode().IsRegular() }

// scanRereading scans f with so, handing each record to add. When dropping
// implausible records needs a second look (requestlog.WindowError), reset
// is called and a regular file is read again within the window found
// (kept in f.window); hint ends the error for an input that cannot be
// read twice.
func (f *streamFile) scanRereading(ctx context.Context, so requestlog.ScanOptions, reset func(), add func(*sources.Request) error, hint string) (sources.Dataset, error) {
	ds, err := requestlog.Scan(ctx, f.in.path, f.in, f.arm, so, add)
	var we *requestlog.WindowError
	if errors.As(err, &we) {
		if !f.rereadable() {
			return sources.Dataset{}, fmt.Errorf("%v, and %s is not a regular file that can be read twice: %s", we, f.in.path, hint)
		}
		so.Window = &[2]float64{we.Lo, we.Hi}
		f.window = so.Window
		reset()
		ds, err = f.readAgain(ctx, so, we.SHA256, add)
	}
	return ds, err
}

// readAgain scans f, a regular file, a second time with so, handing each
// record to add, and refuses it when its content is no longer what the
// first read hashed (sha).
func (f *streamFile) readAgain(ctx context.Context, so requestlog.ScanOptions, sha string, add func(*sources.Request) error) (sources.Dataset, error) {
	in, err := os.Open(f.in.path)
	if err != nil {
		return sources.Dataset{}, err
	}
	defer in.Close()
	ds, err := requestlog.Scan(ctx, f.in.path, in, f.arm, so, add)
	if err == nil && ds.Inputs[0].SHA256 != sha {
		err = fmt.Errorf("%s changed while it was read (sha256 %s, then %s): judge a file that is no longer being written", f.in.path, sha, ds.Inputs[0].SHA256)
	}
	return ds, err
}

// streamKey is the streaming judge's record digest: every field of r, as
// recordKey covers them (NaN latencies as one value), mixed a 64-bit word
// at a time (a multiply and a shift per word, strings eight bytes at a
// time with their length, mix64 at the end) rather than FNV's byte at a
// time, which made the digest a tenth of the scan's CPU time. Its values
// differ from recordKey's: only the streaming judge's sketches compare
// them. measured is the digest without the replica's name, as
// recordKeyNoReplica is, for a record with a measured latency (TTFT or
// end-to-end); ok is false for the others (measuredLatency).
func streamKey(r *sources.Request) (full, measured uint64, ok bool) {
	h := uint64(0x6a09e667f3bcc909)
	for _, v := range [...]float64{r.Time, r.TTFT, r.TPOT, r.E2E, r.MaxITL} {
		b := math.Float64bits(v)
		if v != v {
			b = math.Float64bits(math.NaN()) // one bit pattern for unknown
		}
		h = step64(h, b)
	}
	h = step64(h, uint64(r.PromptTokens))
	h = step64(h, uint64(r.OutputTokens))
	h = step64(h, uint64(r.CachedTokens))
	h = step64(h, uint64(uint32(r.Attempt))|uint64(r.Status)<<32|uint64(r.Quality)<<40|uint64(r.CanceledBy)<<48)
	h = mixString(h, r.Class)
	return mix64(mixString(h, r.Replica)), mix64(h), measuredLatency(r)
}

// step64 mixes word w into h: a bijection of h for each w.
func step64(h, w uint64) uint64 {
	h = (h ^ w) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// mixString mixes s into h: its length, then eight bytes at a time.
func mixString(h uint64, s string) uint64 {
	h = step64(h, uint64(len(s)))
	for len(s) >= 8 {
		h = step64(h, uint64(s[0])|uint64(s[1])<<8|uint64(s[2])<<16|uint64(s[3])<<24|
			uint64(s[4])<<32|uint64(s[5])<<40|uint64(s[6])<<48|uint64(s[7])<<56)
		s = s[8:]
	}
	if len(s) > 0 {
		var w uint64
		for i := len(s) - 1; i >= 0; i-- {
			w = w<<8 | uint64(s[i])
		}
		h = step64(h, w)
	}
	return h
}

// keySketch summarises an arm's record digests in bounded memory: the
// count, an order-independent sum and xor of their mixed values (equal for
// equal multisets of records; unequal otherwise but with probability
// 2^-64), and the digests whose top shift bits are zero with their counts
// (all of them, exactly, until sketchKeys are held; then half as many at
// each step), from which the share of records repeating another is
// counted exactly or, once sampled, estimated.
type keySketch struct {
	n        int64
	sum, xor uint64
	// counted is how many of the n records' digests the table was offered
	// (addCounted: the records with a measured latency), the share's
	// denominator in duplicates
	counted int64
	shift   uint
	keys    digestTable
	max     int // distinct digests held before sampling
	// pending are sampled digests not yet in keys (see flush)
	pending []uint64
}

// sketchBatch is how many sampled digests a sketch collects before it puts
// them into its table in one loop: a table of 2^17 slots lies mostly
// outside the cache, and a probe for each record among the scan's other
// work waited on its miss alone (nearly all of the table's time), where
// a loop of probes has several in flight. What the table holds does not
// depend on the order its digests came in (see flush).
const sketchBatch = 256

// sketchKeys is how many distinct digests a sketch holds before sampling.
const sketchKeys = 1 << 16

// overlapKeys is how many the sketch of measured records (overlapError)
// holds: the share two arms have in common, against a 1% limit, needs
// fewer than the share of repeats, and a small table is cheaper to fill
// (a sketch of 65,536 cost 5% of the streaming judge's CPU time). From
// 4,096 measured records on the count is estimated: at 1% shared, from
// the 20 to 40 digests both samples hold.
const overlapKeys = 1 << 12

func newKeySketch() *keySketch { return newKeySketchOf(sketchKeys) }

// newKeySketchOf is a sketch that holds up to max distinct digests.
func newKeySketchOf(max int) *keySketch { return &keySketch{max: max} }

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func (s *keySketch) sampled(k uint64) bool { return s.shift == 0 || k>>(64-s.shift) == 0 }

func (s *keySketch) add(k uint64) { s.addCounted(k, true) }

// addCounted adds a record's digest k to the count, sum and xor, and,
// when counted, to the digests whose repeats duplicates counts.
func (s *keySketch) addCounted(k uint64, counted bool) {
	s.n++
	m := mix64(k)
	s.sum += m
	s.xor ^= bits.RotateLeft64(m, 17)
	if !counted {
		return
	}
	s.counted++
	if !s.sampled(k) {
		return
	}
	if s.pending == nil {
		s.pending = make([]uint64, 0, sketchBatch)
	}
	s.pending = append(s.pending, k)
	if len(s.pending) == sketchBatch {
		s.flush()
	}
}

// flush puts the pending digests into the table, those the sample still
// keeps (it may grow coarser on the way). The table ends holding the
// same digests and counts in whatever order they come: the shift is
// always the least at which the distinct digests seen that it keeps are
// at most max, and a digest it keeps was kept at every smaller shift, so
// every one of its records was counted.
func (s *keySketch) flush() {
	for _, k := range s.pending {
		if s.sampled(k) {
			s.keys.add(k, 1)
			s.thin()
		}
	}
	s.pending = s.pending[:0]
}

// thin samples more coarsely (one more top bit of the digest zero) until
// the sketch holds at most max digests.
func (s *keySketch) thin() {
	for s.keys.len() > s.max {
		s.shift++
		s.keys.keep(s.sampled)
	}
}

func (s *keySketch) merge(o *keySketch) {
	s.flush()
	o.flush()
	s.n += o.n
	s.counted += o.counted
	s.sum += o.sum
	s.xor ^= o.xor
	if o.shift > s.shift {
		// o sampled more coarsely: s keeps only what o's sample would
		s.shift = o.shift
		s.keys.keep(s.sampled)
	}
	o.keys.each(func(k uint64, c uint32) {
		if s.sampled(k) {
			s.keys.add(k, c)
		}
	})
	s.thin()
}

// duplicates returns the counted records repeating another (exact when
// the sketch kept every digest, else estimated from its sample) and the
// counted records.
func (s *keySketch) duplicates() (dup, n int, exact bool) {
	s.flush()
	d := 0
	s.keys.each(func(_ uint64, c uint32) { d += int(c) - 1 })
	return d << s.shift, int(s.counted), s.shift == 0
}

// shared returns how many records s and o have in common (each digest as
// often as the sketch holding it fewer times): exact when neither sketch
// sampled, else estimated from the digests both keep (the coarser
// sample, on the same top bits of the digest, scaled up).
func (s *keySketch) shared(o *keySketch) (n int, exact bool) {
	s.flush()
	o.flush()
	shift := max(s.shift, o.shift)
	s.keys.each(func(k uint64, c uint32) {
		if shift == 0 || k>>(64-shift) == 0 {
			n += int(min(c, o.keys.get(k)))
		}
	})
	return n << shift, shift == 0
}

// sameAs reports whether two sketches summarise the same records.
func (s *keySketch) sameAs(o *keySketch) bool {
	return s.n > 0 && s.n == o.n && s.sum == o.sum && s.xor == o.xor
}
