package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/goodput-dev/goodput/analysis"
	"github.com/goodput-dev/goodput/analysis/report"
	ghpub "github.com/goodput-dev/goodput/cmd/goodput/internal/github"
)

// commentOptions are the flags of `goodput comment` and what tests inject.
type commentOptions struct {
	Report string
	Repo   string
	PR     int
	Key    string
	DryRun bool
	Review string
	Debug  bool

	clock     ghpub.Clock       // nil: the system clock
	transport http.RoundTripper // nil: http.DefaultTransport
}

// stepSummaryMax caps what one step appends to GITHUB_STEP_SUMMARY: GitHub
// refuses summaries over 1 MiB per step. A little is kept back for the
// separators.
const stepSummaryMax = 1<<20 - 1024

// maxAnnotations caps the ::error:: and ::warning:: lines; GitHub shows
// only about ten per level and step.
const maxAnnotations = 10

func (a *app) newCommentCmd() *cobra.Command { return a.newCommentCmdWith(&commentOptions{}) }

func (a *app) newCommentCmdWith(o *commentOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "comment --report REPORT.json [--repo OWNER/NAME] [--pr N] [--key NAME] [--dry-run]",
		Short: "Post or update the verdict as a sticky pull-request comment",
		Long: `Post the verdict of a JSON report (goodput judge --format json) on a pull
request as one sticky comment: a hidden marker per --key finds the comment an
earlier run left, and it is edited in place instead of posting another.

Inside GitHub Actions the repository and pull request come from
GITHUB_REPOSITORY and GITHUB_EVENT_PATH, the API from GITHUB_API_URL, the token
from GITHUB_TOKEN (or GH_TOKEN). The same Markdown is appended to
GITHUB_STEP_SUMMARY when it is set, and failed or inconclusive gates become
::error:: and ::warning:: annotations. The job needs
"permissions: pull-requests: write".

A reviewer's decision (REPORT.review.json beside the report, or --review FILE)
is included when present. Rate limits and server errors are retried for up to
two minutes; a request without a response in 30 s fails. Only a comment the
token's own account wrote (GET /user; github-actions[bot] for an Actions
token) is edited: the marker in anyone else's comment is ignored, with a
warning. The token is never printed, not even with --debug.

The command does not judge: it exits 0 when the comment is written whatever
the verdict (the judge's exit code is the gate), 2 on a usage error and 4 when
the report cannot be read or the comment cannot be written.`,
		Example: `  goodput judge --baseline b.jsonl --canary c.jsonl --format json --out report.json
  goodput comment --report report.json                      # inside GitHub Actions
  goodput comment --report report.json --repo acme/infer --pr 42 --key chat
  goodput comment --report report.json --dry-run            # print the comment, post nothing`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runComment(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Report, "report", "", "JSON report (`FILE`) written by goodput judge --format json --out FILE (required)")
	fs.StringVar(&o.Repo, "repo", "", "repository as OWNER/NAME (default: $GITHUB_REPOSITORY)")
	fs.IntVar(&o.PR, "pr", 0, "pull request number (default: from $GITHUB_EVENT_PATH)")
	fs.StringVar(&o.Key, "key", ghpub.DefaultKey, "name of this comment, so several policies can keep one comment each")
	fs.BoolVar(&o.DryRun, "dry-run", false, "print the comment body to stdout; post nothing and write no step summary")
	fs.StringVar(&o.Review, "review", "", "reviewer decision to include (default: REPORT.review.json beside the report, when present)")
	fs.BoolVar(&o.Debug, "debug", false, "log each GitHub API request and retry to stderr (the token is redacted)")
	return cmd
}

