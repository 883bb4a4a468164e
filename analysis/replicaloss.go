package analysis

import (
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/sources"
)

// OutageFailSecs is the shortest outage of a canary replica, in seconds,
// that fails the canary_replica_loss guardrail: a replica that served
// nothing for at least 60 s while its peers served, and then came back,
// crashed and restarted (an inference engine needs tens of seconds to a
// few minutes to load its weights and pass its readiness probe again), or
// was taken out and put back. A shorter outage that normalize.ReplicaLoss
// still finds — whole buckets without a request over more than
// normalize.DefaultGapSecs (40 s at 10 s buckets, 60 s at 30 s), unlikely
// for the replica's own traffic — may as
// well be a routing pause or a health-check flap: the guardrail is
// inconclusive on it, never a pass. A replica lost for good fails whatever
// the time left.
const OutageFailSecs = 60

// replicaOutage is a replica event of one arm (lost or gap) placed on the
// arm's clock: the replica served nothing in [from, to).
type replicaOutage struct {
	ev normalize.ReplicaEvent
	// name is the replica's name as the reason shows it, escaped.
	name     string
	from, to float64
}

// placeOutages returns an arm's lost and gap events as outages, with at
// the clock time of bucket k (k may equal the number of buckets: the
// window's end) and name the escaped display name of a replica. A replica
// that joined late is not an outage.
func placeOutages(evs []normalize.ReplicaEvent, at func(k int) float64, name func(string) string) []replicaOutage {
	var out []replicaOutage
	for _, ev := range evs {
		if ev.Kind != normalize.EventLost && ev.Kind != normalize.EventGap {
			continue
		}
		out = append(out, replicaOutage{ev: ev, name: name(ev.Replica), from: at(ev.From), to: at(ev.To)})
	}
	return out
}

// unsharedOutages returns the canary's outages that no baseline outage
// overlaps in time: a replica both arms lose at once is the
// infrastructure's (a shared node, a zone, a network partition), not the
// change's.
func unsharedOutages(canary, baseline []replicaOutage) []replicaOutage {
	var out []replicaOutage
	for _, c := range canary {
		shared := false
		for _, b := range baseline {
			if b.from < c.to && c.from < b.to {
				shared = true
			}
		}
		if !shared {
			out = append(out, c)
		}
	}
	return out
}

// describe is one outage in a reason: replica, start (on clock, with its
// offset into the arm's replica grid) and duration.
func (o replicaOutage) describe(clock sources.Clock) string {
	d := o.to - o.from
	if o.ev.Kind == normalize.EventLost {
		return fmt.Sprintf("replica %s stopped serving at %s (+%gs) and did not come back (%gs to the window's end) while %d other replica(s) served",
			o.name, fmtTime(clock, o.from), o.ev.FromSec, d, o.ev.Others)
	}
	return fmt.Sprintf("replica %s served nothing from %s (+%gs) for %gs, then served again, while %d other replica(s) served",
		o.name, fmtTime(clock, o.from), o.ev.FromSec, d, o.ev.Others)
}

// replicaLossEval decides the canary_replica_loss guardrail, on the request
// path and on the aggregate path alike, from the canary's outages that the
// baseline did not show at the same time (unsharedOutages): absent without
// any. A replica lost for good, or out for at least OutageFailSecs, fails
// — the canary's problem, a crash under the change may be the change's
// doing, and the survivors carrying its load are judged as served; only
// shorter outages make it inconclusive. With normalize.canary_replica_loss
// "excuse" every outage is reported and the guardrail passes. nb and nc are
// the arms' replica counts.
func replicaLossEval(outs []replicaOutage, clock sources.Clock, setting string, nb, nc int) (gateEval, bool) {
	if len(outs) == 0 {
		return gateEval{}, false
	}
	reps := map[string]bool{}
	var long, short []string
	for _, o := range outs {
		reps[o.ev.Replica] = true
		if o.ev.Kind == normalize.EventLost || o.to-o.from >= OutageFailSecs-1e-9 {
			long = append(long, o.describe(clock))
		} else {
			short = append(short, o.describe(clock))
		}
	}
	n := float64(len(reps))
	m := Metric{Name: "canary_replica_loss", Guardrail: true, Direction: "lower_is_better", Scale: "absolute", Unit: "replicas",
		Baseline: 0, Canary: Num(n), Delta: Num(n), Interval: [2]Num{Num(math.NaN()), Num(math.NaN())},
		Margin: 0, NBaseline: int64(nb), NCanary: int64(nc), PFail: Num(math.NaN()),
		Method: "replica-activity", Adjusted: []string{}}
	what := strings.Join(append(append([]string{}, long...), short...), "; ")
	switch {
	case setting == "excuse":
		m.Verdict = Pass
		m.Reason = fmt.Sprintf("a canary replica stopped serving while the baseline's did not (%s); excused by the policy (normalize.canary_replica_loss: excuse): its requests are still judged as served", what)
	case len(long) > 0:
		m.Verdict = Fail
		m.Reason = fmt.Sprintf("a canary replica stopped serving while the baseline's did not (%s): the canary's problem, a crash or restart the change may have caused (lost for good, or out for ≥ %ds); set normalize.canary_replica_loss: excuse when it is known not to be the change's (a drained node)",
			what, OutageFailSecs)
	default:
		m.Verdict = Inconclusive
		m.Reason = fmt.Sprintf("a canary replica served nothing for a while, shorter than %ds, while its peers served and the baseline's did not (%s): a restart or a routing pause, not shown to be a crash, so it cannot pass unexplained; set normalize.canary_replica_loss: excuse when it is known not to be the change's",
			OutageFailSecs, what)
	}
	return gateEval{m: m}, true
}
