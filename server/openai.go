package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// The OpenAI-compatible endpoint (openai*.go) serves each workflow as a
// chat model, under OpenAIMount, so that an SDK or chat UI that speaks
// OpenAI's Chat Completions API runs a workflow as it would call a model:
// the request's model names the workflow (its assistant id on the
// Platform API), its last user message is the run's input (or the
// answer to the question the run stopped on), the answer is the value of
// the workflow's output channel, and the conversation is a thread
// (openai_threads.go). Runs start as the Platform API's do (a Platform
// run request, platformRunFor, then the one entry for runs: start), so
// admission, quotas, budgets, owners, the run's recording and the
// replicas are theirs; only the shapes of the requests, answers, streams
// and errors are OpenAI's.

// OpenAIMount is where the OpenAI-compatible endpoint is served:
// POST OpenAIMount+"/chat/completions", GET OpenAIMount+"/models" and
// GET OpenAIMount+"/models/{model}". A client's base URL is the server's
// URL followed by it. It is apart from /v1, whose routes are coorflow's
// own API.
const OpenAIMount = "/openai/v1"

// Bounds of the OpenAI endpoint.
const (
	// maxOpenAIMessages caps the messages of one request.
	maxOpenAIMessages = 4096
)

// OpenAIThreadHeader names the thread a chat completion runs on, instead
// of the thread its conversation maps to; the answer carries the thread
// it ran on in the same header.
const OpenAIThreadHeader = "X-Coorflow-Thread"

// OpenAIRunHeader is the header of a chat completion's answer that names
// the run it started.
const OpenAIRunHeader = "X-Coorflow-Run"

// openaiRoutes registers the OpenAI-compatible endpoint.
func (s *Server) openaiRoutes() {
	s.openai.started = time.Now().UTC()
	s.handle("POST "+OpenAIMount+"/chat/completions", s.openaiAuth(s.oaiChat))
	s.handle("GET "+OpenAIMount+"/models", s.openaiAuth(s.oaiModels))
	s.handle("GET "+OpenAIMount+"/models/{model}", s.openaiAuth(s.oaiModel))
	s.handle(OpenAIMount+"/", s.openaiAuth(func(w http.ResponseWriter, r *http.Request) {
		writeOpenAIError(w, errorf(http.StatusNotFound, CodeNotFound,
			"coorflow serves %[1]s/chat/completions and %[1]s/models only, not %[2]s %[3]s", OpenAIMount, r.Method, r.URL.Path))
	}))
}

// openaiState is what the server keeps for the OpenAI endpoint.
type openaiState struct {
	// started is when the models were first served (their created).
	started time.Time
	// convs maps conversations to their threads without a Store.
	convs convIndex
}

// openaiAuth is auth with its 401 in OpenAI's error shape.
func (s *Server) openaiAuth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		passed := false
		rec := &errorRecorder{header: make(http.Header)}
		s.auth(func(_ http.ResponseWriter, r *http.Request) {
			passed = true
			h(w, r)
		})(rec, r)
		if passed {
			return
		}
		var body ErrorBody
		_ = json.Unmarshal(rec.body, &body)
		if v := rec.header.Get("WWW-Authenticate"); v != "" {
			w.Header().Set("WWW-Authenticate", v)
		}
		writeOpenAIError(w, &apiError{Status: rec.code, Code: body.Error.Code, Message: body.Error.Message})
	}
}

// errorRecorder keeps the error auth answered.
type errorRecorder struct {
	header http.Header
	code   int
	body   []byte
}

func (e *errorRecorder) Header() http.Header { return e.header }
func (e *errorRecorder) Write(b []byte) (int, error) {
	e.body = append(e.body, b...)
	return len(b), nil
}
func (e *errorRecorder) WriteHeader(code int) { e.code = code }

// oaiModel is a workflow as OpenAI lists a model.
type oaiModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) oaiModelOf(name string) oaiModel {
	return oaiModel{ID: name, Object: "model", Created: s.openai.started.Unix(), OwnedBy: "coorflow"}
}

