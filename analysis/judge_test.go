package analysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// synth makes an arm of n requests arriving at rate per second from t0,
// with lognormal TTFT around ttftMed and TPOT around tpotMed (seconds), a
// share of errors, and optional replicas.
type synth struct {
	n                int
	rate             float64
	ttftMed, tpotMed float64
	errShare         float64
	replicas         int
	seed             uint64
	longShare        float64 // share of prompts ≥ 8192 tokens
	// long-prompt medians (0 = same as the short ones)
	longTTFTMed, longTPOTMed float64
}

func (s synth) dataset(arm sources.Arm) *sources.Dataset {
	rng := rand.New(rand.NewPCG(s.seed, 7))
	ds := &sources.Dataset{Arm: arm, Clock: sources.ClockEpoch, Location: "client"}
	t := 1.7e9
	for i := 0; i < s.n; i++ {
		t += rng.ExpFloat64() / s.rate
		r := sources.NewRequest()
		r.Time = t
		r.Status = sources.StatusOK
		r.PromptTokens = 500
		if rng.Float64() < s.longShare {
			r.PromptTokens = 9000
		}
		r.OutputTokens = 50 + int64(rng.IntN(200))
		ttftMed, tpotMed := s.ttftMed, s.tpotMed
		if r.PromptTokens >= 8192 && s.longTTFTMed > 0 {
			ttftMed, tpotMed = s.longTTFTMed, s.longTPOTMed
		}
		if rng.Float64() < s.errShare {
			r.Status = sources.StatusError
		} else {
			r.TTFT = ttftMed * math.Exp(0.4*rng.NormFloat64())
			r.TPOT = tpotMed * math.Exp(0.15*rng.NormFloat64())
			r.E2E = r.TTFT + r.TPOT*float64(r.OutputTokens-1)
		}
		if s.replicas > 0 {
			r.Replica = string(rune('a' + i%s.replicas))
		}
		ds.Requests = append(ds.Requests, r)
	}
	return ds
}

