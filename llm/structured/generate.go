package structured

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/tmc/langchaingo/llms"
)

// DefaultRepairs is how many times Generate asks again after an invalid
// reply, unless WithRepairs says otherwise.
const DefaultRepairs = 2

var (
	// ErrSchema means the schema could not be derived from the Go type or
	// compiled.
	ErrSchema = errors.New("structured: invalid schema")
	// ErrInvalidOutput means the model gave no valid reply within the
	// repairs allowed; the error is an *Error.
	ErrInvalidOutput = errors.New("structured: no valid output")
	// ErrNoChoices means the model returned a response without choices.
	ErrNoChoices = errors.New("structured: model returned no choices")
)

// Error is the failure of Generate after its last repair: what was
// expected, the model's last reply and what was wrong with it. It matches
// ErrInvalidOutput and Err.
type Error struct {
	// Attempts is the number of model calls made.
	Attempts int
	// Expected describes the schema in words (see Summarize).
	Expected string
	// Output is the model's last reply, as written.
	Output string
	// Problems says what was wrong with Output, as sent back to the model.
	// When the reply held several JSON values and none was valid, they are
	// the problems of the one closest to the schema: the first of the
	// schema's type.
	Problems []string
	// Err is the cause: a JSON syntax error, a *jsonschema.ValidationError,
	// or the error of decoding into the Go type.
	Err error
}

// maxShownOutput bounds how much of the reply Error shows.
const maxShownOutput = 200

// Error returns "structured: no valid output after N attempts: expected
// ...; received "...": problems", the reply quoted and cut to 200 bytes.
func (e *Error) Error() string {
	attempts := fmt.Sprintf(" after %d attempts", e.Attempts)
	switch e.Attempts {
	case 0: // Decode: no model call
		attempts = ""
	case 1:
		attempts = " after 1 attempt"
	}
	return fmt.Sprintf("structured: no valid output%s: expected %s; received %s: %s",
		attempts, e.Expected, quoteShort(e.Output, maxShownOutput), strings.Join(e.Problems, "; "))
}

