package react

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/window"
)

// DefaultMaxTurns is the number of model calls with tools a ReAct agent
// makes before it is asked for its best answer (Deer-Flow's default).
const DefaultMaxTurns = 25

// ErrNoModel: a ReAct agent was configured without a model.
var ErrNoModel = errors.New("react: no model")

// Config configures a ReAct agent.
type Config struct {
	// Name labels the agent's model calls (llm.WithAgent) and its events.
	Name string
	// Model answers; it is wrapped with Observe, so calls made inside a
	// graph node are journaled and reported. Info names it in events.
	Model llms.Model
	Info  llm.ModelInfo
	// SystemPrompt opens every conversation.
	SystemPrompt string
	// Tools the agent may call; nil means none.
	Tools *tools.Registry
	// MaxTurns caps the model calls that may use tools (DefaultMaxTurns).
	MaxTurns int
	// ToolTimeout bounds each tool call (tools.DefaultTimeout when zero).
	ToolTimeout time.Duration
	// CallOptions go to every model call (temperature, max tokens...).
	CallOptions []llms.CallOption
	// Window, when set, assembles every model call's messages from the
	// system prompt, the task, its context parts and the conversation so
	// far, under Budget: it offloads large tool results, summarizes a long
	// history, leaves out what does not fit, and publishes a snapshot of
	// what the call saw. Without it the conversation is sent as it is.
	Window *window.Builder
	Budget window.Budget
}

// Agent is a ReAct agent: it reasons and acts: it calls its model with its
// tools, runs the tools the model asks for — concurrently — and feeds their
// results back, until the model answers without asking for a tool or the
// turn limit is reached. At the limit it makes one last call without tools
// asking for its best answer: hitting the limit is not an error.
//
// An Agent is safe for concurrent use: each Run has its own conversation.
type Agent struct {
	cfg   Config
	model llms.Model
	tools *tools.Caller
}

// New checks cfg and returns the agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, fmt.Errorf("%w: ReAct agent %q needs a model", ErrNoModel, cfg.Name)
	}
	if cfg.Name == "" {
		return nil, errors.New("react: a ReAct agent needs a name")
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	return &Agent{cfg: cfg, model: window.Observe(llm.Observe(cfg.Model, cfg.Info)), tools: tools.Observe(cfg.Tools, tools.RecordFailures())}, nil
}

// Name returns the agent's name.
func (a *Agent) Name() string { return a.cfg.Name }

// Model returns the agent's model, wrapped with llm.Observe and window.Observe.
func (a *Agent) Model() llms.Model { return a.model }

// HasWindow reports whether the agent assembles its calls with a window.
func (a *Agent) HasWindow() bool { return a != nil && a.cfg.Window != nil }

// Task is what a Run works on.
type Task struct {
	// Input is the task, as the user message that starts the conversation.
	Input string
	// History, when set, is a conversation to continue: it is sent after
	// Input (if any), and the agent's turns follow it; to continue a chat,
	// leave Input empty and end History with the user's message (as Graph
	// does). With a window it is part of the "history" part.
	History []llms.MessageContent
	// Scope names this run of the agent in event paths and journal keys;
	// concurrent runs of one agent inside a node need different scopes.
	// Default: "agent:<name>".
	Scope string
	// Run identifies this run of the agent in agent events.
	Run string
	// Parts are more context for the task — handoffs, notes, completed
	// steps — given to the window as parts of their own (each can be
	// compacted or left out on its own). Without a window they are sent
	// as messages before Input.
	Parts []window.Part
}

// Usage counts the tokens of an agent's model calls.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	Calls            int `json:"calls"`
}

