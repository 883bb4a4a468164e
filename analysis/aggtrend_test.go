package analysis

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// onGrid shifts both arms' arrivals so that the earlier first arrival lies
// on the absolute 10 s grid: the request path's buckets (from the earlier
// first arrival) and an aggregate's slices (absolute grid) then hold the
// same requests, and so do the trend check's segments.
func onGrid(b, c *sources.Dataset) {
	t0 := math.Min(b.Requests[0].Time, c.Requests[0].Time)
	d := math.Ceil(t0/10)*10 - t0
	for _, ds := range []*sources.Dataset{b, c} {
		for i := range ds.Requests {
			ds.Requests[i].Time += d
		}
	}
}

// TestAggregateTrendAgreesWithRequests judges the same records from the
// requests and from the exact aggregate a request scan builds of them: the
// same "<gate>_trend" rows appear with the same verdicts; a count or share
// trend has the same end-of-window figure, and a latency-quantile trend
// (segment quantiles read from log-linear bins) an interval that holds the
// exact one, its end figure within the bins' resolution.
func TestAggregateTrendAgreesWithRequests(t *testing.T) {
	p := chat(t)
	base := synth{n: 36000, rate: 20, ttftMed: 0.3, tpotMed: 0.04, replicas: 2, seed: 71, errShare: 0.002}
	other := base
	other.seed = 72
	leak := func(ds *sources.Dataset, tpot, errs float64) {
		t0, t1 := ds.Requests[0].Time, ds.Requests[len(ds.Requests)-1].Time
		for i := range ds.Requests {
			r := &ds.Requests[i]
			f := (r.Time - t0) / (t1 - t0)
			if r.Status == sources.StatusOK && errs > 0 && math.Mod(float64(i)*0.6180339887, 1) < errs*f {
				r.Status = sources.StatusError
				r.TTFT, r.TPOT, r.E2E = math.NaN(), math.NaN(), math.NaN()
				continue
			}
			if r.Status == sources.StatusOK {
				r.TPOT *= 1 + tpot*f
				r.E2E = r.TTFT + r.TPOT*float64(r.OutputTokens-1)
			}
		}
	}
	for _, tc := range []struct {
		name      string
		tpot, err float64
		want      map[string]Verdict
	}{
		{"no leak", 0, 0, map[string]Verdict{}},
		{"TPOT leak to +40%", 0.4, 0, map[string]Verdict{"tpot_p99_trend": Fail}},
		{"TPOT trend to +10%, within the margin", 0.1, 0, map[string]Verdict{"tpot_p99_trend": Pass}},
		{"TPOT trend to +12%, near the margin", 0.12, 0, map[string]Verdict{"tpot_p99_trend": Inconclusive}},
		{"errors growing to 4%", 0, 0.04, map[string]Verdict{"error_rate_trend": Fail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bd, cd := base.dataset(sources.Baseline), other.dataset(sources.Canary)
			leak(cd, tc.tpot, tc.err)
			onGrid(bd, cd)
			cfg := Config{Policy: p, Resamples: 300}
			rr, ra := judgedBothWays(t, bd, cd, cfg)
			trends := func(r *Report) map[string]Metric {
				out := map[string]Metric{}
				for _, m := range r.Metrics {
					if strings.HasSuffix(m.Name, "_trend") {
						out[m.Name] = m
					}
				}
				return out
			}
			tr, ta := trends(rr), trends(ra)
			for name, want := range tc.want {
				if m, ok := tr[name]; !ok || m.Verdict != want {
					t.Errorf("requests: %s %s (present %v), want %s: %s", name, m.Verdict, ok, want, m.Reason)
				}
			}
			for name, a := range ta {
				if _, ok := tr[name]; !ok {
					t.Errorf("%s (%s) on the aggregate, absent from the requests: %s", name, a.Verdict, a.Reason)
				}
			}
			for name, m := range tr {
				a, ok := ta[name]
				if !ok {
					t.Errorf("%s (%s) on the requests, absent from the aggregate", name, m.Verdict)
					continue
				}
				t.Logf("%s: requests %s %+.4f [%+.4f, %+.4f]; aggregate %s %+.4f [%+.4f, %+.4f]", name, m.Verdict, float64(m.Delta),
					float64(m.Interval[0]), float64(m.Interval[1]), a.Verdict, float64(a.Delta), float64(a.Interval[0]), float64(a.Interval[1]))
				if a.Verdict != m.Verdict {
					t.Errorf("%s: requests %s (%s), aggregate %s (%s)", name, m.Verdict, m.Reason, a.Verdict, a.Reason)
				}
				if strings.Contains(name, "_p") {
					if d := math.Abs(float64(a.Delta) - float64(m.Delta)); !(d <= 0.015) ||
						!(float64(a.Interval[0]) <= float64(m.Interval[0])+1e-12 && float64(m.Interval[1]) <= float64(a.Interval[1])+1e-12) {
						t.Errorf("%s: aggregate %+.5f %v does not hold the exact %+.5f %v within the bins' resolution", name, float64(a.Delta), a.Interval, float64(m.Delta), m.Interval)
					}
					continue
				}
				if d := math.Abs(float64(a.Delta) - float64(m.Delta)); !(d <= 1e-9) || a.NBaseline != m.NBaseline || a.NCanary != m.NCanary {
					t.Errorf("%s: delta requests %+.6f (n %d/%d), aggregate %+.6f (n %d/%d)", name, float64(m.Delta), m.NBaseline, m.NCanary,
						float64(a.Delta), a.NBaseline, a.NCanary)
				}
			}
			if rr.Verdict != ra.Verdict {
				t.Errorf("verdict: requests %s, aggregate %s", rr.Verdict, ra.Verdict)
			}
		})
	}
}

// TestMetricsTrendUnresolved: on metrics histograms whose buckets are far
// wider than the margin (a p99 known only within 0.1–0.2 s), the latency
// trends cannot be told from the bucket width: they are not followed, and
// a warning says so; counted gates (errors) are still followed.
func TestMetricsTrendUnresolved(t *testing.T) {
	b := aggArmData(sources.Baseline, 1, 240, 0.04, true)
	c := aggArmData(sources.Canary, 2, 240, 0.04, true)
	r, err := Judge(b, c, Config{Policy: chat(t), Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range r.Metrics {
		if strings.HasSuffix(m.Name, "_trend") && strings.Contains(m.Name, "_p") {
			t.Errorf("%s judged on coarse buckets: %s %s", m.Name, m.Verdict, m.Reason)
		}
	}
	w := strings.Join(r.Warnings, "\n")
	for _, g := range []string{"ttft_p99", "tpot_p99"} {
		if !strings.Contains(w, "the "+g+" trend is not checked on this data") {
			t.Errorf("no warning that the %s trend is not checked: %q", g, r.Warnings)
		}
	}
	if r.Verdict != Pass {
		t.Errorf("verdict %s on an A/A of metrics: %q", r.Verdict, r.Reasons)
	}
}
