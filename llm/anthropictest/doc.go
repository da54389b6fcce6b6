// Package anthropictest provides an httptest server that speaks
// Anthropic's Messages API from a script, so that tests can drive
// langchaingo's real Anthropic client — and the anthropic provider of
// package llm — without a network or a key.
//
// A Server answers each POST .../messages with the next scripted Response:
// thinking, text and tool_use blocks with a stop reason and usage, or an
// error in Anthropic's format with its status and headers (Overloaded,
// RateLimited with retry-after, PromptTooLong, ServerError, Unauthorized,
// InvalidRequest), optionally after a delay. When the request asks for a
// stream, the answer is sent as Anthropic's server-sent events —
// message_start, content_block_start, content_block_delta (text_delta,
// thinking_delta, input_json_delta), content_block_stop, message_delta,
// message_stop — or cut by an error event (OverloadedMidStream). The
// Server records every request, with its content blocks (tool_use,
// tool_result) decoded and where it set prompt-cache breakpoints
// (MessagesRequest.CacheBreakpoints); a scripted Usage can report cache
// reads and writes (cache_read_input_tokens, cache_creation_input_tokens).
//
//	srv := anthropictest.NewServer(anthropictest.Text("hello"))
//	defer srv.Close()
//	model, err := anthropic.New(anthropic.WithBaseURL(srv.BaseURL()),
//		anthropic.WithToken("test"), anthropic.WithModel("claude-sonnet-4-5"))
//
// Each protocol has its own package (openaitest, anthropictest,
// ollamatest, geminitest), as each has its own vocabulary of replies and
// errors; what they share is in llm/internal/scriptsrv.
package anthropictest
