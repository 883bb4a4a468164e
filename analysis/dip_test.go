package analysis

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// dipCells lays out n buckets of 10 s per arm, each offered 200 requests of
// which 196 are good (98%), changed where mod says.
func dipCells(n int, mod func(t int, c *dipCell)) []dipCell {
	out := make([]dipCell, n)
	for t := range out {
		out[t] = dipCell{start: 1000 + 10*float64(t), offered: 200, goodLo: 196, goodHi: 196}
		if mod != nil {
			mod(t, &out[t])
		}
	}
	return out
}

// TestDipEval: the attainment_dip check fails a stretch the canary lost
// (or two), and only that: not one the baseline matched at another time
// (its own slowdowns go as deep), not a burst both arms share, not a
// persistent difference
// (the attainment gate's business), not a stretch within the warm-up cap
// of the canary's start, not a dip too small to matter against the
// attainment margin, and not where the bounds on good requests leave it
// undetermined.
func TestDipEval(t *testing.T) {
	p := chat(t) // slo_attainment margin 1 pp
	burst := func(from, to int, good float64) func(int, *dipCell) {
		return func(t int, c *dipCell) {
			if t >= from && t < to {
				c.goodLo, c.goodHi = good, good
			}
		}
	}
	const n = 180 // 30 min
	for _, tc := range []struct {
		name string
		b, c []dipCell
		fail bool
		// the stretch named, in buckets
		span int
	}{
		{"2 min at half good in the canary", dipCells(n, nil), dipCells(n, burst(90, 102, 100)), true, 12},
		{"1 min stalled in the canary", dipCells(n, nil), dipCells(n, burst(60, 66, 0)), true, 6},
		{"two bursts in the canary", dipCells(n, nil), dipCells(n, func(t int, c *dipCell) {
			burst(60, 72, 100)(t, c)
			burst(120, 132, 100)(t, c)
		}), true, 12},
		{"a burst in the canary, one as deep in the baseline at another time", dipCells(n, burst(130, 142, 100)), dipCells(n, burst(90, 102, 100)), false, 0},
		{"the same burst in both arms", dipCells(n, burst(90, 102, 100)), dipCells(n, burst(90, 102, 100)), false, 0},
		{"15 pp worse all run", dipCells(n, nil), dipCells(n, burst(0, n, 166)), false, 0},
		{"a stall in the canary's first 5 min", dipCells(n, nil), dipCells(n, burst(6, 18, 0)), false, 0},
		{"30 s at half good: under the margin's worth", dipCells(n, nil), dipCells(n, burst(90, 93, 100)), false, 0},
		{"a dip of 8 pp for 5 min: under 10 pp", dipCells(n, nil), dipCells(n, burst(90, 120, 180)), false, 0},
		{"a burst the baseline had", dipCells(n, burst(90, 102, 100)), dipCells(n, nil), false, 0},
		{"bounds that may hold the whole burst", dipCells(n, nil), dipCells(n, func(t int, c *dipCell) {
			if t >= 90 && t < 102 {
				c.goodLo, c.goodHi = 100, 200
			}
		}), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := dipEval(p, tc.b, tc.c, 10, 1000, 300)
			if ok != tc.fail {
				t.Fatalf("row present %v, want %v (%s)", ok, tc.fail, e.m.Reason)
			}
			if !ok {
				return
			}
			m := e.m
			if m.Verdict != Fail || m.Name != "attainment_dip" || !m.Guardrail {
				t.Fatalf("%s %s guardrail %v", m.Name, m.Verdict, m.Guardrail)
			}
			if m.Buckets[0] != tc.span {
				t.Errorf("stretch of %d buckets, want %d: %s", m.Buckets[0], tc.span, m.Reason)
			}
			if !(float64(m.Interval[1]) < -DipMargin) || !(float64(m.Interval[0]) <= float64(m.Delta) && float64(m.Delta) <= float64(m.Interval[1])) {
				t.Errorf("interval %v around %v", m.Interval, m.Delta)
			}
			if !strings.Contains(m.Reason, "Bonferroni") || !strings.Contains(m.Reason, "after its start") {
				t.Errorf("reason: %s", m.Reason)
			}
		})
	}
	// excused by the policy: the same row, a pass that says so
	x := *chat(t)
	x.Normalize.CanaryDip = "excuse"
	if e, ok := dipEval(&x, dipCells(n, nil), dipCells(n, burst(90, 102, 100)), 10, 1000, 300); !ok || e.m.Verdict != Pass || !strings.Contains(e.m.Reason, "excused by the policy") {
		t.Errorf("excused: present %v, %s: %s", ok, e.m.Verdict, e.m.Reason)
	}
	// no slo_attainment gate: no check
	q := *chat(t)
	q.Gates = nil
	if _, ok := dipEval(&q, dipCells(n, nil), dipCells(n, burst(90, 102, 100)), 10, 1000, 300); ok {
		t.Error("checked without an attainment gate")
	}
}

