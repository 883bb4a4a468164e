package tui

import (
	"math"
	"testing"
)

// TestDataRange: the y-axis spans the data, so a 5% gap fills the chart
// instead of being squeezed near the top of a 0 … max axis.
func TestDataRange(t *testing.T) {
	lo, hi := dataRange([]float64{100, 105, 102})
	if math.Abs(lo-99.75) > 1e-9 || math.Abs(hi-105.25) > 1e-9 {
		t.Errorf("range [%v, %v], want [99.75, 105.25]", lo, hi)
	}
	c := newCanvas(10, 9)
	if r100, r105 := c.row(100, lo, hi), c.row(105, lo, hi); r100-r105 < 6 {
		t.Errorf("a 5%% gap spans %d of 9 rows", r100-r105)
	}
	if lo, hi := dataRange([]float64{3, 3}); !(lo < 3 && hi > 3) {
		t.Errorf("constant data: [%v, %v]", lo, hi)
	}
	if lo, hi := dataRange(nil); lo != 0 || hi != 1 {
		t.Errorf("no data: [%v, %v]", lo, hi)
	}
}
