package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/coorflow/coorflow/runs"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/coorflow/coorflow/graph"
	mcptools "github.com/coorflow/coorflow/tools/mcp"
)

// MCPTool describes how /mcp (and ServeMCP) offers a workflow as an MCP
// tool.
type MCPTool struct {
	// Description tells the client, and its model, what the workflow does.
	Description string
	// Input is the channel the tool's input argument is written to
	// ("input" when empty), and InputSchema the JSON Schema of its value
	// (any value when empty).
	Input       string
	InputSchema json.RawMessage
	// Output is the channel whose value the tool returns ("answer" when
	// empty).
	Output string
}

// Bounds of the MCP side.
const (
	// mcpSessionTimeout closes MCP sessions idle for this long.
	mcpSessionTimeout = 30 * time.Minute
	// maxMCPRounds bounds the questions one tool call answers by
	// elicitation before it returns how to resume instead.
	maxMCPRounds = 16
	// maxQuestionBytes caps the text of a question shown to the user.
	maxQuestionBytes = 8 << 10
)

// The arguments every workflow tool takes besides its input.
const (
	argThread     = "thread_id"
	argResume     = "resume"
	argResumeEach = "resume_each"
	argConfig     = "config"
)

// newProtocol is the first protocol version whose servers ask for input by
// returning it from the call (multi round-trip requests) rather than by
// sending requests to the client.
const newProtocol = "2026-07-28"

// mcpRoutes serves /mcp: the workflows as MCP tools over streamable HTTP,
// for the owner of the request's bearer token. A request on protocol
// 2026-07-28 or later (its MCP-Protocol-Version header) is served without
// a session, as that protocol has none; older ones in sessions, each
// belonging to the owner that opened it.
func (s *Server) mcpRoutes() {
	srv := s.newMCPServer("")
	getServer := func(*http.Request) *mcp.Server { return srv }
	// The owner becomes the session's user: the SDK refuses a session to
	// any other owner's token.
	owned := auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: ownerFrom(r.Context())}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	sessions := owned(mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		SessionTimeout:      mcpSessionTimeout,
		MaxRequestBodyBytes: s.cfg.MaxBodyBytes,
		Logger:              s.log,
	}))
	// Without sessions, a call lives as long as its POST: a client that
	// closes the response stream cancels it (the 2026-07-28 transport's
	// cancellation), as does a notifications/cancelled (mcpQuiet).
	sessionless := owned(mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		PropagateRequestCancellation: true,
		MaxRequestBodyBytes:          s.cfg.MaxBodyBytes,
		Logger:                       s.log,
	}))
	s.handle("/mcp", mcpSameOrigin(s.auth(func(w http.ResponseWriter, r *http.Request) {
		owner := ownerFrom(r.Context())
		h := sessions
		if mcpSessionless(r) {
			h = sessionless
		} else if r.Method == http.MethodPost && r.Header.Get(mcpSessionHeader) == "" {
			// A POST without a session id may open a session: the owner's
			// quota is checked first, and the session counted once opened.
			if err := s.mcp.opening(owner, srv, s.cfg.MaxMCPSessions); err != nil {
				writeError(w, err)
				return
			}
			defer func() { s.mcp.opened(owner, w.Header().Get(mcpSessionHeader)) }()
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(s.mcpStopping(), cancel) // Shutdown ends open streams
		defer stop()
		s.mcp.mcpQuiet(w, r.WithContext(ctx), owner, s.cfg.MaxBodyBytes, h)
	})))
}

// mcpSessionless says whether a request to /mcp is on a protocol without
// sessions (2026-07-28 on), by its MCP-Protocol-Version header, which the
// transport requires on every request of those protocols.
func mcpSessionless(r *http.Request) bool {
	return r.Header.Get(mcpProtocolHeader) >= newProtocol
}

// mcpSameOrigin refuses, with 403, a request to /mcp whose Origin header
// names another origin than the one it was sent to (its Host): the MCP
// transport requires servers to check Origin on every request, against
// DNS rebinding and pages of other sites. A request without Origin (not
// from a browser) passes; the go-sdk's handler refuses a foreign Host on
// a loopback address.
func mcpSameOrigin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			h(w, r)
			return
		}
		u, err := url.Parse(origin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
			writeError(w, errorf(http.StatusForbidden, CodeForeignOrigin, "origin %q may not call /mcp of %s: only pages of the same origin may (MCP refuses other origins against DNS rebinding)", origin, r.Host))
			return
		}
		h(w, r)
	}
}

