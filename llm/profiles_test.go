package llm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coorflow/coorflow/llm"
)

func TestMaxInputTokens(t *testing.T) {
	tests := []struct {
		model string
		want  int
	}{
		{"gpt-4o", 128_000},
		{"gpt-4o-mini-2024-07-18", 128_000},
		{"gpt-4.1-mini", 1_047_576},
		{"gpt-4-0613", 8_192},
		{"o3", 200_000},
		{"o3-mini", 200_000},
		{"o4-mini", 200_000},
		{"o10", 0}, // "o1" must not match across a digit
		{"claude-3-5-sonnet-20241022", 200_000},
		{"claude-3-7-sonnet-latest", 200_000},
		{"claude-sonnet-4-20250514", 200_000},
		{"anthropic/claude-3.5-sonnet", 200_000},
		{"gemini-1.5-pro-002", 2_097_152},
		{"gemini-1.5-flash", 1_048_576},
		{"gemini-2.5-pro", 1_048_576},
		{"deepseek-chat", 65_536},
		{"deepseek-reasoner", 65_536},
		{"qwen-max-latest", 30_720},
		{"qwen-plus", 129_024},
		{"llama3:8b", 8_192},
		{"llama3.1:70b", 131_072},
		{"meta-llama/Llama-3.1-8B-Instruct", 131_072},
		{"GPT-4o", 128_000},
		{"my-finetune", 0},
		{"", 0},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			assert.Equal(t, tt.want, llm.MaxInputTokens(tt.model))
		})
	}
}
