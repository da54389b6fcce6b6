package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
)

// Defaults of the replica settings of Config.
const (
	DefaultLeaseTTL    = 10 * time.Second
	DefaultReplicaRuns = 64
)

// errCancelRequested is the cause of a run cancelled by a client of any
// replica.
var errCancelRequested = errors.New("server: cancelled by request")

// startReplica starts the loop that claims the runs that are due, and
// the one that delivers the notices other replicas left (noticeLoop);
// Shutdown stops them.
func (s *Server) startReplica() {
	// Claimed runs do not end with the loop: Shutdown cancels each.
	s.replica.ctx = context.Background()
	s.replica.workflows = slices.Sorted(maps.Keys(s.cfg.Workflows))
	ctx, cancel := context.WithCancel(context.Background())
	s.replica.stop = cancel
	s.replica.loops.Go(func() { s.claimLoop(ctx) })
	s.replica.loops.Go(func() { s.noticeLoop(ctx) })
}

// stopReplica stops the replica's loops and waits for them.
func (s *Server) stopReplica() {
	if s.replica.stop == nil {
		return
	}
	s.replica.stop()
	s.replica.loops.Wait()
}

// claimLoop claims due runs whenever a replica says one may be due, and
// when a run may be due that nobody announces: a lease that expired, or a
// queued run's hold by a replica that died (nextLook). It prunes the ended
// runs at its start and every half lease.
func (s *Server) claimLoop(ctx context.Context) {
	tick := time.NewTicker(s.cfg.LeaseTTL / 2)
	defer tick.Stop()
	look := time.NewTimer(s.cfg.LeaseTTL / 2)
	defer look.Stop()
	s.pruneShared(ctx)
	for {
		due := s.cfg.Replicas.Changed("")
		s.claimDue(ctx)
		look.Reset(s.nextLook(ctx))
		select {
		case <-ctx.Done():
			return
		case <-due:
		case <-look.C:
		case <-tick.C:
			s.pruneShared(ctx)
		}
	}
}

// nextLook is how long the claim loop may wait before it looks for due
// runs again: until just after the earliest lease (or hold) of another
// replica expires, so that a dead replica's run is taken over within a
// lease and a little (Replicas.NextDue), and at most half a lease, the
// look of a replica that cannot ask. A live replica renews its leases
// every third of one, so in a healthy cluster the loop looks once per
// two thirds of a lease at most.
func (s *Server) nextLook(ctx context.Context) time.Duration {
	ttl := s.cfg.LeaseTTL
	wait, ok, err := s.cfg.Replicas.NextDue(ctx, s.replica.workflows)
	if err != nil && ctx.Err() == nil {
		s.log.ErrorContext(ctx, "server: look for the next lease to expire", "err", err)
	}
	if err != nil || !ok {
		return ttl / 2
	}
	// A moment after the expiry (a hundredth of a lease, at most 100ms),
	// so that the database sees it expired; never sooner than that
	// moment, so that a lease expiring now is not asked about in a loop.
	slack := min(max(ttl/100, time.Millisecond), 100*time.Millisecond)
	return min(max(wait, 0)+slack, ttl/2)
}

// pruneBatch is how many ended runs one statement of pruneShared deletes,
// and pruneBatches how many statements it runs at most.
const pruneBatch, pruneBatches = 100, 10

// pruneShared forgets the ended shared runs, with their events, but the
// newest Config.RetainRuns, as a single server forgets its own, a batch
// at a time.
func (s *Server) pruneShared(ctx context.Context) {
	for range pruneBatches {
		n, err := s.cfg.Replicas.Prune(ctx, s.cfg.RetainRuns, pruneBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.ErrorContext(ctx, "server: prune the ended runs", "err", err)
			}
			return
		}
		if n < pruneBatch {
			return
		}
	}
}

// claimDue claims and starts due runs while this replica has room.
func (s *Server) claimDue(ctx context.Context) {
	for {
		s.mu.Lock()
		room := !s.closing && s.replica.active < s.cfg.ReplicaRuns
		s.mu.Unlock()
		if !room {
			return
		}
		started, err := s.claim(ctx, "")
		if err != nil {
			if ctx.Err() == nil {
				s.log.ErrorContext(ctx, "server: claim a run", "err", err)
			}
			return
		}
		if started == nil {
			return
		}
	}
}

