package main

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// recordKey is FNV-1a over every field, as the digest the duplicate
// checks were defined with.
func TestRecordKeyIsFNV(t *testing.T) {
	ref := func(r *sources.Request) uint64 {
		h := fnv.New64a()
		var b [8]byte
		for _, v := range []float64{r.Time, r.TTFT, r.TPOT, r.E2E, r.MaxITL} {
			if math.IsNaN(v) {
				v = math.NaN()
			}
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
			h.Write(b[:])
		}
		for _, v := range []int64{r.PromptTokens, r.OutputTokens, r.CachedTokens, int64(r.Attempt), int64(r.Status), int64(r.Quality), int64(r.CanceledBy)} {
			binary.LittleEndian.PutUint64(b[:], uint64(v))
			h.Write(b[:])
		}
		h.Write([]byte(r.Class))
		h.Write([]byte{0})
		h.Write([]byte(r.Replica))
		return h.Sum64()
	}
	r := sources.NewRequest()
	r2 := r
	r2.Time, r2.TTFT, r2.Class, r2.Replica, r2.Status, r2.Attempt = 1.7e9, 0.25, "chat", "pod-1", sources.StatusOK, 2
	r3 := r2
	r3.Status, r3.CanceledBy = sources.StatusCanceled, sources.CanceledByServer
	r4 := r3
	r4.CanceledBy = sources.CanceledByClient
	if recordKey(&r3) == recordKey(&r4) {
		t.Error("a server's and a client's cancel of the same request give one digest")
	}
	for _, x := range []sources.Request{r, r2, r3, r4} {
		if got, want := recordKey(&x), ref(&x); got != want {
			t.Errorf("recordKey %x, FNV-1a %x", got, want)
		}
	}
}

// The sketch counts repeats exactly while it holds every digest, and
// estimates them once it samples; equal multisets compare equal in any
// order, and one changed record makes them differ.
func TestKeySketch(t *testing.T) {
	key := func(i int) uint64 { return mix64(uint64(i) + 12345) }
	small := newKeySketch()
	for i := 0; i < 1000; i++ {
		small.add(key(i % 990)) // 10 repeats
	}
	if dup, n, exact := small.duplicates(); dup != 10 || n != 1000 || !exact {
		t.Errorf("small: %d of %d (exact %v), want 10 of 1000 exactly", dup, n, exact)
	}
	const n = 3 * sketchKeys
	a, b := newKeySketch(), newKeySketch()
	for i := 0; i < n; i++ {
		k := key(i)
		if i%50 == 0 {
			k = key(i - 1) // 2% repeats
		}
		a.add(k)
	}
	for i := n - 1; i >= 0; i-- {
		k := key(i)
		if i%50 == 0 {
			k = key(i - 1)
		}
		b.add(k)
	}
	dup, total, exact := a.duplicates()
	if exact || total != n || math.Abs(float64(dup)/float64(n)-0.02) > 0.004 {
		t.Errorf("sampled: %d of %d (exact %v), want about 2%%", dup, total, exact)
	}
	if a.keys.len() > sketchKeys {
		t.Errorf("sketch holds %d digests, more than %d", a.keys.len(), sketchKeys)
	}
	if !a.sameAs(b) {
		t.Error("the same records in reverse order differ")
	}
	c := newKeySketch()
	for i := 0; i < n; i++ {
		k := key(i)
		if i%50 == 0 {
			k = key(i - 1)
		}
		if i == 77 {
			k = key(-5)
		}
		c.add(k)
	}
	if a.sameAs(c) {
		t.Error("one changed record compares equal")
	}
	// records both arms share: counted exactly while both sketches hold
	// every digest, estimated from the coarser sample once either samples
	x, y := newKeySketch(), newKeySketch()
	for i := 0; i < 1000; i++ {
		x.add(key(i))
		y.add(key(i + 900)) // 100 shared
	}
	if got, exact := x.shared(y); got != 100 || !exact {
		t.Errorf("shared, small: %d (exact %v), want 100 exactly", got, exact)
	}
	x, y = newKeySketch(), newKeySketch()
	for i := 0; i < n; i++ {
		x.add(key(i))
		if i < sketchKeys/2 {
			y.add(key(n + i)) // y is small and exact; x samples
		}
		if i%10 == 0 {
			y.add(key(i)) // a tenth of x in y
		}
	}
	if got, exact := x.shared(y); exact || math.Abs(float64(got)-n/10) > 0.2*n/10 {
		t.Errorf("shared, sampled: %d (exact %v), want about %d", got, exact, n/10)
	}
	if got, _ := y.shared(x); math.Abs(float64(got)-n/10) > 0.2*n/10 {
		t.Errorf("shared the other way round: %d, want about %d", got, n/10)
	}
	// merging halves gives the whole
	h1, h2 := newKeySketch(), newKeySketch()
	for i := 0; i < n; i++ {
		k := key(i)
		if i%50 == 0 {
			k = key(i - 1)
		}
		if i%2 == 0 {
			h1.add(k)
		} else {
			h2.add(k)
		}
	}
	h1.merge(h2)
	if !h1.sameAs(a) {
		t.Error("merged halves differ from the whole")
	}
	if d1, _, _ := h1.duplicates(); d1 != dup {
		t.Errorf("merged halves count %d repeats, the whole %d", d1, dup)
	}
}

