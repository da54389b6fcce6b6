package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/tmc/langchaingo/llms"
)

// validName is the rule model providers apply to function names.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// A Registry holds tools by name. The zero value is an empty registry ready
// to use; a Registry is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
}

// NewRegistry returns a registry holding ts. It reports every tool that
// could not be registered, joined into one error.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{}
	var errs []error
	for _, t := range ts {
		errs = append(errs, r.Register(t))
	}
	return r, errors.Join(errs...)
}

// Register adds t. It fails with ErrInvalidName for a name a model provider
// would refuse, ErrInvalidSchema for a schema that does not compile or does
// not describe an object, and ErrDuplicateTool for a name already taken.
func (r *Registry) Register(t Tool) error {
	name := t.Name()
	if !validName.MatchString(name) {
		return fmt.Errorf("%w %q: use 1 to 64 letters, digits, _ or -", ErrInvalidName, name)
	}
	if _, _, err := schemaOf(t); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[name]; ok {
		return fmt.Errorf("%w: %q is already registered", ErrDuplicateTool, name)
	}
	if r.tools == nil {
		r.tools = make(map[string]Tool)
	}
	r.tools[name] = t
	return nil
}

// Get returns the tool called name, or an *UnknownToolError (wrapping
// ErrUnknownTool) that lists the registered names.
func (r *Registry) Get(name string) (Tool, error) {
	r.mu.RLock()
	t, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return nil, &UnknownToolError{Name: name, Available: r.Names()}
	}
	return t, nil
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.tools))
	for name := range r.tools {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// List returns the registered tools sorted by name.
func (r *Registry) List() []Tool {
	names := r.Names()
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Tool, 0, len(names))
	for _, name := range names {
		if t, ok := r.tools[name]; ok {
			out = append(out, t)
		}
	}
	return out
}

// Subset returns a new registry with the named tools, and the names that
// are not registered here (in the order given, without repeats). Repeated
// names are taken once.
func (r *Registry) Subset(names ...string) (sub *Registry, unknown []string) {
	sub = &Registry{tools: make(map[string]Tool, len(names))}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, name := range names {
		if t, ok := r.tools[name]; ok {
			sub.tools[name] = t
		} else if !slices.Contains(unknown, name) {
			unknown = append(unknown, name)
		}
	}
	return sub, unknown
}

// LLMTools returns the registered tools as langchaingo tool definitions,
// sorted by name, to pass to a model with llms.WithTools. Parameters holds
// the schema decoded into a map[string]any, the form every langchaingo
// provider accepts.
func (r *Registry) LLMTools() []llms.Tool {
	ts := r.List()
	out := make([]llms.Tool, 0, len(ts))
	for _, t := range ts {
		out = append(out, LLMTool(t))
	}
	return out
}

// LLMTool returns t as a langchaingo tool definition of type "function".
func LLMTool(t Tool) llms.Tool {
	raw := t.Schema()
	if len(raw) == 0 {
		raw = emptyObjectSchema
	}
	var params map[string]any
	if err := json.Unmarshal(raw, &params); err != nil {
		// Only reachable for a tool that was never registered: keep the
		// definition usable and let the call report the schema error.
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return llms.Tool{
		Type: "function",
		Function: &llms.FunctionDefinition{
			Name:        t.Name(),
			Description: t.Description(),
			Parameters:  params,
		},
	}
}

// Run calls the tool called name through the package-level Run. An unknown
// name gives a failed result whose error is an *UnknownToolError, so the
// model can be told which tools exist.
func (r *Registry) Run(ctx context.Context, name string, args json.RawMessage, opts RunOptions) Result {
	t, err := r.Get(name)
	if err != nil {
		return Result{Tool: name, Status: StatusFailed, Err: err}
	}
	return Run(ctx, t, args, opts)
}
