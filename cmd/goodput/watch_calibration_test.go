package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/engines"
	"github.com/goodput-dev/goodput/sources/prometheus"
	"github.com/goodput-dev/goodput/sources/prometheus/promtest"
	"github.com/goodput-dev/goodput/sources/sim"
)

// watchCalPolicy puts the TTFT SLO on a bucket edge of vLLM's TTFT
// histogram (100 ms, near the simulated fleet's p90), so that attainment
// read from Prometheus is exact and a TTFT regression moves it: about 10%
// of requests miss it in the baseline. Its one gate is a guardrail on
// attainment: it fails as soon as the canary is worse with confidence, so
// an A/A canary sits exactly on the boundary of the fail test (the hardest
// null there is) and the false-fail rate is measured at α itself, not
// diluted by a margin or by Holm's split across gates.
const watchCalPolicy = `name: watch-calibration
description: TTFT ≤ 100 ms (a histogram edge); fail on any confident loss of attainment
slo: {ttft: 100ms}
window: {warmup: auto, bucket: 60s}
normalize: {mix: none, load: matched}
gates:
  - {metric: slo_attainment, margin: 1pp, guardrail: true}
confidence: 0.95
`

// serveTestPolicy is the calibration policy's SLO with non-inferiority
// gates, for the service's tests (an A/A window passes it).
const serveTestPolicy = `name: watch-calibration
description: TTFT ≤ 100 ms; attainment within 2 pp, errors
slo: {ttft: 100ms}
window: {warmup: auto, bucket: 60s}
normalize: {mix: none, load: matched}
gates:
  - {metric: slo_attainment, margin: 2pp}
  - {metric: error_rate, margin: 1pp, guardrail: true}
confidence: 0.95
`

// watchCalScenario is a steady fleet whose canary prefill runs at speed
// (1 = unchanged): 0.97 raises tail TTFT by about 3%, 0.95 by about 5%, 0.9 by about 10%,
// 0.6 by about 50%.
func watchCalScenario(name string, speed float64) string {
	return fmt.Sprintf(`name: %s
description: canary prefill speed %g
duration: 30m
traffic:
  rate: 60
fleet:
  replicas: 4
canary:
  prefill_speed: %g
`, name, speed, speed)
}

// calRun is one replicate's outcome under one rule.
type calRun struct {
	verdict analysis.Verdict
	look    int // look at which the watch stopped
}

