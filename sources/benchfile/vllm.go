package benchfile

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// arrayRun is one benchmark run in the per-request-array layout shared by
// vLLM `bench serve` and SGLang `bench_serving` (--output-details): parallel
// arrays indexed by request, in submission order, plus summary scalars.
// Inter-token gaps are not kept; each request's gaps are reduced to their
// sum, maximum and count while parsing.
type arrayRun struct {
	off  int            // byte offset of the run's object
	keys map[string]int // byte offset of each per-request key seen

	duration    float64 // seconds; NaN when absent
	completed   float64 // summary count; NaN when absent
	failed      float64 // summary count; NaN when absent
	requestRate string  // as written: "4", "inf", "Infinity", "trace"; "" when absent
	// stated holds the run's other load and workload settings
	// (sources.StatedSettings, model_id), each as written; null ones are
	// left out
	stated     map[string]string
	meanTTFTms float64 // summary mean TTFT in ms; NaN when absent
	summary    int     // number of summary keys seen (mean_*_ms, throughput, …)

	inputLens, outputLens []int64
	ttfts                 []float64 // seconds
	latencies             []float64 // seconds (newer vLLM only)
	startTimes            []float64 // perf_counter seconds
	itlSum, itlMax        []float64 // seconds, per request
	itlN                  []int32   // gaps per request
	errors                []string  // "" on success
}

// perRequestKeys lists the array keys this layout defines.
func perRequestKeys() []string {
	return []string{"input_lens", "output_lens", "ttfts", "latencies", "start_times", "itls", "errors"}
}

// parseArrayRun decodes one result object. Latencies must be finite and
// ≥ 0, token counts whole and ≥ 0; the first offending element is reported
// with its line and column.
func parseArrayRun(ctx context.Context, sc *scanner) (*arrayRun, error) {
	sc.ws()
	run := &arrayRun{off: sc.pos, keys: map[string]int{}, stated: map[string]string{},
		duration: math.NaN(), completed: math.NaN(), failed: math.NaN(), meanTTFTms: math.NaN()}
	if sc.peek() != kindObject {
		return nil, sc.typeErr("benchmark result", "an object")
	}
	err := sc.object(func(key string, off int) error {
		var err error
		switch key {
		case "duration":
			run.duration, err = sc.latency(key)
		case "completed", "failed":
			v, null, e := sc.numOrNull(key)
			if e == nil && !null && (v < 0 || v != math.Trunc(v)) {
				e = sc.errAt(off, "%s: %v is not a request count", key, v)
			}
			if key == "completed" {
				run.completed = v
			} else {
				run.failed = v
			}
			err = e
		case "request_rate":
			switch sc.peek() {
			case kindString:
				run.requestRate, err = sc.str()
			case kindNumber:
				var v float64
				v, err = sc.number()
				run.requestRate = fmt.Sprint(v)
				if math.IsInf(v, 1) {
					run.requestRate = "inf"
				}
			default:
				err = sc.skip()
			}
		case "burstiness", "max_concurrency", "dataset_name", "random_input_len", "random_output_len", "random_range_ratio", "sharegpt_output_len", "model_id":
			var v any
			if v, err = sc.value(); err == nil {
				if text, ok := statedText(v); ok {
					run.stated[key] = text
				}
			}
		case "mean_ttft_ms":
			var null bool
			run.meanTTFTms, null, err = sc.numOrNull(key)
			_ = null
			run.summary++
		case "input_lens", "output_lens":
			run.keys[key] = off
			var v []int64
			v, err = sc.counts(key)
			if key == "input_lens" {
				run.inputLens = v
			} else {
				run.outputLens = v
			}
		case "ttfts", "latencies":
			run.keys[key] = off
			var v []float64
			v, err = sc.latencies(key)
			if key == "ttfts" {
				run.ttfts = v
			} else {
				run.latencies = v
			}
		case "start_times":
			run.keys[key] = off
			run.startTimes, err = sc.times(key)
		case "itls":
			run.keys[key] = off
			err = run.parseITLs(ctx, sc)
		case "errors":
			run.keys[key] = off
			run.errors, err = sc.strs(key)
		default:
			if strings.HasSuffix(key, "_ms") || strings.HasSuffix(key, "_throughput") {
				run.summary++
			}
			err = sc.skip()
		}
		if err == nil {
			err = ctx.Err()
		}
		return err
	})
	return run, err
}

