package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/benchfile"
	"github.com/goodput-dev/goodput/sources/exposition"
	"github.com/goodput-dev/goodput/sources/requestlog"
)

// inputFormats lists the per-request file formats --input-format accepts.
func inputFormats() []string {
	names := []string{requestlog.Format, formatScrape}
	for _, f := range benchfile.Formats() {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}

// formatScrape names Prometheus text / OpenMetrics scrape files: an arm's
// files are read in order as consecutive snapshots (before, after).
const formatScrape = "scrape"

// sniffSize is how much of a file is read to detect its format.
const sniffSize = 64 << 10

// maxSniffRaw bounds the compressed bytes read while looking for sniffSize
// bytes of text in a gzip stream (a stream of empty deflate blocks could
// otherwise be read to its end before a single byte comes out).
const maxSniffRaw = 16 << 20

// stdinPath names standard input on the command line.
const stdinPath = "-"

// input is one input opened once. The bytes read to detect its format are
// kept and replayed to the reader, so a pipe, a FIFO, process substitution
// (<(zcat f.gz)), /dev/stdin and "-" are read exactly once, from their first
// byte to their last, like a regular file. Every raw byte delivered goes
// through a SHA-256, so the digest covers the whole stream.
//
// A regular file may be parked after detection (park): its descriptor is
// closed and the file opened again where it was left when it is next read,
// refused if the path names another file by then; at its end it is closed
// again. An arm of thousands of files (rotated logs per replica and hour)
// so holds one descriptor per file being read, not one per file named:
// with every file held open the judge stopped at the process's limit
// (often 1,024) with "too many open files".
type input struct {
	path    string
	f       io.Reader   // the open file (or standard input); nil while parked
	info    os.FileInfo // Stat of the opened file; nil for an injected stream
	head    []byte      // raw bytes consumed while detecting, not yet delivered
	h       hash.Hash   // SHA-256 of the raw bytes delivered so far; nil when the reader hashes them
	closeFn func() error
	// parked is set for a regular file whose descriptor park closed; off
	// is how many of its bytes were read from the file, where reading
	// resumes; ended is set once it was read to its end and closed
	parked bool
	off    int64
	ended  bool
}

// Read delivers the replayed head, then the rest of the file.
func (in *input) Read(p []byte) (int, error) {
	var n int
	var err error
	if len(in.head) > 0 {
		n = copy(p, in.head)
		in.head = in.head[n:]
	} else {
		if in.ended {
			return 0, io.EOF
		}
		if err := in.unpark(); err != nil {
			return 0, err
		}
		n, err = in.f.Read(p)
		in.off += int64(n)
		if err == io.EOF && in.parked {
			in.closeFile()
			in.ended = true
		}
	}
	if in.h != nil {
		in.h.Write(p[:n])
	}
	return n, err
}

// park closes a regular file's descriptor until it is read again (see
// input); other inputs stay open.
func (in *input) park() {
	if in.parked || in.info == nil || !in.info.Mode().IsRegular() || in.closeFn == nil {
		return
	}
	in.closeFile()
	in.parked = true
}

func (in *input) closeFile() {
	if in.closeFn != nil {
		in.closeFn()
	}
	in.f, in.closeFn = nil, nil
}

// unpark opens a parked file again at the byte where reading stopped,
// refusing a path that names another file now (replaced or rotated since
// it was first opened).
func (in *input) unpark() error {
	if in.f != nil || !in.parked {
		return nil
	}
	f, err := os.Open(in.path)
	if err != nil {
		return fmt.Errorf("%s: opening it again to read it: %w", in.path, err)
	}
	st, err := f.Stat()
	if err == nil && !os.SameFile(st, in.info) {
		err = errors.New("the path names another file than when it was first opened (replaced or rotated while the judge ran): judge files that are no longer being written")
	}
	if err == nil {
		_, err = f.Seek(in.off, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", in.path, err)
	}
	in.f, in.closeFn = f, f.Close
	return nil
}

// Stat reports the file's metadata, so readers can size their buffers
// from a regular file's length; a pipe reports no usable size.
func (in *input) Stat() (fs.FileInfo, error) {
	if in.info == nil {
		return nil, fmt.Errorf("%s: not a file", in.path)
	}
	return in.info, nil
}

// ReadAt reads a regular file at an offset (a gzip trailer, for a size
// hint) without disturbing the stream; it fails on pipes, as it should.
func (in *input) ReadAt(p []byte, off int64) (int, error) {
	if in.ended {
		return 0, fmt.Errorf("%s: read to its end and closed", in.path)
	}
	if err := in.unpark(); err != nil {
		return 0, err
	}
	ra, ok := in.f.(io.ReaderAt)
	if in.info == nil || !in.info.Mode().IsRegular() || !ok {
		return 0, fmt.Errorf("%s: not a regular file", in.path)
	}
	return ra.ReadAt(p, off)
}

// finish reads whatever the reader left (trailing bytes after the last
// record, normally none) so the digest is over the whole input, and
// returns it in hex.
func (in *input) finish() (string, error) {
	if _, err := io.Copy(io.Discard, in); err != nil {
		return "", fmt.Errorf("%s: %w", in.path, err)
	}
	if in.h == nil {
		return "", nil // hashed by its reader
	}
	return hex.EncodeToString(in.h.Sum(nil)), nil
}

func (in *input) Close() error {
	if in.closeFn == nil {
		return nil
	}
	err := in.closeFn()
	in.closeFn = nil
	if in.parked {
		in.f, in.ended = nil, true // not to be opened again
	}
	return err
}

// openInput opens path ("-" is standard input). Opening a FIFO blocks until
// a writer opens it; that wait ends when ctx does (a signal), and progress
// is told what is being waited for.
func openInput(ctx context.Context, path string, stdin io.Reader, progress io.Writer) (*input, error) {
	in := &input{path: path, h: sha256.New()}
	if path == stdinPath {
		if stdin == nil {
			return nil, fmt.Errorf("-: standard input is not available")
		}
		in.f = stdin
		if f, ok := stdin.(*os.File); ok {
			st, err := f.Stat()
			if err != nil {
				return nil, fmt.Errorf("standard input: %w", err)
			}
			in.info = st
		}
		return in, nil
	}
	{
		type opened struct {
			f   *os.File
			err error
		}
		done := make(chan opened, 1)
		go func() {
			f, err := os.Open(path)
			done <- opened{f, err}
		}()
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		told := false
	wait:
		for {
			select {
			case o := <-done:
				if o.err != nil {
					return nil, o.err
				}
				in.f = o.f
				in.closeFn = o.f.Close
				break wait
			case <-ctx.Done():
				// the open(2) stays blocked in its goroutine until a
				// writer comes or the process exits; close what it opens
				go func() {
					if o := <-done; o.f != nil {
						o.f.Close()
					}
				}()
				return nil, fmt.Errorf("%s: %w while waiting for a writer", path, ctx.Err())
			case <-tick.C:
				if !told && progress != nil {
					fmt.Fprintf(progress, "waiting for a writer to open %s (a named pipe)…\n", path)
					told = true
				}
			}
		}
	}
	st, err := in.f.(*os.File).Stat()
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if st.IsDir() {
		in.Close()
		return nil, fmt.Errorf("%s is a directory: give the input files themselves", path)
	}
	in.info = st
	return in, nil
}

// recorder keeps every byte read through it, up to max.
type recorder struct {
	r   io.Reader
	buf []byte
	max int
}

var errSniffLimit = errors.New("detection limit reached")

func (r *recorder) Read(p []byte) (int, error) {
	if len(r.buf) >= r.max {
		return 0, errSniffLimit
	}
	if room := r.max - len(r.buf); len(p) > room {
		p = p[:room]
	}
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

// sniff reads the start of in (gunzipped when compressed) for format
// detection; the raw bytes it consumed are replayed by in.Read.
func (in *input) sniff() ([]byte, error) {
	rec := &recorder{r: in.f, max: maxSniffRaw}
	defer func() { in.head, in.off = rec.buf, in.off+int64(len(rec.buf)) }()
	magic := make([]byte, 2)
	n, err := io.ReadFull(rec, magic)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("%s: %w", in.path, err)
	}
	var r io.Reader = bytes.NewReader(magic[:n])
	if n == 2 {
		r = io.MultiReader(r, rec)
	}
	if n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip header: %v", in.path, err)
		}
		r = zr
	}
	head := make([]byte, sniffSize)
	n, err = io.ReadFull(r, head)
	switch {
	case err == nil, err == io.EOF, err == io.ErrUnexpectedEOF, errors.Is(err, errSniffLimit):
	default:
		if n == 0 {
			return nil, fmt.Errorf("%s: %v", in.path, err)
		}
		// damage past the start (truncated gzip): the reader reports it
		// with its line
	}
	return head[:n], nil
}

