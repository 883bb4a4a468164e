// Package benchfile reads the per-request output files of LLM serving
// benchmark clients — vLLM `bench serve`, SGLang `bench_serving`, LLMPerf,
// NVIDIA genai-perf, AIPerf and kubernetes-sigs inference-perf — into
// goodput's canonical per-arm Dataset.
//
// Every reader converts to the canonical units (seconds, tokens), derives
// TPOT the way vLLM does, (e2e − TTFT)/(output tokens − 1), whatever the tool
// itself calls "ITL" or "TPOT", marks failed requests, and says in the
// Dataset's Clock what its arrival times mean. Files that only carry summary
// statistics are recognised and refused with a message naming the flag that
// produces per-request data. All readers go through a tolerant JSON front end
// that accepts Python's bare Infinity, -Infinity and NaN tokens and rejects
// everything else that is not JSON with file:line:col.
package benchfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"sort"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// Format names accepted by Read and by the CLI's --input-format.
const (
	FormatVLLM          = "vllm-bench"
	FormatSGLang        = "sglang-bench"
	FormatLLMPerf       = "llmperf"
	FormatGenAIPerf     = "genai-perf"
	FormatAIPerf        = "aiperf"
	FormatInferencePerf = "inference-perf"
)

// FormatInfo documents one input format for --help and the README.
type FormatInfo struct {
	Name    string // value for --input-format
	Summary string // one line: which tool and file
	Produce string // how to produce a file goodput can judge
	Reads   string // what goodput reads from it, with units
}

// DetectBytes is how much of the start of a file Detect needs (64 KiB).
const DetectBytes = 64 << 10

// Formats lists the formats this package reads, in a fixed order.
func Formats() []FormatInfo {
	var out []FormatInfo
	for _, fi := range allFormats() {
		if readerFor(fi.Name) != nil {
			out = append(out, fi)
		}
	}
	return out
}

func allFormats() []FormatInfo {
	return []FormatInfo{
		{
			Name:    FormatVLLM,
			Summary: "vLLM `vllm bench serve` / benchmark_serving.py result JSON",
			Produce: "vllm bench serve ... --save-result --save-detailed (older benchmark_serving.py: --save-result)",
			Reads:   "per-request ttfts, itls, latencies (s), input_lens, output_lens, errors, start_times (perf_counter s); duration (s)",
		},
		{
			Name:    FormatSGLang,
			Summary: "SGLang `python -m sglang.bench_serving` JSONL (one run per line)",
			Produce: "python -m sglang.bench_serving ... --output-file run.jsonl --output-details",
			Reads:   "per-request ttfts, itls (s), input_lens, output_lens, errors; duration (s); every line is one run, merged",
		},
		{
			Name:    FormatLLMPerf,
			Summary: "LLMPerf token_benchmark_ray.py *_individual_responses.json",
			Produce: "python token_benchmark_ray.py ... --results-dir DIR (use the *_individual_responses.json file)",
			Reads:   "ttft_s, end_to_end_latency_s, number_input_tokens, number_output_tokens, error_code; TPOT derived, no arrival times",
		},
		{
			Name:    FormatGenAIPerf,
			Summary: "NVIDIA genai-perf / Perf Analyzer profile_export.json",
			Produce: "genai-perf profile ... --streaming (use artifacts/<run>/profile_export.json)",
			Reads:   "per-request timestamp and response_timestamps (ns); output tokens from usage when present, else responses with content",
		},
		{
			Name:    FormatAIPerf,
			Summary: "AIPerf profile_export.jsonl (one record per request)",
			Produce: "aiperf profile ... --streaming (use artifacts/<run>/profile_export.jsonl)",
			Reads:   "metadata request_start_ns (epoch ns), metrics time_to_first_token, request_latency, inter_chunk_latency (ms), sequence lengths, error",
		},
		{
			Name:    FormatInferencePerf,
			Summary: "kubernetes-sigs inference-perf per_request_lifecycle_metrics.json",
			Produce: "inference-perf --config_file cfg.yml with report.request_lifecycle.per_request: true",
			Reads:   "start_time, end_time (perf_counter s), output_token_times, input/output token counts, error",
		},
	}
}

