package clickhouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/clickhouse/chtest"
)

// testPlan judges with TTFT ≤ 1 s and TPOT ≤ 80 ms; strata are the label,
// else "band P" (the prompt band).
func testPlan() *Plan {
	return &Plan{Step: 10, SLO: SLO{TTFT: 1, TPOT: 0.08, MinOutputTokens: 2},
		PromptEdges: []int64{1024},
		Stratum: func(l string, pb int, c string) string {
			if l != "" {
				return l + " × " + c
			}
			return fmt.Sprintf("band %d × %s", pb, c)
		}}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func window() (time.Time, time.Time) { return t0, t0.Add(time.Hour) }

const someRecords = `{"ts":1767225600.5,"status":"ok","ttft_s":0.1,"e2e_s":1.2,"output_tokens":30,"prompt_tokens":100,"class":"chat","replica":"r1"}
{"ts":1767225611.5,"status":"error","class":"chat","replica":"r2","attempt":2}
{"ts":1767225612.5,"status":"ok","ttft_s":0.3,"e2e_s":0.5,"output_tokens":1}
{"ts":1767225613.5,"status":"ok","ttft_s":1.5,"e2e_s":2.5,"output_tokens":100,"class":"it's \\ odd"}
`

func read(t *testing.T, src *Source, where string, p *Plan) (sources.Dataset, error) {
	t.Helper()
	s, e := window()
	return src.Read(context.Background(), Query{Arm: sources.Canary, Where: where, Start: s, End: e, Plan: p})
}

func totals(a *sources.Aggregate) (completed, failed, good, retried float64) {
	for _, b := range a.Buckets {
		completed += b.Completed
		failed += b.Failed
		good += b.Good
		retried += b.Retried
	}
	return
}

// someRecordsSource starts a ClickHouse server with someRecords in table
// req (arm "c") and a source reading it.
func someRecordsSource(t *testing.T) *Source {
	t.Helper()
	srv := chtest.Start(t)
	srv.LoadRequests(t, "req", "c", strings.NewReader(someRecords))
	src, err := New(Config{URL: srv.URL, Table: "req"})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestReadCounts: the aggregate of a few records has their counts, their
// strata (label values with a quote and a backslash included) and one
// bin per latency.
func TestReadCounts(t *testing.T) {
	src := someRecordsSource(t)
	ds, err := read(t, src, "arm = 'c'", testPlan())
	if err != nil {
		t.Fatal(err)
	}
	c, f, g, r := totals(ds.Agg)
	if c != 3 || f != 1 || g != 1 || r != 1 {
		t.Errorf("completed %v failed %v good %v retried %v; want 3 1 1 1", c, f, g, r)
	}
	var classes []string
	for _, b := range ds.Agg.Buckets {
		classes = append(classes, b.Class)
	}
	want := []string{"chat × default", "band 0 × default", "chat × default", `it's \ odd × default`}
	if strings.Join(classes, "|") != strings.Join(want, "|") {
		t.Errorf("classes %q, want %q", classes, want)
	}
	if !ds.Agg.Exact || ds.Agg.Step != 10 || ds.Clock != sources.ClockEpoch || len(ds.Inputs) != 1 || ds.Inputs[0].Count != 4 {
		t.Errorf("aggregate %+v, dataset %+v", ds.Agg, ds)
	}
	if tr := ds.Agg.Replicas; len(tr) != 2 || tr[0].Name != `{replica="r1"}` || tr[0].Finished[0] != 1 || tr[1].Finished[1] != 1 {
		t.Errorf("replicas %+v", tr)
	}
	b := ds.Agg.Buckets[0]
	if b.TTFT.Total() != 1 || b.E2E.Total() != 1 || b.TPOT.Total() != 1 || b.PromptTokens != 100 || b.OutputTokens != 30 {
		t.Errorf("first bucket %+v", b)
	}
}

// TestSliceCounts: the count query gives each slice's requests and good
// ones per replica, summed per slice the same as the aggregate's buckets; a window
// without rows is no counts when allowed and "no requests" otherwise.
func TestSliceCounts(t *testing.T) {
	src := someRecordsSource(t)
	s, e := window()
	q := Query{Arm: sources.Canary, Where: "arm = 'c'", Start: s, End: e, Plan: testPlan()}
	counts, err := src.ReadCounts(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	want := []SliceCount{{176722560, "r1", 1, 1}, {176722561, "", 2, 0}, {176722561, "r2", 1, 0}}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", counts, want)
	}
	ds, err := src.Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	agg := map[int64][2]int64{}
	for _, b := range ds.Agg.Buckets {
		k := int64(math.Floor(b.Start / 10))
		x := agg[k]
		agg[k] = [2]int64{x[0] + int64(b.Completed+b.Failed+b.Canceled+b.Rejected), x[1] + int64(b.Good)}
	}
	perSlice := map[int64][2]int64{}
	for _, c := range counts {
		x := perSlice[c.Slice]
		perSlice[c.Slice] = [2]int64{x[0] + c.Offered, x[1] + c.Good}
	}
	if fmt.Sprint(perSlice) != fmt.Sprint(agg) {
		t.Errorf("counts per slice %v; the aggregate %v", perSlice, agg)
	}
	q.Start, q.End = e, e.Add(time.Hour)
	if _, err := src.ReadCounts(context.Background(), q); err == nil || !strings.Contains(err.Error(), "canary counts: no requests") {
		t.Errorf("an empty window: %v", err)
	}
	q.AllowEmpty = true
	if counts, err := src.ReadCounts(context.Background(), q); err != nil || len(counts) != 0 {
		t.Errorf("an empty window allowed: %v, %v", counts, err)
	}
}

// TestHostileNames: a table, columns and label values whose names hold
// backquotes, backslashes, quotes, semicolons and comment markers are read
// through escaping; nothing else in the database is touched.
func TestHostileNames(t *testing.T) {
	srv := chtest.Start(t)
	srv.Exec(t, "CREATE TABLE keep (x UInt8) ENGINE = Memory", nil)
	srv.Exec(t, "INSERT INTO keep VALUES (1)", nil)
	table := "re`q\\s'; DROP TABLE keep; --"
	tsCol, stCol, ttftCol := "t`s", "st\\atus", "ttft'); DROP TABLE keep; --"
	srv.Exec(t, fmt.Sprintf("CREATE TABLE %s (%s Float64, %s String, %s Nullable(Float64), output_tokens Nullable(Int64), class Nullable(String), arm String) ENGINE = MergeTree ORDER BY %s",
		QuoteIdent(table), QuoteIdent(tsCol), QuoteIdent(stCol), QuoteIdent(ttftCol), QuoteIdent(tsCol)), nil)
	srv.Exec(t, fmt.Sprintf("INSERT INTO %s FORMAT JSONEachRow", QuoteIdent(table)), strings.NewReader(
		`{"t`+"`"+`s":1767225600.5,"st\\atus":"ok","ttft'); DROP TABLE keep; --":0.2,"output_tokens":10,"class":"x'); DROP TABLE keep; --","arm":"a"}`+"\n"))
	src, err := New(Config{URL: srv.URL, Table: table, Columns: Columns{"ts": tsCol, "status": stCol, "ttft_s": ttftCol}})
	if err != nil {
		t.Fatal(err)
	}
	p := testPlan()
	p.Classes = []Class{{Name: "odd", Labels: []string{"x'); DROP TABLE keep; --"}, SLO: SLO{TTFT: 0.5, MinOutputTokens: 2}}}
	ds, err := read(t, src, "arm = 'a'", p)
	if err != nil {
		t.Fatal(err)
	}
	if c, _, g, _ := totals(ds.Agg); c != 1 || g != 1 || ds.Agg.Buckets[0].Class != "x'); DROP TABLE keep; -- × odd" {
		t.Errorf("completed %v good %v class %q", c, g, ds.Agg.Buckets[0].Class)
	}
	if got := strings.TrimSpace(srv.Exec(t, "SELECT count() FROM keep", nil)); got != "1" {
		t.Errorf("table keep: %q", got)
	}
}

// TestWhereRefused: conditions that could escape their parentheses are
// refused before any query is sent; an accepted one runs read-only.
func TestWhereRefused(t *testing.T) {
	var mu sync.Mutex
	queries := 0
	srv := chtest.Start(t)
	target, _ := url.Parse(srv.URL)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries++
		mu.Unlock()
		if r.URL.Query().Get("readonly") != "1" {
			t.Errorf("query without readonly=1: %s", r.URL)
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	defer proxy.Close()
	srv.LoadRequests(t, "req", "c", strings.NewReader(someRecords))
	src, _ := New(Config{URL: proxy.URL, Table: "req"})
	for _, w := range []string{
		"1 = 1; DROP TABLE req",
		"arm = 'c') UNION ALL SELECT * FROM system.users WHERE (1",
		"arm = 'c' -- ",
		"arm = 'c",
	} {
		_, err := read(t, src, w, testPlan())
		var qe *QueryError
		if !errors.As(err, &qe) || !strings.Contains(qe.Msg, "condition") {
			t.Errorf("where %q: %v, want a refused condition", w, err)
		}
	}
	mu.Lock()
	if queries != 0 {
		t.Errorf("%d queries sent for refused conditions", queries)
	}
	mu.Unlock()
	// a condition that tries to write cannot: the server refuses in readonly
	_, err := read(t, src, "arm IN (SELECT arm FROM req) AND 1 = (SELECT count() FROM system.one)", testPlan())
	if err != nil {
		t.Fatalf("a read-only subquery: %v", err)
	}
	if got := strings.TrimSpace(srv.Exec(t, "SELECT count() FROM req", nil)); got != "4" {
		t.Errorf("req has %s rows", got)
	}
}

// recorder keeps the ClickHouse credentials each request carried and
// proxies it to the real server.
type recorder struct {
	mu    sync.Mutex
	auths []string
	next  http.Handler
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	rc.auths = append(rc.auths, r.Header.Get("X-ClickHouse-User")+"|"+r.Header.Get("X-ClickHouse-Key")+"|"+r.Header.Get("Authorization"))
	rc.mu.Unlock()
	rc.next.ServeHTTP(w, r)
}

// TestCredentialsNeverReachAnotherHost: the configured URL redirects every
// query to another host (a second port) in front of the real server; the
// query succeeds there as the default user, and that host never sees the
// user or password. A redirect within the configured origin keeps them.
func TestCredentialsNeverReachAnotherHost(t *testing.T) {
	srv := chtest.Start(t)
	srv.LoadRequests(t, "req", "c", strings.NewReader(someRecords))
	target, _ := url.Parse(srv.URL)
	other := &recorder{next: httputil.NewSingleHostReverseProxy(target)}
	otherSrv := httptest.NewServer(other)
	defer otherSrv.Close()
	front := &recorder{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherSrv.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})}
	frontSrv := httptest.NewServer(front)
	defer frontSrv.Close()
	src, err := New(Config{URL: frontSrv.URL, Table: "req", User: chtest.User, Password: chtest.Password})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, src, "arm = 'c'", testPlan()); err != nil {
		t.Fatalf("read through the redirect: %v", err)
	}
	want := chtest.User + "|" + chtest.Password + "|"
	if len(front.auths) == 0 || len(other.auths) != len(front.auths) {
		t.Fatalf("requests: %d to the configured host, %d to the other", len(front.auths), len(other.auths))
	}
	for _, a := range front.auths {
		if a != want {
			t.Errorf("configured host got %q, want the credentials", a)
		}
	}
	for _, a := range other.auths {
		if a != "||" {
			t.Errorf("another host got credentials: %q", a)
		}
	}

	// same origin: the credentials stay, and the server checks them
	inner := &recorder{next: httputil.NewSingleHostReverseProxy(target)}
	mux := http.NewServeMux()
	mux.Handle("/v2/", http.StripPrefix("/v2", inner))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/v2"+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
	same := httptest.NewServer(mux)
	defer same.Close()
	src, _ = New(Config{URL: same.URL, Table: "req", User: chtest.User, Password: chtest.Password})
	if _, err := read(t, src, "arm = 'c'", testPlan()); err != nil {
		t.Fatal(err)
	}
	for _, a := range inner.auths {
		if a != want {
			t.Errorf("same-origin redirect lost the credentials: %q", a)
		}
	}
	// a wrong password: refused by the server, and the message does not
	// repeat it
	src, _ = New(Config{URL: srv.URL, Table: "req", User: chtest.User, Password: "wrong-pw-8c1d"})
	_, err = read(t, src, "arm = 'c'", testPlan())
	var qe *QueryError
	if !errors.As(err, &qe) || !strings.Contains(err.Error(), "Wrong password") || strings.Contains(err.Error(), "wrong-pw-8c1d") {
		t.Errorf("wrong password: %v", err)
	}
}

