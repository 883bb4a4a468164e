package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// exactSpec describes an arm aggregated from per-request records
// (Aggregate.Exact), built by hand: per 10 s slice on the absolute grid
// and per class, each request's outcome drawn at random, its latencies
// counted on log-linear bins.
type exactSpec struct {
	slices, perSlice                         int
	ttftMed, tpotMed                         float64
	good, fail, cancel, reject, retry, short float64 // shares: good of completed, short of completed, others of offered
	outMean                                  float64
	replicas                                 float64
	nanRetried, nanShort                     bool
	classes                                  []string // stratum keys; requests split evenly
	classTTFT                                map[string]float64
	ttftConst                                float64 // > 0: every TTFT is this value
	startSlice                               int
}

func aa() exactSpec {
	return exactSpec{slices: 90, perSlice: 250, ttftMed: 0.3, tpotMed: 0.03, good: 0.99, fail: 0.002, cancel: 0.002,
		reject: 0.002, retry: 0.005, short: 0.002, outMean: 200, replicas: 2, classes: []string{""}}
}

func exactArm(arm sources.Arm, seed uint64, s exactSpec) *sources.Dataset {
	rng := rand.New(rand.NewPCG(seed, 11))
	agg := &sources.Aggregate{Profile: "requests", Exact: true, Step: 10, AttemptKnown: true}
	t0 := 1.7e9
	for i := 0; i < s.slices; i++ {
		start := t0 + float64(s.startSlice+i)*10
		for _, cl := range s.classes {
			b := sources.AggBucket{Start: start, End: start + 10, Class: cl, Replicas: s.replicas,
				PrefixHits: math.NaN(), PrefixQueries: math.NaN(), CostPerHour: math.NaN(), GPUUtil: math.NaN(),
				Running: math.NaN(), Waiting: math.NaN(), KVUsage: math.NaN(), GPUPowerW: math.NaN(), GPUMemBytes: math.NaN()}
			var ttft, tpot loglin.Hist
			med := s.ttftMed
			if m, ok := s.classTTFT[cl]; ok {
				med = m
			}
			for k := 0; k < s.perSlice/len(s.classes); k++ {
				if rng.Float64() < s.retry {
					b.Retried++
				}
				u := rng.Float64()
				switch {
				case u < s.reject:
					b.Rejected++
					continue
				case u < s.reject+s.fail:
					b.Failed++
					continue
				case u < s.reject+s.fail+s.cancel:
					b.Canceled++
					continue
				}
				b.Completed++
				if rng.Float64() < s.good {
					b.Good++
				}
				if rng.Float64() < s.short {
					b.ShortOutputs++
				}
				b.OutputTokens += s.outMean * math.Exp(0.3*rng.NormFloat64()-0.045)
				v := med * math.Exp(0.3*rng.NormFloat64())
				if s.ttftConst > 0 {
					v = s.ttftConst
				}
				ttft.Add(v, 1)
				tpot.Add(s.tpotMed*math.Exp(0.2*rng.NormFloat64()), 1)
			}
			b.TTFT, b.TPOT = ttft.Cumulative(), tpot.Cumulative()
			if s.nanRetried {
				b.Retried = math.NaN()
			}
			if s.nanShort {
				b.ShortOutputs = math.NaN()
			}
			agg.Buckets = append(agg.Buckets, b)
		}
	}
	return &sources.Dataset{Arm: arm, Agg: agg, Clock: sources.ClockEpoch, Location: "client"}
}

