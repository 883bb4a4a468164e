package requestlog

import (
	"bytes"
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// sameBits compares two records field by field, bit for bit (NaNs equal).
func sameBits(a, b *sources.Request) bool {
	same := func(x, y float64) bool {
		return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
	}
	return same(a.Time, b.Time) && same(a.TTFT, b.TTFT) && same(a.TPOT, b.TPOT) && same(a.E2E, b.E2E) && same(a.MaxITL, b.MaxITL) &&
		a.PromptTokens == b.PromptTokens && a.OutputTokens == b.OutputTokens && a.CachedTokens == b.CachedTokens &&
		a.Class == b.Class && a.Replica == b.Replica && a.Attempt == b.Attempt && a.Status == b.Status && a.Quality == b.Quality && a.CanceledBy == b.CanceledBy
}

// checkFast decodes line with the fast path and the strict parser: when
// the fast path takes the line, the strict parser must accept it as the
// same record with no unknown field; the fast path may decline any line.
func checkFast(t *testing.T, line []byte) (taken bool) {
	t.Helper()
	tmpl := sources.NewRequest()
	fd, sd := newDecoder(), newDecoder()
	fr, sr := tmpl, tmpl
	if !fd.fastLine(line, &fr) {
		return false
	}
	// again on the same decoder, which now predicts this line's keys
	again := tmpl
	if !fd.fastLine(line, &again) || !sameBits(&fr, &again) {
		t.Fatalf("fast path decodes %q differently once it predicts the keys:\n%+v\nthen\n%+v", line, fr, again)
	}
	blank, err := sd.parseLine(line, &sr)
	switch {
	case blank:
		t.Fatalf("fast path took a line the strict parser finds blank: %q", line)
	case err != nil:
		t.Fatalf("fast path took a line the strict parser refuses (%s): %q", err.msg, line)
	case !sameBits(&fr, &sr):
		t.Fatalf("fast path decodes %q as\n%+v\nthe strict parser as\n%+v", line, fr, sr)
	case len(sd.unknown) > 0:
		t.Fatalf("fast path took a line with unknown fields: %q", line)
	}
	return true
}

// The fast path takes the lines writers emit, and declines what only the
// strict parser can judge, so that the strict parser's message is given.
func TestFastLine(t *testing.T) {
	for _, tc := range []struct {
		line  string
		taken bool
	}{
		{`{"ts":1767225600.003175,"status":"ok","ttft_s":0.156341,"tpot_s":0.034238,"e2e_s":9.434851,"max_itl_s":0.055244,"prompt_tokens":347,"output_tokens":272,"cached_tokens":0,"replica":"replica-5","attempt":1}`, true},
		{`{"ts": 1767225600.5, "status": "rejected", "class": "chat", "quality_ok": false}` + "\r", true},
		{`{"ts":"2026-11-29T15:00:00.010Z","status":"ok","ttft_s":0.3114,"output_tokens":91,"quality_ok":true}`, true},
		{`{"ts":1,"status":"cancelled"}`, true},
		{`{"ts":1,"status":"canceled","canceled_by":"server"}`, true},
		{`{"ts":1,"status":"canceled","canceled_by":""}`, true},
		{`{"ts":1,"status":"ok","ttft_s":1,"canceled_by":"client"}`, false}, // only on canceled requests
		{`{"ts":1,"status":"canceled","canceled_by":"Server"}`, false},      // the strict hint
		{`{"ts":1,"status":"ok","ttft_s":0.5,"e2e_s":0.25}`, false},         // e2e < ttft: the strict message
		{`{"ts":1,"status":"ok"}`, false},                                   // ok without ttft
		{`{"ts":1,"status":"OK","ttft_s":1}`, false},                        // lower-case hint
		{`{"ts":1,"status":"ok","ttft_s":null}`, false},                     // null
		{`{"ts":1,"status":"ok","ttft_s":1,"ttft_s":1}`, false},             // twice
		{`{"ts":1,"status":"ok","ttft_s":1,"x":1}`, false},                  // unknown field: tallied
		{`{"ts":1,"status":"ok","ttft_s":1,"class":"caf\u00e9"}`, false},    // escape
		{` {"ts":1,"status":"rejected"}`, false},                            // leading blank
		{`{"ts":1,"status":"rejected"} `, false},                            // trailing blank
		{`{"ts":1,"status":"rejected"}}`, false},
		{`{"ts":1,"status":"rejected",}`, false},
		{`{"ts":1,"status":"rejected","attempt":0}`, false},
		{`{"ts":1,"status":"rejected","prompt_tokens":1.5}`, false},
		{`{"ts":1e12,"status":"rejected"}`, false},
		{`{"ts":1,"status":"rejected","ttft_s":-1}`, false},
		{`{}`, false},
		{``, false},
	} {
		if got := checkFast(t, []byte(tc.line)); got != tc.taken {
			t.Errorf("%q: fast path taken %v, want %v", tc.line, got, tc.taken)
		}
	}
}

// FuzzFastLine feeds arbitrary lines to the fast path and the strict
// parser: whatever the fast path accepts, the strict parser accepts as the
// same record.
func FuzzFastLine(f *testing.F) {
	for _, p := range []string{"testdata/sample.jsonl"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, ln := range bytes.Split(b, []byte("\n")) {
			f.Add(ln)
		}
	}
	for _, s := range []string{
		`{"ts":1767225600.003175,"status":"ok","ttft_s":0.156341,"tpot_s":0.034238,"e2e_s":9.434851,"max_itl_s":0.055244,"prompt_tokens":347,"output_tokens":272,"cached_tokens":0,"replica":"replica-5","attempt":1}`,
		`{"ts": "2026-11-29T15:00:00.5+01:00", "status": "canceled", "class": "a b", "quality_ok": true}`,
		`{"ts":1,"status":"ok","ttft_s":1e-400,"tpot_s":-0,"output_tokens":1e2,"attempt":2.0}`,
		`{"ts":1,"status":"ok","ttft_s":0.1,"e2e_s":0.1,"output_tokens":1}`,
		`{"ts":1,"status":"canceled","canceled_by":"client","ttft_s":0.2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // lines are split on newlines before parsing
		}
		checkFast(t, line)
	})
}

// A decoder that learnt one key order still reads every key exactly: a
// key the prediction is a prefix of, or a prefix of the prediction, is
// another key, and another order decodes as the strict parser decodes it.
func TestFastLinePredicts(t *testing.T) {
	d := newDecoder()
	learn := `{"ts":1,"status":"rejected","class":"a","replica":"r1"}`
	r := sources.NewRequest()
	if !d.fastLine([]byte(learn), &r) {
		t.Fatalf("fast path declined %s", learn)
	}
	for _, tc := range []struct {
		line  string
		taken bool
	}{
		{`{"ts":1,"status":"rejected","classx":"a","replica":"r1"}`, false},
		{`{"ts":1,"status":"rejected","clas":"a","replica":"r1"}`, false},
		{`{"ts":1,"status":"rejected","classx:"a"}`, false},
		{`{"ts2":1,"status":"rejected"}`, false},
		{`{"ts":1,"status":"rejected","class":"a","replica":"r1","class":"b"}`, false},
		{`{"replica":"r2","class":"b","status":"canceled","ts":2}`, true},
		{`{"ts":3,"status":"rejected","class":"c","replica":"r3"}`, true},
	} {
		fr, sr := sources.NewRequest(), sources.NewRequest()
		taken := d.fastLine([]byte(tc.line), &fr)
		if taken != tc.taken {
			t.Errorf("%s: fast path taken %v, want %v", tc.line, taken, tc.taken)
			continue
		}
		if !taken {
			continue
		}
		if _, err := newDecoder().parseLine([]byte(tc.line), &sr); err != nil || !sameBits(&fr, &sr) {
			t.Errorf("%s: fast path gives %+v, the strict parser %+v (%v)", tc.line, fr, sr, err)
		}
	}
}

// predictKey compares a word at a time where 16 bytes remain on the line
// and byte by byte where fewer do: both must answer as the plain
// comparison of the key's spelling does, for keys that are the
// prediction, a prefix or an extension of it, or differ in one byte, and
// whatever follows them on the line.
func TestPredictKeyWords(t *testing.T) {
	d := newDecoder()
	want := func(b []byte, i int, pf field) (field, int) {
		name := d.names[pf]
		if end := i + 1 + len(name); end < len(b) && b[end] == '"' && string(b[i+1:end]) == name {
			return pf, end
		}
		return fUnknown, 0
	}
	for pf := fUnknown + 1; pf < nFields; pf++ {
		if n := len(pf.String()); n > 14 {
			t.Fatalf("key %q is %d bytes: predictKey's words hold 14", pf.String(), n)
		}
		d.next[objectStart] = pf
		var keys []string
		for g := fUnknown + 1; g < nFields; g++ {
			name := g.String()
			keys = append(keys, name, name[:len(name)-1], name+"x", "x"+name, strings.ToUpper(name))
			for j := range len(name) {
				keys = append(keys, name[:j]+"\x00"+name[j+1:])
			}
		}
		for _, k := range keys {
			for _, tail := range []string{"", ":", `":1}`, `":0.25,"replica":"r1"}`, `x":1}`, "\"\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"} {
				for _, lead := range []string{"{", `{"ts":1,`} {
					line := []byte(lead + `"` + k + tail)
					for cut := len(lead); cut <= len(line); cut++ {
						b := line[:cut]
						i := len(lead)
						if i >= len(b) {
							continue
						}
						f, end := d.predictKey(b, i, objectStart)
						wf, wend := want(b, i, pf)
						if f != wf || end != wend {
							t.Fatalf("predict %q in %q: %v at %d, want %v at %d", pf.String(), b, f, end, wf, wend)
						}
					}
				}
			}
		}
	}
}

// parseChunkRef is parseChunk as it was before the fast path found the
// line ends itself: each line split off first, then the fast path or the
// strict parser on it. The reference for TestParseChunkLineEnds.
func (d *decoder) parseChunkRef(data []byte) (reqs []sources.Request, blank []int32, lines int, err *lineErr, errLine int) {
	tmpl := sources.NewRequest()
	for len(data) > 0 {
		var ln []byte
		if nl := bytes.IndexByte(data, '\n'); nl >= 0 {
			ln, data = data[:nl], data[nl+1:]
		} else {
			ln, data = data, nil
		}
		lines++
		reqs = append(reqs, tmpl)
		if d.fastLine(ln, &reqs[len(reqs)-1]) {
			continue
		}
		reqs[len(reqs)-1] = tmpl
		b, e := d.parseLine(ln, &reqs[len(reqs)-1])
		if e != nil {
			return reqs, blank, lines, e, lines
		}
		if b {
			reqs = reqs[:len(reqs)-1]
			blank = append(blank, int32(lines))
		}
	}
	return reqs, blank, lines, nil, 0
}

// checkChunk compares parseChunk with parseChunkRef on data.
func checkChunk(t *testing.T, data []byte) {
	t.Helper()
	res := newDecoder().parseChunk(context.Background(), chunk{data: data, wantLines: true})
	reqs, blank, lines, err, errLine := newDecoder().parseChunkRef(data)
	if (res.err == nil) != (err == nil) || (err != nil && (*res.err != *err || res.line != errLine)) {
		t.Fatalf("%q: error %v at %d, want %v at %d", data, res.err, res.line, err, errLine)
	}
	if err != nil {
		return
	}
	if res.lines != lines || len(res.reqs) != len(reqs) || len(res.blank) != len(blank) {
		t.Fatalf("%q: %d lines, %d records, blank %v; want %d, %d, %v", data, res.lines, len(res.reqs), res.blank, lines, len(reqs), blank)
	}
	for k := range reqs {
		if !sameBits(&res.reqs[k], &reqs[k]) {
			t.Fatalf("%q: record %d is %+v, want %+v", data, k, res.reqs[k], reqs[k])
		}
	}
	for k := range blank {
		if res.blank[k] != blank[k] {
			t.Fatalf("%q: blank lines %v, want %v", data, res.blank, blank)
		}
	}
}

// The fast path finds a line's end as it decodes the line: the records,
// blank lines, line count and first error come out as when each line is
// split off first, whatever ends the line or follows its object.
func TestParseChunkLineEnds(t *testing.T) {
	rec := `{"ts":1,"status":"ok","ttft_s":0.25,"replica":"r1","attempt":1}`
	for _, data := range []string{
		rec, rec + "\n", rec + "\r\n", rec + "\r", rec + "\r\r\n" + rec, rec + "\n\n" + rec + "\n", "\n" + rec,
		rec + " \n" + rec, rec + "}\n" + rec, rec + "x\n" + rec, rec + rec, rec + "\n" + rec + "\r",
		rec + "\r" + rec, "{}\n" + rec, "{\n}" + rec, `{"status":"o` + "\n" + `k","ts":1}`,
		`{"ts":1,"status":"ok","ttft_s":0.` + "\n" + `25}`, `{"ts":1,"sta` + "\ntus\":\"ok\"}", `{"ts":1,"status":"ok"` + "\n}",
		`{"ts":1,"status":"ok","quality_ok":tr` + "\nue}", `{"ts":1,"status":"ok","ttft_s":` + "\n0.2}", `{"ts":1,"status":"ok",` + "\n",
		`{"ts":1,"status":"ok", ` + "\n", `{"ts":1,"status": ` + "\n\"ok\"}", "{\"ts\":1,\"status\":\"ok\"}\n{\"ts\":2,\"status\":\"ok\",\"ttft_s\":-1}\n",
	} {
		checkChunk(t, []byte(data))
	}
	var buf bytes.Buffer
	if err := writeLog(&buf, 2000, 5, false); err != nil {
		t.Fatal(err)
	}
	checkChunk(t, buf.Bytes())
	checkChunk(t, bytes.ReplaceAll(buf.Bytes(), []byte("\n"), []byte("\r\n")))
}

func FuzzParseChunk(f *testing.F) {
	f.Add([]byte(`{"ts":1,"status":"ok","ttft_s":0.25}` + "\r\n" + `{"ts":2,"status":"rejected"}`))
	f.Add([]byte(`{"ts":1,"status":"ok"` + "\n}\n"))
	f.Fuzz(func(t *testing.T, data []byte) { checkChunk(t, data) })
}
