package prometheus

import (
	"context"
	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/exposition"
)

// hourRecipe: 1 h at 15 s, 8 classes, 3 baseline and 2 canary pods.
var hourRecipe = recipe{Start: 1704067200, Samples: 241, Interval: 15,
	Classes: []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"}, Restart: 120}

func writeHour(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "hour.om")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := hourRecipe.write(f); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkReadHour8Classes reads both arms of a 1 h window at a 15 s step
// with 8 classes per arm from a local Prometheus, and reports the HTTP
// requests issued per judge (both arms).
func BenchmarkReadHour8Classes(b *testing.B) {
	base := promtest.Start(b, writeHour(b))
	start := time.Unix(hourRecipe.Start, 0)
	queries, buckets := 0, 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
			src, err := New(Config{URL: base})
			if err != nil {
				b.Fatal(err)
			}
			ds, err := src.Read(context.Background(), Query{Arm: arm, Selector: mustSel(b, `deployment="`+string(arm)+`"`),
				Start: start, End: start.Add(time.Hour), Step: 15 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			queries += src.Queries()
			buckets += len(ds.Agg.Buckets)
		}
	}
	b.ReportMetric(float64(queries)/float64(b.N), "queries/op")
	b.ReportMetric(float64(buckets)/float64(b.N), "buckets/op")
}

// BenchmarkScrapeFileHour8Classes reads both arms of the same data from the
// OpenMetrics file directly.
func BenchmarkScrapeFileHour8Classes(b *testing.B) {
	path := writeHour(b)
	st, _ := os.Stat(path)
	b.SetBytes(st.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := exposition.Read(context.Background(), path, f, arm); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	}
}
