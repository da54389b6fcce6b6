package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Error codes of the JSON error bodies the server returns.
const (
	CodeUnauthorized     = "unauthorized"       // 401: missing or unknown bearer token
	CodeForeignOrigin    = "foreign_origin"     // 403: a browser page of another origin called /mcp
	CodeNotFound         = "not_found"          // 404: no such route
	CodeMethodNotAllowed = "method_not_allowed" // 405
	CodeBodyTooLarge     = "body_too_large"     // 413
	CodeMalformedJSON    = "malformed_json"     // 400: the body is not JSON
	CodeInvalidField     = "invalid_field"      // 400: a field has the wrong type or value
	CodeUnknownField     = "unknown_field"      // 400: the body has a field the endpoint does not know
	CodeUnknownChannel   = "unknown_channel"    // 400: the input names a channel the workflow does not have
	CodeInvalidQuery     = "invalid_query"      // 400: a query parameter is invalid
	CodeUnknownWorkflow  = "unknown_workflow"   // 404
	CodeUnknownThread    = "unknown_thread"     // 404
	CodeUnknownRun       = "unknown_run"        // 404
	CodeUnknownCheckpt   = "unknown_checkpoint" // 404
	CodeThreadExists     = "thread_exists"      // 409: create with an id already in use
	CodeThreadBusy       = "thread_busy"        // 409: the thread has a run and QueueBusy is off
	CodeNotInterrupted   = "not_interrupted"    // 409: resume of a thread that waits on no interrupt
	CodeAmbiguousResume  = "ambiguous_resume"   // 409: one resume value for several interrupts
	CodeUnfinishedRun    = "unfinished_run"     // 409: an input for a thread whose last run did not finish
	CodeInterrupted      = "interrupted"        // 409: continuing an interrupted thread without an answer
	CodeNothingToRun     = "nothing_to_continue"
	CodeRunFinished      = "run_finished"     // 409: cancel of a run that has ended
	CodeNoWorkflow       = "no_workflow"      // 409: a Platform thread not yet bound to a workflow, used through /v1
	CodeNotServed        = "not_served"       // 501: a Platform API route coorflow does not serve
	CodeWrongWorkflow    = "wrong_workflow"   // 409: a run of another workflow than the thread's
	CodeAssistantExists  = "assistant_exists" // 409: an assistant created with an id in use
	CodeSystemAssistant  = "system_assistant" // 409: a change of a workflow's own assistant
	CodeQuotaExceeded    = "quota_exceeded"   // 429: the owner is at one of its quotas (ErrorDetail.Quota)
	CodeBudgetExceeded   = "budget_exceeded"  // 402: a run or owner budget stopped the run, or leaves no room for one
	CodeShuttingDown     = "shutting_down"    // 503
	CodeInternal         = "internal"         // 500: the detail is in the server's log, under ErrorDetail.RequestID
)

// apiError is an error a handler returns to the client as
// {"error": {"code", "message", "field"}}.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the body field or query parameter at fault, as a dotted
	// path ("input.count").
	Field string `json:"field,omitempty"`
	// Run is the run concerned, when there is one (thread_busy).
	Run string `json:"run_id,omitempty"`
	// Quota and Limit name the quota a 429 is about and its limit;
	// RetryAfter is the Retry-After header, in seconds, when waiting
	// helps.
	Quota      string `json:"-"`
	Limit      int64  `json:"-"`
	RetryAfter string `json:"-"`
	// RequestID is the id under which the server logged the detail of an
	// internal error.
	RequestID string `json:"-"`
}