func (a *app) runComment(ctx context.Context, o *commentOptions) error {
	if o.Report == "" {
		return usageError("--report is required: the JSON report of `goodput judge --format json --out FILE`")
	}
	if o.PR < 0 {
		return usageError("--pr %d: want a pull request number > 0", o.PR)
	}
	marker, err := ghpub.Marker(o.Key)
	if err != nil {
		return usageError("--key: %v", err)
	}
	var owner, repo string
	if o.Repo != "" {
		if owner, repo, err = commentSplitRepo(o.Repo); err != nil {
			return usageError("--repo: %v", err)
		}
	}

	rep, raw, err := commentReadReport(o.Report)
	if err != nil {
		return inputError(err)
	}
	review, err := a.commentReadReview(o, raw)
	if err != nil {
		return inputError(err)
	}

	var body bytes.Buffer
	limit := ghpub.MaxCommentChars - len(marker) - 1 // bytes ≥ characters, so this also holds the character limit
	if err := report.Markdown(&body, rep, report.MarkdownOptions{MaxBytes: limit, Review: review}); err != nil {
		return inputError(err)
	}

	inActions := a.env("GITHUB_ACTIONS") == "true"
	if path := a.env("GITHUB_STEP_SUMMARY"); path != "" && !o.DryRun {
		if err := commentAppendSummary(path, rep, review); err != nil {
			fmt.Fprintf(a.io.ErrOut, "goodput: warning: %v\n", err)
		}
	}
	if inActions {
		commentAnnotate(a.io.Out, rep, o.Key)
	}

	if o.DryRun {
		return commentPrintBody(a.io.Out, marker+"\n"+body.String(), inActions)
	}

	if owner == "" {
		r := a.env("GITHUB_REPOSITORY")
		if r == "" {
			return usageError("no repository: pass --repo OWNER/NAME (GITHUB_REPOSITORY is not set)")
		}
		if owner, repo, err = commentSplitRepo(r); err != nil {
			return inputError(fmt.Errorf("GITHUB_REPOSITORY: %v", err))
		}
	}
	pr := o.PR
	if pr == 0 {
		path := a.env("GITHUB_EVENT_PATH")
		if path == "" {
			return usageError("no pull request: pass --pr N (GITHUB_EVENT_PATH is not set)")
		}
		if pr, err = commentEventPR(path); err != nil {
			return err
		}
	}
	token := a.env("GITHUB_TOKEN")
	if token == "" {
		token = a.env("GH_TOKEN")
	}
	if token == "" {
		return inputError(errors.New("no GitHub token: set GITHUB_TOKEN (in Actions: `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`) or GH_TOKEN"))
	}
	opt := ghpub.Options{
		APIURL: a.env("GITHUB_API_URL"), Token: token, Owner: owner, Repo: repo, Number: pr, Key: o.Key,
		Transport: o.transport, Clock: o.clock, UserAgent: "goodput/" + version,
	}
	if o.Debug {
		opt.Debug = a.io.ErrOut
	}
	pub, err := ghpub.New(opt)
	if err != nil {
		return inputError(err)
	}
	res, err := pub.Upsert(ctx, body.String())
	if err != nil {
		return inputError(err)
	}
	switch {
	case res.Created:
		fmt.Fprintf(a.io.ErrOut, "goodput: created comment on %s/%s#%d: %s\n", owner, repo, pr, res.URL)
	case res.Unchanged:
		fmt.Fprintf(a.io.ErrOut, "goodput: comment on %s/%s#%d is already up to date (nothing sent): %s\n", owner, repo, pr, res.URL)
	default:
		fmt.Fprintf(a.io.ErrOut, "goodput: updated comment on %s/%s#%d: %s\n", owner, repo, pr, res.URL)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(a.io.ErrOut, "goodput: warning: %s\n", w)
	}
	if res.Duplicates > 0 {
		fmt.Fprintf(a.io.ErrOut, "goodput: warning: %d more comments carry the %q marker; only the first was updated\n", res.Duplicates, o.Key)
	}
	return nil
}