// parseITLs reads itls, a list (per request) of lists of gaps in seconds.
func (run *arrayRun) parseITLs(ctx context.Context, sc *scanner) error {
	const key = "itls"
	if sc.peek() != kindArray {
		return sc.typeErr(key, "an array of arrays of numbers")
	}
	return sc.array(func(i int) error {
		if sc.peek() != kindArray {
			return sc.typeErr(key+" element", "an array of numbers (one request's gaps)")
		}
		if i%4096 == 4095 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		sum, mx, n := 0.0, math.NaN(), int32(0)
		err := sc.array(func(int) error {
			v, err := sc.latency(key + " gap")
			if err != nil {
				return err
			}
			sum += v
			if n == 0 || v > mx {
				mx = v
			}
			n++
			return nil
		})
		run.itlSum = append(run.itlSum, sum)
		run.itlMax = append(run.itlMax, mx)
		run.itlN = append(run.itlN, n)
		return err
	})
}

// latencies reads an array of latencies in seconds.
func (s *scanner) latencies(key string) ([]float64, error) {
	if s.peek() != kindArray {
		return nil, s.typeErr(key, "an array of numbers")
	}
	var out []float64
	err := s.array(func(int) error {
		v, err := s.latency(key + " element")
		out = append(out, v)
		return err
	})
	return out, err
}

// counts reads an array of token counts.
func (s *scanner) counts(key string) ([]int64, error) {
	if s.peek() != kindArray {
		return nil, s.typeErr(key, "an array of whole numbers")
	}
	var out []int64
	err := s.array(func(int) error {
		v, err := s.count(key + " element")
		out = append(out, v)
		return err
	})
	return out, err
}

// times reads an array of finite clock readings in seconds.
func (s *scanner) times(key string) ([]float64, error) {
	if s.peek() != kindArray {
		return nil, s.typeErr(key, "an array of numbers")
	}
	var out []float64
	err := s.array(func(int) error {
		s.ws()
		off := s.pos
		v, err := s.num(key + " element")
		if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
			err = s.errAt(off, "%s element: %v is not a valid clock reading (want finite seconds)", key, v)
		}
		out = append(out, v)
		return err
	})
	return out, err
}

// lengthOf returns the length of a per-request array and whether it is set.
func (run *arrayRun) lengthOf(key string) (int, bool) {
	if _, ok := run.keys[key]; !ok {
		return 0, false
	}
	switch key {
	case "input_lens":
		return len(run.inputLens), true
	case "output_lens":
		return len(run.outputLens), true
	case "ttfts":
		return len(run.ttfts), true
	case "latencies":
		return len(run.latencies), true
	case "start_times":
		return len(run.startTimes), true
	case "itls":
		return len(run.itlN), true
	case "errors":
		return len(run.errors), true
	}
	return 0, false
}

// checkLengths verifies that every per-request array has one entry per
// request (the length of ttfts).
func (run *arrayRun) checkLengths(sc *scanner) error {
	n := len(run.ttfts)
	for _, k := range perRequestKeys() {
		if m, ok := run.lengthOf(k); ok && m != n {
			l, _ := lineCol(sc.buf, run.keys["ttfts"])
			return sc.errAt(run.keys[k], "%s has %d entries but ttfts (line %d) has %d: every per-request array must have one entry per request (was the file edited or cut short?)", k, m, l, n)
		}
	}
	return nil
}

// checkLatencies rejects completed requests whose end-to-end latency is
// shorter than their TTFT.
func (run *arrayRun) checkLatencies(sc *scanner) error {
	if _, ok := run.lengthOf("latencies"); !ok {
		return nil
	}
	for i, lat := range run.latencies {
		if len(run.errors) == len(run.ttfts) && run.errors[i] != "" {
			continue
		}
		if lat < run.ttfts[i] {
			return sc.errAt(run.keys["latencies"], "latencies: request %d (0-based index %d) has latency %v s, shorter than its TTFT %v s: a request cannot end before its first token", i+1, i, lat, run.ttfts[i])
		}
	}
	return nil
}

// errorStatus classifies a non-empty client error string.
func errorStatus(msg string) sources.Status {
	m := strings.ToLower(msg)
	if strings.Contains(m, "timeout") || strings.Contains(m, "timed out") {
		return sources.StatusTimeout
	}
	return sources.StatusError
}

