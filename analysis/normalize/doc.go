// Package normalize makes a canary and its baseline comparable before they are
// judged: it detects and cuts warm-up, re-weights both arms to a common
// traffic mix, handles prefix-cache state, and checks replica loss, offered
// load per replica and the traffic split (reference/statistics.md §2,
// §3.6–3.9).
//
// Everything here is pure (no I/O, no clock, no package-level state) and
// deterministic. Inputs are bucket-level: the judge groups each arm's
// requests into consecutive time buckets (default 10 s). Within an arm the
// buckets are in time order and may be autocorrelated; the two arms are
// independent. As in package stats, x is the canary and y the baseline, and
// differences are canary − baseline.
//
// The rules are declared here, before any data is seen, so that a cut or a
// re-weighting can never be chosen to favour a verdict:
//
//   - Warm-up (Warmup): MSER-5 on per-bucket medians of TTFT, confirmed by a
//     CUSUM mean-shift test on the same batch means with the threshold
//     DefaultCUSUMThreshold. Cut only when both find an initial transient.
//   - Traffic mix (Weights, Standardize): direct standardisation of
//     per-stratum ratios of sums to reference weights (baseline, canary,
//     pooled or explicit). A stratum with weight > 0 that one arm never saw
//     makes standardisation impossible and is an error, never silently
//     dropped. Strata are the policy's classes, else Band (token-length
//     bands).
//   - Cache state (CacheBand, CUPED, AutoCache): stratify by hit-rate band
//     when every band is populated in both arms, else a CUPED regression
//     adjustment, else none. Cache hit rate is a mediator when the change can
//     alter caching: the unadjusted comparison is then the one to gate on.
//   - Load and replicas (ReplicaLoss, InService, MatchedPeriods,
//     CompareLoad, SRM): a replica silent for more than DefaultGapSecs
//     of whole buckets (and longer than its own traffic explains) while the others
//     keep serving is lost or paused; comparisons can be restricted to
//     buckets where both arms had their full replica set and to buckets of
//     matched offered load per replica; a sample-ratio mismatch at
//     p < SRMThreshold means the experiment is broken.
//
// Typical use by the judge, per arm then across arms:
//
//	w := Warmup(ttftMedians, WarmupOptions{})          // cut w.Cut buckets
//	ws, err := Weights(policyMix, canary, baseline, explicitWeights)
//	res, err := Standardize(canary, baseline, ws, 1-2*alpha) // res.Adjusted gates
//	ev := ReplicaLoss(replicas, LossOptions{BucketSecs: 10})
//	keep := MatchedPeriods(InService(cReps, cEv), InService(bReps, bEv))
//	srm := SRM(canaryOffered, baselineOffered, declaredShare)
package normalize
