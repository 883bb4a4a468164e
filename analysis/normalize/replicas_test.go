package normalize

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// fleet generates per-replica arrivals per bucket: replica i serves
// Poisson(rate) requests per bucket while up[i](t) is true.
func fleet(rng *rand.Rand, b int, rate float64, up []func(t int) bool) []ReplicaActivity {
	out := make([]ReplicaActivity, len(up))
	for i, u := range up {
		out[i] = ReplicaActivity{Name: "replica-" + string(rune('a'+i)), Requests: make([]float64, b)}
		for t := range b {
			if u(t) {
				out[i].Requests[t] = distuv.Poisson{Lambda: rate, Src: rng}.Rand()
			}
		}
	}
	return out
}

func always(int) bool { return true }

// TestReplicaLoss: a replica of four that stops at 10 minutes of a 20-minute
// window is reported as lost with its time; the others are not.
func TestReplicaLoss(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	reps := fleet(rng, 120, 8, []func(int) bool{always, always, func(t int) bool { return t < 60 }, always})
	ev := ReplicaLoss(reps, LossOptions{})
	if len(ev) != 1 {
		t.Fatalf("events %+v, want one loss", ev)
	}
	e := ev[0]
	t.Log(e.Reason)
	if e.Replica != "replica-c" || e.Kind != "lost" || e.From != 60 || e.To != 120 || e.FromSec != 600 || e.ToSec != 1200 || e.Others != 3 {
		t.Errorf("event %+v", e)
	}
	if !strings.Contains(e.Reason, "from 600s to the end of the window at 1200s") {
		t.Errorf("reason %q", e.Reason)
	}
	in := InService(reps, ev)
	if in[0] != 4 || in[59] != 4 || in[60] != 3 || in[119] != 3 {
		t.Errorf("in service %v", in)
	}
	// the baseline kept all four: matched periods are the first 10 minutes
	base := InService(fleet(rng, 120, 8, []func(int) bool{always, always, always, always}), nil)
	m := MatchedPeriods(in, base)
	if n := countTrue(m); n != 60 || !m[0] || !m[59] || m[60] {
		t.Errorf("matched %d buckets: %v", n, m)
	}
}

func countTrue(v []bool) int {
	n := 0
	for _, b := range v {
		if b {
			n++
		}
	}
	return n
}

func TestReplicaEvents(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 2))
	for _, c := range []struct {
		name string
		rate float64
		up   []func(int) bool
		want []string // "replica kind from to"
	}{
		{"steady fleet", 8, []func(int) bool{always, always, always}, nil},
		{"restart gap", 8, []func(int) bool{always, func(t int) bool { return t < 30 || t >= 42 }}, []string{"replica-b gap 30 42"}},
		{"short pause is normal", 8, []func(int) bool{always, func(t int) bool { return t < 30 || t >= 33 }}, nil},
		{"late join", 8, []func(int) bool{always, func(t int) bool { return t >= 20 }}, []string{"replica-b joined 0 20"}},
		{"everyone silent: the load stopped", 8, []func(int) bool{func(t int) bool { return t < 80 }, func(t int) bool { return t < 80 }}, nil},
		// 0.3 requests per bucket: silences of 4+ buckets are common and
		// are not losses; a real loss needs ln(b/0.001)/0.3 ≈ 39 buckets
		{"low-traffic replica", 0.3, []func(int) bool{always, always}, nil},
		{"low-traffic loss", 0.3, []func(int) bool{always, func(t int) bool { return t < 40 }, always, always, always}, []string{"replica-b lost"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			reps := fleet(rng, 120, c.rate, c.up)
			ev := ReplicaLoss(reps, LossOptions{BucketSecs: 10})
			var got []string
			for _, e := range ev {
				s := e.Replica + " " + e.Kind
				if e.Kind != "lost" {
					s += " " + strconv.Itoa(e.From) + " " + strconv.Itoa(e.To)
				}
				got = append(got, s)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("events %q, want %q (%+v)", got, c.want, ev)
			}
		})
	}
}

func TestInServiceGapAndJoin(t *testing.T) {
	reps := []ReplicaActivity{
		{Name: "a", Requests: []float64{9, 9, 9, 9, 9, 9, 9, 9, 9, 9}},
		{Name: "b", Requests: []float64{9, 9, 0, 0, 0, 0, 0, 9, 9, 0}}, // gap 2–6, still in service at the end
		{Name: "c", Requests: []float64{0, 0, 0, 0, 0, 9, 9, 9, 9, 9}}, // joined at 5
	}
	ev := ReplicaLoss(reps, LossOptions{})
	in := InService(reps, ev)
	want := []int{2, 2, 1, 1, 1, 2, 2, 3, 3, 3}
	if !slices.Equal(in, want) {
		t.Errorf("in service %v, want %v (events %+v)", in, want, ev)
	}
	if m := MatchedPeriods(in, []int{2, 2, 2}); !slices.Equal(m, []bool{false, false, false, false, false, false, false, false, false, false}) {
		t.Errorf("matched %v", m)
	}
	if m := MatchedPeriods([]int{1, 2, 2, 2}, []int{3, 3, 2, 3, 3}); !slices.Equal(m, []bool{false, true, false, true, false}) {
		t.Errorf("matched %v", m)
	}
	if m := MatchedPeriods(nil, nil); len(m) != 0 {
		t.Errorf("matched %v", m)
	}
}

