package requestlog

import (
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
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
	data []byte // whole lines: buf[:n]
}

type chunkResult struct {
	idx   int
	reqs  []sources.Request
	lines int      // lines in the chunk (all of them when err is nil)
	err   *lineErr // first problem; its line is errLine within the chunk
	line  int
	ctx   error // the context ended while parsing
}

func isFlateError(err error) bool {
	var ce flate.CorruptInputError
	return errors.As(err, &ce)
}

// readJSONL parses JSON Lines from src, whose first line is line skipped+1.
func readJSONL(ctx context.Context, path string, src io.Reader, skipped int, gz bool, opt options) ([]sources.Request, map[string]*unknownField, error) {
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
	var wg sync.WaitGroup

	// reader
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(chunks)
		readErr = produce(ctx, src, free, chunks, stop, opt)
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
	total := 0
	for _, res := range got {
		if res.idx < 0 {
			break // not parsed: an earlier chunk failed or reading stopped
		}
		if res.ctx != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, res.ctx)
		}
		if res.err != nil {
			return nil, nil, res.err.at(path, line+res.line)
		}
		line += res.lines
		total += len(res.reqs)
	}
	if readErr != nil {
		var pe *ParseError
		if errors.As(readErr, &pe) {
			pe.Path, pe.Line = path, line+1
			return nil, nil, pe
		}
		return nil, nil, readError(path, line+1, gz, readErr)
	}
	reqs := make([]sources.Request, 0, total)
	for i := range got {
		reqs = append(reqs, got[i].reqs...)
		got[i].reqs = nil
	}
	unknown := make(map[string]*unknownField)
	for _, d := range decoders {
		mergeUnknown(unknown, d.unknown)
	}
	return reqs, unknown, nil
}

// at places a line problem in the file.
func (e *lineErr) at(path string, line int) *ParseError {
	return &ParseError{Path: path, Line: line, Col: e.col, Field: e.field.String(), Msg: e.msg}
}

// produce reads src into chunks of whole lines. It returns the read error,
// if any, after sending every complete chunk before it.
func produce(ctx context.Context, src io.Reader, free chan []byte, chunks chan<- chunk, stop <-chan struct{}, opt options) error {
	var carry []byte
	for idx := 0; ; idx++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		var buf []byte
		select {
		case buf = <-free:
		case <-stop:
			return nil
		}
		buf = buf[:cap(buf)]
		if len(carry) > len(buf)/2 {
			nb := make([]byte, 2*len(carry)+len(buf))
			buf = nb
		}
		n := copy(buf, carry)
		carry = carry[:0]
		eof := false
		var rerr error
		for {
			m, err := io.ReadFull(src, buf[n:])
			n += m
			if err == io.EOF || err == io.ErrUnexpectedEOF {
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
			if len(buf) >= opt.maxLine {
				rerr = &ParseError{Msg: fmt.Sprintf("line longer than %d MiB (is this a request log? each line must be one request)", opt.maxLine>>20)}
				break
			}
			nb := make([]byte, 2*len(buf))
			copy(nb, buf[:n])
			buf = nb
		}
		cut := n
		if !eof && rerr == nil {
			cut = bytes.LastIndexByte(buf[:n], '\n') + 1
			carry = append(carry, buf[cut:n]...)
		} else if rerr != nil {
			// parse the complete lines before the failure: an earlier
			// syntax error is the better report
			cut = bytes.LastIndexByte(buf[:n], '\n') + 1
		}
		if cut > 0 {
			select {
			case chunks <- chunk{idx: idx, buf: buf, data: buf[:cut]}:
			case <-stop:
				return nil
			}
		} else {
			free <- buf
			idx--
		}
		if rerr != nil {
			return rerr
		}
		if eof {
			return nil
		}
	}
}

// parseChunk decodes the lines of one chunk.
func (d *decoder) parseChunk(ctx context.Context, c chunk) chunkResult {
	res := chunkResult{idx: c.idx}
	data := c.data
	reqs := make([]sources.Request, 0, bytes.Count(data, []byte{'\n'})+1)
	tmpl := sources.NewRequest()
	line := 0
	for len(data) > 0 {
		var ln []byte
		if nl := bytes.IndexByte(data, '\n'); nl >= 0 {
			ln, data = data[:nl], data[nl+1:]
		} else {
			ln, data = data, nil
		}
		line++
		if line%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				res.ctx = err
				return res
			}
		}
		reqs = append(reqs, tmpl)
		blank, err := d.parseLine(ln, &reqs[len(reqs)-1])
		if err != nil {
			res.err, res.line = err, line
			return res
		}
		if blank {
			reqs = reqs[:len(reqs)-1]
		}
	}
	res.reqs, res.lines = reqs, line
	return res
}
