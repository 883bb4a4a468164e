package clickhouse

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRowTimes: an answer row's first and last arrival are read as
// numbers, quoted or not; a row without them, or with a value that is no
// time, is refused naming the column, never read as 0.
func TestRowTimes(t *testing.T) {
	base := func() map[string]any {
		m := map[string]any{"label": "", "rep": "", "h_ttft": [2][]int{{}, {}}, "h_tpot": [2][]int{{}, {}}, "h_e2e": [2][]int{{}, {}},
			"t_first": 1767225600.25, "t_last": "1767225610.5"}
		for _, k := range []string{"s", "m", "pb", "pc", "cb", "n", "completed", "failed", "canceled", "rejected", "good", "retried", "short",
			"prompt_tokens", "output_tokens", "attempt_known", "output_unknown", "output_max", "prompt_unknown", "good_tokens", "hits",
			"queries", "cache_known", "admitted", "judged", "judged_good", "started", "unv_ttft", "unv_tpot", "unv_e2e", "unv_max_itl",
			"unv_quality", "unv_class", "quality_checked", "quality_failed", "bad_status", "bad_ttft", "bad_latency", "bad_e2e",
			"bad_count", "bad_canceled_by", "sum_ttft", "sum_tpot", "sum_e2e", "ug", "named", "output_sq", "prompt_sq"} {
			m[k] = 0
		}
		return m
	}
	read := func(m map[string]any) (row, error) {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var r row
		return r, json.Unmarshal(b, &r)
	}
	r, err := read(base())
	if err != nil || r.TFirst != 1767225600.25 || r.TLast != 1767225610.5 {
		t.Fatalf("times %v and %v, error %v", r.TFirst, r.TLast, err)
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"no last arrival", func(m map[string]any) { delete(m, "t_last") }, "answer row lacks column t_last"},
		{"a word", func(m map[string]any) { m["t_first"] = "soon" }, `column t_first: not a time: "\"soon\""`},
		{"null", func(m map[string]any) { m["t_last"] = nil }, "column t_last: not a time"},
		{"not finite", func(m map[string]any) { m["t_last"] = "inf" }, "column t_last: not a time"},
	} {
		m := base()
		tc.edit(m)
		if _, err := read(m); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}
