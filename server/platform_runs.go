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

// platformRun is what a Platform API request adds to a run.
type platformRun struct {
	// req is the request as the client sent it: the run's views show its
	// fields, and the replicas share it (storedRequest).
	req       lgRunRequest
	strategy  string
	modes     []string
	subgraphs bool
	webhook   string
	// opts are the run's graph options (interrupt_before, interrupt_after).
	opts []graph.Option
	// ephemeral: a stateless run whose thread is deleted when it ends
	// (on_completion "delete"); final holds the thread's state just
	// before, which its waiters are answered with (guarded by run.mu).
	ephemeral bool
	final     *graph.Snapshot
}

// lgRun is a run as the Platform shows it.
type lgRun struct {
	RunID       string    `json:"run_id"`
	ThreadID    string    `json:"thread_id"`
	AssistantID string    `json:"assistant_id"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// Status is pending, running, success (also a run that paused on an
	// interrupt: its thread is interrupted), error, timeout or interrupted
	// (a cancelled run), as LangGraph's server says.
	Status            string         `json:"status"`
	Metadata          map[string]any `json:"metadata"`
	MultitaskStrategy string         `json:"multitask_strategy"`
	Kwargs            map[string]any `json:"kwargs"`
}

// lgStatus is the Platform's name of a run status. A run that paused on
// an interrupt ended well: LangGraph's server says success (the thread
// says interrupted) and keeps interrupted for a cancelled run, so a
// client tells the two apart by the run's status.
func lgStatus(st string) string {
	switch st {
	case StatusQueued:
		return "pending"
	case StatusDone, StatusInterrupted:
		return "success"
	case StatusCancelled:
		return "interrupted"
	}
	return st // running, error
}

// lgRunOf is the run v as the Platform shows it, with the fields of the
// Platform request req that started it (nil: a /v1 run).
func lgRunOf(v Run, req *lgRunRequest) lgRun {
	out := lgRun{RunID: v.ID, ThreadID: v.ThreadID, AssistantID: v.Workflow, CreatedAt: v.CreatedAt, UpdatedAt: v.CreatedAt,
		Status: lgStatus(v.Status), Metadata: map[string]any{}, MultitaskStrategy: "reject", Kwargs: map[string]any{}}
	if v.EndedAt != nil {
		out.UpdatedAt = *v.EndedAt
	} else if v.StartedAt != nil {
		out.UpdatedAt = *v.StartedAt
	}
	if req == nil {
		return out
	}
	out.AssistantID = req.AssistantID
	if req.MultitaskStrategy != "" {
		out.MultitaskStrategy = req.MultitaskStrategy
	}
	if req.Metadata != nil {
		out.Metadata = req.Metadata
	}
	if len(req.Input) > 0 && string(req.Input) != "null" {
		out.Kwargs["input"] = req.Input
	}
	if req.Command != nil {
		out.Kwargs["command"] = req.Command
	}
	if len(req.Config) > 0 && string(req.Config) != "null" {
		out.Kwargs["config"] = req.Config
	}
	if len(req.Context) > 0 && string(req.Context) != "null" {
		out.Kwargs["context"] = req.Context
	}
	out.Kwargs["stream_mode"], _ = parseModes(req.StreamMode, "stream_mode")
	return out
}

// lgCommand is a run's Command: resume answers the pending interrupts.
type lgCommand struct {
	Resume json.RawMessage `json:"resume"`
	Update json.RawMessage `json:"update"`
	Goto   json.RawMessage `json:"goto"`
}

// lgRunRequest is the body of the Platform's run creation, every field the
// SDK sends.
type lgRunRequest struct {
	AssistantID       string           `json:"assistant_id"`
	Input             json.RawMessage  `json:"input"`
	Command           *lgCommand       `json:"command"`
	Config            json.RawMessage  `json:"config"`
	Context           json.RawMessage  `json:"context"`
	Metadata          map[string]any   `json:"metadata"`
	StreamMode        json.RawMessage  `json:"stream_mode"`
	StreamSubgraphs   bool             `json:"stream_subgraphs"`
	StreamResumable   bool             `json:"stream_resumable"`
	FeedbackKeys      []string         `json:"feedback_keys"`
	InterruptBefore   json.RawMessage  `json:"interrupt_before"`
	InterruptAfter    json.RawMessage  `json:"interrupt_after"`
	Checkpoint        *lgCheckpointRef `json:"checkpoint"`
	CheckpointID      string           `json:"checkpoint_id"`
	Webhook           string           `json:"webhook"`
	StrictResume      bool             `json:"strict_resume"`
	MultitaskStrategy string           `json:"multitask_strategy"`
	OnCompletion      string           `json:"on_completion"`
	OnDisconnect      string           `json:"on_disconnect"`
	AfterSeconds      float64          `json:"after_seconds"`
	IfNotExists       string           `json:"if_not_exists"`
	CheckpointDuring  *bool            `json:"checkpoint_during"`
	Durability        string           `json:"durability"`
	LangsmithTracer   json.RawMessage  `json:"langsmith_tracer"`
	// pin is the assistant the run starts with (resolveAssistant); a
	// shared run carries it in storedRequest.Assistant.
	pin *assistantPin
}

// streamModes are the Platform's stream modes coorflow serves.
var streamModes = []string{"values", "updates", "messages", "messages-tuple", "custom", "events", "debug", "tasks", "checkpoints"}

// parseModes reads a stream_mode: a string or a list of them.
func parseModes(raw json.RawMessage, field string) ([]string, *apiError) {
	var modes []string
	if len(raw) == 0 || string(raw) == "null" {
		return []string{"values"}, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		modes = []string{one}
	} else if err := json.Unmarshal(raw, &modes); err != nil {
		return nil, fieldErrorf(CodeInvalidField, field, "field %q must be a stream mode or a list of them", field)
	}
	for _, m := range modes {
		if !slices.Contains(streamModes, m) {
			return nil, fieldErrorf(CodeInvalidField, field, "unknown stream mode %q (served: %s)", m, strings.Join(streamModes, ", "))
		}
	}
	if len(modes) == 0 {
		modes = []string{"values"}
	}
	return modes, nil
}

// nodeList reads interrupt_before/after: "*" or a list of node names.
func nodeList(wf *graph.Runnable, raw json.RawMessage, field string) ([]string, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var all string
	if json.Unmarshal(raw, &all) == nil && all == "*" {
		return wf.Nodes(), nil
	}
	var nodes []string
	if err := json.Unmarshal(raw, &nodes); err != nil {
		return nil, fieldErrorf(CodeInvalidField, field, "field %q must be \"*\" or a list of node names", field)
	}
	for _, n := range nodes {
		if !slices.Contains(wf.Nodes(), n) {
			return nil, fieldErrorf(CodeInvalidField, field, "field %q: the workflow has no node %q (nodes: %s)", field, n, strings.Join(wf.Nodes(), ", "))
		}
	}
	return nodes, nil
}

// lgCreateRun starts a run the Platform's way: in the background, waiting
// for its values, or streaming its events in the requested modes.
func (s *Server) lgCreateRun(mode runMode) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req lgRunRequest
		if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
			writeError(w, e)
			return
		}
		s.lgStartRun(w, r, mode, req, false)
	}
}

// lgStartRun starts the run req asks for on the thread of r's path; an
// ephemeral run (a stateless one, platform_stateless.go) deletes its
// thread when it ends, or at once when it is refused.
func (s *Server) lgStartRun(w http.ResponseWriter, r *http.Request, mode runMode, req lgRunRequest, ephemeral bool) {
	ru, err := s.prepareRun(r, req, ephemeral)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	if mode == modeStream {
		ru.events.attach()
		defer ru.events.detach()
	}
	p, err := s.startPrepared(r.Context(), ru)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	if err := s.awaitStart(r.Context(), p, mode == modeWait); err != nil {
		s.writeFailure(w, r, err) // the client left: the run goes on
		return
	}
	loc := "/threads/" + ru.thread + "/runs/" + ru.id
	w.Header().Set("Content-Location", loc)
	switch mode {
	case modeBackground:
		v, err := s.view(r.Context(), p, false)
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		writeJSON(w, http.StatusOK, lgRunOf(v, p.platform))
	case modeWait:
		s.writeResult(w, r, p)
	case modeStream:
		w.Header().Set("Location", loc+"/stream")
		s.serve(w, r, p, 0, newPlatformFormat(ru.wf, ru.id, ru.thread, ru.platform.modes, ru.platform.subgraphs))
		if req.OnDisconnect == "cancel" && r.Context().Err() != nil {
			s.cancelLeft(r, p)
		}
	}
}

// prepareRun makes the run req asks for on the thread of r's path,
// checked and not yet started: startPrepared starts it, dropPrepared
// forgets it. An ephemeral run's thread is made for it; a refused one
// leaves none.
func (s *Server) prepareRun(r *http.Request, req lgRunRequest, ephemeral bool) (*run, error) {
	pin, err := s.resolveAssistant(r.Context(), ownerFrom(r.Context()), req.AssistantID)
	if err != nil {
		return nil, err
	}
	req.pin = pin
	th, wf, err := s.runThread(r, req)
	if err != nil {
		if ephemeral && wf != nil {
			s.dropEphemeral(r.Context(), ownerFrom(r.Context()), th.ID)
		}
		return nil, err
	}
	ru, err := s.platformRunFor(r, th, wf, req)
	if err != nil {
		if ephemeral {
			s.dropEphemeral(r.Context(), ownerFrom(r.Context()), th.ID)
		}
		return nil, err
	}
	ru.platform.ephemeral = ephemeral
	return ru, nil
}

// startPrepared starts the run prepareRun made (start); an ephemeral run
// that is refused has its thread deleted.
func (s *Server) startPrepared(ctx context.Context, ru *run) (*placed, error) {
	ephemeral := ru.platform.ephemeral
	p, err := s.start(ctx, ru, storedRequest{Platform: &ru.platform.req, Ephemeral: ephemeral})
	if err != nil && ephemeral {
		// Refused: it never ran, and no run will delete its thread.
		s.dropEphemeral(ctx, ru.owner, ru.thread)
	}
	return p, err
}

// dropPrepared forgets a run prepareRun made that will not start.
func (s *Server) dropPrepared(ctx context.Context, ru *run) {
	if ru.platform.ephemeral {
		s.dropEphemeral(ctx, ru.owner, ru.thread)
	}
	ru.cancel(nil)
}

// runThread loads the run's thread, creating it when if_not_exists asks,
// and binds it to the run's assistant when no run has yet.
func (s *Server) runThread(r *http.Request, req lgRunRequest) (Thread, *graph.Runnable, error) {
	owner, id := ownerFrom(r.Context()), r.PathValue("thread")
	graphID := req.pin.Graph // the workflow of the run's assistant (lgStartRun)
	wf := s.cfg.Workflows[graphID]
	th, head, err := s.threadRecord(r.Context(), owner, id)
	var ae *apiError
	if errors.As(err, &ae) && ae.Code == CodeUnknownThread && req.IfNotExists == "create" {
		th = Thread{ID: id, Workflow: graphID, CreatedAt: time.Now().UTC().Truncate(time.Microsecond), Metadata: boundBy(nil, req)}
		if !threadIDPattern.MatchString(id) {
			return th, nil, fieldErrorf(CodeInvalidField, "thread_id", "thread id %q must be 1 to 128 letters, digits, '.', '_', ':' or '-'", id)
		}
		if e := s.storageQuota(owner); e != nil {
			return th, nil, e
		}
		return th, wf, s.storeThread(r.Context(), owner, th)
	}
	if err != nil {
		return th, nil, err
	}
	switch th.Workflow {
	case graphID:
	case "":
		th.Workflow, th.Metadata = graphID, boundBy(th.Metadata, req)
		if err := s.updateThread(r.Context(), owner, th, head); err != nil {
			return th, nil, err
		}
	default:
		if graphID != req.AssistantID {
			return th, nil, errorf(http.StatusConflict, CodeWrongWorkflow, "thread %q runs graph %q, not %q (assistant %q's): create another thread for it", th.ID, th.Workflow, graphID, req.AssistantID)
		}
		return th, nil, errorf(http.StatusConflict, CodeWrongWorkflow, "thread %q runs assistant %q, not %q: create another thread for it", th.ID, th.Workflow, req.AssistantID)
	}
	return th, wf, nil
}

// boundBy is the metadata of a thread that the run req binds to its
// graph: a created assistant's id is its assistant_id, as LangGraph's
// server records it (clients list an assistant's threads by it).
func boundBy(md map[string]any, req lgRunRequest) map[string]any {
	if req.pin == nil || req.pin.Graph == req.AssistantID {
		return md
	}
	out := make(map[string]any, len(md)+1)
	for k, v := range md {
		out[k] = v
	}
	out["assistant_id"] = req.AssistantID
	return out
}

// platformRunFor makes the run a Platform request asks for.
func (s *Server) platformRunFor(r *http.Request, th Thread, wf *graph.Runnable, req lgRunRequest) (*run, error) {
	ru := s.newRun(r, th, wf)
	if err := s.setPlatform(r.Context(), ru, req); err != nil {
		ru.cancel(nil)
		return nil, err
	}
	return ru, nil
}

// setPlatform checks a Platform request and sets what it asks of the run
// ru: its input or answers, the checkpoint it starts from, its stream
// modes and multitask strategy. The replica that executes a run another
// took sets it from the same request.
func (s *Server) setPlatform(ctx context.Context, ru *run, req lgRunRequest) error {
	wf := ru.wf
	p := &platformRun{req: req, strategy: req.MultitaskStrategy, subgraphs: req.StreamSubgraphs, webhook: req.Webhook}
	if p.strategy == "" {
		p.strategy = "reject"
	}
	if !slices.Contains([]string{"reject", "enqueue", "interrupt", "rollback"}, p.strategy) {
		return fieldErrorf(CodeInvalidField, "multitask_strategy", "field \"multitask_strategy\" must be reject, enqueue, interrupt or rollback, not %q", p.strategy)
	}
	if req.AfterSeconds > 0 {
		return fieldErrorf(CodeInvalidField, "after_seconds", "field \"after_seconds\" is not supported: start the run when it should run")
	}
	if req.OnDisconnect != "" && req.OnDisconnect != "cancel" && req.OnDisconnect != "continue" {
		return fieldErrorf(CodeInvalidField, "on_disconnect", "field \"on_disconnect\" must be cancel or continue, not %q", req.OnDisconnect)
	}
	var e *apiError
	if p.modes, e = parseModes(req.StreamMode, "stream_mode"); e != nil {
		return e
	}
	if p.webhook != "" {
		if e := s.checkWebhook(p.webhook); e != nil {
			return e
		}
	}
	for _, f := range []struct {
		raw   json.RawMessage
		field string
		opt   func(...string) graph.Option
	}{{req.InterruptBefore, "interrupt_before", graph.InterruptBefore}, {req.InterruptAfter, "interrupt_after", graph.InterruptAfter}} {
		nodes, e := nodeList(wf, f.raw, f.field)
		if e != nil {
			return e
		}
		if len(nodes) > 0 {
			p.opts = append(p.opts, f.opt(nodes...))
		}
	}
	ru.platform = p
	ru.busy = busyRefuse
	if p.strategy != "reject" {
		ru.busy = busyQueue
	}
	if req.Checkpoint != nil {
		ru.from = req.Checkpoint.CheckpointID
	}
	if req.CheckpointID != "" {
		ru.from = req.CheckpointID
	}
	if e := ru.setPlatformConfig(req); e != nil {
		return e
	}
	hasInput := len(req.Input) > 0 && string(req.Input) != "null"
	if hasInput {
		input, e := decodeInput(wf, req.Input)
		if e != nil {
			return e
		}
		ru.input, ru.discard = input, true
	}
	if c := req.Command; c != nil {
		switch {
		case len(c.Update) > 0 && string(c.Update) != "null":
			return fieldErrorf(CodeInvalidField, "command.update", "field \"command.update\" is not supported: update the state first (POST /threads/{thread_id}/state)")
		case len(c.Goto) > 0 && string(c.Goto) != "null":
			return fieldErrorf(CodeInvalidField, "command.goto", "field \"command.goto\" is not supported")
		case len(c.Resume) == 0:
			return fieldErrorf(CodeInvalidField, "command.resume", "field \"command\" needs \"resume\": the answer to the pending interrupts")
		case hasInput:
			return fieldErrorf(CodeInvalidField, "command", "send \"input\" (a new run) or \"command\" (answers to interrupts), not both")
		case ru.from != "":
			return fieldErrorf(CodeInvalidField, "command", "a run from a checkpoint (checkpoint_id) replays it and cannot answer interrupts: fork with POST /threads/{thread_id}/state first")
		}
		if err := s.setResume(ctx, ru, c.Resume); err != nil {
			return err
		}
	}
	return nil
}

// setResume sets the run's answers: an object keyed by the ids of pending
// interrupts answers each; any other value answers the only one.
func (s *Server) setResume(ctx context.Context, ru *run, raw json.RawMessage) error {
	var byID map[string]json.RawMessage
	if json.Unmarshal(raw, &byID) == nil && len(byID) > 0 {
		snap, err := ru.wf.State(ctx, ru.key, graph.WithSaver(s.saver))
		if err != nil && !errors.Is(err, graph.ErrNotFound) {
			return err
		}
		pending := map[string]bool{}
		for _, in := range snap.Interrupts {
			pending[in.ID] = true
		}
		each := true
		for id := range byID {
			each = each && pending[id]
		}
		if each {
			answers := make(map[string]any, len(byID))
			for id, v := range byID {
				answers[id] = v
			}
			ru.resume = graph.ResumeEach(answers)
			return nil
		}
	}
	ru.resume, ru.resumeOne, ru.oneAnswer = graph.Resume(raw), true, raw
	return nil
}

// preempt makes room on the thread for a new run (multitask interrupt or
// rollback): its queued runs and its run in progress are cancelled, as
// LangGraph does; for a rollback they are forgotten too, and the thread is
// put back where the run in progress started.
func (s *Server) preempt(ctx context.Context, key string, rollback bool) error {
	var active *run
	open := s.manager.Thread(key)
	if open.Active != nil {
		active = runOf(open.Active)
	}
	queued := runsOf(open.Queued)
	for _, q := range queued {
		s.cancelRun(q)
		if rollback {
			s.forget(q)
		}
	}
	if active == nil || !s.cancelRun(active) {
		return nil
	}
	timer := time.NewTimer(cancelWait)
	defer timer.Stop()
	select {
	case <-active.done:
	case <-timer.C:
		return errorf(http.StatusConflict, CodeThreadBusy, "run %q did not stop within %s of its cancellation; try again", active.id, cancelWait)
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if rollback {
		return s.rollback(ctx, active)
	}
	return nil
}

// rollback forgets the ended run ru and returns its thread to the
// checkpoint it started from (see rollbackTo).
func (s *Server) rollback(ctx context.Context, ru *run) error {
	s.forget(ru)
	ru.mu.Lock()
	start, checked := ru.startCheckpoint, ru.checked
	ru.mu.Unlock()
	if !checked {
		return nil // it never ran: the thread is as it was
	}
	return s.rollbackTo(ctx, ru.owner, ru.thread, ru.wf, ru.id, start)
}

// rollbackTo returns the owner's thread, which run ran on workflow wf, to
// checkpoint start ("" empties a thread the run created): the
// checkpoints the run stored stay on a branch of the history no run
// continues.
func (s *Server) rollbackTo(ctx context.Context, owner, thread string, wf *graph.Runnable, run, start string) error {
	key := threadKey(owner, thread)
	if start != "" {
		head, err := s.saver.GetCheckpoint(ctx, graph.CheckpointRef{Thread: key})
		if err != nil {
			return fmt.Errorf("server: roll back run %q: %w", run, err)
		}
		if head.ID == start {
			return nil // it stored nothing
		}
		_, err = wf.UpdateState(ctx, key, "", nil, graph.WithSaver(s.saver), graph.FromCheckpoint(start))
		return err
	}
	th, _, err := s.threadRecord(ctx, owner, thread)
	if err != nil {
		return err
	}
	if err := s.saver.DeleteThread(ctx, key); err != nil {
		return fmt.Errorf("server: roll back run %q: %w", run, err)
	}
	return s.storeThread(ctx, owner, th)
}

// writeResult waits until the run has ended and answers it the
// Platform's way: the thread's values, with the pending interrupts under
// "__interrupt__", or {"__error__": {"error", "message"}} for a run that
// failed.
func (s *Server) writeResult(w http.ResponseWriter, r *http.Request, p *placed) {
	v, err := s.awaitEnd(r.Context(), p, 0)
	if err != nil {
		s.writeFailure(w, r, err)
		return
	}
	s.extendWrite(http.NewResponseController(w))
	writeResultOf(w, r, s, v)
}

// writeResultOf answers the ended run v, with its values, as writeResult.
func writeResultOf(w http.ResponseWriter, r *http.Request, s *Server, v Run) {
	if v.Error != nil {
		writeJSON(w, http.StatusOK, map[string]any{"__error__": map[string]string{"error": v.Error.Code, "message": v.Error.Message}})
		return
	}
	out := map[string]json.RawMessage{}
	if len(v.Values) > 0 {
		if err := json.Unmarshal(v.Values, &out); err != nil {
			writeError(w, s.internal(r, fmt.Errorf("server: decode the values of run %q: %w", v.ID, err)))
			return
		}
	}
	if len(v.Interrupts) > 0 {
		ins := make([]lgInterrupt, len(v.Interrupts))
		for i, in := range v.Interrupts {
			ins[i] = lgInterrupt{ID: in.ID, Value: in.Payload}
		}
		out["__interrupt__"], _ = json.Marshal(ins)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) lgGetRun(w http.ResponseWriter, r *http.Request) {
	p, ok := s.placedFor(w, r)
	if !ok {
		return
	}
	v, err := s.view(r.Context(), p, false)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	writeJSON(w, http.StatusOK, lgRunOf(v, p.platform))
}

// lgListRuns lists the runs the server remembers of the thread, newest
// first.
func (s *Server) lgListRuns(w http.ResponseWriter, r *http.Request) {
	th, _, ok := s.platformThread(w, r)
	if !ok {
		return
	}
	limit, e := queryInt(r, "limit", 10, 1, maxPage)
	if e == nil {
		var offset int
		if offset, e = queryInt(r, "offset", 0, 0, 1<<30); e == nil {
			status := r.URL.Query().Get("status")
			all, err := s.lgRuns(r.Context(), threadKey(ownerFrom(r.Context()), th.ID))
			if err != nil {
				writeError(w, s.internal(r, err))
				return
			}
			out := []lgRun{}
			for _, v := range slices.Backward(all) {
				if status == "" || v.Status == status {
					out = append(out, v)
				}
			}
			page, _ := pageOf(out, limit, offset)
			writeJSON(w, http.StatusOK, page)
			return
		}
	}
	writeError(w, e)
}

// lgRuns returns the runs of the thread key that the server remembers, or
// that the replicas share, oldest first.
func (s *Server) lgRuns(ctx context.Context, key string) ([]lgRun, error) {
	runs, reqs, err := s.runsOn(ctx, key)
	out := make([]lgRun, len(runs))
	for i, v := range runs {
		out[i] = lgRunOf(v, reqs[i])
	}
	return out, err
}

// lgDeleteRun forgets a run that has ended.
func (s *Server) lgDeleteRun(w http.ResponseWriter, r *http.Request) {
	p, ok := s.placedFor(w, r)
	if !ok {
		return
	}
	gone, err := s.deleteRun(r.Context(), p)
	switch {
	case errors.Is(err, graph.ErrNotFound):
		writeError(w, errorf(http.StatusNotFound, CodeUnknownRun, "unknown run %q on thread %q", p.id, p.thread))
	case err != nil:
		writeError(w, s.internal(r, err))
	case !gone:
		writeError(w, errorf(http.StatusConflict, CodeThreadBusy, "run %q has not ended: cancel it first", p.id))
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// lgCancelRun cancels a run: ?action=interrupt (default) keeps what it
// did, rollback forgets it and puts the thread back where it started;
// ?wait=1 answers once it has ended.
func (s *Server) lgCancelRun(w http.ResponseWriter, r *http.Request) {
	action, wait, e := cancelQuery(r)
	if e != nil {
		writeError(w, e)
		return
	}
	p, ok := s.placedFor(w, r)
	if !ok {
		return
	}
	live, err := s.stopRun(r.Context(), p, action, wait)
	if err == nil && !live {
		var v Run
		if v, err = s.view(r.Context(), p, false); err == nil {
			e := errorf(http.StatusConflict, CodeRunFinished, "run %q has already ended (%s)", p.id, lgStatus(v.Status))
			e.Run = p.id
			writeError(w, e)
			return
		}
	}
	switch {
	case r.Context().Err() != nil:
	case err != nil:
		writeError(w, s.internal(r, err))
	case !wait && action == "interrupt":
		w.WriteHeader(http.StatusAccepted)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// stopRun cancels the run p, wherever it runs. With wait, or for a
// rollback, it waits until the run has ended (at most cancelWait); a
// rollback then forgets the run and puts its thread back where it
// started. live is false when the run had already ended: nothing was
// done.
func (s *Server) stopRun(ctx context.Context, p *placed, action string, wait bool) (live bool, err error) {
	if action == "rollback" && p.wf == nil {
		return false, notServedHere(p.id, p.workflow) // before the run is cancelled
	}
	if live, err = s.cancel(ctx, p); err != nil || !live {
		return live, err
	}
	if !wait && action == "interrupt" {
		return true, nil
	}
	v, err := s.awaitEnd(ctx, p, cancelWait)
	if err == nil && !ended(v.Status) {
		err = errorf(http.StatusConflict, CodeThreadBusy, "run %q did not stop within %s of its cancellation", p.id, cancelWait)
	}
	if err == nil && action == "rollback" {
		err = s.rollbackPlaced(ctx, p)
	}
	return true, err
}

// cancelQuery reads a cancel's ?action= (interrupt, the default, or
// rollback) and ?wait=.
func cancelQuery(r *http.Request) (action string, wait bool, e *apiError) {
	q := r.URL.Query()
	action, wait = q.Get("action"), q.Get("wait") == "1" || q.Get("wait") == "true"
	if action == "" {
		action = "interrupt"
	}
	if action != "interrupt" && action != "rollback" {
		return "", false, fieldErrorf(CodeInvalidQuery, "action", "query parameter \"action\" must be interrupt or rollback, not %q", action)
	}
	return action, wait, nil
}

// lgJoinRun waits for the run to end and answers its result.
func (s *Server) lgJoinRun(w http.ResponseWriter, r *http.Request) {
	if p, ok := s.placedFor(w, r); ok {
		s.writeResult(w, r, p)
	}
}

// lgJoinStream streams the run's events in the Platform's format, from
// after Last-Event-ID; ?stream_mode= (queryModes) picks the modes, by
// default those the run was started with.
func (s *Server) lgJoinStream(w http.ResponseWriter, r *http.Request) {
	after := int64(0)
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		if _, err := fmt.Sscan(v, &after); err != nil || after < 0 {
			writeError(w, fieldErrorf(CodeInvalidQuery, "Last-Event-ID", "Last-Event-ID must be an event id (an integer >= 0), not %q", v))
			return
		}
	}
	p, ok := s.placedFor(w, r)
	if !ok {
		return
	}
	if p.wf == nil {
		writeError(w, notServedHere(p.id, p.workflow))
		return
	}
	modes, subgraphs, e := joinModes(r, p.platform)
	if e != nil {
		writeError(w, e)
		return
	}
	s.serve(w, r, p, after, newPlatformFormat(p.wf, p.id, p.thread, modes, subgraphs))
	if cancelOnDisconnect(r) {
		s.cancelLeft(r, p)
	}
}

// joinModes are the stream modes of a joined stream: ?stream_mode=
// (queryModes), or those of the request req that started the run (nil: a
// /v1 run, values).
func joinModes(r *http.Request, req *lgRunRequest) (modes []string, subgraphs bool, e *apiError) {
	modes = []string{"values"}
	if req != nil {
		modes, _ = parseModes(req.StreamMode, "stream_mode")
		subgraphs = req.StreamSubgraphs
	}
	if raw := queryModes(r.URL.Query()["stream_mode"]); raw != nil {
		if modes, e = parseModes(raw, "stream_mode"); e != nil {
			return nil, false, e
		}
	}
	return modes, subgraphs, nil
}

// cancelOnDisconnect reports whether a joined stream whose client left
// (?cancel_on_disconnect=) cancels its run.
func cancelOnDisconnect(r *http.Request) bool {
	q := r.URL.Query().Get("cancel_on_disconnect")
	return (q == "1" || q == "true") && r.Context().Err() != nil
}
