// Package chtest runs a real ClickHouse server for tests: Debian's
// clickhouse-server (18.16) with a configuration written to a temporary
// directory — HTTP interface only, on a free loopback port, data, temporary
// and user files under the directory, logs to files there — and helpers to
// create a table of native request-log records and load it with INSERT …
// FORMAT JSONEachRow. Tests that use it skip when the binary is missing
// (apt-get install -y --no-install-recommends clickhouse-server) and fail
// instead when REQUIRE_CLICKHOUSE=1, as CI sets.
package chtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Required reports whether REQUIRE_CLICKHOUSE=1 is set: a missing
// clickhouse-server then fails the tests instead of skipping.
func Required() bool { return os.Getenv("REQUIRE_CLICKHOUSE") == "1" }

// Server is a running clickhouse-server.
type Server struct {
	// URL is the HTTP interface, http://127.0.0.1:PORT.
	URL string
	// Dir holds the configuration, data and logs.
	Dir string
}

// User is a user with a password that Start configures besides the
// password-less default user.
const (
	User     = "reader"
	Password = "pw-chtest-1f7e"
)

func binary(tb testing.TB) string {
	tb.Helper()
	for _, p := range []string{"clickhouse-server", "/usr/sbin/clickhouse-server"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	const hint = "apt-get install -y --no-install-recommends clickhouse-server"
	if Required() {
		tb.Fatalf("clickhouse-server not installed but REQUIRE_CLICKHOUSE=1 (%s)", hint)
	}
	tb.Skipf("clickhouse-server not installed (%s)", hint)
	return ""
}

// freePort asks the kernel for a free loopback port.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts clickhouse-server on 127.0.0.1 and waits until /ping
// answers. The process is killed in Cleanup. Skips when the binary is
// missing, unless REQUIRE_CLICKHOUSE=1.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := binary(tb)
	dir := tb.TempDir()
	for _, d := range []string{"data", "tmp", "user_files", "format_schemas"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(tb)
		cfg := fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
  <logger>
    <level>warning</level>
    <log>%[1]s/server.log</log>
    <errorlog>%[1]s/server.err.log</errorlog>
    <console>0</console>
  </logger>
  <http_port>%[2]d</http_port>
  <listen_host>127.0.0.1</listen_host>
  <path>%[1]s/data/</path>
  <tmp_path>%[1]s/tmp/</tmp_path>
  <user_files_path>%[1]s/user_files/</user_files_path>
  <format_schema_path>%[1]s/format_schemas/</format_schema_path>
  <users_config>%[1]s/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>20</max_concurrent_queries>
</yandex>
`, dir, port)
		users := fmt.Sprintf(`<?xml version="1.0"?>
<yandex>
  <profiles>
    <default><max_threads>2</max_threads></default>
  </profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
    <%[1]s>
      <password>%[2]s</password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </%[1]s>
  </users>
  <quotas><default></default></quotas>
</yandex>
`, User, Password)
		if err := os.WriteFile(filepath.Join(dir, "config.xml"), []byte(cfg), 0o644); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "users.xml"), []byte(users), 0o644); err != nil {
			tb.Fatal(err)
		}
		out, err := os.Create(filepath.Join(dir, "stdout.log"))
		if err != nil {
			tb.Fatal(err)
		}
		cmd := exec.Command(bin, "--config-file="+filepath.Join(dir, "config.xml"))
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			out.Close()
			tb.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		stop := func() {
			_ = cmd.Process.Kill()
			<-done
			out.Close()
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		if err := waitPing(base, done); err != nil {
			stop()
			lastErr = err
			continue // the port may have been taken meanwhile
		}
		tb.Cleanup(stop)
		return &Server{URL: base, Dir: dir}
	}
	logs, _ := os.ReadFile(filepath.Join(dir, "server.err.log"))
	tb.Fatalf("clickhouse-server did not start: %v\n%s", lastErr, tail(string(logs), 2000))
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitPing polls /ping until it answers "Ok." or the process exits.
func waitPing(base string, done <-chan struct{}) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("the server exited")
		default:
		}
		resp, err := http.Get(base + "/ping")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.HasPrefix(string(b), "Ok") {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no answer on %s/ping within 60 s", base)
}

// Exec runs one statement as the default user (not read-only) and returns
// the answer; body, when not nil, is sent after the statement (INSERT …
// FORMAT JSONEachRow data). It fails the test on an error.
func (s *Server) Exec(tb testing.TB, stmt string, body io.Reader) string {
	tb.Helper()
	out, err := s.Do(stmt, body)
	if err != nil {
		tb.Fatalf("clickhouse: %v\nstatement: %.300s", err, stmt)
	}
	return out
}

// Do is Exec returning the error.
func (s *Server) Do(stmt string, body io.Reader) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var req *http.Request
	var err error
	if body == nil {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/", strings.NewReader(stmt))
	} else {
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/?query="+url.QueryEscape(stmt), body)
	}
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}

// RequestTable is a CREATE TABLE for the native request log's records
// (DESIGN.md §3) as INSERT … FORMAT JSONEachRow takes them: ts as Float64
// unix seconds, optional fields Nullable. %s is the escaped table name.
const RequestTable = `CREATE TABLE %s (
  ts Float64,
  status String,
  ttft_s Nullable(Float64),
  tpot_s Nullable(Float64),
  e2e_s Nullable(Float64),
  max_itl_s Nullable(Float64),
  prompt_tokens Nullable(Int64),
  output_tokens Nullable(Int64),
  cached_tokens Nullable(Int64),
  class Nullable(String),
  replica Nullable(String),
  attempt Nullable(Int64),
  user Nullable(String),
  quality_ok Nullable(UInt8),
  canceled_by Nullable(String),
  arm String
) ENGINE = MergeTree ORDER BY (arm, ts)`

// LoadRequests creates table (a plain name) with RequestTable's columns
// and inserts the native-log JSONL records read from r, with arm set on
// every row.
func (s *Server) LoadRequests(tb testing.TB, table, arm string, r io.Reader) {
	tb.Helper()
	if strings.TrimSpace(s.Exec(tb, "EXISTS TABLE `"+table+"`", nil)) != "1" {
		s.Exec(tb, fmt.Sprintf(RequestTable, "`"+table+"`"), nil)
	}
	pr, pw := io.Pipe()
	go func() {
		// add "arm" to each object: the records are one object per line
		buf := make([]byte, 0, 1<<16)
		data, err := io.ReadAll(r)
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			if !strings.HasSuffix(line, "}") {
				pw.CloseWithError(fmt.Errorf("not a JSON object line: %.80s", line))
				return
			}
			buf = append(buf[:0], line[:len(line)-1]...)
			buf = append(buf, fmt.Sprintf(`,"arm":%q}`+"\n", arm)...)
			if _, err := pw.Write(buf); err != nil {
				return
			}
		}
		pw.Close()
	}()
	s.Exec(tb, "INSERT INTO `"+table+"` FORMAT JSONEachRow", pr)
}
