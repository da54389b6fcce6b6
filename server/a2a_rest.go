package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/coorflow/coorflow/a2a"
)

// a2aRESTRoutes serves A2A 1.0's REST binding (HTTP+JSON) of each
// workflow under /a2a/{workflow}/rest: the same methods as the JSON-RPC
// binding, by the same code, with the binding's paths, statuses and
// error bodies ({"error": {code, status, message, details}}).
func (s *Server) a2aRESTRoutes() {
	base := "/a2a/{workflow}/rest"
	s.handle("POST "+base+"/message:send", s.auth(s.serveREST(a2a.MethodSendMessage)))
	s.handle("POST "+base+"/message:stream", s.auth(s.serveREST(a2a.MethodSendStreamingMessage)))
	s.handle("GET "+base+"/tasks", s.auth(s.serveREST(a2a.MethodListTasks)))
	s.handle("GET "+base+"/tasks/{task}", s.auth(s.serveREST(a2a.MethodGetTask)))
	s.handle("POST "+base+"/tasks/{task}", s.auth(s.serveREST(""))) // {id}:cancel, {id}:subscribe
	s.handle("POST "+base+"/tasks/{task}/pushNotificationConfigs", s.auth(s.serveREST(a2a.MethodCreatePushConfig)))
	s.handle("GET "+base+"/tasks/{task}/pushNotificationConfigs", s.auth(s.serveREST(a2a.MethodListPushConfigs)))
	s.handle("GET "+base+"/tasks/{task}/pushNotificationConfigs/{config}", s.auth(s.serveREST(a2a.MethodGetPushConfig)))
	s.handle("DELETE "+base+"/tasks/{task}/pushNotificationConfigs/{config}", s.auth(s.serveREST(a2a.MethodDeletePushConfig)))
	s.handle("GET "+base+"/extendedAgentCard", s.auth(s.serveREST(a2a.MethodGetExtendedAgentCard)))
}

// serveREST answers a REST request as the JSON-RPC method it stands for,
// its params made of the path, the query and the body.
func (s *Server) serveREST(routeMethod string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		method := routeMethod
		c := &a2aCall{s: s, w: w, r: r, owner: ownerFrom(r.Context()), workflow: r.PathValue("workflow"), rest: true}
		if s.cfg.Workflows[c.workflow] == nil {
			writeError(w, unknownWorkflow(c.workflow))
			return
		}
		task := r.PathValue("task")
		if method == "" {
			id, verb, _ := strings.Cut(task, ":")
			switch verb {
			case "cancel":
				method = a2a.MethodCancelTask
			case "subscribe":
				method = a2a.MethodSubscribeToTask
			default:
				c.fail(a2a.Errorf(a2a.CodeMethodNotFound, "POST /tasks/{id} takes :cancel or :subscribe, not %q", verb))
				return
			}
			task = id
		}
		params := map[string]any{}
		if r.Method == http.MethodPost {
			var body map[string]json.RawMessage
			raw, e := a2a.DecodeBody(r.Body, s.cfg.MaxBodyBytes)
			if e == nil && len(raw) > 0 {
				if err := json.Unmarshal(raw, &body); err != nil {
					e = a2a.Errorf(a2a.CodeParseError, "the body is not a JSON object: %v", err)
				}
			}
			if e != nil {
				c.fail(e)
				return
			}
			for k, v := range body {
				params[k] = v
			}
		}
		q := r.URL.Query()
		for _, k := range []string{"contextId", "status", "pageToken", "statusTimestampAfter"} {
			if v := q.Get(k); v != "" {
				params[k] = v
			}
		}
		for _, k := range []string{"pageSize", "historyLength"} {
			if v := q.Get(k); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					c.fail(a2a.Errorf(a2a.CodeInvalidParams, "%s must be an integer, not %q", k, v))
					return
				}
				params[k] = n
			}
		}
		if v := q.Get("includeArtifacts"); v != "" {
			params["includeArtifacts"] = v == "true"
		}
		switch method {
		case a2a.MethodCreatePushConfig, a2a.MethodListPushConfigs, a2a.MethodGetPushConfig, a2a.MethodDeletePushConfig:
			params["taskId"] = task
			if id := r.PathValue("config"); id != "" {
				params["id"] = id
			}
		default:
			if task != "" {
				params["id"] = task
			}
		}
		c.req = a2a.Request{JSONRPC: "2.0", Method: method, Params: mustJSON(params)}
		if e := s.a2aRefusal(r); e != nil {
			c.fail(e)
			return
		}
		c.dispatch()
	}
}

// restError is how the REST binding answers an A2A error: its HTTP
// status, the google.rpc status name and the ErrorInfo reason.
func restError(code int) (status int, name, reason string) {
	switch code {
	case a2a.CodeTaskNotFound:
		return http.StatusNotFound, "NOT_FOUND", "TASK_NOT_FOUND"
	case a2a.CodeTaskNotCancelable:
		return http.StatusBadRequest, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"
	case a2a.CodePushNotificationNotSupported:
		return http.StatusBadRequest, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED"
	case a2a.CodeUnsupportedOperation:
		return http.StatusBadRequest, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"
	case a2a.CodeContentTypeNotSupported:
		return http.StatusBadRequest, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"
	case a2a.CodeExtendedCardNotConfigured:
		return http.StatusBadRequest, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
	case a2a.CodeVersionNotSupported:
		return http.StatusBadRequest, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"
	case a2a.CodeInternalError:
		return http.StatusInternalServerError, "INTERNAL", ""
	case a2a.CodeMethodNotFound:
		return http.StatusNotFound, "NOT_FOUND", ""
	}
	return http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_PARAMS"
}

// writeRESTError writes e as the REST binding's error body.
func writeRESTError(w http.ResponseWriter, e *a2a.Error) {
	status, name, reason := restError(e.Code)
	if errors.Is(e, a2a.ErrTooLarge) {
		status = http.StatusRequestEntityTooLarge
	}
	body := map[string]any{"code": status, "status": name, "message": e.Message}
	if reason != "" {
		body["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"}}
	}
	writeJSON(w, status, map[string]any{"error": body})
}
