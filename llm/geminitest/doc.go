// Package geminitest provides an httptest server that speaks the REST
// protocol of Google's Gemini API (generativelanguage v1beta), so that
// tests can drive langchaingo's real Google AI client — and the googleai
// provider of package llm — without a network or a key.
//
// langchaingo's client (through github.com/google/generative-ai-go) asks
// for every reply, streamed or not, with POST
// /v1beta/models/{model}:streamGenerateContent and reads a JSON array of
// GenerateContentResponse objects as it arrives. A Server answers each
// such request (and :generateContent, with one object) with the next
// scripted Response: text in chunks, function calls, the finish reason and
// token counts, or an error in Google's format ({"error": {"code",
// "message", "status"}}) with its HTTP status (ResourceExhausted,
// TokenLimit, Internal, Unavailable, InvalidAPIKey). The Server records
// every request, with the API key it carried.
//
//	srv := geminitest.NewServer(geminitest.Text("hello"))
//	defer srv.Close()
//	// base_url: srv.URL() for provider googleai in an llm.Config
package geminitest
