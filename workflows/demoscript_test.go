package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/scripted"
	"github.com/coorflow/coorflow/workflows"
)

func askDemo(t *testing.T, m llms.Model, agent, prompt string) string {
	t.Helper()
	out, err := llms.GenerateFromSinglePrompt(llm.WithAgent(t.Context(), agent), m, prompt)
	require.NoError(t, err)
	return out
}

// TestADemoScriptPlaysOnlyForTheRequestItWasWrittenFor: a script with
// when_input_contains answers the requests that name its words; others
// go to the fallback; a call that shows no request (a thread continued
// at a builder) is answered by the script when it has replies for the
// agent.
func TestADemoScriptPlaysOnlyForTheRequestItWasWrittenFor(t *testing.T) {
	script := scripted.Script{InputContains: []string{"SQLite", "PostgreSQL"}, Agents: map[string][]scripted.Reply{
		"coordinator": {{Text: "scripted coordinator"}}, "builder:sqlite_analyst": {{Text: "scripted builder"}}}}
	fallback := scripted.New(scripted.Script{Default: &scripted.Reply{Text: "reactive"}})

	d := workflows.NewDemoModel(script).WithFallback(fallback)
	assert.Equal(t, "reactive", askDemo(t, d, "coordinator", "Compare Redis and Memcached"))
	assert.Equal(t, "reactive", askDemo(t, d, "builder:sqlite_analyst", "# The agent the plan needs\nName: sqlite_analyst"), "the thread is decided")

	d = workflows.NewDemoModel(script).WithFallback(fallback)
	assert.Equal(t, "scripted coordinator", askDemo(t, d, "coordinator", "Compare SQLite and PostgreSQL"))

	d = workflows.NewDemoModel(script).WithFallback(fallback)
	assert.Equal(t, "scripted builder", askDemo(t, d, "builder:sqlite_analyst", "# The agent the plan needs\nName: sqlite_analyst"))
	assert.Equal(t, "reactive", askDemo(t, d, "builder:redis_analyst", "# The agent the plan needs\nName: redis_analyst"))

	d = workflows.NewDemoModel(script).WithFallback(fallback)
	assert.Equal(t, "reactive", askDemo(t, d, "s1_agent", "# Your task\nAssess\n\n# Request\nCompare SQLite and DuckDB"), "an exported file's step shows the request")

	d = workflows.NewDemoModel(script) // no fallback: the script answers every request
	assert.Equal(t, "scripted coordinator", askDemo(t, d, "coordinator", "Compare Redis and Memcached"))
}
