package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// TestPersistenceWidensBothPaths: a declared window.persistence widens
// every gate's interval about its point by stats.PersistenceWidening at the
// run's bucket count, says so in the gate's adjusted lines and method, and
// does so alike on the request path and the streaming aggregate; without
// it nothing moves.
func TestPersistenceWidensBothPaths(t *testing.T) {
	plain := chat(t)
	declared := *plain
	declared.Window.Persistence = policies.Duration(5 * time.Minute)
	fc := fleetCaseNamed(t, "aa")
	const seed = 3
	b, c := fleetArms(fc.b(seed), fc.c(seed), seed)
	exact0, agg0 := judgedBothWays(t, b, c, Config{Policy: plain, Resamples: 200, Seed: 1})
	exact, agg := judgedBothWays(t, b, c, Config{Policy: &declared, Resamples: 200, Seed: 1})
	// the same arms run one after the other: read apart, their count
	// gates' batch means per arm take the independent arms' factor
	bs, cs := fc.b(seed), fc.c(seed)
	fleetVariants()["sequential"](&bs, &cs)
	sb, sc := fleetArms(bs, cs, seed)
	seq0, _ := judgedBothWays(t, sb, sc, Config{Policy: plain, Resamples: 200, Seed: 1})
	seq, _ := judgedBothWays(t, sb, sc, Config{Policy: &declared, Resamples: 200, Seed: 1})
	widened, apart := 0, 0
	for path, rr := range map[string][2]*Report{"exact": {exact0, exact}, "aggregate": {agg0, agg}, "sequential": {seq0, seq}} {
		before, after := rr[0], rr[1]
		for _, m0 := range before.Metrics {
			if m0.Conditional() {
				continue
			}
			m, ok := metricNamed(after, m0.Name)
			if !ok {
				t.Errorf("%s: %s gone once persistence is declared", path, m0.Name)
				continue
			}
			lo0, hi0, lo, hi := float64(m0.Interval[0]), float64(m0.Interval[1]), float64(m.Interval[0]), float64(m.Interval[1])
			if math.IsNaN(lo0) || math.IsInf(lo0, 0) || math.IsInf(hi0, 0) || m.Name == "offered_load_ratio" || m.Name == "warmup_completed" {
				continue
			}
			n := min(m.Buckets[0], m.Buckets[1])
			f := stats.PersistenceWideningOf(m0.Method, n, stats.PersistencePhi(10, 300), 2*plain.Confidence-1)
			if !(f > 1.3) {
				t.Fatalf("%s %s: factor %g on %d buckets; the test needs a wide one", path, m.Name, f, n)
			}
			if !strings.Contains(m.Method, "+persistence") || strings.Contains(m0.Method, "+persistence") {
				t.Errorf("%s %s: method %q (was %q)", path, m.Name, m.Method, m0.Method)
			}
			var line string
			for _, a := range m.Adjusted {
				if strings.HasPrefix(a, "widened for declared persistence") {
					line = a
				}
			}
			if !strings.Contains(line, "5m0s") || !strings.Contains(line, "wider") {
				t.Errorf("%s %s: no persistence line in %q", path, m.Name, m.Adjusted)
			}
			// on the delta's scale: relative gates widen on the log scale
			tr := func(v float64) float64 { return v }
			if m.Scale == "relative" {
				tr = math.Log1p
			}
			// the point: the relative delta back on the log scale
			pt := tr(float64(m0.Delta))
			if d := math.Abs(float64(m.Delta) - float64(m0.Delta)); d > 1e-12 {
				t.Errorf("%s %s: point moved %g", path, m.Name, d)
			}
			// the aggregate's tails report the hull of the interval moved to
			// both ends of the quantiles' log-linear bins, whose points
			// differ from the reported one by up to two bins
			tol := 1e-9
			if path == "aggregate" && strings.Contains(m.Name, "_p99") {
				tol = 2 * math.Ln2 / 256 * (1 + f)
			}
			for _, side := range [][2]float64{{tr(lo0), tr(lo)}, {tr(hi0), tr(hi)}} {
				if want := pt + (side[0]-pt)*f; math.Abs(side[1]-want) > tol*(1+math.Abs(want)) {
					t.Errorf("%s %s: bound %g, want %g (×%.4f about %g; got ×%.4f, %d buckets)", path, m.Name, side[1], want, f, pt, (side[1]-pt)/(side[0]-pt), n)
				}
			}
			widened++
			if strings.Contains(m0.Method, "delta-batchmeans") && !strings.Contains(m0.Method, "paired") {
				apart++
			}
		}
	}
	if apart < 3 {
		t.Errorf("%d gates of arms read apart widened; want the sequential run's count gates", apart)
	}
	if widened < 10 {
		t.Errorf("only %d gates widened on both paths", widened)
	}
	// the step says what was done, alike on both paths, and only when declared
	se, sa := step(exact, "persistence"), step(agg, "persistence")
	if !se.Applied || se.Setting != "5m0s" || se.Detail != sa.Detail || !strings.Contains(se.Detail, "widened ×") || !strings.Contains(se.Detail, "10m0s") {
		t.Errorf("persistence step:\n exact     %+v\n aggregate %+v", se, sa)
	}
	if st := step(exact0, "persistence"); st.Name != "" {
		t.Errorf("a step without the key: %+v", st)
	}
	// the paths agree gate by gate
	for _, me := range exact.Metrics {
		ma, ok := metricNamed(agg, me.Name)
		if !ok || me.Verdict != ma.Verdict {
			t.Errorf("%s: exact %s, aggregate %s", me.Name, me.Verdict, ma.Verdict)
		}
	}
}

