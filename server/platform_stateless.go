package server

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/coorflow/coorflow/runs"
	"net/http"

	"github.com/coorflow/coorflow/graph"
)

// Stateless runs (POST /runs, /runs/wait, /runs/stream) run on a thread
// of their own, made for them as a thread run with if_not_exists
// "create" would make it, and admitted the same way (lgStartRun, submit):
// the same quotas hold. As in LangGraph, on_completion "delete" (the
// default) deletes the thread, its checkpoints and its recorded runs when
// the run ends, or at once when the run is refused; "keep" leaves the
// owner an ordinary thread. The thread's id is the run's thread_id, also
// in the answer's Content-Location (/threads/{thread_id}/runs/{run_id}).
// Among replicas (Config.Replicas) the run's shared request says it is
// stateless: the replica that executes it deletes the thread when it
// ends, and stores the values and interrupts the thread had then in the
// shared run (SharedRun.Final), which the waiters on every replica are
// answered with (sharedValues).

// lgStatelessRun starts a stateless run the Platform's way, as
// lgCreateRun does a thread's.
func (s *Server) lgStatelessRun(mode runMode) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req lgRunRequest
		if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
			writeError(w, e)
			return
		}
		if e := statelessChecks(&req); e != nil {
			writeError(w, e)
			return
		}
		r.SetPathValue("thread", newID())
		s.lgStartRun(w, r, mode, req, req.OnCompletion != "keep")
	}
}

// statelessChecks checks a stateless run's request, and sets what makes
// its thread for it (if_not_exists "create"). Its on_completion says
// whether the thread is deleted when the run ends: "delete" (the
// default) or "keep".
func statelessChecks(req *lgRunRequest) *apiError {
	switch req.OnCompletion {
	case "", "delete", "keep":
	default:
		return fieldErrorf(CodeInvalidField, "on_completion", "field \"on_completion\" must be delete or keep, not %q", req.OnCompletion)
	}
	if len(req.Input) == 0 || string(req.Input) == "null" {
		// Its thread is new: there is nothing to continue or answer.
		return fieldErrorf(CodeInvalidField, "input", "field \"input\" is required: a stateless run starts on a new thread")
	}
	req.IfNotExists = "create"
	return nil
}

// endEphemeral deletes the thread of ru, when it is an ephemeral run that
// is ending, keeping first the state its waiters are answered with
// (ephemeralView).
func (s *Server) endEphemeral(ru *run) {
	if ru.platform == nil || !ru.platform.ephemeral {
		return
	}
	ctx := context.WithoutCancel(ru.ctx)
	if snap, err := ru.wf.State(ctx, ru.key, graph.WithSaver(s.saver)); err == nil {
		ru.mu.Lock()
		ru.platform.final = &snap
		ru.mu.Unlock()
	}
	s.dropEphemeral(ctx, ru.owner, ru.thread)
}

// dropEphemeral deletes the owner's ephemeral thread: its record and
// checkpoints, its recorded runs and the entry of its OpenAI
// conversation. A failure is logged: nobody waits on it.
func (s *Server) dropEphemeral(ctx context.Context, owner, thread string) {
	if err := s.saver.DeleteThread(ctx, threadKey(owner, thread)); err != nil {
		s.log.ErrorContext(ctx, "server: delete the thread of a stateless run", "thread", thread, "error", err)
		return
	}
	if err := s.forgetRecordings(ctx, owner, thread); err != nil {
		s.log.ErrorContext(ctx, "server: delete the thread of a stateless run", "thread", thread, "error", err)
	}
	if err := s.forgetConv(ctx, owner, thread); err != nil {
		s.log.ErrorContext(ctx, "server: delete the thread of a stateless run", "thread", thread, "error", err)
	}
}

// ephemeralView is the ended ephemeral run ru with the values and
// interrupts its thread had when it was deleted; false for any other run.
func (ru *run) ephemeralView() (Run, bool) {
	if ru.platform == nil || !ru.platform.ephemeral {
		return Run{}, false
	}
	v := ru.view()
	ru.mu.Lock()
	final := ru.platform.final
	ru.mu.Unlock()
	if final != nil && (v.Status == StatusDone || v.Status == StatusInterrupted) {
		v.Values, _ = json.Marshal(final.State)
		v.Interrupts = final.Interrupts
	}
	return v, true
}

