package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/sources"
)

// The -update flag is defined by the golden package that teatest imports;
// updating reports whether it was given.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// fixedNow is the injected clock of every test.
func fixedNow() time.Time { return time.Date(2026, 11, 29, 14, 30, 0, 0, time.FixedZone("CET", 3600)) }

// probs101 is 0, 0.01, …, 1.
func probs101() []analysis.Num {
	p := make([]analysis.Num, 101)
	for i := range p {
		p[i] = analysis.Num(float64(i) / 100)
	}
	return p
}

// lognormalCurve draws n lognormal latencies (median med seconds, shape
// sigma) with a seeded RNG and returns their quantiles at probs.
func lognormalCurve(seed uint64, n int, med, sigma float64, probs []analysis.Num) []analysis.Num {
	r := rand.New(rand.NewPCG(seed, 7))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = med * math.Exp(sigma*r.NormFloat64())
	}
	slices.Sort(xs)
	out := make([]analysis.Num, len(probs))
	for i, p := range probs {
		// type-7 quantile (linear interpolation between order statistics)
		h := float64(p) * float64(n-1)
		lo := int(math.Floor(h))
		hi := min(lo+1, n-1)
		out[i] = analysis.Num(xs[lo] + (h-float64(lo))*(xs[hi]-xs[lo]))
	}
	return out
}

// series builds 60 ten-second buckets with the first six in the warm-up cut.
func series(seed uint64, rps, attain, ttftP99 float64) []analysis.Point {
	r := rand.New(rand.NewPCG(seed, 11))
	pts := make([]analysis.Point, 60)
	for i := range pts {
		warm := i < 6
		off := int64(rps*10 + r.NormFloat64()*8)
		a := attain + r.NormFloat64()*0.01
		p99 := ttftP99 * (1 + 0.1*r.NormFloat64())
		if warm {
			a -= 0.25 * float64(6-i) / 6
			p99 *= 1 + 1.5*float64(6-i)/6
		}
		good := int64(math.Round(float64(off) * math.Min(1, a)))
		pts[i] = analysis.Point{
			T: analysis.Num(10 * i), Offered: off, Good: good, GoodputRPS: analysis.Num(float64(good) / 10),
			TTFTP50: analysis.Num(p99 / 3), TTFTP99: analysis.Num(p99), Cut: warm,
		}
	}
	return pts
}

func arm(offered, rejected, canceled, failed, good int64, window float64, p99 float64) analysis.ArmSummary {
	completed := offered - rejected - canceled - failed
	cost := analysis.Num(0.0021)
	return analysis.ArmSummary{
		Accounting: analysis.Accounting{
			Offered: offered, Admitted: offered - rejected, Rejected: rejected, Canceled: canceled,
			Failed: failed, Completed: completed, Good: good, Retries: offered / 100,
		},
		GoodputRPS:         analysis.Num(float64(good) / window),
		SLOAttainment:      analysis.Num(float64(good) / float64(offered)),
		TokenGoodputTPS:    analysis.Num(float64(good) * 180 / window),
		ThroughputRPS:      analysis.Num(float64(completed) / window),
		OutputTokensPS:     analysis.Num(float64(completed) * 175 / window),
		RetryAmplification: 1.01,
		WindowSeconds:      analysis.Num(window),
		Window:             analysis.Window{Start: "2026-11-29T10:01:00Z", End: "2026-11-29T10:10:00Z", Seconds: analysis.Num(window)},
		WarmupCutSeconds:   60,
		Replicas:           4,
		ReplicaSeconds:     analysis.Num(4 * window),
		GoodputPerReplica:  analysis.Num(float64(good) / window / 4),
		CacheHitRate:       0.31,
		Latency: analysis.Latency{
			TTFT: analysis.Quantiles{N: completed, Mean: 0.21, P50: 0.18, P90: 0.41, P95: 0.55, P99: analysis.Num(p99)},
			TPOT: analysis.Quantiles{N: completed, Mean: 0.031, P50: 0.029, P90: 0.045, P95: 0.052, P99: 0.071},
			E2E:  analysis.Quantiles{N: completed, Mean: 5.9, P50: 5.1, P90: 9.8, P95: 11.2, P99: 15.3},
		},
		CostPerGoodRequest: &cost,
		Cost: &analysis.ArmCost{Source: "records", AcceleratorUSD: cost * 8000, HostUSD: cost * 1500, NetworkUSD: cost * 100,
			IdleReserveUSD: cost * 400, TotalUSD: cost * 10000, PerGoodRequest: cost, PerMillionGoodTokens: cost * 4000, GoodRequestsPerDollar: 1 / cost},
		GPUUtilization: analysis.Num(math.NaN()),
	}
}