// readerFunc parses one whole file held in buf.
type readerFunc func(ctx context.Context, f *file) error

func readerFor(format string) readerFunc {
	switch format {
	case FormatVLLM:
		return readVLLM
	case FormatLLMPerf:
		return readLLMPerf
	case FormatSGLang:
		return readSGLang
	case FormatGenAIPerf:
		return readGenAIPerf
	case FormatAIPerf:
		return readAIPerf
	case FormatInferencePerf:
		return readInferencePerf
	}
	return nil
}

// file is the state shared by a reader while it parses one input.
type file struct {
	sc       scanner
	format   string
	ds       sources.Dataset
	note     []string
	warnings []string
}

func (f *file) warnf(format string, args ...any) {
	f.warnings = append(f.warnings, f.sc.path+": "+fmt.Sprintf(format, args...))
}

// errStart builds an error located at the start of the document.
func (f *file) errStart(format string, args ...any) error {
	off := 0
	for off < len(f.sc.buf) && (f.sc.buf[off] == ' ' || f.sc.buf[off] == '\t' || f.sc.buf[off] == '\n' || f.sc.buf[off] == '\r') {
		off++
	}
	return f.sc.errAt(off, format, args...)
}

// Read parses one file of the given format into a Dataset for arm. path is
// used in messages and in the Dataset's Input; r yields the file's bytes
// (already decompressed). The whole file is held in memory while it is
// parsed. Errors are *ParseError values naming the file and, where the
// problem has a position, its line and byte column.
func Read(ctx context.Context, format, path string, r io.Reader, arm sources.Arm) (sources.Dataset, error) {
	rd := readerFor(format)
	if rd == nil {
		names := make([]string, 0, 6)
		for _, fi := range Formats() {
			names = append(names, fi.Name)
		}
		return sources.Dataset{}, &ParseError{Path: path, Msg: fmt.Sprintf("unknown benchmark file format %q (want one of %s)", format, strings.Join(names, ", "))}
	}
	if err := ctx.Err(); err != nil {
		return sources.Dataset{}, err
	}
	h := sha256.New()
	buf, err := readWhole(path, r, h)
	if err != nil {
		return sources.Dataset{}, err
	}
	if err := ctx.Err(); err != nil {
		return sources.Dataset{}, err
	}
	buf = bytes.TrimPrefix(buf, []byte("\xef\xbb\xbf")) // UTF-8 byte-order mark
	f := &file{sc: scanner{buf: buf, path: path, hint: formatHint(format)}, format: format}
	f.ds.Arm = arm
	f.ds.Location = "client"
	if len(bytes.TrimSpace(buf)) == 0 {
		return sources.Dataset{}, &ParseError{Path: path, Line: 1, Col: 1, Msg: "the file is empty (did the benchmark finish writing it?)"}
	}
	if err := rd(ctx, f); err != nil {
		return sources.Dataset{}, err
	}
	if len(f.ds.Requests) == 0 {
		return sources.Dataset{}, f.errStart("no requests in the file (the benchmark recorded none; check that the run completed)")
	}
	f.ds.Inputs = []sources.Input{{
		Path:   path,
		SHA256: hex.EncodeToString(h.Sum(nil)),
		Format: format,
		Arm:    arm,
		Count:  len(f.ds.Requests),
		Note:   strings.Join(f.note, "; "),
	}}
	f.ds.Warnings = f.warnings
	return f.ds, nil
}

// formatHint is appended to type errors, which usually mean the file was
// written by another tool or version than the reader expects.
func formatHint(format string) string {
	for _, fi := range allFormats() {
		if fi.Name == format {
			return fmt.Sprintf(" (reading it as %s: %s; if it is another kind of file, --input-format selects the reader)", fi.Name, fi.Summary)
		}
	}
	return ""
}

// MaxBytes caps the (decompressed) size of a benchmark file: they are read
// whole, so without a cap a small .json.gz that inflates to gigabytes takes
// that much memory. 512 MiB is several times the largest real result file;
// a run larger than that belongs in a request log, which is streamed.
const MaxBytes = 512 << 20

