package tui

import (
	"strings"
	"unicode"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// lineInput is a one-line text field with the cursor at the end: typing
// and pasting append, backspace deletes a character, ctrl+w a word and
// ctrl+u the whole line. Control characters are never stored.
type lineInput struct {
	Prompt      string
	Placeholder string
	Limit       int // maximum characters; 0 = no limit
	Width       int // cells shown; longer values scroll to keep the end visible
	focused     bool
	value       []rune

	promptStyle, textStyle, placeholderStyle, cursorStyle lipgloss.Style
}

func newLineInput(st styles, prompt string, limit int) lineInput {
	return lineInput{
		Prompt: prompt, Limit: limit, Width: 40,
		promptStyle: st.bold, textStyle: st.r.NewStyle(), placeholderStyle: st.dim, cursorStyle: st.selected,
	}
}

func (l lineInput) Value() string { return string(l.value) }

func (l *lineInput) Reset() { l.value = nil }

func (l *lineInput) SetValue(s string) {
	l.value = nil
	l.insert([]rune(s))
}

func (l *lineInput) Focus() { l.focused = true }

func (l *lineInput) Blur() { l.focused = false }

func (l *lineInput) insert(rs []rune) {
	for _, r := range rs {
		if r == '\t' || r == '\n' || r == '\r' {
			r = ' '
		}
		if unicode.IsControl(r) || isBidiControl(r) {
			continue
		}
		if l.Limit > 0 && len(l.value) >= l.Limit {
			return
		}
		l.value = append(l.value, r)
	}
}

// Update edits the value; it never returns a command.
func (l lineInput) Update(msg tea.KeyMsg) lineInput {
	if !l.focused {
		return l
	}
	switch msg.Type {
	case tea.KeyRunes:
		l.value = append([]rune(nil), l.value...)
		l.insert(msg.Runes)
	case tea.KeySpace:
		l.value = append([]rune(nil), l.value...)
		l.insert([]rune{' '})
	case tea.KeyBackspace, tea.KeyCtrlH:
		if n := len(l.value); n > 0 {
			l.value = append([]rune(nil), l.value[:n-1]...)
		}
	case tea.KeyCtrlW:
		s := strings.TrimRight(string(l.value), " ")
		if i := strings.LastIndex(s, " "); i >= 0 {
			l.value = []rune(s[:i+1])
		} else {
			l.value = nil
		}
	case tea.KeyCtrlU:
		l.value = nil
	}
	return l
}

func (l lineInput) View() string {
	p := l.promptStyle.Render(l.Prompt)
	if len(l.value) == 0 {
		cur := ""
		if l.focused {
			cur = l.cursorStyle.Render(" ")
		}
		return p + cur + l.placeholderStyle.Render(l.Placeholder)
	}
	v := string(l.value)
	if w := max(1, l.Width-1); ansi.StringWidth(v) > w {
		v = ansi.TruncateLeft(v, ansi.StringWidth(v)-w+1, "…")
	}
	s := p + l.textStyle.Render(v)
	if l.focused {
		s += l.cursorStyle.Render(" ")
	}
	return s
}