// detectFormat names the format of an input from its first bytes
// (gunzipped when compressed).
func detectFormat(in *input) (string, error) {
	head, err := in.sniff()
	if err != nil {
		return "", err
	}
	path := in.path
	if len(bytes.TrimSpace(head)) == 0 {
		return "", fmt.Errorf("%s: the file is empty: give a request log or a benchmark result file", path)
	}
	if requestlog.Detect(head) {
		return requestlog.Format, nil
	}
	if f := benchfile.Detect(head); f != "" {
		return f, nil
	}
	if exposition.Detect(head) {
		return formatScrape, nil
	}
	if requestlog.DetectArray(head) {
		return "", fmt.Errorf("%s: request-log records (ts, status, …) written as one JSON array; the request log is one JSON object per line (JSONL) or CSV: write one record per line, e.g. jq -c '.[]' %s > records.jsonl", path, path)
	}
	return "", fmt.Errorf("%s: unrecognised input format; give --input-format (one of %s)", path, strings.Join(inputFormats(), ", "))
}

// armInput is what is known of one input after reading it: enough to tell
// a duplicate.
type armInput struct {
	arm    sources.Arm
	path   string
	info   os.FileInfo // nil for an injected stream
	sha256 string      // of the raw bytes, whole
	format string
}

// readArm reads every input given for one arm and merges them. Each is
// opened once (see input); the arm's inputs are opened and detected before
// any is read, since scrapes and per-request files cannot be mixed.
//
// Files on a wall clock (unix times) and files on a per-file monotonic clock
// (perf_counter) cannot be placed on one time line, so one arm may not mix
// them.
func readArm(ctx context.Context, arm sources.Arm, paths []string, format string, ro requestlog.Options, stdin io.Reader, progress io.Writer) (sources.Dataset, []armInput, error) {
	var ds sources.Dataset
	ds.Arm = arm
	ins := make([]*input, 0, len(paths))
	defer func() {
		for _, in := range ins {
			in.Close()
		}
	}()
	formats := make([]string, len(paths))
	scrapes := 0
	for i, p := range paths {
		in, err := openInput(ctx, p, stdin, progress)
		if err != nil {
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				return ds, nil, fmt.Errorf("%s input %s: %v (give a request log, a benchmark file or a scrape; - reads standard input)", arm, p, pe.Err)
			}
			return ds, nil, err
		}
		ins = append(ins, in)
		formats[i] = format
		if format == "" || format == "auto" {
			if formats[i], err = detectFormat(in); err != nil {
				return ds, nil, err
			}
		}
		in.park() // opened again when read: one descriptor at a time
		if formats[i] == formatScrape || formats[i] == exposition.FormatText || formats[i] == exposition.FormatOpenMetrics {
			scrapes++
		}
	}
	seen := make([]armInput, len(ins))
	// finish reads what the reader of input i left, takes its digest and
	// closes it
	finish := func(i int) error {
		in := ins[i]
		sum, err := in.finish()
		if err != nil {
			return err
		}
		seen[i] = armInput{arm: arm, path: in.path, info: in.info, sha256: sum, format: formats[i]}
		return in.Close()
	}
	done := func() error {
		for i := range ins {
			if err := finish(i); err != nil {
				return err
			}
		}
		return nil
	}
	if scrapes > 0 {
		if scrapes != len(paths) {
			return ds, nil, fmt.Errorf("%s: scrape files and per-request files cannot be mixed in one arm", arm)
		}
		files := make([]exposition.File, len(ins))
		for i, in := range ins {
			files[i] = exposition.File{Path: in.path, R: in}
		}
		ds, err := exposition.ReadWith(ctx, files, arm, exposition.Options{})
		if err != nil {
			return ds, nil, err
		}
		return ds, seen, done()
	}
	clockOf := map[sources.Clock]string{}
	type part struct {
		ds sources.Dataset
		in *input
	}
	var parts []part
	for i, in := range ins {
		if err := ctx.Err(); err != nil {
			return ds, nil, err
		}
		fmtName := formats[i]
		if in.info != nil && in.info.Mode().IsRegular() && in.info.Size() > 64<<20 && progress != nil {
			fmt.Fprintf(progress, "reading %s (%s, %d MB)…\n", in.path, fmtName, in.info.Size()>>20)
		}
		one, err := readFile(ctx, arm, in, fmtName, ro)
		if err != nil {
			return ds, nil, err
		}
		if err := finish(i); err != nil {
			return ds, nil, err
		}
		if one.Clock == sources.ClockEpoch || one.Clock == sources.ClockRelative {
			clockOf[one.Clock] = in.path
			if e, r := clockOf[sources.ClockEpoch], clockOf[sources.ClockRelative]; e != "" && r != "" {
				return ds, nil, fmt.Errorf("%s: %s has wall-clock arrival times (unix seconds) and %s times on its own monotonic clock (perf_counter seconds from an arbitrary origin): they cannot be placed on one time line; judge files of one kind per arm", arm, e, r)
			}
		}
		parts = append(parts, part{one, in})
	}
	// files that cannot be placed by wall-clock time are taken as runs in
	// sequence, so they are put in an order of their content, not of the
	// command line: the same files give the same report however listed
	epoch := true
	for _, p := range parts {
		epoch = epoch && p.ds.Clock == sources.ClockEpoch
	}
	if !epoch {
		sum := map[*input]string{}
		for i, in := range ins {
			sum[in] = seen[i].sha256
		}
		sort.SliceStable(parts, func(i, j int) bool { return sum[parts[i].in] < sum[parts[j].in] })
	}
	runs := make([]sources.Dataset, 0, len(parts))
	for _, p := range parts {
		runs = append(runs, p.ds)
	}
	// replicas (time ranges overlap) or repeated runs (one after another)
	ds = sources.Combine(runs)
	ds.Arm = arm
	return ds, seen, nil
}

