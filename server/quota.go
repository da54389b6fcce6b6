package server

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/coorflow/coorflow/runs"
)

// The quotas of an owner (Config.MaxActiveRuns, MaxQueuedRuns,
// MaxStoredBytes, MaxMCPSessions, and the calls in flight on /mcp), as 429
// answers name them.
const (
	QuotaActiveRuns  = runs.QuotaActiveRuns
	QuotaQueuedRuns  = runs.QuotaQueuedRuns
	QuotaStoredBytes = "stored_bytes"
	QuotaMCPSessions = "mcp_sessions"
	QuotaMCPRequests = "mcp_requests"
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
// *runs.BusyError or on a thread being deleted (runs.ErrThreadClosed);
// nil for any other error.
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
	case errors.Is(err, runs.ErrThreadClosed):
		return threadBeingDeleted(ru.thread)
	}
	return nil
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
