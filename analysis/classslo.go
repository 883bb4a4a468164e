package analysis

import (
	"fmt"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
)

// Per-class SLOs from metrics. A policy whose classes carry SLOs of their
// own (chat's long prompts: TTFT 4 s) cannot apply them to metrics that
// carry no class label: every request is judged by the default SLO. A
// gate built on good requests then measures another SLO than the
// policy's, in both directions: from the simulator's vLLM metrics a
// canary whose TTFT and TPOT were 5% worse — within chat's margins, its
// attainment under the policy's SLOs inside the 1 pp margin — failed 16
// of 40 runs on slo_attainment, long-prompt requests near 1 s counted as
// missing an SLO that is theirs at 4 s; and a long-prompt request slowed
// from 3 s to 5 s, bad at 1 s either way, is not seen at all. So the arms
// are judged a second time with every threshold at its most lenient
// class's (leniently), and a gate built on good requests keeps its
// verdict only where both readings agree: a pass or a fail that holds
// under one assignment of SLOs and not the other is inconclusive, with
// both readings in the reason.

// lenientPolicy is p with each SLO threshold raised to the largest any
// class gives it, its classes dropped (metrics cannot place requests in
// them); ok is false when no class sets a threshold above the default's.
func lenientPolicy(p *policies.Policy) (*policies.Policy, bool) {
	q := *p
	q.Classes = nil
	raised := false
	for _, c := range p.Classes {
		for _, x := range []struct{ to, from *policies.Duration }{{&q.SLO.TTFT, &c.SLO.TTFT}, {&q.SLO.TPOT, &c.SLO.TPOT}} {
			if *x.from > 0 && *x.to > 0 && *x.from > *x.to {
				*x.to = *x.from
				raised = true
			}
		}
	}
	return &q, raised
}

// goodBased reports whether a gate's figure is built on good requests
// (the SLO decides it).
func goodBased(name string) bool {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimSuffix(name, "_trend")
	switch name {
	case "slo_attainment", "goodput", "goodput_per_replica", "token_goodput", "cost_per_good_request", "attainment_dip":
		return true
	}
	return false
}

// judgeClassSLOs judges metrics arms (judgeAggregate) under cfg's policy
// and, when its classes set SLOs of their own that metrics cannot apply,
// under the lenient policy too, keeping a good-based gate's pass or fail
// only where both agree (see above).
func judgeClassSLOs(baseline, canary *sources.Dataset, cfg Config) (*Report, error) {
	r, err := judgeAggregate(baseline, canary, cfg)
	if err != nil || baseline.Agg.Exact {
		return r, err
	}
	lp, ok := lenientPolicy(cfg.Policy)
	if !ok {
		return r, nil
	}
	lc := cfg
	lc.Policy = lp
	lr, err := judgeAggregate(baseline, canary, lc)
	if err != nil {
		return r, nil // the default reading stands; the lenient one could not be made
	}
	lenient := map[string]Metric{}
	for _, m := range lr.Metrics {
		lenient[m.Name] = m
	}
	var held []string
	for i := range r.Metrics {
		m := &r.Metrics[i]
		if !goodBased(m.Name) || m.Verdict == Inconclusive {
			continue
		}
		l, ok := lenient[m.Name]
		if ok && l.Verdict == m.Verdict {
			continue
		}
		other := "absent"
		if ok {
			other = fmt.Sprintf("%s, %s [%s, %s]", strings.ToUpper(string(l.Verdict)), fmtDelta(l, float64(l.Delta)), fmtDelta(l, float64(l.Interval[0])), fmtDelta(l, float64(l.Interval[1])))
		}
		held = append(held, fmt.Sprintf("%s %s", m.Name, strings.ToLower(string(m.Verdict))))
		m.Reason = fmt.Sprintf("%s at the default SLO (%s) for every request, but %s with every class's most lenient SLO (%s): the metrics carry no class label, so which requests the policy's classes (%s) give their own SLO is unknown and neither reading decides; %s",
			strings.ToUpper(string(m.Verdict)), sloText(cfg.Policy.SLO), other, sloText(lp.SLO), classNames(cfg.Policy), "give the class label (--class-label) or judge per-request records")
		m.Verdict = Inconclusive
		m.NotFailed = false
		for k, why := range r.Reasons {
			if strings.HasPrefix(why, m.Name+": ") {
				r.Reasons[k] = m.Name + ": " + m.Reason
			}
		}
	}
	if len(held) == 0 {
		return r, nil
	}
	fail := false
	for _, m := range r.Metrics {
		fail = fail || m.Verdict == Fail
	}
	if r.Verdict == Pass || (r.Verdict == Fail && !fail) {
		r.Verdict = Inconclusive
		r.Reasons = append([]string{fmt.Sprintf("%s only at the default SLO for every request, not with every class's most lenient SLO: metrics cannot tell which requests the classes (%s) give their own SLO", strings.Join(held, ", "), classNames(cfg.Policy))}, r.Reasons...)
	}
	return r, nil
}

// sloText renders the TTFT and TPOT thresholds of s, e.g. "TTFT ≤ 1s, TPOT ≤ 80ms".
func sloText(s policies.SLO) string {
	var parts []string
	for _, x := range []struct {
		name string
		d    time.Duration
	}{{"TTFT", time.Duration(s.TTFT)}, {"TPOT", time.Duration(s.TPOT)}} {
		if x.d > 0 {
			parts = append(parts, fmt.Sprintf("%s ≤ %s", x.name, x.d))
		}
	}
	return strings.Join(parts, ", ")
}

// classNames lists the policy's classes that set an SLO of their own.
func classNames(p *policies.Policy) string {
	var out []string
	for _, c := range p.Classes {
		if c.SLO.TTFT > 0 || c.SLO.TPOT > 0 {
			out = append(out, c.Name)
		}
	}
	return strings.Join(out, ", ")
}
