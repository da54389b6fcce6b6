package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/coorflow/coorflow/graph"
)

// A run's one way in, whichever transport asks for it and wherever it
// executes.
//
// A transport — /v1 (runhandlers.go), the Platform API (platform_runs.go),
// /mcp (mcp.go), crons (platform_crons.go), and any new one — decodes its
// own request shape, makes the run with newRun (newMCPRun without an HTTP
// request), sets what the request asks (run.setRequest for a RunRequest,
// setPlatform for a Platform request) and hands it to start. It follows
// the run with awaitStart, view, awaitEnd and serve, finds a run by id
// with runAt (placedFor over HTTP), and stops one with cancel. These
// choose between this process (submit: the server's runs.Manager and its
// Ledger) and the replicas (submitShared: Replicas.Enqueue), so that no
// transport does; a run in this process, its own or a replica's claim,
// lives in the Manager from its start to its end, which the server
// prepares (prepare: precheck, budgets, config, environment, recording)
// and completes (ended, finally), under the rules of package runs.

// placed is a run where start placed it, or where runAt found it.
type placed struct {
	id, thread, key, workflow string
	// wf is the run's workflow; nil for a run of a workflow another
	// replica serves.
	wf *graph.Runnable
	// ru is the run in this process (without replicas); nil among
	// replicas.
	ru *run
	// local is, among replicas, the run this replica executes under id,
	// when start claimed it here.
	local *run
	// queued: start queued ru behind the thread's run in progress.
	queued bool
	// sr is, among replicas, the run as it was last read.
	sr SharedRun
	// platform is the Platform request that started the run (nil: /v1).
	platform *lgRunRequest
}

// placedIn is the run ru of this process, placed.
func placedIn(ru *run) *placed {
	p := &placed{id: ru.id, thread: ru.thread, key: ru.key, workflow: ru.workflow, wf: ru.wf, ru: ru}
	if ru.platform != nil {
		p.platform = &ru.platform.req
	}
	return p
}

// start admits ru and places it: after the multitask strategy of a
// Platform request made room (interrupt, rollback), in this process
// (submit), or among the replicas with its request req (submitShared),
// where this replica or another executes it. A refusal is an *apiError.
// Every transport starts its runs here.
func (s *Server) start(ctx context.Context, ru *run, req storedRequest) (*placed, error) {
	if ru.platform != nil && req.Assistant == nil {
		req.Assistant = ru.platform.req.pin // the version it starts with goes with it to its replica
	}
	p := placedIn(ru)
	preempt := ru.platform != nil && (ru.platform.strategy == "interrupt" || ru.platform.strategy == "rollback")
	rollback := preempt && ru.platform.strategy == "rollback"
	if s.cfg.Replicas != nil {
		p.ru = nil
		if err := s.refuseOnSharedStateless(ctx, ru); err != nil {
			return nil, err
		}
		if preempt {
			if err := s.preemptShared(ctx, ru.key, rollback); err != nil {
				return nil, err
			}
		}
		local, err := s.submitShared(ctx, ru, req)
		if err != nil {
			return nil, err
		}
		p.local = local
		return p, nil
	}
	if preempt {
		// Refused before preempt: interrupting a stateless run would
		// delete the thread this run is for.
		if e := s.refuseOnStateless(ru); e != nil {
			return nil, e
		}
		if err := s.preempt(ctx, ru.key, rollback); err != nil {
			return nil, err
		}
	}
	queued, e := s.submit(ru)
	if e != nil {
		return nil, e
	}
	p.queued = queued
	return p, nil
}

