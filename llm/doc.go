// Package llm is how coorflow reaches language models: every model call of
// an agent or a node goes through a langchaingo llms.Model obtained here.
//
// Models are asked for by Tier (basic, reasoning, vision, code). A Config,
// loaded from YAML and overridden from the environment, maps each tier to a
// provider (OpenAI or any OpenAI-compatible server, Anthropic, Ollama,
// Google AI), a model name, a base URL and the name of the environment
// variable holding the API key; New builds the clients, wrapped with a
// per-attempt timeout and retries. Profile tells callers the model's input
// window, from a table of known models or the config.
//
// Errors are sorted into four classes — ErrContextOverflow, ErrRateLimited,
// ErrTransient, ErrPermanent — by Classify, from typed errors wherever the
// provider gives them; WithRetry retries the two that can pass. A reply
// that is no answer (ErrEmptyResponse) or cannot be decoded
// (ErrMalformedResponse) is transient.
//
// Prompt caching: Anthropic clients set cache breakpoints on every request
// (the tools, the system prompt, the end of the first message and of the
// last), which langchaingo cannot send itself; CachedInputTokens reads the
// prompt tokens a provider served from its cache (OpenAI's cached_tokens,
// Anthropic's cache_read_input_tokens).
//
// Each provider's wire protocol has a test server: openaitest (OpenAI and
// the compatible DeepSeek, Qwen, vLLM), anthropictest, ollamatest and
// geminitest.
//
// EstimateTokens and EstimateMessages estimate token counts offline.
// WithAgent labels the model calls made on behalf of an agent; the scripted
// model in llm/scripted answers by that label.
package llm
