package benchfile

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// readLLMPerf reads LLMPerf's *_individual_responses.json: a JSON array with
// one object per request. LLMPerf's inter_token_latency_s includes the TTFT
// gap (it is roughly e2e/output tokens), so it is not used; TPOT is derived
// as (end_to_end_latency_s − ttft_s)/(number_output_tokens − 1). A non-null
// error_code marks a failed request. The file has no timestamps and no run
// duration.
func readLLMPerf(ctx context.Context, f *file) error {
	sc := &f.sc
	switch sc.peek() {
	case kindObject:
		keys := objectKeys(&scanner{buf: sc.buf[sc.pos:]})
		for k := range keys {
			if strings.HasPrefix(k, "results_") {
				return sc.errAt(sc.pos, "this is an LLMPerf summary file (*_summary.json): it holds only aggregate statistics, no per-request data; give the *_individual_responses.json file from the same results directory instead")
			}
		}
		return sc.typeErr("LLMPerf individual responses", "an array of request objects")
	case kindArray:
	default:
		return sc.typeErr("LLMPerf individual responses", "an array of request objects")
	}
	var reqs []sources.Request
	err := sc.array(func(i int) error {
		sc.ws()
		start := sc.pos
		if sc.peek() != kindObject {
			return sc.typeErr(fmt.Sprintf("request %d", i+1), "an object")
		}
		r := sources.NewRequest()
		var failed bool
		var msg string
		var ttftOff, e2eOff int
		seen := map[string]bool{}
		err := sc.object(func(key string, off int) error {
			var err error
			seen[key] = true
			switch key {
			case "error_code":
				switch sc.peek() {
				case kindNull:
					err = sc.skip()
				case kindNumber, kindString:
					failed = true
					err = sc.skip()
				default:
					err = sc.typeErr(key, "null, a number or a string")
				}
			case "error_msg":
				msg, err = sc.strOrNull(key)
			case "ttft_s":
				sc.ws()
				ttftOff = sc.pos
				r.TTFT, err = sc.anyNum(key)
			case "end_to_end_latency_s":
				sc.ws()
				e2eOff = sc.pos
				r.E2E, err = sc.anyNum(key)
			case "number_input_tokens":
				r.PromptTokens, err = sc.count(key)
			case "number_output_tokens":
				r.OutputTokens, err = sc.count(key)
			default:
				err = sc.skip()
			}
			return err
		})
		if err != nil {
			return err
		}
		if !seen["error_code"] || !seen["ttft_s"] || !seen["end_to_end_latency_s"] || !seen["number_output_tokens"] {
			var miss []string
			for _, k := range []string{"error_code", "ttft_s", "end_to_end_latency_s", "number_output_tokens"} {
				if !seen[k] {
					miss = append(miss, k)
				}
			}
			return sc.errAt(start, "request %d lacks %s: is this an LLMPerf *_individual_responses.json file?", i+1, strings.Join(miss, ", "))
		}
		if failed {
			r.Status = errorStatus(msg)
			r.TTFT, r.E2E = math.NaN(), math.NaN()
		} else {
			r.Status = sources.StatusOK
			if err := validLatency(sc, "ttft_s", r.TTFT, ttftOff); err != nil {
				return err
			}
			if err := validLatency(sc, "end_to_end_latency_s", r.E2E, e2eOff); err != nil {
				return err
			}
			if r.E2E < r.TTFT {
				return sc.errAt(e2eOff, "end_to_end_latency_s %v is shorter than ttft_s %v: a request cannot end before its first token", r.E2E, r.TTFT)
			}
			r.DeriveTPOT()
		}
		reqs = append(reqs, r)
		if len(reqs)%4096 == 0 {
			return ctx.Err()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := sc.end(); err != nil {
		return err
	}
	f.ds.Requests = reqs
	f.ds.Clock = sources.ClockNone
	f.note = append(f.note, "TPOT derived from end_to_end_latency_s, ttft_s and number_output_tokens (LLMPerf's inter_token_latency_s includes the first token and is not used)")
	f.warnf("%s", noTimesWarning("LLMPerf individual responses carry no timestamps and no run duration", 0))
	return nil
}

// anyNum reads a number (NaN and ±Infinity included) or null (→ NaN),
// leaving range checks to the caller, which knows whether the request failed.
func (s *scanner) anyNum(key string) (float64, error) {
	v, _, err := s.numOrNull(key)
	return v, err
}

// validLatency checks a latency read with anyNum.
func validLatency(sc *scanner, key string, v float64, off int) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return sc.errAt(off, "%s: %v is not a valid latency for a successful request (want a finite number of seconds ≥ 0)", key, v)
	}
	return nil
}
