package comparators

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/report"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// The hand-computed cases use canary {10,20,30,40} against baseline
// {1,2,3,4}: the 16 differences are 6…9, 16…19, 26…29, 36…39, so the
// Hodges-Lehmann estimate is (19+26)/2 = 22.5 and, at 95% with 4 + 4 points
// (P0(U = 0) = 1/70 ≤ 2.5% < P0(U ≤ 1) = 2/70), the interval is the full
// range [6, 39] — Kayenta's own documented example. The band is
// 0.25 × 22.5 = 5.625.
func TestClassifyBand(t *testing.T) {
	up := []float64{10, 20, 30, 40}
	base := []float64{1, 2, 3, 4}
	o95 := KayentaOptions{Confidence: 0.95}
	nan := math.NaN()
	tests := []struct {
		name      string
		x, y      []float64
		dir       string
		opt       KayentaOptions
		want      Classification
		est, lo   float64
		hi, band  float64
		checkNums bool
	}{
		{name: "interval above the band is High", x: up, y: base, dir: Either, opt: o95, want: ClassHigh, est: 22.5, lo: 6, hi: 39, band: 5.625, checkNums: true},
		{name: "direction decrease ignores an increase", x: up, y: base, dir: Decrease, opt: o95, want: ClassPass},
		{name: "mirror image is Low", x: base, y: up, dir: Either, opt: o95, want: ClassLow, est: -22.5, lo: -39, hi: -6, band: 5.625, checkNums: true},
		{name: "direction increase ignores a decrease", x: base, y: up, dir: Increase, opt: o95, want: ClassPass},
		// canary {5,20,30,40}: smallest difference 5−4 = 1 > 0 but below the band 5.625
		{name: "interval excludes 0 but not the band: Pass", x: []float64{5, 20, 30, 40}, y: base, dir: Either, opt: o95, want: ClassPass, est: 22.5, lo: 1, hi: 39, band: 5.625, checkNums: true},
		// mean ratio 25/2.5 = 10 < 12
		{name: "effect-size gate blocks High", x: up, y: base, dir: Either, opt: KayentaOptions{Confidence: 0.95, AllowedIncrease: 12}, want: ClassPass},
		{name: "effect-size gate at the ratio lets High through", x: up, y: base, dir: Either, opt: KayentaOptions{Confidence: 0.95, AllowedIncrease: 10}, want: ClassHigh},
		{name: "identical series", x: []float64{3, 1, 2}, y: []float64{1, 2, 3}, dir: Either, want: ClassPass, est: 0, lo: 0, hi: 0, band: 0, checkNums: true},
		{name: "one value overall", x: []float64{7, 7}, y: []float64{7, 7, 7}, dir: Either, want: ClassPass},
		{name: "two different constants compare directly", x: []float64{5, 5, 5}, y: []float64{3, 3, 3}, dir: Either, want: ClassHigh, est: 2, lo: 2, hi: 2, band: 0.5, checkNums: true},
		{name: "NaN points are removed", x: []float64{nan, 10, 20, 30, 40, nan}, y: base, dir: Either, opt: o95, want: ClassHigh},
		{name: "no canary data", x: []float64{nan, nan}, y: base, dir: Either, want: ClassNodata},
		{name: "no baseline data", x: up, y: nil, dir: Either, want: ClassNodata},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.x, tc.y, tc.dir, tc.opt)
			if got.Class != tc.want {
				t.Fatalf("class %s, want %s (%s)", got.Class, tc.want, got.Reason)
			}
			if tc.checkNums && (!near(got.Estimate, tc.est) || !near(got.Lo, tc.lo) || !near(got.Hi, tc.hi) || !near(got.Band, tc.band)) {
				t.Errorf("estimate %g [%g, %g] band %g, want %g [%g, %g] band %g", got.Estimate, got.Lo, got.Hi, got.Band, tc.est, tc.lo, tc.hi, tc.band)
			}
		})
	}
}

