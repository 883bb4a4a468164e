package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/goodput-dev/goodput/sources/requestlog"
)

// autoStreamBytes is the size (bytes) of a judge's request logs, both arms
// together, above which they are judged from streaming aggregates in
// bounded memory rather than with every request in memory, unless --exact
// is given: 256 MiB, about 1.2 million requests of the simulator's JSONL
// (some 220 bytes a line), which the exact path holds in about 500 MB
// (~440 bytes a request) while the streaming judge's memory follows its
// buckets (at most sources.MaxStreamSlices per arm), not the requests:
// under 400 MiB on the bench's logs at every size (docs/EVIDENCE.md). A gzip file counts its uncompressed length (the gzip
// trailer's), since memory follows the requests, not the bytes on disk.
const autoStreamBytes = 256 << 20

// judgePath is the judging path chosen for file inputs and why.
type judgePath struct {
	stream bool
	// reason completes "judging with every request in memory: …" or
	// "judging from streaming aggregates in bounded memory: …"; it is
	// also the report's measurement.method_reason
	reason string
}

// line is the one line stderr gets about the choice.
func (p judgePath) line() string {
	if p.stream {
		return "judging from streaming aggregates in bounded memory: " + p.reason
	}
	return "judging with every request in memory: " + p.reason
}

// chooseJudgePath decides how `goodput judge` reads file inputs: from
// streaming aggregates (bounded memory) when every input is a native
// request log, the judge is goodput's own, nothing else needs every
// request, and the inputs are large (above o.streamAbove bytes, default
// autoStreamBytes) or of unknown size (a pipe, standard input); with every
// request in memory otherwise, so that small runs keep the exact path's
// verdicts. --stream and --exact decide it outright. Regular files are
// opened to detect their format and closed again; pipes are not touched.
func (a *app) chooseJudgePath(ctx context.Context, o *judgeOptions) (judgePath, error) {
	switch {
	case o.Stream:
		return judgePath{stream: true, reason: "--stream given"}, nil
	case o.Exact:
		return judgePath{reason: "--exact given"}, nil
	case o.Judge != "goodput":
		return judgePath{reason: "--judge " + o.Judge + " needs every request"}, nil
	case o.metrics.enabled():
		return judgePath{reason: "metrics beside the request logs (--baseline-metrics, --canary-metrics, --metrics-prometheus) need every request"}, nil
	case o.InputFormat != "" && o.InputFormat != "auto" && o.InputFormat != requestlog.Format:
		return judgePath{reason: "--input-format " + o.InputFormat + " is not a request log"}, nil
	}
	limit := o.streamAbove
	if limit <= 0 {
		limit = autoStreamBytes
	}
	// the reason names no input, so that the report does not depend on
	// the order the inputs are given in
	var total int64
	unknown, unsized := 0, 0    // pipes; gzip files whose trailer does not hold their length
	others := map[string]bool{} // formats other than request logs
	for _, p := range append(append([]string{}, o.Baseline...), o.Canary...) {
		st, err := os.Stat(p)
		if p == stdinPath || err != nil || !st.Mode().IsRegular() {
			// a pipe or standard input: neither its size nor its format
			// can be told without reading it (errors are the reader's)
			if p == stdinPath || err == nil {
				unknown++
			}
			continue
		}
		in, err := openInput(ctx, p, nil, nil)
		if err != nil {
			continue // the reader reports it
		}
		format := o.InputFormat
		if format == "" || format == "auto" {
			format, err = detectFormat(in)
		}
		size, known := inputBytes(in, st.Size())
		in.Close()
		if err != nil {
			continue // the reader reports it
		}
		if !known {
			unsized++
		}
		if format != requestlog.Format {
			others[format] = true
		}
		total += size
	}
	switch {
	case len(others) > 0:
		return judgePath{reason: fmt.Sprintf("not every input is a request log (%s)", strings.Join(slices.Sorted(maps.Keys(others)), ", "))}, nil
	case unknown > 0:
		return judgePath{stream: true, reason: fmt.Sprintf("the size of %d input(s) read from a pipe or standard input is not known before they are read; --exact keeps every request instead", unknown)}, nil
	case unsized > 0:
		return judgePath{stream: true, reason: fmt.Sprintf("%d gzip input(s) do not record their uncompressed size (a file cut short, content past 4 GiB, or several members), so it is not known before they are read; --exact keeps every request instead", unsized)}, nil
	case total > limit:
		return judgePath{stream: true, reason: fmt.Sprintf("the request logs hold %s, above %s; --exact keeps every request instead", fmtBytes(total), fmtBytes(limit))}, nil
	}
	return judgePath{reason: fmt.Sprintf("the request logs hold %s, not above %s; --stream aggregates them instead", fmtBytes(total), fmtBytes(limit))}, nil
}

// inputBytes is the length of a regular file's content: for gzip the
// uncompressed length its trailer records, else its size. known is false
// for a gzip file whose trailer cannot hold its length (content past
// 4 GiB, several members, a file cut short): such a file is judged from
// the stream, like a pipe, since its size is not known before it is read.
func inputBytes(in *input, size int64) (n int64, known bool) {
	var b [2]byte
	if size < 18 {
		return size, true
	}
	if _, err := in.ReadAt(b[:], 0); err != nil || b[0] != 0x1f || b[1] != 0x8b {
		return size, true
	}
	if n, ok := requestlog.GzipContentSize(in, size); ok {
		return n, true
	}
	return 0, false
}

// fmtBytes renders a size in binary units to 3 significant digits:
// 512 B, 3.24 MiB, 256 MiB, 1.4 GiB.
func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.3g GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.3g MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.3g KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
