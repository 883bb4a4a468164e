package analysis

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// Users, not requests, are what a sticky router (a session cookie, a
// consistent hash on a user header) assigns to an arm. Users differ in what
// they ask — one writes long prompts, another wants long answers — and an
// arm that serves users of its own carries their mix for the whole run: a
// difference between the arms' means that no time bucket sees, since every
// bucket holds the same users. On the fleet model whose arms serve 500
// users each (output lengths σ 0.5 of the log per user), identical builds
// failed in 6–7% of runs, `output_tokens_mean`'s 90% interval holding the
// truth in 22–25% (docs/EVIDENCE.md).
//
// When the records name their user (`user`; the request log keeps only
// its group, sources.UserOf), each arm's count gates are also tallied per
// group of users (sources.UserTally), over every record counted (the whole window: a user's
// share of an arm, and with it the spread users add, does not shrink with
// the window). With d_g the group's share of the canary's influence less
// its share of the baseline's — (num_g − r·den_g)/Σden per arm, over r on
// a log scale — the spread between groups,
//
//	V_users = G/(G−1) · Σ_g d_g²    (G groups that hold a record; Σ_g d_g = 0)
//
// is what requests alone give (V_requests = Σ_i (num_i − r·den_i)²/Σden²,
// both arms) when users do not matter, and more when the arms' users
// differ. What it holds beyond chance — beyond V_requests times the 95th
// percentile of χ²_{G−1}/(G−1) — is added to the gate's variance, its
// interval widened about its point by the same factor (method "+users").
// Users named in both arms (no stickiness) cancel in d_g: nothing is added.
// The gate's own interval (time buckets, the mix standardization) is kept;
// the extra is the pooled arms' (not standardized), an approximation where
// the mix is reweighted. Quantile gates are not widened (a user's share of
// a tail is not a count).
const (
	// MinUserGroups is the fewest groups of users that must hold records
	// for their spread to be read: with fewer the spread is too rough to
	// widen by, and the report says so.
	MinUserGroups = 8
	// userExcessLevel is the percentile of χ²_{G−1}/(G−1) beyond which the
	// spread between groups counts as users differing.
	userExcessLevel = 0.95
)

// userGate is the row of sources.UserTally that tallies metric's numerator and
// denominator; false for the gates users do not widen.
func userGate(metric string) (int, bool) {
	switch metric {
	case "slo_attainment":
		return 0, true
	case "error_rate":
		return 1, true
	case "rejected_share":
		return 2, true
	case "canceled_share":
		return 3, true
	case "retry_share":
		return 4, true
	case "output_tokens_mean":
		return 5, true
	}
	return 0, false
}

// userSpread is what the arms' users add to a count gate's variance.
type userSpread struct {
	named  bool    // either arm's records named users
	groups int     // groups holding a record, in either arm
	extra  float64 // variance added (0: users do not differ beyond chance)
	ratio  float64 // V_users / V_requests
}

// spreadOf reads what users add to gate k's variance, the log ratio's when
// logScale (see the comment at the top of this file). Arms without named
// users, or an empty arm, add nothing.
func spreadOf(b, c *sources.UserTally, k int, logScale bool) userSpread {
	s := userSpread{named: b != nil && c != nil && (b.Named || c.Named)}
	if !s.named {
		return s
	}
	type arm struct{ r, scale, vreq float64 }
	read := func(t *sources.UserTally) (arm, bool) {
		var n, d float64
		for g := range sources.UserGroups {
			n += float64(t.Num[k][g])
			d += float64(t.Den[k][g])
		}
		if !(d > 0) {
			return arm{}, false
		}
		a := arm{r: n / d, scale: 1 / d}
		if logScale {
			if !(a.r > 0) {
				return arm{}, false
			}
			a.scale /= a.r
		}
		// Σ(num − r·den)² with den ∈ {0, 1} and num 0 where den is 0
		a.vreq = (float64(t.Sq[k]) - 2*a.r*n + a.r*a.r*d) * a.scale * a.scale
		return a, true
	}
	ab, okb := read(b)
	ac, okc := read(c)
	if !okb || !okc {
		return s
	}
	var ss float64
	for g := range sources.UserGroups {
		if b.Den[k][g]+c.Den[k][g] == 0 {
			continue
		}
		s.groups++
		d := (float64(c.Num[k][g])-ac.r*float64(c.Den[k][g]))*ac.scale - (float64(b.Num[k][g])-ab.r*float64(b.Den[k][g]))*ab.scale
		ss += d * d
	}
	vreq := ab.vreq + ac.vreq
	if s.groups < MinUserGroups || !(vreq > 0) {
		return s
	}
	df := float64(s.groups - 1)
	vusers := ss * float64(s.groups) / df
	s.ratio = vusers / vreq
	q := distuv.ChiSquared{K: df}.Quantile(userExcessLevel) / df
	s.extra = math.Max(0, vusers-q*vreq)
	return s
}