// At the default 98% with 10 + 10 points the interval must be narrower than
// 75% of the estimate for High: a 10% shift with 10% noise is not flagged,
// a clean 100% shift is.
func TestClassifyDefaults98(t *testing.T) {
	y := []float64{100, 92, 108, 95, 103, 99, 110, 90, 101, 97}
	small := make([]float64, len(y))
	large := make([]float64, len(y))
	for i, v := range y {
		small[i] = v*1.1 + float64(i%3-1)*8
		large[i] = v * 2
	}
	if got := Classify(small, y, Either, KayentaOptions{}); got.Class != ClassPass {
		t.Errorf("10%% shift in 10%% noise: %s (%s), want Pass", got.Class, got.Reason)
	}
	if got := Classify(large, y, Either, KayentaOptions{}); got.Class != ClassHigh {
		t.Errorf("doubled series: %s (%s), want High", got.Class, got.Reason)
	}
}

func TestScore(t *testing.T) {
	P, H, L, N := ClassPass, ClassHigh, ClassLow, ClassNodata
	tests := []struct {
		name     string
		classes  []Classification
		critical []bool
		want     float64
		override bool
	}{
		{"all pass", []Classification{P, P, P}, nil, 100, false},
		{"one of five High", []Classification{P, P, P, P, H}, nil, 80, false},
		{"High and Low", []Classification{P, P, P, H, L}, nil, 60, false},
		{"two thirds rounds half up", []Classification{P, P, H}, nil, 66.67, false},
		{"Nodata is not counted", []Classification{P, P, P, H, N}, nil, 75, false},
		{"half Nodata forces 0", []Classification{P, N, N, H}, nil, 0, true},
		{"critical High forces 0", []Classification{P, P, H}, []bool{false, false, true}, 0, true},
		{"critical Pass counts normally", []Classification{P, P, H}, []bool{true, false, false}, 66.67, false},
		{"nineteen of twenty", []Classification{P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, H}, nil, 95, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Score(tc.classes, tc.critical)
			if !near(got, tc.want) || (why != "") != tc.override {
				t.Errorf("score %g (%q), want %g (override %v)", got, why, tc.want, tc.override)
			}
		})
	}
}

