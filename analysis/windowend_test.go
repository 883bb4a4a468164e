package analysis

import (
	"strings"
	"testing"
)

// TestWindowEndEval: the rule's edges. Spans are seconds on a shared grid
// from 0; offered requests set the early arm's rate.
func TestWindowEndEval(t *testing.T) {
	for _, tc := range []struct {
		name string
		b, c armSpan
		want bool   // reported (inconclusive)
		who  string // the arm named as ending first
	}{
		{"same end", armSpan{0, 1800, 36000}, armSpan{0, 1800, 36000}, false, ""},
		{"canary 60 s short: within the slack", armSpan{0, 1800, 36000}, armSpan{0, 1740, 34800}, false, ""},
		{"canary 5% short: within the slack", armSpan{0, 1800, 36000}, armSpan{0, 1710, 34200}, false, ""},
		{"canary 100 s short: beyond", armSpan{0, 1800, 36000}, armSpan{0, 1700, 34000}, true, "canary"},
		{"canary ends 10 min early", armSpan{0, 1800, 36000}, armSpan{0, 1200, 24000}, true, "canary"},
		{"baseline ends 10 min early", armSpan{0, 1200, 24000}, armSpan{0, 1800, 36000}, true, "baseline"},
		{"canary starts 10 min late: not reported", armSpan{0, 1800, 36000}, armSpan{600, 1800, 24000}, false, ""},
		// at 0.1 req/s a quiet 150 s is within 20 inter-arrival times
		{"sparse canary", armSpan{0, 1800, 900}, armSpan{0, 1650, 165}, false, ""},
		{"sparse canary, far short", armSpan{0, 1800, 900}, armSpan{0, 1200, 120}, true, "canary"},
		// arms not paired: one run mostly within the other's
		{"unpaired: canary within, ending 12 min early", armSpan{0, 2000, 40000}, armSpan{800, 1300, 10000}, true, "canary"},
		{"unpaired: runs one after the other", armSpan{0, 600, 12000}, armSpan{700, 1300, 12000}, false, ""},
		{"unpaired: runs overlapping by 5 of 30 minutes", armSpan{0, 1800, 36000}, armSpan{1500, 3300, 36000}, false, ""},
		// the canary's clock 5 min late: it starts and ends 5 min after
		// the baseline (the reason says the clocks may differ)
		{"canary's clock 5 min late", armSpan{0, 1800, 36000}, armSpan{300, 2100, 36000}, true, "baseline"},
		{"baseline's clock 5 min late", armSpan{300, 2100, 36000}, armSpan{0, 1800, 36000}, true, "canary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paired := !strings.HasPrefix(tc.name, "unpaired")
			e, ok := windowEndEval(tc.b, tc.c, paired)
			if ok != tc.want {
				t.Fatalf("reported %v, want %v (%s)", ok, tc.want, e.m.Reason)
			}
			if !ok {
				return
			}
			if e.m.Verdict != Inconclusive || e.m.Name != "window_end" {
				t.Errorf("%s %s, want window_end inconclusive", e.m.Name, e.m.Verdict)
			}
			if !strings.HasPrefix(e.m.Reason, "the "+tc.who+"'s records end") {
				t.Errorf("reason does not name the %s first: %s", tc.who, e.m.Reason)
			}
			clock := strings.Contains(e.m.Reason, "the arms' clocks differ") && strings.Contains(e.m.Reason, "correct the")
			if want := strings.Contains(tc.name, "clock"); clock != want {
				t.Errorf("clock skew said %v, want %v: %s", clock, want, e.m.Reason)
			}
		})
	}
}

