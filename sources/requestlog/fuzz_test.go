package requestlog

import (
	"bytes"
	"context"
	"math"
	"os"
	"testing"

	"github.com/goodput-dev/goodput/sources"
)

// FuzzRead feeds arbitrary bytes to the reader. It must never panic; any
// input it accepts must give finite, non-negative latencies and times,
// valid statuses and counts, and the same dataset however it is chunked.
func FuzzRead(f *testing.F) {
	for _, p := range []string{"testdata/sample.jsonl", "testdata/sample.csv"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(gz(f, b))
	}
	for _, s := range []string{
		`{"ts":1,"status":"ok","ttft_s":0.1,"e2e_s":0.5,"output_tokens":3}`,
		`{"ts":"2026-11-29T15:00:00.5+01:00","status":"canceled","x":{"y":[1,"\u00e9",null]}}`,
		`{"ts":1,"status":"ok","ttft_s":NaN}`,
		`{"ts":1,"status":"ok","ttft_s":-Infinity}`,
		`{"ts":1e400,"status":"rejected"}`,
		`{"ts":1,"status":"ok","ttft_s":1e-400,"tpot_s":-0}`,
		"ts,status,ttft_s,e2e_s,output_tokens\n1,ok,0.1,0.5,3\n\"2\",\"ok\",\"0.2\",,\n",
		"ts,status\n1,rejected\n1,rejected,extra\n",
		"\xef\xbb\xbf\n\n{\"ts\":0,\"status\":\"rejected\"}",
		"[]",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := Read(context.Background(), "f", bytes.NewReader(data), sources.Canary)
		small, serr := read(context.Background(), "f", onlyReader{bytes.NewReader(data)}, sources.Canary,
			options{chunkSize: 16, workers: 2, maxLine: 1 << 20})
		if (err == nil) != (serr == nil) || (err != nil && err.Error() != serr.Error()) {
			t.Fatalf("chunking changes the outcome: %v vs %v", err, serr)
		}
		scanned, scerr := scanAll("f", data, Options{}, options{chunkSize: 16, workers: 2, maxLine: 1 << 20})
		if (err == nil) != (scerr == nil) || (err != nil && err.Error() != scerr.Error()) {
			t.Fatalf("Scan changes the outcome: %v vs %v", scerr, err)
		}
		if err == nil && !sameDataset(ds, scanned) {
			t.Fatal("Scan changes the dataset")
		}
		if err != nil {
			if len(ds.Requests) != 0 {
				t.Fatal("requests returned with an error")
			}
			return
		}
		if !sameDataset(ds, small) {
			t.Fatal("chunking changes the dataset")
		}
		if len(ds.Requests) == 0 || ds.Inputs[0].Count != len(ds.Requests) {
			t.Fatalf("accepted with %d requests, count %d", len(ds.Requests), ds.Inputs[0].Count)
		}
		for i, r := range ds.Requests {
			if math.IsNaN(r.Time) || math.IsInf(r.Time, 0) || r.Time < 0 {
				t.Fatalf("request %d: time %v", i, r.Time)
			}
			for _, x := range []float64{r.TTFT, r.TPOT, r.E2E, r.MaxITL} {
				if !math.IsNaN(x) && (math.IsInf(x, 0) || x < 0 || math.Signbit(x)) {
					t.Fatalf("request %d: latency %v in %+v", i, x, r)
				}
			}
			if r.Status < sources.StatusOK || r.Status > sources.StatusRejected {
				t.Fatalf("request %d: status %d", i, r.Status)
			}
			if r.Status == sources.StatusOK && math.IsNaN(r.TTFT) {
				t.Fatalf("request %d: ok without TTFT", i)
			}
			if r.PromptTokens < -1 || r.OutputTokens < -1 || r.CachedTokens < -1 || r.Attempt < 0 {
				t.Fatalf("request %d: counts %+v", i, r)
			}
		}
	})
}
