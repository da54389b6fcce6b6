package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// lgThread is a thread as the Platform shows it.
type lgThread struct {
	ThreadID  string         `json:"thread_id"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	Metadata  map[string]any `json:"metadata"`
	// Status is idle, busy, interrupted or error.
	Status     string                       `json:"status"`
	Values     json.RawMessage              `json:"values"`
	Interrupts map[string][]lgInterrupt     `json:"interrupts"`
	Config     map[string]map[string]string `json:"config"`
}

// lgInterrupt is a pending question, as the Platform shows it.
type lgInterrupt struct {
	ID    string `json:"id"`
	Value any    `json:"value"`
}

// platformThread loads the thread the request names; its workflow is nil
// while no run has bound it to one.
func (s *Server) platformThread(w http.ResponseWriter, r *http.Request) (Thread, *graph.Runnable, bool) {
	th, _, err := s.threadRecord(r.Context(), ownerFrom(r.Context()), r.PathValue("thread"))
	if err != nil {
		writeError(w, s.internal(r, err))
		return th, nil, false
	}
	if th.Workflow == "" {
		return th, nil, true
	}
	wf := s.cfg.Workflows[th.Workflow]
	if wf == nil {
		writeError(w, errorf(http.StatusNotFound, CodeUnknownWorkflow, "thread %q belongs to workflow %q, which this server does not serve", th.ID, th.Workflow))
		return th, nil, false
	}
	return th, wf, true
}

type lgCreateThreadRequest struct {
	ThreadID   string          `json:"thread_id"`
	Metadata   map[string]any  `json:"metadata"`
	IfExists   string          `json:"if_exists"`
	Supersteps json.RawMessage `json:"supersteps"`
	TTL        json.RawMessage `json:"ttl"`
}

func (s *Server) lgCreateThread(w http.ResponseWriter, r *http.Request) {
	var req lgCreateThreadRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case req.ThreadID != "" && !threadIDPattern.MatchString(req.ThreadID):
		writeError(w, fieldErrorf(CodeInvalidField, "thread_id",
			"field \"thread_id\" must be 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit"))
		return
	case req.IfExists != "" && req.IfExists != "raise" && req.IfExists != "do_nothing":
		writeError(w, fieldErrorf(CodeInvalidField, "if_exists", "field \"if_exists\" must be \"raise\" or \"do_nothing\", not %q", req.IfExists))
		return
	case len(req.Supersteps) > 0 && string(req.Supersteps) != "null":
		writeError(w, fieldErrorf(CodeInvalidField, "supersteps", "field \"supersteps\" is not supported: create the thread, then POST /threads/{thread_id}/state"))
		return
	case len(req.TTL) > 0 && string(req.TTL) != "null":
		writeError(w, fieldErrorf(CodeInvalidField, "ttl", "field \"ttl\" is not supported: threads are kept until deleted"))
		return
	}
	owner := ownerFrom(r.Context())
	th := Thread{ID: req.ThreadID, Metadata: req.Metadata, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	if g, ok := req.Metadata["graph_id"].(string); ok && g != "" {
		if _, ok := s.cfg.Workflows[g]; !ok {
			writeError(w, unknownAssistant(g))
			return
		}
		th.Workflow = g
	}
	if th.ID == "" {
		th.ID = newID()
	}
	if e := s.storageQuota(owner); e != nil {
		writeError(w, e)
		return
	}
	err := s.storeThread(r.Context(), owner, th)
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == CodeThreadExists && req.IfExists == "do_nothing" {
		err = nil
		if th, _, err = s.threadRecord(r.Context(), owner, th.ID); err == nil {
			s.writeThread(w, r, th)
			return
		}
	}
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	s.writeThread(w, r, th)
}

// threadView builds the Platform's view of th: its status and, when it
// has run, its newest values and pending interrupts.
func (s *Server) threadView(ctx context.Context, owner string, th Thread) (lgThread, error) {
	out := lgThread{ThreadID: th.ID, CreatedAt: th.CreatedAt, UpdatedAt: th.CreatedAt, Metadata: th.Metadata, Status: "idle",
		Values: json.RawMessage("{}"), Interrupts: map[string][]lgInterrupt{},
		Config: map[string]map[string]string{"configurable": {"thread_id": th.ID}}}
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	if th.Workflow != "" {
		out.Metadata["graph_id"] = th.Workflow
		if _, ok := out.Metadata["assistant_id"]; !ok { // a created assistant's id, when one bound it
			out.Metadata["assistant_id"] = th.Workflow
		}
	}
	key := threadKey(owner, th.ID)
	active, queued, lastStatus, err := s.activity(ctx, key)
	busy := active != "" || queued > 0
	if err != nil {
		return out, err
	}
	if wf := s.cfg.Workflows[th.Workflow]; wf != nil {
		snap, err := wf.State(ctx, key, graph.WithSaver(s.saver))
		switch {
		case errors.Is(err, graph.ErrNotFound):
		case err != nil:
			return out, err
		default:
			if out.Values, err = json.Marshal(snap.State); err != nil {
				return out, fmt.Errorf("server: encode the state of thread %q: %w", th.ID, err)
			}
			out.UpdatedAt = snap.Created
			for _, in := range snap.Interrupts {
				out.Interrupts[in.Path] = append(out.Interrupts[in.Path], lgInterrupt{ID: in.ID, Value: in.Payload})
			}
			if len(snap.Interrupts) > 0 {
				out.Status = "interrupted"
			}
		}
	}
	if lastStatus == StatusError && out.Status == "idle" {
		out.Status = "error"
	}
	if busy {
		out.Status = "busy"
	}
	return out, nil
}

func (s *Server) writeThread(w http.ResponseWriter, r *http.Request, th Thread) {
	v, err := s.threadView(r.Context(), ownerFrom(r.Context()), th)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) lgGetThread(w http.ResponseWriter, r *http.Request) {
	if th, _, ok := s.platformThread(w, r); ok {
		s.writeThread(w, r, th)
	}
}

type lgPatchThreadRequest struct {
	Metadata map[string]any  `json:"metadata"`
	TTL      json.RawMessage `json:"ttl"`
}

// lgPatchThread merges metadata into the thread's.
func (s *Server) lgPatchThread(w http.ResponseWriter, r *http.Request) {
	var req lgPatchThreadRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	owner := ownerFrom(r.Context())
	th, head, err := s.threadRecord(r.Context(), owner, r.PathValue("thread"))
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	if th.Metadata == nil {
		th.Metadata = map[string]any{}
	}
	for k, v := range req.Metadata {
		th.Metadata[k] = v
	}
	if err := s.updateThread(r.Context(), owner, th, head); err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	s.writeThread(w, r, th)
}

type lgThreadQuery struct {
	Metadata  map[string]any  `json:"metadata"`
	IDs       []string        `json:"ids"`
	Limit     int             `json:"limit"`
	Offset    int             `json:"offset"`
	Status    string          `json:"status"`
	SortBy    string          `json:"sort_by"`
	SortOrder string          `json:"sort_order"`
	Select    []string        `json:"select"`
	Values    json.RawMessage `json:"values"`
	Extract   json.RawMessage `json:"extract"`
}

// maxThreadScan bounds how many threads a search looks at.
const maxThreadScan = 10000

// searchThreads returns the owner's threads that q selects, most recently
// updated first: all of them (at most maxThreadScan) when all is set, else
// enough for q's page.
func (s *Server) searchThreads(w http.ResponseWriter, r *http.Request, all bool) ([]lgThread, lgThreadQuery, bool) {
	var q lgThreadQuery
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &q); e != nil {
		writeError(w, e)
		return nil, q, false
	}
	owner := ownerFrom(r.Context())
	infos, err := s.saver.Threads(r.Context(), graph.ThreadListOptions{Limit: maxThreadScan})
	if err != nil {
		writeError(w, s.internal(r, err))
		return nil, q, false
	}
	prefix := threadKey(owner, "")
	var out []lgThread
	for _, info := range infos {
		if !all && len(out) >= q.Offset+max(q.Limit, 10) {
			break
		}
		id, ok := strings.CutPrefix(info.ID, prefix)
		if !ok || (len(q.IDs) > 0 && !slices.Contains(q.IDs, id)) {
			continue
		}
		th, _, err := s.threadRecord(r.Context(), owner, id)
		if err != nil {
			continue // checkpoints of a thread the server did not create
		}
		v, err := s.threadView(r.Context(), owner, th)
		if err != nil {
			writeError(w, s.internal(r, err))
			return nil, q, false
		}
		if (q.Status != "" && v.Status != q.Status) || !metadataMatches(v.Metadata, q.Metadata) {
			continue
		}
		out = append(out, v)
	}
	return out, q, true
}

func (s *Server) lgSearchThreads(w http.ResponseWriter, r *http.Request) {
	all, q, ok := s.searchThreads(w, r, false)
	if !ok {
		return
	}
	page, e := pageOf(all, q.Limit, q.Offset)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) lgCountThreads(w http.ResponseWriter, r *http.Request) {
	if all, _, ok := s.searchThreads(w, r, true); ok {
		writeJSON(w, http.StatusOK, len(all))
	}
}

// lgCheckpoint names a checkpoint, as the Platform does.
type lgCheckpoint struct {
	ThreadID      string         `json:"thread_id"`
	CheckpointNS  string         `json:"checkpoint_ns"`
	CheckpointID  string         `json:"checkpoint_id"`
	CheckpointMap map[string]any `json:"checkpoint_map"`
}

// lgTask is a task of a state's next step.
type lgTask struct {
	ID         string        `json:"id"`
	Name       string        `json:"name"`
	Path       []string      `json:"path"`
	Error      *string       `json:"error"`
	Interrupts []lgInterrupt `json:"interrupts"`
	Checkpoint *lgCheckpoint `json:"checkpoint"`
	State      any           `json:"state"`
	Result     any           `json:"result"`
}

// lgState is a thread's state at a checkpoint (the Platform's
// ThreadState).
type lgState struct {
	Values           json.RawMessage `json:"values"`
	Next             []string        `json:"next"`
	Tasks            []lgTask        `json:"tasks"`
	Checkpoint       *lgCheckpoint   `json:"checkpoint"`
	Metadata         map[string]any  `json:"metadata"`
	CreatedAt        *time.Time      `json:"created_at"`
	ParentCheckpoint *lgCheckpoint   `json:"parent_checkpoint"`
	Interrupts       []lgInterrupt   `json:"interrupts"`
}

func stateView(thread string, snap graph.Snapshot) (lgState, error) {
	values, err := json.Marshal(snap.State)
	if err != nil {
		return lgState{}, fmt.Errorf("server: encode the state of thread %q: %w", thread, err)
	}
	out := lgState{Values: values, Next: snap.Next, Tasks: []lgTask{}, Interrupts: []lgInterrupt{},
		Metadata: map[string]any{"source": string(snap.Source), "step": snap.Step, "writes": nil, "parents": map[string]any{}, "writers": snap.Writers}}
	if out.Next == nil {
		out.Next = []string{}
	}
	if snap.Checkpoint != "" {
		out.Checkpoint = &lgCheckpoint{ThreadID: thread, CheckpointID: snap.Checkpoint}
		t := snap.Created
		out.CreatedAt = &t
	}
	if snap.Parent != "" {
		out.ParentCheckpoint = &lgCheckpoint{ThreadID: thread, CheckpointID: snap.Parent}
	}
	byTask := map[string][]lgInterrupt{}
	for _, in := range snap.Interrupts {
		li := lgInterrupt{ID: in.ID, Value: in.Payload}
		out.Interrupts = append(out.Interrupts, li)
		byTask[in.Path] = append(byTask[in.Path], li)
	}
	for _, t := range snap.Tasks {
		task := lgTask{ID: t.Path, Name: t.Node, Path: []string{t.Path}, Interrupts: byTask[t.Path]}
		if task.Interrupts == nil && len(t.Interrupts) > 0 {
			// A done task's answered questions: LangGraph lists them on
			// the task, and among the state's interrupts.
			for _, in := range t.Interrupts {
				li := lgInterrupt{ID: in.ID, Value: in.Payload}
				task.Interrupts = append(task.Interrupts, li)
				out.Interrupts = append(out.Interrupts, li)
			}
		}
		if t.Error != "" {
			e := t.Error
			task.Error = &e
		}
		if task.Interrupts == nil {
			task.Interrupts = []lgInterrupt{}
		}
		delete(byTask, t.Path)
		out.Tasks = append(out.Tasks, task)
	}
	for _, path := range sortedKeys(byTask) {
		node := path[strings.LastIndexByte(path, '/')+1:]
		out.Tasks = append(out.Tasks, lgTask{ID: path, Name: node, Path: []string{path}, Interrupts: byTask[path]})
	}
	return out, nil
}

// writeState answers the thread's state at checkpoint cp ("" for the
// newest); a thread that has not run has empty values.
func (s *Server) writeState(w http.ResponseWriter, r *http.Request, cp string) {
	th, wf, ok := s.platformThread(w, r)
	if !ok {
		return
	}
	snap := graph.Snapshot{Step: -1}
	if wf != nil {
		opts := []graph.Option{graph.WithSaver(s.saver)}
		if cp != "" {
			opts = append(opts, graph.FromCheckpoint(cp))
		}
		var err error
		snap, err = wf.State(r.Context(), threadKey(ownerFrom(r.Context()), th.ID), opts...)
		switch {
		case errors.Is(err, graph.ErrNotFound) && cp != "":
			writeError(w, errorf(http.StatusNotFound, CodeUnknownCheckpt, "thread %q has no checkpoint %q", th.ID, cp))
			return
		case errors.Is(err, graph.ErrNotFound):
			snap = graph.Snapshot{Step: -1}
		case err != nil:
			writeError(w, s.internal(r, err))
			return
		}
	} else if cp != "" {
		writeError(w, errorf(http.StatusNotFound, CodeUnknownCheckpt, "thread %q has no checkpoint %q: it has not run", th.ID, cp))
		return
	}
	v, err := stateView(th.ID, snap)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) lgGetState(w http.ResponseWriter, r *http.Request) {
	s.writeState(w, r, r.PathValue("checkpoint"))
}

type lgCheckpointRef struct {
	ThreadID     string `json:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id"`
}

