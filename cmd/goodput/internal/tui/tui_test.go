package tui

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/goodput-dev/goodput/analysis"
)

// fakeWriter records writes instead of touching the disk.
type fakeWriter struct {
	mu    sync.Mutex
	calls map[string][]byte
	err   error
}

func (f *fakeWriter) write(_ context.Context, path string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if f.calls == nil {
		f.calls = map[string][]byte{}
	}
	f.calls[path] = append([]byte(nil), data...)
	return nil
}

func (f *fakeWriter) n() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func newModel(t testing.TB, rep *analysis.Report, fw *fakeWriter) Model {
	t.Helper()
	o := Options{
		Report: rep, ReportBytes: []byte("report bytes"), ReportName: "runs/report.json",
		RecordPath: "runs/report.review.json", Reviewer: "ada", Now: fixedNow, NoColor: true,
		Width: 100, Height: 30,
	}
	if fw != nil {
		o.WriteFile = fw.write
	}
	o.ReadFile = func(context.Context, string) ([]byte, error) { return nil, os.ErrNotExist }
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sha is the hex SHA-256 of s, computed independently of the model.
func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// keyMsg turns a key name into the message a terminal would produce.
func keyMsg(k string) tea.KeyMsg {
	switch k {
	case "enter":
		return tea.KeyMsg{Type: tea.KeyEnter}
	case "esc":
		return tea.KeyMsg{Type: tea.KeyEsc}
	case "tab":
		return tea.KeyMsg{Type: tea.KeyTab}
	case "shift+tab":
		return tea.KeyMsg{Type: tea.KeyShiftTab}
	case "up":
		return tea.KeyMsg{Type: tea.KeyUp}
	case "down":
		return tea.KeyMsg{Type: tea.KeyDown}
	case "left":
		return tea.KeyMsg{Type: tea.KeyLeft}
	case "right":
		return tea.KeyMsg{Type: tea.KeyRight}
	case "ctrl+c":
		return tea.KeyMsg{Type: tea.KeyCtrlC}
	case "backspace":
		return tea.KeyMsg{Type: tea.KeyBackspace}
	case "space":
		return tea.KeyMsg{Type: tea.KeySpace}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
}

// press feeds keys to Update and returns the model and every non-nil
// command returned (never run).
func press(m Model, keys ...string) (Model, []tea.Cmd) {
	var cmds []tea.Cmd
	for _, k := range keys {
		next, cmd := m.Update(keyMsg(k))
		m = next.(Model)
		if cmd != nil {
			cmds = append(cmds, cmd)
		}
	}
	return m, cmds
}

// typed splits text into one key per rune, spaces as space keys.
func typed(s string) []string {
	var ks []string
	for _, r := range s {
		if r == ' ' {
			ks = append(ks, "space")
		} else {
			ks = append(ks, string(r))
		}
	}
	return ks
}

func TestUpdateNavigation(t *testing.T) {
	rep := richReport()
	tests := []struct {
		name       string
		keys       []string
		view       viewID
		gate       string // selected gate in the summary
		detailGate string // gate shown in the detail view ("" = not checked)
		help       bool
		filtering  bool
		visible    int
		quit       bool
	}{
		{name: "start", view: viewSummary, gate: "slo_attainment", visible: 7},
		{name: "down j", keys: []string{"down", "j"}, view: viewSummary, gate: "ttft_p99_ratio", visible: 7},
		{name: "up clamps", keys: []string{"k", "up", "up"}, view: viewSummary, gate: "slo_attainment", visible: 7},
		{name: "down clamps", keys: []string{"j", "j", "j", "j", "j", "j", "j", "j", "j"}, view: viewSummary, gate: "rejected_share", visible: 7},
		{name: "enter opens detail", keys: []string{"j", "enter"}, view: viewDetail, gate: "goodput_per_replica", detailGate: "goodput_per_replica", visible: 7},
		{name: "detail next gate", keys: []string{"j", "enter", "l", "right"}, view: viewDetail, gate: "goodput_per_replica", detailGate: "tpot_p95_ratio", visible: 7},
		{name: "detail prev wraps", keys: []string{"enter", "h"}, view: viewDetail, gate: "slo_attainment", detailGate: "rejected_share", visible: 7},
		{name: "esc back", keys: []string{"j", "enter", "esc"}, view: viewSummary, gate: "goodput_per_replica", visible: 7},
		{name: "tab cycles", keys: []string{"tab", "tab"}, view: viewDist, gate: "slo_attainment", visible: 7},
		{name: "tab wraps", keys: []string{"tab", "tab", "tab", "tab", "tab"}, view: viewSummary, gate: "slo_attainment", visible: 7},
		{name: "shift+tab", keys: []string{"shift+tab"}, view: viewSpec, gate: "slo_attainment", visible: 7},
		{name: "tab to gate shows selection", keys: []string{"j", "j", "tab"}, view: viewDetail, gate: "ttft_p99_ratio", detailGate: "ttft_p99_ratio", visible: 7},
		{name: "help", keys: []string{"?"}, view: viewSummary, gate: "slo_attainment", help: true, visible: 7},
		{name: "help closes", keys: []string{"?", "esc"}, view: viewSummary, gate: "slo_attainment", visible: 7},
		{name: "help ignores j", keys: []string{"?", "j", "?"}, view: viewSummary, gate: "slo_attainment", visible: 7},
		{name: "filter live", keys: []string{"/", "r", "a", "t"}, view: viewSummary, gate: "ttft_p99_ratio", filtering: true, visible: 3},
		{name: "filter kept", keys: []string{"/", "r", "a", "t", "i", "o", "enter", "j"}, view: viewSummary, gate: "tpot_p95_ratio", visible: 2},
		{name: "filter q is text", keys: []string{"/", "q", "q"}, view: viewSummary, filtering: true, visible: 0},
		{name: "filter by verdict", keys: []string{"/", "f", "a", "i", "l", "enter"}, view: viewSummary, gate: "ttft_p99_ratio", visible: 1},
		{name: "filter esc clears", keys: []string{"/", "r", "a", "t", "esc"}, view: viewSummary, gate: "ttft_p99_ratio", visible: 7},
		{name: "filter from another view", keys: []string{"tab", "tab", "/", "e", "r", "r", "enter"}, view: viewSummary, gate: "error_rate", visible: 1},
		{name: "esc clears kept filter", keys: []string{"/", "e", "r", "r", "enter", "esc"}, view: viewSummary, gate: "error_rate", visible: 7},
		{name: "filter keeps selection", keys: []string{"j", "j", "/", "r", "enter"}, view: viewSummary, gate: "ttft_p99_ratio", visible: 6},
		{name: "q quits", keys: []string{"q"}, view: viewSummary, gate: "slo_attainment", visible: 7, quit: true},
		{name: "ctrl+c quits", keys: []string{"tab", "ctrl+c"}, view: viewDetail, gate: "slo_attainment", detailGate: "slo_attainment", visible: 7, quit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, cmds := press(newModel(t, rep, nil), tt.keys...)
			if m.active != tt.view {
				t.Errorf("view = %v, want %v", m.active, tt.view)
			}
			if g, ok := m.summary.selected(); tt.gate != "" && (!ok || rep.Metrics[g].Name != tt.gate) {
				t.Errorf("selected gate = %d (%v), want %s", g, ok, tt.gate)
			}
			if tt.detailGate != "" && rep.Metrics[m.detail.gate].Name != tt.detailGate {
				t.Errorf("detail gate = %s, want %s", rep.Metrics[m.detail.gate].Name, tt.detailGate)
			}
			if m.showHelp != tt.help || m.summary.filtering != tt.filtering {
				t.Errorf("help %v filtering %v, want %v %v", m.showHelp, m.summary.filtering, tt.help, tt.filtering)
			}
			if len(m.summary.visible) != tt.visible {
				t.Errorf("visible gates = %d, want %d", len(m.summary.visible), tt.visible)
			}
			if m.done != tt.quit {
				t.Errorf("quit = %v, want %v", m.done, tt.quit)
			}
			if tt.quit {
				if len(cmds) == 0 || cmds[len(cmds)-1]() != tea.Quit() {
					t.Errorf("quitting must return tea.Quit")
				}
			} else if len(cmds) != 0 {
				t.Errorf("navigation returned %d commands", len(cmds))
			}
		})
	}
}

func TestDecisionRecord(t *testing.T) {
	tests := []struct {
		name      string
		verdict   analysis.Verdict
		keys      []string
		wantWrite bool
		decision  string
		note      string
		overrides bool
		problem   string
	}{
		{name: "approve fail needs note", verdict: analysis.Fail, keys: []string{"a", "enter"}, problem: "a note is required to override the FAIL verdict"},
		{name: "approve fail blank note", verdict: analysis.Fail, keys: append([]string{"a"}, append(typed("   "), "enter")...), problem: "a note is required"},
		{name: "approve fail with note", verdict: analysis.Fail, keys: append([]string{"a"}, append(typed("ttft regression is the known cold cache"), "enter")...),
			wantWrite: true, decision: "approve", note: "ttft regression is the known cold cache", overrides: true},
		{name: "approve inconclusive needs note", verdict: analysis.Inconclusive, keys: []string{"a", "enter"}, problem: "INCONCLUSIVE"},
		{name: "reject fail agrees", verdict: analysis.Fail, keys: []string{"x", "enter"}, wantWrite: true, decision: "reject"},
		{name: "reject inconclusive agrees", verdict: analysis.Inconclusive, keys: []string{"x", "enter"}, wantWrite: true, decision: "reject"},
		{name: "approve pass", verdict: analysis.Pass, keys: []string{"a", "enter"}, wantWrite: true, decision: "approve"},
		{name: "reject pass overrides", verdict: analysis.Pass, keys: append([]string{"x"}, append(typed("flaky"), "enter")...), wantWrite: true, decision: "reject", note: "flaky", overrides: true},
		{name: "esc cancels", verdict: analysis.Fail, keys: append([]string{"a"}, append(typed("no"), "esc")...)},
		{name: "backspace edits", verdict: analysis.Pass, keys: []string{"a", "o", "k", "x", "backspace", "enter"}, wantWrite: true, decision: "approve", note: "ok"},
		{name: "q is note text", verdict: analysis.Pass, keys: []string{"x", "q", "enter"}, wantWrite: true, decision: "reject", note: "q", overrides: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := richReport()
			rep.Verdict = tt.verdict
			fw := &fakeWriter{}
			m, cmds := press(newModel(t, rep, fw), tt.keys...)
			if fw.n() != 0 {
				t.Fatal("Update wrote the record itself; the write must be a command")
			}
			if !tt.wantWrite {
				if len(cmds) != 0 {
					t.Fatalf("got %d commands, want none", len(cmds))
				}
				if tt.problem != "" && !strings.Contains(m.decision.problem, tt.problem) {
					t.Fatalf("problem = %q, want %q", m.decision.problem, tt.problem)
				}
				if tt.problem != "" && !m.decision.active {
					t.Fatal("refused note closed the input")
				}
				return
			}
			if len(cmds) != 1 || !m.writing {
				t.Fatalf("got %d commands (writing %v), want the write command", len(cmds), m.writing)
			}
			msg := cmds[0]()
			if fw.n() != 1 {
				t.Fatalf("command wrote %d files", fw.n())
			}
			next, cmd := m.Update(msg)
			m = next.(Model)
			if cmd != nil {
				t.Fatal("a landed write returned a command")
			}
			rec, ok := m.Recorded()
			if !ok {
				t.Fatalf("no record after %T", msg)
			}
			want := analysis.ReviewRecord{
				Reviewer: "ada", At: "2026-11-29T13:30:00Z",
				ReportSHA256: sha("report bytes"),
				Decision:     tt.decision, Note: tt.note, ReportVerdict: tt.verdict, Overrides: tt.overrides,
			}
			if rec != want {
				t.Fatalf("record = %+v\nwant     %+v", rec, want)
			}
			var onDisk analysis.ReviewRecord
			if err := json.Unmarshal(fw.calls["runs/report.review.json"], &onDisk); err != nil || onDisk != want {
				t.Fatalf("written %s (%v)", fw.calls["runs/report.review.json"], err)
			}
			if !strings.Contains(m.View(), tt.decision+" recorded in runs/report.review.json") {
				t.Fatalf("status not shown:\n%s", m.View())
			}
			if tt.overrides && !strings.Contains(m.View(), "overrides the "+strings.ToUpper(string(tt.verdict))) {
				t.Fatalf("override not shown:\n%s", m.View())
			}
		})
	}
}

