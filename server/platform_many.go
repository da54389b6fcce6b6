package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"github.com/coorflow/coorflow/graph"
)

// Routes that act on several runs or threads at once: POST /runs/batch
// (runs.createBatch), POST /runs/cancel (runs.cancelMany), POST
// /threads/prune (threads.prune), and GET /runs/{run}/stream
// (runs.joinStream without a thread). Each acts on the caller's runs and
// threads only, through the same run entry as the single-run routes
// (runentry.go): the same admission, cancellation and deletion.

// maxBatch bounds the runs of a batch, the runs a cancel names and the
// threads a prune names.
const maxBatch = 100

// lgBatchRuns starts a batch of stateless background runs, each as POST
// /runs would. Every run of the batch is checked first (a bad one refuses
// the whole batch, naming it: [i]); then they are admitted in order, each
// in the same step as a single run is, until one is refused: the answer
// lists the runs admitted, and says in X-Coorflow-Batch-Refused how many
// were not and why. When the first is refused, the answer is its error.
func (s *Server) lgBatchRuns(w http.ResponseWriter, r *http.Request) {
	items, e := batchItems(w, r, s.cfg.MaxBodyBytes)
	if e != nil {
		writeError(w, e)
		return
	}
	prepared := make([]*run, 0, len(items))
	drop := func(rest []*run) {
		for _, ru := range rest {
			s.dropPrepared(context.WithoutCancel(r.Context()), ru)
		}
	}
	for i, item := range items {
		req, e := decodeBatchRun(item, i)
		if e == nil {
			e = statelessChecks(&req)
		}
		if e != nil {
			drop(prepared)
			writeError(w, inBatch(e, i))
			return
		}
		ri := r.Clone(r.Context())
		ri.SetPathValue("thread", newID())
		ru, err := s.prepareRun(ri, req, req.OnCompletion != "keep")
		if err != nil {
			drop(prepared)
			var ae *apiError
			if errors.As(err, &ae) {
				err = inBatch(ae, i)
			}
			writeError(w, s.internal(r, err))
			return
		}
		prepared = append(prepared, ru)
	}
	out := make([]lgRun, 0, len(prepared))
	for i, ru := range prepared {
		p, err := s.startPrepared(r.Context(), ru)
		if err == nil {
			err = s.awaitStart(r.Context(), p, false)
		}
		var v Run
		if err == nil {
			v, err = s.view(r.Context(), p, false)
		}
		if err != nil && i == 0 {
			drop(prepared[1:])
			s.writeFailure(w, r, err)
			return
		}
		if err != nil {
			drop(prepared[i+1:])
			w.Header().Set("X-Coorflow-Batch-Refused", fmt.Sprintf("%d of %d runs: %s", len(prepared)-i, len(prepared), headerText(err)))
			break
		}
		out = append(out, lgRunOf(v, p.platform))
	}
	writeJSON(w, http.StatusOK, out)
}

// headerText is err's message as one header line.
func headerText(err error) string {
	var ae *apiError
	msg := err.Error()
	if errors.As(err, &ae) {
		msg = ae.Code + ": " + ae.Message
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > unicode.MaxASCII {
			return ' '
		}
		return r
	}, msg)
}

// inBatch is e about run i of a batch: its field and message name it.
func inBatch(e *apiError, i int) *apiError {
	c := *e
	c.Message = fmt.Sprintf("run [%d] of the batch: %s", i, e.Message)
	if c.Field != "" {
		c.Field = fmt.Sprintf("[%d].%s", i, c.Field)
	}
	return &c
}

// batchItems reads a batch: a JSON list of 1 to maxBatch run requests.
func batchItems(w http.ResponseWriter, r *http.Request, limit int64) ([]json.RawMessage, *apiError) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, errorf(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body is larger than %d bytes", tooLarge.Limit)
	case err != nil:
		return nil, errorf(http.StatusBadRequest, CodeMalformedJSON, "read request body: %v", err)
	}
	var items []json.RawMessage
	if err := strictUnmarshal(data, &items); err != nil || items == nil {
		return nil, errorf(http.StatusBadRequest, CodeMalformedJSON, "request body must be a JSON list of runs (each as POST /runs takes it)")
	}
	if len(items) == 0 || len(items) > maxBatch {
		return nil, errorf(http.StatusBadRequest, CodeInvalidField, "a batch has 1 to %d runs, not %d", maxBatch, len(items))
	}
	return items, nil
}

