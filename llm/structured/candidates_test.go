package structured_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/coorflow/coorflow/llm/openaitest"
	"github.com/coorflow/coorflow/llm/structured"
)

// TestGenerateChoosesTheValidCandidate: a reply with several JSON values
// is answered by the first that validates, with no repair call.
func TestGenerateChoosesTheValidCandidate(t *testing.T) {
	good := `{"title":"Find sources","kind":"research"}`
	want := task{Title: "Find sources", Kind: "research"}
	tests := []struct {
		name  string
		reply string
	}{
		{"citation before the JSON", "[1] " + good},
		{"citations in prose, JSON in a fence", "See [2] and [3]. ```json " + good + "```"},
		{"two objects, the second valid", `First I thought of {"title":"Search"}, but the task is: ` + good},
		{"an array of citations after a think block", "<think>[1] is best</think>Sources [1][2]:\n" + good},
		{"a valid object after an invalid fence", "```json\n{\"title\": 3}\n```\nCorrected: " + good},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := replies(tt.reply)
			got, err := structured.Generate[task](t.Context(), m, ask("Give me a task."))
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Len(t, m.Calls(), 1, "no repair call")
		})
	}
}

// TestGenerateNestedValueIsNoCandidate: a value inside an invalid one is
// not taken for the answer.
func TestGenerateNestedValueIsNoCandidate(t *testing.T) {
	m := replies(`{"task": {"title":"t","kind":"research"}}`, `{"title":"t","kind":"research"}`)
	_, err := structured.Generate[task](t.Context(), m, ask("task"))
	require.NoError(t, err)
	assert.Len(t, m.Calls(), 2, "the nested object was not taken; the reply was repaired")
	assert.Contains(t, lastText(m.Calls()[1]), "additionalProperties 'task' not allowed")
}

// TestGenerateNoValidCandidate: when no value validates, the problems are
// those of the value of the schema's type, and the error says what was
// expected and what was received.
func TestGenerateNoValidCandidate(t *testing.T) {
	m := replies(`As noted in [1], the task is {"title":"Find sources"}.`)
	_, err := structured.Generate[task](t.Context(), m, ask("task"), structured.WithRepairs(0))
	var se *structured.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []string{"at (root): missing properties: 'kind'"}, se.Problems,
		"the object's problems, not the citation's")
	assert.EqualError(t, err, `structured: no valid output after 1 attempt: expected a JSON object with `+
		`"title" (string, required), "kind" ("research" or "processing", required), "priority" (integer); `+
		`received "As noted in [1], the task is {\"title\":\"Find sources\"}.": `+
		`at (root): missing properties: 'kind'`)
}

// TestErrorCutsLongOutput: a long reply is shown cut, with its length.
func TestErrorCutsLongOutput(t *testing.T) {
	long := "[1] " + strings.Repeat("é", 150)
	m := replies(long)
	_, err := structured.Generate[task](t.Context(), m, ask("task"), structured.WithRepairs(0))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `received "[1] `+strings.Repeat("é", 98)+`"… (304 bytes): `)
	assert.Contains(t, err.Error(), "at (root): expected object, but got array",
		"with only an array, its problems are shown")
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   string
	}{
		{"array of objects", `{"type":"array","items":{"type":"object"}}`, "a JSON array of objects"},
		{"nested", `{"type":"object","properties":{"steps":{"type":"array","items":{"type":"object"}},` +
			`"ok":{"type":"boolean"},"n":{"type":["integer","null"]},"x":{}},"required":["steps"]}`,
			`a JSON object with "steps" (array of objects, required), "ok" (boolean), "n" (integer or null), "x" (any)`},
		{"enum at the root", `{"enum":["yes"]}`, `exactly "yes"`},
		{"any", `{}`, "JSON matching the schema"},
		{"not JSON", `{`, "JSON matching the schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, structured.Summarize([]byte(tt.schema)))
		})
	}
}

// TestGenerateCitationOverTheWire: the citation case through langchaingo's
// OpenAI client and the chat-completions protocol.
func TestGenerateCitationOverTheWire(t *testing.T) {
	srv := openaitest.NewServer(openaitest.Text(
		"According to [1] and [2], here is the task: {\"title\":\"Read [1]\",\"kind\":\"research\"}"))
	t.Cleanup(srv.Close)
	model, err := openai.New(openai.WithBaseURL(srv.BaseURL()), openai.WithToken("test"), openai.WithModel("gpt-4o"))
	require.NoError(t, err)
	got, err := structured.Generate[task](t.Context(), model, ask("Give me a task."))
	require.NoError(t, err)
	assert.Equal(t, task{Title: "Read [1]", Kind: "research"}, got)
	assert.Len(t, srv.Requests(), 1)
}
