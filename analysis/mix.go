package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/analysis/stats"
	"github.com/goodput-dev/goodput/sources"
)

// mixPlan says how gates are standardised to a reference traffic mix:
// which strata (policy classes, else token-length bands; crossed with
// prefix-cache hit bands when the cache is stratified) and which reference
// weights.
type mixPlan struct {
	mode  string // normalize.Weights mode
	by    string // what the strata are, for the report
	names []string
	index map[string]int32
	cache string // stratify | adjust | none: the cache handling chosen
	// fold maps a stray cache band (under StrayBandShare of both arms) to
	// the band its requests are counted in
	fold        map[string]string
	cacheReason string
	// stratum of each request per arm, −1 when not analysed
	b, c []int32
	// strataFolds says which stray strata were counted in which, and which
	// the outcome made (strayStrataFolds), for the report
	strataFolds []string
	// own flags, per name, the strata each arm keeps at its own share
	// (normalize.Strata.Own); nil when none
	own []bool
	// results per gate, and the arms' mixes, for the report
	notes []mixNote
	mixes string
	// merged says, per metric, why its strata were taken with each
	// label's prompt and cache bands together (judgement.standardized)
	merged map[string]string
}

// mixNote is one standardized comparison for the mix step's detail: the
// metric and the standardization's own figures, shown when the metric is
// not a gate of the report (a gate shows its reported figures, floors
// included, as on the aggregate: naiveInMixStep).
type mixNote struct {
	metric, text string
}

