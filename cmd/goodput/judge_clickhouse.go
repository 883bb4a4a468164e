package main

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/normalize"
	"github.com/goodput-dev/goodput/policies"
	"github.com/goodput-dev/goodput/sources"
	"github.com/goodput-dev/goodput/sources/clickhouse"
)

// Environment variables holding the ClickHouse credentials (never flags:
// a command line is visible to every user of the machine).
const (
	envClickHouseUser     = "GOODPUT_CLICKHOUSE_USER"
	envClickHousePassword = "GOODPUT_CLICKHOUSE_PASSWORD"
)

// chOptions are the judge's flags for reading both arms' aggregates from
// request logs in ClickHouse. The window flags (--start, --end, --last)
// are shared with --prometheus.
type chOptions struct {
	URL            string        // --clickhouse: HTTP interface URL
	Table          string        // --table: table or database.table
	BaselineWhere  string        // --baseline-where: SQL condition selecting the baseline's rows
	CanaryWhere    string        // --canary-where
	Columns        string        // --columns: field=column pairs for other schemas
	Timeout        time.Duration // --clickhouse-timeout: per query
	defaultTimeout time.Duration
}

// addFlags registers the ClickHouse flag group on fs.
func (o *chOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "clickhouse", "", "read both arms from request logs in ClickHouse over its HTTP interface (http[s]://host:8123); credentials from $"+envClickHouseUser+" and $"+envClickHousePassword)
	fs.StringVar(&o.Table, "table", "", "with --clickhouse: the table of request logs, table or database.table (a Distributed table on a cluster)")
	fs.StringVar(&o.BaselineWhere, "baseline-where", "", `with --clickhouse: SQL condition picking the baseline's rows, e.g. "deployment = 'baseline'"`)
	fs.StringVar(&o.CanaryWhere, "canary-where", "", `with --clickhouse: SQL condition picking the canary's rows, e.g. "deployment = 'canary'"`)
	fs.StringVar(&o.Columns, "columns", "", "with --clickhouse: the table's columns for native-log fields that it names differently, e.g. ttft_s=first_token_latency,ts=arrival (fields: "+strings.Join(clickhouse.FieldNames(), ", ")+")")
	fs.DurationVar(&o.Timeout, "clickhouse-timeout", clickhouse.DefaultTimeout, "with --clickhouse: timeout of each query")
}

// enabled reports whether --clickhouse was given.
func (o *chOptions) enabled() bool { return o.URL != "" }

// flagNames are the flags only --clickhouse reads.
func (o *chOptions) flagNames() []string {
	return []string{"table", "baseline-where", "canary-where", "columns", "clickhouse-timeout"}
}

// chSource is a checked ClickHouse source with the policy's plan and the
// window to read.
type chSource struct {
	src        *clickhouse.Source
	plan       *clickhouse.Plan
	start, end time.Time
}