func (e *apiError) Error() string { return "server: " + e.Message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func fieldErrorf(code, field, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorBody is the JSON body of every error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: a stable Code, a Message for people,
// and the Field (a dotted path into the body, or a query parameter) at
// fault when there is one.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	RunID   string `json:"run_id,omitempty"`
	// Quota is the quota a 429 quota_exceeded is about (QuotaActiveRuns,
	// QuotaQueuedRuns, QuotaStoredBytes) and Limit its limit.
	Quota string `json:"quota,omitempty"`
	Limit int64  `json:"limit,omitempty"`
	// RequestID names the request in the server's log, where an internal
	// error's detail is; it is also the X-Request-Id header.
	RequestID string `json:"request_id,omitempty"`
}

type requestIDKey struct{}

// requestID is the id ServeHTTP gave the request of ctx.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// internal passes an *apiError through; anything else is logged, with the
// request id, and answered with a 500 that names only that id: internal
// errors carry storage keys, SQL, paths, which are not the caller's to see.
func (s *Server) internal(r *http.Request, err error) *apiError {
	var e *apiError
	if errors.As(err, &e) {
		return e
	}
	id := requestID(r.Context())
	s.log.ErrorContext(r.Context(), "server: request failed", "request_id", id, "method", r.Method, "path", r.URL.Path, "err", err)
	return internalError(id)
}

// internalError is the answer to a request that failed inside the server.
func internalError(id string) *apiError {
	e := errorf(http.StatusInternalServerError, CodeInternal, "internal error: the server's log has the details under request id %s", id)
	e.RequestID = id
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data, _ = json.Marshal(ErrorBody{ErrorDetail{Code: CodeInternal, Message: "internal error: the answer cannot be encoded as JSON",
			RequestID: w.Header().Get("X-Request-Id")}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	writeJSON(w, e.Status, ErrorBody{ErrorDetail{Code: e.Code, Message: e.Message, Field: e.Field, RunID: e.Run,
		Quota: e.Quota, Limit: e.Limit, RequestID: e.RequestID}})
}

// decodeBody reads a JSON object into v (a pointer to a struct), within
// limit bytes. An empty body counts as {}. It reports, as an *apiError, a
// body that is too large (413), not JSON, not an object, or with a field
// that v does not declare or whose value has the wrong type (400).
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) *apiError {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return errorf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body is larger than %d bytes", tooLarge.Limit)
	case err != nil:
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "read request body: %v", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := strictUnmarshal(data, &fields); err != nil {
		return jsonError(err, "request body")
	}
	if fields == nil {
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "request body must be a JSON object, not null")
	}
	known := jsonFields(reflect.TypeOf(v).Elem())
	for _, name := range sortedKeys(fields) {
		if !slices.Contains(known, name) {
			return fieldErrorf(CodeUnknownField, name, "unknown field %q (this endpoint takes %s)", name, strings.Join(known, ", "))
		}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return jsonError(err, "request body")
	}
	return nil
}

// strictUnmarshal is json.Unmarshal that also rejects data after the
// first value.
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errTrailingData
	}
	return nil
}

var errTrailingData = errors.New("unexpected data after the JSON value")

// jsonError turns a decoding error into a 400 that names the problem and,
// for a type mismatch, the field.
func jsonError(err error, what string) *apiError {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "%s is not valid JSON: %v (at byte %d)", what, syn, syn.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "%s is not valid JSON: it ends too early", what)
	case errors.Is(err, errTrailingData):
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "%s is not valid JSON: %v", what, err)
	case errors.As(err, &typ) && typ.Field == "":
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "%s must be %s, not %s", what, kindName(typ.Type), article(typ.Value))
	case errors.As(err, &typ):
		return fieldErrorf(CodeInvalidField, typ.Field, "field %q must be %s, not %s", typ.Field, kindName(typ.Type), article(typ.Value))
	}
	return errorf(http.StatusBadRequest, CodeMalformedJSON, "%s: %v", what, err)
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Map, reflect.Struct:
		return "a JSON object"
	case reflect.Slice, reflect.Array:
		return "a JSON array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

// article names a JSON value kind as the decoder reports it ("string",
// "number 1.5") with its article.
func article(v string) string {
	switch {
	case strings.HasPrefix(v, "array"), strings.HasPrefix(v, "object"):
		return "an " + v
	case v == "":
		return "that"
	}
	return "a " + v
}

var fieldCache sync.Map // reflect.Type -> []string

// jsonFields lists the JSON names of a struct's fields, sorted.
func jsonFields(t reflect.Type) []string {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]string)
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	slices.Sort(names)
	fieldCache.Store(t, names)
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
