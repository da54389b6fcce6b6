// Package sqlite is a trace.Store that keeps recorded runs in a SQLite
// file, through the pure-Go driver modernc.org/sqlite (no cgo): the
// embedded default, one file per machine. The file may be the one
// checkpoint/sqlite uses; the tables (trace_runs, trace_events,
// trace_schema) are its own (on PostgreSQL, recordings' events are
// streams of the runs' event log, runs/eventlog, which is PostgreSQL's).
//
// Open opens or creates the file (mode 0600) with write-ahead logging, a
// busy timeout and synchronous=NORMAL (see internal/sqlitedb); New wraps a
// *sql.DB the caller opened and owns, which the checkpoint and store
// backends can share. trace_schema records which migrations have been
// applied, and a file written by a newer version of this package is
// refused with ErrSchemaTooNew. Writes go through the database's one
// writer connection, one at a time, in turns with the other backends on
// the same *sql.DB; reads proceed in parallel on the other connections.
// Times are kept to the microsecond, in UTC; payloads byte for byte.
//
//	s, err := sqlite.Open(ctx, "coorflow.db")
//	if err != nil {
//		return err
//	}
//	defer s.Close()
//	rec := trace.NewRecorder(s, trace.RecorderConfig{})
//	defer rec.Close(ctx)
package sqlite
