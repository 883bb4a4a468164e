package benchfile

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// nanos reads an integer number of nanoseconds exactly (epoch nanoseconds do
// not fit a float64's 53-bit mantissa). A number with a fraction or
// exponent is accepted when it is whole and in range.
func (s *scanner) nanos(key string) (int64, error) {
	s.ws()
	off := s.pos
	v, err := s.num(key)
	if err != nil {
		return 0, err
	}
	lit := string(s.buf[off:s.pos])
	if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return n, nil
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || math.Abs(v) >= 1<<63 {
		return 0, s.errAt(off, "%s: %s is not a whole number of nanoseconds", key, lit)
	}
	return int64(v), nil
}

// genaiRequest is one request of a genai-perf profile export.
type genaiRequest struct {
	off       int
	ts        int64   // request send time, ns
	resp      []int64 // response times, ns
	content   []bool  // whether response i carried output
	usage     int64   // completion tokens reported by the server; -1 if none
	prompt    int64   // prompt tokens reported by the server; -1 if none
	errMsg    string  // error text when the export records one
	hasTS     bool
	hasRespTS bool
}

// readGenAIPerf reads the profile_export.json that Perf Analyzer writes for
// genai-perf: experiments[].requests[] with an integer-nanosecond timestamp,
// response_timestamps and response_outputs. TTFT = first response − request
// (as genai-perf computes it, so a first chunk that carries only the role
// counts); e2e = last response with content − request (trailing chunks
// without content, e.g. "data: [DONE]", are dropped, as genai-perf does).
// Output tokens come from the server's usage.completion_tokens when a chunk
// carries it; otherwise each response with content counts as one token,
// which undercounts when the server packs several tokens into one chunk
// (the Input note says which was used).
func readGenAIPerf(ctx context.Context, f *file) error {
	sc := &f.sc
	if sc.peek() != kindObject {
		return sc.typeErr("genai-perf profile export", "an object with an experiments array")
	}
	start := sc.pos
	var reqs []genaiRequest
	var windows [][2]int64
	var labels []string
	sawExperiments, summary := false, false
	err := sc.object(func(key string, _ int) error {
		switch key {
		case "experiments":
			sawExperiments = true
			if sc.peek() != kindArray {
				return sc.typeErr(key, "an array")
			}
			return sc.array(func(int) error {
				if sc.peek() != kindObject {
					return sc.typeErr("experiment", "an object")
				}
				var wb []int64
				err := sc.object(func(key string, _ int) error {
					switch key {
					case "experiment":
						v, err := sc.value()
						if m, ok := v.(map[string]any); ok {
							labels = append(labels, fmt.Sprintf("%v %v", m["mode"], m["value"]))
						}
						return err
					case "requests":
						if sc.peek() != kindArray {
							return sc.typeErr(key, "an array")
						}
						return sc.array(func(int) error {
							r, err := parseGenAIRequest(sc)
							reqs = append(reqs, r)
							if err == nil && len(reqs)%4096 == 0 {
								err = ctx.Err()
							}
							return err
						})
					case "window_boundaries":
						if sc.peek() != kindArray {
							return sc.typeErr(key, "an array of nanosecond timestamps")
						}
						return sc.array(func(int) error {
							v, err := sc.nanos(key + " element")
							wb = append(wb, v)
							return err
						})
					}
					return sc.skip()
				})
				if len(wb) >= 2 {
					windows = append(windows, [2]int64{wb[0], wb[len(wb)-1]})
				}
				return err
			})
		case "time_to_first_token", "request_latency", "request_throughput":
			summary = true
		}
		return sc.skip()
	})
	if err != nil {
		return err
	}
	if err := sc.end(); err != nil {
		return err
	}
	if !sawExperiments {
		if summary {
			return sc.errAt(start, "this is a genai-perf summary (profile_export_genai_perf.json): it holds only statistics; give profile_export.json from the same artifacts directory, which has per-request timestamps")
		}
		return sc.errAt(start, "no experiments array: is this a genai-perf profile_export.json?")
	}
	usageAll, usageSome := true, false
	t0 := int64(math.MaxInt64)
	for _, r := range reqs {
		t0 = min(t0, r.ts)
	}
	out := make([]sources.Request, 0, len(reqs))
	for _, g := range reqs {
		r := sources.NewRequest()
		r.Time = float64(g.ts-t0) / 1e9
		r.PromptTokens = g.prompt
		last := len(g.resp) - 1
		for last >= 0 && !g.content[last] {
			last--
		}
		switch {
		case g.errMsg != "":
			r.Status = errorStatus(g.errMsg)
		case last < 0:
			// No response with output: the request produced nothing.
			r.Status = sources.StatusError
		default:
			r.Status = sources.StatusOK
			r.TTFT = float64(g.resp[0]-g.ts) / 1e9
			r.E2E = float64(g.resp[last]-g.ts) / 1e9
			if r.TTFT < 0 {
				return sc.errAt(g.off, "the first response precedes the request timestamp by %.9g s: timestamps must be on one clock", -r.TTFT)
			}
			n := int64(0)
			for i := 0; i <= last; i++ {
				if g.content[i] {
					n++
				}
			}
			if g.usage >= 0 {
				n = g.usage
				usageSome = true
			} else {
				usageAll = false
			}
			r.OutputTokens = n
			for i := 1; i <= last; i++ {
				gap := float64(g.resp[i]-g.resp[i-1]) / 1e9
				if gap < 0 {
					return sc.errAt(g.off, "response_timestamps are not in order (element %d is earlier than element %d)", i+1, i)
				}
				if i == 1 || gap > r.MaxITL || math.IsNaN(r.MaxITL) {
					r.MaxITL = gap
				}
			}
			r.DeriveTPOT()
		}
		out = append(out, r)
	}
	f.ds.Requests = out
	f.ds.Clock = sources.ClockRelative
	f.note = append(f.note, "times are nanosecond timestamps, shifted so that the file's first request is at 0")
	switch {
	case usageSome && usageAll:
		f.note = append(f.note, "output tokens from the server's usage.completion_tokens")
	case usageSome:
		f.note = append(f.note, "output tokens from usage.completion_tokens where reported, else one per response with content")
	default:
		f.note = append(f.note, "output tokens counted as one per response with content (no usage in the responses)")
	}
	if !usageAll {
		f.warnf("some completed requests report no usage.completion_tokens, so their output tokens are counted as responses with content; a server that streams several tokens per chunk makes their TPOT look larger than it is (enable usage in streamed responses, e.g. stream_options.include_usage)")
	}
	if len(windows) > 0 {
		var d int64
		for _, w := range windows {
			d += w[1] - w[0]
		}
		f.ds.Duration = float64(d) / 1e9
	}
	if len(labels) > 1 {
		sort.Strings(labels)
		f.warnf("the file holds %d experiments (%s); they are judged as one arm: give one load level per file to compare like with like", len(labels), strings.Join(labels, ", "))
	}
	return nil
}