// mcpSessionHeader carries the id of an MCP session over streamable HTTP,
// and mcpProtocolHeader the protocol version of a request.
const (
	mcpSessionHeader  = "Mcp-Session-Id"
	mcpProtocolHeader = "Mcp-Protocol-Version"
)

// mcpState is what the server keeps for /mcp: a context that Shutdown
// cancels, to end the open MCP streams, and the owners of the sessions
// opened, for the quota MaxMCPSessions.
type mcpState struct {
	once   sync.Once
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	sessions map[string]string // by session id: its owner
	pending  map[string]int    // by owner: requests that may open a session

	calls mcpCalls // the calls in flight, whose answer a cancel withholds
}

// opening counts a request of owner that may open a session, or refuses
// it when the owner's open sessions and such requests are max already
// (max < 0: no limit). Sessions the MCP server no longer has (closed,
// idle too long) are forgotten first. opened ends the count.
func (m *mcpState) opening(owner string, srv *mcp.Server, max int) *apiError {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions, m.pending = make(map[string]string), make(map[string]int)
	}
	live := make(map[string]bool, len(m.sessions))
	for ss := range srv.Sessions() {
		live[ss.ID()] = true
	}
	n := m.pending[owner]
	for id, o := range m.sessions {
		switch {
		case !live[id]:
			delete(m.sessions, id)
		case o == owner:
			n++
		}
	}
	if max >= 0 && n >= max {
		return quotaError(QuotaMCPSessions, int64(max),
			"owner %q has %d MCP sessions open, the most allowed: close one (DELETE /mcp with its %s header) or let one stay idle for %v, then try again",
			owner, n, mcpSessionHeader, mcpSessionTimeout)
	}
	m.pending[owner]++
	return nil
}

// opened ends the count of a request of owner that opening let through,
// and records the session it opened (id, or "" for none).
func (m *mcpState) opened(owner, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending[owner]--; m.pending[owner] <= 0 {
		delete(m.pending, owner)
	}
	if id != "" {
		m.sessions[id] = owner
	}
}

func (m *mcpState) init() {
	m.once.Do(func() { m.ctx, m.cancel = context.WithCancel(context.Background()) })
}

func (s *Server) mcpStopping() context.Context {
	s.mcp.init()
	return s.mcp.ctx
}

// stopMCP ends the open MCP streams; Shutdown calls it.
func (s *Server) stopMCP() {
	s.mcp.init()
	s.mcp.cancel()
}

