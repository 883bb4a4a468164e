package tui

import (
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/goodput-dev/goodput/analysis"
)

// styles are built from one renderer so that NO_COLOR (an Ascii profile)
// removes every escape sequence from the output.
type styles struct {
	r            *lipgloss.Renderer
	title        lipgloss.Style
	tab          lipgloss.Style
	tabActive    lipgloss.Style
	dim          lipgloss.Style
	bold         lipgloss.Style
	selected     lipgloss.Style
	pass         lipgloss.Style
	fail         lipgloss.Style
	inconclusive lipgloss.Style
	warn         lipgloss.Style
	errText      lipgloss.Style
	baseline     lipgloss.Style
	canary       lipgloss.Style
	zone         lipgloss.Style
	naive        lipgloss.Style
}

func newStyles(out io.Writer, noColor bool) styles {
	if out == nil {
		out = io.Discard
	}
	r := lipgloss.NewRenderer(out)
	if noColor {
		r.SetColorProfile(termenv.Ascii)
	}
	// the background is not asked of the terminal (a terminal that does not
	// answer stalls the query for seconds, and the program owns the input
	// by the time a colour is resolved): COLORFGBG says it when set, else
	// dark; the adaptive greys differ by two shades either way
	r.SetHasDarkBackground(darkBackground(os.Getenv("COLORFGBG")))
	return newStylesFrom(r)
}

// darkBackground reads COLORFGBG ("fg;bg", bg 0–6 or 8 dark, 7 or 9–15
// light); unknown means dark.
func darkBackground(colorFGBG string) bool {
	i := strings.LastIndexByte(colorFGBG, ';')
	if i < 0 {
		return true
	}
	bg, err := strconv.Atoi(colorFGBG[i+1:])
	if err != nil {
		return true
	}
	return bg != 7 && (bg < 9 || bg > 15)
}

// newStylesFrom builds the styles on renderer r.
func newStylesFrom(r *lipgloss.Renderer) styles {
	return styles{
		r:            r,
		title:        r.NewStyle().Bold(true),
		tab:          r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "244", Dark: "246"}),
		tabActive:    r.NewStyle().Bold(true).Underline(true),
		dim:          r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "244", Dark: "242"}),
		bold:         r.NewStyle().Bold(true),
		selected:     r.NewStyle().Reverse(true),
		pass:         r.NewStyle().Foreground(lipgloss.Color("2")).Bold(true),
		fail:         r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true),
		inconclusive: r.NewStyle().Foreground(lipgloss.Color("3")).Bold(true),
		warn:         r.NewStyle().Foreground(lipgloss.Color("3")),
		errText:      r.NewStyle().Foreground(lipgloss.Color("1")),
		baseline:     r.NewStyle().Foreground(lipgloss.Color("4")),
		canary:       r.NewStyle().Foreground(lipgloss.Color("208")),
		zone:         r.NewStyle().Foreground(lipgloss.Color("1")),
		naive:        r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "244", Dark: "242"}),
	}
}

// verdict returns the style of a verdict; unknown verdicts look inconclusive.
func (s styles) verdict(v analysis.Verdict) lipgloss.Style {
	switch v {
	case analysis.Pass:
		return s.pass
	case analysis.Fail:
		return s.fail
	}
	return s.inconclusive
}
