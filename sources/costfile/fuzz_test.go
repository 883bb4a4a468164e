package costfile

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
)

// FuzzRead feeds arbitrary cost files (CSV and JSONL). It must never panic;
// errors name the file; accepted records have Start < End and finite,
// non-negative components.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		"start,end,arm,replica,accelerator_usd,host_usd,network_usd,idle_reserve_usd\n1700000000,1700000060,baseline,r1,1,0.5,0,0\n1700000000,1700000060,canary,,1,0,0,0\n",
		"start,end,arm,accelerator_usd\n\"1700000000,1700000060,canary,1\n",
		"start,end,arm,accelerator_usd\nx\"y,1,canary,1\n",
		`{"start":"2026-11-29T15:00:00Z","end":"2026-11-29T15:01:00Z","arm":"canary","accelerator_usd":2}` + "\n",
		`{"start":1,"end":0,"arm":"baseline","accelerator_usd":-1}`,
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Read(context.Background(), "cost.csv", bytes.NewReader(data))
		if err != nil {
			if !strings.Contains(err.Error(), "cost.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, r := range res.Records {
			if !(r.Start < r.End) {
				t.Fatalf("record with start %v ≥ end %v", r.Start, r.End)
			}
			for _, v := range []float64{r.Accelerator, r.Host, r.Network, r.IdleReserve} {
				if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
					t.Fatalf("component %v", v)
				}
			}
		}
	})
}
