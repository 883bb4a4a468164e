package sim

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/goodput-dev/goodput/sources"
)

// TestBatchNoiseAR1 checks the AR(1) path against its set parameters: the
// stationary variance σ² and the lag-1 autocorrelation φ. With n = 200,000
// values the standard error of the sample variance is about
// σ²·√(2(1+φ²)/((1−φ²)n)) ≈ 0.7% of σ² at φ = 0.8, and that of the lag-1
// autocorrelation about √((1−φ²)/n) ≈ 0.0013, so the tolerances are
// more than 4 standard errors.
func TestBatchNoiseAR1(t *testing.T) {
	for _, tc := range []struct{ sigma, phi float64 }{{0.1, 0.8}, {0.03, 0.8}, {0.2, 0.5}, {0.05, 0}} {
		x := extendAR1(nil, newRand(7, streamNoise), tc.sigma, tc.phi, 200_000)
		v := stat.Variance(x, nil)
		if math.Abs(v/(tc.sigma*tc.sigma)-1) > 0.04 {
			t.Errorf("σ=%g φ=%g: variance %g, want %g", tc.sigma, tc.phi, v, tc.sigma*tc.sigma)
		}
		if r := stat.Correlation(x[:len(x)-1], x[1:], nil); math.Abs(r-tc.phi) > 0.01 {
			t.Errorf("σ=%g φ=%g: lag-1 autocorrelation %.4f", tc.sigma, tc.phi, r)
		}
		if m := stat.Mean(x, nil); math.Abs(m) > 5*tc.sigma*math.Sqrt((1+tc.phi)/(1-tc.phi)/float64(len(x))) {
			t.Errorf("σ=%g φ=%g: mean %g, want 0", tc.sigma, tc.phi, m)
		}
	}
}

// perBucket returns, per bucket of width w seconds over dur, the count of
// first attempts and the mean log TPOT of completed requests.
func perBucket(reqs []sources.Request, start, w, dur float64) (counts, logTPOT []float64) {
	n := int(dur / w)
	counts, logTPOT = make([]float64, n), make([]float64, n)
	k := make([]float64, n)
	for _, r := range reqs {
		b := int((r.Time - start) / w)
		if b < 0 || b >= n {
			continue
		}
		counts[b]++
		if r.Status == sources.StatusOK && r.TPOT > 0 {
			logTPOT[b] += math.Log(r.TPOT)
			k[b]++
		}
	}
	for i := range logTPOT {
		logTPOT[i] /= max(k[i], 1)
	}
	return counts, logTPOT
}

