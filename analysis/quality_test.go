package analysis

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// TestQualityChecksHoldAPass: a canary whose records say its answers
// failed their quality check four times as often as the baseline's (a
// kernel computing wrong numbers: fast, wrong answers) passed the chat
// policy, which does not judge quality. Both paths now hold the pass,
// naming both arms' shares; checks failing alike, a canary failing fewer,
// quality_ok in one arm only, and a policy that judges quality itself
// (slo.quality: required: attainment counts the failed checks) leave the
// verdict to the gates.
func TestQualityChecksHoldAPass(t *testing.T) {
	judged := func(t *testing.T, p *policies.Policy, shareB, shareC float64, onlyCanary bool) map[string]*Report {
		// seed 1: the fleet A/A the gates pass
		bd, cd := fleetArms(aaFleet(1), aaFleet(1), 1)
		for k, a := range []struct {
			ds    *sources.Dataset
			share float64
		}{{bd, shareB}, {cd, shareC}} {
			if onlyCanary && a.ds == bd {
				continue
			}
			rng := rand.New(rand.NewPCG(uint64(k+1), 11))
			for i := range a.ds.Requests {
				if r := &a.ds.Requests[i]; r.Status == sources.StatusOK {
					r.Quality = sources.QualityOK
					if rng.Float64() < a.share {
						r.Quality = sources.QualityBad
					}
				}
			}
		}
		exact, agg := judgedBothWays(t, bd, cd, Config{Policy: p, Resamples: 300})
		return map[string]*Report{"request path": exact, "aggregate": agg}
	}
	const reason = "the canary's answers failed their quality check (quality_ok false) more often"
	held := func(r *Report) bool {
		return len(r.Reasons) > 0 && strings.Contains(strings.Join(r.Reasons, "\n"), reason)
	}
	t.Run("the canary fails four times as often", func(t *testing.T) {
		for path, r := range judged(t, chat(t), 0.01, 0.04, false) {
			if r.Verdict != Inconclusive || !held(r) || !strings.Contains(r.Reasons[0], "the gates give PASS, but") ||
				!strings.Contains(r.Reasons[0], "policy chat does not judge quality") {
				t.Errorf("%s: %s %q", path, r.Verdict, r.Reasons)
			}
			t.Logf("%s: %s", path, r.Reasons[0])
		}
	})
	for _, tc := range []struct {
		name           string
		shareB, shareC float64
		onlyCanary     bool
	}{
		{"alike", 0.02, 0.02, false},
		{"the canary fails fewer", 0.04, 0.01, false},
		{"quality_ok in the canary's records only", 0, 0.04, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for path, r := range judged(t, chat(t), tc.shareB, tc.shareC, tc.onlyCanary) {
				if r.Verdict != Pass || held(r) {
					t.Errorf("%s: %s %q", path, r.Verdict, r.Reasons)
				}
			}
		})
	}
	t.Run("a policy that judges quality", func(t *testing.T) {
		p := chat(t)
		p.SLO.Quality = "required"
		for path, r := range judged(t, p, 0.01, 0.04, false) {
			if held(r) || metric(t, r, "slo_attainment").Verdict != Fail {
				t.Errorf("%s: %s %q; slo_attainment %s", path, r.Verdict, r.Reasons, metric(t, r, "slo_attainment").Verdict)
			}
		}
	})
}

// TestQualityGap checks the rule's edges on counts alone: the margin,
// the z threshold, a checker that says nothing, and the policy's own
// quality criterion.
func TestQualityGap(t *testing.T) {
	p := &policies.Policy{Name: "chat"}
	for _, tc := range []struct {
		name                      string
		checkedB, failedB, cB, fC int64
		want                      bool
	}{
		{"4% against 1% of 10k", 10000, 100, 10000, 400, true},
		{"1.4% against 1% of 10k: within the 0.5 pp margin", 10000, 100, 10000, 140, false},
		{"2% against 1% of 1k: beyond the margin, not beyond chance", 1000, 10, 1000, 20, false},
		{"none checked in the baseline", 0, 0, 10000, 400, false},
		{"the baseline fails more", 10000, 400, 10000, 100, false},
	} {
		if got := qualityGap(p, tc.checkedB, tc.failedB, tc.cB, tc.fC) != ""; got != tc.want {
			t.Errorf("%s: held %v, want %v", tc.name, got, tc.want)
		}
	}
	q := &policies.Policy{Name: "strict", Classes: []policies.Class{{Name: "x", SLO: policies.SLO{Quality: "required"}}}}
	if qualityGap(q, 10000, 100, 10000, 400) != "" {
		t.Error("a policy with a class judging quality: held by the rule as well")
	}
}