// ServeMCP serves the workflows as MCP tools over t, for owner, until the
// client ends the session or ctx is done: `coorflow mcp` serves stdio
// with it. Runs go through the server like those of the HTTP API.
func (s *Server) ServeMCP(ctx context.Context, owner string, t mcp.Transport) error {
	if owner == "" {
		return errors.New("server: ServeMCP needs an owner")
	}
	ss, err := s.newMCPServer(owner).Connect(ctx, quietTransport{t}, nil)
	if err != nil {
		return fmt.Errorf("server: mcp: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = ss.Close() })
	defer stop()
	err = ss.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// newMCPServer makes the MCP server of the workflows; owner is fixed for
// stdio, and read from each request's token over HTTP when empty.
func (s *Server) newMCPServer(owner string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "coorflow", Version: "v1"}, &mcp.ServerOptions{
		Instructions: "Each tool runs a coorflow workflow and returns its result. A run that stops on a question asks it " +
			"(elicitation) when the client can answer, and otherwise returns how to resume it: call the tool again with " +
			"thread_id and resume.",
		Logger: s.log,
	})
	names := make([]string, 0, len(s.cfg.Workflows))
	for name := range s.cfg.Workflows {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		desc := s.mcpTool(name)
		srv.AddTool(&mcp.Tool{
			Name: name, Description: toolDescription(name, desc), InputSchema: toolSchema(desc),
			Annotations: &mcp.ToolAnnotations{Title: name, OpenWorldHint: ptr(true)},
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			o := owner
			if req.Extra != nil && req.Extra.TokenInfo != nil {
				o = req.Extra.TokenInfo.UserID
			}
			if o == "" {
				return toolError("unauthorized: the request carries no owner"), nil
			}
			c := &mcpCall{s: s, owner: o, name: name, wf: s.cfg.Workflows[name], desc: desc, req: req}
			return c.serve(ctx)
		})
	}
	return srv
}

func ptr[T any](v T) *T { return &v }

// mcpTool is the description of a workflow, with its defaults.
func (s *Server) mcpTool(name string) MCPTool {
	d := s.cfg.MCPTools[name]
	if d.Input == "" {
		d.Input = "input"
	}
	if d.Output == "" {
		d.Output = "answer"
	}
	return d
}

func toolDescription(name string, d MCPTool) string {
	text := d.Description
	if text == "" {
		text = "Runs the coorflow workflow " + name + "."
	}
	return text + fmt.Sprintf(" Give %s to start a run; the result is the run's %s. "+
		"When a run stops on a question you could not answer, the result names its thread: call again with thread_id and resume (the answer) to go on.",
		d.Input, d.Output)
}

// toolSchema is a workflow tool's input schema: the input channel's value,
// and the thread and answers that continue a run.
func toolSchema(d MCPTool) json.RawMessage {
	input := map[string]any{}
	if len(d.InputSchema) > 0 {
		_ = json.Unmarshal(d.InputSchema, &input)
	}
	if _, ok := input["description"]; !ok {
		input["description"] = "The run's input (channel " + d.Input + "). Required to start a run."
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			d.Input:   input,
			argThread: map[string]any{"type": "string", "description": "The thread to run on. Without it a new thread is started; with resume it names the thread whose run waits for an answer."},
			argResume: map[string]any{"description": "The answer to the one question the thread's run waits on (text, or JSON)."},
			argResumeEach: map[string]any{"type": "object", "additionalProperties": true,
				"description": "Answers to several questions the thread's run waits on, by question id."},
		},
	}
	if d.Input != argConfig {
		schema["properties"].(map[string]any)[argConfig] = map[string]any{"type": "object", "additionalProperties": true,
			"description": "Optional: the run's config, values by key that the workflow's nodes read (such as a model choice or a user id)."}
	}
	raw, _ := json.Marshal(schema)
	return raw
}

// mcpCall is one call of a workflow tool.
type mcpCall struct {
	s     *Server
	owner string
	name  string
	wf    *graph.Runnable
	desc  MCPTool
	req   *mcp.CallToolRequest
	// done counts the nodes that ended, for progress.
	done float64
}

// serve starts the run (or continues the thread), waits for it, asks the
// questions it stops on when the client can answer them, and returns its
// result.
func (c *mcpCall) serve(ctx context.Context) (*mcp.CallToolResult, error) {
	th, req, problem := c.prepare(ctx)
	if problem != nil {
		return problem, nil
	}
	config := req.Config
	for round := 0; ; round++ {
		ru := c.s.newMCPRun(ctx, c.owner, th, c.wf)
		if e := ru.setRequest(req); e != nil {
			return toolError(e.Message), nil
		}
		v, problem, err := c.run(ctx, ru, req)
		if problem != nil || err != nil {
			return problem, err
		}
		switch {
		case v.Status == StatusDone:
			return c.doneResult(v), nil
		case v.Status != StatusInterrupted:
			msg := "the run ended with status " + v.Status
			if v.Error != nil {
				msg = v.Error.Message
			}
			return withState(toolError(msg), v, nil), nil
		}
		mode := c.elicitation(v.Interrupts)
		if mode == "" || round >= maxMCPRounds {
			return c.pausedResult(v), nil
		}
		if mode == "mrtr" {
			return c.inputRequired(v), nil
		}
		answers, ok := c.ask(ctx, v.Interrupts)
		if !ok {
			return c.pausedResult(v), nil
		}
		req = resumeEach(answers)
		req.Config = config // the answers' run has the config of the call
	}
}

// run starts ru (start), follows it until it ends, and returns it with
// its values; problem is the tool's error when it was refused or failed
// before it started.
func (c *mcpCall) run(ctx context.Context, ru *run, req RunRequest) (v Run, problem *mcp.CallToolResult, err error) {
	// The call reads the run's events for progress: attached, they are
	// kept until it has read them, even after the run ends.
	ru.events.attach()
	defer ru.events.detach()
	p, err := c.s.start(ctx, ru, storedRequest{RunRequest: req})
	var e *apiError
	if errors.As(err, &e) {
		return v, toolError(e.Message), nil
	}
	if err != nil {
		return v, nil, err
	}
	if p.ru != nil {
		err = c.wait(ctx, p.ru)
	} else {
		err = c.waitShared(ctx, p.id)
	}
	if err != nil {
		return v, nil, err
	}
	if err := c.s.awaitStart(ctx, p, true); errors.As(err, &e) {
		return v, toolError(e.Message), nil
	}
	// The server keeps no values of an ended run in memory: they are
	// read back from the saver, or from the few it caches (valuesCache).
	v, err = c.s.awaitEnd(ctx, p, 0)
	return v, nil, err
}

