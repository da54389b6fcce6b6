package geminitest

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

// Server is an httptest server speaking the Gemini API's REST protocol
// from a script of Responses, given out in order, one per request. It is
// safe for concurrent use.
type Server struct {
	s *scriptsrv.Server[Request, Response]
}

// NewServer starts a Server that answers with responses in order. A
// request beyond the script gets a 400 error whose message starts
// "geminitest: script exhausted".
func NewServer(responses ...Response) *Server {
	s := &Server{}
	s.s = scriptsrv.Start[Request](http.HandlerFunc(s.handle), responses)
	return s
}

// URL returns the server's URL: the endpoint to give the client (the
// base_url of a googleai tier).
func (s *Server) URL() string { return s.s.URL() }

// Close cuts any delayed response short and shuts the server down.
func (s *Server) Close() { s.s.Close() }

// Enqueue appends responses to the script.
func (s *Server) Enqueue(responses ...Response) { s.s.Enqueue(responses...) }

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request { return s.s.Requests() }

// Remaining returns how many scripted responses have not been served.
func (s *Server) Remaining() int { return s.s.Remaining() }

// finishReasons maps finish reasons to the numbers the client asks for
// ("$alt=json;enum-encoding=int").
var finishReasons = map[string]int{"STOP": 1, "MAX_TOKENS": 2, "SAFETY": 3, "RECITATION": 4, "OTHER": 5}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body}
	model, rpc, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	if r.Method != http.MethodPost || !ok || model == "" ||
		(rpc != "streamGenerateContent" && rpc != "generateContent") {
		s.s.Record(req)
		writeError(w, http.StatusNotFound, &ErrorBody{Status: "NOT_FOUND",
			Message: fmt.Sprintf("geminitest: no route %s %s", r.Method, r.URL.Path)})
		return
	}
	req.Model, req.RPC = model, rpc
	if err := json.Unmarshal(body, &req.Generate); err != nil {
		s.s.Record(req)
		writeError(w, http.StatusBadRequest, &ErrorBody{Status: "INVALID_ARGUMENT",
			Message: "geminitest: request body is not valid JSON: " + err.Error()})
		return
	}
	n, resp, ok := s.s.Next(req)
	if !ok {
		writeError(w, http.StatusBadRequest, &ErrorBody{Status: "INVALID_ARGUMENT",
			Message: fmt.Sprintf("geminitest: script exhausted: request %d, %d responses scripted", n, n-1)})
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
	case resp.Body != "":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, resp.Body)
	case rpc == "generateContent":
		writeJSON(w, http.StatusOK, merged(req.Generate, resp))
	default:
		stream(w, req.Generate, resp)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, e *ErrorBody) {
	if e == nil {
		e = &ErrorBody{Message: http.StatusText(status)}
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": status, "message": e.Message,
		"status": e.Status}})
}

// parts returns the parts of a reply: the text pieces, then the calls.
func parts(texts []string, r Response) []map[string]any {
	var out []map[string]any
	for _, t := range texts {
		out = append(out, map[string]any{"text": t})
	}
	for _, fc := range r.FunctionCalls {
		args := json.RawMessage(fc.Args)
		if strings.TrimSpace(fc.Args) == "" {
			args = json.RawMessage("{}")
		}
		out = append(out, map[string]any{"functionCall": map[string]any{"name": fc.Name, "args": args}})
	}
	return out
}

// element builds one GenerateContentResponse; the last carries the finish
// reason and the usage.
func element(req GenerateRequest, ps []map[string]any, last bool, r Response) map[string]any {
	if r.NoCandidates {
		return map[string]any{"usageMetadata": usage(req, r)}
	}
	if ps == nil {
		ps = []map[string]any{}
	}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": ps}, "index": 0}
	el := map[string]any{"candidates": []any{cand}}
	if last {
		reason := r.FinishReason
		if reason == "" {
			reason = "STOP"
		}
		cand["finishReason"] = finishReasons[reason]
		el["usageMetadata"] = usage(req, r)
	}
	return el
}

func usage(req GenerateRequest, r Response) map[string]any {
	prompt, reply := r.PromptTokens, r.ReplyTokens
	if prompt == 0 {
		prompt = llm.TokensPerReply
		for _, c := range req.Contents {
			prompt += llm.TokensPerMessage + llm.EstimateTokens(c.Text())
		}
	}
	if reply == 0 {
		reply = llm.EstimateTokens(r.Text) + len(r.FunctionCalls)
	}
	return map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": reply, "totalTokenCount": prompt + reply}
}

// merged builds the one response of generateContent.
func merged(req GenerateRequest, r Response) map[string]any {
	var texts []string
	if r.Text != "" {
		texts = []string{r.Text}
	}
	return element(req, parts(texts, r), true, r)
}

// stream writes r as the JSON array streamGenerateContent returns, one
// element per text chunk, the calls and finish reason in the last.
func stream(w http.ResponseWriter, req GenerateRequest, r Response) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(http.StatusOK)
	chunks := r.Chunks
	if chunks == nil {
		chunks = scripted.Chunks(r.Text)
	}
	var els []map[string]any
	for i, c := range chunks {
		if i < len(chunks)-1 {
			els = append(els, element(req, parts([]string{c}, Response{}), false, r))
		} else {
			els = append(els, element(req, parts([]string{c}, r), true, r))
		}
	}
	if len(chunks) == 0 {
		els = append(els, element(req, parts(nil, r), true, r))
	}
	fmt.Fprint(w, "[")
	for i, el := range els {
		if i > 0 {
			fmt.Fprint(w, ",\r\n")
		}
		b, _ := json.Marshal(el)
		_, _ = w.Write(b)
		scriptsrv.Flush(w)
	}
	fmt.Fprint(w, "]")
}
