package llm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
)

func TestTheCommandLineWinsOverTheEnvironmentWhichWinsOverTheFile(t *testing.T) {
	cfg := llm.Config{Models: map[llm.Tier]llm.ModelConfig{
		"basic":     {Provider: "openai", Model: "gpt-4o-mini"},
		"reasoning": {Provider: "openai", Model: "gpt-4o"},
	}}
	require.NoError(t, cfg.ApplyEnv(env("COORFLOW_MODEL", "ollama:llama3", "COORFLOW_MODEL_CODE", "ollama:qwen2.5-coder"),
		llm.Override{Tier: llm.TierReasoning, Model: "anthropic:claude-sonnet-4"}))
	assert.Equal(t, []llm.Resolved{
		{Tier: "basic", Provider: "ollama", Model: "llama3", Endpoint: "http://localhost:11434", Origin: "COORFLOW_MODEL"},
		{Tier: "reasoning", Provider: "anthropic", Model: "claude-sonnet-4", Endpoint: "https://api.anthropic.com/v1", Origin: "--model reasoning"},
		{Tier: "vision", Provider: "ollama", Model: "llama3", Endpoint: "http://localhost:11434", Origin: "basic"},
		{Tier: "code", Provider: "ollama", Model: "qwen2.5-coder", Endpoint: "http://localhost:11434", Origin: "COORFLOW_MODEL_CODE"},
	}, cfg.Resolved())
	assert.True(t, llm.Surprising(cfg.Resolved()), "an override put the tiers on two providers")
}

func TestABadOverrideNamesWhereItCameFrom(t *testing.T) {
	cases := []struct {
		name string
		env  func(string) string
		over []llm.Override
		want string
	}{
		{"flag without provider", env(), []llm.Override{{Tier: "basic", Model: "gpt-4o"}},
			`llm: --model basic="gpt-4o": want provider:model, e.g. openai:gpt-4o`},
		{"flag of an unknown tier", env(), []llm.Override{{Tier: "fast", Model: "openai:gpt-4o"}},
			`llm: --model fast=openai:gpt-4o: unknown tier "fast" (known tiers: [basic reasoning vision code])`},
		{"tier variable with an unknown provider", env("COORFLOW_MODEL_REASONING", "bedrock:titan"), nil,
			`llm: COORFLOW_MODEL_REASONING="bedrock:titan": unknown provider "bedrock" (known providers: [openai anthropic ollama googleai])`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := llm.Config{}
			assert.EqualError(t, cfg.ApplyEnv(c.env, c.over...), c.want)
		})
	}
}

func TestTheResolutionTableShowsEndpointsAndWhatChoseThem(t *testing.T) {
	cfg := llm.Config{Models: map[llm.Tier]llm.ModelConfig{
		"basic":     {Provider: "openai", Model: "gpt-4o-mini"},
		"reasoning": {Provider: "openai", Model: "deepseek-reasoner", BaseURL: "https://api.deepseek.com/v1", APIKeyEnv: "DEEPSEEK_API_KEY"},
	}}
	require.NoError(t, cfg.ApplyEnv(env("OPENAI_BASE_URL", "http://localhost:8000/v1")))
	assert.Equal(t, ""+
		"TIER       PROVIDER  MODEL              ENDPOINT                     CHOSEN BY\n"+
		"basic      openai    gpt-4o-mini        http://localhost:8000/v1     file, endpoint from OPENAI_BASE_URL\n"+
		"reasoning  openai    deepseek-reasoner  https://api.deepseek.com/v1  file\n"+
		"vision     openai    gpt-4o-mini        http://localhost:8000/v1     unset: follows basic, endpoint from OPENAI_BASE_URL\n"+
		"code       openai    gpt-4o-mini        http://localhost:8000/v1     unset: follows basic, endpoint from OPENAI_BASE_URL\n",
		llm.FormatResolved(cfg.Resolved()))
	assert.True(t, llm.Surprising(cfg.Resolved()), "the environment moved basic; reasoning stayed on DeepSeek")
}

func TestAResolutionIsSurprisingOnlyWhenAnOverrideLeavesTiersApart(t *testing.T) {
	file := func() llm.Config {
		return llm.Config{Models: map[llm.Tier]llm.ModelConfig{
			"basic":  {Provider: "openai", Model: "gpt-4o-mini"},
			"vision": {Provider: "anthropic", Model: "claude-sonnet-4"},
		}}
	}
	cases := []struct {
		name string
		env  func(string) string
		want bool
	}{
		{"the file alone, even on two providers", env(), false},
		{"COORFLOW_MODEL puts every tier on one model", env("COORFLOW_MODEL", "ollama:llama3"), false},
		{"a tier variable splits them", env("COORFLOW_MODEL_VISION", "ollama:llava"), true},
		{"OPENAI_BASE_URL moves basic but not the anthropic tier", env("OPENAI_BASE_URL", "http://vllm:8000/v1"), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := file()
			require.NoError(t, cfg.ApplyEnv(c.env))
			assert.Equal(t, c.want, llm.Surprising(cfg.Resolved()))
		})
	}
}
