package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coorflow/coorflow/runs"
	"github.com/coorflow/coorflow/store"
	storemem "github.com/coorflow/coorflow/store/memory"
)

// Assistants created by clients (POST /assistants), as LangGraph's: a
// graph (one of the server's workflows) with a config (config.configurable),
// a context, metadata, a name and a description, versioned. Each PATCH
// makes a new version and makes it the latest; POST .../latest makes an
// earlier one the latest again; a run on the assistant gets the latest
// version's configurable and context under its own config (a key the run
// gives wins). The workflows stay assistants of their own (id and graph_id
// the workflow's name, version 1) that cannot be changed.
//
// An owner's assistants are one item of the store (Config.Store, or the
// server's memory store without one; with Config.Replicas they need a
// Store) of the owner cronOwner, at assistants/<owner's digest>; every
// change reads it, changes it and writes it back at the revision it read,
// so that the count and size limits are checked and taken in one step,
// on one server and among replicas sharing the store.

// DefaultMaxAssistants is Config.MaxAssistants when zero.
const DefaultMaxAssistants = 100

// Bounds of the assistants a client creates.
const (
	// MaxAssistantVersions is how many versions of an assistant are kept:
	// a new version beyond it drops the oldest (never the latest).
	MaxAssistantVersions = 100
	// MaxAssistantBytes caps the JSON of all of an owner's assistants with
	// their versions.
	MaxAssistantBytes = 8 << 20
	maxAssistantName  = 256
	maxAssistantDesc  = 4 << 10
	maxAssistantMeta  = 16 << 10
	assistantPrefix   = "assistants/"
	// assistantTries bounds the rounds of a change that other replicas'
	// changes keep conflicting with.
	assistantTries = 32
)

// uuidPattern is an assistant id a client may choose: a UUID, as
// LangGraph's.
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// assistantState is where the assistants live; mu makes the changes of
// this server to one owner's item one at a time (other replicas' changes
// conflict and are made again).
type assistantState struct {
	store store.Store
	mu    sync.Mutex
}

