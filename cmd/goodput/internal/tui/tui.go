// Package tui is the interactive terminal review of a goodput report: a
// bubbletea program with one child model per view (summary, gate detail,
// distributions, time, warnings and measurement spec, help) that ends with
// an optional review decision written as an analysis.ReviewRecord.
//
// Update never performs I/O: writing the review record happens in a
// tea.Cmd. All report text is treated as untrusted and stripped of control
// characters and escape sequences before it is drawn.
package tui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/goodput-dev/goodput/analysis"
)

// Minimum terminal size the views are laid out for; smaller terminals get
// a one-line notice instead of a garbled layout.
const (
	minWidth  = 50
	minHeight = 12
	// defaultWidth and defaultHeight are assumed until the first
	// tea.WindowSizeMsg when Options gives no size.
	defaultWidth  = 80
	defaultHeight = 24
)

// Options configures a review. Report, ReportBytes, RecordPath and Now are
// required.
type Options struct {
	Report      *analysis.Report
	ReportBytes []byte // the report file's bytes; their SHA-256 goes into the record
	ReportName  string // shown in the header, usually the report's path
	RecordPath  string // where the review record is written (atomically)
	Reviewer    string // the reviewer's name, from $USER; "" is recorded as "unknown"
	// Now is the clock; the record's "at" is Now() in UTC, RFC 3339.
	Now func() time.Time
	// NoColor renders without any colour or text attributes (NO_COLOR).
	NoColor bool
	// Output is the terminal the program draws on; it is only used to pick
	// the colour profile and may be nil (no colour).
	Output io.Writer
	// Width and Height, when > 0, are the terminal size before the first
	// tea.WindowSizeMsg arrives (default 80×24).
	Width, Height int
	// Context bounds the record write; nil means context.Background().
	Context context.Context
	// WriteFile replaces the atomic file write (tests inject failures);
	// nil means write to a temporary file in the same directory and rename.
	WriteFile func(ctx context.Context, path string, data []byte) error
	// ReadFile reads an earlier review record at RecordPath when the
	// program starts (tests inject it); nil means os.ReadFile.
	ReadFile func(ctx context.Context, path string) ([]byte, error)
	// AppendFile appends one line to the decision history beside the
	// record (HistoryPath), so a later decision never erases an earlier
	// one. nil means an O_APPEND write to the file when WriteFile is nil
	// as well, and no history when only WriteFile is injected.
	AppendFile func(ctx context.Context, path string, line []byte) error
}

// HistoryPath is the append-only decision history beside a review record:
// run.review.json → run.review.history.jsonl, one JSON record per line.
func HistoryPath(record string) string {
	return strings.TrimSuffix(record, ".json") + ".history.jsonl"
}

type viewID int

const (
	viewSummary viewID = iota
	viewDetail
	viewDist
	viewTime
	viewInternal // offered only when the report has internal work
	viewSpec
	numViews
)

func (v viewID) String() string {
	switch v {
	case viewSummary:
		return "Summary"
	case viewDetail:
		return "Gate"
	case viewDist:
		return "Distributions"
	case viewTime:
		return "Time"
	case viewInternal:
		return "Internal work"
	case viewSpec:
		return "Warnings & spec"
	}
	return "?"
}

// common is what every child view reads.
type common struct {
	rep        *analysis.Report // sanitized copy
	st         styles
	keys       keyMap
	reportName string
	recordPath string
}

// recorder holds what a review record is made of.
type recorder struct {
	ctx       context.Context
	now       func() time.Time
	reviewer  string
	reportSHA string
	verdict   analysis.Verdict // the report's verdict as written
	path      string
	write     func(ctx context.Context, path string, data []byte) error
	read      func(ctx context.Context, path string) ([]byte, error)
	appendTo  func(ctx context.Context, path string, line []byte) error // nil: no history
}

// Model is the review program's top-level model.
type Model struct {
	c   *common
	rec recorder

	width, height int
	active        viewID
	showHelp      bool
	help          helpModel

	summary  summaryModel
	detail   detailModel
	dist     distModel
	timeline timeModel
	internal internalModel
	spec     specModel
	decision decisionModel

	status    string
	statusErr bool

	writing  bool // a record write is in flight
	quitting bool // quit asked while writing; quit when it lands
	done     bool // tea.Quit has been returned

	recorded *analysis.ReviewRecord
	writeErr error
}

