package requestlog

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/goodput-dev/goodput/sources"
)

// estimateAfter is the number of CSV rows read before the output is sized
// from the input's size.
const estimateAfter = 1000

// readCSV parses the CSV form: a header row naming the columns (the same
// names as the JSON fields, any order), then one row per request. Quoted
// cells may contain commas and line breaks (RFC 4180). src starts at line
// skipped+1. sizeHint is as for readJSONL.
func readCSV(ctx context.Context, path string, src io.Reader, skipped int, sizeHint int64, gz bool) ([]sources.Request, lineIndex, map[string]*unknownField, error) {
	var reqs []sources.Request
	var lines csvLines
	grow := func(est int) { reqs = slices.Grow(reqs, est-len(reqs)) }
	emit := func(r *sources.Request, line int) error {
		reqs = append(reqs, *r)
		lines = append(lines, int32(min(line, math.MaxInt32)))
		return nil
	}
	unknown, err := scanCSV(ctx, path, src, skipped, sizeHint, gz, grow, emit)
	if err != nil {
		return nil, nil, nil, err
	}
	return reqs, lines, unknown, nil
}

// scanCSV parses the CSV form (see readCSV), handing each record and its
// first line to emit, in file order; an error from emit stops the scan and
// is returned as is. grow, when not nil, is told the expected number of
// records once the first rows show how many bytes a row takes.
func scanCSV(ctx context.Context, path string, src io.Reader, skipped int, sizeHint int64, gz bool, grow func(int), emit func(*sources.Request, int) error) (map[string]*unknownField, error) {
	cr := csv.NewReader(src)
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	d := newDecoder()

	header, err := cr.Read()
	if err != nil {
		return nil, csvError(path, skipped, skipped+1, gz, err, 0, len(header))
	}
	headerLine := skipped + 1
	cols := make([]field, len(header))
	var have [nFields]bool
	var unknownCols []string
	for i, h := range header {
		name := strings.TrimSpace(h)
		f := lookupField([]byte(name))
		cols[i] = f
		if f == fUnknown {
			unknownCols = append(unknownCols, name)
			continue
		}
		if have[f] {
			return nil, &ParseError{Path: path, Line: headerLine, Field: name,
				Msg: "column named twice in the header (keep one)"}
		}
		have[f] = true
	}
	for _, f := range [...]field{fTS, fStatus} {
		if !have[f] {
			return nil, &ParseError{Path: path, Line: headerLine, Field: f.String(),
				Msg: fmt.Sprintf("the CSV header has no %q column (a request log needs ts and status; found %s%s)",
					f.String(), listCols(header), csvHint(unknownCols, f))}
		}
	}

	tmpl := sources.NewRequest()
	rows := 0
	lastLine := headerLine
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(path, skipped, lastLine+1, gz, err, len(header), len(rec))
		}
		line, _ := cr.FieldPos(0)
		line += skipped
		lastLine = line
		rows++
		if rows%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		if rows == estimateAfter && sizeHint > 0 && grow != nil {
			// size the output from the bytes the first rows took
			grow(estimateLines(sizeHint, int(cr.InputOffset()), rows))
		}
		rec1 := tmpl
		r := &rec1
		var seen uint32
		for i, cell := range rec {
			f := cols[i]
			if f == fUnknown {
				continue
			}
			d.scratch = append(d.scratch[:0], cell...)
			v := d.scratch
			if f == fClass || f == fReplica || f == fStatus || f == fCanceledBy || f == fUser {
				v = trimSpace(v)
			}
			if len(v) > 0 {
				seen |= 1 << f
			}
			if e := d.set(r, f, kText, v); e != nil {
				l, _ := cr.FieldPos(i) // a quoted cell may sit on a later line
				return nil, e.at(path, l+skipped)
			}
		}
		d.lineUnknown = d.lineUnknown[:0]
		if e := d.finish(r, seen); e != nil {
			if len(unknownCols) > 0 {
				e.msg += csvHint(unknownCols, e.field)
			}
			return nil, e.at(path, line)
		}
		if err := emit(r, line); err != nil {
			return nil, err
		}
	}
	if rows == 0 {
		return nil, &ParseError{Path: path, Line: headerLine,
			Msg: "no requests: the CSV file has a header but no rows (add one row per request below the header)"}
	}
	unknown := make(map[string]*unknownField)
	for _, n := range unknownCols {
		if n == "" {
			n = "(empty column name)"
		}
		if u, ok := unknown[n]; ok {
			u.lines += rows
		} else {
			unknown[n] = &unknownField{name: n, lines: rows}
		}
	}
	return unknown, nil
}

// listCols renders header names for a message.
func listCols(header []string) string {
	if len(header) == 0 {
		return "no columns"
	}
	q := make([]string, 0, len(header))
	for i, h := range header {
		if i == 12 {
			q = append(q, "…")
			break
		}
		q = append(q, quoteVal([]byte(h)))
	}
	return strings.Join(q, ", ")
}

// csvHint points at an unknown column that probably means f.
func csvHint(unknownCols []string, f field) string {
	for _, u := range unknownCols {
		if suggest(u) == f {
			return fmt.Sprintf("; the column %q probably means %q: rename it", u, f.String())
		}
	}
	return ""
}

// csvError explains an error of encoding/csv. next is the line after the
// last good record (for I/O errors), want the header's column count and got
// the row's.
func csvError(path string, skipped, next int, gz bool, err error, want, got int) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return readError(path, next, gz, err)
	}
	line := pe.StartLine + skipped
	switch {
	case errors.Is(pe.Err, csv.ErrFieldCount):
		return &ParseError{Path: path, Line: line,
			Msg: fmt.Sprintf("wrong number of columns: the row has %d, the header %d (quote cells that contain commas; every row needs one cell per header column, empty when unknown)", got, want)}
	case errors.Is(pe.Err, csv.ErrQuote), errors.Is(pe.Err, csv.ErrBareQuote):
		return &ParseError{Path: path, Line: pe.Line + skipped, Col: pe.Column,
			Msg: fmt.Sprintf("malformed CSV: %v (a cell with a quote must be quoted as a whole, with inner quotes doubled)", pe.Err)}
	}
	return &ParseError{Path: path, Line: line, Msg: fmt.Sprintf("malformed CSV: %v", pe.Err)}
}
