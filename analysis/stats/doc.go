// Package stats is goodput's statistics engine: intervals, tests, resampling and
// the three-way non-inferiority decision that the judge's verdicts rest on.
//
// Everything here is pure (no I/O, no clock, no package-level state) and
// deterministic: every resampling function takes an explicit seed and draws from
// its own math/rand/v2 PCG stream, so the same inputs give bit-identical output.
// gonum (stat, distuv) supplies the distributions; the tests, intervals and
// resampling schemes are written here because gonum has none of them.
//
// Conventions (see DESIGN.md §5 and reference/statistics.md):
//
//   - x is the canary arm and y the baseline arm; differences are x − y and
//     ratios are x / y.
//   - Confidence levels conf are two-sided, in (0, 1). A gate at one-sided level
//     α asks for the (1 − 2α) interval, e.g. conf = 0.90 for α = 0.05.
//   - An undefined estimate is NaN and an uninformative interval is
//     [−Inf, +Inf]; both make every decision function return Inconclusive, so
//     missing or degenerate data can never pass a gate.
//
// Default method per gate metric, and why:
//
//   - Differences of proportions and ratios of sums (SLO attainment, error
//     rate, goodput per replica-second, cost per good request):
//     DiffOfProportions (attainment, error rate), DiffOfRatios and
//     LogRatioOfRatios, the delta method on per-bucket totals with a
//     batch-means variance (8 contiguous batches per arm) and a Student t
//     interval. Time buckets are the clusters, so within-bucket correlation
//     (shared batches, KV cache, load) is absorbed; long batches absorb the
//     correlation between buckets. Per-request (binomial) variance understates
//     the error several-fold on canary data; the calibration test shows it.
//   - Tail-latency quantiles (p95/p99 of TTFT, TPOT): QuantileLogRatio, a
//     circular block bootstrap of buckets (blocks of at least an eighth of the
//     run) with an expanded percentile interval, because quantiles are not
//     smooth enough for the delta method.
//   - Small counts (rare failures): Wilson, NewcombeDiff and FisherExact.
//   - Diagnostics: MannWhitney and HodgesLehmann (location shift), Welch (means).
package stats
