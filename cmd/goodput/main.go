// Command goodput judges a canary against a baseline on goodput — completed
// requests per second that meet their SLOs — and on cost per good request,
// and prints pass, fail or inconclusive with the numbers behind it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/goodput-dev/goodput/cmd/goodput/internal/termquiet"
)

// signalGrace is how long a run may take to wind down after SIGINT or
// SIGTERM (close a terminal UI, remove a temporary file) before the process
// exits anyway: a read blocked on a pipe or FIFO does not see the context.
const signalGrace = 2 * time.Second

func main() {
	termquiet.Restore() // the terminal libraries have initialised without querying
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var signalled atomic.Int32 // exit code of the signal received, 0 if none
	go func() {
		s := <-sigs
		code := signalExit(s)
		signalled.Store(int32(code))
		fmt.Fprintf(os.Stderr, "goodput: %v: stopped, no verdict\n", s)
		cancel()
		select {
		case <-time.After(signalGrace):
		case <-sigs: // a second signal: now
		}
		os.Exit(code)
	}()
	code := run(ctx, os.Args[1:], &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Getenv)
	if c := signalled.Load(); c != 0 {
		code = int(c) // whatever the run made of its cancelled context
	}
	os.Exit(code)
}

// signalExit is the shell's exit status for a process ended by s: 128 + the
// signal number (130 for SIGINT, 143 for SIGTERM).
func signalExit(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 130
}