func metricNamed(r *Report, name string) (Metric, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// TestExactAggregateGates: an aggregate built from per-request records is
// judged with the request path's gates on the chat policy — each gate the
// metrics path lacked fails on its own regression and passes on an A/A —
// with attainment counted (no bounds, no Fréchet), per-class SLOs taken as
// applied, and paired count gates on the shared grid.
func TestExactAggregateGates(t *testing.T) {
	p := chat(t)
	for _, tc := range []struct {
		name    string
		canary  func(*exactSpec)
		gate    string
		want    Verdict
		verdict Verdict
	}{
		{"A/A", func(*exactSpec) {}, "slo_attainment", Pass, Pass},
		{"retries up", func(s *exactSpec) { s.retry = 0.03 }, "retry_share", Fail, Fail},
		{"cancels up", func(s *exactSpec) { s.cancel = 0.03 }, "canceled_share", Fail, Fail},
		{"rejections up", func(s *exactSpec) { s.reject = 0.03 }, "rejected_share", Fail, Fail},
		{"errors up", func(s *exactSpec) { s.fail = 0.03 }, "error_rate", Fail, Fail},
		{"answers 20% shorter", func(s *exactSpec) { s.outMean = 160 }, "output_tokens_mean", Fail, Fail},
		{"canary offered 15% less per replica", func(s *exactSpec) { s.perSlice = 212 }, "offered_load_ratio", Fail, Fail},
		{"TTFT 30% slower", func(s *exactSpec) { s.ttftMed = 0.39 }, "ttft_p99", Fail, Fail},
		{"attainment 3 pp lower", func(s *exactSpec) { s.good = 0.96 }, "slo_attainment", Fail, Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bs, cs := aa(), aa()
			tc.canary(&cs)
			r, err := Judge(exactArm(sources.Baseline, 1, bs), exactArm(sources.Canary, 3, cs), Config{Policy: p, Resamples: 300})
			if err != nil {
				t.Fatal(err)
			}
			m, ok := metricNamed(r, tc.gate)
			if !ok || m.Verdict != tc.want {
				t.Fatalf("%s: %s (present %v), want %s: %s", tc.gate, m.Verdict, ok, tc.want, m.Reason)
			}
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s: %q", r.Verdict, tc.verdict, r.Reasons)
			}
			for _, g := range []string{"slo_attainment", "ttft_p99", "tpot_p99", "error_rate", "rejected_share", "canceled_share", "retry_share", "output_tokens_mean", "offered_load_ratio"} {
				if _, ok := metricNamed(r, g); !ok {
					t.Errorf("gate %s missing", g)
				}
			}
			w := strings.Join(r.Warnings, "\n")
			for _, no := range []string{"per-class SLOs are not applied", "bounded, not counted", "not checked"} {
				if strings.Contains(w, no) {
					t.Errorf("warning %q on an exact aggregate: %q", no, r.Warnings)
				}
			}
			if a, _ := metricNamed(r, "slo_attainment"); a.Bounds != nil || !strings.HasPrefix(a.Method, "paired-") {
				t.Errorf("slo_attainment: bounds %+v, method %q; want counted and paired", a.Bounds, a.Method)
			}
			if len(r.Measurement.SLO) != 2 || r.Measurement.SLO[0].Class != "long" || float64(r.Measurement.SLO[0].TTFT) != 4 || r.Measurement.SLO[1].Class != "default" {
				t.Errorf("measured SLOs %+v, want chat's default and long classes", r.Measurement.SLO)
			}
			if r.Arms.Baseline.Accounting.Good == 0 || r.Measurement.Location != "client" {
				t.Errorf("accounting %+v, location %q", r.Arms.Baseline.Accounting, r.Measurement.Location)
			}
		})
	}
}