// decodeBatchRun reads run i of a batch. The SDK's createBatch sends its
// payload's own names (assistantId, onCompletion...) beside assistant_id:
// a name in camelCase is read as the field of its snake_case name, unless
// that field is there too.
func decodeBatchRun(item json.RawMessage, i int) (lgRunRequest, *apiError) {
	var req lgRunRequest
	var fields map[string]json.RawMessage
	if err := strictUnmarshal(item, &fields); err != nil || fields == nil {
		return req, errorf(http.StatusBadRequest, CodeMalformedJSON, "run [%d] of the batch must be a JSON object", i)
	}
	known := jsonFields(reflect.TypeOf(req))
	snake := make(map[string]json.RawMessage, len(fields))
	for _, name := range sortedKeys(fields) {
		to := name
		if !slices.Contains(known, name) {
			to = snakeCase(name)
		}
		switch {
		case !slices.Contains(known, to):
			return req, fieldErrorf(CodeUnknownField, name, "unknown field %q (a run takes %s)", name, strings.Join(known, ", "))
		case to != name && fields[to] != nil:
			continue // the SDK sends assistantId beside assistant_id
		}
		snake[to] = fields[name]
	}
	data, _ := json.Marshal(snake)
	if err := json.Unmarshal(data, &req); err != nil {
		return req, jsonError(err, "run")
	}
	return req, nil
}

