package window_test

import (
	"github.com/tmc/langchaingo/llms"

	"github.com/coorflow/coorflow/llm"
)

// partTokensOf estimates one message as the window counts it inside a
// conversation.
func partTokensOf(m llms.MessageContent) int {
	return llm.EstimateMessages([]llms.MessageContent{m}) - llm.TokensPerReply
}