func TestOverrideShownWhileTyping(t *testing.T) {
	m, _ := press(newModel(t, richReport(), &fakeWriter{}), "a")
	if v := m.View(); !strings.Contains(v, "APPROVE OVERRIDES the FAIL verdict") || !strings.Contains(v, "required") {
		t.Fatalf("override notice missing:\n%s", v)
	}
	m, _ = press(newModel(t, richReport(), &fakeWriter{}), "x")
	if strings.Contains(m.View(), "OVERRIDES") {
		t.Fatal("reject of a fail is not an override")
	}
}

func TestQuitWaitsForWrite(t *testing.T) {
	fw := &fakeWriter{}
	m, cmds := press(newModel(t, richReport(), fw), "x", "enter", "q")
	if m.done || len(cmds) != 1 {
		t.Fatalf("quit while writing: done %v, %d cmds", m.done, len(cmds))
	}
	next, cmd := m.Update(cmds[0]())
	m = next.(Model)
	if !m.done || cmd == nil || cmd() != tea.Quit() {
		t.Fatal("the landed write did not finish the quit")
	}
	if _, ok := m.Recorded(); !ok {
		t.Fatal("record lost")
	}
}

func TestWriteFailureShown(t *testing.T) {
	fw := &fakeWriter{err: errors.New("disk \x1b[31mfull")}
	m, cmds := press(newModel(t, richReport(), fw), "x", "enter")
	next, _ := m.Update(cmds[0]())
	m = next.(Model)
	if m.WriteErr() == nil {
		t.Fatal("no error kept")
	}
	if _, ok := m.Recorded(); ok {
		t.Fatal("failed write recorded")
	}
	v := m.View()
	if !strings.Contains(v, "review record not written: disk full") || strings.Contains(v, "\x1b") {
		t.Fatalf("error not shown cleanly:\n%q", v)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.review.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(context.Background(), path, []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new\n" {
		t.Fatalf("got %q %v", got, err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
	if err := writeFileAtomic(context.Background(), filepath.Join(dir, "missing", "r.json"), []byte("x")); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := writeFileAtomic(ctx, path, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new\n" {
		t.Fatal("canceled write changed the file")
	}
}

// TestViewsFitEverySize checks, for every view and several terminal sizes,
// that View has exactly height lines, none wider than the terminal, and no
// escape sequence when colour is off (the report holds hostile text).
func TestViewsFitEverySize(t *testing.T) {
	sizes := [][2]int{{100, 30}, {80, 24}, {160, 50}, {50, 12}, {40, 10}, {20, 5}, {200, 15}}
	views := [][]string{{}, {"enter"}, {"tab", "tab"}, {"tab", "tab", "l"}, {"tab", "tab", "tab"}, {"shift+tab"}, {"?"}, {"/", "t"}, {"a"}}
	for _, sz := range sizes {
		for _, keys := range views {
			m, _ := press(newModel(t, richReport(), nil), keys...)
			next, _ := m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
			v := next.(Model).View()
			lines := strings.Split(v, "\n")
			if len(lines) != sz[1] {
				t.Errorf("%v keys %v: %d lines, want %d", sz, keys, len(lines), sz[1])
			}
			for i, l := range lines {
				if w := ansi.StringWidth(l); w > sz[0] {
					t.Errorf("%v keys %v line %d: width %d > %d: %q", sz, keys, i, w, sz[0], l)
				}
			}
			if strings.ContainsAny(v, "\x1b\x07\u202e") {
				t.Errorf("%v keys %v: control characters reach the terminal: %q", sz, keys, v)
			}
		}
	}
}

func TestColourOnlyWhenAllowed(t *testing.T) {
	m, err := New(Options{Report: richReport(), RecordPath: "r.json", Now: fixedNow, Width: 100, Height: 30})
	if err != nil {
		t.Fatal(err)
	}
	m.c.st.r.SetColorProfile(termenv.ANSI256)
	m.c.st = newStylesFrom(m.c.st.r)
	if !strings.Contains(m.View(), "\x1b[") {
		t.Fatal("a colour profile produced no colour")
	}
	// hostile text stays inert even with colour on
	v := m.View()
	if strings.Contains(v, "]0;title") || strings.Contains(v, "\x1b[2J") {
		t.Fatal("report text injected escapes")
	}
}

func TestNewRequiresOptions(t *testing.T) {
	for _, o := range []Options{
		{RecordPath: "r", Now: fixedNow},
		{Report: richReport(), Now: fixedNow},
		{Report: richReport(), RecordPath: "r"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted missing options", o)
		}
	}
}

func TestCoalescedKeys(t *testing.T) {
	m := newModel(t, richReport(), &fakeWriter{})
	next, _ := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("jj")})
	m = next.(Model)
	if g, _ := m.summary.selected(); m.c.rep.Metrics[g].Name != "ttft_p99_ratio" {
		t.Fatalf("coalesced jj selected %s", m.c.rep.Metrics[g].Name)
	}
	next, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("xok")})
	m = next.(Model)
	if !m.decision.active || m.decision.note() != "ok" || cmd != nil {
		t.Fatalf("coalesced xok: active %v note %q", m.decision.active, m.decision.note())
	}
	next, _ = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(" a q"), Paste: true})
	if got := next.(Model).decision.note(); got != "ok a q" {
		t.Fatalf("paste into note = %q", got)
	}
}

