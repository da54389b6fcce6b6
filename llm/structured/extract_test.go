package structured_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/structured"
)

func TestExtractJSON(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  string
	}{
		{"bare object", `{"a":1}`, `{"a":1}`},
		{"bare array", ` [1, 2] `, `[1, 2]`},
		{"prose around", "Sure! Here is the plan:\n{\"a\": {\"b\": \"}\"}}\nHope this helps.", `{"a": {"b": "}"}}`},
		{"json fence", "Here:\n```json\n{\"a\":1}\n```\nDone.", `{"a":1}`},
		{"plain fence", "```\n{\"a\":2}\n```", `{"a":2}`},
		{"fence with prose JSON-looking text before", "Use [brackets] wisely.\n```json\n{\"a\":3}\n```",
			`{"a":3}`},
		{"think block", "<think>Maybe {\"a\": 0}? No.</think>\n{\"a\":4}", `{"a":4}`},
		{"think and fence", "<think>\nplan {x}\n</think>\n\n```json\n{\"a\":5}\n```", `{"a":5}`},
		{"closing think only", "reasoning {not json}</think>{\"a\":6}", `{"a":6}`},
		{"bracket in prose first", "Options [a] and {\"a\":7}", `{"a":7}`},
		{"broken fence falls back to text", "```json\n{oops\n```\n{\"a\":8}", `{"a":8}`},
		{"the first value, whatever its shape", "[1] {\"a\":9}", `[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := structured.ExtractJSON(tt.reply)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

func TestExtractJSONErrors(t *testing.T) {
	tests := []struct {
		name    string
		reply   string
		message string
	}{
		{"no json", "I cannot do that.", "no JSON object or array found"},
		{"truncated", `{"a": [1, 2`, "unexpected EOF"},
		{"bad syntax", `{"a": 1,}`, "invalid character '}'"},
		{"only thinking", "<think>{\"a\":1}", "no JSON object or array found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := structured.ExtractJSON(tt.reply)
			assert.ErrorContains(t, err, tt.message)
		})
	}
}

// FuzzExtractJSON: whatever a model writes, ExtractJSON returns valid JSON
// that occurs in the reply, or an error.
func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{`[1] {"a":1}`, "See [2] and [3]. ```json {\"a\":1}```", `{"a": [1, 2`,
		"<think>{</think>[", `[[[[{"a":"}"}]]]] {`, "```\n```", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		raw, err := structured.ExtractJSON(reply)
		if err != nil {
			return
		}
		assert.True(t, json.Valid(raw), "not JSON: %q", raw)
		assert.Contains(t, reply, string(raw))
	})
}

// TestDecodeTakesTheValueThatMatchesTheSchema: Decode skips the values
// before the one that validates; with none valid it says what was wrong.
func TestDecodeTakesTheValueThatMatchesTheSchema(t *testing.T) {
	type answer struct {
		Result string `json:"result" jsonschema:"required"`
	}
	got, err := structured.Decode[answer](`See [1] and {"x": 1}. Answer: {"result": "yes"} done`)
	require.NoError(t, err)
	assert.Equal(t, "yes", got.Result)

	_, err = structured.Decode[answer](`See [1] and {"x": 1}.`)
	require.ErrorIs(t, err, structured.ErrInvalidOutput)
	assert.ErrorContains(t, err, "structured: no valid output: expected ")
}
