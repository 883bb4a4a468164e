package requestlog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"sync"

	"github.com/goodput-dev/goodput/sources"
)

// ScanOptions are Scan's settings.
type ScanOptions struct {
	Options
	// Window, when not nil, is the file's plausible window of arrival
	// times [lo, hi] (unix seconds) from a *WindowError of an earlier scan
	// of the same bytes: records outside it are refused (or, with
	// DropImplausible, dropped with a count) as ReadWith does, and not
	// handed to fn.
	Window *[2]float64
	// NoHash leaves Input.SHA256 empty, for callers that hash the raw
	// bytes themselves.
	NoHash bool
}

// WindowError is returned by Scan when deciding which records lie outside
// the file's plausible window (see ReadWith) needs a second look at the
// records: some are to be dropped (DropImplausible), or one lies within a
// second of the window's edge. fn has then seen every record. Scan the same
// bytes again with ScanOptions.Window set to [Lo, Hi] (and a fresh fn
// target); a stream that cannot be read twice cannot be scanned this way.
type WindowError struct {
	Path   string
	Lo, Hi float64 // the plausible window, unix seconds
	Out    int     // records known to lie outside it
	SHA256 string  // of the raw bytes read ("" with NoHash)
}

func (e *WindowError) Error() string {
	return fmt.Sprintf("%s: %d or more record(s) lie outside the file's plausible window %s … %s: sorting them out needs a second reading of the file",
		e.Path, e.Out, fmtT(e.Lo), fmtT(e.Hi))
}

// Scan reads one request log as ReadWith does — the same formats, checks
// and error messages, a file accepted whole or not at all — but keeps no
// record: fn is called once per record, in file order, from one goroutine,
// with a Request valid only during the call. The dataset returned has no
// Requests; its Inputs (Count: the records handed to fn) and Warnings are
// those ReadWith gives. When Scan returns an error, fn may have seen some
// or all records and its results must be discarded; an error from fn
// stops the scan and is returned as is.
//
// JSON Lines are parsed in chunks on all available cores while fn runs;
// the SHA-256 of the raw bytes is computed on another goroutine. Memory
// does not grow with the file (a few chunks of 1 MiB and one entry per
// second of arrival times, for the plausible-window check).
//
// The plausible window is ReadWith's for files of fewer than 131072
// records; for larger ones its central 98% is estimated from an even
// sample of between 65536 and 131072 arrival times (ReadWith: about
// 65536). See WindowError for the files that need a second reading.
func Scan(ctx context.Context, path string, r io.Reader, arm sources.Arm, o ScanOptions, fn func(*sources.Request) error) (sources.Dataset, error) {
	return scan(ctx, path, r, arm, o, defaultOptions(), fn)
}

