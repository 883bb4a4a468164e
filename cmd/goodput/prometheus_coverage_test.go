package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
)

// omVariant is a copy of one arm's series under another deployment label
// with some samples left out: keep says, per pod and unix time, whether a
// sample stays.
type omVariant struct {
	from, to string
	keep     func(pod string, ts float64) bool
	// rename, when set, gives the copy's pod label
	rename func(pod string, ts float64) string
}

var omLabels = regexp.MustCompile(`deployment="([^"]*)",pod="([^"]*)"`)

// writeOMVariants copies an OpenMetrics file and appends, after each
// family's own samples, the variants' copies of the matching series.
func writeOMVariants(t *testing.T, src, dst string, vs ...omVariant) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out bytes.Buffer
	var pending []string
	flush := func() {
		for _, l := range pending {
			out.WriteString(l)
			out.WriteByte('\n')
		}
		pending = pending[:0]
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inFamily := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			if inFamily {
				flush()
				inFamily = false
			}
			out.WriteString(line + "\n")
			continue
		}
		inFamily = true
		out.WriteString(line + "\n")
		m := omLabels.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := strings.Fields(line)
		ts, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("timestamp in %q", line)
		}
		for _, v := range vs {
			if m[1] == v.from && v.keep(m[2], ts) {
				l := strings.Replace(line, `deployment="`+v.from+`"`, `deployment="`+v.to+`"`, 1)
				if v.rename != nil {
					l = strings.Replace(l, `pod="`+m[2]+`"`, `pod="`+v.rename(m[2], ts)+`"`, 1)
				}
				pending = append(pending, l)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// warningProxy forwards to a real Prometheus and adds a Thanos-style
// partial-response warning to every answer for the canary's queries.
func warningProxy(t *testing.T, target string) string {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	direct := rp.Director
	rp.Director = func(r *http.Request) {
		direct(r)
		r.Header.Del("Accept-Encoding") // plain JSON to edit
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		req := resp.Request
		_ = req.ParseForm()
		q := req.Form.Get("query") + strings.Join(req.Form["match[]"], " ")
		if !strings.Contains(q, `deployment="canary"`) || resp.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return err
		}
		m["warnings"] = []string{"partial response: store gateway storegw-2 (replicas canary-1..3) unavailable"}
		body, _ = json.Marshal(m)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPrometheusCoverageNeverPasses judges one simulated A/A run read from
// a real Prometheus, with variants of its series: the intact pair passes;
// a canary replica that stops reporting, a baseline replica with a hole in
// its series and answers carrying a partial-response warning are never a
// pass; selectors whose series overlap are refused (exit 4) whatever
// their text.
func TestPrometheusCoverageNeverPasses(t *testing.T) {
	dir := t.TempDir()
	if code, _, errs := runCLI(t, nil, "simulate", "--scenario", "steady", "--seed", "5", "--duration", "10m", "--out", dir); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errs)
	}
	t0 := 1767225600.0 // 2026-01-01T00:00:00Z, the simulator's window start
	om := filepath.Join(dir, "variants.om")
	writeOMVariants(t, filepath.Join(dir, "metrics.om"), om,
		omVariant{"canary", "canary-lost", func(pod string, ts float64) bool { return pod != "canary-1" || ts < t0+300 }, nil},
		omVariant{"baseline", "baseline-hole", func(pod string, ts float64) bool { return pod != "baseline-2" || ts < t0+180 || ts >= t0+300 }, nil},
		omVariant{"canary", "canary-replaced", func(string, float64) bool { return true }, func(pod string, ts float64) string {
			if pod == "canary-1" && ts >= t0+300 {
				return "canary-1b"
			}
			return pod
		}},
	)
	prom := promtest.Start(t, om)
	pol := writeFile(t, dir, "policy.yaml", agreePolicy)
	judge := func(url, b, c string) (int, string, string) {
		return runCLI(t, nil, "judge", "--format", "json", "--policy", pol, "--prometheus", url,
			"--baseline-selector", b, "--canary-selector", c, "--step", "30s",
			"--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:10:00Z")
	}
	type rep struct {
		Verdict string   `json:"verdict"`
		Reasons []string `json:"reasons"`
	}
	for _, tc := range []struct {
		name     string
		url      string
		b, c     string
		wantCode []int
		wantText string
		wantOut  string // also somewhere in the report
	}{
		{"intact A/A passes", prom, `deployment="baseline"`, `deployment="canary"`, []int{ExitPass}, "all 4 gates pass", ""},
		{"canary replica stops reporting", prom, `deployment="baseline"`, `deployment="canary-lost"`, []int{ExitInconclusive, ExitFail}, `pod="canary-1"} stopped reporting`, ""},
		{"canary pod replaced under a new name", prom, `deployment="baseline"`, `deployment="canary-replaced"`, []int{ExitPass}, "all 4 gates pass",
			`pod=\"canary-1\"} stopped reporting at +300s (10 of 20 slices without samples to the window's end); replica {engine=\"0\",model_name=\"sim-llm\",pod=\"canary-1b\"}, first reporting at +300s, took its place`},
		{"baseline replica with a hole", prom, `deployment="baseline-hole"`, `deployment="canary"`, []int{ExitInconclusive}, `pod="baseline-2"} has no samples from +180s`, ""},
		{"partial-response warning", warningProxy(t, prom), `deployment="baseline"`, `deployment="canary"`, []int{ExitInconclusive}, "storegw-2", ""},
		{"equivalent selectors", prom, `deployment=~"baseline"`, `deployment="baseline"`, []int{ExitError}, "pick the same series", ""},
		{"overlapping selectors", prom, `deployment=~"baseline|canary"`, `deployment="canary"`, []int{ExitError}, "pick the same series", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := judge(tc.url, tc.b, tc.c)
			ok := false
			for _, w := range tc.wantCode {
				ok = ok || code == w
			}
			if !ok {
				t.Fatalf("exit %d, want one of %v\n%s%s", code, tc.wantCode, out, errs)
			}
			text := errs
			if code != ExitError {
				var r rep
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatal(err)
				}
				text = strings.Join(r.Reasons, "\n")
			}
			if !strings.Contains(text, tc.wantText) {
				t.Errorf("reasons lack %q:\n%s", tc.wantText, text)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Errorf("report lacks %q:\n%s", tc.wantOut, out)
			}
			t.Logf("exit %d: %s", code, firstLine(text))
		})
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
