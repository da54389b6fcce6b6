package llm_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coorflow/coorflow/llm"
)

func TestNewMissingAPIKeyNamesVariable(t *testing.T) {
	tests := []struct {
		name    string
		mc      llm.ModelConfig
		varName string
	}{
		{"openai default", llm.ModelConfig{Provider: "openai", Model: "gpt-4o"}, "OPENAI_API_KEY"},
		{"openai named", llm.ModelConfig{Provider: "openai", Model: "deepseek-chat",
			BaseURL: "https://api.deepseek.com/v1", APIKeyEnv: "DEEPSEEK_API_KEY"}, "DEEPSEEK_API_KEY"},
		{"anthropic default", llm.ModelConfig{Provider: "anthropic", Model: "claude-3-5-sonnet"},
			"ANTHROPIC_API_KEY"},
		{"googleai default", llm.ModelConfig{Provider: "googleai", Model: "gemini-2.0-flash"}, "GOOGLE_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := llm.Config{Models: map[llm.Tier]llm.ModelConfig{llm.TierBasic: tt.mc}, Getenv: env()}
			_, err := llm.New(t.Context(), cfg)
			require.ErrorIs(t, err, llm.ErrMissingAPIKey)
			assert.ErrorContains(t, err, "environment variable "+tt.varName+" is not set")
		})
	}
}

func TestNewInvalidConfig(t *testing.T) {
	_, err := llm.New(t.Context(), llm.Config{Models: map[llm.Tier]llm.ModelConfig{
		llm.TierBasic: {Provider: "openai"}}})
	assert.ErrorIs(t, err, llm.ErrMissingModel)
}

func TestNewProviders(t *testing.T) {
	cfg, err := llm.LoadConfig(strings.NewReader(`
models:
  basic:
    provider: openai
    model: qwen2.5-coder
    base_url: http://localhost:8000/v1
  reasoning:
    provider: anthropic
    model: claude-3-7-sonnet-latest
    max_input_tokens: 100000
  vision:
    provider: googleai
    model: gemini-2.0-flash
  code:
    provider: ollama
    model: llama3.1:8b
    base_url: http://localhost:11434
`))
	require.NoError(t, err)
	require.NoError(t, cfg.ApplyEnv(env("ANTHROPIC_API_KEY", "k1", "GOOGLE_API_KEY", "k2")))
	models, err := llm.New(t.Context(), cfg)
	require.NoError(t, err, "a local OpenAI-compatible server needs no key")
	t.Cleanup(func() { assert.NoError(t, models.Close()) })

	assert.Equal(t, llm.Profile{Provider: "openai", Model: "qwen2.5-coder"}, models.Profile(llm.TierBasic))
	assert.Equal(t, llm.Profile{Provider: "anthropic", Model: "claude-3-7-sonnet-latest", MaxInputTokens: 100000},
		models.Profile(llm.TierReasoning), "config overrides the table")
	assert.Equal(t, llm.Profile{Provider: "googleai", Model: "gemini-2.0-flash", MaxInputTokens: 1_048_576},
		models.Profile(llm.TierVision))
	assert.Equal(t, llm.Profile{Provider: "ollama", Model: "llama3.1:8b", MaxInputTokens: 131_072},
		models.Profile(llm.TierCode))
	for _, tier := range llm.Tiers() {
		m, err := models.Model(tier)
		require.NoError(t, err)
		assert.NotNil(t, m)
	}
}

func TestModelsTiers(t *testing.T) {
	basic := &funcModel{}
	code := &funcModel{}
	models, err := llm.NewStatic(map[llm.Tier]llm.TierModel{
		llm.TierBasic: {Model: basic, Profile: llm.Profile{Provider: "openai", Model: "gpt-4o"}},
		llm.TierCode:  {Model: code, Profile: llm.Profile{Provider: "openai", Model: "gpt-4.1"}},
	})
	require.NoError(t, err)

	tests := []struct {
		tier    llm.Tier
		model   any
		profile string
	}{
		{llm.TierBasic, basic, "gpt-4o"},
		{llm.TierCode, code, "gpt-4.1"},
		{llm.TierReasoning, basic, "gpt-4o"},
		{llm.TierVision, basic, "gpt-4o"},
	}
	for _, tt := range tests {
		t.Run(string(tt.tier), func(t *testing.T) {
			m, err := models.Model(tt.tier)
			require.NoError(t, err)
			assert.Same(t, tt.model, m)
			assert.Equal(t, tt.profile, models.Profile(tt.tier).Model)
		})
	}

	_, err = models.Model("turbo")
	assert.ErrorIs(t, err, llm.ErrUnknownTier)
	assert.Equal(t, llm.Profile{}, models.Profile("turbo"))
}

func TestNewStaticErrors(t *testing.T) {
	_, err := llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierCode: {Model: &funcModel{}}})
	assert.ErrorIs(t, err, llm.ErrMissingModel)
	_, err = llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {}})
	assert.ErrorIs(t, err, llm.ErrMissingModel)
	_, err = llm.NewStatic(map[llm.Tier]llm.TierModel{llm.TierBasic: {Model: &funcModel{}}, "x": {Model: &funcModel{}}})
	assert.ErrorIs(t, err, llm.ErrUnknownTier)
}
