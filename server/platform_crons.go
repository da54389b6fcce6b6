package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/robfig/cron/v3"
)

// DefaultMaxCrons is Config.MaxCrons when zero.
const DefaultMaxCrons = 10

// cronJob is a Platform cron: a run started on a schedule, on its thread
// or on a new thread each time. Crons live in the server's memory: a
// restart forgets them.
type cronJob struct {
	id, owner, assistant, thread string
	schedule                     string
	sched                        cron.Schedule
	loc                          *time.Location
	payload                      lgRunRequest
	metadata                     map[string]any
	enabled                      bool
	end                          *time.Time
	next                         time.Time
	created, updated             time.Time
}

// lgCron is a cron as the Platform shows it.
type lgCron struct {
	CronID      string         `json:"cron_id"`
	AssistantID string         `json:"assistant_id"`
	ThreadID    *string        `json:"thread_id"`
	Schedule    string         `json:"schedule"`
	Payload     lgRunRequest   `json:"payload"`
	Metadata    map[string]any `json:"metadata"`
	Enabled     bool           `json:"enabled"`
	EndTime     *time.Time     `json:"end_time"`
	NextRunDate *time.Time     `json:"next_run_date"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
	UserID      string         `json:"user_id"`
}

func (c *cronJob) view() lgCron {
	v := lgCron{CronID: c.id, AssistantID: c.assistant, Schedule: c.schedule, Payload: c.payload, Metadata: c.metadata,
		Enabled: c.enabled, EndTime: c.end, CreatedAt: c.created, UpdatedAt: c.updated, UserID: c.owner}
	if c.thread != "" {
		t := c.thread
		v.ThreadID = &t
	}
	if c.enabled && !c.next.IsZero() {
		n := c.next
		v.NextRunDate = &n
	}
	if v.Metadata == nil {
		v.Metadata = map[string]any{}
	}
	return v
}

// lgCronRequest is the body of a cron's creation or update: the run's
// fields and the schedule's.
type lgCronRequest struct {
	Schedule          string           `json:"schedule"`
	Timezone          string           `json:"timezone"`
	EndTime           *time.Time       `json:"end_time"`
	Enabled           *bool            `json:"enabled"`
	OnRunCompleted    string           `json:"on_run_completed"`
	AssistantID       string           `json:"assistant_id"`
	Input             json.RawMessage  `json:"input"`
	Config            json.RawMessage  `json:"config"`
	Context           json.RawMessage  `json:"context"`
	Metadata          map[string]any   `json:"metadata"`
	InterruptBefore   json.RawMessage  `json:"interrupt_before"`
	InterruptAfter    json.RawMessage  `json:"interrupt_after"`
	Webhook           string           `json:"webhook"`
	MultitaskStrategy string           `json:"multitask_strategy"`
	CheckpointDuring  *bool            `json:"checkpoint_during"`
	Durability        string           `json:"durability"`
	StreamMode        json.RawMessage  `json:"stream_mode"`
	StreamSubgraphs   bool             `json:"stream_subgraphs"`
	StreamResumable   bool             `json:"stream_resumable"`
	Checkpoint        *lgCheckpointRef `json:"checkpoint"`
}

// runRequest is the run the cron starts each time.
func (q lgCronRequest) runRequest() lgRunRequest {
	return lgRunRequest{AssistantID: q.AssistantID, Input: q.Input, Config: q.Config, Context: q.Context, Metadata: q.Metadata,
		InterruptBefore: q.InterruptBefore, InterruptAfter: q.InterruptAfter, Webhook: q.Webhook, MultitaskStrategy: q.MultitaskStrategy,
		StreamMode: q.StreamMode, StreamSubgraphs: q.StreamSubgraphs, Durability: q.Durability, CheckpointDuring: q.CheckpointDuring}
}

// setSchedule parses the schedule (five cron fields, or @hourly...) in
// the time zone and computes the next run after now.
func (c *cronJob) setSchedule(schedule, tz string, now time.Time) *apiError {
	sched, err := cron.ParseStandard(schedule)
	if err != nil {
		return fieldErrorf(CodeInvalidField, "schedule", "field \"schedule\" is not a cron schedule (five fields, or @hourly, @daily...): %v", err)
	}
	loc := time.UTC
	if tz != "" {
		if loc, err = time.LoadLocation(tz); err != nil {
			return fieldErrorf(CodeInvalidField, "timezone", "field \"timezone\" is not a known time zone: %q", tz)
		}
	}
	c.schedule, c.sched, c.loc = schedule, sched, loc
	c.next = sched.Next(now.In(loc)).UTC()
	return nil
}

// cronState is the server's crons and their scheduler.
type cronState struct {
	jobs    map[string]*cronJob // by id
	running bool                // the scheduler goroutine is on
	wake    chan struct{}       // a cron changed: the scheduler looks again
	stop    chan struct{}       // closed by Shutdown
}

func (s *Server) lgCreateCron(w http.ResponseWriter, r *http.Request) {
	var req lgCronRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	owner := ownerFrom(r.Context())
	wf := s.cfg.Workflows[req.AssistantID]
	if wf == nil {
		writeError(w, unknownAssistant(req.AssistantID))
		return
	}
	job := &cronJob{id: newID(), owner: owner, assistant: req.AssistantID, payload: req.runRequest(), metadata: req.Metadata,
		enabled: req.Enabled == nil || *req.Enabled, end: req.EndTime, created: time.Now().UTC()}
	job.updated = job.created
	if id := r.PathValue("thread"); id != "" {
		th, _, err := s.threadRecord(r.Context(), owner, id)
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		if th.Workflow != "" && th.Workflow != req.AssistantID {
			writeError(w, errorf(http.StatusConflict, CodeWrongWorkflow, "thread %q runs assistant %q, not %q", id, th.Workflow, req.AssistantID))
			return
		}
		job.thread = id
	}
	if e := job.setSchedule(req.Schedule, req.Timezone, job.created); e != nil {
		writeError(w, e)
		return
	}
	// The run it will start is checked now: a bad input fails here.
	th := Thread{ID: "cron-check", Workflow: req.AssistantID}
	check, err := s.platformRunFor(r, th, wf, job.payload)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	check.cancel(nil)
	s.mu.Lock()
	n := 0
	for _, j := range s.crons.jobs {
		if j.owner == owner {
			n++
		}
	}
	if limit := s.cfg.MaxCrons; limit >= 0 && n >= limit {
		s.mu.Unlock()
		e := errorf(http.StatusTooManyRequests, CodeQuotaExceeded, "owner %q has %d crons, the most allowed: delete one first", owner, limit)
		e.Quota, e.Limit = "crons", int64(limit)
		writeError(w, e)
		return
	}
	if s.closing {
		s.mu.Unlock()
		writeError(w, errorf(http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down"))
		return
	}
	if s.crons.jobs == nil {
		s.crons.jobs = map[string]*cronJob{}
	}
	s.crons.jobs[job.id] = job
	s.startCronsLocked()
	v := job.view()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, v)
}

// cronFor finds the owner's cron the request names, with s.mu held; or
// writes a 404 and returns nil, unlocked.
func (s *Server) cronForLocked(w http.ResponseWriter, r *http.Request) *cronJob {
	s.mu.Lock()
	job := s.crons.jobs[r.PathValue("cron")]
	if job == nil || job.owner != ownerFrom(r.Context()) {
		s.mu.Unlock()
		writeError(w, errorf(http.StatusNotFound, CodeNotFound, "unknown cron %q", r.PathValue("cron")))
		return nil
	}
	return job
}

func (s *Server) lgUpdateCron(w http.ResponseWriter, r *http.Request) {
	var req lgCronRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	job := s.cronForLocked(w, r)
	if job == nil {
		return
	}
	defer s.mu.Unlock()
	now := time.Now().UTC()
	if req.Schedule != "" || req.Timezone != "" {
		sched, tz := req.Schedule, req.Timezone
		if sched == "" {
			sched = job.schedule
		}
		if tz == "" {
			tz = job.loc.String()
		}
		next := *job
		if e := next.setSchedule(sched, tz, now); e != nil {
			writeError(w, e)
			return
		}
		job.schedule, job.sched, job.loc, job.next = next.schedule, next.sched, next.loc, next.next
	}
	if req.Enabled != nil {
		job.enabled = *req.Enabled
	}
	if req.EndTime != nil {
		job.end = req.EndTime
	}
	if req.Metadata != nil {
		job.metadata = req.Metadata
	}
	if len(req.Input) > 0 {
		job.payload.Input = req.Input
	}
	job.updated = now
	s.signalCronsLocked()
	writeJSON(w, http.StatusOK, job.view())
}

func (s *Server) lgDeleteCron(w http.ResponseWriter, r *http.Request) {
	job := s.cronForLocked(w, r)
	if job == nil {
		return
	}
	delete(s.crons.jobs, job.id)
	s.signalCronsLocked()
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

type lgCronQuery struct {
	AssistantID string         `json:"assistant_id"`
	ThreadID    string         `json:"thread_id"`
	Enabled     *bool          `json:"enabled"`
	Limit       int            `json:"limit"`
	Offset      int            `json:"offset"`
	SortBy      string         `json:"sort_by"`
	SortOrder   string         `json:"sort_order"`
	Select      []string       `json:"select"`
	Metadata    map[string]any `json:"metadata"`
}

func (s *Server) searchCrons(w http.ResponseWriter, r *http.Request) ([]lgCron, lgCronQuery, bool) {
	var q lgCronQuery
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &q); e != nil {
		writeError(w, e)
		return nil, q, false
	}
	owner := ownerFrom(r.Context())
	s.mu.Lock()
	var out []lgCron
	for _, j := range s.crons.jobs {
		if j.owner != owner || (q.AssistantID != "" && j.assistant != q.AssistantID) || (q.ThreadID != "" && j.thread != q.ThreadID) ||
			(q.Enabled != nil && j.enabled != *q.Enabled) || !metadataMatches(j.metadata, q.Metadata) {
			continue
		}
		out = append(out, j.view())
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b lgCron) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, q, true
}

func (s *Server) lgSearchCrons(w http.ResponseWriter, r *http.Request) {
	all, q, ok := s.searchCrons(w, r)
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

func (s *Server) lgCountCrons(w http.ResponseWriter, r *http.Request) {
	if all, _, ok := s.searchCrons(w, r); ok {
		writeJSON(w, http.StatusOK, len(all))
	}
}

// startCronsLocked starts the scheduler, once. s.mu is held.
func (s *Server) startCronsLocked() {
	if s.crons.running {
		s.signalCronsLocked()
		return
	}
	s.crons.running = true
	s.crons.wake, s.crons.stop = make(chan struct{}, 1), make(chan struct{})
	s.wg.Add(1)
	go s.cronLoop(s.crons.wake, s.crons.stop)
}

// signalCronsLocked tells the scheduler that the crons changed.
func (s *Server) signalCronsLocked() {
	select {
	case s.crons.wake <- struct{}{}:
	default:
	}
}

// stopCrons stops the scheduler (Shutdown).
func (s *Server) stopCrons() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.crons.running {
		close(s.crons.stop)
		s.crons.running = false
	}
}

// cronLoop starts the crons' runs when they are due, until stop.
func (s *Server) cronLoop(wake, stop <-chan struct{}) {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		var next time.Time
		for _, j := range s.crons.jobs {
			if j.enabled && (next.IsZero() || j.next.Before(next)) {
				next = j.next
			}
		}
		s.mu.Unlock()
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-stop:
			return
		case <-wake:
		case now := <-timer.C:
			s.fireCrons(now.UTC())
		}
	}
}

// fireCrons starts the run of every enabled cron due at now, and
// schedules its next; a cron past its end time is deleted.
func (s *Server) fireCrons(now time.Time) {
	s.mu.Lock()
	var due []*cronJob
	for id, j := range s.crons.jobs {
		switch {
		case j.end != nil && !now.Before(*j.end):
			delete(s.crons.jobs, id)
		case j.enabled && !j.next.After(now):
			due = append(due, j)
			j.next = j.sched.Next(now.In(j.loc)).UTC()
		}
	}
	s.mu.Unlock()
	for _, j := range due {
		if err := s.startCronRun(j); err != nil {
			s.log.Warn("server: a cron's run was not started", "cron", j.id, "owner", j.owner, "err", err)
		}
	}
}

// startCronRun starts one run of the cron j: on its thread, or on a new
// thread.
func (s *Server) startCronRun(j *cronJob) error {
	ctx := context.WithValue(context.Background(), ownerKey{}, j.owner)
	r := (&http.Request{Header: http.Header{}}).WithContext(ctx)
	wf := s.cfg.Workflows[j.assistant]
	if wf == nil {
		return unknownAssistant(j.assistant)
	}
	th := Thread{ID: j.thread, Workflow: j.assistant, CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
		Metadata: map[string]any{"cron_id": j.id}}
	if th.ID == "" {
		th.ID = newID()
		if e := s.storageQuota(j.owner); e != nil {
			return e
		}
		if err := s.storeThread(ctx, j.owner, th); err != nil {
			return err
		}
	} else {
		rec, head, err := s.threadRecord(ctx, j.owner, j.thread)
		if err != nil {
			return err
		}
		if rec.Workflow == "" {
			rec.Workflow = j.assistant
			if err := s.updateThread(ctx, j.owner, rec, head); err != nil {
				return err
			}
		}
		th = rec
	}
	ru, err := s.platformRunFor(r, th, wf, j.payload)
	if err != nil {
		return err
	}
	if _, e := s.submit(ru); e != nil {
		return e
	}
	return nil
}