// TestServerErrors: a failing query is an error naming the query, with the
// server's message made one printable line.
func TestServerErrors(t *testing.T) {
	srv := chtest.Start(t)
	srv.LoadRequests(t, "req", "c", strings.NewReader(someRecords))
	src, _ := New(Config{URL: srv.URL, Table: "no_such\x1b[31m_table"})
	_, err := read(t, src, "arm = 'c'", testPlan())
	var qe *QueryError
	if !errors.As(err, &qe) || !strings.HasPrefix(qe.Query, "describe no_such") || !strings.Contains(qe.Msg, "doesn't exist") {
		t.Fatalf("missing table: %v", err)
	}
	if strings.ContainsAny(err.Error(), "\x1b\n") || strings.Contains(err.Error(), "e.what()") {
		t.Errorf("unsanitised: %q", err)
	}
	// a condition the server rejects names the arm's query
	src, _ = New(Config{URL: srv.URL, Table: "req"})
	_, err = read(t, src, "no_such_column = 1", testPlan())
	if !errors.As(err, &qe) || qe.Query != "canary aggregate" || !strings.Contains(qe.Msg, "no_such_column") {
		t.Errorf("bad condition: %v", err)
	}
	// nothing in the window
	src, _ = New(Config{URL: srv.URL, Table: "req"})
	_, err = src.Read(context.Background(), Query{Arm: sources.Canary, Where: "arm = 'c'", Start: t0.Add(-time.Hour), End: t0, Plan: testPlan()})
	if err == nil || !strings.Contains(err.Error(), "no requests") {
		t.Errorf("empty window: %v", err)
	}
	// nobody listening
	src, _ = New(Config{URL: "http://127.0.0.1:1", Table: "req", Timeout: 5 * time.Second})
	if _, err = read(t, src, "arm = 'c'", testPlan()); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("unreachable: %v", err)
	}
}