// readWhole reads a benchmark file whole (see readAll), with the cap's
// error naming the file.
func readWhole(path string, r io.Reader, h io.Writer) ([]byte, error) {
	buf, err := readAll(r, h, MaxBytes)
	if errors.Is(err, errTooBig) {
		return nil, &ParseError{Path: path, Msg: fmt.Sprintf("larger than %d MiB (decompressed): benchmark result files are read whole, and this is not a plausible one (a compression bomb, or the wrong file?); for a run this large write a request log, which is streamed", MaxBytes>>20)}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: reading: %w", path, err)
	}
	return buf, nil
}

var errTooBig = errors.New("file too large")

// readChunk is the block size readAll reads an input of unknown size in.
const readChunk = 4 << 20

// readAll reads r to the end, at most max bytes, hashing them into h. When
// r knows its size (a bytes or strings reader, a regular file) the buffer
// is allocated once, which matters for files of hundreds of megabytes, and
// a file over max is refused before it is read. Otherwise (a pipe, gzip)
// it is read in blocks and joined once at the end, so memory stays within
// about twice the input, and within max for an input over max.
func readAll(r io.Reader, h io.Writer, max int64) ([]byte, error) {
	size := -1
	switch v := r.(type) {
	case interface{ Len() int }:
		size = v.Len()
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() < 1<<40 {
			size = int(fi.Size())
		}
	}
	if int64(size) > max {
		return nil, errTooBig
	}
	src := io.LimitReader(io.TeeReader(r, h), max+1)
	if size >= 0 {
		buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
		if _, err := buf.ReadFrom(src); err != nil {
			return nil, err
		}
		if int64(buf.Len()) > max {
			return nil, errTooBig
		}
		return buf.Bytes(), nil
	}
	var blocks [][]byte
	total := 0
	for {
		b := make([]byte, readChunk)
		n, err := io.ReadFull(src, b)
		if n > 0 {
			blocks = append(blocks, b[:n])
			total += n
		}
		if int64(total) > max {
			return nil, errTooBig
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	out := make([]byte, 0, total)
	for i, b := range blocks {
		out = append(out, b...)
		blocks[i] = nil
	}
	return out, nil
}

// checkLatency validates a latency in seconds: finite and not negative.
func (s *scanner) latency(key string) (float64, error) {
	s.ws()
	off := s.pos
	v, err := s.num(key)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, s.errAt(off, "%s: %v is not a valid latency (want a finite number of seconds ≥ 0)", key, v)
	}
	return v, nil
}

// count reads a token count: a whole number ≥ 0.
func (s *scanner) count(key string) (int64, error) {
	s.ws()
	off := s.pos
	v, err := s.num(key)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v != math.Trunc(v) || v > 1<<53 {
		return 0, s.errAt(off, "%s: %v is not a valid token count (want a whole number ≥ 0)", key, v)
	}
	return int64(v), nil
}

// shiftToZero subtracts the smallest known Time from every request, so that
// a relative (perf_counter) clock starts at the file's first request.
func shiftToZero(reqs []sources.Request) {
	lo := math.Inf(1)
	for i := range reqs {
		if t := reqs[i].Time; !math.IsNaN(t) && t < lo {
			lo = t
		}
	}
	if math.IsInf(lo, 1) {
		return
	}
	for i := range reqs {
		reqs[i].Time -= lo
	}
}

// noTimesWarning is the Dataset warning for inputs without arrival times.
func noTimesWarning(what string, duration float64) string {
	dur := "the run duration is unknown too, so goodput per second cannot be computed from this file alone (SLO attainment and latency quantiles can)"
	if duration > 0 {
		dur = fmt.Sprintf("goodput uses the file's duration (%.6g s)", duration)
	}
	return fmt.Sprintf("%s: arrival times are unknown, so time buckets, warm-up detection and goodput over time are disabled; %s", what, dur)
}

// sortedKeys returns m's keys in order (deterministic messages).
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
