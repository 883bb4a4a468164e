package analysis

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// latencyValues are the latency of an arm's completed requests.
func latencyValues(ds *sources.Dataset, latency string) []float64 {
	var out []float64
	for _, r := range ds.Requests {
		if r.Status != sources.StatusOK {
			continue
		}
		v := map[string]float64{"ttft": r.TTFT, "tpot": r.TPOT, "e2e": r.E2E}[latency]
		if !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// inSameBin reports whether a lies in the log-linear bin of v (its edges
// included, with a rounding allowance).
func inSameBin(a, v float64) bool {
	i, ok := loglin.Index(v)
	if !ok {
		return false
	}
	lo, hi := loglin.Lower(i), loglin.Upper(i)
	return a >= lo*(1-1e-12) && a <= hi*(1+1e-12)
}

// TestAggregateViewAgreesWithRequests judges the same runs from the
// requests and from the exact aggregate a request scan builds of them and
// compares what the aggregate computes for the review besides the gates:
//   - the Mann-Whitney / Hodges-Lehmann diagnostics: the same counts; the
//     request path's U within the bins' tie range of the aggregate's; p and
//     q never below the request path's (never less cautious); the request
//     path's shift inside the range the bins allow, and the aggregate's
//     too; the request path's 95% interval inside the aggregate's;
//   - the latency CDFs: every point of both arms' TTFT and TPOT curves in
//     the same log-linear bin as the request path's;
//   - the naive (unreweighted) comparisons: present on the same gates, with
//     deltas within the bins' resolution (counts 0.1 pp or 0.1%,
//     quantiles 1.5%: two bootstraps of the same data).
func TestAggregateViewAgreesWithRequests(t *testing.T) {
	p := chat(t)
	p.Window.Warmup = "none" // the same analysed window on both paths
	base := synth{n: 30000, rate: 50, ttftMed: 0.3, tpotMed: 0.03, errShare: 0.002, replicas: 3, seed: 1, longShare: 0.1,
		longTTFTMed: 0.6, longTPOTMed: 0.04}
	for _, tc := range []struct {
		name      string
		canary    func(s *synth)
		ttftShift float64 // seconds added to every canary TTFT (and E2E)
		mixed     bool    // the canary's mix differs: gates reweight it
	}{
		{"A/A", func(s *synth) {}, 0, false},
		{"TTFT +3.85 ms", func(s *synth) {}, 0.00385, false},
		{"TPOT 10% slower", func(s *synth) { s.tpotMed = 0.033 }, 0, false},
		{"canary mix: 35% long prompts", func(s *synth) { s.longShare = 0.35 }, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.seed = 2
			tc.canary(&c)
			bd, cd := base.dataset(sources.Baseline), c.dataset(sources.Canary)
			for i := range cd.Requests {
				if r := &cd.Requests[i]; r.Status == sources.StatusOK {
					r.TTFT += tc.ttftShift
					r.E2E += tc.ttftShift
				}
			}
			cfg := Config{Policy: p, Resamples: 300}
			rr, ra := judgedBothWays(t, bd, cd, cfg)
			diagnosticsAgree(t, rr, ra, bd, cd)
			curvesAgree(t, rr, ra)
			naiveAgree(t, rr, ra, tc.mixed)
			for _, st := range ra.Normalization.Steps {
				if st.Name == "mix" && st.Applied && !strings.Contains(st.Detail, "slo_attainment naive ") {
					t.Errorf("the mix step does not list the naive comparisons: %s", st.Detail)
				}
			}
			if ra.Warnings == nil {
				t.Error("warnings: nil, which the JSON report writes as null; want a list")
			}
			for _, w := range ra.Warnings {
				if strings.Contains(w, "diagnostics") {
					t.Errorf("warning on the diagnostics: %s", w)
				}
			}
		})
	}
}

func diagnosticsAgree(t *testing.T, rr, ra *Report, bd, cd *sources.Dataset) {
	t.Helper()
	byMetric := map[string]Diagnostic{}
	for _, d := range ra.Diagnostics {
		byMetric[d.Metric] = d
	}
	n := 0
	for _, e := range rr.Diagnostics {
		if e.Method != "mann-whitney" {
			continue
		}
		n++
		a, ok := byMetric[e.Metric]
		if !ok {
			t.Errorf("%s: no diagnostic from the aggregate", e.Metric)
			continue
		}
		if a.NBaseline != e.NBaseline || a.NCanary != e.NCanary {
			t.Errorf("%s: n %d/%d, requests %d/%d", e.Metric, a.NBaseline, a.NCanary, e.NBaseline, e.NCanary)
		}
		g, ok := alignBins(binnedValues(latencyValues(cd, e.Metric)), binnedValues(latencyValues(bd, e.Metric)))
		if !ok {
			t.Fatalf("%s: bins do not align", e.Metric)
		}
		same := 0.0
		for _, x := range g {
			same += x.nc * x.nb
		}
		if d := math.Abs(float64(a.Statistic - e.Statistic)); !(d <= same/2) {
			t.Errorf("%s: U %v, requests %v: apart by %v, more than half the %v same-bin pairs", e.Metric, a.Statistic, e.Statistic, d, same)
		}
		if !(a.PValue >= e.PValue) || !(a.QValue >= e.QValue) {
			t.Errorf("%s: p %v q %v below the requests' p %v q %v", e.Metric, a.PValue, a.QValue, e.PValue, e.QValue)
		}
		hl := hodgesLehmannBins(g, 0.95)
		if !(hl.estLo <= float64(e.Estimate) && float64(e.Estimate) <= hl.estHi) || !(hl.estLo <= float64(a.Estimate) && float64(a.Estimate) <= hl.estHi) {
			t.Errorf("%s: shift %v (requests %v) outside the bins' range [%v, %v]", e.Metric, a.Estimate, e.Estimate, hl.estLo, hl.estHi)
		}
		if !(a.Interval[0] <= e.Interval[0] && e.Interval[1] <= a.Interval[1]) {
			t.Errorf("%s: interval %v does not hold the requests' %v", e.Metric, a.Interval, e.Interval)
		}
		if !strings.Contains(a.Note, fmt.Sprintf("%d per octave", loglin.PerOctave)) {
			t.Errorf("%s: the note does not state the bins' resolution: %s", e.Metric, a.Note)
		}
		t.Logf("%s: U %.7g / %.7g, p %.3g / %.3g, shift %.4g ms / %.4g ms [%.4g, %.4g], interval [%.4g, %.4g] / [%.4g, %.4g] ms (requests / aggregate)",
			e.Metric, float64(e.Statistic), float64(a.Statistic), float64(e.PValue), float64(a.PValue), 1e3*float64(e.Estimate), 1e3*float64(a.Estimate),
			1e3*hl.estLo, 1e3*hl.estHi, 1e3*float64(e.Interval[0]), 1e3*float64(e.Interval[1]), 1e3*float64(a.Interval[0]), 1e3*float64(a.Interval[1]))
	}
	if n != 3 {
		t.Errorf("%d Mann-Whitney diagnostics from the requests, want 3", n)
	}
}

func curvesAgree(t *testing.T, rr, ra *Report) {
	t.Helper()
	if len(ra.Distributions.Probs) != len(rr.Distributions.Probs) {
		t.Fatalf("%d probabilities, requests %d", len(ra.Distributions.Probs), len(rr.Distributions.Probs))
	}
	for _, c := range []struct {
		name string
		a, e []Num
	}{{"ttft baseline", ra.Distributions.TTFT.Baseline, rr.Distributions.TTFT.Baseline}, {"ttft canary", ra.Distributions.TTFT.Canary, rr.Distributions.TTFT.Canary},
		{"tpot baseline", ra.Distributions.TPOT.Baseline, rr.Distributions.TPOT.Baseline}, {"tpot canary", ra.Distributions.TPOT.Canary, rr.Distributions.TPOT.Canary}} {
		if len(c.a) != len(c.e) {
			t.Errorf("%s: %d points, requests %d", c.name, len(c.a), len(c.e))
			continue
		}
		for i := range c.e {
			if !inSameBin(float64(c.a[i]), float64(c.e[i])) {
				t.Errorf("%s at p=%v: %v, not in the bin of the requests' %v", c.name, ra.Distributions.Probs[i], c.a[i], c.e[i])
			}
		}
	}
}

func naiveAgree(t *testing.T, rr, ra *Report, mixed bool) {
	t.Helper()
	for _, e := range rr.Metrics {
		if e.Class != "" || isEfficiencyMetric(e.Name) {
			continue
		}
		a, ok := metricNamed(ra, e.Name)
		if !ok {
			continue
		}
		if (a.Naive != nil) != (e.Naive != nil) && (mixed || e.Naive == nil) {
			// without a mix difference the request path standardizes to
			// a mix that equals the canary's own, the aggregate does not
			// reweight: a naive line on the request path alone is fine
			t.Errorf("%s: naive comparison on the aggregate %v, on the requests %v", e.Name, a.Naive != nil, e.Naive != nil)
			continue
		}
		if a.Naive == nil || e.Naive == nil {
			continue
		}
		tol := 0.001
		if strings.Contains(e.Name, "_p") {
			tol = 0.015
		}
		if d := math.Abs(float64(a.Naive.Delta - e.Naive.Delta)); !(d <= tol) {
			t.Errorf("%s: naive delta %+.5f, requests %+.5f: apart by more than %g", e.Name, float64(a.Naive.Delta), float64(e.Naive.Delta), tol)
		}
		t.Logf("%s: naive delta %+.5f / %+.5f (requests / aggregate)", e.Name, float64(e.Naive.Delta), float64(a.Naive.Delta))
		if got, want := AdjustedLabelOf(a), AdjustedLabelOf(e); got != want {
			t.Errorf("%s: adjusted as %q, requests %q", e.Name, got, want)
		}
	}
}

// AdjustedLabelOf names the reweighting a gate's Adjusted notes declare, in
// the words the renderers key on.
func AdjustedLabelOf(m Metric) string {
	var out []string
	for _, a := range m.Adjusted {
		switch {
		case strings.HasPrefix(a, "standardized to the"):
			out = append(out, "standardized")
		case strings.HasPrefix(a, "quantiles of the"):
			out = append(out, "mix-weighted")
		}
	}
	return strings.Join(out, "+")
}

// TestAggregateSeriesMarksWarmup: the aggregate's time series holds the
// slices of the warm-up cut, marked, as the request path's does, from the
// arm's first slice on; the canary's is as counted (integers, not
// reweighted) and the distributions hold no empty point.
func TestAggregateSeriesMarksWarmup(t *testing.T) {
	p := chat(t)
	p.Window.Warmup = "60s"
	b := synth{n: 20000, rate: 50, ttftMed: 0.3, tpotMed: 0.03, errShare: 0.002, replicas: 3, seed: 1, longShare: 0.1}
	c := b
	c.seed, c.longShare = 2, 0.3
	bd, cd := b.dataset(sources.Baseline), c.dataset(sources.Canary)
	cfg := Config{Policy: p, Resamples: 200}
	rr, ra := judgedBothWays(t, bd, cd, cfg)
	cuts := func(pts []Point) (n int) {
		for i, pt := range pts {
			if pt.Cut {
				if i != n {
					t.Errorf("cut point %d after an analysed one", i)
				}
				n++
			}
		}
		return n
	}
	for _, arm := range []struct {
		name string
		a, e []Point
		raw  *sources.Dataset
	}{{"baseline", ra.Series.Baseline, rr.Series.Baseline, bd}, {"canary", ra.Series.Canary, rr.Series.Canary, cd}} {
		if ca, ce := cuts(arm.a), cuts(arm.e); ca == 0 || ca < ce-1 || ca > ce+1 {
			t.Errorf("%s: %d cut points, requests %d", arm.name, ca, ce)
		}
		if len(arm.a) == 0 || arm.a[0].T != 0 {
			t.Fatalf("%s: series does not start at 0: %+v", arm.name, arm.a[:min(1, len(arm.a))])
		}
		var offered int64
		for _, pt := range arm.a {
			offered += pt.Offered
		}
		if offered != int64(len(arm.raw.Requests)) {
			t.Errorf("%s: series offers %d requests, the records %d", arm.name, offered, len(arm.raw.Requests))
		}
	}
	for _, q := range [][]Num{ra.Distributions.TTFT.Baseline, ra.Distributions.TTFT.Canary, ra.Distributions.TPOT.Baseline, ra.Distributions.TPOT.Canary} {
		for i, v := range q {
			if math.IsNaN(float64(v)) || (i > 0 && v < q[i-1]) {
				t.Fatalf("distribution point %d: %v (curve %v…)", i, v, q[:min(3, len(q))])
			}
		}
	}
}
