package benchfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// FormatGuideLLM is GuideLLM's benchmark report (benchmarks.json), read as
// sweep points only.
const FormatGuideLLM = "guidellm"

// SweepFile reports whether a file found in a sweep directory should be read
// as a point of the sweep. It skips files that belong to a sweep but are not
// points: inference-perf's pooled summary_*.json, its server-side
// *_prometheus_metrics.json, configs and notes.
func SweepFile(name string) bool {
	base := strings.ToLower(filepath.Base(name))
	switch {
	case strings.HasPrefix(base, "."),
		strings.HasSuffix(base, "_prometheus_metrics.json"),
		strings.HasPrefix(base, "summary_") && strings.Contains(base, "lifecycle"),
		!(strings.HasSuffix(base, ".json") || strings.HasSuffix(base, ".jsonl")):
		return false
	}
	return true
}

// ReadSweep reads one benchmark file as points of a rate sweep: an
// inference-perf stage_N_lifecycle_metrics.json (a stage's aggregates) or
// per_request_lifecycle_metrics.json (one point per stage), a vLLM `bench
// serve` result (one point per file), an SGLang bench_serving JSONL (one
// point per line; summary-only lines are bounded from their percentiles,
// when they have any), a GuideLLM benchmarks.json (one point per
// benchmark) or an LLMPerf summary. path is used in messages; r yields the
// bytes. Errors are *ParseError values naming the file and line.
func ReadSweep(ctx context.Context, path string, r io.Reader) ([]sources.RatePoint, error) {
	h := sha256.New()
	buf, err := readWhole(path, r, h)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	buf = bytes.TrimPrefix(buf, []byte("\xef\xbb\xbf"))
	if len(bytes.TrimSpace(buf)) == 0 {
		return nil, &ParseError{Path: path, Line: 1, Col: 1, Msg: "the file is empty (did the benchmark finish writing it?)"}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	sc := &scanner{buf: buf, path: path}
	format := detect(buf)
	if format == "" {
		top := objectKeys(&scanner{buf: buf})
		if top["benchmarks"] {
			format = FormatGuideLLM
		}
	}
	var pts []sources.RatePoint
	switch format {
	case FormatInferencePerf:
		if sc.peek() == kindObject {
			pts, err = ipStage(sc)
		} else {
			pts, err = ipPerRequestSweep(ctx, path, buf)
		}
	case FormatVLLM:
		pts, err = vllmSweep(ctx, path, buf)
	case FormatSGLang:
		pts, err = sglangSweep(ctx, sc)
	case FormatGuideLLM:
		pts, err = guidellmSweep(sc)
	case FormatLLMPerf:
		if sc.peek() == kindArray {
			return nil, sc.errAt(sc.pos, "LLMPerf individual responses carry no request rate (LLMPerf runs a fixed number of concurrent clients): give the *_summary.json of each run instead, whose completed requests per minute place it on the rate curve")
		}
		pts, err = llmperfSweep(sc)
	case "":
		return nil, &ParseError{Path: path, Msg: "not a benchmark file goodput capacity reads (inference-perf stage or per-request lifecycle metrics, vLLM bench serve result, SGLang bench_serving JSONL, GuideLLM benchmarks.json, LLMPerf summary)"}
	default:
		return nil, &ParseError{Path: path, Msg: fmt.Sprintf("a %s file holds no request rate: it cannot be a point of a rate sweep", format)}
	}
	if err != nil {
		return nil, err
	}
	for i := range pts {
		pts[i].Path, pts[i].SHA256 = path, sum
		if pts[i].Format == "" {
			pts[i].Format = format
		}
	}
	return pts, nil
}

// tree helpers over scanner.value() output

func getMap(m map[string]any, keys ...string) map[string]any {
	cur := m
	for _, k := range keys {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil
		}
		cur = next
	}
	return cur
}

func getNum(m map[string]any, key string) float64 {
	if m == nil {
		return math.NaN()
	}
	switch v := m[key].(type) {
	case float64:
		return v
	case string:
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
		if strings.EqualFold(v, "inf") || strings.EqualFold(v, "infinity") {
			return math.Inf(1)
		}
	}
	return math.NaN()
}

// sketchFrom builds a Sketch from (probability, value) pairs, dropping
// unknown values, scaling values by unit (1e-3 for milliseconds).
func sketchFrom(pairs map[float64]float64, unit float64, interp string) (sources.Sketch, bool) {
	var ps []float64
	for p, v := range pairs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return sources.Sketch{}, false
	}
	sort.Float64s(ps)
	sk := sources.Sketch{Interpolation: interp}
	for _, p := range ps {
		sk.Probs = append(sk.Probs, p)
		sk.Values = append(sk.Values, pairs[p]*unit)
	}
	return sk, true
}

