package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/coorflow/coorflow/a2a"
	"github.com/coorflow/coorflow/graph"
)

// The A2A routes: every workflow is an agent, at /a2a/{workflow} (its
// card under it), and /a2a serves them all, the workflow named by the
// message's metadata "skill" (the card's skill id).
const (
	a2aPath       = "/a2a"
	a2aLegacyVers = "0.3" // what a request without A2A-Version asks for
)

// a2aRoutes serves A2A 1.0's JSON-RPC binding. Cards are public (they say
// how to authenticate); the JSON-RPC endpoints need a token, and an
// owner's tasks are invisible to every other owner.
func (s *Server) a2aRoutes() {
	s.handle("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.agentCard(r, ""))
	})
	s.handle("GET /a2a/{workflow}/.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("workflow")
		if s.cfg.Workflows[name] == nil {
			writeError(w, unknownWorkflow(name))
			return
		}
		writeJSON(w, http.StatusOK, s.agentCard(r, name))
	})
	s.handle("POST /a2a", s.auth(s.serveA2A))
	s.handle("POST /a2a/{workflow}", s.auth(s.serveA2A))
	s.a2aRESTRoutes()
}

// baseURL is the URL the client reached the server at.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// agentCard is the card of workflow name, or of the server (all its
// workflows as skills) when name is empty.
func (s *Server) agentCard(r *http.Request, name string) a2a.AgentCard {
	names := make([]string, 0, len(s.cfg.Workflows))
	for n := range s.cfg.Workflows {
		names = append(names, n)
	}
	sort.Strings(names)
	url := baseURL(r) + a2aPath
	card := a2a.AgentCard{
		Name:        "coorflow",
		Description: "coorflow workflows as A2A agents; name the workflow with the message's metadata \"skill\" (one of the skills' ids).",
		Version:     "1.0.0",
		Provider:    &a2a.AgentProvider{Organization: "coorflow", URL: "https://github.com/coorflow/coorflow"},
		SecuritySchemes: map[string]a2a.SecurityScheme{"bearer": {HTTPAuth: &a2a.HTTPAuthSecurityScheme{
			Scheme: "Bearer", Description: "a token of the coorflow server (coorflow serve --token)"}}},
		SecurityRequirements: []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{"bearer": {List: []string{}}}}},
		DefaultInputModes:    []string{"text/plain", "application/json"},
		DefaultOutputModes:   []string{"text/plain", "application/json"},
		Capabilities:         a2a.AgentCapabilities{Streaming: ptr(true), PushNotifications: ptr(len(s.webhooks) > 0), ExtendedAgentCard: ptr(false)},
	}
	if name != "" {
		d := s.mcpTool(name)
		card.Name, card.Description = name, skillDescription(name, d)
		url += "/" + name
		names = []string{name}
	}
	card.SupportedInterfaces = []a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}}
	if name != "" {
		card.SupportedInterfaces = append(card.SupportedInterfaces, a2a.AgentInterface{URL: url + "/rest", ProtocolBinding: a2a.BindingREST, ProtocolVersion: a2a.ProtocolVersion})
	}
	for _, n := range names {
		card.Skills = append(card.Skills, a2a.AgentSkill{ID: n, Name: n, Description: skillDescription(n, s.mcpTool(n)),
			Tags: []string{"coorflow", "workflow"}})
	}
	return card
}

// skillDescription is a workflow's description, with what its input is.
func skillDescription(name string, d MCPTool) string {
	text := d.Description
	if text == "" {
		text = "Runs the coorflow workflow " + name + "."
	}
	text += " The message's text (or its one data part) is the run's input (channel " + d.Input + ")"
	if len(d.InputSchema) > 0 {
		text += ", of JSON Schema " + string(d.InputSchema)
	}
	text += "; the answer is the run's " + d.Output + ". When the run asks a question the task is input-required: send the answer as the next message of the task."
	return text
}

// a2aCall is one JSON-RPC request to /a2a.
type a2aCall struct {
	s        *Server
	w        http.ResponseWriter
	r        *http.Request
	owner    string
	workflow string // of the route; empty on /a2a
	req      a2a.Request
	// rest: the call came by the REST binding (a2a_rest.go).
	rest bool
	// newThread is the thread (context) the call made, if it made one.
	newThread string
}

