package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

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

// detectFormat names the format of a file from its first bytes (gunzipped
// when compressed).
func detectFormat(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, sniffSize)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return "", fmt.Errorf("%s: gzip header: %v", path, err)
		}
		r = zr
	}
	head := make([]byte, sniffSize)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	head = head[:n]
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
	return "", fmt.Errorf("%s: unrecognised input format; give --input-format (one of %s)", path, strings.Join(inputFormats(), ", "))
}

// readArm reads every file given for one arm and merges them.
func readArm(ctx context.Context, arm sources.Arm, paths []string, format string, progress io.Writer) (sources.Dataset, error) {
	var ds sources.Dataset
	ds.Arm = arm
	formats := make([]string, len(paths))
	scrapes := 0
	for i, p := range paths {
		formats[i] = format
		if format == "" || format == "auto" {
			var err error
			if formats[i], err = detectFormat(p); err != nil {
				return ds, err
			}
		}
		if formats[i] == formatScrape || formats[i] == exposition.FormatText || formats[i] == exposition.FormatOpenMetrics {
			scrapes++
		}
	}
	if scrapes > 0 {
		if scrapes != len(paths) {
			return ds, fmt.Errorf("%s: scrape files and per-request files cannot be mixed in one arm", arm)
		}
		return readScrapes(ctx, arm, paths)
	}
	for i, p := range paths {
		if err := ctx.Err(); err != nil {
			return ds, err
		}
		fmtName := formats[i]
		if st, err := os.Stat(p); err == nil && st.Size() > 64<<20 && progress != nil {
			fmt.Fprintf(progress, "reading %s (%s, %d MB)…\n", p, fmtName, st.Size()>>20)
		}
		one, err := readFile(ctx, arm, p, fmtName)
		if err != nil {
			return ds, err
		}
		if len(paths) > 1 && one.Clock == sources.ClockRelative {
			// per-file monotonic clocks cannot be aligned: start each at 0
			shift(&one)
		}
		ds.Append(one)
	}
	return ds, nil
}

func shift(d *sources.Dataset) {
	lo := 0.0
	first := true
	for i := range d.Requests {
		t := d.Requests[i].Time
		if sources.Known(t) && (first || t < lo) {
			lo, first = t, false
		}
	}
	for i := range d.Requests {
		d.Requests[i].Time -= lo
	}
}

func readFile(ctx context.Context, arm sources.Arm, path, format string) (sources.Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return sources.Dataset{}, err
	}
	defer f.Close()
	if format == requestlog.Format {
		return requestlog.Read(ctx, path, f, arm)
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
	var r io.Reader = f
	magic := make([]byte, 2)
	if n, _ := f.ReadAt(magic, 0); n == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
		if err != nil {
			return sources.Dataset{}, fmt.Errorf("%s: gzip header: %v", path, err)
		}
		r = zr
	}
	return benchfile.Read(ctx, format, path, r, arm)
}

// readScrapes reads an arm's scrape files in order as snapshots.
func readScrapes(ctx context.Context, arm sources.Arm, paths []string) (sources.Dataset, error) {
	var files []exposition.File
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return sources.Dataset{}, err
		}
		defer f.Close()
		files = append(files, exposition.File{Path: p, R: f})
	}
	return exposition.ReadWith(ctx, files, arm, exposition.Options{})
}
