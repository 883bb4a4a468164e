package prometheus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	"github.com/prometheus/common/model"
)

// This file is a small client of the Prometheus HTTP API v1 on top of
// client_golang's api.Client, decoding responses with encoding/json into
// github.com/prometheus/common/model values. It mirrors client_golang's
// api/prometheus/v1 calls — (value, warnings, error), the same error
// types — for the three endpoints used here; that package pulls in a JSON
// library the module does not otherwise need.

// Warnings are the messages returned with a successful answer. Partial
// holds the API's "warnings": Thanos and Mimir partial responses, remote
// read failures, PromQL warnings: the answer may be incomplete or wrong.
// Infos holds the API's "infos": PromQL annotations that do not make the
// answer incomplete.
type Warnings struct {
	Partial, Infos []string
}

// ErrorType classifies an API error, with Prometheus's own names plus
// client-side ones.
type ErrorType string

// Error types.
const (
	ErrBadData     ErrorType = "bad_data"
	ErrTimeout     ErrorType = "timeout"
	ErrCanceled    ErrorType = "canceled"
	ErrExec        ErrorType = "execution"
	ErrBadResponse ErrorType = "bad_response"
	ErrServer      ErrorType = "server_error" // HTTP 5xx
	ErrClient      ErrorType = "client_error" // HTTP 4xx other than 400 and 422
)

// Error is an error returned by the API or derived from the HTTP status.
type Error struct {
	Type   ErrorType
	Msg    string
	Status int    // HTTP status code
	Detail string // response body for HTTP errors without an API body (untrusted)
}

func (e *Error) Error() string { return string(e.Type) + ": " + e.Msg }

// Range is a range query's evaluation grid.
type Range struct {
	Start, End time.Time
	Step       time.Duration
}

type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType ErrorType       `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
	Infos     []string        `json:"infos"`
}

type httpAPI struct {
	client  api.Client
	timeout time.Duration // sent as the query's timeout parameter; 0 = none
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', -1, 64)
}

// do posts a form to endpoint (or GETs it when post is false) and falls
// back to GET on 405/501, as client_golang does; it returns the decoded
// data field. digest, when not nil, receives the hex SHA-256 of a
// successful response body.
func (h *httpAPI) do(ctx context.Context, endpoint string, args url.Values, post bool, digest *string) (json.RawMessage, Warnings, error) {
	u := h.client.URL(endpoint, nil)
	method, body := http.MethodPost, strings.NewReader(args.Encode())
	if !post {
		u.RawQuery = args.Encode()
		method, body = http.MethodGet, strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, Warnings{}, err
	}
	if post {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, respBody, err := h.client.Do(ctx, req)
	if err == nil && post && (resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented) {
		u.RawQuery = args.Encode()
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil); err != nil {
			return nil, Warnings{}, err
		}
		resp, respBody, err = h.client.Do(ctx, req)
	}
	if err != nil {
		return nil, Warnings{}, err
	}
	code := resp.StatusCode
	apiErr := code == http.StatusBadRequest || code == http.StatusUnprocessableEntity
	if code/100 != 2 && !apiErr {
		typ, msg := ErrBadResponse, fmt.Sprintf("bad response code %d", code)
		switch code / 100 {
		case 4:
			typ, msg = ErrClient, fmt.Sprintf("client error: %d", code)
		case 5:
			typ, msg = ErrServer, fmt.Sprintf("server error: %d", code)
		}
		return nil, Warnings{}, &Error{Type: typ, Msg: msg, Status: code, Detail: string(respBody)}
	}
	var r apiResponse
	if err := json.Unmarshal(respBody, &r); err != nil {
		return nil, Warnings{}, &Error{Type: ErrBadResponse, Msg: "response is not Prometheus API JSON: " + err.Error(), Status: code}
	}
	ws := Warnings{Partial: r.Warnings, Infos: r.Infos}
	if r.Status == "error" {
		return nil, ws, &Error{Type: r.ErrorType, Msg: r.Error, Status: code}
	}
	if apiErr || r.Status != "success" {
		return nil, ws, &Error{Type: ErrBadResponse, Msg: fmt.Sprintf("status %q with HTTP %d", r.Status, code), Status: code}
	}
	if digest != nil {
		sum := sha256.Sum256(respBody)
		*digest = hex.EncodeToString(sum[:])
	}
	return r.Data, ws, nil
}

type queryData struct {
	ResultType model.ValueType `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

