package analysis

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/goodput-dev/goodput/analysis/histo"
)

// aggClasses is the per-class breakdown of a metrics comparison whose
// metrics carry a class label (--class-label): per class and arm, the
// offered requests and their share of the arm, SLO attainment between its
// histogram bounds, and the TTFT and TPOT p99 from the class's merged
// histograms with the edges of the bucket holding them. Each arm's own
// figures are shown (the canary before its reweighting to the baseline's
// mix), over the slices the warm-up cut keeps. Good requests are counted
// at the lower bound, as in the arm summary. Rows are named as on the
// request path: the label itself when the policy declares no classes,
// else the policy class that sets the SLO ("default": metrics are judged
// with the default SLO) with the label; an exact aggregate's strata are
// named the same way (see classOf). Empty when no bucket carries a class.
func aggClasses(b, c *aggArm, classOf func(key string) (class, label string)) []ClassRow {
	type acc struct {
		offered, lo, hi float64
		ttft, tpot      histo.Sum
	}
	per := func(a *aggArm) (map[string]*acc, float64) {
		out := map[string]*acc{}
		total := 0.0
		first := a.slices[0].start
		for i := range a.ds.Agg.Buckets {
			bk := &a.ds.Agg.Buckets[i]
			if bk.Start < first || bk.Class == "" {
				continue
			}
			cl, lb := classOf(bk.Class)
			k := cl + "\x00" + lb
			x := out[k]
			if x == nil {
				x = &acc{}
				out[k] = x
			}
			off := nan0(bk.Completed) + nan0(bk.Failed) + nan0(bk.Canceled) + nan0(bk.Rejected)
			x.offered += off
			total += off
			bb := a.bounds.Buckets[i]
			x.lo += nan0(bb.Lo)
			x.hi += nan0(bb.Hi)
			x.ttft.Add(bk.TTFT)
			x.tpot.Add(bk.TPOT)
		}
		return out, total
	}
	bs, tb := per(b)
	cs, tc := per(c)
	if len(bs)+len(cs) == 0 {
		return []ClassRow{}
	}
	arm := func(x *acc, total float64) ClassArm {
		if x == nil {
			x = &acc{}
		}
		bounds := func(lo, hi float64) *[2]Num { return &[2]Num{Num(lo), Num(hi)} }
		ttft, tpot := x.ttft.Histogram(), x.tpot.Histogram()
		tl, th := histo.QuantileBounds(0.99, ttft)
		pl, ph := histo.QuantileBounds(0.99, tpot)
		return ClassArm{Offered: int64(math.Round(x.offered)), Good: int64(math.Round(x.lo)), Share: Num(x.offered / total),
			SLOAttainment: Num(x.lo / x.offered), SLOAttainmentBounds: bounds(x.lo/x.offered, x.hi/x.offered),
			TTFTP99: Num(histo.Quantile(0.99, ttft)), TTFTP99Bounds: bounds(tl, th),
			TPOTP99: Num(histo.Quantile(0.99, tpot)), TPOTP99Bounds: bounds(pl, ph)}
	}
	names := map[string]bool{}
	for k := range bs {
		names[k] = true
	}
	for k := range cs {
		names[k] = true
	}
	rows := make([]ClassRow, 0, len(names))
	for k := range names {
		cl, lb, _ := strings.Cut(k, "\x00")
		row := ClassRow{Class: cl, Label: lb, Baseline: arm(bs[k], tb), Canary: arm(cs[k], tc)}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(x, y ClassRow) int {
		if c := cmp.Compare(x.Class, y.Class); c != 0 {
			return c
		}
		return cmp.Compare(x.Label, y.Label)
	})
	return rows
}

// classOf names an aggregate bucket's class for the class table and the
// per-class tail gates, as the request path names its rows: (the policy
// class that sets the SLO, the input's own label). Metrics carry a label
// only: with policy classes the row is ("default", label) — metrics are
// judged with the default SLO —, else (label, ""). An exact aggregate's
// stratum key (see Aggregator) holds the label or token-length band and,
// with policy classes, the policy class; a band is not a label.
func (j *aggJudgement) classOf(key string) (class, label string) {
	// once per stratum key, not once per bucket
	if v, ok := j.classMemo[key]; ok {
		return v[0], v[1]
	}
	class, label = j.classOfKey(key)
	if j.classMemo == nil {
		j.classMemo = map[string][2]string{}
	}
	j.classMemo[key] = [2]string{class, label}
	return class, label
}

// classOfKey computes classOf.
func (j *aggJudgement) classOfKey(key string) (class, label string) {
	policyClasses := len(j.p.Classes) > 0
	if !j.exact() {
		if policyClasses {
			return "default", key
		}
		return key, ""
	}
	head := stratumHead(j.p, key)
	if !policyClasses {
		if isBandKey(head) {
			return "default", ""
		}
		return stratumLabel(j.p, key), ""
	}
	cls := StratumClass(j.p, key)
	if isBandKey(head) {
		return cls, ""
	}
	return cls, stratumLabel(j.p, head)
}

// labelled reports whether any of an exact aggregate's strata is a class
// label rather than a token-length band.
func (j *aggJudgement) labelled(a *aggArm) bool {
	seen := map[string]bool{}
	for i := range a.ds.Agg.Buckets {
		k := a.ds.Agg.Buckets[i].Class
		if seen[k] {
			continue
		}
		seen[k] = true
		if !isBandKey(stratumHead(j.p, k)) {
			return true
		}
	}
	return false
}

// unlabelledCompleted counts the arm's completed requests in strata of no
// class label (a token-length band), every bucket as the source gave it,
// as completedAll counts them (labelClassGap).
func (j *aggJudgement) unlabelledCompleted(a *aggArm) float64 {
	n := 0.0
	for i := range a.ds.Agg.Buckets {
		bk := &a.ds.Agg.Buckets[i]
		if isBandKey(stratumHead(j.p, bk.Class)) {
			n += nan0(bk.Completed)
		}
	}
	return n
}

// tailClass is the class a bucket's requests are gated by in the per-class
// tail gates: the label when there is one, else the policy class (the
// request path's classKey); the policy class when one arm alone carries
// labels.
func (j *aggJudgement) tailClass(key string) string {
	cl, lb := j.classOf(key)
	if lb != "" && !j.oneArmLabels {
		return lb
	}
	return cl
}