// claim claims run id (or any due run, see Replicas.Claim) and starts it
// on this replica; it returns the run this replica executes under id,
// which the claim loop may have claimed first, or nil. The loop's claims
// hold claimMu until the run is started, so that a request that finds its
// run claimed by the loop finds it started.
func (s *Server) claim(ctx context.Context, id string) (*run, error) {
	if id == "" {
		s.replica.claimMu.Lock()
		defer s.replica.claimMu.Unlock()
	}
	c, err := s.cfg.Replicas.Claim(ctx, id, s.replica.workflows)
	if err != nil {
		return nil, err
	}
	if c != nil {
		return s.startClaim(c), nil
	}
	if id == "" {
		return nil, nil
	}
	s.replica.claimMu.Lock() // once a claim of the loop's in progress has ended
	defer s.replica.claimMu.Unlock()
	return s.lookup(id), nil
}

// startClaim starts the claimed run on this replica and returns it; a
// replica shutting down gives the claim up and returns nil.
func (s *Server) startClaim(c *Claim) *run {
	sr := c.Run
	ru := &run{
		id: sr.ID, thread: sr.Thread, key: sr.Key, owner: sr.Owner, workflow: sr.Workflow, wf: s.cfg.Workflows[sr.Workflow],
		claim: c,
	}
	// Its row among the replicas is its place: the Manager admits it as is.
	s.track(ru, runs.Task{Context: s.replica.ctx, Admitted: true, Created: sr.CreatedAt, EventsAfter: sr.Events})
	ru.publish = func(id int64, name string, frame []byte) { s.publish(ru, id, name, frame) }
	c.Spent = func() llm.Spend { return ru.view().Usage }
	ru.setupErr = s.setShared(ru.ctx, ru, sr)
	giveUp := func() *run {
		ru.cancel(errShutdown)
		if err := s.cfg.Replicas.Release(context.WithoutCancel(ru.ctx), c); err != nil {
			s.log.Error("server: give a claimed run up", "run", c.Run.ID, "err", err)
		}
		return nil
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return giveUp()
	}
	s.replica.active++
	s.mu.Unlock()
	if _, err := s.manager.Start(ru.h, runs.Refuse, runs.NoLimits); err != nil {
		s.mu.Lock()
		s.replica.active--
		s.mu.Unlock()
		return giveUp() // the Manager is closing
	}
	return ru
}

// storedRequest is a shared run's request (SharedRun.Request): a /v1
// RunRequest, or the Platform's request when Platform is set.
type storedRequest struct {
	RunRequest
	Platform *lgRunRequest `json:"platform,omitempty"`
	// Assistant is the Platform run's assistant as resolved when it was
	// taken (the version its config is from).
	Assistant *assistantPin `json:"assistant,omitempty"`
	// Ephemeral: a stateless run (on_completion "delete"), whose replica
	// deletes its thread when it ends, keeping its final values in the
	// shared run (SharedRun.Final).
	Ephemeral bool `json:"ephemeral,omitempty"`
	// Task is the A2A task whose run it is: the replica that finishes it
	// records the task's end and posts its push notifications (notices.go).
	Task string `json:"task,omitempty"`
}

// request decodes the run's request.
func (sr SharedRun) request() (storedRequest, error) {
	var req storedRequest
	if err := json.Unmarshal(sr.Request, &req); err != nil {
		return req, fmt.Errorf("server: the request of run %q cannot be read: %w", sr.ID, err)
	}
	return req, nil
}

// setShared sets what the request of the claimed run sr asks of ru; an
// error fails the run.
func (s *Server) setShared(ctx context.Context, ru *run, sr SharedRun) error {
	if ru.wf == nil {
		return errorf(http.StatusInternalServerError, CodeUnknownWorkflow, "workflow %q is not served by replica %q", sr.Workflow, sr.Replica)
	}
	req, err := sr.request()
	if err != nil {
		return errorf(http.StatusInternalServerError, "run_failed", "%v", strings.TrimPrefix(err.Error(), "server: "))
	}
	ru.task = req.Task
	if req.Platform != nil {
		p := *req.Platform
		p.pin = req.Assistant
		if err := s.setPlatform(ctx, ru, p); err != nil {
			return err
		}
		ru.platform.ephemeral = req.Ephemeral
		return nil
	}
	if e := ru.setRequest(req.RunRequest); e != nil {
		return e
	}
	return nil
}