// TestResultCaps: an answer over the row or byte cap is refused, not
// truncated.
func TestResultCaps(t *testing.T) {
	srv := chtest.Start(t)
	srv.LoadRequests(t, "req", "c", strings.NewReader(someRecords))
	src, _ := New(Config{URL: srv.URL, Table: "req", MaxRows: 3})
	if _, err := read(t, src, "arm = 'c'", testPlan()); err == nil || !strings.Contains(err.Error(), "exceeds 3 rows") {
		t.Errorf("row cap: %v", err)
	}
	src, _ = New(Config{URL: srv.URL, Table: "req", MaxBytes: 2000})
	if _, err := read(t, src, "arm = 'c'", testPlan()); err == nil || !strings.Contains(err.Error(), "exceeds 2000 bytes") {
		t.Errorf("byte cap: %v", err)
	}
}

// TestBadRowsRefused: rows the native log's reader refuses fail the read
// with their counts.
func TestBadRowsRefused(t *testing.T) {
	srv := chtest.Start(t)
	srv.LoadRequests(t, "req", "c", strings.NewReader(someRecords+
		`{"ts":1767225620,"status":"OK","ttft_s":0.1}
{"ts":1767225621,"status":"ok","e2e_s":0.1}
{"ts":1767225622,"status":"ok","ttft_s":0.5,"e2e_s":0.2}
{"ts":1767225623,"status":"error","attempt":0}
{"ts":1767225624,"status":"canceled","canceled_by":"upstream"}
{"ts":1767225625,"status":"error","canceled_by":"server"}
`))
	src, _ := New(Config{URL: srv.URL, Table: "req"})
	_, err := read(t, src, "arm = 'c'", testPlan())
	s, e := window()
	_, errCounts := src.ReadCounts(context.Background(), Query{Arm: sources.Canary, Where: "arm = 'c'", Start: s, End: e, Plan: testPlan()})
	for _, want := range []string{"1 with a status other than ok", "1 with status ok but no ttft_s", "1 with e2e_s smaller than ttft_s", "1 with a negative or fractional token count, or attempt below 1",
		"2 with a canceled_by other than client or server, or canceled_by on a row whose status is not canceled"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
		// the count query refuses the same rows
		if errCounts == nil || !strings.Contains(errCounts.Error(), want) {
			t.Errorf("count query's error %v lacks %q", errCounts, want)
		}
	}
}

