package analysis

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/exposition"
	"github.com/goodput-dev/goodput/sources/sim"
)

// simWithMetrics runs a scenario and returns both arms' request datasets with the
// simulator's metrics (metrics.om, read back through the scrape reader)
// attached, and the metrics alone as metrics-based datasets.
func simWithMetrics(t *testing.T, sc sim.Scenario, seed uint64) (reqB, reqC, metB, metC sources.Dataset) {
	t.Helper()
	res, err := sim.Run(context.Background(), sc, seed, 0)
	if err != nil {
		t.Fatal(err)
	}
	var om bytes.Buffer
	if err := sim.WriteOpenMetrics(&om, res.Metrics); err != nil {
		t.Fatal(err)
	}
	read := func(arm sources.Arm) sources.Dataset {
		ds, err := exposition.Read(context.Background(), "metrics.om", bytes.NewReader(om.Bytes()), arm)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	metB, metC = read(sources.Baseline), read(sources.Canary)
	reqB, reqC = res.Dataset(sources.Baseline), res.Dataset(sources.Canary)
	reqB.Metrics, reqC.Metrics = metB.Agg, metC.Agg
	reqB.Inputs = append(reqB.Inputs, metB.Inputs...)
	reqC.Inputs = append(reqC.Inputs, metC.Inputs...)
	return
}

func loadPolicy(t *testing.T, name string) *policies.Policy {
	t.Helper()
	p, err := policies.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The seed-overload scenario (70 req/s per arm on capacity for 95, a
// replica lost as a burst brings 110): judged from its metrics, the
// timeline shows SLO attainment collapsing while GPU utilization stays at
// 90% or more, and the divergence finding — with retry amplification named
// when the request logs are there to count retries — is in the reasons.
func TestSeedOverloadInternalStory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	sc, err := sim.Builtin("seed-overload")
	if err != nil {
		t.Fatal(err)
	}
	reqB, reqC, metB, metC := simWithMetrics(t, sc, 1)
	pol := loadPolicy(t, "chat")
	for _, tc := range []struct {
		name   string
		b, c   *sources.Dataset
		causes []string
	}{
		{"requests+metrics", &reqB, &reqC, []string{"overload", "retry_amplification", "queue_growth"}},
		{"metrics", &metB, &metC, []string{"overload", "queue_growth"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Judge(tc.b, tc.c, Config{Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Timeline) != 20 {
				t.Fatalf("timeline has %d rows, want 20 (one per minute of the 20 min window)", len(r.Timeline))
			}
			for _, arm := range []string{"baseline", "canary"} {
				collapsed := 0
				for i, row := range r.Timeline {
					a := row.Baseline
					if arm == "canary" {
						a = row.Canary
					}
					if a == nil {
						t.Fatalf("%s: row %d missing", arm, i)
					}
					if float64(a.SLOAttainment) < 0.2 {
						collapsed++
						if !(float64(a.GPUUtilization) >= 0.9) {
							t.Errorf("%s row %d: attainment %.3f with GPU utilization %.3f: want ≥ 0.9", arm, i, float64(a.SLOAttainment), float64(a.GPUUtilization))
						}
					}
				}
				if collapsed < 5 {
					t.Errorf("%s: attainment below 20%% in %d rows, want the collapse (≥ 5 minutes)", arm, collapsed)
				}
			}
			if len(r.Findings) != 2 {
				t.Fatalf("findings %+v, want one divergence per arm", r.Findings)
			}
			for _, f := range r.Findings {
				if f.Kind != "divergence" || float64(f.From) < 300 || float64(f.To) > 960 || len(f.Rows) < 6 {
					t.Errorf("finding %s rows %v (%g–%g s): want the overload minutes 6–14", f.Arm, f.Rows, float64(f.From), float64(f.To))
				}
				for _, c := range tc.causes {
					if !slices.Contains(f.Causes, c) {
						t.Errorf("%s: causes %v lack %s", f.Arm, f.Causes, c)
					}
				}
				found := false
				for _, reason := range r.Reasons {
					found = found || strings.HasPrefix(reason, "finding (not a gate): ") && strings.Contains(reason, f.Detail)
				}
				if !found {
					t.Errorf("reasons %q lack the finding %q", r.Reasons, f.Detail)
				}
			}
			if tc.name == "requests+metrics" && !strings.Contains(strings.Join(r.Reasons, "\n"), "retry amplification") {
				t.Errorf("reasons do not name retry amplification: %q", r.Reasons)
			}
			for _, s := range []ArmSummary{r.Arms.Baseline, r.Arms.Canary} {
				if s.Internal == nil || !(float64(s.Internal.GPUUtilization) > 0.9) || !(float64(s.Internal.GPUPowerW) > 0) ||
					!(float64(s.Internal.QueueWaiting) > 0) || !(float64(s.Internal.KVUsage) > 0) || !(float64(s.Internal.Running) > 0) ||
					!(float64(s.Internal.GPUMemoryBytes) > 0) || s.Internal.Source == "" {
					t.Errorf("internal %+v", s.Internal)
				}
				if s.Efficiency == nil || !(float64(s.Efficiency.JoulesPerGoodRequest) > 0) || !(float64(s.Efficiency.GPUSecondsPerGoodRequest) > 0) {
					t.Errorf("efficiency %+v", s.Efficiency)
				}
			}
		})
	}
}

// A canary whose kernel draws 10% less power at equal goodput passes the
// efficiency policy; one drawing 10% more fails it — from the metrics alone
// and from request logs with the metrics beside them.
func TestEfficiencyPolicyPowerScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	pol := loadPolicy(t, "efficiency")
	for _, tc := range []struct {
		file string
		want Verdict
	}{{"kernel-power-down.yaml", Pass}, {"kernel-power-up.yaml", Fail}} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "scenarios", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		sc, err := sim.ParseScenario(tc.file, data)
		if err != nil {
			t.Fatal(err)
		}
		reqB, reqC, metB, metC := simWithMetrics(t, sc, 1)
		for _, in := range []struct {
			name string
			b, c *sources.Dataset
		}{{"metrics", &metB, &metC}, {"requests+metrics", &reqB, &reqC}} {
			r, err := Judge(in.b, in.c, Config{Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			var energy *Metric
			for i := range r.Metrics {
				if r.Metrics[i].Name == "energy_per_good_request" {
					energy = &r.Metrics[i]
				}
			}
			if energy == nil {
				t.Fatalf("%s %s: no energy gate", tc.file, in.name)
			}
			t.Logf("%s %s: %s; energy %s %s [%g, %g] %s", tc.file, in.name, r.Verdict, energy.Verdict, fmtDelta(*energy, float64(energy.Delta)),
				float64(energy.Interval[0]), float64(energy.Interval[1]), energy.Method)
			if r.Verdict != tc.want || energy.Verdict != tc.want {
				t.Errorf("%s %s: verdict %s, energy gate %s (%s); want %s", tc.file, in.name, r.Verdict, energy.Verdict, energy.Reason, tc.want)
			}
			if d := float64(energy.Delta); math.Abs(math.Abs(d)-0.1) > 0.03 {
				t.Errorf("%s %s: energy per good request changed %+.1f%%, want about ±10%%", tc.file, in.name, 100*d)
			}
			if !slices.ContainsFunc(energy.Adjusted, func(s string) bool { return strings.HasPrefix(s, "matched offered load") }) {
				t.Errorf("%s %s: energy gate not compared at matched load: %q", tc.file, in.name, energy.Adjusted)
			}
			// the kernel's speed is unchanged: busy GPU-seconds per good
			// request stay within a 5% margin either way
			gs, err := Judge(in.b, in.c, Config{Policy: gpuSecondsPolicy(t)})
			if err != nil {
				t.Fatal(err)
			}
			if m := gs.Metrics[0]; m.Verdict != Pass {
				t.Errorf("%s %s: gpu_seconds_per_good_request %s (%s), want pass", tc.file, in.name, m.Verdict, m.Reason)
			}
		}
		// without metrics the energy gate cannot be passed
		reqB.Metrics, reqC.Metrics = nil, nil
		r, err := Judge(&reqB, &reqC, Config{Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		if r.Verdict == Pass || r.Metrics[0].Verdict != Inconclusive || !strings.Contains(r.Metrics[0].Reason, "no GPU power series") {
			t.Errorf("%s without metrics: verdict %s, energy gate %s (%s); want inconclusive", tc.file, r.Verdict, r.Metrics[0].Verdict, r.Metrics[0].Reason)
		}
		if r.Timeline != nil || r.Arms.Baseline.Internal != nil {
			t.Errorf("%s without metrics: timeline or internal section present", tc.file)
		}
	}
}

func gpuSecondsPolicy(t *testing.T) *policies.Policy {
	t.Helper()
	p, err := policies.Parse("gpu-seconds.yaml", []byte(`name: gpu-seconds
slo: {ttft: 1s, tpot: 80ms}
window: {warmup: auto, bucket: 10s}
normalize: {mix: none, cache: none, load: matched}
gates:
  - {metric: gpu_seconds_per_good_request, margin: 5%}
`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// workSlices builds a metrics-like arm with n slices of 15 s.
func workSlices(arm sources.Arm, n int, f func(i int, s *workSlice)) *workArm {
	w := &workArm{arm: arm, source: "test"}
	for i := range n {
		s := workSlice{start: float64(i * 15), secs: 15, offered: 100, good: 100, goodHi: 100, retries: 0, goodTokens: 20000,
			replicas: 4, util: 0.5, power: 1000, mem: 3e11, kv: 0.4, waiting: 1, runn: 20}
		f(i, &s)
		w.slices = append(w.slices, s)
	}
	return w
}

// Efficiency and internal means by hand: 10 slices of 15 s, 1000 W, 50%
// busy on 4 GPUs, 100 good requests of 200 tokens each.
func TestEfficiencyFigures(t *testing.T) {
	w := workSlices(sources.Baseline, 10, func(i int, s *workSlice) {
		if i == 9 {
			s.power, s.util = math.NaN(), math.NaN() // a slice without GPU gauges is left out
		}
		if i == 0 {
			s.cut = true // warm-up: not analysed
			s.power = 1e9
		}
	})
	e := efficiencyOf(w)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"joules per good request", float64(e.JoulesPerGoodRequest), 1000 * 15 / 100.0},
		{"GPU-seconds per good request", float64(e.GPUSecondsPerGoodRequest), 0.5 * 4 * 15 / 100.0},
		{"good tokens per joule", float64(e.GoodTokensPerJoule), 20000 / (1000 * 15.0)},
		{"good requests per GPU-hour", float64(e.GoodRequestsPerGPUHour), 100 / (4 * 15 / 3600.0)},
	} {
		if math.Abs(c.got-c.want) > 1e-9*c.want {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	if !strings.Contains(e.Note, "GPU power known in 8 of 9 slices") {
		t.Errorf("note %q does not say power was missing in a slice", e.Note)
	}
	in := internalOf(w)
	if in.Buckets != 9 || float64(in.GPUPowerW) != 1000 || float64(in.QueueWaiting) != 1 || float64(in.Running) != 20 {
		t.Errorf("internal %+v", in)
	}
	none := internalOf(workSlices(sources.Canary, 3, func(_ int, s *workSlice) { s.kv = math.NaN() }))
	if !math.IsNaN(float64(none.KVUsage)) {
		t.Errorf("kv usage without a series = %g, want null", float64(none.KVUsage))
	}
}

// No crying wolf: a steady run, and a collapse in which the GPUs go idle
// with goodput (a crash, not an overload), raise no divergence finding.
func TestDivergenceNotNamed(t *testing.T) {
	steady := func(arm sources.Arm) *workArm { return workSlices(arm, 40, func(int, *workSlice) {}) }
	crash := workSlices(sources.Canary, 40, func(i int, s *workSlice) {
		if i >= 10 && i < 20 {
			s.good, s.goodHi, s.util, s.runn, s.kv = 5, 5, 0.05, 0, 0.01
		}
	})
	for _, c := range []*workArm{steady(sources.Canary), crash} {
		rows := timeline(steady(sources.Baseline), c, 15)
		if fs := divergences(rows, steady(sources.Baseline), c, DivergenceOptions{}); len(fs) != 0 {
			t.Errorf("findings %+v, want none", fs)
		}
	}
	// and the overload shape is named, with its rows
	over := workSlices(sources.Canary, 40, func(i int, s *workSlice) {
		if i >= 10 && i < 20 {
			s.offered, s.good, s.goodHi, s.util, s.waiting, s.retries = 250, 10, 10, 1, 400, 120
		}
	})
	rows := timeline(steady(sources.Baseline), over, 15)
	fs := divergences(rows, steady(sources.Baseline), over, DivergenceOptions{})
	if len(fs) != 1 || fs[0].Arm != sources.Canary || len(fs[0].Rows) != 10 || fs[0].Rows[0] != 10 {
		t.Fatalf("findings %+v, want one for the canary over rows 10–19", fs)
	}
	if want := []string{"overload", "retry_amplification", "queue_growth"}; !slices.Equal(fs[0].Causes, want) {
		t.Errorf("causes %v, want %v", fs[0].Causes, want)
	}
	if !rows[12].Canary.Diverging || rows[12].Baseline.Diverging {
		t.Error("diverging flags not set on the finding's rows only")
	}
}

// The timeline groups long windows into whole minutes.
func TestTimelineWidth(t *testing.T) {
	for _, c := range []struct{ bucket, span, want float64 }{
		{10, 600, 10}, {10, 601, 60}, {15, 1200, 60}, {10, 7200, 120}, {60, 3600, 60}, {60, 3660, 120},
	} {
		if got := timelineWidth(c.bucket, c.span); got != c.want {
			t.Errorf("timelineWidth(%g, %g) = %g, want %g", c.bucket, c.span, got, c.want)
		}
	}
}

// At low traffic a few requests per slice make attainment noisy: two
// slices at 0 of 2 and 1 of 3 good are no evidence of a collapse.
func TestDivergenceNeedsEvidence(t *testing.T) {
	steady := func(arm sources.Arm) *workArm {
		return workSlices(arm, 40, func(_ int, s *workSlice) { s.offered, s.good, s.goodHi = 3, 3, 3 })
	}
	noisy := workSlices(sources.Canary, 40, func(i int, s *workSlice) {
		s.offered, s.good, s.goodHi = 3, 3, 3
		switch i {
		case 10:
			s.offered, s.good, s.goodHi = 2, 0, 0
		case 11:
			s.good, s.goodHi = 1, 1
		}
	})
	rows := timeline(steady(sources.Baseline), noisy, 15)
	if fs := divergences(rows, steady(sources.Baseline), noisy, DivergenceOptions{}); len(fs) != 0 {
		t.Errorf("findings %+v from 1 good of 5 requests, want none", fs)
	}
}
