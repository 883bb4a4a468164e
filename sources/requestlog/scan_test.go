package requestlog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/goodput-dev/goodput/sources"
)

// scanAll reads data through Scan (a second scan when a *WindowError asks
// for one) and collects the records, to compare with ReadWith.
func scanAll(path string, data []byte, o Options, opt options) (sources.Dataset, error) {
	so := ScanOptions{Options: o}
	for pass := 0; pass < 2; pass++ {
		var reqs []sources.Request
		ds, err := scan(context.Background(), path, bytes.NewReader(data), sources.Canary, so, opt, func(r *sources.Request) error {
			reqs = append(reqs, *r)
			return nil
		})
		var we *WindowError
		if errors.As(err, &we) && pass == 0 {
			so.Window = &[2]float64{we.Lo, we.Hi}
			continue
		}
		if err != nil {
			return sources.Dataset{}, err
		}
		ds.Requests = reqs
		return ds, nil
	}
	panic("unreachable")
}

// Scan gives every message of the bad-input catalog exactly as ReadWith
// does, whatever the chunking.
func TestScanBadInputsSameMessages(t *testing.T) {
	for _, tt := range badInputs(t) {
		_, want := Read(context.Background(), tt.file, strings.NewReader(tt.data), sources.Canary)
		for _, opt := range []options{defaultOptions(), {chunkSize: 16, workers: 2, maxLine: 1 << 20}} {
			_, got := scanAll(tt.file, []byte(tt.data), Options{}, opt)
			if got == nil || got.Error() != want.Error() {
				t.Errorf("%s (chunk %d): Scan gives\n%v\nReadWith gives\n%v", tt.name, opt.chunkSize, got, want)
			}
		}
	}
}

// On good inputs Scan hands over the records ReadWith returns, in order,
// with the same inputs (digest included) and warnings.
func TestScanMatchesRead(t *testing.T) {
	var inputs []struct {
		name string
		data []byte
	}
	add := func(name string, data []byte) {
		inputs = append(inputs, struct {
			name string
			data []byte
		}{name, data})
	}
	for _, p := range []string{"testdata/sample.jsonl", "testdata/sample.csv"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		add(p, b)
		add(p+".gz", gz(t, b))
	}
	lines := runLog(3000)
	add("blank-lines.jsonl", []byte("\n\n"+strings.Join(lines[:100], "\n")+"\n\n \n"+strings.Join(lines[100:], "\n")))
	add("unknown-fields.jsonl", []byte(`{"ts":1795964400,"status":"ok","ttft_s":0.2,"latency":3}`+"\n"+`{"ts":1795964401,"status":"rejected","timestamp":4}`))
	for _, in := range inputs {
		want, err := Read(context.Background(), in.name, bytes.NewReader(in.data), sources.Canary)
		if err != nil {
			t.Fatal(err)
		}
		for _, opt := range []options{defaultOptions(), {chunkSize: 64, workers: 3, maxLine: 1 << 20}} {
			got, err := scanAll(in.name, in.data, Options{}, opt)
			if err != nil {
				t.Fatalf("%s: %v", in.name, err)
			}
			if !sameDataset(got, want) {
				t.Errorf("%s (chunk %d): Scan and ReadWith differ: %d vs %d records, inputs %+v vs %+v, warnings %q vs %q",
					in.name, opt.chunkSize, len(got.Requests), len(want.Requests), got.Inputs, want.Inputs, got.Warnings, want.Warnings)
			}
		}
	}
}

// Records outside the plausible window: the same error, line and count as
// ReadWith; with DropImplausible a second scan drops them with the same
// warning.
func TestScanImplausible(t *testing.T) {
	lines := runLog(3000)
	for _, ts := range []string{`0`, `"4999-01-01T00:00:00Z"`, `1764428400`, `1796137200`} {
		text := "\n" + strings.Join(lines[:1200], "\n") + "\n\n  \n" +
			`{"ts":` + ts + `,"status":"ok","ttft_s":0.2}` + "\n" + strings.Join(lines[1200:], "\n") + "\n" +
			`{"ts":` + ts + `,"status":"rejected"}` + "\n"
		for _, drop := range []bool{false, true} {
			want, werr := ReadWith(context.Background(), "c.jsonl", strings.NewReader(text), sources.Canary, Options{DropImplausible: drop})
			got, gerr := scanAll("c.jsonl", []byte(text), Options{DropImplausible: drop}, options{chunkSize: 4096, workers: 2, maxLine: 1 << 20})
			if fmt.Sprint(werr) != fmt.Sprint(gerr) {
				t.Fatalf("ts %s drop %v: Scan gives %v, ReadWith %v", ts, drop, gerr, werr)
			}
			if werr == nil && !sameDataset(got, want) {
				t.Errorf("ts %s drop %v: datasets differ: warnings %q vs %q", ts, drop, got.Warnings, want.Warnings)
			}
			if !drop && werr == nil {
				t.Errorf("ts %s: accepted", ts)
			}
		}
	}
	// a second scan with the window refuses the same way
	var we *WindowError
	_, err := scan(context.Background(), "c.jsonl", strings.NewReader(strings.Join(lines, "\n")+"\n"+`{"ts":0,"status":"rejected"}`), sources.Canary,
		ScanOptions{Options: Options{DropImplausible: true}}, defaultOptions(), func(*sources.Request) error { return nil })
	if !errors.As(err, &we) || we.Out != 1 {
		t.Fatalf("want a WindowError for 1 record, got %v", err)
	}
}