// commentSplitRepo splits OWNER/NAME.
func commentSplitRepo(s string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(s, "/")
	if !ok || owner == "" || name == "" || strings.ContainsAny(name, "/ ") || strings.ContainsAny(owner, " ") {
		return "", "", fmt.Errorf("%q: want OWNER/NAME, e.g. acme/inference", s)
	}
	return owner, name, nil
}

// commentReadReport reads and checks a JSON report; it returns the bytes
// too, to check a review's report_sha256 against.
func commentReadReport(path string) (*analysis.Report, []byte, error) {
	raw, err := readFileCapped(path, 256<<20)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the report: %w", err)
	}
	var rep analysis.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, nil, fmt.Errorf("%s: %s (want the output of `goodput judge --format json`)", commentJSONPos(path, raw, err), commentJSONMsg(err))
	}
	switch {
	case rep.SchemaVersion == 0:
		return nil, nil, fmt.Errorf("%s: no schema_version: not a goodput JSON report (write one with `goodput judge --format json --out FILE`)", path)
	case rep.SchemaVersion > analysis.SchemaVersion:
		return nil, nil, fmt.Errorf("%s: report schema %d is newer than this goodput understands (%d); use a newer goodput", path, rep.SchemaVersion, analysis.SchemaVersion)
	}
	switch rep.Verdict {
	case analysis.Pass, analysis.Fail, analysis.Inconclusive:
	default:
		return nil, nil, fmt.Errorf("%s: verdict %q: want pass, fail or inconclusive", path, rep.Verdict)
	}
	if rep.Verdict == analysis.Pass {
		// a pass is shown only with its evidence: gates that passed, on
		// requests of both arms
		var why []string
		if len(rep.Metrics) == 0 {
			why = append(why, "no gates")
		}
		if rep.Arms.Baseline.Accounting.Offered == 0 || rep.Arms.Canary.Accounting.Offered == 0 {
			why = append(why, "no requests in an arm")
		}
		if len(why) > 0 {
			return nil, nil, fmt.Errorf("%s: the report says pass with %s: a pass without evidence is not shown as one (was the report edited, or written by a tool that is not goodput judge?)", path, strings.Join(why, " and "))
		}
	}
	return &rep, raw, nil
}

// commentJSONPos names file:line:col of a JSON decoding error.
func commentJSONPos(path string, raw []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	// Offset counts the bytes read up to and including the offending one.
	if off < 1 || off > int64(len(raw)) {
		return path
	}
	before := raw[:off-1]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("%s:%d:%d", path, line, col)
}

func commentJSONMsg(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q: got a JSON %s, want %s", te.Field, te.Value, te.Type)
	}
	return err.Error()
}

// commentReadReview loads --review, or REPORT.review.json when it exists.
// A review of other report bytes is left out with a warning.
func (a *app) commentReadReview(o *commentOptions, reportRaw []byte) (*analysis.ReviewRecord, error) {
	path, explicit := o.Review, o.Review != ""
	if !explicit {
		path = strings.TrimSuffix(o.Report, ".json") + ".review.json"
	}
	raw, err := readFileCapped(path, 16<<20)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the review: %w", err)
	}
	var rv analysis.ReviewRecord
	if err := json.Unmarshal(raw, &rv); err != nil {
		return nil, fmt.Errorf("%s: %s (want the review record written by `goodput review`)", commentJSONPos(path, raw, err), commentJSONMsg(err))
	}
	if rv.Decision == "" {
		return nil, fmt.Errorf("%s: no decision: not a review record", path)
	}
	sum := sha256.Sum256(reportRaw)
	if rv.ReportSHA256 != "" && !strings.EqualFold(rv.ReportSHA256, hex.EncodeToString(sum[:])) {
		fmt.Fprintf(a.io.ErrOut, "goodput: warning: %s reviews another report (report_sha256 differs from %s); leaving the review out\n", path, o.Report)
		return nil, nil
	}
	return &rv, nil
}

