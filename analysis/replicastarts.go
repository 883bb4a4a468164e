package analysis

import (
	"fmt"

	"github.com/goodput-dev/goodput/analysis/normalize"
)

// replicaStart is one replica's own warm-up: its requests in buckets
// first up to (not including) until of its arm are left out of the
// analysed window, and detail says so in the report.
type replicaStart struct {
	name         string
	first, until int
	detail       string
}

// replicaEntries returns, per replica, the buckets at which it enters
// service after its arm's analysed window starts: its first bucket, when
// after firstKept (a replica starting within the arm's cut is covered by
// it), and every bucket where it serves again after a gap
// (normalize.ReplicaLoss). acts are the arm's replicas in name order, all
// over the same buckets; first[k] is acts[k]'s first bucket with requests.
// The request path and the aggregate find entries with it alike.
func replicaEntries(acts []normalize.ReplicaActivity, first []int, firstKept int, bucketSecs float64) map[string][]int {
	entries := map[string][]int{}
	if len(acts) < 2 {
		return entries
	}
	for k, a := range acts {
		if first[k] > firstKept {
			entries[a.Name] = append(entries[a.Name], first[k])
		}
	}
	nb := len(acts[0].Requests)
	for _, ev := range normalize.ReplicaLoss(acts, normalize.LossOptions{BucketSecs: bucketSecs}) {
		if ev.Kind == normalize.EventGap && ev.To < nb {
			entries[ev.Replica] = append(entries[ev.Replica], ev.To)
		}
	}
	return entries
}

// replicaStarts gives each entry its own warm-up by the arm's rule
// (normalize.ReplicaStarts on the replica's per-bucket TTFT medians from
// its entry) and returns the slow starts it confirms, in acts' order.
// median(k) returns acts[k]'s medians; it is called only for replicas
// with an entry.
func replicaStarts(acts []normalize.ReplicaActivity, entries map[string][]int, median func(k int) []float64, bucketSecs float64) []replicaStart {
	var series []normalize.ReplicaSeries
	for k, a := range acts {
		if len(entries[a.Name]) == 0 {
			continue
		}
		med := median(k)
		for _, f := range entries[a.Name] {
			series = append(series, normalize.ReplicaSeries{Name: a.Name, First: f, Medians: med})
		}
	}
	var out []replicaStart
	for _, w := range normalize.ReplicaStarts(series, normalize.WarmupOptions{}) {
		if w.Result.Cut == 0 || !(w.Result.MeanBefore > w.Result.MeanAfter) {
			continue
		}
		out = append(out, replicaStart{name: w.Name, first: w.First, until: w.Until,
			detail: fmt.Sprintf("replica %q entered at %gs: cut its first %gs (median TTFT %.4gs, then %.4gs)",
				w.Name, float64(w.First)*bucketSecs, float64(w.Until-w.First)*bucketSecs, w.Result.MeanBefore, w.Result.MeanAfter)})
	}
	return out
}
