package requestlog

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

func TestAdhocCorpus(t *testing.T) {
	files, _ := filepath.Glob("/tmp/fz/*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.Split(string(b), "\n")
		s, _ := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		data := []byte(s)
		done := make(chan struct{})
		go func() {
			Read(context.Background(), "f", bytes.NewReader(data), sources.Canary)
			read(context.Background(), "f", onlyReader{bytes.NewReader(data)}, sources.Canary, options{chunkSize: 16, workers: 2, maxLine: 1 << 20})
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("hang on %s: %q", f, data)
		}
	}
}
