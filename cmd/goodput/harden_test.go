package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/requestlog"
)

// runCLIStdin is runCLI with a given standard input.
func runCLIStdin(t *testing.T, stdin *os.File, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &IOStreams{In: stdin, Out: &out, ErrOut: &errb}, func(string) string { return "" })
	return code, out.String(), errb.String()
}

// slowTail is a canary whose first 64 KiB and more are as good as the
// baseline and whose last records are slow: format detection reads only
// the start, so a reader that reopened a pipe would see only the tail.
func slowTail(t *testing.T) (base, canary string) {
	var b, c strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, `{"ts": %d.%03d, "status": "ok", "ttft_s": 0.%03d, "tpot_s": 0.03, "output_tokens": 100}`+"\n", 1700000000+i/10, (i%10)*100, 100+i%400)
		ttft := fmt.Sprintf("0.%03d", 100+(i+1)%400)
		if i >= 1500 {
			ttft = "2.5" // misses the 1 s TTFT SLO
		}
		fmt.Fprintf(&c, `{"ts": %d.%03d, "status": "ok", "ttft_s": %s, "tpot_s": 0.03, "output_tokens": 100}`+"\n", 1700000000+i/10, (i%10)*100, ttft)
	}
	if c.Len() < 2*sniffSize {
		t.Fatalf("canary too short to cross the detection window")
	}
	return b.String(), c.String()
}

func feedFIFO(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(data)
		f.Close()
	}()
}

type judged struct {
	Verdict string `json:"verdict"`
	Arms    map[string]struct {
		Accounting struct {
			Offered int `json:"offered"`
		} `json:"accounting"`
	} `json:"arms"`
	Inputs []struct {
		Path   string `json:"path"`
		SHA256 string `json:"sha256"`
		Arm    string `json:"arm"`
	} `json:"inputs"`
}

// TestPipeReadOnce (item 1): a canary given as a FIFO, as "-" and as
// /dev/stdin, plain and gzip-compressed, is judged exactly as the same file
// given by path: same verdict, same count, same sha256 of the whole stream,
// by default (a pipe's size is unknown: the streaming judge), with --exact
// and with --stream.
func TestPipeReadOnce(t *testing.T) {
	d := t.TempDir()
	base, can := slowTail(t)
	b := writeFile(t, d, "b.jsonl", base)
	c := writeFile(t, d, "c.jsonl", can)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(can))
	zw.Close()
	for _, mode := range []string{"", "--exact", "--stream"} {
		for _, tc := range []struct {
			name string
			data []byte
		}{{"plain", []byte(can)}, {"gzip", gz.Bytes()}} {
			tc.name += mode
			runCLI := func(t *testing.T, env map[string]string, args ...string) (int, string, string) {
				if mode != "" {
					args = append(args, mode)
				}
				return runCLI(t, env, args...)
			}
			runCLIStdin := func(t *testing.T, stdin *os.File, args ...string) (int, string, string) {
				if mode != "" {
					args = append(args, mode)
				}
				return runCLIStdin(t, stdin, args...)
			}
			cz := writeFile(t, d, "c-"+tc.name, string(tc.data))
			code, out, errs := runCLI(t, nil, "judge", "--baseline", b, "--canary", cz, "--format", "json")
			if code != ExitFail {
				t.Fatalf("%s by path: exit %d, want 1 (fail): %s", tc.name, code, errs)
			}
			want := parseJudged(t, out)
			sum := sha256.Sum256(tc.data)
			wantSum := hex.EncodeToString(sum[:])

			fifo := filepath.Join(d, "fifo-"+tc.name)
			feedFIFO(t, fifo, tc.data)
			code, out, errs = runCLI(t, nil, "judge", "--baseline", b, "--canary", fifo, "--format", "json")
			checkSame(t, tc.name+" FIFO", code, out, errs, want, wantSum)

			for _, name := range []string{"-", "/dev/stdin"} {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				go func() { w.Write(tc.data); w.Close() }()
				var code int
				var out, errs string
				if name == "-" {
					code, out, errs = runCLIStdin(t, r, "judge", "--baseline", b, "--canary", "-", "--format", "json")
				} else {
					// /dev/stdin is the process's own fd 0: point it at the pipe
					code, out, errs = withStdin(t, r, func() (int, string, string) {
						return runCLIStdin(t, os.Stdin, "judge", "--baseline", b, "--canary", "/dev/stdin", "--format", "json")
					})
				}
				r.Close()
				checkSame(t, tc.name+" "+name, code, out, errs, want, wantSum)
			}
		}
	}
	_ = c
}

