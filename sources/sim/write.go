package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

// WriteRequestLog writes records as the native JSONL request log
// (DESIGN.md §3): one object per line with ts (unix seconds, 6 decimals),
// status, and the known ones of ttft_s, tpot_s, e2e_s, max_itl_s (seconds, 6
// decimals), prompt_tokens, output_tokens, cached_tokens, class, replica,
// attempt, quality_ok and canceled_by. Unknown fields are left out. A
// record's user, of which only the group is kept, is written as a name of
// that group (sources.UserNames), so it reads back in the same group.
func WriteRequestLog(w io.Writer, reqs []sources.Request) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	buf := make([]byte, 0, 256)
	var users *[sources.UserGroups]string // named once a record has a user
	for i := range reqs {
		r := &reqs[i]
		buf = append(buf[:0], `{"ts":`...)
		buf = strconv.AppendFloat(buf, r.Time, 'f', 6, 64)
		buf = append(buf, `,"status":"`...)
		buf = append(buf, r.Status.String()...)
		buf = append(buf, '"')
		buf = appendSeconds(buf, "ttft_s", r.TTFT)
		buf = appendSeconds(buf, "tpot_s", r.TPOT)
		buf = appendSeconds(buf, "e2e_s", r.E2E)
		buf = appendSeconds(buf, "max_itl_s", r.MaxITL)
		buf = appendCount(buf, "prompt_tokens", r.PromptTokens)
		buf = appendCount(buf, "output_tokens", r.OutputTokens)
		buf = appendCount(buf, "cached_tokens", r.CachedTokens)
		buf = appendString(buf, "class", r.Class)
		buf = appendString(buf, "replica", r.Replica)
		if r.Attempt > 0 {
			buf = append(buf, `,"attempt":`...)
			buf = strconv.AppendInt(buf, int64(r.Attempt), 10)
		}
		switch r.Quality {
		case sources.QualityOK:
			buf = append(buf, `,"quality_ok":true`...)
		case sources.QualityBad:
			buf = append(buf, `,"quality_ok":false`...)
		}
		if r.CanceledBy != sources.CanceledByUnknown {
			buf = append(buf, `,"canceled_by":"`...)
			buf = append(buf, r.CanceledBy.String()...)
			buf = append(buf, '"')
		}
		if r.User != 0 {
			if users == nil {
				names := sources.UserNames()
				users = &names
			}
			buf = appendString(buf, "user", users[r.User-1])
		}
		buf = append(buf, "}\n"...)
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func appendSeconds(buf []byte, key string, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return buf
	}
	buf = append(buf, `,"`...)
	buf = append(buf, key...)
	buf = append(buf, `":`...)
	return strconv.AppendFloat(buf, v, 'f', 6, 64)
}

func appendCount(buf []byte, key string, v int64) []byte {
	if v < 0 {
		return buf
	}
	buf = append(buf, `,"`...)
	buf = append(buf, key...)
	buf = append(buf, `":`...)
	return strconv.AppendInt(buf, v, 10)
}

func appendString(buf []byte, key, v string) []byte {
	if v == "" {
		return buf
	}
	q, _ := json.Marshal(v) // a string always marshals
	buf = append(buf, `,"`...)
	buf = append(buf, key...)
	buf = append(buf, `":`...)
	return append(buf, q...)
}

// WriteCostCSV writes cost records as CSV with the header
// start,end,arm,replica,accelerator_usd,host_usd,network_usd,idle_reserve_usd;
// start and end are RFC 3339 UTC, amounts USD with 6 decimals.
func WriteCostCSV(w io.Writer, recs []CostRecord) error {
	bw := bufio.NewWriter(w)
	if _, err := bw.WriteString("start,end,arm,replica,accelerator_usd,host_usd,network_usd,idle_reserve_usd\n"); err != nil {
		return err
	}
	for _, c := range recs {
		fmt.Fprintf(bw, "%s,%s,%s,%s,%.6f,%.6f,%.6f,%.6f\n", rfc3339(c.Start), rfc3339(c.End), c.Arm,
			csvField(c.Replica), c.AcceleratorUSD, c.HostUSD, c.NetworkUSD, c.IdleReserveUSD)
	}
	return bw.Flush()
}

