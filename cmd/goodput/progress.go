package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
)

// progress shows what long work is doing on stderr — the stage and the
// time spent — once it has run for longer than its delay (2 s), and only
// when stderr is a terminal: pipes, files and CI logs get nothing. The
// line is redrawn in place and erased when the work ends, so stdout and
// the final stderr lines are untouched. A nil *progress does nothing.
type progress struct {
	w     io.Writer
	delay time.Duration // quiet period before the first line
	tick  time.Duration // redraw interval
	start time.Time

	mu    sync.Mutex
	stage string
	shown bool
	done  chan struct{}
	wg    sync.WaitGroup
}

// startProgress starts a progress line on a.io.ErrOut when it is a
// terminal; otherwise it returns nil.
func (a *app) startProgress(stage string) *progress {
	f, ok := a.io.ErrOut.(*os.File)
	if !ok || !isatty.IsTerminal(f.Fd()) || a.env("TERM") == "dumb" {
		return nil
	}
	return newProgress(f, stage, 2*time.Second, 250*time.Millisecond)
}

func newProgress(w io.Writer, stage string, delay, tick time.Duration) *progress {
	p := &progress{w: w, delay: delay, tick: tick, start: time.Now(), stage: stage, done: make(chan struct{})}
	p.wg.Add(1)
	go p.run()
	return p
}

// Stage names what is being done now ("reading 3 files, 457 MB").
func (p *progress) Stage(s string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stage = s
	p.mu.Unlock()
}

// Stop ends the line and erases it.
func (p *progress) Stop() {
	if p == nil {
		return
	}
	close(p.done)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func (p *progress) run() {
	defer p.wg.Done()
	select {
	case <-p.done:
		return
	case <-time.After(p.delay):
	}
	t := time.NewTicker(p.tick)
	defer t.Stop()
	for {
		p.mu.Lock()
		fmt.Fprintf(p.w, "\r\x1b[Kgoodput: %s… %.0f s", p.stage, time.Since(p.start).Seconds())
		p.shown = true
		p.mu.Unlock()
		select {
		case <-p.done:
			return
		case <-t.C:
		}
	}
}