func TestThresholdDecision(t *testing.T) {
	F, P, N := MeasureFail, MeasurePass, MeasureNoData
	tests := []struct {
		name  string
		ms    []Measurement
		limit int
		want  analysis.Verdict
	}{
		{"two failures reach the limit", []Measurement{F, P, F, P}, 2, analysis.Fail},
		{"one failure stays below it", []Measurement{F, P, P, P}, 2, analysis.Pass},
		{"limit 1 fails on the first", []Measurement{P, P, F}, 1, analysis.Fail},
		{"limit 3 tolerates two", []Measurement{F, F, P}, 3, analysis.Pass},
		{"no data at all", []Measurement{N, N, N}, 2, analysis.Inconclusive},
		{"mostly no data", []Measurement{N, N, N, P}, 2, analysis.Inconclusive},
		{"half with data passes", []Measurement{N, N, P, P}, 2, analysis.Pass},
		{"failures win over missing data", []Measurement{N, F, N, F}, 2, analysis.Fail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ThresholdDecision(tc.ms, tc.limit); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// minuteData builds an arm with n requests per minute for the given minutes;
// ttft(minute, i) and status(minute, i) set each request.
func minuteData(arm sources.Arm, minutes, n int, ttft func(m, i int) float64, status func(m, i int) sources.Status) *sources.Dataset {
	ds := &sources.Dataset{Arm: arm, Clock: sources.ClockEpoch, Location: "client", Duration: float64(minutes * 60)}
	for m := 0; m < minutes; m++ {
		for i := 0; i < n; i++ {
			r := sources.NewRequest()
			r.Time = 1.7e9 + float64(m*60) + float64(i)*60/float64(n)
			r.Status = status(m, i)
			if r.Status == sources.StatusOK {
				r.TTFT = ttft(m, i)
				r.OutputTokens = 100
				r.TPOT = 0.02 + 0.0001*float64(i%7)
				r.E2E = r.TTFT + 99*r.TPOT
			}
			r.PromptTokens = 500
			ds.Requests = append(ds.Requests, r)
		}
	}
	return ds
}

func okStatus(int, int) sources.Status { return sources.StatusOK }

func chat(t *testing.T) *policies.Policy {
	t.Helper()
	p, err := policies.Builtin("chat")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestThresholdJudge(t *testing.T) {
	p := chat(t)
	base := func(m, i int) float64 { return 0.2 + 0.001*float64(i%50) }
	slowIn := func(bad ...int) func(m, i int) float64 {
		return func(m, i int) float64 {
			for _, b := range bad {
				if m == b && i%10 == 0 { // 10% of the minute's requests take 2 s
					return 2
				}
			}
			return base(m, i)
		}
	}
	errorsIn := func(bad int) func(m, i int) sources.Status {
		return func(m, i int) sources.Status {
			if m == bad && i < 2 { // 2 of 100 = 98% success
				return sources.StatusError
			}
			return sources.StatusOK
		}
	}
	b := minuteData(sources.Baseline, 5, 100, base, okStatus)
	tests := []struct {
		name   string
		canary *sources.Dataset
		opt    ThresholdOptions
		want   analysis.Verdict
		ttft   analysis.Verdict
		succ   analysis.Verdict
	}{
		{"clean canary passes", minuteData(sources.Canary, 5, 100, base, okStatus), ThresholdOptions{}, analysis.Pass, analysis.Pass, analysis.Pass},
		{"one slow minute is tolerated", minuteData(sources.Canary, 5, 100, slowIn(2), okStatus), ThresholdOptions{}, analysis.Pass, analysis.Pass, analysis.Pass},
		{"two slow minutes fail", minuteData(sources.Canary, 5, 100, slowIn(1, 3), okStatus), ThresholdOptions{}, analysis.Fail, analysis.Fail, analysis.Pass},
		{"failure limit 3 tolerates two", minuteData(sources.Canary, 5, 100, slowIn(1, 3), okStatus), ThresholdOptions{FailureLimit: 3}, analysis.Pass, analysis.Pass, analysis.Pass},
		{"a 2 s limit tolerates them", minuteData(sources.Canary, 5, 100, slowIn(1, 3), okStatus), ThresholdOptions{TTFTP99Limit: 2 * time.Second}, analysis.Pass, analysis.Pass, analysis.Pass},
		{"98% success in one minute with limit 1", minuteData(sources.Canary, 5, 100, base, errorsIn(4)), ThresholdOptions{FailureLimit: 1}, analysis.Fail, analysis.Pass, analysis.Fail},
		{"98% success passes a 98% limit", minuteData(sources.Canary, 5, 100, base, errorsIn(4)), ThresholdOptions{FailureLimit: 1, SuccessRateLimit: 0.98}, analysis.Pass, analysis.Pass, analysis.Pass},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Threshold(b, tc.canary, p, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if r.Judge != "threshold" || r.Verdict != tc.want || len(r.Metrics) != 2 ||
				r.Metrics[0].Verdict != tc.ttft || r.Metrics[1].Verdict != tc.succ {
				t.Fatalf("judge %q verdict %s, metrics %+v; want %s (ttft %s, success %s)", r.Judge, r.Verdict, r.Metrics, tc.want, tc.ttft, tc.succ)
			}
			if len(r.Series.Canary) != 5 || r.Arms.Canary.Accounting.Offered != 500 {
				t.Errorf("series %d points, offered %d", len(r.Series.Canary), r.Arms.Canary.Accounting.Offered)
			}
		})
	}
}

func TestKayentaJudge(t *testing.T) {
	p := chat(t)
	ttft := func(scale float64) func(m, i int) float64 {
		return func(m, i int) float64 { return scale * (0.2 + 0.01*float64((i*7+m*3)%40)) }
	}
	b := minuteData(sources.Baseline, 20, 60, ttft(1), okStatus)
	same := minuteData(sources.Canary, 20, 60, ttft(1), okStatus)
	slower := minuteData(sources.Canary, 20, 60, ttft(1.5), okStatus)
	r, err := Kayenta(b, same, p, KayentaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Judge != "kayenta" || r.Verdict != analysis.Pass || len(r.Metrics) != len(DefaultKayentaMetrics()) {
		t.Fatalf("identical arms: judge %q verdict %s reasons %v", r.Judge, r.Verdict, r.Reasons)
	}
	// p99 TTFT 1.5× in every minute: only ttft_p99 is High (attainment and
	// goodput stay at 100% since 1.5 × 0.59 s < 1 s): score 80 → marginal.
	r, err = Kayenta(b, slower, p, KayentaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != analysis.Inconclusive || !strings.Contains(r.Reasons[0], "score 80.00") {
		t.Fatalf("slower canary: verdict %s reasons %v", r.Verdict, r.Reasons)
	}
	for _, m := range r.Metrics {
		want := analysis.Pass
		if m.Name == "ttft_p99" {
			want = analysis.Fail
		}
		if m.Verdict != want {
			t.Errorf("%s: %s (%s), want %s", m.Name, m.Verdict, m.Reason, want)
		}
	}
	// fewer than 50 points per metric: Kayenta's warning
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "fewer than 50 data points") {
		t.Errorf("no small-sample warning in %v", r.Warnings)
	}
	// the same report renders with every renderer
	var buf bytes.Buffer
	if err := report.Text(&buf, r, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := report.JSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&buf, r, report.MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"judge": "kayenta"`) && !strings.Contains(buf.String(), `"judge":"kayenta"`) {
		t.Errorf("JSON lacks the judge name")
	}
}

func TestComparatorInputErrors(t *testing.T) {
	p := chat(t)
	good := minuteData(sources.Baseline, 2, 10, func(int, int) float64 { return 0.1 }, okStatus)
	noTime := minuteData(sources.Canary, 2, 10, func(int, int) float64 { return 0.1 }, okStatus)
	for i := range noTime.Requests {
		noTime.Requests[i].Time = math.NaN()
	}
	agg := &sources.Dataset{Arm: sources.Canary, Agg: &sources.Aggregate{Step: 60}}
	empty := &sources.Dataset{Arm: sources.Canary}
	for _, c := range []*sources.Dataset{noTime, agg, empty} {
		_, err1 := Kayenta(good, c, p, KayentaOptions{})
		_, err2 := Threshold(good, c, p, ThresholdOptions{})
		var de *analysis.DataError
		if !errors.As(err1, &de) || !errors.As(err2, &de) {
			t.Errorf("want DataErrors, got %v and %v", err1, err2)
		}
	}
	if _, err := Kayenta(good, good, p, KayentaOptions{Metrics: []KayentaMetric{{Name: "nope"}}}); err == nil || !strings.Contains(err.Error(), "ttft_p99") {
		t.Errorf("unknown metric: %v", err)
	}
}

// The comparators count good requests with goodput's own rule: the long class of the chat policy gets 4 s
// for its first token, an answer of fewer than 2 output tokens is not good
// (slo.min_output_tokens), and an unknown latency is never good.
func TestGoodUsesClassSLO(t *testing.T) {
	p := chat(t)
	mk := func(prompt, out int64, ttft, tpot float64) *sources.Request {
		r := sources.NewRequest()
		r.Status, r.PromptTokens, r.OutputTokens, r.TTFT, r.TPOT = sources.StatusOK, prompt, out, ttft, tpot
		return r2p(r)
	}
	tests := []struct {
		name string
		r    *sources.Request
		want bool
	}{
		{"chat within SLO", mk(500, 100, 0.9, 0.05), true},
		{"chat slow first token", mk(500, 100, 1.5, 0.05), false},
		{"long prompt gets 4 s", mk(9000, 100, 3.5, 0.05), true},
		{"slow streaming", mk(500, 100, 0.5, 0.09), false},
		{"a single token is not an answer", mk(500, 1, 0.5, math.NaN()), false},
		{"two tokens are", mk(500, 2, 0.5, 0.05), true},
		{"unknown TTFT", mk(500, 100, math.NaN(), 0.05), false},
	}
	good := analysis.GoodFunc(p)
	for _, tc := range tests {
		if got := good(tc.r); got != tc.want {
			t.Errorf("%s: good = %v", tc.name, got)
		}
	}
}

func r2p(r sources.Request) *sources.Request { return &r }
