package requestlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/klauspost/compress/flate"
	"io"
	"runtime"
	"sync"

	"github.com/goodput-dev/goodput/sources"
)

// The JSONL pipeline: one goroutine reads (and so hashes and gunzips) the
// input into chunks that end on a line boundary; a few parsers decode chunks
// independently; results are put back in chunk order. Line numbers inside a
// chunk are relative, made absolute once every earlier chunk is known, so
// the first error in file order is the one reported, whatever the timing.

// parallelism is the number of parsers: the available cores, at most 8.
func parallelism() int {
	n := runtime.GOMAXPROCS(0)
	if n > 8 {
		n = 8
	}
	return n
}

// ctxEvery is how many lines a parser handles between context checks.
const ctxEvery = 1 << 16

type chunk struct {
	idx  int
	buf  []byte // the buffer, returned to the pool after parsing
	data []byte // whole lines: a prefix of buf
	// dst is where the chunk's requests go: a zero-length window of the
	// shared output with room for every line of the chunk, or nil when the
	// output is full and the parser allocates its own.
	dst   []sources.Request
	base  int // index of dst in the shared output
	lines int // lines in data (Scan: an estimate past the first chunk; see producer.guess)
	// wantLines asks the parser for each record's line (Scan)
	wantLines bool
	// lineBuf is a buffer for the result's recLine, reused when its
	// capacity is enough (nil: the parser allocates one)
	lineBuf []int32
}

type chunkResult struct {
	idx   int
	reqs  []sources.Request
	base  int      // as chunk.base; -1 when reqs is not in the shared output
	lines int      // lines in the chunk (all of them when err is nil)
	err   *lineErr // first problem, on line line of the chunk (1-based)
	line  int
	ctx   error   // the context ended while parsing
	blank []int32 // lines of the chunk (1-based) that held no record
	// recLine is each record's line in the chunk (1-based), when asked for
	recLine []int32
	buf     []byte // the chunk's buffer, for Scan to give back
}

func isFlateError(err error) bool {
	var ce flate.CorruptInputError
	return errors.As(err, &ce)
}

// readJSONL parses JSON Lines from src, whose first line is line skipped+1.
// sizeHint is the number of bytes src will yield, or 0 when unknown; with it
// the output is allocated once, up front, and parsers write into it in
// place, which saves a copy of the whole dataset at the end.
func readJSONL(ctx context.Context, path string, src io.Reader, skipped int, sizeHint int64, gz bool, opt options) ([]sources.Request, lineIndex, map[string]*unknownField, error) {
	workers := max(opt.workers, 1)
	nbuf := workers + 2
	free := make(chan []byte, nbuf)
	for range nbuf {
		free <- make([]byte, opt.chunkSize)
	}
	chunks := make(chan chunk, workers)
	results := make(chan chunkResult, nbuf)
	stop := make(chan struct{})
	var readErr error // set by the reader before it closes chunks
	var out []sources.Request
	var wg sync.WaitGroup

	// reader
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(chunks)
		p := producer{src: src, free: free, chunks: chunks, stop: stop, opt: opt, sizeHint: sizeHint}
		readErr = p.run(ctx)
		out = p.out
	}()

	// parsers
	decoders := make([]*decoder, workers)
	var pwg sync.WaitGroup
	for w := range workers {
		d := newDecoder()
		decoders[w] = d
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for c := range chunks {
				res := d.parseChunk(ctx, c)
				free <- c.buf
				results <- res
			}
		}()
	}
	go func() {
		pwg.Wait()
		close(results)
	}()

	var got []chunkResult
	stopped := false
	for res := range results {
		for len(got) <= res.idx {
			got = append(got, chunkResult{idx: -1})
		}
		got[res.idx] = res
		if (res.err != nil || res.ctx != nil) && !stopped {
			close(stop)
			stopped = true
		}
	}
	wg.Wait()

	// the first problem in file order wins
	line := skipped
	for _, res := range got {
		if res.idx < 0 {
			break // not parsed: an earlier chunk failed or reading stopped
		}
		if res.ctx != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", path, res.ctx)
		}
		if res.err != nil {
			return nil, nil, nil, res.err.at(path, line+res.line)
		}
		line += res.lines
	}
	if readErr != nil {
		var pe *ParseError
		if errors.As(readErr, &pe) {
			pe.Path, pe.Line = path, line+1
			return nil, nil, nil, pe
		}
		return nil, nil, nil, readError(path, line+1, gz, readErr)
	}
	unknown := make(map[string]*unknownField)
	for _, d := range decoders {
		mergeUnknown(unknown, d.unknown)
	}
	idx := &jsonlLines{}
	line = skipped
	for _, res := range got {
		if res.idx < 0 {
			break
		}
		idx.first = append(idx.first, line)
		idx.records = append(idx.records, len(res.reqs))
		idx.blank = append(idx.blank, res.blank)
		line += res.lines
	}
	return assemble(out, got), idx, unknown, nil
}