// TestDipNotOnNoisyAA: per-arm slowdowns twice the fleet model's spread,
// or 1.5× and longer-lived, move a stretch's attainment by several points
// in one arm alone; on identical arms the check stays silent. At 3.5× and
// longer-lived still (σ 0.05, φ 0.9) one arm alone loses 20–30 pp for a
// minute or two in some runs: on seeds 910 and 919 only the baseline's
// own deep stretches keep the check from failing, on 925 only the
// stretches' MAD spread; on 11145, 11158 and 11163 (the fleet case
// aa-noisiest's replicates 145, 158 and 163) the canary's deepest stretch
// lies 5.6, 7.6 and 7.4 times deeper than the baseline's, which failed
// them while DipIsolation was 4 (docs/EVIDENCE.md).
func TestDipNotOnNoisyAA(t *testing.T) {
	p := chat(t)
	for _, noise := range []struct {
		sigma, phi float64
		seeds      []uint64
	}{{0.04, 0.8, []uint64{900, 901, 902, 903, 904, 905}}, {0.03, 0.9, []uint64{900, 901, 902, 903, 904, 905}}, {0.05, 0.9, []uint64{910, 919, 925, 11145, 11158, 11163}}} {
		for _, seed := range noise.seeds {
			b, c := aaFleet(seed), aaFleet(seed)
			b.sigma, b.phi, c.sigma, c.phi = noise.sigma, noise.phi, noise.sigma, noise.phi
			bd, cd := fleetArms(b, c, seed)
			r, err := Judge(bd, cd, Config{Policy: p, Resamples: 100, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if m, ok := metricNamed(r, "attainment_dip"); ok {
				t.Errorf("σ %g φ %g seed %d: %s", noise.sigma, noise.phi, seed, m.Reason)
			}
		}
	}
}

// TestDipBothPaths: a canary that serves half its requests with errors for
// two minutes, or stalls for one, is a FAIL on the request path and from
// the aggregate, with the same stretch named; the attainment gate alone
// stays inconclusive (its batch-means interval widens with the burst).
// The untouched A/A run of the same seed shows no dip.
func TestDipBothPaths(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 200, Seed: 1}
	const seed = 700
	for _, tc := range []struct {
		name string
		mod  func(r *sources.Request, at float64, i int)
		fail bool
	}{
		{"errors", func(r *sources.Request, at float64, i int) {
			if at >= 900 && at < 1020 && i%2 == 0 {
				r.Status = sources.StatusError
			}
		}, true},
		{"stall", func(r *sources.Request, at float64, i int) {
			if at >= 900 && at < 960 && r.Status == sources.StatusOK {
				r.E2E += 9 * r.TTFT
				r.TTFT *= 10
			}
		}, true},
		{"A/A", func(*sources.Request, float64, int) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := fleetArms(aaFleet(seed), aaFleet(seed), seed)
			t0 := c.Requests[0].Time
			for i := range c.Requests {
				tc.mod(&c.Requests[i], c.Requests[i].Time-t0, i)
			}
			exact, agg := judgedBothWays(t, b, c, cfg)
			for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
				m, ok := metricNamed(r, "attainment_dip")
				if ok != tc.fail {
					t.Fatalf("%s: attainment_dip present %v, want %v (%s)", path, ok, tc.fail, m.Reason)
				}
				if !tc.fail {
					continue
				}
				if r.Verdict != Fail || m.Verdict != Fail {
					t.Errorf("%s: verdict %s, attainment_dip %s", path, r.Verdict, m.Verdict)
				}
				if !strings.Contains(m.Reason, "15:00 to ") {
					t.Errorf("%s: stretch not at 15 min: %s", path, m.Reason)
				}
			}
			me, _ := metricNamed(exact, "attainment_dip")
			ma, _ := metricNamed(agg, "attainment_dip")
			if me.Buckets != ma.Buckets || math.Abs(float64(me.Delta-ma.Delta)) > 1e-9 {
				t.Errorf("paths differ: %v %v vs %v %v", me.Buckets, me.Delta, ma.Buckets, ma.Delta)
			}
		})
	}
}

