package llm

import (
	"strings"
	"unicode"

	"github.com/tmc/langchaingo/llms"
)

// Token estimation costs. A rune of ASCII text counts a quarter token (the
// usual four characters per token of English and code with BPE
// tokenizers such as cl100k and o200k); a Han, Hiragana, Katakana or Hangul
// rune counts one token, which these tokenizers need per character or a
// little less; any other rune (accented Latin, Cyrillic, Greek, Arabic,
// emoji) counts half a token. Rounding is up, so non-empty text is at
// least one token. The estimate leans high on purpose: budgets built on it
// overflow less often.
const (
	// TokensPerMessage is the overhead of one message: role and separators.
	TokensPerMessage = 4
	// TokensPerReply is the overhead of priming the model's reply, added
	// once per non-empty conversation.
	TokensPerReply = 3
	// TokensPerImage is charged for an image or other binary part: the cost
	// of a 1024×1024 high-detail image for OpenAI models, a typical
	// upper bound for others.
	TokensPerImage = 765
	// TokensPerLowDetailImage is charged for an image URL with detail "low".
	TokensPerLowDetailImage = 85
	// tokensPerToolCall covers the id, type and JSON punctuation of a tool
	// call or tool result around its name and arguments.
	tokensPerToolCall = 8
)

// EstimateTokens estimates how many tokens s takes, without a tokenizer:
// see the constants above for the weights.
func EstimateTokens(s string) int {
	if s == "" {
		return 0
	}
	quarters := 0
	for _, r := range s {
		switch {
		case r < unicode.MaxASCII+1:
			quarters++
		case isCJK(r):
			quarters += 4
		default:
			quarters += 2
		}
	}
	return (quarters + 3) / 4
}

// isCJK reports whether r is written with roughly one token per character.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// EstimateMessages estimates the input tokens of a conversation: for each
// message TokensPerMessage plus its parts — text by EstimateTokens, a tool
// call or tool result by its name and arguments or content plus a small
// fixed overhead, an image TokensPerImage (TokensPerLowDetailImage at
// detail "low"), any other binary part TokensPerImage — and TokensPerReply
// once for a non-empty conversation.
func EstimateMessages(msgs []llms.MessageContent) int {
	if len(msgs) == 0 {
		return 0
	}
	n := TokensPerReply
	for _, m := range msgs {
		n += TokensPerMessage
		for _, p := range m.Parts {
			n += estimatePart(p)
		}
	}
	return n
}

func estimatePart(p llms.ContentPart) int {
	switch p := p.(type) {
	case llms.TextContent:
		return EstimateTokens(p.Text)
	case llms.ToolCall:
		n := tokensPerToolCall
		if p.FunctionCall != nil {
			n += EstimateTokens(p.FunctionCall.Name) + EstimateTokens(p.FunctionCall.Arguments)
		}
		return n
	case llms.ToolCallResponse:
		return tokensPerToolCall + EstimateTokens(p.Name) + EstimateTokens(p.Content)
	case llms.ImageURLContent:
		if strings.EqualFold(p.Detail, "low") {
			return TokensPerLowDetailImage
		}
		return TokensPerImage
	case llms.BinaryContent:
		return TokensPerImage
	}
	return 0
}
