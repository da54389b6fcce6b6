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
