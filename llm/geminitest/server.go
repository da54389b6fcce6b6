package geminitest

import (
	"strings"

	"github.com/coorflow/coorflow/llm/openaitest"
)

// Prefix is the path of Gemini's OpenAI-compatible endpoint under the
// API's root.
const Prefix = "/v1beta/openai"

// Request is a request the Server received; Chat holds the decoded
// chat-completions request.
type Request = openaitest.Request

// APIKey returns the API key r carried as a bearer token.
func APIKey(r Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// Server is an httptest server speaking Gemini's OpenAI-compatible
// protocol from a script of Responses, given out in order, one per
// request. It is safe for concurrent use.
type Server struct {
	s *openaitest.Server
}

// dialect is Gemini's: the endpoint under Prefix, errors in Google's
// format inside a list, the ErrorBody's Type as the status.
var dialect = openaitest.Dialect{
	Prefix: Prefix,
	Error: func(status int, e openaitest.ErrorBody) any {
		return []any{map[string]any{"error": map[string]any{"code": status, "message": e.Message, "status": e.Type}}}
	},
}

// NewServer starts a Server that answers with responses in order. A
// request beyond the script gets a 400 error whose message starts
// "openaitest: script exhausted".
func NewServer(responses ...Response) *Server {
	return &Server{s: openaitest.NewServerFor(dialect, responses...)}
}

// URL returns the server's root URL: the base_url of a googleai tier.
func (s *Server) URL() string { return s.s.URL() }

// Close cuts any delayed response short and shuts the server down.
func (s *Server) Close() { s.s.Close() }

// Enqueue appends responses to the script.
func (s *Server) Enqueue(responses ...Response) { s.s.Enqueue(responses...) }

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request { return s.s.Requests() }

// Remaining returns how many scripted responses have not been served.
func (s *Server) Remaining() int { return s.s.Remaining() }