// withStdin runs f with file descriptor 0 pointing at r.
func withStdin(t *testing.T, r *os.File, f func() (int, string, string)) (int, string, string) {
	t.Helper()
	saved, err := syscall.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Dup2(saved, 0); syscall.Close(saved) }()
	if err := syscall.Dup2(int(r.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	return f()
}

func parseJudged(t *testing.T, out string) judged {
	t.Helper()
	var j judged
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	return j
}

func checkSame(t *testing.T, what string, code int, out, errs string, want judged, wantSum string) {
	t.Helper()
	if code != ExitFail {
		t.Errorf("%s: exit %d, want 1 like the file by path: %s", what, code, errs)
		return
	}
	got := parseJudged(t, out)
	if got.Verdict != want.Verdict || got.Arms["canary"].Accounting.Offered != want.Arms["canary"].Accounting.Offered {
		t.Errorf("%s: verdict %s n %d, by path %s n %d", what, got.Verdict, got.Arms["canary"].Accounting.Offered, want.Verdict, want.Arms["canary"].Accounting.Offered)
	}
	for _, in := range got.Inputs {
		if in.Arm == "canary" && in.SHA256 != wantSum {
			t.Errorf("%s: sha256 %s, want the whole stream's %s", what, in.SHA256, wantSum)
		}
	}
}

// TestDuplicateInputsRefused (item 4): the same data twice — by path, as a
// copy, as a hard link, every line twice, the same records as JSONL and as
// CSV, the same records in both arms in another order — is refused with
// exit 4 and the reason, never judged.
func TestDuplicateInputsRefused(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(300))
	c := writeFile(t, d, "c.jsonl", goodLogV(300, 9))
	cp := writeFile(t, d, "copy-of-b.jsonl", goodLog(300))
	link := filepath.Join(d, "link-to-c.jsonl")
	if err := os.Link(c, link); err != nil {
		t.Fatal(err)
	}
	twice := writeFile(t, d, "twice.jsonl", goodLogV(300, 9)+goodLogV(300, 9))
	lines := strings.Split(strings.TrimSpace(goodLog(300)), "\n")
	reversed := make([]string, len(lines))
	for i, l := range lines {
		reversed[len(lines)-1-i] = l
	}
	rev := writeFile(t, d, "b-reversed.jsonl", strings.Join(reversed, "\n")+"\n")
	var csv strings.Builder
	csv.WriteString("ts,status,ttft_s,tpot_s,output_tokens\n")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&csv, "%d.%03d,ok,0.%03d,0.03,100\n", 1700000000+i/10, (i%10)*100, 100+(i+9)%400)
	}
	ccsv := writeFile(t, d, "c.csv", csv.String())
	// the baseline's records under a replica name of the canary's, and the
	// canary's own records with a tenth of the baseline's let in
	relabelled := writeFile(t, d, "b-relabelled.jsonl", strings.ReplaceAll(goodLog(300), `"status"`, `"replica": "canary-0", "status"`))
	leaked := writeFile(t, d, "c-leaked.jsonl", goodLogV(300, 9)+strings.Join(lines[:30], "\n")+"\n")

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"same path in both arms", []string{"--baseline", b, "--canary", b}, []string{"b.jsonl (baseline) and", "same input"}},
		{"same path twice in an arm", []string{"--baseline", b, "--canary", c, c}, []string{"c.jsonl (canary)", "same input"}},
		{"hard link", []string{"--baseline", b, "--canary", c, link}, []string{"link-to-c.jsonl", "same input"}},
		{"copy in the other arm", []string{"--baseline", b, "--canary", cp}, []string{"copy-of-b.jsonl", "identical to", "sha256"}},
		{"every line twice", []string{"--baseline", b, "--canary", twice}, []string{"300 of 600 records", "twice.jsonl"}},
		{"JSONL and CSV of the same records", []string{"--baseline", b, "--canary", c, ccsv}, []string{"300 of 600 records", "c.csv"}},
		{"same records in another order", []string{"--baseline", b, "--canary", rev}, []string{"same 300 records"}},
		{"same records under another replica name", []string{"--baseline", b, "--canary", relabelled}, []string{"share 300 records (100.0% of the 300 measured records", "whatever the replica's name"}},
		{"a tenth of the baseline in the canary's file", []string{"--baseline", b, "--canary", leaked}, []string{"share 30 records (10.0% of the 300 measured records", "give each arm only its own requests"}},
	} {
		for _, mode := range []string{"", "--stream"} {
			t.Run(tc.name+mode, func(t *testing.T) {
				args := append([]string{"judge"}, tc.args...)
				if mode != "" {
					args = append(args, mode)
				}
				code, out, errs := runCLI(t, nil, args...)
				if code != ExitError || out != "" {
					t.Errorf("exit %d stdout %q, want 4 and no verdict; stderr %s", code, out, errs)
				}
				for _, w := range tc.want {
					if !strings.Contains(errs, w) {
						t.Errorf("stderr %q lacks %q", errs, w)
					}
				}
			})
		}
	}
	// two records both arms share by coincidence are judged
	two := writeFile(t, d, "c-two.jsonl", goodLogV(300, 9)+strings.Join(lines[:2], "\n")+"\n")
	for _, mode := range []string{"", "--stream"} {
		args := []string{"judge", "--baseline", b, "--canary", two}
		if mode != "" {
			args = append(args, mode)
		}
		if code, _, errs := runCLI(t, nil, args...); code == ExitError {
			t.Errorf("two shared records%s: exit %d, want a verdict; %s", mode, code, errs)
		}
	}
	// one coincidental repeat among many records is kept, with a warning
	few := writeFile(t, d, "few.jsonl", goodLogV(300, 9)+strings.SplitAfter(goodLogV(300, 9), "\n")[0])
	for _, mode := range []string{"", "--stream"} {
		args := []string{"judge", "--baseline", b, "--canary", few, "--format", "json"}
		if mode != "" {
			args = append(args, mode)
		}
		code, out, errs := runCLI(t, nil, args...)
		if code == ExitError || !strings.Contains(out, `"canary: 1 of 301 records with a latency repeat`) {
			t.Errorf("a single repeat%s: exit %d, want a warning; %s", mode, code, errs)
		}
	}
	// requests that failed together, logged without a latency on a clock
	// of whole seconds (50 rejections a second for a minute: 3,000 of
	// 3,300 records alike but for the second), are judged, not refused as
	// "the same data given twice"
	var outage strings.Builder
	outage.WriteString(goodLogV(300, 9))
	for i := range 3000 {
		fmt.Fprintf(&outage, `{"ts": %d, "status": "rejected"}`+"\n", 1700000010+i/50)
	}
	rejected := writeFile(t, d, "c-rejected.jsonl", outage.String())
	for _, mode := range []string{"", "--stream"} {
		args := []string{"judge", "--baseline", b, "--canary", rejected}
		if mode != "" {
			args = append(args, mode)
		}
		if code, out, errs := runCLI(t, nil, args...); code == ExitError || !strings.Contains(out, "rejected_share") {
			t.Errorf("rejections in one second%s: exit %d, want a verdict; %s", mode, code, errs)
		}
	}
	// vllm bench serve results without start times, prompts of one
	// length (--random-range-ratio 0), 20 of 400 requests failed in each:
	// the failures are alike, and no repeat of a record
	vllm := func(name string, v int) string {
		var in, out, ttft, itl, errs []string
		for i := range 400 {
			in = append(in, "1024")
			if i%20 == 7 {
				out, ttft, itl, errs = append(out, "0"), append(ttft, "0.0"), append(itl, "[]"), append(errs, `"Bad Request"`)
				continue
			}
			out = append(out, "3")
			ttft = append(ttft, fmt.Sprintf("0.%03d", 100+(i*7+v)%400))
			itl = append(itl, fmt.Sprintf("[0.0%d, 0.03]", 2+i%5))
			errs = append(errs, `""`)
		}
		return writeFile(t, d, name, fmt.Sprintf(`{"backend": "vllm", "model_id": "m", "num_prompts": 400, "request_rate": 4.0, "burstiness": 1.0, "max_concurrency": null, "duration": 100.0, "completed": 380, "failed": 20, "input_lens": [%s], "output_lens": [%s], "ttfts": [%s], "itls": [%s], "errors": [%s]}`,
			strings.Join(in, ", "), strings.Join(out, ", "), strings.Join(ttft, ", "), strings.Join(itl, ", "), strings.Join(errs, ", ")))
	}
	if code, out, errs := runCLI(t, nil, "judge", "--policy", "bench", "--baseline", vllm("b-vllm.json", 0), "--canary", vllm("c-vllm.json", 3)); code == ExitError || !strings.Contains(out, "error_rate") {
		t.Errorf("vllm results whose failures are alike: exit %d, want a verdict; %s", code, errs)
	}
}