type lgStateAtRequest struct {
	Checkpoint lgCheckpointRef `json:"checkpoint"`
	Subgraphs  bool            `json:"subgraphs"`
	Select     []string        `json:"select"`
}

func (s *Server) lgGetStateAt(w http.ResponseWriter, r *http.Request) {
	var req lgStateAtRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Checkpoint.CheckpointID == "" {
		writeError(w, fieldErrorf(CodeInvalidField, "checkpoint.checkpoint_id", "field \"checkpoint.checkpoint_id\" is required"))
		return
	}
	s.writeState(w, r, req.Checkpoint.CheckpointID)
}

type lgUpdateStateRequest struct {
	Values       json.RawMessage  `json:"values"`
	AsNode       string           `json:"as_node"`
	CheckpointID string           `json:"checkpoint_id"`
	Checkpoint   *lgCheckpointRef `json:"checkpoint"`
}

// lgUpdateState writes values to the thread as node as_node would; after
// checkpoint_id, it forks the thread there.
func (s *Server) lgUpdateState(w http.ResponseWriter, r *http.Request) {
	var req lgUpdateStateRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	th, wf, ok := s.platformThread(w, r)
	if !ok {
		return
	}
	if wf == nil {
		writeError(w, errorf(http.StatusConflict, CodeNothingToRun, "thread %q has not run yet: there is no state to update", th.ID))
		return
	}
	var writes []graph.Write
	if len(req.Values) > 0 && string(req.Values) != "null" {
		var values map[string]json.RawMessage
		if err := json.Unmarshal(req.Values, &values); err != nil {
			writeError(w, fieldErrorf(CodeInvalidField, "values", "field \"values\" must be a JSON object keyed by channel name"))
			return
		}
		for _, name := range sortedKeys(values) {
			ws, err := wf.DecodeInput(map[string]json.RawMessage{name: values[name]})
			if err != nil {
				writeError(w, fieldErrorf(CodeUnknownChannel, "values."+name, "%v", err))
				return
			}
			writes = append(writes, ws...)
		}
	}
	cp := req.CheckpointID
	if cp == "" && req.Checkpoint != nil {
		cp = req.Checkpoint.CheckpointID
	}
	key := threadKey(ownerFrom(r.Context()), th.ID)
	active, queued, _, err := s.activity(r.Context(), key)
	busy := active != "" || queued > 0
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	if busy {
		writeError(w, errorf(http.StatusConflict, CodeThreadBusy, "thread %q has a run in progress: its state changes when the run ends", th.ID))
		return
	}
	opts := []graph.Option{graph.WithSaver(s.saver)}
	if cp != "" {
		opts = append(opts, graph.FromCheckpoint(cp))
	}
	id, err := wf.UpdateState(r.Context(), key, req.AsNode, writes, opts...)
	switch {
	case errors.Is(err, graph.ErrUnknownNode):
		writeError(w, fieldErrorf(CodeInvalidField, "as_node", "field \"as_node\": workflow %q has no node %q", th.Workflow, req.AsNode))
		return
	case errors.Is(err, graph.ErrNotFound) && cp != "":
		writeError(w, errorf(http.StatusNotFound, CodeUnknownCheckpt, "thread %q has no checkpoint %q", th.ID, cp))
		return
	case errors.Is(err, graph.ErrNotFound):
		writeError(w, errorf(http.StatusConflict, CodeNothingToRun, "thread %q has not run yet: there is no state to update", th.ID))
		return
	case err != nil:
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"checkpoint": lgCheckpoint{ThreadID: th.ID, CheckpointID: id}})
}

