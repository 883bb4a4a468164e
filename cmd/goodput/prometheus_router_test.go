package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestPrometheusReadsTheRouter judges a canary of one replica beside a
// baseline of four, at the same load per replica, from the request logs
// and from the same run's vLLM metrics backfilled into a real Prometheus,
// with the built-in chat policy. Metrics carry no per-replica request
// counts per step, but they carry each replica's requests running and
// waiting; the logs give each request's arrival and end. Behind the
// simulator's least-loaded router the baseline's four hold about as many
// each at every step (stats.InFlightEvenness), which pools their queues,
// so near capacity the lone canary's p99 TTFT is worse on the same build.
// That FAIL is held INCONCLUSIVE on both paths (before, the metrics path
// warned of the sizes and failed identical builds, and the logs' counts
// per bucket read the router as random, 0.70); 2% server errors still
// fail; behind a router that picks replicas at random the reading says
// so and a canary that parks 10% of its requests fails on both paths.
// Arms of four replicas each, the baseline's behind the least-loaded
// router and the canary's picked at random
// (testdata/scenarios/routers-of-two-kinds.yaml, 14 req/s per replica):
// identical builds failed from metrics (ttft_p99, then judged against a
// margin on the share above a bucket edge five times the policy's) and
// were held; both routers are named.
func TestPrometheusReadsTheRouter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts one Prometheus per scenario")
	}
	const lone = "the arms differ in size: the baseline ran 4.0 replicas on average, the canary 1.0"
	for _, tc := range []struct {
		name, scenario, want string
		held                 bool   // from metrics a gate that fails is held (the logs' gates are inconclusive here)
		arms, router         string // how the warning opens, and what it says of the routers
	}{
		{"identical builds, the baseline's four pooled", "lone-canary-pooled.yaml", "inconclusive", true, lone, "the baseline's router spread its requests over its replicas more evenly than at random"},
		{"2% server errors, the baseline's four pooled", "lone-canary-pooled-errors.yaml", "fail", false, lone, "the baseline's router spread its requests over its replicas more evenly than at random"},
		{"10% of requests parked, the baseline's four at random", "lone-canary-random-regress.yaml", "fail", false, lone, "the baseline's router picked replicas about at random"},
		// four replicas in each arm, the canary's picked at random
		{"identical builds of one size, the baseline's pooled, the canary's at random", "routers-of-two-kinds.yaml", "inconclusive", true,
			"the arms' routers differ (the baseline ran 4.0 replicas on average, the canary 4.0)", "while the canary's picked replicas about at random"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs, prom := logsAndMetrics[agreeReport](t, filepath.Join("..", "..", "testdata", "scenarios", tc.scenario), "chat", 20)
			for path, r := range map[string]agreeReport{"request logs": logs, "metrics": prom} {
				if r.Verdict != tc.want {
					t.Errorf("%s: %s, want %s: %q", path, r.Verdict, tc.want, r.Reasons)
				}
				var size string
				for _, w := range r.Warnings {
					if strings.HasPrefix(w, tc.arms) {
						size = w
					}
				}
				if !strings.Contains(size, tc.router) {
					t.Errorf("%s: no warning %q… saying %q: %q", path, tc.arms, tc.router, r.Warnings)
				}
				failed := false
				for _, m := range r.Metrics {
					failed = failed || m.Verdict == "fail"
				}
				// from metrics the TTFT tail, judged as a share above a
				// bucket edge, failed against a margin five times the
				// policy's and the hold kept it from the verdict; against
				// the share a canary 10% slower would have it is left
				// within the buckets' bounds instead: either way no FAIL
				held := len(r.Reasons) > 0 && strings.HasPrefix(r.Reasons[0], "the gates give FAIL (")
				if tc.held && path == "metrics" && failed != held {
					t.Errorf("%s: a failing gate not held by the arms' sizes, or a hold without one: %q", path, r.Reasons)
				}
			}
			for path, r := range map[string]agreeReport{"request logs": logs, "metrics": prom} {
				if want := "their requests in flight at each bucket's end vary"; !strings.Contains(strings.Join(r.Warnings, "\n"), want) {
					t.Errorf("%s: the router is not read from the replicas' requests in flight: %q", path, r.Warnings)
				}
			}
		})
	}
}