// New builds the review model. It fails when a required option is missing.
func New(o Options) (Model, error) {
	if o.Report == nil {
		return Model{}, errors.New("tui: no report")
	}
	if o.Now == nil {
		return Model{}, errors.New("tui: no clock (Options.Now)")
	}
	if o.RecordPath == "" {
		return Model{}, errors.New("tui: no record path")
	}
	ctx := o.Context
	if ctx == nil {
		ctx = context.Background()
	}
	write := o.WriteFile
	if write == nil {
		write = writeFileAtomic
	}
	read := o.ReadFile
	if read == nil {
		read = readFile
	}
	appendTo := o.AppendFile
	if appendTo == nil && o.WriteFile == nil {
		appendTo = appendLine
	}
	reviewer := o.Reviewer
	if reviewer == "" {
		reviewer = "unknown"
	}
	sum := sha256.Sum256(o.ReportBytes)
	st := newStyles(o.Output, o.NoColor)
	c := &common{
		rep:        sanitizeReport(o.Report),
		st:         st,
		keys:       newKeyMap(),
		reportName: clean(o.ReportName),
		recordPath: clean(o.RecordPath),
	}
	w, h := defaultWidth, defaultHeight
	if o.Width > 0 && o.Height > 0 {
		w, h = o.Width, o.Height
	}
	m := Model{
		c: c,
		rec: recorder{
			ctx: ctx, now: o.Now, reviewer: reviewer, reportSHA: hex.EncodeToString(sum[:]),
			verdict: o.Report.Verdict, path: o.RecordPath, write: write, read: read, appendTo: appendTo,
		},
		help:     newHelp(st),
		summary:  newSummary(c),
		decision: newDecision(st),
	}
	m = m.resize(w, h)
	return m, nil
}

// Init implements tea.Model: it looks for an earlier review record at the
// record path, so the reviewer knows a decision would replace it.
func (m Model) Init() tea.Cmd { return readRecordCmd(m.rec.ctx, m.rec.read, m.rec.path) }

// Recorded returns the review record written during the session, if any.
func (m Model) Recorded() (analysis.ReviewRecord, bool) {
	if m.recorded == nil {
		return analysis.ReviewRecord{}, false
	}
	return *m.recorded, true
}

// WriteErr is the error of the last failed record write, if it was not
// followed by a successful one.
func (m Model) WriteErr() error { return m.writeErr }

// RecordPath is where a decision is written.
func (m Model) RecordPath() string { return m.rec.path }

// Messages returned by commands.
type (
	recordWrittenMsg struct {
		path string
		rec  analysis.ReviewRecord
	}
	recordFailedMsg struct{ err error }
	// previousRecordMsg carries the record found at the record path when
	// the review started.
	previousRecordMsg struct {
		rec analysis.ReviewRecord
		err error
	}
)

func (m Model) resize(w, h int) Model {
	m.width, m.height = w, h
	m.help.bar.Width = w
	m.decision.input.Width = max(10, w-30)
	m.summary.filter.Width = max(10, w-30)
	m.summary = m.summary.setRows(m.c, m.bodyHeight())
	return m
}

func (m Model) bodyHeight() int { return max(1, m.height-4) }

// Update implements tea.Model. It only changes state; the record write is
// returned as a command.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		return m.resize(msg.Width, msg.Height), nil
	case recordWrittenMsg:
		m.writing = false
		rec := msg.rec
		m.recorded = &rec
		m.writeErr = nil
		m.status = fmt.Sprintf("%s recorded in %s", rec.Decision, clean(msg.path))
		if rec.Overrides {
			m.status += fmt.Sprintf(" (overrides the %s verdict)", strings.ToUpper(clean(string(rec.ReportVerdict))))
		}
		m.statusErr = false
		return m.finishQuit()
	case recordFailedMsg:
		m.writing = false
		m.writeErr = msg.err
		m.status = "review record not written: " + clean(msg.err.Error())
		m.statusErr = true
		return m.finishQuit()
	case previousRecordMsg:
		if m.status != "" || m.writing || m.recorded != nil {
			return m, nil // the reviewer has moved on; do not cover their status
		}
		if msg.err != nil {
			m.status = "the existing review record is unreadable (a decision replaces it): " + clean(msg.err.Error())
			m.statusErr = true
			return m, nil
		}
		r := msg.rec
		m.status = fmt.Sprintf("earlier decision in %s: %s by %s at %s; a new decision replaces it",
			m.c.recordPath, clean(r.Decision), clean(r.Reviewer), clean(r.At))
		if r.ReportSHA256 != m.rec.reportSHA {
			m.status = fmt.Sprintf("%s holds a decision on a different report (sha256 differs); a new decision replaces it", m.c.recordPath)
			m.statusErr = true
		}
		return m, nil
	case tea.KeyMsg:
		return m.updateKey(msg)
	}
	return m, nil
}

func (m Model) finishQuit() (tea.Model, tea.Cmd) {
	if m.quitting {
		m.done = true
		return m, tea.Quit
	}
	return m, nil
}

