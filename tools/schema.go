package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// schemaURL names every schema inside its own compiler; nothing is fetched
// from it.
const schemaURL = "https://coorflow.invalid/tool-arguments.json"

// compiled is a compiled schema or the reason it did not compile.
type compiled struct {
	schema *jsonschema.Schema
	err    error
}

// schemaCache holds every schema compiled so far, keyed by its exact bytes,
// so that a schema is compiled once however many calls validate against it.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]compiled
}

var schemas = &schemaCache{m: make(map[string]compiled)}

// get returns the compiled form of raw, compiling it on first use.
func (c *schemaCache) get(raw json.RawMessage) (*jsonschema.Schema, error) {
	key := string(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if got, ok := c.m[key]; ok {
		return got.schema, got.err
	}
	s, err := compileSchema(raw)
	c.m[key] = compiled{schema: s, err: err}
	return s, err
}

// compileSchema compiles raw, which must describe a JSON object. References
// to other documents are refused: a tool's schema must be self-contained.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if top["type"] != "object" {
		return nil, errors.New(`the top level must have "type": "object"`)
	}
	c := jsonschema.NewCompiler()
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("reference to %s: tool schemas must be self-contained", u)
	}
	if err := c.AddResource(schemaURL, bytes.NewReader(raw)); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// normalizeArgs maps empty arguments (which some models send for tools
// without parameters) to an empty object.
func normalizeArgs(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// schemaOf returns the tool's compiled argument schema and its bytes.
func schemaOf(t Tool) (*jsonschema.Schema, json.RawMessage, error) {
	if d, ok := t.(interface{ schemaError() error }); ok && d.schemaError() != nil {
		return nil, nil, fmt.Errorf("%w of tool %q: %w", ErrInvalidSchema, t.Name(), d.schemaError())
	}
	raw := t.Schema()
	if len(raw) == 0 {
		raw = emptyObjectSchema
	}
	s, err := schemas.get(raw)
	if err != nil {
		return nil, raw, fmt.Errorf("%w of tool %q: %w", ErrInvalidSchema, t.Name(), err)
	}
	return s, raw, nil
}

// validateArgs checks args against the tool's schema and returns an
// *ArgumentError describing every problem found, or nil.
func validateArgs(t Tool, args json.RawMessage) error {
	s, raw, err := schemaOf(t)
	if err != nil {
		return err
	}
	v, err := decodeArgs(normalizeArgs(args))
	if err != nil {
		return &ArgumentError{Tool: t.Name(), Schema: raw, Problems: []ArgumentProblem{{
			Message: "the arguments are not valid JSON: " + strings.TrimPrefix(err.Error(), "json: "),
		}}}
	}
	err = s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ArgumentError{Tool: t.Name(), Schema: raw, Problems: []ArgumentProblem{{Message: err.Error()}}}
	}
	return &ArgumentError{Tool: t.Name(), Schema: raw, Problems: leafProblems(ve)}
}

// decodeArgs decodes one JSON value, keeping numbers exact and refusing
// anything after it.
func decodeArgs(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the arguments object")
	}
	return v, nil
}

// leafProblems flattens a validation error tree into its leaves, which are
// the concrete complaints ("expected string, but got number"); the inner
// nodes only say that a subschema failed.
func leafProblems(ve *jsonschema.ValidationError) []ArgumentProblem {
	var out []ArgumentProblem
	seen := make(map[ArgumentProblem]bool)
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			p := ArgumentProblem{Field: e.InstanceLocation, Message: e.Message}
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}
