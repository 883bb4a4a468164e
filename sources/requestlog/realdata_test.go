package requestlog

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// realData is the repository's directory of captured files from real
// servers and benchmark runs (provenance in its SOURCES.md).
var realData = filepath.Join("..", "..", "testdata", "realdata")

// TestRealFilesAreNotRequestLogs checks that the benchmark result files
// other readers handle are neither detected as request logs nor accepted
// when forced, so format detection cannot pick the wrong reader.
func TestRealFilesAreNotRequestLogs(t *testing.T) {
	var files []string
	for _, pat := range []string{"*/*.json", "*/*.jsonl", "*/*.txt"} {
		m, err := filepath.Glob(filepath.Join(realData, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no real data files under %s (they are part of the repository)", realData)
	}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 64<<10)
		n, _ := io.ReadFull(f, head)
		f.Close()
		if Detect(head[:n]) {
			t.Errorf("%s detected as a request log", p)
		}
		if ds, err := Open(context.Background(), p, sources.Baseline); err == nil {
			t.Errorf("%s accepted as a request log with %d requests", p, len(ds.Requests))
		} else {
			t.Logf("%v", err)
		}
	}
}