// TestTooManyClassLabels: rows whose class holds a value per request
// are refused past sources.MaxClassLabels labels, as a request log is;
// the same rows read without the class column (--columns class=) are
// judged as unlabelled.
func TestTooManyClassLabels(t *testing.T) {
	srv := chtest.Start(t)
	var b strings.Builder
	for i := range sources.MaxClassLabels + 1 {
		fmt.Fprintf(&b, `{"ts":%d.5,"status":"ok","ttft_s":0.1,"e2e_s":1.2,"output_tokens":30,"prompt_tokens":100,"class":"req-%d"}`+"\n", 1767225600+i, i)
	}
	srv.LoadRequests(t, "req", "c", strings.NewReader(b.String()))
	src, _ := New(Config{URL: srv.URL, Table: "req"})
	_, err := read(t, src, "arm = 'c'", testPlan())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d distinct class labels", sources.MaxClassLabels)) {
		t.Fatalf("%d labels: %v", sources.MaxClassLabels+1, err)
	}
	src, _ = New(Config{URL: srv.URL, Table: "req", Columns: Columns{"class": ""}})
	ds, err := read(t, src, "arm = 'c'", testPlan())
	if err != nil {
		t.Fatalf("without the class column: %v", err)
	}
	for _, bk := range ds.Agg.Buckets {
		if !strings.HasPrefix(bk.Class, "band ") {
			t.Fatalf("stratum %q, want the prompt band", bk.Class)
		}
	}
	if c, _, _, _ := totals(ds.Agg); c != float64(sources.MaxClassLabels+1) {
		t.Errorf("completed %v, want %d", c, sources.MaxClassLabels+1)
	}
}