// TestCursorVisibleAfterResize: on every size the selected gate's row is
// on screen.
func TestCursorVisibleAfterResize(t *testing.T) {
	rep := bigReport(200, 1000)
	for _, sz := range [][2]int{{100, 30}, {60, 16}, {50, 12}, {120, 13}} {
		m := newModel(t, rep, nil)
		for range 40 {
			next, _ := m.Update(keyMsg("j"))
			m = next.(Model)
		}
		next, _ := m.Update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		m = next.(Model)
		g, _ := m.summary.selected()
		found := false
		for _, l := range strings.Split(m.View(), "\n") {
			found = found || strings.HasPrefix(l, "> ") && strings.Contains(l, rep.Metrics[g].Name[:8])
		}
		if !found {
			t.Errorf("%v: selected gate %s not on screen:\n%s", sz, rep.Metrics[g].Name, m.View())
		}
	}
}

func TestInitReadsEarlierRecord(t *testing.T) {
	rep := richReport()
	mine := analysis.ReviewRecord{Reviewer: "bob\x1b[31m", At: "2026-11-28T09:00:00Z", ReportSHA256: sha("report bytes"), Decision: "reject"}
	other := mine
	other.ReportSHA256 = "00"
	enc := func(r analysis.ReviewRecord) []byte { b, _ := json.Marshal(r); return b }
	tests := []struct {
		name string
		data []byte
		err  error
		want string // "" = no message
	}{
		{"none", nil, os.ErrNotExist, ""},
		{"same report", enc(mine), nil, "earlier decision in runs/report.review.json: reject by bob at 2026-11-28T09:00:00Z"},
		{"other report", enc(other), nil, "decision on a different report"},
		{"garbage", []byte("{"), nil, "existing review record is unreadable"},
		{"unreadable", nil, errors.New("permission denied"), "unreadable (a decision replaces it): permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(t, rep, nil)
			var path string
			m.rec.read = func(_ context.Context, p string) ([]byte, error) { path = p; return tt.data, tt.err }
			cmd := m.Init()
			if cmd == nil {
				t.Fatal("Init returned no command")
			}
			if path != "" {
				t.Fatal("Init read the file itself")
			}
			msg := cmd()
			if path != "runs/report.review.json" {
				t.Fatalf("read %q", path)
			}
			if tt.want == "" {
				if msg != nil {
					t.Fatalf("got %#v, want no message", msg)
				}
				return
			}
			next, _ := m.Update(msg)
			v := next.(Model).View()
			if !strings.Contains(v, tt.want) || strings.Contains(v, "\x1b") {
				t.Fatalf("want %q in\n%s", tt.want, v)
			}
		})
	}
}