// serveA2A answers one JSON-RPC request. A JSON-RPC error changes
// nothing; it comes with HTTP 200 (413 for a body over MaxBodyBytes).
func (s *Server) serveA2A(w http.ResponseWriter, r *http.Request) {
	c := &a2aCall{s: s, w: w, r: r, owner: ownerFrom(r.Context()), workflow: r.PathValue("workflow")}
	if c.workflow != "" && s.cfg.Workflows[c.workflow] == nil {
		writeError(w, unknownWorkflow(c.workflow))
		return
	}
	req, e := a2a.DecodeRequest(r.Body, s.cfg.MaxBodyBytes)
	c.req = req
	if e != nil {
		status := http.StatusOK
		if errors.Is(e, a2a.ErrTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		c.reply(status, a2a.Failure(req.ID, e))
		return
	}
	if e := s.a2aRefusal(r); e != nil {
		c.fail(e)
		return
	}
	c.dispatch()
}

// a2aRefusal refuses a request of another protocol version than 1.0 (one
// without A2A-Version asks for 0.3).
func (s *Server) a2aRefusal(r *http.Request) *a2a.Error {
	version := r.Header.Get(a2a.VersionHeader)
	if version == "" {
		version = a2aLegacyVers
	}
	if version != a2a.ProtocolVersion {
		return a2a.Errorf(a2a.CodeVersionNotSupported, "A2A version %q is not supported: send the header %s: %s", version, a2a.VersionHeader, a2a.ProtocolVersion)
	}
	return nil
}

// dispatch runs the call's method and answers it.
func (c *a2aCall) dispatch() {
	req := c.req
	var result any
	var err error
	switch req.Method {
	case a2a.MethodSendMessage:
		result, err = c.send(false)
	case a2a.MethodSendStreamingMessage:
		_, err = c.send(true)
	case a2a.MethodGetTask:
		result, err = c.getTask()
	case a2a.MethodListTasks:
		result, err = c.listTasks()
	case a2a.MethodCancelTask:
		result, err = c.cancelTask()
	case a2a.MethodSubscribeToTask:
		err = c.subscribe()
	case a2a.MethodCreatePushConfig, a2a.MethodGetPushConfig, a2a.MethodListPushConfigs, a2a.MethodDeletePushConfig:
		result, err = c.pushConfig()
	case a2a.MethodGetExtendedAgentCard:
		err = a2a.Errorf(a2a.CodeExtendedCardNotConfigured, "this agent has no extended card")
	default:
		err = a2a.Errorf(a2a.CodeMethodNotFound, "unknown method %q", req.Method)
	}
	switch {
	case err != nil:
		c.fail(c.rpcError(err))
	case result != nil || req.Method == a2a.MethodDeletePushConfig:
		if c.rest {
			if result == nil {
				c.w.WriteHeader(http.StatusNoContent)
				return
			}
			writeJSON(c.w, http.StatusOK, result)
			return
		}
		c.reply(http.StatusOK, a2a.Result(req.ID, result))
	}
}

// rpcError is err as a JSON-RPC error: the server's own errors keep their
// message, others are logged and answered as internal.
func (c *a2aCall) rpcError(err error) *a2a.Error {
	var e *a2a.Error
	if errors.As(err, &e) {
		return e
	}
	var ae *apiError
	if errors.As(err, &ae) {
		code := a2a.CodeInvalidParams
		switch ae.Status {
		case http.StatusInternalServerError:
			code = a2a.CodeInternalError
		case http.StatusConflict, http.StatusTooManyRequests, http.StatusPaymentRequired, http.StatusServiceUnavailable:
			code = a2a.CodeUnsupportedOperation
		}
		return &a2a.Error{Code: code, Message: ae.Message, Data: []any{map[string]any{"coorflow_code": ae.Code}}}
	}
	ae = c.s.internal(c.r, err)
	return a2a.Errorf(a2a.CodeInternalError, "%s", ae.Message)
}

func (c *a2aCall) fail(e *a2a.Error) {
	if c.rest {
		writeRESTError(c.w, e)
		return
	}
	c.reply(http.StatusOK, a2a.Failure(c.req.ID, e))
}

func (c *a2aCall) reply(status int, res a2a.Response) {
	writeJSON(c.w, status, res)
}

// params decodes the request's params into v.
func (c *a2aCall) params(v any) error {
	if e := a2a.DecodeParams(c.req.Params, v); e != nil {
		return e
	}
	return nil
}

func (c *a2aCall) getTask() (any, error) {
	var p a2a.TaskRequest
	if err := c.params(&p); err != nil {
		return nil, err
	}
	t, _, err := c.s.loadTask(c.r.Context(), c.owner, p.ID)
	if err != nil {
		return nil, err
	}
	return c.s.taskView(c.r.Context(), c.owner, t, p.HistoryLength)
}

func (c *a2aCall) cancelTask() (any, error) {
	var p a2a.TaskRequest
	if err := c.params(&p); err != nil {
		return nil, err
	}
	ctx := c.r.Context()
	t, _, err := c.s.loadTask(ctx, c.owner, p.ID)
	if err != nil {
		return nil, err
	}
	v, err := c.s.taskView(ctx, c.owner, t, nil)
	if err != nil {
		return nil, err
	}
	if v.Status.State.Terminal() {
		return nil, a2a.Errorf(a2a.CodeTaskNotCancelable, "task %q has ended (%s)", t.ID, v.Status.State)
	}
	pl, err := c.s.taskRun(ctx, c.owner, t)
	if err != nil {
		return nil, err
	}
	if pl != nil {
		// Wherever it runs; the task is canceled once its run has ended.
		live, err := c.s.cancel(ctx, pl)
		if err != nil {
			return nil, err
		}
		if live {
			if _, err := c.s.awaitEnd(ctx, pl, 0); err != nil {
				return nil, err
			}
		}
	}
	t, err = c.s.saveTask(ctx, c.owner, t, false, func(cur *a2aTask) error {
		cur.Canceled = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c.s.taskView(ctx, c.owner, t, p.HistoryLength)
}

// Bounds of ListTasks.
const (
	defaultTaskPage = 50
	maxTaskPage     = 100
)

func (c *a2aCall) listTasks() (any, error) {
	var p a2a.ListTasksRequest
	if err := c.params(&p); err != nil {
		return nil, err
	}
	size := defaultTaskPage
	if p.PageSize != nil {
		size = *p.PageSize
	}
	if size < 1 || size > maxTaskPage {
		return nil, a2a.Errorf(a2a.CodeInvalidParams, "pageSize must be 1 to %d", maxTaskPage)
	}
	offset := 0
	if p.PageToken != "" {
		if _, err := fmt.Sscan(p.PageToken, &offset); err != nil || offset < 0 {
			return nil, a2a.Errorf(a2a.CodeInvalidParams, "pageToken %q is not one this server gave", p.PageToken)
		}
	}
	switch p.Status {
	case "TASK_STATE_UNSPECIFIED", "UNRECOGNIZED":
		// No filter: the JS SDK sends UNRECOGNIZED for a status not given.
		p.Status = ""
	}
	ctx := c.r.Context()
	tasks, err := c.ownerTasks(ctx, p.ContextID)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(tasks, func(i, j int) bool { return tasks[i].Updated.After(tasks[j].Updated) })
	out := a2a.ListTasksResponse{Tasks: []a2a.Task{}, PageSize: size}
	for _, t := range tasks {
		if c.workflow != "" && t.Workflow != c.workflow {
			continue
		}
		v, err := c.s.taskView(ctx, c.owner, t, p.HistoryLength)
		if err != nil {
			return nil, err
		}
		if (p.Status != "" && v.Status.State != p.Status) || (p.StatusTimestampAfter != "" && v.Status.Timestamp < p.StatusTimestampAfter) {
			continue
		}
		if !p.IncludeArtifacts {
			v.Artifacts = nil
		}
		out.TotalSize++
		if out.TotalSize > offset && len(out.Tasks) < size {
			out.Tasks = append(out.Tasks, v)
		}
	}
	if offset+len(out.Tasks) < out.TotalSize {
		out.NextPageToken = fmt.Sprint(offset + len(out.Tasks))
	}
	return out, nil
}

// ownerTasks are the owner's tasks: of one context, or of all its threads.
func (c *a2aCall) ownerTasks(ctx context.Context, contextID string) ([]a2aTask, error) {
	if contextID != "" {
		if !threadIDPattern.MatchString(contextID) {
			return nil, nil
		}
		return c.s.threadTasks(ctx, c.owner, contextID)
	}
	infos, err := c.s.saver.Threads(ctx, graph.ThreadListOptions{Limit: maxThreadScan})
	if err != nil {
		return nil, err
	}
	prefix := threadKey(c.owner, "")
	var all []a2aTask
	for _, info := range infos {
		id, ok := strings.CutPrefix(info.ID, prefix)
		if !ok {
			continue
		}
		ts, err := c.s.threadTasks(ctx, c.owner, id)
		if err != nil {
			return nil, err
		}
		all = append(all, ts...)
	}
	return all, nil
}

// pushConfig serves the push notification config methods. A config's URL
// must be one the server's webhook policy allows (Config.WebhookAllow).
func (c *a2aCall) pushConfig() (any, error) {
	ctx := c.r.Context()
	var p a2a.TaskPushNotificationConfig
	if err := c.params(&p); err != nil {
		return nil, err
	}
	t, _, err := c.s.loadTask(ctx, c.owner, p.TaskID)
	if err != nil {
		return nil, err
	}
	if len(c.s.webhooks) == 0 {
		return nil, a2a.Errorf(a2a.CodePushNotificationNotSupported, "push notifications are off on this server: its operator allows URL prefixes with --webhook-allow")
	}
	switch c.req.Method {
	case a2a.MethodCreatePushConfig:
		if err := c.s.checkPushURL(p.URL); err != nil {
			return nil, err
		}
		if p.ID == "" {
			p.ID = newID()
		}
		p.TaskID, p.Tenant = t.ID, ""
		_, err := c.s.saveTask(ctx, c.owner, t, false, func(cur *a2aTask) error {
			cur.Push = deletePush(cur.Push, p.ID)
			if len(cur.Push) >= maxPushConfigs {
				return a2a.Errorf(a2a.CodeInvalidParams, "task %q has %d push notification configs, the most it may have", t.ID, maxPushConfigs)
			}
			cur.Push = append(cur.Push, p)
			return nil
		})
		return redactPush(p), err
	case a2a.MethodGetPushConfig:
		for _, pc := range t.Push {
			if pc.ID == p.ID {
				return redactPush(pc), nil
			}
		}
		return nil, a2a.Errorf(a2a.CodeInvalidParams, "task %q has no push notification config %q", t.ID, p.ID)
	case a2a.MethodListPushConfigs:
		out := a2a.ListPushConfigsResponse{Configs: []a2a.TaskPushNotificationConfig{}}
		for _, pc := range t.Push {
			out.Configs = append(out.Configs, redactPush(pc))
		}
		return out, nil
	default: // delete
		_, err := c.s.saveTask(ctx, c.owner, t, false, func(cur *a2aTask) error {
			cur.Push = deletePush(cur.Push, p.ID)
			return nil
		})
		return nil, err
	}
}

// checkPushURL refuses a push notification URL the webhook policy does
// not allow.
func (s *Server) checkPushURL(raw string) error {
	if e := s.checkWebhook(raw); e != nil {
		return a2a.Errorf(a2a.CodeInvalidParams, "push notification URL: %s", strings.ReplaceAll(e.Message, "field \"webhook\"", "the URL"))
	}
	return nil
}

func deletePush(ps []a2a.TaskPushNotificationConfig, id string) []a2a.TaskPushNotificationConfig {
	out := ps[:0:0]
	for _, p := range ps {
		if p.ID != id {
			out = append(out, p)
		}
	}
	return out
}

// redactPush leaves the credentials out of a config shown to a client.
func redactPush(p a2a.TaskPushNotificationConfig) a2a.TaskPushNotificationConfig {
	p.Token = ""
	if p.Authentication != nil {
		p.Authentication = &a2a.AuthenticationInfo{Scheme: p.Authentication.Scheme}
	}
	return p
}
