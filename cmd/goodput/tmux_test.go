package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// tmuxTerminal prepares a real terminal for an end-to-end test: the goodput
// binary built into a fresh temporary directory, and a tmux server of the
// test's own (private socket, empty configuration) that is killed when the
// test ends. It returns the directory, the binary and a function that runs
// one tmux command against that server and returns its output, failing the
// test when tmux fails. Without tmux the test skips, unless REQUIRE_TMUX=1.
func tmuxTerminal(t *testing.T) (dir, bin string, tmux func(args ...string) string) {
	t.Helper()
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("REQUIRE_TMUX") == "1" {
			t.Fatal("REQUIRE_TMUX=1 but tmux is not installed")
		}
		t.Skip("tmux not installed (apt-get install -y --no-install-recommends tmux)")
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "goodput")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	conf := filepath.Join(dir, "empty.conf")
	if err := os.WriteFile(conf, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "tmux.sock")
	tmux = func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmuxBin, append([]string{"-S", sock, "-f", conf}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { _ = exec.Command(tmuxBin, "-S", sock, "-f", conf, "kill-server").Run() })
	return dir, bin, tmux
}