// TestWatchCalibration is the watch's calibration on a real Prometheus:
// seeded simulator runs backfilled with promtool (several replicates per
// backfill under different deployment labels), each replayed with a look
// every 60 s bucket for 30 min under three rules on the same per-look data:
// the sequential boundary (goodput watch), the naive repeated
// fixed-horizon test (the policy's α at every look), and the one-shot
// judge of the whole 30 min.
//
// Slow (minutes): runs only with GOODPUT_WATCH_CALIBRATION=N (N A/A
// replicates; the regressions get N/2 and N/4). Writes the table to
// $GOODPUT_WATCH_CALIBRATION_OUT when set.
func TestWatchCalibration(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("GOODPUT_WATCH_CALIBRATION"))
	if n <= 0 {
		t.Skip("set GOODPUT_WATCH_CALIBRATION=N to run the watch calibration (minutes)")
	}
	pol, err := policies.Parse("watch-calibration.yaml", []byte(watchCalPolicy))
	if err != nil {
		t.Fatal(err)
	}
	const looks, every = 30, time.Minute
	plan, err := stats.OBFPlan(pol.Alpha(), stats.EqualFractions(looks))
	if err != nil {
		t.Fatal(err)
	}
	type scen struct {
		name  string
		speed float64
		reps  int
	}
	scens := []scen{{"aa", 1, n}, {"ttft-plus-50", 0.6, max(4, n/4)}, {"ttft-plus-10", 0.9, max(4, n/2)}, {"ttft-plus-5", 0.95, max(4, n/2)}, {"ttft-plus-3", 0.97, max(4, n/2)}}
	// GOODPUT_WATCH_CALIBRATION_SCENARIOS=aa,ttft-plus-5 runs a subset;
	// GOODPUT_WATCH_CALIBRATION_SEED shifts the seeds (fresh replicates)
	if only := os.Getenv("GOODPUT_WATCH_CALIBRATION_SCENARIOS"); only != "" {
		scens = slices.DeleteFunc(scens, func(s scen) bool { return !slices.Contains(strings.Split(only, ","), s.name) })
	}
	seedShift, _ := strconv.ParseUint(os.Getenv("GOODPUT_WATCH_CALIBRATION_SEED"), 10, 64)
	var table strings.Builder
	fmt.Fprintf(&table, "| scenario | replicates | rule | FAIL by 30 min | MC error | PASS | median FAIL look (min) |\n|---|---|---|---|---|---|---|\n")
	for _, sc := range scens {
		sim, err := simScenario(sc.name, watchCalScenario(sc.name, sc.speed))
		if err != nil {
			t.Fatal(err)
		}
		res := map[string][]calRun{}
		const perBackfill = 10
		for b0 := 0; b0 < sc.reps; b0 += perBackfill {
			nb := min(perBackfill, sc.reps-b0)
			dir := t.TempDir()
			om := filepath.Join(dir, "merged.om")
			if err := simMerged(sim, uint64(1000*len(sc.name))+uint64(b0)+seedShift, nb, om); err != nil {
				t.Fatal(err)
			}
			url := promtest.Start(t, om)
			src, err := prometheus.New(prometheus.Config{URL: url, Timeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			for r := range nb {
				base, can := readFull(t, src, r, looks*every)
				for rule, out := range calReplay(t, base, can, pol, plan, looks, every) {
					res[rule] = append(res[rule], out)
				}
			}
		}
		for _, rule := range []string{"watch (sequential)", "naive repeated", "one-shot judge at 30 min"} {
			runs := res[rule]
			fails, passes := 0, 0
			var at []float64
			for _, r := range runs {
				switch r.verdict {
				case analysis.Fail:
					fails++
					at = append(at, float64(r.look))
				case analysis.Pass:
					passes++
				}
			}
			p := float64(fails) / float64(len(runs))
			med := "–"
			if len(at) > 0 {
				slices.Sort(at)
				med = fmt.Sprintf("%g", at[len(at)/2])
				if len(at)%2 == 0 {
					med = fmt.Sprintf("%g", (at[len(at)/2-1]+at[len(at)/2])/2)
				}
			}
			fmt.Fprintf(&table, "| %s | %d | %s | %.3f | ±%.3f | %.3f | %s |\n", sc.name, len(runs), rule, p,
				math.Sqrt(math.Max(p*(1-p), 1/float64(len(runs)))/float64(len(runs))), float64(passes)/float64(len(runs)), med)
		}
	}
	t.Logf("\n%s", table.String())
	if out := os.Getenv("GOODPUT_WATCH_CALIBRATION_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func simScenario(name, text string) (sim.Scenario, error) {
	return sim.ParseScenario(name+".yaml", []byte(text))
}

// simMerged simulates n replicates of sc (seeds seed0…) in parallel and
// writes one OpenMetrics file holding all of them, replicate r's arms
// relabelled deployment="baseline-r" and "canary-r", each family once.
func simMerged(sc sim.Scenario, seed0 uint64, n int, path string) error {
	texts := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := sim.Run(context.Background(), sc, seed0+uint64(r), 0)
			if err != nil {
				errs[r] = err
				return
			}
			var b bytes.Buffer
			if err := sim.WriteOpenMetrics(&b, res.Metrics); err != nil {
				errs[r] = err
				return
			}
			s := strings.ReplaceAll(b.String(), `deployment="baseline"`, fmt.Sprintf(`deployment="baseline-%d"`, r))
			texts[r] = []byte(strings.ReplaceAll(s, `deployment="canary"`, fmt.Sprintf(`deployment="canary-%d"`, r)))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return mergeOM(texts, path)
}

// mergeOM writes the OpenMetrics texts as one file, each family once.
func mergeOM(texts [][]byte, path string) error {
	// group by family: header lines start a family; samples follow
	type family struct {
		header  []string
		samples [][]byte
	}
	var order []string
	fams := map[string]*family{}
	for _, txt := range texts {
		sc := bufio.NewScanner(bytes.NewReader(txt))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		cur := ""
		for sc.Scan() {
			line := sc.Text()
			if line == "# EOF" {
				continue
			}
			if strings.HasPrefix(line, "# ") {
				f := strings.Fields(line)
				name := f[2]
				if _, ok := fams[name]; !ok {
					fams[name] = &family{}
					order = append(order, name)
				}
				if cur != name {
					fams[name].header = fams[name].header[:0]
				}
				cur = name
				fams[name].header = append(fams[name].header, line)
				continue
			}
			fams[cur].samples = append(fams[cur].samples, append([]byte(line), '\n'))
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, name := range order {
		for _, h := range fams[name].header {
			w.WriteString(h + "\n")
		}
		for _, s := range fams[name].samples {
			w.Write(s)
		}
	}
	w.WriteString("# EOF\n")
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

var simStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// readFull reads replicate r's arms over the whole watch once; looks are
// prefixes of it (TestWatchPrefixEqualsLiveQuery shows a prefix equals the
// query a live look makes).
func readFull(t *testing.T, src *prometheus.Source, r int, d time.Duration) (sources.Dataset, sources.Dataset) {
	t.Helper()
	read := func(arm sources.Arm, dep string) sources.Dataset {
		sel, err := engines.ParseSelector(fmt.Sprintf(`deployment=%q`, dep))
		if err != nil {
			t.Fatal(err)
		}
		ds, err := src.Read(context.Background(), prometheus.Query{Arm: arm, Selector: sel, Start: simStart, End: simStart.Add(d), Step: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	return read(sources.Baseline, fmt.Sprintf("baseline-%d", r)), read(sources.Canary, fmt.Sprintf("canary-%d", r))
}

// prefix returns ds cut to the buckets that end by at.
func prefix(ds sources.Dataset, at time.Time) sources.Dataset {
	out := ds
	agg := *ds.Agg
	end := float64(at.Unix())
	agg.Buckets = nil
	for _, b := range ds.Agg.Buckets {
		if b.End <= end {
			agg.Buckets = append(agg.Buckets, b)
		}
	}
	out.Agg = &agg
	return out
}

// calReplay replays one replicate under the three rules.
func calReplay(t *testing.T, base, can sources.Dataset, pol *policies.Policy, plan stats.SequentialPlan, looks int, every time.Duration) map[string]calRun {
	t.Helper()
	out := map[string]calRun{}
	// the naive rule is what a controller running a fixed-horizon check
	// every minute does: fail at the first failing look, never stop early
	// for a pass
	rules := []struct {
		name     string
		nominal  func(k int) float64
		passStop bool
	}{
		{"watch (sequential)", func(k int) float64 { return plan.Nominal[k-1] }, true},
		{"naive repeated", func(int) float64 { return pol.Alpha() }, false},
	}
	for _, rule := range rules {
		var s watchState
		run := calRun{verdict: analysis.Inconclusive, look: looks}
		for k := 1; k <= looks; k++ {
			at := simStart.Add(time.Duration(k) * every)
			b, c := prefix(base, at), prefix(can, at)
			rep, err := judgeLook(&b, &c, pol, rule.nominal(k), 1, 200)
			if err != nil {
				t.Fatal(err)
			}
			s = applyLook(s, k, rep)
			if s.verdict == analysis.Fail || (s.verdict == analysis.Pass && rule.passStop) {
				run = calRun{verdict: s.verdict, look: k}
				break
			}
			if k == looks {
				run = calRun{verdict: s.verdict, look: k}
			}
		}
		out[rule.name] = run
	}
	rep, err := judgeLook(&base, &can, pol, pol.Alpha(), 1, 200)
	if err != nil {
		t.Fatal(err)
	}
	out["one-shot judge at 30 min"] = calRun{verdict: rep.Verdict, look: looks}
	return out
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// mergeRelabel merges the single-replicate file part (labels ending in
// oldSuffix) into the merged file dst as replicate newSuffix.
func mergeRelabel(t *testing.T, dst, part, oldSuffix, newSuffix string) {
	t.Helper()
	a, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(part)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), `deployment="baseline`+oldSuffix+`"`, `deployment="baseline`+newSuffix+`"`)
	s = strings.ReplaceAll(s, `deployment="canary`+oldSuffix+`"`, `deployment="canary`+newSuffix+`"`)
	if err := mergeOM([][]byte{a, []byte(s)}, dst); err != nil {
		t.Fatal(err)
	}
}