// open checks the flags and the window (--start/--end or --last, on prom)
// and returns the source; --canary-where may be left out when
// canaryOptional. Flag problems are usage errors (exit 2).
func (o *chOptions) open(prom *promOptions, pol *policies.Policy, env Env, now func() time.Time, canaryOptional bool) (chSource, error) {
	var cs chSource
	u, perr := url.Parse(o.URL)
	if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cs, usageError("--clickhouse %q: want an http:// or https:// URL with a host, e.g. http://clickhouse:8123", redactURL(o.URL))
	}
	if u.User != nil {
		return cs, usageError("--clickhouse: credentials in the URL are not accepted; set $%s and $%s", envClickHouseUser, envClickHousePassword)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return cs, usageError("--clickhouse %q: the URL must not carry a query or fragment", redactURL(o.URL))
	}
	if o.Table == "" {
		return cs, usageError("--clickhouse needs --table (the request-log table, table or database.table)")
	}
	if _, err := clickhouse.QuoteTable(o.Table); err != nil {
		return cs, usageError("--table: %v", err)
	}
	switch {
	case o.BaselineWhere == "" && canaryOptional:
		return cs, usageError(`--clickhouse needs --baseline-where (e.g. "deployment = 'production'"), and --canary-where for an A/A pair's other arm`)
	case o.BaselineWhere == "" || (o.CanaryWhere == "" && !canaryOptional):
		return cs, usageError(`--clickhouse needs --baseline-where and --canary-where (e.g. "deployment = 'baseline'" and "deployment = 'canary'")`)
	}
	for _, w := range []struct{ flag, v string }{{"baseline-where", o.BaselineWhere}, {"canary-where", o.CanaryWhere}} {
		if w.v == "" {
			continue
		}
		if err := clickhouse.CheckWhere(w.v); err != nil {
			return cs, usageError("--%s: %v", w.flag, err)
		}
	}
	if strings.TrimSpace(o.BaselineWhere) == strings.TrimSpace(o.CanaryWhere) {
		return cs, usageError("--baseline-where and --canary-where are the same: both arms would read the same rows")
	}
	cols, err := clickhouse.ParseColumns(o.Columns)
	if err != nil {
		return cs, usageError("--columns: %v", err)
	}
	if o.Timeout <= 0 {
		return cs, usageError("--clickhouse-timeout %v: want a positive duration", o.Timeout)
	}
	cs.plan = clickHousePlan(pol)
	if cs.start, cs.end, err = chWindow(prom, time.Duration(cs.plan.Step*float64(time.Second)), now); err != nil {
		return cs, err
	}
	if cs.src, err = clickhouse.New(clickhouse.Config{URL: o.URL, User: env(envClickHouseUser), Password: env(envClickHousePassword),
		Table: o.Table, Columns: cols, Timeout: o.Timeout}); err != nil {
		return cs, usageError("%v", err)
	}
	return cs, nil
}

// load reads both arms' aggregates. Flag problems are usage errors (exit
// 2); an unreachable server or a failed query exit 4, naming the query.
func (o *chOptions) load(ctx context.Context, prom *promOptions, pol *policies.Policy, env Env, now func() time.Time) (baseline, canary sources.Dataset, err error) {
	cs, err := o.open(prom, pol, env, now, false)
	if err != nil {
		return baseline, canary, err
	}
	src, plan, start, end := cs.src, cs.plan, cs.start, cs.end
	// read aggregates an arm on slices of step seconds (the policy's
	// bucket, or a power-of-two multiple of it: sources.MaxStreamSlices)
	read := func(arm sources.Arm, where string, step float64, exclude []clickhouse.Exclusion) (sources.Dataset, error) {
		p := *plan
		p.Step = step
		ds, err := src.Read(ctx, clickhouse.Query{Arm: arm, Where: where, Start: start, End: end, Plan: &p, Exclude: exclude})
		if err != nil {
			return ds, inputError(err)
		}
		return ds, nil
	}
	if baseline, err = read(sources.Baseline, o.BaselineWhere, plan.Step, nil); err != nil {
		return baseline, canary, err
	}
	if canary, err = read(sources.Canary, o.CanaryWhere, plan.Step, nil); err != nil {
		return baseline, canary, err
	}
	// an arm whose slices were widened less than the other's (a shorter
	// span) is read again on the other's, so that they pair, as judge
	// --stream widens the finer of two aggregates
	switch bs, cs := baseline.Agg.Step, canary.Agg.Step; {
	case bs < cs:
		if baseline, err = read(sources.Baseline, o.BaselineWhere, cs, nil); err != nil {
			return baseline, canary, err
		}
	case cs < bs:
		if canary, err = read(sources.Canary, o.CanaryWhere, bs, nil); err != nil {
			return baseline, canary, err
		}
	}
	// a replica that entered late and was slow at first: its own warm-up
	// is left out by a second query, as judge --stream reads a file again
	plans, err := analysis.ReplicaWarmupCuts(&baseline, &canary, analysis.Config{Policy: pol})
	if err != nil {
		return baseline, canary, nil // the judge says what is wrong with the arms
	}
	for k, arm := range []struct {
		ds    *sources.Dataset
		where string
	}{{&baseline, o.BaselineWhere}, {&canary, o.CanaryWhere}} {
		if len(plans[k].Cuts) == 0 {
			continue
		}
		var ex []clickhouse.Exclusion
		for _, c := range plans[k].Cuts {
			ex = append(ex, clickhouse.Exclusion{Replica: c.Replica, FromSlice: c.FromSlice, UntilSlice: c.UntilSlice})
		}
		again, err := read(arm.ds.Arm, arm.where, plans[k].Step, ex)
		if err != nil {
			return baseline, canary, err
		}
		plans[k].Mark(again.Agg)
		*arm.ds = again
	}
	return baseline, canary, nil
}