func (m Model) quit() (tea.Model, tea.Cmd) {
	if m.writing {
		m.quitting = true
		m.status = "writing the review record before quitting…"
		return m, nil
	}
	m.done = true
	return m, tea.Quit
}

func (m Model) updateKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	// Keys typed faster than the terminal is read arrive as one message
	// ("jj"); handle them one by one so each acts as a key. Pastes stay
	// whole (they are text for an input).
	if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
		var cmds []tea.Cmd
		var next tea.Model = m
		for _, r := range msg.Runes {
			var cmd tea.Cmd
			next, cmd = next.(Model).updateKey(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt})
			cmds = append(cmds, cmd)
		}
		return next, tea.Batch(cmds...)
	}
	k := m.c.keys
	if msg.Type == tea.KeyCtrlC {
		return m.quit()
	}
	if m.decision.active {
		var submit bool
		var cmd tea.Cmd
		m.decision, cmd, submit = m.decision.update(msg, m.rec.verdict)
		if !submit {
			return m, cmd
		}
		return m.submit()
	}
	if m.summary.filtering {
		var cmd tea.Cmd
		m.summary, cmd = m.summary.updateFilter(msg, m.c)
		return m, cmd
	}
	if m.showHelp {
		switch {
		case key.Matches(msg, k.Help, k.Back):
			m.showHelp = false
			return m, nil
		case key.Matches(msg, k.Quit):
			return m.quit()
		}
		return m, nil
	}
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.showHelp = true
		return m, nil
	case key.Matches(msg, k.NextView):
		return m.switchTo(m.stepView(1)), nil
	case key.Matches(msg, k.PrevView):
		return m.switchTo(m.stepView(numViews - 1)), nil
	case key.Matches(msg, k.Approve):
		return m.openDecision(decisionApprove)
	case key.Matches(msg, k.Reject):
		return m.openDecision(decisionReject)
	case key.Matches(msg, k.Filter):
		m.active = viewSummary
		var cmd tea.Cmd
		m.summary, cmd = m.summary.startFilter()
		return m, cmd
	case key.Matches(msg, k.Enter) && m.active == viewSummary:
		if g, ok := m.summary.selected(); ok {
			m.detail = m.detail.show(g)
			m.active = viewDetail
		}
		return m, nil
	case key.Matches(msg, k.Back):
		if m.active != viewSummary {
			m.active = viewSummary
		} else if m.summary.filter.Value() != "" {
			m.summary = m.summary.clearFilter(m.c)
		}
		return m, nil
	}
	switch m.active {
	case viewSummary:
		m.summary = m.summary.update(msg, m.c)
	case viewDetail:
		m.detail = m.detail.update(msg, m.c, m.summary.visible)
	case viewDist:
		m.dist = m.dist.update(msg, m.c)
	case viewTime:
		m.timeline = m.timeline.update(msg, m.c)
	case viewInternal:
		m.internal = m.internal.update(msg, m.c)
	case viewSpec:
		m.spec = m.spec.update(msg, m.c)
	}
	return m, nil
}

// offers reports whether view v is available for this report.
func (m Model) offers(v viewID) bool {
	return v != viewInternal || hasInternal(m.c.rep)
}

// stepView is the next offered view by, modulo numViews, from the active one.
func (m Model) stepView(by viewID) viewID {
	v := m.active
	for range numViews {
		v = (v + by) % numViews
		if m.offers(v) {
			break
		}
	}
	return v
}

func (m Model) switchTo(v viewID) Model {
	if v == viewDetail {
		if g, ok := m.summary.selected(); ok && !m.detail.opened {
			m.detail = m.detail.show(g)
		}
	}
	m.active = v
	return m
}

func (m Model) openDecision(d string) (tea.Model, tea.Cmd) {
	if m.writing {
		m.status = "a review record is being written; wait for it"
		m.statusErr = true
		return m, nil
	}
	var cmd tea.Cmd
	m.decision, cmd = m.decision.open(d, m.rec.verdict)
	m.status = ""
	return m, cmd
}

// submit turns the decision into a record and returns the command that
// writes it.
func (m Model) submit() (tea.Model, tea.Cmd) {
	rec := analysis.ReviewRecord{
		Reviewer:      m.rec.reviewer,
		At:            m.rec.now().UTC().Format(time.RFC3339),
		ReportSHA256:  m.rec.reportSHA,
		Decision:      m.decision.decision,
		Note:          m.decision.note(),
		ReportVerdict: m.rec.verdict,
		Overrides:     overrides(m.decision.decision, m.rec.verdict),
	}
	m.decision = m.decision.close()
	m.writing = true
	m.status = "writing the review record…"
	m.statusErr = false
	return m, writeRecordCmd(m.rec.ctx, m.rec.write, m.rec.appendTo, m.rec.path, rec)
}

