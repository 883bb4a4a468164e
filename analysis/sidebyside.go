package analysis

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// maxSideBySide is the most calls eachSideBySide runs at once. Each of the
// request path's gate evaluations holds temporary copies of the arms'
// latencies: two at once raised the peak RSS of judging two 500,000-
// request arms from 437 to 587 MiB, so more than four would cost more
// memory than the eight or so gates of a policy save in time.
const maxSideBySide = 4

// eachSideBySide calls f(0) … f(n−1) on up to min(GOMAXPROCS,
// maxSideBySide) goroutines and returns when every call has. The calls
// must be independent: each writes only its own index's results, and
// reads what none of them writes. Whatever finishes first, the results
// are the same, so a judge that stores them by index gives the same
// report byte for byte on one processor or many (an evaluation's
// bootstrap draws are seeded by its gate's index, not by what ran before
// it).
func eachSideBySide(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, runtime.GOMAXPROCS(0), maxSideBySide) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// forking is a judgement that can be copied for work done beside the rest:
// the request path's and the aggregate's (their fork methods).
type forking[J any] interface{ fork() J }

// sideBySide evaluates n gates side by side (eachSideBySide), each on its
// own fork of j, and returns the evaluations and their forks in index
// order, for the caller to join what it keeps.
func sideBySide[J forking[J]](j J, n int, eval func(f J, i int) gateEval) ([]gateEval, []J) {
	evals, forks := make([]gateEval, n), make([]J, n)
	eachSideBySide(n, func(i int) {
		forks[i] = j.fork()
		evals[i] = eval(forks[i], i)
	})
	return evals, forks
}
