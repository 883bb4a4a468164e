package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scrapeSeries writes an OpenMetrics file of vLLM request counters and
// TTFT histograms, one series per pod, a scrape every 30 s for 30
// minutes; a pod stops reporting after its last scrape (-1: never).
func scrapeSeries(t *testing.T, path string, pods []string, last []int) {
	t.Helper()
	var b strings.Builder
	for i := 0; i <= 60; i++ {
		ts := 1767225600 + 30*i
		fmt.Fprintf(&b, "# TYPE vllm:request_success counter\n")
		for p, pod := range pods {
			if last[p] < 0 || i <= last[p] {
				fmt.Fprintf(&b, "vllm:request_success_total{finished_reason=\"stop\",pod=\"%s\"} %d %d\n", pod, 100*i, ts)
			}
		}
		fmt.Fprintf(&b, "# TYPE vllm:time_to_first_token_seconds histogram\n")
		for p, pod := range pods {
			if last[p] >= 0 && i > last[p] {
				continue
			}
			for _, e := range []struct {
				le string
				f  float64
			}{{"0.5", 0.7}, {"1.0", 0.99}, {"+Inf", 1}} {
				fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{le=%q,pod=\"%s\"} %d %d\n", e.le, pod, int(float64(100*i)*e.f), ts)
			}
			fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_count{pod=\"%s\"} %d %d\n", pod, 100*i, ts)
			fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum{pod=\"%s\"} %g %d\n", pod, 40.0*float64(i), ts)
		}
	}
	b.WriteString("# EOF\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestScrapeReplicaLost: scrape files gave no replica tracks, so a canary
// replica that stopped reporting halfway went unnamed from scrapes (only
// the offered-load ratio moved). Each pod is a track now: the replica is
// named as lost, its name escaped (a pod label carrying a terminal
// escape reaches no output raw), and the verdict is not a pass.
func TestScrapeReplicaLost(t *testing.T) {
	dir := t.TempDir()
	b, c := filepath.Join(dir, "b.om"), filepath.Join(dir, "c.om")
	scrapeSeries(t, b, []string{"b1", "b2"}, []int{-1, -1})
	scrapeSeries(t, c, []string{"c1", "c2\x1b[31m"}, []int{-1, 29})
	code, out, errs := runCLI(t, nil, "judge", "--baseline", b, "--canary", c, "--policy", "chat")
	if code == ExitPass || code == ExitError || code == ExitUsage {
		t.Fatalf("exit %d, want a verdict that is not a pass: %s", code, errs)
	}
	if !strings.Contains(out, `replica {pod="c2\x1b[31m"} stopped reporting at +870s`) {
		t.Errorf("the lost replica is not named:\n%s", out)
	}
	if strings.Contains(out+errs, "\x1b") {
		t.Errorf("a raw escape reached the output")
	}
}
