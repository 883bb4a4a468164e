package clickhouse

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, ident, str string }{
		{"ts", "`ts`", "'ts'"},
		{"a`b", "`a\\`b`", "'a`b'"},
		{`a\b`, "`a\\\\b`", `'a\\b'`},
		{"it's", "`it's`", `'it\'s'`},
		{"x\\`; DROP TABLE t; --", "`x\\\\\\`; DROP TABLE t; --`", "'x\\\\`; DROP TABLE t; --'"},
		{"line\nbreak\x00\x1b", "`line\\x0Abreak\\x00\\x1B`", "'line\\x0Abreak\\x00\\x1B'"},
		{"", "``", "''"},
	} {
		if got := QuoteIdent(c.in); got != c.ident {
			t.Errorf("QuoteIdent(%q) = %s, want %s", c.in, got, c.ident)
		}
		if got := QuoteString(c.in); got != c.str {
			t.Errorf("QuoteString(%q) = %s, want %s", c.in, got, c.str)
		}
	}
}

func TestQuoteTable(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"requests", "`requests`", ""},
		{"logs.requests", "`logs`.`requests`", ""},
		{"lo`gs.re\\q", "`lo\\`gs`.`re\\\\q`", ""},
		{"a.b.c", "", "want table or database.table"},
		{".t", "", "empty database or table name"},
		{"", "", "empty"},
		{"t\xff", "", "UTF-8"},
	} {
		got, err := QuoteTable(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("QuoteTable(%q) = %q, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("QuoteTable(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestCheckWhere(t *testing.T) {
	ok := []string{
		"deployment = 'canary'",
		"deployment = 'canary' AND (region = 'eu' OR region = 'us')",
		`model = 'it''s' AND tag = 'a\'b;--)'`,
		"`weird col` = 1 AND \"other\" IN (SELECT x FROM t WHERE y = 'z')",
		"x - 1 > 0 AND y / 2 < 3",
	}
	for _, w := range ok {
		if err := CheckWhere(w); err != nil {
			t.Errorf("CheckWhere(%q) = %v, want nil", w, err)
		}
	}
	bad := []struct{ w, want string }{
		{"", "empty condition"},
		{"   ", "empty condition"},
		{"1 = 1; DROP TABLE requests", "`;`"},
		{"1 = 1) UNION ALL SELECT * FROM system.users WHERE (1 = 1", "unbalanced )"},
		{"(1 = 1", "unbalanced ("},
		{"x = 'open", "unbalanced '"},
		{"`col = 1", "unbalanced `"},
		{`"col = 1`, `unbalanced "`},
		{`x = 'ends with backslash\'`, "unbalanced '"},
		{"1 = 1 -- ) OR 1", "comments (--)"},
		{"1 = 1 /* ) */", "comments (/* */)"},
		{"1 = 1 # comment", "`#`"},
		{"1 = 1\x00", "NUL"},
		{"x = '\xff'", "UTF-8"},
	}
	for _, c := range bad {
		err := CheckWhere(c.w)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckWhere(%q) = %v, want error containing %q", c.w, err, c.want)
		}
	}
}

func TestParseColumns(t *testing.T) {
	c, err := ParseColumns(" ttft_s = first_token_latency, ts=arrival,max_itl_s=")
	if err != nil {
		t.Fatal(err)
	}
	if c["ttft_s"] != "first_token_latency" || c["ts"] != "arrival" || c["max_itl_s"] != "" || len(c) != 3 {
		t.Errorf("ParseColumns = %v", c)
	}
	if got := c.String(); got != "max_itl_s=,ts=arrival,ttft_s=first_token_latency" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []struct{ in, want string }{
		{"ttft=x", "unknown field"},
		{"ttft_s", "want field=column"},
		{"ttft_s=a,ttft_s=b", "mapped twice"},
		{"ts=", "required"},
		{"status=", "required"},
		{"ttft_s=__gp_t", "reserved"},
	} {
		if _, err := ParseColumns(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseColumns(%q) = %v, want %q", bad.in, err, bad.want)
		}
	}
}

func TestResolveColumns(t *testing.T) {
	table := tableInfo{"ts": "DateTime", "status": "Enum8('ok' = 1, 'error' = 2)", "latency": "Float64", "class": "LowCardinality(Nullable(String))", "note": "String"}
	r, err := resolve(table, Columns{"ttft_s": "latency"})
	if err != nil {
		t.Fatal(err)
	}
	if r.col["ts"] != "ts" || r.col["ttft_s"] != "latency" || r.col["class"] != "class" {
		t.Errorf("resolved %v", r.col)
	}
	if _, ok := r.col["e2e_s"]; ok {
		t.Error("a missing optional column resolved")
	}
	for _, c := range []struct {
		t    tableInfo
		cols Columns
		want string
	}{
		{tableInfo{"status": "String"}, nil, "no column ts"},
		{tableInfo{"ts": "Float64"}, nil, "no column status"},
		{table, Columns{"e2e_s": "missing"}, "no column `missing`"},
		{table, Columns{"e2e_s": "note"}, "want a number"},
		{tableInfo{"ts": "String", "status": "String"}, nil, "want unix seconds"},
		{tableInfo{"ts": "Float64", "status": "Float64"}, nil, "want String or Enum"},
	} {
		if _, err := resolve(c.t, c.cols); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resolve(%v, %v) = %v, want %q", c.t, c.cols, err, c.want)
		}
	}
}

// FuzzQuote: an escaped literal or identifier is one closed token to the
// condition checker, whatever the bytes: a condition comparing a column
// with it is accepted unless the text is not UTF-8.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "a", "'", "`", "\\", "\\'", "x'); DROP TABLE t; --", "\x00\n\x1b", "a\\`b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range []string{"col = " + QuoteString(s), QuoteIdent(s) + " = 1", "(" + QuoteIdent(s) + " = " + QuoteString(s) + ")"} {
			err := CheckWhere(w)
			if utf8.ValidString(w) && err != nil {
				t.Fatalf("CheckWhere(%q) = %v", w, err)
			}
		}
	})
}
