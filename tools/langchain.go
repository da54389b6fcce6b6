package tools

import (
	"context"
	"encoding/json"
)

// langchainSchema is the argument schema of an adapted langchaingo tool.
var langchainSchema = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"The input passed to the tool."}},"required":["input"]}`)

// LangChainTool is the method set of langchaingo's tools.Tool: a named tool
// whose input and output are one string. Every langchaingo tool satisfies
// it. It is declared here rather than imported so that programs that never
// adapt a langchaingo tool do not link langchaingo's tools package (and the
// Starlark interpreter its calculator brings).
type LangChainTool interface {
	Name() string
	Description() string
	Call(ctx context.Context, input string) (string, error)
}

// FromLangChain adapts a langchaingo tool, whose input is one string, to a
// Tool whose arguments are {"input": "..."}.
func FromLangChain(t LangChainTool) Tool {
	return &langchainTool{t: t}
}

type langchainTool struct {
	t LangChainTool
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