// planMix decides the strata and weights, or returns nil when no
// standardisation was asked for.
func (j *judgement) planMix() *mixPlan {
	p := j.p
	cache := p.Normalize.Cache
	mode := p.Normalize.Mix
	if mode == "none" && cache == "none" {
		return nil
	}
	plan := &mixPlan{index: map[string]int32{}, cache: "none"}
	// cache handling
	if cache != "none" {
		// over the later half of the run: computed once, for the choice,
		// the caveat and the cache step's note
		moved, hb, hc := cacheShifted(j.b, j.c)
		j.cacheLate = [2]float64{hb, hc}
		bandsB, bandsC := cacheBands(j.b), cacheBands(j.c)
		plan.fold = strayBands(bandsB, bandsC)
		bandsB, bandsC = foldBands(bandsB, plan.fold), foldBands(bandsC, plan.fold)
		switch cache {
		case "stratify":
			plan.cache, plan.cacheReason = "stratify", "requested"
		case "adjust":
			plan.cache, plan.cacheReason = "adjust", "requested"
			if mode != "none" {
				plan.cache, plan.cacheReason = "none", "adjust requested, but CUPED compares mean bucket attainment over each arm's own mix and would replace the mix-standardized comparison: not applied (set normalize.mix: none to use it)"
			}
		case "auto":
			// a change that moved the hit rate is gated on its
			// total effect: the bands would be a mediator
			if moved {
				plan.cacheReason = cacheMovedReason(hb, hc)
				break
			}
			if ok, why := baselineBandsCovered(bandsB, bandsC, mode); ok {
				plan.cache, plan.cacheReason = "stratify", why
				break
			}
			ch := normalize.AutoCache(bandsC, bandsB, [2]int{len(j.c.kept()), len(j.b.kept())})
			plan.cacheReason = ch.Reason
			switch ch.Mode {
			case normalize.CacheModeStratify:
				plan.cache = "stratify"
			case normalize.CacheModeAdjust:
				plan.cache = "adjust"
				if mode != "none" {
					// CUPED compares mean bucket attainment of the arms'
					// own mixes: it would replace the mix-standardized
					// estimate, so it is not used
					plan.cache = "none"
					plan.cacheReason = "no cache adjustment: the bands are too thin to stratify and CUPED on the hit rate would replace the mix-standardized comparison (" + ch.Reason + ")"
				}
			}
		}
		if plan.cache == "stratify" && mode == normalize.MixWeights {
			// explicit weights name classes: cache bands within them
			// would be strata no weight names
			plan.cache, plan.cacheReason = "none", "no cache strata: normalize.mix weights names classes, and their prefix-cache bands would be strata no weight names ("+plan.cacheReason+")"
		}
		if plan.cache == "stratify" && len(plan.fold) > 0 {
			plan.cacheReason += "; " + foldText(plan.fold)
		}
		switch {
		case !moved:
			// the caveat matters only when the change moved the hit
			// rate; the cache step's detail says it did not
		case plan.cache == "stratify":
			j.warnf("prefix-cache bands are strata: %s", normalize.MediatorCaveat)
		case plan.cache == "adjust":
			j.warnf("slo_attainment is CUPED-adjusted for the per-bucket prefix-cache hit rate: %s", normalize.MediatorCaveat)
		}
		j.cache, j.cacheReason = plan.cache, plan.cacheReason
	}
	if mode == "none" {
		if plan.cache != "stratify" {
			return nil
		}
		mode = "baseline"
	}
	plan.mode = mode
	// Strata: the request's own class label where the input gives one, its
	// token-length band where not, crossed with the policy class that sets
	// its SLO (policy classes assign SLOs; they never erase what the data
	// says). Explicit weights name policy classes, so with mix: weights the
	// strata are the policy classes.
	// A policy class decided by output length is the arm's outcome, as an
	// output band would be: strata are then the labels or prompt bands
	// alone (the class still sets each request's SLO)
	outcome := outcomeClasses(j.p)
	policyClasses := len(j.p.Classes) > 0 && len(outcome) == 0
	// labels stratify only when both arms carry them: one arm's labels
	// against the other's bands would share no stratum
	lb, lc := j.labels[0], j.labels[1]
	labelled := lb && lc
	if w := labelMismatch(lb, lc); w != "" {
		j.warnf("%s; the request path stratifies both arms by token-length band instead, labels aside", w)
	}
	byWeights := mode == normalize.MixWeights && len(j.cls.names) > 1
	switch {
	case byWeights:
		plan.by = "classes"
	case labelled && policyClasses && p.Normalize.LabelBands():
		plan.by = "class labels and their prompt bands × policy classes"
	case labelled && policyClasses:
		plan.by = "class labels × policy classes"
	case labelled && p.Normalize.LabelBands():
		plan.by = "class labels and their prompt bands"
	case labelled:
		plan.by = "class labels"
	case policyClasses:
		plan.by = "token-length bands × policy classes"
	default:
		plan.by = "token-length bands"
	}
	if plan.cache == "stratify" {
		plan.by += " × prefix-cache hit bands"
	}
	if len(outcome) > 0 && !byWeights {
		plan.by += ", " + outcomeClassesNote(outcome)
	}
	bands := p.Normalize.LabelBands()
	rawKey := func(a *armData, i int) string {
		r := &a.ds.Requests[i]
		var k string
		switch {
		case byWeights:
			k = j.cls.names[a.class[i]]
		case labelled && r.Class != "" && policyClasses:
			k = recordLabel(bands, r) + " × " + j.cls.names[a.class[i]]
		case labelled && r.Class != "":
			k = recordLabel(bands, r)
		case policyClasses:
			k = normalize.Band(r.PromptTokens) + " × " + j.cls.names[a.class[i]]
		default:
			k = normalize.Band(r.PromptTokens)
		}
		return k
	}
	// one pass over the analysed requests counts each arm's requests per
	// stratum and, when stratifying by cache, per band within it
	stratifyCache := plan.cache == "stratify"
	var seen [2]map[string]map[string]float64
	var perArm [2]strataCounts
	for k, a := range []*armData{j.b, j.c} {
		seen[k] = map[string]map[string]float64{}
		perArm[k] = strataCounts{offered: map[string]float64{}, failed: map[string]float64{}, canceled: map[string]float64{}, retried: map[string]float64{}}
		for i := range a.ds.Requests {
			if a.bidx[i] < int32(a.firstKept) {
				continue
			}
			r := &a.ds.Requests[i]
			ck, b := rawKey(a, i), ""
			if stratifyCache {
				b = plan.cacheBand(r)
			}
			if seen[k][ck] == nil {
				seen[k][ck] = map[string]float64{}
			}
			seen[k][ck][b]++
			perArm[k].offered[ck]++
			switch {
			case r.Failed() || r.Status == sources.StatusRejected:
				perArm[k].failed[ck]++
			case r.Canceled():
				perArm[k].canceled[ck]++
			}
			if r.Attempt > 1 {
				perArm[k].retried[ck]++
			}
		}
	}
	// a stratum only one arm has a stray request or two in is counted in
	// a stratum both arms have; one the log's gaps or the outcome made
	// is kept at each arm's own share (strayStrataFolds)
	strataFold, strataOwn, said := strayStrataFolds(perArm[0], perArm[1], mode != normalize.MixWeights)
	plan.strataFolds = said
	if mode != normalize.MixWeights {
		// a stratum only one arm served cannot be standardized: the
		// baseline's mix gives a canary-only class weight 0, leaving its
		// requests out of every gate. As on the aggregate (classMix) the
		// arms are then compared as counted, and from UnmatchedShare on
		// the unmatched_strata guardrail holds the run
		onlyB, onlyC, shareB, shareC := oneArmStrata(perArm[0].offered, perArm[1].offered, strataFold, strataOwn)
		if g, ok := unmatchedEval(onlyB, onlyC, shareB, shareC); ok {
			j.unmatched = &g
		}
		if len(onlyB)+len(onlyC) > 0 {
			one := append(onlyC, onlyB...)
			for i, k := range one {
				one[i] = strconv.Quote(k)
			}
			why := fmt.Sprintf("not applied: %s served by one arm only, so no reference mix covers both arms without leaving requests out; the arms are compared as counted",
				strings.Join(one, ", "))
			j.mixSkipped = why
			if j.cache == "stratify" {
				j.cache, j.cacheReason = "none", "no cache strata: the mix is not standardized ("+strings.TrimPrefix(why, "not applied: ")+")"
			}
			j.warnf("normalize.mix %s %s", p.Normalize.Mix, why)
			return nil
		}
	}
	fold := func(k string) string {
		if to, ok := strataFold[k]; ok {
			return to
		}
		return k
	}
	classKey := func(a *armData, i int) string { return fold(rawKey(a, i)) }
	// a request without a cached-token count (rejected, failed) counts
	// in its class's most common known band, so that its failure stays in
	// a stratum both arms have
	dominant := map[string]string{}
	// classFold[class][band] is where a band only one arm has requests
	// in, within the class, is counted: the class's most common band of
	// those both arms have (see classBandFolds)
	var classFold map[string]map[string]string
	if stratifyCache {
		var counts [2]map[string]map[string]float64
		for k := range seen {
			counts[k] = map[string]map[string]float64{}
			for raw, bands := range seen[k] {
				if strataOwn[raw] {
					// kept whole at each arm's share, without bands
					continue
				}
				ck := fold(raw)
				for b, n := range bands {
					if b == normalize.CacheUnknown {
						continue
					}
					if counts[k][ck] == nil {
						counts[k][ck] = map[string]float64{}
					}
					counts[k][ck][b] += n
				}
			}
		}
		var said []string
		dominant, classFold, said = classBandFolds(counts[0], counts[1])
		if len(said) > 0 {
			plan.cacheReason += "; " + strings.Join(said, "; ")
			j.cacheReason = plan.cacheReason
		}
	}
	key := func(a *armData, i int) string {
		k := classKey(a, i)
		if stratifyCache && !strataOwn[k] {
			b := plan.cacheBand(&a.ds.Requests[i])
			if d, ok := dominant[k]; ok && b == normalize.CacheUnknown {
				b = d
			}
			if to, ok := classFold[k][b]; ok {
				b = to
			}
			k += " · " + b
		}
		return k
	}
	assign := func(a *armData) []int32 {
		out := make([]int32, len(a.ds.Requests))
		for i := range out {
			out[i] = -1
			if a.bidx[i] < int32(a.firstKept) {
				continue
			}
			k := key(a, i)
			si, ok := plan.index[k]
			if !ok {
				si = int32(len(plan.names))
				plan.names = append(plan.names, k)
				plan.index[k] = si
			}
			out[i] = si
		}
		return out
	}
	plan.b, plan.c = assign(j.b), assign(j.c)
	// sort strata by name for a deterministic report
	order := make([]int, len(plan.names))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(x, y int) bool { return plan.names[order[x]] < plan.names[order[y]] })
	remap := make([]int32, len(order))
	names := make([]string, len(order))
	for newIdx, old := range order {
		remap[old] = int32(newIdx)
		names[newIdx] = plan.names[old]
	}
	for _, s := range [][]int32{plan.b, plan.c} {
		for i, v := range s {
			if v >= 0 {
				s[i] = remap[v]
			}
		}
	}
	plan.names = names
	if len(strataOwn) > 0 {
		plan.own = make([]bool, len(names))
		for i, k := range names {
			plan.own[i] = strataOwn[k]
		}
	}
	return plan
}

