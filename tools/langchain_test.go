package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lctools "github.com/tmc/langchaingo/tools"

	"github.com/coorflow/coorflow/tools"
)

// calculator is a langchaingo-style tool: one string in, one string out.
type calculator struct {
	got string
	err error
}

func (c *calculator) Name() string        { return "calculator" }
func (c *calculator) Description() string { return "Evaluates an arithmetic expression." }
func (c *calculator) Call(_ context.Context, input string) (string, error) {
	c.got = input
	return "4", c.err
}

func TestFromLangChain(t *testing.T) {
	calc := &calculator{}
	tl := tools.FromLangChain(calc)
	assert.Equal(t, "calculator", tl.Name())
	assert.Equal(t, "Evaluates an arithmetic expression.", tl.Description())
	assert.JSONEq(t, `{"type":"object","properties":{"input":{"type":"string","description":"The input passed to the tool."}},"required":["input"]}`,
		string(tl.Schema()))

	reg, err := tools.NewRegistry(tl)
	require.NoError(t, err)
	res := reg.Run(t.Context(), "calculator", json.RawMessage(`{"input":"2+2"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, "4", res.Output)
	assert.Equal(t, "2+2", calc.got)
}

func TestFromLangChainRequiresInput(t *testing.T) {
	tl := tools.FromLangChain(&calculator{})
	res := tools.Run(t.Context(), tl, json.RawMessage(`{"expression":"2+2"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusFailed, res.Status)
	var ae *tools.ArgumentError
	require.ErrorAs(t, res.Err, &ae)
	assert.Equal(t, []tools.ArgumentProblem{{Message: "missing properties: 'input'"}}, ae.Problems)
}

func TestFromLangChainToolError(t *testing.T) {
	tl := tools.FromLangChain(&calculator{err: errors.New("division by zero")})
	res := tools.Run(t.Context(), tl, json.RawMessage(`{"input":"1/0"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusFailed, res.Status)
	assert.Equal(t, `Error: tool "calculator" failed: division by zero`, res.Text())
}

// Every langchaingo tool is a LangChainTool: the interface keeps
// langchaingo's method set without importing it.
var _ tools.LangChainTool = lctools.Tool(nil)

// TestFromLangChainAdaptsLangchaingosCalculator runs langchaingo's own
// calculator tool through the adapter.
func TestFromLangChainAdaptsLangchaingosCalculator(t *testing.T) {
	tl := tools.FromLangChain(lctools.Calculator{})
	assert.Equal(t, "calculator", tl.Name())
	res := tools.Run(t.Context(), tl, json.RawMessage(`{"input":"6*7"}`), tools.RunOptions{})
	require.Equal(t, tools.StatusOK, res.Status, res.Text())
	assert.Equal(t, "42", res.Output)
}
