package exposition

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// FuzzRead feeds arbitrary scrape text, alone and as the second of a pair.
// The reader must never panic (the Prometheus text parser's own panics are
// recovered at our boundary) and every error must name the file.
func FuzzRead(f *testing.F) {
	for _, p := range []string{"testdata/vllm_before.prom", "testdata/vllm_after.prom", "testdata/timeseries.om"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("# TYPE x counter\n#0\n{}0\n"))
	f.Add([]byte("vllm:num_requests_running{model_name=\"m\"} NaN\n# EOF\n"))
	before, err := os.ReadFile("testdata/vllm_before.prom")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Read(context.Background(), "f.prom", bytes.NewReader(data), sources.Canary)
		if err != nil && !strings.Contains(err.Error(), "f.prom") {
			t.Fatalf("error does not name the file: %v", err)
		}
		_, err = ReadWith(context.Background(), []File{{Path: "a.prom", R: bytes.NewReader(before)}, {Path: "b.prom", R: bytes.NewReader(data)}}, sources.Canary, Options{})
		if err != nil && !strings.Contains(err.Error(), ".prom") {
			t.Fatalf("error does not name a file: %v", err)
		}
	})
}