// An error from fn stops the scan and comes back as is.
func TestScanStopsOnCallbackError(t *testing.T) {
	stop := errors.New("enough")
	n := 0
	data := []byte(strings.Join(runLog(5000), "\n"))
	_, err := scan(context.Background(), "c.jsonl", bytes.NewReader(data), sources.Canary, ScanOptions{}, options{chunkSize: 256, workers: 2, maxLine: 1 << 20},
		func(*sources.Request) error {
			n++
			if n == 100 {
				return stop
			}
			return nil
		})
	if err != stop || n != 100 {
		t.Fatalf("got %v after %d records", err, n)
	}
}

// Scan's SHA-256 is that of the bytes read, whether asyncHash copied a
// read or lent the chunk buffer it went into (reads of lendMin bytes or
// more), with reads of every size: whole chunks, halves, odd lengths.
func TestScanHashesLentChunks(t *testing.T) {
	var buf bytes.Buffer
	if err := writeLog(&buf, 30000, 7, false); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if len(data) < 4*lendMin {
		t.Fatalf("the log is %d bytes: too short to lend several chunks", len(data))
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name string
		r    func() io.Reader
	}{
		{"whole reads", func() io.Reader { return bytes.NewReader(data) }},
		{"half reads", func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }},
		{"odd reads", func() io.Reader { return &oddReader{data: data} }},
	} {
		for _, opt := range []options{defaultOptions(), {chunkSize: 3 * lendMin, workers: 3, maxLine: 1 << 20}} {
			n := 0
			ds, err := scan(context.Background(), "big.jsonl", tc.r(), sources.Canary, ScanOptions{}, opt, func(*sources.Request) error {
				n++
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if n != 30000 || ds.Inputs[0].SHA256 != want {
				t.Errorf("%s (chunk %d): %d records, sha256 %s; want 30000, %s", tc.name, opt.chunkSize, n, ds.Inputs[0].SHA256, want)
			}
		}
	}
}

// oddReader returns reads of varying lengths up to 700 KiB, some above
// lendMin and some below.
type oddReader struct {
	data []byte
	k    int
}

func (r *oddReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	r.k++
	n := min(len(p), len(r.data), []int{700 << 10, 1000, lendMin, lendMin - 1, 300 << 10}[r.k%5])
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// The window tracker samples every stride-th record as i%stride == 0
// picks them, through the stride's doublings, and its bounds (min and
// max) come out as math.Min's and math.Max's for every arrival time a
// record can have (finite, at least +0: checkTS) and the +Inf it starts
// from.
func TestWindowTrackerSample(t *testing.T) {
	w := newWindowTracker(nil)
	var want []float64
	stride := 1
	for i := range 9*windowSample + 17 {
		ts := 1.7e9 + float64(i)/100
		w.observe(ts, i+1)
		if i%stride == 0 {
			want = append(want, ts)
			if len(want) == 2*windowSample {
				k := 0
				for j := 0; j < len(want); j += 2 {
					want[k] = want[j]
					k++
				}
				want = want[:k]
				stride *= 2
			}
		}
	}
	if w.stride != stride || len(w.sample) != len(want) {
		t.Fatalf("stride %d, %d samples; want %d, %d", w.stride, len(w.sample), stride, len(want))
	}
	for k := range want {
		if w.sample[k] != want[k] {
			t.Fatalf("sample %d is %v, want %v", k, w.sample[k], want[k])
		}
	}
	times := []float64{0, 5e-324, 1, 1.7e9, math.MaxFloat64, math.Inf(1)}
	for _, a := range times {
		for _, b := range times {
			if x, y := min(a, b), math.Min(a, b); math.Float64bits(x) != math.Float64bits(y) {
				t.Errorf("min(%v, %v) = %v, math.Min %v", a, b, x, y)
			}
			if x, y := max(a, b), math.Max(a, b); math.Float64bits(x) != math.Float64bits(y) {
				t.Errorf("max(%v, %v) = %v, math.Max %v", a, b, x, y)
			}
		}
	}
}