// oaiModels lists the workflows as models: their names, which are also
// their assistant ids on the Platform API.
func (s *Server) oaiModels(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Object string     `json:"object"`
		Data   []oaiModel `json:"data"`
	}{Object: "list", Data: []oaiModel{}}
	for _, name := range sortedKeys(s.cfg.Workflows) {
		out.Data = append(out.Data, s.oaiModelOf(name))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) oaiModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("model")
	if s.cfg.Workflows[name] == nil {
		writeOpenAIError(w, unknownModel(name))
		return
	}
	writeJSON(w, http.StatusOK, s.oaiModelOf(name))
}

// unknownModel is the 404 of a model that names no workflow.
func unknownModel(name string) *apiError {
	e := errorf(http.StatusNotFound, "model_not_found",
		"the model %q does not exist: a model is a workflow this server serves (GET %s/models lists them)", name, OpenAIMount)
	e.Field = "model"
	return e
}

// oaiChatRequest is the body of a chat completion: the fields coorflow
// reads. Others (temperature, max_tokens, tools, ...) are accepted and
// ignored: the workflow's own models and settings apply.
type oaiChatRequest struct {
	Model         string         `json:"model"`
	Messages      []oaiMessage   `json:"messages"`
	Stream        bool           `json:"stream"`
	StreamOptions *oaiStreamOpts `json:"stream_options"`
	N             *int           `json:"n"`
}

type oaiStreamOpts struct {
	IncludeUsage bool `json:"include_usage"`
}

// oaiMessage is a message of the conversation.
type oaiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text is the message's text: its content string, or its text parts
// joined.
func (m oaiMessage) text(i int) (string, *apiError) {
	field := fmt.Sprintf("messages[%d].content", i)
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fieldErrorf(CodeInvalidField, field, "%s must be a string or a list of content parts", field)
	}
	var b strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			return "", fieldErrorf(CodeInvalidField, fmt.Sprintf("%s[%d].type", field, j),
				"%s[%d] is a %q part: a workflow takes text parts only", field, j, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// chat is a checked chat completion request.
type chat struct {
	req    oaiChatRequest
	wf     *graph.Runnable
	desc   MCPTool // the workflow's input and output channels
	prefix []convMessage
	last   string // the last user message: the run's input or answer
}

// readChat reads and checks a chat completion request, within limit
// bytes.
func readChat(w http.ResponseWriter, r *http.Request, s *Server) (*chat, *apiError) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, errorf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body is larger than %d bytes", tooLarge.Limit)
	case err != nil:
		return nil, errorf(http.StatusBadRequest, CodeMalformedJSON, "read request body: %v", err)
	}
	c := &chat{}
	if err := strictUnmarshal(data, &c.req); err != nil {
		return nil, jsonError(err, "request body")
	}
	req := &c.req
	switch {
	case req.Model == "":
		return nil, fieldErrorf(CodeInvalidField, "model", "field \"model\" is required: name a workflow (GET %s/models lists them)", OpenAIMount)
	case req.N != nil && *req.N != 1:
		return nil, fieldErrorf(CodeInvalidField, "n", "field \"n\" must be 1: a workflow gives one answer per run")
	case len(req.Messages) == 0:
		return nil, fieldErrorf(CodeInvalidField, "messages", "field \"messages\" must hold at least one message, the last one the user's")
	case len(req.Messages) > maxOpenAIMessages:
		return nil, fieldErrorf(CodeInvalidField, "messages", "field \"messages\" holds %d messages, more than the %d allowed", len(req.Messages), maxOpenAIMessages)
	}
	if c.wf = s.cfg.Workflows[req.Model]; c.wf == nil {
		return nil, unknownModel(req.Model)
	}
	c.desc = s.mcpTool(req.Model)
	for i, m := range req.Messages {
		text, e := m.text(i)
		if e != nil {
			return nil, e
		}
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return nil, fieldErrorf(CodeInvalidField, fmt.Sprintf("messages[%d].role", i),
				"messages[%d].role must be system, developer, user, assistant or tool, not %q", i, m.Role)
		}
		if i == len(req.Messages)-1 {
			if m.Role != "user" {
				return nil, fieldErrorf(CodeInvalidField, fmt.Sprintf("messages[%d].role", i),
					"the last message must be the user's (its text is the workflow's input), not the %s's", m.Role)
			}
			if strings.TrimSpace(text) == "" {
				return nil, fieldErrorf(CodeInvalidField, fmt.Sprintf("messages[%d].content", i), "the last user message is empty: it is the workflow's input")
			}
			c.last = text
			break
		}
		c.prefix = append(c.prefix, convMessage{Role: m.Role, Text: text})
	}
	return c, nil
}

