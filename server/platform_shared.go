package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/coorflow/coorflow/graph"
)

// The Platform's run routes with Config.Replicas: the same shared runs as
// /v1's (sharedruns.go), created from the Platform's request (stored in
// SharedRun.Request, so that the replica that claims a run sets it up as
// the one that took the request would) and shown and streamed in the
// Platform's shapes.

// lgCreateShared starts the Platform run ru among the replicas and
// answers as mode says. The multitask strategies interrupt and rollback
// first cancel the thread's runs, whichever replica holds them.
func (s *Server) lgCreateShared(w http.ResponseWriter, r *http.Request, mode runMode, ru *run) {
	p := ru.platform
	if p.strategy == "interrupt" || p.strategy == "rollback" {
		if err := s.preemptShared(r.Context(), ru.key, p.strategy == "rollback"); err != nil {
			writeError(w, s.internal(r, err))
			return
		}
	}
	req := p.req
	local, err := s.submitShared(r.Context(), ru, storedRequest{Platform: &req, Assistant: req.pin})
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	if !localStart(w, r, local) {
		return
	}
	loc := "/threads/" + ru.thread + "/runs/" + ru.id
	w.Header().Set("Content-Location", loc)
	switch mode {
	case modeBackground:
		sr, err := s.cfg.Replicas.Run(r.Context(), ru.id)
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		writeJSON(w, http.StatusOK, sr.platformView())
	case modeWait:
		if v, ok := s.waitShared(w, r, ru.id, ru.wf, ru.key, 0); ok {
			writeResultOf(w, r, s, v)
		}
	case modeStream:
		w.Header().Set("Location", loc+"/stream")
		s.serveShared(w, r, ru.id, ru.wf, ru.key, 0, newPlatformFormat(ru.wf, ru.id, ru.thread, p.modes, p.subgraphs))
		if req.OnDisconnect == "cancel" && r.Context().Err() != nil {
			s.cancelLeft(r, ru.id)
		}
	}
}

// cancelLeft asks for run id to stop after its client left; a failure
// is logged.
func (s *Server) cancelLeft(r *http.Request, id string) {
	ctx := context.WithoutCancel(r.Context())
	if _, err := s.cfg.Replicas.Cancel(ctx, id); err != nil {
		s.log.ErrorContext(ctx, "server: cancel a run whose client left", "request_id", requestID(ctx), "run", id, "err", err)
	}
}

// lgJoinShared streams a shared run's events in the Platform's format,
// from after the event id after.
func (s *Server) lgJoinShared(w http.ResponseWriter, r *http.Request, after int64) {
	sr, wf, ok := s.sharedRunFor(w, r)
	if !ok {
		return
	}
	if wf == nil {
		writeError(w, notServedHere(sr.ID, sr.Workflow))
		return
	}
	req, _ := sr.request()
	modes, subgraphs, e := joinModes(r, req.Platform)
	if e != nil {
		writeError(w, e)
		return
	}
	s.serveShared(w, r, sr.ID, wf, sr.Key, after, newPlatformFormat(wf, sr.ID, sr.Thread, modes, subgraphs))
	if cancelOnDisconnect(r) {
		s.cancelLeft(r, sr.ID)
	}
}

