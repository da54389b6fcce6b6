package a2a

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The methods of the JSON-RPC binding.
const (
	MethodSendMessage          = "SendMessage"
	MethodSendStreamingMessage = "SendStreamingMessage"
	MethodGetTask              = "GetTask"
	MethodListTasks            = "ListTasks"
	MethodCancelTask           = "CancelTask"
	MethodSubscribeToTask      = "SubscribeToTask"
	MethodCreatePushConfig     = "CreateTaskPushNotificationConfig"
	MethodGetPushConfig        = "GetTaskPushNotificationConfig"
	MethodListPushConfigs      = "ListTaskPushNotificationConfigs"
	MethodDeletePushConfig     = "DeleteTaskPushNotificationConfig"
	MethodGetExtendedAgentCard = "GetExtendedAgentCard"
)

// The error codes of the JSON-RPC binding: JSON-RPC's own, then A2A's.
const (
	CodeParseError                   = -32700
	CodeInvalidRequest               = -32600
	CodeMethodNotFound               = -32601
	CodeInvalidParams                = -32602
	CodeInternalError                = -32603
	CodeTaskNotFound                 = -32001
	CodeTaskNotCancelable            = -32002
	CodePushNotificationNotSupported = -32003
	CodeUnsupportedOperation         = -32004
	CodeContentTypeNotSupported      = -32005
	CodeInvalidAgentResponse         = -32006
	CodeExtendedCardNotConfigured    = -32007
	CodeExtensionSupportRequired     = -32008
	CodeVersionNotSupported          = -32009
)

// Bounds of what is read from the network.
const (
	// MaxBodyBytes caps a JSON-RPC answer or agent card a Client reads.
	MaxBodyBytes = 8 << 20
	// MaxEventBytes caps one event of a stream.
	MaxEventBytes = 4 << 20
)

// Request is a JSON-RPC 2.0 request.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response: Result or Error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error, and the error a Client returns for one.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("a2a: %s (code %d)", e.Message, e.Code) }

// Errorf is an *Error of code.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrTaskNotFound is matched (errors.Is) by every *Error of
// CodeTaskNotFound.
var ErrTaskNotFound = &Error{Code: CodeTaskNotFound, Message: "task not found"}

// ErrTooLarge is matched (errors.Is) by DecodeRequest's error for a
// request over its bound: a CodeInvalidRequest.
var ErrTooLarge = &Error{Code: CodeInvalidRequest, Message: "the request is too large", Data: tooLargeData}

var tooLargeData = []any{map[string]any{"reason": "REQUEST_TOO_LARGE"}}

// Is matches errors of the same code (ErrTooLarge: only requests over
// their bound).
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) || t.Code != e.Code {
		return false
	}
	if t == ErrTooLarge {
		d, ok := e.Data.([]any)
		return ok && len(d) == 1 && fmt.Sprint(d[0]) == fmt.Sprint(tooLargeData[0])
	}
	return true
}

// DecodeRequest reads one JSON-RPC request of at most max bytes from r.
// A body that is not JSON is a CodeParseError, one that is not a valid
// request (jsonrpc "2.0", a method, an id that is a string, an integer or
// null, params an object) a CodeInvalidRequest; the id read so far comes
// back with the error, for its response.
func DecodeRequest(r io.Reader, max int64) (Request, *Error) {
	body, e := DecodeBody(r, max)
	if e != nil {
		return Request{}, e
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return Request{}, Errorf(CodeParseError, "the request is not a JSON object: %v", err)
	}
	req := Request{ID: raw["id"]}
	if !validID(req.ID) {
		req.ID = nil
		return req, Errorf(CodeInvalidRequest, "the request's id must be a string, an integer or null")
	}
	if json.Unmarshal(raw["jsonrpc"], &req.JSONRPC) != nil || req.JSONRPC != "2.0" {
		return req, Errorf(CodeInvalidRequest, "the request's jsonrpc must be \"2.0\"")
	}
	if json.Unmarshal(raw["method"], &req.Method) != nil || req.Method == "" {
		return req, Errorf(CodeInvalidRequest, "the request needs a method")
	}
	req.Params = raw["params"]
	return req, nil
}

// DecodeBody reads a request body of at most max bytes; a larger one is
// an error that matches ErrTooLarge.
func DecodeBody(r io.Reader, max int64) ([]byte, *Error) {
	body, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, Errorf(CodeParseError, "read the request: %v", err)
	}
	if int64(len(body)) > max {
		return nil, &Error{Code: ErrTooLarge.Code, Message: fmt.Sprintf("the request is larger than %d bytes", max), Data: tooLargeData}
	}
	return body, nil
}

// validID says whether id is absent, a string, an integer or null.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return true
	}
	var v any
	if json.Unmarshal(id, &v) != nil {
		return false
	}
	switch n := v.(type) {
	case nil, string:
		return true
	case float64:
		return n == float64(int64(n)) && !bytes.ContainsAny(id, ".eE")
	}
	return false
}

// DecodeParams decodes a request's params, which must be a JSON object,
// into v; anything else is a CodeInvalidParams error.
func DecodeParams(params json.RawMessage, v any) *Error {
	if len(params) == 0 || params[0] != '{' {
		return Errorf(CodeInvalidParams, "the params must be a JSON object")
	}
	if err := json.Unmarshal(params, v); err != nil {
		return Errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}

// Result is the response to id carrying v.
func Result(id json.RawMessage, v any) Response {
	raw, err := json.Marshal(v)
	if err != nil {
		return Failure(id, Errorf(CodeInternalError, "encode the result: %v", err))
	}
	return Response{JSONRPC: "2.0", ID: orNull(id), Result: raw}
}

// Failure is the response to id carrying e.
func Failure(id json.RawMessage, e *Error) Response {
	return Response{JSONRPC: "2.0", ID: orNull(id), Error: e}
}

func orNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

// NewID is a random id (of a message, a task, a context).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
