// Package requestlog reads goodput's native request log (DESIGN.md §3): one
// JSON object per line, or CSV with the same column names and a header row,
// either optionally gzip-compressed. Every record becomes a sources.Request;
// a malformed record is an error naming file:line, the field and the fix,
// and no dataset is returned for a file with any error.
//
// Fields and the values accepted:
//
//   - ts (required): an RFC 3339 time ("2026-11-29T15:06:14.25+01:00") or
//     unix seconds as a number, from 1970 up to 1e11 s (larger values are
//     taken for milliseconds and rejected).
//   - status (required): ok, error, timeout, canceled (or cancelled),
//     rejected — lower case.
//   - ttft_s (required when status is ok), tpot_s, e2e_s, max_itl_s: seconds,
//     finite and ≥ 0; e2e_s may not be smaller than ttft_s.
//   - prompt_tokens, output_tokens, cached_tokens: whole numbers ≥ 0 (12.0
//     and 1e3 are whole numbers too).
//   - class, replica: strings.
//   - attempt: a whole number ≥ 1 (1 = first try).
//   - quality_ok: true or false (CSV also True/False/1/0).
//   - canceled_by: client or server, lower case, only on a canceled request
//     (JSON "" means unknown too); a server's cancel counts as failed
//     (sources.CountsFailed).
//
// JSON null or an empty CSV cell means unknown (NaN latency, -1 token count,
// 0 attempt, unknown quality). A field given twice in one object is an
// error. Unknown fields are ignored and listed, with counts and "did you
// mean" hints, in one dataset warning. TPOT is derived from e2e_s, ttft_s and
// output_tokens when tpot_s is absent (sources.Request.DeriveTPOT).
//
// The reader is built for multi-gigabyte logs: the JSONL scanner decodes
// fields in place without per-field allocation, and JSONL files are parsed in
// chunks on all available cores with results kept in file order, so the
// output and the error reported are the same whatever the chunking. CSV is
// parsed on one core.
package requestlog

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/klauspost/compress/gzip"
	"hash"
	"io"
	"io/fs"
	"os"

	"github.com/goodput-dev/goodput/sources"
)

// Format names the native request log in JSON Lines form (gzip or not);
// FormatCSV names its CSV form. They appear in sources.Input.Format.
const (
	Format    = "requestlog"
	FormatCSV = "requestlog-csv"
)

// Location is the measurement location of a native log. The contract has no
// field for it; request logs are written by clients or load generators.
const Location = "client"

// Detect reports whether head (the first bytes of a file, already
// gunzipped) looks like a native request log: JSON Lines whose first object
// has "ts" and "status" keys, or a CSV header naming ts and status columns.
// head may end mid-line.
func Detect(head []byte) bool {
	head = bytes.TrimPrefix(head, utf8BOM)
	i := skipWS(head, 0)
	if i == len(head) {
		return false
	}
	line := head[i:]
	if nl := bytes.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl]
	}
	if line[0] == '{' {
		ts, st := topLevelKeys(line)
		return ts && st
	}
	var ts, st bool
	for _, col := range bytes.Split(line, []byte{','}) {
		col = bytes.Trim(bytes.TrimSpace(col), `"`)
		ts = ts || string(col) == "ts"
		st = st || string(col) == "status"
	}
	return ts && st
}

// DetectArray reports whether head starts a JSON array whose first element
// is an object with the request log's ts and status keys: request-log
// records written as one array rather than one object per line, which the
// reader does not take (detectFormat says how to convert them).
func DetectArray(head []byte) bool {
	head = bytes.TrimPrefix(head, utf8BOM)
	i := skipWS(head, 0)
	if i == len(head) || head[i] != '[' {
		return false
	}
	j := skipWS(head, i+1)
	if j == len(head) || head[j] != '{' {
		return false
	}
	obj := head[j:]
	if end := bytes.IndexByte(obj, '}'); end >= 0 {
		obj = obj[:end+1]
	}
	// topLevelKeys reads one line; an indented array spreads the object
	// over several
	ts, st := topLevelKeys(bytes.ReplaceAll(bytes.ReplaceAll(obj, []byte{'\r'}, []byte{' '}), []byte{'\n'}, []byte{' '}))
	return ts && st
}