func readFile(ctx context.Context, arm sources.Arm, in *input, format string, ro requestlog.Options) (sources.Dataset, error) {
	path := in.path
	if format == requestlog.Format {
		return requestlog.ReadWith(ctx, path, in, arm, ro)
	}
	known := false
	for _, fi := range benchfile.Formats() {
		known = known || fi.Name == format
	}
	if !known {
		return sources.Dataset{}, fmt.Errorf("unknown --input-format %q (one of %s)", format, strings.Join(inputFormats(), ", "))
	}
	// an uncompressed file goes to the reader as is, so it can size its
	// buffer from the file
	br := bufio.NewReaderSize(in, 1<<20)
	var r io.Reader = in
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return sources.Dataset{}, fmt.Errorf("%s: gzip header: %v", path, err)
		}
		r = zr
	} else {
		r = &sizedReader{Reader: br, in: in}
	}
	return benchfile.Read(ctx, format, path, r, arm)
}

// sizedReader is a buffered input that still reports the file's size.
type sizedReader struct {
	io.Reader
	in *input
}

func (s *sizedReader) Stat() (fs.FileInfo, error) { return s.in.Stat() }

// readFileCapped reads a whole-file input (a report, a review, an event
// payload) of at most max bytes; a larger one is an error naming it, not
// an allocation of its size.
func readFileCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d MiB, more than any file of its kind", path, max>>20)
	}
	return b, nil
}