// waitShared follows the shared run id until it has ended, reporting each
// node that ends as progress; a cancelled call cancels the run.
func (c *mcpCall) waitShared(ctx context.Context, id string) error {
	err := c.followShared(ctx, id)
	if ctx.Err() == nil {
		return err
	}
	left := context.WithoutCancel(ctx)
	if _, err := c.s.cfg.Replicas.Cancel(left, id); err != nil {
		return errors.Join(ctx.Err(), err)
	}
	_, err = c.s.awaitShared(left, id, cancelWait)
	return errors.Join(ctx.Err(), err)
}

// followShared reads the events of the shared run id, whichever replica
// runs it, until it has ended.
func (c *mcpCall) followShared(ctx context.Context, id string) error {
	var after int64
	for {
		changed := c.s.cfg.Replicas.Changed(id)
		sr, err := c.s.cfg.Replicas.Run(ctx, id)
		if err != nil {
			return err
		}
		evs, err := c.s.cfg.Replicas.Events(ctx, id, after, replayPage)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			after = ev.ID
			if ev.Name == graph.EventNodeEnd.String() {
				c.progress(ctx, frame{id: ev.ID, name: ev.Name, data: ev.Frame})
			}
		}
		switch {
		case len(evs) > 0:
			continue
		case ended(sr.Status):
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// resumeEach is the request that answers interrupts by id.
func resumeEach(answers map[string]any) RunRequest {
	each := make(map[string]json.RawMessage, len(answers))
	for id, v := range answers {
		each[id] = mustJSON(v)
	}
	return RunRequest{ResumeEach: each}
}

// args reads the call's arguments.
func (c *mcpCall) args() (map[string]json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	if raw := c.req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, errors.New("the arguments must be a JSON object")
		}
	}
	return args, nil
}

// prepare finds or creates the thread and returns the request of the
// first run: the input, with the answers given as arguments, or with the answers
// the client sent back to the questions this server asked (multi
// round-trip requests).
func (c *mcpCall) prepare(ctx context.Context) (Thread, RunRequest, *mcp.CallToolResult) {
	th, req, problem := c.prepareRun(ctx)
	if problem != nil {
		return th, req, problem
	}
	args, _ := c.args()
	if raw, ok := args[argConfig]; ok && c.desc.Input != argConfig {
		req.Config = raw
	}
	return th, req, nil
}

// prepareRun is prepare without the run's config.
func (c *mcpCall) prepareRun(ctx context.Context) (Thread, RunRequest, *mcp.CallToolResult) {
	args, err := c.args()
	if err != nil {
		return Thread{}, RunRequest{}, toolError(err.Error())
	}
	var threadID string
	if raw, ok := args[argThread]; ok && json.Unmarshal(raw, &threadID) != nil {
		return Thread{}, RunRequest{}, toolError("thread_id must be a string")
	}
	if state := c.req.Params.RequestState; state != "" {
		threadID = state
	}
	input, hasInput := args[c.desc.Input]
	resume, hasResume := args[argResume]
	each, hasEach := args[argResumeEach]
	answering := hasResume || hasEach || c.req.Params.RequestState != ""
	switch {
	case answering && threadID == "":
		return Thread{}, RunRequest{}, toolError("resume and resume_each answer a thread's question: give its thread_id too")
	case answering && hasInput && c.req.Params.RequestState == "":
		return Thread{}, RunRequest{}, toolError(fmt.Sprintf("give %s to start a run, or resume to answer a question, not both", c.desc.Input))
	case !answering && !hasInput:
		return Thread{}, RunRequest{}, toolError(fmt.Sprintf("%s is required: it is the run's input", c.desc.Input))
	}
	th, problem := c.thread(ctx, threadID, !answering)
	if problem != nil {
		return Thread{}, RunRequest{}, problem
	}
	switch {
	case c.req.Params.RequestState != "":
		answers, ok, err := c.returnedAnswers(ctx, th)
		if err != nil {
			return Thread{}, RunRequest{}, toolError(err.Error())
		}
		if !ok {
			return Thread{}, RunRequest{}, c.pausedResult(Run{ThreadID: th.ID, Status: StatusInterrupted, Interrupts: c.pending(ctx, th)})
		}
		return th, resumeEach(answers), nil
	case hasResume:
		return th, RunRequest{Resume: resume}, nil
	case hasEach:
		var answers map[string]json.RawMessage
		if json.Unmarshal(each, &answers) != nil || len(answers) == 0 {
			return Thread{}, RunRequest{}, toolError("resume_each must be an object of answers by question id")
		}
		return th, RunRequest{ResumeEach: answers}, nil
	}
	req := RunRequest{Input: mustJSON(map[string]json.RawMessage{c.desc.Input: input})}
	if _, e := decodeInput(c.wf, req.Input); e != nil {
		return Thread{}, RunRequest{}, toolError(e.Message)
	}
	return th, req, nil
}