func scan(ctx context.Context, path string, r io.Reader, arm sources.Arm, o ScanOptions, opt options, fn func(*sources.Request) error) (sources.Dataset, error) {
	if err := ctx.Err(); err != nil {
		return sources.Dataset{}, fmt.Errorf("%s: %w", path, err)
	}
	var ah *asyncHash
	src0 := r
	if !o.NoHash {
		ah = newAsyncHash(r)
		defer ah.stop()
		src0 = ah
	}
	lb, err := openBody(path, src0)
	if err != nil {
		return sources.Dataset{}, err
	}
	defer lb.close()
	body, first, skipped, gz, raw := lb.body, lb.first, lb.skipped, lb.gz, lb.raw
	win := newWindowTracker(o.Window)
	count := 0
	// past MaxClassLabels labels no record reaches fn (its strata would
	// grow with every request), but the rest is parsed: a malformed line
	// further on is reported first, as ReadWith reports it
	var labels classLabels
	emit := func(r *sources.Request, line int) error {
		if labels.observe(r.Class) {
			labels.at(line)
		}
		if labels.full() {
			return nil
		}
		if !win.observe(r.Time, line) {
			return nil
		}
		count++
		return fn(r)
	}
	var (
		unknown  map[string]*unknownField
		format   = Format
		parseErr error
	)
	switch first {
	case '{':
		// a small file gets chunks its size, not the default's: an arm
		// may be thousands of small files
		if n := sizeHint(r, gz); n > 0 && n < int64(opt.chunkSize) {
			opt.chunkSize = max(int(n)+1, 4<<10)
		}
		var fence func()
		if ah != nil {
			fence = ah.fence
		}
		unknown, parseErr = scanJSONL(ctx, path, body, skipped, gz, opt, fence, emit)
	case '[':
		return sources.Dataset{}, &ParseError{Path: path, Line: skipped + 1, Col: 1,
			Msg: "the file is a JSON array, not JSON Lines (a request log has one JSON object per line; for benchmark result files use their own input format)"}
	default:
		format = FormatCSV
		unknown, parseErr = scanCSV(ctx, path, body, skipped, 0, gz, nil, emit)
	}
	if parseErr != nil {
		return sources.Dataset{}, parseErr
	}
	if err := labels.err(path); err != nil {
		return sources.Dataset{}, err
	}
	if _, err := io.Copy(io.Discard, raw); err != nil {
		return sources.Dataset{}, fmt.Errorf("%s: %w", path, err)
	}
	if win.records == 0 {
		return sources.Dataset{}, &ParseError{Path: path, Msg: "no requests: the file has no records (write one JSON object or CSV row per request)"}
	}
	in := sources.Input{Path: path, Format: format, Arm: arm, Count: count}
	if ah != nil {
		in.SHA256 = ah.sum()
	}
	dropped, err := win.finish(path, o.DropImplausible)
	if we := (*WindowError)(nil); errors.As(err, &we) {
		we.SHA256 = in.SHA256
	}
	if err != nil {
		return sources.Dataset{}, err
	}
	if gz {
		in.Note = "gzip-compressed"
	}
	ds := sources.Dataset{Arm: arm, Inputs: []sources.Input{in}, Clock: sources.ClockEpoch, Location: Location}
	if w := unknownWarning(path, unknown); w != "" {
		ds.Warnings = append(ds.Warnings, w)
	}
	if w := earlyClockWarning(path, win.first); w != "" {
		ds.Warnings = append(ds.Warnings, w)
	}
	if dropped != "" {
		ds.Warnings = append(ds.Warnings, dropped)
	}
	return ds, nil
}

// windowTracker follows a file's arrival times for the plausible-window
// check without keeping them: an even sample (every stride-th record,
// the stride doubling whenever the sample reaches 2·windowSample) and,
// per whole second, the records in it and the first of them in file
// order. With a window given it checks each record against it instead.
type windowTracker struct {
	sample []float64
	stride int
	// next is the index of the next record to sample: a multiple of
	// stride (i%stride cost a division per record)
	next    int
	records int
	secs    map[int64]*secStat
	lastKey int64
	last    *secStat
	// with a given window: records outside it, the first one's line and ts
	window   *[2]float64
	out      int
	outLine  int
	outFirst float64
	// first is the earliest arrival kept (+Inf before one)
	first float64
}

type secStat struct {
	n          int
	firstLine  int
	firstTS    float64
	minTS, max float64
}

func newWindowTracker(w *[2]float64) *windowTracker {
	return &windowTracker{stride: 1, secs: map[int64]*secStat{}, lastKey: math.MinInt64, window: w, first: math.Inf(1)}
}

// observe notes a record's arrival time and reports whether it is to be
// kept (always, unless a window is given and t lies outside it).
func (w *windowTracker) observe(t float64, line int) bool {
	i := w.records
	w.records++
	if w.window != nil && (t < w.window[0] || t > w.window[1]) {
		if w.out == 0 {
			w.outLine, w.outFirst = line, t
		}
		w.out++
		return false
	}
	// the builtins are math.Min and math.Max for a record's ts (finite,
	// at least +0: checkTS) and inline; math's were calls
	w.first = min(w.first, t)
	if w.window != nil {
		return true
	}
	if i == w.next {
		w.sample = append(w.sample, t)
		if len(w.sample) == 2*windowSample {
			k := 0
			for j := 0; j < len(w.sample); j += 2 {
				w.sample[k] = w.sample[j]
				k++
			}
			w.sample = w.sample[:k]
			w.stride *= 2
		}
		w.next = i&^(w.stride-1) + w.stride // stride is a power of two
	}
	key := int64(math.Floor(t))
	s := w.last
	if key != w.lastKey {
		s = w.secs[key]
		if s == nil {
			s = &secStat{firstLine: line, firstTS: t, minTS: t, max: t}
			w.secs[key] = s
		}
		w.last, w.lastKey = s, key
	}
	s.n++
	s.minTS, s.max = min(s.minTS, t), max(s.max, t)
	return true
}