// StrayStratumShare is the share of an arm's requests under which a
// stratum that only this arm has requests in is counted in a stratum both
// arms have (strayStrataFolds): a request or two with an odd label, or an
// odd length band, would otherwise leave the canary impossible to
// standardise to the baseline's mix, and every count gate undecided. At
// 0.1% the mix left unadjusted moves a rate by at most 0.1 pp.
const StrayStratumShare = 0.001

// strataCounts is an arm's requests per stratum (keys as the mix strata,
// "label × policy class" and the like): offered; failed or rejected (as
// error_rate and rejected_share count them); canceled by the client
// (canceled_share), which is neither; and retries (attempt > 1,
// retry_share), whatever their outcome.
type strataCounts struct{ offered, failed, canceled, retried map[string]float64 }

// FailedStratumShare is the share of a stratum's requests, both arms
// together, above which so many failed or were rejected that the stratum
// is taken to be made by its failures (strayStrataFolds).
const FailedStratumShare = 0.5

// strayStrataFolds decides, from the arms' request counts per stratum
// (baseline, canary), which strata are not standardized as strata of
// their own. Three kinds are:
//   - a stray: only one arm has requests in it, under StrayStratumShare of
//     that arm's requests. Larger one-arm strata are a real difference of
//     mix and stay, as do strays without a stratum to go to;
//   - unlabelled requests whose prompt length the log does not give (the
//     "prompt unknown" band), whatever their number, in both arms: a log
//     often leaves the prompt out of the requests it turned away or that
//     failed before they were read;
//   - a stratum more than FailedStratumShare of whose requests failed or
//     were rejected, both arms together: a log that names the class of
//     what completed and not of what failed makes strata of failures, and
//     standardizing those to the baseline's share would take the canary's
//     extra failures out of every gate (identical labelled arms but a
//     canary failing 3% more requests, logged without a class, passed
//     error_rate at 0.19% against 0.19%). In logs that carry class labels,
//     a prompt-length band (records without a label) counts client
//     cancels too, and so is a band more than that share of whose
//     requests are retries: a log that leaves the label off the requests
//     its clients gave up on hid 2.8 pp more of them in the canary
//     (canceled_share −0.00 pp, PASS), one that leaves it off retries
//     4.8 pp more retries (retry_share +0.00 pp, PASS). A labelled class
//     most of whose answers its clients cancel, or that its clients
//     retry, is a class, and keeps its stratum.
//
// A fourth kind is folded whatever its share: a prompt band of a label
// (normalize.LabelBand) that one arm has no request in, where both arms
// served the label — the bands are the judge's own split of what the
// label declares one kind of traffic, as the prefix-cache bands are.
//
// A stray is counted in (fold) the largest stratum both arms have of the
// same policy class (the text after the last " × "; any, for keys without
// one) whose prompt length is known and most of whose requests completed,
// of the stray's own label when it has one, and then in the band nearest
// its own.
// The other two, the outcome's strata, are kept at each arm's own share
// (own; normalize.Strata.Own) when keepOwn, so that what one arm lost
// there counts in full: folded into the largest stratum they counted at
// its reference share only, about three quarters of the harm on the
// simulator's canary failing 2.5% more requests without a prompt length.
// Without keepOwn (explicit weights name policy classes, not strata) they
// are folded as strays are. Either only where such a stratum exists:
// without one they stay strata (a log that gives no prompt length at
// all). A class that really fails that often is then compared as each arm
// served it, the cautious reading.
//
// It returns the folds, the strata kept at each arm's share, and one line
// per stratum for the report, in stratum order.
func strayStrataFolds(b, c strataCounts, keepOwn bool) (fold map[string]string, own map[string]bool, said []string) {
	fold, own = map[string]string{}, map[string]bool{}
	tb, tc, sorted := strataTotals(b.offered, c.offered)
	policyClass := func(k string) string {
		c, _ := afterLastSep(k)
		return c
	}
	unknown := func(k string) bool { return isUnknownBand(keyHead(k)) }
	// labels: the logs carry class labels (a stratum not a band)
	labels := false
	for _, k := range sorted {
		labels = labels || !bandStratum(k)
	}
	unlabelled := func(k string) bool { return labels && bandStratum(k) }
	retried := func(k string) bool {
		n := b.offered[k] + c.offered[k]
		return unlabelled(k) && n > 0 && b.retried[k]+c.retried[k] > FailedStratumShare*n
	}
	failed := func(k string) bool {
		n := b.offered[k] + c.offered[k]
		bad := b.failed[k] + c.failed[k]
		if unlabelled(k) {
			bad += b.canceled[k] + c.canceled[k]
		}
		return n > 0 && bad > FailedStratumShare*n || retried(k)
	}
	// each stratum's class label ("" for a band), the index of its
	// label's prompt band (normalize.LabelBand; -1 when it has none) and
	// its label's stratum as a whole (normalize.WithoutLabelBand), read
	// off its key once
	type keyParts struct {
		label string
		band  int
		whole string
	}
	parts := make(map[string]keyParts, len(sorted))
	bands := normalize.Bands()
	for _, k := range sorted {
		p := keyParts{band: -1, whole: normalize.WithoutLabelBand(k)}
		if !bandStratum(k) {
			var bd string
			p.label, bd = normalize.SplitLabelBand(keyHead(k))
			p.band = slices.Index(bands, bd)
		}
		parts[k] = p
	}
	label := func(k string) string { return parts[k].label }
	band := func(k string) int { return parts[k].band }
	// a label's prompt band one arm has no request in, of a label (and
	// policy class) both arms served: the bands are a stratification the
	// judge chose within what the label declares one kind of traffic, so
	// such a band is counted in the label's nearest band both arms have,
	// as a prefix-cache band is (classBandFolds), not left to stop the
	// mix being standardized (unmatched_strata is for labels and bands of
	// unlabelled traffic one arm never served)
	groups := [2]map[string]float64{{}, {}}
	// banded lists, per label's stratum as a whole, its prompt bands'
	// strata (the keys other than the whole itself), in key order
	banded := map[string][]string{}
	for _, k := range sorted {
		w := parts[k].whole
		groups[0][w] += b.offered[k]
		groups[1][w] += c.offered[k]
		if k != w {
			banded[w] = append(banded[w], k)
		}
	}
	oneArmBand := func(k string) bool {
		g := parts[k].whole
		return band(k) >= 0 && !(b.offered[k] > 0 && c.offered[k] > 0) && groups[0][g] > 0 && groups[1][g] > 0
	}
	// the stratum both arms have of k's policy class that is itself none
	// of the three kinds, of k's own label when one is, then of the band
	// nearest k's, then the largest ("" when there is none): a stray
	// prompt band of a label is counted in the label's nearest band, not in
	// another label's
	target := func(k string) string {
		to := ""
		dist := func(t string) int {
			if band(k) < 0 || band(t) < 0 {
				return 0
			}
			d := band(t) - band(k)
			return max(d, -d)
		}
		for _, t := range sorted {
			nb, nc := b.offered[t], c.offered[t]
			if _, away := fold[t]; away || !(nb > 0 && nc > 0 && !unknown(t) && !failed(t) && policyClass(t) == policyClass(k)) {
				continue
			}
			same, sameTo := label(t) == label(k), to != "" && label(to) == label(k)
			switch {
			case to == "", same && !sameTo:
				to = t
			case same != sameTo:
			case same && dist(t) != dist(to):
				if dist(t) < dist(to) {
					to = t
				}
			case nb+nc > b.offered[to]+c.offered[to]:
				to = t
			}
		}
		return to
	}
	count := func(v float64) string { return Thousands(int64(math.Round(v))) }
	// a label one arm's log gives no prompt length for, for more than a
	// stray share of its requests (its stratum without a band, k == whole,
	// in that arm only, beside its banded strata): the label cannot be
	// split by prompt band, so every band of it, in both arms, is counted
	// in the label as a whole — the strata of prompt_bands: unlabelled
	wholeLabel := map[string]bool{}
	for _, k := range sorted {
		nb, nc := b.offered[k], c.offered[k]
		if parts[k].label == "" || parts[k].band >= 0 || parts[k].whole != k || (nb > 0) == (nc > 0) {
			continue
		}
		arm, n, total := "baseline", nb, tb
		if nc > 0 {
			arm, n, total = "canary", nc, tc
		}
		if n/total < StrayStratumShare || len(banded[k]) == 0 {
			continue
		}
		wholeLabel[k] = true
		armCounts := c.offered
		if arm == "baseline" {
			armCounts = b.offered
		}
		of := n
		for _, t := range banded[k] {
			fold[t] = k
			of += armCounts[t]
		}
		said = append(said, fmt.Sprintf("label %q not split by prompt band: the %s's log gives no prompt length for %s of its %s requests in it, so both arms' requests of the label are counted as one stratum (as under normalize.prompt_bands: unlabelled)",
			k, arm, count(n), count(of)))
	}
	for _, k := range sorted {
		if _, done := fold[k]; done || wholeLabel[k] {
			continue
		}
		nb, nc := b.offered[k], c.offered[k]
		arm, n, total := "baseline", nb, tb
		if n == 0 {
			arm, n, total = "canary", nc, tc
		}
		stray := !(nb > 0 && nc > 0) && n > 0 && n/total < StrayStratumShare
		if !unknown(k) && !failed(k) && !stray && !oneArmBand(k) {
			continue
		}
		to := target(k)
		if to == "" {
			continue
		}
		where := fmt.Sprintf("counted in %q", to)
		if (unknown(k) || failed(k)) && keepOwn {
			own[k] = true
			where = "kept at each arm's own share, not standardized"
		} else {
			fold[k] = to
		}
		switch {
		case unknown(k):
			said = append(said, fmt.Sprintf("requests of unknown prompt length %q (baseline %s, canary %s) %s: a band the log's gaps make, not the traffic",
				k, count(nb), count(nc), where))
		case retried(k):
			said = append(said, fmt.Sprintf("stratum %q of records without a class label made by retries (baseline %s of %s, canary %s of %s) %s",
				k, count(b.retried[k]), count(nb), count(c.retried[k]), count(nc), where))
		case failed(k) && unlabelled(k):
			said = append(said, fmt.Sprintf("stratum %q of records without a class label made by what they did not complete (failed, rejected or canceled: baseline %s of %s, canary %s of %s) %s",
				k, count(b.failed[k]+b.canceled[k]), count(nb), count(c.failed[k]+c.canceled[k]), count(nc), where))
		case failed(k):
			said = append(said, fmt.Sprintf("stratum %q made by failures (failed or rejected: baseline %s of %s, canary %s of %s) %s",
				k, count(b.failed[k]), count(nb), count(c.failed[k]), count(nc), where))
		case !stray:
			said = append(said, fmt.Sprintf("prompt band %q (%s, only in the %s: %.2g%% of its requests) %s, the label's nearest band both arms served",
				k, plural(int(math.Round(n)), "request", "requests"), arm, 100*n/total, where))
		default:
			said = append(said, fmt.Sprintf("stray stratum %q (%s, only in the %s: %.2g%% of its requests) %s",
				k, plural(int(math.Round(n)), "request", "requests"), arm, 100*n/total, where))
		}
	}
	return fold, own, said
}

