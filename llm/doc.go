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
//
// Budgets: a Meter in a run's context (WithMeter) keeps the run's model
// calls within its Budget and its parents' (an owner's). Before each call
// Observe reserves, against every meter of the chain in one step, the
// call's estimated prompt (EstimateMessages plus its tools' definitions)
// and its completion: its max_tokens, or CompletionAllowance (8,192) cut
// to what the tightest budget has left after the prompt and the calls in
// flight (never below MinCompletion, 16), which is then sent as the
// call's max_tokens. After the call the reservation is settled with the
// provider's usage; a failed or cancelled call gives it back. A call that
// fits what was spent but not beside the calls in flight waits for them;
// one that does not fit what was spent is not made (*BudgetError), or asks
// (Budget.Ask). So a budget is overspent only by what the provider counts
// of a prompt beyond its estimate, and by a completion beyond the
// max_tokens it was sent if the provider ignores max_tokens (at most that
// excess for each call in flight); with exact prompt counts and providers
// that honour max_tokens, never. A meter kept in an Account (a database:
// runs/accounts) shares its budget with every process on it.
package llm