// appendRequests converts the run's arrays into requests, appended to out.
// Time is the start time on the run's own clock, or NaN without start_times.
func (run *arrayRun) appendRequests(out []sources.Request) []sources.Request {
	_, hasOut := run.lengthOf("output_lens")
	_, hasIn := run.lengthOf("input_lens")
	_, hasLat := run.lengthOf("latencies")
	_, hasITL := run.lengthOf("itls")
	_, hasStart := run.lengthOf("start_times")
	_, hasErr := run.lengthOf("errors")
	for i := range run.ttfts {
		r := sources.NewRequest()
		r.Status = sources.StatusOK
		if hasErr && run.errors[i] != "" {
			r.Status = errorStatus(run.errors[i])
		}
		if hasIn {
			r.PromptTokens = run.inputLens[i]
		}
		if hasOut {
			r.OutputTokens = run.outputLens[i]
		}
		if hasStart {
			r.Time = run.startTimes[i]
		}
		if r.Status == sources.StatusOK {
			r.TTFT = run.ttfts[i]
			switch {
			case hasLat:
				r.E2E = run.latencies[i]
			case hasITL:
				r.E2E = r.TTFT + run.itlSum[i]
			}
			if hasITL && run.itlN[i] > 0 {
				r.MaxITL = run.itlMax[i]
			}
			r.DeriveTPOT()
		} else if hasLat && run.latencies[i] > 0 {
			// The client waited this long before giving up or failing.
			r.E2E = run.latencies[i]
		}
		out = append(out, r)
	}
	return out
}

// crossCheck compares the run's summary counts and mean TTFT with the
// arrays and returns warnings for disagreements.
func (run *arrayRun) crossCheck(label string) []string {
	var w []string
	ok, failed := 0, 0
	var sum float64
	for i := range run.ttfts {
		if len(run.errors) == len(run.ttfts) && run.errors[i] != "" {
			failed++
			continue
		}
		ok++
		sum += run.ttfts[i]
	}
	if !math.IsNaN(run.completed) && int(run.completed) != ok {
		w = append(w, fmt.Sprintf("%s: the summary says completed=%v but the per-request arrays hold %d requests without an error; using the arrays", label, run.completed, ok))
	}
	if !math.IsNaN(run.failed) && int(run.failed) != failed {
		w = append(w, fmt.Sprintf("%s: the summary says failed=%v but the per-request arrays hold %d requests with an error; using the arrays", label, run.failed, failed))
	}
	if _, hasLat := run.lengthOf("latencies"); !hasLat && len(run.itlN) == len(run.ttfts) {
		oneChunk := 0
		for i := range run.ttfts {
			if (len(run.errors) != len(run.ttfts) || run.errors[i] == "") && run.outputLens[i] > 1 && run.itlN[i] == 0 {
				oneChunk++
			}
		}
		if oneChunk > 0 {
			w = append(w, fmt.Sprintf("%s: %d completed requests have more than one output token but no inter-token gaps (the whole answer came in one chunk: a non-streaming backend?); without latencies their e2e is taken as TTFT, so their TPOT is 0", label, oneChunk))
		}
	}
	if ok > 0 && !math.IsNaN(run.meanTTFTms) && !math.IsInf(run.meanTTFTms, 0) {
		mean := sum / float64(ok) * 1000
		if math.Abs(mean-run.meanTTFTms) > 1e-3*math.Max(math.Abs(run.meanTTFTms), 1e-9) {
			w = append(w, fmt.Sprintf("%s: the summary mean_ttft_ms=%.6g disagrees with the per-request ttfts (mean %.6g ms); the arrays may have been edited; using the arrays", label, run.meanTTFTms, mean))
		}
	}
	return w
}

// runSet collects consecutive result objects (vLLM --append-result writes one
// per line; SGLang always appends lines) and lays them end to end.
type runSet struct {
	reqs      []sources.Request
	stated    map[string]string // the settings every run states alike
	duration  float64           // Σ run durations, seconds; NaN if any is unknown
	runs      int
	rates     []string
	noStart   int // runs without start_times
	withStart int
}