// parseGenAIRequest reads one experiments[].requests[] element.
func parseGenAIRequest(sc *scanner) (genaiRequest, error) {
	sc.ws()
	g := genaiRequest{off: sc.pos, usage: -1, prompt: -1}
	if sc.peek() != kindObject {
		return g, sc.typeErr("request", "an object")
	}
	err := sc.object(func(key string, _ int) error {
		switch key {
		case "timestamp":
			g.hasTS = true
			v, err := sc.nanos(key)
			g.ts = v
			return err
		case "response_timestamps":
			g.hasRespTS = true
			if sc.peek() != kindArray {
				return sc.typeErr(key, "an array of nanosecond timestamps")
			}
			return sc.array(func(int) error {
				v, err := sc.nanos(key + " element")
				g.resp = append(g.resp, v)
				return err
			})
		case "response_outputs":
			if sc.peek() != kindArray {
				return sc.typeErr(key, "an array")
			}
			return sc.array(func(int) error {
				v, err := sc.value()
				if err != nil {
					return err
				}
				has, usage, prompt, msg := inspectResponse(v)
				g.content = append(g.content, has)
				if usage > g.usage {
					g.usage = usage
				}
				if prompt > g.prompt {
					g.prompt = prompt
				}
				if msg != "" && g.errMsg == "" {
					g.errMsg = msg
				}
				return nil
			})
		case "error", "error_message":
			v, err := sc.value()
			if s, ok := v.(string); ok && s != "" {
				g.errMsg = s
			} else if m, ok := v.(map[string]any); ok && len(m) > 0 {
				g.errMsg = fmt.Sprint(m)
			}
			return err
		}
		return sc.skip()
	})
	if err != nil {
		return g, err
	}
	if !g.hasTS || !g.hasRespTS {
		return g, sc.errAt(g.off, "request lacks timestamp or response_timestamps: is this a genai-perf profile_export.json?")
	}
	if len(g.content) == 0 {
		// Older exports list timestamps only: every response counts.
		g.content = make([]bool, len(g.resp))
		for i := range g.content {
			g.content[i] = true
		}
	}
	if len(g.content) != len(g.resp) {
		return g, sc.errAt(g.off, "response_timestamps has %d entries but response_outputs has %d: they must pair up", len(g.resp), len(g.content))
	}
	return g, nil
}

