package openaitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/llm/internal/scriptsrv"
	"github.com/coorflow/coorflow/llm/scripted"
)

// Server is an httptest server speaking OpenAI's chat-completions protocol
// from a script of Responses, given out in order, one per request. It is
// safe for concurrent use.
type Server struct {
	s *scriptsrv.Server[Request, Response]
	// started is closed once s is set: the listener accepts requests
	// before (from other processes too, which the race detector does not
	// see), and a request waits for it.
	started chan struct{}
	d       Dialect
	// respond, when set, answers every request instead of the script.
	respond func(ChatRequest) Response

	mu    sync.Mutex
	last  []Message // the previous prompt's messages, for the cache
	calls int       // requests answered by respond
}

// Dialect is the variant of the protocol a Server speaks: OpenAI's own,
// or another provider's OpenAI-compatible endpoint.
type Dialect struct {
	// Prefix is the path the endpoint's /chat/completions is under, e.g.
	// "/v1beta/openai"; "" serves any path ending in /chat/completions.
	Prefix string
	// Error returns the JSON body of an error response; nil means
	// OpenAI's {"error":{"message","type","param","code"}}.
	Error func(status int, e ErrorBody) any
}

// NewServer starts a Server that answers with responses in order. A
// request beyond the script gets a 400 error with code
// "openaitest_script_exhausted".
func NewServer(responses ...Response) *Server {
	return NewServerFor(Dialect{}, responses...)
}

// NewServerFor starts a Server speaking dialect d that answers with
// responses in order.
func NewServerFor(d Dialect, responses ...Response) *Server {
	s := &Server{d: d, started: make(chan struct{})}
	s.s = scriptsrv.Start[Request](http.HandlerFunc(s.handle), responses)
	close(s.started)
	return s
}

// NewFunc starts a Server whose replies come from respond, called with
// each chat request in turn: a scripted model that decides its tool calls
// and answers from what it is sent. Its requests are not recorded
// (Requests is empty), so that long runs do not keep every prompt.
func NewFunc(respond func(ChatRequest) Response) *Server {
	s := &Server{respond: respond, started: make(chan struct{})}
	s.s = scriptsrv.Start[Request, Response](http.HandlerFunc(s.handle), nil)
	close(s.started)
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
	<-s.started
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") ||
		!strings.HasPrefix(r.URL.Path, s.d.Prefix+"/") {
		s.s.Record(req)
		s.writeError(w, http.StatusNotFound, &ErrorBody{Type: "invalid_request_error",
			Message: fmt.Sprintf("openaitest: no route %s %s", r.Method, r.URL.Path)})
		return
	}
	if err := json.Unmarshal(body, &req.Chat); err != nil {
		s.s.Record(req)
		s.writeError(w, http.StatusBadRequest, &ErrorBody{Type: "invalid_request_error",
			Message: "openaitest: request body is not valid JSON: " + err.Error()})
		return
	}
	n, resp, ok := s.next(req)
	if !ok {
		s.writeError(w, http.StatusBadRequest, &ErrorBody{Type: "invalid_request_error",
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
		s.writeError(w, resp.Status, resp.Error)
	case req.Chat.Stream && resp.Events != nil:
		streamEvents(w, resp.Events)
	case !req.Chat.Stream && resp.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, resp.Body)
	case resp.Body != "" || resp.Events != nil:
		s.writeError(w, http.StatusBadRequest, &ErrorBody{Type: "invalid_request_error",
			Code: "openaitest_script_mismatch", Message: fmt.Sprintf(
				"openaitest: response %d is scripted for a request with stream=%t", n, !req.Chat.Stream)})
	case req.Chat.Stream:
		s.stream(w, n, req.Chat, resp)
	default:
		writeJSON(w, http.StatusOK, s.completion(n, req.Chat, resp))
	}
}

// next returns the number and the reply of req, from the script or from
// the respond function.
func (s *Server) next(req Request) (int, Response, bool) {
	if s.respond == nil {
		return s.s.Next(req)
	}
	s.mu.Lock()
	s.calls++
	n := s.calls
	s.mu.Unlock()
	return n, s.respond(req.Chat), true
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

func (s *Server) writeError(w http.ResponseWriter, status int, e *ErrorBody) {
	if e == nil {
		e = &ErrorBody{Message: http.StatusText(status)}
	}
	if s.d.Error != nil {
		writeJSON(w, status, s.d.Error(status, *e))
		return
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
func (s *Server) usage(req ChatRequest, r Response) map[string]any {
	u := Usage{}
	if r.Usage != nil {
		u = *r.Usage
	} else {
		u.CachedTokens = s.cached(req)
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

// Prompt caching as OpenAI does it: a prompt of at least CacheMinTokens
// that begins as the previous one did is served from the cache for that
// beginning, in steps of CacheStepTokens.
const (
	CacheMinTokens  = 1024
	CacheStepTokens = 128
)

// cached returns the tokens of req's leading messages identical to the
// previous request's, rounded down to CacheStepTokens, 0 under
// CacheMinTokens, and remembers req's messages for the next request.
func (s *Server) cached(req ChatRequest) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.last
	s.last = req.Messages
	tokens := 0
	for i, m := range req.Messages {
		if i >= len(prev) || !sameMessage(prev[i], m) {
			break
		}
		tokens += llm.TokensPerMessage + llm.EstimateTokens(m.Text())
	}
	if tokens < CacheMinTokens {
		return 0
	}
	return tokens / CacheStepTokens * CacheStepTokens
}

func sameMessage(a, b Message) bool {
	return a.Role == b.Role && a.Name == b.Name && a.ToolCallID == b.ToolCallID &&
		bytes.Equal(a.Content, b.Content) && reflect.DeepEqual(a.ToolCalls, b.ToolCalls)
}

// completion builds a non-streamed chat.completion object.
func (s *Server) completion(n int, req ChatRequest, r Response) map[string]any {
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
		"usage":   s.usage(req, r),
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
			"model": req.Model, "choices": []any{}, "usage": s.usage(req, r),
		})
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}