// commentAppendSummary appends the Markdown to the step summary file.
func commentAppendSummary(path string, rep *analysis.Report, review *analysis.ReviewRecord) error {
	var buf bytes.Buffer
	if err := report.Markdown(&buf, rep, report.MarkdownOptions{MaxBytes: stepSummaryMax, Review: review}); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("writing the step summary: %w", err)
	}
	_, err = f.Write(append(buf.Bytes(), '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the step summary %s: %w", path, err)
	}
	return nil
}

// commentAnnotate writes ::error:: lines for failed gates and ::warning::
// lines for inconclusive ones (at most maxAnnotations each); a verdict
// without such a gate gets one line of its own.
func commentAnnotate(w io.Writer, rep *analysis.Report, key string) {
	counts := map[string]int{}
	emit := func(level, title, msg string) {
		if counts[level] >= maxAnnotations {
			return
		}
		counts[level]++
		fmt.Fprintf(w, "::%s title=%s::%s\n", level, workflowProperty(title), workflowData(msg))
	}
	for i := range rep.Metrics {
		m := &rep.Metrics[i]
		switch m.Verdict {
		case analysis.Fail:
			emit("error", "goodput "+key+": "+m.Name+" failed", report.GateSummary(m))
		case analysis.Inconclusive:
			emit("warning", "goodput "+key+": "+m.Name+" inconclusive", report.GateSummary(m))
		}
	}
	if len(counts) > 0 || rep.Verdict == analysis.Pass {
		return
	}
	level := "warning"
	if rep.Verdict == analysis.Fail {
		level = "error"
	}
	msg := "goodput verdict: " + string(rep.Verdict)
	if len(rep.Reasons) > 0 {
		msg += ": " + rep.Reasons[0]
	}
	emit(level, "goodput "+key+": "+string(rep.Verdict), msg)
}

// workflowData escapes a workflow command's message.
func workflowData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// workflowProperty escapes a workflow command's property value.
func workflowProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// commentPrintBody prints the comment for --dry-run. Inside Actions the
// body is fenced with ::stop-commands:: so no line of it can act as a
// workflow command.
func commentPrintBody(w io.Writer, body string, inActions bool) error {
	if !inActions {
		_, err := io.WriteString(w, body)
		return err
	}
	sum := sha256.Sum256([]byte(body))
	tok := "goodput-" + hex.EncodeToString(sum[:8])
	_, err := fmt.Fprintf(w, "::stop-commands::%s\n%s::%s::\n", tok, body, tok)
	return err
}

// commentEventPR reads the pull request number from the Actions event
// payload: pull_request.number (pull_request, pull_request_target),
// issue.number (issue_comment), or the first of workflow_run.pull_requests.
func commentEventPR(path string) (int, error) {
	raw, err := readFileCapped(path, 64<<20)
	if err != nil {
		return 0, inputError(fmt.Errorf("reading the event payload (GITHUB_EVENT_PATH): %w", err))
	}
	var ev struct {
		PullRequest *struct {
			Number int `json:"number"`
		} `json:"pull_request"`
		Issue *struct {
			Number int `json:"number"`
		} `json:"issue"`
		WorkflowRun *struct {
			PullRequests []struct {
				Number int `json:"number"`
			} `json:"pull_requests"`
		} `json:"workflow_run"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return 0, inputError(fmt.Errorf("%s: %s (GITHUB_EVENT_PATH)", commentJSONPos(path, raw, err), commentJSONMsg(err)))
	}
	switch {
	case ev.PullRequest != nil && ev.PullRequest.Number > 0:
		return ev.PullRequest.Number, nil
	case ev.Issue != nil && ev.Issue.Number > 0:
		return ev.Issue.Number, nil
	case ev.WorkflowRun != nil && len(ev.WorkflowRun.PullRequests) > 0 && ev.WorkflowRun.PullRequests[0].Number > 0:
		return ev.WorkflowRun.PullRequests[0].Number, nil
	}
	return 0, usageError("no pull request in the event payload %s (not a pull_request, issue_comment or workflow_run event): pass --pr N", path)
}
