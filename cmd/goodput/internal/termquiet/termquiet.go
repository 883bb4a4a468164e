// Package termquiet keeps the terminal libraries from querying the terminal
// while the program starts.
//
// Bubble Tea's package initialisation asks the terminal for its background
// colour (OSC 11) and cursor position (CSI 6n) whenever standard output is
// a terminal, and waits up to 5 s for the answer. A terminal that does not
// answer (a pseudo-terminal whose far end is a log, `script` to a file, some
// CI runners) stalled every command for 5 s — even `goodput --help`, even
// with NO_COLOR. termenv skips the query when TERM is "dumb", so this
// package sets TERM=dumb while the packages initialise and Restore puts the
// real value back before anything else runs. goodput itself never needs the
// answer: the terminal review fixes its background instead of asking.
//
// It works because of the Go initialisation order: this package imports
// only os and syscall, so it is ready as soon as os is, and its import path
// sorts before github.com/muesli/termenv, which lipgloss and bubbletea need
// and which needs os: it is initialised before any of them (Go spec,
// "Package initialization"). main imports it first and calls Restore first.
package termquiet

import (
	"os"
	"syscall"
)

// term is TERM as the process received it; set is whether it was set.
var term, set = syscall.Getenv("TERM")

func init() {
	os.Setenv("TERM", "dumb")
}

// Restore puts the process's TERM back as it was received. Call it first
// thing in main.
func Restore() {
	if set {
		os.Setenv("TERM", term)
	} else {
		os.Unsetenv("TERM")
	}
}
