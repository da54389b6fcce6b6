// Package geminitest provides an httptest server that speaks the Gemini
// API's OpenAI-compatible protocol (generativelanguage v1beta/openai), the
// one the googleai provider of package llm uses, so that tests can drive it
// without a network or a key.
//
// The provider sends POST /v1beta/openai/chat/completions under its base
// URL, with the API key as a bearer token, and reads a chat completion, or
// server-sent chunks when it streams, as from OpenAI (see openaitest,
// whose Server this one is in Gemini's dialect). A Server answers each
// request with the next scripted Response: text in chunks, function calls,
// or an error in the form Gemini's endpoint sends — a list holding one
// {"error": {"code", "message", "status"}} — with its HTTP status
// (ResourceExhausted, TokenLimit, Internal, Unavailable, InvalidAPIKey).
// The Server records every request, with the API key it carried.
//
//	srv := geminitest.NewServer(geminitest.Text("hello"))
//	defer srv.Close()
//	// base_url: srv.URL() for provider googleai in an llm.Config
package geminitest