// TestExactAggregateUnreportedCounts: a count the source leaves NaN never
// passes. A guardrail on it is left out with a warning naming the source
// (the established rule for counts an engine cannot see), a gate on it is
// inconclusive with that reason; the short-output diagnostic is absent.
func TestExactAggregateUnreportedCounts(t *testing.T) {
	p := chat(t)
	bs, cs := aa(), aa()
	bs.nanRetried, bs.nanShort = true, true
	r, err := Judge(exactArm(sources.Baseline, 1, bs), exactArm(sources.Canary, 2, cs), Config{Policy: p, Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := metricNamed(r, "retry_share"); ok {
		t.Errorf("retry_share guardrail judged on a count the baseline does not report")
	}
	if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "the retry_share guardrail is not checked on this data: the source of baseline (per-request records) does not report retried requests") {
		t.Errorf("no warning for the unreported retries: %q", r.Warnings)
	}
	for _, d := range r.Diagnostics {
		if d.Metric == "short_output_share" {
			t.Errorf("short-output diagnostic without short-output counts: %+v", d)
		}
	}
	q := *p
	q.Gates = slices.Clone(p.Gates)
	for i := range q.Gates {
		if q.Gates[i].Metric == "retry_share" {
			q.Gates[i].Guardrail = false
		}
	}
	r, err = Judge(exactArm(sources.Baseline, 1, bs), exactArm(sources.Canary, 2, cs), Config{Policy: &q, Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := metricNamed(r, "retry_share")
	if !ok || m.Verdict != Inconclusive || !strings.Contains(m.Reason, "does not report retried requests") || r.Verdict == Pass {
		t.Errorf("retry_share gate on an unreported count: %s %q; verdict %s", m.Verdict, m.Reason, r.Verdict)
	}
}

// TestExactAggregateShortOutputs: the share of completions cut short is
// shown as a diagnostic, canary − baseline, never as a gate.
func TestExactAggregateShortOutputs(t *testing.T) {
	bs, cs := aa(), aa()
	cs.short = 0.05
	r, err := Judge(exactArm(sources.Baseline, 1, bs), exactArm(sources.Canary, 2, cs), Config{Policy: chat(t), Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	var d *Diagnostic
	for i := range r.Diagnostics {
		if r.Diagnostics[i].Metric == "short_output_share" {
			d = &r.Diagnostics[i]
		}
	}
	if d == nil {
		t.Fatalf("no short-output diagnostic: %+v", r.Diagnostics)
	}
	if est := float64(d.Estimate); !(est > 0.04 && est < 0.06) || !(float64(d.Interval[0]) > 0.03) {
		t.Errorf("short-output share difference %v %v, want ≈ +0.048", d.Estimate, d.Interval)
	}
}

// TestExactQuantileCautious: a quantile read from log-linear bins is only
// known within its bin (a factor 2^(1/256)), so the p99 gate passes only
// with the canary at its bin's upper edge over the baseline at its lower,
// and fails only the other way round. Every TTFT constant per arm makes the
// ratio exact: 1.1011 (just past the 10% margin) and 1.0989 (just inside)
// are within the two bins' resolution of the margin and stay undecided,
// where an interpolated point would decide them; 1.02 passes, 1.2 fails.
func TestExactQuantileCautious(t *testing.T) {
	p := chat(t)
	for _, tc := range []struct {
		ratio float64
		want  Verdict
	}{
		{1.02, Pass},
		{1.0989, Inconclusive},
		{1.1011, Inconclusive},
		{1.2, Fail},
	} {
		bs, cs := aa(), aa()
		bs.ttftConst, cs.ttftConst = 0.5, 0.5*tc.ratio
		r, err := Judge(exactArm(sources.Baseline, 1, bs), exactArm(sources.Canary, 1, cs), Config{Policy: p, Resamples: 300})
		if err != nil {
			t.Fatal(err)
		}
		m, _ := metricNamed(r, "ttft_p99")
		if tc.want == Inconclusive && !strings.Contains(m.Reason, "undecided within the histogram bounds") {
			t.Errorf("ratio %g: undecided for another reason: %s", tc.ratio, m.Reason)
		}
		t.Logf("ratio %g: %s: %s", tc.ratio, m.Verdict, m.Reason)
		if m.Verdict != tc.want {
			t.Errorf("ratio %g: ttft_p99 %s, want %s: %s", tc.ratio, m.Verdict, tc.want, m.Reason)
			continue
		}
		if m.Bounds == nil {
			t.Errorf("ratio %g: no bin ends shown", tc.ratio)
			continue
		}
		u, f := m.Bounds.Unfavourable, m.Bounds.Favourable
		if !(float64(u.Delta) > float64(f.Delta)) || !(float64(u.Delta) >= tc.ratio-1) || !(float64(f.Delta) <= tc.ratio-1) {
			t.Errorf("ratio %g: unfavourable end %+v, favourable %+v: they should straddle the true change", tc.ratio, u, f)
		}
		switch tc.want {
		case Pass:
			if !(float64(u.Interval[1]) <= 0.10) {
				t.Errorf("ratio %g: passed with the unfavourable end at %v", tc.ratio, u.Interval)
			}
		case Fail:
			if !(float64(f.Interval[0]) > 0.10) {
				t.Errorf("ratio %g: failed with the favourable end at %v", tc.ratio, f.Interval)
			}
		}
	}
}

// TestExactClassTailGates: with two labelled classes of ≥ 20% of the
// traffic each, every tail gate also runs per class (fail-only): a 30%
// TTFT regression of one class fails its class gate even where the pooled
// p99, set by the other (slower) class, does not move beyond the margin.
func TestExactClassTailGates(t *testing.T) {
	p := chat(t)
	bs, cs := aa(), aa()
	bs.classes = []string{"chat × default", "batch × default"}
	cs.classes = bs.classes
	bs.classTTFT = map[string]float64{"chat × default": 0.1, "batch × default": 1.0}
	cs.classTTFT = map[string]float64{"chat × default": 0.13, "batch × default": 1.0}
	bs.perSlice, cs.perSlice = 400, 400
	r, err := Judge(exactArm(sources.Baseline, 1, bs), exactArm(sources.Canary, 2, cs), Config{Policy: p, Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	chatGate, ok1 := metricNamed(r, "ttft_p99:chat")
	batchGate, ok2 := metricNamed(r, "ttft_p99:batch")
	if !ok1 || !ok2 {
		t.Fatalf("class tail gates missing: %v", r.Metrics)
	}
	if chatGate.Verdict != Fail || batchGate.Verdict != Pass || r.Verdict != Fail {
		t.Errorf("class gates chat %s (%s), batch %s; verdict %s", chatGate.Verdict, chatGate.Reason, batchGate.Verdict, r.Verdict)
	}
	if pooled, _ := metricNamed(r, "ttft_p99"); pooled.Verdict == Fail {
		t.Errorf("pooled p99 fails too (%s): the case does not show the class gate", pooled.Reason)
	}
	rows := map[string]bool{}
	for _, c := range r.Classes {
		rows[c.Class+"/"+c.Label] = true
	}
	if !rows["default/chat"] || !rows["default/batch"] {
		t.Errorf("class rows %v, want default/chat and default/batch", rows)
	}
}

// TestAggregateKindsDoNotMix: an exact aggregate is never compared with a
// metrics one.
func TestAggregateKindsDoNotMix(t *testing.T) {
	_, err := Judge(exactArm(sources.Baseline, 1, aa()), aggArmData(sources.Canary, 2, 90, 0.04, true), Config{Policy: chat(t)})
	if err == nil || !strings.Contains(err.Error(), "same kind of input") {
		t.Errorf("mixed aggregate kinds: %v", err)
	}
}

// TestExactAggregateMoreData: an exact aggregate's undecided gate says, as
// the request path does, how much more data would decide it; its arms
// show the retry amplification the counts give.
func TestExactAggregateMoreData(t *testing.T) {
	bs, cs := aa(), aa()
	bs.slices, cs.slices = 40, 40
	cs.good, cs.retry = 0.98, 0.04
	r, err := Judge(exactArm(sources.Baseline, 1, bs), exactArm(sources.Canary, 3, cs), Config{Policy: chat(t), Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := metricNamed(r, "slo_attainment")
	if m.Verdict != Inconclusive || m.MoreData == nil || !(float64(m.MoreData.Factor) > 1) || !strings.Contains(m.Reason, "more requests") {
		t.Errorf("slo_attainment %s, more data %+v: %s", m.Verdict, m.MoreData, m.Reason)
	}
	amp := float64(r.Arms.Canary.RetryAmplification)
	if !(amp > 1.03 && amp < 1.05) {
		t.Errorf("canary retry amplification %g, want ≈ 1/(1 − 0.04)", amp)
	}
}

// TestExactAggregateCost: an aggregate's cost per good request comes from
// cost records spread over its slices or from the policy's rates, as on
// the request path; records that leave part of the window uncovered are
// refused when cost is gated.
func TestExactAggregateCost(t *testing.T) {
	p := costPolicy(t)
	bs, cs := aa(), aa()
	t0, t1 := 1.7e9, 1.7e9+float64(bs.slices)*10
	recs := func(arm sources.Arm, usdPerHour, from float64) []sources.CostRecord {
		var out []sources.CostRecord
		for s := from; s < t1; s += 60 {
			out = append(out, sources.CostRecord{Start: s, End: s + 60, Arm: arm, Accelerator: usdPerHour / 60})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		cUSD   float64
		cFrom  float64
		want   Verdict
		errHas string
	}{
		{"equal cost passes", 4, t0, Pass, ""},
		{"10% dearer fails a 3% gate", 4.4, t0, Fail, ""},
		{"records missing the first minutes are refused", 4, t0 + 120, "", "cost records cover"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cost := append(recs(sources.Baseline, 4, t0), recs(sources.Canary, tc.cUSD, tc.cFrom)...)
			r, err := Judge(exactArm(sources.Baseline, 1, bs), exactArm(sources.Canary, 3, cs), Config{Policy: p, Resamples: 300, Cost: cost})
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("error %v, want one saying %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m, _ := metricNamed(r, "cost_per_good_request")
			if m.Verdict != tc.want {
				t.Errorf("cost_per_good_request %s, want %s: %s", m.Verdict, tc.want, m.Reason)
			}
			if c := r.Arms.Canary.Cost; c == nil || c.Source != "records" || math.Abs(float64(c.TotalUSD)-tc.cUSD*float64(bs.slices)*10/3600) > 1e-6 {
				t.Errorf("canary cost %+v", c)
			}
		})
	}
	q := *p
	q.Cost = &policies.CostRates{AcceleratorPerHour: 2, HostPerHour: 0.5}
	r, err := Judge(exactArm(sources.Baseline, 1, bs), exactArm(sources.Canary, 3, cs), Config{Policy: &q, Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := metricNamed(r, "cost_per_good_request"); m.Verdict != Pass || r.Arms.Baseline.Cost == nil || r.Arms.Baseline.Cost.Source != "policy-rates" ||
		math.Abs(float64(r.Arms.Baseline.Cost.TotalUSD)-2*2.5*float64(bs.slices)*10/3600) > 1e-9 {
		t.Errorf("policy rates: %s (%s), cost %+v", m.Verdict, m.Reason, r.Arms.Baseline.Cost)
	}
}
