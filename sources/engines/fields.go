package engines

import "github.com/goodput-dev/goodput/sources"

// The functions below place a canonical quantity's value in its field of a
// sources.AggBucket, so that every metrics-based source fills buckets the
// same way. Quantities without a field are ignored.

// OutcomeField returns the bucket field that counts outcome o, or nil.
func OutcomeField(b *sources.AggBucket, o Outcome) *float64 {
	switch o {
	case Completed:
		return &b.Completed
	case Failed:
		return &b.Failed
	case Canceled:
		return &b.Canceled
	case Rejected:
		return &b.Rejected
	}
	return nil
}

// SetCounter stores counter quantity q's increase in b.
func SetCounter(b *sources.AggBucket, q Quantity, v float64) {
	switch q {
	case PromptTokens:
		b.PromptTokens = v
	case OutputTokens:
		b.OutputTokens = v
	case PrefixHits:
		b.PrefixHits = v
	case PrefixQueries:
		b.PrefixQueries = v
	case Good:
		b.Good = v
	}
}

// SetHistogram stores histogram quantity q's increase in b.
func SetHistogram(b *sources.AggBucket, q Quantity, h sources.Histogram) {
	switch q {
	case TTFT:
		b.TTFT = h
	case TPOT:
		b.TPOT = h
	case E2E:
		b.E2E = h
	case Queue:
		b.Queue = h
	}
}

// SetGauge stores gauge quantity q's mean over the bucket in b.
func SetGauge(b *sources.AggBucket, q Quantity, v float64) {
	switch q {
	case Running:
		b.Running = v
	case Waiting:
		b.Waiting = v
	case KVUsage:
		b.KVUsage = v
	case GPUUtil:
		b.GPUUtil = v
	case GPUPowerW:
		b.GPUPowerW = v
	case GPUMemBytes:
		b.GPUMemBytes = v
	}
}