// Result is what a Run produced.
type Result struct {
	// Output is the final answer; Reasoning the model's reasoning for it,
	// when the provider returns one.
	Output    string
	Reasoning string
	// Messages is the whole conversation, final answer included.
	Messages []llms.MessageContent
	// Added are the messages the run added to the conversation: the
	// model's replies, tool calls included, and the tool results, in
	// order, the final answer last (the prompt sent at the turn limit is
	// left out). Graph appends them to Messages.
	Added []llms.MessageContent
	// Turns counts the model calls; ToolCalls the tool calls made.
	Turns     int
	ToolCalls int
	// HitTurnLimit is true when the answer came from the last call made
	// without tools after MaxTurns.
	HitTurnLimit bool
	Usage        Usage
}

// turnLimitPrompt asks for an answer when the turns are used up.
const turnLimitPrompt = "You have used all %d of your turns with tools. Do not call any tool. " +
	"Answer now with the best answer you can give from what you have found so far, " +
	"and say what remains uncertain."

// Run works on task until the model answers.
func (a *Agent) Run(ctx context.Context, task Task) (*Result, error) {
	scope := task.Scope
	if scope == "" {
		scope = "agent:" + a.cfg.Name
	}
	ctx = llm.WithAgent(graph.WithScope(ctx, scope), a.cfg.Name)
	graph.Emit(ctx, agentevent.Started{
		Agent: a.cfg.Name, Run: task.Run, Task: task.Input, Tools: a.toolNames(), Tier: a.cfg.Info.Tier,
	})
	res, err := a.loop(ctx, task)
	end := agentevent.Ended{Agent: a.cfg.Name, Run: task.Run}
	if err != nil {
		end.Err = err.Error()
	} else {
		end.Output = res.Output
	}
	graph.Emit(ctx, end)
	return res, err
}

func (a *Agent) toolNames() []string {
	if a.cfg.Tools == nil {
		return nil
	}
	return a.cfg.Tools.Names()
}

func (a *Agent) loop(ctx context.Context, task Task) (*Result, error) {
	c := &conversation{a: a, task: task, history: append([]llms.MessageContent{}, task.History...)}
	res := &Result{}
	opts := a.cfg.CallOptions
	if a.cfg.Tools != nil && len(a.cfg.Tools.Names()) > 0 {
		opts = append(append([]llms.CallOption{}, opts...), llms.WithTools(a.cfg.Tools.LLMTools()))
	}
	for turn := 1; ; turn++ {
		last := turn > a.cfg.MaxTurns
		callOpts := opts
		if last {
			c.history = append(c.history, llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf(turnLimitPrompt, a.cfg.MaxTurns)))
			callOpts = a.cfg.CallOptions
			res.HitTurnLimit = true
		}
		choice, err := c.call(ctx, callOpts, res)
		if err != nil {
			return res, fmt.Errorf("react: agent %q, turn %d: %w", a.cfg.Name, turn, err)
		}
		reply := assistantMessage(choice)
		c.history = append(c.history, reply)
		if last && len(choice.ToolCalls) > 0 { // tool calls that will not run: keep the text
			reply = llms.TextParts(llms.ChatMessageTypeAI, choice.Content)
		}
		res.Added = append(res.Added, reply)
		if len(choice.ToolCalls) == 0 || last {
			res.Output, res.Reasoning, res.Messages = choice.Content, choice.ReasoningContent, c.transcript()
			return res, nil
		}
		results, err := a.runTools(ctx, choice.ToolCalls, res)
		if err != nil {
			return res, err
		}
		c.history = append(c.history, results...)
		res.Added = append(res.Added, results...)
	}
}

// conversation is one Run's context: the fixed parts, and the history
// (the task's, then the agent's turns) that grows turn by turn.
type conversation struct {
	a       *Agent
	task    Task
	history []llms.MessageContent
}

// transcript returns the conversation as it is sent without a window.
func (c *conversation) transcript() []llms.MessageContent {
	var msgs []llms.MessageContent
	if c.a.cfg.SystemPrompt != "" {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeSystem, c.a.cfg.SystemPrompt))
	}
	for _, p := range c.task.Parts {
		if p.Text != "" {
			role := p.Role
			if role == "" {
				role = llms.ChatMessageTypeHuman
			}
			msgs = append(msgs, llms.TextParts(role, p.Text))
		}
		msgs = append(msgs, p.Messages...)
	}
	if c.task.Input != "" {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, c.task.Input))
	}
	return append(msgs, c.history...)
}