// bandStratum reports whether stratum key k is a prompt-length band:
// records without a class label.
func bandStratum(k string) bool { return isBandKey(keyHead(k)) }

// keyHead is stratum key k's label or band: the text before its last
// " × " (its policy class, when the policy declares classes), else k.
// (stratumHead reads the policy to tell; the folds have only the keys.)
func keyHead(k string) string {
	if i := strings.LastIndex(k, stratumSep); i >= 0 {
		return k[:i]
	}
	return k
}

// strataTotals returns the arms' request totals over their strata
// (baseline, canary counts per stratum) and every stratum either arm has,
// in key order.
func strataTotals(b, c map[string]float64) (tb, tc float64, keys []string) {
	all := map[string]bool{}
	for k, n := range b {
		tb += n
		all[k] = true
	}
	for k, n := range c {
		tc += n
		all[k] = true
	}
	return tb, tc, sortedKeys(all)
}

// classBandFolds decides, per class stratum, where each prefix-cache band
// is counted, from the arms' request counts per class and band (baseline,
// canary): a band only one arm has requests in, within a class, cannot be
// standardised (its ratio is undefined in the other arm) and would make
// every count gate inconclusive for a stray request or two, so it is
// counted in the class's most common band among those both arms have (of
// all its bands when none is shared). The bands are a nuisance
// stratification the judge chose; classes, which the data or the policy
// declare, are never folded. It returns each class's target band (where
// its requests without a cached-token count go too), the folds, and one
// line per fold for the report, in class order.
func classBandFolds(b, c map[string]map[string]float64) (dominant map[string]string, fold map[string]map[string]string, said []string) {
	dominant, fold = map[string]string{}, map[string]map[string]string{}
	classes := map[string]bool{}
	for _, m := range []map[string]map[string]float64{b, c} {
		for ck := range m {
			classes[ck] = true
		}
	}
	for _, ck := range sortedKeys(classes) {
		all := map[string]float64{}
		for _, m := range []map[string]map[string]float64{b, c} {
			for band, n := range m[ck] {
				all[band] += n
			}
		}
		best, shared := "", false
		for _, band := range sortedKeys(all) {
			both := b[ck][band] > 0 && c[ck][band] > 0
			switch {
			case best == "", both && !shared, both == shared && all[band] > all[best]:
				best, shared = band, both
			}
		}
		dominant[ck] = best
		for _, band := range sortedKeys(all) {
			if band == best || b[ck][band] > 0 && c[ck][band] > 0 {
				continue
			}
			if fold[ck] == nil {
				fold[ck] = map[string]string{}
			}
			fold[ck][band] = best
			arm, n := "baseline", b[ck][band]
			if n == 0 {
				arm, n = "canary", c[ck][band]
			}
			said = append(said, fmt.Sprintf("in %q band %q counted in %q (only the %s has requests there: %g)", ck, band, best, arm, n))
		}
	}
	return dominant, fold, said
}