type lgHistoryRequest struct {
	Limit      int              `json:"limit"`
	Before     json.RawMessage  `json:"before"`
	Metadata   map[string]any   `json:"metadata"`
	Checkpoint *lgCheckpointRef `json:"checkpoint"`
	Select     []string         `json:"select"`
}

// lgHistory answers the thread's checkpoints, newest first (POST with a
// body, or GET with ?limit=).
func (s *Server) lgHistory(w http.ResponseWriter, r *http.Request) {
	req := lgHistoryRequest{Limit: 10}
	if r.Method == http.MethodPost {
		if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
			writeError(w, e)
			return
		}
	} else {
		n, e := queryInt(r, "limit", 10, 1, maxHistory)
		if e != nil {
			writeError(w, e)
			return
		}
		req.Limit = n
	}
	if req.Limit < 1 || req.Limit > maxHistory {
		writeError(w, fieldErrorf(CodeInvalidField, "limit", "field \"limit\" must be from 1 to %d, not %d", maxHistory, req.Limit))
		return
	}
	before := ""
	if len(req.Before) > 0 && string(req.Before) != "null" {
		var ref struct {
			Configurable lgCheckpointRef `json:"configurable"`
		}
		if err := json.Unmarshal(req.Before, &before); err != nil {
			if err := json.Unmarshal(req.Before, &ref); err != nil || ref.Configurable.CheckpointID == "" {
				writeError(w, fieldErrorf(CodeInvalidField, "before", "field \"before\" must be a checkpoint id or {\"configurable\": {\"checkpoint_id\": ...}}"))
				return
			}
			before = ref.Configurable.CheckpointID
		}
	}
	th, wf, ok := s.platformThread(w, r)
	if !ok {
		return
	}
	out := []lgState{}
	if wf == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	limit := req.Limit
	if before != "" {
		limit = maxHistory
	}
	snaps, err := wf.History(r.Context(), threadKey(ownerFrom(r.Context()), th.ID), graph.WithSaver(s.saver), graph.HistoryLimit(limit))
	if err != nil && !errors.Is(err, graph.ErrNotFound) {
		writeError(w, s.internal(r, err))
		return
	}
	if before != "" {
		i := slices.IndexFunc(snaps, func(sn graph.Snapshot) bool { return sn.Checkpoint == before })
		if i < 0 {
			writeError(w, errorf(http.StatusNotFound, CodeUnknownCheckpt, "thread %q has no checkpoint %q among its newest %d", th.ID, before, maxHistory))
			return
		}
		snaps = snaps[i+1:]
	}
	for _, sn := range snaps {
		if len(out) == req.Limit {
			break
		}
		v, err := stateView(th.ID, sn)
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		if !metadataMatches(v.Metadata, req.Metadata) {
			continue
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, out)
}