// TestStdinInAList: "-" after other files of an arm is standard input, not
// the end of the list.
func TestStdinInAList(t *testing.T) {
	got := strings.Join(expandMultiValueFlags([]string{"judge", "--canary", "a", "-", "--baseline", "b"}, "--baseline", "--canary"), " ")
	if want := "judge --canary a --canary - --baseline b"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestImplausibleRecordCLI (item 3): a stray ts is exit 4 naming file:line,
// or dropped with a count when the policy says window.implausible: drop; a
// perf_counter benchmark file beside a unix-time log in one arm is refused
// naming both files.
func TestImplausibleRecordCLI(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(300))
	lines := strings.SplitAfter(goodLogV(300, 4), "\n")
	bad := strings.Join(lines[:150], "") + `{"ts": 0, "status": "ok", "ttft_s": 0.2, "tpot_s": 0.03, "output_tokens": 100}` + "\n" + strings.Join(lines[150:], "")
	c := writeFile(t, d, "c.jsonl", bad)
	code, out, errs := runCLI(t, nil, "judge", "--baseline", b, "--canary", c)
	if code != ExitError || out != "" || !strings.Contains(errs, "c.jsonl:151") || !strings.Contains(errs, "1970-01-01T00:00:00Z") {
		t.Errorf("ts 0: exit %d stdout %q stderr %s; want 4 naming c.jsonl:151", code, out, errs)
	}
	pol := writeFile(t, d, "p.yaml", "name: p\nslo: {ttft: 1s, tpot: 80ms}\nwindow: {warmup: none, implausible: drop}\ngates:\n  - {metric: slo_attainment, margin: 1pp}\n")
	code, out, errs = runCLI(t, nil, "judge", "--baseline", b, "--canary", c, "--policy", pol, "--format", "json")
	if code == ExitError || code == ExitUsage || !strings.Contains(out, "dropped 1 record(s)") || !strings.Contains(out, "first on line 151") {
		t.Errorf("drop: exit %d, want a judged report warning of the dropped record; %s", code, errs)
	}
	vllm := filepath.Join("..", "..", "sources", "benchfile", "testdata", "vllm_detailed.json") // start_times on perf_counter
	code, out, errs = runCLI(t, nil, "judge", "--baseline", b, "--canary", writeFile(t, d, "c2.jsonl", goodLogV(300, 4)), vllm)
	if code != ExitError || out != "" || !strings.Contains(errs, "c2.jsonl has wall-clock") || !strings.Contains(errs, "vllm_detailed.json times on its own monotonic clock") {
		t.Errorf("mixed clocks: exit %d stdout %q stderr %s", code, out, errs)
	}
}

