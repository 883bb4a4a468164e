// Package costfile reads cost records: what each arm (optionally each
// replica) cost over time intervals, split into accelerator, host, network
// and idle-reserve USD. CSV with a header row, or JSONL with the same field
// names. The simulator's cost.csv uses this format.
//
//	start,end,arm,replica,accelerator_usd,host_usd,network_usd,idle_reserve_usd
//	2026-01-01T00:00:00Z,2026-01-01T00:01:00Z,baseline,pod-0,0.0333,0.0050,0.0002,0.0010
//
// start and end are RFC 3339 or unix seconds. A missing component column
// counts as 0 and is reported, so a file without network costs is not
// mistaken for a free network.
package costfile

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-dev/goodput/sources"
)

// componentNames are the cost columns, in report order.
func componentNames() []string {
	return []string{"accelerator_usd", "host_usd", "network_usd", "idle_reserve_usd"}
}

// Result is a parsed cost file.
type Result struct {
	Records []sources.CostRecord
	Input   sources.Input
	// Missing lists component columns absent from the file (counted as 0).
	Missing []string
}

// MaxBytes caps a cost file, which is read whole: 256 MiB is millions of
// records, far more than a comparison's replicas × minutes.
const MaxBytes = 256 << 20

// Read parses a cost file. path names it in errors.
func Read(ctx context.Context, path string, r io.Reader) (*Result, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB: not a plausible cost file (one row per replica per interval is enough)", path, MaxBytes>>20)
	}
	sum := sha256.Sum256(data)
	res := &Result{Input: sources.Input{Path: path, SHA256: hex.EncodeToString(sum[:]), Format: "cost"}}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%s: the cost file is empty: give one record per line (start,end,arm,accelerator_usd,…)", path)
	}
	if trimmed[0] == '{' {
		err = readJSONL(ctx, path, data, res)
	} else {
		err = readCSV(ctx, path, data, res)
	}
	if err != nil {
		return nil, err
	}
	if len(res.Records) == 0 {
		return nil, fmt.Errorf("%s: no cost records", path)
	}
	if err := checkOverlaps(path, res.Records); err != nil {
		return nil, err
	}
	res.Input.Count = len(res.Records)
	return res, nil
}

type rawRecord struct {
	fields map[string]string
	line   int
}

func readCSV(ctx context.Context, path string, data []byte, res *Result) error {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s:1: reading the header: %v", path, err)
	}
	idx := map[string]int{}
	for i, h := range header {
		idx[strings.TrimSpace(strings.ToLower(h))] = i
	}
	for _, need := range []string{"start", "end", "arm"} {
		if _, ok := idx[need]; !ok {
			return fmt.Errorf("%s:1: the header has no %q column (want start,end,arm[,replica],accelerator_usd,host_usd,network_usd,idle_reserve_usd)", path, need)
		}
	}
	res.Missing = missing(func(k string) bool { _, ok := idx[k]; return ok })
	if len(res.Missing) == len(componentNames()) {
		return fmt.Errorf("%s:1: the header names no cost column (accelerator_usd, host_usd, network_usd, idle_reserve_usd)", path)
	}
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// FieldPos is only valid after a successful Read: the
			// error itself says where the damage is
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return fmt.Errorf("%s:%d: malformed CSV: %v", path, pe.Line, pe.Err)
			}
			return fmt.Errorf("%s: %v", path, err)
		}
		line, _ := cr.FieldPos(0)
		if len(row) != len(header) {
			return fmt.Errorf("%s:%d: %d fields, the header has %d", path, line, len(row), len(header))
		}
		f := map[string]string{}
		for k, i := range idx {
			f[k] = strings.TrimSpace(row[i])
		}
		rec, err := parse(path, rawRecord{fields: f, line: line})
		if err != nil {
			return err
		}
		res.Records = append(res.Records, rec)
	}
	return nil
}

func readJSONL(ctx context.Context, path string, data []byte, res *Result) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	seen := map[string]bool{}
	line := 0
	for sc.Scan() {
		line++
		if line%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			return fmt.Errorf("%s:%d: not a JSON object: %v", path, line, err)
		}
		f := map[string]string{}
		for k, v := range obj {
			seen[k] = true
			switch v := v.(type) {
			case string:
				f[k] = v
			case json.Number:
				f[k] = v.String()
			case nil:
			default:
				return fmt.Errorf("%s:%d: field %q: want a string or a number", path, line, k)
			}
		}
		rec, err := parse(path, rawRecord{fields: f, line: line})
		if err != nil {
			return err
		}
		res.Records = append(res.Records, rec)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %v", path, line+1, err)
	}
	res.Missing = missing(func(k string) bool { return seen[k] })
	return nil
}

func missing(has func(string) bool) []string {
	var out []string
	for _, c := range componentNames() {
		if !has(c) {
			out = append(out, c)
		}
	}
	return out
}

func parse(path string, raw rawRecord) (sources.CostRecord, error) {
	rec := sources.CostRecord{Line: raw.line, Path: path, Replica: raw.fields["replica"]}
	errf := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: %s", path, raw.line, fmt.Sprintf(format, a...))
	}
	var err error
	if rec.Start, err = parseTime(raw.fields["start"]); err != nil {
		return rec, errf("field \"start\": %v", err)
	}
	if rec.End, err = parseTime(raw.fields["end"]); err != nil {
		return rec, errf("field \"end\": %v", err)
	}
	if !(rec.End > rec.Start) {
		return rec, errf("end must be after start")
	}
	if rec.Arm, err = sources.ParseArm(raw.fields["arm"]); err != nil {
		return rec, errf("field \"arm\": %v", err)
	}
	dst := []*float64{&rec.Accelerator, &rec.Host, &rec.Network, &rec.IdleReserve}
	for i, name := range componentNames() {
		v, ok := raw.fields[name]
		if !ok || v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return rec, errf("field %q: %q is not a number of USD", name, v)
		}
		if f < 0 {
			return rec, errf("field %q: negative amount %v (costs are USD ≥ 0; record credits elsewhere)", name, f)
		}
		*dst[i] = f
	}
	return rec, nil
}

// parseTime accepts RFC 3339 or unix seconds.
func parseTime(s string) (float64, error) {
	if s == "" {
		return 0, errors.New("missing (want RFC 3339 or unix seconds)")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither RFC 3339 nor unix seconds", s)
	}
	return float64(t.UnixNano()) / 1e9, nil
}

// checkOverlaps refuses two records of the same arm and replica whose
// intervals overlap: the same expense would be counted twice.
func checkOverlaps(path string, recs []sources.CostRecord) error {
	type key struct {
		arm     sources.Arm
		replica string
	}
	groups := map[key][]sources.CostRecord{}
	for _, r := range recs {
		k := key{r.Arm, r.Replica}
		groups[k] = append(groups[k], r)
	}
	var keys []key
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].arm != keys[j].arm {
			return keys[i].arm < keys[j].arm
		}
		return keys[i].replica < keys[j].replica
	})
	for _, k := range keys {
		g := groups[k]
		sort.Slice(g, func(i, j int) bool { return g[i].Start < g[j].Start })
		for i := 1; i < len(g); i++ {
			if g[i].Start < g[i-1].End {
				who := string(k.arm)
				if k.replica != "" {
					who += " replica " + k.replica
				}
				return fmt.Errorf("%s:%d: overlaps the record on line %d for %s: the same time would be paid twice", path, g[i].Line, g[i-1].Line, who)
			}
		}
	}
	return nil
}
