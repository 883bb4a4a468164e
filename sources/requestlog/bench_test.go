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
