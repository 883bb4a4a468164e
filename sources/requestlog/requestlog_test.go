package requestlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// req builds an expected request from NewRequest's defaults.
func req(edit func(r *sources.Request)) sources.Request {
	r := sources.NewRequest()
	edit(&r)
	return r
}

// sameRequest compares requests treating NaN as equal to NaN.
func sameRequest(a, b sources.Request) bool {
	eq := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	return eq(a.Time, b.Time) && eq(a.TTFT, b.TTFT) && eq(a.TPOT, b.TPOT) && eq(a.E2E, b.E2E) &&
		eq(a.MaxITL, b.MaxITL) && a.PromptTokens == b.PromptTokens && a.OutputTokens == b.OutputTokens &&
		a.CachedTokens == b.CachedTokens && a.Class == b.Class && a.Replica == b.Replica &&
		a.Attempt == b.Attempt && a.Status == b.Status && a.Quality == b.Quality && a.CanceledBy == b.CanceledBy
}

func readString(t *testing.T, name, text string) (sources.Dataset, error) {
	t.Helper()
	return Read(context.Background(), name, strings.NewReader(text), sources.Canary)
}

// ts0 is 2026-11-29T15:00:00Z in unix seconds.
const ts0 = 1795964400

// TestFields decodes every field of the contract, in JSON and in CSV.
func TestFields(t *testing.T) {
	const base = `"ts":1795964400,"status":"ok","ttft_s":0.25`
	const csvHead = "ts,status,ttft_s"
	const csvBase = "1795964400,ok,0.25"
	ok := func(edit func(r *sources.Request)) sources.Request {
		return req(func(r *sources.Request) {
			r.Time, r.Status, r.TTFT = ts0, sources.StatusOK, 0.25
			edit(r)
		})
	}
	tests := []struct {
		name      string
		json      string // fields after base
		csvCol    string // extra CSV column ("" to skip the CSV form)
		csvCell   string
		want      sources.Request
		wantCheck func(t *testing.T, r sources.Request)
	}{
		{"minimal", ``, "", "", ok(func(r *sources.Request) {}), nil},
		{"tpot_s", `,"tpot_s":0.031`, "tpot_s", "0.031", ok(func(r *sources.Request) { r.TPOT = 0.031 }), nil},
		{"e2e_s", `,"e2e_s":4.5`, "e2e_s", "4.5", ok(func(r *sources.Request) { r.E2E = 4.5 }), nil},
		{"max_itl_s", `,"max_itl_s":1.25`, "max_itl_s", "1.25", ok(func(r *sources.Request) { r.MaxITL = 1.25 }), nil},
		{"prompt_tokens", `,"prompt_tokens":8192`, "prompt_tokens", "8192", ok(func(r *sources.Request) { r.PromptTokens = 8192 }), nil},
		{"output_tokens", `,"output_tokens":0`, "output_tokens", "0", ok(func(r *sources.Request) { r.OutputTokens = 0 }), nil},
		{"cached_tokens", `,"cached_tokens":4096`, "cached_tokens", "4096", ok(func(r *sources.Request) { r.CachedTokens = 4096 }), nil},
		{"tokens written as 12.0", `,"prompt_tokens":12.0`, "prompt_tokens", "12.0", ok(func(r *sources.Request) { r.PromptTokens = 12 }), nil},
		{"tokens with exponent", `,"prompt_tokens":1e3`, "prompt_tokens", "1e3", ok(func(r *sources.Request) { r.PromptTokens = 1000 }), nil},
		{"class", `,"class":"long"`, "class", "long", ok(func(r *sources.Request) { r.Class = "long" }), nil},
		{"class escaped", `,"class":"l\u00f6ng \"x\"\\"`, "class", `"löng ""x""\"`, ok(func(r *sources.Request) { r.Class = `löng "x"\` }), nil},
		{"replica", `,"replica":"vllm-0"`, "replica", "vllm-0", ok(func(r *sources.Request) { r.Replica = "vllm-0" }), nil},
		{"attempt", `,"attempt":3`, "attempt", "3", ok(func(r *sources.Request) { r.Attempt = 3 }), nil},
		{"quality_ok true", `,"quality_ok":true`, "quality_ok", "true", ok(func(r *sources.Request) { r.Quality = sources.QualityOK }), nil},
		{"quality_ok false", `,"quality_ok":false`, "quality_ok", "false", ok(func(r *sources.Request) { r.Quality = sources.QualityBad }), nil},
		{"quality_ok 1", ``, "quality_ok", "1", ok(func(r *sources.Request) { r.Quality = sources.QualityOK }), nil},
		{"quality_ok 0", ``, "quality_ok", "0", ok(func(r *sources.Request) { r.Quality = sources.QualityBad }), nil},
		{"quality_ok True (pandas)", ``, "quality_ok", "True", ok(func(r *sources.Request) { r.Quality = sources.QualityOK }), nil},
		{"null and empty mean unknown", `,"e2e_s":null,"quality_ok":null,"class":null`, "e2e_s", "", ok(func(r *sources.Request) {}), nil},
		{"tpot derived", `,"e2e_s":2.25,"output_tokens":21`, "", "", ok(func(r *sources.Request) {
			r.E2E, r.OutputTokens, r.TPOT = 2.25, 21, 0.1
		}), nil},
		{"tpot not derived for one token", `,"e2e_s":2.25,"output_tokens":1`, "", "", ok(func(r *sources.Request) {
			r.E2E, r.OutputTokens = 2.25, 1
		}), nil},
		{"tpot_s wins over derivation", `,"tpot_s":0.05,"e2e_s":2.25,"output_tokens":21`, "", "", ok(func(r *sources.Request) {
			r.E2E, r.OutputTokens, r.TPOT = 2.25, 21, 0.05
		}), nil},
		{"negative zero is zero", `,"max_itl_s":-0`, "max_itl_s", "-0", ok(func(r *sources.Request) { r.MaxITL = 0 }), func(t *testing.T, r sources.Request) {
			if math.Signbit(r.MaxITL) {
				t.Error("e2e_s -0 kept its sign")
			}
		}},
		{"unknown fields skipped", `,"location":"gateway","tags":{"a":[1,2,{"b":null}]},"n":-1.5e-3`, "location", "gateway", ok(func(r *sources.Request) {}), nil},
		{"whitespace", ` , "e2e_s" : 1 ,"class":"a" `, "", "", ok(func(r *sources.Request) { r.E2E, r.Class = 1, "a" }), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csvOnly := tt.json == "" && tt.csvCol != ""
			if !csvOnly {
				ds, err := readString(t, "t.jsonl", "{"+base+tt.json+"}\n")
				if err != nil {
					t.Fatal(err)
				}
				if len(ds.Requests) != 1 || !sameRequest(ds.Requests[0], tt.want) {
					t.Fatalf("JSON: got %+v, want %+v", ds.Requests, tt.want)
				}
				if tt.wantCheck != nil {
					tt.wantCheck(t, ds.Requests[0])
				}
			}
			if tt.csvCol == "" {
				return
			}
			text := csvHead + "," + tt.csvCol + "\n" + csvBase + "," + tt.csvCell + "\n"
			ds, err := readString(t, "t.csv", text)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Requests) != 1 || !sameRequest(ds.Requests[0], tt.want) {
				t.Fatalf("CSV: got %+v, want %+v", ds.Requests, tt.want)
			}
			if tt.wantCheck != nil {
				tt.wantCheck(t, ds.Requests[0])
			}
		})
	}
}

// TestCanceledBy decodes who canceled a canceled request, in JSON and in
// CSV, and what it does to request accounting: a server's cancel counts as
// failed, a client's or an unattributed one as canceled.
func TestCanceledBy(t *testing.T) {
	for _, tt := range []struct {
		name, json, cell string
		want             sources.CanceledBy
		failed           bool
	}{
		{"client", `,"canceled_by":"client"`, "client", sources.CanceledByClient, false},
		{"server", `,"canceled_by":"server"`, "server", sources.CanceledByServer, true},
		{"absent", ``, "", sources.CanceledByUnknown, false},
		{"null", `,"canceled_by":null`, "", sources.CanceledByUnknown, false},
		{"empty string", `,"canceled_by":""`, " ", sources.CanceledByUnknown, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, in := range []struct{ name, text string }{
				{"t.jsonl", `{"ts":1795964400,"status":"cancelled"` + tt.json + "}\n"},
				{"t.csv", "ts,status,canceled_by\n1795964400,canceled," + tt.cell + "\n"},
			} {
				ds, err := readString(t, in.name, in.text)
				if err != nil {
					t.Fatalf("%s: %v", in.name, err)
				}
				r := ds.Requests[0]
				if r.Status != sources.StatusCanceled || r.CanceledBy != tt.want {
					t.Errorf("%s: status %v canceled_by %v, want canceled %v", in.name, r.Status, r.CanceledBy, tt.want)
				}
				if r.Failed() != tt.failed || r.Canceled() == tt.failed {
					t.Errorf("%s: Failed %v Canceled %v, want failed %v", in.name, r.Failed(), r.Canceled(), tt.failed)
				}
			}
		})
	}
}

// TestStatuses decodes every status, including the British spelling.
func TestStatuses(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want sources.Status
	}{
		{"ok", sources.StatusOK}, {"error", sources.StatusError}, {"timeout", sources.StatusTimeout},
		{"canceled", sources.StatusCanceled}, {"cancelled", sources.StatusCanceled}, {"rejected", sources.StatusRejected},
	} {
		for _, form := range []struct{ name, text string }{
			{"s.jsonl", `{"ts":1,"status":"` + tt.in + `","ttft_s":0.1}` + "\n"},
			{"s.csv", "status,ts,ttft_s\n" + tt.in + ",1,0.1\n"},
		} {
			ds, err := readString(t, form.name, form.text)
			if err != nil {
				t.Fatalf("%s %s: %v", form.name, tt.in, err)
			}
			if got := ds.Requests[0].Status; got != tt.want {
				t.Errorf("%s %s: status %v, want %v", form.name, tt.in, got, tt.want)
			}
		}
	}
}

// TestTimestamps covers RFC 3339 with offsets and fractions, and numbers.
func TestTimestamps(t *testing.T) {
	tests := []struct {
		in   string // as it appears in JSON
		cell string // as it appears in CSV
		want float64
	}{
		{`"2026-11-29T15:00:00Z"`, "2026-11-29T15:00:00Z", ts0},
		{`"2026-11-29T15:00:00.5Z"`, "2026-11-29T15:00:00.5Z", ts0 + 0.5},
		{`"2026-11-29T15:00:00.125000Z"`, "2026-11-29T15:00:00.125000Z", ts0 + 0.125},
		{`"2026-11-29T15:00:00.000000001Z"`, "2026-11-29T15:00:00.000000001Z", ts0 + 1e-9},
		{`"2026-11-29T16:00:00+01:00"`, "2026-11-29T16:00:00+01:00", ts0},
		{`"2026-11-29T20:30:00.25+05:30"`, "2026-11-29T20:30:00.25+05:30", ts0 + 0.25},
		{`"2026-11-29T08:00:00-07:00"`, "2026-11-29T08:00:00-07:00", ts0},
		{`"2026-11-29T15:00:00+00:00"`, "2026-11-29T15:00:00+00:00", ts0},
		{`"2024-02-29T00:00:00Z"`, "2024-02-29T00:00:00Z", 1709164800},
		{`"1970-01-01T00:00:00Z"`, "1970-01-01T00:00:00Z", 0},
		{`"2026-11-29T15:00:00.1234567891Z"`, "2026-11-29T15:00:00.1234567891Z", ts0 + 0.123456789}, // time.Parse truncates past ns
		{`1795964400`, "1795964400", ts0},
		{`1795964400.125`, "1795964400.125", ts0 + 0.125},
		{`1.7959644e9`, "1.7959644e9", ts0},
		{`0`, "0", 0},
	}
	for _, tt := range tests {
		ds, err := readString(t, "t.jsonl", `{"ts":`+tt.in+`,"status":"rejected"}`)
		if err != nil {
			t.Errorf("JSON ts %s: %v", tt.in, err)
		} else if got := ds.Requests[0].Time; math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("JSON ts %s: got %.9f, want %.9f", tt.in, got, tt.want)
		}
		ds, err = readString(t, "t.csv", "ts,status\n"+tt.cell+",rejected\n")
		if err != nil {
			t.Errorf("CSV ts %s: %v", tt.cell, err)
		} else if got := ds.Requests[0].Time; math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("CSV ts %s: got %.9f, want %.9f", tt.cell, got, tt.want)
		}
	}
}

// TestEncodings reads the same requests as JSONL, gzip JSONL, CSV and gzip
// CSV, and checks the dataset's metadata.
func TestEncodings(t *testing.T) {
	jsonl, err := os.ReadFile("testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	csvText, err := os.ReadFile("testdata/sample.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []sources.Request{
		req(func(r *sources.Request) {
			r.Time, r.Status, r.TTFT, r.TPOT, r.E2E, r.MaxITL = ts0+0.125, sources.StatusOK, 0.21, 0.031, 4.2, 0.4
			r.PromptTokens, r.OutputTokens, r.CachedTokens = 812, 129, 512
			r.Class, r.Replica, r.Attempt, r.Quality = "chat", "pod-a", 1, sources.QualityOK
		}),
		req(func(r *sources.Request) {
			r.Time, r.Status, r.TTFT, r.E2E, r.TPOT = ts0+0.5, sources.StatusOK, 0.35, 2.35, (2.35-0.35)/100
			r.PromptTokens, r.OutputTokens, r.Class, r.Replica = 90, 101, "chat", "pod-b"
		}),
		req(func(r *sources.Request) {
			r.Time, r.Status, r.E2E, r.PromptTokens = ts0+1.75, sources.StatusError, 0.05, 9000
			r.Class, r.Replica, r.Attempt = "long", "pod-a", 2
		}),
		req(func(r *sources.Request) {
			r.Time, r.Status, r.TTFT, r.E2E = ts0+2, sources.StatusTimeout, 1.5, 30
			r.Class, r.Replica = "long", "pod-b"
		}),
		req(func(r *sources.Request) {
			r.Time, r.Status, r.PromptTokens, r.Replica, r.Attempt, r.Quality = ts0+3, sources.StatusCanceled, 40, "pod-a", 3, sources.QualityBad
		}),
		req(func(r *sources.Request) { r.Time, r.Status, r.Class = ts0+4, sources.StatusRejected, "chat" }),
		req(func(r *sources.Request) {
			r.Time, r.Status, r.TTFT, r.E2E, r.OutputTokens = ts0+5.000000001, sources.StatusOK, 0, 0.5, 1
			r.Class, r.Replica, r.Attempt = `chät "q"`, "pod-c", 1
		}),
	}
	tests := []struct {
		name, path string
		data       []byte
		format     string
		note       string
	}{
		{"jsonl", "b.jsonl", jsonl, Format, ""},
		{"jsonl gzip", "b.jsonl.gz", gz(t, jsonl), Format, "gzip-compressed"},
		{"gzip without the .gz name", "b.log", gz(t, jsonl), Format, "gzip-compressed"},
		{"csv", "b.csv", csvText, FormatCSV, ""},
		{"csv gzip", "b.csv.gz", gz(t, csvText), FormatCSV, "gzip-compressed"},
		{"jsonl with BOM and CRLF", "b.jsonl", append([]byte("\xef\xbb\xbf"), bytes.ReplaceAll(jsonl, []byte("\n"), []byte("\r\n"))...), Format, ""},
		{"csv with CRLF", "b.csv", bytes.ReplaceAll(csvText, []byte("\n"), []byte("\r\n")), FormatCSV, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := Read(context.Background(), tt.path, bytes.NewReader(tt.data), sources.Baseline)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Requests) != len(want) {
				t.Fatalf("read %d requests, want %d", len(ds.Requests), len(want))
			}
			for i := range want {
				if !sameRequest(ds.Requests[i], want[i]) {
					t.Errorf("request %d:\n got %+v\nwant %+v", i, ds.Requests[i], want[i])
				}
			}
			sum := sha256.Sum256(tt.data)
			wantIn := sources.Input{Path: tt.path, SHA256: hex.EncodeToString(sum[:]), Format: tt.format,
				Arm: sources.Baseline, Count: len(want), Note: tt.note}
			if !reflect.DeepEqual(ds.Inputs, []sources.Input{wantIn}) {
				t.Errorf("inputs %+v, want %+v", ds.Inputs, wantIn)
			}
			if ds.Arm != sources.Baseline || ds.Clock != sources.ClockEpoch || ds.Location != "client" || ds.Duration != 0 {
				t.Errorf("dataset arm %q clock %q location %q duration %v", ds.Arm, ds.Clock, ds.Location, ds.Duration)
			}
			if len(ds.Warnings) != 0 {
				t.Errorf("warnings %q", ds.Warnings)
			}
		})
	}
}

// TestUnknownFieldsWarning lists unknown names once, sorted, with counts
// and hints for likely misspellings.
func TestUnknownFieldsWarning(t *testing.T) {
	text := `{"ts":1700000001,"status":"ok","ttft_s":0.1,"zeta":1,"ttft":0.1,"location":"gw"}
{"ts":1700000002,"status":"ok","ttft_s":0.2,"location":"gw","Class":"x"}
`
	ds, err := readString(t, "u.jsonl", text)
	if err != nil {
		t.Fatal(err)
	}
	want := `u.jsonl: ignored 4 unknown fields (not in the request-log contract): "Class" (1 line; did you mean "class"?), "location" (2 lines), "ttft" (1 line; did you mean "ttft_s"?), "zeta" (1 line)`
	if len(ds.Warnings) != 1 || ds.Warnings[0] != want {
		t.Errorf("warnings:\n got %q\nwant %q", ds.Warnings, want)
	}
	ds, err = readString(t, "u.csv", "ts,status,timestamp,extra\n1700000001,rejected,x,y\n1700000002,rejected,x,y\n")
	if err != nil {
		t.Fatal(err)
	}
	want = `u.csv: ignored 2 unknown fields (not in the request-log contract): "extra" (2 lines), "timestamp" (2 lines; did you mean "ts"?)`
	if len(ds.Warnings) != 1 || ds.Warnings[0] != want {
		t.Errorf("CSV warnings:\n got %q\nwant %q", ds.Warnings, want)
	}
}

// TestChunking checks that results do not depend on how the input is cut
// into chunks or how many parsers run, including lines longer than a chunk.
func TestChunking(t *testing.T) {
	var buf bytes.Buffer
	if err := writeLog(&buf, 3000, 7, false); err != nil {
		t.Fatal(err)
	}
	// blank lines, a very long line and no final newline
	long := `{"ts":"2026-11-29T15:00:05Z","status":"rejected","pad":"` + strings.Repeat("x", 5000) + `"}`
	data := append([]byte("\n\n"), buf.Bytes()...)
	data = append(data, "\n  \n"+long+"\n"+`{"ts":"2026-11-29T15:00:06Z","status":"rejected"}`...)
	ref, err := read(context.Background(), "c.jsonl", bytes.NewReader(data), sources.Canary, options{chunkSize: 1 << 20, workers: 1, maxLine: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.Requests) != 3002 {
		t.Fatalf("read %d requests, want 3002", len(ref.Requests))
	}
	for _, size := range []int{16, 100, 4096, 65536} {
		for _, workers := range []int{1, 2, 3} {
			for _, hint := range []bool{true, false} {
				var r io.Reader = bytes.NewReader(data)
				if !hint {
					r = onlyReader{r}
				}
				got, err := read(context.Background(), "c.jsonl", r, sources.Canary, options{chunkSize: size, workers: workers, maxLine: 1 << 20})
				if err != nil {
					t.Fatalf("chunk %d workers %d: %v", size, workers, err)
				}
				if !sameDataset(got, ref) {
					t.Fatalf("chunk %d workers %d hint %v: dataset differs", size, workers, hint)
				}
			}
		}
	}
	// errors are reported at the same line whatever the chunking
	bad := bytes.Replace(data, []byte(`"status":"ok"`), []byte(`"status":"okay"`), 1)
	wantLine := 1 + bytes.Count(data[:bytes.Index(data, []byte(`"status":"ok"`))], []byte("\n"))
	for _, size := range []int{16, 4096, 1 << 20} {
		_, err := read(context.Background(), "c.jsonl", bytes.NewReader(bad), sources.Canary, options{chunkSize: size, workers: 2, maxLine: 1 << 20})
		if err == nil || !strings.HasPrefix(err.Error(), "c.jsonl:"+strconv.Itoa(wantLine)+`: field "status"`) {
			t.Errorf("chunk %d: error %v, want line %d", size, err, wantLine)
		}
	}
	// a line over the limit
	_, err = read(context.Background(), "c.jsonl", bytes.NewReader(data), sources.Canary, options{chunkSize: 64, workers: 2, maxLine: 4096})
	if err == nil || !strings.Contains(err.Error(), "line longer than") {
		t.Errorf("long line: error %v", err)
	}
}

// onlyReader hides every method but Read, so no size hint is available.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func sameDataset(a, b sources.Dataset) bool {
	if len(a.Requests) != len(b.Requests) {
		return false
	}
	for i := range a.Requests {
		if !sameRequest(a.Requests[i], b.Requests[i]) {
			return false
		}
	}
	return reflect.DeepEqual(a.Inputs, b.Inputs) && reflect.DeepEqual(a.Warnings, b.Warnings) &&
		a.Clock == b.Clock && a.Location == b.Location && a.Arm == b.Arm
}

func TestDetect(t *testing.T) {
	tests := []struct {
		head string
		want bool
	}{
		{`{"ts":1,"status":"ok","ttft_s":0.1}`, true},
		{"\n\n" + `{"status":"ok", "ttft_s": 0.1, "ts": "2026-11-29T15:00:00Z"}`, true},
		{`{"meta":{"ts":1},"status":"ok","ts":1,"class":"chat","rep`, true}, // cut mid-line
		{`{"meta":{"ts":1},"status":"ok"}`, false},                          // ts only nested
		{`{"status":"ok","ttft":0.1}`, false},
		{`{"date": "20240101", "backend": "vllm", "request_goodput:": 1}`, false},
		{`[{"ts":1,"status":"ok"}]`, false},
		{"ts,status,ttft_s\n1,ok,0.1\n", true},
		{"\xef\xbb\xbf\"status\", \"ts\"\nok,1\n", true},
		{"time,status\n", false},
		{"", false},
		{"# HELP vllm:num_requests_running\n", false},
	}
	for _, tt := range tests {
		if got := Detect([]byte(tt.head)); got != tt.want {
			t.Errorf("Detect(%q) = %v, want %v", tt.head, got, tt.want)
		}
	}
}

// TestParseLineAllocs checks the hot path decodes a typical line without
// allocating.
func TestParseLineAllocs(t *testing.T) {
	line := []byte(`{"ts":"2026-11-29T15:00:00.010Z","status":"ok","ttft_s":0.3114,"tpot_s":0.0201,"e2e_s":1.7570,"max_itl_s":0.0604,"prompt_tokens":2753,"output_tokens":91,"cached_tokens":2516,"class":"code","replica":"vllm-canary-7f9c4-2","attempt":1,"quality_ok":true}`)
	d := newDecoder()
	tmpl := sources.NewRequest()
	r := tmpl
	if _, err := d.parseLine(line, &r); err != nil {
		t.Fatal(err.msg)
	}
	allocs := testing.AllocsPerRun(100, func() {
		r = tmpl
		d.parseLine(line, &r)
	})
	if allocs != 0 {
		t.Errorf("parseLine allocates %v times per line", allocs)
	}
}

func TestContextCanceled(t *testing.T) {
	var buf bytes.Buffer
	if err := writeLog(&buf, 200_000, 3, false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Read(ctx, "x.jsonl", bytes.NewReader(buf.Bytes()), sources.Canary)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	// canceled while parsing: checked every 64k lines
	ctx, cancel = context.WithCancel(context.Background())
	r := &cancelAfter{r: bytes.NewReader(buf.Bytes()), n: 1 << 20, cancel: cancel}
	_, err = read(ctx, "x.jsonl", r, sources.Canary, options{chunkSize: 1 << 16, workers: 2, maxLine: 1 << 20})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// cancelAfter cancels a context once n bytes have been read.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n -= n
	if c.n <= 0 {
		c.cancel()
	}
	return n, err
}

// TestDeterministic reads a generated file twice in parallel mode.
func TestDeterministic(t *testing.T) {
	var buf bytes.Buffer
	if err := writeLog(&buf, 50_000, 11, false); err != nil {
		t.Fatal(err)
	}
	a, err := read(context.Background(), "d.jsonl", bytes.NewReader(buf.Bytes()), sources.Canary, options{chunkSize: 4096, workers: 4, maxLine: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	b, err := read(context.Background(), "d.jsonl", onlyReader{bytes.NewReader(buf.Bytes())}, sources.Canary, options{chunkSize: 1 << 16, workers: 1, maxLine: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if !sameDataset(a, b) {
		t.Error("datasets differ between runs")
	}
	var csvBuf bytes.Buffer
	if err := writeLog(&csvBuf, 50_000, 11, true); err != nil {
		t.Fatal(err)
	}
	c, err := Read(context.Background(), "d.csv", bytes.NewReader(csvBuf.Bytes()), sources.Canary)
	if err != nil {
		t.Fatal(err)
	}
	// the CSV form of the same requests reads the same (tpot_s is always given there)
	for i := range c.Requests {
		x, y := a.Requests[i], c.Requests[i]
		y.TPOT = x.TPOT
		if !sameRequest(x, y) && math.Abs(x.TPOT-c.Requests[i].TPOT) > 1e-4 {
			t.Fatalf("request %d: JSONL %+v, CSV %+v", i, x, c.Requests[i])
		}
	}
}

// TestEarlyClockWarning: a log whose arrivals begin before 2000 (seconds
// counted from its run's start, written as ts) is read as given, with a
// warning naming the file, the first time and the fix, from the reader
// that keeps the records and from the streaming scan alike; a log of this
// century gets none.
func TestEarlyClockWarning(t *testing.T) {
	early := "{\"ts\":0.5,\"status\":\"ok\",\"ttft_s\":0.1}\n{\"ts\":1.5,\"status\":\"ok\",\"ttft_s\":0.2}\n"
	want := `e.jsonl: arrival times begin 1970-01-01T00:00:00Z (ts 0.5), long before any log of this century: seconds since the run's start rather than unix seconds? They are judged as given, as a run decades before another arm's; write unix seconds or RFC 3339 times`
	ds, err := readString(t, "e.jsonl", early)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Warnings) != 1 || ds.Warnings[0] != want {
		t.Errorf("warnings:\n got %q\nwant %q", ds.Warnings, want)
	}
	sd, err := Scan(context.Background(), "e.jsonl", strings.NewReader(early), sources.Baseline, ScanOptions{}, func(*sources.Request) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(sd.Warnings) != 1 || sd.Warnings[0] != want {
		t.Errorf("streaming warnings:\n got %q\nwant %q", sd.Warnings, want)
	}
	ds, err = readString(t, "n.jsonl", "{\"ts\":946684800,\"status\":\"ok\",\"ttft_s\":0.1}\n")
	if err != nil || len(ds.Warnings) != 0 {
		t.Errorf("a log from 2000 on: %v %q", err, ds.Warnings)
	}
}

// A record's user is kept as the group its name hashes to, whichever way
// the name is written: a plain string (the fast path), one with escapes
// (the strict parser), a number, a CSV cell; a record without one has
// none, and a user that is neither string nor number is an error naming
// the line.
func TestReadUser(t *testing.T) {
	jl := `{"ts":1,"status":"ok","ttft_s":0.1,"user":"alice"}
{"ts":2,"status":"ok","ttft_s":0.1,"user":"alice"}
{"ts":3,"status":"ok","ttft_s":0.1,"user":"b\u0061b"}
{"ts":4,"status":"ok","ttft_s":0.1,"user":42}
{"ts":5,"status":"ok","ttft_s":0.1}
`
	ds, err := Read(context.Background(), "u.jsonl", strings.NewReader(jl), sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	want := []uint8{sources.UserOf([]byte("alice")), sources.UserOf([]byte("alice")), sources.UserOf([]byte("bab")), sources.UserOf([]byte("42")), 0}
	for i, r := range ds.Requests {
		if r.User != want[i] {
			t.Errorf("jsonl record %d: user group %d, want %d", i+1, r.User, want[i])
		}
	}
	if want[0] == 0 || want[0] > sources.UserGroups {
		t.Errorf("UserOf gives %d, want 1 … %d", want[0], sources.UserGroups)
	}
	csv := "ts,status,ttft_s,user\n1,ok,0.1, alice \n2,ok,0.1,\n"
	ds, err = Read(context.Background(), "u.csv", strings.NewReader(csv), sources.Baseline)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Requests[0].User != want[0] || ds.Requests[1].User != 0 {
		t.Errorf("csv: user groups %d, %d; want %d, 0", ds.Requests[0].User, ds.Requests[1].User, want[0])
	}
	_, err = Read(context.Background(), "u.jsonl", strings.NewReader(`{"ts":1,"status":"ok","ttft_s":0.1,"user":{"id":1}}`+"\n"), sources.Baseline)
	if err == nil || !strings.Contains(err.Error(), `u.jsonl:1`) || !strings.Contains(err.Error(), `"user"`) {
		t.Errorf("a user that is an object: %v", err)
	}
}