// assistantVersion is one version of a created assistant, as stored.
type assistantVersion struct {
	Version     int            `json:"version"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	CreatedAt   time.Time      `json:"created_at"`
}

// createdAssistant is an assistant a client created, with its versions
// (oldest first); Latest is the version runs use.
type createdAssistant struct {
	ID        string             `json:"id"`
	Latest    int                `json:"latest"`
	CreatedAt time.Time          `json:"created_at"`
	UpdatedAt time.Time          `json:"updated_at"`
	Versions  []assistantVersion `json:"versions"`
}

// ownerAssistants is the stored item of one owner's assistants.
type ownerAssistants struct {
	Owner      string              `json:"owner"`
	Assistants []*createdAssistant `json:"assistants"`
	rev        int64               // the store revision read (0: none stored)
}

func (o *ownerAssistants) find(id string) *createdAssistant {
	for _, a := range o.Assistants {
		if a.ID == id {
			return a
		}
	}
	return nil
}

func (a *createdAssistant) version(n int) *assistantVersion {
	for i := range a.Versions {
		if a.Versions[i].Version == n {
			return &a.Versions[i]
		}
	}
	return nil
}

// view is the assistant at its latest version, as the Platform shows it.
func (a *createdAssistant) view() lgAssistant {
	v := a.version(a.Latest)
	return lgAssistant{AssistantID: a.ID, GraphID: v.GraphID, Name: v.Name, Description: v.Description, Config: orEmpty(v.Config),
		Context: orEmpty(v.Context), Metadata: orEmpty(v.Metadata), Version: v.Version, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt}
}

// versionView is version v of the assistant, as the Platform shows one
// (LangGraph's AssistantVersion: no updated_at).
func (a *createdAssistant) versionView(v assistantVersion) lgAssistantVersion {
	return lgAssistantVersion{AssistantID: a.ID, GraphID: v.GraphID, Name: v.Name, Description: v.Description, Config: orEmpty(v.Config),
		Context: orEmpty(v.Context), Metadata: orEmpty(v.Metadata), Version: v.Version, CreatedAt: v.CreatedAt}
}

// lgAssistantVersion is a version of an assistant as the Platform shows it.
type lgAssistantVersion struct {
	AssistantID string         `json:"assistant_id"`
	GraphID     string         `json:"graph_id"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	Config      map[string]any `json:"config"`
	Context     map[string]any `json:"context"`
	Metadata    map[string]any `json:"metadata"`
	Version     int            `json:"version"`
	CreatedAt   time.Time      `json:"created_at"`
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// startAssistants sets where the assistants live: Config.Store, or a
// memory store of the server's own without replicas.
func (s *Server) startAssistants() {
	switch {
	case s.cfg.Store != nil:
		s.assistants.store = s.cfg.Store
	case s.cfg.Replicas == nil:
		s.assistants.store = storemem.New(store.Config{})
	}
	s.cfg.MaxAssistants = orDefault(s.cfg.MaxAssistants, DefaultMaxAssistants)
}

// assistantPath is where the owner's assistants are stored.
func assistantPath(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return assistantPrefix + hex.EncodeToString(sum[:16])
}

// readAssistants reads the owner's assistants (none stored: an empty
// list at revision 0).
func (s *Server) readAssistants(ctx context.Context, owner string) (*ownerAssistants, error) {
	out := &ownerAssistants{Owner: owner}
	if s.assistants.store == nil {
		return out, nil
	}
	it, err := s.assistants.store.Get(ctx, cronOwner, assistantPath(owner))
	if errors.Is(err, store.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("server: read the assistants of %q: %w", owner, err)
	}
	if err := json.Unmarshal([]byte(it.Content), out); err != nil {
		return nil, fmt.Errorf("server: the assistants of %q are corrupt: %w", owner, err)
	}
	if out.Owner != owner {
		return nil, fmt.Errorf("server: the assistants stored for %q are another owner's", owner)
	}
	out.rev = it.Revision
	return out, nil
}

// changeAssistants applies change to the owner's assistants and stores
// them at the revision read, in one step: a change made meanwhile by
// another replica makes it read and apply change again. An error of
// change stores nothing and is returned.
func (s *Server) changeAssistants(ctx context.Context, owner string, change func(*ownerAssistants) error) error {
	st := s.assistants.store
	if st == nil {
		return errorf(http.StatusNotImplemented, CodeNotServed, "assistants need a store shared by the replicas (Config.Store): this server has none")
	}
	s.assistants.mu.Lock()
	defer s.assistants.mu.Unlock()
	for range assistantTries {
		all, err := s.readAssistants(ctx, owner)
		if err != nil {
			return err
		}
		if err := change(all); err != nil {
			return err
		}
		data, err := json.Marshal(all)
		if err != nil {
			return fmt.Errorf("server: store the assistants of %q: %w", owner, err)
		}
		if len(data) > MaxAssistantBytes {
			e := errorf(http.StatusTooManyRequests, CodeQuotaExceeded, "owner %q's assistants would take %d bytes, more than the %d allowed: delete assistants or use fewer or smaller versions", owner, len(data), MaxAssistantBytes)
			e.Quota, e.Limit = "assistant_bytes", MaxAssistantBytes
			return e
		}
		path := assistantPath(owner)
		if all.rev == 0 {
			// Text, not JSON: a stale write conflicts rather than merges.
			_, err = st.Add(ctx, cronOwner, path, string(data), store.Attrs{ContentType: store.ContentText})
		} else {
			_, err = st.Edit(ctx, cronOwner, path, store.Replace(all.rev, string(data)))
		}
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) {
			continue // another replica changed them: again, on its change
		}
		if err != nil {
			return fmt.Errorf("server: store the assistants of %q: %w", owner, err)
		}
		return nil
	}
	return errorf(http.StatusConflict, CodeThreadBusy, "the assistants of %q were changed by other requests %d times while this one was made: try again", owner, assistantTries)
}

// assistantPin is the assistant a run starts with: its id, the graph
// (workflow) it runs, and for a created assistant the version and the
// config its nodes get under the run's own. It travels with a shared run
// (storedRequest), so the replica that executes it uses the same version.
type assistantPin struct {
	ID      string      `json:"id"`
	Graph   string      `json:"graph"`
	Version int         `json:"version,omitempty"`
	Config  runs.Config `json:"config,omitempty"`
}

