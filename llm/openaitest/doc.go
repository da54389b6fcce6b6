// Package openaitest provides an httptest server that speaks OpenAI's
// chat-completions protocol from a script, so that tests can drive
// langchaingo's real OpenAI client — and every OpenAI-compatible path of
// package llm — without a network or a key.
//
// A Server answers each request with the next scripted Response: text,
// reasoning, several tool calls, usage, or an error in OpenAI's JSON format
// with its status and headers (RateLimited, ContextLengthExceeded,
// ServerError, Unauthorized), or a misbehaving reply (Empty, NoChoices,
// InvalidJSON, MalformedStream), optionally after a delay. When the request
// asks for a stream, the answer is sent as server-sent events the way
// OpenAI sends them, tool calls as deltas included. The Server records
// every request.
//
// NewFunc starts a Server whose replies come from a function of each
// request instead: a scripted model that decides its tool calls and
// answers from what it is sent, for long runs. Estimated usage reports
// cached prompt tokens (usage.prompt_tokens_details.cached_tokens) as
// OpenAI's prompt cache would: the beginning a prompt shares with the
// previous request, from 1,024 tokens, in steps of 128.
//
//	srv := openaitest.NewServer(openaitest.Text("hello"))
//	defer srv.Close()
//	model, err := openai.New(openai.WithBaseURL(srv.BaseURL()),
//		openai.WithToken("test"), openai.WithModel("gpt-4o"))
package openaitest