// finalValues is what a shared run's Final holds: the values and
// interrupts of its thread when the run deleted it.
type finalValues struct {
	Values     json.RawMessage       `json:"values"`
	Interrupts []graph.InterruptInfo `json:"interrupts,omitempty"`
}

// finalJSON is the ended ephemeral run ru's finalValues as JSON, for its
// shared run; nil for any other run, or one that did not end done or
// interrupted.
func (ru *run) finalJSON() json.RawMessage {
	v, ok := ru.ephemeralView()
	if !ok || v.Values == nil {
		return nil
	}
	b, err := json.Marshal(finalValues{Values: v.Values, Interrupts: v.Interrupts})
	if err != nil {
		return nil
	}
	return b
}

// sharedValues is the shared run sr of the thread key on wf as the API
// shows it, with its values and interrupts when it ended done or
// interrupted: those its replica kept (Final) when it deleted the
// thread, or else those of its last checkpoint (withValues).
func (s *Server) sharedValues(ctx context.Context, sr SharedRun, wf *graph.Runnable, key string) (Run, error) {
	v := sr.view()
	if len(sr.Final) == 0 || (v.Status != StatusDone && v.Status != StatusInterrupted) {
		return s.withValues(ctx, v, wf, key)
	}
	var f finalValues
	if err := json.Unmarshal(sr.Final, &f); err != nil {
		return v, fmt.Errorf("server: the final values of run %q: %w", sr.ID, err)
	}
	v.Values, v.Interrupts = f.Values, f.Interrupts
	return v, nil
}

// statelessOf returns the stateless run (on_completion "delete") in
// progress or queued among a thread's open runs, whose thread is deleted
// when it ends; nil when none. No other run may start on such a thread:
// it would run on a deleted thread.
func statelessOf(open runs.ThreadRuns) *run {
	for _, h := range append([]*runs.Handle{open.Active}, open.Queued...) {
		if h == nil {
			continue
		}
		if ru := runOf(h); ru.platform != nil && ru.platform.ephemeral {
			return ru
		}
	}
	return nil
}

// refuseOnStateless refuses run ru when its thread is a stateless run's
// (statelessOf); nil otherwise. submit checks it again in the step that
// admits ru (refuseAmong).
func (s *Server) refuseOnStateless(ru *run) *apiError {
	return refuseAmong(ru, s.manager.Thread(ru.key))
}

// refuseAmong refuses run ru when the open runs of its thread are a
// stateless run's; nil otherwise.
func refuseAmong(ru *run, open runs.ThreadRuns) *apiError {
	if st := statelessOf(open); st != nil {
		return errorf(http.StatusConflict, CodeThreadBusy, "thread %q is the thread of stateless run %q, deleted when it ends: start runs on a thread of your own (POST /threads)", ru.thread, st.id)
	}
	return nil
}

// refuseOnSharedStateless is refuseOnStateless among replicas: it
// refuses run ru when a stateless run (on_completion "delete") is queued
// or running on its thread on any replica. It reads the thread's open
// runs before the run is stored (Enqueue), not in the same step: a
// stateless run's thread is new, and its id is known once it is stored.
func (s *Server) refuseOnSharedStateless(ctx context.Context, ru *run) error {
	if ru.platform != nil && ru.platform.ephemeral {
		return nil // its thread is new
	}
	open, err := s.cfg.Replicas.Activity(ctx, ru.key)
	if err != nil {
		return err
	}
	for _, sr := range open {
		if ended(sr.Status) {
			continue
		}
		if req, err := sr.request(); err == nil && req.Ephemeral {
			return errorf(http.StatusConflict, CodeThreadBusy, "thread %q is the thread of stateless run %q, deleted when it ends: start runs on a thread of your own (POST /threads)", ru.thread, sr.ID)
		}
	}
	return nil
}