// TestWindowEndBothPaths: on the fleet model, a canary whose records stop
// ten minutes before the baseline's (every replica at once) passed on
// both paths (the 20 minutes both served were judged alone); now both
// paths are inconclusive on window_end, name the same end, and the run
// is not a pass. A/A arms and a late-deployed canary get no row.
func TestWindowEndBothPaths(t *testing.T) {
	cfg := Config{Policy: chat(t), Resamples: 200, Seed: 1}
	const seed = 501
	for _, tc := range []struct {
		name   string
		b, c   func(*fleet)
		report bool
	}{
		{"canary stops at 20 min", func(*fleet) {}, func(f *fleet) { f.secs = 1200 }, true},
		{"baseline log ends at 20 min", func(f *fleet) { f.secs = 1200 }, func(*fleet) {}, true},
		{"A/A", func(*fleet) {}, func(*fleet) {}, false},
		{"canary deployed at 10 min", func(*fleet) {}, func(f *fleet) { f.offset, f.secs = 600, 1200 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bf, cf := aaFleet(seed), aaFleet(seed)
			tc.b(&bf)
			tc.c(&cf)
			b, c := fleetArms(bf, cf, seed)
			exact, agg := judgedBothWays(t, b, c, cfg)
			var reasons []string
			for path, r := range map[string]*Report{"request path": exact, "aggregate": agg} {
				m, ok := metricNamed(r, "window_end")
				if ok != tc.report {
					t.Fatalf("%s: window_end present %v, want %v", path, ok, tc.report)
				}
				if !ok {
					continue
				}
				if m.Verdict != Inconclusive || r.Verdict == Pass {
					t.Errorf("%s: window_end %s, run %s; want inconclusive and no pass", path, m.Verdict, r.Verdict)
				}
				reasons = append(reasons, m.Reason)
			}
			if len(reasons) == 2 && reasons[0] != reasons[1] {
				t.Errorf("the paths differ:\n%s\n%s", reasons[0], reasons[1])
			}
		})
	}
}

// TestRecordsGapEval: the rule's edges, on 10 s buckets over 30 minutes
// at 20 requests per bucket unless a case says otherwise.
func TestRecordsGapEval(t *testing.T) {
	arm := func(rate float64, from, to float64, holes ...[2]float64) ([]gapCell, armSpan) {
		var cells []gapCell
		s := armSpan{first: from}
	next:
		for t := from; t < to; t += 10 {
			for _, h := range holes {
				if t >= h[0] && t < h[1] {
					continue next
				}
			}
			cells = append(cells, gapCell{start: t, offered: rate})
			s.last, s.offered = t+10, s.offered+rate
		}
		return cells, s
	}
	for _, tc := range []struct {
		name   string
		bHoles [][2]float64
		cHoles [][2]float64
		cRate  float64
		want   bool
		who    string
	}{
		{"no gap", nil, nil, 20, false, ""},
		{"canary quiet 80 s: within the 90 s slack", nil, [][2]float64{{600, 680}}, 20, false, ""},
		{"canary quiet 10 min", nil, [][2]float64{{600, 1200}}, 20, true, "canary"},
		{"baseline's log lost 10 min", [][2]float64{{600, 1200}}, nil, 20, true, "baseline"},
		{"both quiet 10 min: a quiet stretch both rode", [][2]float64{{600, 1200}}, [][2]float64{{600, 1200}}, 20, false, ""},
		// at 0.5 requests per 10 s bucket, 20 inter-arrival times are at
		// least 400 s
		{"sparse canary quiet 5 min: within 20 inter-arrival times", nil, [][2]float64{{600, 900}}, 0.5, false, ""},
		{"sparse canary quiet 15 min", nil, [][2]float64{{600, 1500}}, 0.5, true, "canary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, bs := arm(20, 0, 1800, tc.bHoles...)
			c, cs := arm(tc.cRate, 0, 1800, tc.cHoles...)
			e, ok := recordsGapEval(b, c, 10, bs, cs, true)
			if ok != tc.want {
				t.Fatalf("reported %v, want %v (%s)", ok, tc.want, e.m.Reason)
			}
			if ok && (e.m.Verdict != Inconclusive || !strings.HasPrefix(e.m.Reason, "the "+tc.who+"'s records stop for ")) {
				t.Errorf("%s: %s", e.m.Verdict, e.m.Reason)
			}
		})
	}
	// runs one after the other share no time: no gap between them
	b, bs := []gapCell{{0, 20}, {10, 20}}, armSpan{0, 20, 40}
	c, cs := []gapCell{{600, 20}}, armSpan{600, 610, 20}
	if _, ok := recordsGapEval(b, c, 10, bs, cs, false); ok {
		t.Error("runs one after the other reported a gap")
	}
}