// maxCopyCheckpoints bounds the checkpoints a copy of a thread takes.
const maxCopyCheckpoints = 10000

// lgCopyThread copies the thread — its record and the checkpoints of its
// root graph, with their blobs and task records — to a new thread id.
// The checkpoints of subgraph runs are not copied: a copy answers state
// and history, and runs on from its newest checkpoint.
func (s *Server) lgCopyThread(w http.ResponseWriter, r *http.Request) {
	th, wf, ok := s.platformThread(w, r)
	if !ok {
		return
	}
	owner := ownerFrom(r.Context())
	if e := s.storageQuota(owner); e != nil {
		writeError(w, e)
		return
	}
	cp := th
	cp.ID, cp.CreatedAt = newID(), time.Now().UTC().Truncate(time.Microsecond)
	if err := s.storeThread(r.Context(), owner, cp); err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	if wf != nil {
		if err := s.copyCheckpoints(r.Context(), wf, threadKey(owner, th.ID), threadKey(owner, cp.ID)); err != nil {
			_ = s.saver.DeleteThread(context.WithoutCancel(r.Context()), threadKey(owner, cp.ID))
			writeError(w, s.internal(r, err))
			return
		}
	}
	s.writeThread(w, r, cp)
}

func (s *Server) copyCheckpoints(ctx context.Context, wf *graph.Runnable, from, to string) error {
	recs, err := s.saver.ListCheckpoints(ctx, from, "", graph.ListOptions{Limit: maxCopyCheckpoints + 1})
	if err != nil {
		return fmt.Errorf("server: copy thread: %w", err)
	}
	if len(recs) > maxCopyCheckpoints {
		return errorf(http.StatusUnprocessableEntity, CodeInvalidField, "the thread has more than %d checkpoints, too many to copy", maxCopyCheckpoints)
	}
	var names []string
	for _, c := range wf.Channels() {
		names = append(names, c.Name())
	}
	blobs, err := s.saver.Blobs(ctx, from, "", names)
	if err != nil {
		return fmt.Errorf("server: copy thread: %w", err)
	}
	head := ""
	for i, rec := range slices.Backward(recs) {
		rec.Thread, rec.Head = to, head
		var bs []graph.Blob
		if i == len(recs)-1 {
			bs = blobs
		}
		if err := s.saver.PutCheckpoint(ctx, rec, bs); err != nil {
			return fmt.Errorf("server: copy thread: %w", err)
		}
		head = rec.ID
		trs, err := s.saver.TaskRecords(ctx, graph.CheckpointRef{Thread: from, ID: rec.ID})
		if err != nil {
			return fmt.Errorf("server: copy thread: %w", err)
		}
		if len(trs) > 0 {
			if err := s.saver.PutTaskRecords(ctx, graph.CheckpointRef{Thread: to, ID: rec.ID}, trs); err != nil {
				return fmt.Errorf("server: copy thread: %w", err)
			}
		}
	}
	return nil
}