func chat(t *testing.T) *policies.Policy {
	t.Helper()
	p, err := policies.Builtin("chat")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func judge(t *testing.T, p *policies.Policy, b, c synth) *Report {
	t.Helper()
	r, err := Judge(b.dataset(sources.Baseline), c.dataset(sources.Canary), Config{Policy: p, Resamples: 400})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func metric(t *testing.T, r *Report, name string) Metric {
	t.Helper()
	for _, m := range r.Metrics {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no metric %s", name)
	return Metric{}
}

func TestJudgeVerdicts(t *testing.T) {
	base := synth{n: 60000, rate: 50, ttftMed: 0.3, tpotMed: 0.04, errShare: 0.001, replicas: 2, seed: 1}
	same := base
	same.seed = 2
	slowTPOT := same
	slowTPOT.tpotMed = 0.04 * 1.3
	small := synth{n: 60, rate: 2, ttftMed: 0.3, tpotMed: 0.04, seed: 3}
	errs := same
	errs.errShare = 0.05

	for _, tc := range []struct {
		name     string
		b, c     synth
		want     Verdict
		gate     string
		gateWant Verdict
	}{
		{"identical arms pass", base, same, Pass, "slo_attainment", Pass},
		{"TPOT 30% slower fails tpot_p99", base, slowTPOT, Fail, "tpot_p99", Fail},
		{"60 requests are inconclusive, never pass", small, small, Inconclusive, "slo_attainment", Inconclusive},
		{"5% errors fail the guardrail", base, errs, Fail, "error_rate", Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := judge(t, chat(t), tc.b, tc.c)
			if r.Verdict != tc.want {
				t.Errorf("verdict %s, want %s; reasons %q", r.Verdict, tc.want, r.Reasons)
			}
			if m := metric(t, r, tc.gate); m.Verdict != tc.gateWant {
				t.Errorf("%s: %s, want %s (%s)", tc.gate, m.Verdict, tc.gateWant, m.Reason)
			}
		})
	}
}

func TestAccountingIdentities(t *testing.T) {
	ds := synth{n: 2000, rate: 10, ttftMed: 0.5, tpotMed: 0.05, errShare: 0.02, seed: 4}.dataset(sources.Canary)
	// add the other outcomes and retries
	for i := range ds.Requests {
		switch i % 50 {
		case 1:
			ds.Requests[i].Status = sources.StatusRejected
		case 2:
			ds.Requests[i].Status = sources.StatusCanceled
		case 3:
			ds.Requests[i].Status = sources.StatusTimeout
		case 4:
			ds.Requests[i].Attempt = 2
		}
	}
	b := synth{n: 2000, rate: 10, ttftMed: 0.5, tpotMed: 0.05, seed: 5}.dataset(sources.Baseline)
	r, err := Judge(b, ds, Config{Policy: chat(t)})
	if err != nil {
		t.Fatal(err)
	}
	a := r.Arms.Canary.Accounting
	if a.Offered != 2000 || a.Offered != a.Admitted+a.Rejected || a.Admitted != a.Canceled+a.Failed+a.Completed || a.Good > a.Completed {
		t.Fatalf("accounting broken: %+v", a)
	}
	if a.Rejected != 40 || a.Canceled != 40 || a.Retries != 40 {
		t.Errorf("rejected %d canceled %d retries %d, want 40 each", a.Rejected, a.Canceled, a.Retries)
	}
	if got, want := float64(r.Arms.Canary.RetryAmplification), 2000.0/1960; math.Abs(got-want) > 1e-12 {
		t.Errorf("retry amplification %v, want %v", got, want)
	}
	if got, want := float64(r.Arms.Canary.SLOAttainment), float64(a.Good)/2000; got != want {
		t.Errorf("attainment %v, want %v", got, want)
	}
}

func TestGoodCriteria(t *testing.T) {
	p := chat(t)
	cls := newClassifier(p)
	mk := func(f func(*sources.Request)) *sources.Request {
		r := sources.NewRequest()
		r.Status, r.TTFT, r.TPOT, r.PromptTokens, r.OutputTokens = sources.StatusOK, 0.5, 0.05, 100, 10
		f(&r)
		return &r
	}
	for _, tc := range []struct {
		name string
		r    *sources.Request
		good bool
	}{
		{"within both", mk(func(*sources.Request) {}), true},
		{"ttft exactly at the limit is good", mk(func(r *sources.Request) { r.TTFT = 1 }), true},
		{"ttft over", mk(func(r *sources.Request) { r.TTFT = 1.0001 }), false},
		{"tpot over", mk(func(r *sources.Request) { r.TPOT = 0.081 }), false},
		{"long prompt gets 4s ttft", mk(func(r *sources.Request) { r.PromptTokens = 9000; r.TTFT = 3.5 }), true},
		{"long prompt over 4s", mk(func(r *sources.Request) { r.PromptTokens = 9000; r.TTFT = 4.5 }), false},
		{"failed is never good", mk(func(r *sources.Request) { r.Status = sources.StatusError }), false},
		{"unknown ttft is not good", mk(func(r *sources.Request) { r.TTFT = math.NaN() }), false},
		{"one output token is not a good answer", mk(func(r *sources.Request) { r.OutputTokens = 1; r.TPOT = math.NaN() }), false},
		{"an empty answer is not good", mk(func(r *sources.Request) { r.OutputTokens = 0; r.TPOT = math.NaN() }), false},
		{"two output tokens are enough", mk(func(r *sources.Request) { r.OutputTokens = 2 }), true},
		{"unknown output length is judged on latency", mk(func(r *sources.Request) { r.OutputTokens = -1 }), true},
		{"unknown tpot with many tokens is not good", mk(func(r *sources.Request) { r.TPOT = math.NaN() }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unv := map[string]int64{}
			if got := isGood(cls.slos[cls.classOf(tc.r)], tc.r, unv); got != tc.good {
				t.Errorf("good = %v, want %v", got, tc.good)
			}
		})
	}
	// a policy may let one-token answers count (classification calls):
	// then TPOT, undefined for one token, is not required
	one := int64(1)
	p.SLO.MinOutputTokens = &one
	r := mk(func(r *sources.Request) { r.OutputTokens = 1; r.TPOT = math.NaN() })
	if !isGood(p.SLO, r, map[string]int64{}) {
		t.Error("with slo.min_output_tokens: 1 a one-token completion within the TTFT limit should be good")
	}
}

func TestDataErrors(t *testing.T) {
	p := chat(t)
	good := synth{n: 500, rate: 5, ttftMed: 0.3, tpotMed: 0.04, seed: 9}.dataset(sources.Baseline)
	empty := &sources.Dataset{Arm: sources.Canary, Clock: sources.ClockEpoch}
	allFail := synth{n: 100, rate: 5, errShare: 1, seed: 9}.dataset(sources.Baseline)
	goodCanary := synth{n: 500, rate: 5, ttftMed: 0.3, tpotMed: 0.04, seed: 10}.dataset(sources.Canary)
	for _, tc := range []struct {
		name string
		b, c *sources.Dataset
		want string
	}{
		{"no requests", good, empty, "canary: no requests"},
		{"a baseline that completed nothing", allFail, goodCanary, "baseline: no completed requests among 100 offered (100 error): there is nothing to compare the canary with"},
	} {
		_, err := Judge(tc.b, tc.c, Config{Policy: p})
		var de *DataError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want DataError containing %q", tc.name, err, tc.want)
		}
	}
	// a canary that completed nothing is judged: it fails
	broken := synth{n: 500, rate: 5, errShare: 1, seed: 11}.dataset(sources.Canary)
	r, err := Judge(good, broken, Config{Policy: p})
	if err != nil || r.Verdict != Fail {
		t.Fatalf("a canary whose every request failed: %v, %v; want a fail", r, err)
	}
	for _, m := range r.Metrics {
		if m.Name == "error_rate" && m.Verdict != Fail {
			t.Errorf("error_rate %s: %s", m.Verdict, m.Reason)
		}
	}
}

func TestDeterministicJSON(t *testing.T) {
	b := synth{n: 3000, rate: 10, ttftMed: 0.3, tpotMed: 0.04, seed: 11}
	c := synth{n: 3000, rate: 10, ttftMed: 0.32, tpotMed: 0.041, seed: 12}
	var out [2][]byte
	for i := range out {
		r := judge(t, chat(t), b, c)
		var err error
		if out[i], err = json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Fatal("two runs on the same inputs gave different reports")
	}
}

func TestFixedWarmupCut(t *testing.T) {
	p := chat(t)
	p.Window.Warmup = "60s"
	b := synth{n: 3000, rate: 10, ttftMed: 0.3, tpotMed: 0.04, seed: 13}
	r := judge(t, p, b, b)
	if got := r.Arms.Baseline.Accounting.Offered; got >= 3000 || got < 3000-800 {
		t.Errorf("offered after a 60 s cut = %d, want about 3000 − 600", got)
	}
	if float64(r.Arms.Baseline.WarmupCutSeconds) != 60 {
		t.Errorf("warmup_cut_s = %v", r.Arms.Baseline.WarmupCutSeconds)
	}
	if !r.Normalization.Steps[0].Applied {
		t.Errorf("warm-up step not marked applied: %+v", r.Normalization.Steps[0])
	}
}

// TestResamplingUnit: the measurement names the resampling unit of arms
// without arrival times instead of a time bucket they do not have.
func TestResamplingUnit(t *testing.T) {
	arm := func(pseudo bool, requests, buckets int) *armData {
		return &armData{pseudo: pseudo, ds: &sources.Dataset{Requests: make([]sources.Request, requests)}, buckets: make([]bucket, buckets)}
	}
	for _, tc := range []struct {
		name string
		b, c *armData
		want string
	}{
		{"timed", arm(false, 100, 10), arm(false, 100, 10), ""},
		{"each request", arm(true, 150, 150), arm(true, 150, 150), "each request"},
		{"runs", arm(true, 200, 8), arm(true, 200, 8), "runs of 25 consecutive requests in file order"},
		{"mixed", arm(false, 100, 10), arm(true, 40, 4), "baseline buckets of 10s, canary runs of 10 consecutive requests in file order"},
	} {
		if got := resamplingUnit(tc.b, tc.c, 10); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestNestedArmsWarning: the warning names the minutes both arms ran when
// the shorter ran at least half its run within the longer's, and nothing
// otherwise.
func TestNestedArmsWarning(t *testing.T) {
	for _, tc := range []struct {
		name           string
		lb, hb, lc, hc float64
		want           string
	}{
		{"canary within", 0, 3600, 1200, 1800, "the canary ran for 10 min within the baseline's 60 min"},
		{"baseline mostly within", 1000, 1600, 0, 1500, "the baseline ran for 10 min within the canary's 25 min"},
		{"the window to give", 1700000000.5, 1700003600, 1700001200.2, 1700001800.7, "give --start 2023-11-14T22:33:20Z --end 2023-11-14T22:43:21Z"},
		{"less than half of the shorter", 0, 3600, 3000, 4400, ""},
		{"one after the other", 0, 600, 700, 1300, ""},
	} {
		got := nestedArmsWarning(armSpan{first: tc.lb, last: tc.hb}, armSpan{first: tc.lc, last: tc.hc})
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
