package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/runs"
)

// The quotas of an owner (Config.MaxActiveRuns, MaxQueuedRuns,
// MaxStoredBytes, MaxMCPSessions), as 429 answers name them.
const (
	QuotaActiveRuns  = runs.QuotaActiveRuns
	QuotaQueuedRuns  = runs.QuotaQueuedRuns
	QuotaStoredBytes = "stored_bytes"
	QuotaMCPSessions = "mcp_sessions"
)

// quotaRetryAfter is the Retry-After, in seconds, of a refusal that ends
// when one of the owner's runs does.
const quotaRetryAfter = "5"

// quotaError is the 429 of an owner at one of its quotas.
func quotaError(quota string, limit int64, format string, args ...any) *apiError {
	e := errorf(http.StatusTooManyRequests, CodeQuotaExceeded, format, args...)
	e.Quota, e.Limit = quota, limit
	if quota == QuotaActiveRuns || quota == QuotaQueuedRuns {
		e.RetryAfter = quotaRetryAfter
	}
	return e
}

// runLimits are the quotas of runs every owner has (Config.MaxActiveRuns,
// MaxQueuedRuns), as the ledgers of runs take them.
func (s *Server) runLimits() runs.Limits {
	return runs.Limits{MaxActive: s.cfg.MaxActiveRuns, MaxQueued: s.cfg.MaxQueuedRuns}
}

// busyOf is what becomes of ru when its thread has a run in progress:
// queued, when the request or Config.QueueBusy says so, or refused.
func (s *Server) busyOf(ru *run) runs.Busy {
	if ru.busy == busyQueue || ru.busy == busyDefault && s.cfg.QueueBusy {
		return runs.Queue
	}
	return runs.Refuse
}

// refusal is the answer to a run that admission refused with err: 429
// quota_exceeded for a *runs.QuotaError, 409 thread_busy for a
// *runs.BusyError; nil for any other error.
func refusal(ru *run, err error) *apiError {
	var qe *runs.QuotaError
	var be *runs.BusyError
	switch {
	case errors.As(err, &qe) && qe.Quota == runs.QuotaQueuedRuns:
		return quotaError(QuotaQueuedRuns, int64(qe.Limit),
			"owner %q has %d runs queued, the most allowed: wait for some to start, or cancel one, then try again", qe.Owner, qe.Count)
	case errors.As(err, &qe):
		return quotaError(QuotaActiveRuns, int64(qe.Limit),
			"owner %q has %d runs in progress, the most allowed: wait for one to end, or cancel one, then try again", qe.Owner, qe.Count)
	case errors.As(err, &be):
		e := errorf(http.StatusConflict, CodeThreadBusy, "thread %q already has run %q in progress: wait for it, cancel it, or enable queueing", ru.thread, be.Run)
		e.Run = be.Run
		return e
	}
	return nil
}

// storageQuota refuses to store more for an owner over its
// MaxStoredBytes.
func (s *Server) storageQuota(owner string) *apiError {
	max := s.cfg.MaxStoredBytes
	if max < 0 {
		return nil
	}
	if n := s.saver.stored(owner); n >= max {
		return quotaError(QuotaStoredBytes, max,
			"owner %q has stored %d bytes, the most allowed: delete threads that are no longer needed (DELETE /v1/threads/{thread}), then try again", owner, n)
	}
	return nil
}

// meteredSaver is the Saver of a Server: it counts the bytes written for
// each owner's threads (checkpoints, their channel values, task records),
// and forgets a thread's bytes when it is deleted. The count is of what
// this server wrote since it started — an upper bound of what it added,
// since the Saver may keep a value once for several writes; threads
// stored before the start are not counted.
type meteredSaver struct {
	graph.Saver
	values *valuesCache // dropThread at each DeleteThread

	mu      sync.Mutex
	threads map[string]int64 // by Saver thread key
	owners  map[string]int64 // by owner
}

func newMeteredSaver(s graph.Saver, values *valuesCache) *meteredSaver {
	return &meteredSaver{Saver: s, values: values, threads: make(map[string]int64), owners: make(map[string]int64)}
}

// PutCheckpoint stores cp and its blobs and counts their bytes.
func (m *meteredSaver) PutCheckpoint(ctx context.Context, cp graph.CheckpointRecord, blobs []graph.Blob) error {
	if err := m.Saver.PutCheckpoint(ctx, cp, blobs); err != nil {
		return err
	}
	n := len(cp.ID) + len(cp.ParentID) + len(cp.NS) + len(cp.Meta)
	for _, b := range blobs {
		n += len(b.Channel) + len(b.Version) + len(b.Base) + len(b.Data)
	}
	m.add(cp.Thread, n)
	return nil
}

// BlobsAt passes graph.BlobReader through (see graph.ReadBlobsAt).
func (m *meteredSaver) BlobsAt(ctx context.Context, thread, ns string, versions map[string]string) ([]graph.Blob, error) {
	return graph.ReadBlobsAt(ctx, m.Saver, thread, ns, versions)
}

// PutTaskRecords stores recs and counts their bytes.
func (m *meteredSaver) PutTaskRecords(ctx context.Context, ref graph.CheckpointRef, recs []graph.TaskRecord) error {
	if err := m.Saver.PutTaskRecords(ctx, ref, recs); err != nil {
		return err
	}
	n := 0
	for _, r := range recs {
		n += len(r.TaskID) + len(r.Kind) + len(r.Key) + len(r.Data)
	}
	m.add(ref.Thread, n)
	return nil
}

// DeleteThread deletes the thread, forgets the values cached of it and
// takes its bytes off its owner's.
func (m *meteredSaver) DeleteThread(ctx context.Context, thread string) error {
	err := m.Saver.DeleteThread(ctx, thread)
	m.values.dropThread(thread) // even after an error: part may be gone
	if err != nil {
		return err
	}
	owner, ok := keyOwner(thread)
	if !ok {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owners[owner] -= m.threads[thread]
	if m.owners[owner] <= 0 {
		delete(m.owners, owner)
	}
	delete(m.threads, thread)
	return nil
}

func (m *meteredSaver) add(thread string, n int) {
	owner, ok := keyOwner(thread)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.threads[thread] += int64(n)
	m.owners[owner] += int64(n)
}

// stored is what the server stored for the owner's threads.
func (m *meteredSaver) stored(owner string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owners[owner]
}

// keyOwner is the owner of a thread key made by threadKey.
func keyOwner(key string) (string, bool) {
	esc, _, ok := strings.Cut(key, "/")
	if !ok {
		return "", false
	}
	owner, err := url.PathUnescape(esc)
	return owner, err == nil
}