// assemble joins the chunks' requests in order. Chunks parsed in place
// are already in out; only blank lines (holes) or chunks that did not fit
// cost a copy.
func assemble(out []sources.Request, got []chunkResult) []sources.Request {
	w := 0
	for _, res := range got {
		if res.base < 0 {
			break
		}
		if res.base != w {
			copyPreemptible(out[w:], res.reqs)
		}
		w += len(res.reqs)
	}
	inPlace := w
	for _, res := range got {
		if res.base < 0 {
			w += len(res.reqs)
		}
	}
	if w > cap(out) {
		grown := make([]sources.Request, w)
		copyPreemptible(grown, out[:inPlace])
		out = grown
	} else {
		clear(out[w:cap(out)]) // drop references held by holes
		out = out[:w]
	}
	w = inPlace
	for _, res := range got {
		if res.base < 0 {
			copyPreemptible(out[w:], res.reqs)
			w += len(res.reqs)
		}
	}
	return out
}

// copyPreemptible copies src into dst in slices small enough that the
// garbage collector can stop the goroutine between them.
func copyPreemptible(dst, src []sources.Request) {
	const step = 1 << 14
	for len(src) > 0 {
		n := copy(dst, src[:min(step, len(src))])
		dst, src = dst[n:], src[n:]
	}
}

// at places a line problem in the file.
func (e *lineErr) at(path string, line int) *ParseError {
	return &ParseError{Path: path, Line: line, Col: e.col, Field: e.field.String(), Msg: e.msg}
}

// producer reads the input into chunks of whole lines.
type producer struct {
	src      io.Reader
	free     chan []byte
	chunks   chan<- chunk
	stop     <-chan struct{}
	opt      options
	sizeHint int64
	out      []sources.Request // the shared output, sized from the first chunk
	next     int               // first unassigned index of out
	full     bool              // a chunk did not fit: later ones must not either
	// fence, when not nil, is called before a buffer from free is written
	// (its bytes may still be being hashed: asyncHash.fence)
	fence func()
	// guess is set when chunks are not placed in a shared output (Scan):
	// after the first chunk, whose lines are counted, a chunk's line count
	// (only the size of the parser's buffers then) is guessed from its
	// length at the first chunk's bytes per line (bpl), not counted
	guess bool
	bpl   int
}