// finish decides the plausible-window check after the last record.
func (w *windowTracker) finish(path string, drop bool) (string, error) {
	if w.records == 0 {
		return "", nil
	}
	if w.window != nil {
		lo, hi := w.window[0], w.window[1]
		if w.out == 0 {
			return "", nil
		}
		if !drop {
			return "", implausibleError(path, w.outLine, w.outFirst, lo, hi, w.out)
		}
		return droppedWarning(path, w.outLine, lo, hi, w.out), nil
	}
	lo, hi := windowOf(w.sample)
	out, ambiguous := 0, false
	var first *secStat
	for _, s := range w.secs {
		switch {
		case s.minTS >= lo && s.max <= hi:
			continue
		case s.max < lo || s.minTS > hi:
			out += s.n
			if first == nil || s.firstLine < first.firstLine {
				first = s
			}
		default:
			ambiguous = true
		}
	}
	if out == 0 && !ambiguous {
		return "", nil
	}
	if drop || ambiguous {
		return "", &WindowError{Path: path, Lo: lo, Hi: hi, Out: out}
	}
	return "", implausibleError(path, first.firstLine, first.firstTS, lo, hi, out)
}

// scanJSONL is readJSONL for Scan: chunks are parsed in parallel and
// handed to emit in file order; a chunk's buffer is reused only after
// emit has seen its records, so at most a few chunks are in memory.
// fence, when not nil, is called before a buffer is written again (see
// asyncHash.fence).
func scanJSONL(ctx context.Context, path string, src io.Reader, skipped int, gz bool, opt options, fence func(), emit func(*sources.Request, int) error) (map[string]*unknownField, error) {
	workers := max(opt.workers, 1)
	nbuf := workers + 2
	free := make(chan []byte, nbuf)
	for range nbuf {
		free <- make([]byte, opt.chunkSize)
	}
	// the records' and their lines' buffers of chunks already emitted,
	// for the parsers to reuse
	recycled := make(chan chunkBufs, nbuf)
	chunks := make(chan chunk, workers)
	results := make(chan chunkResult, nbuf)
	stop := make(chan struct{})
	var readErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(chunks)
		p := producer{src: src, free: free, chunks: chunks, stop: stop, opt: opt, fence: fence, guess: true}
		readErr = p.run(ctx)
	}()
	decoders := make([]*decoder, workers)
	var pwg sync.WaitGroup
	for w := range workers {
		d := newDecoder()
		decoders[w] = d
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for c := range chunks {
				select {
				case b := <-recycled:
					c.dst, c.lineBuf = b.reqs[:0], b.lines[:0]
				default:
				}
				c.wantLines = true
				res := d.parseChunk(ctx, c)
				res.buf = c.buf
				results <- res
			}
		}()
	}
	go func() {
		pwg.Wait()
		close(results)
	}()
	pending := map[int]chunkResult{}
	next, line := 0, skipped
	var failure error
	stopped := false
	halt := func(err error) {
		if failure == nil {
			failure = err
		}
		if !stopped {
			close(stop)
			stopped = true
		}
	}
	for res := range results {
		pending[res.idx] = res
		for failure == nil {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			switch {
			case r.ctx != nil:
				halt(fmt.Errorf("%s: %w", path, r.ctx))
			case r.err != nil:
				halt(r.err.at(path, line+r.line))
			default:
				for k := range r.reqs {
					if err := emit(&r.reqs[k], line+int(r.recLine[k])); err != nil {
						halt(err)
						break
					}
				}
				line += r.lines
			}
			if r.buf != nil {
				free <- r.buf
			}
			select {
			case recycled <- chunkBufs{reqs: r.reqs, lines: r.recLine}:
			default:
			}
		}
		if failure != nil {
			// let the parsers finish: give their buffers back
			for _, r := range pending {
				if r.buf != nil {
					free <- r.buf
				}
			}
			clear(pending)
		}
	}
	wg.Wait()
	if failure != nil {
		return nil, failure
	}
	if readErr != nil {
		var pe *ParseError
		if errors.As(readErr, &pe) {
			pe.Path, pe.Line = path, line+1
			return nil, pe
		}
		return nil, readError(path, line+1, gz, readErr)
	}
	unknown := make(map[string]*unknownField)
	for _, d := range decoders {
		mergeUnknown(unknown, d.unknown)
	}
	return unknown, nil
}

