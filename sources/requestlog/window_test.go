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

// runLog is n records one second apart from 2026-11-29T15:00:00Z.
func runLog(n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"ts":%d,"status":"ok","ttft_s":0.2}`, 1795964400+i)
	}
	return lines
}

// TestImplausibleTimes (hardening item 3): one record far outside the
// file's run — ts 0, the year 4999, a clock a year off, milliseconds — is
// an error naming its exact line however the file is chunked, in JSONL and
// CSV; with DropImplausible it is dropped and counted instead.
func TestImplausibleTimes(t *testing.T) {
	for _, tc := range []struct {
		name, ts string
		want     string
	}{
		{"ts 0", `0`, "1970-01-01T00:00:00Z"},
		{"year 4999", `"4999-01-01T00:00:00Z"`, "4999-01-01T00:00:00Z"},
		{"a year off", `1764428400`, "2025-11-29T15:00:00Z"},
		{"two days late", `1796137200`, "2026-12-01T15:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := runLog(3000)
			// blank lines before the bad record move it off its index
			text := "\n" + strings.Join(lines[:1200], "\n") + "\n\n  \n" +
				`{"ts":` + tc.ts + `,"status":"ok","ttft_s":0.2}` + "\n" + strings.Join(lines[1200:], "\n") + "\n"
			const line = 1 + 1200 + 2 + 1
			for _, size := range []int{64, 4096, 1 << 20} {
				_, err := read(context.Background(), "c.jsonl", bytes.NewReader([]byte(text)), sources.Canary,
					options{chunkSize: size, workers: 2, maxLine: 1 << 20})
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Line != line || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "window.implausible: drop") {
					t.Fatalf("chunk %d: got %v, want an error at c.jsonl:%d naming %s", size, err, line, tc.want)
				}
			}
			ds, err := ReadWith(context.Background(), "c.jsonl", strings.NewReader(text), sources.Canary, Options{DropImplausible: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(ds.Requests) != 3000 || len(ds.Warnings) != 1 || !strings.Contains(ds.Warnings[0], fmt.Sprintf("dropped 1 record(s)")) ||
				!strings.Contains(ds.Warnings[0], fmt.Sprintf("line %d", line)) {
				t.Errorf("drop: %d requests, warnings %q", len(ds.Requests), ds.Warnings)
			}
			if ds.Inputs[0].Count != 3000 {
				t.Errorf("input count %d, want the 3000 kept", ds.Inputs[0].Count)
			}
		})
	}
	// CSV: a quoted cell spanning two lines before the bad row
	var b strings.Builder
	b.WriteString("ts,status,ttft_s,class\n")
	for i := 0; i < 500; i++ {
		class := "chat"
		if i == 10 {
			class = "\"multi\nline\""
		}
		fmt.Fprintf(&b, "%d,ok,0.2,%s\n", 1795964400+i, class)
	}
	b.WriteString("0,ok,0.2,chat\n")
	_, err := Read(context.Background(), "c.csv", strings.NewReader(b.String()), sources.Canary)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 1+500+1+1 {
		t.Errorf("CSV: got %v, want an error at c.csv:%d", err, 503)
	}
	// a run that lasts days, with sparse records, is its own window
	var days []string
	for i := 0; i < 100; i++ {
		days = append(days, fmt.Sprintf(`{"ts":%d,"status":"ok","ttft_s":0.2}`, 1795964400+i*6*3600))
	}
	if _, err := Read(context.Background(), "long.jsonl", strings.NewReader(strings.Join(days, "\n")), sources.Canary); err != nil {
		t.Errorf("a 25-day run with records 6 h apart: %v", err)
	}
}
