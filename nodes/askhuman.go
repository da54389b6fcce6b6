package nodes

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/tools"
)

// AskHumanTool returns a tool an agent calls to ask a person a question:
// it pauses the run with graph.Interrupt (payload: {"question": …,
// "agent": …}); the answer given on resume is the tool's result. Inside a
// team, the other agents finish their work before the run pauses.
func AskHumanTool() tools.Tool {
	schema := json.RawMessage(`{"type":"object","properties":{"question":{"type":"string","description":"The question, complete and specific"}},"required":["question"]}`)
	return tools.Func("ask_human", "Ask the person you work for a question and wait for the answer. Use it only when you cannot go on without them.", schema,
		func(ctx context.Context, args json.RawMessage) (string, error) {
			var a struct {
				Question string `json:"question"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return "", fmt.Errorf("ask_human: %w", err)
			}
			info, _ := graph.TaskOf(ctx)
			return graph.InterruptAs[string](ctx, map[string]string{"question": a.Question, "agent": graph.PathOf(ctx), "node": info.Node})
		})
}