// clickHousePlan is the policy as the aggregation query needs it: the
// bucket width, the classes in order with their SLOs, the token-length
// bands, and the stratum keys of the streaming aggregate (analysis.
// Aggregator): label (and prompt band under normalize.prompt_bands: all)
// × policy class, token band × policy class, label (and prompt band), or
// token band.
func clickHousePlan(pol *policies.Policy) *clickhouse.Plan {
	slo := func(s policies.SLO) clickhouse.SLO {
		return clickhouse.SLO{TTFT: s.TTFT.Seconds(), TPOT: s.TPOT.Seconds(), E2E: s.E2E.Seconds(), MaxITL: s.MaxITL.Seconds(),
			QualityRequired: s.Quality == "required", MinOutputTokens: s.OutputFloor()}
	}
	rng := func(r *policies.Range) *clickhouse.Range {
		if r == nil {
			return nil
		}
		return &clickhouse.Range{Min: r.Min, Max: r.Max}
	}
	step := pol.Window.Bucket.Seconds()
	if !(step > 0) {
		step = 10
	}
	p := &clickhouse.Plan{Step: step, SLO: slo(pol.SLO),
		PromptEdges: normalize.PromptEdges(), LabelBands: pol.Normalize.LabelBands()}
	for _, c := range pol.Classes {
		p.Classes = append(p.Classes, clickhouse.Class{Name: c.Name, Labels: c.When.Label,
			PromptTokens: rng(c.When.PromptTokens), OutputTokens: rng(c.When.OutputTokens), SLO: slo(c.SLO)})
	}
	// a band's representative count: unknown, 0, then each edge
	rep := func(band int, edges []int64) int64 {
		switch {
		case band <= 0:
			return -1
		case band == 1:
			return 0
		}
		return edges[band-2]
	}
	if c := pol.Normalize.Cache; c != "" && c != "none" {
		// as the streaming scan splits (analysis.Aggregator)
		p.Cache = normalize.CacheBandAt
	}
	policyClasses := len(pol.Classes) > 0
	p.Stratum = func(label string, pb int, class string) string {
		const sep = " × "
		switch {
		case label != "" && p.LabelBands && policyClasses:
			return normalize.LabelBand(label, rep(pb, p.PromptEdges)) + sep + class
		case label != "" && p.LabelBands:
			return normalize.LabelBand(label, rep(pb, p.PromptEdges))
		case label != "" && policyClasses:
			return label + sep + class
		case label != "":
			return label
		}
		band := normalize.Band(rep(pb, p.PromptEdges))
		if policyClasses {
			return band + sep + class
		}
		return band
	}
	return p
}

// chWindow reads the window flags (shared with --prometheus): --start and
// --end, or --last ending at --end or now, "now" rounded down to a whole
// bucket so runs within one bucket read the same slices.
func chWindow(o *promOptions, bucket time.Duration, now func() time.Time) (start, end time.Time, err error) {
	parse := func(flag, v string) (time.Time, error) {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return t, usageError("--%s %q: want an RFC 3339 time such as 2026-11-29T14:00:00Z", flag, v)
		}
		return t, nil
	}
	switch {
	case o.Last > 0 && o.Start != "":
		return start, end, usageError("give either --last or --start/--end, not both")
	case o.Last < 0:
		return start, end, usageError("--last %v: want a positive duration", o.Last)
	case o.Last > 0:
		end = now().Truncate(bucket)
		if o.End != "" {
			if end, err = parse("end", o.End); err != nil {
				return start, end, err
			}
		}
		start = end.Add(-o.Last)
	case o.Start != "" && o.End != "":
		if start, err = parse("start", o.Start); err != nil {
			return start, end, err
		}
		if end, err = parse("end", o.End); err != nil {
			return start, end, err
		}
	default:
		return start, end, usageError("--clickhouse needs a window: --start T --end T, or --last D (e.g. --last 30m)")
	}
	if !end.After(start) {
		return start, end, usageError("the window ends (%s) before it starts (%s)", end.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
	}
	return start, end, nil
}
