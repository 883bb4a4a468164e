package analysis

import (
	"strings"
	"testing"

	"github.com/goodput-dev/goodput/analysis/normalize"
)

// TestAcceptMSER: MSER's own cut is taken when truncating there at least
// halves the standard error of the mean and the start is slower — whether
// the changepoint check found no cut or an earlier one (a gradual ramp's
// steepest point, not its end) — and never otherwise.
func TestAcceptMSER(t *testing.T) {
	// 60 buckets: 2 s for the first 40 (a slow start easing off), 0.4 s after
	slow := make([]float64, 60)
	for i := range slow {
		slow[i] = 0.4
		if i < 40 {
			slow[i] = 2 - 1.5*float64(i)/40
		}
	}
	fast := make([]float64, 60)
	for i := range fast {
		fast[i] = 2 - slow[i] + 0.4
	}
	cases := []struct {
		name    string
		in      normalize.WarmupResult
		series  []float64
		wantCut int
		reason  string
	}{
		{"no changepoint, MSER halves the SE", normalize.WarmupResult{MSERCut: 40, MSERSE: 0.01, MSERSE0: 0.1}, slow, 40, "cut 40 buckets: MSER truncation"},
		{"changepoint earlier than MSER", normalize.WarmupResult{Cut: 15, Confirmed: true, MSERCut: 40, MSERSE: 0.01, MSERSE0: 0.1, Reason: "cut the first 15 buckets"}, slow, 40, "extended to MSER's 40 buckets"},
		{"changepoint later than MSER", normalize.WarmupResult{Cut: 40, Confirmed: true, MSERCut: 15, MSERSE: 0.01, MSERSE0: 0.1, Reason: "cut the first 40 buckets"}, slow, 40, "cut the first 40 buckets"},
		{"MSER lowers the SE too little", normalize.WarmupResult{Cut: 15, Confirmed: true, MSERCut: 40, MSERSE: 0.06, MSERSE0: 0.1, Reason: "cut the first 15 buckets"}, slow, 15, "cut the first 15 buckets"},
		{"the start is faster", normalize.WarmupResult{MSERCut: 40, MSERSE: 0.01, MSERSE0: 0.1, Reason: "no cut"}, fast, 0, "no cut"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := acceptMSER(c.in, c.series, "buckets", "TTFT")
			if got.Cut != c.wantCut {
				t.Errorf("cut %d, want %d (%s)", got.Cut, c.wantCut, got.Reason)
			}
			if !strings.Contains(got.Reason, c.reason) {
				t.Errorf("reason %q does not say %q", got.Reason, c.reason)
			}
		})
	}
}
