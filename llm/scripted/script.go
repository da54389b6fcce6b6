package scripted

import (
	"context"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Script says how a Model answers. For each call the Model tries, in
// order: the Rules, first match wins; then the next unused reply in Agents
// for the calling agent (llm.AgentFrom of the call's context, "" for
// unlabelled calls); then Default, but only for agents that have no entry
// in Agents — an agent whose replies have run out gets an error naming it
// and its turn, never a repeat or the default.
type Script struct {
	// Agents holds each agent's replies in order: Agents[name][i] answers
	// the (i+1)-th call of that agent that no rule answered.
	Agents map[string][]Reply
	// Rules answer calls by what they contain, before Agents.
	Rules []Rule
	// Default answers calls of agents absent from Agents; nil means such
	// calls fail.
	Default *Reply
	// Latency delays every reply that sets no Latency of its own.
	Latency time.Duration
	// InputContains, if set, names the requests the script was written
	// for: those that hold every one of these words (case-insensitively).
	// The Model does not read it; its user decides what answers other
	// requests (a workflow's demo model hands them to the reactive demo).
	// The YAML form is when_input_contains.
	InputContains []string
}

// For reports whether the script was written for request: whether the
// request holds every word of InputContains, case-insensitively.
func (s Script) For(request string) bool {
	request = strings.ToLower(request)
	for _, w := range s.InputContains {
		if !strings.Contains(request, strings.ToLower(w)) {
			return false
		}
	}
	return true
}

// Rule answers the calls that match it.
type Rule struct {
	// Agent restricts the rule to one agent's calls; "" matches any agent.
	Agent string
	// PromptContains, if set, must occur in the text of some message of
	// the call (the YAML form is when_prompt_contains).
	PromptContains string
	// PromptLacks, if set, must occur in no message of the call (the YAML
	// form is when_prompt_lacks): a rule for the call that has no "## Step"
	// section, say.
	PromptLacks string
	// Match, if set, must return true for the call. It runs under the
	// Model's lock and must not call the Model.
	Match func(Call) bool
	// Times limits how many calls the rule answers; 0 means no limit.
	Times int
	// Reply is the answer.
	Reply Reply
}

// Reply is one scripted answer.
type Reply struct {
	// Text is the content of the reply, streamed in word-sized chunks to
	// a streaming callback.
	Text string
	// Reasoning is optional reasoning content ("thinking"), returned in
	// ContentChoice.ReasoningContent and streamed to a reasoning callback.
	Reasoning string
	// ToolCalls are the tool calls of the reply; every name must be among
	// the tools the call offered.
	ToolCalls []ToolCall
	// StopReason defaults to "tool_calls" for a reply with tool calls and
	// "stop" otherwise, as OpenAI reports them.
	StopReason string
	// Err, if set, is returned instead of a response, after any wait and
	// latency.
	Err error
	// Latency delays the reply; it overrides Script.Latency. Cancelling
	// the call's context ends the wait with the context's error.
	Latency time.Duration
	// Wait, if set, is called before the reply is given, with the call's
	// context; an error from it fails the call. Barrier.Wait and Until fit.
	Wait func(ctx context.Context) error
}

// ToolCall is a tool call in a scripted reply.
type ToolCall struct {
	// ID defaults to "call_<agent>_<turn>_<n>", n counting from 1 in the
	// reply, so ids are stable from run to run.
	ID string
	// Name is the tool's name.
	Name string
	// Arguments is the JSON object of arguments; "" means "{}".
	Arguments string
}

// Call is a call the Model received, as recorded for assertions.
type Call struct {
	// Agent is the caller's label, from llm.AgentFrom.
	Agent string
	// Turn numbers the agent's calls from 1, in the order they arrived.
	Turn int
	// Messages are the messages of the call.
	Messages []llms.MessageContent
	// Options are the call options, tools offered included.
	Options llms.CallOptions
	// Response is the reply given, nil for a failed or unfinished call.
	Response *llms.ContentResponse
	// Err is the error returned, if any.
	Err error
	// PromptTokens estimates the input (llm.EstimateMessages).
	PromptTokens int
	// CompletionTokens estimates the output: text, reasoning, tool calls.
	CompletionTokens int
}

// Prompt returns the text parts of every message, one per line.
func (c Call) Prompt() string {
	var b strings.Builder
	for _, m := range c.Messages {
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok {
				b.WriteString(t.Text)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

// ToolNames returns the names of the tools offered to the call.
func (c Call) ToolNames() []string {
	var names []string
	for _, t := range c.Options.Tools {
		if t.Function != nil {
			names = append(names, t.Function.Name)
		}
	}
	for _, f := range c.Options.Functions {
		names = append(names, f.Name)
	}
	return names
}

// matches reports whether r applies to call.
func (r Rule) matches(call Call) bool {
	if r.Agent != "" && r.Agent != call.Agent {
		return false
	}
	if r.PromptContains != "" && !strings.Contains(call.Prompt(), r.PromptContains) {
		return false
	}
	if r.PromptLacks != "" && strings.Contains(call.Prompt(), r.PromptLacks) {
		return false
	}
	return r.Match == nil || r.Match(call)
}
