package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/clickhouse"
	"github.com/goodput-dev/goodput/sources/clickhouse/chtest"
	"github.com/goodput-dev/goodput/sources/requestlog"
	"github.com/goodput-dev/goodput/sources/sim"
)

// edgePolicy exercises every part of the good rule: per-class SLOs chosen
// by label, by prompt range and by output range, e2e and max_itl bounds,
// required quality and output floors of 0 and 3 tokens.
const edgePolicy = `name: edge
slo: {ttft: 1s, tpot: 80ms, e2e: 5s, max_itl: 200ms, quality: required, min_output_tokens: 3}
classes:
  - name: interactive
    when: {label: [chat, "it's \\ odd"]}
    slo: {ttft: 500ms}
  - name: long
    when: {prompt_tokens: {min: 2000}}
    slo: {ttft: 2s, min_output_tokens: 0}
  - name: tiny
    when: {label: [batch, ""], output_tokens: {max: 64}}
    slo: {tpot: 50ms, e2e: 1s}
window: {warmup: none, bucket: 10s}
gates:
  - {metric: slo_attainment, margin: 1pp}
confidence: 0.95
`

// edgeRecords returns n native-log records with every field sometimes
// missing, values on the SLO bounds and on slice edges, every status, and
// labels holding quotes and backslashes.
func edgeRecords(seed uint64, n int) []sources.Request {
	rng := rand.New(rand.NewPCG(seed, 7))
	t0 := float64(sim.DefaultStart().Unix())
	labels := []string{"", "", "chat", "batch", "it's \\ odd", "other"}
	statuses := []sources.Status{sources.StatusOK, sources.StatusOK, sources.StatusOK, sources.StatusOK, sources.StatusError, sources.StatusTimeout, sources.StatusCanceled, sources.StatusRejected}
	edges := []float64{0, 0.05, 0.08, 0.2, 0.5, 1, 2, 5}
	lat := func() float64 {
		switch rng.IntN(6) {
		case 0:
			return math.NaN()
		case 1:
			return edges[rng.IntN(len(edges))]
		}
		return math.Round(rng.ExpFloat64()*0.6*1e6) / 1e6
	}
	count := func(max int) int64 {
		switch rng.IntN(8) {
		case 0:
			return -1
		case 1:
			return int64(rng.IntN(3)) // 0, 1, 2
		}
		return int64(rng.IntN(max))
	}
	out := make([]sources.Request, n)
	for i := range out {
		r := sources.NewRequest()
		r.Time = t0 + float64(rng.IntN(180*1000))/1000
		if rng.IntN(10) == 0 {
			r.Time = t0 + float64(10*rng.IntN(18)) // on a slice edge
		}
		r.Status = statuses[rng.IntN(len(statuses))]
		r.TTFT, r.TPOT, r.E2E, r.MaxITL = lat(), lat(), lat(), lat()
		if r.Status == sources.StatusOK && math.IsNaN(r.TTFT) {
			r.TTFT = 0.3
		}
		if !math.IsNaN(r.E2E) && !math.IsNaN(r.TTFT) && r.E2E < r.TTFT {
			r.E2E = r.TTFT + r.E2E
		}
		r.PromptTokens, r.OutputTokens, r.CachedTokens = count(4000), count(300), count(500)
		r.Class = labels[rng.IntN(len(labels))]
		if rng.IntN(3) > 0 {
			r.Replica = fmt.Sprintf("replica-%d", rng.IntN(4))
		}
		r.Attempt = int32(rng.IntN(3))
		r.Quality = sources.Quality(rng.IntN(3))
		if r.Status == sources.StatusCanceled {
			r.CanceledBy = sources.CanceledBy(rng.IntN(3)) // unknown, client, server
		}
		out[i] = r
	}
	return out
}

// longRecords is edgeRecords(seed, 8000) spread over hours hours instead
// of 3 minutes.
func longRecords(seed uint64, hours float64) []sources.Request {
	recs := edgeRecords(seed, 8000)
	t0 := float64(sim.DefaultStart().Unix())
	for i := range recs {
		recs[i].Time = t0 + (recs[i].Time-t0)*hours*20
	}
	return recs
}

