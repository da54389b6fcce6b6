// Package postgres is a trace.Store that keeps recorded runs in
// PostgreSQL, for several machines: any server replica can show any run.
//
// The index of runs is its table trace_runs; a run's events are a stream
// of the runs' event log (runs/eventlog: event_streams, event_frames),
// keyed "trace/" and the run's id, one described frame per event: its
// kind is the frame's name, its path the frame's path (the two the views
// filter on, through the event log's index), its payload the frame's
// bytes, a model call's request and response its body (read only when
// asked), the rest its meta. Events are written in the event log's group
// commits, with those other recorders append meanwhile; AppendEvents
// returns once they are committed, so what a Recorder's Finish waited
// for is stored. An event written again is stored once, and deleting a
// run (DeleteRun, Prune) deletes its stream in the same transaction.
// SQLite recordings (trace/sqlite) keep their own tables: the event log
// is PostgreSQL's.
//
// Open connects and creates or upgrades the tables (trace_runs,
// trace_schema, which records the migrations applied, and the event
// log's) in the connection's current schema or the one named with
// WithSchema; New wraps a pool the caller owns, which the checkpoint and
// store backends can share, and creates the tables on first use or by
// Migrate. Migrations run in one transaction under an advisory lock, and
// tables written by a newer version of this package are refused with
// ErrSchemaTooNew. Migration 2 moves the events an older version kept in
// trace_events into the event log and drops that table. Times are kept
// to the microsecond, in UTC; payloads byte for byte. The first use
// starts the event log's committer: Close the Store when done.
//
//	s, err := postgres.Open(ctx, "postgres://coorflow@db/coorflow")
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	rec := trace.NewRecorder(s, trace.RecorderConfig{})
package postgres
