// Package report renders an analysis.Report as text (an aligned table in
// the spirit of benchstat), Markdown (PR comments, step summaries) and JSON
// (the versioned contract of DESIGN.md §6).
package report

import (
	"encoding/json"
	"io"

	"github.com/goodput-dev/goodput/analysis"
)

// JSON writes r as indented JSON followed by a newline. The encoding is
// deterministic: struct fields in declaration order, no maps, NaN as null.
func JSON(w io.Writer, r *analysis.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(true)
	return enc.Encode(r)
}
