package trace_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/agentevent"
	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/tools"
	"github.com/coorflow/coorflow/trace"
)

// TestDecodePayloadReadsBackWhatWasEmitted: each payload trace knows
// reads back from its JSON as the value emitted; other names are left to
// the caller.
func TestDecodePayloadReadsBackWhatWasEmitted(t *testing.T) {
	cost := 0.5
	for _, v := range []graph.Named{
		llm.Token("Hel"),
		llm.ModelCall{Agent: "a", Model: "m", PromptTokens: 3, CostUSD: &cost, Request: json.RawMessage(`{"x":1}`)},
		tools.CallEvent{Agent: "a", ID: "1", Name: "search"},
		tools.ResultEvent{Agent: "a", ID: "1", Name: "search", Output: "found"},
		agentevent.Created{Agent: "a"}, agentevent.Reused{Agent: "a"}, agentevent.Started{Agent: "a", Task: "t"},
		agentevent.Ended{Agent: "a", Output: "o"}, agentevent.Warning{Value: "careful"},
	} {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		got, ok, err := trace.DecodePayload(v.EventName(), data)
		require.NoError(t, err)
		assert.True(t, ok, v.EventName())
		assert.Equal(t, v, got)
	}
	_, ok, err := trace.DecodePayload("custom", json.RawMessage(`1`))
	assert.False(t, ok)
	assert.NoError(t, err)
	_, ok, err = trace.DecodePayload(llm.EventToken, json.RawMessage(`{`))
	assert.True(t, ok)
	assert.ErrorContains(t, err, "trace: decode a llm.Token event")
}
