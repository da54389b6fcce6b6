// Package ollamatest provides an httptest server that speaks Ollama's
// native chat API (POST /api/chat) from a script, so that tests can drive
// langchaingo's real Ollama client — and the ollama provider of package
// llm — without a running Ollama.
//
// A Server answers each request with the next scripted Response: text,
// tool calls (in Ollama's form, arguments as a JSON object), the done
// reason and eval counts, or an error in Ollama's format ({"error": "..."})
// with its status (ModelNotFound, ServerBusy, RateLimited,
// ContextExceeded, ServerError), optionally after a delay. Like Ollama it
// streams newline-delimited JSON unless the request says "stream": false,
// and it can end a stream with an error line or send lines that are not
// JSON. The Server records every request.
//
//	srv := ollamatest.NewServer(ollamatest.Text("hello"))
//	defer srv.Close()
//	model, err := ollama.New(ollama.WithServerURL(srv.URL()), ollama.WithModel("llama3.1"))
//
// langchaingo's client (v0.1.14) neither sends tools nor reads tool calls;
// package llm sends the ollama provider's calls with tools to the server's
// OpenAI-compatible API (/v1) for that reason, and a test here pins the
// client's behaviour. Both serves the two APIs on one address, as Ollama
// does.
package ollamatest