// thread loads the owner's thread id, or creates it (a new id when empty)
// when create is set.
func (c *mcpCall) thread(ctx context.Context, id string, create bool) (Thread, *mcp.CallToolResult) {
	if id != "" {
		th, _, err := c.s.loadThread(ctx, c.owner, id)
		var ae *apiError
		switch {
		case err == nil && th.Workflow != c.name:
			return Thread{}, toolError(fmt.Sprintf("thread %q belongs to workflow %q: call that tool to continue it", id, th.Workflow))
		case err == nil:
			return th, nil
		case !create || !errors.As(err, &ae) || ae.Code != CodeUnknownThread:
			return Thread{}, toolError(strings.TrimPrefix(err.Error(), "server: "))
		}
		if !threadIDPattern.MatchString(id) {
			return Thread{}, toolError("thread_id must be 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit")
		}
	}
	th := Thread{ID: id, Workflow: c.name, CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Metadata: map[string]any{"source": "mcp"}}
	if th.ID == "" {
		th.ID = newID()
	}
	if err := c.s.storeThread(ctx, c.owner, th); err != nil {
		return Thread{}, toolError(strings.TrimPrefix(err.Error(), "server: "))
	}
	return th, nil
}

// newMCPRun is a run of the thread that a tool call starts: it does not
// end when the call's context does (a cancelled call cancels it).
func (s *Server) newMCPRun(ctx context.Context, owner string, th Thread, wf *graph.Runnable) *run {
	ru := &run{id: newID(), thread: th.ID, key: threadKey(owner, th.ID), owner: owner, workflow: th.Workflow, wf: wf}
	s.track(ru, runs.Task{Context: ctx})
	return ru
}

// wait waits for the run to end, reporting each node that ends as progress
// when the client asked for progress; a cancelled call cancels the run.
func (c *mcpCall) wait(ctx context.Context, ru *run) error {
	var after int64
	var buf []frame
	for {
		frames, _, closed, wake := ru.events.since(after, buf[:0])
		buf = frames
		for _, f := range frames {
			after = f.id
			if f.name == graph.EventNodeEnd.String() {
				c.progress(ctx, f)
			}
		}
		if closed && len(frames) == 0 {
			<-ru.done
			return nil
		}
		if len(frames) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			c.s.cancelRun(ru)
			<-ru.done
			return ctx.Err()
		}
	}
}

// progress notifies the client that a node of the workflow ended.
func (c *mcpCall) progress(ctx context.Context, f frame) {
	token := c.req.Params.GetProgressToken()
	if token == nil {
		return
	}
	ev, ok := frameEvent(f)
	if !ok || strings.Count(ev.Path, "/") != 1 { // the workflow's own nodes
		return
	}
	c.done++
	msg := fmt.Sprintf("%s: node %s finished", c.name, ev.Node)
	if ev.Error != "" {
		msg = fmt.Sprintf("%s: node %s failed: %s", c.name, ev.Node, ev.Error)
	}
	_ = c.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: c.done, Message: msg})
}

// frameEvent decodes the event of an encoded frame.
func frameEvent(f frame) (Event, bool) {
	_, data, ok := strings.Cut(string(f.data), "\ndata: ")
	if !ok {
		return Event{}, false
	}
	var ev Event
	if json.Unmarshal([]byte(strings.TrimSpace(data)), &ev) != nil {
		return Event{}, false
	}
	return ev, true
}

