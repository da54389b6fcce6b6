package openaitest

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

// Server is an httptest server speaking OpenAI's chat-completions protocol
// from a script of Responses, given out in order, one per request. It is
// safe for concurrent use.
type Server struct {
	s *scriptsrv.Server[Request, Response]
}

// NewServer starts a Server that answers with responses in order. A
// request beyond the script gets a 400 error with code
// "openaitest_script_exhausted".
func NewServer(responses ...Response) *Server {
	s := &Server{}
	s.s = scriptsrv.Start[Request](http.HandlerFunc(s.handle), responses)
	return s
}

// URL returns the server's root URL.
func (s *Server) URL() string { return s.s.URL() }

// BaseURL returns the URL to give an OpenAI client: URL()+"/v1".
func (s *Server) BaseURL() string { return s.s.URL() + "/v1" }

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
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		s.s.Record(req)
		writeError(w, http.StatusNotFound, &ErrorBody{Type: "invalid_request_error",
			Message: fmt.Sprintf("openaitest: no route %s %s", r.Method, r.URL.Path)})
		return
	}
	if err := json.Unmarshal(body, &req.Chat); err != nil {
		s.s.Record(req)
		writeError(w, http.StatusBadRequest, &ErrorBody{Type: "invalid_request_error",
			Message: "openaitest: request body is not valid JSON: " + err.Error()})
		return
	}
	n, resp, ok := s.s.Next(req)
	if !ok {
		writeError(w, http.StatusBadRequest, &ErrorBody{Type: "invalid_request_error",
			Code:    "openaitest_script_exhausted",
			Message: fmt.Sprintf("openaitest: script exhausted: request %d, %d responses scripted", n, n-1)})
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
	case req.Chat.Stream && resp.Events != nil:
		streamEvents(w, resp.Events)
	case !req.Chat.Stream && resp.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, resp.Body)
	case resp.Body != "" || resp.Events != nil:
		writeError(w, http.StatusBadRequest, &ErrorBody{Type: "invalid_request_error",
			Code: "openaitest_script_mismatch", Message: fmt.Sprintf(
				"openaitest: response %d is scripted for a request with stream=%t", n, !req.Chat.Stream)})
	case req.Chat.Stream:
		s.stream(w, n, req.Chat, resp)
	default:
		writeJSON(w, http.StatusOK, completion(n, req.Chat, resp))
	}
}

// streamEvents sends each of events as the data of a server-sent event,
// then [DONE].
func streamEvents(w http.ResponseWriter, events []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, e *ErrorBody) {
	if e == nil {
		e = &ErrorBody{Message: http.StatusText(status)}
	}
	body := map[string]any{"message": e.Message, "type": e.Type, "param": nil, "code": nil}
	if e.Param != "" {
		body["param"] = e.Param
	}
	if e.Code != "" {
		body["code"] = e.Code
	}
	writeJSON(w, status, map[string]any{"error": body})
}

// toolCallID returns the id of tool call i of response n.
func toolCallID(n, i int, tc ToolCall) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("call_%d_%d", n, i+1)
}

func arguments(tc ToolCall) string {
	if strings.TrimSpace(tc.Arguments) == "" {
		return "{}"
	}
	return tc.Arguments
}

func finishReason(r Response) string {
	switch {
	case r.FinishReason != "":
		return r.FinishReason
	case len(r.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// usage returns the usage of a response, estimated if not scripted.
func usage(req ChatRequest, r Response) map[string]any {
	u := Usage{}
	if r.Usage != nil {
		u = *r.Usage
	} else {
		u.PromptTokens = llm.TokensPerReply
		for _, m := range req.Messages {
			u.PromptTokens += llm.TokensPerMessage + llm.EstimateTokens(m.Text())
		}
		u.CompletionTokens = llm.EstimateTokens(r.Text) + llm.EstimateTokens(r.Reasoning)
		for _, tc := range r.ToolCalls {
			u.CompletionTokens += llm.EstimateTokens(tc.Name) + llm.EstimateTokens(arguments(tc))
		}
		u.ReasoningTokens = llm.EstimateTokens(r.Reasoning)
	}
	return map[string]any{
		"prompt_tokens":             u.PromptTokens,
		"completion_tokens":         u.CompletionTokens,
		"total_tokens":              u.PromptTokens + u.CompletionTokens,
		"completion_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		"prompt_tokens_details":     map[string]any{"cached_tokens": u.CachedTokens},
	}
}

// completion builds a non-streamed chat.completion object.
func completion(n int, req ChatRequest, r Response) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	if r.Text == "" && len(r.ToolCalls) > 0 {
		msg["content"] = nil
	}
	if r.Reasoning != "" {
		msg["reasoning_content"] = r.Reasoning
	}
	if len(r.ToolCalls) > 0 {
		var calls []map[string]any
		for i, tc := range r.ToolCalls {
			calls = append(calls, map[string]any{"id": toolCallID(n, i, tc), "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": arguments(tc)}})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000 + n,
		"model": req.Model, "system_fingerprint": "fp_openaitest",
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finishReason(r)}},
		"usage":   usage(req, r),
	}
}

// stream writes r as server-sent events the way OpenAI streams: a role
// chunk, reasoning and content deltas, each tool call as a delta with its
// id and name followed by deltas of its arguments, a finish chunk, a usage
// chunk when the request asked for one, and [DONE].
func (s *Server) stream(w http.ResponseWriter, n int, req ChatRequest, r Response) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(delta map[string]any, finish any, extra map[string]any) {
		chunk := map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1700000000 + n,
			"model": req.Model, "system_fingerprint": "fp_openaitest",
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}},
		}
		for k, v := range extra {
			chunk[k] = v
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for _, c := range scripted.Chunks(r.Reasoning) {
		send(map[string]any{"reasoning_content": c}, nil, nil)
	}
	chunks := r.Chunks
	if chunks == nil {
		chunks = scripted.Chunks(r.Text)
	}
	for _, c := range chunks {
		send(map[string]any{"content": c}, nil, nil)
	}
	for i, tc := range r.ToolCalls {
		send(map[string]any{"tool_calls": []map[string]any{{"index": i, "id": toolCallID(n, i, tc),
			"type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}}}, nil, nil)
		for _, piece := range scriptsrv.Split(arguments(tc), 8) {
			send(map[string]any{"tool_calls": []map[string]any{{"index": i,
				"function": map[string]any{"arguments": piece}}}}, nil, nil)
		}
	}
	send(map[string]any{}, finishReason(r), nil)
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		b, _ := json.Marshal(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1700000000 + n,
			"model": req.Model, "choices": []any{}, "usage": usage(req, r),
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}