// sseChunk is the part of an OpenAI-style streamed chunk goodput reads.
type sseChunk struct {
	Choices []struct {
		Text  *string `json:"text"`
		Delta struct {
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens *int64 `json:"completion_tokens"`
		PromptTokens     *int64 `json:"prompt_tokens"`
	} `json:"usage"`
	Error any `json:"error"`
}

// inspectResponse classifies one response_outputs element: does it carry
// output text, and does it report token usage or an error? Elements are
// {"response": "<raw SSE or JSON body>"} (OpenAI endpoints),
// {"text_output": "..."} (Triton) or a bare string (older exports).
func inspectResponse(v any) (content bool, usage, prompt int64, errMsg string) {
	usage, prompt = -1, -1
	var body string
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x) != "", -1, -1, ""
	case map[string]any:
		if t, ok := x["text_output"].(string); ok {
			return t != "", -1, -1, ""
		}
		s, ok := x["response"].(string)
		if !ok {
			return false, -1, -1, ""
		}
		body = s
	default:
		return false, -1, -1, ""
	}
	// A response may hold several SSE events ("data: {...}\n\n").
	events := []string{body}
	if strings.Contains(body, "data:") {
		events = events[:0]
		for _, line := range strings.Split(body, "\n") {
			line = strings.TrimSpace(line)
			if d, ok := strings.CutPrefix(line, "data:"); ok {
				events = append(events, strings.TrimSpace(d))
			}
		}
	}
	for _, ev := range events {
		if ev == "" || ev == "[DONE]" {
			continue
		}
		var c sseChunk
		if json.Unmarshal([]byte(ev), &c) != nil {
			// Not JSON: treat non-empty text as output.
			content = content || strings.TrimSpace(ev) != ""
			continue
		}
		if c.Error != nil {
			errMsg = fmt.Sprint(c.Error)
		}
		for _, ch := range c.Choices {
			for _, p := range []*string{ch.Text, ch.Delta.Content, ch.Delta.ReasoningContent, ch.Message.Content} {
				if p != nil && *p != "" {
					content = true
				}
			}
		}
		if c.Usage != nil {
			if c.Usage.CompletionTokens != nil && *c.Usage.CompletionTokens > usage {
				usage = *c.Usage.CompletionTokens
			}
			if c.Usage.PromptTokens != nil && *c.Usage.PromptTokens > prompt {
				prompt = *c.Usage.PromptTokens
			}
		}
	}
	return content, usage, prompt, errMsg
}
