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
