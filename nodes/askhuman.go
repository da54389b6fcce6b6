package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/tools"
)

// AskHumanTool returns a tool an agent calls to ask a person a question:
// it pauses the run with graph.Interrupt (payload: {"question": …,
// "agent": …}); the answer given on resume is the tool's result. Any JSON
// answer will do: a string is the result as it is, an object, array,
// number or boolean is the result as compact JSON text. Inside a team, the
// other agents finish their work before the run pauses.
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
			answer, err := graph.InterruptAs[json.RawMessage](ctx, map[string]string{"question": a.Question, "agent": graph.PathOf(ctx), "node": info.Node})
			if err != nil {
				return "", err
			}
			return answerText(answer), nil
		})
}

// answerText is the tool result of a person's answer: a JSON string as its
// text, any other JSON value as compact JSON.
func answerText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}
