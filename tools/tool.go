package tools

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	"github.com/coorflow/coorflow/internal/typeschema"
)

// DefaultTimeout is how long Run waits for a tool when neither the call nor
// the tool sets a timeout.
const DefaultTimeout = 30 * time.Second

// emptyObjectSchema is the schema of a tool that takes no arguments.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// A Tool is something a model can call: it has a name, a description the
// model reads, a JSON Schema for its arguments, and a call.
//
// Call receives the arguments as the model wrote them (a JSON object). When
// the tool is run through Run or Registry.Run, the arguments have already been
// validated against Schema. Call must honour ctx: Run stops waiting at the
// deadline, and a tool that ignores ctx keeps its goroutine until it returns.
type Tool interface {
	// Name is the identifier the model calls the tool by. It matches
	// ^[a-zA-Z0-9_-]{1,64}$ for the tool to be registered.
	Name() string
	// Description tells the model what the tool does and when to use it.
	Description() string
	// Schema is the JSON Schema of the arguments object.
	Schema() json.RawMessage
	// Call runs the tool and returns text for the model.
	Call(ctx context.Context, args json.RawMessage) (string, error)
}

// A TimeoutTool is a Tool that states how long one call may take. Run uses
// it when the call itself sets no timeout.
type TimeoutTool interface {
	Tool
	// Timeout is the tool's own call timeout; zero or less means the default.
	Timeout() time.Duration
}

// Func makes a Tool from a function. A nil schema means the tool takes no
// arguments (an empty object).
func Func(name, description string, schema json.RawMessage, fn func(ctx context.Context, args json.RawMessage) (string, error)) Tool {
	if len(schema) == 0 {
		schema = emptyObjectSchema
	}
	return &funcTool{name: name, description: description, schema: schema, fn: fn}
}

// Typed makes a Tool from a function that takes its arguments decoded into A
// with encoding/json; a decoding failure is returned as an *ArgumentError.
// A nil schema is derived from A, its `json` and `jsonschema` field tags
// (required, description=..., enum=a|b, minimum=, maximum=, format=), the
// way structured.Schema derives one; a schema given must describe A. A
// type with no JSON Schema (a channel, a recursive struct) makes a tool
// that Register refuses with ErrInvalidSchema.
func Typed[A any](name, description string, schema json.RawMessage, fn func(ctx context.Context, args A) (string, error)) Tool {
	var schemaErr error
	if len(schema) == 0 {
		schema, schemaErr = typeschema.For(reflect.TypeFor[A]())
	}
	t := Func(name, description, schema, func(ctx context.Context, raw json.RawMessage) (string, error) {
		var a A
		if err := json.Unmarshal(normalizeArgs(raw), &a); err != nil {
			return "", &ArgumentError{Tool: name, Schema: schema, Problems: []ArgumentProblem{{Message: err.Error()}}}
		}
		return fn(ctx, a)
	}).(*funcTool)
	t.schemaErr = schemaErr
	return t
}

// WithTimeout returns t with its own call timeout set to d. Run uses d when
// the call sets no timeout of its own.
func WithTimeout(t Tool, d time.Duration) TimeoutTool {
	return &timeoutTool{Tool: t, d: d}
}

type funcTool struct {
	name        string
	description string
	schema      json.RawMessage
	schemaErr   error // why the schema could not be derived
	fn          func(context.Context, json.RawMessage) (string, error)
}

func (f *funcTool) Name() string            { return f.name }
func (f *funcTool) Description() string     { return f.description }
func (f *funcTool) Schema() json.RawMessage { return f.schema }
func (f *funcTool) schemaError() error      { return f.schemaErr }
func (f *funcTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return f.fn(ctx, args)
}

type timeoutTool struct {
	Tool
	d time.Duration
}

func (t *timeoutTool) Timeout() time.Duration { return t.d }
