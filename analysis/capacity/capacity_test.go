package capacity

import (
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// pt builds a per-request point at rate with n requests of which bad miss
// the TTFT SLO.
func pt(label string, req, ach float64, n, bad int) sources.RatePoint {
	reqs := make([]sources.Request, n)
	for i := range reqs {
		r := sources.NewRequest()
		r.Status, r.TTFT, r.OutputTokens = sources.StatusOK, 0.1, 20
		if i < bad {
			r.TTFT = 5
		}
		r.E2E = r.TTFT + 0.5
		r.DeriveTPOT()
		reqs[i] = r
	}
	return sources.RatePoint{Path: "sweep", Label: label, SHA256: label, RequestedRate: req, AchievedRate: ach, Requests: reqs}
}

func chat(t *testing.T) *policies.Policy {
	t.Helper()
	p, err := policies.Load("chat")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCrossingCases(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name         string
		pts          []sources.RatePoint
		identifiable bool
		lo, hi       float64
		reason       string
	}{
		{"knee between 20 and 30", []sources.RatePoint{pt("a", 10, nan, 2000, 0), pt("b", 20, nan, 2000, 2), pt("c", 30, nan, 2000, 400)}, true, 20, 30, ""},
		{"all above", []sources.RatePoint{pt("a", 10, nan, 2000, 0), pt("b", 20, nan, 2000, 0)}, false, 20, math.Inf(1), "add rates above 20"},
		{"all below", []sources.RatePoint{pt("a", 10, nan, 2000, 300), pt("b", 20, nan, 2000, 900)}, false, 0, 10, "add rates below 10"},
		{"too few requests", []sources.RatePoint{pt("a", 10, nan, 100, 0), pt("b", 20, nan, 100, 50)}, false, 0, 20, "more requests"},
		{"saturated counts at achieved", []sources.RatePoint{pt("a", 10, 10, 2000, 0), pt("b", 40, 25, 2000, 800)}, true, 10, 25, ""},
		{"within tolerance is not saturated", []sources.RatePoint{pt("a", 10, 9.6, 2000, 0), pt("b", 40, 39, 2000, 800)}, true, 10, 40, ""},
	}
	for _, tc := range cases {
		a, err := buildArm("baseline", tc.pts, chat(t), 0.99, 0.05, 0.95, ArmConfig{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c := a.Capacity
		if c.Identifiable != tc.identifiable || c.Lo != tc.lo || c.Hi != tc.hi {
			t.Errorf("%s: identifiable %v [%v, %v], want %v [%v, %v] (%s)", tc.name, c.Identifiable, c.Lo, c.Hi, tc.identifiable, tc.lo, tc.hi, c.Reason)
		}
		if tc.identifiable && !(c.Estimate >= c.Lo && c.Estimate <= c.Hi) {
			t.Errorf("%s: estimate %v outside [%v, %v]", tc.name, c.Estimate, c.Lo, c.Hi)
		}
		if !tc.identifiable && (!math.IsNaN(c.Estimate) || !strings.Contains(c.Reason+" "+c.Identify, tc.reason)) {
			t.Errorf("%s: estimate %v, reason %q / %q lacks %q", tc.name, c.Estimate, c.Reason, c.Identify, tc.reason)
		}
	}
}

func TestVerdicts(t *testing.T) {
	nan := math.NaN()
	sweep := func(tag string, knee float64) []sources.RatePoint {
		return []sources.RatePoint{pt(tag+"1", knee/2, nan, 3000, 0), pt(tag+"2", knee, nan, 3000, 0), pt(tag+"3", knee*1.1, nan, 3000, 900)}
	}
	cases := []struct {
		name       string
		base, can  []sources.RatePoint
		bRep, cRep int
		want       analysis.Verdict
	}{
		{"canary much better", sweep("b", 100), sweep("c", 150), 0, 0, analysis.Pass},
		{"canary much worse", sweep("b", 100), sweep("c", 60), 0, 0, analysis.Fail},
		{"same knee: interval straddles the floor", sweep("b", 100), sweep("c", 100), 0, 0, analysis.Inconclusive},
		{"twice the replicas for twice the rate is no gain", sweep("b", 100), sweep("c", 200), 1, 2, analysis.Inconclusive},
		{"fewer replicas, same rate: per replica it passes", sweep("b", 100), sweep("c", 100), 2, 1, analysis.Pass},
	}
	for _, tc := range cases {
		res, err := Compare(tc.base, tc.can, Config{Policy: chat(t), Baseline: ArmConfig{Replicas: tc.bRep}, Canary: ArmConfig{Replicas: tc.cRep}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.Verdict != tc.want {
			t.Errorf("%s: %s, want %s (%v)", tc.name, res.Verdict, tc.want, res.Reasons)
		}
	}
}

func TestRefusals(t *testing.T) {
	nan := math.NaN()
	a, b := pt("a", 10, nan, 100, 0), pt("b", 20, nan, 100, 0)
	a.Workload, b.Workload = "dataset=random in=1024", "dataset=sharegpt"
	if _, err := Compare([]sources.RatePoint{a, b}, []sources.RatePoint{pt("c", 10, nan, 100, 0)}, Config{Policy: chat(t)}); err == nil || !strings.Contains(err.Error(), "mixes workloads") {
		t.Errorf("stated workloads: %v", err)
	}
	long := pt("d", 20, nan, 100, 0)
	for i := range long.Requests {
		long.Requests[i].PromptTokens = 4000
	}
	short := pt("e", 10, nan, 100, 0)
	for i := range short.Requests {
		short.Requests[i].PromptTokens = 500
	}
	if _, err := Compare([]sources.RatePoint{short, long}, []sources.RatePoint{pt("c", 10, nan, 100, 0)}, Config{Policy: chat(t)}); err == nil || !strings.Contains(err.Error(), "mean prompt length") {
		t.Errorf("lengths: %v", err)
	}
	same := []sources.RatePoint{pt("x", 10, nan, 100, 0)}
	if _, err := Compare(same, same, Config{Policy: chat(t)}); err == nil || !strings.Contains(err.Error(), "same data") {
		t.Errorf("identical arms: %v", err)
	}
	norate := pt("y", nan, nan, 100, 0)
	if _, err := Compare([]sources.RatePoint{norate}, same, Config{Policy: chat(t)}); err == nil || !strings.Contains(err.Error(), "neither the requested nor the achieved") {
		t.Errorf("no rate: %v", err)
	}
	inf := pt("z", math.Inf(1), nan, 100, 0)
	if _, err := Compare([]sources.RatePoint{inf}, same, Config{Policy: chat(t)}); err == nil || !strings.Contains(err.Error(), "unlimited request rate") {
		t.Errorf("throughput run without achieved rate: %v", err)
	}
}

// TestSummaryBounds: a percentile list bounds attainment (p99 ≤ 1 s <
// p99.9 ⇒ TTFT attainment ∈ [99%, 99.9%]), the joint TTFT ∧ TPOT by Fréchet
// bounds, and a list without tail percentiles says it cannot bound.
func TestSummaryBounds(t *testing.T) {
	pol := chat(t)
	probs := []float64{0.5, 0.9, 0.99, 0.999}
	p := sources.RatePoint{RequestedRate: 10, AchievedRate: math.NaN(), Offered: 10001, Completed: 10001,
		Sketches: map[string]sources.Sketch{
			"ttft": {Probs: probs, Values: []float64{0.2, 0.5, 0.9, 1.5}, Interpolation: "linear"},
			"tpot": {Probs: probs, Values: []float64{0.02, 0.03, 0.05, 0.09}, Interpolation: "linear"},
		}}
	lo, hi, _, _, exact, notes := attainment(&p, pol, 0.99)
	// each criterion: ⌊10000·0.99⌋+1 = 9901 ≤ count ≤ ⌈10000·0.999⌉ = 9990;
	// jointly: 9901 + 9901 − 10001 = 9801 ≤ good ≤ 9990
	// without output-length percentiles the two-token floor cannot be checked: said once
	if exact || lo != 9801 || hi != 9990 || len(notes) != 1 || !strings.Contains(notes[0], "output-length") {
		t.Errorf("joint bounds [%d, %d] exact %v notes %v, want [9801, 9990]", lo, hi, exact, notes)
	}
	p.Sketches = map[string]sources.Sketch{"ttft": {Probs: []float64{0.5}, Values: []float64{0.08}, Interpolation: "linear"},
		"tpot": {Probs: []float64{0.5}, Values: []float64{0.01}, Interpolation: "linear"}}
	lo, hi, _, _, _, notes = attainment(&p, pol, 0.99)
	if hi != 10001 || lo > 5001 || !strings.Contains(strings.Join(notes, " "), "without tail percentiles") {
		t.Errorf("median-only row: [%d, %d] %v", lo, hi, notes)
	}
}