// topLevelKeys scans as much of a JSON object as line holds and reports
// whether "ts" and "status" occur among its keys.
func topLevelKeys(line []byte) (ts, status bool) {
	var scratch []byte
	i := skipWS(line, 1)
	for i < len(line) && line[i] == '"' {
		key, j, e := scanString(line, i, &scratch)
		if e != nil {
			return
		}
		switch lookupField(key) {
		case fTS:
			ts = true
		case fStatus:
			status = true
		}
		i = skipWS(line, j)
		if i >= len(line) || line[i] != ':' {
			return
		}
		i = skipWS(line, i+1)
		if i >= len(line) {
			return
		}
		if line[i] == '{' || line[i] == '[' {
			i, e = skipNested(line, i, &scratch)
		} else {
			i, _, e = scanScalar(line, i, &scratch)
		}
		if e != nil {
			return
		}
		i = skipWS(line, i)
		if i >= len(line) || line[i] != ',' {
			return
		}
		i = skipWS(line, i+1)
	}
	return
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Open reads the request log at path for arm; see Read.
func Open(ctx context.Context, path string, arm sources.Arm) (sources.Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return sources.Dataset{}, err
	}
	defer f.Close()
	return Read(ctx, path, f, arm)
}

// Read parses one request log. path names the file in messages and in
// Input.Path; r yields its raw bytes, gzip-compressed or not (detected by the
// magic bytes 1f 8b, not the name). JSON Lines and CSV are told apart by the
// first non-blank byte: '{' starts JSON Lines, anything else a CSV header.
// The dataset has ClockEpoch, Location "client" and Duration 0 (the analysis
// uses the span of arrival times); Input.SHA256 is over the raw bytes. On any
// error the dataset is empty: a file is accepted whole or not at all. The
// error is a *ParseError for problems with the content.
//
// A record whose ts lies outside the file's plausible window (see
// checkWindow) is an error naming its line; ReadWith can drop such records
// with a count instead.
func Read(ctx context.Context, path string, r io.Reader, arm sources.Arm) (sources.Dataset, error) {
	return read(ctx, path, r, arm, defaultOptions())
}

// Options are the reader's settings that a policy controls.
type Options struct {
	// DropImplausible drops records whose arrival time lies outside the
	// file's plausible window, with a count in a warning, instead of
	// refusing the file (policy window.implausible: drop).
	DropImplausible bool
}

// ReadWith is Read with options.
func ReadWith(ctx context.Context, path string, r io.Reader, arm sources.Arm, o Options) (sources.Dataset, error) {
	opt := defaultOptions()
	opt.dropImplausible = o.DropImplausible
	return read(ctx, path, r, arm, opt)
}

// options tune the JSONL pipeline; tests shrink them to exercise chunk
// boundaries and long lines.
type options struct {
	chunkSize int // bytes per chunk handed to a parser
	workers   int // parallel parsers
	maxLine   int // longest accepted line, bytes
	// dropImplausible drops records outside the plausible window
	dropImplausible bool
}

func defaultOptions() options {
	return options{chunkSize: 1 << 20, workers: parallelism(), maxLine: 64 << 20}
}

// hashingReader feeds every byte read through it to a hash.
type hashingReader struct {
	r io.Reader
	h hash.Hash
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	return n, err
}

