package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/coorflow/coorflow/store"
	storemem "github.com/coorflow/coorflow/store/memory"
)

// DefaultMaxCrons is Config.MaxCrons when zero.
const DefaultMaxCrons = 10

// Platform crons live in the store (Config.Store, or the server's own
// memory store without one) of cronOwner, an owner no token can be, at
// crons/<owner's digest>/<cron id>: they outlive the server, and replicas
// sharing a store share them. Each firing is claimed by writing the cron's
// next run date at the revision it was read at: of the replicas due to
// fire it, the one whose write lands starts the run; the others' writes
// conflict (store.ErrConflict) and they start nothing.
const (
	cronOwner  = "#coorflow-server"
	cronPrefix = "crons/"
)

// cronJob is a Platform cron, as stored (JSON content): a run started on
// a schedule, on its thread or on a new thread each time.
type cronJob struct {
	ID        string         `json:"id"`
	Owner     string         `json:"owner"`
	Assistant string         `json:"assistant"`
	Thread    string         `json:"thread,omitempty"`
	Schedule  string         `json:"schedule"`
	Timezone  string         `json:"timezone,omitempty"`
	Payload   lgRunRequest   `json:"payload"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Enabled   bool           `json:"enabled"`
	End       *time.Time     `json:"end,omitempty"`
	Next      time.Time      `json:"next"`
	Created   time.Time      `json:"created"`
	Updated   time.Time      `json:"updated"`
	// rev is the store revision it was read at (0: not stored yet).
	rev int64
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
	v := lgCron{CronID: c.ID, AssistantID: c.Assistant, Schedule: c.Schedule, Payload: c.Payload, Metadata: c.Metadata,
		Enabled: c.Enabled, EndTime: c.End, CreatedAt: c.Created, UpdatedAt: c.Updated, UserID: c.Owner}
	if c.Thread != "" {
		t := c.Thread
		v.ThreadID = &t
	}
	if c.Enabled && !c.Next.IsZero() {
		n := c.Next
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
// A schedule that fires more often than every min (min > 0) is refused.
func (c *cronJob) setSchedule(schedule, tz string, now time.Time, min time.Duration) *apiError {
	sched, err := cron.ParseStandard(schedule)
	if err != nil {
		return fieldErrorf(CodeInvalidField, "schedule", "field \"schedule\" is not a cron schedule (five fields, or @hourly, @daily...): %v", err)
	}
	if gap := minCronGap(sched, now); min > 0 && gap > 0 && gap < min {
		return cronRateError(schedule, gap, min)
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return fieldErrorf(CodeInvalidField, "timezone", "field \"timezone\" is not a known time zone: %q", tz)
	}
	c.Schedule, c.Timezone = schedule, tz
	c.Next = c.after(sched, now)
	return nil
}

// after is the cron's first run date after now on sched, in its time zone.
func (c *cronJob) after(sched cron.Schedule, now time.Time) time.Time {
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		loc = time.UTC // checked when stored
	}
	return sched.Next(now.In(loc)).UTC()
}

// cronState is the scheduler of the crons.
type cronState struct {
	store store.Store   // where the crons live; nil: crons are not served
	poll  time.Duration // how often the scheduler reads the crons again
	wake  chan struct{} // a cron changed: the scheduler looks again
	stop  context.CancelFunc
	done  chan struct{} // closed when the scheduler has ended
}

// startCrons sets where the crons live and starts their scheduler; with
// Config.Replicas, the crons are the store's only (crons are not served
// without one), and the scheduler reads them again every lease, to see
// those the other replicas changed.
func (s *Server) startCrons() {
	switch {
	case s.cfg.Store != nil:
		s.crons.store = s.cfg.Store
	case s.cfg.Replicas == nil:
		s.crons.store = storemem.New(store.Config{})
	default:
		return
	}
	s.crons.poll = time.Hour
	if s.cfg.Replicas != nil {
		s.crons.poll = s.cfg.LeaseTTL
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.crons.wake, s.crons.stop, s.crons.done = make(chan struct{}, 1), cancel, make(chan struct{})
	go s.cronLoop(ctx)
}

// cronStore returns where the crons live, or answers 501 when the server
// serves none.
func (s *Server) cronStore(w http.ResponseWriter) store.Store {
	if s.crons.store == nil {
		writeError(w, errorf(http.StatusNotImplemented, CodeNotServed, "crons need a store shared by the replicas (Config.Store): this server has none"))
	}
	return s.crons.store
}

// cronDir is where the owner's crons are stored.
func cronDir(owner string) string {
	sum := sha256.Sum256([]byte(owner))
	return cronPrefix + hex.EncodeToString(sum[:16]) + "/"
}

// readCron reads the owner's cron id; another owner's is a 404.
func (s *Server) readCron(ctx context.Context, owner, id string) (*cronJob, error) {
	it, err := s.crons.store.Get(ctx, cronOwner, cronDir(owner)+id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidPath) {
		return nil, errorf(http.StatusNotFound, CodeNotFound, "unknown cron %q", id)
	}
	if err != nil {
		return nil, fmt.Errorf("server: read cron %q: %w", id, err)
	}
	c, err := decodeCron(it)
	if err == nil && c.Owner != owner {
		return nil, errorf(http.StatusNotFound, CodeNotFound, "unknown cron %q", id)
	}
	return c, err
}

func decodeCron(it store.Item) (*cronJob, error) {
	var c cronJob
	if err := json.Unmarshal([]byte(it.Content), &c); err != nil {
		return nil, fmt.Errorf("server: cron %q is corrupt: %w", it.Path, err)
	}
	c.rev = it.Revision
	return &c, nil
}

// writeCron stores c: a new cron, or a change of the revision it was read
// at. A change made meanwhile by another request or replica is
// store.ErrConflict. The content is text, not JSON, so that a stale write
// conflicts rather than merges.
func (s *Server) writeCron(ctx context.Context, c *cronJob) error {
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("server: store cron %q: %w", c.ID, err)
	}
	path := cronDir(c.Owner) + c.ID
	attrs := store.Attrs{Labels: c.labels()}
	var m store.Meta
	if c.rev == 0 {
		m, err = s.crons.store.Add(ctx, cronOwner, path, string(data), attrs)
	} else {
		m, err = s.crons.store.Edit(ctx, cronOwner, path, store.Replace(c.rev, string(data)).WithAttrs(attrs))
	}
	if err != nil {
		return fmt.Errorf("server: store cron %q: %w", c.ID, err)
	}
	c.rev = m.Revision
	return nil
}

// labels are what the scheduler reads of a cron from a listing, without
// its content: when it is due, whether it is enabled and when it ends (an
// empty label is none).
func (c *cronJob) labels() map[string]string {
	l := map[string]string{"next": c.Next.Format(time.RFC3339Nano), "enabled": "", "end": ""}
	if c.Enabled {
		l["enabled"] = "true"
	}
	if c.End != nil {
		l["end"] = c.End.UTC().Format(time.RFC3339Nano)
	}
	return l
}

// cronDue reports, from its labels, whether the cron m may be due at now:
// to fire, or to be deleted past its end. A cron without them may be.
func cronDue(m store.Meta, now time.Time) bool {
	l := m.Labels
	next, err := time.Parse(time.RFC3339Nano, l["next"])
	if err != nil {
		return true
	}
	if end, err := time.Parse(time.RFC3339Nano, l["end"]); err == nil && !now.Before(end) {
		return true
	}
	return l["enabled"] == "true" && !next.After(now)
}

// cronConflict is the answer to a change of a cron that another request
// changed at the same time.
func cronConflict(id string) *apiError {
	return errorf(http.StatusConflict, CodeThreadBusy, "cron %q was changed by another request at the same time: try again", id)
}

// listCrons reads the crons under prefix whose listing keep says to read
// (nil: all).
func (s *Server) listCrons(ctx context.Context, prefix string, keep func(store.Meta) bool) ([]*cronJob, error) {
	var out []*cronJob
	for m, err := range store.All(ctx, s.crons.store, cronOwner, prefix) {
		if err != nil {
			return nil, fmt.Errorf("server: list crons: %w", err)
		}
		if keep != nil && !keep(m) {
			continue
		}
		it, err := s.crons.store.Get(ctx, cronOwner, m.Path)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("server: read cron %q: %w", m.Path, err)
		}
		c, err := decodeCron(it)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (s *Server) lgCreateCron(w http.ResponseWriter, r *http.Request) {
	st := s.cronStore(w)
	if st == nil {
		return
	}
	var req lgCronRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	owner := ownerFrom(r.Context())
	pin, err := s.resolveAssistant(r.Context(), owner, req.AssistantID)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	job := &cronJob{ID: newID(), Owner: owner, Assistant: req.AssistantID, Payload: req.runRequest(), Metadata: req.Metadata,
		Enabled: req.Enabled == nil || *req.Enabled, End: req.EndTime, Created: time.Now().UTC()}
	job.Updated = job.Created
	if id := r.PathValue("thread"); id != "" {
		th, _, err := s.threadRecord(r.Context(), owner, id)
		if err != nil {
			writeError(w, s.internal(r, err))
			return
		}
		if th.Workflow != "" && th.Workflow != pin.Graph {
			writeError(w, errorf(http.StatusConflict, CodeWrongWorkflow, "thread %q runs assistant %q, not %q", id, th.Workflow, req.AssistantID))
			return
		}
		job.Thread = id
	}
	if e := job.setSchedule(req.Schedule, req.Timezone, job.Created, s.cfg.MinCronInterval); e != nil {
		writeError(w, e)
		return
	}
	if err := s.checkCronRun(r, job); err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	// Two creations at once, on two replicas, may both pass the count.
	mine, err := s.listCrons(r.Context(), cronDir(owner), nil)
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	if limit := s.cfg.MaxCrons; limit >= 0 && len(mine) >= limit {
		e := errorf(http.StatusTooManyRequests, CodeQuotaExceeded, "owner %q has %d crons, the most allowed: delete one first", owner, limit)
		e.Quota, e.Limit = "crons", int64(limit)
		writeError(w, e)
		return
	}
	if err := s.writeCron(r.Context(), job); err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	s.signalCrons()
	writeJSON(w, http.StatusOK, job.view())
}

// checkCronRun checks the run the cron job will start, as a run's
// request is checked: a bad input fails when the cron is stored rather
// than at each firing.
func (s *Server) checkCronRun(r *http.Request, job *cronJob) error {
	pin, err := s.resolveAssistant(r.Context(), job.Owner, job.Assistant)
	if err != nil {
		return err
	}
	th := Thread{ID: "cron-check", Workflow: pin.Graph}
	req := job.Payload
	req.pin = pin
	check, err := s.platformRunFor(r, th, s.cfg.Workflows[pin.Graph], req)
	if err != nil {
		return err
	}
	check.cancel(nil)
	return nil
}

func (s *Server) lgUpdateCron(w http.ResponseWriter, r *http.Request) {
	if s.cronStore(w) == nil {
		return
	}
	var req lgCronRequest
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &req); e != nil {
		writeError(w, e)
		return
	}
	job, err := s.readCron(r.Context(), ownerFrom(r.Context()), r.PathValue("cron"))
	if err != nil {
		writeError(w, s.internal(r, err))
		return
	}
	now := time.Now().UTC()
	if req.Schedule != "" || req.Timezone != "" {
		sched, tz := req.Schedule, req.Timezone
		if sched == "" {
			sched = job.Schedule
		}
		if tz == "" {
			tz = job.Timezone
		}
		if e := job.setSchedule(sched, tz, now, s.cfg.MinCronInterval); e != nil {
			writeError(w, e)
			return
		}
	}
	if req.Enabled != nil {
		if *req.Enabled && !job.Enabled {
			// Its next run date went by while it was disabled: the next
			// is the first after now.
			sched, err := cron.ParseStandard(job.Schedule)
			if err != nil {
				writeError(w, s.internal(r, fmt.Errorf("server: cron %q: %w", job.ID, err)))
				return
			}
			job.Next = job.after(sched, now)
		}
		job.Enabled = *req.Enabled
	}
	if req.EndTime != nil {
		job.End = req.EndTime
	}
	if req.Metadata != nil {
		job.Metadata = req.Metadata
	}
	if len(req.Input) > 0 {
		job.Payload.Input = req.Input
		if err := s.checkCronRun(r, job); err != nil {
			writeError(w, s.internal(r, err))
			return
		}
	}
	job.Updated = now
	err = s.writeCron(r.Context(), job)
	switch {
	case errors.Is(err, store.ErrConflict):
		writeError(w, cronConflict(job.ID))
	case err != nil:
		writeError(w, s.internal(r, err))
	default:
		s.signalCrons()
		writeJSON(w, http.StatusOK, job.view())
	}
}

func (s *Server) lgDeleteCron(w http.ResponseWriter, r *http.Request) {
	st := s.cronStore(w)
	if st == nil {
		return
	}
	job, err := s.readCron(r.Context(), ownerFrom(r.Context()), r.PathValue("cron"))
	if err == nil {
		err = st.Delete(r.Context(), cronOwner, cronDir(job.Owner)+job.ID, job.rev)
	}
	switch {
	case errors.Is(err, store.ErrConflict):
		writeError(w, cronConflict(job.ID))
	case err != nil:
		writeError(w, s.internal(r, err))
	default:
		s.signalCrons()
		w.WriteHeader(http.StatusNoContent)
	}
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
	if s.cronStore(w) == nil {
		return nil, q, false
	}
	if e := decodeBody(w, r, s.cfg.MaxBodyBytes, &q); e != nil {
		writeError(w, e)
		return nil, q, false
	}
	jobs, err := s.listCrons(r.Context(), cronDir(ownerFrom(r.Context())), nil)
	if err != nil {
		writeError(w, s.internal(r, err))
		return nil, q, false
	}
	var out []lgCron
	for _, j := range jobs {
		if (q.AssistantID != "" && j.Assistant != q.AssistantID) || (q.ThreadID != "" && j.Thread != q.ThreadID) ||
			(q.Enabled != nil && j.Enabled != *q.Enabled) || !metadataMatches(j.Metadata, q.Metadata) {
			continue
		}
		out = append(out, j.view())
	}
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

// signalCrons tells the scheduler that the crons changed.
func (s *Server) signalCrons() {
	select {
	case s.crons.wake <- struct{}{}:
	default:
	}
}

// stopCrons stops the scheduler and waits for it (Shutdown).
func (s *Server) stopCrons() {
	if s.crons.stop != nil {
		s.crons.stop()
		<-s.crons.done
	}
}

// cronLoop starts the crons' runs when they are due, until ctx ends.
func (s *Server) cronLoop(ctx context.Context) {
	defer close(s.crons.done)
	timer := time.NewTimer(s.crons.poll)
	defer timer.Stop()
	for {
		wait := s.crons.poll
		if next, err := s.nextCron(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Error("server: read the crons", "err", err)
		} else if !next.IsZero() {
			wait = min(max(time.Until(next), 0), wait)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.crons.wake:
		case now := <-timer.C:
			s.fireCrons(ctx, now.UTC())
		}
	}
}

// nextCron is the next run date of the enabled crons (zero: none), read
// from their listing.
func (s *Server) nextCron(ctx context.Context) (time.Time, error) {
	var next time.Time
	for m, err := range store.All(ctx, s.crons.store, cronOwner, cronPrefix) {
		if err != nil {
			return next, fmt.Errorf("server: list crons: %w", err)
		}
		at, err := time.Parse(time.RFC3339Nano, m.Labels["next"])
		if err == nil && m.Labels["enabled"] == "true" && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	return next, nil
}

// fireCrons starts the run of every enabled cron due at now, and
// schedules its next; a cron past its end time is deleted. Of the
// replicas firing a cron at once, the one that stores its next run date
// first starts the run. Only the crons whose listing says they are due
// are read.
func (s *Server) fireCrons(ctx context.Context, now time.Time) {
	jobs, err := s.listCrons(ctx, cronPrefix, func(m store.Meta) bool { return cronDue(m, now) })
	if err != nil {
		s.log.Error("server: read the crons", "err", err)
		return
	}
	for _, j := range jobs {
		switch {
		case j.End != nil && !now.Before(*j.End):
			err = s.crons.store.Delete(ctx, cronOwner, cronDir(j.Owner)+j.ID, j.rev)
		case j.Enabled && !j.Next.After(now):
			err = s.fireCron(ctx, j, now)
		default:
			continue
		}
		if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
			s.log.Warn("server: a cron's run was not started", "cron", j.ID, "owner", j.Owner, "err", err)
		}
	}
}

// fireCron claims the firing of j due at now, by storing its next run
// date, and starts its run.
func (s *Server) fireCron(ctx context.Context, j *cronJob, now time.Time) error {
	sched, err := cron.ParseStandard(j.Schedule)
	if err != nil {
		return fmt.Errorf("server: cron %q: %w", j.ID, err)
	}
	j.Next = j.nextFiring(sched, now, s.cfg.MinCronInterval)
	if err := s.writeCron(ctx, j); err != nil {
		return err // store.ErrConflict: another replica fired it
	}
	return s.startCronRun(ctx, j)
}

// startCronRun starts one run of the cron j: on its thread, or on a new
// thread.
func (s *Server) startCronRun(ctx context.Context, j *cronJob) error {
	ctx = context.WithValue(ctx, ownerKey{}, j.Owner)
	r := (&http.Request{Header: http.Header{}}).WithContext(ctx)
	pin, err := s.resolveAssistant(ctx, j.Owner, j.Assistant)
	if err != nil {
		return err
	}
	wf := s.cfg.Workflows[pin.Graph]
	th := Thread{ID: j.Thread, Workflow: pin.Graph, CreatedAt: time.Now().UTC().Truncate(time.Microsecond),
		Metadata: map[string]any{"cron_id": j.ID}}
	if th.ID == "" {
		th.ID = newID()
		if e := s.storageQuota(j.Owner); e != nil {
			return e
		}
		if err := s.storeThread(ctx, j.Owner, th); err != nil {
			return err
		}
	} else {
		rec, head, err := s.threadRecord(ctx, j.Owner, j.Thread)
		if err != nil {
			return err
		}
		if rec.Workflow == "" {
			rec.Workflow = pin.Graph
			if err := s.updateThread(ctx, j.Owner, rec, head); err != nil {
				return err
			}
		}
		th = rec
	}
	req := j.Payload
	req.pin = pin
	ru, err := s.platformRunFor(r, th, wf, req)
	if err != nil {
		return err
	}
	_, err = s.start(ctx, ru, storedRequest{Platform: &ru.platform.req})
	return err
}