// TestLiteralsRoundTrip: a number written into the query is read by the
// server as the same double, so SLO bounds compare exactly as in Go.
func TestLiteralsRoundTrip(t *testing.T) {
	srv := chtest.Start(t)
	vals := []float64{0.08, 1, 0.1, 0.25, 2.5, 0.05, 1.0 / 3, 0.001, 1e-9, 123.456, 1767225600, 1767225600.123456, 0.030000000000000002, math.Nextafter(0.08, 1)}
	var sel []string
	for i, v := range vals {
		sel = append(sel, num(v)+" AS v"+strconv.Itoa(i))
	}
	out := srv.Exec(t, "SELECT "+strings.Join(sel, ", ")+" FORMAT JSONEachRow", nil)
	var got map[string]float64
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if g := got["v"+strconv.Itoa(i)]; g != v {
			t.Errorf("%s read back as %v, want %v", num(v), g, v)
		}
	}
}

// TestOtherSchema: a table of another shape — DateTime arrival, Enum
// status, latencies and counts under other names, no replica column — is
// read through a column mapping; fields it lacks are unknown.
func TestOtherSchema(t *testing.T) {
	srv := chtest.Start(t)
	srv.Exec(t, "CREATE TABLE gw (arrival DateTime, outcome Enum8('ok' = 1, 'error' = 2, 'rejected' = 3), first_token Float64, total Nullable(Float64), "+
		"completion_tokens UInt32, model String, deployment String) ENGINE = MergeTree ORDER BY arrival", nil)
	srv.Exec(t, "INSERT INTO gw VALUES "+
		"(toDateTime(1767225600, 'UTC'), 'ok', 0.2, 1.0, 50, 'm1', 'c'), "+
		"(toDateTime(1767225605, 'UTC'), 'ok', 1.5, NULL, 50, 'm1', 'c'), "+
		"(toDateTime(1767225612, 'UTC'), 'rejected', 0, NULL, 0, 'm2', 'c'), "+
		"(toDateTime(1767225612, 'UTC'), 'ok', 0.1, 0.5, 10, 'm2', 'b')", nil)
	cols, err := ParseColumns("ts=arrival,status=outcome,ttft_s=first_token,e2e_s=total,output_tokens=completion_tokens,class=model")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := New(Config{URL: srv.URL, Table: "gw", Columns: cols})
	ds, err := read(t, src, "deployment = 'c'", testPlan())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range ds.Agg.Buckets {
		got = append(got, fmt.Sprintf("%v %s c%v g%v r%v tpot%v", b.Start, b.Class, b.Completed, b.Good, b.Rejected, b.TPOT.Total()))
	}
	// TPOT derived from total and first_token for the first request only;
	// the second misses the TTFT bound
	want := []string{fmt.Sprint(1767225600.0) + " m1 × default c2 g1 r0 tpot1", fmt.Sprint(1767225610.0) + " m2 × default c0 g0 r1 tpot0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("buckets\n%q\nwant\n%q", got, want)
	}
	if len(ds.Agg.Replicas) != 0 {
		t.Errorf("replicas %v from a table without a replica column", ds.Agg.Replicas)
	}
}