// TestOrderIndependence (item 8): the report does not depend on the order
// of lines within a file or of files within an arm — the bootstrap used to
// resample records in file order. Inputs are listed as given, so they are
// left out of the comparison.
func TestOrderIndependence(t *testing.T) {
	d := t.TempDir()
	mk := func(n, v int, seed uint64) []string {
		var out []string
		rng := rand.New(rand.NewPCG(seed, 1))
		for i := 0; i < n; i++ {
			out = append(out, fmt.Sprintf(`{"ts": %d.%03d, "status": "ok", "ttft_s": %.4f, "tpot_s": %.4f, "output_tokens": %d, "replica": "r%d"}`,
				1700000000+i/20, (i%20)*50, 0.2+0.3*rng.Float64()+float64(v)/1000, 0.02+0.03*rng.Float64(), 50+rng.IntN(200), i%3))
		}
		return out
	}
	b1, b2, c := mk(2500, 0, 1), mk(2500, 0, 2), mk(5000, 5, 3)
	// the second baseline file covers the same time as the first
	shuffled := append([]string(nil), c...)
	rand.New(rand.NewPCG(9, 9)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	w := func(name string, lines []string) string { return writeFile(t, d, name, strings.Join(lines, "\n")+"\n") }
	pb1, pb2, pc, ps := w("b1.jsonl", b1), w("b2.jsonl", b2), w("c.jsonl", c), w("c-shuffled.jsonl", shuffled)
	judge := func(args ...string) string {
		code, out, errs := runCLI(t, nil, append([]string{"judge", "--format", "json"}, args...)...)
		if code == ExitError || code == ExitUsage {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "inputs")
		b, _ := json.Marshal(m)
		return string(b)
	}
	ref := judge("--baseline", pb1, pb2, "--canary", pc)
	if got := judge("--baseline", pb2, pb1, "--canary", pc); got != ref {
		t.Error("swapping the baseline's files changes the report")
	}
	if got := judge("--baseline", pb1, pb2, "--canary", ps); got != ref {
		t.Error("shuffling the canary's lines changes the report")
	}
	// untimed files (LLMPerf: no arrival times) are merged by content
	llm := filepath.Join(realdata, "llmperf")
	a, f := filepath.Join(llm, "individual_anyscale_70b.json"), filepath.Join(llm, "individual_fireworks_70b.json")
	if _, err := os.Stat(a); err != nil {
		t.Fatal(err)
	}
	ref = judge("--baseline", a, f, "--canary", pc, "--judge", "goodput")
	if got := judge("--baseline", f, a, "--canary", pc, "--judge", "goodput"); got != ref {
		t.Error("swapping untimed files changes the report")
	}
}

// TestOutFile (item 8): --out naming an input is refused and the input is
// untouched; an existing report keeps its mode (0600 stayed 0644 before);
// while the report is written no temporary file is visible beside it, so
// a kill -9 at that moment leaves nothing behind, and none is left after.
func TestOutFile(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(300))
	c := writeFile(t, d, "c.jsonl", goodLogV(300, 4))
	link := filepath.Join(d, "c-link.jsonl")
	if err := os.Symlink(c, link); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(c)
	for _, out := range []string{c, link, filepath.Join(d, ".", "c.jsonl")} {
		code, _, errs := runCLI(t, nil, "judge", "--baseline", b, "--canary", c, "--format", "json", "--out", out)
		if code != ExitUsage || !strings.Contains(errs, "is also an input") {
			t.Errorf("--out %s: exit %d %s", out, code, errs)
		}
	}
	if after, _ := os.ReadFile(c); !bytes.Equal(before, after) {
		t.Fatal("the input was overwritten")
	}

	rep := filepath.Join(d, "report.json")
	if err := os.WriteFile(rep, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	saw := -1
	err := writeFileAtomicHook(rep, []byte("new report\n"), func() {
		ents, _ := os.ReadDir(d)
		saw = len(ents)
	})
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(d)
	if saw != len(ents) {
		t.Errorf("%d directory entries while writing, %d after: a temporary file was visible", saw, len(ents))
	}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	st, err := os.Stat(rep)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 kept", st.Mode().Perm())
	}
	if got, _ := os.ReadFile(rep); string(got) != "new report\n" {
		t.Errorf("content %q", got)
	}
	fresh := filepath.Join(d, "fresh.json")
	if err := writeFileAtomic(fresh, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(fresh); st.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644", st.Mode().Perm())
	}
	// a directory that does not exist is named as such, exit 4, not as
	// the temporary file the write failed on
	missing := filepath.Join(d, "no-such-dir", "r.json")
	code, out, errs := runCLI(t, nil, "judge", "--baseline", writeFile(t, d, "b.jsonl", goodLog(300)), "--canary", writeFile(t, d, "c.jsonl", goodLogV(300, 4)), "--out", missing)
	if code != ExitError || out != "" || !strings.Contains(errs, "its directory "+filepath.Dir(missing)+" does not exist") || strings.Contains(errs, ".tmp") {
		t.Errorf("--out in a missing directory: exit %d, stderr %s", code, errs)
	}
}

// TestImplausibleRecordStream: the streaming judge refuses a stray ts with
// the same file:line, drops it with the same count when the policy says
// so (reading the file a second time), refuses to drop from a pipe it
// cannot read twice, and refuses benchmark files, naming them.
func TestImplausibleRecordStream(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(300))
	lines := strings.SplitAfter(goodLogV(300, 4), "\n")
	bad := strings.Join(lines[:150], "") + `{"ts": 0, "status": "ok", "ttft_s": 0.2, "tpot_s": 0.03, "output_tokens": 100}` + "\n" + strings.Join(lines[150:], "")
	c := writeFile(t, d, "c.jsonl", bad)
	code, out, errs := runCLI(t, nil, "judge", "--stream", "--baseline", b, "--canary", c)
	if code != ExitError || out != "" || !strings.Contains(errs, "c.jsonl:151") || !strings.Contains(errs, "1970-01-01T00:00:00Z") {
		t.Errorf("ts 0: exit %d stdout %q stderr %s; want 4 naming c.jsonl:151", code, out, errs)
	}
	pol := writeFile(t, d, "p.yaml", "name: p\nslo: {ttft: 1s, tpot: 80ms}\nwindow: {warmup: none, implausible: drop}\ngates:\n  - {metric: slo_attainment, margin: 1pp}\n")
	code, out, errs = runCLI(t, nil, "judge", "--stream", "--baseline", b, "--canary", c, "--policy", pol, "--format", "json")
	if code == ExitError || code == ExitUsage || !strings.Contains(out, "dropped 1 record(s)") || !strings.Contains(out, "first on line 151") || !strings.Contains(out, `"offered": 300`) {
		t.Errorf("drop: exit %d, want a judged report warning of the dropped record; %s", code, errs)
	}
	fifo := filepath.Join(d, "fifo")
	feedFIFO(t, fifo, []byte(bad))
	code, out, errs = runCLI(t, nil, "judge", "--stream", "--baseline", b, "--canary", fifo, "--policy", pol)
	if code != ExitError || out != "" || !strings.Contains(errs, "not a regular file that can be read twice") {
		t.Errorf("drop from a pipe: exit %d stdout %q stderr %s", code, out, errs)
	}
	vllm := filepath.Join("..", "..", "sources", "benchfile", "testdata", "vllm_detailed.json")
	code, out, errs = runCLI(t, nil, "judge", "--stream", "--baseline", b, "--canary", vllm)
	if code != ExitError || out != "" || !strings.Contains(errs, "vllm_detailed.json: --stream reads native request logs") {
		t.Errorf("benchmark file: exit %d stdout %q stderr %s", code, out, errs)
	}
	code, _, errs = runCLI(t, nil, "judge", "--stream", "--judge", "kayenta", "--baseline", b, "--canary", c)
	if code != ExitUsage || !strings.Contains(errs, "--stream keeps none") {
		t.Errorf("--stream with kayenta: exit %d stderr %s", code, errs)
	}
}

