package scripted

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

// Model is an llms.Model that answers from a Script and records every call.
// It is safe for concurrent use.
type Model struct {
	script Script

	mu          sync.Mutex
	turns       map[string]int // calls received per agent
	used        map[string]int // Agents replies consumed per agent
	ruleUses    []int
	calls       []Call
	inFlight    int
	maxInFlight int
}

var _ llms.Model = (*Model)(nil)

// New returns a Model that follows s. The Model keeps its own copy of the
// maps and slices of s.
func New(s Script) *Model {
	agents := make(map[string][]Reply, len(s.Agents))
	for name, replies := range s.Agents {
		agents[name] = slices.Clone(replies)
	}
	s.Agents = agents
	s.Rules = slices.Clone(s.Rules)
	return &Model{
		script:   s,
		turns:    map[string]int{},
		used:     map[string]int{},
		ruleUses: make([]int, len(s.Rules)),
	}
}

// Call implements llms.Model.
func (m *Model) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// GenerateContent implements llms.Model: it picks the reply for the call
// (see Script), waits as the reply says, and returns it as a langchaingo
// client would, streaming the text to a streaming callback and reporting
// estimated token usage in GenerationInfo under the keys of langchaingo's
// OpenAI client (PromptTokens, CompletionTokens, TotalTokens,
// ReasoningTokens).
func (m *Model) GenerateContent(ctx context.Context, msgs []llms.MessageContent,
	opts ...llms.CallOption,
) (*llms.ContentResponse, error) {
	var co llms.CallOptions
	for _, o := range opts {
		o(&co)
	}
	call := Call{Agent: llm.AgentFrom(ctx), Messages: slices.Clone(msgs), Options: co,
		PromptTokens: llm.EstimateMessages(msgs)}
	idx, reply, err := m.begin(&call)
	defer m.end()
	if err == nil {
		err = m.await(ctx, reply)
	}
	var resp *llms.ContentResponse
	if err == nil {
		resp, err = m.respond(ctx, call, reply)
	}
	m.finish(idx, resp, err)
	return resp, err
}

// begin numbers the call, records it, and picks its reply.
func (m *Model) begin(call *Call) (int, Reply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns[call.Agent]++
	call.Turn = m.turns[call.Agent]
	m.inFlight++
	m.maxInFlight = max(m.maxInFlight, m.inFlight)
	m.calls = append(m.calls, *call)
	reply, err := m.pick(*call)
	return len(m.calls) - 1, reply, err
}

// pick chooses the reply to call; m.mu is held.
func (m *Model) pick(call Call) (Reply, error) {
	for i, r := range m.script.Rules {
		if r.Times > 0 && m.ruleUses[i] >= r.Times {
			continue
		}
		if r.matches(call) {
			m.ruleUses[i]++
			return r.Reply, nil
		}
	}
	replies, ok := m.script.Agents[call.Agent]
	if ok {
		n := m.used[call.Agent]
		if n >= len(replies) {
			return Reply{}, &TurnError{Agent: call.Agent, Turn: call.Turn, Err: ErrExhausted,
				Reason: fmt.Sprintf("script exhausted: %d replies scripted, all used", len(replies))}
		}
		m.used[call.Agent] = n + 1
		return replies[n], nil
	}
	if m.script.Default != nil {
		return *m.script.Default, nil
	}
	return Reply{}, &TurnError{Agent: call.Agent, Turn: call.Turn, Err: ErrNoReply,
		Reason: fmt.Sprintf("no rule matches, no replies for this agent and no default (scripted agents: %v)",
			slices.Sorted(maps.Keys(m.script.Agents)))}
}

// await runs the reply's wait and latency.
func (m *Model) await(ctx context.Context, r Reply) error {
	if r.Wait != nil {
		if err := r.Wait(ctx); err != nil {
			return fmt.Errorf("scripted: wait: %w", err)
		}
	}
	latency := r.Latency
	if latency == 0 {
		latency = m.script.Latency
	}
	if latency <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("scripted: latency: %w", context.Cause(ctx))
	}
}

