package main

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the example outputs in README.md")

// readmeCommand is one "$ goodput …" line of a console block in the README,
// with the output shown under it and the exit code in its "# exit N" note.
type readmeCommand struct {
	line     int      // 1-based line of the command in README.md
	args     []string // after the program name
	exit     int
	outStart int // index into lines of the first output line
	outEnd   int // one past the last output line
}

var exitNote = regexp.MustCompile(`\s+# exit (\d+)$`)

// parseReadme finds the console blocks of README.md. Commands start with
// "$ goodput " or "$ go run ./cmd/goodput ".
func parseReadme(lines []string) ([]readmeCommand, error) {
	var cmds []readmeCommand
	in := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "```console"):
			in = true
			continue
		case strings.HasPrefix(l, "```"):
			in = false
			continue
		}
		if !in || !strings.HasPrefix(l, "$ ") {
			continue
		}
		cmd := strings.TrimPrefix(l, "$ ")
		c := readmeCommand{line: i + 1}
		if m := exitNote.FindStringSubmatch(cmd); m != nil {
			c.exit, _ = strconv.Atoi(m[1])
			cmd = cmd[:len(cmd)-len(m[0])]
		}
		f := strings.Fields(cmd)
		switch {
		case len(f) > 0 && f[0] == "goodput":
			c.args = f[1:]
		case len(f) > 2 && f[0] == "go" && f[1] == "run" && f[2] == "./cmd/goodput":
			c.args = f[3:]
		default:
			continue
		}
		c.outStart = i + 1
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "$ ") && !strings.HasPrefix(lines[j], "```") {
			j++
		}
		c.outEnd = j
		cmds = append(cmds, c)
	}
	return cmds, nil
}

// TestReadmeExamples runs every command of the README's console blocks from
// the repository root and compares exit code and output with what the
// README shows. Rewrite the outputs with: go test ./cmd/goodput -run Readme -update-readme
func TestReadmeExamples(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "README.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	cmds, err := parseReadme(lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 3 {
		t.Fatalf("README.md has %d runnable examples, want at least 3", len(cmds))
	}
	t.Chdir(root)
	env := map[string]string{"NO_COLOR": "1"}
	// rewrite from the end so earlier indices stay valid
	for k := len(cmds) - 1; k >= 0; k-- {
		c := cmds[k]
		code, out, errs := runCLI(t, env, c.args...)
		if code != c.exit {
			t.Errorf("README.md:%d: goodput %s: exit %d, README says %d\nstderr: %s", c.line, strings.Join(c.args, " "), code, c.exit, errs)
		}
		if strings.Contains(errs, root) {
			t.Errorf("README.md:%d: output holds the checkout path %s; examples must be reproducible anywhere", c.line, root)
		}
		// a terminal shows both streams: results, then errors
		got := strings.Split(strings.TrimRight(out+errs, "\n"), "\n")
		want := lines[c.outStart:c.outEnd]
		if *updateReadme {
			lines = append(lines[:c.outStart], append(got, lines[c.outEnd:]...)...)
			continue
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("README.md:%d: goodput %s: output differs from the README (rerun with -update-readme if intended):\n--- README\n%s\n--- actual\n%s",
				c.line, strings.Join(c.args, " "), strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
	}
	if *updateReadme {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(f)
		w.WriteString(strings.Join(lines, "\n"))
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}
