package llm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestLoadConfig(t *testing.T) {
	cfg, err := llm.LoadConfig(strings.NewReader(`
models:
  basic:
    provider: openai
    model: gpt-4o-mini
    max_retries: 5
    timeout: 45s
  reasoning:
    provider: openai
    model: deepseek-reasoner
    base_url: https://api.deepseek.com/v1
    api_key_env: DEEPSEEK_API_KEY
    max_input_tokens: 60000
`))
	require.NoError(t, err)
	assert.Equal(t, llm.ModelConfig{Provider: llm.ProviderOpenAI, Model: "gpt-4o-mini", MaxRetries: 5,
		Timeout: 45 * time.Second}, cfg.Models[llm.TierBasic])
	assert.Equal(t, llm.ModelConfig{Provider: llm.ProviderOpenAI, Model: "deepseek-reasoner",
		BaseURL: "https://api.deepseek.com/v1", APIKeyEnv: "DEEPSEEK_API_KEY", MaxInputTokens: 60000},
		cfg.Models[llm.TierReasoning])
	require.NoError(t, cfg.Validate())
}

func TestLoadConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		target  error
		message string
	}{
		{"unknown tier", "models:\n  basic: {provider: openai, model: m}\n  fast:\n    provider: openai\n",
			llm.ErrUnknownTier, `llm: line 3: models.fast: unknown tier "fast"`},
		{"unknown provider", "models:\n  basic:\n    model: m\n    provider: cohere\n",
			llm.ErrUnknownProvider, `llm: line 4: models.basic.provider: unknown provider "cohere"`},
		{"unknown field", "models:\n  basic:\n    provider: openai\n    api_key: sk-123\n",
			llm.ErrInvalidConfig, "line 4: field api_key not found"},
		{"syntax error", "models: [\n", llm.ErrInvalidConfig, "llm: "},
		{"bad duration", "models:\n  basic:\n    timeout: soon\n", llm.ErrInvalidConfig, "line 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := llm.LoadConfig(strings.NewReader(tt.yaml))
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.target)
			assert.ErrorContains(t, err, tt.message)
			var ce *llm.ConfigError
			assert.ErrorAs(t, err, &ce)
		})
	}
}

func TestLoadConfigFileNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "models.yaml")
	require.NoError(t, os.WriteFile(path, []byte("models:\n  basic:\n    provider: nope\n    model: m\n"), 0o600))
	_, err := llm.LoadConfigFile(path)
	require.ErrorIs(t, err, llm.ErrUnknownProvider)
	assert.ErrorContains(t, err, path+":3: models.basic.provider")

	_, err = llm.LoadConfigFile(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestLoadConfigEmpty(t *testing.T) {
	cfg, err := llm.LoadConfig(strings.NewReader(""))
	require.NoError(t, err)
	assert.ErrorIs(t, cfg.Validate(), llm.ErrMissingModel)
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		models  map[llm.Tier]llm.ModelConfig
		target  error
		message string
	}{
		{"ok", map[llm.Tier]llm.ModelConfig{"basic": {Provider: "openai", Model: "gpt-4o"}}, nil, ""},
		{"no basic tier", map[llm.Tier]llm.ModelConfig{"code": {Provider: "openai", Model: "gpt-4o"}},
			llm.ErrMissingModel, "models.basic: not configured"},
		{"unknown tier", map[llm.Tier]llm.ModelConfig{"basic": {Provider: "openai", Model: "m"},
			"huge": {Provider: "openai", Model: "m"}}, llm.ErrUnknownTier, `unknown tier "huge"`},
		{"missing provider", map[llm.Tier]llm.ModelConfig{"basic": {Model: "m"}},
			llm.ErrUnknownProvider, "models.basic.provider: missing provider"},
		{"unknown provider", map[llm.Tier]llm.ModelConfig{"basic": {Provider: "bedrock", Model: "m"}},
			llm.ErrUnknownProvider, `unknown provider "bedrock"`},
		{"missing model", map[llm.Tier]llm.ModelConfig{"basic": {Provider: "anthropic"}},
			llm.ErrMissingModel, "models.basic.model: missing model name"},
		{"ollama with key", map[llm.Tier]llm.ModelConfig{"basic": {Provider: "ollama", Model: "llama3",
			APIKeyEnv: "X"}}, llm.ErrInvalidConfig, "ollama takes no API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := llm.Config{Models: tt.models}.Validate()
			if tt.target == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.target)
			assert.ErrorContains(t, err, tt.message)
		})
	}
}