// publish shares an event of ru with the other replicas; a run whose
// lease was taken over stops.
func (s *Server) publish(ru *run, id int64, name string, frame []byte) {
	err := s.cfg.Replicas.Publish(context.WithoutCancel(ru.ctx), ru.claim, SharedEvent{ID: id, Name: name, Frame: frame})
	switch {
	case errors.Is(err, graph.ErrCheckpointConflict):
		ru.cancel(errLeaseLost)
	case err != nil:
		s.log.ErrorContext(ru.ctx, "server: publish a run's event", "run", ru.id, "event", id, "err", err)
	}
}

// holdLease renews the lease of ru's thread every third of its time to
// live until the returned function is called, and cancels ru when a
// client asks it to or when another replica has taken the thread over.
func (s *Server) holdLease(ru *run) (stop func()) {
	ctx, cancel := context.WithCancel(ru.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(s.cfg.LeaseTTL / 3)
		defer tick.Stop()
		for {
			cancelled := s.cfg.Replicas.Changed("cancel:" + ru.id)
			stopRun, err := s.cfg.Replicas.Renew(ctx, ru.claim)
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, graph.ErrCheckpointConflict):
				s.log.WarnContext(ctx, "server: the run was taken over by another replica", "run", ru.id, "err", err)
				ru.cancel(errLeaseLost)
				return
			case err != nil:
				s.log.ErrorContext(ctx, "server: renew a run's lease", "run", ru.id, "err", err)
			case stopRun:
				ru.cancel(errCancelRequested)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-cancelled:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// takenOver prepares a run taken over from another replica: it
// continues from the thread's last checkpoint when the first replica got
// past its input, and its execution is over at once when that replica got
// to its end but died before saying so: then x executes that end.
func (s *Server) takenOver(ru *run) (x runs.Execution, over bool, err error) {
	sr := ru.claim.Run
	if !ru.claim.Takeover || !sr.Started {
		return x, false, nil
	}
	snap, err := ru.wf.State(ru.ctx, ru.key, graph.WithSaver(s.saver))
	if errors.Is(err, graph.ErrNotFound) {
		return x, false, nil
	}
	if err != nil {
		return x, false, s.runFailure(ru, err)
	}
	if snap.Checkpoint == sr.Base {
		return x, false, nil // the input was not applied: apply it again
	}
	ru.mu.Lock()
	ru.input, ru.resume, ru.resumeOne, ru.oneAnswer, ru.from = nil, nil, false, nil, "" // continue from the thread's last checkpoint
	ru.checkpoint = snap.Checkpoint
	ru.mu.Unlock()
	if len(snap.Next) > 0 && len(snap.Interrupts) == 0 {
		return x, false, nil
	}
	status := StatusDone
	if len(snap.Interrupts) > 0 {
		status = StatusInterrupted
	}
	ru.h.SetStatus(status)
	// The run's end, which the replica that died did not get to say, is
	// the one event of its execution here.
	var end []graph.Event
	if !s.saidEnd(ru) {
		end = append(end, graph.Event{Kind: graph.EventRunEnd, Path: ru.wf.Name(), Step: snap.Step, State: snap.State,
			Data: graph.Status(status), Time: time.Now()})
	}
	x = s.execution(ru, nil)
	x.Executor = saidEvents(end)
	s.fillSpec(ru)
	return x, true, nil
}

// saidEvents is an executor that yields its events and nothing else.
type saidEvents []graph.Event

func (evs saidEvents) Stream(context.Context, []graph.Write, ...graph.Option) iter.Seq2[graph.Event, error] {
	return func(yield func(graph.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// saidEnd reports whether the last event of the run taken over is its
// end: the replica that died got that far.
func (s *Server) saidEnd(ru *run) bool {
	last := ru.claim.Run.Events
	if last == 0 {
		return false
	}
	evs, err := s.cfg.Replicas.Events(ru.ctx, ru.id, last-1, 1)
	if err != nil {
		s.log.ErrorContext(ru.ctx, "server: read a run's last event", "run", ru.id, "err", err)
		return false
	}
	return len(evs) == 1 && evs[0].Name == graph.EventRunEnd.String()
}

// finishShared tells the other replicas how ru ended; a run stopped by
// Shutdown is released for another replica to continue, and one taken
// over is the new holder's to finish.
func (s *Server) finishShared(ru *run) {
	if ru.claim == nil {
		return
	}
	if ru.stopLease != nil {
		ru.stopLease()
	}
	s.mu.Lock()
	s.replica.active--
	s.mu.Unlock()
	ctx := context.WithoutCancel(ru.ctx)
	var err error
	switch cause := context.Cause(ru.ctx); {
	case errors.Is(cause, errLeaseLost):
		return
	case errors.Is(cause, errShutdown):
		err = s.cfg.Replicas.Release(ctx, ru.claim)
	default:
		v := ru.view()
		sr := ru.claim.Run
		sr.Status, sr.Checkpoint, sr.Error, sr.Events = v.Status, v.Checkpoint, v.Error, v.Events
		sr.Usage, sr.Budget = v.Usage, v.Budget
		sr.Final = ru.finalJSON()
		sr.EndedAt = time.Now().UTC()
		if err = s.cfg.Replicas.Finish(ctx, ru.claim, sr); err == nil {
			ru.mu.Lock()
			ru.notice.ended = true // its notice is this replica's to claim (endNotice)
			ru.mu.Unlock()
		}
	}
	if err != nil {
		s.log.ErrorContext(ctx, "server: share how a run ended", "run", ru.id, "err", err)
	}
}

// submitShared stores ru among the replicas, with its request req, and
// claims it for this replica unless its thread is busy or this replica
// has no room: then another replica, or this one later, claims it. It
// returns the run this replica executes, if it does. A run its owner has
// no room or budget for, or refused on a busy thread, is an *apiError, as
// submit's: the quotas and the thread's runs are checked against the
// runs of every replica in the step that stores the run (Enqueue), as is
// the thread itself: being deleted (409 thread_busy) or deleted (404).
func (s *Server) submitShared(ctx context.Context, ru *run, req storedRequest) (*run, error) {
	if e := s.storageQuota(ru.owner); e != nil {
		return nil, e
	}
	if e := s.budgetQuota(ctx, ru.owner); e != nil {
		return nil, e
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("server: store run %q: %w", ru.id, err)
	}
	// A webhook's notice is due from the start; an A2A task's once the
	// task's record lists the run (taskRecorded).
	sr := SharedRun{ID: ru.id, Thread: ru.thread, Key: ru.key, Owner: ru.owner, Workflow: ru.workflow, Request: body, Status: StatusQueued,
		CreatedAt: ru.createdAt(), Notice: ru.platform != nil && ru.platform.webhook != ""}
	if err := s.cfg.Replicas.Enqueue(ctx, sr, s.busyOf(ru), s.runLimits()); err != nil {
		if e := refusal(ru, err); e != nil {
			return nil, e
		}
		if errors.Is(err, graph.ErrNotFound) {
			// The thread was deleted after the run read it.
			return nil, unknownThread(ru.thread)
		}
		return nil, err
	}
	s.mu.Lock()
	room := !s.closing && s.replica.active < s.cfg.ReplicaRuns
	s.mu.Unlock()
	if !room {
		return nil, s.cfg.Replicas.Offer(ctx, ru.id)
	}
	return s.claim(ctx, ru.id)
}

// awaitShared waits until run id has ended, or until limit has passed
// when it is not zero, and returns the run as it is then.
func (s *Server) awaitShared(ctx context.Context, id string, limit time.Duration) (SharedRun, error) {
	var timeout <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		timeout = t.C
	}
	for {
		changed := s.cfg.Replicas.Changed(id)
		sr, err := s.cfg.Replicas.Run(ctx, id)
		if err != nil || ended(sr.Status) || timeout == nil && limit > 0 {
			return sr, err
		}
		select {
		case <-changed:
		case <-timeout:
			timeout = nil // one more look, then the run as it is
		case <-ctx.Done():
			return sr, context.Cause(ctx)
		}
	}
}

// serveShared writes the run's events after id after as server-sent
// events in format, read from the replicas' shared log, whichever replica
// runs it, until the run ends (then format's end) or the client leaves.
// A run deleted meanwhile ends the stream too, with deletedRun.
func (s *Server) serveShared(w http.ResponseWriter, r *http.Request, id string, wf *graph.Runnable, key string, after int64, format streamFormat) {
	if out, ok := s.openStream(w, r, http.NewResponseController(w), format); ok {
		s.streamShared(r, out, id, wf, key, after, format)
	}
}

// streamShared writes the shared run's events after id after on the
// opened stream out, as serveShared does, and reports whether the run
// ended (or was deleted) with the client still there.
func (s *Server) streamShared(r *http.Request, out sseWriter, id string, wf *graph.Runnable, key string, after int64, format streamFormat) bool {
	heartbeat := time.NewTicker(s.cfg.Heartbeat)
	defer heartbeat.Stop()
	ctx := r.Context()
	last := SharedRun{ID: id}
	for {
		changed := s.cfg.Replicas.Changed(id)
		// The run before its events: the events of an ended run were
		// stored before its end.
		sr, err := s.cfg.Replicas.Run(ctx, id)
		if errors.Is(err, graph.ErrNotFound) {
			if b := format.end(deletedRun(last, r.PathValue("thread")), after); b == nil || out.write(b) == nil {
				return out.flush() == nil
			}
			return false
		}
		if err != nil {
			s.log.ErrorContext(ctx, "server: read a shared run", "request_id", requestID(ctx), "run", id, "err", err)
			return false
		}
		last = sr
		evs, err := s.cfg.Replicas.Events(ctx, id, after, replayPage)
		if err != nil {
			s.log.ErrorContext(ctx, "server: read a shared run's events", "request_id", requestID(ctx), "run", id, "err", err)
			return false
		}
		for _, ev := range evs {
			after = ev.ID
			if b := format.event(frame{id: ev.ID, name: ev.Name, data: ev.Frame}); b != nil && out.write(b) != nil {
				return false
			}
		}
		if len(evs) > 0 && out.flush() != nil {
			return false
		}
		// Events stored after the run was read notify changed, taken
		// before it: once the stream is past the run's newest event
		// (sr.Events), the next look waits for one. Reading again at
		// once would cost two more statements per wake and find none.
		if after < sr.Events {
			continue
		}
		if ended(sr.Status) {
			v, err := s.sharedValues(ctx, sr, wf, key)
			if err != nil {
				s.log.ErrorContext(ctx, "server: the end of a stream has no values", "request_id", requestID(ctx), "run", id, "err", err)
			}
			if b := format.end(v, after); b == nil || out.write(b) == nil {
				return out.flush() == nil
			}
			return false
		}
		select {
		case <-changed:
		case <-heartbeat.C:
			if out.write([]byte(": ping\n\n")) != nil || out.flush() != nil {
				return false
			}
		case <-ctx.Done():
			return false
		}
	}
}

// deletedRun is the end of a stream of run sr, on thread, that was
// deleted before the stream saw it end (as a rollback deletes its run):
// its status is an error that says so.
func deletedRun(sr SharedRun, thread string) Run {
	v := sr.view()
	v.ThreadID = thread
	v.Status = StatusError
	v.Error = &ErrorDetail{Code: CodeUnknownRun,
		Message: fmt.Sprintf("run %q on thread %q was deleted before it was seen to end (a rollback deletes its run)", sr.ID, thread)}
	return v
}

// forgetShared forgets the ended runs of the thread key on every replica
// (the thread is deleted): a thread made again with its id starts with
// none.
func (s *Server) forgetShared(ctx context.Context, key string) error {
	runs, err := s.cfg.Replicas.Runs(ctx, key)
	if err != nil {
		return err
	}
	for _, sr := range runs {
		if _, err := s.cfg.Replicas.Delete(ctx, sr.ID); err != nil && !errors.Is(err, graph.ErrNotFound) {
			return err
		}
	}
	return nil
}

// checkReplicaConfig sets the defaults of the replica settings.
func (s *Server) checkReplicaConfig() error {
	if s.cfg.LeaseTTL <= 0 {
		s.cfg.LeaseTTL = DefaultLeaseTTL
	}
	if s.cfg.LeaseTTL < 3*time.Millisecond {
		return fmt.Errorf("server: Config.LeaseTTL %v is too short to be renewed", s.cfg.LeaseTTL)
	}
	if s.cfg.ReplicaRuns <= 0 {
		s.cfg.ReplicaRuns = DefaultReplicaRuns
	}
	return nil
}