// pctKey parses percentile keys: "p99", "p99.9", "p0.1", "median", "min",
// "max" (inference-perf); with compact=true GuideLLM's "p001" (0.1%), "p01",
// "p05", "p999" (99.9%).
func pctKey(k string, compact bool) (float64, bool) {
	switch k {
	case "median":
		return 0.5, true
	case "min":
		return 0, true
	case "max":
		return 1, true
	}
	if !strings.HasPrefix(k, "p") {
		return 0, false
	}
	s := k[1:]
	if compact && !strings.Contains(s, ".") && len(s) >= 2 {
		if s == "100" {
			return 1, true
		}
		if len(s) == 3 { // p001 = 0.1, p999 = 99.9
			s = s[:2] + "." + s[2:]
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 100 {
		return 0, false
	}
	return v / 100, true
}

// ipStage reads an inference-perf stage_N_lifecycle_metrics.json.
var stageRE = regexp.MustCompile(`stage_(\d+)_lifecycle`)

func ipStage(sc *scanner) ([]sources.RatePoint, error) {
	m, err := sc.document()
	if err != nil {
		return nil, err
	}
	ls := getMap(m, "load_summary")
	req, ach := getNum(ls, "requested_rate"), getNum(ls, "achieved_rate")
	if ls == nil || (math.IsNaN(req) && math.IsNaN(ach)) {
		base := filepath.Base(sc.path)
		if strings.Contains(base, "prometheus") || (ls != nil && len(ls) == 0) {
			return nil, &ParseError{Path: sc.path, Line: 1, Col: 1, Msg: "this is inference-perf's server-side prometheus_metrics file: it has no client request rate; give the stage_N_lifecycle_metrics.json files (or their directory)"}
		}
		return nil, &ParseError{Path: sc.path, Line: 1, Col: 1, Msg: "inference-perf lifecycle summary without load_summary.requested_rate or achieved_rate: this is the pooled summary of a whole sweep (summary_lifecycle_metrics.json) or an older inference-perf; give the per-stage stage_N_lifecycle_metrics.json files (or their directory)"}
	}
	p := sources.RatePoint{Format: FormatInferencePerf, RequestedRate: req, AchievedRate: ach,
		Duration: getNum(ls, "send_duration"), Sketches: map[string]sources.Sketch{}}
	if mm := stageRE.FindStringSubmatch(filepath.Base(sc.path)); mm != nil {
		p.Label = "stage " + mm[1]
	}
	succ, fail := getMap(m, "successes"), getMap(m, "failures")
	ns, nf := getNum(succ, "count"), getNum(fail, "count")
	if math.IsNaN(ns) {
		return nil, &ParseError{Path: sc.path, Line: 1, Col: 1, Msg: "successes.count is missing: cannot count the stage's requests"}
	}
	if math.IsNaN(nf) {
		nf = 0
		p.Notes = append(p.Notes, "failures.count missing: taken as 0")
	}
	p.Completed, p.Failed = int64(ns), int64(nf)
	p.Offered = p.Completed + p.Failed
	lat := getMap(succ, "latency")
	for name, key := range map[string]string{"ttft": "time_to_first_token", "tpot": "time_per_output_token", "e2e": "request_latency"} {
		q := getMap(lat, key)
		pairs := map[float64]float64{}
		for k := range q {
			if pr, ok := pctKey(k, false); ok {
				pairs[pr] = getNum(q, k)
			}
		}
		if sk, ok := sketchFrom(pairs, 1, "linear"); ok {
			p.Sketches[name] = sk
		}
	}
	p.MeanPromptTokens, p.MeanOutputTokens = getNum(getMap(succ, "prompt_len"), "mean"), getNum(getMap(succ, "output_len"), "mean")
	ol := getMap(succ, "output_len")
	pairs := map[float64]float64{}
	for k := range ol {
		if pr, ok := pctKey(k, false); ok {
			pairs[pr] = getNum(ol, k)
		}
	}
	if sk, ok := sketchFrom(pairs, 1, "linear"); ok {
		p.Sketches["output_tokens"] = sk
	}
	return []sources.RatePoint{p}, nil
}

// ipPerRequestSweep reads per_request_lifecycle_metrics.json as one point
// per stage_id; each stage's achieved rate is its requests over the span of
// their start times (the file does not state the requested rate).
func ipPerRequestSweep(ctx context.Context, path string, buf []byte) ([]sources.RatePoint, error) {
	ds, err := Read(ctx, FormatInferencePerf, path, bytes.NewReader(buf), sources.Baseline)
	if err != nil {
		return nil, err
	}
	// the stage of every record, in file order (Read keeps that order)
	sc := &scanner{buf: buf, path: path}
	var stages []string
	if err := sc.array(func(int) error {
		stage := ""
		err := sc.object(func(k string, _ int) error {
			if k != "stage_id" {
				return sc.skip()
			}
			v, err := sc.value()
			if v != nil {
				stage = fmt.Sprint(v)
			}
			return err
		})
		stages = append(stages, stage)
		return err
	}); err != nil {
		return nil, err
	}
	if len(stages) != len(ds.Requests) {
		return nil, &ParseError{Path: path, Msg: fmt.Sprintf("%d records but %d requests read", len(stages), len(ds.Requests))}
	}
	by := map[string][]sources.Request{}
	var order []string
	for i, st := range stages {
		if _, ok := by[st]; !ok {
			order = append(order, st)
		}
		by[st] = append(by[st], ds.Requests[i])
	}
	var pts []sources.RatePoint
	for _, st := range order {
		reqs := by[st]
		p := sources.RatePoint{Format: FormatInferencePerf, Label: "stage " + st, RequestedRate: math.NaN(),
			AchievedRate: arrivalRate(reqs), Duration: math.NaN(), Requests: reqs}
		if st == "" {
			p.Label = "no stage_id"
		}
		p.Completed, p.Failed, p.Offered = countStatus(reqs)
		p.Notes = append(p.Notes, "per-request file: the requested rate is not recorded; the point sits at the achieved arrival rate")
		pts = append(pts, p)
	}
	return pts, nil
}

// vllmSweep reads one vLLM bench serve result as one point.
func vllmSweep(ctx context.Context, path string, buf []byte) ([]sources.RatePoint, error) {
	sc := &scanner{buf: buf, path: path}
	if sc.peek() != kindObject {
		return nil, sc.typeErr("vLLM bench serve result", "an object")
	}
	top := map[string]any{}
	if err := sc.object(func(k string, _ int) error {
		switch k {
		case "request_rate", "model_id", "dataset_name", "random_input_len", "random_output_len", "sharegpt_output_len", "burstiness", "max_concurrency":
			v, err := sc.value()
			top[k] = v
			return err
		}
		return sc.skip()
	}); err != nil {
		return nil, err
	}
	ds, err := Read(ctx, FormatVLLM, path, bytes.NewReader(buf), sources.Baseline)
	if err != nil {
		return nil, err
	}
	p := sources.RatePoint{Format: FormatVLLM, RequestedRate: getNum(top, "request_rate"), AchievedRate: math.NaN(),
		Duration: ds.Duration, Requests: ds.Requests, Workload: workload(top, "model_id", "dataset_name", "random_input_len", "random_output_len", "sharegpt_output_len")}
	if p.Duration == 0 {
		p.Duration = math.NaN()
	}
	if mc := getNum(top, "max_concurrency"); mc > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("client concurrency capped at %g: the requested rate may not have been offered", mc))
	}
	p.AchievedRate = arrivalRate(ds.Requests)
	if math.IsNaN(p.AchievedRate) {
		p.Notes = append(p.Notes, "no start_times: the achieved arrival rate is unknown, so saturation cannot be detected from this file")
	}
	p.Completed, p.Failed, p.Offered = countStatus(ds.Requests)
	p.Notes = append(p.Notes, ds.Warnings...)
	return []sources.RatePoint{p}, nil
}