// TestDipServedScan: in a fleet whose arms slow down on their own twice
// as much as the default (σ 0.04), a canary failing half its requests
// for two minutes lies only a few times deeper in good share than the
// baseline's own worst stretch, which DipIsolation does not fail (seed
// 19006, the fleet case error-burst-noisier's replicate 6); its share of
// requests served stands far out of the served shares' noise, so the
// second scan fails it on both paths, naming the stretch and saying
// "served". The same seed's identical arms show no dip.
func TestDipServedScan(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 100, Seed: 1}
	const seed = 19006
	for _, burst := range []bool{true, false} {
		b, c := aaFleet(seed), aaFleet(seed)
		b.sigma, c.sigma = 0.04, 0.04
		if burst {
			c.burstAt, c.burstSecs, c.burstErr = 900, 120, 0.5
		}
		bd, cd := fleetArms(b, c, seed)
		exact, agg := judgedBothWays(t, bd, cd, cfg)
		for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
			m, ok := metricNamed(r, "attainment_dip")
			if ok != burst {
				t.Fatalf("burst %v, %s: attainment_dip present %v (%s)", burst, path, ok, m.Reason)
			}
			if !burst {
				continue
			}
			if r.Verdict != Fail || m.Verdict != Fail || !strings.Contains(m.Method, "served") {
				t.Errorf("%s: verdict %s, attainment_dip %s by %s", path, r.Verdict, m.Verdict, m.Method)
			}
			for _, want := range []string{"15:00 to 17:00", "served 5", "of its requests (completed, whatever their latency"} {
				if !strings.Contains(m.Reason, want) {
					t.Errorf("%s: reason lacks %q: %s", path, want, m.Reason)
				}
			}
		}
	}
}

// TestDipServedScanFromStart: the served-share scan looks from the canary's
// first analysed bucket, not from the warm-up cap, so an error burst in the
// first five minutes of a 30-minute run, and one in the last three minutes
// of an 8-minute run (where the minutes past the cap are mostly the burst,
// its median), fail on both paths with the stretch named; the same arms
// without the burst have no dip row. A spread of 0 among the stretches'
// served shares is said as such, never as NaN.
func TestDipServedScanFromStart(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 100, Seed: 1}
	for _, tc := range []struct {
		name           string
		secs, at       float64
		stretchStartAt string
	}{
		{"30 min, burst at 2:00", 1800, 120, "2:"},
		{"8 min, burst at 5:30", 480, 330, "5:"},
	} {
		for _, burst := range []bool{true, false} {
			const seed = 19011
			b, c := aaFleet(seed), aaFleet(seed)
			b.secs, c.secs = tc.secs, tc.secs
			if burst {
				c.burstAt, c.burstSecs, c.burstErr = tc.at, 120, 0.5
			}
			bd, cd := fleetArms(b, c, seed)
			exact, agg := judgedBothWays(t, bd, cd, cfg)
			for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
				m, ok := metricNamed(r, "attainment_dip")
				if ok != burst {
					t.Fatalf("%s, burst %v, %s: attainment_dip present %v (%s)", tc.name, burst, path, ok, m.Reason)
				}
				if !burst {
					continue
				}
				if r.Verdict != Fail || m.Verdict != Fail || !strings.Contains(m.Method, "served") {
					t.Errorf("%s, %s: verdict %s, attainment_dip %s by %s", tc.name, path, r.Verdict, m.Verdict, m.Method)
				}
				if !strings.Contains(m.Reason, "worst stretch, "+tc.stretchStartAt) || strings.Contains(m.Reason, "NaN") {
					t.Errorf("%s, %s: reason: %s", tc.name, path, m.Reason)
				}
			}
		}
	}
}

// TestDipSpreadText: how far a stretch lies out is a ratio to the spread
// of its length's stretches, and where that spread is 0 (at least half the
// stretches at their median) a sentence saying so, not "NaN times".
func TestDipSpreadText(t *testing.T) {
	pp := func(v float64) string { return fmt.Sprintf("%+.2f pp", 100*v) }
	for _, tc := range []struct {
		d, spread, crit float64
		delta           func(float64) string
		want            string
	}{
		{-0.30, 0.05, 0.12, pp, "6.0 times the spread of the run's stretches of that length (MAD +5.00 pp; t bound +12.00 pp)"},
		{-0.30, 0.05, 0, nil, "6.0 times the spread of the run's stretches of that length"},
		{-0.30, 0, 0, pp, "the run's stretches of that length show no spread (at least half of them at their median, MAD 0)"},
		{-0.30, math.NaN(), 0, nil, "the run's stretches of that length show no spread (at least half of them at their median, MAD 0)"},
	} {
		if got := dipSpreadText(tc.d, tc.spread, tc.delta, tc.crit); got != tc.want {
			t.Errorf("dipSpreadText(%g, %g): %q, want %q", tc.d, tc.spread, got, tc.want)
		}
	}
}
