package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// TestTrendCheck: a canary whose token time grows through the run (a leak:
// +0% at the start, +40% at the end, +20% on average) gets a failing
// tpot_p99_trend guardrail that names the leak; the same arms without the
// leak get no trend row; a leak that ends within the margin is named and
// passes.
func TestTrendCheck(t *testing.T) {
	base := synth{n: 36000, rate: 20, ttftMed: 0.3, tpotMed: 0.04, replicas: 2, seed: 71}
	other := base
	other.seed = 72
	leak := func(growth float64) *sources.Dataset {
		ds := other.dataset(sources.Canary)
		t0, t1 := ds.Requests[0].Time, ds.Requests[len(ds.Requests)-1].Time
		for i := range ds.Requests {
			r := &ds.Requests[i]
			f := 1 + growth*(r.Time-t0)/(t1-t0)
			r.TPOT *= f
			r.E2E = r.TTFT + r.TPOT*float64(r.OutputTokens-1)
		}
		return ds
	}
	find := func(r *Report, name string) (Metric, bool) {
		for _, m := range r.Metrics {
			if m.Name == name {
				return m, true
			}
		}
		return Metric{}, false
	}
	for _, tc := range []struct {
		name   string
		growth float64
		want   Verdict // "" = no trend row
	}{
		{"no leak", 0, ""},
		{"leak to +40%", 0.4, Fail},
		{"trend to +8%, within the 10% margin", 0.08, Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Judge(base.dataset(sources.Baseline), leak(tc.growth), Config{Policy: chat(t), Resamples: 200})
			if err != nil {
				t.Fatal(err)
			}
			m, ok := find(r, "tpot_p99_trend")
			if tc.want == "" {
				for _, m := range r.Metrics {
					if strings.HasSuffix(m.Name, "_trend") {
						t.Errorf("A/A arms got a trend row: %s %s: %s", m.Name, m.Verdict, m.Reason)
					}
				}
				return
			}
			if !ok {
				t.Fatalf("no tpot_p99_trend row; reasons %q", r.Reasons)
			}
			if m.Verdict != tc.want || !m.Guardrail || !strings.Contains(m.Reason, "worse through the window") {
				t.Errorf("tpot_p99_trend %s, want %s: %s", m.Verdict, tc.want, m.Reason)
			}
			if tc.want == Fail && (r.Verdict != Fail || !strings.Contains(m.Reason, "leak")) {
				t.Errorf("a leak must fail and be named: verdict %s, %s", r.Verdict, m.Reason)
			}
			if tc.want == Fail && !(float64(m.Delta) > 0.3 && float64(m.Delta) < 0.5) {
				t.Errorf("end-of-window difference %+.1f%%, want about +40%%", 100*float64(m.Delta))
			}
		})
	}
}

// TestTrendOnStandardizedLevel: a canary with fewer long requests (35% →
// 10%, so 13% shorter outputs as counted, nothing as standardized) whose
// outputs also shorten by up to 4% through the run: the output-length
// trend is real and significant, but it ends within the 5% margin. The
// trend row, on both paths, is standardized segment by segment and
// passes, named; on the counted level it ended at about −16% and failed
// the run for a mix the gates standardize away.
func TestTrendOnStandardizedLevel(t *testing.T) {
	const seed = 11
	bf, c := aaFleet(seed), aaFleet(seed)
	bf.rate, c.rate = 80, 80
	c.longShare, c.outputDrift = 0.10, -0.04
	b, cd := fleetArms(bf, c, seed)
	onGrid(b, cd)
	exact, agg := judgedBothWays(t, b, cd, Config{Policy: chat(t), Resamples: 300})
	for _, r := range []*Report{exact, agg} {
		m, ok := metricNamed(r, "output_tokens_mean_trend")
		if !ok {
			t.Fatalf("no output_tokens_mean_trend row: the trend was not seen; reasons %q", r.Reasons)
		}
		if m.Verdict != Pass || !(float64(m.Delta) > -0.05 && float64(m.Delta) < -0.01) {
			t.Errorf("output_tokens_mean_trend %s %+.4f, want pass near −3%%: %s", m.Verdict, float64(m.Delta), m.Reason)
		}
		if !strings.Contains(strings.Join(m.Adjusted, "; "), "each segment standardized to the reference mix") {
			t.Errorf("the standardization is not said: %q", m.Adjusted)
		}
		if g, _ := metricNamed(r, "output_tokens_mean"); g.Naive == nil || !(float64(g.Naive.Delta) < -0.1) {
			t.Errorf("the gate's counted difference is not the mix's: %+v", g.Naive)
		}
	}
}