// TestQuotedBytesRoundTrip: every byte value, and strings built to break
// quoting, come back from the server unchanged from QuoteString literals
// and as QuoteIdent aliases.
func TestQuotedBytesRoundTrip(t *testing.T) {
	srv := chtest.Start(t)
	var all strings.Builder
	for b := 0; b < 256; b++ {
		all.WriteByte(byte(b))
	}
	vals := []string{all.String(), "", "'", "''", "\\", "\\'", "`", "\\`", "x'); DROP TABLE t; --", "a\\x41b", "\\n", "é—✓"}
	var sel []string
	for i, v := range vals {
		sel = append(sel, "hex("+QuoteString(v)+") AS v"+strconv.Itoa(i))
	}
	out := srv.Exec(t, "SELECT "+strings.Join(sel, ", ")+" FORMAT JSONEachRow", nil)
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if g := got["v"+strconv.Itoa(i)]; !strings.EqualFold(g, fmt.Sprintf("%X", v)) {
			t.Errorf("literal %q came back as hex %s", v, g)
		}
	}
	// identifiers: aliases named by the valid UTF-8 values
	sel = sel[:0]
	var names []string
	for _, v := range vals[1:] {
		if v == "" {
			continue
		}
		names = append(names, v)
		sel = append(sel, "1 AS "+QuoteIdent(v))
	}
	out = srv.Exec(t, "SELECT "+strings.Join(sel, ", ")+" FORMAT JSONEachRow", nil)
	var cols map[string]int
	if err := json.Unmarshal([]byte(out), &cols); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if cols[n] != 1 {
			t.Errorf("identifier %q not read back: %v", n, cols)
		}
	}
}