// armFiles writes an arm's records as a native log and reads them back as
// the judge's file path does (so TPOT is derived as there).
func armFiles(t *testing.T, dir string, arm sources.Arm, reqs []sources.Request) (string, sources.Dataset) {
	t.Helper()
	return armFilesEdited(t, dir, arm, reqs, nil)
}

// armFilesEdited is armFiles with each JSONL line (without its closing
// brace) passed through edit first, its number given (nil: unchanged).
func armFilesEdited(t *testing.T, dir string, arm sources.Arm, reqs []sources.Request, edit func(i int, line string) string) (string, sources.Dataset) {
	t.Helper()
	var buf bytes.Buffer
	if err := sim.WriteRequestLog(&buf, reqs); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		buf.Reset()
		for i, l := range lines {
			buf.WriteString(edit(i, strings.TrimSuffix(l, "}")) + "}\n")
		}
	}
	path := filepath.Join(dir, string(arm)+".jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := requestlog.Read(context.Background(), path, bytes.NewReader(buf.Bytes()), arm)
	if err != nil {
		t.Fatal(err)
	}
	return path, ds
}

// streamAggregate is the files' aggregate: the streaming aggregator fed
// with the records read.
func streamAggregate(t *testing.T, pol *policies.Policy, ds sources.Dataset) *sources.Aggregate {
	t.Helper()
	ag := analysis.NewAggregator(pol)
	for i := range ds.Requests {
		ag.Add(&ds.Requests[i])
	}
	a, err := ag.Aggregate(ds.Arm)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// aggLines writes an aggregate one field per line, NaN spelt out, so two
// aggregates compare field by field.
func aggLines(a *sources.Aggregate) []string {
	out := []string{fmt.Sprintf("profile %q exact %v sums %v step %v partial %q notes %q attempt known %v unverified %v quality checked %d failed %d first arrival %v",
		a.Profile, a.Exact, a.LatencySums, a.Step, a.Partial, a.Notes, a.AttemptKnown, a.Unverified, a.QualityChecked, a.QualityFailed, a.FirstArrival)}
	// the groups of users, when a record names one (a table without a
	// user column gives none, files always a tally)
	if u := a.Users; u != nil && u.Named {
		for k := range sources.UserGates {
			out = append(out, fmt.Sprintf("users gate %d num %v den %v sq %d", k, u.Num[k], u.Den[k], u.Sq[k]))
		}
	} else {
		out = append(out, "users: none named")
	}
	for i, b := range a.Buckets {
		out = append(out,
			fmt.Sprintf("bucket %d [%v, %v) class %q", i, b.Start, b.End, b.Class),
			fmt.Sprintf("bucket %d %q counts completed %v failed %v canceled %v rejected %v good %v retried %v short %v output unknown %v prompt unknown %v", i, b.Class, b.Completed, b.Failed, b.Canceled, b.Rejected, b.Good, b.Retried, b.ShortOutputs, b.OutputUnknown, b.PromptUnknown),
			fmt.Sprintf("bucket %d %q tokens prompt %v output %v (most of one %v) hits %v queries %v replicas %v", i, b.Class, b.PromptTokens, b.OutputTokens, b.OutputMax, b.PrefixHits, b.PrefixQueries, b.Replicas),
			fmt.Sprintf("bucket %d %q gauges %v %v %v %v %v %v %v", i, b.Class, b.Running, b.Waiting, b.KVUsage, b.GPUUtil, b.GPUPowerW, b.GPUMemBytes, b.CostPerHour),
			fmt.Sprintf("bucket %d %q ttft %v %v", i, b.Class, b.TTFT.Edges, b.TTFT.Counts),
			fmt.Sprintf("bucket %d %q tpot %v %v", i, b.Class, b.TPOT.Edges, b.TPOT.Counts),
			fmt.Sprintf("bucket %d %q e2e %v %v", i, b.Class, b.E2E.Edges, b.E2E.Counts),
			fmt.Sprintf("bucket %d %q latency sums %v %v %v", i, b.Class, b.TTFTSum, b.TPOTSum, b.E2ESum),
			fmt.Sprintf("bucket %d %q queue %v %v", i, b.Class, b.Queue.Edges, b.Queue.Counts))
	}
	for _, r := range a.Replicas {
		out = append(out, fmt.Sprintf("replica %s %s %v", r.Name, r.Series, r.Finished), fmt.Sprintf("replica %s TTFT medians %v", r.Name, r.TTFTMedian), fmt.Sprintf("replica %s TPOT medians %v", r.Name, r.TPOTMedian),
			fmt.Sprintf("replica %s offered %v good %v", r.Name, r.Offered, r.Good), fmt.Sprintf("replica %s in flight %v", r.Name, r.InFlight))
	}
	out = append(out, fmt.Sprintf("replica warm-ups %q", a.ReplicaWarmups))
	if w := a.WarmupKept; w != nil {
		out = append(out, fmt.Sprintf("warm-up kept %+v", *w))
	}
	return out
}

// sameAggregate reports the first differences between two aggregates.
func sameAggregate(t *testing.T, what string, want, got *sources.Aggregate) {
	t.Helper()
	w, g := aggLines(want), aggLines(got)
	diffs := 0
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			if diffs < 5 {
				t.Errorf("%s: line %d differs\nfiles:      %.600s\nclickhouse: %.600s", what, i, a, b)
			}
			diffs++
		}
	}
	if diffs > 0 {
		t.Errorf("%s: %d of %d lines differ", what, diffs, len(w))
	}
}

