package sim

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/requestlog"
)

func lastCounters(res *Result, arm sources.Arm) (c EngineCounters) {
	for _, s := range res.Metrics {
		if s.Arm != arm || len(s.Samples) == 0 {
			continue
		}
		x := s.Samples[len(s.Samples)-1].Counters
		c.Preemptions += x.Preemptions
		c.PrefixHits += x.PrefixHits
		c.PrefixQueries += x.PrefixQueries
		c.GenerationTokens += x.GenerationTokens
	}
	return c
}

// TestEngineMechanisms changes one canary knob at a time on the steady
// scenario and checks the canary differs from the baseline the way the
// mechanism says.
func TestEngineMechanisms(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(sc *Scenario)
		check func(t *testing.T, res *Result)
	}{
		{"fcfs scheduler pauses decoding for whole prefills", func(sc *Scenario) {
			sc.Canary.Scheduler = "fcfs"
		}, func(t *testing.T, res *Result) {
			b := quantile(field(res.Baseline, "", func(r *sources.Request) float64 { return r.MaxITL }), 0.99)
			c := quantile(field(res.Canary, "", func(r *sources.Request) float64 { return r.MaxITL }), 0.99)
			if c < 1.2*b {
				t.Errorf("p99 stall: fcfs %.4f s vs chunked %.4f s; want fcfs clearly worse", c, b)
			}
		}},
		{"a small KV budget preempts, wait mode does not", func(sc *Scenario) {
			sc.Baseline.KV.Blocks, sc.Canary.KV.Blocks = 2200, 2200
			sc.Canary.KV.OnExhaustion = "wait"
		}, func(t *testing.T, res *Result) {
			pb, pc := lastCounters(res, sources.Baseline).Preemptions, lastCounters(res, sources.Canary).Preemptions
			if pb == 0 || pc != 0 {
				t.Errorf("preemptions: preempt mode %v (want > 0), wait mode %v (want 0)", pb, pc)
			}
		}},
		{"a cold prefix cache hits less at first", func(sc *Scenario) {
			sc.Canary.PrefixCache.StartCold = true
		}, func(t *testing.T, res *Result) {
			hit := func(reqs []sources.Request) float64 {
				start := float64(res.Scenario.Start.Unix())
				var h, n float64
				for _, r := range reqs {
					if r.Time-start < 2 && r.CachedTokens >= 0 {
						h += float64(r.CachedTokens)
						n += float64(r.PromptTokens)
					}
				}
				return h / n
			}
			if hb, hc := hit(res.Baseline), hit(res.Canary); hc >= hb {
				t.Errorf("first-seconds hit rate: cold %.3f vs warm %.3f", hc, hb)
			}
		}},
		{"a replica failure fails its requests and resets its counters", func(sc *Scenario) {
			sc.Failures = []Failure{{Arm: "canary", Replica: 0, At: time.Minute, RestartAfter: 30 * time.Second}}
		}, func(t *testing.T, res *Result) {
			failed := 0
			for _, r := range res.Canary {
				if r.Status == sources.StatusError && r.Replica == "canary-0" {
					failed++
				}
			}
			var pod ReplicaSeries
			for _, s := range res.Metrics {
				if s.Pod == "canary-0" {
					pod = s
				}
			}
			gap, reset := false, false
			for i := 1; i < len(pod.Samples); i++ {
				if pod.Samples[i].Time-pod.Samples[i-1].Time > 15 {
					gap = true
				}
				if pod.Samples[i].Counters.GenerationTokens < pod.Samples[i-1].Counters.GenerationTokens {
					reset = true
				}
			}
			if failed == 0 || !gap || !reset {
				t.Errorf("failed requests %d, scrape gap %v, counter reset %v", failed, gap, reset)
			}
		}},
		{"decode speed shortens TPOT in proportion", func(sc *Scenario) {
			sc.Canary.DecodeSpeed = 2
		}, func(t *testing.T, res *Result) {
			r := quantile(field(res.Canary, "", tpot), 0.5) / quantile(field(res.Baseline, "", tpot), 0.5)
			if r < 0.45 || r > 0.65 {
				t.Errorf("median TPOT ratio %.3f at twice the decode speed", r)
			}
		}},
		{"client timeouts cancel and retries amplify", func(sc *Scenario) {
			sc.Canary.Replicas = 1
			sc.Canary.QueueLimit = 200
			sc.Client = Client{TTFTTimeout: 3 * time.Second, Retry: Retry{MaxAttempts: 3, Backoff: time.Second, Multiplier: 2,
				On: []string{"rejected", "canceled"}}}
		}, func(t *testing.T, res *Result) {
			s := res.Summary.Canary
			if s.Canceled == 0 || s.Rejected == 0 || s.RetryAmplification <= 1.2 || res.Summary.Baseline.RetryAmplification != 1 {
				t.Errorf("overloaded canary: %+v; baseline amplification %v", s, res.Summary.Baseline.RetryAmplification)
			}
			for _, r := range res.Canary {
				if r.Status == sources.StatusCanceled && sources.Known(r.TTFT) {
					t.Fatalf("a request canceled for TTFT timeout has a first token: %+v", r)
				}
				if r.Attempt > 3 {
					t.Fatalf("attempt %d beyond max_attempts", r.Attempt)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Builtin("steady")
			if err != nil {
				t.Fatal(err)
			}
			tc.setup(&sc)
			res, err := Run(context.Background(), sc, 2, 4*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, res)
		})
	}
}

func TestMirroredSplit(t *testing.T) {
	sc, err := Builtin("steady")
	if err != nil {
		t.Fatal(err)
	}
	sc.Traffic.Split = "mirrored"
	sc.Canary.DecodeSpeed = 1.5
	res, err := Run(context.Background(), sc, 4, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Baseline) != len(res.Canary) {
		t.Fatalf("mirrored arms got %d and %d requests", len(res.Baseline), len(res.Canary))
	}
	for i := range res.Baseline {
		b, c := res.Baseline[i], res.Canary[i]
		if b.Time != c.Time || b.PromptTokens != c.PromptTokens || b.Class != c.Class {
			t.Fatalf("request %d differs: %+v vs %+v", i, b, c)
		}
	}
}

func TestRunCanceled(t *testing.T) {
	sc, err := Builtin("steady")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, sc, 1, 0); err == nil {
		t.Error("a canceled context must stop the run with an error")
	}
	huge := sc
	huge.Traffic.Rate = 1e6
	if _, err := Run(context.Background(), huge, 1, 0); err == nil || !strings.Contains(err.Error(), "would offer") {
		t.Errorf("a run of about 9e8 requests must be refused up front, got %v", err)
	}
	sc.Traffic.CanaryShare = 0
	if _, err := Run(context.Background(), sc, 1, 0); err == nil || !strings.Contains(err.Error(), "canary_share") {
		t.Errorf("an invalid scenario must be refused naming the key, got %v", err)
	}
}

