package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runSimulateCmd runs `goodput simulate args…` and returns stdout, stderr
// and the exit code run() would give.
func runSimulateCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{io: &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, env: func(string) string { return "" }}
	cmd := a.newSimulateCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	code := ExitPass
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.Code
		} else {
			code = ExitUsage
		}
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

var tinyScenario = filepath.Join("..", "..", "sources", "sim", "testdata", "tiny.yaml")

func TestSimulateList(t *testing.T) {
	out, _, code := runSimulateCmd(t, "--list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, n := range []string{"steady", "kernel-faster", "tail-regression", "mix-shift", "cold-start", "replica-loss", "seed-overload"} {
		if !strings.Contains(out, n+" ") {
			t.Errorf("--list does not show %s:\n%s", n, out)
		}
	}
	if strings.Count(out, "\n") < 7 {
		t.Errorf("one line per scenario expected:\n%s", out)
	}
}

func TestSimulateWritesFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	out, errOut, code := runSimulateCmd(t, "--scenario", tinyScenario, "--seed", "3", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"offered", "admitted", "rejected", "canceled", "failed", "completed", "retry amplification", "mean GPU utilisation", "tokens/s", "per minute"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "simulating tiny") || !strings.Contains(errOut, "wrote ") {
		t.Errorf("progress missing on stderr: %s", errOut)
	}
	first := map[string][]byte{}
	for _, name := range []string{"baseline.jsonl", "canary.jsonl", "metrics.om", "cost.csv"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v (%d bytes)", name, err, len(b))
		}
		first[name] = b
	}
	if !bytes.HasSuffix(first["metrics.om"], []byte("# EOF\n")) {
		t.Error("metrics.om does not end in # EOF")
	}
	if !bytes.HasPrefix(first["cost.csv"], []byte("start,end,arm,replica,accelerator_usd,host_usd,network_usd,idle_reserve_usd\n")) {
		t.Error("cost.csv header")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 4 {
		t.Errorf("expected exactly 4 files (no temporaries), got %d", len(ents))
	}
	// same seed again: byte-identical files
	if _, errOut, code := runSimulateCmd(t, "--scenario", tinyScenario, "--seed", "3", "--out", dir); code != 0 {
		t.Fatalf("second run exit %d: %s", code, errOut)
	}
	for name, b := range first {
		again, _ := os.ReadFile(filepath.Join(dir, name))
		if !bytes.Equal(b, again) {
			t.Errorf("%s differs between runs with the same seed", name)
		}
	}
}

func TestSimulateErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: bad\nfleet:\n  replicas: 2\n  turbo: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing scenario", []string{"--out", t.TempDir()}, ExitUsage, "--scenario is required"},
		{"missing out", []string{"--scenario", "steady"}, ExitUsage, "--out DIR is required"},
		{"unknown scenario", []string{"--scenario", "stedy", "--out", t.TempDir()}, ExitUsage, "built-in: aa-autocorrelated"},
		{"bad scenario file", []string{"--scenario", bad, "--out", t.TempDir()}, ExitError, "bad.yaml:4:3: unknown key \"turbo\""},
		{"negative duration", []string{"--scenario", "steady", "--duration", "-1m", "--out", t.TempDir()}, ExitUsage, "negative"},
		{"output is a file", []string{"--scenario", tinyScenario, "--out", notDir}, ExitError, "output directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runSimulateCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, tc.code, errOut, tc.want)
			}
		})
	}
}

// A failure while rendering any file leaves the directory as it was.
func TestSimulateWritesAtomically(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "baseline.jsonl")
	if err := os.WriteFile(old, []byte("previous run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outs := []simOutput{
		{"baseline.jsonl", func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err }},
		{"metrics.om", func(w io.Writer) error {
			io.WriteString(w, "# TYPE x gauge\n")
			return errors.New("disk full")
		}},
	}
	if _, err := writeOutputsAtomic(context.Background(), dir, outs); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left %d entries, want only the previous file", len(ents))
	}
	if b, _ := os.ReadFile(old); string(b) != "previous run\n" {
		t.Errorf("previous file changed to %q", b)
	}
}