// TestConditionalRows: the rows a check adds only when it found something
// are named apart from the gates they watch, and only they are.
func TestConditionalRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"tpot_p99_trend", true},
		{"slo_attainment_trend", true},
		{"attainment_dip", true},
		{"tpot_p99", false},
		{"ttft_p99:chat", false},
		{"slo_attainment", false},
		{"warmup_completed", false},
	} {
		if got := (Metric{Name: tc.name}).Conditional(); got != tc.want {
			t.Errorf("Metric{Name: %q}.Conditional() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTrendMixDrift: a canary whose share of long requests drifts from 35%
// to 5% through the run, every class unchanged: its counted mean output
// length falls through the run, but no trend row fails, on either path,
// since each segment is standardized on its own (the fleet model's
// mix-drift case failed output_tokens_mean_trend in 39 of 40 runs when the
// segments were counted).
func TestTrendMixDrift(t *testing.T) {
	const seed = 17
	c := aaFleet(seed)
	c.longShareEnd = 0.05
	b, cd := fleetArms(aaFleet(seed), c, seed)
	onGrid(b, cd)
	exact, agg := judgedBothWays(t, b, cd, Config{Policy: chat(t), Resamples: 300})
	for _, r := range []*Report{exact, agg} {
		for _, m := range r.Metrics {
			if strings.HasSuffix(m.Name, "_trend") && m.Verdict == Fail {
				t.Errorf("%s fails on a drifting mix: %s", m.Name, m.Reason)
			}
		}
		if r.Verdict == Fail {
			t.Errorf("a drifting mix failed: %q", r.Reasons)
		}
	}
}

// TestTrendInflatedBySlowdowns: the same segments of a gate judged with
// the paired bucket series of a persistent slowdown (an AR(1) of φ 0.9 per
// 10 s bucket in the canary's good share, or in its share of token times
// past its p99) and with white ones. The white buckets leave the row as
// the segments alone give it (variance factor 1); the persistent ones
// widen the row's interval by the factor's square root, raise its p-value
// and say so in its adjustments, naming the series read.
func TestTrendInflatedBySlowdowns(t *testing.T) {
	p := chat(t)
	const nb, secs = 180, 10.0
	for _, tc := range []struct {
		metric string
		// the segment's point of both arms at position k (0 … 8)
		point func(k float64) trendPoint
		// the per-bucket count of both arms' series (of 200) and what the
		// adjustment names
		level float64
		said  string
	}{
		// the canary's attainment falls by 0.4 pp per segment, with a wiggle
		{"slo_attainment", func(k float64) trendPoint {
			return exactTrendPoint(0.95, 0.95-0.004*k+0.002*math.Sin(3*k), 2000, 2000)
		}, 190, "the paired slo_attainment residuals"},
		// the canary's p99 token time climbs by 1.5% per segment
		{"tpot_p99", func(k float64) trendPoint {
			return exactTrendPoint(0.08, 0.08*(1+0.015*k+0.008*math.Sin(3*k)), 2000, 2000)
		}, 2, "the paired shares of each arm's tpot values past its window's p99"},
	} {
		t.Run(tc.metric, func(t *testing.T) {
			segment := func(metric string, _ policies.MetricInfo, lo, hi int) (trendPoint, bool) {
				if metric != tc.metric {
					return trendPoint{}, false
				}
				return tc.point(float64(lo) / float64(nb) * 8), true
			}
			rng := rand.New(rand.NewPCG(9, 9))
			series := func(phi float64) stats.Ratio {
				r := stats.Ratio{Num: make([]float64, nb), Den: make([]float64, nb)}
				var z float64
				for t := range nb {
					z = phi*z + rng.NormFloat64()
					r.Num[t], r.Den[t] = tc.level*(1+0.01*z), 200
				}
				return r
			}
			flat := stats.Ratio{Num: make([]float64, nb), Den: make([]float64, nb)}
			for t := range nb {
				flat.Num[t], flat.Den[t] = tc.level, 200
			}
			judged := func(c stats.Ratio) Metric {
				t.Helper()
				buckets := func(metric string, _ policies.MetricInfo) (stats.Ratio, stats.Ratio, bool) {
					if metric != tc.metric {
						return stats.Ratio{}, stats.Ratio{}, false
					}
					return c, flat, true
				}
				if c.Num == nil {
					buckets = nil
				}
				out, _ := trendEvals(p, nb, secs, nil, nil, segment, buckets)
				for _, e := range out {
					if e.m.Name == tc.metric+trendSuffix {
						return e.m
					}
				}
				t.Fatalf("no %s row among %d", tc.metric+trendSuffix, len(out))
				return Metric{}
			}
			plain, white, slow := judged(stats.Ratio{}), judged(series(0)), judged(series(0.9))
			width := func(m Metric) float64 { return float64(m.Interval[1] - m.Interval[0]) }
			if white.Reason != plain.Reason || width(white) != width(plain) || len(white.Adjusted) != len(plain.Adjusted) {
				t.Errorf("white buckets moved the row:\n%s %v\n%s %v", plain.Reason, plain.Adjusted, white.Reason, white.Adjusted)
			}
			said := strings.Join(slow.Adjusted, "; ")
			if !strings.Contains(said, "the line's variance multiplied by") || !strings.Contains(said, tc.said) {
				t.Errorf("the inflation is not said: %q", slow.Adjusted)
			}
			if !(width(slow) > 1.1*width(plain)) || slow.Reason == plain.Reason {
				t.Errorf("persistent buckets did not widen the row: width %.5f against %.5f\n%s", width(slow), width(plain), slow.Reason)
			}
		})
	}
}

// TestPastQuantile: a latency quantile's per-bucket counts for the trend's
// inflation are the values in or above the log-linear bin of the arm's
// quantile over every bucket given (a missing bucket counts nothing), out
// of all the bucket's values.
func TestPastQuantile(t *testing.T) {
	info := policies.MetricInfo{Latency: "ttft", Quantile: 0.75}
	// 12 values; the 0.75 quantile is the 9th smallest, 0.9
	buckets := []*bucket{
		{ttft: []float64{0.1, 0.2, 0.3, 0.95}},
		nil,
		{ttft: []float64{0.4, 0.5, 0.6, 0.7}},
		{ttft: []float64{0.8, 0.9, 0.9, 2.0}},
	}
	num, den := pastQuantile(buckets, info)
	for i, want := range [][2]float64{{1, 4}, {0, 0}, {0, 4}, {3, 4}} {
		b := buckets[i]
		if b == nil {
			b = &bucket{}
		}
		if got := [2]float64{num(b), den(b)}; got != want {
			t.Errorf("bucket %d: %v past the quantile, want %v", i, got, want)
		}
	}
	// the bin's lower edge, not the value, is the threshold: 0.9 lies in
	// (2^(−39/256), 2^(−38/256)] = (0.89979, 0.90223], so 0.8999 below it
	// counts and 0.8997, a bin lower, does not
	in, below := &bucket{ttft: []float64{0.8999}}, &bucket{ttft: []float64{0.8997}}
	if num(in) != 1 || num(below) != 0 {
		t.Errorf("within the quantile's bin %g, a bin below %g: want 1 and 0", num(in), num(below))
	}
	// no values: nothing counts
	num, _ = pastQuantile([]*bucket{{}}, info)
	if got := num(&bucket{ttft: []float64{1}}); got != 0 {
		t.Errorf("an arm without values counted %g past its quantile", got)
	}
}