// TestMoreDataUnderPersistence: with a declared persistence a longer run is
// widened less, so the data that would decide a gate is less than 1/√n
// alone projects: the projected multiple k' makes z·se·s(k')/√k' meet the
// margin exactly, s the widening's shrink; a gate the declaration did not
// widen projects as before.
func TestMoreDataUnderPersistence(t *testing.T) {
	p := *chat(t)
	p.Window.Persistence = policies.Duration(495 * time.Second)
	shrink := persistenceShrink(&p, 10)
	if shrink == nil || persistenceShrink(chat(t), 10) != nil {
		t.Fatal("shrink present only when declared")
	}
	const z, se = 1.6449, 0.008
	e := gateEval{harmPoint: 0.002, se: se, passAt: 0.01, failAt: 0.01}
	m := Metric{Buckets: [2]int{180, 180}, NBaseline: 36000, NCanary: 36000, Method: "paired-delta-lagwindow+persistence"}
	plain, _ := moreDataFor(&e, Metric{Buckets: m.Buckets, NBaseline: 36000, NCanary: 36000, Method: "paired-delta-lagwindow"}, z, 40, shrink)
	md, _ := moreDataFor(&e, m, z, 40, shrink)
	if plain == nil || md == nil {
		t.Fatal("no projection")
	}
	k, k0 := float64(md.Factor), float64(plain.Factor)
	if !(k < k0) || !(k > 1) {
		t.Fatalf("k %g against %g without the shrink", k, k0)
	}
	if got := z * se * shrink(m.Method, 180)(k) / math.Sqrt(k); math.Abs(got-0.008) > 1e-6 {
		t.Errorf("at k %g the half-width is %g, want the gap 0.008", k, got)
	}
	if s := shrink(m.Method, 180)(2); !(s < 1 && s > 0.5) {
		t.Errorf("an hour against 30 min: shrink %g", s)
	}
	t.Logf("k %.2f (%.0f min more) against %.2f (%.0f min) by 1/√n alone", k, float64(md.Minutes), k0, float64(plain.Minutes))
}

