package exposition

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/sim"
)

// TestReplicaTracks: an arm read from the simulator's metrics.om has one
// track per replica of that arm, each with its finished requests and its
// own TTFT and TPOT histograms per slice, and per slice the replicas'
// histograms add up to the arm's (every edge). Without them a judge
// cannot tell replicas of their own speeds from a change (the
// between-replica spread of attainment).
func TestReplicaTracks(t *testing.T) {
	sc, err := sim.Builtin("aa-replica-spread-30m")
	if err != nil {
		t.Fatal(err)
	}
	res, err := sim.Run(context.Background(), sc, 3, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var om bytes.Buffer
	if err := sim.WriteOpenMetrics(&om, res.Metrics); err != nil {
		t.Fatal(err)
	}
	for _, arm := range []sources.Arm{sources.Baseline, sources.Canary} {
		ds, err := Read(context.Background(), "metrics.om", bytes.NewReader(om.Bytes()), arm)
		if err != nil {
			t.Fatal(err)
		}
		agg := ds.Agg
		want := 0
		for _, s := range res.Metrics {
			if s.Arm == arm {
				want++
			}
		}
		if len(agg.Replicas) != want || want < 2 {
			t.Fatalf("%s: %d replica tracks, want the arm's %d replicas", arm, len(agg.Replicas), want)
		}
		var starts []float64
		for _, b := range agg.Buckets {
			if !slices.Contains(starts, b.Start) {
				starts = append(starts, b.Start)
			}
		}
		for k, start := range starts {
			var arm sources.Histogram
			for _, b := range agg.Buckets {
				if b.Start == start {
					arm = addHist(arm, b.TTFT)
				}
			}
			var sum sources.Histogram
			for _, tr := range agg.Replicas {
				if len(tr.Finished) != len(starts) || len(tr.TTFTHist) != len(starts) || len(tr.TPOTHist) != len(starts) {
					t.Fatalf("%s %s: %d, %d and %d slices, want %d", ds.Arm, tr.Name, len(tr.Finished), len(tr.TTFTHist), len(tr.TPOTHist), len(starts))
				}
				sum = addHist(sum, tr.TTFTHist[k])
			}
			if !slices.Equal(sum.Edges, arm.Edges) || !slices.Equal(sum.Counts, arm.Counts) {
				t.Fatalf("%s slice %d: replicas' TTFT histograms add up to %v at %v, the arm's %v at %v", ds.Arm, k, sum.Counts, sum.Edges, arm.Counts, arm.Edges)
			}
			if k > 0 && !(sum.Counts[len(sum.Counts)-1] > 0) {
				t.Errorf("%s slice %d: no TTFT observations", ds.Arm, k)
			}
		}
	}
}

// addHist adds two cumulative histograms on the same edges (either may be
// empty).
func addHist(a, b sources.Histogram) sources.Histogram {
	if len(a.Edges) == 0 {
		return sources.Histogram{Edges: b.Edges, Counts: slices.Clone(b.Counts)}
	}
	for i := range a.Counts {
		a.Counts[i] += b.Counts[i]
	}
	return a
}

// TestReplicaKey: a replica is named by its labels less those given, as
// the Prometheus source names it ({k="v",…}, values quoted so that no
// control character reaches a terminal), and a series with no other label
// is {}.
func TestReplicaKey(t *testing.T) {
	for _, c := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"pod": "p1", "class": "chat", "finished_reason": "stop"}, `{pod="p1"}`},
		{map[string]string{"pod": "b\x1b[31m", "model_name": "m"}, `{model_name="m",pod="b\x1b[31m"}`},
		{map[string]string{"class": "chat"}, `{}`},
	} {
		if got := replicaKey(c.labels, "finished_reason", "class"); got != c.want {
			t.Errorf("replicaKey(%q) = %s, want %s", c.labels, got, c.want)
		}
	}
}