// oaiChat serves POST /openai/v1/chat/completions: it runs the model's
// workflow on the conversation's thread and answers as a model would,
// all at once or streamed.
func (s *Server) oaiChat(w http.ResponseWriter, r *http.Request) {
	c, e := readChat(w, r, s)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	owner := ownerFrom(r.Context())
	th, created, err := s.convThread(r, owner, c)
	if err != nil {
		writeOpenAIError(w, s.internal(r, err))
		return
	}
	admitted := false
	defer func() {
		if created && !admitted {
			// Refused: no run will ever use the thread made for it.
			s.dropEphemeral(context.WithoutCancel(r.Context()), owner, th.ID)
		}
	}()
	req, err := s.chatRunRequest(r.Context(), owner, th, c)
	if err != nil {
		writeOpenAIError(w, s.internal(r, err))
		return
	}
	ru, err := s.platformRunFor(r, th, c.wf, req)
	if err != nil {
		writeOpenAIError(w, s.internal(r, err))
		return
	}
	w.Header().Set(OpenAIThreadHeader, th.ID)
	w.Header().Set(OpenAIRunHeader, ru.id)
	ans := &chatAnswer{s: s, c: c, runID: ru.id, created: time.Now().Unix(),
		remember: func(answer string) { s.rememberConv(r.Context(), owner, c, answer, th.ID) }}
	if c.req.Stream {
		ans.format = newOAIFormat(ans)
	}
	admitted = s.oaiRun(w, r, ru, req, ans)
}

// oaiRun starts ru through the server's one entry for runs (start:
// this process or a replica) and answers it as a chat completion,
// streamed or whole; it reports whether the run was admitted.
func (s *Server) oaiRun(w http.ResponseWriter, r *http.Request, ru *run, req lgRunRequest, ans *chatAnswer) bool {
	if ans.format != nil {
		// Attached before the run starts, the stream gets every event.
		ru.events.attach()
		defer ru.events.detach()
	}
	p, err := s.start(r.Context(), ru, storedRequest{Platform: &req})
	if err != nil {
		writeOpenAIError(w, s.internal(r, err))
		return false
	}
	if err := s.awaitStart(r.Context(), p, ans.format == nil); err != nil {
		if r.Context().Err() == nil { // else the client left: the run goes on
			writeOpenAIError(w, s.internal(r, err))
		}
		return true
	}
	if ans.format != nil {
		s.serve(w, r, p, 0, ans.format)
		return true
	}
	v, err := s.awaitEnd(r.Context(), p, 0)
	if err != nil {
		if r.Context().Err() == nil {
			writeOpenAIError(w, s.internal(r, err))
		}
		return true
	}
	s.extendWrite(http.NewResponseController(w))
	ans.write(w, v)
	return true
}

// chatRunRequest is the Platform run request of the chat on thread th:
// the last user message as the workflow's input, or, when the thread
// waits on questions, as the answer to them (every one of them).
func (s *Server) chatRunRequest(ctx context.Context, owner string, th Thread, c *chat) (lgRunRequest, error) {
	req := lgRunRequest{AssistantID: c.req.Model, MultitaskStrategy: "reject",
		Metadata: map[string]any{"source": "openai"}}
	snap, err := c.wf.State(ctx, threadKey(owner, th.ID), graph.WithSaver(s.saver))
	if err != nil && !errors.Is(err, graph.ErrNotFound) {
		return req, err
	}
	if len(snap.Interrupts) > 0 {
		answer := answerValue(c.last)
		resume := answer
		if len(snap.Interrupts) > 1 {
			each := map[string]json.RawMessage{}
			for _, in := range snap.Interrupts {
				each[in.ID] = answer
			}
			resume = mustJSON(each)
		}
		req.Command = &lgCommand{Resume: resume}
		return req, nil
	}
	input, e := chatInput(c.wf, c.desc.Input, c.last)
	if e != nil {
		return req, e
	}
	req.Input = input
	return req, nil
}