// respond builds the response of reply and streams it.
func (m *Model) respond(ctx context.Context, call Call, r Reply) (*llms.ContentResponse, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	choice := &llms.ContentChoice{Content: r.Text, ReasoningContent: r.Reasoning, StopReason: r.StopReason}
	offered := call.ToolNames()
	for i, tc := range r.ToolCalls {
		if !slices.Contains(offered, tc.Name) {
			return nil, &TurnError{Agent: call.Agent, Turn: call.Turn, Err: ErrToolNotOffered,
				Reason: fmt.Sprintf("reply calls tool %q, but the call offered %v", tc.Name, offered)}
		}
		choice.ToolCalls = append(choice.ToolCalls, toolCall(call, i, tc))
	}
	if len(choice.ToolCalls) > 0 {
		choice.FuncCall = choice.ToolCalls[0].FunctionCall
	}
	if choice.StopReason == "" {
		choice.StopReason = "stop"
		if len(choice.ToolCalls) > 0 {
			choice.StopReason = "tool_calls"
		}
	}
	if err := stream(ctx, call.Options, r); err != nil {
		return nil, err
	}
	completion := completionTokens(choice)
	reasoning := llm.EstimateTokens(r.Reasoning)
	choice.GenerationInfo = map[string]any{
		"PromptTokens":     call.PromptTokens,
		"CompletionTokens": completion,
		"TotalTokens":      call.PromptTokens + completion,
		"ReasoningTokens":  reasoning,
		"ThinkingContent":  r.Reasoning,
		"ThinkingTokens":   reasoning,
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}, nil
}

// toolCall converts a scripted tool call, filling in id and arguments.
func toolCall(call Call, i int, tc ToolCall) llms.ToolCall {
	id := tc.ID
	if id == "" {
		id = fmt.Sprintf("call_%s_%d_%d", idSafe(call.Agent), call.Turn, i+1)
	}
	args := tc.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	return llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: args}}
}

// idSafe turns an agent name into letters, digits and underscores.
func idSafe(agent string) string {
	if agent == "" {
		return "anon"
	}
	return strings.Map(func(r rune) rune {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}, agent)
}

// completionTokens estimates the output tokens of a choice.
func completionTokens(c *llms.ContentChoice) int {
	n := llm.EstimateTokens(c.Content) + llm.EstimateTokens(c.ReasoningContent)
	for _, tc := range c.ToolCalls {
		n += llm.EstimateTokens(tc.FunctionCall.Name) + llm.EstimateTokens(tc.FunctionCall.Arguments)
	}
	return n
}

// stream sends the reasoning, then the text, in word-sized chunks to the
// streaming callbacks of the call.
func stream(ctx context.Context, co llms.CallOptions, r Reply) error {
	if co.StreamingReasoningFunc != nil {
		for _, chunk := range Chunks(r.Reasoning) {
			if err := co.StreamingReasoningFunc(ctx, []byte(chunk), nil); err != nil {
				return fmt.Errorf("scripted: streaming reasoning func returned an error: %w", err)
			}
		}
	}
	for _, chunk := range Chunks(r.Text) {
		if co.StreamingFunc != nil {
			if err := co.StreamingFunc(ctx, []byte(chunk)); err != nil {
				return fmt.Errorf("scripted: streaming func returned an error: %w", err)
			}
		}
		if co.StreamingReasoningFunc != nil {
			if err := co.StreamingReasoningFunc(ctx, nil, []byte(chunk)); err != nil {
				return fmt.Errorf("scripted: streaming reasoning func returned an error: %w", err)
			}
		}
	}
	return nil
}

// Chunks splits s the way the Model streams it: each chunk is a word with
// the whitespace that follows it, so the chunks concatenate to s.
func Chunks(s string) []string {
	var chunks []string
	start, inSpace := 0, false
	for i, r := range s {
		space := unicode.IsSpace(r)
		if inSpace && !space {
			chunks = append(chunks, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		chunks = append(chunks, s[start:])
	}
	return chunks
}

// finish records the outcome of call idx.
func (m *Model) finish(idx int, resp *llms.ContentResponse, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &m.calls[idx]
	c.Response, c.Err = resp, err
	if resp != nil {
		c.CompletionTokens = completionTokens(resp.Choices[0])
	}
}

// end marks a call as no longer in flight.
func (m *Model) end() {
	m.mu.Lock()
	m.inFlight--
	m.mu.Unlock()
}
