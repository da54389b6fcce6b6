package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The LangGraph Platform API (platform*.go) is an adapter of payload shapes
// over the same threads, runs, event logs and quotas as /v1: what the
// official SDKs (@langchain/langgraph-sdk, langgraph-sdk) call, at the
// server's root, with the same bearer tokens (also accepted as the SDK's
// x-api-key header). Each workflow is one assistant, whose id and graph_id
// are the workflow's name; clients create more, configured versions of
// them (platform_assistants.go).

// platformRoutes registers the Platform API. Routes the SDK can call that
// coorflow does not serve answer 501 not_served, naming the route.
func (s *Server) platformRoutes() {
	a := s.auth
	s.handle("GET /ok", s.handleHealth)
	s.handle("GET /info", s.lgInfo)

	s.handle("POST /assistants", a(s.lgCreateAssistant))
	s.handle("PATCH /assistants/{assistant}", a(s.lgPatchAssistant))
	s.handle("DELETE /assistants/{assistant}", a(s.lgDeleteAssistant))
	s.handle("POST /assistants/{assistant}/latest", a(s.lgSetLatest))
	s.handle("POST /assistants/search", a(s.lgSearchAssistants))
	s.handle("POST /assistants/count", a(s.lgCountAssistants))
	s.handle("GET /assistants/{assistant}", a(s.lgGetAssistant))
	s.handle("GET /assistants/{assistant}/graph", a(s.lgAssistantGraph))
	s.handle("GET /assistants/{assistant}/schemas", a(s.lgAssistantSchemas))
	s.handle("GET /assistants/{assistant}/subgraphs", a(s.lgAssistantSubgraphs))
	s.handle("GET /assistants/{assistant}/subgraphs/{namespace}", a(s.lgAssistantSubgraphs))
	s.handle("POST /assistants/{assistant}/versions", a(s.lgAssistantVersions))

	s.handle("POST /threads", a(s.lgCreateThread))
	s.handle("POST /threads/search", a(s.lgSearchThreads))
	s.handle("POST /threads/count", a(s.lgCountThreads))
	s.handle("GET /threads/{thread}", a(s.lgGetThread))
	s.handle("PATCH /threads/{thread}", a(s.lgPatchThread))
	s.handle("DELETE /threads/{thread}", a(s.handleDeleteThread))
	s.handle("POST /threads/{thread}/copy", a(s.lgCopyThread))
	s.handle("GET /threads/{thread}/state", a(s.lgGetState))
	s.handle("GET /threads/{thread}/state/{checkpoint}", a(s.lgGetState))
	s.handle("POST /threads/{thread}/state/checkpoint", a(s.lgGetStateAt))
	s.handle("POST /threads/{thread}/state", a(s.lgUpdateState))
	s.handle("POST /threads/{thread}/history", a(s.lgHistory))
	s.handle("GET /threads/{thread}/history", a(s.lgHistory))
	s.handle("GET /threads/{thread}/stream", a(s.lgThreadStream))

	s.handle("POST /threads/{thread}/runs", a(s.lgCreateRun(modeBackground)))
	s.handle("POST /threads/{thread}/runs/stream", a(s.lgCreateRun(modeStream)))
	s.handle("POST /threads/{thread}/runs/wait", a(s.lgCreateRun(modeWait)))
	s.handle("GET /threads/{thread}/runs", a(s.lgListRuns))
	s.handle("GET /threads/{thread}/runs/{run}", a(s.lgGetRun))
	s.handle("DELETE /threads/{thread}/runs/{run}", a(s.lgDeleteRun))
	s.handle("POST /threads/{thread}/runs/{run}/cancel", a(s.lgCancelRun))
	s.handle("GET /threads/{thread}/runs/{run}/join", a(s.lgJoinRun))
	s.handle("GET /threads/{thread}/runs/{run}/stream", a(s.lgJoinStream))

	s.handle("POST /runs", a(s.lgStatelessRun(modeBackground)))
	s.handle("POST /runs/stream", a(s.lgStatelessRun(modeStream)))
	s.handle("POST /runs/wait", a(s.lgStatelessRun(modeWait)))
	s.handle("POST /runs/batch", a(s.lgBatchRuns))
	s.handle("POST /runs/cancel", a(s.lgCancelRuns))
	s.handle("GET /runs/{run}/stream", a(s.lgRunStream))
	s.handle("POST /threads/prune", a(s.lgPruneThreads))

	s.handle("POST /runs/crons", a(s.lgCreateCron))
	s.handle("POST /threads/{thread}/runs/crons", a(s.lgCreateCron))
	s.handle("PATCH /runs/crons/{cron}", a(s.lgUpdateCron))
	s.handle("DELETE /runs/crons/{cron}", a(s.lgDeleteCron))
	s.handle("POST /runs/crons/search", a(s.lgSearchCrons))
	s.handle("POST /runs/crons/count", a(s.lgCountCrons))

	s.handle("PUT /store/items", a(s.lgPutItem))
	s.handle("GET /store/items", a(s.lgGetItem))
	s.handle("DELETE /store/items", a(s.lgDeleteItem))
	s.handle("POST /store/items/search", a(s.lgSearchItems))
	s.handle("POST /store/namespaces", a(s.lgListNamespaces))

	for route, why := range platformNotServed {
		s.handle(route, a(s.notServed(route, why)))
	}
}

