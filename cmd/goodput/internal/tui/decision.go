package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/goodput-dev/goodput/analysis"
)

// Review decisions as written in analysis.ReviewRecord.Decision.
const (
	decisionApprove = "approve"
	decisionReject  = "reject"
)

// noteLimit caps the note's length in characters.
const noteLimit = 500

// overrides reports whether a decision disagrees with the report's verdict:
// approving anything but pass, or rejecting a pass. Rejecting an
// inconclusive report agrees with it (inconclusive never ships).
func overrides(decision string, v analysis.Verdict) bool {
	switch decision {
	case decisionApprove:
		return v != analysis.Pass
	case decisionReject:
		return v == analysis.Pass
	}
	return false
}

// needsNote reports whether a decision must carry a note: approving over a
// fail or inconclusive verdict.
func needsNote(decision string, v analysis.Verdict) bool {
	return decision == decisionApprove && v != analysis.Pass
}

// decisionModel is the note input opened by approve or reject.
type decisionModel struct {
	active   bool
	decision string
	input    lineInput
	problem  string // why enter was refused
	override string // explicit override notice, "" when none
}

func newDecision(st styles) decisionModel {
	return decisionModel{input: newLineInput(st, "note: ", noteLimit)}
}

func (d decisionModel) open(decision string, v analysis.Verdict) (decisionModel, tea.Cmd) {
	d.active = true
	d.decision = decision
	d.problem = ""
	d.override = ""
	d.input.Reset()
	if overrides(decision, v) {
		d.override = fmt.Sprintf("%s OVERRIDES the %s verdict", strings.ToUpper(decision), strings.ToUpper(clean(string(v))))
	}
	if needsNote(decision, v) {
		d.input.Placeholder = "required: why override the verdict?"
	} else {
		d.input.Placeholder = "optional note"
	}
	d.input.Focus()
	return d, nil
}

func (d decisionModel) close() decisionModel {
	d.active = false
	d.input.Blur()
	return d
}

func (d decisionModel) note() string { return strings.TrimSpace(d.input.Value()) }

// update handles a key while the note input is open; submit is true when
// enter accepted the note.
func (d decisionModel) update(msg tea.KeyMsg, v analysis.Verdict) (decisionModel, tea.Cmd, bool) {
	switch msg.Type {
	case tea.KeyEsc:
		return d.close(), nil, false
	case tea.KeyEnter:
		if needsNote(d.decision, v) && d.note() == "" {
			d.problem = "a note is required to override the " + strings.ToUpper(clean(string(v))) + " verdict"
			return d, nil, false
		}
		return d, nil, true
	}
	d.input = d.input.Update(msg)
	d.problem = ""
	return d, nil, false
}

func (d decisionModel) view(st styles) string {
	head := st.bold.Render(d.decision)
	if d.override != "" {
		head = st.warn.Render(d.override)
	}
	s := head + "  " + d.input.View()
	if d.problem != "" {
		s += "  " + st.errText.Render(d.problem)
	} else {
		s += st.dim.Render("  (enter records, esc cancels)")
	}
	return s
}

// writeRecordCmd appends rec to the decision history (when appendTo is
// set) and then writes it as indented JSON to path, the latest decision:
// history first, so it never lacks a decision the record shows.
func writeRecordCmd(ctx context.Context, write func(context.Context, string, []byte) error,
	appendTo func(context.Context, string, []byte) error, path string, rec analysis.ReviewRecord) tea.Cmd {
	return func() tea.Msg {
		if appendTo != nil {
			line, err := json.Marshal(rec)
			if err != nil {
				return recordFailedMsg{err: err}
			}
			if err := appendTo(ctx, HistoryPath(path), append(line, '\n')); err != nil {
				return recordFailedMsg{err: err}
			}
		}
		data, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			return recordFailedMsg{err: err}
		}
		data = append(data, '\n')
		if err := write(ctx, path, data); err != nil {
			return recordFailedMsg{err: err}
		}
		return recordWrittenMsg{path: path, rec: rec}
	}
}

// readRecordCmd reads an earlier review record; a missing file is no
// message at all.
func readRecordCmd(ctx context.Context, read func(context.Context, string) ([]byte, error), path string) tea.Cmd {
	return func() tea.Msg {
		data, err := read(ctx, path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return previousRecordMsg{err: err}
		}
		var rec analysis.ReviewRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return previousRecordMsg{err: fmt.Errorf("%s: %w", path, err)}
		}
		return previousRecordMsg{rec: rec}
	}
}

// appendLine appends one line to path (created 0644 when absent) and syncs
// it; O_APPEND keeps concurrent reviewers' lines whole.
func appendLine(ctx context.Context, path string, line []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readFile is os.ReadFile that honours ctx.
func readFile(ctx context.Context, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// writeFileAtomic writes data to a temporary file beside path and renames
// it over path, so a reader never sees a partial record.
func writeFileAtomic(ctx context.Context, path string, data []byte) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write review record: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write review record %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write review record %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write review record %s: %w", path, err)
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("write review record %s: %w", path, err)
	}
	if err = ctx.Err(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write review record %s: %w", path, err)
	}
	return nil
}
