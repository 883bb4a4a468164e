package prometheus

import (
	"context"
	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis/histo"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/sim"
)

// For a simulated scenario, SLO attainment read from Prometheus histograms
// agrees with the per-request logs of the same run: the per-request figure
// lies inside the histogram bounds, widened only by the requests that
// finished outside the metrics window (|completed in logs − completed in
// metrics| / completed). The bounds' width is the histogram's resolution:
// the mass of the buckets the thresholds fall in.
func TestSimulatedAttainmentAgreesWithRequestLogs(t *testing.T) {
	dur := 4 * time.Minute
	res, base := simulatedPrometheus(t, "tail-regression", 1, dur)
	start := sim.DefaultStart()
	slos := []histo.SLO{
		{TTFT: 1, TPOT: math.NaN()},     // TTFT edge: exact
		{TTFT: 0.1, TPOT: 0.1},          // both on edges: Fréchet only
		{TTFT: 0.2, TPOT: 0.08},         // both between edges
		{TTFT: math.NaN(), TPOT: 0.025}, // TPOT edge
	}
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		ds := readSimulatedArm(t, base, arm, start, dur)
		for _, slo := range slos {
			b := histo.GoodBounds(ds.Agg, slo)
			good, done := 0, 0
			for _, r := range res.Requests(arm) {
				if !r.Status.Completed() {
					continue
				}
				done++
				ok := math.IsNaN(slo.TTFT) || r.TTFT <= slo.TTFT
				if !math.IsNaN(slo.TPOT) && sources.Known(r.TPOT) {
					ok = ok && r.TPOT <= slo.TPOT
				}
				if ok {
					good++
				}
			}
			perReq := float64(good) / float64(done)
			lo, hi := b.Lo/b.Completed, b.Hi/b.Completed
			slack := math.Abs(float64(done)-b.Completed)/b.Completed + 1e-9
			t.Logf("%s TTFT≤%v TPOT≤%v: metrics [%.4f, %.4f] (width %.4f), per-request %.4f (%d/%d), completed in metrics %.0f",
				arm, slo.TTFT, slo.TPOT, lo, hi, hi-lo, perReq, good, done, b.Completed)
			if perReq < lo-slack || perReq > hi+slack {
				t.Errorf("%s %+v: per-request attainment %.4f outside the histogram bounds [%.4f, %.4f] ± %.4f", arm, slo, perReq, lo, hi, slack)
			}
		}
	}
}

// TestReplicaHistogramsFromPrometheus: each replica track read from a real
// Prometheus carries the replica's own TTFT and TPOT histograms per step,
// under the name its request counter gives it (so the judge can bound
// each replica's good requests), and over the window the replicas'
// histograms hold every observation of the arm's.
func TestReplicaHistogramsFromPrometheus(t *testing.T) {
	dur := 4 * time.Minute
	_, base := simulatedPrometheus(t, "aa-replica-spread-30m", 3, dur)
	start := sim.DefaultStart()
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		ds := readSimulatedArm(t, base, arm, start, dur)
		if len(ds.Agg.Replicas) < 2 {
			t.Fatalf("%s: %d replica tracks", arm, len(ds.Agg.Replicas))
		}
		for _, q := range []string{"ttft", "tpot"} {
			var armTotal, repTotal float64
			for _, b := range ds.Agg.Buckets {
				h := b.TTFT
				if q == "tpot" {
					h = b.TPOT
				}
				armTotal += h.Total()
			}
			for _, tr := range ds.Agg.Replicas {
				hs := tr.TTFTHist
				if q == "tpot" {
					hs = tr.TPOTHist
				}
				if len(hs) != len(tr.Finished) {
					t.Fatalf("%s %s: %d %s histograms for %d steps", arm, tr.Name, len(hs), q, len(tr.Finished))
				}
				for _, h := range hs {
					repTotal += h.Total()
				}
			}
			if !(armTotal > 0) || math.Abs(repTotal-armTotal) > 1e-6*armTotal {
				t.Errorf("%s %s: the replicas' histograms hold %.0f observations, the arm's %.0f", arm, q, repTotal, armTotal)
			}
		}
	}
}

// simulatedPrometheus runs a built-in scenario for dur and serves its
// metrics.om from a real Prometheus (promtest.Start): the run and the
// server's URL; skipped under -short.
// readSimulatedArm reads arm's series (deployment label) of the window
// [start, start+dur) from the Prometheus at base, in 15 s steps.
func readSimulatedArm(t *testing.T, base string, arm sources.Arm, start time.Time, dur time.Duration) sources.Dataset {
	t.Helper()
	src, _ := New(Config{URL: base})
	ds, err := src.Read(context.Background(), Query{Arm: arm, Selector: mustSel(t, `deployment="`+string(arm)+`"`),
		Start: start, End: start.Add(dur), Step: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func simulatedPrometheus(t *testing.T, scenario string, seed uint64, dur time.Duration) (*sim.Result, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	sc, err := sim.Builtin(scenario)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, seed, dur)
	if err != nil {
		t.Fatal(err)
	}
	om := filepath.Join(t.TempDir(), "metrics.om")
	f, err := os.Create(om)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteOpenMetrics(f, res.Metrics); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return res, promtest.Start(t, om)
}