// workload joins the named descriptors that a file states.
func workload(m map[string]any, keys ...string) string {
	var parts []string
	for _, k := range keys {
		switch v := m[k].(type) {
		case nil:
		case float64:
			parts = append(parts, fmt.Sprintf("%s=%g", k, v))
		default:
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	return strings.Join(parts, " ")
}

func countStatus(reqs []sources.Request) (completed, failed, offered int64) {
	for i := range reqs {
		if reqs[i].Status == sources.StatusOK {
			completed++
		} else {
			failed++
		}
	}
	return completed, failed, int64(len(reqs))
}

// arrivalRate is (n−1) / (last − first arrival); NaN without arrival times.
func arrivalRate(reqs []sources.Request) float64 {
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for i := range reqs {
		t := reqs[i].Time
		if math.IsNaN(t) {
			continue
		}
		lo, hi, n = math.Min(lo, t), math.Max(hi, t), n+1
	}
	if n < 2 || !(hi > lo) {
		return math.NaN()
	}
	return float64(n-1) / (hi - lo)
}

// sglangSweep reads SGLang bench_serving JSONL: one point per line.
func sglangSweep(ctx context.Context, sc *scanner) ([]sources.RatePoint, error) {
	var pts []sources.RatePoint
	for idx := 1; !sc.atEOF(); idx++ {
		if sc.peek() != kindObject {
			return nil, sc.typeErr(fmt.Sprintf("SGLang run %d", idx), "an object (one run per line)")
		}
		start := sc.pos
		line, _ := lineCol(sc.buf, start)
		v, err := sc.value()
		if err != nil {
			return nil, err
		}
		m := v.(map[string]any)
		p := sources.RatePoint{Format: FormatSGLang, Label: fmt.Sprintf("line %d", line), Line: line,
			RequestedRate: getNum(m, "request_rate"), AchievedRate: math.NaN(), Duration: getNum(m, "duration"),
			Workload:         workload(m, "dataset_name", "random_input_len", "random_output_len", "random_range_ratio", "sharegpt_output_len"),
			MeanPromptTokens: math.NaN(), MeanOutputTokens: math.NaN()}
		if comp := getNum(m, "completed"); comp > 0 {
			p.MeanPromptTokens, p.MeanOutputTokens = getNum(m, "total_input_tokens")/comp, getNum(m, "total_output_tokens")/comp
		}
		if _, ok := m["ttfts"]; ok {
			// a line with --output-details: re-read it with the per-request reader
			sub := &scanner{buf: sc.buf[:sc.pos], pos: start, path: sc.path}
			run, err := parseArrayRun(ctx, sub)
			if err != nil {
				return nil, err
			}
			if err := run.checkLengths(sub); err != nil {
				return nil, err
			}
			p.Requests = run.appendRequests(nil)
			p.Completed, p.Failed, p.Offered = countStatus(p.Requests)
			p.AchievedRate = arrivalRate(p.Requests)
		} else {
			comp := getNum(m, "completed")
			if math.IsNaN(comp) {
				return nil, sc.errAt(start, "line %d has neither per-request arrays nor a completed count", line)
			}
			p.Completed, p.Offered = int64(comp), int64(comp)
			p.Notes = append(p.Notes, "summary-only row: failed requests are not counted, so attainment is over completed requests")
			p.Sketches = map[string]sources.Sketch{}
			for name, stem := range map[string]string{"ttft": "ttft_ms", "tpot": "tpot_ms", "e2e": "e2e_latency_ms"} {
				pairs := map[float64]float64{}
				for k := range m {
					rest, ok := strings.CutSuffix(k, "_"+stem)
					if !ok {
						continue
					}
					if rest == "median" {
						pairs[0.5] = getNum(m, k)
					} else if pr, ok := pctKey(rest, false); ok && rest != "min" && rest != "max" {
						pairs[pr] = getNum(m, k)
					}
				}
				if sk, ok := sketchFrom(pairs, 1e-3, "linear"); ok {
					p.Sketches[name] = sk
				}
			}
		}
		if math.IsInf(p.RequestedRate, 1) && p.Duration > 0 {
			p.AchievedRate = float64(p.Completed) / p.Duration
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// guidellmSweep reads GuideLLM's benchmarks.json: one point per benchmark.
// Percentiles are GuideLLM's own (interpolation not stated), so the looser
// nearest-rank reading is used.
func guidellmSweep(sc *scanner) ([]sources.RatePoint, error) {
	m, err := sc.document()
	if err != nil {
		return nil, err
	}
	list, _ := m["benchmarks"].([]any)
	if len(list) == 0 {
		return nil, &ParseError{Path: sc.path, Line: 1, Col: 1, Msg: "GuideLLM report without benchmarks"}
	}
	var pts []sources.RatePoint
	for i, b := range list {
		bm, _ := b.(map[string]any)
		strat := getMap(bm, "config", "strategy")
		if strat == nil {
			strat = getMap(bm, "args", "strategy")
		}
		typ, _ := strat["type_"].(string)
		p := sources.RatePoint{Format: FormatGuideLLM, Label: fmt.Sprintf("benchmark %d", i+1), RequestedRate: math.NaN(),
			AchievedRate: getNum(getMap(bm, "metrics", "requests_per_second", "successful"), "mean"), Duration: getNum(bm, "duration"),
			MeanPromptTokens: getNum(getMap(bm, "metrics", "prompt_token_count", "successful"), "mean"),
			MeanOutputTokens: getNum(getMap(bm, "metrics", "output_token_count", "successful"), "mean")}
		switch typ {
		case "constant", "poisson", "async":
			p.RequestedRate = getNum(strat, "rate")
		case "throughput":
			p.RequestedRate = math.Inf(1)
		default:
			p.Notes = append(p.Notes, fmt.Sprintf("strategy %q sets no request rate: counted at its achieved rate", typ))
		}
		tot := getMap(bm, "metrics", "request_totals")
		ok, errd, inc := getNum(tot, "successful"), getNum(tot, "errored"), getNum(tot, "incomplete")
		if math.IsNaN(ok) {
			return nil, &ParseError{Path: sc.path, Msg: fmt.Sprintf("benchmark %d has no metrics.request_totals.successful", i+1)}
		}
		p.Completed = int64(ok)
		p.Failed = int64(zeroNaN(errd) + zeroNaN(inc))
		p.Offered = p.Completed + p.Failed
		p.Sketches = map[string]sources.Sketch{}
		for name, spec := range map[string]struct {
			key  string
			unit float64
		}{"ttft": {"time_to_first_token_ms", 1e-3}, "tpot": {"time_per_output_token_ms", 1e-3}, "e2e": {"request_latency", 1}} {
			d := getMap(bm, "metrics", spec.key, "successful")
			pairs := map[float64]float64{}
			for k := range getMap(d, "percentiles") {
				if pr, ok := pctKey(k, true); ok {
					pairs[pr] = getNum(getMap(d, "percentiles"), k)
				}
			}
			for _, k := range []string{"min", "max", "median"} {
				if x := getNum(d, k); !math.IsNaN(x) {
					pr, _ := pctKey(k, true)
					pairs[pr] = x
				}
			}
			if sk, ok := sketchFrom(pairs, spec.unit, "unknown"); ok {
				p.Sketches[name] = sk
			}
		}
		pts = append(pts, p)
	}
	return pts, nil
}

func zeroNaN(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// llmperfSweep reads an LLMPerf *_summary.json as one point: LLMPerf keeps
// a fixed number of concurrent clients, so the point sits at its achieved
// rate (completed requests per minute / 60).
func llmperfSweep(sc *scanner) ([]sources.RatePoint, error) {
	m, err := sc.document()
	if err != nil {
		return nil, err
	}
	p := sources.RatePoint{Format: FormatLLMPerf, RequestedRate: math.NaN(), AchievedRate: getNum(m, "results_num_completed_requests_per_min") / 60,
		Duration: math.NaN(), Workload: workload(m, "model", "mean_input_tokens", "mean_output_tokens"),
		MeanPromptTokens: getNum(m, "results_number_input_tokens_mean"), MeanOutputTokens: getNum(m, "results_number_output_tokens_mean")}
	comp, started := getNum(m, "results_num_completed_requests"), getNum(m, "results_num_requests_started")
	if math.IsNaN(comp) {
		return nil, &ParseError{Path: sc.path, Msg: "LLMPerf summary without results_num_completed_requests"}
	}
	if math.IsNaN(started) || started < comp {
		started = comp
	}
	p.Completed, p.Offered = int64(comp), int64(started)
	p.Failed = p.Offered - p.Completed
	p.Notes = append(p.Notes, fmt.Sprintf("LLMPerf runs %g concurrent clients: the point sits at its achieved rate", getNum(m, "num_concurrent_requests")))
	p.Sketches = map[string]sources.Sketch{}
	for name, stem := range map[string]string{"ttft": "results_ttft_s", "e2e": "results_end_to_end_latency_s"} {
		pairs := map[float64]float64{0: getNum(m, stem+"_min"), 1: getNum(m, stem+"_max")}
		for k := range m {
			if rest, ok := strings.CutPrefix(k, stem+"_quantiles_"); ok {
				if pr, ok := pctKey(rest, false); ok {
					pairs[pr] = getNum(m, k)
				}
			}
		}
		if sk, ok := sketchFrom(pairs, 1, "linear"); ok {
			p.Sketches[name] = sk
		}
	}
	p.Notes = append(p.Notes, "LLMPerf summaries have no TPOT percentiles (its inter-token latency includes the first token)")
	return []sources.RatePoint{p}, nil
}