// TestAANoiseAndSharedWave runs identical arms and checks what calibration
// rests on: the traffic wave is shared (per-minute arrival counts of the
// two arms move together), while each arm's batch noise is its own (the
// arms' noise paths are unrelated, and the per-bucket TPOT ratio between
// the arms follows the ratio of their noise factors), and that without
// batch noise the arms differ far less.
func TestAANoiseAndSharedWave(t *testing.T) {
	sc, err := Builtin("aa-quiet-30m")
	if err != nil {
		t.Fatal(err)
	}
	sc.Traffic.Drift.Amplitude = 0.4 // a strong wave, to see it in the counts
	sc.Traffic.Drift.Period = 10 * time.Minute
	sc.Baseline.BatchNoise.Sigma, sc.Canary.BatchNoise.Sigma = 0.1, 0.1
	res, err := Run(context.Background(), sc, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	start, dur := float64(sc.Start.Unix()), sc.Duration.Seconds()
	bn, cn := res.Summary.Baseline.StepNoise, res.Summary.Canary.StepNoise
	if len(bn) != 180 || len(cn) != 180 {
		t.Fatalf("noise paths of %d and %d intervals, want 180", len(bn), len(cn))
	}
	lb, lc := make([]float64, len(bn)), make([]float64, len(cn))
	for i := range bn {
		lb[i], lc[i] = math.Log(bn[i]), math.Log(cn[i])
	}
	if r := stat.Correlation(lb, lc, nil); math.Abs(r) > 0.35 {
		t.Errorf("the arms' noise paths correlate (r = %.2f); they must be independent", r)
	}
	cb, _ := perBucket(res.Baseline, start, 60, dur)
	cc, _ := perBucket(res.Canary, start, 60, dur)
	if r := stat.Correlation(cb, cc, nil); r < 0.8 {
		t.Errorf("per-minute arrivals of the arms correlate only %.2f; the wave must be shared", r)
	}
	_, tb := perBucket(res.Baseline, start, 10, dur)
	_, tc := perBucket(res.Canary, start, 10, dur)
	ratio, noise := make([]float64, len(tb)), make([]float64, len(tb))
	for i := range tb {
		ratio[i], noise[i] = tc[i]-tb[i], lc[i]-lb[i]
	}
	if r := stat.Correlation(ratio, noise, nil); r < 0.7 {
		t.Errorf("per-bucket TPOT ratio follows the arms' noise ratio only r = %.2f", r)
	}
	withNoise := stat.StdDev(ratio, nil)

	sc.Baseline.BatchNoise.Sigma, sc.Canary.BatchNoise.Sigma = 0, 0
	quiet, err := Run(context.Background(), sc, 5, 0)
	if err != nil {
		t.Fatal(err)
	}
	if quiet.Summary.Canary.StepNoise != nil {
		t.Error("noise path reported without batch noise")
	}
	_, qb := perBucket(quiet.Baseline, start, 10, dur)
	_, qc := perBucket(quiet.Canary, start, 10, dur)
	for i := range qb {
		ratio[i] = qc[i] - qb[i]
	}
	if without := stat.StdDev(ratio, nil); withNoise < 2*without {
		t.Errorf("SD of the per-bucket log TPOT ratio: %.4f with batch noise, %.4f without; noise must dominate", withNoise, without)
	}
}

func TestDrawRanges(t *testing.T) {
	sc, err := Builtin("regress-latency-10")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Ranges) < 6 {
		t.Fatalf("regress-latency-10 has %d ranges, want its own and those of aa-quiet-30m", len(sc.Ranges))
	}
	seen := map[float64]bool{}
	for seed := uint64(1); seed <= 50; seed++ {
		d, drawn, err := sc.Draw(seed)
		if err != nil {
			t.Fatal(err)
		}
		again, _, _ := sc.Draw(seed)
		if again.Canary.ClassLatency["chat"] != d.Canary.ClassLatency["chat"] || again.Traffic.Rate != d.Traffic.Rate {
			t.Fatal("the same seed drew different values")
		}
		m := d.Canary.ClassLatency["chat"].TTFT
		if m < 1.08 || m > 1.12 || d.Canary.ClassLatency["long"].TPOT != m || d.Canary.ClassLatency["chat"].TPOT != m {
			t.Fatalf("seed %d: one range must set all four multipliers alike in [1.08, 1.12]: %+v", seed, d.Canary.ClassLatency)
		}
		seen[m] = true
		if s := d.Baseline.BatchNoise.Sigma; s < 0.015 || s > 0.03 || d.Canary.BatchNoise.Sigma != s {
			t.Fatalf("fleet.batch_noise.sigma must set both arms alike in [0.015, 0.03]: %g, %g", s, d.Canary.BatchNoise.Sigma)
		}
		if d.Traffic.Drift.Period < 15*time.Minute || d.Traffic.Drift.Period > 30*time.Minute {
			t.Fatalf("drift period %v outside [15m, 30m]", d.Traffic.Drift.Period)
		}
		if len(drawn) != 9 {
			t.Fatalf("%d values reported, want 9: %v", len(drawn), drawn)
		}
	}
	if len(seen) < 45 {
		t.Errorf("50 seeds drew only %d distinct values", len(seen))
	}
	if sc.Canary.ClassLatency["chat"].TTFT != 1.1 || sc.Baseline.BatchNoise.Sigma != 0.02 {
		t.Error("Draw changed the scenario it was called on")
	}
}

func TestRangeAndExtendsErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"ranges:\n  - {keys: [canary.nope], min: 1, max: 2}\n", `no key "nope"`},
		{"ranges:\n  - {keys: [canary.decode_speed], min: 2, max: 1}\n", "min ≤ max"},
		{"ranges:\n  - {keys: [canary.decode_speed], min: 0, max: 1}\n", "decode_speed: must be > 0"},
		{"ranges:\n  - {keys: [canary.warmup.duration], min: 1, max: 2}\n", "durations with a unit"},
		{"ranges:\n  - {keys: [], min: 1, max: 2}\n", "at least one key"},
		{"ranges:\n  - {keys: [\"traffic.classes[5].weight\"], min: 1, max: 2}\n", "no such list item"},
		{"extends: nope\n", `no built-in scenario "nope"`},
	} {
		_, err := ParseScenario("x.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "x.yaml:") {
			t.Errorf("%q: error %v, want one naming x.yaml and %q", tc.yaml, err, tc.want)
		}
	}
}

