package requestlog

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

var benchOut = flag.String("benchfile", "", "also write the generated 1M-line JSONL benchmark input to this path (to compare with wc -l)")

// benchLines is the size of the generated benchmark input.
const benchLines = 1_000_000

// BenchmarkRead reads a generated 1M-request log in each encoding from a
// file in b.TempDir(), as Open does, and reports MB/s of raw input.
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	var jsonl bytes.Buffer
	if err := writeLog(&jsonl, benchLines, 1, false); err != nil {
		b.Fatal(err)
	}
	if *benchOut != "" {
		if err := os.WriteFile(*benchOut, jsonl.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	files := []struct {
		name string
		data func() []byte
	}{
		{"jsonl", jsonl.Bytes},
		{"jsonl.gz", func() []byte { return gz(b, jsonl.Bytes()) }},
		{"csv", func() []byte {
			var csvb bytes.Buffer
			if err := writeLog(&csvb, benchLines, 1, true); err != nil {
				b.Fatal(err)
			}
			return csvb.Bytes()
		}},
	}
	for _, f := range files {
		b.Run(f.name, func(b *testing.B) {
			data := f.data()
			p := filepath.Join(dir, "log."+f.name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				ds, err := Open(context.Background(), p, "canary")
				if err != nil {
					b.Fatal(err)
				}
				if len(ds.Requests) != benchLines {
					b.Fatalf("read %d requests, want %d", len(ds.Requests), benchLines)
				}
			}
		})
	}
}

func gz(tb testing.TB, data []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := io.Copy(zw, bytes.NewReader(data)); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

var logFile = flag.String("logfile", "", "request log for BenchmarkReadFile (e.g. a real log, or one written with -benchfile)")

// BenchmarkReadFile reads an existing request log named by -logfile, to
// time the reader on real files or against other tools on the same file.
func BenchmarkReadFile(b *testing.B) {
	if *logFile == "" {
		b.Skip("no -logfile given")
	}
	fi, err := os.Stat(*logFile)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	for b.Loop() {
		ds, err := Open(context.Background(), *logFile, sources.Canary)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(ds.Requests)), "requests")
	}
}

// BenchmarkParseChunk decodes 100,000 lines of a request log held in
// memory (generated, or the start of -logfile), one chunk at a time as the pipeline does, to time the decoder
// alone (no reading, hashing or aggregation). ns/op is per line.
func BenchmarkParseChunk(b *testing.B) {
	var data []byte
	if *logFile != "" {
		// the file's first 100,000 lines (e.g. one goodput bench --keep wrote)
		raw, err := os.ReadFile(*logFile)
		if err != nil {
			b.Fatal(err)
		}
		for i, n := 0, 0; i < len(raw); i++ {
			if raw[i] == '\n' {
				if n++; n == 100_000 {
					data = raw[:i+1]
					break
				}
			}
		}
		if data == nil {
			b.Fatalf("%s has fewer than 100,000 lines", *logFile)
		}
	} else {
		var jsonl bytes.Buffer
		if err := writeLog(&jsonl, 100_000, 1, false); err != nil {
			b.Fatal(err)
		}
		data = jsonl.Bytes()
	}
	d := newDecoder()
	dst := make([]sources.Request, 0, 100_000)
	b.SetBytes(int64(len(data)) / 100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i += 100_000 {
		res := d.parseChunk(context.Background(), chunk{data: data, dst: dst[:0], lines: 100_000})
		if res.err != nil || len(res.reqs) != 100_000 {
			b.Fatalf("line %d: %v (%d requests)", res.line, res.err, len(res.reqs))
		}
	}
}
