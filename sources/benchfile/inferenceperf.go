package benchfile

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/goodput-dev/goodput/sources"
)

// ipRecord is one record of inference-perf's per-request lifecycle file.
type ipRecord struct {
	off        int
	stage      string
	start, end float64 // perf_counter seconds
	tokenTimes []float64
	inTok      int64
	outTok     int64
	failed     bool
	errMsg     string
	hasStart   bool
	hasEnd     bool
}

// readInferencePerf reads kubernetes-sigs inference-perf's
// per_request_lifecycle_metrics.json: an array of records with start_time
// and end_time (client perf_counter seconds), info with token counts and
// output_token_times (perf_counter seconds per streamed token) in either the
// current layout (info.request_metrics.text.input_tokens,
// info.response_metrics.{output_tokens,output_token_times}) or the older
// flat one (info.{input_tokens,output_tokens,output_token_times}), and error
// (null or {error_type, error_msg}). TTFT = first token time − start_time,
// e2e = end_time − start_time, TPOT = (e2e − TTFT)/(output tokens − 1) like
// every other reader here (inference-perf's own TPOT stops at the last token
// time instead of end_time, so it can be slightly smaller).
func readInferencePerf(ctx context.Context, f *file) error {
	sc := &f.sc
	switch sc.peek() {
	case kindObject:
		keys := objectKeys(&scanner{buf: sc.buf[sc.pos:]})
		if keys["load_summary"] || keys["successes"] || keys["failures"] {
			return sc.errAt(sc.pos, "this is an inference-perf summary (summary_lifecycle_metrics.json or stage_N_lifecycle_metrics.json): it holds only statistics; give per_request_lifecycle_metrics.json, written when the config sets report.request_lifecycle.per_request: true")
		}
		return sc.typeErr("inference-perf per-request metrics", "an array of request records")
	case kindArray:
	default:
		return sc.typeErr("inference-perf per-request metrics", "an array of request records")
	}
	var recs []ipRecord
	err := sc.array(func(i int) error {
		rec, err := parseIPRecord(sc, i)
		recs = append(recs, rec)
		if err == nil && len(recs)%4096 == 0 {
			err = ctx.Err()
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := sc.end(); err != nil {
		return err
	}
	stages := map[string]bool{}
	out := make([]sources.Request, 0, len(recs))
	noTimes := 0
	for _, rec := range recs {
		stages[rec.stage] = true
		r := sources.NewRequest()
		r.Time = rec.start
		r.PromptTokens = rec.inTok
		r.OutputTokens = rec.outTok
		if rec.failed {
			r.Status = errorStatus(rec.errMsg)
			out = append(out, r)
			continue
		}
		r.Status = sources.StatusOK
		if rec.end < rec.start {
			return sc.errAt(rec.off, "end_time %v is before start_time %v", rec.end, rec.start)
		}
		r.E2E = rec.end - rec.start
		if n := len(rec.tokenTimes); n > 0 {
			if rec.tokenTimes[0] < rec.start || rec.tokenTimes[n-1] > rec.end+1e-6 {
				return sc.errAt(rec.off, "output_token_times fall outside [start_time, end_time]: they must be on the same perf_counter clock")
			}
			r.TTFT = rec.tokenTimes[0] - rec.start
			for j := 1; j < n; j++ {
				gap := rec.tokenTimes[j] - rec.tokenTimes[j-1]
				if gap < 0 {
					return sc.errAt(rec.off, "output_token_times are not in order (element %d is earlier than element %d)", j+1, j)
				}
				if j == 1 || gap > r.MaxITL {
					r.MaxITL = gap
				}
			}
			if r.OutputTokens < 0 {
				r.OutputTokens = int64(n)
			}
		} else {
			noTimes++
		}
		r.DeriveTPOT()
		out = append(out, r)
	}
	shiftToZero(out)
	f.ds.Requests = out
	f.ds.Clock = sources.ClockRelative
	f.note = append(f.note, "times are perf_counter seconds, shifted so that the file's first request is at 0")
	if noTimes > 0 {
		f.warnf("%d completed requests have no output_token_times (non-streaming requests?): their TTFT and TPOT are unknown", noTimes)
	}
	if len(stages) > 1 {
		names := sortedKeys(stages)
		sort.Strings(names)
		f.warnf("the file holds %d stages (%v); they are judged as one arm: compare one stage per run to compare like with like", len(names), names)
	}
	return nil
}

// parseIPRecord reads one per-request record.
func parseIPRecord(sc *scanner, i int) (ipRecord, error) {
	sc.ws()
	rec := ipRecord{off: sc.pos, inTok: -1, outTok: -1}
	if sc.peek() != kindObject {
		return rec, sc.typeErr(fmt.Sprintf("record %d", i+1), "an object")
	}
	err := sc.object(func(key string, _ int) error {
		var err error
		switch key {
		case "stage_id":
			v, e := sc.value()
			rec.stage, err = fmt.Sprint(v), e
		case "start_time":
			rec.hasStart = true
			rec.start, err = sc.clock(key)
		case "end_time":
			rec.hasEnd = true
			rec.end, err = sc.clock(key)
		case "info":
			err = rec.parseInfo(sc)
		case "error":
			v, e := sc.value()
			err = e
			switch x := v.(type) {
			case nil:
			case map[string]any:
				rec.failed = true
				rec.errMsg = fmt.Sprintf("%v %v", x["error_type"], x["error_msg"])
			default:
				rec.failed = true
				rec.errMsg = fmt.Sprint(x)
			}
		default:
			err = sc.skip()
		}
		return err
	})
	if err == nil && (!rec.hasStart || !rec.hasEnd) {
		err = sc.errAt(rec.off, "record %d lacks start_time or end_time: is this inference-perf's per_request_lifecycle_metrics.json?", i+1)
	}
	return rec, err
}

// parseInfo reads the info object in either layout.
func (rec *ipRecord) parseInfo(sc *scanner) error {
	if sc.peek() == kindNull {
		return sc.skip()
	}
	if sc.peek() != kindObject {
		return sc.typeErr("info", "an object")
	}
	var walk func(path string) error
	walk = func(path string) error {
		return sc.object(func(key string, _ int) error {
			var err error
			switch {
			case key == "output_token_times":
				if sc.peek() == kindNull {
					return sc.skip()
				}
				rec.tokenTimes, err = sc.times(key)
			case key == "output_tokens" && (path == "" || path == "response_metrics"):
				if sc.peek() == kindNull {
					return sc.skip()
				}
				rec.outTok, err = sc.count(key)
			case key == "input_tokens" && (path == "" || path == "request_metrics.text"):
				if sc.peek() == kindNull {
					return sc.skip()
				}
				var v int64
				v, err = sc.count(key)
				if rec.inTok < 0 || path != "" {
					rec.inTok = v
				}
			case (key == "response_metrics" || key == "request_metrics" || key == "text") && sc.peek() == kindObject:
				p := key
				if path != "" {
					p = path + "." + key
				}
				err = walk(p)
			default:
				err = sc.skip()
			}
			return err
		})
	}
	return walk("")
}

// clock reads a finite perf_counter reading in seconds.
func (s *scanner) clock(key string) (float64, error) {
	s.ws()
	off := s.pos
	v, err := s.num(key)
	if err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		err = s.errAt(off, "%s: %v is not a valid clock reading (want finite seconds)", key, v)
	}
	return v, err
}
