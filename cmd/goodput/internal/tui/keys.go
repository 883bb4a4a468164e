package tui

import "github.com/charmbracelet/bubbles/key"

// keyMap is the review's key bindings. It is data: the help view and the
// footer are generated from it, and Update matches against it.
type keyMap struct {
	Up       key.Binding
	Down     key.Binding
	Left     key.Binding
	Right    key.Binding
	Enter    key.Binding
	Back     key.Binding
	NextView key.Binding
	PrevView key.Binding
	Filter   key.Binding
	Approve  key.Binding
	Reject   key.Binding
	Help     key.Binding
	Quit     key.Binding
}

func newKeyMap() keyMap {
	return keyMap{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Left:     key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "prev gate/chart")),
		Right:    key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "next gate/chart")),
		Enter:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open gate")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		NextView: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		PrevView: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev view")),
		Filter:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter gates")),
		Approve:  key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "approve")),
		Reject:   key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "reject")),
		Help:     key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// ShortHelp is the footer line.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.NextView, k.Down, k.Enter, k.Filter, k.Approve, k.Reject, k.Help, k.Quit}
}

// FullHelp is the help view, one column per group.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Left, k.Right},
		{k.Enter, k.Back, k.NextView, k.PrevView, k.Filter},
		{k.Approve, k.Reject, k.Help, k.Quit},
	}
}