// TestClassPerRequestRefused: a class field holding a value per request
// (an id) is refused with exit 4 naming the file and line of the label
// past sources.MaxClassLabels, nothing on stdout, on both paths: the
// streaming judge kept latency bins per label and ran out of memory on
// 300,000 of them.
func TestClassPerRequestRefused(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(300))
	lines := strings.SplitAfter(goodLogV(300, 4), "\n")
	for i := range lines {
		if lines[i] != "" {
			lines[i] = strings.Replace(lines[i], "{", fmt.Sprintf(`{"class": "req-%d", `, i), 1)
		}
	}
	c := writeFile(t, d, "c.jsonl", strings.Join(lines, ""))
	for _, how := range []string{"--exact", "--stream"} {
		code, out, errs := runCLI(t, nil, "judge", how, "--baseline", b, "--canary", c)
		if code != ExitError || out != "" || !strings.Contains(errs, fmt.Sprintf(`c.jsonl:%d: field "class"`, sources.MaxClassLabels+1)) ||
			!strings.Contains(errs, "leave the field out") {
			t.Errorf("%s: exit %d stdout %.200q stderr %s; want exit 4 naming c.jsonl:%d", how, code, out, errs, sources.MaxClassLabels+1)
		}
	}
}

// TestManyFilesFewDescriptors: arms of 300 files each (a run's logs
// rotated every second) are judged under a limit of 64 open descriptors,
// on both paths: every file was held open at once before, and the judge
// stopped with "too many open files". The gates are those of the two
// files the parts were split from (the exact judge once laid such files
// end to end as runs, leaving a request spacing per file out of the
// window: sources.Combine now takes them as one recording).
func TestManyFilesFewDescriptors(t *testing.T) {
	d := t.TempDir()
	whole := map[string]string{"b": goodLog(3000), "c": goodLogV(3000, 4)}
	parts := map[string][]string{}
	for arm, log := range whole {
		lines := strings.SplitAfter(log, "\n")
		for i := 0; i < 3000; i += 10 {
			parts[arm] = append(parts[arm], writeFile(t, d, fmt.Sprintf("%s-%03d.jsonl", arm, i/10), strings.Join(lines[i:i+10], "")))
		}
	}
	b, c := writeFile(t, d, "b.jsonl", whole["b"]), writeFile(t, d, "c.jsonl", whole["c"])
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	metrics := func(out string) string {
		t.Helper()
		var rep struct {
			Verdict string
			Metrics json.RawMessage
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %.300s", err, out)
		}
		return rep.Verdict + " " + string(rep.Metrics)
	}
	for _, how := range []string{"--exact", "--stream"} {
		args := []string{"judge", how, "--format", "json", "--baseline"}
		args = append(append(append(args, parts["b"]...), "--canary"), parts["c"]...)
		code, split, errs := runCLI(t, nil, args...)
		if code == ExitError || code == ExitUsage {
			t.Fatalf("%s, 300 files per arm under 64 descriptors: exit %d: %s", how, code, errs)
		}
		_, joined, _ := runCLI(t, nil, "judge", how, "--format", "json", "--baseline", b, "--canary", c)
		if metrics(split) != metrics(joined) {
			t.Errorf("%s: 300 files per arm judged otherwise than the two files they came from", how)
		}
	}
}

// TestParkedFileReplaced: a file closed after its format was detected is
// opened again where it was left, and refused when its path names another
// file by then.
func TestParkedFileReplaced(t *testing.T) {
	d := t.TempDir()
	p := writeFile(t, d, "c.jsonl", goodLog(20))
	read := func(replace bool) (string, error) {
		in, err := openInput(context.Background(), p, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		if f, err := detectFormat(in); err != nil || f != requestlog.Format {
			t.Fatalf("format %q, %v", f, err)
		}
		in.park()
		if replace {
			q := writeFile(t, d, "new.jsonl", goodLogV(20, 4))
			if err := os.Rename(q, p); err != nil {
				t.Fatal(err)
			}
		}
		b, err := io.ReadAll(in)
		return string(b), err
	}
	if got, err := read(false); err != nil || got != goodLog(20) {
		t.Errorf("parked and read again: %v, %d bytes, want the file's %d", err, len(got), len(goodLog(20)))
	}
	if _, err := read(true); err == nil || !strings.Contains(err.Error(), "names another file") {
		t.Errorf("replaced while parked: %v", err)
	}
}

// TestCanaryThatCompletesNothingFails: a canary whose every request
// failed (or was rejected) is a broken deployment, judged FAIL (exit 1)
// on its guardrail and attainment, on both paths, where it was refused as
// data that cannot be evaluated (exit 4); a baseline that completed
// nothing still leaves nothing to judge against (exit 4).
func TestCanaryThatCompletesNothingFails(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(3000))
	for _, tc := range []struct{ status, gate string }{{"error", "error_rate"}, {"rejected", "rejected_share"}} {
		lines := strings.SplitAfter(goodLogV(3000, 4), "\n")
		for i := range lines {
			lines[i] = strings.Replace(lines[i], `"status": "ok"`, `"status": "`+tc.status+`"`, 1)
		}
		c := writeFile(t, d, tc.status+".jsonl", strings.Join(lines, ""))
		for _, how := range []string{"--exact", "--stream"} {
			code, out, errs := runCLI(t, nil, "judge", how, "--baseline", b, "--canary", c, "--format", "json")
			var rep struct {
				Verdict string
				Metrics []struct{ Name, Verdict, Reason string }
			}
			if code != ExitFail || json.Unmarshal([]byte(out), &rep) != nil || rep.Verdict != "fail" {
				t.Fatalf("%s, every canary request %s: exit %d, verdict %q; want 1, fail; stderr %s", how, tc.status, code, rep.Verdict, errs)
			}
			got := map[string]string{}
			for _, m := range rep.Metrics {
				got[m.Name] = m.Verdict + ": " + m.Reason
			}
			if !strings.HasPrefix(got[tc.gate], "fail") || !strings.HasPrefix(got["slo_attainment"], "fail") || got["ttft_p99"] != "inconclusive: no ttft values in the canary" {
				t.Errorf("%s, every canary request %s: %s %s, slo_attainment %s, ttft_p99 %s", how, tc.status, tc.gate, got[tc.gate], got["slo_attainment"], got["ttft_p99"])
			}
		}
		for _, how := range []string{"--exact", "--stream"} {
			code, out, errs := runCLI(t, nil, "judge", how, "--baseline", c, "--canary", b)
			if code != ExitError || out != "" || !strings.Contains(errs, "baseline: no completed requests among 3000 offered") || !strings.Contains(errs, "nothing to compare the canary with") {
				t.Errorf("%s, every baseline request %s: exit %d stdout %.100q stderr %s; want 4", how, tc.status, code, out, errs)
			}
		}
	}
}