// answerValue is a user's answer to a question: its JSON when it is
// JSON, else its text.
func answerValue(text string) json.RawMessage {
	if t := strings.TrimSpace(text); json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	return mustJSON(text)
}

// chatInput is the run input {channel: text}: the text as JSON when it is
// JSON the channel takes, else as a string.
func chatInput(wf *graph.Runnable, channel, text string) (json.RawMessage, *apiError) {
	if t := strings.TrimSpace(text); json.Valid([]byte(t)) {
		in := mustJSON(map[string]json.RawMessage{channel: json.RawMessage(t)})
		if _, e := decodeInput(wf, in); e == nil {
			return in, nil
		}
	}
	in := mustJSON(map[string]string{channel: text})
	if _, e := decodeInput(wf, in); e != nil {
		e.Field = "messages"
		e.Message = fmt.Sprintf("the last user message cannot be the workflow's input (channel %q): %s", channel, e.Message)
		return nil, e
	}
	return in, nil
}

// openaiError is OpenAI's error body.
type openaiError struct {
	Error openaiErrorDetail `json:"error"`
}

type openaiErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// openAIErrorOf is e in OpenAI's shape: its status as it is, but a
// budget's 402 is OpenAI's 429 insufficient_quota (which clients do not
// retry), and a quota's 429 a rate limit (retried after Retry-After).
func openAIErrorOf(e *apiError) (int, openaiError) {
	status, typ, code := e.Status, "invalid_request_error", e.Code
	switch {
	case e.Code == CodeBudgetExceeded:
		status, typ, code = http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota"
	case e.Code == CodeQuotaExceeded:
		typ, code = "rate_limit_exceeded", "rate_limit_exceeded"
	case e.Status == http.StatusUnauthorized:
		typ, code = "invalid_request_error", "invalid_api_key"
	case status >= 500:
		typ = "server_error"
	}
	if status == 0 {
		status = http.StatusInternalServerError
	}
	out := openaiError{Error: openaiErrorDetail{Message: e.Message, Type: typ}}
	if code != "" {
		out.Error.Code = &code
	}
	if e.Field != "" {
		param := e.Field
		out.Error.Param = &param
	}
	return status, out
}

// writeOpenAIError answers e in OpenAI's error shape.
func writeOpenAIError(w http.ResponseWriter, e *apiError) {
	status, body := openAIErrorOf(e)
	if e.RetryAfter != "" {
		w.Header().Set("Retry-After", e.RetryAfter)
	}
	if e.Code == CodeBudgetExceeded {
		w.Header().Set("X-Should-Retry", "false") // spending again will not help
	}
	writeJSON(w, status, body)
}

// runErrorOf is the error of a run that ended in error, as its view says.
func runErrorOf(v Run) *apiError {
	d := v.Error
	if d == nil {
		return errorf(http.StatusInternalServerError, "run_failed", "run %q ended with status %s", v.ID, v.Status)
	}
	status := http.StatusInternalServerError
	switch d.Code {
	case CodeBudgetExceeded:
		status = http.StatusPaymentRequired
	case CodeQuotaExceeded:
		status = http.StatusTooManyRequests
	}
	e := errorf(status, d.Code, "run %s on thread %s: %s", v.ID, v.ThreadID, d.Message)
	e.Quota, e.Limit, e.RequestID = d.Quota, d.Limit, d.RequestID
	return e
}

// convHash is the hash of an owner's conversation with a model so far.
func convHash(owner, model string, msgs []convMessage) string {
	h := sha256.New()
	for _, part := range []string{owner, model} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	for _, m := range msgs {
		role := m.Role
		if role == "developer" {
			role = "system"
		}
		text := strings.TrimSpace(m.Text)
		fmt.Fprintf(h, "|%s:%d:%s", role, len(text), text)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