// TestHistoryCounterMerge: a history counted file by file and merged fits
// exactly as counted whole (the command scans each file into a counter of
// its own), in each of the three ways halves are formed.
func TestHistoryCounterMerge(t *testing.T) {
	p := chat(t)
	fc := fleetCaseNamed(t, "aa")
	bf, cf := fc.b(4), fc.c(4)
	bf.secs, cf.secs, bf.rate, cf.rate = 4*3600, 4*3600, 5, 5
	b, c := fleetArms(bf, cf, 4)
	unnamed := *b
	unnamed.Requests = slices.Clone(b.Requests)
	for i := range unnamed.Requests {
		unnamed.Requests[i].Replica = ""
	}
	for _, tc := range []struct {
		name   string
		a, o   *sources.Dataset
		source string
	}{{"pair", b, c, "arms"}, {"replicas", b, nil, "replicas"}, {"arm", &unnamed, nil, "arm"}} {
		whole, err := PersistenceOfHistory(tc.a, tc.o, p, 30*time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		h := NewHistoryCounter(p)
		for arm, ds := range []*sources.Dataset{tc.a, tc.o} {
			if ds == nil {
				continue
			}
			// three "files", the middle one first
			n := len(ds.Requests)
			for _, part := range [][2]int{{n / 3, 2 * n / 3}, {0, n / 3}, {2 * n / 3, n}} {
				sub := NewHistoryCounter(p)
				for i := part[0]; i < part[1]; i++ {
					sub.Add(arm, &ds.Requests[i])
				}
				h.Merge(sub)
			}
		}
		merged, err := h.Fit(p, 30*time.Minute, tc.o != nil, [2]string{"a", "b"})
		if err != nil {
			t.Fatalf("%s merged: %v", tc.name, err)
		}
		if merged != whole || whole.Source != tc.source || whole.Windows != 8 {
			t.Errorf("%s:\\n whole  %+v\\n merged %+v", tc.name, whole, merged)
		}
	}
}

// TestHistoryCounterCounts: a history given as counts per replica and
// bucket (as a column store returns them), a piece of time at a time and
// out of order, fits exactly as counted record by record, as an A/A pair
// and as one arm whose replicas are split in two.
func TestHistoryCounterCounts(t *testing.T) {
	p := chat(t)
	fc := fleetCaseNamed(t, "aa")
	bf, cf := fc.b(6), fc.c(6)
	bf.secs, cf.secs = 4*3600, 4*3600
	b, c := fleetArms(bf, cf, 6)
	good := GoodFunc(p)
	secs := p.Window.Bucket.Seconds()
	t0 := math.Floor(b.Requests[0].Time)
	type key struct {
		replica string
		slice   int64
	}
	for _, tc := range []struct {
		name   string
		arms   []*sources.Dataset
		source string
	}{{"pair", []*sources.Dataset{b, c}, "arms"}, {"replicas", []*sources.Dataset{b}, "replicas"}} {
		var other *sources.Dataset
		if len(tc.arms) == 2 {
			other = c
		}
		whole, err := PersistenceOfHistory(b, other, p, 30*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		h := NewHistoryCounter(p)
		for _, piece := range [][2]float64{{9000, 4*3600 + 60}, {0, 3000}, {3000, 9000}} {
			for k, ds := range tc.arms {
				counts := map[key]*[2]float64{}
				for i := range ds.Requests {
					r := &ds.Requests[i]
					if d := r.Time - t0; d < piece[0] || d >= piece[1] {
						continue
					}
					x := key{r.Replica, int64(math.Floor(r.Time / secs))}
					if counts[x] == nil {
						counts[x] = new([2]float64)
					}
					counts[x][1]++
					if good(r) {
						counts[x][0]++
					}
				}
				keys := slices.SortedFunc(maps.Keys(counts), func(x, y key) int {
					return cmp.Or(cmp.Compare(x.slice, y.slice), cmp.Compare(x.replica, y.replica))
				})
				for _, x := range keys {
					h.AddCounts(k, x.replica, x.slice, counts[x][0], counts[x][1])
				}
			}
		}
		got, err := h.Fit(p, 30*time.Minute, other != nil, [2]string{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		if got != whole || got.Source != tc.source || got.Windows != 8 {
			t.Errorf("%s:\n from counts  %+v\n from records %+v", tc.name, got, whole)
		}
	}
}

// TestPersistenceFitCalibration measures what `goodput persistence` would
// say on the fleet model's A/A histories: GOODPUT_PERSISTENCE_REPS
// histories per variant (default 0: skipped), each GOODPUT_PERSISTENCE_HOURS
// long (default 8), fitted on 30-minute windows. Per variant: how often a
// declaration is printed (κ's interval above 1) and the median upper end
// of τ's interval when it is, the median and the 10th
// and 90th percentiles of the τ read, and how often κ's interval holds the
// κ the variant's AR(1) gives. GOODPUT_FLEET_CASES names variants
// (default, noisiest, persistent, persistent-long, persistent-long-2x).
func TestPersistenceFitCalibration(t *testing.T) {
	reps, wanted := calibrationRun(t, "GOODPUT_PERSISTENCE_REPS", "measure goodput persistence on the fleet model's histories")
	hours := 8.0
	if v, err := strconv.ParseFloat(os.Getenv("GOODPUT_PERSISTENCE_HOURS"), 64); err == nil && v > 0 {
		hours = v
	}
	p := chat(t)
	variants := fleetVariants()
	for _, v := range []struct {
		name string
		phi  float64
	}{{"", 0.8}, {"noisiest", 0.9}, {"persistent", 0.95}, {"persistent-long", 0.98}, {"persistent-long-2x", 0.98}} {
		name := v.name
		if name == "" {
			name = "default"
		}
		if !wanted(name) {
			continue
		}
		kappa := persistenceKappa(180, v.phi)
		var fits historyFits
		for i := range reps {
			seed := uint64(7000 + i)
			fc := fleetCaseNamed(t, "aa")
			bf, cf := fc.b(seed), fc.c(seed)
			if v.name != "" {
				variants[v.name](&bf, &cf)
			}
			bf.secs, cf.secs = hours*3600, hours*3600
			b, c := fleetArms(bf, cf, seed)
			h, err := PersistenceOfHistory(b, c, p, 30*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			fits.add(h, kappa)
		}
		t.Logf("%-20s AR(1) φ %.2f (τ %3.0f s, κ %.2f): %s", name, v.phi, -10/math.Log(v.phi), kappa, fits.summary())
	}
}

// TestBatchPersistenceFit measures what `goodput persistence` would say
// on the batching model's A/A histories, whose slowdowns come out of
// queues rather than an AR(1): GOODPUT_PERSISTENCE_REPS histories per
// case (default 0: skipped), each GOODPUT_PERSISTENCE_HOURS long (default
// 8), fitted on 30-minute windows. GOODPUT_FLEET_CASES names batching
// cases on identical arms (default: one replica below, near and past its
// knee, and four past theirs).
func TestBatchPersistenceFit(t *testing.T) {
	reps, _ := calibrationRun(t, "GOODPUT_PERSISTENCE_REPS", "measure goodput persistence on the batching model's histories")
	hours := 8.0
	if v, err := strconv.ParseFloat(os.Getenv("GOODPUT_PERSISTENCE_HOURS"), 64); err == nil && v > 0 {
		hours = v
	}
	names := []string{"aa-1-replica", "aa-1-replica-past-knee", "aa-1-replica-overloaded", "aa-past-knee"}
	if v := os.Getenv("GOODPUT_FLEET_CASES"); v != "" {
		names = strings.Split(v, ",")
	}
	cases := map[string]batchCase{}
	for _, bc := range batchCases() {
		cases[bc.name] = bc
	}
	p := chat(t)
	for _, name := range names {
		bc, ok := cases[name]
		if !ok || bc.c == nil || bc.want != Pass {
			t.Fatalf("%s: want a batching case of two arms judged alike", name)
		}
		var fits historyFits
		for i := range reps {
			seed := uint64(7000 + i)
			bf, cf := aaBatchFleet(), aaBatchFleet()
			bc.b(&bf)
			bc.c(&cf)
			bf.secs, cf.secs = hours*3600, hours*3600
			b, c := batchArms(bf, cf, seed)
			h, err := PersistenceOfHistory(b, c, p, 30*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			fits.add(h, math.NaN())
		}
		t.Logf("%-24s %s", name, fits.summary())
	}
}

// historyFits tallies what `goodput persistence` read on many histories.
type historyFits struct {
	taus, uppers    []float64
	declared, held  int
	reps, withKappa int
}

// add counts one history's fit; kappa is the κ its model gives (NaN:
// unknown, not counted).
func (f *historyFits) add(h HistoryPersistence, kappa float64) {
	f.reps++
	f.taus = append(f.taus, h.Tau)
	if h.KappaLo > 1 {
		f.declared++
		f.uppers = append(f.uppers, h.TauHi)
	}
	if !math.IsNaN(kappa) {
		f.withKappa++
		if h.KappaLo <= kappa && kappa <= h.KappaHi {
			f.held++
		}
	}
}

// summary says how often a declaration is printed (κ's interval above 1)
// and the median upper end of τ's interval when it is, the median and the
// 10th and 90th percentiles of the τ read, and when the model's κ is
// known how often κ's interval holds it.
func (f *historyFits) summary() string {
	taus := slices.Sorted(slices.Values(f.taus))
	uppers := slices.Sorted(slices.Values(f.uppers))
	q := func(p float64) float64 { return taus[min(len(taus)-1, int(p*float64(len(taus))))] }
	upper := math.NaN()
	if len(uppers) > 0 {
		upper = uppers[len(uppers)/2]
	}
	s := fmt.Sprintf("declared in %s (its interval's upper end, median %3.0f s); τ read %3.0f s [p10 %3.0f, p90 %3.0f]",
		mcRate(f.declared, f.reps), upper, q(0.5), q(0.1), q(0.9))
	if f.withKappa > 0 {
		s += "; κ interval holds the model's in " + mcRate(f.held, f.withKappa)
	}
	return s
}

// persistenceKappa is the lag window's shortfall r(0)/r(φ) at b buckets,
// the κ a history whose paired residual is all AR(1) φ reads.
func persistenceKappa(b int, phi float64) float64 { return stats.LagWindowShortfall(b, phi) }
