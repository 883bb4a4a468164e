package benchfile

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// aiperfMetric is one entry of an AIPerf record's metrics object.
type aiperfMetric struct {
	off    int
	value  float64   // scalar value, NaN when absent
	values []float64 // list value (inter_chunk_latency)
	unit   string
}

// timeScale returns seconds per unit for a time unit name.
func timeScale(unit string) (float64, bool) {
	switch strings.ToLower(unit) {
	case "ns":
		return 1e-9, true
	case "us", "µs":
		return 1e-6, true
	case "ms":
		return 1e-3, true
	case "s", "sec", "seconds":
		return 1, true
	}
	return 0, false
}

// readAIPerf reads AIPerf's profile_export.jsonl: one JSON record per line
// with metadata (request_start_ns in epoch nanoseconds, benchmark_phase,
// was_cancelled), metrics ({name: {value, unit}}, times in ms unless the
// unit says otherwise) and error (null or an object). Warm-up records are
// skipped. TPOT is derived from request_latency, time_to_first_token and
// output_sequence_length; MaxITL is the largest inter_chunk_latency.
func readAIPerf(ctx context.Context, f *file) error {
	sc := &f.sc
	var out []sources.Request
	warmup, assumedUnit := 0, false
	for !sc.atEOF() {
		sc.ws()
		start := sc.pos
		line, _ := lineCol(sc.buf, start)
		if sc.peek() != kindObject {
			return sc.typeErr(fmt.Sprintf("record on line %d", line), "an object")
		}
		r := sources.NewRequest()
		var startNS int64
		hasStart, canceled, phase := false, false, ""
		var errMsg string
		hasErr := false
		metrics := map[string]aiperfMetric{}
		sawMeta, sawMetrics, summary := false, false, false
		err := sc.object(func(key string, _ int) error {
			switch key {
			case "metadata":
				sawMeta = true
				if sc.peek() != kindObject {
					return sc.typeErr(key, "an object")
				}
				return sc.object(func(key string, _ int) error {
					var err error
					switch key {
					case "request_start_ns":
						if sc.peek() == kindNull {
							return sc.skip()
						}
						startNS, err = sc.nanos(key)
						hasStart = true
					case "was_cancelled":
						v, e := sc.value()
						canceled, _ = v.(bool)
						err = e
					case "benchmark_phase":
						phase, err = sc.strOrNull(key)
					default:
						err = sc.skip()
					}
					return err
				})
			case "metrics":
				sawMetrics = true
				if sc.peek() != kindObject {
					return sc.typeErr(key, "an object")
				}
				return sc.object(func(name string, _ int) error {
					m, err := parseAIPerfMetric(sc, name)
					metrics[name] = m
					return err
				})
			case "error":
				v, err := sc.value()
				switch e := v.(type) {
				case nil:
				case map[string]any:
					hasErr = true
					errMsg = fmt.Sprintf("%v %v %v", e["code"], e["type"], e["message"])
				default:
					hasErr = true
					errMsg = fmt.Sprint(e)
				}
				return err
			case "benchmark_duration", "records", "input_config", "error_summary":
				summary = true
			}
			return sc.skip()
		})
		if err != nil {
			return err
		}
		if !sawMeta || !sawMetrics {
			if summary {
				return sc.errAt(start, "this is an AIPerf summary (profile_export_aiperf.json): it holds only statistics; give profile_export.jsonl from the same artifacts directory")
			}
			return sc.errAt(start, "record lacks metadata or metrics: is this an AIPerf profile_export.jsonl?")
		}
		if strings.EqualFold(phase, "warmup") {
			warmup++
			continue
		}
		if !hasStart {
			return sc.errAt(start, "record lacks metadata.request_start_ns: arrival times are needed (rerun with a current AIPerf)")
		}
		r.Time = float64(startNS) / 1e9
		get := func(name string) (float64, error) {
			m, ok := metrics[name]
			if !ok || math.IsNaN(m.value) {
				return math.NaN(), nil
			}
			unit := m.unit
			if unit == "" {
				unit, assumedUnit = "ms", true
			}
			k, ok := timeScale(unit)
			if !ok {
				return 0, sc.errAt(m.off, "%s: unknown time unit %q (want ns, us, ms or s)", name, m.unit)
			}
			v := m.value * k
			if math.IsInf(v, 0) || v < 0 {
				return 0, sc.errAt(m.off, "%s: %v %s is not a valid latency", name, m.value, unit)
			}
			return v, nil
		}
		count := func(name string) (int64, error) {
			m, ok := metrics[name]
			if !ok || math.IsNaN(m.value) {
				return -1, nil
			}
			if m.value < 0 || m.value != math.Trunc(m.value) || math.IsInf(m.value, 0) {
				return 0, sc.errAt(m.off, "%s: %v is not a token count", name, m.value)
			}
			return int64(m.value), nil
		}
		if r.PromptTokens, err = count("input_sequence_length"); err != nil {
			return err
		}
		if r.PromptTokens < 0 {
			// Failed records carry the prompt length as error_isl.
			if r.PromptTokens, err = count("error_isl"); err != nil {
				return err
			}
		}
		if r.OutputTokens, err = count("output_sequence_length"); err != nil {
			return err
		}
		switch {
		case canceled:
			// AIPerf cancels requests itself (--request-cancellation-rate):
			// the client's cancel, not the server's
			r.Status, r.CanceledBy = sources.StatusCanceled, sources.CanceledByClient
		case hasErr:
			r.Status = errorStatus(errMsg)
		default:
			r.Status = sources.StatusOK
			if r.TTFT, err = get("time_to_first_token"); err != nil {
				return err
			}
			if r.E2E, err = get("request_latency"); err != nil {
				return err
			}
			if math.IsNaN(r.TTFT) && math.IsNaN(r.E2E) {
				return sc.errAt(start, "record on line %d has no error but neither time_to_first_token nor request_latency", line)
			}
			if r.E2E < r.TTFT { // false when either is unknown (NaN)
				return sc.errAt(metrics["request_latency"].off, "request_latency %v s is shorter than time_to_first_token %v s: a request cannot end before its first token", r.E2E, r.TTFT)
			}
			if m, ok := metrics["inter_chunk_latency"]; ok && len(m.values) > 0 {
				k, ok := timeScale(cmpOr(m.unit, "ms"))
				if !ok {
					return sc.errAt(m.off, "inter_chunk_latency: unknown time unit %q", m.unit)
				}
				for _, v := range m.values {
					if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
						return sc.errAt(m.off, "inter_chunk_latency: %v is not a valid latency", v)
					}
					if math.IsNaN(r.MaxITL) || v*k > r.MaxITL {
						r.MaxITL = v * k
					}
				}
			}
			r.DeriveTPOT()
		}
		out = append(out, r)
		if len(out)%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	f.ds.Requests = out
	f.ds.Clock = sources.ClockEpoch
	f.note = append(f.note, "times are request_start_ns (epoch)")
	if warmup > 0 {
		f.note = append(f.note, fmt.Sprintf("%d warm-up records skipped", warmup))
	}
	if assumedUnit {
		f.warnf("some metrics have no unit; AIPerf's default, milliseconds, was assumed")
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseAIPerfMetric reads {"value": number | [numbers], "unit": "ms"} or a
// bare number.
func parseAIPerfMetric(sc *scanner, name string) (aiperfMetric, error) {
	sc.ws()
	m := aiperfMetric{off: sc.pos, value: math.NaN()}
	switch sc.peek() {
	case kindNumber, kindNull:
		v, _, err := sc.numOrNull(name)
		m.value = v
		return m, err
	case kindObject:
	default:
		return m, sc.skip()
	}
	err := sc.object(func(key string, _ int) error {
		switch key {
		case "value":
			sc.ws()
			m.off = sc.pos
			switch sc.peek() {
			case kindArray:
				var err error
				m.values, err = sc.floats(name+" value", nil)
				return err
			case kindNumber, kindNull:
				v, _, err := sc.numOrNull(name + " value")
				m.value = v
				return err
			}
			return sc.skip()
		case "unit":
			var err error
			m.unit, err = sc.strOrNull(name + " unit")
			return err
		}
		return sc.skip()
	})
	return m, err
}
