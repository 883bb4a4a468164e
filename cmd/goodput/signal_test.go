package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildGoodput builds the command once per test into a temporary directory.
func buildGoodput(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "goodput")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestSignalsEndRun (item 7): SIGTERM while goodput waits for a writer on an
// unfed FIFO, and SIGINT while it reads a FIFO whose writer stalls, end the
// run promptly with 143 / 130, nothing on stdout and no verdict.
func TestSignalsEndRun(t *testing.T) {
	bin := buildGoodput(t)
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(300))
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		code  int
		write bool // a writer opens the FIFO, writes part and stalls
	}{
		{"SIGTERM waiting for a writer", syscall.SIGTERM, 143, false},
		{"SIGINT while reading a stalled pipe", syscall.SIGINT, 130, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "canary.fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.write {
				go func() {
					f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
					if err != nil {
						return
					}
					f.Write([]byte(goodLogV(200, 3)))
					time.Sleep(30 * time.Second) // never finishes
					f.Close()
				}()
			}
			cmd := exec.Command(bin, "judge", "--baseline", b, "--canary", fifo)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(700 * time.Millisecond)
			start := time.Now()
			cmd.Process.Signal(tc.sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
					t.Errorf("exit %v, want %d; stderr %s", err, tc.code, errb.String())
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 10 s after %v", tc.sig)
			}
			if el := time.Since(start); el > signalGrace+time.Second {
				t.Errorf("took %v to stop", el)
			}
			if out.Len() != 0 {
				t.Errorf("stdout after a signal: %q", out.String())
			}
			if !strings.Contains(errb.String(), "no verdict") {
				t.Errorf("stderr %q does not say the run stopped", errb.String())
			}
		})
	}
}

// TestCancelledRunPrintsNoVerdict (item 7): when the run's context ends
// after the inputs are read — a signal during the analysis — the analysis
// may finish, but no verdict is printed and the exit is not a pass.
func TestCancelledRunPrintsNoVerdict(t *testing.T) {
	d := t.TempDir()
	b := writeFile(t, d, "b.jsonl", goodLog(300))
	fifo := filepath.Join(d, "c.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write([]byte(goodLogV(300, 3)))
		f.Close()
		cancel() // the signal arrives as the last byte is read
	}()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"judge", "--baseline", b, "--canary", fifo}, &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, func(string) string { return "" })
	if code == ExitPass || out.Len() != 0 {
		t.Errorf("exit %d stdout %q after cancellation; want no verdict", code, out.String())
	}
}

// TestNoTerminalQueries (item 8): on a pseudo-terminal whose far end never
// answers (script(1) writing to a file), no command asks the terminal for
// its background colour (OSC 11) or cursor position (CSI 6n): those queries
// stalled every command, --help included, for 5 s. TERM is the caller's
// again once the program runs.
func TestNoTerminalQueries(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("script(1) (util-linux, essential in Debian) is needed: %v", err)
	}
	bin := buildGoodput(t)
	for _, args := range []string{"--help", "judge --help", "policy list"} {
		cmd := exec.Command(script, "-qec", bin+" "+args, "/dev/null")
		cmd.Env = append(os.Environ(), "TERM=xterm-256color")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		if bytes.Contains(out, []byte("\x1b]11;")) || bytes.Contains(out, []byte("\x1b[6n")) {
			t.Errorf("goodput %s queried the terminal: %q", args, out[:min(len(out), 40)])
		}
	}
}
