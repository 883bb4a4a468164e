package benchfile

import "bytes"

// Detect looks at the start of a file (up to DetectBytes; more is ignored)
// and returns the name of the benchmark format it holds, or "" when it is
// none of this package's formats (e.g. a native request log). Detection
// reads the keys of the first JSON object (for a top-level array, of its
// first element); a head cut in the middle of a value is fine. Summary-only
// files of a supported tool are detected as that tool so that Read can
// refuse them with a message saying how to produce per-request data.
func Detect(head []byte) string {
	if name := detect(head); readerFor(name) != nil {
		return name
	}
	return ""
}

func detect(head []byte) string {
	if len(head) > DetectBytes {
		head = head[:DetectBytes]
	}
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	sc := &scanner{buf: head}
	switch sc.peek() {
	case kindArray:
		sc.pos++
		if sc.peek() != kindObject {
			return ""
		}
		k := objectKeys(sc)
		switch {
		case k["ttft_s"] && (k["end_to_end_latency_s"] || k["number_output_tokens"]),
			k["error_code"] && k["error_msg"] && (k["inter_token_latency_s"] || k["ttft_s"] || k["end_to_end_latency_s"]):
			return FormatLLMPerf
		case k["start_time"] && k["end_time"] && (k["info"] || k["stage_id"] || k["request_data"] || k["scheduled_time"]):
			return FormatInferencePerf
		}
	case kindObject:
		k := objectKeys(sc)
		switch {
		case k["metadata"] && k["metrics"]:
			return FormatAIPerf
		case k["experiments"] || (k["service_kind"] && k["endpoint"]):
			return FormatGenAIPerf
		case k["total_output_tokens_retokenized"] || k["sharegpt_output_len"] || k["random_input_len"] || k["dataset_name"] || k["server_info"]:
			if k["backend"] || k["duration"] || k["completed"] {
				return FormatSGLang
			}
		case (k["model_id"] || k["tokenizer_id"] || k["num_prompts"] || k["date"]) &&
			(k["ttfts"] || k["duration"] || k["completed"] || k["backend"] || k["mean_ttft_ms"]):
			return FormatVLLM
		case k["results_num_completed_requests"] || k["results_ttft_s_mean"] || k["results_error_rate"]:
			return FormatLLMPerf // summary file: Read refuses it with a pointer to the individual file
		case k["load_summary"] && (k["successes"] || k["failures"]):
			return FormatInferencePerf // summary file: refused by Read
		case k["benchmark_duration"] || k["error_summary"] || (k["records"] && k["input_config"]):
			return FormatAIPerf // summary file: refused by Read
		case k["time_to_first_token"] && k["request_latency"]:
			return FormatGenAIPerf // summary file: refused by Read
		}
	}
	return ""
}

// objectKeys collects the keys of the object at the scanner's position,
// stopping quietly at the first syntax error or the end of the head.
func objectKeys(sc *scanner) map[string]bool {
	keys := map[string]bool{}
	_ = sc.object(func(k string, _ int) error {
		keys[k] = true
		return sc.skip()
	})
	return keys
}