// resolveAssistant finds the owner's assistant id: a workflow's name, or
// an assistant the owner created (another owner's is unknown).
func (s *Server) resolveAssistant(ctx context.Context, owner, id string) (*assistantPin, error) {
	if id == "" {
		return nil, fieldErrorf(CodeInvalidField, "assistant_id", "field \"assistant_id\" is required: name a workflow or an assistant (POST /assistants/search lists them)")
	}
	if s.cfg.Workflows[id] != nil {
		return &assistantPin{ID: id, Graph: id}, nil
	}
	if !uuidPattern.MatchString(id) || s.assistants.store == nil {
		return nil, unknownAssistant(id)
	}
	all, err := s.readAssistants(ctx, owner)
	if err != nil {
		return nil, err
	}
	a := all.find(id)
	if a == nil {
		return nil, unknownAssistant(id)
	}
	v := a.version(a.Latest)
	if s.cfg.Workflows[v.GraphID] == nil {
		return nil, errorf(http.StatusNotFound, CodeUnknownWorkflow, "assistant %q runs graph %q, which this server does not serve", id, v.GraphID)
	}
	c, e := assistantConfig(v.Config, v.Context)
	if e != nil {
		return nil, e
	}
	return &assistantPin{ID: id, Graph: v.GraphID, Version: v.Version, Config: c}, nil
}

// assistantConfig is the config an assistant's runs get: its
// config.configurable and its context, merged.
func assistantConfig(config, context map[string]any) (runs.Config, *apiError) {
	var configurable any
	if config != nil {
		configurable = config["configurable"]
	}
	raw, _ := json.Marshal(configurable)
	c, res, err := runs.ParseConfig(raw)
	if err != nil {
		return nil, configError("config.configurable", err)
	}
	if res != (runs.Reserved{}) {
		return nil, fieldErrorf(CodeInvalidField, "config.configurable", "field \"config.configurable\" of an assistant holds values for the nodes: thread_id, checkpoint_id, checkpoint_ns and run_id belong to a run")
	}
	raw, _ = json.Marshal(context)
	ctxValues, res, err := runs.ParseConfig(raw)
	if err != nil {
		return nil, configError("context", err)
	}
	if res != (runs.Reserved{}) {
		return nil, fieldErrorf(CodeInvalidField, "context", "field \"context\" holds values for the nodes; thread_id, checkpoint_id, checkpoint_ns and run_id belong to a run")
	}
	if c, err = c.Merge(ctxValues); err != nil {
		return nil, configError("context", err)
	}
	if len(c.Encode()) > runs.MaxConfigBytes {
		return nil, configError("context", &runs.ConfigError{Reason: fmt.Sprintf("config.configurable and context together are more than the %d bytes a run's config may have", runs.MaxConfigBytes)})
	}
	return c, nil
}

// under returns the run's config c with the keys of the assistant's
// config that c does not give: a run's own value wins.
func (p *assistantPin) under(c runs.Config) runs.Config {
	if p == nil || len(p.Config) == 0 {
		return c
	}
	out := make(runs.Config, len(c)+len(p.Config))
	for k, v := range p.Config {
		out[k] = v
	}
	for k, v := range c {
		out[k] = v
	}
	return out
}

// lgAssistantRequest is the body of POST /assistants and PATCH
// /assistants/{id}, every field the SDK sends.
type lgAssistantRequest struct {
	GraphID     string          `json:"graph_id"`
	AssistantID string          `json:"assistant_id"`
	IfExists    string          `json:"if_exists"`
	Config      json.RawMessage `json:"config"`
	Context     json.RawMessage `json:"context"`
	Metadata    json.RawMessage `json:"metadata"`
	Name        *string         `json:"name"`
	Description *string         `json:"description"`
}

