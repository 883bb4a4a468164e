package analysis

import (
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// These are the judge's own definitions, exported so that other judges
// (analysis/comparators) count a request as good, and read a quantile, the
// same way.

// GoodFunc returns the judge's test of a good request under p: completed,
// and meeting every criterion of the SLO of its class (the first policy
// class whose conditions hold, else the policy's SLO). A criterion whose
// field is unknown is not met (TPOT and the largest gap are undefined, and
// so met, for a single output token). The function is not safe for
// concurrent use.
func GoodFunc(p *policies.Policy) func(r *sources.Request) bool {
	c := newClassifier(p)
	unverified := map[string]int64{}
	return func(r *sources.Request) bool { return isGood(c.slos[c.classOf(r)], r, unverified) }
}

// Quantile is the type-1 quantile (inverted empirical CDF) of sorted
// samples, 0 ≤ q ≤ 1; NaN when empty.
func Quantile(sorted []float64, q float64) float64 { return quantile(sorted, q) }

// QuantilesOf summarizes sorted samples as the report does.
func QuantilesOf(sorted []float64) Quantiles { return quantiles(sorted) }

// FormatTime renders a window bound as reports do: RFC 3339 (UTC, ms) for
// epoch clocks, decimal seconds on the input's own clock otherwise.
func FormatTime(c sources.Clock, t float64) string { return fmtTime(c, t) }
