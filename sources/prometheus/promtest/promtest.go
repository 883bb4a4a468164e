// Package promtest runs a real Prometheus server for tests: it backfills an
// OpenMetrics file with promtool into a fresh TSDB and serves it on a
// loopback port (Start), or has it scrape a simulated vLLM fleet whose
// histograms are native, classic or both (ServeFleet: promtool cannot
// backfill native histograms). Tests that use it skip when the prometheus and promtool
// binaries are missing (Debian: apt-get install -y --no-install-recommends
// prometheus), and fail instead when REQUIRE_PROMETHEUS=1, as CI sets.
package promtest

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Required reports whether REQUIRE_PROMETHEUS=1 is set in CI (REQUIRE_PROMETHEUS=1): a missing
// prometheus or promtool binary then fails the tests instead of skipping.
func Required() bool { return os.Getenv("REQUIRE_PROMETHEUS") == "1" }

// Start backfills the OpenMetrics file om with promtool into a
// fresh TSDB, starts prometheus on 127.0.0.1 with a kernel-chosen port and
// returns its base URL. The process is killed in Cleanup. Skips when the
// binaries are missing (install: apt-get install -y --no-install-recommends
// prometheus), unless REQUIRE_PROMETHEUS=1.
func Start(tb testing.TB, om string) string {
	tb.Helper()
	need(tb, "prometheus", "promtool")
	data := filepath.Join(tb.TempDir(), "data")
	if out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
		tb.Fatalf("promtool: %v\n%s", err, out)
	}
	return Serve(tb, "global:\n  scrape_interval: 1h\n  evaluation_interval: 1h\nscrape_configs: []\n", data,
		"--storage.tsdb.retention.time=100y")
}

// need skips (or, with REQUIRE_PROMETHEUS=1, fails) the test when one of
// the binaries is missing.
func need(tb testing.TB, bins ...string) {
	tb.Helper()
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			if Required() {
				tb.Fatalf("%s not installed but REQUIRE_PROMETHEUS=1 (apt-get install -y --no-install-recommends prometheus)", bin)
			}
			tb.Skipf("%s not installed (apt-get install -y --no-install-recommends prometheus)", bin)
		}
	}
}

// Serve starts prometheus on 127.0.0.1 with a kernel-chosen port, the
// configuration config (YAML text) and the TSDB directory data (created
// when missing), plus any further flags (e.g.
// --enable-feature=native-histograms), waits until it is ready and returns
// its base URL. The process is killed in Cleanup. Skips when the binary is
// missing, unless REQUIRE_PROMETHEUS=1.
func Serve(tb testing.TB, config, data string, flags ...string) string {
	tb.Helper()
	need(tb, "prometheus")
	cfg := filepath.Join(tb.TempDir(), "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("prometheus", append([]string{"--config.file=" + cfg, "--storage.tsdb.path=" + data,
		"--web.listen-address=127.0.0.1:0"}, flags...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	pid := cmd.Process.Pid
	tb.Cleanup(func() {
		if cmd.Process != nil && cmd.Process.Pid == pid {
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	re := regexp.MustCompile(`msg="Listening on" address=([0-9.:\[\]]+)`)
	addrCh := make(chan string, 1)
	var mu sync.Mutex
	// tail holds the last log lines, shown when the test fails
	var tail []string
	go func() { // keep draining stderr for the life of the process
		sc, sent := bufio.NewScanner(stderr), false
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addrCh <- m[1]
				sent = true
			}
			mu.Lock()
			if tail = append(tail, sc.Text()); len(tail) > 40 {
				tail = tail[1:]
			}
			mu.Unlock()
		}
	}()
	tb.Cleanup(func() {
		if tb.Failed() || os.Getenv("PROMTEST_LOG") == "1" {
			mu.Lock()
			defer mu.Unlock()
			tb.Logf("prometheus log (last %d lines):\n%s", len(tail), strings.Join(tail, "\n"))
		}
	})
	var addr string
	select {
	case addr = <-addrCh:
	case <-time.After(20 * time.Second):
		tb.Fatal("prometheus did not report its address")
	}
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/-/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-ctx.Done():
			tb.Fatal("prometheus not ready")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