// The streaming digest gives equal records equal digests (whatever NaN
// they hold for unknown) and changes with every field, strings of any
// length included.
func TestStreamKeyCoversEveryField(t *testing.T) {
	base := sources.NewRequest()
	base.Time, base.TTFT, base.E2E, base.Class, base.Replica, base.Status, base.Attempt = 1.7e9, 0.25, 1.5, "chat", "pod-1", sources.StatusOK, 1
	same := base
	same.TPOT = math.Float64frombits(math.Float64bits(math.NaN()) | 1) // another NaN
	key := func(r *sources.Request) uint64 { k, _, _ := streamKey(r); return k }
	noReplica := func(r *sources.Request) uint64 { _, k, _ := streamKey(r); return k }
	if key(&base) != key(&same) {
		t.Error("unknown latencies with different NaN bits give different digests")
	}
	// the digest without the replica's name: the same under another name,
	// and kept only for records with a measured latency
	relabelled := base
	relabelled.Replica = "canary-7"
	if noReplica(&base) != noReplica(&relabelled) || key(&base) == key(&relabelled) {
		t.Error("a record under another replica name: want the same measured digest and another full one")
	}
	unmeasured := base
	unmeasured.TTFT, unmeasured.E2E = math.NaN(), math.NaN()
	if _, _, ok := streamKey(&base); !ok {
		t.Error("a record with TTFT and end-to-end latency is not counted as measured")
	}
	if _, _, ok := streamKey(&unmeasured); ok {
		t.Error("a record with neither TTFT nor end-to-end latency is counted as measured")
	}
	edits := []func(r *sources.Request){
		func(r *sources.Request) { r.Time += 1e-6 },
		func(r *sources.Request) { r.TTFT = 0.26 },
		func(r *sources.Request) { r.TPOT = 0.03 },
		func(r *sources.Request) { r.E2E = 1.6 },
		func(r *sources.Request) { r.MaxITL = 0.1 },
		func(r *sources.Request) { r.PromptTokens = 10 },
		func(r *sources.Request) { r.OutputTokens = 10 },
		func(r *sources.Request) { r.CachedTokens = 10 },
		func(r *sources.Request) { r.Attempt = 2 },
		func(r *sources.Request) { r.Status = sources.StatusError },
		func(r *sources.Request) { r.Quality = sources.QualityBad },
		func(r *sources.Request) { r.Status, r.CanceledBy = sources.StatusCanceled, sources.CanceledByUnknown },
		func(r *sources.Request) { r.Status, r.CanceledBy = sources.StatusCanceled, sources.CanceledByClient },
		func(r *sources.Request) { r.Status, r.CanceledBy = sources.StatusCanceled, sources.CanceledByServer },
		func(r *sources.Request) { r.Class = "chat-long-label" },
		func(r *sources.Request) { r.Class = "" },
		func(r *sources.Request) { r.Replica = "pod-2" },
		func(r *sources.Request) { r.Class, r.Replica = "chatpod-1", "" }, // same bytes, moved between fields
		func(r *sources.Request) { r.Replica = "pod-1\x00" },
	}
	seen := map[uint64]int{key(&base): -1}
	for k, edit := range edits {
		r := base
		edit(&r)
		kr := key(&r)
		if j, dup := seen[kr]; dup {
			t.Errorf("edit %d gives the digest of %d", k, j)
		}
		seen[kr] = k
	}
}

