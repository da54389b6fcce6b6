package server

import (
	"net/http"
	"net/url"
	"strings"
)

// The quotas of an owner (Config.MaxActiveRuns, MaxQueuedRuns,
// MaxStoredBytes, MaxMCPSessions), as 429 answers name them.
const (
	QuotaActiveRuns  = "active_runs"
	QuotaQueuedRuns  = "queued_runs"
	QuotaStoredBytes = "stored_bytes"
	QuotaMCPSessions = "mcp_sessions"
)

// quotaRetryAfter is the Retry-After, in seconds, of a refusal that ends
// when one of the owner's runs does.
const quotaRetryAfter = "5"

// usage counts an owner's runs in progress and queued. s.mu guards it.
type usage struct {
	active, queued int
}

// countLocked adds to the owner's counts and forgets an owner with none.
// s.mu is held.
func (s *Server) countLocked(owner string, active, queued int) {
	u := s.usage[owner]
	if u == nil {
		u = &usage{}
		s.usage[owner] = u
	}
	u.active += active
	u.queued += queued
	if u.active == 0 && u.queued == 0 {
		delete(s.usage, owner)
	}
}

// quotaError is the 429 of an owner at one of its quotas.
func quotaError(quota string, limit int64, format string, args ...any) *apiError {
	e := errorf(http.StatusTooManyRequests, CodeQuotaExceeded, format, args...)
	e.Quota, e.Limit = quota, limit
	if quota == QuotaActiveRuns || quota == QuotaQueuedRuns {
		e.RetryAfter = quotaRetryAfter
	}
	return e
}

// runQuotaLocked refuses a run the owner has no room for: one that would
// wait behind the thread's run in progress (busy) or start. s.mu is held.
func (s *Server) runQuotaLocked(owner string, busy bool) *apiError {
	var u usage
	if p := s.usage[owner]; p != nil {
		u = *p
	}
	return s.runQuota(owner, u, busy)
}

// runQuota refuses a run the owner, with runs u, has no room for.
func (s *Server) runQuota(owner string, u usage, busy bool) *apiError {
	if max := s.cfg.MaxQueuedRuns; busy && max >= 0 && u.queued >= max {
		return quotaError(QuotaQueuedRuns, int64(max),
			"owner %q has %d runs queued, the most allowed: wait for some to start, or cancel one, then try again", owner, u.queued)
	}
	if max := s.cfg.MaxActiveRuns; !busy && max >= 0 && u.active >= max {
		return quotaError(QuotaActiveRuns, int64(max),
			"owner %q has %d runs in progress, the most allowed: wait for one to end, or cancel one, then try again", owner, u.active)
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
