package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// cacheLostArms returns fleet arms in which cold-cache requests (no cached
// tokens) take twice the TTFT in both arms, and the canary has a fifth of
// its warm requests cold: per band the arms are the same, in total the
// canary is worse (a change that lost cache hits).
func cacheLostArms(t *testing.T) (b, c *sources.Dataset) {
	t.Helper()
	const seed = 803
	b, c = fleetArms(aaFleet(seed), aaFleet(seed+1), seed)
	slow := func(r *sources.Request) {
		if r.TTFT > 0 {
			r.E2E += r.TTFT
			r.TTFT *= 2
		}
	}
	warm := 0
	for k := range b.Requests {
		if r := &b.Requests[k]; r.CachedTokens == 0 {
			slow(r)
		}
	}
	for k := range c.Requests {
		r := &c.Requests[k]
		switch {
		case r.CachedTokens == 0:
			slow(r)
		case r.CachedTokens > 0 && 2*r.CachedTokens >= r.PromptTokens:
			warm++
			if warm%5 == 0 {
				r.CachedTokens = 0
				slow(r)
			}
		}
	}
	if warm < 1000 {
		t.Fatalf("%d warm canary requests: the fleet model no longer reports cached tokens", warm)
	}
	return b, c
}

// TestCacheStrataBothPaths: with normalize.cache stratify the request path
// stratifies by prefix-cache band; the aggregate must too. On
// cacheLostArms, standardized by band the attainment difference is near 0
// on both paths, and by class alone (the aggregate before it kept bands)
// the canary looked worse. The count gates' intervals are the request
// path's to 1e-9 (standardizedCount).
func TestCacheStrataBothPaths(t *testing.T) {
	p := chat(t)
	p.Normalize.Cache = "stratify"
	cfg := Config{Policy: p, Resamples: 200, Seed: 1}
	b, c := cacheLostArms(t)
	exact, agg := judgedBothWays(t, b, c, cfg)
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if s := step(r, "cache"); !s.Applied || !strings.HasPrefix(s.Detail, "stratify: ") {
			t.Errorf("%s: cache step %v %q, want stratified", path, s.Applied, s.Detail)
		}
		if !strings.Contains(strings.Join(r.Warnings, "\n"), "prefix-cache bands are strata") {
			t.Errorf("%s: the hit rates moved, and no mediator caveat is warned: %q %q", path, r.Warnings, step(r, "cache").Detail)
		}
	}
	ae, _ := metricNamed(exact, "slo_attainment")
	aa, _ := metricNamed(agg, "slo_attainment")
	if d := math.Abs(float64(ae.Delta - aa.Delta)); d > 2e-4 {
		t.Errorf("attainment %+.5f on the requests, %+.5f on the aggregate: both standardize by class and cache band", float64(ae.Delta), float64(aa.Delta))
	}
	if d := math.Abs(float64(aa.Delta)); d > 0.004 {
		t.Errorf("aggregate attainment %+.5f: the arms are alike per band", float64(aa.Delta))
	}
	// the same estimator on the same strata: the request path's
	// per-stratum influence variance, paired (standardizedCount)
	for _, name := range []string{"slo_attainment", "error_rate", "retry_share"} {
		me, _ := metricNamed(exact, name)
		ma, _ := metricNamed(agg, name)
		if me.Method != ma.Method || math.Abs(float64(me.Interval[0]-ma.Interval[0])) > 1e-9 || math.Abs(float64(me.Interval[1]-ma.Interval[1])) > 1e-9 {
			t.Errorf("%s: %s [%.6f, %.6f] on the requests, %s [%.6f, %.6f] on the aggregate", name, me.Method, float64(me.Interval[0]), float64(me.Interval[1]),
				ma.Method, float64(ma.Interval[0]), float64(ma.Interval[1]))
		}
	}
	if !slices.ContainsFunc(aa.Adjusted, func(s string) bool { return strings.Contains(s, "standardized") }) {
		t.Errorf("aggregate attainment adjusted %q", aa.Adjusted)
	}
}

// TestCacheMovedIsGated: with normalize.cache auto (chat's) a change that
// lost cache hits is judged on its total effect on both paths: the bands
// are left out when the hit rates differ by more than CacheShiftPP, so
// the canary's colder cache (twice the TTFT on a miss) is not explained
// away as it is under stratify (TestCacheStrataBothPaths: attainment
// within 0.4 pp of 0). Identical arms are still stratified: within
// CacheShiftPP the bands only narrow the intervals.
func TestCacheMovedIsGated(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 200, Seed: 1}
	b, c := cacheLostArms(t)
	exact, agg := judgedBothWays(t, b, c, cfg)
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		s := step(r, "cache")
		if s.Applied || !strings.HasPrefix(s.Detail, "none: not stratified: over the later half of the run the arms' prefix-cache hit rates differ by more than 2 pp") {
			t.Errorf("%s: cache step %v %q, want not stratified", path, s.Applied, s.Detail)
		}
		m, _ := metricNamed(r, "slo_attainment")
		if float64(m.Delta) > -0.02 || m.Verdict == Pass || r.Verdict == Pass {
			t.Errorf("%s: attainment %+.4f %s, run %s: a colder canary cache costs about 3.7 pp in total", path, float64(m.Delta), m.Verdict, r.Verdict)
		}
	}
	ae, _ := metricNamed(exact, "slo_attainment")
	aa, _ := metricNamed(agg, "slo_attainment")
	if d := math.Abs(float64(ae.Delta - aa.Delta)); d > 2e-4 {
		t.Errorf("attainment %+.5f on the requests, %+.5f on the aggregate", float64(ae.Delta), float64(aa.Delta))
	}

	const seed = 805
	b, c = fleetArms(aaFleet(seed), aaFleet(seed+1), seed)
	exact, agg = judgedBothWays(t, b, c, cfg)
	for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
		if s := step(r, "cache"); !s.Applied || !strings.HasPrefix(s.Detail, "stratify: ") {
			t.Errorf("identical arms, %s: cache step %v %q, want stratified", path, s.Applied, s.Detail)
		}
	}
}