// awaitStart waits until the run got past its start, or with untilEnd
// until it ended; a queued run is not waited for unless untilEnd. Among
// replicas it waits for the run this replica executes, if it does, to get
// past its start. It returns the error of a run that failed before it
// started (that error is the answer to the request that made it: the run
// is forgotten), or ctx's cause when the caller left first (the run goes
// on).
func (s *Server) awaitStart(ctx context.Context, p *placed, untilEnd bool) error {
	ru := p.ru
	if ru == nil {
		ru, untilEnd = p.local, false
	}
	if ru == nil {
		return nil
	}
	wait := ru.started
	if untilEnd {
		wait = ru.done
	}
	if !p.queued || untilEnd {
		select {
		case <-wait:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if e := ru.earlyError(); e != nil {
		if p.ru != nil {
			s.forget(ru)
		}
		return e
	}
	return nil
}

// view returns the run as it is now; with values, also its values and
// interrupts when it ended done or interrupted.
func (s *Server) view(ctx context.Context, p *placed, values bool) (Run, error) {
	if p.ru != nil {
		if values {
			return s.runView(ctx, p.ru)
		}
		return p.ru.view(), nil
	}
	sr, err := s.cfg.Replicas.Run(ctx, p.id)
	if err != nil {
		return Run{}, err
	}
	p.sr = sr
	if !values {
		return sr.view(), nil
	}
	return s.sharedValues(ctx, sr, p.wf, p.key)
}

// awaitEnd waits until the run has ended, or until limit has passed when
// it is not zero, and returns it as it is then, with its values.
func (s *Server) awaitEnd(ctx context.Context, p *placed, limit time.Duration) (Run, error) {
	if ru := p.ru; ru != nil {
		var timeout <-chan time.Time
		if limit > 0 {
			t := time.NewTimer(limit)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-ru.done:
		case <-timeout:
		case <-ctx.Done():
			return Run{}, context.Cause(ctx)
		}
		return s.runView(ctx, ru)
	}
	sr, err := s.awaitShared(ctx, p.id, limit)
	if errors.Is(err, graph.ErrNotFound) {
		return Run{}, errorf(http.StatusNotFound, CodeUnknownRun, "unknown run %q on thread %q: it was deleted while awaited (a rollback deletes its run)",
			p.id, p.thread)
	}
	if err != nil {
		return Run{}, err
	}
	p.sr = sr
	return s.sharedValues(ctx, sr, p.wf, p.key)
}

// serve writes the run's events after id after as server-sent events in
// format until the run ends (then format's end) or the client leaves:
// from this process's log, or from the replicas' shared one.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, p *placed, after int64, format streamFormat) {
	if ru := p.ru; ru != nil {
		ru.events.attach()
		defer ru.events.detach()
		s.serveEvents(w, r, http.NewResponseController(w), ru, after, format)
		return
	}
	s.serveShared(w, r, p.id, p.wf, p.key, after, format)
}

// cancel asks the run to stop, wherever it runs: a queued run ends at
// once, a running one when its engine notices. It reports false when the
// run had already ended.
func (s *Server) cancel(ctx context.Context, p *placed) (bool, error) {
	if p.ru != nil {
		return s.cancelRun(p.ru), nil
	}
	return s.cfg.Replicas.Cancel(ctx, p.id)
}

// cancelLeft cancels the run after its client left; a failure is logged.
func (s *Server) cancelLeft(r *http.Request, p *placed) {
	ctx := context.WithoutCancel(r.Context())
	if _, err := s.cancel(ctx, p); err != nil {
		s.log.ErrorContext(ctx, "server: cancel a run whose client left", "request_id", requestID(ctx), "run", p.id, "err", err)
	}
}

// rollbackPlaced forgets the ended run and returns its thread to the
// checkpoint it started from (rollback, rollbackShared).
func (s *Server) rollbackPlaced(ctx context.Context, p *placed) error {
	if p.ru != nil {
		return s.rollback(ctx, p.ru)
	}
	return s.rollbackShared(ctx, p.sr, p.wf)
}

// runAt finds run id of the owner's thread, in this process or among the
// replicas; an unknown one is a 404.
func (s *Server) runAt(ctx context.Context, owner, thread, id string) (*placed, error) {
	key := threadKey(owner, thread)
	unknown := errorf(http.StatusNotFound, CodeUnknownRun, "unknown run %q on thread %q", id, thread)
	if s.cfg.Replicas == nil {
		ru := s.lookup(id)
		if ru == nil || ru.key != key {
			return nil, unknown
		}
		return placedIn(ru), nil
	}
	sr, err := s.cfg.Replicas.Run(ctx, id)
	switch {
	case errors.Is(err, graph.ErrNotFound) || err == nil && sr.Key != key:
		return nil, unknown
	case err != nil:
		return nil, err
	}
	req, _ := sr.request() // a request that cannot be read shows as a /v1 run's
	return s.placedShared(sr, req), nil
}

// placedShared is the shared run sr, with its request req, placed.
func (s *Server) placedShared(sr SharedRun, req storedRequest) *placed {
	return &placed{id: sr.ID, thread: sr.Thread, key: sr.Key, workflow: sr.Workflow, wf: s.cfg.Workflows[sr.Workflow], sr: sr, platform: req.Platform}
}

// placedFor finds the run the request's path names on the caller's
// thread (runAt), or writes the error.
func (s *Server) placedFor(w http.ResponseWriter, r *http.Request) (*placed, bool) {
	p, err := s.runAt(r.Context(), ownerFrom(r.Context()), r.PathValue("thread"), r.PathValue("run"))
	if err != nil {
		writeError(w, s.internal(r, err))
		return nil, false
	}
	return p, true
}

// writeFailure answers err unless the client has left.
func (s *Server) writeFailure(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() == nil {
		writeError(w, s.internal(r, err))
	}
}

// deleteRun forgets the run, once it has ended: gone is false while it
// has not.
func (s *Server) deleteRun(ctx context.Context, p *placed) (gone bool, err error) {
	if p.ru == nil {
		return s.cfg.Replicas.Delete(ctx, p.id)
	}
	select {
	case <-p.ru.done:
	default:
		return false, nil
	}
	s.forget(p.ru)
	return true, nil
}

// activity returns the run in progress on the thread key (its id; ""
// when none), how many runs wait behind it, and the status of its newest
// run ("" when none is remembered): in this process, or on any replica.
func (s *Server) activity(ctx context.Context, key string) (active string, queued int, last string, err error) {
	if s.cfg.Replicas == nil {
		ts := s.manager.Thread(key)
		if ts.Active != nil {
			active = ts.Active.Run().ID
		}
		if len(ts.Kept) > 0 {
			last = runOf(ts.Kept[len(ts.Kept)-1]).view().Status
		}
		return active, len(ts.Queued), last, nil
	}
	runs, err := s.cfg.Replicas.Activity(ctx, key)
	for _, sr := range runs {
		switch {
		case sr.Status == StatusRunning && active == "":
			active = sr.ID
		case sr.Status == StatusQueued:
			queued++
		}
		last = sr.Status
	}
	return active, queued, last, err
}

// runsOn returns the runs of the thread key this process remembers, or
// that the replicas share, oldest first, without their values, with the
// Platform request of each (nil: a /v1 run).
func (s *Server) runsOn(ctx context.Context, key string) ([]Run, []*lgRunRequest, error) {
	if s.cfg.Replicas == nil {
		runs := runsOf(s.manager.Thread(key).Kept)
		out, reqs := make([]Run, len(runs)), make([]*lgRunRequest, len(runs))
		for i, ru := range runs {
			out[i], reqs[i] = ru.view(), placedIn(ru).platform
		}
		return out, reqs, nil
	}
	shared, err := s.cfg.Replicas.Runs(ctx, key)
	out, reqs := make([]Run, len(shared)), make([]*lgRunRequest, len(shared))
	for i, sr := range shared {
		req, _ := sr.request() // a request that cannot be read shows as a /v1 run's
		out[i], reqs[i] = sr.view(), req.Platform
	}
	return out, reqs, err
}