// TestOneInstantRefused: a log that stamps every record with one time
// (the run's start, the time the file was written) gave exit 4 on the
// request path with advice about a warm-up it did not have, and exit 3 on
// the streaming path with the canary's 3,000 requests over one 10 s
// bucket (300 req/s). Both refuse it now, naming the time and the fix; a
// file split over two instants is a run (judged), and so are a few
// requests at one instant (too little data).
func TestOneInstantRefused(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(3000))
	var lines strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&lines, `{"ts": 1700000100.5, "status": "ok", "ttft_s": %.6f, "tpot_s": 0.03, "output_tokens": 100}`+"\n", 0.1+float64(i)*1e-4)
	}
	one := lines.String()
	c := writeFile(t, d, "c.jsonl", one)
	for _, how := range []string{"--exact", "--stream"} {
		code, out, errs := runCLI(t, nil, "judge", how, "--baseline", b, "--canary", c)
		if code != ExitError || out != "" || !strings.Contains(errs, "canary: all 3000 requests arrive at one instant (ts 1700000100.5 on every record)") ||
			!strings.Contains(errs, "write each request's arrival time") {
			t.Errorf("%s: exit %d, stdout %.80q, stderr %s; want 4 naming the instant", how, code, out, errs)
		}
	}
	two := writeFile(t, d, "two.jsonl", one+`{"ts": 1700000100.6, "status": "ok", "ttft_s": 0.5, "tpot_s": 0.03, "output_tokens": 100}`+"\n")
	for _, how := range []string{"--exact", "--stream"} {
		if code, _, errs := runCLI(t, nil, "judge", how, "--baseline", b, "--canary", two); code == ExitError && strings.Contains(errs, "one instant") {
			t.Errorf("%s: two instants refused as one: %s", how, errs)
		}
	}
	// a canary that has served one request, or five within one second of
	// a coarse clock, is too little data on both paths (exit 3); the
	// request path refused it with "the warm-up cut of 0s removes the
	// whole run"
	few := strings.Join(strings.SplitAfter(one, "\n")[:5], "")
	for name, log := range map[string]string{"one request": strings.SplitAfter(one, "\n")[0], "five at one instant": few} {
		c := writeFile(t, d, "few.jsonl", log)
		for _, how := range []string{"--exact", "--stream"} {
			code, out, errs := runCLI(t, nil, "judge", how, "--baseline", b, "--canary", c)
			if code != ExitInconclusive || !strings.Contains(out, "slo_attainment: too little data") || strings.Contains(errs, "warm-up") {
				t.Errorf("%s, %s: exit %d, stdout %.200q, stderr %s; want 3, too little data", name, how, code, out, errs)
			}
		}
	}
}

// metricRow is a gate row of a JSON report as the hardening tests read it.
type metricRow struct{ Name, Verdict, Reason string }

// judgeMetrics judges base against canary on one path (how: --exact or
// --stream) and returns the exit code and the report's gate rows, failing
// the test when stdout is not a report.
func judgeMetrics(t *testing.T, how, base, canary string) (int, []metricRow) {
	t.Helper()
	code, out, errs := runCLI(t, nil, "judge", how, "--baseline", base, "--canary", canary, "--format", "json")
	var rep struct{ Metrics []metricRow }
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%s %s: exit %d: %v; stderr %s", how, canary, code, err, errs)
	}
	return code, rep.Metrics
}

