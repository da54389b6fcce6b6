package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/tools"
)

// echo returns a tool that answers with its arguments.
func echo(name string) tools.Tool {
	return tools.Func(name, "Echoes its arguments.",
		json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		func(_ context.Context, args json.RawMessage) (string, error) { return string(args), nil })
}

func TestRegistryRegister(t *testing.T) {
	tests := []struct {
		name    string
		tool    tools.Tool
		wantIs  error
		wantMsg string
	}{
		{name: "valid tool", tool: echo("fresh")},
		{
			name:    "duplicate name",
			tool:    echo("echo"),
			wantIs:  tools.ErrDuplicateTool,
			wantMsg: `tools: duplicate tool: "echo" is already registered`,
		},
		{
			name:    "name with a space",
			tool:    echo("my tool"),
			wantIs:  tools.ErrInvalidName,
			wantMsg: `tools: invalid tool name "my tool": use 1 to 64 letters, digits, _ or -`,
		},
		{
			name:    "empty name",
			tool:    echo(""),
			wantIs:  tools.ErrInvalidName,
			wantMsg: `tools: invalid tool name "": use 1 to 64 letters, digits, _ or -`,
		},
		{
			name:    "schema not an object",
			tool:    tools.Func("arr", "", json.RawMessage(`{"type":"array"}`), nil),
			wantIs:  tools.ErrInvalidSchema,
			wantMsg: `tools: invalid argument schema of tool "arr": the top level must have "type": "object"`,
		},
		{
			name:    "schema not JSON",
			tool:    tools.Func("broken", "", json.RawMessage(`{"type":`), nil),
			wantIs:  tools.ErrInvalidSchema,
			wantMsg: `tools: invalid argument schema of tool "broken": not a JSON object: unexpected end of JSON input`,
		},
		{
			name:   "schema with an unknown type",
			tool:   tools.Func("strang", "", json.RawMessage(`{"type":"object","properties":{"a":{"type":"strang"}}}`), nil),
			wantIs: tools.ErrInvalidSchema,
		},
		{
			name:   "schema referring to another document",
			tool:   tools.Func("remote", "", json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"https://example.com/a.json"}}}`), nil),
			wantIs: tools.ErrInvalidSchema,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := tools.NewRegistry(echo("echo"))
			require.NoError(t, err)
			err = reg.Register(tt.tool)
			if tt.wantIs == nil {
				require.NoError(t, err)
				_, err := reg.Get(tt.tool.Name())
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantIs)
			if tt.wantMsg != "" {
				assert.EqualError(t, err, tt.wantMsg)
			}
			assert.Equal(t, []string{"echo"}, reg.Names(), "a rejected tool is not registered")
		})
	}
}

func TestNewRegistryReportsEveryRejectedTool(t *testing.T) {
	_, err := tools.NewRegistry(echo("a"), echo("a"), echo("b c"))
	require.ErrorIs(t, err, tools.ErrDuplicateTool)
	require.ErrorIs(t, err, tools.ErrInvalidName)
	assert.EqualError(t, err, "tools: duplicate tool: \"a\" is already registered\n"+
		"tools: invalid tool name \"b c\": use 1 to 64 letters, digits, _ or -")
}

func TestRegistryGetUnknownToolListsTheToolsThatExist(t *testing.T) {
	reg, err := tools.NewRegistry(echo("web_search"), echo("python"))
	require.NoError(t, err)

	_, err = reg.Get("serch")
	require.ErrorIs(t, err, tools.ErrUnknownTool)
	var ute *tools.UnknownToolError
	require.ErrorAs(t, err, &ute)
	assert.Equal(t, "serch", ute.Name)
	assert.Equal(t, []string{"python", "web_search"}, ute.Available)
	assert.EqualError(t, err, `tools: unknown tool "serch" (available: python, web_search)`)
}

func TestRegistryGetUnknownToolInEmptyRegistry(t *testing.T) {
	var reg tools.Registry
	_, err := reg.Get("anything")
	assert.EqualError(t, err, `tools: unknown tool "anything" (available: none)`)
}

func TestRegistryListIsSortedByName(t *testing.T) {
	reg, err := tools.NewRegistry(echo("zeta"), echo("alpha"), echo("mu"))
	require.NoError(t, err)
	var names []string
	for _, tl := range reg.List() {
		names = append(names, tl.Name())
	}
	assert.Equal(t, []string{"alpha", "mu", "zeta"}, names)
	assert.Equal(t, []string{"alpha", "mu", "zeta"}, reg.Names())
}

func TestRegistrySubsetReportsUnknownNames(t *testing.T) {
	reg, err := tools.NewRegistry(echo("python"), echo("web_search"), echo("http_fetch"))
	require.NoError(t, err)

	sub, unknown := reg.Subset("web_search", "telepathy", "python", "web_search", "telepathy", "crystal_ball")
	assert.Equal(t, []string{"python", "web_search"}, sub.Names())
	assert.Equal(t, []string{"telepathy", "crystal_ball"}, unknown)

	_, err = sub.Get("http_fetch")
	assert.EqualError(t, err, `tools: unknown tool "http_fetch" (available: python, web_search)`,
		"the subset only offers its own tools")

	sub, unknown = reg.Subset()
	assert.Empty(t, sub.Names())
	assert.Empty(t, unknown)
}

func TestRegistryLLMTools(t *testing.T) {
	search := tools.Func("web_search", "Searches the web.",
		json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`), nil)
	noArgs := tools.Func("now", "Tells the time.", nil, nil)
	reg, err := tools.NewRegistry(search, noArgs)
	require.NoError(t, err)

	got := reg.LLMTools()
	require.Len(t, got, 2)
	assert.Equal(t, llms.Tool{
		Type: "function",
		Function: &llms.FunctionDefinition{
			Name:        "now",
			Description: "Tells the time.",
			Parameters:  map[string]any{"type": "object", "properties": map[string]any{}},
		},
	}, got[0])
	assert.Equal(t, llms.Tool{
		Type: "function",
		Function: &llms.FunctionDefinition{
			Name:        "web_search",
			Description: "Searches the web.",
			Parameters: map[string]any{
				"type":       "object",
				"properties": map[string]any{"query": map[string]any{"type": "string"}},
				"required":   []any{"query"},
			},
		},
	}, got[1])

	wire, err := json.Marshal(got[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"function","function":{"name":"web_search","description":"Searches the web.",
		"parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}}`, string(wire))
}

func TestRegistryIsSafeForConcurrentUse(t *testing.T) {
	var reg tools.Registry
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			assert.NoError(t, reg.Register(echo(fmt.Sprintf("t%d", i))))
			_ = reg.Names()
			_ = reg.LLMTools()
			res := reg.Run(t.Context(), "t0", json.RawMessage(`{}`), tools.RunOptions{})
			assert.Contains(t, []tools.Status{tools.StatusOK, tools.StatusFailed}, res.Status)
		})
	}
	wg.Wait()
	assert.Len(t, reg.Names(), 8)
}