// gate builds a gate; iv is the interval of Delta.
func gate(name string, v analysis.Verdict, guard bool, dir, scale, unit string, b, c, lo, hi, margin float64) analysis.Metric {
	d := c - b
	if scale == "relative" {
		d = c/b - 1
	}
	return analysis.Metric{
		Name: name, Verdict: v, Guardrail: guard, Direction: dir, Scale: scale, Unit: unit,
		Baseline: analysis.Num(b), Canary: analysis.Num(c), Delta: analysis.Num(d),
		Interval: [2]analysis.Num{analysis.Num(lo), analysis.Num(hi)}, Margin: analysis.Num(margin),
		PFail: 0.41, NBaseline: 10800, NCanary: 10650, Buckets: [2]int{54, 54},
		Method: "bucket bootstrap (2000 resamples, seed 1)", Reason: "interval clear of the margin", Adjusted: []string{"warmup"},
	}
}

// richReport is the review's test report: a failing comparison with a
// passing, a failing and an inconclusive gate (with Naive and MoreData),
// guardrails, three classes (one with a hostile name), 60-point series with
// a warm-up cut and 101-point distributions. It is deterministic.
func richReport() *analysis.Report {
	probs := probs101()
	att := gate("slo_attainment", analysis.Pass, false, "higher_is_better", "absolute", "fraction", 0.9512, 0.9489, -0.0071, 0.0025, 0.01)
	att.PFail = 0.002
	att.Adjusted = []string{"warmup", "mix"}
	att.Naive = &analysis.NaiveComparison{Baseline: 0.9512, Canary: 0.9391, Delta: -0.0121, Interval: [2]analysis.Num{-0.0168, -0.0074}}
	att.Reason = "upper bound of harm 0.71 pp < margin 1 pp after reweighting to the reference mix"

	gpr := gate("goodput_per_replica", analysis.Inconclusive, false, "higher_is_better", "relative", "req/s/replica", 4.755, 4.689, -0.052, 0.024, 0.03)
	gpr.PFail = 0.21
	gpr.Reason = "interval [-5.2 %, +2.4 %] straddles the margin -3 %"
	gpr.Naive = &analysis.NaiveComparison{Baseline: 4.755, Canary: 4.61, Delta: -0.0305, Interval: [2]analysis.Num{-0.071, 0.01}}
	gpr.MoreData = &analysis.MoreData{Factor: 2.4, Requests: 30120, Minutes: 12.5}

	ttft := gate("ttft_p99_ratio", analysis.Fail, false, "lower_is_better", "relative", "s", 0.82, 1.04, 0.18, 0.36, 0.10)
	ttft.PFail = 0.0007
	ttft.Reason = "lower bound of harm +18 % > margin 10 %"

	tpot := gate("tpot_p95_ratio", analysis.Pass, false, "lower_is_better", "relative", "s", 0.052, 0.051, -0.05, 0.02, 0.05)
	cost := gate("cost_per_good_request", analysis.Pass, false, "lower_is_better", "relative", "USD", 0.0021, 0.00205, -0.06, 0.01, 0.03)
	errRate := gate("error_rate", analysis.Pass, true, "lower_is_better", "absolute", "fraction", 0.004, 0.0043, -0.0011, 0.0017, 0.005)
	errRate.Method = "newcombe"
	rej := gate("rejected_share", analysis.Pass, true, "lower_is_better", "absolute", "fraction", 0.001, 0.0009, -0.0008, 0.0006, 0.005)
	rej.Method = "newcombe"

	return &analysis.Report{
		SchemaVersion: analysis.SchemaVersion,
		Verdict:       analysis.Fail,
		Reasons: []string{
			"ttft_p99_ratio fails: canary TTFT p99 +26.8 % [+18 %, +36 %] exceeds the 10 % margin",
			"goodput_per_replica is inconclusive: about 12.5 more minutes would decide it",
			"SLO attainment passes only after mix reweighting (naive -1.21 pp)",
			"a fourth reason that the summary does not show",
		},
		Measurement: analysis.Measurement{
			Population:          "all offered requests, all classes",
			Location:            "client",
			CompletionCondition: "status ok (response finished)",
			Window:              analysis.Window{Start: "2026-11-29T10:01:00Z", End: "2026-11-29T10:10:00Z", Seconds: 540},
			BucketSeconds:       10,
			Clock:               "epoch",
			Confidence:          0.95,
			SLO: []analysis.ClassSLO{
				{Class: "chat-long", TTFT: 2, TPOT: 0.08},
				{Class: "chat-short", TTFT: 1, TPOT: 0.08},
			},
		},
		Arms: analysis.Arms{
			Baseline: arm(11250, 11, 23, 45, 10701, 540, 0.82),
			Canary:   arm(11110, 10, 31, 48, 10544, 540, 1.04),
		},
		Metrics: []analysis.Metric{att, gpr, ttft, tpot, cost, errRate, rej},
		Diagnostics: []analysis.Diagnostic{{
			Metric: "ttft", Method: "mann-whitney", Statistic: 5.1e7, PValue: 3e-9, QValue: 6e-9, Estimate: 0.031,
			Interval: [2]analysis.Num{0.024, 0.039}, NBaseline: 10800, NCanary: 10650, Note: "Hodges-Lehmann shift, s",
		}},
		Classes: []analysis.ClassRow{
			{Class: "chat-long", Baseline: analysis.ClassArm{Offered: 3375, Good: 3150, Share: 0.3, SLOAttainment: 0.9333, TTFTP99: 1.4, TPOTP99: 0.074},
				Canary: analysis.ClassArm{Offered: 3666, Good: 3380, Share: 0.33, SLOAttainment: 0.922, TTFTP99: 1.72, TPOTP99: 0.073}},
			{Class: "chat-short", Baseline: analysis.ClassArm{Offered: 7875, Good: 7551, Share: 0.7, SLOAttainment: 0.9589, TTFTP99: 0.61, TPOTP99: 0.061},
				Canary: analysis.ClassArm{Offered: 7444, Good: 7164, Share: 0.67, SLOAttainment: 0.9624, TTFTP99: 0.77, TPOTP99: 0.06}},
			{Class: "x\x1b[31mred\x1b[0m\x1b]0;title\x07\u202etxt", Baseline: analysis.ClassArm{Offered: 0, Share: 0, SLOAttainment: analysis.Num(math.NaN()), TTFTP99: analysis.Num(math.NaN()), TPOTP99: analysis.Num(math.NaN())},
				Canary: analysis.ClassArm{Offered: 0, Share: 0, SLOAttainment: analysis.Num(math.NaN()), TTFTP99: analysis.Num(math.NaN()), TPOTP99: analysis.Num(math.NaN())}},
		},
		Normalization: analysis.Normalization{Steps: []analysis.NormalizationStep{
			{Name: "warmup", Setting: "60s", Applied: true, Detail: "cut the first 60 s of each arm (6 buckets)"},
			{Name: "mix", Setting: "reference: baseline", Applied: true, Detail: "canary chat-long share 33 % vs 30 %; attainment delta -1.21 pp → -0.23 pp"},
			{Name: "cache", Setting: "off", Applied: false, Detail: "not requested"},
		}},
		Series: analysis.Series{
			BucketSeconds: 10,
			Baseline:      series(1, 20.8, 0.955, 0.8),
			Canary:        series(2, 20.6, 0.95, 1.0),
		},
		Distributions: analysis.Distributions{
			Probs: probs,
			TTFT: analysis.ArmQuantCurve{
				Baseline: lognormalCurve(3, 20000, 0.18, 0.55, probs),
				Canary:   lognormalCurve(4, 20000, 0.21, 0.6, probs),
			},
			TPOT: analysis.ArmQuantCurve{
				Baseline: lognormalCurve(5, 20000, 0.029, 0.3, probs),
				Canary:   lognormalCurve(6, 20000, 0.029, 0.28, probs),
			},
		},
		Warnings: []string{
			"canary replica pod-3 restarted at 10:04:12\x1b[2J; its in-flight requests count as failed",
			"traffic split 50.3/49.7 is within the 1 % tolerance",
		},
		Inputs: []sources.Input{
			{Path: "runs/baseline.jsonl", SHA256: "9f2c4a1be0d3c8a1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5", Format: "jsonl", Arm: "baseline", Count: 11250},
			{Path: "runs/canary.jsonl", SHA256: "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809", Format: "jsonl", Arm: "canary", Count: 11110},
		},
		Policy:      analysis.PolicyRef{Name: "chat", SHA256: "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00", Source: "builtin"},
		ToolVersion: "0.1.0-test",
		Judge:       "goodput",
	}
}

