package benchfile

import (
	"context"
	"fmt"
	"math"
)

// readSGLang reads SGLang bench_serving's JSONL output: one JSON object per
// run (the tool appends a line per run). With --output-details each line
// carries the same per-request arrays as vLLM (input_lens, output_lens,
// ttfts and itls in seconds, errors); without it a line holds only summary
// figures and is refused. Runs are laid end to end in file order. SGLang
// writes a bare Infinity for an unlimited request rate, which the tolerant
// front end accepts.
func readSGLang(ctx context.Context, f *file) error {
	sc := &f.sc
	rs := &runSet{}
	for idx := 1; !sc.atEOF(); idx++ {
		if sc.peek() != kindObject {
			return sc.typeErr(fmt.Sprintf("SGLang run %d", idx), "an object (one run per line)")
		}
		run, err := parseArrayRun(ctx, sc)
		if err != nil {
			return err
		}
		line, _ := lineCol(sc.buf, run.off)
		if _, ok := run.keys["ttfts"]; !ok {
			return sc.errAt(run.off, "line %d is a summary-only SGLang bench_serving row (request rate %s): it has no per-request arrays, so per-request SLOs cannot be judged; rerun `python -m sglang.bench_serving` with --output-details to write ttfts, itls, output_lens and errors for every request", line, orUnknown(run.requestRate))
		}
		if err := run.checkLengths(sc); err != nil {
			return err
		}
		if err := run.checkLatencies(sc); err != nil {
			return err
		}
		if _, ok := run.keys["output_lens"]; !ok {
			return sc.errAt(run.off, "line %d has ttfts but no output_lens, so TPOT cannot be derived: rerun with --output-details", line)
		}
		if math.IsNaN(run.duration) {
			f.warnf("line %d has no duration; goodput per second falls back to the span of arrival times", line)
		}
		f.warnings = append(f.warnings, run.crossCheck(fmt.Sprintf("%s:%d", sc.path, line))...)
		if _, ok := run.keys["itls"]; !ok {
			f.warnf("line %d has no itls: end-to-end latency and TPOT are unknown", line)
		}
		rs.add(run)
	}
	rs.finish(f, "SGLang bench_serving")
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