// StrayBandShare is the share of an arm's analysed requests under which a
// prefix-cache band counts as stray in both arms: its requests are counted
// in the nearest band, so that a handful of requests in an otherwise empty
// band (an off-by-one in cached tokens, one cold request) cannot switch the
// cache handling.
const StrayBandShare = 0.01

// strayBands maps each stray band to the band it is folded into: the
// nearest populated band in hit rate (partial folds into whichever of none
// and mostly holds more requests). The unknown band is not folded here:
// planMix counts its requests in their class's most common known band.
func strayBands(bandsB, bandsC map[string]float64) map[string]string {
	total := func(m map[string]float64) float64 {
		t := 0.0
		for _, v := range m {
			t += v
		}
		return math.Max(t, 1)
	}
	tb, tc := total(bandsB), total(bandsC)
	stray := func(b string) bool { return bandsB[b]/tb < StrayBandShare && bandsC[b]/tc < StrayBandShare }
	size := func(b string) float64 { return bandsB[b]/tb + bandsC[b]/tc }
	order := []string{normalize.CacheNone, normalize.CachePartial, normalize.CacheMostly}
	out := map[string]string{}

	for i, b := range order {
		if size(b) == 0 || !stray(b) {
			continue
		}
		best, bestD := "", 99
		for k, o := range order {
			if k == i || stray(o) {
				continue
			}
			d := k - i
			if d < 0 {
				d = -d
			}
			if d < bestD || (d == bestD && size(o) > size(best)) {
				best, bestD = o, d
			}
		}
		if best != "" {
			out[b] = best
		}
	}
	return out
}

func foldBands(m map[string]float64, fold map[string]string) map[string]float64 {
	out := map[string]float64{}
	for b, n := range m {
		if to, ok := fold[b]; ok {
			b = to
		}
		out[b] += n
	}
	return out
}

func foldText(fold map[string]string) string {
	var parts []string
	for _, b := range sortedKeys(fold) {
		why := fmt.Sprintf("under %g%% of both arms", 100*StrayBandShare)
		parts = append(parts, fmt.Sprintf("%q counted in %q (%s)", b, fold[b], why))
	}
	return "stray band(s) " + strings.Join(parts, ", ")
}

// cacheBand is the request's prefix-cache band after folding stray bands.
func (plan *mixPlan) cacheBand(r *sources.Request) string {
	b := normalize.CacheBand(r.CachedTokens, r.PromptTokens)
	if to, ok := plan.fold[b]; ok {
		return to
	}
	return b
}

// labelMismatch is the warning for arms of which one carries class labels
// and the other none ("" when both or neither do): one arm's strata would
// be its labels, the other's token-length bands, with no stratum in both.
// The request path then stratifies both by band; the aggregate, which
// keeps no band for a labelled record, compares them unstandardized with
// its prompt-length check.
func labelMismatch(baseline, canary bool) string {
	if baseline == canary {
		return ""
	}
	with, without := "canary", "baseline"
	if baseline {
		with, without = without, with
	}
	return fmt.Sprintf("the %s's records carry class labels (class) and the %s's none: by label and by token-length band the arms share no stratum; label both arms' records the same way (a gateway upgrade that started logging the label?)", with, without)
}

func hasLabels(a *armData) bool {
	for i := range a.ds.Requests {
		if a.ds.Requests[i].Class != "" {
			return true
		}
	}
	return false
}

func cacheBands(a *armData) map[string]float64 {
	m := map[string]float64{}
	for i := range a.ds.Requests {
		if a.bidx[i] < int32(a.firstKept) {
			continue
		}
		r := &a.ds.Requests[i]
		// requests without a cached-token count (rejected, failed, or no
		// cache reporting at all) do not decide the cache handling: when
		// stratifying they count in their class's most common band
		if b := normalize.CacheBand(r.CachedTokens, r.PromptTokens); b != normalize.CacheUnknown {
			m[b]++
		}
	}
	return m
}

// strata builds an arm's per-stratum, per-bucket totals of num/den over
// the analysed buckets.
func (plan *mixPlan) strata(a *armData, stratum []int32, num, den func(i int) float64) normalize.Strata {
	return plan.strataOn(a, stratum, num, den, a.firstKept, len(a.buckets)-a.firstKept)
}

