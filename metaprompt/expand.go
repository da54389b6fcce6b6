package metaprompt

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/store"
	"github.com/coorflow/coorflow/window"
)

// Config configures an Expander.
type Config struct {
	// Model writes the prompts; required. The Expander wraps it with
	// llm.Observe, so its calls are journaled and reported inside a node.
	Model llms.Model
	// ModelName names the model; required. It is part of the cache key and
	// of the model-call events.
	ModelName string
	// Tier is the model's tier, reported in model-call events.
	Tier string
	// Provider and Price price the calls (llm.ModelInfo); without them
	// the built-in price of ModelName is used.
	Provider llm.Provider
	Price    *llm.Price
	// Cache, when set, keeps every prompt written under
	// team/metaprompts/<Key> for the owner of the run (store.RuntimeOwner)
	// or Owner, and Expand returns a kept prompt instead of calling the
	// model.
	Cache store.Store
	// Owner is the owner of the cache entries outside a run whose
	// runtime names one; required with Cache.
	Owner string
	// CallOptions are passed to every model call (temperature, max tokens).
	CallOptions []llms.CallOption
	// Now returns the time recorded in cache entries; time.Now by default.
	Now func() time.Time
}

// Expander turns briefs into system prompts. It is safe for concurrent
// use.
type Expander struct {
	model    llms.Model
	name     string
	cache    store.Store
	owner    string
	callOpts []llms.CallOption
	now      func() time.Time
}

