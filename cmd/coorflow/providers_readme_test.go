package main

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm/anthropictest"
	"github.com/coorflow/coorflow/llm/ollamatest"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// readmeProviders returns the provider configurations of the README's
// "Models and providers" section: each ```sh block whose first line is
// "# NAME…", as NAME → its exported variables.
func readmeProviders(t *testing.T) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(b), "## Models and providers\n")
	require.True(t, ok, "the README has a Models and providers section")
	sec, _, _ = strings.Cut(sec, "\n## ")
	out := map[string]map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```sh\n# (\\w+)[^\n]*\n(.*?)```").FindAllStringSubmatch(sec, -1) {
		vars := map[string]string{}
		for _, l := range strings.Split(m[2], "\n") {
			if kv, ok := strings.CutPrefix(l, "export "); ok {
				k, v, _ := strings.Cut(kv, "=")
				vars[k] = strings.Fields(v)[0]
			}
		}
		out[m[1]] = vars
	}
	return out
}

// TestTheREADMEsOpenAICompatibleConfigurationsWork runs the pinned file
// through the CLI with exactly the environment the README gives for
// OpenAI, DeepSeek and Qwen, its endpoint swapped for a server that speaks
// the chat-completions protocol, and checks every tier's calls reached it
// with the README's model and key.
func TestTheREADMEsOpenAICompatibleConfigurationsWork(t *testing.T) {
	providers := readmeProviders(t)
	cases := []struct {
		name, endpoint, model string
	}{
		{"OpenAI", "", "gpt-4o-mini"},
		{"DeepSeek", "https://api.deepseek.com/v1", "deepseek-chat"},
		{"Qwen", "https://dashscope.aliyuncs.com/compatible-mode/v1", "qwen-plus"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vars := providers[c.name]
			require.NotEmpty(t, vars, "the README configures %s", c.name)
			assert.Equal(t, c.endpoint, vars["OPENAI_BASE_URL"], "the README's endpoint")
			srv := openaitest.NewServer(handoffCall(), openaitest.Text(enoughPlan), openaitest.Text("# Hi\nDone."))
			defer srv.Close()
			cli := newCLI(t)
			cli.env = map[string]string{}
			for k, v := range vars {
				cli.env[k] = v
			}
			cli.env["OPENAI_BASE_URL"] = srv.BaseURL()
			code, _, stderr := cli.run("run", pinned, "--input", "Say hi")
			require.Equal(t, exitOK, code, stderr)
			require.Len(t, srv.Requests(), 3, "coordinator (basic), planner (reasoning), reporter (basic)")
			for _, r := range srv.Requests() {
				assert.Equal(t, c.model, r.Chat.Model)
				assert.Equal(t, "Bearer "+vars["OPENAI_API_KEY"], r.Header.Get("Authorization"))
			}
		})
	}
}

// TestTheREADMEsOllamaConfigurationWorks: the same with Ollama's
// configuration, against a server of Ollama's native API (and its
// OpenAI-compatible one, for the coordinator's tool).
func TestTheREADMEsOllamaConfigurationWorks(t *testing.T) {
	vars := readmeProviders(t)["Ollama"]
	require.Equal(t, map[string]string{"COORFLOW_MODEL": "ollama:llama3.1", "OLLAMA_HOST": "localhost:11434"}, vars)
	host, native, compat := ollamaServer(t,
		[]ollamatest.Response{ollamatest.Text(enoughPlan), ollamatest.Text("# Hi\nDone.")},
		[]openaitest.Response{handoffCall()})
	cli := newCLI(t)
	cli.env = map[string]string{"COORFLOW_MODEL": vars["COORFLOW_MODEL"], "OLLAMA_HOST": strings.TrimPrefix(host, "http://")}
	code, _, stderr := cli.run("run", pinned, "--input", "Say hi")
	require.Equal(t, exitOK, code, stderr)
	require.Len(t, native.Requests(), 2)
	require.Len(t, compat.Requests(), 1)
	for _, r := range native.Requests() {
		assert.Equal(t, "llama3.1", r.Chat.Model)
	}
	assert.Equal(t, "llama3.1", compat.Requests()[0].Chat.Model)
}

// TestTheREADMEsAnthropicConfigurationWorks: the same with Anthropic's
// configuration, against a server of the Messages API
// (ANTHROPIC_BASE_URL points at it, as Anthropic's SDKs allow).
func TestTheREADMEsAnthropicConfigurationWorks(t *testing.T) {
	vars := readmeProviders(t)["Anthropic"]
	require.Equal(t, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-your-key", "COORFLOW_MODEL": "anthropic:claude-sonnet-4-5"}, vars)
	srv := anthropictest.NewServer(
		anthropictest.ToolUses("", anthropictest.ToolUse{Name: "handoff_to_planner", Input: `{"task": "Say hi", "locale": "en-US"}`}),
		anthropictest.Text(enoughPlan), anthropictest.Text("# Hi\nDone."))
	defer srv.Close()
	cli := newCLI(t)
	cli.env = map[string]string{"ANTHROPIC_BASE_URL": srv.BaseURL()}
	maps.Copy(cli.env, vars)
	code, _, stderr := cli.run("run", pinned, "--input", "Say hi")
	require.Equal(t, exitOK, code, stderr)
	require.Len(t, srv.Requests(), 3, "coordinator (basic), planner (reasoning), reporter (basic)")
	for _, r := range srv.Requests() {
		assert.Equal(t, "claude-sonnet-4-5", r.Messages.Model)
		assert.Equal(t, "sk-ant-your-key", r.Header.Get("X-Api-Key"))
	}
}

// TestTheREADMEConfiguresEveryProviderItNames pins the Gemini
// configuration, whose wire protocol llm/geminitest tests, and the list
// of providers.
func TestTheREADMEConfiguresEveryProviderItNames(t *testing.T) {
	providers := readmeProviders(t)
	assert.ElementsMatch(t, []string{"OpenAI", "Anthropic", "Ollama", "DeepSeek", "Qwen", "Gemini"}, slices.Collect(maps.Keys(providers)))
	assert.Contains(t, providers["Anthropic"], "ANTHROPIC_API_KEY")
	assert.True(t, strings.HasPrefix(providers["Anthropic"]["COORFLOW_MODEL"], "anthropic:"))
	assert.Contains(t, providers["Gemini"], "GOOGLE_API_KEY")
	assert.True(t, strings.HasPrefix(providers["Gemini"]["COORFLOW_MODEL"], "googleai:"))
}
