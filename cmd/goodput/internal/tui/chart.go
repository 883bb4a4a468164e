package tui

import (
	"math"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// Cell codes of a plot canvas: which arms drew there, or shading.
const (
	cellBaseline uint8 = 1 << iota
	cellCanary
	cellShade
	cellDelta // canary − baseline
	cellBand  // the difference's interval band
	cellZero  // the zero line of a difference chart
)

// canvas is a character grid for terminal charts; row 0 is the top.
type canvas struct {
	w, h  int
	cells []uint8
}

func newCanvas(w, h int) *canvas {
	if w < 1 {
		w = 1
	}
	if h < 1 {
		h = 1
	}
	return &canvas{w: w, h: h, cells: make([]uint8, w*h)}
}

func (c *canvas) set(x, y int, code uint8) {
	if x < 0 || y < 0 || x >= c.w || y >= c.h {
		return
	}
	c.cells[y*c.w+x] |= code
}

// shadeColumn marks a whole column (e.g. a warm-up bucket) as shaded.
func (c *canvas) shadeColumn(x int) {
	for y := 0; y < c.h; y++ {
		c.set(x, y, cellShade)
	}
}

// trace draws one arm: rows[x] is the row at column x, or -1 for no data.
// Consecutive columns are joined vertically so steep parts stay visible.
func (c *canvas) trace(rows []int, code uint8) {
	prev := -1
	for x, y := range rows {
		if y < 0 {
			prev = -1
			continue
		}
		if prev >= 0 {
			lo, hi := prev, y
			if lo > hi {
				lo, hi = hi, lo
			}
			// fill the gap in this column, leaving the previous point's row
			for yy := lo; yy <= hi; yy++ {
				if yy != prev {
					c.set(x, yy, code)
				}
			}
		}
		c.set(x, y, code)
		prev = y
	}
}

// row maps a value in [lo, hi] to a canvas row (hi at the top).
func (c *canvas) row(v, lo, hi float64) int {
	if bad(v) || hi <= lo {
		return -1
	}
	f := (v - lo) / (hi - lo)
	f = math.Max(0, math.Min(1, f))
	return c.h - 1 - int(math.Round(f*float64(c.h-1)))
}

// render returns the canvas as styled lines; runs of equal cells share
// one style call.
func (c *canvas) render(st styles) []string {
	lines := make([]string, c.h)
	var b strings.Builder
	for y := 0; y < c.h; y++ {
		b.Reset()
		x := 0
		for x < c.w {
			code := c.cells[y*c.w+x]
			end := x + 1
			for end < c.w && c.cells[y*c.w+end] == code {
				end++
			}
			glyph, style := cellLook(st, code)
			run := strings.Repeat(glyph, end-x)
			if style != nil {
				run = style.Render(run)
			}
			b.WriteString(run)
			x = end
		}
		lines[y] = b.String()
	}
	return lines
}

func cellLook(st styles, code uint8) (string, *lipgloss.Style) {
	switch {
	case code&cellBaseline != 0 && code&cellCanary != 0:
		return "*", &st.bold
	case code&cellBaseline != 0:
		return "o", &st.baseline
	case code&cellCanary != 0:
		return "+", &st.canary
	case code&cellDelta != 0:
		return "#", &st.bold
	case code&cellShade != 0:
		return ".", &st.dim
	case code&cellBand != 0:
		return ":", &st.canary
	case code&cellZero != 0:
		return "-", &st.dim
	}
	return " ", nil
}

// legend is the arms' key shown under every chart.
func legend(st styles) string {
	return st.baseline.Render("o baseline") + "  " + st.canary.Render("+ canary") + "  " + st.bold.Render("* both")
}

// axisLabels places labels at columns on a line of width w, skipping any
// that would overlap an earlier one.
func axisLabels(w int, cols []int, labels []string) string {
	line := []rune(strings.Repeat(" ", w))
	taken := make([]bool, w)
	for i, col := range cols {
		lab := []rune(labels[i])
		start := col - len(lab)/2
		if start < 0 {
			start = 0
		}
		if start+len(lab) > w {
			start = w - len(lab)
		}
		if start < 0 {
			continue
		}
		free := true
		for j := max(0, start-1); j < min(w, start+len(lab)+1); j++ {
			if taken[j] {
				free = false
				break
			}
		}
		if !free {
			continue
		}
		for j, r := range lab {
			line[start+j] = r
			taken[start+j] = true
		}
	}
	return strings.TrimRight(string(line), " ")
}

// niceStep returns a round tick step so that about n ticks cover span.
func niceStep(span float64, n int) float64 {
	if span <= 0 || bad(span) || n < 1 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}