// call makes one model call, through the window when there is one.
func (c *conversation) call(ctx context.Context, opts []llms.CallOption, res *Result) (*llms.ContentChoice, error) {
	a := c.a
	var resp *llms.ContentResponse
	var sent []llms.MessageContent
	var err error
	if a.cfg.Window == nil {
		sent = c.transcript()
		resp, err = a.model.GenerateContent(ctx, sent, opts...)
	} else {
		var wres window.Result
		resp, wres, err = a.cfg.Window.Generate(ctx, a.model, window.Request{Agent: a.cfg.Name, Budget: a.cfg.Budget, Parts: c.parts()}, opts...)
		sent = wres.Messages
		if h, ok := wres.Compacted["history"]; ok {
			c.history = h // summarized or offloaded for good
		}
	}
	res.Turns++
	if err != nil {
		return nil, err
	}
	p, cmp := llm.Usage(resp, sent)
	res.Usage.PromptTokens += p
	res.Usage.CompletionTokens += cmp
	res.Usage.Calls++
	return resp.Choices[0], nil
}

// parts returns the window parts of the next call.
func (c *conversation) parts() []window.Part {
	var ps []window.Part
	if c.a.cfg.SystemPrompt != "" {
		ps = append(ps, window.Part{Name: "system", Kind: window.KindSystem, Text: c.a.cfg.SystemPrompt, Required: true})
	}
	ps = append(ps, c.task.Parts...)
	if c.task.Input != "" {
		ps = append(ps, window.Part{Name: "task", Kind: window.KindTask, Text: c.task.Input, Required: true})
	}
	if len(c.history) > 0 {
		ps = append(ps, window.Part{Name: "history", Kind: window.KindHistory, Messages: c.history, Required: true})
	}
	return ps
}

// assistantMessage turns a model's reply into the message that records it
// in the conversation, tool calls included.
func assistantMessage(c *llms.ContentChoice) llms.MessageContent {
	m := llms.MessageContent{Role: llms.ChatMessageTypeAI}
	if c.Content != "" || len(c.ToolCalls) == 0 {
		m.Parts = append(m.Parts, llms.TextContent{Text: c.Content})
	}
	for _, tc := range c.ToolCalls {
		m.Parts = append(m.Parts, tc)
	}
	return m
}

// runTools runs the tool calls of one reply concurrently and returns their
// results as tool messages, in the order the model asked for them. A tool
// that interrupts the run (graph.Interrupt, such as AskHuman) does not
// produce a result: the interrupts are returned as the error, after the
// other calls have finished.
func (a *Agent) runTools(ctx context.Context, calls []llms.ToolCall, res *Result) ([]llms.MessageContent, error) {
	out := make([]llms.MessageContent, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, tc := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = a.runTool(ctx, tc)
		}()
	}
	wg.Wait()
	res.ToolCalls += len(calls)
	return out, errors.Join(errs...)
}

func (a *Agent) runTool(ctx context.Context, tc llms.ToolCall) (llms.MessageContent, error) {
	call := tools.Call{ID: tc.ID}
	if tc.FunctionCall != nil {
		call.Name, call.Args = tc.FunctionCall.Name, json.RawMessage(tc.FunctionCall.Arguments)
	}
	res, err := a.tools.Run(ctx, call, tools.RunOptions{Timeout: a.cfg.ToolTimeout})
	var ie *graph.InterruptError
	if errors.As(err, &ie) {
		return llms.MessageContent{}, ie
	}
	// Any other error is the journal's, and res tells the model about it.
	return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: tc.ID, Name: call.Name, Content: res.Text()},
	}}, nil
}
