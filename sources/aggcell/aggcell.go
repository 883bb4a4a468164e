// Package aggcell is what the two builders of an exact aggregate (one
// from per-request records: the streaming scan, analysis.Aggregator, and
// the ClickHouse source's assembler of a GROUP BY's rows) count into: one
// cell per time slice and stratum, added up when slices are widened
// (sources.MaxStreamSlices) or two partial aggregates merged, and written
// out as an AggBucket. Both builders use the same cell so that their
// aggregates stay equal field for field.
package aggcell

import (
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/loglin"
)

// Cell holds one (slice, stratum) cell's counts (requests, tokens),
// log-linear latency bins and latency sums (nanoseconds,
// sources.LatencyNanos). The zero value is an empty cell.
type Cell struct {
	Completed, Failed, Canceled, Rejected float64
	Good, Retried, Short                  float64
	OutUnknown, PromptUnknown             float64 // completions without an output length, admitted requests without a prompt length
	Prompt, Output, Hits, Queries         float64
	GoodTokens                            float64
	OutMax                                float64 // the most output tokens of one completion (0: none known)
	TTFT, TPOT, E2E                       loglin.Hist
	TTFTNs, TPOTNs, E2ENs                 int64
}

// Add adds o's counts, bins and sums into c.
func (c *Cell) Add(o *Cell) {
	c.Completed += o.Completed
	c.Failed += o.Failed
	c.Canceled += o.Canceled
	c.Rejected += o.Rejected
	c.Good += o.Good
	c.Retried += o.Retried
	c.Short += o.Short
	c.OutUnknown += o.OutUnknown
	c.PromptUnknown += o.PromptUnknown
	c.Prompt += o.Prompt
	c.Output += o.Output
	c.Hits += o.Hits
	c.Queries += o.Queries
	c.GoodTokens += o.GoodTokens
	c.OutMax = max(c.OutMax, o.OutMax)
	c.TTFT.Merge(&o.TTFT)
	c.TPOT.Merge(&o.TPOT)
	c.E2E.Merge(&o.E2E)
	c.TTFTNs += o.TTFTNs
	c.TPOTNs += o.TPOTNs
	c.E2ENs += o.E2ENs
}

// Widen returns cells re-keyed by halve (a key's slice halved, floor(s/2))
// with the cells that land on one key added up: the cells of slices twice
// as wide. The cells are reused.
func Widen[K comparable](cells map[K]*Cell, halve func(K) K) map[K]*Cell {
	out := make(map[K]*Cell, len(cells)/2+1)
	for k, c := range cells {
		k = halve(k)
		if d := out[k]; d != nil {
			d.Add(c)
		} else {
			out[k] = c
		}
	}
	return out
}

// Fill writes c's counts, latency sums and bins (in cumulative form, the
// edges taken from e: see loglin.Hist.CumulativeWith) into b; the prefix-
// cache token counts only when cacheKnown (they stay as b has them
// otherwise). The bins are handed over: c's histograms are emptied, so
// that they are not held twice while an aggregate is built.
func (c *Cell) Fill(b *sources.AggBucket, e *loglin.Edges, cacheKnown bool) {
	b.Completed, b.Failed, b.Canceled, b.Rejected = c.Completed, c.Failed, c.Canceled, c.Rejected
	b.Good, b.Retried, b.ShortOutputs, b.OutputUnknown, b.PromptUnknown = c.Good, c.Retried, c.Short, c.OutUnknown, c.PromptUnknown
	b.PromptTokens, b.OutputTokens, b.GoodTokens, b.OutputMax = c.Prompt, c.Output, c.GoodTokens, c.OutMax
	if cacheKnown {
		b.PrefixHits, b.PrefixQueries = c.Hits, c.Queries
	}
	b.TTFT, b.TPOT, b.E2E = c.TTFT.CumulativeWith(e), c.TPOT.CumulativeWith(e), c.E2E.CumulativeWith(e)
	b.TTFTSum, b.TPOTSum, b.E2ESum = float64(c.TTFTNs)/1e9, float64(c.TPOTNs)/1e9, float64(c.E2ENs)/1e9
	c.TTFT, c.TPOT, c.E2E = loglin.Hist{}, loglin.Hist{}, loglin.Hist{}
}
