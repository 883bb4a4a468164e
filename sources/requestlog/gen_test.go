package requestlog

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"
)

// writeLog writes n synthetic but realistic requests (the field set a
// serving client logs: RFC 3339 arrival times, a status mix with about 95%
// ok, lognormal latencies, token counts, classes and replica names) as JSONL,
// or CSV when csv is set. The same seed gives the same bytes.
func writeLog(w io.Writer, n int, seed uint64, csv bool) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	start := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	classes := []string{"chat", "chat", "chat", "long", "code"}
	if csv {
		bw.WriteString("ts,status,ttft_s,tpot_s,e2e_s,max_itl_s,prompt_tokens,output_tokens,cached_tokens,class,replica,attempt,quality_ok\n")
	}
	var buf []byte
	t := start
	for i := range n {
		t = t.Add(time.Duration(rng.ExpFloat64() * float64(50*time.Millisecond)))
		status := "ok"
		switch u := rng.Float64(); {
		case u < 0.02:
			status = "error"
		case u < 0.03:
			status = "timeout"
		case u < 0.04:
			status = "canceled"
		case u < 0.05:
			status = "rejected"
		}
		prompt := 20 + rng.IntN(4000)
		out := 1 + rng.IntN(600)
		cached := rng.IntN(prompt + 1)
		ttft := 0.05 * rng.ExpFloat64() * 4
		tpot := 0.02 + 0.01*rng.NormFloat64()*0.3
		if tpot < 0.001 {
			tpot = 0.001
		}
		e2e := ttft + tpot*float64(out-1)
		itl := tpot * (1 + 5*rng.Float64())
		class := classes[rng.IntN(len(classes))]
		replica := "vllm-canary-7f9c4-" + strconv.Itoa(rng.IntN(8))
		attempt := 1
		if rng.IntN(50) == 0 {
			attempt = 2
		}
		q := rng.IntN(20) != 0
		ts := t.Format("2006-01-02T15:04:05.000Z07:00")
		buf = buf[:0]
		if csv {
			buf = fmt.Appendf(buf, "%s,%s,", ts, status)
			switch status {
			case "ok":
				buf = fmt.Appendf(buf, "%.4f,%.5f,%.4f,%.4f,%d,%d,%d,%s,%s,%d,%t\n", ttft, tpot, e2e, itl, prompt, out, cached, class, replica, attempt, q)
			case "rejected":
				buf = fmt.Appendf(buf, ",,,,%d,,,%s,,%d,\n", prompt, class, attempt)
			default:
				buf = fmt.Appendf(buf, ",,%.4f,,%d,,,%s,%s,%d,\n", e2e, prompt, class, replica, attempt)
			}
		} else {
			buf = fmt.Appendf(buf, `{"ts":"%s","status":"%s"`, ts, status)
			switch status {
			case "ok":
				// every tenth line leaves tpot_s out to be derived
				if i%10 == 0 {
					buf = fmt.Appendf(buf, `,"ttft_s":%.4f,"e2e_s":%.4f`, ttft, e2e)
				} else {
					buf = fmt.Appendf(buf, `,"ttft_s":%.4f,"tpot_s":%.5f,"e2e_s":%.4f`, ttft, tpot, e2e)
				}
				buf = fmt.Appendf(buf, `,"max_itl_s":%.4f,"prompt_tokens":%d,"output_tokens":%d,"cached_tokens":%d,"class":"%s","replica":"%s","attempt":%d,"quality_ok":%t}`+"\n",
					itl, prompt, out, cached, class, replica, attempt, q)
			case "rejected":
				buf = fmt.Appendf(buf, `,"prompt_tokens":%d,"class":"%s","attempt":%d}`+"\n", prompt, class, attempt)
			default:
				buf = fmt.Appendf(buf, `,"e2e_s":%.4f,"prompt_tokens":%d,"class":"%s","replica":"%s","attempt":%d}`+"\n", e2e, prompt, class, replica, attempt)
			}
		}
		bw.Write(buf)
	}
	return bw.Flush()
}
