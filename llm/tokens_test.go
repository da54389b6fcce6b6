package llm_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

func TestEstimateTokens(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"one char rounds up", "a", 1},
		{"four ascii chars", "abcd", 1},
		{"five ascii chars", "abcde", 2},
		{"english sentence", "The quick brown fox jumps over the lazy dog.", 11},
		{"han counts one per rune", "你好世界", 4},
		{"kana and hangul", "こんにちは안녕", 7},
		{"cyrillic counts half", "привет", 3},
		{"mixed", "Go 语言", 3}, // 3 ascii quarters + 2 han
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, llm.EstimateTokens(tt.in))
		})
	}
}

func TestEstimateTokensLongText(t *testing.T) {
	text := strings.Repeat("word ", 1000) // 5000 ascii chars
	assert.Equal(t, 1250, llm.EstimateTokens(text))
}

func TestEstimateMessages(t *testing.T) {
	tests := []struct {
		name string
		msgs []llms.MessageContent
		want int
	}{
		{"none", nil, 0},
		{"one text message", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "abcdefgh")},
			llm.TokensPerReply + llm.TokensPerMessage + 2},
		{"two messages", []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeSystem, "abcd"),
			llms.TextParts(llms.ChatMessageTypeHuman, "abcd", "abcd"),
		}, llm.TokensPerReply + 2*llm.TokensPerMessage + 3},
		{"tool call and result", []llms.MessageContent{
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c1", Type: "function",
				FunctionCall: &llms.FunctionCall{Name: "sear", Arguments: `{"q":"go"}`}}}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c1",
				Name: "sear", Content: "abcdefgh"}}},
		}, llm.TokensPerReply + 2*llm.TokensPerMessage + (8 + 1 + 3) + (8 + 1 + 2)},
		{"images", []llms.MessageContent{{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
			llms.ImageURLPart("https://x/img.png"),
			llms.ImageURLWithDetailPart("https://x/img.png", "low"),
			llms.BinaryPart("image/png", []byte{1, 2, 3}),
		}}}, llm.TokensPerReply + llm.TokensPerMessage + llm.TokensPerImage + llm.TokensPerLowDetailImage +
			llm.TokensPerImage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, llm.EstimateMessages(tt.msgs))
		})
	}
}