// loadArm is b buckets of 10 s with r replicas and Poisson offered load of
// perReplica requests/s/replica, times a multiplier that ramps from lo to hi
// over the run.
func loadArm(rng *rand.Rand, b int, replicas, perReplica, lo, hi float64) Load {
	l := Load{Offered: make([]float64, b), ReplicaSecs: make([]float64, b)}
	for t := range b {
		m := lo + (hi-lo)*float64(t)/float64(b-1)
		l.ReplicaSecs[t] = 10 * replicas
		l.Offered[t] = distuv.Poisson{Lambda: perReplica * m * 10 * replicas, Src: rng}.Rand()
	}
	return l
}

func TestCompareLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 4))
	for _, c := range []struct {
		name             string
		x, y             Load
		like, matched    bool
		reason           string
		minKeep, maxKeep int
	}{
		{"same load", loadArm(rng, 120, 2, 3, 1, 1), loadArm(rng, 120, 4, 3, 1, 1), true, false, "like-for-like load", 120, 120},
		{"canary busier, overlapping ramps", loadArm(rng, 120, 2, 3, 1.0, 2.0), loadArm(rng, 120, 2, 3, 0.6, 1.5), true, true, "buckets of matched load", 30, 110},
		{"disjoint load", loadArm(rng, 120, 2, 6, 1, 1), loadArm(rng, 120, 2, 3, 1, 1), false, false, "not like-for-like", 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := CompareLoad(c.x, c.y, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r.Reason)
			if r.LikeForLike != c.like || r.Matched != c.matched || !strings.Contains(r.Reason, c.reason) {
				t.Errorf("like %v matched %v: %s", r.LikeForLike, r.Matched, r.Reason)
			}
			if r.Tolerance != DefaultLoadTolerance {
				t.Errorf("tolerance %g", r.Tolerance)
			}
			if c.like {
				kx, ky := countTrue(r.KeepCanary), countTrue(r.KeepBaseline)
				if kx < c.minKeep || kx > c.maxKeep || ky < c.minKeep || ky > c.maxKeep {
					t.Errorf("kept %d and %d buckets, want %d–%d", kx, ky, c.minKeep, c.maxKeep)
				}
				if math.Abs(r.MatchedRelDiff) > r.Tolerance {
					t.Errorf("matched buckets differ by %.3f", r.MatchedRelDiff)
				}
			}
		})
	}
	if _, err := CompareLoad(Load{Offered: []float64{1}}, Load{}, 0.1); err == nil || !strings.Contains(err.Error(), "canary has 1 offered counts but 0") {
		t.Errorf("err %v", err)
	}
	if _, err := CompareLoad(Load{Offered: []float64{-1}, ReplicaSecs: []float64{1}}, Load{}, 0.1); err == nil || !strings.Contains(err.Error(), "canary bucket 0") {
		t.Errorf("err %v", err)
	}
	r, err := CompareLoad(Load{Offered: []float64{1}, ReplicaSecs: []float64{0}}, Load{Offered: []float64{1}, ReplicaSecs: []float64{1}}, 0.1)
	if err != nil || r.LikeForLike || !strings.Contains(r.Reason, "undefined") {
		t.Errorf("no replica time: %+v %v", r, err)
	}
}

// TestSRM: a 45/55 split where 50/50 was declared is a mismatch; a split
// within chance is not.
func TestSRM(t *testing.T) {
	for _, c := range []struct {
		canary, baseline, share float64
		mismatch                bool
		reason                  string
	}{
		{900, 1100, 0.5, true, "sample ratio mismatch against the declared 50.00%"},
		{4500, 5500, 0.5, true, "canary share 45.00%"},
		{1010, 990, 0.5, false, "consistent with the declared 50.00%"},
		{960, 9040, 0.1, false, "consistent with"},
		{45, 55, 0.5, false, "consistent with"}, // too few requests to tell
		{1, 1, 1.5, false, "not in (0, 1)"},
		{0, 0, 0.5, false, "not usable"},
	} {
		r := SRM(c.canary, c.baseline, c.share)
		t.Log(r.Reason)
		if r.Mismatch != c.mismatch || !strings.Contains(r.Reason, c.reason) {
			t.Errorf("%v/%v at %v: mismatch %v (p %g), reason %q", c.canary, c.baseline, c.share, r.Mismatch, r.P, r.Reason)
		}
	}
}

