package scripted_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
)

func TestLoadFile(t *testing.T) {
	s, err := scripted.LoadFile(filepath.Join("testdata", "research.yaml"))
	require.NoError(t, err)
	assert.Equal(t, 5*time.Millisecond, s.Latency)
	require.Len(t, s.Agents["researcher"], 2)
	first := s.Agents["researcher"][0]
	assert.Equal(t, "I should search first.", first.Reasoning)
	assert.Equal(t, []scripted.ToolCall{
		{Name: "web_search", Arguments: `{"limit":3,"query":"go generics"}`},
		{ID: "call_fetch", Name: "fetch", Arguments: `{"url": "https://go.dev"}`},
	}, first.ToolCalls)
	require.Len(t, s.Rules, 1)
	assert.Equal(t, scripted.Rule{Agent: "planner", PromptContains: "Summarize", Times: 1,
		Reply: scripted.Reply{Text: "A summary."}}, s.Rules[0])
	require.NotNil(t, s.Default)
	assert.Equal(t, "I cannot help with that.", s.Default.Text)

	m := scripted.New(s)
	ctx := t.Context()
	resp, err := m.GenerateContent(llm.WithAgent(ctx, "researcher"), human("q"), tools("web_search", "fetch"))
	require.NoError(t, err)
	assert.Len(t, resp.Choices[0].ToolCalls, 2)
	assert.Equal(t, "call_researcher_1_1", resp.Choices[0].ToolCalls[0].ID)

	_, err = m.Call(llm.WithAgent(ctx, "coder"), "q")
	assert.ErrorIs(t, err, llm.ErrRateLimited)
	assert.EqualError(t, err, "scripted: slow down: llm: rate limited")

	out, err := m.Call(llm.WithAgent(ctx, "planner"), "Summarize it")
	require.NoError(t, err)
	assert.Equal(t, "A summary.", out)
	out, err = m.Call(llm.WithAgent(ctx, "planner"), "Summarize it")
	require.NoError(t, err)
	assert.Equal(t, "I cannot help with that.", out)
	assert.Equal(t, map[string]int{"researcher": 1}, m.Remaining())
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		message string
	}{
		{"unknown field", "agents:\n  a:\n    - txt: hi\n", "line 3: field txt not found"},
		{"bad class", "default:\n  error:\n    class: flaky\n", "default.error: line 3: unknown error class (want context_overflow"},
		{"bad json arguments", "agents:\n  a:\n    - tool_calls:\n        - name: t\n          arguments: '{oops'\n",
			"line 5: arguments are not valid JSON"},
		{"list arguments", "agents:\n  a:\n    - tool_calls:\n        - name: t\n          arguments: [1]\n",
			"line 5: arguments must be a mapping"},
		{"tool call without name", "rules:\n  - reply:\n      tool_calls:\n        - arguments: {}\n",
			"rules[0].reply.tool_calls[0]: missing name"},
		{"syntax", "agents: [\n", "scripted: invalid script"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := scripted.Load(strings.NewReader(tt.yaml))
			assert.ErrorIs(t, err, scripted.ErrInvalidScript)
			assert.ErrorContains(t, err, tt.message)
		})
	}
}

func TestLoadFileErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte("defaults: {}\n"), 0o600))
	_, err := scripted.LoadFile(path)
	assert.ErrorIs(t, err, scripted.ErrInvalidScript)
	assert.ErrorContains(t, err, "scripted: "+path+": ")
}

func TestLoadEmpty(t *testing.T) {
	s, err := scripted.Load(strings.NewReader(""))
	require.NoError(t, err)
	_, err = scripted.New(s).GenerateContent(t.Context(), []llms.MessageContent{})
	assert.ErrorIs(t, err, scripted.ErrNoReply)
}

// TestLoadQuotesNoneOfTheText holds finding 4 of issue 26: a workflow
// file named /etc/passwd as its demo script, and the error showed its
// first line. Errors now give lines, never the text.
func TestLoadQuotesNoneOfTheText(t *testing.T) {
	for _, text := range []string{
		"root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
		"agents:\n  a:\n    - tool_calls:\n        - name: t\n          arguments: 'secret-token-123'\n",
		"default:\n  error:\n    class: secret-token-123\n",
	} {
		_, err := scripted.Load(strings.NewReader(text))
		require.ErrorIs(t, err, scripted.ErrInvalidScript)
		assert.NotContains(t, err.Error(), "root:x")
		assert.NotContains(t, err.Error(), "secret-token")
	}
	_, err := scripted.Load(strings.NewReader("root:x:0:0:root:/root:/bin/bash\n"))
	assert.EqualError(t, err, "scripted: invalid script: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!str into scripted.fileScript")
}

// TestLoadReadsAtMostMaxScriptBytes: a script is read whole, so its
// length is bounded; /dev/zero took 1.6 GiB.
func TestLoadReadsAtMostMaxScriptBytes(t *testing.T) {
	r := &countingZeros{}
	_, err := scripted.Load(r)
	require.ErrorIs(t, err, scripted.ErrScriptTooLarge)
	assert.EqualError(t, err, "scripted: the script is longer than 4 MiB")
	assert.LessOrEqual(t, r.n, scripted.MaxScriptBytes+64<<10, "read no more than the limit")
}

// countingZeros reads as /dev/zero does, counting the bytes.
type countingZeros struct{ n int }

func (z *countingZeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += len(p)
	return len(p), nil
}

func TestWhenInputContainsNamesTheRequestsAScriptIsFor(t *testing.T) {
	s, err := scripted.Load(strings.NewReader("when_input_contains: [SQLite, PostgreSQL]\ndefault: {text: ok}\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"SQLite", "PostgreSQL"}, s.InputContains)
	assert.True(t, s.For("Compare sqlite and POSTGRESQL"))
	assert.False(t, s.For("Compare SQLite and DuckDB"))
	assert.True(t, scripted.Script{}.For("anything"), "a script without the key is for every request")
}

func TestWhenPromptLacksKeepsARuleFromCallsThatHoldTheText(t *testing.T) {
	s, err := scripted.Load(strings.NewReader(`rules:
  - {agent: reporter, when_prompt_contains: power loss, when_prompt_lacks: "## Step", reply: {text: recalled}}
default: {text: researched}
`))
	require.NoError(t, err)
	m := scripted.New(s)
	ctx := llm.WithAgent(t.Context(), "reporter")
	got, err := m.Call(ctx, "# Request\npower loss")
	require.NoError(t, err)
	assert.Equal(t, "recalled", got)
	got, err = m.Call(ctx, "# Request\npower loss\n## Step s1: research")
	require.NoError(t, err)
	assert.Equal(t, "researched", got)
}