// quoteShort quotes s, cut to at most n bytes on a rune boundary, saying
// how long it was when cut.
func quoteShort(s string, n int) string {
	if len(s) <= n {
		return strconv.Quote(s)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// Unwrap returns ErrInvalidOutput and the cause.
func (e *Error) Unwrap() []error { return []error{ErrInvalidOutput, e.Err} }

// Option configures Generate.
type Option func(*options)

type options struct {
	schema      []byte
	repairs     int
	callOpts    []llms.CallOption
	instruction *string
}

// WithSchema validates replies against schema (JSON Schema, draft 2020-12
// unless it says otherwise) instead of the schema derived from the Go type.
func WithSchema(schema []byte) Option {
	return func(o *options) { o.schema = schema }
}

// WithRepairs sets how many times the model is asked again after an
// invalid reply; 0 means a single attempt.
func WithRepairs(n int) Option {
	return func(o *options) { o.repairs = max(n, 0) }
}

// WithCallOptions passes options to every model call, e.g.
// llms.WithJSONMode() or llms.WithMaxTokens.
func WithCallOptions(opts ...llms.CallOption) Option {
	return func(o *options) { o.callOpts = append(o.callOpts, opts...) }
}

// WithInstruction replaces the instruction that Generate adds to the last
// user message; "%s" in it, if present, is replaced by the schema. An
// empty instruction adds nothing, for prompts that already ask for the JSON.
func WithInstruction(text string) Option {
	return func(o *options) { o.instruction = &text }
}

// defaultInstruction asks for JSON matching the schema.
const defaultInstruction = "Reply with only a JSON value that matches this JSON Schema, " +
	"with no code fences and no other text:\n%s"

// Generate asks model for a JSON value matching the schema of T (see
// Schema) or the one given WithSchema, and decodes it into T. It adds an
// instruction with the schema to the conversation, finds the JSON in the
// reply (see ExtractJSON), validates it, and when it is not valid sends the
// reply back with the problems found and asks again, up to the repairs
// allowed (DefaultRepairs). Then it fails with an *Error holding the last
// reply. Errors of the model itself are returned as they are, wrapped,
// without repair: retrying them is the model wrapper's job (llm.WithRetry).
// The caller's messages are not modified.
func Generate[T any](ctx context.Context, model llms.Model, messages []llms.MessageContent,
	opts ...Option,
) (T, error) {
	var zero T
	o := options{repairs: DefaultRepairs}
	for _, opt := range opts {
		opt(&o)
	}
	schema := o.schema
	if schema == nil {
		var err error
		if schema, err = SchemaFor[T](); err != nil {
			return zero, err
		}
	}
	compiled, err := compile(schema)
	if err != nil {
		return zero, err
	}
	want := rootTypes(schema)
	convo := withInstruction(messages, instruction(o, schema))
	var last *Error
	for attempt := 1; attempt <= 1+o.repairs; attempt++ {
		resp, err := model.GenerateContent(ctx, convo, o.callOpts...)
		if err != nil {
			return zero, fmt.Errorf("structured: attempt %d: %w", attempt, err)
		}
		if len(resp.Choices) == 0 {
			return zero, fmt.Errorf("%w (attempt %d)", ErrNoChoices, attempt)
		}
		reply := resp.Choices[0].Content
		v, problems, cause := parse[T](reply, compiled, want)
		if problems == nil {
			return v, nil
		}
		last = &Error{Attempts: attempt, Expected: Summarize(schema), Output: reply, Problems: problems, Err: cause}
		convo = append(convo,
			llms.TextParts(llms.ChatMessageTypeAI, orPlaceholder(reply, "(empty reply)")),
			llms.TextParts(llms.ChatMessageTypeHuman, repairPrompt(problems)))
	}
	return zero, last
}

func orPlaceholder(s, fallback string) string {
	if strings.TrimSpace(s) == "" {
		return fallback
	}
	return s
}

// compile compiles a schema without ever loading remote references.
func compile(schema []byte) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("remote reference %s: not loaded", u)
	}
	const url = "mem://structured/schema.json"
	if err := c.AddResource(url, bytes.NewReader(schema)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	return s, nil
}

func instruction(o options, schema []byte) string {
	text := defaultInstruction
	if o.instruction != nil {
		text = *o.instruction
	}
	return strings.Replace(text, "%s", string(schema), 1)
}

// withInstruction returns messages with text added to the last message
// when it is the user's, or as a new user message otherwise.
func withInstruction(messages []llms.MessageContent, text string) []llms.MessageContent {
	convo := slices.Clone(messages)
	if text == "" {
		return convo
	}
	if n := len(convo); n > 0 && convo[n-1].Role == llms.ChatMessageTypeHuman {
		last := convo[n-1]
		last.Parts = append(slices.Clone(last.Parts), llms.TextPart(text))
		convo[n-1] = last
		return convo
	}
	return append(convo, llms.TextParts(llms.ChatMessageTypeHuman, text))
}

// parse finds the JSON values of a reply (see candidates) and decodes the
// first that validates against the schema and fits T. When none does, it
// returns the problems of the first of the schema's root type (want; any
// type when want is empty), or of the first value, and their cause.
func parse[T any](reply string, schema *jsonschema.Schema, want []string) (T, []string, error) {
	var zero T
	cands, err := candidates(reply)
	if len(cands) == 0 {
		return zero, []string{"the reply is not valid JSON: " + err.Error()}, err
	}
	var problems []string
	var cause error
	chosen := false
	for _, raw := range cands {
		v, ps, err := check[T](raw, schema)
		if ps == nil {
			return v, nil, nil
		}
		if problems == nil || (!chosen && matchesType(raw, want)) {
			problems, cause = ps, err
			chosen = matchesType(raw, want)
		}
	}
	return zero, problems, cause
}

// check validates one JSON value and decodes it into T. It returns the
// problems found, nil when there are none, and their cause.
func check[T any](raw json.RawMessage, schema *jsonschema.Schema) (T, []string, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var inst any
	if err := dec.Decode(&inst); err != nil {
		return v, []string{"the reply is not valid JSON: " + err.Error()}, err
	}
	if err := schema.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return v, leafErrors(ve), err
		}
		return v, []string{err.Error()}, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, []string{"the JSON does not fit the expected type: " + err.Error()}, err
	}
	return v, nil, nil
}

// leafErrors lists the most specific validation errors with their place.
func leafErrors(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := e.InstanceLocation
			if loc == "" {
				loc = "(root)"
			}
			if msg := "at " + loc + ": " + e.Message; !slices.Contains(out, msg) {
				out = append(out, msg)
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

// repairPrompt asks the model to fix its reply.
func repairPrompt(problems []string) string {
	var b strings.Builder
	b.WriteString("Your reply could not be used:\n")
	for _, p := range problems {
		b.WriteString("- " + p + "\n")
	}
	b.WriteString("Reply again with only the corrected JSON, matching the schema, " +
		"with no code fences and no other text.")
	return b.String()
}
