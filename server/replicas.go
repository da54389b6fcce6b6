package server

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/coorflow/coorflow/graph"
	"github.com/coorflow/coorflow/llm"
	"github.com/coorflow/coorflow/runs"
)

// Replicas shares runs between the replicas of a server on one database
// (package server/replicas implements it on PostgreSQL). With
// Config.Replicas set, a run is a row every replica reads: the replica
// that executes it holds a lease on its thread and writes its checkpoints
// through a Saver fenced by the lease's token; it publishes each event, so
// that any replica streams, joins, waits on, lists and cancels any run;
// and when it dies, another replica takes the run over from its last
// checkpoint once the lease has expired.
type Replicas interface {
	// Enqueue admits a new run and stores it, queued, for this replica
	// to claim, in one atomic step (runs.Request.Decide is the rule): the
	// others leave it to this one for a lease's time, unless it is
	// offered (Offer). A thread with a queued or running run refuses it
	// with a *runs.BusyError unless busy is runs.Queue; an owner at one
	// of its limits, counted over the open runs of every replica, gets a
	// *runs.QuotaError. A thread being deleted (CloseThread) refuses it
	// with runs.ErrThreadClosed, and a thread without its record (no
	// checkpoint of the run's Key in namespace ThreadRecordNS: it was
	// deleted) with graph.ErrNotFound, both checked in that same step. A
	// refused run is not stored. The run holds its place until it ends
	// (Finish, or Cancel while queued).
	Enqueue(ctx context.Context, run SharedRun, busy runs.Busy, limits runs.Limits) error
	// CloseThread runs deleting while the owner's thread key is closed to
	// new runs on every replica (Enqueue refuses them), and returns its
	// error, as it is (joined with the error of removing the mark, if
	// that failed: the mark expires then). The thread is closed in one atomic step with Enqueue's
	// admission, which also checks that it has no queued or running run
	// (a *runs.BusyError naming the oldest otherwise) and is not being
	// deleted already (runs.ErrThreadClosed); deleting is not called
	// then. It reopens when deleting returns, whatever it returned. The
	// mark that closes it lasts a lease's time (the LeaseTTL) and is
	// renewed while deleting runs: the mark of a replica that died, or
	// could not remove it, expires then, and the thread takes runs again.
	// A mark that could not be renewed in time cancels deleting's ctx.
	CloseThread(ctx context.Context, owner, key string, deleting func(ctx context.Context) error) error
	// Offer leaves a queued run that this replica enqueued but has no
	// room for to any replica, at once.
	Offer(ctx context.Context, id string) error
	// Claim takes a run for this replica to execute, with the lease of
	// its thread: the run id names, or the oldest run that is due (queued
	// behind no other run of its thread, or running under a lease that
	// has expired: a takeover). Only runs of the named workflows, those
	// this replica serves, are taken: a run of another is left to the
	// replicas that serve it. It returns nil when no run is due.
	Claim(ctx context.Context, id string, workflows []string) (*Claim, error)
	// Renew extends the claim's lease and reports whether the run was
	// asked to cancel. A lease taken over by another replica is an error
	// wrapping graph.ErrCheckpointConflict.
	Renew(ctx context.Context, c *Claim) (cancel bool, err error)
	// Publish stores an event of the claimed run and wakes the replicas
	// following it; it may store it later, with others (a group commit),
	// but before the run's next checkpoint, its Finish or its Release.
	// It stores nothing once the lease was taken over, and says so then
	// or at a later Publish or Finish.
	Publish(ctx context.Context, c *Claim, ev SharedEvent) error
	// Finish stores how the claimed run ended and releases its lease.
	Finish(ctx context.Context, c *Claim, run SharedRun) error
	// Release gives the claimed run up unfinished, so that another
	// replica continues it at once.
	Release(ctx context.Context, c *Claim) error
	// Run returns a run; an unknown id is graph.ErrNotFound.
	Run(ctx context.Context, id string) (SharedRun, error)
	// Runs returns the runs of a thread (its Saver key), oldest first.
	Runs(ctx context.Context, threadKey string) ([]SharedRun, error)
	// Activity returns what a thread's status needs of its runs: those
	// queued or running, and its newest one (open or not), oldest first.
	Activity(ctx context.Context, threadKey string) ([]SharedRun, error)
	// Events returns up to limit events of a run after id after, in order.
	Events(ctx context.Context, run string, after int64, limit int) ([]SharedEvent, error)
	// Cancel asks for a run to stop: a queued one ends cancelled at once,
	// a running one when its replica notices. It reports false when the
	// run had already ended.
	Cancel(ctx context.Context, id string) (bool, error)
	// Delete forgets a run that has ended, with its events. It reports
	// false, and forgets nothing, when the run is queued or running; an
	// unknown id is graph.ErrNotFound.
	Delete(ctx context.Context, id string) (bool, error)
	// Prune forgets the ended runs, with their events, but the newest
	// keep (in the order they were enqueued), at most limit of them, and
	// returns how many it forgot. Replicas may prune at once.
	Prune(ctx context.Context, keep, limit int) (int, error)
	// NextDue returns how long until a run of the named workflows may
	// become due with no replica saying so: the earliest lease of another
	// replica's running run to expire (a takeover), or the end of the
	// hold on a queued run another replica enqueued. ok is false when no
	// such run is open. The time is the database's, so clocks of replicas
	// that disagree do not matter.
	NextDue(ctx context.Context, workflows []string) (wait time.Duration, ok bool, err error)
	// NoticeDue makes the notice of run id due, once its end is known
	// (SharedRun.Notice: one the run was enqueued without, as an A2A
	// task's, whose record lists the run only after it started), and
	// reports whether the run had ended by then: its replica's
	// ClaimNotice at its end found none due, so the caller claims it.
	NoticeDue(ctx context.Context, id string) (ended bool, err error)
	// ClaimNotice claims the due notice of the ended run id for a
	// lease's time, in one atomic step: of the replicas that ask at
	// once, one gets it. "" claims the notice of any ended run of the
	// named workflows whose claim expired (its replica died delivering
	// it), or that no replica claimed for a lease after the run's end.
	// ok is false when there is none to claim.
	ClaimNotice(ctx context.Context, id string, workflows []string) (run SharedRun, ok bool, err error)
	// NoticeSent records that the notice of run id was delivered: no
	// replica claims it again.
	NoticeSent(ctx context.Context, id string) error
	// Changed returns a channel closed at the next change of the run —
	// an event, its end, a request to cancel — on any replica; "" is any
	// run that becomes due.
	Changed(run string) <-chan struct{}
}