// TestPodReplaced: a canary replica replaced halfway by a pod under a new
// name, and a canary with one stray record naming a third replica, were
// judged FAIL on both paths: offered_load_ratio counted every name seen
// (or the most in one slice) as deployed, so the canary was offered half
// the baseline's load per replica, and canary_replica_loss called the
// replaced pod, and the name seen once, lost. Both pass now, and so does
// a canary scaled from one pod to two halfway with its traffic (a rollout
// step; before, its first half read as load shed); a replica lost with
// nothing in its place still fails.
func TestPodReplaced(t *testing.T) {
	d := t.TempDir()
	arm := func(prefix string, v int, name func(i int) string) string {
		var b strings.Builder
		for i := range 6000 { // 10 minutes at 10 req/s
			fmt.Fprintf(&b, `{"ts": %d.%03d, "status": "ok", "ttft_s": 0.%03d, "tpot_s": 0.03, "output_tokens": 100, "replica": "%s"}`+"\n",
				1700000000+i/10, (i%10)*100, 100+(i*7+v)%400, prefix+name(i))
		}
		return b.String()
	}
	two := func(i int) string { return strconv.Itoa(i % 2) }
	b := writeFile(t, d, "b.jsonl", arm("baseline-", 0, two))
	cases := []struct {
		name string
		log  string
		want int
	}{
		{"replaced", arm("canary-", 3, func(i int) string {
			if i%2 == 1 && i >= 3000 {
				return "1b"
			}
			return two(i)
		}), ExitPass},
		{"stray", arm("canary-", 3, func(i int) string {
			if i == 201 {
				return "9"
			}
			return two(i)
		}), ExitPass},
		// a rollout step: one canary pod with half the baseline's share of
		// the traffic for five minutes, then two with all of it
		{"scaled up", strings.Join(slices.DeleteFunc(strings.SplitAfter(arm("canary-", 3, func(i int) string {
			if i < 3000 {
				return "0"
			}
			return two(i)
		}), "\n"), func(l string) bool {
			if l >= `{"ts": 1700000300` {
				return false
			}
			for _, odd := range []string{".100, ", ".300, ", ".500, ", ".700, ", ".900, "} {
				if strings.Contains(l, odd) {
					return true // every other request of the first five minutes
				}
			}
			return false
		}), ""), ExitPass},
		{"lost", strings.Join(slices.DeleteFunc(strings.SplitAfter(arm("canary-", 3, two), "\n"), func(l string) bool {
			return strings.Contains(l, `"canary-1"`) && l > `{"ts": 1700000300`
		}), ""), ExitFail},
	}
	for _, tc := range cases {
		c := writeFile(t, d, tc.name+".jsonl", tc.log)
		lossReason := map[string]string{} // per path
		for _, how := range []string{"--exact", "--stream"} {
			code, metrics := judgeMetrics(t, how, b, c)
			if code != tc.want {
				t.Errorf("%s %s: exit %d, want %d: %+v", tc.name, how, code, tc.want, metrics)
			}
			for _, m := range metrics {
				if m.Name == "offered_load_ratio" && m.Verdict == "fail" || tc.want == ExitPass && m.Name == "canary_replica_loss" {
					t.Errorf("%s %s: %s %s: %s", tc.name, how, m.Name, m.Verdict, m.Reason)
				}
				if m.Name == "canary_replica_loss" {
					lossReason[how] = m.Reason
				}
			}
		}
		// both paths name the lost replica alike (the aggregate wrote
		// canary-1 where the request path wrote "canary-1")
		if lossReason["--exact"] != lossReason["--stream"] || tc.want == ExitFail && !strings.Contains(lossReason["--exact"], `replica "canary-1" stopped serving`) {
			t.Errorf("%s: canary_replica_loss reasons differ or lack the replica:\n%s\n%s", tc.name, lossReason["--exact"], lossReason["--stream"])
		}
	}
}

// TestOfferedRateRatio: two benchmark runs one after the other whose
// records name no replica, the canary's client at half the baseline's
// rate, PASSED on both paths (a canary offered half the load looks no
// worse); offered_rate_ratio now holds the run (exit 3), passes when the
// rates agree, and is absent for arms served side by side or one within
// the other's run (their split is unknown).
func TestOfferedRateRatio(t *testing.T) {
	d := t.TempDir()
	arm := func(t0, n, every, v int) string {
		var b strings.Builder
		for i := range n {
			k := i * every // 10 req/s, or one in every requests of it
			fmt.Fprintf(&b, `{"ts": %d.%03d, "status": "ok", "ttft_s": 0.%03d, "tpot_s": 0.03, "output_tokens": 100}`+"\n", t0+k/10, (k%10)*100, 100+(i*7+v)%400)
		}
		return b.String()
	}
	b := writeFile(t, d, "b.jsonl", arm(1700000000, 6000, 1, 0))
	for _, tc := range []struct {
		name, canary string
		want         int
		row          string // the row's verdict; "" when absent
	}{
		{"after it, same rate", arm(1700001000, 6000, 1, 3), ExitPass, "pass"},
		{"after it, half the rate", arm(1700001000, 3000, 2, 3), ExitInconclusive, "inconclusive"},
		{"beside it, half the rate", arm(1700000000, 3000, 2, 3), ExitPass, ""},
		// a tenth of the traffic for 200 s within the baseline's 600 s:
		// a share of one fleet's (window_end holds it, not this row)
		{"within it, a tenth of the rate", arm(1700000200, 200, 10, 3), ExitInconclusive, ""},
	} {
		c := writeFile(t, d, strings.ReplaceAll(tc.name, " ", "-")+".jsonl", tc.canary)
		for _, how := range []string{"--exact", "--stream"} {
			code, metrics := judgeMetrics(t, how, b, c)
			row := ""
			for _, m := range metrics {
				if m.Name == "offered_rate_ratio" {
					row = m.Verdict
					if m.Verdict == "inconclusive" && !strings.Contains(m.Reason, "against the baseline's 10: -50.0%") {
						t.Errorf("%s %s: reason %s", tc.name, how, m.Reason)
					}
				}
			}
			if code != tc.want || row != tc.row {
				t.Errorf("%s %s: exit %d, offered_rate_ratio %q; want %d, %q: %+v", tc.name, how, code, row, tc.want, tc.row, metrics)
			}
		}
	}
}

