package structured_test

import (
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/llm/structured"
)

type task struct {
	Title    string `json:"title" jsonschema:"required"`
	Kind     string `json:"kind" jsonschema:"required,enum=research|processing"`
	Priority int    `json:"priority,omitempty"`
}

// replies returns a scripted model answering unlabelled calls in order.
func replies(texts ...string) *scripted.Model {
	var rs []scripted.Reply
	for _, s := range texts {
		rs = append(rs, scripted.Reply{Text: s})
	}
	return scripted.New(scripted.Script{Agents: map[string][]scripted.Reply{"": rs}})
}

func ask(s string) []llms.MessageContent {
	return []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, s)}
}

// lastText returns the text of the last message of a call.
func lastText(c scripted.Call) string {
	m := c.Messages[len(c.Messages)-1]
	var parts []string
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func TestGenerate(t *testing.T) {
	good := `{"title":"Find sources","kind":"research","priority":2}`
	want := task{Title: "Find sources", Kind: "research", Priority: 2}
	tests := []struct {
		name       string
		replies    []string
		calls      int
		repairText []string // what the repair request must mention
	}{
		{"valid first time", []string{good}, 1, nil},
		{"prose around the JSON", []string{"Here is the task you asked for:\n" + good + "\nLet me know!"}, 1, nil},
		{"fences and think block", []string{"<think>The user wants {a task}.</think>\n```json\n" + good + "\n```"},
			1, nil},
		{"malformed JSON then fixed", []string{`{"title": "Find sources", "kind": "research",}`, good}, 2,
			[]string{"not valid JSON", "invalid character '}'"}},
		{"missing required field then fixed", []string{`{"title":"Find sources"}`, good}, 2,
			[]string{"at (root)", "missing properties: 'kind'"}},
		{"wrong enum value then fixed", []string{`{"title":"Find sources","kind":"browsing"}`, good}, 2,
			[]string{"at /kind", `value must be one of "research", "processing"`}},
		{"unknown property then fixed", []string{`{"title":"x","kind":"research","owner":"me"}`, good}, 2,
			[]string{"additionalProperties 'owner' not allowed"}},
		{"two bad replies then fixed", []string{"no idea", `{"title":1}`, good}, 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := replies(tt.replies...)
			got, err := structured.Generate[task](t.Context(), m, ask("Give me a task."))
			require.NoError(t, err)
			assert.Equal(t, want, got)
			calls := m.Calls()
			require.Len(t, calls, tt.calls)
			if tt.calls >= 2 {
				second := calls[1]
				n := len(second.Messages)
				require.GreaterOrEqual(t, n, 3)
				assert.Equal(t, llms.ChatMessageTypeAI, second.Messages[n-2].Role, "the bad reply is sent back")
				assert.Equal(t, tt.replies[0], second.Messages[n-2].Parts[0].(llms.TextContent).Text)
				assert.Equal(t, llms.ChatMessageTypeHuman, second.Messages[n-1].Role)
				for _, s := range tt.repairText {
					assert.Contains(t, lastText(second), s)
				}
			}
		})
	}
}

func TestGenerateRepairsExhausted(t *testing.T) {
	m := replies(`{"title":"a"}`, `{"title":"a","kind":"x"}`, "Sorry, I think the kind is ```{\"kind\": \"x\"}```")
	_, err := structured.Generate[task](t.Context(), m, ask("Give me a task."))
	require.ErrorIs(t, err, structured.ErrInvalidOutput)
	var se *structured.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 3, se.Attempts, "one attempt and two repairs by default")
	assert.Equal(t, "Sorry, I think the kind is ```{\"kind\": \"x\"}```", se.Output)
	assert.Equal(t, []string{
		"at (root): missing properties: 'title'",
		`at /kind: value must be one of "research", "processing"`,
	}, se.Problems)
	var ve *jsonschema.ValidationError
	assert.ErrorAs(t, err, &ve)
	assert.EqualError(t, err, "structured: no valid output after 3 attempts: expected a JSON object with "+
		`"title" (string, required), "kind" ("research" or "processing", required), "priority" (integer); `+
		"received \"Sorry, I think the kind is ```{\\\"kind\\\": \\\"x\\\"}```\": "+
		`at (root): missing properties: 'title'; at /kind: value must be one of "research", "processing"`)
	assert.Len(t, m.Calls(), 3)
}

