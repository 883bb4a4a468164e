package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/requestlog"
)

// randomArmLog writes one arm's request log as the reader accepts it, with
// what strains a judge: from no record to 2,000, arrivals spread over
// nothing, a millisecond or an hour, in order or not; every status;
// latencies missing, zero, a nanosecond or a day; token counts missing,
// 0, 1 or 100,000; labels missing, unknown or with terminal escapes;
// zero to four replicas; none, three or 500 users, named by numbers,
// escapes or nothing; attempts, cancels and quality flags now and then.
func randomArmLog(rng *rand.Rand, arm string) []byte {
	n := []int{0, 1, 2, 3, 5, 20, 60, 300, 2000}[rng.IntN(9)]
	span := []float64{0, 0.001, 1, 10, 95, 600, 3600}[rng.IntN(7)]
	t0 := 1767225600.0 + float64(rng.IntN(3))*span/2
	inOrder := rng.IntN(2) == 0
	lat := func() float64 {
		switch rng.IntN(12) {
		case 0:
			return math.NaN()
		case 1:
			return 0
		case 2:
			return 1e-9
		case 3:
			return 1e5
		default:
			return math.Exp(rng.NormFloat64() - 1)
		}
	}
	tok := func() int {
		switch rng.IntN(10) {
		case 0:
			return -1
		case 1:
			return 0
		case 2:
			return 1
		case 3:
			return 100000
		default:
			return rng.IntN(2000) + 2
		}
	}
	statuses := []string{"ok", "ok", "ok", "ok", "error", "timeout", "canceled", "rejected"}
	classes := []string{"", "chat", "long", "a\x1b[31mred", "x"}
	replicas := rng.IntN(5)
	// users: none, a handful, or more than the groups they hash into
	users := []int{0, 0, 3, 500}[rng.IntN(4)]
	var buf bytes.Buffer
	for i := range n {
		ts := t0 + rng.Float64()*span
		if inOrder {
			ts = t0 + span*float64(i)/float64(n)
		}
		st := statuses[rng.IntN(len(statuses))]
		r := map[string]any{"ts": ts, "status": st}
		for _, k := range []string{"prompt_tokens", "output_tokens", "cached_tokens"} {
			if v := tok(); v >= 0 {
				r[k] = v
			}
		}
		if p, ok := r["prompt_tokens"].(int); ok {
			if c, ok := r["cached_tokens"].(int); ok && c > p {
				r["cached_tokens"] = p
			}
		}
		if st == "ok" || rng.IntN(3) == 0 {
			ttft, tpot := lat(), lat()
			if math.IsNaN(ttft) && st == "ok" {
				ttft = 0.5 // a completion gives its first token's time
			}
			if !math.IsNaN(ttft) {
				r["ttft_s"] = ttft
			}
			if !math.IsNaN(tpot) && rng.IntN(3) != 0 {
				r["tpot_s"] = tpot
			}
			if !math.IsNaN(ttft) && !math.IsNaN(tpot) && rng.IntN(4) != 0 {
				out := 1
				if o, ok := r["output_tokens"].(int); ok && o > 1 {
					out = o
				}
				r["e2e_s"] = ttft + float64(out-1)*tpot
			}
			if v := lat(); !math.IsNaN(v) && rng.IntN(3) == 0 {
				r["max_itl_s"] = v
			}
		}
		if c := classes[rng.IntN(len(classes))]; c != "" {
			r["class"] = c
		}
		if replicas > 0 {
			r["replica"] = arm + strconv.Itoa(rng.IntN(replicas))
		}
		if rng.IntN(3) == 0 {
			r["attempt"] = rng.IntN(3) + 1
		}
		if st == "canceled" && rng.IntN(2) == 0 {
			r["canceled_by"] = []string{"client", "server"}[rng.IntN(2)]
		}
		if rng.IntN(4) == 0 {
			r["quality_ok"] = rng.IntN(5) != 0
		}
		if users > 0 && rng.IntN(6) != 0 {
			switch k := rng.IntN(users); rng.IntN(8) {
			case 0:
				r["user"] = k // a number
			case 1:
				r["user"] = "" // no one
			case 2:
				r["user"] = "u\x1b[31m" + strconv.Itoa(k)
			default:
				r["user"] = arm + "-u" + strconv.Itoa(k)
			}
		}
		line, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// seedRange is how many seeded cases a random test runs and its first
// seed: def from 0, or as the environment's name (a count above 0) and
// name_FROM (the first seed) say.
func seedRange(name string, def int) (n, from int) {
	n = def
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv(name + "_FROM")); err == nil {
		from = v
	}
	return n, from
}

// TestRandomArms judges seeded random pairs of request logs (randomArmLog)
// under each built-in policy, exactly and from their streaming aggregates:
// neither path may panic, and what either refuses is a DataError naming
// an arm or the data. It found a handful of requests at one instant
// refused on the request path as "the warm-up cut of 0s removes the whole
// run" while the aggregate judged them too little data. 300 pairs by
// default; GOODPUT_RANDOM_ARMS=N judges N (GOODPUT_RANDOM_ARMS_FROM: the
// first seed), and -v prints how each path ended and the pairs whose
// verdicts differ between the paths, with the gates that differ; neither
// path may pass what the other does not.
func TestRandomArms(t *testing.T) {
	n, from := seedRange("GOODPUT_RANDOM_ARMS", 300)
	var pols []*policies.Policy
	for _, name := range policies.Names() {
		p, err := policies.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		pols = append(pols, p)
	}
	ended := map[string]int{}
	for seed := uint64(from); seed < uint64(from+n); seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		bl, cl := randomArmLog(rng, "b"), randomArmLog(rng, "c")
		p := pols[rng.IntN(len(pols))]
		judge := func(path string, fn func() (*Report, error)) (r *Report, err error) {
			defer func() {
				if e := recover(); e != nil {
					t.Errorf("seed %d, policy %s, %s: panic: %v\n%s", seed, p.Name, path, e, debug.Stack())
					r, err = nil, fmt.Errorf("panic")
				}
			}()
			r, err = fn()
			var de *DataError
			switch {
			case err == nil:
				ended[path+" "+string(r.Verdict)]++
			case errors.As(err, &de) && de.Msg != "":
				ended[path+" refused"]++
			default:
				t.Errorf("seed %d, policy %s, %s: refused without a DataError: %v", seed, p.Name, path, err)
			}
			return r, err
		}
		bd, err := requestlog.Read(context.Background(), "b.jsonl", bytes.NewReader(bl), sources.Baseline)
		if err != nil {
			ended["unread"]++
			continue
		}
		cd, err := requestlog.Read(context.Background(), "c.jsonl", bytes.NewReader(cl), sources.Canary)
		if err != nil {
			ended["unread"]++
			continue
		}
		cfg := Config{Policy: p, Resamples: 50, Seed: 1}
		exact, errExact := judge("exact", func() (*Report, error) { return Judge(&bd, &cd, cfg) })
		agg, errAgg := judge("aggregate", func() (*Report, error) {
			ab, ac, err := StreamedArms(&bd, &cd, cfg)
			if err != nil {
				return nil, err
			}
			return Judge(ab, ac, cfg)
		})
		if (errExact == nil) != (errAgg == nil) {
			ended["one path refused"]++
			t.Logf("seed %d, policy %s: refused on one path only: exact %v; aggregate %v", seed, p.Name, errExact, errAgg)
		}
		if exact != nil && agg != nil && exact.Verdict != agg.Verdict {
			ended["verdicts differ"]++
			t.Logf("seed %d, policy %s: exact %s, aggregate %s: %s", seed, p.Name, exact.Verdict, agg.Verdict, gatesApart(exact, agg))
			if exact.Verdict == Pass || agg.Verdict == Pass {
				t.Errorf("seed %d, policy %s: one path passes what the other does not (exact %s, aggregate %s)", seed, p.Name, exact.Verdict, agg.Verdict)
			}
		}
	}
	t.Logf("%d pairs: %v", n, ended)
}

// gatesApart lists the gates whose verdicts differ between two reports of
// one pair, "name exact→aggregate", and those only one report has.
func gatesApart(exact, agg *Report) string {
	byName := map[string]Verdict{}
	for _, m := range agg.Metrics {
		byName[m.Name] = m.Verdict
	}
	var out []string
	for _, m := range exact.Metrics {
		v, ok := byName[m.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s→absent", m.Name, m.Verdict))
		case v != m.Verdict:
			out = append(out, fmt.Sprintf("%s %s→%s", m.Name, m.Verdict, v))
		}
		delete(byName, m.Name)
	}
	for _, name := range sortedKeys(byName) {
		out = append(out, fmt.Sprintf("%s absent→%s", name, byName[name]))
	}
	return strings.Join(out, ", ")
}