func rfc3339(unix float64) string {
	sec, frac := math.Modf(unix)
	return time.Unix(int64(sec), int64(math.Round(frac*1e9))).UTC().Format(time.RFC3339Nano)
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\r\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// WriteSummary renders a run's summary as text: per arm the request
// accounting, retry amplification, utilisation, tokens/s and goodput, then
// goodput per minute.
func WriteSummary(w io.Writer, s Summary) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "scenario %s  seed %d  window %s + %s  SLO TTFT ≤ %s, TPOT ≤ %s\n",
		s.Scenario, s.Seed, s.Start.UTC().Format(time.RFC3339), s.Duration, s.SLO.TTFT, s.SLO.TPOT)
	fmt.Fprintf(bw, "%-22s %12s %12s\n", "", "baseline", "canary")
	b, c := s.Baseline, s.Canary
	row := func(name string, f func(a ArmSummary) string) {
		fmt.Fprintf(bw, "%-22s %12s %12s\n", name, f(b), f(c))
	}
	itoaS := func(v int) string { return strconv.Itoa(v) }
	row("replicas", func(a ArmSummary) string { return itoaS(a.Replicas) })
	row("offered", func(a ArmSummary) string { return itoaS(a.Offered) })
	row("  first attempts", func(a ArmSummary) string { return itoaS(a.FirstAttempts) })
	row("admitted", func(a ArmSummary) string { return itoaS(a.Admitted) })
	row("rejected", func(a ArmSummary) string { return itoaS(a.Rejected) })
	row("canceled", func(a ArmSummary) string { return itoaS(a.Canceled) })
	row("failed", func(a ArmSummary) string { return itoaS(a.Failed) })
	row("completed", func(a ArmSummary) string { return itoaS(a.Completed) })
	row("good", func(a ArmSummary) string { return itoaS(a.Good) })
	row("retry amplification", func(a ArmSummary) string { return strconv.FormatFloat(a.RetryAmplification, 'f', 3, 64) })
	row("mean GPU utilisation", func(a ArmSummary) string { return strconv.FormatFloat(100*a.MeanGPUUtil, 'f', 1, 64) + "%" })
	row("tokens/s", func(a ArmSummary) string { return strconv.FormatFloat(a.TokensPerSecond, 'f', 0, 64) })
	row("goodput (req/s)", func(a ArmSummary) string { return strconv.FormatFloat(a.GoodputRPS, 'f', 2, 64) })
	row("SLO attainment", func(a ArmSummary) string {
		if a.Offered == 0 {
			return "-"
		}
		return strconv.FormatFloat(100*float64(a.Good)/float64(a.Offered), 'f', 1, 64) + "%"
	})
	fmt.Fprintf(bw, "\nper minute: offered and good req/s, median TTFT (s), mean queue per replica, tokens/s, GPU utilisation\n")
	fmt.Fprintf(bw, "%6s  %7s %7s %6s %6s %6s %5s   %7s %7s %6s %6s %6s %5s\n", "minute",
		"b.offer", "b.good", "b.ttft", "b.queue", "b.tok/s", "b.gpu", "c.offer", "c.good", "c.ttft", "c.queue", "c.tok/s", "c.gpu")
	for m := range max(len(b.Minutes), len(c.Minutes)) {
		cell := func(a ArmSummary) string {
			if m >= len(a.Minutes) {
				return fmt.Sprintf("%7s %7s %6s %6s %6s %5s", "", "", "", "", "", "")
			}
			x := a.Minutes[m]
			ttft := "-"
			if !math.IsNaN(x.TTFTP50) {
				ttft = strconv.FormatFloat(x.TTFTP50, 'f', 2, 64)
			}
			return fmt.Sprintf("%7.2f %7.2f %6s %6.1f %6.0f %4.0f%%", x.OfferedRPS, x.GoodputRPS, ttft, x.Waiting, x.TokensPS, 100*x.GPUUtil)
		}
		fmt.Fprintf(bw, "%6d  %s   %s\n", m, cell(b), cell(c))
	}
	return bw.Flush()
}
