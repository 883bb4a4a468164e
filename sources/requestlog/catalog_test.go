package requestlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// TestBadInputs is the catalog of rejected inputs. Each error must name the
// file, the line (path:line:) and, where one field is at fault, the field,
// and must say what to do. No dataset is returned.
func TestBadInputs(t *testing.T) {
	tests := badInputs(t)
	if len(tests) < 20 {
		t.Fatalf("catalog has %d entries, want at least 20", len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := Read(context.Background(), tt.file, strings.NewReader(tt.data), sources.Canary)
			if err == nil {
				t.Fatalf("accepted: %d requests", len(ds.Requests))
			}
			if len(ds.Requests) != 0 || len(ds.Inputs) != 0 {
				t.Errorf("returned a partial dataset with the error")
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.HasPrefix(msg, tt.loc) {
				t.Errorf("error %q does not start with %q", msg, tt.loc)
			}
			if tt.field != "" && !strings.Contains(msg, `field "`+tt.field+`"`) {
				t.Errorf("error %q does not name field %q", msg, tt.field)
			}
			if !strings.Contains(msg, tt.advice) {
				t.Errorf("error %q does not contain %q", msg, tt.advice)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Errorf("error is %T, want *ParseError", err)
			} else if pe.Field != tt.field {
				t.Errorf("ParseError.Field = %q, want %q", pe.Field, tt.field)
			}
		})
	}
}

type badInput struct {
	name   string
	file   string
	data   string
	loc    string // expected "path:line" or "path:line:col" prefix
	field  string // expected field, "" when the error is not about one
	advice string // a piece of the fix that must appear
}

