// Package runs is the home of a run: what coorflow promises about a run
// from the request that asks for it to its end, whatever transport asked
// (the CLI's run, the server's /v1 and Platform API, /mcp, crons,
// webhooks) and wherever it executes (this process, another replica, a
// Temporal worker).
//
// It owns, each in a file named for it:
//   - admission (admission.go, ledger*.go): quotas of active and queued runs
//     per owner, a thread's one active run, and owner budgets, checked and
//     taken in one atomic step where they are stored: Request.Decide is the
//     rule, Ledger applies it in one critical section for the runs of one
//     process, and server/replicas in one PostgreSQL transaction over the
//     run rows the replicas share;
//   - budgets (budget.go): reservations of model calls before they are
//     sent, settled with the provider's usage after;
//   - the caller's config (config.go): the values a run's request carries
//     for its nodes, as graph runtime values and expression variables;
//   - the environment a workflow compiles with (env.go): what of it
//     changes the models' prompts (so far code execution, and the file),
//     decided once per command (cmd/coorflow's env.go, for `run`,
//     `serve`, `worker`, `mcp` and `replay`), carried by each run and kept
//     in its recording, from which a replay compiles the same; and the
//     checkpoint a later turn started from (RuntimeStart);
//   - a run as every entry point executes it (run.go): Run gives the graph
//     options that carry its owner, thread, id, config and environment
//     to its nodes, its entry in the index of recorded runs, and its
//     meters (the turn's budget under the owner's), so that the server
//     (on any transport or replica) and the CLI start, record and replay
//     a run alike;
//   - its execution (execute.go): an Executor executes a run's graph
//     and yields its events — a *graph.Runnable in this process, or
//     temporalrun's Runner on Temporal's workers, marked Remote because
//     its model calls are made there — and Execute is the one body that
//     runs a Run on one, for the server (any transport, any replica) and
//     the CLI: the run's meter in its context, its recording begun (or
//     continued after a takeover) and finished, each event to an
//     observer with the failure as the caller shows it, a Remote
//     executor's llm.ModelCall events counted in the run's meter (so that
//     a run executed elsewhere reports its usage), and the Outcome;
//   - the lifecycle of the runs of one process (manager.go): a Manager
//     admits a run through its Ledger in the same critical section that
//     registers it, keeps one active run per thread and queues the others
//     in order (Busy: Queue or Refuse), starts each when its turn comes,
//     asks its Task how it executes (Prepare: executor, options, meter),
//     executes it with Execute, keeps its events in an EventBuffer for
//     the streams that follow it (after a sequence number:
//     Last-Event-ID), cancels it with a cause (a queued run ends at once),
//     and keeps the finished runs within bounds of count and memory. A
//     Handle follows one run: status, Started and Done channels, events,
//     usage. A transport makes a run's Handle first (New: streams attach
//     before it starts) and starts it later (Start); a run admitted
//     elsewhere (a replica's claim, Task.Admitted) takes no ledger place.
//     A Task's hooks let a transport refuse a run seeing its thread's
//     open runs in the admitting step (Check), note each event (Recorded)
//     and act when it ended (Ended, Finally); a thread closes to new runs
//     while it is deleted (CloseThread). Refusals are typed (*QuotaError,
//     *BusyError, ErrClosed, ErrThreadClosed); the transports map them to
//     their wire's errors. The server's runs and the CLI's run on it;
//   - the event log (package runs/eventlog, on PostgreSQL, a package of
//     its own so that temporalrun and server/replicas, below runs, use
//     it): one table family for the replicas' streams, Temporal's and
//     the events of recordings on PostgreSQL (trace/postgres; its index
//     of runs, trace_runs, stays its own, and SQLite recordings keep
//     their file's tables: the event log is PostgreSQL's).
//
// Transports translate their wire formats to and from this package; they
// do not re-implement its rules. In the server, every transport starts,
// follows and cancels its runs through one entry (server/runentry.go),
// which places each in the process or among the replicas.
package runs