// run returns the read error, if any, after sending every complete chunk
// before it.
func (p *producer) run(ctx context.Context) error {
	var carry []byte
	for idx := 0; ; idx++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var buf []byte
		select {
		case buf = <-p.free:
		case <-p.stop:
			return nil
		}
		if p.fence != nil {
			p.fence()
		}
		buf = buf[:cap(buf)]
		if len(carry) > len(buf)/2 {
			buf = make([]byte, 2*len(carry)+len(buf))
		}
		n := copy(buf, carry)
		carry = carry[:0]
		eof := false
		var rerr error
		for {
			m, err := readFull(p.src, buf[n:])
			n += m
			if err == io.EOF {
				eof = true
				break
			}
			if err != nil {
				rerr = err
				break
			}
			if bytes.LastIndexByte(buf[n-m:n], '\n') >= 0 {
				break
			}
			// no line end in a full buffer: a long line
			if len(buf) >= p.opt.maxLine {
				rerr = &ParseError{Msg: fmt.Sprintf("line longer than %d MiB (is this a request log? each line must be one request)", p.opt.maxLine>>20)}
				break
			}
			nb := make([]byte, min(2*len(buf), p.opt.maxLine))
			copy(nb, buf[:n])
			buf = nb
		}
		cut := n
		if !eof || rerr != nil {
			// keep the partial last line for the next chunk; after a read
			// failure, parse the complete lines before it: an earlier
			// syntax error is the better report
			cut = bytes.LastIndexByte(buf[:n], '\n') + 1
			if rerr == nil {
				carry = append(carry, buf[cut:n]...)
			}
		}
		if cut == 0 {
			p.free <- buf
			idx--
		} else {
			c := chunk{idx: idx, buf: buf, data: buf[:cut], base: -1}
			if p.guess && p.bpl > 0 {
				// an eighth to spare, rounded up so that chunks of one
				// size ask for buffers of one size
				c.lines = (cut/p.bpl*9/8 + 1023) &^ 1023
			} else {
				c.lines = bytes.Count(c.data, []byte{'\n'})
				if c.data[cut-1] != '\n' {
					c.lines++
				}
				p.bpl = max(1, cut/c.lines)
			}
			if idx == 0 && (p.sizeHint > 0 || eof) {
				est := c.lines // the whole input is in this chunk
				if !eof {
					est = estimateLines(p.sizeHint, cut, c.lines)
				}
				p.out = make([]sources.Request, est)
			}
			if !p.full && p.next+c.lines <= len(p.out) {
				c.base = p.next
				c.dst = p.out[p.next : p.next : p.next+c.lines]
				p.next += c.lines
			} else {
				p.full = true
			}
			select {
			case p.chunks <- c:
			case <-p.stop:
				return nil
			}
		}
		if rerr != nil {
			return rerr
		}
		if eof {
			return nil
		}
	}
}

// readFull fills p from r. Unlike io.ReadFull it returns io.EOF for a clean
// end after a partial fill and passes every other error through unchanged,
// so that a gzip stream's own io.ErrUnexpectedEOF (truncation) is not
// mistaken for the end of the input.
func readFull(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// estimateLines projects the line count of an input of size bytes from its
// first chunk (n bytes, lines lines), with 5% to spare. A valid record needs
// at least 20 bytes ({"ts":0,"status":""}), which bounds the guess.
func estimateLines(size int64, n, lines int) int {
	est := float64(size)/float64(n)*float64(lines)*1.05 + 64
	return int(min(est, float64(size)/20+float64(lines)+1))
}

// parseChunk decodes the lines of one chunk.
func (d *decoder) parseChunk(ctx context.Context, c chunk) chunkResult {
	res := chunkResult{idx: c.idx, base: c.base}
	data := c.data
	reqs := c.dst
	if cap(reqs) < c.lines {
		// no window of the shared output, or a recycled buffer too small
		// for this chunk: one allocation now rather than growing by
		// appends, each a copy of the records so far
		reqs = make([]sources.Request, 0, c.lines)
	}
	if c.wantLines {
		res.recLine = c.lineBuf[:0]
		if cap(res.recLine) < c.lines {
			res.recLine = make([]int32, 0, c.lines)
		}
	}
	tmpl := sources.NewRequest()
	line := 0
	for len(data) > 0 {
		line++
		if line%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				res.ctx = err
				return res
			}
		}
		reqs = append(reqs, tmpl)
		// the fast path finds the line's end as it decodes it
		if n := d.fastRecord(data, &reqs[len(reqs)-1]); n > 0 {
			data = data[n:]
			if c.wantLines {
				res.recLine = append(res.recLine, int32(line))
			}
			continue
		}
		var ln []byte
		if nl := bytes.IndexByte(data, '\n'); nl >= 0 {
			ln, data = data[:nl], data[nl+1:]
		} else {
			ln, data = data, nil
		}
		// anything unusual: the strict parser, from a fresh record
		reqs[len(reqs)-1] = tmpl
		blank, err := d.parseLine(ln, &reqs[len(reqs)-1])
		if err != nil {
			res.err, res.line = err, line
			return res
		}
		if blank {
			reqs = reqs[:len(reqs)-1]
			res.blank = append(res.blank, int32(line))
		} else if c.wantLines {
			res.recLine = append(res.recLine, int32(line))
		}
	}
	res.reqs, res.lines = reqs, line
	return res
}
