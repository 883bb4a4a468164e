// Command goodput judges a canary against a baseline on goodput — completed
// requests per second that meet their SLOs — and on cost per good request,
// and prints pass, fail or inconclusive with the numbers behind it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}