// platformNotServed are the Platform routes the SDK can call that coorflow
// does not serve, with why.
var platformNotServed = map[string]string{
	"PATCH /threads/{thread}/state":        "a checkpoint's metadata is the engine's (its source, step and writers), and a stored checkpoint is never changed (graph.Saver stores each once): keep your own metadata on the thread (PATCH /threads/{thread_id})",
	"POST /threads/{thread}/commands":      "the SDK's thread streaming protocol (threads.stream: commands, subscriptions, message and media assembly) is a protocol of its own that coorflow does not implement; runs.stream, runs.joinStream and threads.joinStream carry the same events",
	"POST /threads/{thread}/stream/events": "the SDK's thread streaming protocol (threads.stream: commands, subscriptions, message and media assembly) is a protocol of its own that coorflow does not implement; runs.stream, runs.joinStream and threads.joinStream carry the same events",
}

// notServed answers a Platform route coorflow does not serve with 501.
func (s *Server) notServed(route, why string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusNotImplemented, CodeNotServed, "coorflow does not serve %s of the LangGraph Platform API: %s", route, why))
	}
}

func (s *Server) lgInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"version": "coorflow", "langgraph_js_version": nil, "langgraph_py_version": nil,
		"flags": map[string]bool{"assistants": true, "crons": true, "langsmith": false},
	})
}

// lgAssistant is an assistant as the Platform shows it.
type lgAssistant struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

// serverStart stands for the creation time of the assistants: the
// workflows exist as long as the server does.
var serverStart = time.Now().UTC().Truncate(time.Second)

func (s *Server) assistant(name string) lgAssistant {
	return lgAssistant{AssistantID: name, GraphID: name, Name: name, Config: map[string]any{}, Context: map[string]any{},
		Metadata: map[string]any{"created_by": "system"}, Version: 1, CreatedAt: serverStart, UpdatedAt: serverStart}
}

// assistantFor finds the assistant the request names: a workflow's name,
// or an assistant the owner created; it returns the graph (workflow) the
// assistant runs.
func (s *Server) assistantFor(w http.ResponseWriter, r *http.Request) (string, bool) {
	pin, err := s.resolveAssistant(r.Context(), ownerFrom(r.Context()), r.PathValue("assistant"))
	if err != nil {
		writeError(w, s.internal(r, err))
		return "", false
	}
	return pin.Graph, true
}

func unknownAssistant(id string) *apiError {
	return errorf(http.StatusNotFound, CodeUnknownWorkflow, "unknown assistant %q: each workflow is an assistant, named like it, and POST /assistants creates more (POST /assistants/search lists them)", id)
}

type lgAssistantQuery struct {
	GraphID   string         `json:"graph_id"`
	Name      string         `json:"name"`
	Metadata  map[string]any `json:"metadata"`
	Limit     int            `json:"limit"`
	Offset    int            `json:"offset"`
	SortBy    string         `json:"sort_by"`
	SortOrder string         `json:"sort_order"`
	Select    []string       `json:"select"`
}

func (s *Server) matchAssistants(w http.ResponseWriter, r *http.Request) ([]lgAssistant, lgAssistantQuery, bool) {
	var q lgAssistantQuery
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &q); e != nil {
		writeError(w, e)
		return nil, q, false
	}
	all, err := s.allAssistants(r.Context(), ownerFrom(r.Context()))
	if err != nil {
		writeError(w, s.internal(r, err))
		return nil, q, false
	}
	out := []lgAssistant{}
	for _, a := range all {
		if (q.GraphID != "" && q.GraphID != a.GraphID) || (q.Name != "" && !strings.Contains(strings.ToLower(a.Name), strings.ToLower(q.Name))) || !metadataMatches(a.Metadata, q.Metadata) {
			continue
		}
		out = append(out, a)
	}
	return out, q, true
}

// lgSearchAssistants lists the assistants the query matches, sorted and
// paged as it asks (X-Pagination-Next: the next page's offset).
func (s *Server) lgSearchAssistants(w http.ResponseWriter, r *http.Request) {
	all, q, ok := s.matchAssistants(w, r)
	if !ok {
		return
	}
	if e := sortAssistants(all, q.SortBy, q.SortOrder); e != nil {
		writeError(w, e)
		return
	}
	page, e := pageOf(all, q.Limit, q.Offset)
	if e != nil {
		writeError(w, e)
		return
	}
	out, e := selectFields(page, q.Select)
	if e != nil {
		writeError(w, e)
		return
	}
	paginationNext(w, len(all), q.Limit, q.Offset)
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) lgCountAssistants(w http.ResponseWriter, r *http.Request) {
	all, _, ok := s.matchAssistants(w, r)
	if ok {
		writeJSON(w, http.StatusOK, len(all))
	}
}