// widenedBy widens est about its point so that its variance gains extra,
// its method gaining suffix; f is the factor its interval's arms grew by,
// ok false (est unchanged) when extra is not positive or est has no
// standard error or interval.
func widenedBy(est stats.Estimate, extra float64, suffix string) (out stats.Estimate, f float64, ok bool) {
	if !(extra > 0) || !(est.SE > 0) || math.IsNaN(est.CI.Lo) || math.IsNaN(est.CI.Hi) {
		return est, 1, false
	}
	f = math.Sqrt(1 + extra/(est.SE*est.SE))
	est.CI.Lo = est.Point - (est.Point-est.CI.Lo)*f
	est.CI.Hi = est.Point + (est.CI.Hi-est.Point)*f
	est.SE *= f
	est.Method += suffix
	return est, f, true
}

// widenedForUsers widens est by what the arms' users add to its variance
// (spreadOf), noting it in adjusted; est unchanged when they add nothing
// or it has no standard error.
func widenedForUsers(est stats.Estimate, s userSpread, adjusted *[]string) stats.Estimate {
	est, f, ok := widenedBy(est, s.extra, "+users")
	if ok {
		*adjusted = append(*adjusted, fmt.Sprintf("widened for users: the records name their users, and across %d groups of them the arms differ %.2f× as much as their requests alone would (beyond chance), as when each arm serves users of its own: the interval is %.0f%% wider than time buckets alone make it",
			s.groups, s.ratio, 100*(f-1)))
	}
	return est
}

// usersWidening is what the arms' users add to one count gate: their
// spread between groups (spreadOf) and, for attainment, what their prompt
// lengths do to the rest of their arm through the load (loadSlope, read
// only when those lengths differ beyond chance).
type usersWidening struct {
	spread, prompt userSpread
	slope, se      float64
	load           bool // slope and se were read
}

// usersWideningOf reads it for gate metric (relative: on the log scale)
// from the arms' tallies; blocks gives both arms' loadSlope blocks. ok is
// false for a gate users do not widen. Both judging paths call it.
func usersWideningOf(b, c *sources.UserTally, metric string, relative bool, blocks func() (b, c []loadBlock)) (w usersWidening, ok bool) {
	k, ok := userGate(metric)
	if !ok {
		return w, false
	}
	w.spread = spreadOf(b, c, k, relative)
	if metric == "slo_attainment" {
		if w.prompt = spreadOf(b, c, userPromptRow, true); w.prompt.extra > 0 {
			bb, cb := blocks()
			w.slope, w.se, w.load = loadSlope(bb, cb)
		}
	}
	return w, true
}

// widen widens est by the users' spread, then by their load, noting each
// widening in adjusted.
func (w usersWidening) widen(est stats.Estimate, adjusted *[]string) stats.Estimate {
	est = widenedForUsers(est, w.spread, adjusted)
	if w.load {
		est = widenedForUsersLoad(est, w.prompt, w.slope, w.se, adjusted)
	}
	return est
}