// add appends one run's requests. Runs with start times are shifted so the
// run starts where the previous one ended (files hold sequential runs).
func (rs *runSet) add(run *arrayRun) {
	first := len(rs.reqs)
	rs.reqs = run.appendRequests(rs.reqs)
	if _, ok := run.lengthOf("start_times"); ok && len(run.ttfts) > 0 {
		rs.withStart++
		shiftToZero(rs.reqs[first:])
		off := rs.duration
		if math.IsNaN(off) {
			off = 0
		}
		for i := first; i < len(rs.reqs); i++ {
			rs.reqs[i].Time += off
		}
	} else {
		rs.noStart++
	}
	if rs.runs == 0 {
		rs.duration = 0
	}
	rs.duration += run.duration // NaN propagates
	if run.requestRate != "" {
		run.stated["request_rate"] = run.requestRate
	}
	rs.stated = sources.MergeStated(rs.stated, run.stated, rs.runs == 0)
	rs.runs++
	rs.rates = append(rs.rates, run.requestRate)
}

// statedText writes a stated setting as the file does: a number in its
// shortest form, a string as it is; false for null and anything else.
func statedText(v any) (string, bool) {
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), true
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

// finish moves the collected runs into the file's dataset.
func (rs *runSet) finish(f *file, tool string) {
	f.ds.Requests = rs.reqs
	if len(rs.stated) > 0 {
		f.ds.Stated = rs.stated
	}
	if !math.IsNaN(rs.duration) {
		f.ds.Duration = rs.duration
	}
	switch {
	case rs.noStart == 0:
		f.ds.Clock = sources.ClockRelative
		f.note = append(f.note, "times are perf_counter seconds, shifted so that the file's first request is at 0")
	default:
		f.ds.Clock = sources.ClockNone
		for i := range f.ds.Requests {
			f.ds.Requests[i].Time = math.NaN()
		}
		what := fmt.Sprintf("%s file has no start_times", tool)
		if rs.withStart > 0 {
			what = fmt.Sprintf("%d of the file's %d runs have no start_times", rs.noStart, rs.runs)
		}
		f.warnf("%s", noTimesWarning(what, f.ds.Duration))
	}
	if rs.runs > 1 {
		f.note = append(f.note, fmt.Sprintf("%d runs laid end to end", rs.runs))
		distinct := map[string]bool{}
		for _, r := range rs.rates {
			distinct[r] = true
		}
		if len(distinct) > 1 {
			f.warnf("the file holds %d runs at different request rates (%s); they are judged as one arm, laid end to end in file order: give one run per file to compare like with like", rs.runs, strings.Join(rs.rates, ", "))
		}
	}
	if len(rs.rates) == 1 && rs.rates[0] != "" {
		f.note = append(f.note, "request rate "+rs.rates[0])
	}
}

// readVLLM reads a vLLM bench serve / benchmark_serving.py result file.
func readVLLM(ctx context.Context, f *file) error {
	sc := &f.sc
	rs := &runSet{}
	for idx := 1; !sc.atEOF(); idx++ {
		if idx > 1 && sc.peek() != kindObject {
			return sc.end()
		}
		run, err := parseArrayRun(ctx, sc)
		if err != nil {
			return err
		}
		if _, ok := run.keys["ttfts"]; !ok {
			return sc.errAt(run.off, "this vLLM result has no per-request arrays (ttfts, itls, output_lens), only summary figures: rerun `vllm bench serve` with --save-result --save-detailed so that per-request data is written")
		}
		if err := run.checkLengths(sc); err != nil {
			return err
		}
		if err := run.checkLatencies(sc); err != nil {
			return err
		}
		if _, ok := run.keys["output_lens"]; !ok {
			return sc.errAt(run.off, "this vLLM result has ttfts but no output_lens, so TPOT cannot be derived: rerun `vllm bench serve` with --save-result --save-detailed")
		}
		if math.IsNaN(run.duration) {
			f.warnf("run %d has no duration; goodput per second falls back to the span of arrival times", idx)
		}
		label := f.sc.path
		if idx > 1 {
			label = fmt.Sprintf("%s (run %d)", label, idx)
		}
		f.warnings = append(f.warnings, run.crossCheck(label)...)
		if _, ok := run.keys["itls"]; !ok {
			if _, ok := run.keys["latencies"]; !ok {
				f.warnf("no itls or latencies: end-to-end latency and TPOT are unknown")
			}
		}
		rs.add(run)
	}
	rs.finish(f, "vLLM")
	return nil
}
