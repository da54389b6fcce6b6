package anthropictest

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

// Server is an httptest server speaking Anthropic's Messages API from a
// script of Responses, given out in order, one per request. It is safe for
// concurrent use.
type Server struct {
	s *scriptsrv.Server[Request, Response]
}

// NewServer starts a Server that answers with responses in order. A
// request beyond the script gets a 400 invalid_request_error whose message
// starts "anthropictest: script exhausted".
func NewServer(responses ...Response) *Server {
	s := &Server{}
	s.s = scriptsrv.Start[Request](http.HandlerFunc(s.handle), responses)
	return s
}

// URL returns the server's root URL.
func (s *Server) URL() string { return s.s.URL() }

// BaseURL returns the URL to give an Anthropic client: URL()+"/v1".
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
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/messages") {
		s.s.Record(req)
		writeError(w, http.StatusNotFound, &ErrorBody{Type: "not_found_error",
			Message: fmt.Sprintf("anthropictest: no route %s %s", r.Method, r.URL.Path)})
		return
	}
	if err := json.Unmarshal(body, &req.Messages); err != nil {
		s.s.Record(req)
		writeError(w, http.StatusBadRequest, &ErrorBody{Type: "invalid_request_error",
			Message: "anthropictest: request body is not valid JSON: " + err.Error()})
		return
	}
	n, resp, ok := s.s.Next(req)
	if !ok {
		writeError(w, http.StatusBadRequest, &ErrorBody{Type: "invalid_request_error",
			Message: fmt.Sprintf("anthropictest: script exhausted: request %d, %d responses scripted", n, n-1)})
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
	w.Header().Set("request-id", fmt.Sprintf("req_%d", n))
	switch {
	case resp.Status >= 400:
		writeError(w, resp.Status, resp.Error)
	case req.Messages.Stream:
		stream(w, n, req.Messages, resp)
	case resp.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, resp.Body)
	default:
		writeJSON(w, http.StatusOK, message(n, req.Messages, resp))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, e *ErrorBody) {
	writeJSON(w, status, errorObject(status, e))
}

func errorObject(status int, e *ErrorBody) map[string]any {
	if e == nil {
		e = &ErrorBody{Type: "api_error", Message: http.StatusText(status)}
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": e.Type, "message": e.Message}}
}

// toolUseID returns the id of tool use i of response n.
func toolUseID(n, i int, tu ToolUse) string {
	if tu.ID != "" {
		return tu.ID
	}
	return fmt.Sprintf("toolu_%d_%d", n, i+1)
}

func input(tu ToolUse) json.RawMessage {
	if strings.TrimSpace(tu.Input) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(tu.Input)
}

func stopReason(r Response) string {
	switch {
	case r.StopReason != "":
		return r.StopReason
	case len(r.ToolUses) > 0:
		return "tool_use"
	}
	return "end_turn"
}

// usage returns the usage of a response, estimated if not scripted.
func usage(req MessagesRequest, r Response) Usage {
	if r.Usage != nil {
		return *r.Usage
	}
	u := Usage{InputTokens: llm.TokensPerReply + llm.EstimateTokens(req.SystemText())}
	for _, m := range req.Messages {
		u.InputTokens += llm.TokensPerMessage + llm.EstimateTokens(m.Text())
	}
	u.OutputTokens = llm.EstimateTokens(r.Text) + llm.EstimateTokens(r.Thinking)
	for _, tu := range r.ToolUses {
		u.OutputTokens += llm.EstimateTokens(tu.Name) + llm.EstimateTokens(string(input(tu)))
	}
	return u
}

// blocks returns the content blocks of a response.
func blocks(n int, r Response) []map[string]any {
	var out []map[string]any
	if r.Thinking != "" {
		out = append(out, map[string]any{"type": "thinking", "thinking": r.Thinking, "signature": "sig_test"})
	}
	if r.Text != "" {
		out = append(out, map[string]any{"type": "text", "text": r.Text})
	}
	for i, tu := range r.ToolUses {
		out = append(out, map[string]any{"type": "tool_use", "id": toolUseID(n, i, tu), "name": tu.Name,
			"input": input(tu)})
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out
}

// message builds a non-streamed message object.
func message(n int, req MessagesRequest, r Response) map[string]any {
	u := usage(req, r)
	return map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": req.Model,
		"content": blocks(n, r), "stop_reason": stopReason(r), "stop_sequence": nil,
		"usage": u.json(u.OutputTokens),
	}
}

// stream writes r as server-sent events the way Anthropic streams a
// message: message_start, a ping, each content block as
// content_block_start, its deltas (thinking_delta and signature_delta,
// text_delta, input_json_delta) and content_block_stop, then
// message_delta with the stop reason and usage, and message_stop. With a
// StreamError, the stream ends with an error event after the text deltas.
func stream(w http.ResponseWriter, n int, req MessagesRequest, r Response) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		scriptsrv.Flush(w)
	}
	u := usage(req, r)
	send("message_start", map[string]any{"message": map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": req.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": u.json(1),
	}})
	send("ping", map[string]any{})
	index := 0
	block := func(start map[string]any, deltas ...map[string]any) {
		send("content_block_start", map[string]any{"index": index, "content_block": start})
		for _, d := range deltas {
			send("content_block_delta", map[string]any{"index": index, "delta": d})
		}
		send("content_block_stop", map[string]any{"index": index})
		index++
	}
	if r.Thinking != "" {
		var deltas []map[string]any
		for _, c := range scripted.Chunks(r.Thinking) {
			deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": c})
		}
		deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": "sig_test"})
		block(map[string]any{"type": "thinking", "thinking": ""}, deltas...)
	}
	chunks := r.Chunks
	if chunks == nil {
		chunks = scripted.Chunks(r.Text)
	}
	if r.StreamError != nil {
		send("content_block_start", map[string]any{"index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range chunks {
			send("content_block_delta", map[string]any{"index": index,
				"delta": map[string]any{"type": "text_delta", "text": c}})
		}
		send("error", map[string]any{"error": errorObject(0, r.StreamError)["error"]})
		return
	}
	if len(chunks) > 0 {
		var deltas []map[string]any
		for _, c := range chunks {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": c})
		}
		block(map[string]any{"type": "text", "text": ""}, deltas...)
	}
	for i, tu := range r.ToolUses {
		var deltas []map[string]any
		for _, piece := range scriptsrv.Split(string(input(tu)), 8) {
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": piece})
		}
		block(map[string]any{"type": "tool_use", "id": toolUseID(n, i, tu), "name": tu.Name,
			"input": map[string]any{}}, deltas...)
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stopReason(r),
		"stop_sequence": nil}, "usage": map[string]any{"output_tokens": u.OutputTokens}})
	send("message_stop", map[string]any{})
}
