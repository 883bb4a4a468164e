package analysis

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// mixShares reads a mix step's strata and shares (baseline, canary; in
// percent as shown): the request path's "reference / baseline / canary"
// list or the aggregate's "baseline vs canary" one.
func mixShares(t *testing.T, detail string) map[string][2]float64 {
	t.Helper()
	out := map[string][2]float64{}
	exact := regexp.MustCompile(`"([^"]+)" ([0-9.]+)% / ([0-9.]+)% / ([0-9.]+)%`)
	agg := regexp.MustCompile(`(?:[(:,] )([^,():]+?) ([0-9.]+)% vs ([0-9.]+)%`)
	f := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, m := range exact.FindAllStringSubmatch(detail, -1) {
		out[m[1]] = [2]float64{f(m[3]), f(m[4])}
	}
	if len(out) > 0 {
		return out
	}
	for _, m := range agg.FindAllStringSubmatch(detail, -1) {
		out[m[1]] = [2]float64{f(m[2]), f(m[3])}
	}
	return out
}

// TestAggregateCacheStrataAgree judges a run whose canary starts with a
// cold prefix cache (the simulator's cache-cold scenario, with a TTFT SLO
// at the baseline's median so that attainment moves) exactly and from its
// streaming aggregate, under each cache setting: both choose the same cache
// handling in the same words, standardize over the same strata with the
// same shares, warn of the mediator alike, and the count gates agree to
// 1e-9. CUPED (cache: adjust without a mix) is not applied to the
// aggregate, and its cache step says so.
func TestAggregateCacheStrataAgree(t *testing.T) {
	bd, cd := simArms(t, "cache-cold", 1)
	ttfts := make([]float64, 0, len(bd.Requests))
	for _, r := range bd.Requests {
		if r.Status == sources.StatusOK {
			ttfts = append(ttfts, r.TTFT)
		}
	}
	slices.Sort(ttfts)
	median := policies.Duration(ttfts[len(ttfts)/2] * float64(time.Second))
	// strayAndUnknown leaves every request fully cached but 20 per arm
	// partly cached (a stray band, under 1%: folded into the fully cached
	// one) and every 50th without a cached-token count (counted in its
	// stratum's most common band)
	strayAndUnknown := func(ds *sources.Dataset) *sources.Dataset {
		out := *ds
		out.Requests = slices.Clone(ds.Requests)
		for i := range out.Requests {
			r := &out.Requests[i]
			switch {
			case r.PromptTokens <= 1:
			case i%50 == 0:
				r.CachedTokens = -1
			case i%(len(out.Requests)/20) == 1:
				r.CachedTokens = 1
			default:
				r.CachedTokens = r.PromptTokens
			}
		}
		return &out
	}
	for _, tc := range []struct {
		cache, mix, want string
		edit             func(*sources.Dataset) *sources.Dataset
	}{
		{"auto", "baseline", "stratify", nil},
		{"stratify", "none", "stratify", nil},
		{"none", "baseline", "", nil},
		{"adjust", "baseline", "none", nil},
		{"adjust", "none", "none", nil},
		{"stratify", "baseline", "stratify", strayAndUnknown},
		{"auto", "baseline", "stratify", strayAndUnknown},
	} {
		name := tc.cache + " mix " + tc.mix
		if tc.edit != nil {
			name += " stray and unknown bands"
		}
		t.Run(name, func(t *testing.T) {
			bd, cd := bd, cd
			if tc.edit != nil {
				bd, cd = tc.edit(bd), tc.edit(cd)
			}
			p := chat(t)
			p.Normalize.Cache, p.Normalize.Mix = tc.cache, tc.mix
			p.SLO.TTFT = median
			for i := range p.Classes {
				p.Classes[i].SLO.TTFT = median
			}
			// the same window on both paths
			p.Window.Warmup = "none"
			rr, ra := judgedBothWays(t, bd, cd, Config{Policy: p, Resamples: 300})
			se, sa := step(rr, "cache"), step(ra, "cache")
			switch {
			case tc.want == "":
				if sa.Applied || sa.Detail != "not requested" {
					t.Errorf("aggregate cache step: %+v", sa)
				}
			case tc.cache == "adjust" && tc.mix == "none":
				if !se.Applied || sa.Applied || !strings.Contains(sa.Detail, "none: adjust requested, but CUPED on the per-bucket hit rate is not applied to an aggregate") {
					t.Errorf("cache: adjust: exact %+v, aggregate %+v", se, sa)
				}
			default:
				if se != sa || !strings.HasPrefix(sa.Detail, tc.want+": ") {
					t.Errorf("cache step:\nexact     %+v\naggregate %+v", se, sa)
				}
			}
			me, ma := mixShares(t, step(rr, "mix").Detail), mixShares(t, step(ra, "mix").Detail)
			if len(me) == 0 && tc.mix != "none" {
				t.Fatalf("no strata read from the exact mix step %q", step(rr, "mix").Detail)
			}
			if !maps.Equal(me, ma) {
				t.Errorf("strata and shares (baseline, canary %%):\nexact     %v\naggregate %v", me, ma)
			}
			if tc.edit != nil && !strings.Contains(sa.Detail, `stray band(s) "cache <50%" counted in "cache >=50%"`) {
				t.Errorf("no stray band folded: %q", sa.Detail)
			}
			if tc.want == "stratify" && tc.edit == nil && len(me) < 6 {
				t.Errorf("%d strata, want classes × cache bands: %v", len(me), me)
			}
			mediator := func(r *Report) bool {
				return strings.Contains(strings.Join(r.Warnings, "\n"), "prefix-cache bands are strata")
			}
			// the edited runs' hit rates are within 2 pp: no caveat
			if mediator(rr) != mediator(ra) || mediator(ra) != (tc.want == "stratify" && tc.edit == nil) {
				t.Errorf("mediator caveat: exact %v, aggregate %v", mediator(rr), mediator(ra))
			}
			var rows []string
			for _, m := range rr.Metrics {
				if strings.Contains(m.Name, "_p") || strings.HasSuffix(m.Name, "_trend") || m.Name == "offered_load_ratio" {
					continue
				}
				a, ok := metricNamed(ra, m.Name)
				if m.Name == "slo_attainment" && tc.cache == "adjust" && tc.mix == "none" {
					// the request path's is CUPED-adjusted, the aggregate's not
					rows = append(rows, fmt.Sprintf("%s exact (CUPED) %s %+.6f, aggregate %s %+.6f", m.Name, m.Verdict, float64(m.Delta), a.Verdict, float64(a.Delta)))
					continue
				}
				rows = append(rows, fmt.Sprintf("%s %s %+.6f", m.Name, m.Verdict, float64(m.Delta)))
				if !ok || a.Verdict != m.Verdict || !(math.Abs(float64(a.Delta)-float64(m.Delta)) <= 1e-9) {
					t.Errorf("%s: exact %s %+.12f, aggregate %s %+.12f", m.Name, m.Verdict, float64(m.Delta), a.Verdict, float64(a.Delta))
				}
			}
			t.Logf("%s", strings.Join(rows, "; "))
		})
	}
}

// TestAggregateCacheStrataWarmup: with the prefix-cache bands as strata, a
// canary whose cache starts cold has its warm-up found on its requests as
// counted, as on the request path — not on the canary reweighted to the
// baseline's strata, which gives the cold cache's requests weight 0.
func TestAggregateCacheStrataWarmup(t *testing.T) {
	bd, cd := simArms(t, "cache-cold", 1)
	p := chat(t)
	p.Normalize.Cache, p.Normalize.Mix = "stratify", "baseline"
	rr, ra := judgedBothWays(t, bd, cd, Config{Policy: p, Resamples: 300})
	e, a := float64(rr.Arms.Canary.WarmupCutSeconds), float64(ra.Arms.Canary.WarmupCutSeconds)
	t.Logf("canary warm-up cut: exact %gs, aggregate %gs", e, a)
	if !(e > 0) || !(math.Abs(a-e) <= 10) {
		t.Errorf("canary warm-up cut: exact %gs, aggregate %gs (one 10 s slice apart at most)", e, a)
	}
}