// SharedRun is a run as the replicas share it.
type SharedRun struct {
	ID       string
	Thread   string // the thread's id, as the client names it
	Key      string // the thread's Saver key
	Owner    string
	Workflow string
	// Request is the RunRequest that started it, as JSON.
	Request json.RawMessage
	Status  string
	// Base is the thread's newest checkpoint when the run first started
	// ("" before it started, or on a thread without one, see Started): a
	// replica taking the run over applies its input again only when the
	// thread is still there.
	Base       string
	Started    bool
	Checkpoint string
	Error      *ErrorDetail
	CreatedAt  time.Time
	StartedAt  time.Time
	EndedAt    time.Time
	// Events is the id of its newest event.
	Events int64
	// Replica is the replica that runs or ran it; Takeovers counts the
	// times a replica took it over from another that stopped renewing
	// its lease.
	Replica   string
	Takeovers int
	// Usage is what its model calls spent, and Budget its run budget
	// (nil for none), as its replica stored them when it ended (Finish).
	Usage  llm.Spend
	Budget *llm.Budget
	// Notice: the run's end has a notice to deliver (its Platform
	// request's webhook), due from its enqueueing (Enqueue stores it);
	// see NoticeDue and ClaimNotice.
	Notice bool
	// Final is, for a run whose thread was deleted when it ended (a
	// stateless run, on_completion "delete"), the values and interrupts
	// the thread had then, as JSON, stored by Finish: its waiters on any
	// replica are answered with them. Nil for any other run.
	Final json.RawMessage
}

// SharedEvent is one event of a shared run: its id, name and the
// server-sent event the streams send.
type SharedEvent struct {
	ID    int64
	Name  string
	Frame []byte
}

// Claim is a run a replica executes: the run, the Saver fenced by its
// thread's lease, and whether it was taken over from another replica.
type Claim struct {
	Run      SharedRun
	Saver    graph.Saver
	Takeover bool
	// Token is the fencing token of the lease.
	Token int64
	// Spent, set by the replica that executes the run, says what its
	// model calls spent so far: Renew shares it with the other replicas,
	// so that a running run shows its usage (nil: nothing to share).
	Spent func() llm.Spend
}

// errLeaseLost cancels a run whose replica lost its lease: another replica
// has taken it over.
var errLeaseLost = errors.New("server: the run's lease was taken over by another replica")

// sharedView is the run as the API shows it.
func (sr SharedRun) view() Run {
	v := Run{
		ID: sr.ID, ThreadID: sr.Thread, Workflow: sr.Workflow, Status: sr.Status, CreatedAt: sr.CreatedAt,
		Checkpoint: sr.Checkpoint, Events: sr.Events, Error: sr.Error, Replica: sr.Replica, Takeovers: sr.Takeovers,
		Usage: sr.Usage, Budget: sr.Budget,
	}
	if !sr.StartedAt.IsZero() {
		t := sr.StartedAt
		v.StartedAt = &t
	}
	if !sr.EndedAt.IsZero() {
		t := sr.EndedAt
		v.EndedAt = &t
	}
	return v
}

// ended reports whether the run's status is final.
func ended(status string) bool {
	return status != StatusQueued && status != StatusRunning
}