// given reports whether a field was sent with a value (not absent, not
// null).
func given(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// object decodes a field that must be a JSON object of at most limit
// bytes.
func object(raw json.RawMessage, field string, limit int) (map[string]any, *apiError) {
	if len(raw) > limit {
		return nil, fieldErrorf(CodeInvalidField, field, "field %q has %d bytes of JSON, more than the %d allowed", field, len(raw), limit)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fieldErrorf(CodeInvalidField, field, "field %q must be a JSON object", field)
	}
	return m, nil
}

// apply sets the fields req gives on v (a new version), checking each.
func (req lgAssistantRequest) apply(s *Server, v *assistantVersion) *apiError {
	if req.GraphID != "" {
		if s.cfg.Workflows[req.GraphID] == nil {
			return errorf(http.StatusNotFound, CodeUnknownWorkflow, "unknown graph %q: graph_id names a workflow of the server (%s)", req.GraphID, strings.Join(sortedKeys(s.cfg.Workflows), ", "))
		}
		v.GraphID = req.GraphID
	}
	var e *apiError
	if given(req.Config) {
		if v.Config, e = object(req.Config, "config", runs.MaxConfigBytes+4<<10); e != nil {
			return e
		}
	}
	if given(req.Context) {
		if v.Context, e = object(req.Context, "context", runs.MaxConfigBytes); e != nil {
			return e
		}
	}
	if given(req.Metadata) {
		m, e := object(req.Metadata, "metadata", maxAssistantMeta)
		if e != nil {
			return e
		}
		// As LangGraph: metadata is merged into the current version's.
		merged := make(map[string]any, len(v.Metadata)+len(m))
		for k, x := range v.Metadata {
			merged[k] = x
		}
		for k, x := range m {
			merged[k] = x
		}
		v.Metadata = merged
	}
	if req.Name != nil {
		if len(*req.Name) > maxAssistantName {
			return fieldErrorf(CodeInvalidField, "name", "field \"name\" has %d bytes, more than the %d allowed", len(*req.Name), maxAssistantName)
		}
		v.Name = *req.Name
	}
	if req.Description != nil {
		if len(*req.Description) > maxAssistantDesc {
			return fieldErrorf(CodeInvalidField, "description", "field \"description\" has %d bytes, more than the %d allowed", len(*req.Description), maxAssistantDesc)
		}
		d := *req.Description
		v.Description = &d
	}
	if _, e := assistantConfig(v.Config, v.Context); e != nil {
		return e
	}
	return nil
}

// lgCreateAssistant creates an assistant of a graph: version 1.
func (s *Server) lgCreateAssistant(w http.ResponseWriter, r *http.Request) {
	var req lgAssistantRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.GraphID == "" {
		writeError(w, fieldErrorf(CodeInvalidField, "graph_id", "field \"graph_id\" is required: name a workflow of the server (%s)", strings.Join(sortedKeys(s.cfg.Workflows), ", ")))
		return
	}
	switch req.IfExists {
	case "", "raise", "do_nothing":
	default:
		writeError(w, fieldErrorf(CodeInvalidField, "if_exists", "field \"if_exists\" must be raise or do_nothing, not %q", req.IfExists))
		return
	}
	id := req.AssistantID
	switch {
	case id == "":
		id = newUUID()
	case s.cfg.Workflows[id] != nil:
		writeError(w, errorf(http.StatusConflict, CodeAssistantExists, "assistant %q exists: it is the server's workflow of that name", id))
		return
	case !uuidPattern.MatchString(id):
		writeError(w, fieldErrorf(CodeInvalidField, "assistant_id", "field \"assistant_id\" must be a UUID, not %q", id))
		return
	}
	now := time.Now().UTC()
	v := assistantVersion{Version: 1, Name: "Untitled", Metadata: map[string]any{}, Config: map[string]any{}, Context: map[string]any{}, CreatedAt: now}
	if e := req.apply(s, &v); e != nil {
		writeError(w, e)
		return
	}
	owner := ownerFrom(r.Context())
	var out lgAssistant
	err := s.changeAssistants(r.Context(), owner, func(all *ownerAssistants) error {
		if a := all.find(id); a != nil {
			if req.IfExists == "do_nothing" {
				out = a.view()
				return errUnchanged
			}
			return errorf(http.StatusConflict, CodeAssistantExists, "assistant %q exists (if_exists \"do_nothing\" answers it instead)", id)
		}
		if limit := s.cfg.MaxAssistants; limit >= 0 && len(all.Assistants) >= limit {
			e := errorf(http.StatusTooManyRequests, CodeQuotaExceeded, "owner %q has %d assistants, the most allowed: delete one first", owner, limit)
			e.Quota, e.Limit = "assistants", int64(limit)
			return e
		}
		a := &createdAssistant{ID: id, Latest: 1, CreatedAt: now, UpdatedAt: now, Versions: []assistantVersion{v}}
		all.Assistants = append(all.Assistants, a)
		out = a.view()
		return nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// errUnchanged ends a change of the assistants that stores nothing.
var errUnchanged = errors.New("server: assistants unchanged")

// createdFor answers 404 for an assistant the owner did not create, and
// 409 for a workflow's own assistant, which cannot be changed; else it
// returns true.
func (s *Server) createdFor(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("assistant")
	if s.cfg.Workflows[id] != nil {
		writeError(w, errorf(http.StatusConflict, CodeSystemAssistant, "assistant %q is the workflow of that name and changes only with its file: create an assistant of graph %q (POST /assistants) to configure it", id, id))
		return "", false
	}
	return id, true
}

// changeCreated applies change to the owner's created assistant of the
// request's path and answers what view returns of it afterwards.
func (s *Server) changeCreated(w http.ResponseWriter, r *http.Request, change func(*createdAssistant, time.Time) *apiError, view func(*createdAssistant) any) {
	id, ok := s.createdFor(w, r)
	if !ok {
		return
	}
	var out any
	err := s.changeAssistants(r.Context(), ownerFrom(r.Context()), func(all *ownerAssistants) error {
		a := all.find(id)
		if a == nil {
			return unknownAssistant(id)
		}
		if e := change(a, time.Now().UTC()); e != nil {
			return e
		}
		out = view(a)
		return nil
	})
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// lgPatchAssistant makes a new version of an assistant from its latest,
// with the fields the request gives, and makes it the latest.
func (s *Server) lgPatchAssistant(w http.ResponseWriter, r *http.Request) {
	var req lgAssistantRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.AssistantID != "" || req.IfExists != "" {
		writeError(w, fieldErrorf(CodeInvalidField, "assistant_id", "fields \"assistant_id\" and \"if_exists\" belong to a creation (POST /assistants)"))
		return
	}
	s.changeCreated(w, r, func(a *createdAssistant, now time.Time) *apiError {
		v := *a.version(a.Latest)
		v.Version, v.CreatedAt = a.Versions[len(a.Versions)-1].Version+1, now
		if e := req.apply(s, &v); e != nil {
			return e
		}
		a.Versions = append(a.Versions, v)
		a.Latest, a.UpdatedAt = v.Version, now
		for len(a.Versions) > MaxAssistantVersions {
			// The latest is the newest: the oldest is never it.
			a.Versions = slices.Delete(a.Versions, 0, 1)
		}
		return nil
	}, func(a *createdAssistant) any { return a.view() })
}

// lgSetLatest makes a version of an assistant the one its runs use.
func (s *Server) lgSetLatest(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Version int `json:"version"`
	}
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	s.changeCreated(w, r, func(a *createdAssistant, now time.Time) *apiError {
		v := a.version(req.Version)
		if v == nil {
			return errorf(http.StatusNotFound, CodeNotFound, "assistant %q has no version %d (POST /assistants/%s/versions lists them)", a.ID, req.Version, a.ID)
		}
		if s.cfg.Workflows[v.GraphID] == nil {
			return errorf(http.StatusNotFound, CodeUnknownWorkflow, "version %d of assistant %q runs graph %q, which this server does not serve", v.Version, a.ID, v.GraphID)
		}
		a.Latest, a.UpdatedAt = v.Version, now
		return nil
	}, func(a *createdAssistant) any { return a.view() })
}

// lgDeleteAssistant deletes an assistant with its versions; its threads
// stay (delete_threads=true is refused: threads are deleted one by one).
func (s *Server) lgDeleteAssistant(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query().Get("delete_threads"); q == "true" || q == "1" {
		writeError(w, fieldErrorf(CodeInvalidQuery, "delete_threads", "query parameter \"delete_threads\" is not supported: delete the assistant's threads one by one (DELETE /threads/{thread_id})"))
		return
	}
	id, ok := s.createdFor(w, r)
	if !ok {
		return
	}
	err := s.changeAssistants(r.Context(), ownerFrom(r.Context()), func(all *ownerAssistants) error {
		i := slices.IndexFunc(all.Assistants, func(a *createdAssistant) bool { return a.ID == id })
		if i < 0 {
			return unknownAssistant(id)
		}
		all.Assistants = slices.Delete(all.Assistants, i, i+1)
		return nil
	})
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// allAssistants are the assistants the owner sees: the workflows' and
// those the owner created.
func (s *Server) allAssistants(ctx context.Context, owner string) ([]lgAssistant, error) {
	out := make([]lgAssistant, 0, len(s.cfg.Workflows))
	for _, name := range sortedKeys(s.cfg.Workflows) {
		out = append(out, s.assistant(name))
	}
	mine, err := s.readAssistants(ctx, owner)
	if err != nil {
		return nil, err
	}
	for _, a := range mine.Assistants {
		out = append(out, a.view())
	}
	return out, nil
}

// assistantSorts are the search's sort_by values and how each compares.
var assistantSorts = map[string]func(a, b lgAssistant) int{
	"assistant_id": func(a, b lgAssistant) int { return strings.Compare(a.AssistantID, b.AssistantID) },
	"graph_id":     func(a, b lgAssistant) int { return strings.Compare(a.GraphID, b.GraphID) },
	"name":         func(a, b lgAssistant) int { return strings.Compare(a.Name, b.Name) },
	"created_at":   func(a, b lgAssistant) int { return a.CreatedAt.Compare(b.CreatedAt) },
	"updated_at":   func(a, b lgAssistant) int { return a.UpdatedAt.Compare(b.UpdatedAt) },
}

// assistantFields are the fields a search may select.
var assistantFields = []string{"assistant_id", "graph_id", "name", "description", "config", "context", "created_at", "updated_at", "metadata", "version"}

// sortAssistants sorts as the search asks: by sort_by (default
// created_at) in sort_order (default desc), ties by assistant_id.
func sortAssistants(list []lgAssistant, by, order string) *apiError {
	if by == "" {
		by = "created_at"
	}
	cmpBy, ok := assistantSorts[by]
	if !ok {
		return fieldErrorf(CodeInvalidField, "sort_by", "field \"sort_by\" must be assistant_id, graph_id, name, created_at or updated_at, not %q", by)
	}
	sign := -1
	switch order {
	case "", "desc":
	case "asc":
		sign = 1
	default:
		return fieldErrorf(CodeInvalidField, "sort_order", "field \"sort_order\" must be asc or desc, not %q", order)
	}
	slices.SortStableFunc(list, func(a, b lgAssistant) int {
		return cmp.Or(sign*cmpBy(a, b), strings.Compare(a.AssistantID, b.AssistantID))
	})
	return nil
}

// selectFields keeps the fields of each assistant that select names (none:
// all).
func selectFields(list []lgAssistant, sel []string) ([]any, *apiError) {
	for _, f := range sel {
		if !slices.Contains(assistantFields, f) {
			return nil, fieldErrorf(CodeInvalidField, "select", "field \"select\" names %q, not a field of an assistant (%s)", f, strings.Join(assistantFields, ", "))
		}
	}
	out := make([]any, len(list))
	for i, a := range list {
		if len(sel) == 0 {
			out[i] = a
			continue
		}
		var all map[string]json.RawMessage
		b, _ := json.Marshal(a)
		_ = json.Unmarshal(b, &all)
		kept := make(map[string]json.RawMessage, len(sel))
		for _, f := range sel {
			kept[f] = all[f]
		}
		out[i] = kept
	}
	return out, nil
}

// lgAssistantVersions lists the versions of an assistant, newest first
// (a workflow's own has one).
func (s *Server) lgAssistantVersions(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Metadata map[string]any `json:"metadata"`
		Limit    int            `json:"limit"`
		Offset   int            `json:"offset"`
	}
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &q); e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("assistant")
	var out []lgAssistantVersion
	if s.cfg.Workflows[id] != nil {
		a := s.assistant(id)
		out = []lgAssistantVersion{{AssistantID: id, GraphID: id, Name: id, Config: a.Config, Context: a.Context, Metadata: a.Metadata, Version: 1, CreatedAt: a.CreatedAt}}
	} else {
		a, err := s.createdAssistant(r.Context(), ownerFrom(r.Context()), id)
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		for _, v := range slices.Backward(a.Versions) {
			out = append(out, a.versionView(v))
		}
	}
	out = slices.DeleteFunc(out, func(v lgAssistantVersion) bool { return !metadataMatches(v.Metadata, q.Metadata) })
	page, e := pageOf(out, q.Limit, q.Offset)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// createdAssistant reads the owner's created assistant id.
func (s *Server) createdAssistant(ctx context.Context, owner, id string) (*createdAssistant, error) {
	if !uuidPattern.MatchString(id) || s.assistants.store == nil {
		return nil, unknownAssistant(id)
	}
	all, err := s.readAssistants(ctx, owner)
	if err != nil {
		return nil, err
	}
	if a := all.find(id); a != nil {
		return a, nil
	}
	return nil, unknownAssistant(id)
}

// newUUID returns a random (version 4) UUID, as LangGraph names
// assistants.
func newUUID() string {
	h := newID() // 32 random hex digits
	b := []byte(h)
	b[12] = '4'
	b[16] = "89ab"[strings.IndexByte("0123456789abcdef", b[16])%4]
	return string(b[0:8]) + "-" + string(b[8:12]) + "-" + string(b[12:16]) + "-" + string(b[16:20]) + "-" + string(b[20:32])
}

// paginationNext is the X-Pagination-Next header of a page: the offset of
// the next, when there is one.
func paginationNext(w http.ResponseWriter, total, limit, offset int) {
	if limit == 0 {
		limit = 10
	}
	if offset+limit < total {
		w.Header().Set("X-Pagination-Next", strconv.Itoa(offset+limit))
	}
}