func TestApplyEnv(t *testing.T) {
	deepseek := llm.ModelConfig{Provider: "openai", Model: "deepseek-chat", BaseURL: "https://api.deepseek.com/v1",
		APIKeyEnv: "DEEPSEEK_API_KEY"}
	tests := []struct {
		name   string
		models map[llm.Tier]llm.ModelConfig
		env    func(string) string
		want   map[llm.Tier]llm.ModelConfig
	}{
		{"nothing set", map[llm.Tier]llm.ModelConfig{"basic": deepseek}, env(),
			map[llm.Tier]llm.ModelConfig{"basic": deepseek}},
		{"COORFLOW_MODEL fills an empty config", nil, env("COORFLOW_MODEL", "ollama:llama3.1:8b"),
			map[llm.Tier]llm.ModelConfig{"basic": {Provider: "ollama", Model: "llama3.1:8b"}}},
		{"COORFLOW_MODEL with the same provider keeps base URL and key",
			map[llm.Tier]llm.ModelConfig{"basic": deepseek}, env("COORFLOW_MODEL", "openai:deepseek-reasoner"),
			map[llm.Tier]llm.ModelConfig{"basic": {Provider: "openai", Model: "deepseek-reasoner",
				BaseURL: deepseek.BaseURL, APIKeyEnv: deepseek.APIKeyEnv}}},
		{"COORFLOW_MODEL with another provider replaces every tier the file set and drops base URL and key",
			map[llm.Tier]llm.ModelConfig{"basic": deepseek, "code": deepseek},
			env("COORFLOW_MODEL", "anthropic:claude-sonnet-4-20250514"),
			map[llm.Tier]llm.ModelConfig{"basic": {Provider: "anthropic", Model: "claude-sonnet-4-20250514"},
				"code": {Provider: "anthropic", Model: "claude-sonnet-4-20250514"}}},
		{"COORFLOW_MODEL_<TIER> wins over COORFLOW_MODEL for its tier",
			map[llm.Tier]llm.ModelConfig{"basic": deepseek, "reasoning": deepseek},
			env("COORFLOW_MODEL", "ollama:llama3", "COORFLOW_MODEL_REASONING", "ollama:qwen3", "COORFLOW_MODEL_VISION", "ollama:llava"),
			map[llm.Tier]llm.ModelConfig{"basic": {Provider: "ollama", Model: "llama3"},
				"reasoning": {Provider: "ollama", Model: "qwen3"}, "vision": {Provider: "ollama", Model: "llava"}}},
		{"OPENAI_BASE_URL fills openai tiers without one",
			map[llm.Tier]llm.ModelConfig{"basic": {Provider: "openai", Model: "qwen2.5"}, "code": deepseek,
				"vision": {Provider: "anthropic", Model: "claude-3-5-sonnet"}},
			env("OPENAI_BASE_URL", "http://localhost:8000/v1"),
			map[llm.Tier]llm.ModelConfig{
				"basic":  {Provider: "openai", Model: "qwen2.5", BaseURL: "http://localhost:8000/v1"},
				"code":   deepseek,
				"vision": {Provider: "anthropic", Model: "claude-3-5-sonnet"}}},
		{"both: the new basic model gets the env base URL", nil,
			env("COORFLOW_MODEL", "openai:qwen2.5", "OPENAI_BASE_URL", "http://vllm:8000/v1"),
			map[llm.Tier]llm.ModelConfig{"basic": {Provider: "openai", Model: "qwen2.5",
				BaseURL: "http://vllm:8000/v1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := llm.Config{Models: tt.models}
			require.NoError(t, cfg.ApplyEnv(tt.env))
			assert.Equal(t, tt.want, cfg.Models)
			assert.NotNil(t, cfg.Getenv)
		})
	}
}

func TestApplyEnvBadModel(t *testing.T) {
	tests := []struct {
		value  string
		target error
	}{
		{"gpt-4o", llm.ErrInvalidConfig},
		{"openai:", llm.ErrInvalidConfig},
		{":gpt-4o", llm.ErrInvalidConfig},
		{"bedrock:titan", llm.ErrUnknownProvider},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			cfg := llm.Config{}
			err := cfg.ApplyEnv(env("COORFLOW_MODEL", tt.value))
			assert.ErrorIs(t, err, tt.target)
			assert.ErrorContains(t, err, "COORFLOW_MODEL")
		})
	}
}
