package analysis

import (
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// A canceled request counts where its canceled_by says, on the request
// path and on the exact aggregate alike: a server's cancel is a failure
// (error_rate), a client's or an unattributed one a cancel
// (canceled_share). 3% of the canary's requests are canceled; the other
// guardrail must not see them.
func TestCanceledByDecidesTheGuardrail(t *testing.T) {
	p := chat(t)
	base := synth{n: 30000, rate: 50, ttftMed: 0.3, tpotMed: 0.03, errShare: 0.002, replicas: 3, seed: 1, longShare: 0.1}
	for _, tc := range []struct {
		name           string
		by             sources.CanceledBy
		fails, quiet   string
		failed, cancel bool
	}{
		{"server", sources.CanceledByServer, "error_rate", "canceled_share", true, false},
		{"client", sources.CanceledByClient, "canceled_share", "error_rate", false, true},
		{"unknown", sources.CanceledByUnknown, "canceled_share", "error_rate", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.seed = 2
			bd, cd := base.dataset(sources.Baseline), c.dataset(sources.Canary)
			n := 0
			for i := range cd.Requests {
				r := &cd.Requests[i]
				if i%33 != 0 || r.Status != sources.StatusOK {
					continue
				}
				r.Status, r.CanceledBy = sources.StatusCanceled, tc.by
				n++
			}
			cfg := Config{Policy: p, Resamples: 300}
			for _, path := range []struct {
				name string
				b, c *sources.Dataset
			}{{"requests", bd, cd}, {"aggregate", aggregated(t, bd, p), aggregated(t, cd, p)}} {
				r, err := Judge(path.b, path.c, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if r.Verdict != Fail {
					t.Errorf("%s: verdict %s, want fail: %v", path.name, r.Verdict, r.Reasons)
				}
				f, ok := metricNamed(r, tc.fails)
				if !ok || f.Verdict != Fail {
					t.Errorf("%s: %s %s (%s), want fail", path.name, tc.fails, f.Verdict, f.Reason)
				}
				q, ok := metricNamed(r, tc.quiet)
				if !ok || q.Verdict == Fail || float64(q.Delta) > 0.002 {
					t.Errorf("%s: %s %s delta %+.4f, want no harm: it must not count the cancels", path.name, tc.quiet, q.Verdict, float64(q.Delta))
				}
				acc := r.Arms.Canary.Accounting
				if tc.failed && acc.Failed < int64(n) || tc.cancel && acc.Canceled != int64(n) || !tc.cancel && acc.Canceled != 0 {
					t.Errorf("%s: canary accounting %+v for %d canceled requests (failed %v)", path.name, acc, n, tc.failed)
				}
				if acc.Offered != acc.Rejected+acc.Canceled+acc.Failed+acc.Completed {
					t.Errorf("%s: accounting does not add up: %+v", path.name, acc)
				}
			}
		})
	}
}