// usersStep is the report's "users" normalization step: what the arms'
// users add to each count gate of gates that users can widen (userGate);
// false when neither arm's records name users.
func usersStep(b, c *sources.UserTally, gates []policies.Gate) (NormalizationStep, bool) {
	st := NormalizationStep{Name: "users", Setting: "detect"}
	if b == nil || c == nil || !(b.Named || c.Named) {
		return st, false
	}
	var parts []string
	groups := 0
	for _, g := range gates {
		k, ok := userGate(g.Metric)
		if !ok {
			continue
		}
		info, _ := policies.Metric(g.Metric)
		s := spreadOf(b, c, k, info.Scale == "relative")
		groups = max(groups, s.groups)
		switch {
		case s.groups < MinUserGroups || !(s.ratio > 0):
			continue
		case s.extra > 0:
			st.Applied = true
			parts = append(parts, fmt.Sprintf("%s: groups differ %.2f× as much as requests alone would, widened", g.Metric, s.ratio))
		default:
			parts = append(parts, fmt.Sprintf("%s: %.2f×, within chance", g.Metric, s.ratio))
		}
	}
	st.Detail = fmt.Sprintf("the records name their users, hashed into %d groups (%d hold records); a count gate's interval is widened by the spread between groups of users beyond chance, which a sticky router's arms carry all run and time buckets do not see", sources.UserGroups, groups)
	if groups < MinUserGroups {
		st.Detail += fmt.Sprintf("; fewer than %d groups hold records: too few users to read their spread, nothing widened", MinUserGroups)
	}
	if len(parts) > 0 {
		st.Detail += "; " + strings.Join(parts, "; ")
	}
	return st, true
}

// usersAdvice is what an inconclusive gate widened for users says in place
// of a projection of more minutes: the spread the arms' users add does not
// shrink as the same users send more requests.
const usersAdvice = "the arms' users set part of this interval (widened for users), which a longer run with the same users does not narrow: more users in each arm, or a router that does not keep each user on one arm, would decide it"

// widenedByUsers reports whether gate m's interval was widened for users.
func widenedByUsers(m Metric) bool { return strings.Contains(m.Method, "+users") }

// fewUsersApart says why a decided run is held when the records name so
// few users that they fill fewer than MinUserGroups groups and some group
// is served by one arm only (a few tenants, each kept on one arm): their
// spread cannot be read, and the arms may differ by who they served; ""
// otherwise (users named in both arms, or enough of them to read).
func fewUsersApart(b, c *sources.UserTally) string {
	if b == nil || c == nil || !(b.Named || c.Named) {
		return ""
	}
	held, apart := 0, 0
	for g := range sources.UserGroups {
		// gate 0 counts every record
		nb, nc := b.Den[0][g], c.Den[0][g]
		if nb+nc == 0 {
			continue
		}
		held++
		if nb == 0 || nc == 0 {
			apart++
		}
	}
	if held >= MinUserGroups || apart == 0 {
		return ""
	}
	return fmt.Sprintf("the records name so few users that they fill %d of %d groups, %d of them served by one arm only: too few users to tell the change from who each arm served (name more users, or route each user to both arms)",
		held, sources.UserGroups, apart)
}

// The groups of users see what users do to their own requests; they cannot
// see what users do to the rest of their arm. In a fleet that queues,
// users of one arm who write longer prompts make every request of that arm
// wait longer for its prefill: the simulator's aa-sticky-users (500 users
// a side, prompts σ 0.3 of the log) spreads attainment 2.5× as much as
// aa-quiet-30m across runs, while answers σ 0.5 of the log alone spread it
// no more than aa-quiet-30m. So when the arms' users differ in prompt
// length beyond chance (sources.UserTally's prompt row, V_p the variance
// it adds to the log ratio of the arms' mean prompt), attainment is also
// widened by what that difference does through the load: θ²·V_p, with θ
// the slope of attainment on the log of prompt tokens offered per second
// across one-minute blocks of both arms, each arm's own mean removed
// (loadSlope), and θ² read as θ̂² + SE(θ̂)² so a slope known only roughly
// widens more. Prompt lengths are the traffic's, never the change's.

// userPromptRow is the row of sources.UserTally holding prompt tokens per
// admitted request.
const userPromptRow = 6

// loadBlockSeconds is how long a block of loadSlope is: a minute, long
// enough for a queue to answer the load that arrived in it.
const loadBlockSeconds = 60.0

// loadBlock is a run of an arm's analysed buckets: its offered and good
// requests, the prompt tokens its admitted requests gave, and its seconds.
type loadBlock struct{ offered, good, prompt, secs float64 }