// View implements tea.Model: exactly height lines, none wider than width.
func (m Model) View() string {
	w, h := m.width, m.height
	if w < minWidth || h < minHeight {
		msg := fmt.Sprintf("terminal too small (%d×%d); the review needs at least %d×%d", w, h, minWidth, minHeight)
		return strings.Join(fit(strings.Split(ansi.Hardwrap(msg, max(w, 1), true), "\n"), w, h), "\n")
	}
	lines := make([]string, 0, h)
	lines = append(lines, m.header(w), m.tabs(w))
	bh := m.bodyHeight()
	var body []string
	if m.showHelp {
		body = m.help.view(m.c, w, bh)
	} else {
		switch m.active {
		case viewSummary:
			body = m.summary.view(m.c, w, bh)
		case viewDetail:
			body = m.detail.view(m.c, w, bh)
		case viewDist:
			body = m.dist.view(m.c, w, bh)
		case viewTime:
			body = m.timeline.view(m.c, w, bh)
		case viewInternal:
			body = m.internal.view(m.c, w, bh)
		case viewSpec:
			body = m.spec.view(m.c, w, bh)
		}
	}
	lines = append(lines, fit(body, w, bh)...)
	lines = append(lines, m.statusLine(w), m.help.footer(m.c))
	return strings.Join(fit(lines, w, h), "\n")
}

func (m Model) header(w int) string {
	st := m.c.st
	v := m.c.rep.Verdict
	s := st.title.Render("goodput review") + "  " + m.c.reportName + "  " +
		st.verdict(v).Render(strings.ToUpper(string(v)))
	if p := m.c.rep.Policy.Name; p != "" {
		s += st.dim.Render("  policy " + p)
	}
	if m.recorded != nil {
		s += "  " + st.bold.Render("["+pastTense(m.recorded.Decision)+"]")
	}
	return s
}

func pastTense(decision string) string {
	switch decision {
	case decisionApprove:
		return "approved"
	case decisionReject:
		return "rejected"
	}
	return clean(decision)
}

func (m Model) tabs(w int) string {
	st := m.c.st
	parts := make([]string, 0, numViews)
	for v := viewSummary; v < numViews; v++ {
		if !m.offers(v) {
			continue
		}
		name := v.String()
		if v == viewSpec && len(m.c.rep.Warnings) > 0 {
			name = fmt.Sprintf("Warnings (%d) & spec", len(m.c.rep.Warnings))
		}
		if v == m.active && !m.showHelp {
			parts = append(parts, st.tabActive.Render(name))
		} else {
			parts = append(parts, st.tab.Render(name))
		}
	}
	return strings.Join(parts, st.dim.Render(" │ "))
}

func (m Model) statusLine(w int) string {
	switch {
	case m.decision.active:
		return m.decision.view(m.c.st)
	case m.summary.filtering:
		return m.summary.filter.View()
	case m.status != "":
		if m.statusErr {
			return m.c.st.errText.Render(m.status)
		}
		return m.c.st.bold.Render(m.status)
	}
	return ""
}

// fit pads or cuts lines to exactly h lines of at most w cells.
func fit(lines []string, w, h int) []string {
	out := make([]string, h)
	for i := 0; i < h; i++ {
		if i < len(lines) {
			l := lines[i]
			if ansi.StringWidth(l) > w {
				l = ansi.Truncate(l, w, "…")
			}
			out[i] = l
		}
	}
	return out
}

// pad right-pads (or cuts) a possibly styled string to exactly w cells.
func pad(s string, w int) string {
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
}

// padLeft right-aligns s in w cells.
func padLeft(s string, w int) string {
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return strings.Repeat(" ", w-n) + s
}

// wrap word-wraps plain text to w cells; continuation lines start with
// indent (and are wrapped to the width left after it).
func wrap(s string, w int, indent string) []string {
	if w <= len(indent)+1 {
		return []string{s}
	}
	first := strings.Split(ansi.Wrap(s, w, ""), "\n")
	if len(first) == 1 {
		return first
	}
	rest := strings.TrimSpace(strings.Join(first[1:], " "))
	lines := []string{strings.TrimRight(first[0], " ")}
	for _, l := range strings.Split(ansi.Wrap(rest, w-len(indent), ""), "\n") {
		lines = append(lines, indent+strings.TrimRight(l, " "))
	}
	return lines
}

// scroll clamps an offset into [0, n-h] and returns the visible slice.
func scroll(lines []string, off, h int) ([]string, int) {
	maxOff := max(0, len(lines)-h)
	off = max(0, min(off, maxOff))
	end := min(len(lines), off+h)
	return lines[off:end], off
}
