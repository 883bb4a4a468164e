package analysis

import (
	"math"

	"github.com/goodput-dev/goodput/analysis/stats"
)

// diagnostics runs Mann-Whitney U with the Hodges-Lehmann shift on each
// latency of completed requests in the analysed window. They treat requests
// as independent, which batching makes untrue, so they are shown with
// Benjamini-Hochberg q-values and never gate.
func diagnostics(b, c *armData) []Diagnostic {
	var out []Diagnostic
	var ps []float64
	for _, lat := range []string{"ttft", "tpot", "e2e"} {
		xb, xc := b.pooled(lat), c.pooled(lat)
		if len(xb) == 0 || len(xc) == 0 {
			continue
		}
		mw := stats.MannWhitney(xc, xb)
		est, ci := stats.HodgesLehmann(xc, xb, 0.95)
		d := Diagnostic{Metric: lat, Method: "mann-whitney", Statistic: Num(mw.U), PValue: Num(mw.P),
			Estimate: Num(est), Interval: [2]Num{Num(ci.Lo), Num(ci.Hi)},
			NBaseline: int64(len(xb)), NCanary: int64(len(xc)),
			Note: "U of the canary; Hodges-Lehmann shift canary − baseline in seconds with its 95% interval; requests treated as independent"}
		if mw.Exact {
			d.Note += "; exact distribution"
		}
		out = append(out, d)
		ps = append(ps, mw.P)
	}
	q := stats.BH(ps)
	for i := range out {
		out[i].QValue = Num(q[i])
		if math.IsNaN(float64(out[i].PValue)) {
			out[i].QValue = Num(math.NaN())
		}
	}
	if out == nil {
		out = []Diagnostic{}
	}
	return out
}