func TestGenerateWithRepairs(t *testing.T) {
	m := replies("nope", `{"title":"t","kind":"research"}`)
	_, err := structured.Generate[task](t.Context(), m, ask("task"), structured.WithRepairs(0))
	var se *structured.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 1, se.Attempts)
	assert.Equal(t, []string{"the reply is not valid JSON: no JSON object or array found in the reply"}, se.Problems)
	assert.Len(t, m.Calls(), 1)
}

func TestGenerateInstruction(t *testing.T) {
	schema, err := structured.SchemaFor[task]()
	require.NoError(t, err)
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You plan."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Give me a task."),
	}
	m := replies(`{"title":"t","kind":"research"}`, `{"title":"t","kind":"research"}`)
	_, err = structured.Generate[task](t.Context(), m, msgs)
	require.NoError(t, err)
	first := m.Calls()[0]
	require.Len(t, first.Messages, 2, "the instruction joins the last user message")
	assert.Equal(t, "Give me a task.\n"+
		"Reply with only a JSON value that matches this JSON Schema, with no code fences and no other text:\n"+
		string(schema), lastText(first))
	assert.Len(t, msgs[1].Parts, 1, "the caller's messages are not modified")

	_, err = structured.Generate[task](t.Context(), m, msgs[:1], structured.WithInstruction("JSON please: %s"))
	require.NoError(t, err)
	second := m.Calls()[1]
	require.Len(t, second.Messages, 2, "after a system message the instruction is a new user message")
	assert.Equal(t, "JSON please: "+string(schema), lastText(second))
}

func TestGenerateWithSchema(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"answer":{"type":"integer","minimum":0}},"required":["answer"]}`)
	m := replies(`{"answer": -1}`, `{"answer": 42, "why": "because"}`)
	got, err := structured.Generate[map[string]any](t.Context(), m, ask("6*7?"), structured.WithSchema(schema))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"answer": float64(42), "why": "because"}, got)
	assert.Contains(t, lastText(m.Calls()[1]), "at /answer: must be >= 0 but found -1")
}

func TestGenerateDecodeMismatchIsRepaired(t *testing.T) {
	m := replies(`{"title": 5, "kind": "research"}`, `{"title":"five","kind":"research"}`)
	got, err := structured.Generate[task](t.Context(), m, ask("task"), structured.WithSchema([]byte(`{}`)))
	require.NoError(t, err)
	assert.Equal(t, "five", got.Title)
	assert.Contains(t, lastText(m.Calls()[1]), "the JSON does not fit the expected type")
}

func TestGenerateModelErrorIsNotRepaired(t *testing.T) {
	m := scripted.New(scripted.Script{Default: &scripted.Reply{Err: llm.ErrRateLimited}})
	_, err := structured.Generate[task](t.Context(), m, ask("task"))
	assert.ErrorIs(t, err, llm.ErrRateLimited)
	assert.NotErrorIs(t, err, structured.ErrInvalidOutput)
	assert.ErrorContains(t, err, "structured: attempt 1:")
	assert.Len(t, m.Calls(), 1)
}

func TestGenerateBadSchema(t *testing.T) {
	m := replies()
	_, err := structured.Generate[task](t.Context(), m, ask("task"), structured.WithSchema([]byte(`{"type": 12}`)))
	assert.ErrorIs(t, err, structured.ErrSchema)
	_, err = structured.Generate[task](t.Context(), m, ask("task"),
		structured.WithSchema([]byte(`{"$ref": "https://example.com/schema.json"}`)))
	assert.ErrorIs(t, err, structured.ErrSchema, "remote references are never fetched")
	_, err = structured.Generate[recursive](t.Context(), m, ask("task"))
	assert.ErrorIs(t, err, structured.ErrSchema)
	assert.Empty(t, m.Calls(), "no model call with a bad schema")
}

func TestGenerateNoChoices(t *testing.T) {
	m := emptyModel{}
	_, err := structured.Generate[task](t.Context(), m, ask("task"))
	assert.ErrorIs(t, err, structured.ErrNoChoices)
}
