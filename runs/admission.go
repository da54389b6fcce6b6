package runs

import (
	"errors"
	"fmt"
)

// The quotas of an owner's runs, as a *QuotaError names them.
const (
	QuotaActiveRuns = "active_runs"
	QuotaQueuedRuns = "queued_runs"
)

// Sentinel errors of admission, for errors.Is.
var (
	// ErrQuotaExceeded is a run its owner has no room for (*QuotaError).
	ErrQuotaExceeded = errors.New("runs: quota exceeded")
	// ErrThreadBusy is a run refused because its thread has one open
	// (*BusyError).
	ErrThreadBusy = errors.New("runs: thread busy")
)

// Limits are an owner's quotas of runs. A negative value means no limit;
// zero admits none.
type Limits struct {
	// MaxActive caps the owner's active runs: each the oldest open run of
	// its thread, running or about to (on a replica with room).
	MaxActive int
	// MaxQueued caps the owner's queued runs: those waiting behind an
	// open run of their thread.
	MaxQueued int
}

// NoLimits admits every run.
var NoLimits = Limits{MaxActive: -1, MaxQueued: -1}

// Busy says what becomes of a run asked for on a thread that has an open
// run (a thread runs one run at a time).
type Busy int

const (
	// Refuse refuses the run with a *BusyError.
	Refuse Busy = iota
	// Queue queues it behind the thread's open runs, in order.
	Queue
)

// Request asks to admit one run.
type Request struct {
	Owner string
	// Thread names the run's thread, unique among every owner's threads
	// (the server's thread key).
	Thread string
	// Run is the run's id.
	Run    string
	Busy   Busy
	Limits Limits
}

// Usage is what an owner has admitted and not yet released.
type Usage struct {
	Active, Queued int
}

// Decide is the rule of admission, which every ledger applies in the
// atomic step that also records its answer: given the owner's usage and
// the thread's oldest open run (holder, "" when the thread has none), it
// reports whether the run is admitted queued (true) or active (false), or
// why it is refused: a *BusyError or a *QuotaError.
func (req Request) Decide(u Usage, holder string) (queued bool, err error) {
	busy := holder != ""
	if busy && req.Busy != Queue {
		return false, &BusyError{Thread: req.Thread, Run: holder}
	}
	if max := req.Limits.MaxQueued; busy && max >= 0 && u.Queued >= max {
		return false, &QuotaError{Owner: req.Owner, Quota: QuotaQueuedRuns, Count: u.Queued, Limit: max}
	}
	if max := req.Limits.MaxActive; !busy && max >= 0 && u.Active >= max {
		return false, &QuotaError{Owner: req.Owner, Quota: QuotaActiveRuns, Count: u.Active, Limit: max}
	}
	return busy, nil
}

// QuotaError is a run refused because its owner is at one of its quotas.
type QuotaError struct {
	Owner string
	// Quota is QuotaActiveRuns or QuotaQueuedRuns.
	Quota string
	// Count is what the owner had admitted, Limit the quota.
	Count, Limit int
}

func (e *QuotaError) Error() string {
	what := "in progress"
	if e.Quota == QuotaQueuedRuns {
		what = "queued"
	}
	return fmt.Sprintf("runs: owner %q has %d runs %s, the most allowed (%s %d)", e.Owner, e.Count, what, e.Quota, e.Limit)
}

// Is makes a *QuotaError match ErrQuotaExceeded.
func (e *QuotaError) Is(target error) bool { return target == ErrQuotaExceeded }

// BusyError is a run refused because its thread has an open run and the
// request does not queue.
type BusyError struct {
	// Thread is the thread (Request.Thread), Run its oldest open run.
	Thread, Run string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("runs: thread %q already has run %q open", e.Thread, e.Run)
}

// Is makes a *BusyError match ErrThreadBusy.
func (e *BusyError) Is(target error) bool { return target == ErrThreadBusy }