// New returns an Expander configured by cfg.
func New(cfg Config) (*Expander, error) {
	switch {
	case cfg.Model == nil:
		return nil, fmt.Errorf("%w: no model", ErrConfig)
	case strings.TrimSpace(cfg.ModelName) == "":
		return nil, fmt.Errorf("%w: no model name (it is part of the cache key)", ErrConfig)
	case cfg.Cache != nil && cfg.Owner == "":
		return nil, fmt.Errorf("%w: a cache needs an owner", ErrConfig)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Expander{
		model:    window.Observe(llm.Observe(cfg.Model, llm.ModelInfo{Tier: cfg.Tier, Model: cfg.ModelName, Provider: cfg.Provider, Price: cfg.Price})),
		name:     cfg.ModelName,
		cache:    cfg.Cache,
		owner:    cfg.Owner,
		callOpts: cfg.CallOptions,
		now:      now,
	}, nil
}

// Prompt is a system prompt and where it came from.
type Prompt struct {
	// Text is the system prompt.
	Text string `json:"text"`
	// Model is the name of the model that wrote it; empty when pinned.
	Model string `json:"model,omitempty"`
	// Key is the cache key of the brief and model; empty when pinned.
	Key string `json:"key,omitempty"`
	// Created is when the model wrote it; zero when pinned.
	Created time.Time `json:"created,omitzero"`
	// Cached is true when it came from the cache, without a model call.
	Cached bool `json:"cached,omitempty"`
	// Pinned is true when it is the brief's Pinned text.
	Pinned bool `json:"pinned,omitempty"`
	// Repaired is true when the first reply failed Check and the repair
	// round fixed it.
	Repaired bool `json:"repaired,omitempty"`
	// Calls counts the model calls this expansion made: 0, 1 or 2.
	Calls int `json:"calls,omitempty"`
	// Tokens estimates the prompt's size (llm.EstimateTokens).
	Tokens int `json:"tokens"`
}

// Expand returns the system prompt for the agent the brief describes.
//
// A brief with a Pinned prompt gets it back as it is: no model call, no
// Check (the user is in charge of a prompt they wrote; the factory can
// call Check to warn), no cache. Otherwise a prompt cached for the same
// brief and model is returned if it still passes Check; if not, the model
// is asked (calls labelled llm.WithAgent "metaprompt:<name>"), the reply
// is cleaned of <think> blocks and a wrapping code fence and checked; when
// Check finds problems they are sent back for one repair round, and when
// the repaired reply fails too Expand returns an *Error (ErrInvalidPrompt)
// holding it. A good prompt is cached.
//
// Inside a graph node the whole expansion is one journal entry,
// graph.Do(ctx, "metaprompt <name>"), in the scope "metaprompt:<name>":
// a node that runs again after an interrupt or a crash gets the recorded
// prompt back without touching the model or the cache. Concurrent
// expansions in one node need different names.
func (e *Expander) Expand(ctx context.Context, b Brief) (Prompt, error) {
	b = b.normalized()
	if err := b.validate(); err != nil {
		return Prompt{}, err
	}
	if b.pinned() {
		return Prompt{Text: b.Pinned, Pinned: true, Tokens: llm.EstimateTokens(b.Pinned)}, nil
	}
	ctx = graph.WithScope(ctx, "metaprompt:"+b.Name)
	return graph.Do(ctx, "metaprompt "+b.Name, func(ctx context.Context) (Prompt, error) {
		return e.expand(ctx, b)
	})
}

// expand runs one expansion: cache, model, repair, cache.
func (e *Expander) expand(ctx context.Context, b Brief) (Prompt, error) {
	key := Key(b, e.name)
	p, rev, err := e.lookup(ctx, key)
	if err != nil || p.Cached {
		return p, err
	}
	text, calls, err := e.write(llm.WithAgent(ctx, "metaprompt:"+b.Name), b)
	if err != nil {
		return Prompt{}, err
	}
	p = Prompt{Text: text, Model: e.name, Key: key, Created: e.now().UTC(),
		Repaired: calls > 1, Calls: calls, Tokens: llm.EstimateTokens(text)}
	if err := e.save(ctx, b, p, rev); err != nil {
		return Prompt{}, err
	}
	return p, nil
}

// write asks the model for the prompt, with one repair round, and returns
// it with the number of calls made.
func (e *Expander) write(ctx context.Context, b Brief) (string, int, error) {
	msgs := Request(b)
	text, err := e.call(ctx, b.Name, 1, msgs)
	if err != nil {
		return "", 1, err
	}
	problems := Check(text)
	if len(problems) == 0 {
		return text, 1, nil
	}
	msgs = append(msgs,
		llms.TextParts(llms.ChatMessageTypeAI, orPlaceholder(text)),
		llms.TextParts(llms.ChatMessageTypeHuman, repairMessage(problems)))
	text, err = e.call(ctx, b.Name, 2, msgs)
	if err != nil {
		return "", 2, err
	}
	if problems := Check(text); len(problems) > 0 {
		return "", 2, &Error{Agent: b.Name, Attempts: 2, Problems: problems, Output: text}
	}
	return text, 2, nil
}

// call makes one model call and returns its cleaned reply.
func (e *Expander) call(ctx context.Context, agent string, attempt int, msgs []llms.MessageContent) (string, error) {
	resp, err := e.model.GenerateContent(ctx, msgs, e.callOpts...)
	if err != nil {
		return "", fmt.Errorf("metaprompt: agent %q: model call %d: %w", agent, attempt, err)
	}
	if len(resp.Choices) == 0 {
		return "", fmt.Errorf("metaprompt: agent %q: model call %d: %w", agent, attempt, llm.ErrTransient)
	}
	return clean(resp.Choices[0].Content), nil
}

func orPlaceholder(s string) string {
	if s == "" {
		return "(empty reply)"
	}
	return s
}

// repairMessage sends the problems back and asks for the whole prompt again.
func repairMessage(problems []Problem) string {
	var sb strings.Builder
	sb.WriteString("The system prompt you wrote cannot be used yet:\n")
	for _, p := range problems {
		sb.WriteString("- " + p.Message + "\n")
	}
	sb.WriteString("\nWrite the whole system prompt again with these problems fixed, keeping what was right. " +
		"Start with the one-sentence task line and use the headings " + SectionSteps + ", " +
		SectionOutputFormat + ", optionally " + SectionExamples + ", and " + SectionNotes + ". " +
		"Reply with the prompt only: no preamble, no code fence.")
	return sb.String()
}