// elicitation says how the client can be asked the questions ins: "mrtr"
// (the result carries them, protocol 2026-07-28 on), "direct" (the server
// asks during the call), or "" (it cannot answer them: it declared no
// elicitation, or a question is a page to open, URL mode, and it declared
// only forms).
func (c *mcpCall) elicitation(ins []graph.InterruptInfo) string {
	caps := c.req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return ""
	}
	for _, in := range ins {
		if p, _ := elicitParams(in); p.Mode == "url" && caps.Elicitation.URL == nil {
			return ""
		}
	}
	if v, _ := c.req.Params.GetMeta()[mcp.MetaKeyProtocolVersion].(string); v >= newProtocol {
		return "mrtr"
	}
	return "direct"
}

// ask asks the client each question during the call; false when the user
// declined or cancelled one, or the client could not ask.
func (c *mcpCall) ask(ctx context.Context, ins []graph.InterruptInfo) (map[string]any, bool) {
	answers := map[string]any{}
	for _, in := range ins {
		params, forwarded := elicitParams(in)
		res, err := c.req.Session.Elicit(ctx, params)
		if err != nil {
			c.s.log.WarnContext(ctx, "server: mcp: elicitation failed", "workflow", c.name, "err", err)
			return nil, false
		}
		v, ok := answerOf(res, forwarded)
		if !ok {
			return nil, false
		}
		answers[in.ID] = v
	}
	return answers, true
}

// inputRequired returns the run's questions for the client to answer and
// send back with the call (multi round-trip requests): the state is the
// thread.
func (c *mcpCall) inputRequired(v Run) *mcp.CallToolResult {
	reqs := mcp.InputRequestMap{}
	for _, in := range v.Interrupts {
		params, _ := elicitParams(in)
		reqs[in.ID] = params
	}
	return &mcp.CallToolResult{InputRequests: reqs, RequestState: v.ThreadID}
}

// returnedAnswers reads the answers a client sent back to the questions
// of the thread's run; false when the user declined one.
func (c *mcpCall) returnedAnswers(ctx context.Context, th Thread) (map[string]any, bool, error) {
	pending := c.pending(ctx, th)
	answers := map[string]any{}
	for _, in := range pending {
		resp, ok := c.req.Params.InputResponses[in.ID]
		if !ok {
			return nil, false, fmt.Errorf("no answer to question %s of thread %q", in.ID, th.ID)
		}
		res, ok := resp.(*mcp.ElicitResult)
		if !ok {
			return nil, false, fmt.Errorf("the answer to question %s is not an elicitation result", in.ID)
		}
		_, forwarded := elicitParams(in)
		v, ok := answerOf(res, forwarded)
		if !ok {
			return nil, false, nil
		}
		answers[in.ID] = v
	}
	if len(answers) == 0 {
		return nil, false, fmt.Errorf("thread %q waits on no question", th.ID)
	}
	return answers, true, nil
}

// pending are the questions the owner's thread waits on.
func (c *mcpCall) pending(ctx context.Context, th Thread) []graph.InterruptInfo {
	snap, err := c.wf.State(ctx, threadKey(c.owner, th.ID), graph.WithSaver(c.s.cfg.Saver))
	if err != nil {
		return nil
	}
	return snap.Interrupts
}

// answerSchema is what a question that is not an MCP server's own asks
// for: one answer, read as JSON when it is JSON.
var answerSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"answer": map[string]any{"type": "string", "title": "Answer", "description": "Your answer (JSON is read as JSON)."},
	},
	"required": []any{"answer"},
}

// elicitParams is the elicitation that asks an interrupt's question. A
// question an MCP server asked a workflow's tool is passed on as it is
// (forwarded); any other asks for one answer.
func elicitParams(in graph.InterruptInfo) (*mcp.ElicitParams, bool) {
	if q, ok := mcpElicitation(in.Payload); ok {
		p := &mcp.ElicitParams{Message: fmt.Sprintf("%s (asked by MCP server %s)", q.Message, q.Server)}
		if q.Mode == "url" {
			p.Mode, p.URL, p.ElicitationID = "url", q.URL, in.ID
		} else {
			p.Mode, p.RequestedSchema = "form", q.Schema
		}
		return p, true
	}
	return &mcp.ElicitParams{Mode: "form", Message: questionText(in.Payload), RequestedSchema: answerSchema}, false
}