func read(ctx context.Context, path string, r io.Reader, arm sources.Arm, opt options) (sources.Dataset, error) {
	if err := ctx.Err(); err != nil {
		return sources.Dataset{}, fmt.Errorf("%s: %w", path, err)
	}
	hr := &hashingReader{r: r, h: sha256.New()}
	lb, err := openBody(path, hr)
	if err != nil {
		return sources.Dataset{}, err
	}
	defer lb.close()
	body, first, skipped, gz, raw := lb.body, lb.first, lb.skipped, lb.gz, lb.raw
	var (
		reqs     []sources.Request
		lines    lineIndex
		unknown  map[string]*unknownField
		format   = Format
		parseErr error
	)
	switch first {
	case '{':
		reqs, lines, unknown, parseErr = readJSONL(ctx, path, body, skipped, sizeHint(r, gz), gz, opt)
	case '[':
		return sources.Dataset{}, &ParseError{Path: path, Line: skipped + 1, Col: 1,
			Msg: "the file is a JSON array, not JSON Lines (a request log has one JSON object per line; for benchmark result files use their own input format)"}
	default:
		format = FormatCSV
		reqs, lines, unknown, parseErr = readCSV(ctx, path, body, skipped, sizeHint(r, gz), gz)
	}
	if parseErr != nil {
		return sources.Dataset{}, parseErr
	}
	// hash any bytes the parser did not need (nothing, normally)
	if _, err := io.Copy(io.Discard, raw); err != nil {
		return sources.Dataset{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(reqs) == 0 {
		return sources.Dataset{}, &ParseError{Path: path, Msg: "no requests: the file has no records (write one JSON object or CSV row per request)"}
	}
	var labels classLabels
	for i := range reqs {
		if labels.observe(reqs[i].Class) {
			labels.at(lines.line(i))
			return sources.Dataset{}, labels.err(path)
		}
	}
	reqs, dropped, earliest, err := checkWindow(path, reqs, lines, opt.dropImplausible)
	if err != nil {
		return sources.Dataset{}, err
	}
	in := sources.Input{Path: path, SHA256: hex.EncodeToString(hr.h.Sum(nil)), Format: format, Arm: arm, Count: len(reqs)}
	if gz {
		in.Note = "gzip-compressed"
	}
	ds := sources.Dataset{Arm: arm, Requests: reqs, Inputs: []sources.Input{in},
		Clock: sources.ClockEpoch, Location: Location}
	if w := unknownWarning(path, unknown); w != "" {
		ds.Warnings = append(ds.Warnings, w)
	}
	if w := earlyClockWarning(path, earliest); w != "" {
		ds.Warnings = append(ds.Warnings, w)
	}
	if dropped != "" {
		ds.Warnings = append(ds.Warnings, dropped)
	}
	return ds, nil
}

// sizeHint guesses how many bytes of (decompressed) text r holds, from
// the size of a file or buffer and, for gzip, the length its trailer records
// (modulo 4 GiB, so it is used only when plausible); 0 when unknown.
// logBody is a request log's bytes opened for parsing: gunzipped when they
// start with the gzip magic, a UTF-8 BOM and leading blank lines skipped
// (counted in skipped, so line numbers stay the file's), and the first
// non-blank byte left unread — '{' for JSON Lines, anything else a CSV
// header.
type logBody struct {
	body    *bufio.Reader // the decompressed text, at its first record
	raw     *bufio.Reader // the bytes as read, for draining what the parser left
	first   byte
	skipped int
	gz      bool
	zr      io.Closer // the gzip reader; nil when not compressed
}

// close releases the gzip reader, if any.
func (b *logBody) close() {
	if b.zr != nil {
		b.zr.Close()
	}
}

// openBody opens r (named path in messages) as a logBody.
func openBody(path string, r io.Reader) (*logBody, error) {
	lb := &logBody{raw: bufio.NewReaderSize(r, 256<<10)}
	var src io.Reader = lb.raw
	if magic, _ := lb.raw.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(lb.raw)
		if err != nil {
			return nil, gzipError(path, 1, err)
		}
		src, lb.gz, lb.zr = zr, true, zr
	}
	lb.body = bufio.NewReaderSize(src, 256<<10)
	if b, err := lb.body.Peek(3); err == nil && bytes.Equal(b, utf8BOM) {
		lb.body.Discard(3)
	}
	for {
		c, err := lb.body.ReadByte()
		if err == io.EOF {
			lb.close()
			return nil, &ParseError{Path: path, Msg: "no requests: the file is empty or has only blank lines (write one JSON object or CSV row per request)"}
		}
		if err != nil {
			lb.close()
			return nil, readError(path, lb.skipped+1, lb.gz, err)
		}
		if c == '\n' {
			lb.skipped++
			continue
		}
		if isWS(c) {
			continue
		}
		lb.body.UnreadByte()
		lb.first = c
		return lb, nil
	}
}

func sizeHint(r io.Reader, gz bool) int64 {
	var size int64
	switch v := r.(type) {
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	case interface{ Len() int }:
		size = int64(v.Len())
	}
	if !gz || size < 18 {
		return size
	}
	ra, ok := r.(io.ReaderAt)
	if !ok {
		return 0
	}
	n, ok := GzipContentSize(ra, size)
	if !ok {
		return 0
	}
	return n
}

// GzipContentSize reads the uncompressed length a gzip file of size bytes
// records in its trailer (ISIZE, the length modulo 4 GiB). ok is false
// when that length cannot be the file's — below the compressed size or
// more than deflate's largest expansion of it — as when the content wrapped
// past 4 GiB, the file holds several members or was cut short; the length
// is then unknown.
func GzipContentSize(ra io.ReaderAt, size int64) (n int64, ok bool) {
	if size < 18 {
		return 0, false
	}
	var tail [4]byte
	if _, err := ra.ReadAt(tail[:], size-4); err != nil {
		return 0, false
	}
	isize := int64(binary.LittleEndian.Uint32(tail[:]))
	if isize < size || isize/maxDeflateRatio > size {
		return 0, false
	}
	return isize, true
}

// maxDeflateRatio bounds how much deflate can expand its input.
const maxDeflateRatio = 1032

// readError turns an I/O failure at line into a message; gzip damage gets
// advice of its own.
func readError(path string, line int, gz bool, err error) error {
	if gz && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || isFlateError(err)) {
		return gzipError(path, line, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", path, err)
	}
	return &ParseError{Path: path, Line: line, Msg: fmt.Sprintf("read failed: %v", err)}
}

func gzipError(path string, line int, err error) error {
	what := "corrupt"
	if errors.Is(err, io.ErrUnexpectedEOF) {
		what = "truncated"
	}
	return &ParseError{Path: path, Line: line,
		Msg: fmt.Sprintf("gzip data is %s (%v); the file was cut short or damaged in transfer: copy it again and check it with gzip -t", what, err)}
}