// Users: aa-sticky-users names a user on every record, the arms' users
// apart (sticky) or the same (shared); a user's answers are its own
// (their spread between users is far beyond what one user's requests
// give); the log names them so that each reads back in its group; a
// scenario without users names none.
func TestUsers(t *testing.T) {
	sc, err := Builtin("aa-sticky-users")
	if err != nil {
		t.Fatal(err)
	}
	groups := func(rs []sources.Request) map[uint8]int {
		out := map[uint8]int{}
		for i := range rs {
			if rs[i].User == 0 {
				t.Fatalf("record %d names no user", i)
			}
			out[rs[i].User]++
		}
		return out
	}
	for _, shared := range []bool{false, true} {
		sc.Traffic.Users.Shared = shared
		res, err := Run(context.Background(), sc, 1, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		gb, gc := groups(res.Baseline), groups(res.Canary)
		if len(gb) < 60 || len(gc) < 60 {
			t.Errorf("shared %v: %d and %d groups of users", shared, len(gb), len(gc))
		}
		var buf strings.Builder
		if err := WriteRequestLog(&buf, res.Canary); err != nil {
			t.Fatal(err)
		}
		back, err := requestlog.Read(context.Background(), "c.jsonl", strings.NewReader(buf.String()), sources.Canary)
		if err != nil {
			t.Fatal(err)
		}
		for i := range back.Requests {
			if back.Requests[i].User != res.Canary[i].User {
				t.Fatalf("record %d: group %d written, %d read back", i, res.Canary[i].User, back.Requests[i].User)
			}
		}
	}
	// each user's answers are its own: the mean output length per group
	// of users spreads far more than the requests' spread allows
	sc.Traffic.Users.Shared = false
	res, err := Run(context.Background(), sc, 1, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var sum, sq [sources.UserGroups + 1]float64
	var n [sources.UserGroups + 1]float64
	var all, allSq, allN float64
	for _, r := range res.Canary {
		if r.Status == sources.StatusOK && r.OutputTokens > 0 && r.Class == "chat" {
			x := math.Log(float64(r.OutputTokens))
			sum[r.User] += x
			sq[r.User] += x * x
			n[r.User]++
			all, allSq, allN = all+x, allSq+x*x, allN+1
		}
	}
	within := allSq/allN - (all/allN)*(all/allN)
	var between, groupsSeen float64
	for g := 1; g <= sources.UserGroups; g++ {
		if n[g] > 0 {
			d := sum[g]/n[g] - all/allN
			between += d * d / (within / n[g])
			groupsSeen++
		}
	}
	if ratio := between / groupsSeen; ratio < 3 {
		t.Errorf("the groups' mean log answer length spreads %.2f× what the requests give: users have no answers of their own", ratio)
	}
	plain, err := Builtin("aa-quiet-30m")
	if err != nil {
		t.Fatal(err)
	}
	res, err = Run(context.Background(), plain, 1, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Baseline {
		if res.Baseline[i].User != 0 {
			t.Fatalf("aa-quiet-30m names a user on record %d", i)
		}
	}
}