// TestStreamCutsReplicaWarmup: a canary replica that fails and comes back
// cold has its own warm-up cut by the streaming judge, which reads the
// canary's file a second time without it (the request path cuts it from
// the requests in memory): the report names the cut as the exact judge's
// does. From a pipe, which cannot be read twice, the replica is kept and
// a warning says so.
func TestStreamCutsReplicaWarmup(t *testing.T) {
	d := t.TempDir()
	sc := filepath.Join("..", "..", "testdata", "scenarios", "replica-restart.yaml")
	run := filepath.Join(d, "run")
	if code, _, errs := runCLI(t, nil, "simulate", "--scenario", sc, "--seed", "2", "--out", run); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errs)
	}
	b, c := filepath.Join(run, "baseline.jsonl"), filepath.Join(run, "canary.jsonl")
	warmup := func(out string) string {
		t.Helper()
		var rep struct {
			Normalization struct {
				Steps []struct{ Name, Detail string }
			}
			Warnings []string
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var ds []string
		for _, s := range rep.Normalization.Steps {
			if s.Name == "warmup" {
				ds = append(ds, s.Detail)
			}
		}
		return strings.Join(ds, " | ") + " || " + strings.Join(rep.Warnings, " | ")
	}
	code, out, errs := runCLI(t, nil, "judge", "--exact", "--baseline", b, "--canary", c, "--format", "json")
	if code == ExitError || code == ExitUsage || !strings.Contains(warmup(out), `replica "canary-1" entered at`) {
		t.Fatalf("exact: exit %d, no replica cut: %s %s", code, warmup(out), errs)
	}
	code, out, errs = runCLI(t, nil, "judge", "--stream", "--baseline", b, "--canary", c, "--format", "json")
	if code == ExitError || code == ExitUsage || !strings.Contains(warmup(out), `replica "canary-1" entered at`) {
		t.Errorf("stream: exit %d, no replica cut: %s", code, warmup(out))
	}
	if !strings.Contains(errs, "canary: reading 1 file(s) again without the warm-up of replica \"canary-1\"") {
		t.Errorf("stream: the second read is not said on stderr: %s", errs)
	}
	data, err := os.ReadFile(c)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(d, "fifo")
	feedFIFO(t, fifo, data)
	code, out, errs = runCLI(t, nil, "judge", "--stream", "--baseline", b, "--canary", fifo, "--format", "json")
	w := warmup(out)
	if code == ExitError || code == ExitUsage || strings.Contains(w, `replica "canary-1" entered at`) ||
		!strings.Contains(w, `canary: replica "canary-1" entered late and was slow at first, but its warm-up was not cut`) {
		t.Errorf("pipe: exit %d, want the replica kept and a warning: %s %s", code, w, errs)
	}
}

// TestStrayLabelIsFolded: one baseline record of the example with a label
// no canary record has (a typo) no longer leaves every count gate
// undecided on the request path ("cannot standardise"), nor turns the
// aggregate's reweighting off: both judges count it in the largest
// stratum of its policy class, say so in the mix step, and decide. A
// label on 5% of the baseline's records is a real difference of traffic
// and is not folded: both judges compare the arms as counted and the
// unmatched_strata guardrail keeps the run from passing.
func TestStrayLabelIsFolded(t *testing.T) {
	d := t.TempDir()
	base, err := os.ReadFile(filepath.Join("..", "..", "testdata", "example", "baseline.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	can := filepath.Join("..", "..", "testdata", "example", "canary.jsonl")
	relabel := func(every int, label string) string {
		lines := strings.SplitAfter(string(base), "\n")
		for i := 99; i < len(lines); i += every {
			lines[i] = strings.Replace(lines[i], `"class":"chat"`, `"class":"`+label+`"`, 1)
		}
		return writeFile(t, d, label+".jsonl", strings.Join(lines, ""))
	}
	mix := func(out string) string {
		t.Helper()
		var rep struct {
			Verdict       string
			Normalization struct {
				Steps []struct{ Name, Detail string }
			}
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v: %.300s", err, out)
		}
		for _, s := range rep.Normalization.Steps {
			if s.Name == "mix" {
				return rep.Verdict + ": " + s.Detail
			}
		}
		return rep.Verdict
	}
	stray := relabel(1<<30, "typo") // line 100 only
	for _, how := range []string{"--exact", "--stream"} {
		_, out, errs := runCLI(t, nil, "judge", how, "--baseline", stray, "--canary", can, "--format", "json")
		m := mix(out)
		if !strings.HasPrefix(m, "pass") || !strings.Contains(m, `stray stratum "typo × default" (1 request, only in the baseline`) {
			t.Errorf("%s, one stray label: %s %s", how, m, errs)
		}
	}
	// a 5% class only in the baseline: not folded, not standardized (the
	// arms compared as counted) and the run held by unmatched_strata, on
	// both paths
	rare := relabel(20, "rare") // every 20th line from 100: about 5%
	for _, how := range []string{"--exact", "--stream"} {
		_, out, _ := runCLI(t, nil, "judge", how, "--baseline", rare, "--canary", can, "--format", "json")
		if m := mix(out); strings.Contains(m, "stray stratum") || strings.HasPrefix(m, "pass") || !strings.Contains(m, "only one arm") && !strings.Contains(m, "one arm only") ||
			!strings.Contains(out, `"unmatched_strata"`) {
			t.Errorf("%s, a 5%% class only in the baseline was folded, standardised or passed: %.600s", how, m)
		}
	}
}