// chunkBufs are an emitted chunk's buffers, given back to the parsers.
type chunkBufs struct {
	reqs  []sources.Request
	lines []int32
}

// asyncHash passes a reader's bytes through while a goroutine of its own
// computes their SHA-256, so hashing takes no time from reading and
// parsing. A small read is copied into one of its buffers for the hashing
// goroutine; a large one (at least lendMin bytes: a chunk of the scan read
// directly into its buffer) is lent instead, the hashing goroutine reading
// the caller's buffer, which the caller must not write again before fence
// returns (copying every chunk was 3% of judge --stream's CPU time).
type asyncHash struct {
	r    io.Reader
	h    hash.Hash
	ch   chan hashPart
	free chan []byte
	done chan struct{}
	once sync.Once
	made int // buffers made so far (hashBufs at most)
	// lent counts the reads lent (the reading goroutine's), hashed those
	// hashed so far (under mu, which cond waits on)
	lent   int
	mu     sync.Mutex
	cond   *sync.Cond
	hashed int
}

// hashPart is a run of bytes for the hashing goroutine: in a buffer of
// asyncHash's own, or lent by the reader.
type hashPart struct {
	b    []byte
	lent bool
}

// hashBuf is the size of asyncHash's buffers (bytes), but for one made
// for a smaller read.
const hashBuf = 256 << 10

// hashBufs is how many buffers asyncHash fills at most at once.
const hashBufs = 8

// lendMin is the smallest read asyncHash lends rather than copies (bytes):
// above the bufio buffers' size (256 KiB), whose reads into their own
// buffer are copied, so that only the scan's chunk buffers are lent.
const lendMin = 256<<10 + 1

func newAsyncHash(r io.Reader) *asyncHash {
	a := &asyncHash{r: r, h: sha256.New(), ch: make(chan hashPart, hashBufs), free: make(chan []byte, hashBufs), done: make(chan struct{})}
	a.cond = sync.NewCond(&a.mu)
	go func() {
		defer close(a.done)
		for part := range a.ch {
			a.h.Write(part.b)
			if part.lent {
				a.mu.Lock()
				a.hashed++
				a.cond.Broadcast()
				a.mu.Unlock()
				continue
			}
			a.free <- part.b[:cap(part.b)]
		}
	}()
	return a
}

func (a *asyncHash) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if n >= lendMin {
		a.lent++
		a.ch <- hashPart{b: p[:n:n], lent: true}
		return n, err
	}
	for q := p[:n]; len(q) > 0; {
		var b []byte
		select {
		case b = <-a.free:
		default:
			// buffers are made as the reads need them, no larger than
			// the first read (a small file's): the judge reads thousands
			// of small files as well as a few large ones
			if a.made < hashBufs {
				a.made++
				b = make([]byte, min(hashBuf, max(len(q), 4<<10)))
			} else {
				b = <-a.free
			}
		}
		m := copy(b, q)
		q = q[m:]
		a.ch <- hashPart{b: b[:m]}
	}
	return n, err
}

// fence returns once every read lent so far is hashed: their buffers may
// then be written again. Call it from the goroutine that reads.
func (a *asyncHash) fence() {
	a.mu.Lock()
	for a.hashed < a.lent {
		a.cond.Wait()
	}
	a.mu.Unlock()
}

func (a *asyncHash) stop() {
	a.once.Do(func() { close(a.ch) })
	<-a.done
}

// sum waits for the hashing goroutine and returns the digest in hex.
func (a *asyncHash) sum() string {
	a.stop()
	return hex.EncodeToString(a.h.Sum(nil))
}