func (s *Server) lgGetAssistant(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("assistant")
	if s.cfg.Workflows[id] != nil {
		writeJSON(w, http.StatusOK, s.assistant(id))
		return
	}
	a, err := s.createdAssistant(r.Context(), ownerFrom(r.Context()), id)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, a.view())
}

func (s *Server) lgAssistantSubgraphs(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.assistantFor(w, r); ok {
		writeJSON(w, http.StatusOK, map[string]any{})
	}
}

// mermaidEdge matches an edge line of graph.Runnable.Mermaid.
var mermaidEdge = regexp.MustCompile(`^\s*([A-Za-z0-9_]+)\s*(-\.->|-->|-\.\s*[^.]*\s*\.->|--\s*[^-]*\s*-->)\s*([A-Za-z0-9_]+)`)

// lgAssistantGraph answers the workflow's nodes and edges, as the
// Platform's graph drawing: start and end are __start__ and __end__.
func (s *Server) lgAssistantGraph(w http.ResponseWriter, r *http.Request) {
	id, ok := s.assistantFor(w, r)
	if !ok {
		return
	}
	info := s.workflows[id]
	rename := func(n string) string {
		switch strings.ToLower(n) {
		case "start", "__start__":
			return "__start__"
		case "end", "__end__":
			return "__end__"
		}
		return n
	}
	type node struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data string `json:"data"`
	}
	type edge struct {
		Source      string `json:"source"`
		Target      string `json:"target"`
		Conditional bool   `json:"conditional,omitempty"`
	}
	out := struct {
		Nodes []node `json:"nodes"`
		Edges []edge `json:"edges"`
	}{Nodes: []node{{ID: "__start__", Type: "schema", Data: "__start__"}}, Edges: []edge{}}
	for _, n := range info.Nodes {
		out.Nodes = append(out.Nodes, node{ID: n, Type: "runnable", Data: n})
	}
	out.Nodes = append(out.Nodes, node{ID: "__end__", Type: "schema", Data: "__end__"})
	for line := range strings.SplitSeq(info.Mermaid, "\n") {
		if m := mermaidEdge.FindStringSubmatch(line); m != nil {
			out.Edges = append(out.Edges, edge{Source: rename(m[1]), Target: rename(m[3]), Conditional: strings.Contains(m[2], ".")})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// lgAssistantSchemas answers the workflow's channels as JSON Schemas: the
// input and the state take any of them. Its config (Config.ConfigSchemas)
// is both config_schema and context_schema: a run's
// config.configurable and context are one config (setPlatformConfig).
func (s *Server) lgAssistantSchemas(w http.ResponseWriter, r *http.Request) {
	id, ok := s.assistantFor(w, r)
	if !ok {
		return
	}
	props := map[string]any{}
	for _, c := range s.workflows[id].Channels {
		props[c.Name] = map[string]any{"title": c.Name, "description": fmt.Sprintf("%s (%s reducer)", c.Type, c.Reducer)}
	}
	schema := map[string]any{"title": id, "type": "object", "properties": props}
	var config any
	if c := s.cfg.ConfigSchemas[id]; c != nil {
		config = c
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"graph_id": id, "input_schema": schema, "output_schema": schema, "state_schema": schema,
		"config_schema": config, "context_schema": config,
	})
}

// metadataMatches reports whether have holds every key of want with an
// equal value.
func metadataMatches(have, want map[string]any) bool {
	for k, v := range want {
		a, _ := json.Marshal(have[k])
		b, _ := json.Marshal(v)
		if _, ok := have[k]; !ok || string(a) != string(b) {
			return false
		}
	}
	return true
}

// maxPage caps the limit of the Platform's searches.
const maxPage = 1000

// pageOf returns items[offset:offset+limit] (limit 0: 10), never nil.
func pageOf[T any](items []T, limit, offset int) ([]T, *apiError) {
	switch {
	case limit < 0 || limit > maxPage:
		return nil, fieldErrorf(CodeInvalidField, "limit", "field \"limit\" must be from 1 to %d, not %d", maxPage, limit)
	case offset < 0:
		return nil, fieldErrorf(CodeInvalidField, "offset", "field \"offset\" must be >= 0, not %d", offset)
	case limit == 0:
		limit = 10
	}
	if offset >= len(items) {
		return []T{}, nil
	}
	return items[offset:min(len(items), offset+limit)], nil
}

// queryInt reads an integer query parameter within [lo, hi], def when
// absent.
func queryInt(r *http.Request, name string, def, lo, hi int) (int, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fieldErrorf(CodeInvalidQuery, name, "query parameter %q must be an integer from %d to %d, not %q", name, lo, hi, v)
	}
	return n, nil
}
