package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/coorflow/coorflow/runs"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// ThreadRecordNS is the Saver namespace of the server's record of a
// thread, under the thread's key: the thread exists while the namespace
// has a checkpoint, which holds its workflow and metadata (Replicas.Enqueue
// admits runs only then). The engine's namespaces never start with '#'.
const ThreadRecordNS = "#coorflow-server"

// threadNS is ThreadRecordNS.
const threadNS = ThreadRecordNS

const threadRecordID = "thread"

// Thread is a thread as the API shows it.
type Thread struct {
	ID        string         `json:"thread_id"`
	Workflow  string         `json:"workflow"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	// ActiveRun is the run in progress on the thread, if any; Queued
	// counts the runs waiting for it.
	ActiveRun string `json:"active_run,omitempty"`
	Queued    int    `json:"queued,omitempty"`
}

var threadIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

type createThreadRequest struct {
	Workflow string         `json:"workflow"`
	ThreadID string         `json:"thread_id"`
	Metadata map[string]any `json:"metadata"`
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Server) handleCreateThread(w http.ResponseWriter, r *http.Request) {
	var req createThreadRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case req.Workflow == "":
		writeError(w, fieldErrorf(CodeInvalidField, "workflow", "field \"workflow\" is required: name one of GET /v1/workflows"))
		return
	case req.ThreadID != "" && !threadIDPattern.MatchString(req.ThreadID):
		writeError(w, fieldErrorf(CodeInvalidField, "thread_id",
			"field \"thread_id\" must be 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit"))
		return
	}
	if _, ok := s.cfg.Workflows[req.Workflow]; !ok {
		writeError(w, unknownWorkflow(req.Workflow))
		return
	}
	if e := s.storageQuota(ownerFrom(r.Context())); e != nil {
		writeError(w, e)
		return
	}
	th := Thread{ID: req.ThreadID, Workflow: req.Workflow, Metadata: req.Metadata, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	if th.ID == "" {
		th.ID = newID()
	}
	if e := s.storeThread(r.Context(), ownerFrom(r.Context()), th); e != nil {
		writeError(w, s.internal(r, e))
		return
	}
	w.Header().Set("Location", "/v1/threads/"+th.ID)
	writeJSON(w, http.StatusCreated, th)
}

func unknownWorkflow(name string) *apiError {
	return errorf(http.StatusNotFound, CodeUnknownWorkflow, "unknown workflow %q: GET /v1/workflows lists them", name)
}

func unknownThread(id string) *apiError {
	return errorf(http.StatusNotFound, CodeUnknownThread, "unknown thread %q", id)
}

// storeThread writes the thread's record; an id in use is a 409.
func (s *Server) storeThread(ctx context.Context, owner string, th Thread) error {
	key := threadKey(owner, th.ID)
	exists := func() (bool, error) {
		_, err := s.saver.GetCheckpoint(ctx, graph.CheckpointRef{Thread: key, NS: threadNS})
		if errors.Is(err, graph.ErrNotFound) {
			// A thread made outside the server (its checkpoints only) is
			// taken too.
			_, err = s.saver.GetCheckpoint(ctx, graph.CheckpointRef{Thread: key})
		}
		if errors.Is(err, graph.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	taken := errorf(http.StatusConflict, CodeThreadExists, "thread %q already exists", th.ID)
	if ok, err := exists(); ok || err != nil {
		if ok {
			return taken
		}
		return fmt.Errorf("server: create thread %q: %w", th.ID, err)
	}
	meta, err := json.Marshal(th)
	if err != nil {
		return fieldErrorf(CodeInvalidField, "metadata", "field \"metadata\" cannot be stored: %v", err)
	}
	rec := graph.CheckpointRecord{Thread: key, NS: threadNS, ID: threadRecordID, Source: "server", Created: th.CreatedAt, Meta: meta}
	if err := s.saver.PutCheckpoint(ctx, rec, nil); err != nil {
		if ok, _ := exists(); ok { // created at the same moment by another request
			return taken
		}
		return fmt.Errorf("server: create thread %q: %w", th.ID, err)
	}
	return nil
}

// threadRecord reads the owner's thread id and the id of its newest
// record; a thread that does not exist, or is another owner's, is a 404.
// A thread's record changes (its metadata, the workflow a Platform run
// binds it to) by a new checkpoint in threadNS after the previous one.
func (s *Server) threadRecord(ctx context.Context, owner, id string) (Thread, string, error) {
	rec, err := s.saver.GetCheckpoint(ctx, graph.CheckpointRef{Thread: threadKey(owner, id), NS: threadNS})
	if errors.Is(err, graph.ErrNotFound) {
		return Thread{}, "", unknownThread(id)
	}
	if err != nil {
		return Thread{}, "", fmt.Errorf("server: read thread %q: %w", id, err)
	}
	var th Thread
	if err := json.Unmarshal(rec.Meta, &th); err != nil {
		return Thread{}, "", fmt.Errorf("server: thread %q has a corrupt record: %w", id, err)
	}
	return th, rec.ID, nil
}

// updateThread stores th as the thread's record in place of the record
// head; a concurrent change of the record is a 409.
func (s *Server) updateThread(ctx context.Context, owner string, th Thread, head string) error {
	meta, err := json.Marshal(th)
	if err != nil {
		return fieldErrorf(CodeInvalidField, "metadata", "field \"metadata\" cannot be stored: %v", err)
	}
	rec := graph.CheckpointRecord{Thread: threadKey(owner, th.ID), NS: threadNS, ID: newID(), ParentID: head, Head: head,
		Source: "server", Created: time.Now().UTC(), Meta: meta}
	if err := s.saver.PutCheckpoint(ctx, rec, nil); err != nil {
		var conflict *graph.CheckpointConflictError
		if errors.As(err, &conflict) {
			return errorf(http.StatusConflict, CodeThreadBusy, "thread %q was changed by another request at the same time: try again", th.ID)
		}
		return fmt.Errorf("server: update thread %q: %w", th.ID, err)
	}
	return nil
}

// loadThread reads the owner's thread id, with its workflow; a thread that
// does not exist, or is another owner's, is a 404.
func (s *Server) loadThread(ctx context.Context, owner, id string) (Thread, *graph.Runnable, error) {
	th, _, err := s.threadRecord(ctx, owner, id)
	if err != nil {
		return th, nil, err
	}
	if th.Workflow == "" {
		return th, nil, errorf(http.StatusConflict, CodeNoWorkflow, "thread %q has no workflow yet: a Platform run (assistant_id) binds it to one", id)
	}
	wf := s.cfg.Workflows[th.Workflow]
	if wf == nil {
		return th, nil, errorf(http.StatusNotFound, CodeUnknownWorkflow, "thread %q belongs to workflow %q, which this server does not serve", id, th.Workflow)
	}
	return th, wf, nil
}

// threadFor loads the thread the request names, or writes the error and
// returns false.
func (s *Server) threadFor(w http.ResponseWriter, r *http.Request) (Thread, *graph.Runnable, bool) {
	th, wf, err := s.loadThread(r.Context(), ownerFrom(r.Context()), r.PathValue("thread"))
	if err != nil {
		writeError(w, s.internal(r, err))
		return th, nil, false
	}
	return th, wf, true
}

func (s *Server) handleGetThread(w http.ResponseWriter, r *http.Request) {
	th, _, ok := s.threadFor(w, r)
	if !ok {
		return
	}
	var err error
	if th.ActiveRun, th.Queued, _, err = s.activity(r.Context(), threadKey(ownerFrom(r.Context()), th.ID)); err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, th)
}

func (s *Server) handleDeleteThread(w http.ResponseWriter, r *http.Request) {
	if err := s.deleteThread(r.Context(), ownerFrom(r.Context()), r.PathValue("thread")); err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteThread deletes the owner's thread — its record, checkpoints,
// runs, recorded runs and the entry of its OpenAI conversation — once no
// run is in progress or queued on it (409 thread_busy otherwise), on this
// server or any replica. A thread no
// run has bound to a workflow yet is deleted too; an unknown one is a 404.
// Checked idle, the thread stays so until it is deleted: runs asked for
// meanwhile are refused in the step that admits them (409 thread_busy, as
// is another deletion), here and, with replicas, on every replica, whose
// admission also refuses a run on the thread once its record is gone (404).
func (s *Server) deleteThread(ctx context.Context, owner, id string) error {
	th, _, err := s.threadRecord(ctx, owner, id)
	if err != nil {
		return err
	}
	key := threadKey(owner, th.ID)
	if s.cfg.Replicas == nil {
		return deleteRefused(th.ID, s.deleteClosed(ctx, owner, th.ID, key))
	}
	err = s.cfg.Replicas.CloseThread(ctx, owner, key, func(ctx context.Context) error {
		if err := s.forgetShared(ctx, key); err != nil {
			return fmt.Errorf("server: delete thread %q: %w", th.ID, err)
		}
		return s.deleteClosed(ctx, owner, th.ID, key)
	})
	return deleteRefused(th.ID, err)
}

// deleteClosed deletes the thread key, closed to the runs of this
// process meanwhile (runs.Manager.CloseThread: a replica's claim,
// Task.Admitted, is never refused; the replicas close it to theirs). Its
// finished runs are forgotten.
func (s *Server) deleteClosed(ctx context.Context, owner, thread, key string) error {
	reopen, err := s.manager.CloseThread(key)
	if err != nil {
		return err
	}
	defer reopen()
	if err := s.saver.DeleteThread(ctx, key); err != nil {
		return fmt.Errorf("server: delete thread %q: %w", thread, err)
	}
	if err := s.forgetRecordings(ctx, owner, thread); err != nil {
		return fmt.Errorf("server: delete thread %q: %w", thread, err)
	}
	if err := s.forgetConv(ctx, owner, thread); err != nil {
		return fmt.Errorf("server: delete thread %q: %w", thread, err)
	}
	return nil
}

// deleteRefused words the refusal of a deletion of thread: one deleting
// it already (runs.ErrThreadClosed), or a run queued or in progress on it
// (*runs.BusyError), is a 409 thread_busy; other errors pass.
func deleteRefused(thread string, err error) error {
	var busy *runs.BusyError
	switch {
	case errors.Is(err, runs.ErrThreadClosed):
		return threadBeingDeleted(thread)
	case errors.As(err, &busy):
		return errorf(http.StatusConflict, CodeThreadBusy, "thread %q has a run in progress: cancel it first", thread)
	}
	return err
}

// threadBeingDeleted refuses a run, or a deletion, on a thread being
// deleted.
func threadBeingDeleted(thread string) *apiError {
	return errorf(http.StatusConflict, CodeThreadBusy, "thread %q is being deleted: wait for the deletion to end", thread)
}

// Snapshot is a thread's state at one checkpoint, as the API shows it.
type Snapshot struct {
	ThreadID string `json:"thread_id"`
	// Values holds the channel values, by channel name.
	Values     json.RawMessage       `json:"values"`
	Checkpoint string                `json:"checkpoint,omitempty"`
	Parent     string                `json:"parent,omitempty"`
	Step       int                   `json:"step"`
	Source     string                `json:"source,omitempty"`
	Writers    []string              `json:"writers"`
	Next       []string              `json:"next"`
	Interrupts []graph.InterruptInfo `json:"interrupts"`
	CreatedAt  time.Time             `json:"created_at,omitzero"`
}

func snapshotView(thread string, s graph.Snapshot) (Snapshot, error) {
	values, err := json.Marshal(s.State)
	if err != nil {
		return Snapshot{}, fmt.Errorf("server: encode the state of thread %q: %w", thread, err)
	}
	out := Snapshot{
		ThreadID: thread, Values: values, Checkpoint: s.Checkpoint, Parent: s.Parent, Step: s.Step,
		Source: string(s.Source), Writers: s.Writers, Next: s.Next, Interrupts: s.Interrupts, CreatedAt: s.Created,
	}
	if out.Writers == nil {
		out.Writers = []string{}
	}
	if out.Next == nil {
		out.Next = []string{}
	}
	if out.Interrupts == nil {
		out.Interrupts = []graph.InterruptInfo{}
	}
	return out, nil
}

// handleState answers the thread's newest checkpoint (or ?checkpoint=id)
// with its pending interrupts. A thread that never ran has empty values.
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	th, wf, ok := s.threadFor(w, r)
	if !ok {
		return
	}
	opts := []graph.Option{graph.WithSaver(s.saver)}
	cp := r.URL.Query().Get("checkpoint")
	if cp != "" {
		opts = append(opts, graph.FromCheckpoint(cp))
	}
	snap, err := wf.State(r.Context(), threadKey(ownerFrom(r.Context()), th.ID), opts...)
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
	view, err := snapshotView(th.ID, snap)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, view)
}

// History is the body of GET .../history: checkpoints newest first.
type History struct {
	ThreadID    string     `json:"thread_id"`
	Checkpoints []Snapshot `json:"checkpoints"`
}

const maxHistory = 1000

func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	th, wf, ok := s.threadFor(w, r)
	if !ok {
		return
	}
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxHistory {
			writeError(w, fieldErrorf(CodeInvalidQuery, "limit", "query parameter \"limit\" must be an integer from 1 to %d, not %q", maxHistory, v))
			return
		}
		limit = n
	}
	snaps, err := wf.History(r.Context(), threadKey(ownerFrom(r.Context()), th.ID), graph.WithSaver(s.saver), graph.HistoryLimit(limit))
	if err != nil && !errors.Is(err, graph.ErrNotFound) {
		writeError(w, s.internal(r, err))
		return
	}
	out := History{ThreadID: th.ID, Checkpoints: make([]Snapshot, len(snaps))}
	for i, sn := range snaps {
		if out.Checkpoints[i], err = snapshotView(th.ID, sn); err != nil {
			writeError(w, s.internal(r, err))
			return
		}
	}
	writeJSON(w, http.StatusOK, out)
}