// hasMedians reports whether some replica of a has a TTFT and a TPOT
// median in some slice.
func hasMedians(a *sources.Aggregate) bool {
	for _, r := range a.Replicas {
		for k := range r.TTFTMedian {
			if k < len(r.TPOTMedian) && r.TTFTMedian[k] > 0 && r.TPOTMedian[k] > 0 {
				return true
			}
		}
	}
	return false
}

// TestClickHouseAggregateEqualsFiles: on simulated runs and on records
// built to hit every branch of the good rule, the aggregate ClickHouse
// computes equals, field by field, the aggregate the streaming scan of the
// same records as files builds — same slices, strata, counts, token sums,
// replicas, notes, latency bins and latency sums.
func TestClickHouseAggregateEqualsFiles(t *testing.T) {
	srv := chtest.Start(t)
	edge, err := policies.Parse("edge.yaml", []byte(edgePolicy))
	if err != nil {
		t.Fatal(err)
	}
	chat, _ := policies.Load("chat")
	batch, _ := policies.Load("batch")
	// a label's prompt bands as strata too (normalize.prompt_bands: all)
	chatBands, _ := policies.Load("chat")
	chatBands.Normalize.PromptBands = "all"
	type run struct {
		name string
		pol  *policies.Policy
		reqs func() (b, c []sources.Request)
		// edit, when set, rewrites each record's line (armFilesEdited)
		edit func(i int, line string) string
	}
	simRun := func(scenario string) func() (b, c []sources.Request) {
		return func() (b, c []sources.Request) {
			sc, err := sim.Builtin(scenario)
			if err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(context.Background(), sc, 3, 3*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			return res.Requests(sources.Baseline), res.Requests(sources.Canary)
		}
	}
	edgeRun := func() (b, c []sources.Request) { return edgeRecords(1, 4000), edgeRecords(2, 4000) }
	// the edge records stretched to 3 hours and 1.5 hours: more slices
	// than an aggregate keeps (sources.MaxStreamSlices), widened to 40 s
	// and 20 s
	longRun := func() (b, c []sources.Request) { return longRecords(1, 3), longRecords(2, 1.5) }
	// a canary pod replaced halfway under a new name: one replica's
	// track ends where another's begins
	replacedRun := func() (b, c []sources.Request) {
		b, c = simRun("aa-quiet-30m")()
		mid := sim.DefaultStart().Add(90 * time.Second)
		for i := range c {
			if c[i].Replica == "canary-1" && c[i].Time >= float64(mid.UnixNano())/1e9 {
				c[i].Replica = "canary-1b"
			}
		}
		return b, c
	}
	// records none of which gives its attempt (Aggregate.AttemptKnown)
	noAttemptRun := func() (b, c []sources.Request) {
		b, c = edgeRun()
		for _, rs := range [][]sources.Request{b, c} {
			for i := range rs {
				rs[i].Attempt = 0
			}
		}
		return b, c
	}
	// records giving quality_ok, a few failing it, some not checked
	// (Aggregate.QualityChecked, QualityFailed)
	qualityRun := func() (b, c []sources.Request) {
		b, c = edgeRun()
		for k, rs := range [][]sources.Request{b, c} {
			for i := range rs {
				switch (i + k) % 9 {
				case 0:
					rs[i].Quality = sources.QualityBad
				case 1, 2:
					rs[i].Quality = sources.QualityUnknown
				default:
					rs[i].Quality = sources.QualityOK
				}
			}
		}
		return b, c
	}
	// one completion whose token count overflowed (2^31 − 1): the
	// aggregate's longest completion, which output_tokens_mean must not
	// rest on (heldByOneCompletion)
	overflowRun := func() (b, c []sources.Request) {
		b, c = simRun("aa-quiet-30m")()
		for i := range c {
			if c[i].Status == sources.StatusOK && i > len(c)/2 {
				c[i].OutputTokens = math.MaxInt32
				break
			}
		}
		return b, c
	}
	// records half of which give no prompt length, which chat's long
	// class reads: their class is counted as one a missing length may
	// have decided (Unverified[sources.ClassUnverified])
	noPromptRun := func() (b, c []sources.Request) {
		b, c = simRun("aa-quiet-30m")()
		for i := range c {
			if i%2 == 0 {
				c[i].PromptTokens = -1
			}
		}
		return b, c
	}
	runs := []run{
		{"aa-quiet chat", chat, simRun("aa-quiet-30m"), nil},
		{"short-outputs chat", chat, simRun("bs-short-outputs"), nil},
		{"errors-rejected batch", batch, simRun("bs-errors-rejected"), nil},
		{"retry chat", chat, simRun("bs-retry-5"), nil},
		{"edge records edge policy", edge, edgeRun, nil},
		{"edge records chat", chat, edgeRun, nil},
		{"edge records batch", batch, edgeRun, nil},
		{"long edge records chat", chat, longRun, nil},
		{"pod replaced chat", chat, replacedRun, nil},
		{"no attempt given chat", chat, noAttemptRun, nil},
		{"quality given chat", chat, qualityRun, nil},
		{"an overflowed token count chat", chat, overflowRun, nil},
		{"aa-quiet chat with label bands", chatBands, simRun("aa-quiet-30m"), nil},
		{"edge records chat with label bands", chatBands, edgeRun, nil},
		{"half the canary's prompt lengths missing chat", chat, noPromptRun, nil},
		// records naming their users, but every seventh (and some naming
		// "": no one), some names escaped (sources.UserTally)
		{"users named chat", chat, simRun("aa-quiet-30m"), func(i int, line string) string {
			switch {
			case i%7 == 0:
				return line
			case i%11 == 0:
				return line + `,"user":""`
			case i%5 == 0:
				// an escape: the strict parser's path, and ClickHouse's
				return line + fmt.Sprintf(`,"user":"t\u00e9nant-%d"`, i%97)
			}
			return line + fmt.Sprintf(`,"user":"u%d"`, (i*31)%200)
		}},
	}
	for i, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			dir := t.TempDir()
			table := fmt.Sprintf("run%d", i)
			b, c := r.reqs()
			plan := clickHousePlan(r.pol)
			src, err := clickhouse.New(clickhouse.Config{URL: srv.URL, Table: table})
			if err != nil {
				t.Fatal(err)
			}
			for _, arm := range []struct {
				arm  sources.Arm
				reqs []sources.Request
			}{{sources.Baseline, b}, {sources.Canary, c}} {
				path, ds := armFilesEdited(t, dir, arm.arm, arm.reqs, r.edit)
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				srv.LoadRequests(t, table, string(arm.arm), f)
				f.Close()
				want := streamAggregate(t, r.pol, ds)
				got, err := src.Read(context.Background(), clickhouse.Query{Arm: arm.arm, Where: "arm = " + clickhouse.QuoteString(string(arm.arm)),
					Start: sim.DefaultStart().Add(-time.Hour), End: sim.DefaultStart().Add(24 * time.Hour), Plan: plan})
				if err != nil {
					t.Fatal(err)
				}
				if got.Inputs[0].Count != len(ds.Requests) {
					t.Errorf("%s: %d records from ClickHouse, %d from the file", arm.arm, got.Inputs[0].Count, len(ds.Requests))
				}
				sameAggregate(t, string(arm.arm), want, got.Agg)
				if r.edit != nil && (got.Agg.Users == nil || !got.Agg.Users.Named) {
					t.Errorf("%s: no user named: the groups of users were not compared", arm.arm)
				}
				if r.name == "half the canary's prompt lengths missing chat" && arm.arm == sources.Canary && got.Agg.Unverified[sources.ClassUnverified] == 0 {
					t.Errorf("%s: no request whose class a missing length decided: the counts were not compared", arm.arm)
				}
				if r.name == "quality given chat" && (got.Agg.QualityFailed == 0 || got.Agg.QualityChecked <= got.Agg.QualityFailed) {
					t.Errorf("%s: quality checked %d, failed %d: the counts were not compared", arm.arm, got.Agg.QualityChecked, got.Agg.QualityFailed)
				}
				if r.pol == chatBands && !slices.ContainsFunc(got.Agg.Buckets, func(bk sources.AggBucket) bool { return strings.Contains(bk.Class, ", prompt ") }) {
					t.Errorf("%s: no label's prompt band among the strata: the label bands were not compared", arm.arm)
				}
				if r.name == "aa-quiet chat" && !hasMedians(got.Agg) {
					t.Errorf("%s: no replica with a TTFT and a TPOT median: the replicas' medians were not compared", arm.arm)
				}
				if r.name == "aa-quiet chat" && !slices.ContainsFunc(got.Agg.Replicas, func(tr sources.ReplicaTrack) bool {
					return slices.ContainsFunc(tr.InFlight, func(v float64) bool { return v > 0 })
				}) {
					t.Errorf("%s: no replica with a request in flight: the replicas' requests in flight were not compared", arm.arm)
				}
				if testing.Verbose() {
					t.Logf("%s: %d records, %d buckets, %d replicas", arm.arm, len(ds.Requests), len(want.Buckets), len(want.Replicas))
				}
			}
		})
	}
}

