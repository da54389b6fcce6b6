package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/ollamatest"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// pinned pins basic to openai:gpt-4o-mini and reasoning (the planner's
// tier) to openai:gpt-4o, as examples/coor once did.
const pinned = "testdata/pinned"

// enoughPlan is a plan that goes straight to the reporter.
const enoughPlan = `{"title": "Known", "thought": "Known already.", "locale": "en-US", "has_enough_context": true, "new_agents_needed": [], "steps": []}`

func handoffCall() openaitest.Response {
	return openaitest.ToolCalls(openaitest.ToolCall{Name: "handoff_to_planner", Arguments: `{"task": "Say hi", "locale": "en-US"}`})
}

// ollamaServer is an Ollama server of both APIs: native (/api/chat) and
// OpenAI-compatible (/v1), each answering from its own script.
func ollamaServer(t *testing.T, native []ollamatest.Response, compat []openaitest.Response) (string, *ollamatest.Server, *openaitest.Server) {
	t.Helper()
	nat := ollamatest.NewServer(native...)
	t.Cleanup(nat.Close)
	com := openaitest.NewServer(compat...)
	t.Cleanup(com.Close)
	both, err := ollamatest.Both(nat, com.URL())
	require.NoError(t, err)
	t.Cleanup(both.Close)
	return both.URL, nat, com
}

// tableRows reads the rows of a printed model table: tier → its fields.
func tableRows(stderr string) map[string][]string {
	rows := map[string][]string{}
	for _, l := range strings.Split(stderr, "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && (f[0] == "basic" || f[0] == "reasoning" || f[0] == "vision" || f[0] == "code") {
			rows[f[0]] = f
		}
	}
	return rows
}

func TestCOORFLOWMODELAloneMovesEveryTierAFilePinnedToOllama(t *testing.T) {
	host, native, compat := ollamaServer(t,
		[]ollamatest.Response{ollamatest.Text(enoughPlan), ollamatest.Text("# Hi\nHello from llama3.")},
		[]openaitest.Response{handoffCall()})
	c := newCLI(t)
	c.env = map[string]string{"COORFLOW_MODEL": "ollama:llama3", "OLLAMA_HOST": strings.TrimPrefix(host, "http://")}
	code, stdout, stderr := c.run("run", pinned, "--input", "Say hi", "--show-models")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "Hello from llama3.")

	rows := tableRows(stderr)
	assert.Equal(t, []string{"basic", "ollama", "llama3", host, "COORFLOW_MODEL,", "endpoint", "from", "OLLAMA_HOST"}, rows["basic"])
	assert.Equal(t, []string{"reasoning", "ollama", "llama3", host, "COORFLOW_MODEL,", "endpoint", "from", "OLLAMA_HOST"}, rows["reasoning"],
		"the file's reasoning = openai:gpt-4o was an example: COORFLOW_MODEL replaced it")

	reqs := native.Requests()
	require.Len(t, reqs, 2, "the planner (reasoning tier) and the reporter (basic) on the native API")
	for _, r := range reqs {
		assert.Equal(t, "llama3", r.Chat.Model)
	}
	assert.Contains(t, reqs[0].Chat.Messages[0].Content, "You are the planner", "the reasoning tier's call")
	assert.Contains(t, reqs[1].Chat.Messages[0].Content, "final report", "the reporter's call")
	require.Len(t, compat.Requests(), 1, "the coordinator's call, which offers a tool, on Ollama's /v1")
	assert.Equal(t, "llama3", compat.Requests()[0].Chat.Model)
	assert.Equal(t, "handoff_to_planner", compat.Requests()[0].Chat.Tools[0].Function.Name)
}

func TestCOORFLOWMODELOnAnOpenAICompatibleEndpointMovesThePinnedReasoningTierToo(t *testing.T) {
	srv := openaitest.NewServer(handoffCall(), openaitest.Text(enoughPlan), openaitest.Text("# Hi\nHello from DeepSeek."))
	defer srv.Close()
	c := newCLI(t)
	c.env = map[string]string{"OPENAI_API_KEY": "sk-deepseek", "OPENAI_BASE_URL": srv.BaseURL(), "COORFLOW_MODEL": "openai:deepseek-chat"}
	code, stdout, stderr := c.run("run", pinned, "--input", "Say hi")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "Hello from DeepSeek.")
	assert.Empty(t, tableRows(stderr), "every tier on one model at one endpoint: nothing surprising to print")
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	for i, r := range reqs {
		assert.Equal(t, "deepseek-chat", r.Chat.Model, "call %d: no tier kept gpt-4o on the DeepSeek endpoint", i)
		assert.Equal(t, "Bearer sk-deepseek", r.Header.Get("Authorization"))
	}
}

func TestATierMovedByItselfPrintsTheTableUnasked(t *testing.T) {
	srv := openaitest.NewServer(handoffCall(), openaitest.Text("# Hi\nHello from gpt-4o-mini."))
	defer srv.Close()
	host, native, compat := ollamaServer(t, []ollamatest.Response{ollamatest.Text(enoughPlan)}, nil)
	c := newCLI(t)
	c.env = map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.BaseURL(),
		"COORFLOW_MODEL_REASONING": "ollama:qwen3", "OLLAMA_HOST": host}
	code, _, stderr := c.run("run", pinned, "--input", "Say hi")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "coorflow: models: the environment or --model left the tiers on different providers or endpoints; check this is what you meant:")
	rows := tableRows(stderr)
	assert.Equal(t, []string{"basic", "openai", "gpt-4o-mini", srv.BaseURL(), "file,", "endpoint", "from", "OPENAI_BASE_URL"}, rows["basic"])
	assert.Equal(t, []string{"reasoning", "ollama", "qwen3", host, "COORFLOW_MODEL_REASONING,", "endpoint", "from", "OLLAMA_HOST"}, rows["reasoning"])

	require.Len(t, native.Requests(), 1, "the planner, on the reasoning tier")
	assert.Equal(t, "qwen3", native.Requests()[0].Chat.Model)
	assert.Empty(t, compat.Requests())
	require.Len(t, srv.Requests(), 2, "the coordinator and the reporter, on basic")
	for _, r := range srv.Requests() {
		assert.Equal(t, "gpt-4o-mini", r.Chat.Model)
	}
}

func TestTheCommandLineWinsOverTheEnvironment(t *testing.T) {
	srv := openaitest.NewServer(handoffCall(), openaitest.Text(enoughPlan), openaitest.Text("# Hi\nDone."))
	defer srv.Close()
	c := newCLI(t)
	c.env = map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": srv.BaseURL(),
		"COORFLOW_MODEL": "openai:qwen-plus", "COORFLOW_MODEL_REASONING": "openai:qwen-max"}
	code, _, stderr := c.run("run", pinned, "--input", "Say hi", "--model", "reasoning=openai:qwen3-235b")
	require.Equal(t, exitOK, code, stderr)
	models := []string{}
	for _, r := range srv.Requests() {
		models = append(models, r.Chat.Model)
	}
	assert.Equal(t, []string{"qwen-plus", "qwen3-235b", "qwen-plus"}, models, "coordinator, planner (reasoning: --model), reporter")
}