// strataOn is strata on the bucket range [from, from+nb) of the arm's grid
// (for paired arms: the common range of both arms' analysed buckets).
func (plan *mixPlan) strataOn(a *armData, stratum []int32, num, den func(i int) float64, from, nb int) normalize.Strata {
	s := normalize.Strata{Names: plan.names, Own: plan.own, Num: make([][]float64, len(plan.names)), Den: make([][]float64, len(plan.names))}
	for k := range plan.names {
		s.Num[k], s.Den[k] = make([]float64, nb), make([]float64, nb)
	}
	for i, si := range stratum {
		if si < 0 {
			continue
		}
		t := int(a.bidx[i]) - from
		if t < 0 || t >= nb {
			continue
		}
		s.Num[si][t] += num(i)
		s.Den[si][t] += den(i)
	}
	return s
}

// standardized runs a count gate standardised to the reference mix. num
// and den give a request's contribution (e.g. good, 1). logScale is for
// relative gates. The naive estimate is returned for the report.
func (j *judgement) standardized(metric string, num, den func(a *armData, i int) float64, logScale bool, conf float64) (adj, naive stats.Estimate, vb, vc float64, err error) {
	plan := j.mix
	res, merged, err := j.standardize(num, den, logScale, conf)
	if err != nil {
		return adj, naive, 0, 0, err
	}
	text := fmt.Sprintf("%s %s", metric, estimateText(res))
	if merged != "" {
		why := "over each label's prompt and prefix-cache bands taken together: by band, " + merged
		text += " (" + why + ")"
		if plan.merged == nil {
			plan.merged = map[string]string{}
		}
		plan.merged[metric] = why
	}
	plan.notes = append(plan.notes, mixNote{metric: metric, text: text})
	if plan.mixes == "" {
		plan.mixes = fmt.Sprintf("mix (reference / baseline / canary): %s", mixText(res))
	}
	return res.Adjusted, res.Naive, res.Baseline, res.Canary, nil
}

// standardize is standardized's computation, without the report's notes:
// the standardized result, and when the strata had to be merged
// (labelStratum), why.
func (j *judgement) standardize(num, den func(a *armData, i int) float64, logScale bool, conf float64) (res normalize.MixResult, merged string, err error) {
	plan := j.mix
	bind := func(a *armData, f func(*armData, int) float64) func(int) float64 {
		return func(i int) float64 { return f(a, i) }
	}
	// run standardizes with the strata as planned, or merged by merge
	run := func(merge func(string) string) (normalize.MixResult, error) {
		xb := plan.strata(j.b, plan.b, bind(j.b, num), bind(j.b, den))
		xc := plan.strata(j.c, plan.c, bind(j.c, num), bind(j.c, den))
		if merge != nil {
			xb, xc = xb.Merge(merge), xc.Merge(merge)
		}
		w, err := normalize.Weights(plan.mode, xc, xb, j.p.Normalize.Weights)
		if err != nil {
			return normalize.MixResult{}, err
		}
		switch from, nb := j.grid(); {
		case j.paired:
			// the same totals on the common bucket range of both arms
			xb = plan.strataOn(j.b, plan.b, bind(j.b, num), bind(j.b, den), from, nb)
			xc = plan.strataOn(j.c, plan.c, bind(j.c, num), bind(j.c, den), from, nb)
			if merge != nil {
				xb, xc = xb.Merge(merge), xc.Merge(merge)
			}
			if logScale {
				return normalize.StandardizeLogPaired(xc, xb, w, conf)
			}
			return normalize.StandardizePaired(xc, xb, w, conf)
		case logScale:
			return normalize.StandardizeLog(xc, xb, w, conf)
		}
		return normalize.Standardize(xc, xb, w, conf)
	}
	// a metric whose denominator is an outcome (a mean per completion)
	// can find a sparse band of a label with requests of both arms and
	// completions of one only, its ratio undefined in the other arm (the
	// fleet model with 800 labels left output_tokens_mean undecided in 3
	// of 10 identical runs): then the label's prompt and prefix-cache
	// bands are taken together (labelStratum), and the note says why
	res, err = run(nil)
	var missing *normalize.MissingStrataError
	if errors.As(err, &missing) {
		if r2, err2 := run(labelStratum); err2 == nil {
			merged = strings.TrimPrefix(err.Error(), "cannot standardise to the reference mix: ")
			res, err = r2, nil
		}
	}
	return res, merged, err
}

// promptShift is the aggregate's mixShift on the request path: the
// arms' mean prompt tokens per finished request that gives its prompt
// length (rejected requests left out, as the aggregate counts them),
// standardized to the reference mix when one is, compared by their log
// ratio; the text that holds the verdict when they differ beyond
// PromptShiftLimit with confidence, else "".
func (j *judgement) promptShift(conf float64) string {
	known := func(a *armData, i int) float64 {
		r := &a.ds.Requests[i]
		if r.Status != sources.StatusRejected && r.PromptTokens >= 0 {
			return 1
		}
		return 0
	}
	tokens := func(a *armData, i int) float64 { return known(a, i) * float64(max(a.ds.Requests[i].PromptTokens, 0)) }
	why := promptShiftWhy(j.p, true)
	if j.mix != nil {
		res, _, err := j.standardize(tokens, known, true, conf)
		if err != nil {
			return ""
		}
		return promptShiftText(res.Baseline, res.Canary, res.Adjusted, why)
	}
	ratio := func(a *armData) stats.Ratio {
		nb := len(a.buckets) - a.firstKept
		r := stats.Ratio{Num: make([]float64, nb), Den: make([]float64, nb)}
		for i := range a.ds.Requests {
			if t := int(a.bidx[i]) - a.firstKept; t >= 0 && t < nb {
				r.Num[t] += tokens(a, i)
				r.Den[t] += known(a, i)
			}
		}
		return r
	}
	rb, rc := ratio(j.b), ratio(j.c)
	if len(rb.Den) < MinBuckets || len(rc.Den) < MinBuckets || !(sum(rb.Den) > 0 && sum(rc.Den) > 0 && sum(rb.Num) > 0) {
		return ""
	}
	return promptShiftText(sum(rb.Num)/sum(rb.Den), sum(rc.Num)/sum(rc.Den), stats.LogRatioOfRatios(rc, rb, conf), why)
}

