package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/window"
)

// CoordinatorConfig configures the coordinator node.
type CoordinatorConfig struct {
	Model llms.Model
	Info  llm.ModelInfo
	// Next is the node a task is handed to (the planner, or a background
	// investigator before it).
	Next string
}

// handoffTool is the tool the coordinator's model calls to hand a task
// over. Routing is decided by this call, never by matching its text.
var handoffTool = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name:        "handoff_to_planner",
	Description: "Hand a task to the planning team. Call it for any request that needs research, analysis, computation or writing.",
	Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"task":   map[string]any{"type": "string", "description": "The task, stated completely and on its own"},
			"locale": map[string]any{"type": "string", "description": "The user's locale, e.g. en-US"},
		},
		"required": []string{"task", "locale"},
	},
}}

// Coordinator returns the node that receives the user's message. Each of
// its runs begins a turn of the conversation (CurrentTurn): the channels
// of one turn are set back to empty, while the conversation (Messages,
// Turns) and the findings of earlier turns stay. Its model sees the
// conversation so far (the last messages, cut to a bound) and the new
// message. Small talk and off-topic requests it answers itself: it writes
// Answer and the reply to Messages, ends the turn and the run, and the
// exchange never reaches the planner (discard context). A task it hands
// off through the handoff_to_planner tool call: it writes Request and
// Locale — the task as the model stated it, self-contained, not the raw
// conversation — and goes to Next.
func Coordinator(cfg CoordinatorConfig) (graph.NodeFunc, error) {
	if cfg.Model == nil {
		return nil, fmt.Errorf("%w: the coordinator needs a model", ErrNoModel)
	}
	if cfg.Next == "" {
		return nil, fmt.Errorf("nodes: the coordinator needs its Next node")
	}
	model := window.Observe(llm.Observe(cfg.Model, cfg.Info))
	return func(ctx context.Context, s graph.State) (graph.Command, error) {
		input := Input.Get(s)
		msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, prompt("coordinator", nil))}
		for _, m := range conversation(s) {
			role := llms.ChatMessageTypeHuman
			if m.Role == "assistant" {
				role = llms.ChatMessageTypeAI
			}
			msgs = append(msgs, llms.TextParts(role, m.Content))
		}
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, input))
		resp, err := model.GenerateContent(llm.WithAgent(ctx, "coordinator"), msgs, llms.WithTools([]llms.Tool{handoffTool}))
		if err != nil {
			return graph.Command{}, fmt.Errorf("nodes: coordinator: %w", err)
		}
		choice := resp.Choices[0]
		user := Messages.Set([]ChatMessage{{Role: "user", Content: input}})
		for _, tc := range choice.ToolCalls {
			if tc.FunctionCall == nil || tc.FunctionCall.Name != handoffTool.Function.Name {
				continue
			}
			var args struct {
				Task   string `json:"task"`
				Locale string `json:"locale"`
			}
			if err := json.Unmarshal([]byte(tc.FunctionCall.Arguments), &args); err != nil || strings.TrimSpace(args.Task) == "" {
				// A handoff without a usable task: hand the message itself.
				args.Task = input
			}
			if args.Locale == "" {
				args.Locale = "en-US"
			}
			t, ws := beginTurn(ctx, s, input, Request)
			ws = append(ws, CurrentTurn.Set(t), user, Request.Set(args.Task), Locale.Set(args.Locale))
			return graph.Goto(cfg.Next, ws...), nil
		}
		reply := llm.StripThink(choice.Content)
		// The turn ends here, with the reply.
		t, ws := beginTurn(ctx, s, input, Answer)
		t.Answer = answerLine(reply)
		ws = append(ws, CurrentTurn.Set(t), graph.AppendTo(Turns, t), user, Answer.Set(reply),
			Messages.Set([]ChatMessage{{Role: "assistant", Content: reply}}))
		return graph.Goto(graph.End, ws...), nil
	}, nil
}
