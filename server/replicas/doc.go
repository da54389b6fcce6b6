// Package replicas lets several coorflow servers — replicas — share their
// runs through one PostgreSQL database: it implements server.Replicas.
//
// A run is a row of server_runs; its events, as the streams send them, are
// its stream in the event log (package runs/eventlog, in the same schema:
// group commits of the events of every run a replica executes, stored
// before each of the run's checkpoints and task records, before its end
// and before it changes hands; the events an older version stored in
// server_run_events moved there by migration 4, which dropped that table:
// replicas of a version before the event log cannot share a database with
// this one, and refuse its schema); LISTEN/NOTIFY on one channel per schema wakes
// the replicas that follow a run (its id is the payload), that wait for a
// run to become due ("") or that hold a run a client asked to cancel
// ("cancel:" and its id). A replica executes a run under the lease of its
// thread (checkpoint/postgres: Acquire, Renew, Release) and writes its
// checkpoints and journal through the Saver fenced by the lease's token, so
// a replica that lost the lease — it stalled, and another took the run over
// — stores nothing more: its checkpoints, task records, events (its stream
// is fenced by the lease's token) and end are refused with a
// *graph.CheckpointConflictError.
//
// A run is due when it is the oldest open run of its thread and no live
// lease holds the thread: queued (its replica claims it at once; the
// others leave it to that replica for a lease's time), or running under a
// lease that expired because its replica died. The replica that takes a
// run over continues it from the thread's last checkpoint; the model and
// tool calls the first replica journaled are replayed, not made again.
// Finish also stores a run's final values (server.SharedRun.Final, column
// final since migration 5), which a stateless run's replica keeps before
// it deletes the run's thread.
//
// Enqueue is the replicas' ledger of runs (runs.Request.Decide is its
// rule): it admits a run against its owner's quotas and its thread's open
// runs and stores it in one transaction, under an advisory lock on the
// owner taken before the count, so that runs asked for at once on any
// replicas are admitted one at a time. It counts the owner's open run
// rows (each thread's oldest active, the others queued), not a counter:
// a run leaves the count when its row ends, one taken over counts once,
// and one whose replica died counts until another replica serving its
// workflow takes it over and ends it. It also refuses a run on a thread
// being deleted, and on one whose record (server.ThreadRecordNS) is gone.
//
// CloseThread closes a thread to new runs while the server deletes it: a
// row of server_closed_threads (migration 6), taken under the same lock
// on the owner in a transaction that finds no open run of the thread,
// renewed every third of the lease's time while the deletion goes on and
// removed when it ends. A replica that dies mid-deletion leaves a mark
// that expires a lease's time after its last renewal (Prune removes it);
// one that stalls that long finds its mark expired, and its deletion's
// context is cancelled.
//
// A run's end notice (its webhook; an A2A task's end and push
// notifications) is columns notice and notice_until of its row
// (migration 7): due from Enqueue (SharedRun.Notice) or from NoticeDue,
// claimed for a lease's time by one replica in one statement
// (ClaimNotice: the one that finished the run, or the one that made it
// due after the run ended), and recorded sent (NoticeSent). A claim that
// expired unsent — its replica died — is claimed again by another
// (ClaimNotice with no id), so that a notice is delivered at least once.
//
//	reps, err := replicas.New(pool, replicas.Config{Saver: saver, LeaseTTL: 10 * time.Second})
//	if err != nil {
//		return err
//	}
//	if err := reps.Start(ctx); err != nil {
//		return err
//	}
//	defer reps.Close()
//	srv, err := server.New(server.Config{Saver: saver, Replicas: reps, LeaseTTL: 10 * time.Second, ...})
package replicas