// mcpElicitation reads a payload that is a question of an MCP server.
func mcpElicitation(payload any) (mcptools.Elicitation, bool) {
	switch p := payload.(type) {
	case mcptools.Elicitation:
		return p, true
	case map[string]any:
		if p["kind"] != mcptools.KindElicitation {
			return mcptools.Elicitation{}, false
		}
		var q mcptools.Elicitation
		raw, err := json.Marshal(p)
		if err == nil && json.Unmarshal(raw, &q) == nil {
			return q, true
		}
	}
	return mcptools.Elicitation{}, false
}

// answerOf is the resume value of an elicitation's answer; false when the
// user declined or cancelled.
func answerOf(res *mcp.ElicitResult, forwarded bool) (any, bool) {
	if forwarded {
		// The MCP answer itself: the tool that asked reads it.
		return map[string]any{"action": res.Action, "content": res.Content}, true
	}
	if res.Action != "accept" {
		return nil, false
	}
	text, _ := res.Content["answer"].(string)
	var v any
	if json.Unmarshal([]byte(text), &v) == nil {
		return v, true
	}
	return text, true
}

// questionText renders an interrupt's payload as a question for a person:
// its "question" field when it has one, with the rest as JSON.
func questionText(payload any) string {
	raw, err := json.Marshal(payload)
	if err != nil {
		return fmt.Sprint(payload)
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return capQuestion(text)
	}
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return capQuestion(string(raw))
	}
	q, _ := m["question"].(string)
	if q == "" {
		return capQuestion(string(raw))
	}
	delete(m, "question")
	delete(m, "agent")
	delete(m, "node")
	if len(m) == 0 {
		return capQuestion(q)
	}
	rest, _ := json.MarshalIndent(m, "", "  ")
	return capQuestion(q + "\n\n" + string(rest))
}

func capQuestion(s string) string {
	if len(s) <= maxQuestionBytes {
		return s
	}
	return strings.ToValidUTF8(s[:maxQuestionBytes], "") + "\n[…]"
}

// doneResult is a finished run's output.
func (c *mcpCall) doneResult(v Run) *mcp.CallToolResult {
	var values map[string]json.RawMessage
	_ = json.Unmarshal(v.Values, &values)
	raw, ok := values[c.desc.Output]
	text := ""
	var out any
	if ok {
		_ = json.Unmarshal(raw, &out)
		if s, isText := out.(string); isText {
			text = s
		} else {
			text = string(raw)
		}
	} else {
		text = fmt.Sprintf("The run finished without a value in channel %s.", c.desc.Output)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	return withState(res, v, out)
}

// pausedResult says that the run waits on questions and how to answer
// them.
func (c *mcpCall) pausedResult(v Run) *mcp.CallToolResult {
	var b strings.Builder
	n := len(v.Interrupts)
	fmt.Fprintf(&b, "The run paused on thread %s: it waits for the answer to %d question(s).\n", v.ThreadID, n)
	for _, in := range v.Interrupts {
		fmt.Fprintf(&b, "\nQuestion %s:\n%s\n", in.ID, questionText(in.Payload))
	}
	if n <= 1 {
		fmt.Fprintf(&b, "\nTo answer, call %s again with {\"thread_id\": %q, \"resume\": <your answer>}", c.name, v.ThreadID)
	} else {
		fmt.Fprintf(&b, "\nTo answer, call %s again with {\"thread_id\": %q, \"resume_each\": {\"<question id>\": <answer>, ...}}", c.name, v.ThreadID)
	}
	fmt.Fprintf(&b, ", or POST /v1/threads/%s/runs/wait with {\"resume\": ...} to the HTTP API.", v.ThreadID)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
	return withState(res, v, nil)
}

// withState adds the run's thread, id and status as structured content.
func withState(res *mcp.CallToolResult, v Run, output any) *mcp.CallToolResult {
	st := map[string]any{"thread_id": v.ThreadID, "status": v.Status}
	if v.ID != "" {
		st["run_id"] = v.ID
	}
	if output != nil {
		st["output"] = output
	}
	if len(v.Interrupts) > 0 {
		st["interrupts"] = v.Interrupts
	}
	res.StructuredContent = st
	return res
}

func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

func mustJSON(v any) json.RawMessage {
	raw, _ := json.Marshal(v)
	return raw
}