// TestFileWindow: a canary that ran within a longer baseline log is
// judged as a run at another time, with a warning that names the
// --start/--end over the minutes both ran; given them, both paths judge
// the arms paired in time and say how many requests they left out.
// Windows that keep nothing, --last and bad times are refused (files
// without wall-clock times: TestPromFlagsRefusedForFiles).
func TestFileWindow(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(6000)) // 600 s from 1700000000
	lines := strings.SplitAfter(goodLogV(6000, 4), "\n")
	c := writeFile(t, d, "c.jsonl", strings.Join(lines[2000:4000], "")) // 200 s within
	type report struct {
		Metrics  []struct{ Name, Method string }
		Warnings []string
	}
	judge := func(how string, extra ...string) (int, report, string) {
		t.Helper()
		code, out, errs := runCLI(t, nil, append([]string{"judge", how, "--format", "json", "--baseline", b, "--canary", c}, extra...)...)
		var r report
		if code != ExitError && code != ExitUsage {
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%s %v: %v", how, extra, err)
			}
		}
		return code, r, errs
	}
	const suggest = "give --start 2023-11-14T22:16:40Z --end 2023-11-14T22:20:00Z"
	hasMetric := func(r report, name string) bool {
		return slices.ContainsFunc(r.Metrics, func(m struct{ Name, Method string }) bool { return m.Name == name })
	}
	for _, how := range []string{"--exact", "--stream"} {
		code, r, _ := judge(how)
		w := strings.Join(r.Warnings, "\n")
		if !strings.Contains(w, "the canary ran for 3 min within the baseline's 10 min") || !strings.Contains(w, suggest) {
			t.Errorf("%s: warnings %q lack the nested arms' window", how, w)
		}
		// the baseline's last 5 minutes have no canary beside them: not a pass
		if code == ExitPass || !hasMetric(r, "window_end") {
			t.Errorf("%s: the canary's records end 5 min before the baseline's: exit %d, window_end %v", how, code, hasMetric(r, "window_end"))
		}
		_, r, errs := judge(how, "--start", "2023-11-14T22:16:40Z", "--end", "2023-11-14T22:20:00Z")
		w = strings.Join(r.Warnings, "\n")
		if strings.Contains(w, "ran for") || hasMetric(r, "window_end") || !strings.Contains(w, "baseline: 4000 of the arm's 6000 requests arrived outside --start/--end (2023-11-14T22:16:40Z – 2023-11-14T22:20:00Z)") ||
			len(r.Metrics) == 0 || !strings.Contains(r.Metrics[0].Method, "paired") {
			t.Errorf("%s, within the window: warnings %q, methods %v; %s", how, w, r.Metrics, errs)
		}
		if code, _, errs := judge(how, "--start", "2023-11-14T23:00:00Z"); code != ExitError || !strings.Contains(errs, "none of its 6000 requests arrived within --start/--end (2023-11-14T23:00:00Z – …)") {
			t.Errorf("%s, a window after the data: exit %d, %s", how, code, errs)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--last", "5m"}, "--last only apply with --prometheus"},
		{[]string{"--start", "yesterday"}, `--start "yesterday": want an RFC 3339 time`},
		{[]string{"--start", "2023-11-14T22:20:00Z", "--end", "2023-11-14T22:16:40Z"}, "the window ends"},
	} {
		if code, _, errs := judge("--exact", tc.args...); code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestRecordsGapBothPaths: a canary log missing 3 of its 10 minutes
// (every replica down, or a lost file) was judged on the minutes it had;
// both paths now hold the run on records_gap, naming the stretch.
func TestRecordsGapBothPaths(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(6000)) // 600 s from 1700000000
	lines := strings.SplitAfter(goodLogV(6000, 4), "\n")
	c := writeFile(t, d, "c.jsonl", strings.Join(lines[:2000], "")+strings.Join(lines[3800:], "")) // nothing from 200 s to 380 s
	for _, how := range []string{"--exact", "--stream"} {
		code, out, errs := runCLI(t, nil, "judge", how, "--baseline", b, "--canary", c)
		if code == ExitPass || code == ExitError || !strings.Contains(out, "records_gap: the canary's records stop for 3 min, from 3:20 to 6:20 into the run") {
			t.Errorf("%s: exit %d, %.600s %s", how, code, out, errs)
		}
	}
}

// TestErrorsSafeForTerminal: an error that quotes a name holding a
// terminal escape and a bidi override (here a missing file's path) reaches
// stderr with them shown as \xNN, its line breaks kept.
func TestErrorsSafeForTerminal(t *testing.T) {
	code, out, errs := runCLI(t, nil, "judge", "--baseline", filepath.Join(t.TempDir(), "no\x1b[2J\u202esuch"), "--canary", "x")
	if code != ExitError || out != "" {
		t.Errorf("exit %d, stdout %q; want exit %d and nothing on stdout", code, out, ExitError)
	}
	if strings.ContainsAny(errs, "\x1b\u202e") || !strings.Contains(errs, `no\x1b[2J\x202esuch`) {
		t.Errorf("stderr %q: want the controls shown as \\xNN", errs)
	}
	if got := terminalLines("a\x07\nb\tc"); got != "a\\x07\nb\\x09c" {
		t.Errorf("terminalLines: %q", got)
	}
}

// TestRecordsAsOneArray: request-log records written as one JSON array
// (compact or indented) are refused with the contract's form and the
// conversion, not as an unrecognised format; a JSON array of another
// tool's records (LLMPerf's individual responses) is still read as that
// tool's, and an array of other objects is still unrecognised.
func TestRecordsAsOneArray(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(300))
	lines := strings.Split(strings.TrimSpace(goodLogV(300, 9)), "\n")
	compact := writeFile(t, d, "c.json", "["+strings.Join(lines, ",")+"]\n")
	indented := writeFile(t, d, "c-indented.json", "[\n  "+strings.ReplaceAll(strings.Join(lines, ",\n  "), `", "`, "\",\n    \"")+"\n]\n")
	other := writeFile(t, d, "other.json", `[{"id": 1, "name": "x"}]`+"\n")
	for _, tc := range []struct {
		path string
		want string
	}{
		{compact, "c.json: request-log records (ts, status, …) written as one JSON array; the request log is one JSON object per line (JSONL) or CSV: write one record per line, e.g. jq -c '.[]' "},
		{indented, "c-indented.json: request-log records (ts, status, …) written as one JSON array"},
		{other, "other.json: unrecognised input format"},
	} {
		for _, mode := range []string{"", "--stream"} {
			args := []string{"judge", "--baseline", b, "--canary", tc.path}
			if mode != "" {
				args = append(args, mode)
			}
			code, out, errs := runCLI(t, nil, args...)
			if code != ExitError || out != "" || !strings.Contains(errs, tc.want) {
				t.Errorf("%s%s: exit %d stdout %q stderr %s", filepath.Base(tc.path), mode, code, out, errs)
			}
		}
	}
	dir := filepath.Join("..", "..", "testdata", "realdata", "llmperf")
	if code, _, errs := runCLI(t, nil, "judge", "--policy", "bench", filepath.Join(dir, "individual_anyscale_70b.json"), filepath.Join(dir, "individual_fireworks_70b.json")); code == ExitError {
		t.Errorf("LLMPerf's individual responses (a JSON array) refused: %s", errs)
	}
}