// labelStratum is a mix stratum's name ("chat, prompt 1k-2k × default ·
// cache 0") without its prefix-cache band and its label's prompt band
// ("chat × default"); a stratum of unlabelled records keeps its band.
func labelStratum(name string) string {
	if i := strings.LastIndex(name, " · "); i >= 0 && slices.Contains([]string{normalize.CacheNone, normalize.CachePartial, normalize.CacheMostly, normalize.CacheUnknown}, name[i+len(" · "):]) {
		name = name[:i]
	}
	return normalize.WithoutLabelBand(name)
}

// requestGood and friends are per-request contributions for standardised
// gates.
func requestGood(a *armData, i int) float64 {
	if a.good[i] {
		return 1
	}
	return 0
}

func requestGoodTokens(a *armData, i int) float64 {
	if a.good[i] && a.ds.Requests[i].OutputTokens > 0 {
		return float64(a.ds.Requests[i].OutputTokens)
	}
	return 0
}

func requestOne(*armData, int) float64 { return 1 }

func requestFailed(a *armData, i int) float64 {
	if a.ds.Requests[i].Failed() {
		return 1
	}
	return 0
}

func requestRejected(a *armData, i int) float64 {
	if a.ds.Requests[i].Status == sources.StatusRejected {
		return 1
	}
	return 0
}

func requestCanceled(a *armData, i int) float64 {
	if a.ds.Requests[i].Canceled() {
		return 1
	}
	return 0
}

func requestRetry(a *armData, i int) float64 {
	if a.ds.Requests[i].Attempt > 1 {
		return 1
	}
	return 0
}

// requestOutputKnown counts a completion that gives its output length:
// output_tokens_mean's denominator.
func requestOutputKnown(a *armData, i int) float64 {
	if r := &a.ds.Requests[i]; r.Status == sources.StatusOK && r.OutputTokens >= 0 {
		return 1
	}
	return 0
}

// requestOutputTokens counts a completion's output tokens (0 when unknown).
func requestOutputTokens(a *armData, i int) float64 {
	r := &a.ds.Requests[i]
	if r.Status == sources.StatusOK && r.OutputTokens > 0 {
		return float64(r.OutputTokens)
	}
	return 0
}

// shares reports each arm's share per stratum for the report.
func (plan *mixPlan) shares(stratum []int32) []float64 {
	out, n := plan.counts(stratum)
	for i := range out {
		out[i] /= math.Max(n, 1)
	}
	return out
}

// counts returns an arm's analysed requests per stratum (stratum: each
// request's, −1 when not analysed) and their total.
func (plan *mixPlan) counts(stratum []int32) ([]float64, float64) {
	out := make([]float64, len(plan.names))
	n := 0.0
	for _, s := range stratum {
		if s >= 0 {
			out[s]++
			n++
		}
	}
	return out, n
}

// mixReweighted returns rb and rc (the arms' per-bucket ratios over their
// analysed buckets kb and kc) with each numerator recounted from the
// requests, num(a, i) for request i weighted to the reference mix: a
// request of stratum s counts N·w_s/n_s (ArmWeights; N the arm's analysed
// requests, n_s those of its stratum), so an arm keeps its total and takes
// the reference mix — the aggregate's reweighting of the canary's counts,
// for gates whose denominator is time rather than requests (goodput).
// Requests in a bucket left out of both arms count nowhere.
func (j *judgement) mixReweighted(num func(a *armData, i int) float64, rb, rc stats.Ratio, kb, kc []bucket) (stats.Ratio, stats.Ratio, error) {
	plan := j.mix
	w, err := plan.requestWeights(j)
	if err != nil {
		return rb, rc, err
	}
	arm := func(a *armData, stratum []int32, r stats.Ratio, kept []bucket) stats.Ratio {
		n, total := plan.counts(stratum)
		aw := normalize.ArmWeights(w, plan.own, n)
		out := stats.Ratio{Num: make([]float64, len(r.Num)), Den: r.Den}
		for i, s := range stratum {
			t := int(a.bidx[i]) - a.firstKept
			if s < 0 || t < 0 || t >= len(kept) || kept[t].leftOut || n[s] == 0 {
				continue
			}
			out.Num[t] += num(a, i) * total * aw[s] / n[s]
		}
		return out
	}
	return arm(j.b, plan.b, rb, kb), arm(j.c, plan.c, rc, kc), nil
}

// requestWeights are the reference mix's weights per stratum, from both
// arms' analysed requests counted per stratum (normalize.Weights under the
// plan's mode and the policy's weights).
func (plan *mixPlan) requestWeights(j *judgement) ([]float64, error) {
	one := func(int) float64 { return 1 }
	xb := plan.strata(j.b, plan.b, one, one)
	xc := plan.strata(j.c, plan.c, one, one)
	return normalize.Weights(plan.mode, xc, xb, j.p.Normalize.Weights)
}

// stratSamples returns both arms' latency values per analysed bucket with
// each value's stratum, and the reference weights, for quantiles of the
// reference mixture (stats.StratifiedQuantileLogRatio): every value stays in,
// weighted by its stratum's reference weight over the stratum's count.
func (plan *mixPlan) stratSamples(j *judgement, latency string) (xb, xc [][]float64, sb, sc [][]int32, wb, wc []float64, err error) {
	w, err := plan.requestWeights(j)
	if err != nil {
		return nil, nil, nil, nil, nil, nil, err
	}
	// each arm's values per stratum: a stratum of an arm's own share
	// weighs its share of the latency values (normalize.ArmWeights)
	collect := func(a *armData, stratum []int32) ([][]float64, [][]int32, []float64) {
		nb := len(a.buckets) - a.firstKept
		vals, ids, n := make([][]float64, nb), make([][]int32, nb), make([]float64, len(plan.names))
		for i, s := range stratum {
			r := &a.ds.Requests[i]
			if s < 0 || !latencyOf(r, latency) {
				continue
			}
			t := int(a.bidx[i]) - a.firstKept
			vals[t] = append(vals[t], latencyValue(r, latency))
			ids[t] = append(ids[t], s)
			n[s]++
		}
		return vals, ids, n
	}
	xb, sb, nb := collect(j.b, plan.b)
	xc, sc, nc := collect(j.c, plan.c)
	wb, wc = normalize.ArmWeights(w, plan.own, nb), normalize.ArmWeights(w, plan.own, nc)
	return xb, xc, sb, sc, wb, wc, nil
}