// TestClickHousePlanStrata: the plan names strata as the streaming
// aggregate does for each kind of request.
func TestClickHousePlanStrata(t *testing.T) {
	chat, _ := policies.Load("chat")
	batch, _ := policies.Load("batch")
	chatBands, _ := policies.Load("chat")
	chatBands.Normalize.PromptBands = "all"
	for _, c := range []struct {
		pol       *policies.Policy
		label     string
		pb        int
		class     string
		want      string
		wantClass string
	}{
		{chat, "chat", 0, "long", "chat × long", "long"},
		{chat, "", 1, "default", "prompt <512 × default", "default"},
		{chat, "", 0, "default", "prompt unknown × default", "default"},
		{chat, "", 7, "long", "prompt >=16k × long", "long"},
		{batch, "chat", 0, "default", "chat", "chat"},
		{batch, "", 3, "default", "prompt 1k-2k", "default"},
		// under prompt_bands: all a label's band, and the label alone
		// when the record gives no prompt length (the analysis then
		// counts the label whole in both arms, as the files' scan names it)
		{chatBands, "chat", 3, "default", "chat, prompt 1k-2k × default", "default"},
		{chatBands, "chat", 0, "long", "chat × long", "long"},
	} {
		p := clickHousePlan(c.pol)
		got := p.Stratum(c.label, c.pb, c.class)
		if got != c.want || analysis.StratumClass(c.pol, got) != c.wantClass {
			t.Errorf("%s: Stratum(%q, %d, %q) = %q (class %q), want %q (class %q)", c.pol.Name, c.label, c.pb, c.class,
				got, analysis.StratumClass(c.pol, got), c.want, c.wantClass)
		}
	}
	if !strings.Contains(fmt.Sprint(clickHousePlan(chat).Classes), "long") {
		t.Error("chat's classes missing from the plan")
	}
}