func TestExtends(t *testing.T) {
	base, _ := Builtin("aa-quiet-30m")
	mix, err := Builtin("mix-shift-labels")
	if err != nil {
		t.Fatal(err)
	}
	masked, _ := Builtin("masked-regression")
	if mix.Name != "mix-shift-labels" || mix.Description == base.Description {
		t.Error("name and description are not inherited")
	}
	if mix.Baseline.Step.DecodePerSeq != base.Baseline.Step.DecodePerSeq || mix.Baseline.Step.Base == base.Baseline.Step.Base ||
		mix.Traffic.Rate != base.Traffic.Rate || mix.Duration != base.Duration || mix.Baseline.BatchNoise != base.Baseline.BatchNoise {
		t.Error("fleet and traffic must be inherited key by key, and overridden where the file says")
	}
	if mix.Canary.ClassWeights["long"] != 0.10 || mix.Baseline.ClassWeights != nil || masked.Canary.ClassWeights["long"] != 0.10 {
		t.Error("the canary overlay must be merged, through two levels of extends")
	}
	if masked.Canary.DecodeSpeed != 0.87 || masked.Baseline.DecodeSpeed != 1 || len(masked.Ranges) != len(base.Ranges)+1 {
		t.Errorf("masked-regression: decode speeds %g/%g, %d ranges", masked.Baseline.DecodeSpeed, masked.Canary.DecodeSpeed, len(masked.Ranges))
	}
}

// TestTPOTJitter: tpot_jitter spreads TPOT across requests by a
// log-normal factor of the set width without moving its median.
func TestTPOTJitter(t *testing.T) {
	sc, err := Builtin("aa-quiet-30m")
	if err != nil {
		t.Fatal(err)
	}
	sc.Baseline.BatchNoise.Sigma, sc.Canary.BatchNoise.Sigma = 0, 0
	sc.Canary.TPOTJitter = 0.3
	res, err := Run(context.Background(), sc, 9, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	logTPOT := func(reqs []sources.Request) []float64 {
		var x []float64
		for _, r := range reqs {
			if r.Status == sources.StatusOK && r.OutputTokens >= 20 && sources.Known(r.TPOT) {
				x = append(x, math.Log(r.TPOT))
			}
		}
		return x
	}
	b, c := logTPOT(res.Baseline), logTPOT(res.Canary)
	sb, sc2 := stat.StdDev(b, nil), stat.StdDev(c, nil)
	// independent spreads add in variance: the canary's is about √(sb² + 0.3²)
	want := math.Sqrt(sb*sb + 0.09)
	if math.Abs(sc2-want) > 0.03 {
		t.Errorf("SD of log TPOT: baseline %.3f, canary %.3f, want about %.3f", sb, sc2, want)
	}
	if mb, mc := quantile(b, 0.5), quantile(c, 0.5); math.Abs(mc-mb) > 0.03 {
		t.Errorf("median log TPOT moved: %.3f → %.3f", mb, mc)
	}
}

// TestReplicaSpread: with replica_spread each replica keeps its own speed
// for the whole run, so the replicas' mean log TPOT spread apart (by about
// the set σ), while without it they differ only by chance; the other arm's
// replicas draw their own speeds.
func TestReplicaSpread(t *testing.T) {
	sc, err := Builtin("aa-replica-spread-30m")
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = 10 * time.Minute
	sc.Baseline.Replicas, sc.Canary.Replicas = 12, 12
	sc.Traffic.Rate = 120
	spread := func(sigma float64) (sb, sc2 []float64) {
		sc.Baseline.ReplicaSpread, sc.Canary.ReplicaSpread = sigma, sigma
		res, err := Run(context.Background(), sc, 9, 0)
		if err != nil {
			t.Fatal(err)
		}
		means := func(reqs []sources.Request) []float64 {
			sum, n := map[string]float64{}, map[string]float64{}
			for _, r := range reqs {
				if r.Status == sources.StatusOK && r.TPOT > 0 {
					sum[r.Replica] += math.Log(r.TPOT)
					n[r.Replica]++
				}
			}
			var out []float64
			for k := range sum {
				out = append(out, sum[k]/n[k])
			}
			return out
		}
		return means(res.Baseline), means(res.Canary)
	}
	b0, _ := spread(0)
	b1, c1 := spread(0.1)
	if len(b1) != 12 || len(c1) != 12 {
		t.Fatalf("%d and %d replicas served, want 12 each", len(b1), len(c1))
	}
	without, with := stat.StdDev(b0, nil), stat.StdDev(b1, nil)
	if !(with > 0.05 && with > 4*without) {
		t.Errorf("SD of the replicas' mean log TPOT: %.4f with replica_spread 0.1, %.4f without", with, without)
	}
	slices.Sort(b1)
	slices.Sort(c1)
	if slices.Equal(b1, c1) {
		t.Error("the arms' replicas drew the same speeds")
	}
}
