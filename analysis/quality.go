package analysis

import (
	"fmt"
	"strings"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// A kernel that computes wrong numbers serves fast, wrong answers: every
// latency SLO is met and only a quality check sees it. A policy decides
// whether quality is part of "good" (slo.quality: required); chat's is
// not, so a canary whose records say its answers failed their check
// three times as often passed. When the policy does not judge quality and
// both arms' records give quality_ok, a canary that fails it more often
// than the baseline, by more than QualityMargin and beyond chance, is
// never passed: the pass is held inconclusive and the report says why,
// with both arms' shares (it does not fail the run: the policy did not
// ask for quality, and a checker's mistakes differ from the service's).

// QualityMargin is how much more often (a fraction of the completed
// requests checked, 0.005 = 0.5 pp) the canary's answers may fail their
// quality check than the baseline's before a pass is held.
const QualityMargin = 0.005

// qualityZ is the one-sided two-proportion z the canary's excess must
// pass (beyond chance: about 1 in 740 identical arms).
const qualityZ = 3

// qualityTally is what one completed request adds to its arm's quality
// counts: checked when its record gives quality_ok, failed when the check
// failed. Both judging paths count with it.
func qualityTally(q sources.Quality) (checked, failed int64) {
	switch q {
	case sources.QualityOK:
		return 1, 0
	case sources.QualityBad:
		return 1, 1
	}
	return 0, 0
}

// qualityJudged reports whether the policy makes quality part of good
// anywhere (its SLO or a class's).
func qualityJudged(p *policies.Policy) bool {
	if p.SLO.Quality != "" {
		return true
	}
	for _, c := range p.Classes {
		if c.SLO.Quality != "" {
			return true
		}
	}
	return false
}

// qualityGap says why the canary's quality checks hold a pass ("" when
// they do not): the policy does not judge quality, both arms give
// quality_ok on some completed requests (checked, of which failed), and
// the canary's failed share exceeds the baseline's by more than
// QualityMargin with a one-sided two-proportion z above qualityZ. Both
// judging paths call it.
func qualityGap(p *policies.Policy, checkedB, failedB, checkedC, failedC int64) string {
	if qualityJudged(p) || checkedB == 0 || checkedC == 0 {
		return ""
	}
	nb, nc := float64(checkedB), float64(checkedC)
	pb, pc := float64(failedB)/nb, float64(failedC)/nc
	se := pooledSE(float64(failedB), nb, float64(failedC), nc)
	if !(pc-pb > QualityMargin) || !(se > 0) || (pc-pb-QualityMargin)/se <= qualityZ {
		return ""
	}
	return fmt.Sprintf("the canary's answers failed their quality check (quality_ok false) more often: %.2f%% of %s checked against %.2f%% of %s in the baseline (%+.2f pp); policy %s does not judge quality (slo.quality: required would count a failed check as not good)",
		100*pc, fmtCount(nc), 100*pb, fmtCount(nb), 100*(pc-pb), strings.TrimSpace(p.Name))
}

// heldByQualityGap applies qualityGap's finding: a pass is held
// inconclusive, a fail or an inconclusive run gains the reason.
// Nothing is done when gap is "".
func heldByQualityGap(r *Report, gap string) {
	switch {
	case gap == "":
	case r.Verdict == Pass:
		r.Reasons = append([]string{fmt.Sprintf("the gates give PASS, but %s, so the run is not passed", gap)}, r.Reasons...)
		r.Verdict = Inconclusive
	default:
		r.Reasons = append(r.Reasons, gap)
	}
}
