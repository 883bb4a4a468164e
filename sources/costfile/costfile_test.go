package costfile

import (
	"context"
	"math"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		n        int
		missing  []string
		total    float64
	}{
		{"csv with all columns", "start,end,arm,replica,accelerator_usd,host_usd,network_usd,idle_reserve_usd\n" +
			"2026-01-01T00:00:00Z,2026-01-01T00:01:00Z,baseline,p0,1,0.5,0.25,0.125\n" +
			"1767225660,1767225720,canary,p0,2,0,0,0\n", 2, nil, 3.875},
		{"csv missing network", "start,end,arm,accelerator_usd,host_usd,idle_reserve_usd\n1,2,baseline,1,1,1\n", 1, []string{"network_usd"}, 3},
		{"jsonl", `{"start": "2026-01-01T00:00:00Z", "end": 1767225660, "arm": "canary", "accelerator_usd": 0.5}` + "\n", 1,
			[]string{"host_usd", "network_usd", "idle_reserve_usd"}, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Read(context.Background(), "c.csv", strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Records) != tc.n || strings.Join(res.Missing, ",") != strings.Join(tc.missing, ",") {
				t.Errorf("records %d missing %v", len(res.Records), res.Missing)
			}
			tot := 0.0
			for _, r := range res.Records {
				tot += r.Total()
			}
			if math.Abs(tot-tc.total) > 1e-12 {
				t.Errorf("total %v, want %v", tot, tc.total)
			}
			if len(res.Input.SHA256) != 64 || res.Input.Count != tc.n {
				t.Errorf("input %+v", res.Input)
			}
		})
	}
}

func TestBadCostFiles(t *testing.T) {
	const h = "start,end,arm,replica,accelerator_usd,host_usd,network_usd,idle_reserve_usd\n"
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"negative amount", h + "1,2,baseline,p0,1,1,1,1\n3,4,canary,p0,-1,0,0,0\n", []string{"c.csv:3", "accelerator_usd", "negative"}},
		{"overlap for one arm and replica", h + "0,60,baseline,p0,1,0,0,0\n60,120,baseline,p0,1,0,0,0\n90,150,baseline,p0,1,0,0,0\n", []string{"c.csv:4", "line 3", "baseline replica p0"}},
		{"unknown arm", h + "0,60,control,p0,1,0,0,0\n", []string{"c.csv:2", "arm", "control"}},
		{"end before start", h + "60,0,canary,p0,1,0,0,0\n", []string{"c.csv:2", "end must be after start"}},
		{"bad time", h + "yesterday,60,canary,p0,1,0,0,0\n", []string{"c.csv:2", "start"}},
		{"not a number", h + "0,60,canary,p0,lots,0,0,0\n", []string{"c.csv:2", "accelerator_usd"}},
		{"wrong column count", h + "0,60,canary\n", []string{"c.csv:2", "fields"}},
		{"no arm column", "start,end,accelerator_usd\n0,1,1\n", []string{"c.csv:1", `"arm"`}},
		{"no cost columns", "start,end,arm\n0,1,canary\n", []string{"c.csv:1", "no cost column"}},
		{"empty", "", []string{"c.csv", "empty"}},
		{"header only", h, []string{"c.csv", "no cost records"}},
		{"jsonl garbage", `{"start": 0, "end": 1, "arm": "canary", "host_usd": 1}` + "\n{oops\n", []string{"c.csv:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(context.Background(), "c.csv", strings.NewReader(tc.in))
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCoverageOverlapsDifferentReplicasAllowed(t *testing.T) {
	in := "start,end,arm,replica,accelerator_usd\n0,60,baseline,p0,1\n0,60,baseline,p1,1\n0,60,canary,p0,1\n"
	if _, err := Read(context.Background(), "c.csv", strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
}

// TestQuoteErrorInFirstField (hardening item 5): a quote error in a row's
// first field made the reader call FieldPos after a failed Read, which
// panics; it is an error naming file:line.
func TestQuoteErrorInFirstField(t *testing.T) {
	for _, data := range []string{
		"start,end,arm,accelerator_usd\nx\"y,1,canary,1\n",
		"start,end,arm,accelerator_usd\n1700000000,1700000060,canary,1\n\"1700000000,1700000060,canary,1\n",
	} {
		_, err := Read(context.Background(), "cost.csv", strings.NewReader(data))
		if err == nil || !strings.Contains(err.Error(), "cost.csv:") || !strings.Contains(err.Error(), "malformed CSV") {
			t.Errorf("%q: got %v, want a malformed-CSV error naming cost.csv:line", data, err)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestCostSizeCap (hardening item 6): an endless cost input is refused once
// MaxBytes have been read.
func TestCostSizeCap(t *testing.T) {
	_, err := Read(context.Background(), "cost.csv", zeros{})
	if err == nil || !strings.Contains(err.Error(), "cost.csv: larger than 256 MiB") {
		t.Errorf("got %v, want the size cap naming the file", err)
	}
}
