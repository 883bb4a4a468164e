package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/analysis/report"
)

// Exit codes (DESIGN.md §5).
const (
	ExitPass         = 0
	ExitFail         = 1
	ExitUsage        = 2
	ExitInconclusive = 3
	ExitError        = 4
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// fullVersion is version with the build's provenance: the module version
// when installed with go install, and the VCS revision (12 hex digits,
// "+dirty" for uncommitted changes) and commit time when built from a
// checkout.
func fullVersion() string { return versionOf(debug.ReadBuildInfo()) }

// versionOf renders version from build info (nil or !ok: version alone).
func versionOf(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return version
	}
	v := version
	if mv := bi.Main.Version; mv != "" && mv != "(devel)" && version == "0.1.0-dev" {
		v = mv
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	if at != "" {
		return fmt.Sprintf("%s (%s, %s)", v, rev, at)
	}
	return fmt.Sprintf("%s (%s)", v, rev)
}

// IOStreams are the standard streams a command uses; tests inject buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer // results
	ErrOut io.Writer // progress, warnings, errors
}

// Env looks up an environment variable (os.Getenv in main, a map in tests).
type Env func(string) string

// exitError carries an exit code out of a command. A nil Err with a code is
// a verdict (pass/fail/inconclusive), not an error.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitError) Unwrap() error { return e.Err }

// inputError marks an error as "could not evaluate" (exit 4).
func inputError(err error) error { return &exitError{Code: ExitError, Err: err} }

// usageError marks an error as a usage error (exit 2).
func usageError(format string, a ...any) error {
	return &exitError{Code: ExitUsage, Err: fmt.Errorf(format, a...)}
}

// app holds what every command needs: streams, environment, clock.
type app struct {
	io  *IOStreams
	env Env
	// clock is the wall clock (time.Now in main); nil means time.Now.
	clock func() time.Time
	// sleep waits d on the injected clock (nil: a real timer); tests
	// advance a fake clock instead.
	sleep func(ctx context.Context, d time.Duration) error
}

// now reads the injected clock.
func (a *app) now() time.Time {
	if a.clock == nil {
		return time.Now()
	}
	return a.clock()
}

// terminalLines makes an error message safe for a terminal whatever text
// it quotes (a server's answer, a file's content): its line breaks are
// kept, every other control character is shown as \xNN (report.Sanitize).
// The sources already quote what they read; this is the last line of
// defence at the one place errors are printed.
func terminalLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = report.Sanitize(l)
	}
	return strings.Join(lines, "\n")
}

// run executes the CLI with args and returns the process exit code.
//
// A panic is a bug, never a usage error: it is reported with its stack and
// exit 4 (Go's own exit status for a panic, 2, reads as a usage error).
func run(ctx context.Context, args []string, streams *IOStreams, env Env) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(streams.ErrOut, "goodput: internal error (please report it with the input that caused it): %s\n%s", terminalLines(fmt.Sprint(r)), debug.Stack())
			code = ExitError
		}
	}()
	a := &app{io: streams, env: env}
	root, stopProfiles := a.newRootCmd()
	defer stopProfiles()
	root.SetArgs(expandMultiValueFlags(args, "--baseline", "--canary"))
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitPass
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(streams.ErrOut, "goodput: %s\n", terminalLines(ee.Err.Error()))
		}
		return ee.Code
	}
	// cobra's own flag and argument errors are usage errors
	fmt.Fprintf(streams.ErrOut, "goodput: %s\n", terminalLines(err.Error()))
	if isUsage(err) {
		fmt.Fprintln(streams.ErrOut, "Run 'goodput --help' for usage.")
		return ExitUsage
	}
	return ExitError
}

func isUsage(err error) bool {
	msg := err.Error()
	for _, s := range []string{"unknown flag", "unknown command", "unknown shorthand", "flag needs an argument",
		"invalid argument", "accepts ", "requires at least", "required flag", "if any flags in the group"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// newRootCmd is the command tree, and what writes the profiles asked for
// (--cpuprofile, --memprofile) when the command ends, whatever its exit.
func (a *app) newRootCmd() (*cobra.Command, func()) {
	root := &cobra.Command{
		Use:   "goodput",
		Short: "Judge a canary against its baseline on goodput and cost per good request",
		Long: `goodput compares a canary deployment of an LLM inference service with its
baseline on goodput: completed requests per second that meet their SLOs
(e.g. TTFT ≤ 1 s and TPOT ≤ 80 ms), SLO attainment, tail latency and cost per
good request. It prints pass, fail or inconclusive, with the numbers behind it.

Exit codes: 0 pass, 1 fail, 2 usage error, 3 inconclusive, 4 could not evaluate.`,
		Version:       fullVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("goodput {{.Version}}\n")
	var cpuProfile, memProfile string
	var stopProfile func()
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to `FILE` (for performance work)")
	root.PersistentFlags().StringVar(&memProfile, "memprofile", "", "write an allocation profile to `FILE` when the command ends (for performance work)")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	_ = root.PersistentFlags().MarkHidden("memprofile")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return usageError("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return usageError("--cpuprofile: %v", err)
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		return nil
	}
	// not a PersistentPostRun, which cobra skips when the command fails
	// (and every verdict but a pass is an error here)
	stop := func() {
		if stopProfile != nil {
			stopProfile()
		}
		if memProfile != "" {
			if f, err := os.Create(memProfile); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	for _, c := range a.commands() {
		root.AddCommand(c)
	}
	return root, stop
}

// expandMultiValueFlags rewrites "--baseline a b --canary c" as
// "--baseline a --baseline b --canary c", so an arm can be given several
// files after one flag as well as by repeating the flag. "-" (standard
// input) is a file name, not a flag. Arguments after "--" are left alone.
func expandMultiValueFlags(args []string, names ...string) []string {
	out := make([]string, 0, len(args))
	current := ""
	for i, arg := range args {
		if arg == "--" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(arg, "-") && arg != stdinPath {
			current = ""
			for _, n := range names {
				if arg == n {
					current = n
				}
			}
			out = append(out, arg)
			continue
		}
		if current != "" && len(out) > 0 && out[len(out)-1] != current {
			out = append(out, current)
		}
		out = append(out, arg)
	}
	return out
}