// lgCancelShared cancels a shared run, whichever replica runs it, as
// lgCancelRun does.
func (s *Server) lgCancelShared(w http.ResponseWriter, r *http.Request, action string, wait bool) {
	sr, wf, ok := s.sharedRunFor(w, r)
	if !ok {
		return
	}
	if action == "rollback" && wf == nil {
		writeError(w, notServedHere(sr.ID, sr.Workflow)) // before the run is cancelled
		return
	}
	live, err := s.cfg.Replicas.Cancel(r.Context(), sr.ID)
	if err == nil && !live {
		sr, err = s.cfg.Replicas.Run(r.Context(), sr.ID)
		if err == nil {
			e := errorf(http.StatusConflict, CodeRunFinished, "run %q has already ended (%s)", sr.ID, lgStatus(sr.Status))
			e.Run = sr.ID
			writeError(w, e)
			return
		}
	}
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	if !wait && action == "interrupt" {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if sr, err = s.awaitShared(r.Context(), sr.ID, cancelWait); r.Context().Err() != nil {
		return
	}
	if err == nil && !ended(sr.Status) {
		err = errorf(http.StatusConflict, CodeThreadBusy, "run %q did not stop within %s of its cancellation", sr.ID, cancelWait)
	}
	if err == nil && action == "rollback" {
		err = s.rollbackShared(r.Context(), sr, wf)
	}
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// lgDeleteShared forgets a shared run that has ended.
func (s *Server) lgDeleteShared(w http.ResponseWriter, r *http.Request) {
	sr, _, ok := s.sharedRunFor(w, r)
	if !ok {
		return
	}
	gone, err := s.cfg.Replicas.Delete(r.Context(), sr.ID)
	switch {
	case errors.Is(err, graph.ErrNotFound):
		writeError(w, errorf(http.StatusNotFound, CodeUnknownRun, "unknown run %q on thread %q", sr.ID, sr.Thread))
	case err != nil:
		writeError(w, s.internal(r, err))
	case !gone:
		writeError(w, errorf(http.StatusConflict, CodeThreadBusy, "run %q has not ended: cancel it first", sr.ID))
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// preemptShared makes room on the thread key for a new run (multitask
// interrupt or rollback), as preempt does, whichever replicas hold the
// thread's runs: its queued runs and its run in progress are cancelled;
// for a rollback they are forgotten too, and the thread is put back
// where the run in progress started.
func (s *Server) preemptShared(ctx context.Context, key string, rollback bool) error {
	runs, err := s.cfg.Replicas.Activity(ctx, key)
	if err != nil {
		return err
	}
	var open []SharedRun
	for _, sr := range runs {
		if ended(sr.Status) {
			continue
		}
		live, err := s.cfg.Replicas.Cancel(ctx, sr.ID)
		if err != nil {
			return err
		}
		if live { // a run that ended meanwhile is kept, as preempt keeps it
			open = append(open, sr)
		}
	}
	for _, sr := range open {
		cur, err := s.awaitShared(ctx, sr.ID, cancelWait)
		if err != nil {
			return err
		}
		if !ended(cur.Status) {
			return errorf(http.StatusConflict, CodeThreadBusy, "run %q did not stop within %s of its cancellation; try again", sr.ID, cancelWait)
		}
		if rollback {
			if err := s.rollbackShared(ctx, cur, s.cfg.Workflows[cur.Workflow]); err != nil {
				return err
			}
		}
	}
	return nil
}

// rollbackShared forgets the ended shared run sr and returns its thread
// to the checkpoint it started from (rollbackTo).
func (s *Server) rollbackShared(ctx context.Context, sr SharedRun, wf *graph.Runnable) error {
	if sr.Started && wf == nil {
		return notServedHere(sr.ID, sr.Workflow) // before the run is forgotten
	}
	if _, err := s.cfg.Replicas.Delete(ctx, sr.ID); err != nil && !errors.Is(err, graph.ErrNotFound) {
		return err
	}
	if !sr.Started {
		return nil // it never ran: the thread is as it was
	}
	return s.rollbackTo(ctx, sr.Owner, sr.Thread, wf, sr.ID, sr.Base)
}

// notServedHere is the answer about run id of a workflow this replica
// does not serve (another replica does): it cannot read its state.
func notServedHere(id, workflow string) *apiError {
	return errorf(http.StatusNotFound, CodeUnknownWorkflow, "run %q belongs to workflow %q, which this server does not serve", id, workflow)
}

// localStart waits until the run this replica executes (nil when another
// replica does) has got past its start. It writes the error and returns
// false when the run failed before it started; false too when the client
// left (the run goes on).
func localStart(w http.ResponseWriter, r *http.Request, local *run) bool {
	if local == nil {
		return true
	}
	select {
	case <-local.started:
	case <-r.Context().Done():
		return false
	}
	if e := local.earlyError(); e != nil {
		writeError(w, e)
		return false
	}
	return true
}