func latencyOf(r *sources.Request, latency string) bool {
	return r.Status == sources.StatusOK && sources.Known(latencyValue(r, latency))
}

func latencyValue(r *sources.Request, latency string) float64 {
	switch latency {
	case "ttft":
		return r.TTFT
	case "tpot":
		return r.TPOT
	}
	return r.E2E
}

// estimateText renders a standardised comparison: naive → standardized.
func estimateText(r normalize.MixResult) string {
	f := func(e stats.Estimate) string {
		if r.LogScale {
			return fmt.Sprintf("%+.2f%% [%+.2f, %+.2f]", 100*math.Expm1(e.Point), 100*math.Expm1(e.CI.Lo), 100*math.Expm1(e.CI.Hi))
		}
		return fmt.Sprintf("%+.2f pp [%+.2f, %+.2f]", 100*e.Point, 100*e.CI.Lo, 100*e.CI.Hi)
	}
	return "naive " + f(r.Naive) + " → standardized " + f(r.Adjusted)
}

// mixText lists each stratum's reference weight and both arms' shares.
func mixText(r normalize.MixResult) string {
	parts := make([]string, len(r.Names))
	for i, n := range r.Names {
		ref := fmt.Sprintf("%.1f%%", 100*r.Weights[i])
		if i < len(r.Own) && r.Own[i] {
			ref = "own"
		}
		parts[i] = fmt.Sprintf("%q %s / %.1f%% / %.1f%%", n, ref, 100*r.BaselineMix[i], 100*r.CanaryMix[i])
	}
	return strings.Join(parts, ", ")
}

// cuped adjusts the attainment difference for the per-bucket prefix-cache
// hit rate (normalize.CUPED on bucket attainment; normalize.cache: adjust,
// or auto when bands are too thin to stratify). The comparison becomes one
// of mean bucket attainment, adjusted; the caller keeps the unadjusted one
// as the naive figure. Arms paired in time are laid on their common grid
// and compared by normalize.PairedCUPED, as the unadjusted comparison is
// paired: on each arm's own buckets the traffic wave both arms share
// would be counted twice in the interval.
func (j *judgement) cuped(conf float64) (normalize.CUPEDResult, error) {
	from, nb := 0, 0
	if j.paired {
		from, nb = j.grid()
	}
	cov := func(a *armData) normalize.Covariate {
		lo, n := a.firstKept, len(a.buckets)-a.firstKept
		if j.paired {
			lo, n = from, nb
		}
		c := normalize.Covariate{Outcome: make([]float64, n), Covariate: make([]float64, n)}
		cached, prompt := make([]float64, n), make([]float64, n)
		for i := range a.ds.Requests {
			t := int(a.bidx[i]) - lo
			r := &a.ds.Requests[i]
			if int(a.bidx[i]) < a.firstKept || t < 0 || t >= n || r.CachedTokens < 0 || r.PromptTokens <= 0 {
				continue
			}
			cached[t] += float64(r.CachedTokens)
			prompt[t] += float64(r.PromptTokens)
		}
		for t := range n {
			c.Outcome[t], c.Covariate[t] = math.NaN(), math.NaN()
			if i := lo + t; i >= a.firstKept && i < len(a.buckets) {
				c.Outcome[t] = a.buckets[i].good / a.buckets[i].offered
				c.Covariate[t] = cached[t] / prompt[t]
			}
		}
		return c
	}
	if j.paired {
		return normalize.PairedCUPED(cov(j.c), cov(j.b), conf)
	}
	return normalize.CUPED(cov(j.c), cov(j.b), conf)
}

// baselineBandsCovered is the stratify rule when the reference mix is the
// baseline's (normalize.mix baseline or none): only bands the baseline
// serves carry weight, so each of them needs normalize.MinBandRequests
// requests in both arms; a band only the canary has (a cold cache's
// zero-hit requests) gets weight 0 and is left out of the comparison,
// which is the point of stratifying.
func baselineBandsCovered(bandsB, bandsC map[string]float64, mode string) (bool, string) {
	if mode != "baseline" && mode != "none" {
		return false, ""
	}
	var names []string
	for b := range bandsB {
		names = append(names, b)
	}
	sort.Strings(names)
	var parts, canaryOnly []string
	for _, b := range names {
		if bandsB[b] == 0 {
			continue
		}
		if b == normalize.CacheUnknown || bandsB[b] < normalize.MinBandRequests || bandsC[b] < normalize.MinBandRequests {
			return false, ""
		}
		parts = append(parts, fmt.Sprintf("%q: baseline %.0f, canary %.0f", b, bandsB[b], bandsC[b]))
	}
	if len(parts) == 0 {
		return false, ""
	}
	for b, n := range bandsC {
		if n > 0 && bandsB[b] == 0 {
			canaryOnly = append(canaryOnly, fmt.Sprintf("%q (%.0f canary requests)", b, n))
		}
	}
	sort.Strings(canaryOnly)
	why := "stratify by prefix-cache hit band: every band of the baseline's mix has ≥ " + fmt.Sprint(normalize.MinBandRequests) +
		" requests in both arms (" + strings.Join(parts, "; ") + ")"
	if len(canaryOnly) > 0 {
		why += "; bands only the canary has get weight 0: " + strings.Join(canaryOnly, ", ")
	}
	return true, why
}

// grid returns the common bucket range of paired arms: from the earlier
// first analysed bucket to the later last bucket of either arm (on the
// shared grid, bucket i of both arms covers the same seconds).
func (j *judgement) grid() (from, nb int) {
	from = min(j.b.firstKept, j.c.firstKept)
	to := max(len(j.b.buckets), len(j.c.buckets))
	return from, to - from
}

// alignedRatios lays both arms' per-bucket totals on the common grid
// range, zeros where an arm has no analysed bucket.
func (j *judgement) alignedRatios(num, den func(b *bucket) float64) (rb, rc stats.Ratio) {
	from, nb := j.grid()
	build := func(a *armData) stats.Ratio {
		r := stats.Ratio{Num: make([]float64, nb), Den: make([]float64, nb)}
		for i := a.firstKept; i < len(a.buckets); i++ {
			if t := i - from; t >= 0 && t < nb {
				r.Num[t], r.Den[t] = num(&a.buckets[i]), den(&a.buckets[i])
			}
		}
		return r
	}
	return build(j.b), build(j.c)
}
