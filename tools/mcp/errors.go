package mcp

import (
	"errors"
	"fmt"
)

// ErrClosed is returned for a call or a tool list on a closed Toolset.
var ErrClosed = errors.New("mcp: toolset closed")

// ConnectError reports a server that could not be started or reached, or
// whose handshake or tool list failed.
type ConnectError struct {
	Server    string // the server's name
	Transport string // stdio or http
	Err       error
}

// Error implements error.
func (e *ConnectError) Error() string {
	return fmt.Sprintf("mcp: server %q (%s): cannot connect: %v", e.Server, e.Transport, e.Err)
}

// Unwrap returns the cause.
func (e *ConnectError) Unwrap() error { return e.Err }

// DroppedError reports a call during which the connection to the server
// was lost: the call may or may not have run. The next call reconnects.
type DroppedError struct {
	Server string
	Tool   string // the tool's name on the server
	Err    error
}

// Error implements error.
func (e *DroppedError) Error() string {
	return fmt.Sprintf("mcp: server %q: the connection was lost during the call of %q, which may or may not have run; the next call reconnects: %v", e.Server, e.Tool, e.Err)
}

// Unwrap returns the cause.
func (e *DroppedError) Unwrap() error { return e.Err }

// CallError is a call the server answered with an error result (isError):
// Text is what the server said, for the model to act on.
type CallError struct {
	Server string
	Tool   string // the tool's name on the server
	Text   string
}

// Error implements error.
func (e *CallError) Error() string {
	return fmt.Sprintf("mcp: server %q answered with an error: %s", e.Server, e.Text)
}