// snakeCase is name in snake_case: assistantId is assistant_id.
func snakeCase(name string) string {
	var b strings.Builder
	for _, r := range name {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// runByID finds the owner's run id, whatever its thread (runAt); another
// owner's run is unknown.
func (s *Server) runByID(ctx context.Context, owner, id string) (*placed, error) {
	unknown := errorf(http.StatusNotFound, CodeUnknownRun, "unknown run %q", id)
	var thread string
	if s.cfg.Replicas == nil {
		ru := s.lookup(id)
		if ru == nil || ru.owner != owner {
			return nil, unknown
		}
		thread = ru.thread
	} else {
		sr, err := s.cfg.Replicas.Run(ctx, id)
		switch {
		case errors.Is(err, graph.ErrNotFound):
			return nil, unknown
		case err != nil:
			return nil, err
		}
		var ok bool
		if thread, ok = strings.CutPrefix(sr.Key, threadKey(owner, "")); !ok {
			return nil, unknown
		}
	}
	return s.runAt(ctx, owner, thread, id)
}

// lgRunStream streams a run named by its id alone (runs.joinStream with
// no thread), as GET /threads/{thread}/runs/{run}/stream does.
func (s *Server) lgRunStream(w http.ResponseWriter, r *http.Request) {
	p, err := s.runByID(r.Context(), ownerFrom(r.Context()), r.PathValue("run"))
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	r.SetPathValue("thread", p.thread)
	s.lgJoinStream(w, r)
}

// lgCancelRunsRequest is the body of POST /runs/cancel.
type lgCancelRunsRequest struct {
	ThreadID string   `json:"thread_id"`
	RunIDs   []string `json:"run_ids"`
	Status   string   `json:"status"`
}

// lgCancelRuns cancels several of the caller's runs (?action=interrupt or
// rollback, as a single cancel): those of run_ids (on thread_id when it is
// given), or those of status (pending, running or all) on thread_id, or
// on every thread of the caller's without it. Every run named is found
// before any is cancelled; a run that has already ended is left as it is.
func (s *Server) lgCancelRuns(w http.ResponseWriter, r *http.Request) {
	var req lgCancelRunsRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	action, _, e := cancelQuery(r)
	if e != nil {
		writeError(w, e)
		return
	}
	targets, err := s.cancelTargets(r.Context(), ownerFrom(r.Context()), req)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	for _, p := range targets {
		if _, err := s.stopRun(r.Context(), p, action, false); err != nil {
			writeError(w, s.internal(r, err))
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// cancelTargets finds the runs a POST /runs/cancel names.
func (s *Server) cancelTargets(ctx context.Context, owner string, req lgCancelRunsRequest) ([]*placed, error) {
	switch {
	case len(req.RunIDs) == 0 && req.Status == "":
		return nil, fieldErrorf(CodeInvalidField, "run_ids", "send \"run_ids\" (the runs to cancel, with or without \"thread_id\") or \"status\" (pending, running or all)")
	case len(req.RunIDs) > 0 && req.Status != "":
		return nil, fieldErrorf(CodeInvalidField, "status", "send \"run_ids\" or \"status\", not both")
	case len(req.RunIDs) > maxBatch:
		return nil, fieldErrorf(CodeInvalidField, "run_ids", "field \"run_ids\" names at most %d runs, not %d", maxBatch, len(req.RunIDs))
	}
	var out []*placed
	if len(req.RunIDs) > 0 {
		for _, id := range req.RunIDs {
			var p *placed
			var err error
			if req.ThreadID != "" {
				p, err = s.runAt(ctx, owner, req.ThreadID, id)
			} else {
				p, err = s.runByID(ctx, owner, id)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
		return out, nil
	}
	want := map[string][]string{"pending": {StatusQueued}, "running": {StatusRunning}, "all": {StatusQueued, StatusRunning}}[req.Status]
	if want == nil {
		return nil, fieldErrorf(CodeInvalidField, "status", "field \"status\" must be pending, running or all, not %q", req.Status)
	}
	var ids []string
	switch {
	case req.ThreadID != "":
		if _, _, err := s.threadRecord(ctx, owner, req.ThreadID); err != nil {
			return nil, err
		}
		runs, _, err := s.runsOn(ctx, threadKey(owner, req.ThreadID))
		if err != nil {
			return nil, err
		}
		for _, v := range runs {
			if slices.Contains(want, v.Status) {
				ids = append(ids, v.ID)
			}
		}
	case s.cfg.Replicas != nil:
		return nil, fieldErrorf(CodeInvalidField, "thread_id", "with replicas, \"status\" cancels the runs of one thread: send \"thread_id\" too (the replicas share runs by thread, not by owner)")
	default:
		for _, h := range s.manager.All() {
			if ru := runOf(h); ru.owner == owner && slices.Contains(want, ru.view().Status) {
				ids = append(ids, ru.id)
			}
		}
	}
	for _, id := range ids {
		p, err := s.runByID(ctx, owner, id)
		if err != nil {
			continue // it ended and was forgotten meanwhile
		}
		out = append(out, p)
	}
	return out, nil
}

// lgPruneRequest is the body of POST /threads/prune.
type lgPruneRequest struct {
	ThreadIDs []string `json:"thread_ids"`
	Strategy  string   `json:"strategy"`
}

// lgPruneThreads deletes the caller's threads of thread_ids, each as
// DELETE /threads/{thread_id} does, and answers how many it deleted: a
// thread the caller does not have is not counted, a thread with a run in
// progress stops the prune with 409 (those before it are deleted).
// Strategy keep_latest is refused: coorflow's savers cannot delete some
// checkpoints of a thread and keep the others.
func (s *Server) lgPruneThreads(w http.ResponseWriter, r *http.Request) {
	var req lgPruneRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case req.Strategy == "keep_latest":
		writeError(w, fieldErrorf(CodeInvalidField, "strategy", "strategy \"keep_latest\" is not served: coorflow's checkpoint savers cannot delete a thread's older checkpoints and keep its newest (graph.Saver deletes a thread whole); prune with \"delete\""))
		return
	case req.Strategy != "" && req.Strategy != "delete":
		writeError(w, fieldErrorf(CodeInvalidField, "strategy", "field \"strategy\" must be delete, not %q", req.Strategy))
		return
	case len(req.ThreadIDs) > maxBatch:
		writeError(w, fieldErrorf(CodeInvalidField, "thread_ids", "field \"thread_ids\" names at most %d threads, not %d", maxBatch, len(req.ThreadIDs)))
		return
	}
	owner, pruned := ownerFrom(r.Context()), 0
	for _, id := range req.ThreadIDs {
		err := s.deleteThread(r.Context(), owner, id)
		var ae *apiError
		switch {
		case errors.As(err, &ae) && ae.Code == CodeUnknownThread:
			continue
		case err != nil:
			writeError(w, s.internal(r, err))
			return
		}
		pruned++
	}
	writeJSON(w, http.StatusOK, map[string]int{"pruned_count": pruned})
}
