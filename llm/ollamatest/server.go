package ollamatest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/internal/scriptsrv"
	"github.com/coorflow/coorflow/llm/scripted"
)

// Server is an httptest server speaking Ollama's native chat API from a
// script of Responses, given out in order, one per request. It is safe for
// concurrent use.
type Server struct {
	s *scriptsrv.Server[Request, Response]
}

// NewServer starts a Server that answers with responses in order. A
// request beyond the script gets a 400 error whose message starts
// "ollamatest: script exhausted".
func NewServer(responses ...Response) *Server {
	s := &Server{}
	s.s = scriptsrv.Start[Request](http.HandlerFunc(s.handle), responses)
	return s
}

// URL returns the server's URL, to give an Ollama client as its server.
func (s *Server) URL() string { return s.s.URL() }

// Close cuts any delayed response short and shuts the server down.
func (s *Server) Close() { s.s.Close() }

// Enqueue appends responses to the script.
func (s *Server) Enqueue(responses ...Response) { s.s.Enqueue(responses...) }

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request { return s.s.Requests() }

// Remaining returns how many scripted responses have not been served.
func (s *Server) Remaining() int { return s.s.Remaining() }

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if r.Method != http.MethodPost || r.URL.Path != "/api/chat" {
		s.s.Record(req)
		writeError(w, http.StatusNotFound, fmt.Sprintf("ollamatest: no route %s %s", r.Method, r.URL.Path))
		return
	}
	if err := json.Unmarshal(body, &req.Chat); err != nil {
		s.s.Record(req)
		writeError(w, http.StatusBadRequest, "ollamatest: request body is not valid JSON: "+err.Error())
		return
	}
	n, resp, ok := s.s.Next(req)
	if !ok {
		writeError(w, http.StatusBadRequest,
			fmt.Sprintf("ollamatest: script exhausted: request %d, %d responses scripted", n, n-1))
		return
	}
	if !s.s.Wait(r, resp.Delay) {
		return
	}
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	switch {
	case resp.Status >= 400:
		writeError(w, resp.Status, resp.Error)
	case resp.Lines != nil:
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		for _, l := range resp.Lines {
			fmt.Fprintln(w, l)
		}
	case req.Chat.Streams():
		stream(w, req.Chat, resp)
	default:
		final := line(req.Chat, resp.Text, true, resp)
		final["message"].(map[string]any)["tool_calls"] = toolCalls(resp)
		writeJSON(w, http.StatusOK, final)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": msg})
}

// toolCalls returns the tool calls of a response in Ollama's form, or nil.
func toolCalls(r Response) []map[string]any {
	var out []map[string]any
	for _, tc := range r.ToolCalls {
		args := json.RawMessage(tc.Arguments)
		if strings.TrimSpace(tc.Arguments) == "" {
			args = json.RawMessage("{}")
		}
		out = append(out, map[string]any{"function": map[string]any{"name": tc.Name, "arguments": args}})
	}
	return out
}

// line builds one line of a reply; the last (done) carries the counts.
func line(req ChatRequest, content string, done bool, r Response) map[string]any {
	l := map[string]any{
		"model": req.Model, "created_at": "2025-01-01T00:00:00Z",
		"message": map[string]any{"role": "assistant", "content": content}, "done": done,
	}
	if !done {
		return l
	}
	prompt, eval := r.PromptEvalCount, r.EvalCount
	if prompt == 0 {
		prompt = llm.TokensPerReply
		for _, m := range req.Messages {
			prompt += llm.TokensPerMessage + llm.EstimateTokens(m.Content)
		}
	}
	if eval == 0 {
		eval = llm.EstimateTokens(r.Text) + len(r.ToolCalls)
	}
	reason := r.DoneReason
	if reason == "" {
		reason = "stop"
	}
	l["done_reason"] = reason
	l["total_duration"], l["load_duration"] = 5_000_000, 1_000_000
	l["prompt_eval_count"], l["prompt_eval_duration"] = prompt, 1_000_000
	l["eval_count"], l["eval_duration"] = eval, 2_000_000
	return l
}

// stream writes r as newline-delimited JSON the way Ollama streams: a line
// per content chunk, the tool calls in a line of their own, and a last
// line with "done": true and the counts — or an error line.
func stream(w http.ResponseWriter, req ChatRequest, r Response) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	chunks := r.Chunks
	if chunks == nil {
		chunks = scripted.Chunks(r.Text)
	}
	for _, c := range chunks {
		_ = enc.Encode(line(req, c, false, r))
		scriptsrv.Flush(w)
	}
	if r.StreamError != "" {
		_ = enc.Encode(map[string]any{"error": r.StreamError})
		return
	}
	if calls := toolCalls(r); calls != nil {
		l := line(req, "", false, r)
		l["message"].(map[string]any)["tool_calls"] = calls
		_ = enc.Encode(l)
	}
	_ = enc.Encode(line(req, "", true, r))
}
