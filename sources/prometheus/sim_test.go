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
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	sc, err := sim.Builtin("tail-regression")
	if err != nil {
		t.Fatal(err)
	}
	dur := 4 * time.Minute
	res, err := sim.Run(context.Background(), sc, 1, dur)
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
	f.Close()
	base := promtest.Start(t, om)
	start := sim.DefaultStart()
	slos := []histo.SLO{
		{TTFT: 1, TPOT: math.NaN()},     // TTFT edge: exact
		{TTFT: 0.1, TPOT: 0.1},          // both on edges: Fréchet only
		{TTFT: 0.2, TPOT: 0.08},         // both between edges
		{TTFT: math.NaN(), TPOT: 0.025}, // TPOT edge
	}
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		src, _ := New(Config{URL: base})
		ds, err := src.Read(context.Background(), Query{Arm: arm, Selector: mustSel(t, `deployment="`+string(arm)+`"`),
			Start: start, End: start.Add(dur), Step: 15 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
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