// badInputs is the catalog.
func badInputs(t *testing.T) []badInput {
	const good = `{"ts":1795964400,"status":"ok","ttft_s":0.2}` + "\n"
	const csvHead = "ts,status,ttft_s,e2e_s,prompt_tokens,quality_ok\n"
	return []badInput{
		{"malformed JSON", "a.jsonl", good + `{"ts":1,"status":"ok",,"ttft_s":0.2}`, "a.jsonl:2:23:", "", "invalid character ','"},
		{"truncated line", "a.jsonl", good + good + `{"ts":1,"status":"ok","ttft_s":0.`, "a.jsonl:3:", "", "malformed"},
		{"object over several lines", "a.jsonl", "{\"ts\":1,\n\"status\":\"ok\"}\n", "a.jsonl:1:", "", "each request must be one line"},
		{"line is an array", "a.jsonl", good + `[1,2]` + "\n", "a.jsonl:2:1:", "", "not a JSON object"},
		{"line is a number", "a.jsonl", good + "42\n", "a.jsonl:2:1:", "", "not a JSON object"},
		{"trailing data", "a.jsonl", good + `{"ts":1,"status":"rejected"} {"ts":2}` + "\n", "a.jsonl:2:30:", "", "one object per line"},
		{"unterminated string", "a.jsonl", `{"ts":1,"status":"ok` + "\n", "a.jsonl:1:", "", "unterminated string"},
		{"latency as string", "a.jsonl", good + `{"ts":1,"status":"ok","ttft_s":"0.2"}`, "a.jsonl:2:", "ttft_s", "without quotes"},
		{"status as number", "a.jsonl", `{"ts":1,"status":1}`, "a.jsonl:1:", "status", "got a number"},
		{"class as number", "a.jsonl", `{"ts":1,"status":"rejected","class":7}`, "a.jsonl:1:", "class", "quote it"},
		{"quality as string", "a.jsonl", `{"ts":1,"status":"rejected","quality_ok":"yes"}`, "a.jsonl:1:", "quality_ok", "true or false"},
		{"missing ts", "a.jsonl", good + `{"status":"ok","ttft_s":0.2}`, "a.jsonl:2:", "ts", "every request needs ts and status"},
		{"missing ts, misspelt", "a.jsonl", `{"timestamp":1,"status":"ok","ttft_s":0.2}`, "a.jsonl:1:", "ts", `rename it to "ts"`},
		{"null ts", "a.jsonl", `{"ts":null,"status":"ok","ttft_s":0.2}`, "a.jsonl:1:", "ts", "required field is null"},
		{"missing status", "a.jsonl", good + good + good + `{"ts":1}`, "a.jsonl:4:", "status", "every request needs ts and status"},
		{"unknown status", "canary.jsonl", good + `{"ts":1,"status":"okay"}`, "canary.jsonl:2:", "status", `want one of "ok"`},
		{"another tool's file", "result.json", `{"backend":"vllm","request_rate":Infinity,"completed":10}`, "result.json:1:", "", `none of its fields ("backend", "request_rate", "completed")`},
		{"status in capitals", "a.jsonl", `{"ts":1,"status":"OK","ttft_s":0.1}`, "a.jsonl:1:", "status", "statuses are lower case"},
		{"NaN latency", "a.jsonl", `{"ts":1,"status":"ok","ttft_s":NaN}`, "a.jsonl:1:", "ttft_s", "not a finite number"},
		{"Infinity latency", "a.jsonl", `{"ts":1,"status":"ok","ttft_s":0.1,"e2e_s":Infinity}`, "a.jsonl:1:", "e2e_s", "not a finite number"},
		{"-Infinity latency", "a.jsonl", `{"ts":1,"status":"ok","ttft_s":0.1,"tpot_s":-Infinity}`, "a.jsonl:1:", "tpot_s", "not a finite number"},
		{"overflowing latency", "a.jsonl", `{"ts":1,"status":"ok","ttft_s":1e999}`, "a.jsonl:1:", "ttft_s", "out of range"},
		{"negative latency", "canary.jsonl", strings.Repeat(good, 16) + `{"ts":1,"status":"ok","ttft_s":-0.2}`, "canary.jsonl:17:", "ttft_s", "negative latency -0.2 (latencies are seconds ≥ 0)"},
		{"negative stall", "a.jsonl", `{"ts":1,"status":"ok","ttft_s":0.2,"max_itl_s":-1}`, "a.jsonl:1:", "max_itl_s", "latencies are seconds ≥ 0"},
		{"ok without ttft_s", "a.jsonl", good + `{"ts":1,"status":"ok","e2e_s":3}`, "a.jsonl:2:", "ttft_s", "use status error, timeout or canceled"},
		{"ok with ttft in ms", "a.jsonl", `{"ts":1,"status":"ok","ttft_ms":200}`, "a.jsonl:1:", "ttft_s", "convert milliseconds to seconds"},
		{"e2e before ttft", "a.jsonl", `{"ts":1,"status":"ok","ttft_s":2,"e2e_s":1}`, "a.jsonl:1:", "e2e_s", "are the columns swapped"},
		{"negative tokens", "a.jsonl", `{"ts":1,"status":"rejected","prompt_tokens":-5}`, "a.jsonl:1:", "prompt_tokens", "negative token count"},
		{"fractional tokens", "a.jsonl", `{"ts":1,"status":"ok","ttft_s":0.1,"output_tokens":12.5}`, "a.jsonl:1:", "output_tokens", "not a whole number"},
		{"attempt zero", "a.jsonl", `{"ts":1,"status":"rejected","attempt":0}`, "a.jsonl:1:", "attempt", "1 = first try"},
		{"attempt negative", "a.jsonl", `{"ts":1,"status":"rejected","attempt":-1}`, "a.jsonl:1:", "attempt", "1 = first try"},
		{"ts unparseable", "a.jsonl", `{"ts":"yesterday","status":"rejected"}`, "a.jsonl:1:", "ts", "RFC 3339"},
		{"ts bad date", "a.jsonl", `{"ts":"2026-02-30T00:00:00Z","status":"rejected"}`, "a.jsonl:1:", "ts", "RFC 3339"},
		{"ts without a zone", "a.jsonl", good + `{"ts":"2026-11-29T15:06:14.25","status":"rejected"}`, "a.jsonl:2:", "ts", "has no time zone"},
		{"csv ts without a zone", "a.csv", "ts,status\n2026-11-29 15:06:14,rejected\n", "a.csv:2:", "ts", "has no time zone"},
		{"ts in milliseconds", "a.jsonl", `{"ts":1795964400123,"status":"rejected"}`, "a.jsonl:1:", "ts", "not milliseconds"},
		{"ts negative", "a.jsonl", `{"ts":-5,"status":"rejected"}`, "a.jsonl:1:", "ts", "before 1970"},
		{"ts as boolean", "a.jsonl", `{"ts":true,"status":"rejected"}`, "a.jsonl:1:", "ts", "got true"},
		{"duplicate field", "a.jsonl", `{"ts":1,"status":"ok","ttft_s":0.1,"ttft_s":0.2}`, "a.jsonl:1:36:", "ttft_s", "given twice"},
		{"invalid escape", "a.jsonl", `{"ts":1,"status":"rejected","class":"a\qb"}`, "a.jsonl:1:", "", `invalid escape \q`},
		{"invalid UTF-8", "a.jsonl", "{\"ts\":1,\"status\":\"rejected\",\"class\":\"\xff\"}", "a.jsonl:1:", "", "UTF-8"},
		{"JSON array file", "a.json", `[{"ts":1,"status":"ok"}]`, "a.json:1:1:", "", "not JSON Lines"},
		{"empty file", "empty.jsonl", "", "empty.jsonl:", "", "no requests"},
		{"blank lines only", "blank.jsonl", "\n \n\r\n", "blank.jsonl:", "", "no requests"},
		{"gzip truncated", "a.jsonl.gz", string(gz(t, []byte(strings.Repeat(good, 2000))))[:300], "a.jsonl.gz:", "", "gzip -t"},
		{"gzip corrupt", "a.jsonl.gz", corruptGzip(t, []byte(strings.Repeat(good, 2000))), "a.jsonl.gz:", "", "gzip data is corrupt"},
		{"gzip bad checksum", "a.jsonl.gz", badChecksum(t, []byte(good+good)), "a.jsonl.gz:3:", "", "gzip -t"},
		{"csv header only", "a.csv", csvHead, "a.csv:1:", "", "no rows"},
		{"csv without ts column", "a.csv", "time,status\n1,ok\n", "a.csv:1:", "ts", `"time" probably means "ts"`},
		{"csv duplicate column", "a.csv", "ts,status,ts\n1,ok,2\n", "a.csv:1:", "ts", "column named twice"},
		{"csv wrong column count", "a.csv", csvHead + "1,ok,0.1,1,5,true\n1,ok,0.1,1,5\n", "a.csv:3:", "", "the row has 5, the header 6"},
		{"csv bare quote", "a.csv", csvHead + "1,ok,0.1,1,5,tr\"ue\n", "a.csv:2:", "", "inner quotes doubled"},
		{"csv NaN latency", "a.csv", csvHead + "1,ok,0.1,1,5,true\n1,ok,NaN,1,5,true\n", "a.csv:3:", "ttft_s", "not a finite number"},
		{"csv negative latency", "a.csv", csvHead + "1,ok,0.1,-1,5,true\n", "a.csv:2:", "e2e_s", "negative latency"},
		{"csv text in number column", "a.csv", csvHead + "1,ok,fast,1,5,true\n", "a.csv:2:", "ttft_s", "cannot read"},
		{"csv bad boolean", "a.csv", csvHead + "1,ok,0.1,1,5,yes\n", "a.csv:2:", "quality_ok", "true, false, 1 or 0"},
		{"csv fractional tokens", "a.csv", csvHead + "1,ok,0.1,1,5.5,true\n", "a.csv:2:", "prompt_tokens", "not a whole number"},
		{"csv missing status", "a.csv", csvHead + "1,,0.1,1,5,true\n", "a.csv:2:", "status", "required field is empty"},
		{"csv unknown status", "a.csv", csvHead + "\n\n1,done,0.1,1,5,true\n", "a.csv:4:", "status", "unknown status"},
		{"csv bad ts", "a.csv", csvHead + "29/11/2026 15:00,ok,0.1,1,5,true\n", "a.csv:2:", "ts", "RFC 3339"},
		{"csv ok without ttft", "a.csv", csvHead + "1,ok,,1,5,true\n", "a.csv:2:", "ttft_s", "completed requests must give"},
		{"csv gzip header only", "a.csv.gz", string(gz(t, []byte(csvHead))), "a.csv.gz:1:", "", "no rows"},
		{"canceled_by unknown", "a.jsonl", good + `{"ts":1,"status":"canceled","canceled_by":"nobody"}`, "a.jsonl:2:", "canceled_by", `"client" (the client gave up`},
		{"canceled_by in capitals", "a.jsonl", `{"ts":1,"status":"canceled","canceled_by":"Server"}`, "a.jsonl:1:", "canceled_by", `lower case: write "server"`},
		{"canceled_by another tool's word", "a.jsonl", `{"ts":1,"status":"canceled","canceled_by":"upstream"}`, "a.jsonl:1:", "canceled_by", `write "server"`},
		{"canceled_by as boolean", "a.jsonl", `{"ts":1,"status":"canceled","canceled_by":true}`, "a.jsonl:1:", "canceled_by", "got true"},
		{"canceled_by on an ok request", "a.jsonl", good + good + `{"ts":1,"status":"ok","ttft_s":0.1,"canceled_by":"server"}`, "a.jsonl:3:", "canceled_by", "only a canceled request says who canceled it"},
		{"csv canceled_by unknown", "a.csv", "ts,status,canceled_by\n1,canceled,client\n2,canceled,499\n", "a.csv:3:", "canceled_by", `write "client"`},
		{"csv canceled_by on an error", "a.csv", "ts,status,canceled_by\n1,canceled,\n2,error,server\n", "a.csv:3:", "canceled_by", `set status "canceled"`},
		{"not a request log", "notes.txt", "hello world\nthis is text\n", "notes.txt:1:", "ts", "needs ts and status"},
		// a label per request: refused at the line of the 33rd distinct
		// label (line 36 of 34 records: two blank lines before it, a
		// repeat between)
		{"a class label per request", "a.jsonl", "\n" + perRequestLabels(`{"ts":%d,"status":"rejected","class":"req-%d"}`, "\n"), "a.jsonl:36:", "class", "at most 32 classes"},
		{"csv class label per request", "a.csv", "ts,status,class\n" + perRequestLabels("%d,rejected,req-%d", ""), "a.csv:35:", "class", "at most 32 classes"},
		// a malformed line after the 33rd label is reported first, as the
		// labels are counted once every line has parsed
		{"a class label per request, then a malformed line", "a.jsonl", perRequestLabels(`{"ts":%d,"status":"rejected","class":"req-%d"}`, "") + `{"ts":1,"status":` + "\n", "a.jsonl:35:", "", "malformed"},
	}
}

// perRequestLabels is sources.MaxClassLabels + 2 records with a label
// each, every label new but the third record's (the second's again),
// written with format from (ts, label number); extra goes after the
// second record.
func perRequestLabels(format, extra string) string {
	var b strings.Builder
	for i := range sources.MaxClassLabels + 2 {
		n := i
		if i >= 2 {
			n = i - 1
		}
		fmt.Fprintf(&b, format+"\n", 1795964400+i, n)
		if i == 1 {
			b.WriteString(extra)
		}
	}
	return b.String()
}

// corruptGzip flips bytes in the middle of the deflate stream.
func corruptGzip(t *testing.T, data []byte) string {
	z := gz(t, data)
	for i := len(z) / 2; i < len(z)/2+8; i++ {
		z[i] ^= 0xff
	}
	return string(z)
}

// badChecksum damages the CRC-32 in the gzip trailer.
func badChecksum(t *testing.T, data []byte) string {
	z := bytes.Clone(gz(t, data))
	z[len(z)-8] ^= 0xff
	return string(z)
}
