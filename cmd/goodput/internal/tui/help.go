package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/help"
)

// helpModel renders the key map: the one-line footer and the full help
// view. Both are generated from keyMap, so they cannot drift from Update.
type helpModel struct {
	bar help.Model
}

func newHelp(st styles) helpModel {
	hm := help.New()
	hm.Styles.ShortKey = st.bold
	hm.Styles.ShortDesc = st.dim
	hm.Styles.ShortSeparator = st.dim
	hm.Styles.FullKey = st.bold
	hm.Styles.FullDesc = st.dim
	hm.Styles.FullSeparator = st.dim
	hm.Styles.Ellipsis = st.dim
	return helpModel{bar: hm}
}

// footer is the short help line under every view.
func (h helpModel) footer(c *common) string {
	return h.bar.ShortHelpView(c.keys.ShortHelp())
}

// view is the full help: every key, what each view shows, and how a
// decision is recorded.
func (h helpModel) view(c *common, _, _ int) []string {
	st := c.st
	lines := []string{st.title.Render("Keys"), ""}
	lines = append(lines, strings.Split(h.bar.FullHelpView(c.keys.FullHelp()), "\n")...)
	lines = append(lines, "",
		st.title.Render("Views"),
		"  Summary: verdict, gates (enter opens one), request accounting of both arms.",
		"  Gate: both arms, the interval against the margin, naive vs normalized, per class; ←/→ steps.",
		"  Distributions: TTFT and TPOT CDFs of completed requests (←/→ switches).",
		"  Time: goodput and TTFT p99 per bucket; dots mark the warm-up cut.",
		"  Warnings & spec: warnings, measurement spec, normalization, inputs, policy.",
		"",
		st.title.Render("Decision"),
		"  a approves, x rejects; type a note and press enter to write the review record to",
		"  "+c.recordPath+".",
		"  Approving over a FAIL or INCONCLUSIVE verdict is an override and needs a note.",
	)
	return lines
}
