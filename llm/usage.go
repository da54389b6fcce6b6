package llm

import "github.com/tmc/langchaingo/llms"

// TokenUsage is what one model call used, as the provider reported it or,
// when it reported nothing, as estimated (Estimated).
type TokenUsage struct {
	// PromptTokens counts every input token, cached ones included:
	// OpenAI's and Gemini's prompt tokens, Anthropic's input tokens plus
	// its cache reads and cache writes.
	PromptTokens int `json:"prompt_tokens"`
	// CachedTokens is the part of PromptTokens read from the provider's
	// prompt cache (OpenAI's prompt_tokens_details.cached_tokens,
	// Anthropic's cache_read_input_tokens, Gemini's cached content).
	CachedTokens int `json:"cached_tokens,omitempty"`
	// CacheWriteTokens is the part of PromptTokens written to the cache
	// (Anthropic's cache_creation_input_tokens).
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// CompletionTokens counts the output tokens, reasoning included.
	CompletionTokens int `json:"completion_tokens"`
	// ReasoningTokens is the part of CompletionTokens the model spent
	// reasoning (OpenAI's completion_tokens_details.reasoning_tokens).
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// Estimated is true when the provider reported no prompt or no
	// completion tokens and they were estimated (EstimateMessages,
	// EstimateTokens).
	Estimated bool `json:"estimated,omitempty"`
}

// Tokens is PromptTokens plus CompletionTokens.
func (u TokenUsage) Tokens() int { return u.PromptTokens + u.CompletionTokens }

// ReadUsage returns the usage of a response to msgs from the generation
// info of its first choice, with the keys langchaingo v0.1.14 fills:
// OpenAI's PromptTokens, CompletionTokens, PromptCachedTokens and
// ReasoningTokens; Anthropic's InputTokens, OutputTokens,
// CacheReadInputTokens and CacheCreationInputTokens (Anthropic counts
// cache reads and writes apart from its input tokens; they are added to
// PromptTokens here); Gemini's and Ollama's PromptTokens,
// CompletionTokens and CachedTokens. Counts the provider did not report
// are estimated, and the usage says so.
func ReadUsage(resp *llms.ContentResponse, msgs []llms.MessageContent) TokenUsage {
	var info map[string]any
	if len(resp.Choices) > 0 {
		info = resp.Choices[0].GenerationInfo
	}
	u := TokenUsage{
		PromptTokens:     firstInt(info, "PromptTokens", "prompt_tokens"),
		CompletionTokens: firstInt(info, "CompletionTokens", "OutputTokens", "completion_tokens", "output_tokens"),
		ReasoningTokens:  firstInt(info, "ReasoningTokens", "CompletionReasoningTokens", "ThinkingTokens"),
		CachedTokens:     firstInt(info, "PromptCachedTokens", "CachedTokens"),
	}
	if u.PromptTokens == 0 {
		// Anthropic: input tokens exclude the cache reads and writes.
		in := firstInt(info, "InputTokens", "input_tokens")
		read, write := firstInt(info, "CacheReadInputTokens"), firstInt(info, "CacheCreationInputTokens")
		if in+read+write > 0 {
			u.PromptTokens, u.CachedTokens, u.CacheWriteTokens = in+read+write, read, write
		}
	}
	if u.PromptTokens == 0 {
		u.PromptTokens, u.Estimated = EstimateMessages(msgs), true
	}
	if u.CompletionTokens == 0 {
		for _, c := range resp.Choices {
			u.CompletionTokens += EstimateTokens(c.Content)
			for _, tc := range c.ToolCalls {
				if tc.FunctionCall != nil {
					u.CompletionTokens += EstimateTokens(tc.FunctionCall.Name + tc.FunctionCall.Arguments)
				}
			}
		}
		u.Estimated = u.Estimated || u.CompletionTokens > 0
	}
	u.CachedTokens = min(u.CachedTokens, u.PromptTokens)
	u.ReasoningTokens = min(u.ReasoningTokens, u.CompletionTokens)
	return u
}

// Usage returns the prompt and completion tokens of a response to msgs:
// ReadUsage's PromptTokens and CompletionTokens.
func Usage(resp *llms.ContentResponse, msgs []llms.MessageContent) (prompt, completion int) {
	u := ReadUsage(resp, msgs)
	return u.PromptTokens, u.CompletionTokens
}

func firstInt(m map[string]any, keys ...string) int {
	for _, k := range keys {
		switch v := m[k].(type) {
		case int:
			if v != 0 {
				return v
			}
		case int64:
			if v != 0 {
				return int(v)
			}
		case int32:
			if v != 0 {
				return int(v)
			}
		case float64:
			if v != 0 {
				return int(v)
			}
		}
	}
	return 0
}
