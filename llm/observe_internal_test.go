package llm

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
)

func TestIsToolCallChunk(t *testing.T) {
	for chunk, want := range map[string]bool{
		`[{"id":"call_1","type":"function","function":{"name":"add","arguments":""}}]`: true,
		`[{"type":"","function":{"name":"","arguments":"{\"a\":40,"}}]`:                true,
		`{"name":"add","arguments":"{}"}`:                                              true,
		`[1, 2, 3]`:                                                                    false,
		`[{"a":1}]`:                                                                    false,
		`{"name":"Ada"}`:                                                               false,
		`[{`:                                                                           false,
		`Hello`:                                                                        false,
		`{"name":"x","arguments":"y","extra":1}`:                                       false,
	} {
		assert.Equal(t, want, isToolCallChunk([]byte(chunk)), chunk)
	}
}

func TestAModelRecordSurvivesJSONWithItsToolCalls(t *testing.T) {
	resp := &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		Content: "calling", StopReason: "tool_calls", ReasoningContent: "why",
		GenerationInfo: map[string]any{"PromptTokens": 12},
		ToolCalls: []llms.ToolCall{
			{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "add", Arguments: `{"a":1}`}},
			{ID: "c2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "capital", Arguments: `{}`}},
		},
	}}}
	data, err := json.Marshal(modelRecord{Choices: record(resp), TokenUsage: TokenUsage{PromptTokens: 12}})
	require.NoError(t, err)
	var back modelRecord
	require.NoError(t, json.Unmarshal(data, &back))
	got := back.response()
	require.Len(t, got.Choices[0].ToolCalls, 2)
	assert.Equal(t, "add", got.Choices[0].ToolCalls[0].FunctionCall.Name)
	assert.Equal(t, `{"a":1}`, got.Choices[0].ToolCalls[0].FunctionCall.Arguments)
	assert.Equal(t, "c2", got.Choices[0].ToolCalls[1].ID)
	assert.Equal(t, "calling", got.Choices[0].Content)
	assert.Equal(t, "why", got.Choices[0].ReasoningContent)
	assert.Equal(t, 12.0, got.Choices[0].GenerationInfo["PromptTokens"])

	// The reason for the record: langchaingo's own form loses the call.
	var lost llms.ToolCall
	raw, err := json.Marshal(resp.Choices[0].ToolCalls[0])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &lost))
	assert.Empty(t, lost.FunctionCall.Name, "if langchaingo fixes this, the record can go")
}
