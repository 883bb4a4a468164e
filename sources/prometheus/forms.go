package prometheus

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/engines"
)

// HistogramForm is the form in which a latency histogram was read.
type HistogramForm string

// Histogram forms.
const (
	// Classic histograms are the family's `_bucket` series, one per le
	// bound: counts exact at the engine's fixed bucket edges.
	Classic HistogramForm = "classic"
	// Native histograms are series under the family's own name holding
	// exponential buckets (Prometheus native histograms,
	// --enable-feature=native-histograms): counts exact at both ends of
	// every bucket, usually far finer than the classic edges.
	Native HistogramForm = "native"
)

// HistogramForms returns, for an arm already read, the form each latency
// histogram was read in (empty when the arm was not read or has none).
// Per histogram and arm one form is read, never both, so nothing is counted
// twice.
func (s *Source) HistogramForms(arm sources.Arm) map[engines.Quantity]HistogramForm {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.forms[arm])
}

func (s *Source) setForms(arm sources.Arm, res engines.Resolved, native map[engines.Quantity]bool) {
	f := map[engines.Quantity]HistogramForm{}
	for _, hq := range engines.Histograms() {
		if _, ok := res.Metrics[hq]; !ok {
			continue
		}
		f[hq] = Classic
		if native[hq] {
			f[hq] = Native
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forms == nil {
		s.forms = map[sources.Arm]map[engines.Quantity]HistogramForm{}
	}
	s.forms[arm] = f
}

// histogramFamilies returns the family names of every profile's latency
// histograms.
func histogramFamilies() map[string]bool {
	out := map[string]bool{}
	for _, p := range engines.All() {
		for _, hq := range engines.Histograms() {
			for _, c := range p.Metrics[hq] {
				out[c.Name] = true
			}
		}
	}
	return out
}

// forms chooses, per latency histogram of the arm, the native or the
// classic form, from the names the arm's series have (raw). A family with
// series under its own name is native; with `_bucket` series, classic.
// When an arm has both (Prometheus storing a scrape's histogram both ways,
// or replicas that differ), the native form is read when every classic
// series has a native counterpart with the same labels (it is finer); the
// classic form when the native series are the fewer; and when each form
// has series the other lacks, the native form is read and the answer is
// marked partial (the classic-only series' observations are missing), so
// it cannot pass. The choice is noted. Forms are never summed together.
func (r *runner) forms(ctx context.Context, q Query, res engines.Resolved, raw map[string]bool) (map[engines.Quantity]bool, error) {
	native := map[engines.Quantity]bool{}
	window := promDuration(q.End.Sub(q.Start).Truncate(time.Millisecond))
	var parts []string
	var both []engines.Quantity
	for _, hq := range engines.Histograms() {
		c, ok := res.Metrics[hq]
		if !ok {
			continue
		}
		nat, cls := raw[c.Name], raw[c.Name+"_bucket"]
		switch {
		case nat && !cls:
			native[hq] = true
		case nat && cls:
			both = append(both, hq)
			n := q.Selector.With(c.Name, c.Match)
			b := q.Selector.With(c.Name+"_bucket", c.Match)
			classic := fmt.Sprintf("group without (le) (last_over_time(%s[%s]))", b, window)
			nativeSeries := fmt.Sprintf("last_over_time(%s[%s])", n, window)
			parts = append(parts,
				tag(fmt.Sprintf("count(%s unless %s)", classic, nativeSeries), "classic-only "+string(hq)),
				tag(fmt.Sprintf("count(%s unless %s)", nativeSeries, classic), "native-only "+string(hq)))
		}
	}
	if len(parts) > 0 {
		query := strings.Join(parts, " or ")
		vec, err := r.instantQuery(ctx, query, q.End)
		if err != nil {
			return nil, fmt.Errorf("arm %s: %w", q.Arm, err)
		}
		only := map[string]float64{}
		for _, smp := range vec {
			only[string(smp.Metric[queryLabel])] = float64(smp.Value)
		}
		for _, hq := range both {
			c := res.Metrics[hq]
			co, no := only["classic-only "+string(hq)], only["native-only "+string(hq)]
			switch {
			case co == 0:
				native[hq] = true
				r.note("%s: both classic (_bucket) and native series exist; the native ones were read (finer buckets, a native counterpart for every classic series): nothing is counted twice", c.Name)
			case no == 0:
				r.note("%s: both classic (_bucket) and native series exist, but %s classic series have no native counterpart: the classic series were read", c.Name, strconv.FormatFloat(co, 'f', -1, 64))
			default:
				native[hq] = true
				r.partial("%s: %s series export it only as a classic histogram (_bucket) and %s only as a native one; the native form was read, so the classic-only series' observations are missing",
					c.Name, strconv.FormatFloat(co, 'f', -1, 64), strconv.FormatFloat(no, 'f', -1, 64))
			}
		}
	}
	return native, nil
}

// nativeQuery is the per-step increase of a native histogram, summed over
// the arm's series by class. Native histograms are queried one per
// request: they cannot be tagged with label_replace like the rest.
func nativeQuery(q Query, c engines.Candidate) string {
	return fmt.Sprintf("sum by (%s) (increase(%s[%s]))", q.classLabel(), q.Selector.With(c.Name, c.Match), promDuration(q.Step))
}