func (h *httpAPI) addTimeout(args url.Values) {
	if h.timeout > 0 {
		args.Set("timeout", strconv.FormatFloat(h.timeout.Seconds(), 'f', -1, 64))
	}
}

// QueryRange evaluates query over r and returns a matrix.
// digest, when not nil, receives the SHA-256 of the response body.
func (h *httpAPI) QueryRange(ctx context.Context, query string, r Range, digest *string) (model.Matrix, Warnings, error) {
	args := url.Values{"query": {query}, "start": {formatTime(r.Start)}, "end": {formatTime(r.End)},
		"step": {strconv.FormatFloat(r.Step.Seconds(), 'f', -1, 64)}}
	h.addTimeout(args)
	data, ws, err := h.do(ctx, "/api/v1/query_range", args, true, digest)
	if err != nil {
		return nil, ws, err
	}
	var qd queryData
	if err := json.Unmarshal(data, &qd); err != nil {
		return nil, ws, &Error{Type: ErrBadResponse, Msg: err.Error()}
	}
	if qd.ResultType != model.ValMatrix {
		return nil, ws, &Error{Type: ErrBadResponse, Msg: fmt.Sprintf("result type %s, want matrix", qd.ResultType)}
	}
	var m model.Matrix
	if err := json.Unmarshal(qd.Result, &m); err != nil {
		return nil, ws, &Error{Type: ErrBadResponse, Msg: err.Error()}
	}
	return m, ws, nil
}

// Query evaluates query at ts and returns a vector.
// digest, when not nil, receives the SHA-256 of the response body.
func (h *httpAPI) Query(ctx context.Context, query string, ts time.Time, digest *string) (model.Vector, Warnings, error) {
	args := url.Values{"query": {query}, "time": {formatTime(ts)}}
	h.addTimeout(args)
	data, ws, err := h.do(ctx, "/api/v1/query", args, true, digest)
	if err != nil {
		return nil, ws, err
	}
	var qd queryData
	if err := json.Unmarshal(data, &qd); err != nil {
		return nil, ws, &Error{Type: ErrBadResponse, Msg: err.Error()}
	}
	if qd.ResultType != model.ValVector {
		return nil, ws, &Error{Type: ErrBadResponse, Msg: fmt.Sprintf("result type %s, want vector", qd.ResultType)}
	}
	var v model.Vector
	if err := json.Unmarshal(qd.Result, &v); err != nil {
		return nil, ws, &Error{Type: ErrBadResponse, Msg: err.Error()}
	}
	return v, ws, nil
}

// LabelValues lists the values of label on series matching any of matches
// between start and end.
// digest, when not nil, receives the SHA-256 of the response body.
func (h *httpAPI) LabelValues(ctx context.Context, label string, matches []string, start, end time.Time, digest *string) ([]string, Warnings, error) {
	args := url.Values{"match[]": matches, "start": {formatTime(start)}, "end": {formatTime(end)}}
	// the label name goes into the path: only plain label names are valid
	for _, c := range label {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return nil, Warnings{}, fmt.Errorf("label name %q is not a plain label name", label)
		}
	}
	data, ws, err := h.do(ctx, "/api/v1/label/"+label+"/values", args, false, digest)
	if err != nil {
		return nil, ws, err
	}
	var out []string
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, ws, &Error{Type: ErrBadResponse, Msg: err.Error()}
	}
	return out, ws, nil
}