// TestReplicaLossHandover: a replica replaced by another under a new name
// (its last and the newcomer's first requests within GapBuckets) is not
// lost, nor is a name seen for one request; a replacement that arrives
// after an outage, or a replica that served from the start, excuses
// nothing. Before, each row but the last two gave a lost event, which
// failed canary_replica_loss.
func TestReplicaLossHandover(t *testing.T) {
	upTo := func(n int) func(int) bool { return func(t int) bool { return t < n } }
	from := func(n int) func(int) bool { return func(t int) bool { return t >= n } }
	for _, tc := range []struct {
		name string
		up   []func(int) bool
		lost []string // replicas with a lost event
	}{
		{"pod replaced at 5 min", []func(int) bool{always, upTo(30), from(30)}, nil},
		{"replacement 20 s early", []func(int) bool{always, upTo(30), from(28)}, nil},
		{"replacement 30 s late", []func(int) bool{always, upTo(30), from(33)}, nil},
		{"two replaced, two newcomers", []func(int) bool{upTo(40), upTo(41), from(40), from(41)}, nil},
		{"replacement after 2 min", []func(int) bool{always, upTo(30), from(42)}, []string{"replica-b"}},
		{"one replica lost, none replaces it", []func(int) bool{always, always, upTo(30)}, []string{"replica-c"}},
		{"lost at 20 s beside a replica there from the start", []func(int) bool{from(1), upTo(2), always}, []string{"replica-b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reps := fleet(rand.New(rand.NewPCG(7, 7)), 60, 8, tc.up)
			var lost []string
			for _, e := range ReplicaLoss(reps, LossOptions{}) {
				if e.Kind == EventLost {
					lost = append(lost, e.Replica)
				}
			}
			if !slices.Equal(lost, tc.lost) {
				t.Errorf("lost %v, want %v", lost, tc.lost)
			}
		})
	}
	// one request under another name, at 20 s of a 10-minute run
	reps := fleet(rand.New(rand.NewPCG(7, 8)), 60, 8, []func(int) bool{always, always})
	reps = append(reps, ReplicaActivity{Name: "stray", Requests: make([]float64, 60)})
	reps[2].Requests[2] = 1
	if ev := ReplicaLoss(reps, LossOptions{}); len(ev) != 0 {
		t.Errorf("a name seen once: events %+v, want none", ev)
	}
}

// TestLossOfAFewRequests: a replica whose arrivals are a request or two at
// the start of a long run, silent after while its peers serve, is not
// lost: spread evenly over its time in the window a request or two land
// in its first bucket often enough (1/300 for one). Its rate read off that
// bucket alone (one a bucket, lower bound 0.05) called 250 quiet buckets a
// loss. Three requests in the first bucket and nothing after is one.
func TestLossOfAFewRequests(t *testing.T) {
	for _, c := range []struct {
		first float64
		want  int
	}{{1, 0}, {2, 0}, {3, 1}} {
		peer := ReplicaActivity{Name: "a", Requests: make([]float64, 300)}
		for k := range peer.Requests {
			peer.Requests[k] = 8
		}
		few := ReplicaActivity{Name: "b", Requests: make([]float64, 300)}
		few.Requests[0] = c.first
		ev := ReplicaLoss([]ReplicaActivity{peer, few}, LossOptions{BucketSecs: 10})
		if len(ev) != c.want || c.want == 1 && (ev[0].Kind != EventLost || ev[0].Replica != "b" || ev[0].From != 1) {
			t.Errorf("%g requests in the first bucket: events %+v, want %d loss", c.first, ev, c.want)
		}
	}
}

// TestGapInSeconds: the normal silence is DefaultGapSecs whatever the
// bucket. Counted as 3 buckets it grew with them: at 30 s buckets a
// replica out for two minutes (3 empty buckets) was not found, and the
// canary passed.
func TestGapInSeconds(t *testing.T) {
	for _, c := range []struct {
		bucket float64
		empty  int
		want   int
	}{{10, 3, 0}, {10, 4, 1}, {30, 1, 0}, {30, 2, 1}, {30, 3, 1}, {60, 1, 1}, {5, 6, 0}, {5, 7, 1}} {
		peer := ReplicaActivity{Name: "a", Requests: make([]float64, 120)}
		gone := ReplicaActivity{Name: "b", Requests: make([]float64, 120)}
		for k := range peer.Requests {
			peer.Requests[k] = 8 * c.bucket
			if k < 60 || k >= 60+c.empty {
				gone.Requests[k] = 8 * c.bucket
			}
		}
		ev := ReplicaLoss([]ReplicaActivity{peer, gone}, LossOptions{BucketSecs: c.bucket})
		if len(ev) != c.want || c.want == 1 && (ev[0].Kind != EventGap || ev[0].From != 60 || ev[0].To != 60+c.empty) {
			t.Errorf("%g s buckets, %d empty: events %+v, want %d gap", c.bucket, c.empty, ev, c.want)
		}
	}
}