// blocksOf groups an arm's buckets, in time order, into runs of per
// (the last, shorter run dropped).
func blocksOf(bs []loadBlock, per int) []loadBlock {
	var out []loadBlock
	for i := 0; i+per <= len(bs); i += per {
		var b loadBlock
		for _, x := range bs[i : i+per] {
			b.offered, b.good, b.prompt, b.secs = b.offered+x.offered, b.good+x.good, b.prompt+x.prompt, b.secs+x.secs
		}
		out = append(out, b)
	}
	return out
}

// loadSlope is the slope of SLO attainment (a fraction) on the log of
// prompt tokens offered per second across the blocks of every arm given,
// each arm's weighted means removed (weights: offered requests), with its
// heteroskedasticity-robust standard error; ok false with fewer than 10
// blocks holding requests and prompt tokens, or no spread in the load.
func loadSlope(arms ...[]loadBlock) (slope, se float64, ok bool) {
	type pt struct{ x, y, w float64 }
	var pts []pt
	for _, blocks := range arms {
		var arm []pt
		var sw, sx, sy float64
		for _, b := range blocks {
			if !(b.offered > 0) || !(b.prompt > 0) || !(b.secs > 0) {
				continue
			}
			p := pt{math.Log(b.prompt / b.secs), b.good / b.offered, b.offered}
			arm = append(arm, p)
			sw, sx, sy = sw+p.w, sx+p.w*p.x, sy+p.w*p.y
		}
		for _, p := range arm {
			pts = append(pts, pt{p.x - sx/sw, p.y - sy/sw, p.w})
		}
	}
	if len(pts) < 10 {
		return 0, 0, false
	}
	var sxx, sxy float64
	for _, p := range pts {
		sxx += p.w * p.x * p.x
		sxy += p.w * p.x * p.y
	}
	if !(sxx > 0) {
		return 0, 0, false
	}
	slope = sxy / sxx
	var v float64
	for _, p := range pts {
		e := p.y - slope*p.x
		v += p.w * p.w * p.x * p.x * e * e
	}
	return slope, math.Sqrt(v) / sxx, true
}

// widenedForUsersLoad widens attainment's est by what the arms' users'
// prompt lengths (s, the prompt row's spread) do through the load, with
// slope and se from loadSlope; est unchanged when they differ within
// chance or est has no standard error.
func widenedForUsersLoad(est stats.Estimate, s userSpread, slope, se float64, adjusted *[]string) stats.Estimate {
	est, f, ok := widenedBy(est, (slope*slope+se*se)*s.extra, "+users-load")
	if ok {
		*adjusted = append(*adjusted, fmt.Sprintf("widened for the load the arms' users put on the fleet: their prompt lengths differ %.2f× as much across %d groups of users as requests alone would (beyond chance), and attainment moves %+.2f pp [±%.2f] with 10%% more prompt tokens offered a second: the interval is %.0f%% wider",
			s.ratio, s.groups, 100*slope*math.Log(1.1), 100*se*math.Log(1.1), 100*(f-1)))
	}
	return est
}

// loadBlocks is loadSlope's blocks of an arm on the request path: its
// analysed buckets, a stretch left out of both arms counting nothing.
func (j *judgement) loadBlocks(a *armData) []loadBlock {
	kept := a.kept()
	bs := make([]loadBlock, len(kept))
	for i := range kept {
		if b := &kept[i]; !b.leftOut {
			bs[i] = loadBlock{b.offered, b.good, b.promptTokens, b.secs}
		}
	}
	return blocksOf(bs, max(1, int(math.Round(loadBlockSeconds/a.bucketSecs))))
}

// loadBlocks is loadSlope's blocks of an arm on the aggregate: its
// analysed slices, as the request path's buckets.
func (j *aggJudgement) loadBlocks(a *aggArm) []loadBlock {
	bs := make([]loadBlock, len(a.slices))
	step := a.ds.Agg.Step
	for i := range a.slices {
		s := &a.slices[i]
		if !s.leftOut {
			bs[i] = loadBlock{s.offered(), s.goodLo, nanTo0(s.promptTokens), s.secs()}
		}
	}
	if !(step > 0) {
		return nil
	}
	return blocksOf(bs, max(1, int(math.Round(loadBlockSeconds/step))))
}
