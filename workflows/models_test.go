package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/workflows"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestModelsComeFromTheFileTheEnvironmentAndOverridesOrTheDemoScript(t *testing.T) {
	f, err := workflows.Load("testdata/run/with_demo.yaml")
	require.NoError(t, err)
	cases := []struct {
		name      string
		vars      map[string]string
		overrides map[llm.Tier]string
		demo      bool
		// describe is Models.Describe; reason the demo's reason, when demo.
		describe, reason, err string
	}{
		{name: "no key: the demo script", vars: nil,
			describe: "scripted demo model (testdata/run/demo.yaml)", reason: "OPENAI_API_KEY is not set"},
		{name: "the file's model with a key", vars: map[string]string{"OPENAI_API_KEY": "sk-test"},
			describe: "basic openai:gpt-4o-mini"},
		{name: "COORFLOW_MODEL replaces basic", vars: map[string]string{"COORFLOW_MODEL": "ollama:llama3.1:8b"},
			describe: "basic ollama:llama3.1:8b"},
		{name: "an asked-for model without its key is an error, not the demo", vars: map[string]string{"COORFLOW_MODEL": "anthropic:claude-sonnet-4"},
			err: "workflows: testdata/run/with_demo.yaml: llm: models.basic.api_key_env: environment variable ANTHROPIC_API_KEY is not set (it should hold the anthropic API key)"},
		{name: "an override of a tier", vars: map[string]string{"OPENAI_API_KEY": "sk"}, overrides: map[llm.Tier]string{llm.TierReasoning: "ollama:qwen3"},
			describe: "basic openai:gpt-4o-mini, reasoning ollama:qwen3"},
		{name: "a bad override", overrides: map[llm.Tier]string{llm.TierBasic: "gpt-4o"},
			err: `llm: --model basic="gpt-4o": want provider:model, e.g. openai:gpt-4o`},
		{name: "the demo asked for", vars: map[string]string{"OPENAI_API_KEY": "sk"}, demo: true,
			describe: "scripted demo model (testdata/run/demo.yaml)", reason: "asked for"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(c.vars), Overrides: c.overrides, Demo: c.demo})
			if c.err != "" {
				assert.EqualError(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.describe, ms.Describe())
			assert.Equal(t, c.reason != "", ms.Demo)
			assert.Equal(t, c.reason, ms.Reason)
		})
	}
}

func TestTheDemoModelPlaysItsScriptOncePerThread(t *testing.T) {
	f, err := workflows.Load("testdata/run/with_demo.yaml")
	require.NoError(t, err)
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(nil)})
	require.NoError(t, err)
	r, err := f.Compile(t.Context(), workflows.Env{Models: ms.Models})
	require.NoError(t, err)
	for _, thread := range []string{"a", "b"} {
		in, err := f.Input(r, "text", "x")
		require.NoError(t, err)
		// Runs without a saver: the thread option only names the script.
		res, err := r.Invoke(t.Context(), in, graph.Thread(thread))
		require.NoError(t, err, thread)
		v, _ := res.State.Value("summary")
		assert.Equal(t, "A scripted summary.", v, thread)
	}
}

func TestAFileWithoutDemoOrModelsNeedsAModel(t *testing.T) {
	f, err := workflows.Load("testdata/run/summarize.yaml")
	require.NoError(t, err)
	_, err = f.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(nil), Demo: true})
	require.ErrorIs(t, err, workflows.ErrNoDemo)
	assert.EqualError(t, err, "workflows: the file has no demo model: testdata/run/summarize.yaml has no demo.script, and llm or react nodes that only a real model can answer; to run offline instead, add \"demo: {script: demo.yaml}\" to the file and write in demo.yaml the answers of its nodes \"summarize\" and \"headline\" (the format: docs/demo-scripts.md)")

	_, err = f.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(nil)})
	assert.EqualError(t, err, "workflows: testdata/run/summarize.yaml: llm: models.basic.api_key_env: environment variable OPENAI_API_KEY is not set (it should hold the openai API key); to run offline instead, add \"demo: {script: demo.yaml}\" to the file and write in demo.yaml the answers of its nodes \"summarize\" and \"headline\" (the format: docs/demo-scripts.md)")
}

func TestEnvReferencesAreResolvedForEndpointsAndSecrets(t *testing.T) {
	f, err := workflows.Load("testdata/run/tools.yaml")
	require.NoError(t, err)
	ms, err := f.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(nil)})
	require.NoError(t, err)
	assert.Equal(t, "http://localhost:8000/v1", ms.Config.Models[llm.TierBasic].BaseURL, "the default of ${LLM_BASE_URL:-...}")
	ms, err = f.Resolve(t.Context(), workflows.ModelOptions{Getenv: env(map[string]string{"LLM_BASE_URL": "http://vllm:8000/v1"})})
	require.NoError(t, err)
	assert.Equal(t, "http://vllm:8000/v1", ms.Config.Models[llm.TierBasic].BaseURL)

	var warnings []string
	_, err = f.Compile(t.Context(), workflows.Env{Getenv: env(nil), Warn: func(m string) { warnings = append(warnings, m) }})
	require.NoError(t, err)
	assert.Equal(t, []string{"tool web_search is left out: testdata/run/tools.yaml: tools.web_search: environment variable SEARXNG_URL is not set"}, warnings)

	req, err := workflows.Load("testdata/run/tools_required.yaml")
	require.NoError(t, err)
	_, err = req.Compile(t.Context(), workflows.Env{Getenv: env(nil)})
	assert.EqualError(t, err, "workflows: testdata/run/tools_required.yaml: tools.web_search: environment variable SEARXNG_URL is not set")
	_, err = req.Compile(t.Context(), workflows.Env{Getenv: env(map[string]string{"SEARXNG_URL": "http://searx:8080"})})
	assert.NoError(t, err)
}
