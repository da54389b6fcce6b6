package tools

import (
	"context"
	"encoding/json"

	lctools "github.com/tmc/langchaingo/tools"
)

// langchainSchema is the argument schema of an adapted langchaingo tool.
var langchainSchema = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"The input passed to the tool."}},"required":["input"]}`)

// FromLangChain adapts a langchaingo tool, whose input is one string, to a
// Tool whose arguments are {"input": "..."}.
func FromLangChain(t lctools.Tool) Tool {
	return &langchainTool{t: t}
}

type langchainTool struct {
	t lctools.Tool
}

func (l *langchainTool) Name() string            { return l.t.Name() }
func (l *langchainTool) Description() string     { return l.t.Description() }
func (l *langchainTool) Schema() json.RawMessage { return langchainSchema }

func (l *langchainTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var in struct {
		Input string `json:"input"`
	}
	if err := json.Unmarshal(normalizeArgs(args), &in); err != nil {
		return "", &ArgumentError{Tool: l.t.Name(), Schema: langchainSchema, Problems: []ArgumentProblem{{Message: err.Error()}}}
	}
	return l.t.Call(ctx, in.Input)
}
