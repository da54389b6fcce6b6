package openaitest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/openaitest"
)

// TestOpenAICompatibleProviders: DeepSeek and Qwen (DashScope's
// compatible mode) are reached through the openai provider with their
// base URL, model name and key variable; the request reaches the server
// at the path under that base URL, for that model, with that key.
func TestOpenAICompatibleProviders(t *testing.T) {
	tests := []struct {
		name      string
		path      string // of the base URL on the provider's host
		model     string
		keyEnv    string
		reply     openaitest.Response
		reasoning string
	}{
		{"DeepSeek chat", "", "deepseek-chat", "DEEPSEEK_API_KEY", openaitest.Text("Hello from DeepSeek."), ""},
		{"DeepSeek reasoner", "/v1", "deepseek-reasoner", "DEEPSEEK_API_KEY",
			openaitest.Response{Text: "42.", Reasoning: "Six times seven."}, "Six times seven."},
		{"Qwen on DashScope", "/compatible-mode/v1", "qwen-plus", "DASHSCOPE_API_KEY",
			openaitest.Text("Hello from Qwen."), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.reply)
			cfg, err := llm.LoadConfig(strings.NewReader("models:\n  basic:\n    provider: openai\n" +
				"    model: " + tt.model + "\n    base_url: " + srv.URL() + tt.path + "\n" +
				"    api_key_env: " + tt.keyEnv + "\n"))
			require.NoError(t, err)
			require.NoError(t, cfg.ApplyEnv(func(k string) string {
				return map[string]string{tt.keyEnv: "sk-" + tt.keyEnv, "OPENAI_API_KEY": "sk-wrong"}[k]
			}))
			models, err := llm.New(t.Context(), cfg)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, models.Close()) })
			m, err := models.Model(llm.TierReasoning)
			require.NoError(t, err)

			resp, err := m.GenerateContent(t.Context(), human("hi"))
			require.NoError(t, err)
			assert.Equal(t, tt.reply.Text, resp.Choices[0].Content)
			assert.Equal(t, tt.reasoning, resp.Choices[0].ReasoningContent)
			req := srv.Requests()[0]
			assert.Equal(t, tt.path+"/chat/completions", req.Path)
			assert.Equal(t, tt.model, req.Chat.Model)
			assert.Equal(t, "Bearer sk-"+tt.keyEnv, req.Header.Get("Authorization"))
			assert.Equal(t, llm.Profile{Provider: llm.ProviderOpenAI, Model: tt.model,
				MaxInputTokens: llm.MaxInputTokens(tt.model)}, models.Profile(llm.TierBasic))
		})
	}
}

// TestOpenAICompatibleStreamsReasoning: DeepSeek's reasoning_content
// arrives in the stream too.
func TestOpenAICompatibleStreamsReasoning(t *testing.T) {
	srv := newServer(t, openaitest.Response{Text: "42.", Reasoning: "Six times seven."})
	m, err := newModels(t, srv, "", nil).Model(llm.TierBasic)
	require.NoError(t, err)
	var reasoning, text strings.Builder
	resp, err := m.GenerateContent(t.Context(), human("6*7?"), llms.WithStreamingReasoningFunc(
		func(_ context.Context, r, c []byte) error {
			reasoning.Write(r)
			text.Write(c)
			return nil
		}))
	require.NoError(t, err)
	assert.Equal(t, "Six times seven.", reasoning.String())
	assert.Equal(t, "42.", text.String())
	assert.Equal(t, "Six times seven.", resp.Choices[0].ReasoningContent)
}