// reportJSON is richReport encoded as the JSON a judge would write.
// reviewModel opens the review of rep as the golden tests do: the report
// read from runs/report.json, the record to runs/report.review.json,
// reviewer ada, the fixed clock, no colour, writes kept in memory and no
// earlier record on disk.
func reviewModel(t testing.TB, rep *analysis.Report) Model {
	t.Helper()
	return reviewModelNamed(t, rep, "runs/report.json", "runs/report.review.json")
}

// reviewModelNamed is reviewModel with the report's name and the record's
// path given.
func reviewModelNamed(t testing.TB, rep *analysis.Report, name, record string) Model {
	t.Helper()
	m, err := New(Options{
		Report: rep, ReportBytes: reportJSON(t, rep), ReportName: name,
		RecordPath: record, Reviewer: "ada", Now: fixedNow, NoColor: true,
		WriteFile: (&fakeWriter{}).write,
		ReadFile:  func(context.Context, string) ([]byte, error) { return nil, os.ErrNotExist },
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func reportJSON(t testing.TB, r *analysis.Report) []byte {
	t.Helper()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestReportFixture keeps testdata/report.json (read by the review
// command's tests) equal to richReport; regenerate with -update.
func TestReportFixture(t *testing.T) {
	got := reportJSON(t, richReport())
	path := filepath.Join("testdata", "report.json")
	if updating() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestReportFixture -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from richReport(); run go test -run TestReportFixture -update", path)
	}
	var back analysis.Report
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Distributions.Probs) != 101 || len(back.Series.Baseline) != 60 {
		t.Fatalf("fixture shape: %d probs, %d points", len(back.Distributions.Probs), len(back.Series.Baseline))
	}
}
