package tools

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrUnknownTool is wrapped by the error returned for a tool name that
	// is not registered; the error is an *UnknownToolError.
	ErrUnknownTool = errors.New("tools: unknown tool")
	// ErrDuplicateTool is returned when a name is registered twice.
	ErrDuplicateTool = errors.New("tools: duplicate tool")
	// ErrInvalidName is returned when a tool name is empty, longer than 64
	// characters, or has characters other than letters, digits, _ and -.
	ErrInvalidName = errors.New("tools: invalid tool name")
	// ErrInvalidSchema is returned when a tool's argument schema is not a
	// valid JSON Schema for a JSON object.
	ErrInvalidSchema = errors.New("tools: invalid argument schema")
	// ErrInvalidArguments is wrapped by every *ArgumentError.
	ErrInvalidArguments = errors.New("tools: invalid arguments")
	// ErrToolPanic is wrapped by every *PanicError.
	ErrToolPanic = errors.New("tools: tool panicked")
	// ErrDeniedHost is returned by http_fetch for a URL whose host is not
	// allowed, or that resolves to a private address when those are denied.
	ErrDeniedHost = errors.New("tools: host denied")
)

// UnknownToolError reports a call to a tool that does not exist, with the
// names that do, so that a model can be told what it may call.
type UnknownToolError struct {
	Name      string   // the name that was asked for
	Available []string // the registered names, sorted
}

// Error implements error.
func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("tools: unknown tool %q (available: %s)", e.Name, availableList(e.Available))
}

// Unwrap returns ErrUnknownTool.
func (e *UnknownToolError) Unwrap() error { return ErrUnknownTool }

// An ArgumentProblem is one reason why arguments were rejected.
type ArgumentProblem struct {
	// Field is the location of the offending value as a JSON pointer
	// ("/code", "/tags/1"); empty for the arguments object itself.
	Field string
	// Message says what was expected ("expected string, but got number").
	Message string
}

// String renders the problem as "field: message", or the message alone.
func (p ArgumentProblem) String() string {
	if p.Field == "" {
		return p.Message
	}
	return strings.TrimPrefix(p.Field, "/") + ": " + p.Message
}

// ArgumentError reports arguments that are not valid JSON or do not match
// the tool's schema. ErrorText renders it so that a model can correct the call.
type ArgumentError struct {
	Tool     string            // the tool that was called
	Problems []ArgumentProblem // at least one
	Schema   []byte            // the tool's argument schema, when known
}

// Error implements error.
func (e *ArgumentError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return fmt.Sprintf("tools: invalid arguments for tool %q: %s", e.Tool, strings.Join(parts, "; "))
}

// Unwrap returns ErrInvalidArguments.
func (e *ArgumentError) Unwrap() error { return ErrInvalidArguments }

// PanicError reports a tool that panicked during a call.
type PanicError struct {
	Tool  string // the tool that panicked
	Value any    // the value passed to panic
	Stack []byte // the goroutine's stack at the panic
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tools: tool %q panicked: %v", e.Tool, e.Value)
}

// Unwrap returns ErrToolPanic, and the panic value when it is an error.
func (e *PanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{ErrToolPanic, err}
	}
	return []error{ErrToolPanic}
}

// ToolError reports an error returned by a tool's Call.
type ToolError struct {
	Tool string // the tool that failed
	Err  error  // what Call returned
}

// Error implements error.
func (e *ToolError) Error() string {
	return fmt.Sprintf("tools: tool %q failed: %v", e.Tool, e.Err)
}

// Unwrap returns the tool's error.
func (e *ToolError) Unwrap() error { return e.Err }

// HTTPStatusError reports an HTTP response whose status is not 2xx, from
// http_fetch or a search provider.
type HTTPStatusError struct {
	Source     string // who made the request: "http_fetch", "searxng", "tavily"
	Method     string // GET or POST
	URL        string // the URL requested, without credentials
	StatusCode int    // 404
	Status     string // "404 Not Found"
	Body       string // the start of the response body as text, possibly empty
}

// Error implements error.
func (e *HTTPStatusError) Error() string {
	msg := fmt.Sprintf("tools: %s: %s %s returned %s", e.Source, e.Method, e.URL, e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

func availableList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
