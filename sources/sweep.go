package sources

// RatePoint is one load level of a rate sweep: one benchmark run at one
// request rate (a vLLM `bench serve` file, an inference-perf stage, a row of
// an SGLang or GuideLLM sweep). It carries either the run's per-request
// records (Requests) or, for summary-only files, its request counts and the
// percentile lists the tool wrote (Sketches), from which SLO attainment can
// only be bounded.
type RatePoint struct {
	// Path is the file the point was read from; Label names the point
	// within it ("stage 3", "line 2", "benchmark 4"), "" for a one-point file.
	Path  string
	Label string
	// Line is the 1-based line of the point's record in its file (0 when
	// the file holds one point).
	Line int
	// Format is the reader that produced the point (benchfile format name).
	Format string
	// SHA256 is the hex digest of the whole file the point came from.
	SHA256 string

	// RequestedRate is the arrival rate the client was asked for, requests/s;
	// +Inf for "as fast as possible", NaN when the file does not say.
	RequestedRate float64
	// AchievedRate is the arrival rate the client actually sent at,
	// requests/s; NaN when unknown.
	AchievedRate float64
	// Duration is the measured span in seconds (send phase when the tool
	// separates it, else the run's wall time); NaN when unknown.
	Duration float64

	// Offered, Completed and Failed count the point's requests (offered =
	// completed + failed; a client benchmark has no rejections of its own).
	Offered, Completed, Failed int64

	// Requests holds per-request records when the file has them; nil for
	// summary-only points.
	Requests []Request
	// Sketches holds the percentile lists of a summary-only point by
	// quantity ("ttft", "tpot", "e2e" in seconds; "output_tokens" in tokens),
	// over completed requests.
	Sketches map[string]Sketch

	// Workload identifies what was sent (dataset, input/output lengths, model)
	// as the tool states it, so that points of different workloads are not
	// mixed within an arm; "" when the file does not say.
	Workload string
	// MeanPromptTokens and MeanOutputTokens are the mean lengths over
	// completed requests; NaN when unknown.
	MeanPromptTokens, MeanOutputTokens float64

	// Replicas and GPUs serving the point when the file states them; 0 when
	// unknown.
	Replicas, GPUs int

	// Notes are facts about the point the report must show (e.g. "summary
	// row without tail percentiles").
	Notes []string
}

// Sketch is a list of percentiles of one latency over a point's completed
// requests: Probs[i] (in [0, 1], increasing) has the value Values[i]
// (seconds). Min and Max are included as probabilities 0 and 1 when the
// tool writes them. Interpolation says how the tool computed them:
// "linear" (numpy's default: between the order statistics at (n−1)p) or
// "unknown" (then only the looser nearest-rank reading is assumed).
type Sketch struct {
	Probs         []float64
	Values        []float64
	Interpolation string
}
